//! The replica map itself, the domain (no Terraform here): from a topology (members,
//! fallback, zones) to the endpoints per AZ and the published document, and back from a
//! published document. Pure functions, no I/O.
//!
//! In cluster mode (a configuration endpoint; members carry their shard) no one replica serves
//! every key: `zones` has no entry, the fallback is the configuration endpoint, and a zone is
//! uncovered when some shard has no replica there. Every node is listed in `nodes` either way.

use std::collections::{BTreeMap, BTreeSet};

use sha2::{Digest, Sha256};

/// A node's role in the replication group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The writer.
    Primary,
    /// A read replica.
    Replica,
}

/// One node of the topology.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// `host:port`
    pub endpoint: String,
    /// AZ name.
    pub zone: String,
    /// Role.
    pub role: Role,
    /// The node group (shard), in cluster mode.
    pub shard: Option<String>,
}

/// The inputs of the map.
#[derive(Debug, Clone)]
pub struct Topology {
    /// The nodes.
    pub members: Vec<Member>,
    /// The endpoint for AZs without an entry.
    pub fallback: String,
    /// The client AZs to publish; `None` means every AZ with a member.
    pub zones: Option<BTreeSet<String>>,
    /// Whether an AZ with only the primary routes there.
    pub read_from_primary: bool,
    /// AZ name → AZ ID; when set, the document also maps AZ IDs to endpoints.
    pub zone_ids: Option<BTreeMap<String, String>>,
    /// Whether the document lists every usable node of each AZ (`replicas`).
    pub spread_replicas: bool,
    /// A cluster-mode-enabled group's configuration endpoint (cluster mode when set).
    pub configuration_endpoint: Option<String>,
    /// The ElastiCache replication group the topology was discovered from (`None` for `member`
    /// blocks): published, so that an import knows the configuration's topology source.
    pub replication_group_id: Option<String>,
}

/// Shard → AZ → the shard's nodes in that AZ (cluster mode).
pub(super) type Shards = BTreeMap<String, BTreeMap<String, Vec<String>>>;

/// What gets published.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicaMap {
    /// The fallback endpoint.
    pub fallback: String,
    /// AZ → endpoint.
    pub endpoints: BTreeMap<String, String>,
    /// AZs that will still read across a zone (sorted).
    pub uncovered_zones: Vec<String>,
    /// AZ ID → endpoint (with `zone_ids`).
    pub endpoints_by_zone_id: Option<BTreeMap<String, String>>,
    /// AZ name (and AZ ID, with `zone_ids`) → every usable node (with `spread_replicas`).
    pub replicas: Option<BTreeMap<String, Vec<String>>>,
    /// Every node, as the document lists it (sorted by shard, role, endpoint).
    pub nodes: Vec<Member>,
    /// AZ name → AZ ID, for the nodes' `zone_id` (with `zone_ids`).
    pub node_zone_ids: BTreeMap<String, String>,
    /// The configuration endpoint (cluster mode).
    pub configuration_endpoint: Option<String>,
    /// Shard → AZ → its nodes there (cluster mode; `None` otherwise).
    pub shards: Option<Shards>,
    /// The replication group discovered (`None` for `member` blocks).
    pub replication_group_id: Option<String>,
    /// Whether the configuration listed its zones (`zones`): the uncovered ones are then
    /// published (`uncovered_zones`), so that an import gives `zones` back.
    pub zones_listed: bool,
}

impl Topology {
    /// Every node, sorted by shard, role (primary first) and endpoint, duplicates removed.
    fn sorted_nodes(&self) -> Vec<Member> {
        let mut nodes = self.members.clone();
        nodes.sort_by(|a, b| {
            (&a.shard, a.role != Role::Primary, &a.endpoint).cmp(&(&b.shard, b.role != Role::Primary, &b.endpoint))
        });
        nodes.dedup_by(|a, b| a.endpoint == b.endpoint);
        nodes
    }

