//! Counting flow records between clients and cache nodes, each flow once.
//!
//! A flow is one client with one node at one time. With flow logs on for a whole VPC it is
//! captured at both ends, at the client's interface and at the node's; with logs on some subnets
//! only, or turned on, off or moved while the window runs, at one end or the other. The rule,
//! the same in the CLI and in `--print-sql athena`:
//!
//! - **Records captured at the node's end always count.** A node may have several interfaces
//!   over time (an interface replaced keeps the node's address): each one's records count.
//! - **A record captured at the client's end counts unless the node's end captured the same
//!   client and node at an overlapping time.** Windows are half-open seconds `[start, end)`, at
//!   least one second long: windows that only touch do not overlap. Records without a time
//!   overlap every time.
//!
//! Which end captured a record:
//! - with `flow-direction`: a record arriving at the node (ingress, to the node) or leaving it
//!   (egress, from the node) was captured at the node, any other at the client;
//! - without it, by the interface that captured it, for that node: an interface that captured
//!   some record of this node at the node's end by `flow-direction` (a format changed during
//!   the window) is the node's; an interface that captured some record at a client's end by
//!   `flow-direction`, or flows with more than one node, is a client's; of the rest, one that
//!   captured this node's flows with two or more distinct clients is the node's (a client's
//!   interface sees one client, itself), and so is the one with the most distinct clients (ties
//!   to the smaller interface id: a node with a single client); any other is a client's;
//! - with neither (no interface-id either): at the node.
//!
//! Every record read is either counted or left out for a reason ([`LeftOut`]); counts saturate
//! instead of wrapping, and a record whose bytes no link could carry in its window, or whose
//! window no capture has, is left out as impossible. A tally is kept per file reader and merged.
//! What it holds grows with the records' distinct (client, node, interface, window) keys, not
//! with the bytes: consecutive records of one key (a request and its answer) share an entry,
//! so a day of a pair's minutes is about 1,440 entries of 40 bytes at each end. The time each
//! record was captured is what lets a flow be counted once when the coverage changes during
//! the window; an audit past one machine's memory belongs in Athena (`locality audit --athena`).

use std::collections::{HashMap, HashSet};
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

/// Which end captured a record, as far as the record itself says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CapturedAt {
    /// The node's end, by `flow-direction`.
    Node,
    /// The client's end, by `flow-direction`.
    Client,
    /// No `flow-direction`: told by the interface (see the module's note).
    ByInterface,
}

/// The interface number of a record without interface-id.
const NO_INTERFACE: u32 = u32::MAX;

/// Consecutive records of one client and node with the same window, interface and end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Segment {
    /// Half-open window `[start, stop)`, epoch seconds, at least a second long.
    start: u64,
    stop: u64,
    bytes: u64,
    records: u64,
    interface: u32,
    captured: CapturedAt,
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
    /// Records that started outside the days asked for (`--since`, `--until`).
    pub outside_window: u64,
}

impl LeftOut {
    /// Every reason, with its name in the JSON and the textfile, and how a person says it.
    pub fn reasons(&self) -> [(&'static str, u64, &'static str); 8] {
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
            ("outside_window", self.outside_window, "outside the days asked for"),
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
        self.outside_window = self.outside_window.saturating_add(other.outside_window);
    }
}

/// Records read, and the bytes of each client with each node.
#[derive(Debug, Clone, Default)]
pub struct Tally {
    interfaces: Interfaces,
    /// Per node and client, the records' windows.
    pairs: HashMap<(u32, IpAddr), Vec<Segment>>,
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
    /// The seconds of the days asked for, `[from, to)`: a record starting outside them is left
    /// out (`outside_window`).
    days: Option<(u64, u64)>,
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

/// What the figures are computed from, whichever source counted it: the file audit's tally
/// ([`Tally::counts`]) or Athena's rows (`super::athena_rows`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counts {
    /// Each client's bytes with each node, counted once.
    pub count: Count,
    /// Records read (lines that parsed).
    pub records: u64,
    /// Records left out, by reason (`other_end` included).
    pub left_out: LeftOut,
    /// The first line that did not parse, said for people.
    pub first_skipped: Option<String>,
    /// Bytes between two nodes.
    pub between_nodes_bytes: u64,
    /// The earliest start and latest end of the flow records.
    pub window: Option<(u64, u64)>,
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

