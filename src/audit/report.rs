//! The audit's figures, from the counted bytes and the topology, and their three renderings:
//! a table for people (worst clients first), JSON, and a node_exporter textfile.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::fmt::Write as _;
use std::net::IpAddr;

use locality_resolve::document::NodeRole;
use serde_json::json;

use super::tally::{Count, Counted, Counts, LeftOut, Tally};
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

/// One node a client exchanged bytes with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientNode {
    /// `host:port`, as the map writes it.
    pub endpoint: String,
    /// The node's zone.
    pub zone: String,
    /// Bytes, both directions.
    pub bytes: u64,
}

/// A client's bytes across zones, and the replicas it read them from.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientFigures {
    /// Its address.
    pub address: IpAddr,
    /// Its zone (from its subnet).
    pub zone: String,
    /// Cross-zone bytes with replicas.
    pub bytes: u64,
    /// Its cross-zone bytes × 2 × price, scaled to 30 days; `None` without a window.
    pub estimated_monthly_cost_usd: Option<f64>,
    /// The replicas of other zones it read from, the most bytes first.
    pub nodes: Vec<ClientNode>,
}

/// A client in no known subnet: its bytes with every node, and where it was seen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownClient {
    /// Its address.
    pub address: IpAddr,
    /// Bytes with every node.
    pub bytes: u64,
    /// The interface whose records were counted (the node's, usually: a client outside the
    /// VPC's subnets has no interface of its own in the logs).
    pub interface: Option<String>,
    /// The nodes it exchanged bytes with, the most first.
    pub nodes: Vec<ClientNode>,
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
    /// Bytes counted at a client's end while the node's end was recording and saw nothing of
    /// that client: where a client address stands for others (EKS pods behind their node's
    /// address, a format without `pkt-srcaddr`/`pkt-dstaddr`), counted twice.
    pub client_end_only_bytes: u64,
    /// Cross-zone replica bytes × price, scaled to 30 days; `None` without a window.
    pub estimated_monthly_cost_usd: Option<f64>,
    /// The price used, USD per GB (10⁹ bytes) each way.
    pub price_per_gb: f64,
    /// Earliest start and latest end of the records.
    pub window: Option<(u64, u64)>,
    /// Records read (lines that parsed).
    pub records: u64,
    /// Records counted.
    pub counted_records: u64,
    /// Records (and lines) left out, by reason.
    pub left_out: LeftOut,
    /// Where the first line that did not parse is: `file, line N: problem`.
    pub first_skipped: Option<String>,
    /// Per node.
    pub nodes: Vec<NodeFigures>,
    /// Per client zone: (bytes with replicas in its zone, bytes with replicas elsewhere).
    pub client_zones: BTreeMap<String, (u64, u64)>,
    /// The clients with the most cross-zone replica bytes, most first (at most 20).
    pub cross_zone_clients: Vec<ClientFigures>,
    /// The clients in no known subnet with the most bytes, most first (at most 20).
    pub unknown_zone_clients: Vec<UnknownClient>,
    /// Whether lines that did not parse are known apart (Athena's SerDe reads an unparseable
    /// field as NULL, so its records count under other reasons instead).
    pub unparsed_lines_known: bool,
    /// The Athena query that counted, and what it cost (`--athena`).
    pub athena: Option<super::athena_client::QueryCost>,
}

/// Why `unparsed_lines` is not known from Athena.
pub const UNPARSED_UNKNOWN: &str =
    "Athena's SerDe reads an unparseable field as NULL: such a line counts as no_data or no_node, not apart";

/// The clients with the most bytes (then the smaller address), at most [`TOP_CLIENTS`], each
/// with where its pairs are: a heap whose top is the least of them.
#[derive(Default)]
struct Worst {
    heap: BinaryHeap<Reverse<Ranked>>,
}

/// A client's place among the worst: its bytes, its address (the smaller first), and where its
/// pairs start and end.
type Ranked = (u64, Reverse<IpAddr>, usize, usize);

impl Worst {
    /// Keeps `client` if it is among the worst so far (never a client of no bytes).
    fn offer(&mut self, bytes: u64, client: IpAddr, pairs: std::ops::Range<usize>) {
        if bytes == 0 {
            return;
        }
        self.heap
            .push(Reverse((bytes, Reverse(client), pairs.start, pairs.end)));
        if self.heap.len() > TOP_CLIENTS {
            self.heap.pop();
        }
    }