    /// Cluster mode: no zone entry; a zone is uncovered when some shard has no replica there
    /// (nor, with `read_from_primary`, its primary).
    fn cluster_map(&self, configuration_endpoint: &str, zones: BTreeSet<String>) -> ReplicaMap {
        let mut shards: Shards = BTreeMap::new();
        for m in &self.members {
            let shard = m.shard.clone().unwrap_or_default();
            shards
                .entry(shard)
                .or_default()
                .entry(m.zone.clone())
                .or_default()
                .push(m.endpoint.clone());
        }
        for zones in shards.values_mut() {
            for list in zones.values_mut() {
                list.sort();
                list.dedup();
            }
        }
        // (shard, zone) pairs with a usable node, once: linear in the members.
        let covered: BTreeSet<(&str, &str)> = self
            .members
            .iter()
            .filter(|m| m.role == Role::Replica || self.read_from_primary)
            .map(|m| (m.shard.as_deref().unwrap_or_default(), m.zone.as_str()))
            .collect();
        let uncovered = zones
            .into_iter()
            .filter(|zone| {
                shards
                    .keys()
                    .any(|shard| !covered.contains(&(shard.as_str(), zone.as_str())))
            })
            .collect();
        ReplicaMap {
            fallback: self.fallback.clone(),
            endpoints: BTreeMap::new(),
            uncovered_zones: uncovered,
            endpoints_by_zone_id: self.zone_ids.as_ref().map(|_| BTreeMap::new()),
            replicas: None,
            nodes: self.sorted_nodes(),
            node_zone_ids: self.zone_ids.clone().unwrap_or_default(),
            configuration_endpoint: Some(configuration_endpoint.to_string()),
            shards: Some(shards),
            replication_group_id: self.replication_group_id.clone(),
            zones_listed: self.zones.is_some(),
        }
    }

    /// Chooses one endpoint per client AZ.
    pub fn replica_map(&self) -> ReplicaMap {
        let zones: BTreeSet<String> = self
            .zones
            .clone()
            .unwrap_or_else(|| self.members.iter().map(|m| m.zone.clone()).collect());
        if let Some(configuration_endpoint) = &self.configuration_endpoint {
            return self.cluster_map(configuration_endpoint, zones);
        }
        let mut endpoints = BTreeMap::new();
        let mut spread = BTreeMap::new();
        let mut uncovered = Vec::new();
        // Each zone's replicas and primaries, sorted and without duplicates: linear in the
        // members (a document of many zones is not a quadratic import).
        let mut by_zone: BTreeMap<&str, (BTreeSet<&str>, BTreeSet<&str>)> = BTreeMap::new();
        for m in &self.members {
            let (replicas, primaries) = by_zone.entry(m.zone.as_str()).or_default();
            match m.role {
                Role::Replica => replicas.insert(m.endpoint.as_str()),
                Role::Primary => primaries.insert(m.endpoint.as_str()),
            };
        }
        for zone in zones {
            let (replicas, primaries) = by_zone.get(zone.as_str()).cloned().unwrap_or_default();
            let nodes: Vec<String> = if replicas.is_empty() && self.read_from_primary {
                primaries.into_iter().map(String::from).collect()
            } else {
                replicas.into_iter().map(String::from).collect()
            };
            match nodes.first() {
                Some(first) => {
                    endpoints.insert(zone.clone(), first.clone());
                    spread.insert(zone, nodes);
                }
                None => uncovered.push(zone),
            }
        }
        let endpoints_by_zone_id = self.zone_ids.as_ref().map(|ids| {
            endpoints
                .iter()
                .filter_map(|(name, endpoint)| Some((ids.get(name)?.clone(), endpoint.clone())))
                .collect::<BTreeMap<String, String>>()
        });
        let replicas = self.spread_replicas.then(|| {
            let mut all = spread.clone();
            if let Some(ids) = &self.zone_ids {
                for (name, nodes) in &spread {
                    if let Some(id) = ids.get(name) {
                        all.insert(id.clone(), nodes.clone());
                    }
                }
            }
            all
        });
        ReplicaMap {
            fallback: self.fallback.clone(),
            endpoints,
            uncovered_zones: uncovered,
            endpoints_by_zone_id,
            replicas,
            nodes: self.sorted_nodes(),
            node_zone_ids: self.zone_ids.clone().unwrap_or_default(),
            configuration_endpoint: None,
            shards: None,
            replication_group_id: self.replication_group_id.clone(),
            zones_listed: self.zones.is_some(),
        }
    }
}

