//! Counting flow records between clients and cache nodes, each flow once.
//!
//! With flow logs on for a whole VPC, one flow is captured at both ends: at the client's
//! interface and at the node's. Per client and node, the records captured at the node's end
//! count; a pair that the node's end never captured counts the records of the end that did
//! (flow logs on the clients' subnets only). Which end captured a record:
//! - with `flow-direction`: a record arriving at a node (ingress, to the node) or leaving it
//!   (egress, from the node) was captured at the node, any other at the client;
//! - without it: the node's interface is the one that captured that node's flows with the most
//!   distinct clients (a client's interface sees one client, itself; ties go to the smaller
//!   interface id), any other is a client's;
//! - with neither (no interface-id either): at the node.
//!
//! `--print-sql athena` states the interface rule in SQL; on records captured at both ends with
//! the same bytes (as AWS captures them), the two rules give the same figures.
//!
//! Every record read is either counted or left out for a reason ([`LeftOut`]); counts saturate
//! instead of wrapping, and a record whose bytes no link could carry in its window, or whose
//! window no capture has, is left out as impossible. A tally is kept per file reader and merged;
//! it holds one entry per client and node (and per capturing interface), never per record, so
//! memory stays flat however many records are read, and every step is a hash look-up.

use std::collections::HashMap;
use std::net::IpAddr;

use super::flow_log::{Direction, Flow};

/// The most bytes a record may carry per second of its window: 400 Gbit/s, more than any one
/// interface of EC2 or ElastiCache carries.
pub const LINK_BYTES_PER_SECOND: u64 = 50_000_000_000;
/// The longest window a record may have: an hour (a capture's aggregation interval is 1 or
/// 10 minutes; what lies beyond was never captured as one record).
pub const LONGEST_WINDOW_SECONDS: u64 = 3_600;
/// The earliest time a record may start: 2015-06-01, when VPC Flow Logs began.
pub const EARLIEST_START: u64 = 1_433_116_800;
/// How far past the reader's clock a record may end (clock skew).
const CLOCK_SKEW_SECONDS: u64 = 86_400;

/// The reader's clock, epoch seconds.
pub fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The latest end a record may have when read at `now`: a day of clock skew after it.
pub fn latest_end(now: u64) -> u64 {
    now.saturating_add(CLOCK_SKEW_SECONDS)
}

/// Bytes and records of one end's captures.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Captured {
    bytes: u64,
    records: u64,
}

impl Captured {
    fn add(&mut self, bytes: u64, records: u64) {
        self.bytes = self.bytes.saturating_add(bytes);
        self.records = self.records.saturating_add(records);
    }

    fn merge(&mut self, other: Captured) {
        self.add(other.bytes, other.records);
    }
}

/// One client with one node.
#[derive(Debug, Clone, Default)]
struct Pair {
    /// Records captured at the node by flow-direction, or with no way to tell which end.
    at_node: Captured,
    /// Records captured at the client by flow-direction.
    at_client: Captured,
    /// The interface of the first record at the node, and at the client (flow-direction).
    node_interface: Option<u32>,
    client_interface: Option<u32>,
    /// Records without flow-direction, all interfaces together (per interface in
    /// [`Tally::by_interface`]).
    by_interfaces: Captured,
}

/// Interface ids, each stored once and named by a number.
#[derive(Debug, Clone, Default)]
struct Interfaces {
    ids: HashMap<Box<str>, u32>,
    names: Vec<Box<str>>,
}

impl Interfaces {
    fn intern(&mut self, name: &str) -> u32 {
        if let Some(id) = self.ids.get(name) {
            return *id;
        }
        let id = u32::try_from(self.names.len()).unwrap_or(u32::MAX);
        self.names.push(name.into());
        self.ids.insert(name.into(), id);
        id
    }

    fn name(&self, id: u32) -> &str {
        self.names.get(id as usize).map_or("", |n| n)
    }
}

/// Where the first line that did not parse is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FirstSkipped {
    /// The file or object.
    pub location: String,
    /// 1-based line number.
    pub line: u64,
    /// What is wrong with it.
    pub problem: String,
}

