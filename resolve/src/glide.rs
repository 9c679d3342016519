//! `locality resolve --format glide`: the configuration of a Valkey GLIDE client with AZ
//! affinity, from the map alone — every node (standalone mode reads with affinity only from
//! nodes it is given) or the configuration endpoint (cluster mode), and `client_az` in the
//! spelling the nodes themselves report in `INFO server` (`availability_zone`, the field GLIDE
//! matches): an AZ name, or an AZ ID, mapped from this process's zone through the map. What
//! would silently send reads out of the zone is said on stderr: no node could say its zone, or
//! this zone has no replica (of some shard).

use std::collections::BTreeSet;

use crate::document::{Node, NodeRole, ReplicaMap};
use crate::zone::{is_zone_id, is_zone_name, Zone};
use crate::Options;

/// GLIDE's read strategy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReadFrom {
    /// `AZAffinity`: replicas of the client's zone, else any replica.
    #[default]
    AzAffinity,
    /// `AZAffinityReplicasAndPrimary`: the client zone's replicas, then its primary, else any.
    AzAffinityReplicasAndPrimary,
    /// `AZAffinityAllNodes`: every node of the client's zone, primary included, in turn; else
    /// every node. In GLIDE for Python from 2.5.3 ([`ALL_NODES_SINCE`]); not in GLIDE for
    /// Node.js 2.5.2 nor GLIDE for PHP 1.1.
    AzAffinityAllNodes,
}

/// The first GLIDE release that has `AZAffinityAllNodes` (checked: valkey-glide for Python
/// 2.5.0 to 2.5.2 do not; 2.5.3 does).
pub const ALL_NODES_SINCE: &str = "valkey-glide for Python 2.5.3";

impl ReadFrom {
    /// GLIDE's name for it.
    pub fn as_str(self) -> &'static str {
        match self {
            ReadFrom::AzAffinity => "AZAffinity",
            ReadFrom::AzAffinityReplicasAndPrimary => "AZAffinityReplicasAndPrimary",
            ReadFrom::AzAffinityAllNodes => "AZAffinityAllNodes",
        }
    }
}

/// One address of the configuration.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Address {
    /// Host name or IP address (an IPv6 address without brackets).
    pub host: String,
    /// Port.
    pub port: u16,
}

/// A GLIDE client's configuration.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct GlideConfig {
    /// Every node (standalone), or the configuration endpoint (cluster mode).
    pub addresses: Vec<Address>,
    /// Whether to build GLIDE's cluster client.
    pub cluster_mode: bool,
    /// `AZAffinity`, `AZAffinityReplicasAndPrimary` or `AZAffinityAllNodes`; `PreferReplica`
    /// when this process's zone is not known.
    pub read_from: String,
    /// This process's zone as the nodes spell theirs; `None` when not known.
    pub client_az: Option<String>,
    /// TLS to the nodes (ElastiCache in-transit encryption).
    pub use_tls: bool,
}

impl GlideConfig {
    /// The JSON object (one line).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// `export NAME='value'` lines for `eval`: `LOCALITY_GLIDE_ADDRESSES` (`host:port,...`),
    /// `LOCALITY_GLIDE_CLUSTER_MODE`, `LOCALITY_GLIDE_READ_FROM`, `LOCALITY_CLIENT_AZ`,
    /// `LOCALITY_GLIDE_USE_TLS`.
    pub fn to_env(&self) -> String {
        let addresses = self
            .addresses
            .iter()
            .map(|a| {
                if a.host.contains(':') {
                    format!("[{}]:{}", a.host, a.port)
                } else {
                    format!("{}:{}", a.host, a.port)
                }
            })
            .collect::<Vec<_>>()
            .join(",");
        [
            ("LOCALITY_GLIDE_ADDRESSES", addresses),
            ("LOCALITY_GLIDE_CLUSTER_MODE", self.cluster_mode.to_string()),
            ("LOCALITY_GLIDE_READ_FROM", self.read_from.clone()),
            ("LOCALITY_CLIENT_AZ", self.client_az.clone().unwrap_or_default()),
            ("LOCALITY_GLIDE_USE_TLS", self.use_tls.to_string()),
        ]
        .iter()
        .map(|(name, value)| format!("export {name}={}\n", crate::shell_quote(value)))
        .collect()
    }
}

/// `host:port` as an address.
fn address(endpoint: &str) -> Option<Address> {
    let (host, port) = crate::split_endpoint(endpoint);
    Some(Address {
        host: host.to_string(),
        port: port.parse().ok()?,
    })
}