impl ReplicaMap {
    /// The published JSON: `{"version":1,"fallback":...,"zones":{...}}`, then `zone_ids` (AZ
    /// ID → endpoint) and `replicas` (AZ name or ID → every usable node) when configured, then
    /// `nodes` (every node: `endpoint`, `role`, `zone`, and `zone_id` and `shard` when known),
    /// in cluster mode `configuration_endpoint`, and when discovered `replication_group_id`;
    /// map keys sorted, no whitespace, no timestamp.
    pub fn document(&self) -> String {
        let mut doc = serde_json::Map::new();
        doc.insert("version".into(), 1.into());
        doc.insert("fallback".into(), self.fallback.clone().into());
        doc.insert("zones".into(), object(&self.endpoints));
        if let Some(ids) = &self.endpoints_by_zone_id {
            doc.insert("zone_ids".into(), object(ids));
        }
        if let Some(replicas) = &self.replicas {
            doc.insert("replicas".into(), object(replicas));
        }
        // Only when the configuration listed its zones: the zones it asked for that read across
        // a zone (the default, every zone with a member, needs no saying, and its documents
        // keep their bytes).
        if self.zones_listed && !self.uncovered_zones.is_empty() {
            doc.insert("uncovered_zones".into(), self.uncovered_zones.clone().into());
        }
        let nodes: Vec<serde_json::Value> = self
            .nodes
            .iter()
            .map(|m| {
                let mut node = serde_json::Map::new();
                node.insert("endpoint".into(), m.endpoint.clone().into());
                let role = match m.role {
                    Role::Primary => "primary",
                    Role::Replica => "replica",
                };
                node.insert("role".into(), role.into());
                node.insert("zone".into(), m.zone.clone().into());
                if let Some(id) = self.node_zone_ids.get(&m.zone) {
                    node.insert("zone_id".into(), id.clone().into());
                }
                if let Some(shard) = &m.shard {
                    node.insert("shard".into(), shard.clone().into());
                }
                serde_json::Value::Object(node)
            })
            .collect();
        doc.insert("nodes".into(), nodes.into());
        if let Some(endpoint) = &self.configuration_endpoint {
            doc.insert("configuration_endpoint".into(), endpoint.clone().into());
        }
        if let Some(group) = &self.replication_group_id {
            doc.insert("replication_group_id".into(), group.clone().into());
        }
        serde_json::Value::Object(doc).to_string()
    }
}

fn object<V: Clone + Into<serde_json::Value>>(entries: &BTreeMap<String, V>) -> serde_json::Value {
    entries
        .iter()
        .map(|(k, v)| (k.clone(), v.clone().into()))
        .collect::<serde_json::Map<String, serde_json::Value>>()
        .into()
}

/// What a published document says, as far as it can be read.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Published {
    /// The fallback, if the document has one.
    pub fallback: Option<String>,
    /// The zone entries that are strings.
    pub endpoints: BTreeMap<String, String>,
    /// The `zone_ids` entries that are strings, when the document has `zone_ids`.
    pub zone_ids: Option<BTreeMap<String, String>>,
    /// The `replicas` lists (their string elements), when the document has `replicas`.
    pub replicas: Option<BTreeMap<String, Vec<String>>>,
    /// The configuration endpoint, when the document has one (cluster mode).
    pub configuration_endpoint: Option<String>,
    /// Cluster mode: the `nodes` by shard and AZ.
    pub shards: Option<Shards>,
}

