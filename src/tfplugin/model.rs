//! Typed models over the dynamic [`Value`]: what resources and data sources work on.
//!
//! A model is a plain struct declared with [`model!`](crate::model): one field per attribute
//! or nested block, named as in the schema, each a [`Field`] (known, null or unknown) of a
//! [`ModelValue`] type. The macro writes the one conversion to and from [`Value`] and the
//! model's value type, which a test per type compares with the schema's, so that model and
//! schema can never name different attributes or types.
//!
//! Part of the protocol layer: knows cty, nothing about any cloud.

use std::collections::BTreeMap;

use super::diagnostics::{AttributePath, Diagnostic};
use super::value::{Number, Type, Value};

/// A value Terraform may not know yet, or may not have: the three states of every attribute.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Field<T> {
    /// A known value.
    Known(T),
    /// Null: not set.
    #[default]
    Null,
    /// Not known until apply.
    Unknown,
}

impl<T> Field<T> {
    /// The value, when known.
    pub fn get(&self) -> Option<&T> {
        match self {
            Field::Known(v) => Some(v),
            _ => None,
        }
    }

    /// The value, when known (by value).
    pub fn into_option(self) -> Option<T> {
        match self {
            Field::Known(v) => Some(v),
            _ => None,
        }
    }

    /// Whether the value is null.
    pub fn is_null(&self) -> bool {
        matches!(self, Field::Null)
    }

    /// Whether the value is unknown.
    pub fn is_unknown(&self) -> bool {
        matches!(self, Field::Unknown)
    }

    /// Whether the value is known.
    pub fn is_known(&self) -> bool {
        matches!(self, Field::Known(_))
    }

    /// The value, which must be known at this point (apply time: every configured value is).
    ///
    /// # Errors
    /// A "provider bug" diagnostic naming `attribute` when it is null or unknown: Terraform's
    /// contract guarantees it is not, so this only fires on a mistake in this provider.
    pub fn require(&self, attribute: &str) -> Result<&T, Diagnostic> {
        self.get().ok_or_else(|| {
            Diagnostic::error(
                "Provider bug",
                format!(
                    "`{attribute}` is not known at apply time, which Terraform guarantees it is. Please report this."
                ),
            )
            .at(AttributePath::root(attribute))
        })
    }

    /// Maps a known value.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Field<U> {
        match self {
            Field::Known(v) => Field::Known(f(v)),
            Field::Null => Field::Null,
            Field::Unknown => Field::Unknown,
        }
    }

    /// A reference to the known value, keeping the state.
    pub fn as_ref(&self) -> Field<&T> {
        match self {
            Field::Known(v) => Field::Known(v),
            Field::Null => Field::Null,
            Field::Unknown => Field::Unknown,
        }
    }
}

impl<T> Field<Vec<Field<T>>> {
    /// A known list of known elements.
    pub fn known_list(items: impl IntoIterator<Item = T>) -> Self {
        Field::Known(items.into_iter().map(Field::Known).collect())
    }
}

impl<T> Field<BTreeMap<String, Field<T>>> {
    /// A known map of known values.
    pub fn known_map(entries: impl IntoIterator<Item = (String, T)>) -> Self {
        Field::Known(entries.into_iter().map(|(k, v)| (k, Field::Known(v))).collect())
    }
}

impl<T> From<Option<T>> for Field<T> {
    fn from(v: Option<T>) -> Self {
        v.map_or(Field::Null, Field::Known)
    }
}

impl From<&str> for Field<String> {
    fn from(v: &str) -> Self {
        Field::Known(v.to_string())
    }
}

impl From<String> for Field<String> {
    fn from(v: String) -> Self {
        Field::Known(v)
    }
}

/// The elements of a set attribute (order carries no meaning; kept as sent so that unknown
/// elements survive a round trip).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Set<T>(pub Vec<T>);

/// A value converted from a [`Value`] that was checked against a schema.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: expected {expected}, got {found}")]
pub struct ModelError {
    /// Where in the value.
    pub path: AttributePath,
    /// What the model expected.
    pub expected: &'static str,
    /// What the value was.
    pub found: String,
}

impl From<ModelError> for Diagnostic {
    fn from(e: ModelError) -> Self {
        let path = e.path.clone();
        Diagnostic::error(
            "Provider bug",
            format!("A value does not match the provider's own model of it ({e}). Please report this."),
        )
        .at(path)
    }
}