/// Records read and not counted, by reason.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LeftOut {
    /// Lines that did not parse.
    pub unparsed_lines: u64,
    /// NODATA and SKIPDATA records (and records whose addresses or bytes are `-`).
    pub no_data: u64,
    /// REJECT records: nothing was delivered.
    pub rejected: u64,
    /// Records whose bytes no link carries in their window, or whose window is longer than an
    /// hour, ends before it starts, starts before VPC Flow Logs existed or ends after now.
    pub impossible: u64,
    /// The other end's capture of a flow counted where the node captured it.
    pub other_end: u64,
    /// Records between two nodes (replication), not a client's.
    pub between_nodes: u64,
    /// Records with no node at either end (other services).
    pub no_node: u64,
}

impl LeftOut {
    /// Every reason, with its name in the JSON and the textfile, and how a person says it.
    pub fn reasons(&self) -> [(&'static str, u64, &'static str); 7] {
        [
            ("unparsed_lines", self.unparsed_lines, "lines that did not parse"),
            ("no_data", self.no_data, "NODATA or SKIPDATA"),
            ("rejected", self.rejected, "rejected (nothing delivered)"),
            ("impossible", self.impossible, "impossible bytes or window"),
            (
                "other_end",
                self.other_end,
                "the client's end of a flow counted at the node",
            ),
            ("between_nodes", self.between_nodes, "between two nodes (replication)"),
            ("no_node", self.no_node, "no node of the map at either end"),
        ]
    }

    /// The reasons that left something out, as a person says them: `12 rejected (nothing
    /// delivered)`.
    pub fn said(&self) -> Vec<String> {
        self.reasons()
            .iter()
            .filter(|(_, n, _)| *n > 0)
            .map(|(_, n, said)| format!("{n} {said}"))
            .collect()
    }

    /// All of them.
    pub fn total(&self) -> u64 {
        self.reasons()
            .iter()
            .fold(0u64, |sum, (_, n, _)| sum.saturating_add(*n))
    }

    fn merge(&mut self, other: LeftOut) {
        self.unparsed_lines = self.unparsed_lines.saturating_add(other.unparsed_lines);
        self.no_data = self.no_data.saturating_add(other.no_data);
        self.rejected = self.rejected.saturating_add(other.rejected);
        self.impossible = self.impossible.saturating_add(other.impossible);
        self.other_end = self.other_end.saturating_add(other.other_end);
        self.between_nodes = self.between_nodes.saturating_add(other.between_nodes);
        self.no_node = self.no_node.saturating_add(other.no_node);
    }
}

/// Records read, and the bytes of each client with each node.
#[derive(Debug, Clone, Default)]
pub struct Tally {
    interfaces: Interfaces,
    pairs: HashMap<(u32, IpAddr), Pair>,
    /// Records without flow-direction, per node, client and capturing interface.
    by_interface: HashMap<(u32, IpAddr, u32), Captured>,
    /// Records read (lines that parsed).
    pub records: u64,
    /// Records left out, by reason (`other_end` is known only in [`Tally::counted`]).
    pub left_out: LeftOut,
    /// The first line that did not parse (in file name order, then line).
    pub first_skipped: Option<FirstSkipped>,
    /// Bytes between two nodes (replication), not a client's.
    pub between_nodes_bytes: u64,
    /// The earliest start and latest end of the flow records (epoch seconds).
    pub window: Option<(u64, u64)>,
    /// Records later than this end are impossible (epoch seconds; now plus a day).
    latest_end: u64,
}

/// The bytes one client exchanged with one node, counted once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counted {
    /// Index of the node (in the audit's node list).
    pub node: usize,
    /// The client's address.
    pub client: IpAddr,
    /// Bytes, both directions.
    pub bytes: u64,
    /// The interface whose records were counted (the node's, or the end that captured the
    /// pair), when the format has interface-id.
    pub interface: Option<String>,
}

/// What [`Tally::counted`] gives: the pairs, and the records left out as the other end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Count {
    /// Per client and node, sorted by node then client.
    pub pairs: Vec<Counted>,
    /// Records counted.
    pub records: u64,
    /// Records of the other end, not counted.
    pub other_end: u64,
}

impl Tally {
    /// An empty tally whose records may end at most a day after `now` (epoch seconds).
    pub fn new(now: u64) -> Tally {
        Tally {
            latest_end: latest_end(now),
            ..Tally::default()
        }
    }

