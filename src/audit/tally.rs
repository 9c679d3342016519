//! Counting flow records between clients and cache nodes, each flow once.
//!
//! With flow logs on for a whole VPC, one flow is captured at both ends: at the client's
//! interface and at the node's. A record counts only when it was captured at the node's:
//! - with `flow-direction`, a record arriving at a node (ingress, to the node) or leaving it
//!   (egress, from the node);
//! - without it, per client and node, the records of the node's interface: the interface that
//!   captured that node's flows with the most distinct clients (a client's interface sees one
//!   client, itself). A pair that the node's interface never captured counts the records of the
//!   interface that did (flow logs on the clients' subnets only).
//!
//! A tally is kept per file reader and merged; it holds one entry per client and node, never per
//! record, so memory stays flat however many records are read.

use std::collections::HashMap;
use std::net::IpAddr;

use super::flow_log::{Direction, Flow};

/// Bytes of one client with one node.
#[derive(Debug, Clone, Default)]
struct Pair {
    /// Bytes of records known to be captured at the node (by flow-direction), or of records
    /// with no interface to tell.
    at_node: u64,
    /// Bytes per capturing interface, for records without flow-direction.
    by_interface: Vec<(Box<str>, u64)>,
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

/// Records read, and the bytes of each client with each node.
#[derive(Debug, Clone, Default)]
pub struct Tally {
    pairs: HashMap<(u32, IpAddr), Pair>,
    /// Records read (flows, NODATA/SKIPDATA, rejected).
    pub records: u64,
    /// NODATA and SKIPDATA records (and records whose addresses or bytes are `-`).
    pub no_data: u64,
    /// REJECT records (not counted: nothing was delivered).
    pub rejected: u64,
    /// Lines that did not parse.
    pub skipped: u64,
    /// The first of them (in file name order, then line).
    pub first_skipped: Option<FirstSkipped>,
    /// Records captured at a client's interface, left out by flow-direction.
    pub other_side: u64,
    /// Bytes between two nodes (replication), not a client's.
    pub between_nodes_bytes: u64,
    /// The earliest start and latest end of the flow records (epoch seconds).
    pub window: Option<(u64, u64)>,
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
}

impl Tally {
    /// Adds one flow record. `node_of` gives a node's index for an address.
    pub fn add(&mut self, flow: &Flow<'_>, node_of: impl Fn(IpAddr) -> Option<u32>) {
        if let (Some(start), Some(end)) = (flow.start, flow.end) {
            self.window = Some(match self.window {
                Some((s, e)) => (s.min(start), e.max(end)),
                None => (start, end),
            });
        }
        let (node, client, to_node) = match (node_of(flow.srcaddr), node_of(flow.dstaddr)) {
            (None, None) => return,
            (Some(_), Some(_)) => {
                self.between_nodes_bytes += flow.bytes;
                return;
            }
            (None, Some(node)) => (node, flow.srcaddr, true),
            (Some(node), None) => (node, flow.dstaddr, false),
        };
        let pair = self.pairs.entry((node, client)).or_default();
        match (flow.direction, flow.interface_id) {
            (Some(direction), _) => {
                if (direction == Direction::Ingress) == to_node {
                    pair.at_node += flow.bytes;
                } else {
                    self.other_side += 1;
                }
            }
            (None, Some(interface)) => match pair.by_interface.iter_mut().find(|(i, _)| &**i == interface) {
                Some((_, bytes)) => *bytes += flow.bytes,
                None => pair.by_interface.push((interface.into(), flow.bytes)),
            },
            (None, None) => pair.at_node += flow.bytes,
        }
    }