/// What [`configure`] gives: the configuration, the warnings for stderr, and, when `client_az`
/// is known not to match the nodes' spelling of zones, why (what `--strict` refuses).
#[derive(Debug, Clone)]
pub struct Configured {
    /// The client's configuration.
    pub config: GlideConfig,
    /// Warnings for stderr.
    pub warnings: Vec<String>,
    /// Why `client_az` cannot match the spelling the nodes report, naming the mapping seen.
    pub unmatched: Option<String>,
}

/// The configuration for this process, and the warnings for stderr.
///
/// # Errors
/// The map cannot be read and no fallback is given.
pub fn configure(options: &Options, read_from: ReadFrom) -> Result<Configured, String> {
    let mut warnings = Vec::new();
    let mut unmatched = None;
    let (zone, _, zone_failure, _) = crate::find_zone(options);
    let map = match crate::read_map(options) {
        Ok((map, notes)) => {
            warnings.extend(notes);
            map
        }
        Err(problem) => {
            let Some(fallback) = &options.fallback else {
                return Err(format!(
                    "the map could not be read ({problem}), and no fallback was given (--fallback or LOCALITY_FALLBACK)"
                ));
            };
            warnings.push(format!(
                "the map could not be read ({problem}): GLIDE is given the fallback {fallback} alone, so it reads without AZ affinity"
            ));
            let config = GlideConfig {
                addresses: address(fallback).into_iter().collect(),
                cluster_mode: false,
                read_from: "PreferReplica".into(),
                client_az: zone.as_ref().map(spelled_by_map_default),
                use_tls: options.tls,
            };
            return Ok(Configured {
                config,
                warnings,
                unmatched,
            });
        }
    };
    let cluster_mode = map.configuration_endpoint.is_some();
    let addresses: Vec<Address> = match &map.configuration_endpoint {
        Some(endpoint) => address(endpoint).into_iter().collect(),
        None if !map.nodes.is_empty() => map.nodes.iter().filter_map(|n| address(&n.endpoint)).collect(),
        None => {
            warnings.push(
                "the map lists no nodes (publish it with a provider that writes `nodes`): GLIDE is given the map's replicas and fallback only, without the primary"
                    .into(),
            );
            let mut seen = BTreeSet::new();
            map.zones
                .values()
                .chain(map.zone_ids.values())
                .chain(map.replicas.values().flatten())
                .chain(std::iter::once(&map.fallback))
                .filter(|e| seen.insert((*e).clone()))
                .filter_map(|e| address(e))
                .collect()
        }
    };
    let Some(zone) = zone else {
        warnings.push(format!(
            "{}: GLIDE cannot read with AZ affinity without client_az, so read_from is PreferReplica",
            zone_failure.unwrap_or_else(|| "this process's zone is not known".into())
        ));
        let config = GlideConfig {
            addresses,
            cluster_mode,
            read_from: "PreferReplica".into(),
            client_az: None,
            use_tls: options.tls,
        };
        return Ok(Configured {
            config,
            warnings,
            unmatched,
        });
    };
    let client_az = client_az(options, &map, &zone, &mut warnings, &mut unmatched);
    warnings.extend(coverage(&map, &zone, read_from));
    if read_from == ReadFrom::AzAffinityAllNodes {
        warnings.push(format!(
            "read_from AZAffinityAllNodes is in {ALL_NODES_SINCE} and later; GLIDE for Node.js 2.5.2 and GLIDE for PHP 1.1 do not have it (the guide's snippets refuse it rather than read from the primary only)"
        ));
    }
    let config = GlideConfig {
        addresses,
        cluster_mode,
        read_from: read_from.as_str().into(),
        client_az: Some(client_az),
        use_tls: options.tls,
    };
    Ok(Configured {
        config,
        warnings,
        unmatched,
    })
}

/// The zone as the map would spell it: its name when known, else its ID.
fn spelled_by_map_default(zone: &Zone) -> String {
    zone.name.clone().or_else(|| zone.id.clone()).unwrap_or_default()
}

/// This zone's ID (its own, else the one the map gives the nodes of its name).
fn zone_id(map: &ReplicaMap, zone: &Zone) -> Option<String> {
    zone.id.clone().or_else(|| {
        let name = zone.name.as_ref()?;
        map.nodes
            .iter()
            .find(|n| &n.zone == name && n.zone_id.is_some())
            .and_then(|n| n.zone_id.clone())
    })
}

