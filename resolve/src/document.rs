//! The published replica map and the one decision on it: which endpoint a client in a zone
//! reads from. Version 1: `fallback`, `zones` (AZ name → endpoint) and, when the map publishes
//! them, `zone_ids` (AZ ID → endpoint), `replicas` (AZ name or ID → every usable endpoint of
//! that zone), `nodes` (every node of the group: endpoint, role, zone, zone ID, shard) and
//! `configuration_endpoint` (a cluster-mode-enabled group's). Pure functions.

use std::collections::BTreeMap;

use crate::zone::{is_endpoint, is_zone_id, is_zone_name, Zone};

/// The largest map read (a map of every AZ of every region is a few kilobytes).
pub const MAX_MAP_BYTES: usize = 1 << 20;

/// A replica map, as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicaMap {
    /// Where to read when no zone entry applies (the reader endpoint).
    pub fallback: String,
    /// AZ name → endpoint.
    pub zones: BTreeMap<String, String>,
    /// AZ ID → endpoint.
    pub zone_ids: BTreeMap<String, String>,
    /// AZ name or ID → every usable endpoint of that zone.
    pub replicas: BTreeMap<String, Vec<String>>,
    /// Every node of the group, primary included (empty when the map does not list them).
    pub nodes: Vec<Node>,
    /// `host:port` of a cluster-mode-enabled group's configuration endpoint; `None` for a
    /// group with one shard (cluster mode disabled).
    pub configuration_endpoint: Option<String>,
}

/// One node of the group, as the map's `nodes` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// `host:port`.
    pub endpoint: String,
    /// `primary` or `replica`.
    pub role: NodeRole,
    /// The node's AZ name.
    pub zone: String,
    /// The node's AZ ID, when the map knows it.
    pub zone_id: Option<String>,
    /// The shard (node group ID) in cluster mode.
    pub shard: Option<String>,
}

/// A node's role.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeRole {
    /// The writer (of its shard).
    Primary,
    /// A read replica.
    Replica,
}

impl Node {
    /// Whether the node is in `zone` (by ID when both know one, else by name).
    pub fn in_zone(&self, zone: &Zone) -> bool {
        match (&zone.id, &self.zone_id, &zone.name) {
            (Some(id), Some(own), _) => id == own,
            (_, _, Some(name)) => *name == self.zone,
            _ => false,
        }
    }
}

/// The `nodes` list: each an object with `endpoint`, `role` and `zone` (and optionally
/// `zone_id` and `shard`); unknown fields of a node are ignored.
fn nodes(object: &serde_json::Map<String, serde_json::Value>) -> Result<Vec<Node>, DocumentError> {
    let invalid = |problem: String| DocumentError::Invalid(format!("nodes: {problem}"));
    let Some(found) = object.get("nodes") else {
        return Ok(Vec::new());
    };
    let items = found.as_array().ok_or_else(|| invalid("not a list".into()))?;
    items
        .iter()
        .enumerate()
        .map(|(n, item)| {
            let at = |problem: String| invalid(format!("[{n}]: {problem}"));
            let node = item.as_object().ok_or_else(|| at("not an object".into()))?;
            let text = |field: &str| node.get(field).and_then(serde_json::Value::as_str);
            let endpoint = endpoint(node.get("endpoint").unwrap_or(&serde_json::Value::Null))
                .map_err(|p| at(format!("endpoint: {p}")))?;
            let role = match text("role") {
                Some("primary") => NodeRole::Primary,
                Some("replica") => NodeRole::Replica,
                Some(other) => return Err(at(format!("role {} is neither primary nor replica", shown(other)))),
                None => return Err(at("role is missing".into())),
            };
            let zone = text("zone")
                .filter(|z| is_zone_name(z))
                .ok_or_else(|| at("zone is not an AZ name".into()))?
                .to_string();
            let zone_id = match node.get("zone_id") {
                None | Some(serde_json::Value::Null) => None,
                Some(v) => Some(
                    v.as_str()
                        .filter(|z| is_zone_id(z))
                        .ok_or_else(|| at("zone_id is not an AZ ID".into()))?
                        .to_string(),
                ),
            };
            let shard = match node.get("shard") {
                None | Some(serde_json::Value::Null) => None,
                Some(v) => Some(
                    v.as_str()
                        .filter(|s| !s.is_empty() && s.len() <= 64 && s.bytes().all(|b| b.is_ascii_graphic()))
                        .ok_or_else(|| at("shard is not a node group ID".into()))?
                        .to_string(),
                ),
            };
            Ok(Node {
                endpoint,
                role,
                zone,
                zone_id,
                shard,
            })
        })
        .collect()
}

