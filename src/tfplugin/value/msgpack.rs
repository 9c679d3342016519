//! The msgpack form of DynamicValue (cty/msgpack), driven by the schema's type.
//!
//! Decoding accepts every int/uint/float width and decimal strings for numbers, and treats
//! *any* msgpack extension as unknown (ext 0, and ext 12 "refined unknown" whose payload is
//! ignored). Encoding writes every object attribute (nulls included), numbers as ints when
//! they fit and as decimal strings otherwise, and unknowns as `d4 00 00`.

use std::collections::BTreeMap;

use rmpv::Value as Mp;

use super::{Number, Type, Value};

/// A msgpack document that does not match the expected type.
#[derive(Debug, Clone, thiserror::Error)]
pub enum MsgpackError {
    /// The bytes are not msgpack.
    #[error("malformed msgpack: {0}")]
    Malformed(String),
    /// The value does not conform to the type.
    #[error("at {path}: expected {expected}, found {found}")]
    Mismatch {
        /// Where, as `.a.b[0]`.
        path: String,
        /// The type wanted.
        expected: String,
        /// What was there.
        found: String,
    },
}

/// Decodes msgpack bytes as a value of type `ty`. Empty input is null.
///
/// # Errors
/// [`MsgpackError`] when the bytes are malformed or do not conform to `ty`.
pub fn decode_msgpack(bytes: &[u8], ty: &Type) -> Result<Value, MsgpackError> {
    if bytes.is_empty() {
        return Ok(Value::Null);
    }
    // rmpv reads the reserved marker 0xc1 as nil; msgpack says it is never used, so a value
    // holding one is malformed. Only inputs with that byte somewhere need the walk.
    if bytes.contains(&0xc1) {
        check_markers(&mut &bytes[..]).map_err(MsgpackError::Malformed)?;
    }
    let mut reader = bytes;
    let mp = rmpv::decode::read_value(&mut reader).map_err(|e| MsgpackError::Malformed(e.to_string()))?;
    if !reader.is_empty() {
        return Err(MsgpackError::Malformed(format!(
            "{} bytes after the value",
            reader.len()
        )));
    }
    from_mp(&mp, ty, &mut String::new())
}

/// Walks one msgpack value, refusing the reserved marker 0xc1 wherever it stands as a marker.
fn check_markers(reader: &mut &[u8]) -> Result<(), String> {
    use rmp::Marker as M;
    fn skip(reader: &mut &[u8], n: usize) -> Result<(), String> {
        if reader.len() < n {
            return Err("truncated value".into());
        }
        *reader = &reader[n..];
        Ok(())
    }
    fn length(reader: &mut &[u8], width: usize) -> Result<usize, String> {
        let bytes = reader.get(..width).ok_or("truncated length")?;
        let n = bytes.iter().fold(0usize, |n, b| (n << 8) | usize::from(*b));
        *reader = &reader[width..];
        Ok(n)
    }
    let mut pending: usize = 1;
    while pending > 0 {
        pending -= 1;
        let marker = M::from_u8(*reader.first().ok_or("truncated value")?);
        *reader = &reader[1..];
        match marker {
            M::Reserved => return Err("reserved marker 0xc1".into()),
            M::FixPos(_) | M::FixNeg(_) | M::Null | M::True | M::False => {}
            M::U8 | M::I8 => skip(reader, 1)?,
            M::U16 | M::I16 => skip(reader, 2)?,
            M::U32 | M::I32 | M::F32 => skip(reader, 4)?,
            M::U64 | M::I64 | M::F64 => skip(reader, 8)?,
            M::FixStr(n) => skip(reader, usize::from(n))?,
            M::Str8 | M::Bin8 => {
                let n = length(reader, 1)?;
                skip(reader, n)?
            }
            M::Str16 | M::Bin16 => {
                let n = length(reader, 2)?;
                skip(reader, n)?
            }
            M::Str32 | M::Bin32 => {
                let n = length(reader, 4)?;
                skip(reader, n)?
            }
            M::FixArray(n) => pending += usize::from(n),
            M::Array16 => pending += length(reader, 2)?,
            M::Array32 => pending += length(reader, 4)?,
            M::FixMap(n) => pending += 2 * usize::from(n),
            M::Map16 => pending += 2 * length(reader, 2)?,
            M::Map32 => pending += 2 * length(reader, 4)?,
            M::FixExt1 => skip(reader, 2)?,
            M::FixExt2 => skip(reader, 3)?,
            M::FixExt4 => skip(reader, 5)?,
            M::FixExt8 => skip(reader, 9)?,
            M::FixExt16 => skip(reader, 17)?,
            M::Ext8 => {
                let n = length(reader, 1)?;
                skip(reader, n + 1)?
            }
            M::Ext16 => {
                let n = length(reader, 2)?;
                skip(reader, n + 1)?
            }
            M::Ext32 => {
                let n = length(reader, 4)?;
                skip(reader, n + 1)?
            }
        }
        // Every pending element needs at least one byte: a count beyond the input is malformed
        // (and must not make this loop run for billions of rounds).
        if pending > reader.len() {
            return Err("a collection claims more elements than the input holds".into());
        }
    }
    Ok(())
}