    /// An empty tally, its clock read now.
    pub fn now() -> Tally {
        Tally::new(now())
    }

    /// Whether a record's bytes and window are possible.
    fn possible(&self, flow: &Flow<'_>) -> bool {
        let seconds = match (flow.start, flow.end) {
            (Some(start), Some(end)) => {
                if end < start
                    || end - start > LONGEST_WINDOW_SECONDS
                    || start < EARLIEST_START
                    || end > self.latest_end
                {
                    return false;
                }
                end - start + 1
            }
            (Some(time), None) | (None, Some(time)) => {
                if time < EARLIEST_START || time > self.latest_end {
                    return false;
                }
                LONGEST_WINDOW_SECONDS
            }
            (None, None) => LONGEST_WINDOW_SECONDS,
        };
        flow.bytes <= LINK_BYTES_PER_SECOND.saturating_mul(seconds)
    }

    /// Adds one flow record. `node_of` gives a node's index for an address.
    pub fn add(&mut self, flow: &Flow<'_>, node_of: impl Fn(IpAddr) -> Option<u32>) {
        self.records = self.records.saturating_add(1);
        if !self.possible(flow) {
            self.left_out.impossible = self.left_out.impossible.saturating_add(1);
            return;
        }
        if let (Some(start), Some(end)) = (flow.start, flow.end) {
            self.window = Some(match self.window {
                Some((s, e)) => (s.min(start), e.max(end)),
                None => (start, end),
            });
        }
        let (node, client, to_node) = match (node_of(flow.srcaddr), node_of(flow.dstaddr)) {
            (None, None) => {
                self.left_out.no_node = self.left_out.no_node.saturating_add(1);
                return;
            }
            (Some(_), Some(_)) => {
                self.left_out.between_nodes = self.left_out.between_nodes.saturating_add(1);
                self.between_nodes_bytes = self.between_nodes_bytes.saturating_add(flow.bytes);
                return;
            }
            (None, Some(node)) => (node, flow.srcaddr, true),
            (Some(node), None) => (node, flow.dstaddr, false),
        };
        let interface = flow.interface_id.map(|i| self.interfaces.intern(i));
        let pair = self.pairs.entry((node, client)).or_default();
        match (flow.direction, interface) {
            (Some(direction), _) => {
                let (side, first) = if (direction == Direction::Ingress) == to_node {
                    (&mut pair.at_node, &mut pair.node_interface)
                } else {
                    (&mut pair.at_client, &mut pair.client_interface)
                };
                side.add(flow.bytes, 1);
                if first.is_none() {
                    *first = interface;
                }
            }
            (None, Some(interface)) => {
                pair.by_interfaces.add(flow.bytes, 1);
                self.by_interface
                    .entry((node, client, interface))
                    .or_default()
                    .add(flow.bytes, 1);
            }
            (None, None) => pair.at_node.add(flow.bytes, 1),
        }
    }

    /// Counts a NODATA or SKIPDATA record.
    pub fn no_data(&mut self) {
        self.records = self.records.saturating_add(1);
        self.left_out.no_data = self.left_out.no_data.saturating_add(1);
    }

    /// Counts a REJECT record.
    pub fn rejected(&mut self) {
        self.records = self.records.saturating_add(1);
        self.left_out.rejected = self.left_out.rejected.saturating_add(1);
    }

    /// Notes a line that did not parse (the first one is kept with its place).
    pub fn skip(&mut self, location: &str, line: u64, problem: String) {
        self.left_out.unparsed_lines = self.left_out.unparsed_lines.saturating_add(1);
        if self.first_skipped.is_none() {
            self.first_skipped = Some(FirstSkipped {
                location: location.to_string(),
                line,
                problem,
            });
        }
    }