    /// Most bytes first, then by address.
    fn worst_first(self) -> Vec<(u64, IpAddr, std::ops::Range<usize>)> {
        let mut list: Vec<_> = self.heap.into_iter().map(|Reverse(key)| key).collect();
        list.sort_unstable_by(|a, b| b.cmp(a));
        list.into_iter()
            .map(|(bytes, Reverse(client), start, end)| (bytes, client, start..end))
            .collect()
    }
}

/// A client zone's sums.
fn zone_sums<'a>(zones: &'a mut BTreeMap<String, (u64, u64)>, zone: &str) -> &'a mut (u64, u64) {
    zones.entry(zone.to_string()).or_default()
}

fn role_name(role: NodeRole) -> &'static str {
    match role {
        NodeRole::Primary => "primary",
        NodeRole::Replica => "replica",
    }
}

impl Figures {
    /// The figures of a tally.
    pub fn compute(tally: &mut Tally, nodes: &[Node], subnets: &Subnets, price_per_gb: f64) -> Figures {
        Figures::from_counts(&tally.counts(), nodes, subnets, price_per_gb)
    }

    /// The figures of counts, from whichever source (the file audit's tally or Athena's rows).
    pub fn from_counts(counts: &Counts, nodes: &[Node], subnets: &Subnets, price_per_gb: f64) -> Figures {
        let Count {
            pairs: counted,
            records: counted_records,
            ..
        } = &counts.count;
        let counted_records = *counted_records;
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
        let add = |sum: &mut u64, bytes: u64| *sum = sum.saturating_add(bytes);
        let (mut in_zone, mut cross, mut primary_cross, mut unknown) = (0u64, 0u64, 0u64, 0u64);
        let mut client_zones: BTreeMap<String, (u64, u64)> = BTreeMap::new();
        // The pairs by client (the tally's order, and Athena's rows are sorted so): each client
        // is summed in turn and only the worst of each list is kept, so that the figures take
        // no memory per client.
        let by_client: std::borrow::Cow<'_, [Counted]> = if counted.is_sorted_by_key(|c| c.client) {
            std::borrow::Cow::Borrowed(counted)
        } else {
            let mut sorted = counted.clone();
            sorted.sort_by_key(|c| (c.client, c.node));
            std::borrow::Cow::Owned(sorted)
        };
        let (mut worst_cross, mut worst_unknown) = (Worst::default(), Worst::default());
        let mut at = 0;
        for group in by_client.chunk_by(|a, b| a.client == b.client) {
            let (client, range) = (group[0].client, at..at + group.len());
            at += group.len();
            let subnet = subnets.find(client);
            let (mut cross_bytes, mut unknown_bytes) = (0u64, 0u64);
            for c in group {
                let Some(node) = nodes.get(c.node) else {
                    continue;
                };
                let figures = &mut per_node[c.node];
                add(&mut figures.bytes, c.bytes);
                let replica = node.role == NodeRole::Replica;
                match subnet {
                    None => {
                        add(&mut figures.unknown_zone_bytes, c.bytes);
                        add(&mut unknown, c.bytes);
                        add(&mut unknown_bytes, c.bytes);
                    }
                    Some(subnet) if same_zone(subnet, node) => {
                        if replica {
                            add(&mut in_zone, c.bytes);
                            add(&mut zone_sums(&mut client_zones, &subnet.zone).0, c.bytes);
                        }
                    }
                    Some(subnet) => {
                        add(&mut figures.cross_zone_bytes, c.bytes);
                        if replica {
                            add(&mut cross, c.bytes);
                            add(&mut zone_sums(&mut client_zones, &subnet.zone).1, c.bytes);
                            add(&mut cross_bytes, c.bytes);
                        } else {
                            add(&mut primary_cross, c.bytes);
                        }
                    }
                }
            }
            worst_cross.offer(cross_bytes, client, range.clone());
            worst_unknown.offer(unknown_bytes, client, range);
        }
        let monthly = |bytes: u64| monthly_cost(bytes, counts.window, price_per_gb);
        // A listed client's nodes, the most bytes first: those of `pairs` that `keep` takes.
        let node_list = |pairs: &[Counted], keep: &dyn Fn(&Node) -> bool| {
            let mut by_node: BTreeMap<usize, u64> = BTreeMap::new();
            for c in pairs {
                if nodes.get(c.node).is_some_and(keep) {
                    add(by_node.entry(c.node).or_default(), c.bytes);
                }
            }
            let mut list: Vec<ClientNode> = by_node
                .into_iter()
                .map(|(index, bytes)| ClientNode {
                    endpoint: nodes[index].endpoint.clone(),
                    zone: nodes[index].zone.clone(),
                    bytes,
                })
                .collect();
            list.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.endpoint.cmp(&b.endpoint)));
            list
        };
        let cross_zone_clients = worst_cross
            .worst_first()
            .into_iter()
            .filter_map(|(bytes, address, range)| {
                let subnet = subnets.find(address)?;
                let across = |node: &Node| node.role == NodeRole::Replica && !same_zone(subnet, node);
                Some(ClientFigures {
                    address,
                    zone: subnet.zone.clone(),
                    bytes,
                    estimated_monthly_cost_usd: monthly(bytes),
                    nodes: node_list(&by_client[range], &across),
                })
            })
            .collect();
        let unknown_zone_clients = worst_unknown
            .worst_first()
            .into_iter()
            .map(|(bytes, address, range)| UnknownClient {
                address,
                bytes,
                // The interface of its first pair (the node of the smallest index).
                interface: by_client[range.clone()]
                    .iter()
                    .find_map(|c| c.interface.as_deref().map(str::to_string)),
                nodes: node_list(&by_client[range], &|_| true),
            })
            .collect();
        let known = in_zone.saturating_add(cross);
        let left_out = counts.left_out;
        Figures {
            in_zone_share: (known > 0).then(|| in_zone as f64 / known as f64),
            in_zone_bytes: in_zone,
            cross_zone_bytes: cross,
            primary_cross_zone_bytes: primary_cross,
            unknown_zone_bytes: unknown,
            between_nodes_bytes: counts.between_nodes_bytes,
            client_end_only_bytes: counts.count.client_end_only_bytes,
            estimated_monthly_cost_usd: monthly(cross),
            price_per_gb,
            window: counts.window,
            records: counts.records,
            counted_records,
            left_out,
            first_skipped: counts.first_skipped.clone(),
            nodes: per_node,
            client_zones,
            cross_zone_clients,
            unknown_zone_clients,
            unparsed_lines_known: true,
            athena: None,
        }
    }

    /// Why the share is undefined, for people; `None` when it is defined.
    pub fn why_no_share(&self) -> Option<String> {
        if self.in_zone_share.is_some() {
            return None;
        }
        let left_out = self.left_out.said();
        let read = format!("{} record(s) read, {} counted", self.records, self.counted_records);
        Some(if self.records == 0 && self.left_out.unparsed_lines == 0 {
            "no flow record was read".to_string()
        } else if self.counted_records == 0 {
            format!(
                "{read}: none is between a client and a node of the map (left out: {})",
                if left_out.is_empty() {
                    "nothing".to_string()
                } else {
                    left_out.join(", ")
                }
            )
        } else if self.in_zone_bytes == 0 && self.cross_zone_bytes == 0 && self.unknown_zone_bytes > 0 {
            format!("{read}: every client with a replica is in no known subnet (zone unknown)")
        } else {
            format!("{read}: none of them is a replica's bytes with a client of known zone")
        })
    }

    /// The JSON rendering (figures as computed: the table rounds, this does not).
    pub fn to_json(&self) -> serde_json::Value {
        let nodes_of = |nodes: &[ClientNode]| {
            nodes
                .iter()
                .map(|n| json!({"endpoint": n.endpoint, "zone": n.zone, "bytes": n.bytes}))
                .collect::<Vec<_>>()
        };
        let skipped: serde_json::Map<String, serde_json::Value> = self
            .left_out
            .reasons()
            .iter()
            .map(|(name, n, _)| {
                let known = self.unparsed_lines_known || *name != "unparsed_lines";
                (name.to_string(), if known { json!(n) } else { serde_json::Value::Null })
            })
            .collect();
        json!({
            "in_zone_share": self.in_zone_share,
            "in_zone_share_undefined_because": self.why_no_share(),
            "in_zone_bytes": self.in_zone_bytes,
            "cross_zone_bytes": self.cross_zone_bytes,
            "primary_cross_zone_bytes": self.primary_cross_zone_bytes,
            "unknown_zone_bytes": self.unknown_zone_bytes,
            "between_nodes_bytes": self.between_nodes_bytes,
            "client_end_only_bytes": self.client_end_only_bytes,
            "estimated_monthly_cost_usd": self.estimated_monthly_cost_usd,
            "price_per_gb": self.price_per_gb,
            "window": self.window.map(|(start, end)| json!({"start": start, "end": end})),
            "records": self.records,
            "counted_records": self.counted_records,
            "skipped": skipped,
            "unparsed_lines_unknown_because": (!self.unparsed_lines_known).then_some(UNPARSED_UNKNOWN),
            "first_skipped": self.first_skipped,
            "athena": self.athena.as_ref().map(|a| json!({
                "query_execution_id": a.query_execution_id,
                "data_scanned_bytes": a.data_scanned_bytes,
                "cost_usd": a.cost_usd,
                "engine_time_ms": a.engine_time_ms,
                "reused": a.reused,
            })),
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
                "address": c.address.to_string(),
                "zone": c.zone,
                "bytes": c.bytes,
                "estimated_monthly_cost_usd": c.estimated_monthly_cost_usd,
                "nodes": nodes_of(&c.nodes),
            })).collect::<Vec<_>>(),
            "unknown_zone_clients": self.unknown_zone_clients.iter().map(|c| json!({
                "address": c.address.to_string(),
                "bytes": c.bytes,
                "interface": c.interface,
                "nodes": nodes_of(&c.nodes),
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
            "locality_audit_in_zone_share_defined",
            "1 when the share is defined; 0 when no replica bytes with a client of known zone were counted (alert on it as on a low share).",
            &[(String::new(), if self.in_zone_share.is_some() { 1.0 } else { 0.0 })],
        );
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
        gauge(
            "locality_audit_client_end_only_bytes",
            "Bytes counted at a client's end while the node's end recorded nothing of that client (a node's address standing for EKS pods, without pkt-srcaddr/pkt-dstaddr: counted twice).",
            &[(String::new(), self.client_end_only_bytes as f64)],
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
                "Cross-zone replica bytes at --price-per-gb (billed once, at the client's EC2 side), scaled to 30 days.",
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
            "locality_audit_counted_records",
            "Flow-log records counted (between a client and a node, at the end that counts).",
            &[(String::new(), self.counted_records as f64)],
        );
        let skipped: Vec<(String, f64)> = self
            .left_out
            .reasons()
            .iter()
            .filter(|(reason, _, _)| self.unparsed_lines_known || *reason != "unparsed_lines")
            .map(|(reason, n, _)| (format!("{{reason=\"{reason}\"}}"), *n as f64))
            .collect();
        gauge(
            "locality_audit_skipped_records",
            "Flow-log records (and lines) read and not counted, by reason.",
            &skipped,
        );
        if let Some(a) = &self.athena {
            gauge(
                "locality_audit_athena_scanned_bytes",
                "Bytes the audit's Athena query scanned.",
                &[(String::new(), a.data_scanned_bytes as f64)],
            );
            gauge(
                "locality_audit_athena_cost_usd",
                "What the audit's Athena query cost, USD (the price per TB scanned, 10 MB at least).",
                &[(String::new(), a.cost_usd)],
            );
        }
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
        if let Some(a) = &self.athena {
            let _ = writeln!(
                out,
                "Athena           query {}: {} scanned, {:.4} USD, engine {} ms{}",
                printable(&a.query_execution_id),
                bytes(a.data_scanned_bytes),
                a.cost_usd,
                a.engine_time_ms,
                if a.reused {
                    ", served from a previous result"
                } else {
                    ""
                }
            );
        }
        let _ = writeln!(
            out,
            "Records          {} read, {} counted, {} left out{}",
            self.records,
            self.counted_records,
            // (Lines that did not parse are not records: said apart.)
            self.left_out.total().saturating_sub(self.left_out.unparsed_lines),
            match self.left_out.unparsed_lines {
                _ if !self.unparsed_lines_known => "; lines that did not parse: not known from Athena".to_string(),
                0 => String::new(),
                n => format!("; {n} line(s) did not parse"),
            }
        );
        let left_out = self.left_out.said();
        for (n, reason) in left_out.iter().enumerate() {
            let label = if n == 0 { "Left out" } else { "" };
            let _ = writeln!(out, "{label:<16} {reason}");
        }
        if let Some(first) = &self.first_skipped {
            // (Its file's name was escaped when it was read.)
            let _ = writeln!(out, "First skipped    {}", locality_resolve::printable::recheck(first));
        }
        // "… of replica bytes" only after a figure: an undefined share says why, and nothing more
        // (issue 61, item 8).
        let share = match (self.in_zone_share, self.why_no_share()) {
            (Some(s), _) => format!("{:.2} % of replica bytes", s * 100.0),
            (None, Some(why)) => format!("none: {why}"),
            (None, None) => "none: no replica bytes with a client of known zone".to_string(),
        };
        let _ = writeln!(out, "In-zone share    {share}");
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
        if self.client_end_only_bytes > 0 {
            let _ = writeln!(
                out,
                "One end only     {} counted at clients' ends while the nodes' ends recorded nothing of those clients: a client address may stand for others (EKS pods behind their node's address), and these bytes may be counted twice; give the flow log's format pkt-srcaddr and pkt-dstaddr",
                bytes(self.client_end_only_bytes)
            );
        }
        if let Some(cost) = self.estimated_monthly_cost_usd {
            let _ = writeln!(
                out,
                "Monthly cost     about {cost:.2} USD (cross-zone replica bytes × {} USD/GB, billed once at the client's side, scaled to 30 days)",
                self.price_per_gb
            );
        }
        // Names from the map and the subnets (a zone is whatever DescribeSubnets said) go
        // through `printable` and are cut ([`cell`]): a newline in one cannot forge a row, nor
        // a long one push the table apart.
        let node_cell = |n: &ClientNode| format!("{} ({}) {}", cell(&n.endpoint), cell(&n.zone), bytes(n.bytes));
        if self.cross_zone_clients.is_empty() {
            if self.in_zone_share.is_some() {
                let _ = writeln!(out, "\nNo client read across zones.");
            }
        } else {
            let _ = writeln!(out, "\nClients reading across zones, worst first:");
            let _ = writeln!(
                out,
                "  {:<40} {:<16} {:>12} {:>10}  READ FROM (ZONE) BYTES",
                "CLIENT", "ZONE", "BYTES", "USD/MONTH"
            );
            for c in &self.cross_zone_clients {
                let cost = c
                    .estimated_monthly_cost_usd
                    .map_or("-".to_string(), |v| format!("{v:.2}"));
                let mut nodes = c.nodes.iter().map(node_cell);
                let _ = writeln!(
                    out,
                    "  {:<40} {:<16} {:>12} {:>10}  {}",
                    c.address.to_string(),
                    cell(&c.zone),
                    bytes(c.bytes),
                    cost,
                    nodes.next().unwrap_or_default()
                );
                for more in nodes {
                    let _ = writeln!(out, "  {:<40} {:<16} {:>12} {:>10}  {more}", "", "", "", "");
                }
            }
        }
        if !self.unknown_zone_clients.is_empty() {
            let _ = writeln!(out, "\nClients in no known subnet, most bytes first:");
            let _ = writeln!(
                out,
                "  {:<40} {:>12}  {:<24}  WITH (ZONE) BYTES",
                "CLIENT", "BYTES", "SEEN AT"
            );
            for c in &self.unknown_zone_clients {
                let mut nodes = c.nodes.iter().map(node_cell);
                let _ = writeln!(
                    out,
                    "  {:<40} {:>12}  {:<24}  {}",
                    c.address.to_string(),
                    bytes(c.bytes),
                    c.interface.as_deref().map_or("-".to_string(), cell),
                    nodes.next().unwrap_or_default()
                );
                for more in nodes {
                    let _ = writeln!(out, "  {:<40} {:>12}  {:<24}  {more}", "", "", "");
                }
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
                cell(&n.endpoint),
                n.role,
                cell(&n.zone),
                bytes(n.bytes),
                bytes(n.cross_zone_bytes)
            );
        }
        out
    }
}

