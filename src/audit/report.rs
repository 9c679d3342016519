//! The audit's figures, from the counted bytes and the topology, and their three renderings:
//! a table for people (worst clients first), JSON, and a node_exporter textfile.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::net::IpAddr;

use locality_resolve::document::NodeRole;
use serde_json::json;

use super::tally::{Counted, Tally};
use super::topology::{same_zone, Node, Subnets};

/// Seconds in the 30 days the monthly estimate scales to.
const MONTH_SECONDS: f64 = 30.0 * 86_400.0;
/// Clients listed in `cross_zone_clients`.
const TOP_CLIENTS: usize = 20;
/// The zone of clients in no known subnet.
pub const UNKNOWN_ZONE: &str = "unknown";

/// One node's figures.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeFigures {
    /// `host:port`, as the map writes it.
    pub endpoint: String,
    /// Its address.
    pub address: IpAddr,
    /// `primary` or `replica`.
    pub role: &'static str,
    /// Its zone.
    pub zone: String,
    /// Bytes with every client, both directions.
    pub bytes: u64,
    /// Bytes with clients of another known zone.
    pub cross_zone_bytes: u64,
    /// Bytes with clients in no known subnet.
    pub unknown_zone_bytes: u64,
}

/// A client's bytes across zones.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientFigures {
    /// Its address.
    pub address: IpAddr,
    /// Its zone (from its subnet).
    pub zone: String,
    /// Cross-zone bytes with replicas.
    pub bytes: u64,
}

/// Everything the audit reports.
#[derive(Debug, Clone, PartialEq)]
pub struct Figures {
    /// In-zone replica bytes over replica bytes whose client zone is known; `None` without any.
    pub in_zone_share: Option<f64>,
    /// In-zone bytes with replicas.
    pub in_zone_bytes: u64,
    /// Cross-zone bytes with replicas.
    pub cross_zone_bytes: u64,
    /// Cross-zone bytes with the primary (writes, shown apart).
    pub primary_cross_zone_bytes: u64,
    /// Bytes with clients in no known subnet (any node).
    pub unknown_zone_bytes: u64,
    /// Bytes between nodes (replication).
    pub between_nodes_bytes: u64,
    /// Cross-zone replica bytes × 2 × price, scaled to 30 days; `None` without a window.
    pub estimated_monthly_cost_usd: Option<f64>,
    /// The price used, USD per GB (10⁹ bytes) each way.
    pub price_per_gb: f64,
    /// Earliest start and latest end of the records.
    pub window: Option<(u64, u64)>,
    /// Records read.
    pub records: u64,
    /// Lines that did not parse.
    pub skipped: u64,
    /// Where the first of them is: `file, line N: problem`.
    pub first_skipped: Option<String>,
    /// NODATA and SKIPDATA records.
    pub no_data: u64,
    /// REJECT records.
    pub rejected: u64,
    /// Per node.
    pub nodes: Vec<NodeFigures>,
    /// Per client zone: (bytes with replicas in its zone, bytes with replicas elsewhere).
    pub client_zones: BTreeMap<String, (u64, u64)>,
    /// The clients with the most cross-zone replica bytes, most first (at most 20).
    pub cross_zone_clients: Vec<ClientFigures>,
}

fn role_name(role: NodeRole) -> &'static str {
    match role {
        NodeRole::Primary => "primary",
        NodeRole::Replica => "replica",
    }
}