/// Reads a published document leniently: a hand-edited or broken document still yields
/// whatever entries it has, so the plan can show what will be restored.
pub fn parse_document(text: &str) -> Published {
    /// The document's shape, every part optional and of any JSON type.
    #[derive(serde::Deserialize)]
    struct Document {
        #[serde(default)]
        fallback: serde_json::Value,
        #[serde(default)]
        zones: serde_json::Value,
        #[serde(default)]
        zone_ids: serde_json::Value,
        #[serde(default)]
        replicas: serde_json::Value,
        #[serde(default)]
        nodes: serde_json::Value,
        #[serde(default)]
        configuration_endpoint: serde_json::Value,
    }
    let strings = |value: &serde_json::Value| -> Option<BTreeMap<String, String>> {
        value.as_object().map(|z| {
            z.iter()
                .filter_map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_string())))
                .collect()
        })
    };
    let Ok(doc) = serde_json::from_str::<Document>(text) else {
        return Published::default();
    };
    let configuration_endpoint = doc.configuration_endpoint.as_str().map(String::from);
    let shards = configuration_endpoint.as_ref().map(|_| {
        let mut shards: Shards = BTreeMap::new();
        for node in doc.nodes.as_array().map_or(&[][..], Vec::as_slice) {
            let text = |field: &str| node.get(field).and_then(serde_json::Value::as_str);
            if let (Some(endpoint), Some(zone)) = (text("endpoint"), text("zone")) {
                shards
                    .entry(text("shard").unwrap_or_default().to_string())
                    .or_default()
                    .entry(zone.to_string())
                    .or_default()
                    .push(endpoint.to_string());
            }
        }
        for zones in shards.values_mut() {
            for list in zones.values_mut() {
                list.sort();
                list.dedup();
            }
        }
        shards
    });
    Published {
        configuration_endpoint,
        shards,
        fallback: doc.fallback.as_str().map(String::from),
        endpoints: strings(&doc.zones).unwrap_or_default(),
        zone_ids: strings(&doc.zone_ids),
        replicas: doc.replicas.as_object().map(|zones| {
            zones
                .iter()
                .map(|(zone, list)| {
                    let endpoints = list.as_array().map_or_else(Vec::new, |items| {
                        items.iter().filter_map(|e| e.as_str().map(String::from)).collect()
                    });
                    (zone.clone(), endpoints)
                })
                .collect()
        }),
    }
}

/// What an import learns from a published document about the configuration that published
/// it: the topology read back from it, and whether that topology gives the same bytes.
#[derive(Debug, Clone)]
pub(super) struct Reconstructed {
    /// The members, fallback, configuration endpoint and settings the document shows.
    pub(super) topology: Topology,
    /// The map that topology gives (its `uncovered_zones` are what the state records).
    pub(super) map: ReplicaMap,
    /// Whether the map's document is the published text, byte for byte.
    pub(super) exact: bool,
}