fn mismatch(path: &str, ty: &Type, found: &Mp) -> MsgpackError {
    MsgpackError::Mismatch {
        path: if path.is_empty() { ".".into() } else { path.to_string() },
        expected: ty.to_json().to_string(),
        found: format!("{found}"),
    }
}

fn from_mp(mp: &Mp, ty: &Type, path: &mut String) -> Result<Value, MsgpackError> {
    match mp {
        Mp::Nil => return Ok(Value::Null),
        Mp::Ext(..) => return Ok(Value::Unknown),
        _ => {}
    }
    let value = match (ty, mp) {
        (Type::String, Mp::String(s)) => Value::String(
            s.as_str()
                .ok_or_else(|| MsgpackError::Malformed(format!("invalid UTF-8 at {path}")))?
                .to_string(),
        ),
        (Type::Bool, Mp::Boolean(b)) => Value::Bool(*b),
        (Type::Number, Mp::Integer(i)) => Value::Number(match (i.as_i64(), i.as_u64()) {
            (Some(v), _) => v.into(),
            (None, Some(v)) => v.into(),
            _ => return Err(mismatch(path, ty, mp)),
        }),
        (Type::Number, Mp::F64(f)) => Value::Number(Number::from_f64(*f).map_err(|_| mismatch(path, ty, mp))?),
        (Type::Number, Mp::F32(f)) => {
            Value::Number(Number::from_f64(f64::from(*f)).map_err(|_| mismatch(path, ty, mp))?)
        }
        (Type::Number, Mp::String(s)) => {
            let text = s.as_str().ok_or_else(|| mismatch(path, ty, mp))?;
            Value::Number(Number::parse(text).map_err(|_| mismatch(path, ty, mp))?)
        }
        (Type::List(elem), Mp::Array(items)) => Value::List(decode_items(items, elem, path)?),
        (Type::Set(elem), Mp::Array(items)) => Value::Set(decode_items(items, elem, path)?),
        (Type::Tuple(elems), Mp::Array(items)) if elems.len() == items.len() => {
            let mut out = Vec::with_capacity(items.len());
            for (i, (item, elem)) in items.iter().zip(elems).enumerate() {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                out.push(from_mp(item, elem, path)?);
                path.truncate(len);
            }
            Value::Tuple(out)
        }
        (Type::Map(elem), Mp::Map(entries)) => {
            let mut out = BTreeMap::new();
            for (k, v) in entries {
                let key = k.as_str().ok_or_else(|| mismatch(path, ty, mp))?.to_string();
                let len = path.len();
                path.push_str(&format!("[{key:?}]"));
                out.insert(key, from_mp(v, elem, path)?);
                path.truncate(len);
            }
            Value::Map(out)
        }
        (Type::Object(attrs, _), Mp::Map(entries)) => {
            let mut out = BTreeMap::new();
            for (k, v) in entries {
                let key = k.as_str().ok_or_else(|| mismatch(path, ty, mp))?;
                let attr_ty = attrs.get(key).ok_or_else(|| MsgpackError::Mismatch {
                    path: format!("{path}.{key}"),
                    expected: "no such attribute".into(),
                    found: "an unsupported attribute".into(),
                })?;
                let len = path.len();
                path.push('.');
                path.push_str(key);
                out.insert(key.to_string(), from_mp(v, attr_ty, path)?);
                path.truncate(len);
            }
            for name in attrs.keys() {
                out.entry(name.clone()).or_insert(Value::Null);
            }
            Value::Object(out)
        }
        (Type::Dynamic, Mp::Array(pair)) if pair.len() == 2 => {
            let type_json = match &pair[0] {
                Mp::Binary(b) => serde_json::from_slice(b).map_err(|e| MsgpackError::Malformed(e.to_string()))?,
                Mp::String(s) => serde_json::from_str(s.as_str().unwrap_or_default())
                    .map_err(|e| MsgpackError::Malformed(e.to_string()))?,
                other => return Err(mismatch(path, ty, other)),
            };
            let concrete = Type::from_json(&type_json).map_err(|e| MsgpackError::Malformed(e.to_string()))?;
            let inner = from_mp(&pair[1], &concrete, path)?;
            Value::Dynamic(concrete, Box::new(inner))
        }
        _ => return Err(mismatch(path, ty, mp)),
    };
    Ok(value)
}