    /// Notes a line that did not parse (the first one is kept with its place).
    pub fn skip(&mut self, location: &str, line: u64, problem: String) {
        self.skipped += 1;
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
        for (key, pair) in other.pairs {
            let mine = self.pairs.entry(key).or_default();
            mine.at_node += pair.at_node;
            for (interface, bytes) in pair.by_interface {
                match mine.by_interface.iter_mut().find(|(i, _)| *i == interface) {
                    Some((_, b)) => *b += bytes,
                    None => mine.by_interface.push((interface, bytes)),
                }
            }
        }
        self.records += other.records;
        self.no_data += other.no_data;
        self.rejected += other.rejected;
        // The first in name order, whichever reader finished first.
        self.first_skipped = match (self.first_skipped.take(), other.first_skipped) {
            (Some(a), Some(b)) => Some(if (&b.location, b.line) < (&a.location, a.line) {
                b
            } else {
                a
            }),
            (a, b) => a.or(b),
        };
        self.skipped += other.skipped;
        self.other_side += other.other_side;
        self.between_nodes_bytes += other.between_nodes_bytes;
        self.window = match (self.window, other.window) {
            (Some((s1, e1)), Some((s2, e2))) => Some((s1.min(s2), e1.max(e2))),
            (a, b) => a.or(b),
        };
    }

    /// Each client's bytes with each node, counted once (see the module's note).
    pub fn counted(&self) -> Vec<Counted> {
        // Per node: each interface's distinct clients.
        let mut clients_seen: HashMap<(u32, &str), u64> = HashMap::new();
        for ((node, _), pair) in &self.pairs {
            for (interface, _) in &pair.by_interface {
                *clients_seen.entry((*node, interface)).or_default() += 1;
            }
        }
        let mut node_interface: HashMap<u32, (&str, u64)> = HashMap::new();
        for ((node, interface), clients) in clients_seen {
            let best = node_interface.entry(node).or_insert((interface, clients));
            if clients > best.1 || (clients == best.1 && interface < best.0) {
                *best = (interface, clients);
            }
        }
        let mut counted: Vec<Counted> = self
            .pairs
            .iter()
            .map(|((node, client), pair)| {
                let at_node_interface = node_interface
                    .get(node)
                    .and_then(|(ni, _)| pair.by_interface.iter().find(|(i, _)| &**i == *ni));
                let by_interface = match at_node_interface {
                    Some((_, bytes)) => *bytes,
                    None => pair.by_interface.iter().map(|(_, b)| b).sum(),
                };
                Counted {
                    node: *node as usize,
                    client: *client,
                    bytes: pair.at_node + by_interface,
                }
            })
            .filter(|c| c.bytes > 0)
            .collect();
        counted.sort_by_key(|c| (c.node, c.client));
        counted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow<'a>(src: &str, dst: &str, bytes: u64, interface: &'a str, direction: Option<Direction>) -> Flow<'a> {
        Flow {
            srcaddr: src.parse().unwrap(),
            dstaddr: dst.parse().unwrap(),
            bytes,
            start: Some(100),
            end: Some(160),
            interface_id: Some(interface),
            direction,
        }
    }

    #[test]
    fn a_flow_seen_at_both_ends_counts_once() {
        let node = |ip: IpAddr| (ip.to_string() == "10.0.1.10").then_some(0);
        let mut tally = Tally::default();
        // Two clients, each flow at the client's interface and at the node's (eni-node).
        for (client, eni) in [("10.0.1.5", "eni-c1"), ("10.0.2.5", "eni-c2")] {
            for at in [eni, "eni-node"] {
                tally.add(&flow(client, "10.0.1.10", 100, at, None), node);
                tally.add(&flow("10.0.1.10", client, 1000, at, None), node);
            }
        }
        let counted = tally.counted();
        assert_eq!(counted.iter().map(|c| c.bytes).collect::<Vec<_>>(), [1100, 1100]);

        // With flow-direction: ingress to the node and egress from it count; the rest does not.
        let mut tally = Tally::default();
        tally.add(
            &flow("10.0.2.5", "10.0.1.10", 100, "eni-c2", Some(Direction::Egress)),
            node,
        );
        tally.add(
            &flow("10.0.2.5", "10.0.1.10", 100, "eni-node", Some(Direction::Ingress)),
            node,
        );
        tally.add(
            &flow("10.0.1.10", "10.0.2.5", 900, "eni-node", Some(Direction::Egress)),
            node,
        );
        tally.add(
            &flow("10.0.1.10", "10.0.2.5", 900, "eni-c2", Some(Direction::Ingress)),
            node,
        );
        assert_eq!(tally.counted()[0].bytes, 1000);
        assert_eq!(tally.other_side, 2);
        assert_eq!(tally.window, Some((100, 160)));
    }
}
