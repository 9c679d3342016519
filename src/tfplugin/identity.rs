//! Resource identity (protocol 6.9+, Terraform 1.12+): a small versioned object naming the
//! remote object an instance manages, apart from its other attributes. Terraform stores it
//! next to the state, shows it in `terraform show -json`, imports by it (`import { identity =
//! {...} }`) and uses it for `terraform query` results. Resources declare an
//! [`IdentitySchema`] and derive the identity from their state; the service sends it with
//! every read, plan, apply and import (Terraform 1.11 ignores the fields).

use std::collections::BTreeMap;

use super::value::{Type, Value};

/// One identity attribute.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdentityAttribute {
    /// The attribute name.
    pub name: String,
    /// Its type (identity attributes are primitives).
    pub ty: Type,
    /// Whether `import { identity = {...} }` must give it (else the provider may default it).
    pub required_for_import: bool,
    /// Markdown description (it becomes the docs).
    pub description: String,
}

impl IdentityAttribute {
    /// A string attribute an import must give.
    pub fn required(name: &str, description: &str) -> Self {
        IdentityAttribute {
            name: name.to_string(),
            ty: Type::String,
            required_for_import: true,
            description: description.to_string(),
        }
    }

    /// A string attribute the provider can default on import (e.g. the provider's project).
    pub fn optional(name: &str, description: &str) -> Self {
        IdentityAttribute {
            required_for_import: false,
            ..Self::required(name, description)
        }
    }

    /// An optional number attribute.
    pub fn optional_number(name: &str, description: &str) -> Self {
        IdentityAttribute {
            ty: Type::Number,
            ..Self::optional(name, description)
        }
    }
}

/// The identity schema of a managed resource type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdentitySchema {
    /// Bumped when the attributes change (then `UpgradeResourceIdentity` carries old ones over).
    pub version: i64,
    /// The attributes.
    pub attributes: Vec<IdentityAttribute>,
}

impl IdentitySchema {
    /// The object type of identity values.
    pub fn value_type(&self) -> Type {
        Type::object(self.attributes.iter().map(|a| (a.name.clone(), a.ty.clone())))
    }

    /// An identity value from attribute values (absent attributes are null).
    pub fn value<'a>(&self, values: impl IntoIterator<Item = (&'a str, Value)>) -> Value {
        let mut given: BTreeMap<String, Value> = values.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
        Value::Object(
            self.attributes
                .iter()
                .map(|a| (a.name.clone(), given.remove(&a.name).unwrap_or(Value::Null)))
                .collect(),
        )
    }
}

/// The number of an identity attribute, when it is a known number.
pub fn identity_number<'a>(identity: &'a Value, name: &str) -> Option<&'a super::value::Number> {
    match identity.get(name) {
        Value::Number(n) => Some(n),
        _ => None,
    }
}

/// The string of an identity attribute, when it is a known non-empty string.
pub fn identity_string<'a>(identity: &'a Value, name: &str) -> Option<&'a str> {
    identity.get(name).as_str().filter(|s| !s.is_empty())
}