/// A map that cannot be used at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DocumentError {
    /// Not JSON (cut short, or invalid at a place), or JSON that is not an object: what is
    /// wrong, said after "the map".
    #[error("the map {0}")]
    NotJson(String),
    /// `version` is missing or not 1.
    #[error("the map's version is {0}, and this reader knows version 1")]
    Version(String),
    /// `fallback` is missing or not host:port.
    #[error("the map has no fallback endpoint (host:port)")]
    NoFallback,
    /// An entry that is not what the schema allows, named.
    #[error("the map's {0}")]
    Invalid(String),
    /// Larger than [`MAX_MAP_BYTES`].
    #[error("the map is larger than {MAX_MAP_BYTES} bytes")]
    TooLarge,
}

/// What is wrong with text that is not JSON, at its place.
fn json_problem(e: &serde_json::Error) -> String {
    use serde_json::error::Category;
    let place = format!("line {}, column {}", e.line(), e.column());
    match e.classify() {
        Category::Eof => format!(
            "ends before its JSON is complete (at {place}): the file is cut short, or a closing }} or ] is missing"
        ),
        _ => {
            // serde_json says what it met and where ("expected `,` or `}` at line 1 column 20").
            let what = e.to_string();
            let what = what.split(" at line ").next().unwrap_or(&what).to_string();
            format!("is not valid JSON at {place}: {what}")
        }
    }
}

/// A JSON value's kind, for a sentence.
fn json_kind(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

impl DocumentError {
    /// One word for metrics: `not_a_map`, `unsupported_version`, `invalid_map`, `too_large`.
    pub fn class(&self) -> &'static str {
        match self {
            DocumentError::NotJson(_) => "not_a_map",
            DocumentError::Version(_) => "unsupported_version",
            DocumentError::NoFallback | DocumentError::Invalid(_) => "invalid_map",
            DocumentError::TooLarge => "too_large",
        }
    }
}

/// `object[field]` as entries whose keys pass `key_ok` and whose values `value` converts; a
/// field that is absent is empty, and anything else is [`DocumentError::Invalid`] naming it.
fn entries<T>(
    object: &serde_json::Map<String, serde_json::Value>,
    field: &str,
    key_kind: &str,
    key_ok: impl Fn(&str) -> bool,
    value: impl Fn(&serde_json::Value) -> Result<T, String>,
) -> Result<BTreeMap<String, T>, DocumentError> {
    let invalid = |problem: String| DocumentError::Invalid(format!("{field}: {problem}"));
    let Some(found) = object.get(field) else {
        return Ok(BTreeMap::new());
    };
    let found = found.as_object().ok_or_else(|| invalid("not an object".into()))?;
    found
        .iter()
        .map(|(key, v)| {
            if !key_ok(key) {
                return Err(invalid(format!("{} is not {key_kind}", shown(key))));
            }
            value(v)
                .map(|t| (key.clone(), t))
                .map_err(|p| invalid(format!("{}: {p}", shown(key))))
        })
        .collect()
}

/// A value for a message: quoted, and cut at 40 characters (on a char boundary).
fn shown(text: &str) -> String {
    let cut: String = text.chars().take(40).collect();
    if cut.len() < text.len() {
        format!("{cut:?}…")
    } else {
        format!("{cut:?}")
    }
}

fn endpoint(value: &serde_json::Value) -> Result<String, String> {
    match value.as_str() {
        Some(text) if is_endpoint(text) => Ok(text.to_string()),
        Some(text) => Err(format!("{} is not host:port", shown(text))),
        None => Err("not a string".into()),
    }
}