    /// The same, counting only records that start in `[from, to)` (epoch seconds).
    pub fn within(mut self, days: Option<(u64, u64)>) -> Tally {
        self.days = days;
        self
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
        // Outside the days asked for first: whatever else is wrong with it, it was not asked for.
        if let (Some((from, to)), Some(start)) = (self.days, flow.start.or(flow.end)) {
            if !(from..to).contains(&start) {
                self.left_out.outside_window = self.left_out.outside_window.saturating_add(1);
                return;
            }
        }
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
        let interface = flow.interface_id.map_or(NO_INTERFACE, |i| self.interfaces.intern(i));
        let captured = match flow.direction {
            Some(direction) if (direction == Direction::Ingress) == to_node => CapturedAt::Node,
            Some(_) => CapturedAt::Client,
            None => CapturedAt::ByInterface,
        };
        // A record without a time overlaps every time.
        let (start, stop) = match (flow.start, flow.end) {
            (Some(start), Some(end)) => (start, end.max(start.saturating_add(1))),
            (Some(time), None) | (None, Some(time)) => (time, time.saturating_add(1)),
            (None, None) => (0, u64::MAX),
        };
        let segments = self.pairs.entry((node, client)).or_default();
        match segments.last_mut() {
            Some(last)
                if (last.start, last.stop, last.interface, last.captured) == (start, stop, interface, captured) =>
            {
                last.bytes = last.bytes.saturating_add(flow.bytes);
                last.records = last.records.saturating_add(1);
            }
            _ => segments.push(Segment {
                start,
                stop,
                bytes: flow.bytes,
                records: 1,
                interface,
                captured,
            }),
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
        for (key, mut segments) in other.pairs {
            for segment in &mut segments {
                if segment.interface != NO_INTERFACE {
                    segment.interface = renumber
                        .get(segment.interface as usize)
                        .copied()
                        .unwrap_or(NO_INTERFACE);
                }
            }
            self.pairs.entry(key).or_default().extend(segments);
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

    /// Which interfaces captured each node's flows at the node's end (see the module's note).
    fn node_interfaces(&self) -> HashSet<(u32, u32)> {
        // Per node and interface: distinct clients, and whether flow-direction said the node's
        // end; per interface: distinct nodes, and whether flow-direction said a client's end.
        let mut clients: HashMap<(u32, u32), (u64, bool)> = HashMap::new();
        let mut nodes: HashMap<u32, (u64, bool)> = HashMap::new();
        for ((node, _), segments) in &self.pairs {
            let mut seen: HashSet<u32> = HashSet::new();
            for segment in segments.iter().filter(|s| s.interface != NO_INTERFACE) {
                let at = clients.entry((*node, segment.interface)).or_default();
                if seen.insert(segment.interface) {
                    at.0 += 1;
                }
                at.1 |= segment.captured == CapturedAt::Node;
                nodes.entry(segment.interface).or_default().1 |= segment.captured == CapturedAt::Client;
            }
        }
        // Distinct nodes per interface.
        for (_, interface) in clients.keys() {
            nodes.entry(*interface).or_default().0 += 1;
        }
        let candidate = |interface: u32| {
            nodes
                .get(&interface)
                .is_some_and(|(n, client_end)| *n == 1 && !client_end)
        };
        // Per node, the candidate with the most distinct clients (ties: the smaller id).
        let mut busiest: HashMap<u32, (u32, u64)> = HashMap::new();
        for ((node, interface), (count, _)) in &clients {
            if !candidate(*interface) {
                continue;
            }
            let best = busiest.entry(*node).or_insert((*interface, *count));
            let better = *count > best.1
                || (*count == best.1 && self.interfaces.name(*interface) < self.interfaces.name(best.0));
            if better {
                *best = (*interface, *count);
            }
        }
        clients
            .iter()
            .filter(|((node, interface), (count, node_end))| {
                *node_end
                    || (candidate(*interface)
                        && (*count >= 2 || busiest.get(node).is_some_and(|(best, _)| best == interface)))
            })
            .map(|(key, _)| *key)
            .collect()
    }

    /// What the figures are computed from.
    pub fn counts(&self) -> Counts {
        let count = self.counted();
        let mut left_out = self.left_out;
        left_out.other_end = count.other_end;
        Counts {
            count,
            records: self.records,
            left_out,
            first_skipped: self
                .first_skipped
                .as_ref()
                .map(|f| format!("{}, line {}: {}", f.location, f.line, f.problem)),
            between_nodes_bytes: self.between_nodes_bytes,
            window: self.window,
        }
    }

    /// Each client's bytes with each node, counted once (see the module's note).
    pub fn counted(&self) -> Count {
        let node_interfaces = self.node_interfaces();
        let name = |id: u32| (id != NO_INTERFACE).then(|| self.interfaces.name(id).to_string());
        let (mut records, mut other_end) = (0u64, 0u64);
        let mut pairs: Vec<Counted> = Vec::with_capacity(self.pairs.len());
        for ((node, client), segments) in &self.pairs {
            let at_node = |segment: &Segment| match segment.captured {
                CapturedAt::Node => true,
                CapturedAt::Client => false,
                CapturedAt::ByInterface => {
                    segment.interface == NO_INTERFACE || node_interfaces.contains(&(*node, segment.interface))
                }
            };
            // The node's end: its windows merged into disjoint islands, in time order.
            let mut spans: Vec<(u64, u64)> = segments
                .iter()
                .filter(|s| at_node(s))
                .map(|s| (s.start, s.stop))
                .collect();
            spans.sort_unstable();
            let mut islands: Vec<(u64, u64)> = Vec::new();
            for (start, stop) in spans {
                match islands.last_mut() {
                    Some(last) if start <= last.1 => last.1 = last.1.max(stop),
                    _ => islands.push((start, stop)),
                }
            }
            let covered = |segment: &Segment| {
                // The first island ending after the segment starts; it overlaps when it starts
                // before the segment stops.
                let at = islands.partition_point(|island| island.1 <= segment.start);
                islands.get(at).is_some_and(|island| island.0 < segment.stop)
            };
            let mut bytes = 0u64;
            // Bytes per interface: the node's end first, then the client's.
            let mut by_interface: HashMap<(bool, u32), u64> = HashMap::new();
            for segment in segments {
                let node_end = at_node(segment);
                if !node_end && covered(segment) {
                    other_end = other_end.saturating_add(segment.records);
                    continue;
                }
                records = records.saturating_add(segment.records);
                bytes = bytes.saturating_add(segment.bytes);
                let sum = by_interface.entry((node_end, segment.interface)).or_default();
                *sum = sum.saturating_add(segment.bytes);
            }
            if bytes > 0 {
                // The interface named: the node's end's busiest (most bytes, ties to the smaller
                // id), else the client's end's.
                let interface = by_interface
                    .iter()
                    .filter(|((_, interface), _)| *interface != NO_INTERFACE)
                    .max_by(|((end_a, a), bytes_a), ((end_b, b), bytes_b)| {
                        (end_a, bytes_a)
                            .cmp(&(end_b, bytes_b))
                            .then_with(|| self.interfaces.name(*b).cmp(self.interfaces.name(*a)))
                    })
                    .and_then(|((_, interface), _)| name(*interface));
                pairs.push(Counted {
                    node: *node as usize,
                    client: *client,
                    bytes,
                    interface,
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
