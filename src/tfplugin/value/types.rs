//! Terraform (cty) types and their JSON form, as carried in `Schema.Attribute.type` and in
//! the first element of a msgpack-encoded dynamic value.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{json, Value as Json};

/// A cty type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Type {
    /// `string`
    String,
    /// `number` (arbitrary precision)
    Number,
    /// `bool`
    Bool,
    /// `dynamic`: the concrete type travels with the value.
    Dynamic,
    /// `list(T)`
    List(Box<Type>),
    /// `set(T)`
    Set(Box<Type>),
    /// `map(T)`
    Map(Box<Type>),
    /// `object({...})`, with the names of optional attributes (type constraints only).
    Object(BTreeMap<String, Type>, BTreeSet<String>),
    /// `tuple([...])`
    Tuple(Vec<Type>),
}

/// A type JSON document that is not a valid cty type.
#[derive(Debug, Clone, thiserror::Error)]
#[error("invalid type JSON: {0}")]
pub struct InvalidType(pub String);

impl Type {
    /// `list(elem)`
    pub fn list(elem: Type) -> Self {
        Type::List(Box::new(elem))
    }
    /// `set(elem)`
    pub fn set(elem: Type) -> Self {
        Type::Set(Box::new(elem))
    }
    /// `map(elem)`
    pub fn map(elem: Type) -> Self {
        Type::Map(Box::new(elem))
    }
    /// `object({...})` with no optional attributes.
    pub fn object<I: IntoIterator<Item = (S, Type)>, S: Into<String>>(attrs: I) -> Self {
        Type::Object(attrs.into_iter().map(|(k, v)| (k.into(), v)).collect(), BTreeSet::new())
    }

    /// The cty JSON form (`"string"`, `["list","string"]`, `["object",{...}]`, ...).
    pub fn to_json(&self) -> Json {
        match self {
            Type::String => json!("string"),
            Type::Number => json!("number"),
            Type::Bool => json!("bool"),
            Type::Dynamic => json!("dynamic"),
            Type::List(t) => json!(["list", t.to_json()]),
            Type::Set(t) => json!(["set", t.to_json()]),
            Type::Map(t) => json!(["map", t.to_json()]),
            Type::Object(attrs, optional) => {
                let attrs: serde_json::Map<String, Json> =
                    attrs.iter().map(|(k, t)| (k.clone(), t.to_json())).collect();
                if optional.is_empty() {
                    json!(["object", attrs])
                } else {
                    json!(["object", attrs, optional])
                }
            }
            Type::Tuple(elems) => {
                json!(["tuple", elems.iter().map(Type::to_json).collect::<Vec<_>>()])
            }
        }
    }

    /// The cty JSON form as bytes, as `Schema.Attribute.type` wants them.
    pub fn to_json_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(&self.to_json()).expect("type JSON always serializes")
    }

    /// Parses the cty JSON form.
    ///
    /// # Errors
    /// [`InvalidType`] when the document is not a cty type.
    pub fn from_json(json: &Json) -> Result<Self, InvalidType> {
        let bad = || InvalidType(json.to_string());
        match json {
            Json::String(s) => match s.as_str() {
                "string" => Ok(Type::String),
                "number" => Ok(Type::Number),
                "bool" => Ok(Type::Bool),
                "dynamic" => Ok(Type::Dynamic),
                _ => Err(bad()),
            },
            Json::Array(parts) => {
                let kind = parts.first().and_then(Json::as_str).ok_or_else(bad)?;
                let arg = parts.get(1).ok_or_else(bad)?;
                match kind {
                    "list" => Ok(Type::list(Type::from_json(arg)?)),
                    "set" => Ok(Type::set(Type::from_json(arg)?)),
                    "map" => Ok(Type::map(Type::from_json(arg)?)),
                    "object" => {
                        let attrs = arg
                            .as_object()
                            .ok_or_else(bad)?
                            .iter()
                            .map(|(k, v)| Ok((k.clone(), Type::from_json(v)?)))
                            .collect::<Result<_, InvalidType>>()?;
                        let optional = match parts.get(2) {
                            Some(Json::Array(names)) => names
                                .iter()
                                .map(|n| n.as_str().map(String::from).ok_or_else(bad))
                                .collect::<Result<_, _>>()?,
                            Some(_) => return Err(bad()),
                            None => BTreeSet::new(),
                        };
                        Ok(Type::Object(attrs, optional))
                    }
                    "tuple" => Ok(Type::Tuple(
                        arg.as_array()
                            .ok_or_else(bad)?
                            .iter()
                            .map(Type::from_json)
                            .collect::<Result<_, _>>()?,
                    )),
                    _ => Err(bad()),
                }
            }
            _ => Err(bad()),
        }
    }

    /// A short human name (`String`, `Map of String`), as the docs show it.
    pub fn friendly_name(&self) -> String {
        match self {
            Type::String => "String".into(),
            Type::Number => "Number".into(),
            Type::Bool => "Boolean".into(),
            Type::Dynamic => "Dynamic".into(),
            Type::List(t) => format!("List of {}", t.friendly_name()),
            Type::Set(t) => format!("Set of {}", t.friendly_name()),
            Type::Map(t) => format!("Map of {}", t.friendly_name()),
            Type::Object(..) => "Object".into(),
            Type::Tuple(..) => "Tuple".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_round_trip() {
        for text in [
            r#""string""#,
            r#"["list","number"]"#,
            r#"["map",["set","bool"]]"#,
            r#"["object",{"a":"string","b":["tuple",["number","dynamic"]]}]"#,
            r#"["object",{"a":"string"},["a"]]"#,
        ] {
            let json: Json = serde_json::from_str(text).unwrap();
            let ty = Type::from_json(&json).unwrap();
            assert_eq!(serde_json::to_string(&ty.to_json()).unwrap(), text);
        }
        assert!(Type::from_json(&json!("strin")).is_err());
        assert!(Type::from_json(&json!(["list"])).is_err());
    }
}