/// Cross-zone bytes × price (billed once, at the client's EC2 side), scaled from the window to 30 days; `None` without a
/// window of positive length. (The same expression, in the same order, as the Athena query's.)
fn monthly_cost(bytes: u64, window: Option<(u64, u64)>, price_per_gb: f64) -> Option<f64> {
    let (start, end) = window?;
    (end > start).then(|| bytes as f64 * price_per_gb / 1e9 * MONTH_SECONDS / (end - start) as f64)
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

/// A name from the records or the locations, escaped by the one function for text from
/// outside (general categories Cc, Cf, Zl, Zp: `\u{1b}`, `\n`, `\u{202e}`): a name cannot move
/// the terminal's cursor, forge a line of the report or reorder one.
pub use locality_resolve::printable::printable;

/// The most characters of a name a cell of the table shows (the JSON and the textfile carry it
/// whole, escaped).
pub const MAX_CELL_CHARS: usize = 64;

/// A name from outside as a cell of the table: escaped, and cut past [`MAX_CELL_CHARS`]
/// (`...`).
fn cell(value: &str) -> String {
    locality_resolve::printable::printable_cut(value, MAX_CELL_CHARS)
}

/// A label value, [`printable`] then escaped as the text format wants.
fn escape(value: &str) -> String {
    printable(value).replace('\\', "\\\\").replace('"', "\\\"")
}