fn mismatch(path: &AttributePath, expected: &'static str, found: &Value) -> ModelError {
    let found = match found {
        Value::Unknown => "an unknown value",
        Value::Null => "null",
        Value::Bool(_) => "a bool",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::List(_) => "a list",
        Value::Set(_) => "a set",
        Value::Map(_) => "a map",
        Value::Object(_) => "an object",
        Value::Tuple(_) => "a tuple",
        Value::Dynamic(..) => "a dynamic value",
    };
    ModelError {
        path: path.clone(),
        expected,
        found: found.to_string(),
    }
}

/// A type that converts to and from [`Value`], with its cty type.
pub trait ModelValue: Sized {
    /// The cty type of its values.
    fn value_type() -> Type;
    /// Converts a value of [`Self::value_type`] (known: [`Field`] handles null and unknown).
    ///
    /// # Errors
    /// When the value has another type (a mismatch between schema and model).
    fn from_value(value: &Value, at: &AttributePath) -> Result<Self, ModelError>;
    /// The value.
    fn to_value(&self) -> Value;
}

impl<T: ModelValue> ModelValue for Field<T> {
    fn value_type() -> Type {
        T::value_type()
    }
    fn from_value(value: &Value, at: &AttributePath) -> Result<Self, ModelError> {
        match value {
            Value::Null => Ok(Field::Null),
            Value::Unknown => Ok(Field::Unknown),
            v => T::from_value(v, at).map(Field::Known),
        }
    }
    fn to_value(&self) -> Value {
        match self {
            Field::Known(v) => v.to_value(),
            Field::Null => Value::Null,
            Field::Unknown => Value::Unknown,
        }
    }
}

impl ModelValue for String {
    fn value_type() -> Type {
        Type::String
    }
    fn from_value(value: &Value, at: &AttributePath) -> Result<Self, ModelError> {
        value
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| mismatch(at, "a string", value))
    }
    fn to_value(&self) -> Value {
        Value::String(self.clone())
    }
}

impl ModelValue for bool {
    fn value_type() -> Type {
        Type::Bool
    }
    fn from_value(value: &Value, at: &AttributePath) -> Result<Self, ModelError> {
        value.as_bool().ok_or_else(|| mismatch(at, "a bool", value))
    }
    fn to_value(&self) -> Value {
        Value::Bool(*self)
    }
}

impl ModelValue for Number {
    fn value_type() -> Type {
        Type::Number
    }
    fn from_value(value: &Value, at: &AttributePath) -> Result<Self, ModelError> {
        value
            .as_number()
            .cloned()
            .ok_or_else(|| mismatch(at, "a number", value))
    }
    fn to_value(&self) -> Value {
        Value::Number(self.clone())
    }
}

impl<T: ModelValue> ModelValue for Vec<T> {
    fn value_type() -> Type {
        Type::list(T::value_type())
    }
    fn from_value(value: &Value, at: &AttributePath) -> Result<Self, ModelError> {
        match value {
            Value::List(items) => items
                .iter()
                .enumerate()
                .map(|(i, v)| T::from_value(v, &at.clone().index(i)))
                .collect(),
            v => Err(mismatch(at, "a list", v)),
        }
    }
    fn to_value(&self) -> Value {
        Value::List(self.iter().map(ModelValue::to_value).collect())
    }
}

impl<T: ModelValue> ModelValue for Set<T> {
    fn value_type() -> Type {
        Type::set(T::value_type())
    }
    fn from_value(value: &Value, at: &AttributePath) -> Result<Self, ModelError> {
        match value {
            Value::Set(items) => items
                .iter()
                .enumerate()
                .map(|(i, v)| T::from_value(v, &at.clone().index(i)))
                .collect::<Result<_, _>>()
                .map(Set),
            v => Err(mismatch(at, "a set", v)),
        }
    }
    fn to_value(&self) -> Value {
        Value::Set(self.0.iter().map(ModelValue::to_value).collect())
    }
}

impl<T: ModelValue> ModelValue for BTreeMap<String, T> {
    fn value_type() -> Type {
        Type::map(T::value_type())
    }
    fn from_value(value: &Value, at: &AttributePath) -> Result<Self, ModelError> {
        match value {
            Value::Map(entries) => entries
                .iter()
                .map(|(k, v)| Ok((k.clone(), T::from_value(v, &at.clone().key(k))?)))
                .collect(),
            v => Err(mismatch(at, "a map", v)),
        }
    }
    fn to_value(&self) -> Value {
        Value::Map(self.iter().map(|(k, v)| (k.clone(), v.to_value())).collect())
    }
}

/// The object form of a model: what [`model!`](crate::model) implements. The top-level value
/// of a resource or data source is one.
pub trait Model: ModelValue + Clone + Send + Sync + 'static {
    /// Converts a whole resource value; null (no prior state) is `None`.
    ///
    /// # Errors
    /// When the value does not match the model.
    fn from_root(value: &Value) -> Result<Option<Self>, ModelError> {
        if value.is_null() {
            return Ok(None);
        }
        Self::from_value(value, &AttributePath::default()).map(Some)
    }
}