/// Reads the topology back from a published document: every node of `nodes` (`endpoint`,
/// `zone`, `role`, and `shard` and `zone_id` when present), the fallback, the configuration
/// endpoint and the replication group it was discovered from; `spread_replicas` when the
/// document has `replicas`, `zone_ids` from the nodes' `zone_id`s when it has `zone_ids`, and
/// `read_from_primary` when only that reproduces the document. `None` for a document without a fallback or with a node missing a part (older
/// documents had no `nodes`). Settings the document cannot show (`zones` naming an AZ without a
/// node, `zone_ids` of AZs without one) are not guessed: `exact` is then false.
pub(super) fn reconstruct(text: &str) -> Option<Reconstructed> {
    /// The parts of a document a topology is read back from (`zone_ids` and `replicas` only
    /// as present or not).
    #[derive(serde::Deserialize)]
    struct Document {
        fallback: String,
        nodes: Vec<Node>,
        configuration_endpoint: Option<String>,
        replication_group_id: Option<String>,
        zone_ids: Option<serde::de::IgnoredAny>,
        replicas: Option<serde::de::IgnoredAny>,
        #[serde(default)]
        zones: BTreeMap<String, serde::de::IgnoredAny>,
        uncovered_zones: Option<Vec<String>>,
    }
    #[derive(serde::Deserialize)]
    struct Node {
        endpoint: String,
        zone: String,
        role: String,
        zone_id: Option<String>,
        shard: Option<String>,
    }
    let doc: Document = serde_json::from_str(text).ok()?;
    let document_zones: BTreeSet<String> = doc.zones.keys().cloned().collect();
    let mut node_zone_ids = BTreeMap::new();
    let mut members = Vec::new();
    for node in doc.nodes {
        let role = match node.role.as_str() {
            "primary" => Role::Primary,
            "replica" => Role::Replica,
            _ => return None,
        };
        if let Some(id) = node.zone_id {
            node_zone_ids.insert(node.zone.clone(), id);
        }
        members.push(Member {
            endpoint: node.endpoint,
            zone: node.zone,
            role,
            shard: node.shard,
        });
    }
    let mut topology = Topology {
        members,
        fallback: doc.fallback,
        zones: None,
        read_from_primary: false,
        zone_ids: doc.zone_ids.map(|_| node_zone_ids),
        spread_replicas: doc.replicas.is_some(),
        configuration_endpoint: doc.configuration_endpoint,
        replication_group_id: doc.replication_group_id,
    };
    let mut map = topology.replica_map();
    // A document that says its uncovered zones was published from a configuration that listed
    // its zones: they are the document's zones and the uncovered ones (in cluster mode, where
    // no zone has an entry, the members' zones and the uncovered ones).
    let listed_zones: Option<BTreeSet<String>> = doc.uncovered_zones.as_ref().map(|uncovered| {
        let covered: Box<dyn Iterator<Item = String>> = if topology.configuration_endpoint.is_some() {
            Box::new(topology.members.iter().map(|m| m.zone.clone()))
        } else {
            Box::new(document_zones.iter().cloned())
        };
        covered.chain(uncovered.iter().cloned()).collect()
    });
    // Each setting the document cannot say outright, tried in turn: the zones it lists (first,
    // when some zone is uncovered), then `read_from_primary`; the first that gives the same
    // bytes is taken. Each try builds the map once, in linear time.
    let listed = listed_zones.map(|zones| Topology {
        zones: Some(zones),
        ..topology.clone()
    });
    let mut tries: Vec<Topology> = Vec::new();
    if let Some(listed) = &listed {
        tries.push(listed.clone());
    }
    if map.document() != text {
        tries.push(Topology {
            read_from_primary: true,
            ..topology.clone()
        });
        if let Some(listed) = &listed {
            tries.push(Topology {
                read_from_primary: true,
                ..listed.clone()
            });
        }
    }
    for candidate in tries {
        let other = candidate.replica_map();
        if other.document() == text {
            topology = candidate;
            map = other;
            break;
        }
    }
    let exact = map.document() == text;
    Some(Reconstructed { topology, map, exact })
}

