//! Three-state values (known, null, unknown) for everything Terraform sends, with the
//! schema-driven msgpack and JSON codecs of the wire format.
//!
//! Part of the protocol layer: knows cty, nothing about any cloud.

mod json;
mod msgpack;
mod number;
mod types;

use std::collections::BTreeMap;

pub use json::{decode_json, JsonError};
pub use msgpack::{decode_msgpack, encode_msgpack, MsgpackError};
pub use number::{InvalidNumber, Number};
pub use types::{InvalidType, Type};

/// A Terraform value. Objects and maps keep their keys sorted, so encoding is deterministic.
#[derive(Debug, Clone, Default)]
pub enum Value {
    /// Not known until apply.
    Unknown,
    /// Null (absent).
    #[default]
    Null,
    /// A bool.
    Bool(bool),
    /// An arbitrary-precision number.
    Number(Number),
    /// A string.
    String(String),
    /// A list, or the elements of a list block.
    List(Vec<Value>),
    /// A set (order carries no meaning).
    Set(Vec<Value>),
    /// A map with string keys.
    Map(BTreeMap<String, Value>),
    /// An object, or a block.
    Object(BTreeMap<String, Value>),
    /// A tuple.
    Tuple(Vec<Value>),
    /// A value of a `dynamic` attribute, with the concrete type it was sent with.
    Dynamic(Type, Box<Value>),
}

static NULL: Value = Value::Null;

impl Value {
    /// A known string.
    pub fn string(s: impl Into<String>) -> Self {
        Value::String(s.into())
    }

    /// An object from `(name, value)` pairs.
    pub fn object<I: IntoIterator<Item = (S, Value)>, S: Into<String>>(attrs: I) -> Self {
        Value::Object(attrs.into_iter().map(|(k, v)| (k.into(), v)).collect())
    }

    /// Whether the value is null.
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// Whether the value itself is unknown (not looking inside collections).
    pub fn is_unknown(&self) -> bool {
        matches!(self, Value::Unknown)
    }

    /// Whether the value and everything inside it is known.
    pub fn is_wholly_known(&self) -> bool {
        match self {
            Value::Unknown => false,
            Value::List(v) | Value::Set(v) | Value::Tuple(v) => v.iter().all(Value::is_wholly_known),
            Value::Map(m) | Value::Object(m) => m.values().all(Value::is_wholly_known),
            Value::Dynamic(_, v) => v.is_wholly_known(),
            _ => true,
        }
    }

    /// The attribute `name` of an object; null for anything else or a missing key.
    pub fn get(&self, name: &str) -> &Value {
        match self {
            Value::Object(m) | Value::Map(m) => m.get(name).unwrap_or(&NULL),
            Value::Dynamic(_, v) => v.get(name),
            _ => &NULL,
        }
    }

    /// A mutable reference to attribute `name`, inserting null when absent.
    /// Only meaningful on objects; other values are turned into an empty object first.
    pub fn get_mut(&mut self, name: &str) -> &mut Value {
        if !matches!(self, Value::Object(_)) {
            *self = Value::Object(BTreeMap::new());
        }
        match self {
            Value::Object(m) => m.entry(name.to_string()).or_default(),
            _ => unreachable!("made an object above"),
        }
    }

    /// Sets attribute `name` of an object.
    pub fn set(&mut self, name: &str, value: Value) {
        *self.get_mut(name) = value;
    }

    /// The string, when known and a string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    /// The bool, when known and a bool.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// The number, when known and a number.
    pub fn as_number(&self) -> Option<&Number> {
        match self {
            Value::Number(n) => Some(n),
            _ => None,
        }
    }

    /// The elements of a known list, set or tuple; empty for null.
    pub fn elements(&self) -> &[Value] {
        match self {
            Value::List(v) | Value::Set(v) | Value::Tuple(v) => v,
            _ => &[],
        }
    }

    /// The entries of a known map or object.
    pub fn entries(&self) -> Option<&BTreeMap<String, Value>> {
        match self {
            Value::Map(m) | Value::Object(m) => Some(m),
            _ => None,
        }
    }
}

/// Semantic equality: sets compare without regard to order; otherwise structural.
impl PartialEq for Value {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Value::Unknown, Value::Unknown) | (Value::Null, Value::Null) => true,
            (Value::Bool(a), Value::Bool(b)) => a == b,
            (Value::Number(a), Value::Number(b)) => a == b,
            (Value::String(a), Value::String(b)) => a == b,
            (Value::List(a), Value::List(b)) | (Value::Tuple(a), Value::Tuple(b)) => a == b,
            (Value::Set(a), Value::Set(b)) => {
                a.len() == b.len() && a.iter().all(|x| b.contains(x)) && b.iter().all(|x| a.contains(x))
            }
            (Value::Map(a), Value::Map(b)) | (Value::Object(a), Value::Object(b)) => a == b,
            (Value::Dynamic(ta, a), Value::Dynamic(tb, b)) => ta == tb && a == b,
            _ => false,
        }
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Self {
        Value::String(s.to_string())
    }
}

impl From<String> for Value {
    fn from(s: String) -> Self {
        Value::String(s)
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Self {
        Value::Bool(b)
    }
}

impl From<i64> for Value {
    fn from(n: i64) -> Self {
        Value::Number(n.into())
    }
}

impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(v: Option<T>) -> Self {
        v.map_or(Value::Null, Into::into)
    }
}
