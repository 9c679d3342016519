//! The JSON form of values (cty/json), used for `RawState.json` in UpgradeResourceState.
//!
//! Like cty's own decoder, missing object attributes become null and unknown ones are an
//! error. Numbers keep every digit (serde_json's `arbitrary_precision`).

use std::collections::BTreeMap;

use serde_json::Value as Json;

use super::{Number, Type, Value};

/// A JSON document that does not conform to the expected type.
#[derive(Debug, Clone, thiserror::Error)]
#[error("at {path}: {message}")]
pub struct JsonError {
    /// Where, as `.a.b[0]`.
    pub path: String,
    /// What is wrong.
    pub message: String,
}

/// Decodes JSON bytes as a value of type `ty`.
///
/// # Errors
/// [`JsonError`] when the bytes are not JSON or do not conform to `ty`.
pub fn decode_json(bytes: &[u8], ty: &Type) -> Result<Value, JsonError> {
    let json: Json = serde_json::from_slice(bytes).map_err(|e| JsonError {
        path: ".".into(),
        message: e.to_string(),
    })?;
    from_json(&json, ty, ".")
}

fn from_json(json: &Json, ty: &Type, path: &str) -> Result<Value, JsonError> {
    let bad = |what: &str| JsonError {
        path: path.to_string(),
        message: format!("expected {what}, found {json}"),
    };
    if json.is_null() {
        return Ok(Value::Null);
    }
    Ok(match ty {
        Type::String => Value::String(match json {
            Json::String(s) => s.clone(),
            Json::Number(n) => n.to_string(),
            Json::Bool(b) => b.to_string(),
            _ => return Err(bad("a string")),
        }),
        Type::Number => Value::Number(match json {
            Json::Number(n) => Number::parse(&n.to_string()).map_err(|_| bad("a number"))?,
            Json::String(s) => Number::parse(s).map_err(|_| bad("a number"))?,
            _ => return Err(bad("a number")),
        }),
        Type::Bool => Value::Bool(match json {
            Json::Bool(b) => *b,
            Json::String(s) if s == "true" => true,
            Json::String(s) if s == "false" => false,
            _ => return Err(bad("a bool")),
        }),
        Type::List(elem) | Type::Set(elem) => {
            let items = json.as_array().ok_or_else(|| bad("an array"))?;
            let values = items
                .iter()
                .enumerate()
                .map(|(i, item)| from_json(item, elem, &format!("{path}[{i}]")))
                .collect::<Result<Vec<_>, _>>()?;
            if matches!(ty, Type::Set(_)) {
                Value::Set(values)
            } else {
                Value::List(values)
            }
        }
        Type::Tuple(elems) => {
            let items = json
                .as_array()
                .filter(|a| a.len() == elems.len())
                .ok_or_else(|| bad("a tuple"))?;
            Value::Tuple(
                items
                    .iter()
                    .zip(elems)
                    .enumerate()
                    .map(|(i, (item, t))| from_json(item, t, &format!("{path}[{i}]")))
                    .collect::<Result<_, _>>()?,
            )
        }
        Type::Map(elem) => {
            let entries = json.as_object().ok_or_else(|| bad("an object"))?;
            Value::Map(
                entries
                    .iter()
                    .map(|(k, v)| Ok((k.clone(), from_json(v, elem, &format!("{path}[{k:?}]"))?)))
                    .collect::<Result<_, JsonError>>()?,
            )
        }
        Type::Object(attrs, _) => {
            let entries = json.as_object().ok_or_else(|| bad("an object"))?;
            let mut out = BTreeMap::new();
            for (k, v) in entries {
                let t = attrs.get(k).ok_or_else(|| JsonError {
                    path: format!("{path}{k}"),
                    message: "unsupported attribute".into(),
                })?;
                out.insert(k.clone(), from_json(v, t, &format!("{path}{k}."))?);
            }
            for name in attrs.keys() {
                out.entry(name.clone()).or_insert(Value::Null);
            }
            Value::Object(out)
        }
        Type::Dynamic => {
            let obj = json
                .as_object()
                .ok_or_else(|| bad("a dynamic {\"value\",\"type\"} object"))?;
            let concrete =
                Type::from_json(obj.get("type").ok_or_else(|| bad("a type"))?).map_err(|e| bad(&e.to_string()))?;
            let inner = from_json(obj.get("value").unwrap_or(&Json::Null), &concrete, path)?;
            Value::Dynamic(concrete, Box::new(inner))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_json_with_missing_attributes_and_big_numbers() {
        let ty = Type::object([
            ("id", Type::String),
            ("size", Type::Number),
            ("ratio", Type::Number),
            ("added_later", Type::String),
        ]);
        let raw = b"{\n  \"id\": \"x\",\n  \"size\": 12345678901234567890,\n  \"ratio\": 0.1\n}";
        let v = decode_json(raw, &ty).unwrap();
        assert_eq!(v.get("size").as_number().unwrap().as_str(), "12345678901234567890");
        assert_eq!(v.get("ratio").as_number().unwrap().as_str(), "0.1");
        assert!(v.get("added_later").is_null());
        assert!(decode_json(b"{\"nope\":1}", &ty)
            .unwrap_err()
            .to_string()
            .contains("nope"));
    }
}