/// This zone's name (its own, else the one the map gives the nodes of its ID).
fn zone_name(map: &ReplicaMap, zone: &Zone) -> Option<String> {
    zone.name.clone().or_else(|| {
        let id = zone.id.as_ref()?;
        map.nodes
            .iter()
            .find(|n| n.zone_id.as_ref() == Some(id))
            .map(|n| n.zone.clone())
    })
}

/// `client_az`: the spelling one node reports (asked in `INFO server`, this zone's nodes
/// first, within the check timeout), this zone mapped to it.
fn client_az(
    options: &Options,
    map: &ReplicaMap,
    zone: &Zone,
    warnings: &mut Vec<String>,
    unmatched: &mut Option<String>,
) -> String {
    let mut asked: Vec<&Node> = map.nodes.iter().filter(|n| n.in_zone(zone)).collect();
    asked.extend(map.nodes.iter().filter(|n| !n.in_zone(zone)));
    let mut endpoints: Vec<String> = asked.iter().map(|n| n.endpoint.clone()).collect();
    if endpoints.is_empty() {
        endpoints.extend(map.configuration_endpoint.iter().cloned());
        endpoints.push(map.fallback.clone());
    }
    let tls = crate::check_tls(options);
    let mut reported = None;
    let mut failures = Vec::new();
    for endpoint in endpoints.iter().take(3) {
        match crate::check::probe(endpoint, options.check_timeout, tls) {
            Ok(probe) => match probe.availability_zone {
                Some(az) => {
                    reported = Some((endpoint.clone(), az));
                    break;
                }
                None => failures.push(format!("{endpoint} reports no availability_zone")),
            },
            Err(problem) => failures.push(format!("{endpoint}: {problem}")),
        }
    }
    let fallback = spelled_by_map_default(zone);
    let Some((endpoint, az)) = reported else {
        warnings.push(format!(
            "no node could say how it spells its zone ({}): client_az is the map's spelling {fallback}; if the nodes' availability_zone (INFO server, Valkey 8+) is spelled otherwise or empty, GLIDE reads from any replica",
            failures.join("; ")
        ));
        return fallback;
    };
    // The mapping seen: the zone the map gives that node → the spelling it reports.
    let seen = match map.nodes.iter().find(|n| n.endpoint == endpoint) {
        Some(node) => format!(
            "{endpoint} is in {} by the map and reports {az} ({} → {az})",
            node.zone, node.zone
        ),
        None => format!("{endpoint} reports its zone as {az}"),
    };
    if is_zone_id(&az) {
        if let Some(id) = zone_id(map, zone) {
            return id;
        }
        let why = format!(
            "{seen}: the nodes spell zones by AZ ID, and this process's zone {} has no ID in the map (publish zone_ids, or set LOCALITY_ZONE to the ID): client_az is {fallback}, which GLIDE will not match, so it reads from any replica",
            zone.describe()
        );
        warnings.push(why.clone());
        *unmatched = Some(why);
        return fallback;
    }
    if is_zone_name(&az) {
        if let Some(name) = zone_name(map, zone) {
            return name;
        }
        let why = format!(
            "{seen}: the nodes spell zones by AZ name, and this process's zone {} has no name in the map: client_az is {fallback}, which GLIDE will not match, so it reads from any replica",
            zone.describe()
        );
        warnings.push(why.clone());
        *unmatched = Some(why);
        return fallback;
    }
    warnings.push(format!(
        "{endpoint} reports its zone as {az:?}, neither an AZ name nor an AZ ID: client_az is the map's {fallback}; GLIDE matches it only if the nodes were configured with that spelling"
    ));
    fallback
}