    /// Adds another tally (another file's) to this one.
    pub fn merge(&mut self, other: Tally) {
        // The other's interface numbers, in this tally's numbering.
        let renumber: Vec<u32> = other
            .interfaces
            .names
            .iter()
            .map(|n| self.interfaces.intern(n))
            .collect();
        let mine = |id: Option<u32>| id.and_then(|i| renumber.get(i as usize).copied());
        for (key, pair) in other.pairs {
            let into = self.pairs.entry(key).or_default();
            into.at_node.merge(pair.at_node);
            into.at_client.merge(pair.at_client);
            into.by_interfaces.merge(pair.by_interfaces);
            if into.node_interface.is_none() {
                into.node_interface = mine(pair.node_interface);
            }
            if into.client_interface.is_none() {
                into.client_interface = mine(pair.client_interface);
            }
        }
        for ((node, client, interface), captured) in other.by_interface {
            let Some(interface) = mine(Some(interface)) else {
                continue;
            };
            self.by_interface
                .entry((node, client, interface))
                .or_default()
                .merge(captured);
        }
        self.records = self.records.saturating_add(other.records);
        self.left_out.merge(other.left_out);
        // The first in name order, whichever reader finished first.
        self.first_skipped = match (self.first_skipped.take(), other.first_skipped) {
            (Some(a), Some(b)) => Some(if (&b.location, b.line) < (&a.location, a.line) {
                b
            } else {
                a
            }),
            (a, b) => a.or(b),
        };
        self.between_nodes_bytes = self.between_nodes_bytes.saturating_add(other.between_nodes_bytes);
        self.window = match (self.window, other.window) {
            (Some((s1, e1)), Some((s2, e2))) => Some((s1.min(s2), e1.max(e2))),
            (a, b) => a.or(b),
        };
        self.latest_end = self.latest_end.max(other.latest_end);
    }

    /// Each client's bytes with each node, counted once (see the module's note).
    pub fn counted(&self) -> Count {
        // Per node and interface: distinct clients; the node's interface has the most.
        let mut clients_seen: HashMap<(u32, u32), u64> = HashMap::new();
        for (node, _, interface) in self.by_interface.keys() {
            *clients_seen.entry((*node, *interface)).or_default() += 1;
        }
        let mut node_interface: HashMap<u32, (u32, u64)> = HashMap::new();
        for ((node, interface), clients) in clients_seen {
            let best = node_interface.entry(node).or_insert((interface, clients));
            let better = clients > best.1
                || (clients == best.1 && self.interfaces.name(interface) < self.interfaces.name(best.0));
            if better {
                *best = (interface, clients);
            }
        }
        // Per pair, the interface that captured the most bytes of it (named for a pair the
        // node's interface never captured).
        let mut busiest: HashMap<(u32, IpAddr), (u32, u64)> = HashMap::new();
        for ((node, client, interface), captured) in &self.by_interface {
            let best = busiest.entry((*node, *client)).or_insert((*interface, captured.bytes));
            if captured.bytes > best.1 {
                *best = (*interface, captured.bytes);
            }
        }
        let name = |id: u32| self.interfaces.name(id).to_string();
        let (mut records, mut other_end) = (0u64, 0u64);
        let mut pairs: Vec<Counted> = Vec::with_capacity(self.pairs.len());
        for ((node, client), pair) in &self.pairs {
            // flow-direction: the node's end, else the client's.
            let (direction, direction_interface) = if pair.at_node.records > 0 {
                other_end = other_end.saturating_add(pair.at_client.records);
                (pair.at_node, pair.node_interface.or(pair.client_interface))
            } else {
                (pair.at_client, pair.client_interface)
            };
            // Interfaces: the node's interface, else every interface that captured the pair.
            let at_node_interface = node_interface.get(node).and_then(|(interface, _)| {
                self.by_interface
                    .get(&(*node, *client, *interface))
                    .map(|captured| (*interface, *captured))
            });
            let (by_interface, interface) = match at_node_interface {
                Some((interface, captured)) => {
                    other_end = other_end.saturating_add(pair.by_interfaces.records.saturating_sub(captured.records));
                    (captured, Some(interface))
                }
                None => (pair.by_interfaces, busiest.get(&(*node, *client)).map(|(i, _)| *i)),
            };
            records = records
                .saturating_add(direction.records)
                .saturating_add(by_interface.records);
            let bytes = direction.bytes.saturating_add(by_interface.bytes);
            if bytes > 0 {
                pairs.push(Counted {
                    node: *node as usize,
                    client: *client,
                    bytes,
                    interface: interface.or(direction_interface).map(name),
                });
            }
        }
        pairs.sort_by_key(|c| (c.node, c.client));
        Count {
            pairs,
            records,
            other_end,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2026-12-01 00:00:00 UTC, and the reader's clock four days later.
    const T0: u64 = 1_796_083_200;
    const NOW: u64 = T0 + 4 * 86_400;

    fn flow<'a>(src: &str, dst: &str, bytes: u64, interface: &'a str, direction: Option<Direction>) -> Flow<'a> {
        Flow {
            srcaddr: src.parse().unwrap(),
            dstaddr: dst.parse().unwrap(),
            bytes,
            start: Some(T0),
            end: Some(T0 + 60),
            interface_id: Some(interface),
            direction,
        }
    }