fn decode_items(items: &[Mp], elem: &Type, path: &mut String) -> Result<Vec<Value>, MsgpackError> {
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let len = path.len();
        path.push_str(&format!("[{i}]"));
        out.push(from_mp(item, elem, path)?);
        path.truncate(len);
    }
    Ok(out)
}

/// Encodes `value` as msgpack of type `ty`. Object attributes missing from `value` are
/// written as null, so the result always has every attribute the type names.
pub fn encode_msgpack(value: &Value, ty: &Type) -> Vec<u8> {
    let mut out = Vec::new();
    rmpv::encode::write_value(&mut out, &to_mp(value, ty)).expect("writing to a Vec cannot fail");
    out
}

fn to_mp(value: &Value, ty: &Type) -> Mp {
    match (value, ty) {
        (Value::Null, _) => Mp::Nil,
        (Value::Unknown, _) => Mp::Ext(0, vec![0]),
        (Value::Dynamic(concrete, inner), Type::Dynamic) => {
            Mp::Array(vec![Mp::Binary(concrete.to_json_bytes()), to_mp(inner, concrete)])
        }
        (Value::Dynamic(_, inner), _) => to_mp(inner, ty),
        (_, Type::Dynamic) => {
            let concrete = infer_type(value);
            Mp::Array(vec![Mp::Binary(concrete.to_json_bytes()), to_mp(value, &concrete)])
        }
        (Value::Bool(b), _) => Mp::Boolean(*b),
        (Value::String(s), _) => Mp::String(s.clone().into()),
        (Value::Number(n), _) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => Mp::from(i),
            (None, Some(u)) => Mp::from(u),
            _ => Mp::String(n.as_str().into()),
        },
        (Value::List(items) | Value::Set(items), Type::List(elem) | Type::Set(elem)) => {
            Mp::Array(items.iter().map(|v| to_mp(v, elem)).collect())
        }
        (Value::Tuple(items) | Value::List(items), Type::Tuple(elems)) => {
            Mp::Array(items.iter().zip(elems).map(|(v, t)| to_mp(v, t)).collect())
        }
        (Value::Map(m) | Value::Object(m), Type::Map(elem)) => Mp::Map(
            m.iter()
                .map(|(k, v)| (Mp::String(k.clone().into()), to_mp(v, elem)))
                .collect(),
        ),
        (Value::Object(m) | Value::Map(m), Type::Object(attrs, _)) => Mp::Map(
            attrs
                .iter()
                .map(|(k, t)| (Mp::String(k.clone().into()), to_mp(m.get(k).unwrap_or(&Value::Null), t)))
                .collect(),
        ),
        // A value that does not fit its type is a provider bug; null keeps Terraform's
        // error message pointing at the attribute instead of failing to decode at all.
        _ => Mp::Nil,
    }
}