/// Warnings when this zone has no replica, of the group or of some shards.
fn coverage(map: &ReplicaMap, zone: &Zone, read_from: ReadFrom) -> Vec<String> {
    if map.nodes.is_empty() {
        return Vec::new();
    }
    let shards: BTreeSet<Option<&String>> = map.nodes.iter().map(|n| n.shard.as_ref()).collect();
    let without: Vec<Option<&String>> = shards
        .iter()
        .filter(|shard| {
            !map.nodes
                .iter()
                .any(|n| n.shard.as_ref() == **shard && n.role == NodeRole::Replica && n.in_zone(zone))
        })
        .copied()
        .collect();
    if without.is_empty() {
        return Vec::new();
    }
    let primary_here = |shard: &Option<&String>| {
        map.nodes
            .iter()
            .any(|n| n.shard.as_ref() == *shard && n.role == NodeRole::Primary && n.in_zone(zone))
    };
    let with_primary: Vec<String> = without
        .iter()
        .filter(|s| primary_here(s))
        .map(|s| s.map_or_else(|| "the group".to_string(), |s| format!("shard {s}")))
        .collect();
    let named = |list: &[Option<&String>]| -> String {
        if list.iter().all(Option::is_none) {
            "the group".into()
        } else {
            format!(
                "shard{} {}",
                if list.len() == 1 { "" } else { "s" },
                list.iter().flatten().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
            )
        }
    };
    let alternative = match (read_from, with_primary.is_empty()) {
        (ReadFrom::AzAffinity, false) => format!(
            "; AZAffinityReplicasAndPrimary (--read-from az-affinity-replicas-and-primary) would read {} from its primary in this zone instead",
            with_primary.join(", ")
        ),
        (ReadFrom::AzAffinity, true) => {
            "; AZAffinityReplicasAndPrimary would not help: no primary of those is in this zone either".into()
        }
        (ReadFrom::AzAffinityReplicasAndPrimary | ReadFrom::AzAffinityAllNodes, _) if !with_primary.is_empty() => {
            format!(" (read from the primary in this zone: {})", with_primary.join(", "))
        }
        (ReadFrom::AzAffinityReplicasAndPrimary | ReadFrom::AzAffinityAllNodes, _) => String::new(),
    };
    vec![format!(
        "zone {} has no replica of {}: GLIDE reads {} from another zone{alternative}",
        zone.describe(),
        named(&without),
        if without.len() == 1 && without[0].is_none() {
            "every key"
        } else {
            "their keys"
        }
    )]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(text: &str) -> ReplicaMap {
        ReplicaMap::parse(text).unwrap()
    }

    #[test]
    fn zones_without_replicas_are_named_with_the_alternative() {
        let m = map(
            r#"{"version":1,"fallback":"cfg:6379","zones":{},"configuration_endpoint":"cfg:6379","nodes":[
            {"endpoint":"a1:6379","role":"primary","zone":"ap-northeast-1a","shard":"0001"},
            {"endpoint":"c1:6379","role":"replica","zone":"ap-northeast-1c","shard":"0001"},
            {"endpoint":"a2:6379","role":"replica","zone":"ap-northeast-1a","shard":"0002"},
            {"endpoint":"c2:6379","role":"primary","zone":"ap-northeast-1c","shard":"0002"}]}"#,
        );
        let a = Zone::parse("ap-northeast-1a").unwrap();
        let said = coverage(&m, &a, ReadFrom::AzAffinity);
        assert_eq!(said.len(), 1);
        assert!(
            said[0].contains("zone ap-northeast-1a has no replica of shard 0001")
                && said[0].contains("would read shard 0001 from its primary in this zone"),
            "{said:?}"
        );
        let d = Zone::parse("ap-northeast-1d").unwrap();
        let said = coverage(&m, &d, ReadFrom::AzAffinity);
        assert!(
            said[0].contains("no replica of shards 0001, 0002") && said[0].contains("would not help"),
            "{said:?}"
        );
        assert!(coverage(&m, &Zone::parse("ap-northeast-1c").unwrap(), ReadFrom::AzAffinity)[0].contains("shard 0002"));
    }

    #[test]
    fn env_lines_quote_and_bracket() {
        let config = GlideConfig {
            addresses: vec![
                Address {
                    host: "::1".into(),
                    port: 6379,
                },
                Address {
                    host: "a.example".into(),
                    port: 6380,
                },
            ],
            cluster_mode: false,
            read_from: "AZAffinity".into(),
            client_az: Some("apne1-az4".into()),
            use_tls: true,
        };
        let env = config.to_env();
        assert!(
            env.contains("export LOCALITY_GLIDE_ADDRESSES='[::1]:6379,a.example:6380'\n"),
            "{env}"
        );
        assert!(env.contains("export LOCALITY_CLIENT_AZ='apne1-az4'\n"), "{env}");
        assert_eq!(
            config.to_json(),
            r#"{"addresses":[{"host":"::1","port":6379},{"host":"a.example","port":6380}],"cluster_mode":false,"read_from":"AZAffinity","client_az":"apne1-az4","use_tls":true}"#
        );
    }
}