    fn node(ip: IpAddr) -> Option<u32> {
        (ip.to_string() == "10.0.1.10").then_some(0)
    }

    #[test]
    fn a_flow_seen_at_both_ends_counts_once() {
        let mut tally = Tally::new(NOW);
        // Two clients, each flow at the client's interface and at the node's (eni-node).
        for (client, eni) in [("10.0.1.5", "eni-c1"), ("10.0.2.5", "eni-c2")] {
            for at in [eni, "eni-node"] {
                tally.add(&flow(client, "10.0.1.10", 100, at, None), node);
                tally.add(&flow("10.0.1.10", client, 1000, at, None), node);
            }
        }
        let count = tally.counted();
        assert_eq!(count.pairs.iter().map(|c| c.bytes).collect::<Vec<_>>(), [1100, 1100]);
        assert_eq!(count.pairs[0].interface.as_deref(), Some("eni-node"));
        assert_eq!((count.records, count.other_end), (4, 4));

        // With flow-direction: ingress to the node and egress from it count; the rest does not.
        let mut tally = Tally::new(NOW);
        let c = "10.0.2.5";
        let n = "10.0.1.10";
        tally.add(&flow(c, n, 100, "eni-c2", Some(Direction::Egress)), node);
        tally.add(&flow(c, n, 100, "eni-node", Some(Direction::Ingress)), node);
        tally.add(&flow(n, c, 900, "eni-node", Some(Direction::Egress)), node);
        tally.add(&flow(n, c, 900, "eni-c2", Some(Direction::Ingress)), node);
        let count = tally.counted();
        assert_eq!(count.pairs[0].bytes, 1000);
        assert_eq!((count.records, count.other_end), (2, 2));
        assert_eq!(tally.window, Some((T0, T0 + 60)));
    }

    /// Flow logs on the clients' subnets only, with flow-direction: every record is the
    /// client's end, and each pair counts them (nothing is dropped).
    #[test]
    fn a_pair_seen_only_at_the_clients_end_counts_there() {
        let mut tally = Tally::new(NOW);
        let n = "10.0.1.10";
        for (c, eni) in [("10.0.2.5", "eni-c2"), ("10.0.3.5", "eni-c3")] {
            tally.add(&flow(c, n, 100, eni, Some(Direction::Egress)), node);
            tally.add(&flow(n, c, 900, eni, Some(Direction::Ingress)), node);
        }
        let count = tally.counted();
        assert_eq!(count.pairs.iter().map(|c| c.bytes).collect::<Vec<_>>(), [1000, 1000]);
        assert_eq!(count.pairs[1].interface.as_deref(), Some("eni-c3"));
        assert_eq!((count.records, count.other_end), (4, 0));

        // Without flow-direction, the same: each client's own interface.
        let mut tally = Tally::new(NOW);
        for (c, eni) in [("10.0.2.5", "eni-c2"), ("10.0.3.5", "eni-c3")] {
            tally.add(&flow(c, n, 100, eni, None), node);
            tally.add(&flow(n, c, 900, eni, None), node);
        }
        let count = tally.counted();
        assert_eq!(count.pairs.iter().map(|c| c.bytes).collect::<Vec<_>>(), [1000, 1000]);
        assert_eq!((count.records, count.other_end), (4, 0));
    }