impl ReplicaMap {
    /// Parses a map: exactly what `schema/replica-map.v1.schema.json` allows (and at most
    /// [`MAX_MAP_BYTES`]). Top-level fields other than those below are ignored, as version 1
    /// promises; an entry that is not what the schema says makes the whole map unusable, with
    /// the entry named (every client then reads from `--fallback`).
    ///
    /// # Errors
    /// [`DocumentError`] saying what is wrong.
    pub fn parse(text: &str) -> Result<ReplicaMap, DocumentError> {
        if text.len() > MAX_MAP_BYTES {
            return Err(DocumentError::TooLarge);
        }
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| DocumentError::NotJson(json_problem(&e)))?;
        let object = value.as_object().ok_or_else(|| {
            DocumentError::NotJson(format!(
                "is not a JSON object: it is {} (a map is {{\"version\": 1, \"fallback\": …, \"zones\": {{…}}}})",
                json_kind(&value)
            ))
        })?;
        match object.get("version") {
            // (JSON Schema's `const: 1` is numeric equality: 1.0 and 1e0 are 1 too.)
            Some(v) if v.as_f64() == Some(1.0) => {}
            Some(v) => {
                let shown: String = v.to_string().chars().take(20).collect();
                return Err(DocumentError::Version(shown));
            }
            None => return Err(DocumentError::Version("missing".into())),
        }
        let fallback = object
            .get("fallback")
            .and_then(serde_json::Value::as_str)
            .filter(|f| is_endpoint(f))
            .ok_or(DocumentError::NoFallback)?
            .to_string();
        let zones = entries(object, "zones", "an AZ name", is_zone_name, endpoint)?;
        let zone_ids = entries(object, "zone_ids", "an AZ ID", is_zone_id, endpoint)?;
        let replicas = entries(
            object,
            "replicas",
            "an AZ name or ID",
            |k| is_zone_name(k) || is_zone_id(k),
            |list| {
                let items = list.as_array().ok_or("not a list")?;
                if items.is_empty() {
                    return Err("an empty list".to_string());
                }
                items.iter().map(endpoint).collect()
            },
        )?;
        let nodes = nodes(object)?;
        let configuration_endpoint = match object.get("configuration_endpoint") {
            None | Some(serde_json::Value::Null) => None,
            Some(v) => Some(endpoint(v).map_err(|p| DocumentError::Invalid(format!("configuration_endpoint: {p}")))?),
        };
        Ok(ReplicaMap {
            fallback,
            zones,
            zone_ids,
            replicas,
            nodes,
            configuration_endpoint,
        })
    }

    /// The endpoints a client in `zone` may read from, best first, and how the zone was
    /// matched; `Err` with the reason when only the fallback applies. Matching is by AZ ID when
    /// both the map and the zone have one, else by name; then that zone's `replicas`, rotated so
    /// that each host (`host_key`) starts at its own one, or its single entry.
    ///
    /// # Errors
    /// One sentence: why the zone has no entry.
    pub fn candidates(&self, zone: &Zone, host_key: &str) -> Result<Vec<String>, String> {
        let by_id = zone.id.as_ref().filter(|_| !self.zone_ids.is_empty());
        let (key, single) = match (by_id, &zone.name) {
            (Some(id), _) => (id.clone(), self.zone_ids.get(id)),
            (None, Some(name)) => (name.clone(), self.zones.get(name)),
            (None, None) => {
                return Err(format!(
                    "the zone is known only by its ID ({}), and the map has no zone_ids (set zone_ids on locality_zone_replica_map)",
                    zone.id.as_deref().unwrap_or("?")
                ))
            }
        };
        if let Some(list) = self.replicas.get(&key) {
            let mut list = list.clone();
            list.sort();
            list.dedup();
            let start = (stable_hash(host_key) % list.len() as u64) as usize;
            list.rotate_left(start);
            return Ok(list);
        }
        match single {
            Some(endpoint) if is_endpoint(endpoint) => Ok(vec![endpoint.clone()]),
            Some(_) => Err(format!("the map's entry for zone {key} is not host:port")),
            None => match &self.configuration_endpoint {
                // A cluster's map has no zone entries: no one node serves every key.
                Some(configuration) if self.zones.is_empty() && self.replicas.is_empty() => Err(format!(
                    "the map is a cluster-mode-enabled group's (configuration endpoint {configuration}): it has no entry per zone, since no one node serves every key; a cluster client routes each key to its zone's node: configure Valkey GLIDE's cluster client with `locality resolve --format glide` (or glide-env) instead"
                )),
                _ => Err(format!("the map has no entry for zone {}", zone.describe())),
            },
        }
    }
}