/// Internal to [`model!`]: reads one object attribute.
#[doc(hidden)]
pub fn read_attribute<T: ModelValue>(object: &Value, name: &str, at: &AttributePath) -> Result<T, ModelError> {
    let path = if at.0.is_empty() {
        AttributePath::root(name)
    } else {
        at.clone().attr(name)
    };
    T::from_value(object.get(name), &path)
}

/// Internal to [`model!`]: the attribute a field stands for (`r#type` is `type`).
#[doc(hidden)]
pub fn field_name(field: &'static str) -> &'static str {
    field.strip_prefix("r#").unwrap_or(field)
}

/// Internal to [`model!`]: checks that a value is an object.
#[doc(hidden)]
pub fn expect_object(value: &Value, at: &AttributePath) -> Result<(), ModelError> {
    match value {
        Value::Object(_) => Ok(()),
        v => Err(mismatch(at, "an object", v)),
    }
}

/// Declares a model: a struct whose fields are the attributes and nested blocks of a schema
/// (same names), with its [`ModelValue`] and [`Model`] implementations.
///
/// ```
/// use locality::tfplugin::model::{Field, ModelValue};
/// locality::model! {
///     /// A widget.
///     pub struct Widget {
///         /// Its name.
///         pub name: Field<String>,
///     }
/// }
/// let w = Widget { name: "a".into() };
/// assert_eq!(Widget::from_value(&w.to_value(), &Default::default()).unwrap(), w);
/// ```
#[macro_export]
macro_rules! model {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $( $(#[$field_meta:meta])* $field_vis:vis $field:ident : $ty:ty ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Default)]
        $vis struct $name {
            $( $(#[$field_meta])* $field_vis $field: $ty, )*
        }

        impl $crate::tfplugin::model::ModelValue for $name {
            fn value_type() -> $crate::tfplugin::Type {
                $crate::tfplugin::Type::object([
                    $( ($crate::tfplugin::model::field_name(stringify!($field)), <$ty as $crate::tfplugin::model::ModelValue>::value_type()), )*
                ])
            }
            fn from_value(
                value: &$crate::tfplugin::Value,
                at: &$crate::tfplugin::AttributePath,
            ) -> ::std::result::Result<Self, $crate::tfplugin::model::ModelError> {
                $crate::tfplugin::model::expect_object(value, at)?;
                Ok($name {
                    $( $field: $crate::tfplugin::model::read_attribute(value, $crate::tfplugin::model::field_name(stringify!($field)), at)?, )*
                })
            }
            fn to_value(&self) -> $crate::tfplugin::Value {
                $crate::tfplugin::Value::object([
                    $( ($crate::tfplugin::model::field_name(stringify!($field)), $crate::tfplugin::model::ModelValue::to_value(&self.$field)), )*
                ])
            }
        }

        impl $crate::tfplugin::model::Model for $name {}
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    crate::model! {
        /// Test model.
        struct Inner {
            name: Field<String>,
        }
    }

    crate::model! {
        /// Test model.
        struct Outer {
            id: Field<String>,
            count: Field<Number>,
            flags: Field<Set<Field<String>>>,
            weights: Field<BTreeMap<String, Field<Number>>>,
            inner: Field<Vec<Inner>>,
        }
    }

    #[test]
    fn round_trips_keep_every_state() {
        let value = Value::object([
            ("id", Value::Unknown),
            ("count", Value::from(3)),
            (
                "flags",
                Value::Set(vec![Value::Unknown, Value::Unknown, Value::from("a")]),
            ),
            ("weights", Value::Map([("a".to_string(), Value::Unknown)].into())),
            ("inner", Value::Unknown),
        ]);
        let model = Outer::from_value(&value, &AttributePath::default()).unwrap();
        assert!(model.id.is_unknown() && model.inner.is_unknown());
        assert_eq!(
            model.flags.get().unwrap().0.len(),
            3,
            "unknown set elements are not merged"
        );
        assert_eq!(model.to_value(), value);
    }

    #[test]
    fn mismatches_name_the_path() {
        let value = Value::object([("inner", Value::List(vec![Value::object([("name", Value::from(1))])]))]);
        let err = Outer::from_value(&value, &AttributePath::default()).unwrap_err();
        assert_eq!(err.path.to_string(), "inner[0].name");
        assert!(Outer::from_root(&Value::Null).unwrap().is_none());
    }
}