/// The concrete type of a value placed in a `dynamic` attribute.
fn infer_type(value: &Value) -> Type {
    match value {
        Value::Bool(_) => Type::Bool,
        Value::Number(_) => Type::Number,
        Value::String(_) | Value::Null | Value::Unknown => Type::String,
        Value::List(v) => Type::list(v.first().map_or(Type::String, infer_type)),
        Value::Set(v) => Type::set(v.first().map_or(Type::String, infer_type)),
        Value::Map(m) => Type::map(m.values().next().map_or(Type::String, infer_type)),
        Value::Object(m) => Type::object(m.iter().map(|(k, v)| (k.clone(), infer_type(v)))),
        Value::Tuple(v) => Type::Tuple(v.iter().map(infer_type).collect()),
        Value::Dynamic(t, _) => t.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reserved_marker_is_malformed_not_null() {
        // Issue 11: 0xc1 decoded as a null configuration.
        assert!(matches!(
            decode_msgpack(&[0xc1], &Type::String),
            Err(MsgpackError::Malformed(_))
        ));
        let ty = Type::map(Type::String);
        // {"a": <0xc1>}
        assert!(decode_msgpack(&[0x81, 0xa1, b'a', 0xc1], &ty).is_err());
        // 0xc1 inside a string is just a byte of its text: {"a": "\xc1"} is not valid UTF-8
        // there, but inside a bin or an int it is fine.
        assert_eq!(decode_msgpack(&[0xcc, 0xc1], &Type::Number).unwrap(), Value::from(193));
        // A collection claiming more elements than there are bytes.
        assert!(decode_msgpack(&[0xdd, 0xff, 0xff, 0xff, 0xff, 0xc1], &Type::list(Type::String)).is_err());
        // Trailing bytes after the value.
        assert!(decode_msgpack(&[0xc0, 0xc0], &Type::String).is_err());
    }

    fn probe_type() -> Type {
        Type::object([
            ("id", Type::String),
            ("name", Type::String),
            ("ref", Type::String),
            ("secret", Type::String),
            ("size", Type::Number),
            ("tags", Type::map(Type::String)),
        ])
    }

    /// The exact bytes Terraform 1.11.4 sent for a known config object
    /// (captured from a real ValidateResourceConfig call).
    const KNOWN_CONFIG: &[u8] =
        b"\x86\xa2id\xc0\xa4name\xa5alpha\xa3ref\xc0\xa6secret\xa6s3cr3t\xa4size\xc0\xa4tags\x81\xa1k\xa1v";

    #[test]
    fn decodes_terraform_config_bytes_and_encodes_them_back_identically() {
        let value = decode_msgpack(KNOWN_CONFIG, &probe_type()).unwrap();
        assert_eq!(value.get("name").as_str(), Some("alpha"));
        assert!(value.get("id").is_null());
        assert_eq!(value.get("tags").get("k").as_str(), Some("v"));
        assert_eq!(encode_msgpack(&value, &probe_type()), KNOWN_CONFIG);
    }

    #[test]
    fn any_extension_is_unknown() {
        // d4 00 00: Terraform's plain unknown.
        assert!(decode_msgpack(b"\xd4\x00\x00", &Type::String).unwrap().is_unknown());
        // c7 0c 0c ...: refined unknown for `ref = "prefix-${probe_thing.a.id}"`.
        let refined = b"\xc7\x0c\x0c\x82\x01\xc2\x02\xa7prefix-";
        assert!(decode_msgpack(refined, &Type::String).unwrap().is_unknown());
        // An ext8 of length 0 (what some SDKs send) too.
        assert!(decode_msgpack(b"\xc7\x00\x00", &Type::Number).unwrap().is_unknown());
        assert_eq!(encode_msgpack(&Value::Unknown, &Type::String), b"\xd4\x00\x00");
    }

    #[test]
    fn numbers_of_every_form() {
        let n = |bytes: &[u8]| {
            decode_msgpack(bytes, &Type::Number)
                .unwrap()
                .as_number()
                .unwrap()
                .to_string()
        };
        assert_eq!(n(b"\x03"), "3");
        assert_eq!(n(b"\xf9"), "-7");
        assert_eq!(n(b"\xcd\x01\x2c"), "300");
        assert_eq!(n(b"\xcb\x3f\xf8\x00\x00\x00\x00\x00\x00"), "1.5");
        assert_eq!(n(b"\xa30.1"), "0.1");
        assert_eq!(n(b"\xb412345678901234567890"), "12345678901234567890");
        assert_eq!(n(b"\xcf\xff\xff\xff\xff\xff\xff\xff\xff"), "18446744073709551615");
        let mut big = vec![0xda, 0x01, 0x91];
        big.extend(format!("1{}", "0".repeat(400)).bytes());
        assert_eq!(n(&big).len(), 401);

        // Round trips keep every digit: 0.1 and 20-digit integers go back as strings.
        for text in ["0.1", "12345678901234567890", "-3", "300", "1.5"] {
            let v = Value::Number(Number::parse(text).unwrap());
            let bytes = encode_msgpack(&v, &Type::Number);
            assert_eq!(decode_msgpack(&bytes, &Type::Number).unwrap(), v, "{text}");
        }
        assert_eq!(
            encode_msgpack(&Value::Number(Number::parse("0.1").unwrap()), &Type::Number),
            b"\xa30.1"
        );
        assert_eq!(encode_msgpack(&Value::from(300), &Type::Number), b"\xcd\x01\x2c");
    }

    #[test]
    fn every_type_round_trips() {
        let ty = Type::object([
            ("l", Type::list(Type::Number)),
            ("s", Type::set(Type::String)),
            ("m", Type::map(Type::Bool)),
            ("t", Type::Tuple(vec![Type::String, Type::Number])),
            ("d", Type::Dynamic),
            ("o", Type::object([("x", Type::String)])),
        ]);
        let value = Value::object([
            ("l", Value::List(vec![1.into(), Value::Unknown])),
            ("s", Value::Set(vec!["a".into(), "b".into()])),
            ("m", Value::Map([("k".to_string(), true.into())].into())),
            ("t", Value::Tuple(vec!["x".into(), 2.into()])),
            (
                "d",
                Value::Dynamic(Type::list(Type::String), Box::new(Value::List(vec!["v".into()]))),
            ),
            ("o", Value::Null),
        ]);
        let bytes = encode_msgpack(&value, &ty);
        assert_eq!(decode_msgpack(&bytes, &ty).unwrap(), value);
        assert!(decode_msgpack(b"\xc0", &ty).unwrap().is_null());
    }

    #[test]
    fn mismatches_name_the_path() {
        let ty = Type::object([("a", Type::list(Type::Number))]);
        let bytes = b"\x81\xa1a\x91\xa3abc";
        let err = decode_msgpack(bytes, &ty).unwrap_err().to_string();
        assert!(err.contains(".a[0]"), "{err}");
        let err = decode_msgpack(b"\x81\xa1z\xc0", &ty).unwrap_err().to_string();
        assert!(err.contains(".z"), "{err}");
    }
}