    /// Merged tallies number their interfaces apart: the merge renames them.
    #[test]
    fn tallies_of_two_readers_merge_as_one() {
        let n = "10.0.1.10";
        let mut one = Tally::new(NOW);
        let mut two = Tally::new(NOW);
        two.add(&flow("10.0.9.9", "10.0.9.8", 5, "eni-other", None), node);
        for (tally, c) in [(&mut one, "10.0.2.5"), (&mut two, "10.0.3.5")] {
            tally.add(&flow(c, n, 100, "eni-node", None), node);
            tally.add(&flow(c, n, 100, &format!("eni-{c}").leak()[..], None), node);
        }
        let mut whole = Tally::new(NOW);
        for (c, eni) in [("10.0.2.5", "eni-10.0.2.5"), ("10.0.3.5", "eni-10.0.3.5")] {
            whole.add(&flow(c, n, 100, "eni-node", None), node);
            whole.add(&flow(c, n, 100, eni, None), node);
        }
        one.merge(two);
        assert_eq!(one.counted(), whole.counted());
        assert_eq!(one.left_out.no_node, 1);
        assert_eq!(one.records, 5);
    }

    /// A forged record cannot wrap a count or stretch the window: bytes beyond what a link
    /// carries in the record's window, windows longer than an hour, before 2015 or after now.
    #[test]
    fn impossible_records_are_left_out_and_counts_saturate() {
        let mut tally = Tally::new(NOW);
        let n = "10.0.1.10";
        let c = "10.0.2.5";
        tally.add(&flow(c, n, u64::MAX, "eni-node", None), node);
        tally.add(&flow(c, n, 2, "eni-node", None), node);
        let mut far = flow(c, n, 2, "eni-node", None);
        far.start = Some(u64::MAX - 60);
        far.end = Some(u64::MAX);
        tally.add(&far, node);
        let mut long = flow(c, n, 2, "eni-node", None);
        long.end = Some(T0 + LONGEST_WINDOW_SECONDS + 1);
        tally.add(&long, node);
        let mut early = flow(c, n, 2, "eni-node", None);
        early.start = Some(100);
        early.end = Some(160);
        tally.add(&early, node);
        let mut backwards = flow(c, n, 2, "eni-node", None);
        backwards.end = Some(T0 - 1);
        tally.add(&backwards, node);
        assert_eq!(tally.left_out.impossible, 5);
        assert_eq!(tally.counted().pairs[0].bytes, 2);
        assert_eq!(tally.window, Some((T0, T0 + 60)));

        // The most a link carries in 61 s is possible, and adds up exactly; sums saturate
        // rather than wrap.
        let mut tally = Tally::new(NOW);
        let most = LINK_BYTES_PER_SECOND * 61;
        for _ in 0..400_000 {
            tally.add(&flow(c, n, most, "eni-node", None), node);
        }
        assert_eq!(tally.left_out.impossible, 0);
        assert_eq!(tally.counted().pairs[0].bytes, most * 400_000);
        let mut captured = Captured {
            bytes: u64::MAX - 1,
            records: u64::MAX,
        };
        captured.add(2, 1);
        assert_eq!(
            captured,
            Captured {
                bytes: u64::MAX,
                records: u64::MAX
            }
        );
        let mut sum = LeftOut {
            no_node: u64::MAX,
            ..LeftOut::default()
        };
        sum.merge(LeftOut {
            no_node: 1,
            rejected: 1,
            ..LeftOut::default()
        });
        assert_eq!((sum.no_node, sum.total()), (u64::MAX, u64::MAX));
    }

    /// One pair on 100,000 interface ids (the quadratic case of a security review: 35 s in a
    /// release build when each record searched a list); a hash look-up each, well under 10 s
    /// in a debug build.
    #[test]
    fn many_interfaces_of_one_pair_take_linear_time() {
        let started = std::time::Instant::now();
        let names: Vec<String> = (0..100_000).map(|i| format!("eni-{i:08x}")).collect();
        let mut tally = Tally::new(NOW);
        for name in &names {
            tally.add(&flow("10.0.2.5", "10.0.1.10", 10, name, None), node);
        }
        let mut other = Tally::new(NOW);
        for name in names.iter().rev() {
            other.add(&flow("10.0.2.5", "10.0.1.10", 10, name, None), node);
        }
        tally.merge(other);
        let count = tally.counted();
        // One client on every interface: the node's is the smallest id, with 2 records.
        assert_eq!(count.pairs[0].bytes, 20);
        assert_eq!(count.pairs[0].interface.as_deref(), Some("eni-00000000"));
        assert_eq!((count.records, count.other_end), (2, 199_998));
        eprintln!(
            "200,000 records of one pair on 100,000 interfaces, merged and counted: {:?}",
            started.elapsed()
        );
        assert!(
            started.elapsed() < std::time::Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );
    }
}