impl Figures {
    /// The figures of a tally.
    pub fn compute(tally: &Tally, nodes: &[Node], subnets: &Subnets, price_per_gb: f64) -> Figures {
        let counted: Vec<Counted> = tally.counted();
        let mut per_node: Vec<NodeFigures> = nodes
            .iter()
            .map(|n| NodeFigures {
                endpoint: n.endpoint.clone(),
                address: n.address,
                role: role_name(n.role),
                zone: n.zone.clone(),
                bytes: 0,
                cross_zone_bytes: 0,
                unknown_zone_bytes: 0,
            })
            .collect();
        let (mut in_zone, mut cross, mut primary_cross, mut unknown) = (0u64, 0u64, 0u64, 0u64);
        let mut client_zones: BTreeMap<String, (u64, u64)> = BTreeMap::new();
        let mut clients: BTreeMap<IpAddr, (String, u64)> = BTreeMap::new();
        for c in &counted {
            let node = &nodes[c.node];
            let figures = &mut per_node[c.node];
            figures.bytes += c.bytes;
            let replica = node.role == NodeRole::Replica;
            match subnets.find(c.client) {
                None => {
                    figures.unknown_zone_bytes += c.bytes;
                    unknown += c.bytes;
                }
                Some(subnet) if same_zone(subnet, node) => {
                    if replica {
                        in_zone += c.bytes;
                        client_zones.entry(subnet.zone.clone()).or_default().0 += c.bytes;
                    }
                }
                Some(subnet) => {
                    figures.cross_zone_bytes += c.bytes;
                    if replica {
                        cross += c.bytes;
                        client_zones.entry(subnet.zone.clone()).or_default().1 += c.bytes;
                        clients.entry(c.client).or_insert_with(|| (subnet.zone.clone(), 0)).1 += c.bytes;
                    } else {
                        primary_cross += c.bytes;
                    }
                }
            }
        }
        let mut cross_zone_clients: Vec<ClientFigures> = clients
            .into_iter()
            .map(|(address, (zone, bytes))| ClientFigures { address, zone, bytes })
            .collect();
        cross_zone_clients.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.address.cmp(&b.address)));
        cross_zone_clients.truncate(TOP_CLIENTS);
        let known = in_zone + cross;
        let estimated = tally.window.and_then(|(start, end)| {
            (end > start).then(|| cross as f64 * 2.0 * price_per_gb / 1e9 * MONTH_SECONDS / (end - start) as f64)
        });
        Figures {
            in_zone_share: (known > 0).then(|| in_zone as f64 / known as f64),
            in_zone_bytes: in_zone,
            cross_zone_bytes: cross,
            primary_cross_zone_bytes: primary_cross,
            unknown_zone_bytes: unknown,
            between_nodes_bytes: tally.between_nodes_bytes,
            estimated_monthly_cost_usd: estimated,
            price_per_gb,
            window: tally.window,
            records: tally.records,
            skipped: tally.skipped,
            first_skipped: tally
                .first_skipped
                .as_ref()
                .map(|f| format!("{}, line {}: {}", f.location, f.line, f.problem)),
            no_data: tally.no_data,
            rejected: tally.rejected,
            nodes: per_node,
            client_zones,
            cross_zone_clients,
        }
    }

    /// The JSON rendering.
    pub fn to_json(&self) -> serde_json::Value {
        json!({
            "in_zone_share": self.in_zone_share,
            "in_zone_bytes": self.in_zone_bytes,
            "cross_zone_bytes": self.cross_zone_bytes,
            "primary_cross_zone_bytes": self.primary_cross_zone_bytes,
            "unknown_zone_bytes": self.unknown_zone_bytes,
            "between_nodes_bytes": self.between_nodes_bytes,
            "estimated_monthly_cost_usd": self.estimated_monthly_cost_usd.map(|c| (c * 100.0).round() / 100.0),
            "price_per_gb": self.price_per_gb,
            "window": self.window.map(|(start, end)| json!({"start": start, "end": end})),
            "records": self.records,
            "skipped": self.skipped,
            "first_skipped": self.first_skipped,
            "no_data": self.no_data,
            "rejected": self.rejected,
            "nodes": self.nodes.iter().map(|n| json!({
                "endpoint": n.endpoint,
                "address": n.address.to_string(),
                "role": n.role,
                "zone": n.zone,
                "bytes": n.bytes,
                "cross_zone_bytes": n.cross_zone_bytes,
                "unknown_zone_bytes": n.unknown_zone_bytes,
            })).collect::<Vec<_>>(),
            "client_zones": self.client_zones.iter().map(|(zone, (inside, across))| json!({
                "zone": zone, "in_zone_bytes": inside, "cross_zone_bytes": across,
            })).collect::<Vec<_>>(),
            "cross_zone_clients": self.cross_zone_clients.iter().map(|c| json!({
                "address": c.address.to_string(), "zone": c.zone, "bytes": c.bytes,
            })).collect::<Vec<_>>(),
        })
    }

    /// A node_exporter textfile (`promtool check metrics` clean).
    pub fn to_prometheus(&self) -> String {
        let mut out = String::new();
        let mut gauge = |name: &str, help: &str, samples: &[(String, f64)]| {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge");
            for (labels, value) in samples {
                let _ = writeln!(out, "{name}{labels} {value}");
            }
        };
        if let Some(share) = self.in_zone_share {
            gauge(
                "locality_audit_in_zone_share_ratio",
                "Share of replica bytes (both directions) exchanged with clients of the replica's own zone, from VPC Flow Logs.",
                &[(String::new(), share)],
            );
        }
        gauge(
            "locality_audit_cross_zone_bytes",
            "Bytes exchanged across zones in the audited window, by node role (primary: writes).",
            &[
                ("{role=\"replica\"}".to_string(), self.cross_zone_bytes as f64),
                ("{role=\"primary\"}".to_string(), self.primary_cross_zone_bytes as f64),
            ],
        );
        gauge(
            "locality_audit_unknown_zone_bytes",
            "Bytes exchanged with clients in no known subnet (never counted as in-zone).",
            &[(String::new(), self.unknown_zone_bytes as f64)],
        );
        let node_labels = |n: &NodeFigures| {
            format!(
                "{{endpoint=\"{}\",role=\"{}\",zone=\"{}\"}}",
                escape(&n.endpoint),
                n.role,
                escape(&n.zone)
            )
        };
        let nodes: Vec<(String, f64)> = self.nodes.iter().map(|n| (node_labels(n), n.bytes as f64)).collect();
        gauge(
            "locality_audit_node_bytes",
            "Bytes exchanged with clients, per cache node.",
            &nodes,
        );
        let nodes: Vec<(String, f64)> = self
            .nodes
            .iter()
            .map(|n| (node_labels(n), n.cross_zone_bytes as f64))
            .collect();
        gauge(
            "locality_audit_node_cross_zone_bytes",
            "Bytes exchanged with clients of another zone, per cache node.",
            &nodes,
        );
        if let Some(cost) = self.estimated_monthly_cost_usd {
            gauge(
                "locality_audit_estimated_monthly_cost_usd",
                "Cross-zone replica bytes, charged on both sides, at --price-per-gb, scaled to 30 days.",
                &[(String::new(), cost)],
            );
        }
        if let Some((start, end)) = self.window {
            gauge(
                "locality_audit_window_start_timestamp_seconds",
                "Start of the audited flow records.",
                &[(String::new(), start as f64)],
            );
            gauge(
                "locality_audit_window_end_timestamp_seconds",
                "End of the audited flow records.",
                &[(String::new(), end as f64)],
            );
        }
        gauge(
            "locality_audit_records",
            "Flow-log records read in the audited window.",
            &[(String::new(), self.records as f64)],
        );
        gauge(
            "locality_audit_skipped_lines",
            "Lines that did not parse (skipped).",
            &[(String::new(), self.skipped as f64)],
        );
        out
    }

    /// The table for people: the summary, the worst clients first, then the nodes.
    pub fn to_table(&self) -> String {
        let mut out = String::new();
        let window = match self.window {
            Some((start, end)) => format!(
                "{} to {} ({})",
                timestamp(start),
                timestamp(end),
                humantime::format_duration(std::time::Duration::from_secs(end.saturating_sub(start)))
            ),
            None => "no start or end in the records".to_string(),
        };
        let _ = writeln!(out, "Window           {window}");
        let _ = writeln!(
            out,
            "Records          {} read, {} skipped, {} without data, {} rejected",
            self.records, self.skipped, self.no_data, self.rejected
        );
        if let Some(first) = &self.first_skipped {
            let _ = writeln!(out, "First skipped    {first}");
        }
        let share = self
            .in_zone_share
            .map_or("none (no replica bytes with a known client zone)".to_string(), |s| {
                format!("{:.2} %", s * 100.0)
            });
        let _ = writeln!(out, "In-zone share    {share} of replica bytes");
        let _ = writeln!(out, "Cross-zone       {} with replicas", bytes(self.cross_zone_bytes));
        let _ = writeln!(
            out,
            "Primary, across  {} (writes: shown apart, not in the share)",
            bytes(self.primary_cross_zone_bytes)
        );
        let _ = writeln!(
            out,
            "Unknown zone     {} (clients in no known subnet: not in the share)",
            bytes(self.unknown_zone_bytes)
        );
        if let Some(cost) = self.estimated_monthly_cost_usd {
            let _ = writeln!(
                out,
                "Monthly cost     about {cost:.2} USD (cross-zone replica bytes × 2 sides × {} USD/GB, scaled to 30 days)",
                self.price_per_gb
            );
        }
        if self.cross_zone_clients.is_empty() {
            let _ = writeln!(out, "\nNo client read across zones.");
        } else {
            let _ = writeln!(out, "\nClients reading across zones, worst first:");
            let _ = writeln!(out, "  {:<40} {:<16} {:>12}", "CLIENT", "ZONE", "BYTES");
            for c in &self.cross_zone_clients {
                let _ = writeln!(out, "  {:<40} {:<16} {:>12}", c.address, c.zone, bytes(c.bytes));
            }
        }
        let _ = writeln!(out, "\nNodes:");
        let _ = writeln!(
            out,
            "  {:<44} {:<8} {:<16} {:>12} {:>12}",
            "NODE", "ROLE", "ZONE", "BYTES", "CROSS-ZONE"
        );
        for n in &self.nodes {
            let _ = writeln!(
                out,
                "  {:<44} {:<8} {:<16} {:>12} {:>12}",
                n.endpoint,
                n.role,
                n.zone,
                bytes(n.bytes),
                bytes(n.cross_zone_bytes)
            );
        }
        out
    }
}

/// Bytes for people: `1.23 GB` (powers of 1000, as AWS bills).
fn bytes(n: u64) -> String {
    let units = ["B", "kB", "MB", "GB", "TB", "PB"];
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1000.0 && unit + 1 < units.len() {
        value /= 1000.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{value:.2} {}", units[unit])
    }
}

/// RFC 3339 for the years 1970 to 9999; the epoch seconds as written beyond (a record can say
/// anything).
fn timestamp(seconds: u64) -> String {
    const LAST: u64 = 253_402_300_799; // 9999-12-31T23:59:59Z
    if seconds > LAST {
        return format!("{seconds} (epoch seconds)");
    }
    humantime::format_rfc3339_seconds(std::time::UNIX_EPOCH + std::time::Duration::from_secs(seconds)).to_string()
}

/// A label value, escaped as the text format wants.
fn escape(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}