/// FNV-1a: the same number for the same host on every run and every platform.
pub(crate) fn stable_hash(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zone(name: Option<&str>, id: Option<&str>) -> Zone {
        Zone {
            name: name.map(str::to_string),
            id: id.map(str::to_string),
        }
    }

    const DOC: &str = r#"{"version":1,"fallback":"reader:6379","zones":{"ap-northeast-1a":"a1:6379","ap-northeast-1c":"c1:6379"},"zone_ids":{"apne1-az4":"a1:6379"},"replicas":{"ap-northeast-1a":["a2:6379","a1:6379"],"apne1-az4":["a1:6379","a2:6379"]}}"#;

    #[test]
    fn matching_by_id_then_name_then_replicas() {
        let map = ReplicaMap::parse(DOC).unwrap();
        // By ID when both have one, whatever the name says (another account's names).
        let got = map
            .candidates(&zone(Some("ap-northeast-1c"), Some("apne1-az4")), "host-1")
            .unwrap();
        assert_eq!(got.len(), 2);
        // By name, with the replicas rotated per host, stably.
        let a = map.candidates(&zone(Some("ap-northeast-1a"), None), "host-1").unwrap();
        assert_eq!(
            a,
            map.candidates(&zone(Some("ap-northeast-1a"), None), "host-1").unwrap()
        );
        let firsts: std::collections::BTreeSet<String> = (0..20)
            .map(|i| {
                map.candidates(&zone(Some("ap-northeast-1a"), None), &format!("host-{i}"))
                    .unwrap()[0]
                    .clone()
            })
            .collect();
        assert_eq!(firsts.len(), 2, "hosts spread over the zone's replicas");
        assert_eq!(
            map.candidates(&zone(Some("ap-northeast-1c"), None), "h").unwrap(),
            ["c1:6379"]
        );
        assert!(map
            .candidates(&zone(Some("ap-northeast-1d"), None), "h")
            .unwrap_err()
            .contains("no entry for zone ap-northeast-1d"));
        // A cluster's map: pointed at GLIDE, not "no entry".
        let cluster = ReplicaMap::parse(
            r#"{"version":1,"fallback":"clustercfg.g.example:6379","zones":{},"configuration_endpoint":"clustercfg.g.example:6379"}"#,
        )
        .unwrap();
        let why = cluster
            .candidates(&zone(Some("ap-northeast-1a"), None), "h")
            .unwrap_err();
        assert!(
            why.contains("cluster-mode-enabled") && why.contains("--format glide"),
            "{why}"
        );
        // An ID the map does not know: no entry (not a name match).
        assert!(map
            .candidates(&zone(Some("ap-northeast-1c"), Some("apne1-az1")), "h")
            .is_err());
    }

    #[test]
    fn ids_without_zone_ids_and_bad_documents() {
        let map = ReplicaMap::parse(r#"{"version":1,"fallback":"reader:6379","zones":{"ap-northeast-1a":"a1:6379"}}"#)
            .unwrap();
        assert_eq!(
            map.candidates(&zone(Some("ap-northeast-1a"), Some("apne1-az4")), "h")
                .unwrap(),
            ["a1:6379"]
        );
        assert!(map
            .candidates(&zone(None, Some("apne1-az4")), "h")
            .unwrap_err()
            .contains("zone_ids"));
        assert_eq!(
            ReplicaMap::parse("[]").unwrap_err(),
            DocumentError::NotJson(
                "is not a JSON object: it is an array (a map is {\"version\": 1, \"fallback\": …, \"zones\": {…}})"
                    .into()
            )
        );
        assert!(matches!(ReplicaMap::parse("<html>"), Err(DocumentError::NotJson(_))));
        // Cut short: said as such, at its line and column (it was "not a JSON object").
        assert_eq!(
            ReplicaMap::parse("{\"version\":1,\n").unwrap_err().to_string(),
            "the map ends before its JSON is complete (at line 2, column 0): the file is cut short, or a closing } or ] is missing"
        );
        assert_eq!(
            ReplicaMap::parse("{\"version\":1 \"fallback\":\"r:1\"}")
                .unwrap_err()
                .to_string(),
            "the map is not valid JSON at line 1, column 14: expected `,` or `}`"
        );
        assert!(matches!(
            ReplicaMap::parse(r#"{"version":2,"fallback":"r:1"}"#),
            Err(DocumentError::Version(_))
        ));
        assert_eq!(
            ReplicaMap::parse(r#"{"version":1,"fallback":"r"}"#).unwrap_err(),
            DocumentError::NoFallback
        );
        let huge = format!(
            "{{\"version\":1,\"fallback\":\"r:1\",\"x\":\"{}\"}}",
            "a".repeat(MAX_MAP_BYTES)
        );
        assert_eq!(ReplicaMap::parse(&huge).unwrap_err(), DocumentError::TooLarge);
        // Entries that are not what the schema allows: the whole map, naming the entry.
        for (doc, said) in [
            (
                r#""zones":{"ap-northeast-1a":"nope"}"#,
                r#"zones: "ap-northeast-1a": "nope" is not host:port"#,
            ),
            (r#""zones":{"bad":"a:1"}"#, r#"zones: "bad" is not an AZ name"#),
            (r#""zones":[]"#, "zones: not an object"),
            (
                r#""zone_ids":{"ap-northeast-1a":"a:1"}"#,
                r#"zone_ids: "ap-northeast-1a" is not an AZ ID"#,
            ),
            (
                r#""replicas":{"apne1-az4":[]}"#,
                r#"replicas: "apne1-az4": an empty list"#,
            ),
            (
                r#""replicas":{"apne1-az4":"a:1"}"#,
                r#"replicas: "apne1-az4": not a list"#,
            ),
            (
                r#""replicas":{"apne1-az4":["a:01"]}"#,
                r#"replicas: "apne1-az4": "a:01" is not host:port"#,
            ),
        ] {
            let text = format!(r#"{{"version":1,"fallback":"r:1",{doc}}}"#);
            assert_eq!(
                ReplicaMap::parse(&text).unwrap_err().to_string(),
                format!("the map's {said}"),
                "{text}"
            );
        }
        // Unknown top-level fields are ignored; 1.0 is version 1.
        assert!(ReplicaMap::parse(r#"{"version":1.0,"fallback":"r:1","later":{"x":1}}"#).is_ok());
    }
}