/// SHA-256 of the published bytes, hex.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(endpoint: &str, zone: &str, role: Role) -> Member {
        Member {
            endpoint: endpoint.into(),
            zone: zone.into(),
            role,
            shard: None,
        }
    }

    fn topology() -> Topology {
        Topology {
            members: vec![
                member("node-001.example:6379", "ap-northeast-1a", Role::Primary),
                member("node-003.example:6379", "ap-northeast-1c", Role::Replica),
                member("node-002.example:6379", "ap-northeast-1c", Role::Replica),
            ],
            fallback: "reader.example:6379".into(),
            zones: None,
            read_from_primary: false,
            zone_ids: None,
            spread_replicas: false,
            configuration_endpoint: None,
            replication_group_id: None,
        }
    }

    const NODES: &str = r#""nodes":[{"endpoint":"node-001.example:6379","role":"primary","zone":"ap-northeast-1a"},{"endpoint":"node-002.example:6379","role":"replica","zone":"ap-northeast-1c"},{"endpoint":"node-003.example:6379","role":"replica","zone":"ap-northeast-1c"}]"#;

    #[test]
    fn cluster_mode_lists_every_shard_and_claims_no_zone() {
        let mut members = Vec::new();
        for shard in ["0001", "0002"] {
            for (n, zone) in ["ap-northeast-1a", "ap-northeast-1c", "ap-northeast-1d"]
                .iter()
                .enumerate()
            {
                let role = if n == 0 { Role::Primary } else { Role::Replica };
                members.push(Member {
                    endpoint: format!("g-{shard}-00{}.g.x.apne1.cache.amazonaws.com:6379", n + 1),
                    zone: zone.to_string(),
                    role,
                    shard: Some(shard.into()),
                });
            }
        }
        // Shard 0002 has no replica in 1d.
        members.pop();
        let t = Topology {
            members,
            fallback: "clustercfg.g.x.apne1.cache.amazonaws.com:6379".into(),
            zones: None,
            read_from_primary: false,
            zone_ids: Some(
                [
                    ("ap-northeast-1a", "apne1-az4"),
                    ("ap-northeast-1c", "apne1-az1"),
                    ("ap-northeast-1d", "apne1-az2"),
                ]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ),
            spread_replicas: true,
            configuration_endpoint: Some("clustercfg.g.x.apne1.cache.amazonaws.com:6379".into()),
            replication_group_id: None,
        };
        let map = t.replica_map();
        assert!(map.endpoints.is_empty() && map.replicas.is_none());
        // 1a holds only primaries; 1d has no replica of shard 0002.
        assert_eq!(map.uncovered_zones, ["ap-northeast-1a", "ap-northeast-1d"]);
        let shards = map.shards.clone().unwrap();
        assert_eq!(
            shards["0002"]["ap-northeast-1c"],
            ["g-0002-002.g.x.apne1.cache.amazonaws.com:6379"]
        );
        assert!(!shards["0002"].contains_key("ap-northeast-1d"));
        let doc = map.document();
        assert!(doc.starts_with(r#"{"version":1,"fallback":"clustercfg.g.x.apne1.cache.amazonaws.com:6379","zones":{},"zone_ids":{},"nodes":[{"endpoint":"g-0001-001.g.x.apne1.cache.amazonaws.com:6379","role":"primary","zone":"ap-northeast-1a","zone_id":"apne1-az4","shard":"0001"},"#), "{doc}");
        assert!(
            doc.ends_with(r#""configuration_endpoint":"clustercfg.g.x.apne1.cache.amazonaws.com:6379"}"#),
            "{doc}"
        );
        assert_eq!(doc.matches(r#""shard":"#).count(), 5);
    }

    #[test]
    fn zone_ids_and_spread_replicas_are_opt_in_additions() {
        let mut t = topology();
        t.zone_ids = Some(
            [("ap-northeast-1a", "apne1-az4"), ("ap-northeast-1c", "apne1-az1")]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        );
        t.spread_replicas = true;
        let map = t.replica_map();
        assert_eq!(
            map.document(),
            r#"{"version":1,"fallback":"reader.example:6379","zones":{"ap-northeast-1c":"node-002.example:6379"},"zone_ids":{"apne1-az1":"node-002.example:6379"},"replicas":{"ap-northeast-1c":["node-002.example:6379","node-003.example:6379"],"apne1-az1":["node-002.example:6379","node-003.example:6379"]},"nodes":[{"endpoint":"node-001.example:6379","role":"primary","zone":"ap-northeast-1a","zone_id":"apne1-az4"},{"endpoint":"node-002.example:6379","role":"replica","zone":"ap-northeast-1c","zone_id":"apne1-az1"},{"endpoint":"node-003.example:6379","role":"replica","zone":"ap-northeast-1c","zone_id":"apne1-az1"}]}"#
        );
    }

    #[test]
    fn one_endpoint_per_zone_and_primary_only_zones_uncovered() {
        let map = topology().replica_map();
        assert_eq!(map.endpoints.len(), 1);
        assert_eq!(map.endpoints["ap-northeast-1c"], "node-002.example:6379");
        assert_eq!(map.uncovered_zones, ["ap-northeast-1a"]);
        assert_eq!(
            map.document(),
            format!(
                r#"{{"version":1,"fallback":"reader.example:6379","zones":{{"ap-northeast-1c":"node-002.example:6379"}},{NODES}}}"#
            )
        );
    }

    #[test]
    fn read_from_primary_and_explicit_zones() {
        let mut t = topology();
        t.read_from_primary = true;
        t.zones = Some(
            ["ap-northeast-1a", "ap-northeast-1d"]
                .into_iter()
                .map(String::from)
                .collect(),
        );
        let map = t.replica_map();
        assert_eq!(map.endpoints["ap-northeast-1a"], "node-001.example:6379");
        assert_eq!(map.uncovered_zones, ["ap-northeast-1d"]);
        assert!(!map.endpoints.contains_key("ap-northeast-1c"));
    }

    #[test]
    fn documents_parse_back_leniently() {
        let map = topology().replica_map();
        let p = parse_document(&map.document());
        assert_eq!(p.fallback.as_deref(), Some("reader.example:6379"));
        assert_eq!(p.endpoints, map.endpoints);
        assert_eq!(parse_document("not json"), Published::default());
        assert_eq!(parse_document(r#"{"zones":{"a":1,"b":"x:1"}}"#).endpoints.len(), 1);
    }

    /// An import reads back the topology and the settings that published a document, byte for
    /// byte: plain, with `zone_ids` and `replicas`, with `read_from_primary`, and in cluster mode.
    #[test]
    fn a_document_gives_back_the_topology_that_published_it() {
        let sorted = |t: &Topology| t.sorted_nodes();
        let plain = topology();
        let mut spread = topology();
        spread.spread_replicas = true;
        spread.zone_ids = Some(BTreeMap::from([
            ("ap-northeast-1a".to_string(), "apne1-az4".to_string()),
            ("ap-northeast-1c".to_string(), "apne1-az1".to_string()),
        ]));
        let mut from_primary = topology();
        from_primary.read_from_primary = true;
        let mut cluster = topology();
        cluster.configuration_endpoint = Some("clustercfg.g.x:6379".into());
        cluster.fallback = "clustercfg.g.x:6379".into();
        for (n, m) in cluster.members.iter_mut().enumerate() {
            m.shard = Some(format!("000{}", n % 2 + 1));
        }
        let mut discovered = topology();
        discovered.replication_group_id = Some("sessions".into());
        assert!(discovered
            .replica_map()
            .document()
            .ends_with(r#","replication_group_id":"sessions"}"#));
        for t in [plain, spread, from_primary, cluster, discovered] {
            let text = t.replica_map().document();
            let found = reconstruct(&text).expect("a document with nodes");
            assert!(found.exact, "{text}");
            assert_eq!(found.topology.members, sorted(&t), "{text}");
            assert_eq!(found.topology.read_from_primary, t.read_from_primary, "{text}");
            assert_eq!(found.topology.spread_replicas, t.spread_replicas, "{text}");
            assert_eq!(found.topology.zone_ids, t.zone_ids, "{text}");
            assert_eq!(
                found.topology.configuration_endpoint, t.configuration_endpoint,
                "{text}"
            );
            assert_eq!(found.topology.replication_group_id, t.replication_group_id, "{text}");
            assert_eq!(found.map.uncovered_zones, t.replica_map().uncovered_zones, "{text}");
        }
        // A hand-edited entry: the members are still read, but the settings are not trusted.
        let edited = topology().replica_map().document().replace(
            r#""ap-northeast-1c":"node-002.example:6379""#,
            r#""ap-northeast-1c":"rogue:6379""#,
        );
        let found = reconstruct(&edited).unwrap();
        assert!(!found.exact);
        assert_eq!(found.topology.members.len(), 3);
        // No nodes (an older document), a node without a zone, or no fallback: nothing to read.
        assert!(reconstruct(r#"{"version":1,"fallback":"r:1","zones":{}}"#).is_none());
        assert!(reconstruct(
            r#"{"version":1,"fallback":"r:1","zones":{},"nodes":[{"endpoint":"a:1","role":"replica"}]}"#
        )
        .is_none());
        assert!(reconstruct(r#"{"version":1,"zones":{},"nodes":[]}"#).is_none());
        assert!(reconstruct("not json").is_none());
    }

    /// The new user's first configuration (issue 52): a primary in `ap-northeast-1a`, a replica
    /// in `ap-northeast-1c`, and `zones` naming both. The document's zones and its uncovered
    /// zones give `zones` back, so that an import plans nothing.
    #[test]
    fn zones_come_back_from_the_uncovered_ones() {
        let t = Topology {
            members: vec![
                member("p.example:6379", "ap-northeast-1a", Role::Primary),
                member("r.example:6379", "ap-northeast-1c", Role::Replica),
            ],
            fallback: "reader.example:6379".into(),
            zones: Some(
                ["ap-northeast-1a", "ap-northeast-1c"]
                    .into_iter()
                    .map(String::from)
                    .collect(),
            ),
            read_from_primary: false,
            zone_ids: None,
            spread_replicas: false,
            configuration_endpoint: None,
            replication_group_id: None,
        };
        let text = t.replica_map().document();
        let found = reconstruct(&text).unwrap();
        assert!(found.exact, "{text}");
        assert_eq!(found.topology.zones, t.zones, "{text}");
        assert!(!found.topology.read_from_primary);
        // Without an uncovered zone, `zones` stays the default (null in the state).
        let covered = Topology {
            members: vec![
                member("p.example:6379", "ap-northeast-1a", Role::Primary),
                member("a.example:6379", "ap-northeast-1a", Role::Replica),
                member("r.example:6379", "ap-northeast-1c", Role::Replica),
            ],
            zones: None,
            ..t.clone()
        };
        let found = reconstruct(&covered.replica_map().document()).unwrap();
        assert_eq!(found.topology.zones, None);
    }

    /// 47,000 nodes (under the 4 MiB cap), in one zone each or in 15,000 shards: reading the
    /// document back builds each map in linear time (the security review's import took 75 s of
    /// CPU); well under 10 s in a debug build.
    #[test]
    fn a_document_of_47000_nodes_is_read_back_in_linear_time() {
        for cluster in [false, true] {
            let started = std::time::Instant::now();
            let members: Vec<Member> = (0..47_000)
                .map(|i| Member {
                    endpoint: format!("{i}.x:1"),
                    zone: if cluster {
                        ["a", "c", "d"][i % 3].to_string()
                    } else {
                        format!("z{i}")
                    },
                    role: if i % 3 == 0 { Role::Primary } else { Role::Replica },
                    shard: cluster.then(|| format!("{:04}", i / 3)),
                })
                .collect();
            let t = Topology {
                members,
                fallback: "reader.example:6379".into(),
                zones: None,
                read_from_primary: false,
                zone_ids: None,
                spread_replicas: false,
                configuration_endpoint: cluster.then(|| "cfg.example:6379".to_string()),
                replication_group_id: None,
            };
            let text = t.replica_map().document();
            assert!(text.len() < 4 << 20, "{}", text.len());
            let found = reconstruct(&text).unwrap();
            assert_eq!(found.topology.members.len(), 47_000);
            let elapsed = started.elapsed();
            eprintln!(
                "47,000 nodes (cluster mode {cluster}), {} bytes: published and read back in {elapsed:?}",
                text.len()
            );
            assert!(
                elapsed < std::time::Duration::from_secs(10),
                "cluster {cluster}: {elapsed:?}"
            );
        }
    }
}
