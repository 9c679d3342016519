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
//!   client and node at a time that can be the same.** A record's `[start, end]` is closed: both
//!   are seconds with packets (AWS's `end` is the second of the last packet), so records that
//!   share a second overlap; records that only follow each other do not. Records without a time
//!   overlap every time. AWS stamps each interface's records on its own, up to
//!   [`LATENESS_SECONDS`] after the packets: so a client's record is also the node's when one of
//!   the pair's node-end records lies within that lateness of it **and the node's end was
//!   capturing** at the client record's first and last seconds (some record of the node, with
//!   any client, spans each). Without that condition a node whose flow log starts or stops
//!   would take the client's records of the minute before or after, which nothing else
//!   captured; with it, the two ends of a flow whose clocks differ are one flow. Where the node's
//!   capture itself begins or ends (a log turned on, a node gone, the first and last minute of
//!   what is read), records whose clocks differ may still count at both ends.
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
//! A record outside the days asked for is left out (`outside_window`) and still held, never
//! counted, to match the other end of its flow: a flow across midnight counts in one day's run.
//!
//! Every record read is either counted or left out for a reason ([`LeftOut`]); counts saturate
//! instead of wrapping, and a record whose bytes no link could carry in its window, or whose
//! window no capture has, is left out as impossible. A tally is kept per file reader and merged.
//!
//! **Memory.** It is not flat: it grows with the records' distinct (client, node, window,
//! interface, end) keys, never with the bytes or with records that repeat a key. Each key is an
//! entry of 48 bytes in one list; when the list is full it is sorted and entries of one key are
//! merged, and it grows by half only when they still fill half of it, so it holds at most three
//! times the distinct keys. A day of a pair's minutes is about 1,440 entries at each end
//! (140 kB); a client seen once is one entry. Interface ids are stored once, in one string.
//! Counting ([`Tally::counted`]) adds about 60 bytes a pair and 12 bytes a node-end entry (when
//! each node's end was capturing, merged in place), and the report keeps nothing per
//! client, so the audit's peak is under 300 bytes a distinct client (`scripts/bench
//! --audit-memory` measures it). Past `--max-clients` distinct clients or interface ids
//! ([`DEFAULT_MAX_CLIENTS`]) the tally holds nothing more and says so ([`TooMany`]): a sender
//! of many addresses (one IPv6 /64 is enough) stops the audit with a sentence, not an abort.
//! An audit past one machine's memory belongs in Athena (`locality audit --athena`).

use std::net::IpAddr;
use std::sync::Arc;

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
/// How late AWS may stamp a record's `start` and `end` after the packets (VPC Flow Logs: "up to
/// 60 seconds after the packet was transmitted or received on the network interface").
pub const LATENESS_SECONDS: u32 = 60;

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

/// The default of `--max-clients`: distinct clients (and distinct interface ids) one audit
/// holds, at about 300 bytes each at most (600 MiB for 2 million).
pub const DEFAULT_MAX_CLIENTS: u64 = 2_000_000;

/// Entries below which the tally only grows (compacting a small list gains nothing).
const COMPACT_FROM: usize = 1 << 12;

/// Consecutive records of one client and node with the same window, interface and end: 48
/// bytes, the unit of the tally's memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Entry {
    /// The client's address: IPv6 octets, or an IPv4 address in the last four (bit 0 of `flags`).
    client: [u8; 16],
    bytes: u64,
    node: u32,
    /// Half-open window `[start, stop)`, epoch seconds, at least a second long; `[0, u32::MAX)`
    /// for a record without a time (it overlaps every time).
    start: u32,
    stop: u32,
    interface: u32,
    records: u32,
    /// Bit 0: the client is IPv4; bits 1–2: [`CapturedAt`]; bit 3: outside the days asked for
    /// (a record that only tells whether the other end of a flow was captured: never counted).
    flags: u8,
}

impl Entry {
    fn new(client: IpAddr, node: u32, (start, stop): (u32, u32), interface: u32, captured: CapturedAt) -> Entry {
        let (octets, v4) = match client {
            IpAddr::V4(v4) => (v4.to_ipv6_mapped().octets(), 1),
            IpAddr::V6(v6) => (v6.octets(), 0),
        };
        let captured = match captured {
            CapturedAt::Node => 0,
            CapturedAt::Client => 1,
            CapturedAt::ByInterface => 2,
        };
        Entry {
            client: octets,
            bytes: 0,
            node,
            start,
            stop,
            interface,
            records: 0,
            flags: v4 | captured << 1,
        }
    }

    /// Outside the days asked for: it matches the other end of a flow, and is never counted.
    fn context(&self) -> bool {
        self.flags & 8 != 0
    }

    fn client(&self) -> IpAddr {
        let v6 = std::net::Ipv6Addr::from(self.client);
        match (self.flags & 1 == 1, v6.to_ipv4_mapped()) {
            (true, Some(v4)) => IpAddr::V4(v4),
            _ => IpAddr::V6(v6),
        }
    }

    fn captured(&self) -> CapturedAt {
        match (self.flags >> 1) & 3 {
            0 => CapturedAt::Node,
            1 => CapturedAt::Client,
            _ => CapturedAt::ByInterface,
        }
    }

    /// The order of the tally: by client (IPv4 first, as `IpAddr` orders), node, window,
    /// interface and end (whole numbers, so that comparing two keys is a few instructions).
    fn key(&self) -> (u8, u128, u128, u8) {
        (
            !self.flags & 1,
            u128::from_be_bytes(self.client),
            u128::from(self.node) << 96
                | u128::from(self.start) << 64
                | u128::from(self.stop) << 32
                | u128::from(self.interface),
            self.flags >> 1,
        )
    }

    fn same_client(&self, other: &Entry) -> bool {
        self.client == other.client && self.flags & 1 == other.flags & 1
    }

    fn same_pair(&self, other: &Entry) -> bool {
        self.same_client(other) && self.node == other.node
    }

    /// Adds `other` (of the same key) into this one, unless its record count would overflow.
    fn absorb(&mut self, other: &Entry) -> bool {
        match self.records.checked_add(other.records) {
            Some(records) if self.key() == other.key() => {
                self.records = records;
                self.bytes = self.bytes.saturating_add(other.bytes);
                true
            }
            _ => false,
        }
    }
}

/// Interface ids, each stored once (in one string) and named by a number.
#[derive(Debug, Clone, Default)]
struct Interfaces {
    table: hashbrown::HashTable<u32>,
    hasher: std::hash::RandomState,
    text: String,
    /// Where each name ends in `text` (it starts where the one before ends).
    ends: Vec<usize>,
}

impl Interfaces {
    fn intern(&mut self, name: &str) -> u32 {
        use std::hash::BuildHasher as _;
        let Interfaces {
            table,
            hasher,
            text,
            ends,
        } = self;
        let hash = hasher.hash_one(name);
        if let Some(id) = table.find(hash, |id| Self::slice(text, ends, *id) == name) {
            return *id;
        }
        let id = u32::try_from(ends.len()).unwrap_or(NO_INTERFACE - 1);
        text.push_str(name);
        ends.push(text.len());
        table.insert_unique(hash, id, |id| hasher.hash_one(Self::slice(text, ends, *id)));
        id
    }

    fn slice<'a>(text: &'a str, ends: &[usize], id: u32) -> &'a str {
        let at = id as usize;
        let start = if at == 0 {
            0
        } else {
            ends.get(at - 1).copied().unwrap_or(0)
        };
        let end = ends.get(at).copied().unwrap_or(start);
        text.get(start..end).unwrap_or("")
    }

    fn name(&self, id: u32) -> &str {
        Self::slice(&self.text, &self.ends, id)
    }

    fn len(&self) -> usize {
        self.ends.len()
    }

    fn names(&self) -> impl Iterator<Item = &str> {
        (0..self.ends.len()).map(|id| self.name(id as u32))
    }
}

/// The default of `--max-entries`: the entries the tallies of one audit hold together, lists'
/// spare room included (48 bytes each: 768 MB).
pub const DEFAULT_MAX_ENTRIES: u64 = 16_000_000;

/// What the tallies of one audit may hold together, in entries of their lists (`--max-entries`),
/// shared by the reader threads: a list grows only when the room it takes fits, and once one
/// tally is refused every other stops holding too (so 8 threads stop at the bound, not at 8
/// times it).
#[derive(Debug)]
pub struct EntryBudget {
    held: std::sync::atomic::AtomicU64,
    max: u64,
    tripped: std::sync::atomic::AtomicBool,
}

impl EntryBudget {
    /// A budget of `max` entries.
    pub fn new(max: u64) -> Arc<EntryBudget> {
        Arc::new(EntryBudget {
            held: std::sync::atomic::AtomicU64::new(0),
            max,
            tripped: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// Takes `extra` entries of room; `Err` (the total it would have made) past the bound.
    fn take(&self, extra: u64) -> Result<(), u64> {
        use std::sync::atomic::Ordering::SeqCst;
        let total = self.held.fetch_add(extra, SeqCst).saturating_add(extra);
        if total > self.max {
            self.held.fetch_sub(extra, SeqCst);
            self.tripped.store(true, SeqCst);
            return Err(total);
        }
        Ok(())
    }

    /// Gives back `entries` of room.
    fn give_back(&self, entries: u64) {
        let _ = self.held.fetch_update(
            std::sync::atomic::Ordering::SeqCst,
            std::sync::atomic::Ordering::SeqCst,
            |held| Some(held.saturating_sub(entries)),
        );
    }

    fn tripped(&self) -> bool {
        self.tripped.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// More distinct clients or interface ids than `--max-clients`, or more entries than
/// `--max-entries`: what the tally stopped at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooMany {
    /// `clients` or `interface ids`.
    pub what: &'static str,
    /// How many were counted when it stopped.
    pub seen: u64,
    /// The cap.
    pub cap: u64,
}

impl TooMany {
    /// The sentence: the cap, and what to do.
    pub fn said(&self) -> String {
        if self.what == ENTRIES {
            return format!(
                "more than {} entries held for the records ({} asked for when the audit stopped; --max-entries {}): \
                 each distinct client, node, window and interface takes 48 bytes (a record that repeats one takes none); \
                 run the audit in Athena (--athena), narrow the records (--since/--until, a day's prefix), or raise --max-entries",
                self.cap, self.seen, self.cap
            );
        }
        format!(
            "more than {} distinct {} in the records ({} seen when the audit stopped; --max-clients {}): \
             one machine's memory holds about 300 bytes for each; run the audit in Athena (--athena), \
             narrow the records (--since/--until, a day's prefix), or raise --max-clients",
            self.cap, self.what, self.seen, self.cap
        )
    }
}

/// [`TooMany::what`] for the entries' bound.
const ENTRIES: &str = "entries";

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
#[derive(Debug, Clone)]
pub struct Tally {
    interfaces: Interfaces,
    /// The records' entries; from time to time sorted by [`Entry::key`] and merged.
    entries: Vec<Entry>,
    /// Whether `entries` is sorted and merged.
    compacted: bool,
    /// The last compaction freed less than a quarter of the list: the next time it is full it
    /// grows without one (mostly distinct entries: a sort that frees nothing is the audit's
    /// largest cost).
    skip_compaction: bool,
    /// The most distinct clients (and interface ids) held (`--max-clients`).
    max_clients: u64,
    /// Set when they went past it: nothing more is held.
    too_many: Option<TooMany>,
    /// The room of all the audit's tallies, shared (`--max-entries`); `None`: unbounded.
    budget: Option<Arc<EntryBudget>>,
    /// The room of `entries` taken from `budget`.
    accounted: u64,
    /// The file and line this tally read last (set at the end of each file): where a cap passed
    /// only once the readers' tallies are merged is said.
    pub last_read: Option<(String, u64)>,
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

impl Default for Tally {
    fn default() -> Tally {
        Tally {
            interfaces: Interfaces::default(),
            entries: Vec::new(),
            compacted: true,
            skip_compaction: false,
            max_clients: DEFAULT_MAX_CLIENTS,
            too_many: None,
            budget: None,
            accounted: 0,
            last_read: None,
            records: 0,
            left_out: LeftOut::default(),
            first_skipped: None,
            between_nodes_bytes: 0,
            window: None,
            latest_end: 0,
            days: None,
        }
    }
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
    /// pair), when the format has interface-id (shared: one node's interface names many pairs).
    pub interface: Option<Arc<str>>,
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
    /// Per client and node, sorted by client then node.
    pub pairs: Vec<Counted>,
    /// Records counted.
    pub records: u64,
    /// Records of the other end, not counted.
    pub other_end: u64,
    /// Bytes counted at a client's end while the node's end was capturing and saw nothing of
    /// that client then: a client address that stands for others (EKS pods behind their node's
    /// primary address, without `pkt-srcaddr`/`pkt-dstaddr`) is counted twice there.
    pub client_end_only_bytes: u64,
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

    /// The same, holding at most `max_clients` distinct clients and as many interface ids.
    pub fn holding(mut self, max_clients: u64) -> Tally {
        self.max_clients = max_clients;
        self
    }

    /// The same, its lists' room taken from `budget` (shared by the audit's tallies).
    pub fn sharing(mut self, budget: &Arc<EntryBudget>) -> Tally {
        self.budget = Some(Arc::clone(budget));
        self
    }

    /// Takes the room of `capacity` entries (the list's new capacity) from the budget:
    /// `false`, and the tally stops holding, when it does not fit or another tally was refused.
    fn room_for(&mut self, capacity: usize) -> bool {
        let Some(budget) = &self.budget else {
            return true;
        };
        let extra = (capacity as u64).saturating_sub(self.accounted);
        let refused = if budget.tripped() {
            Some(
                budget
                    .held
                    .load(std::sync::atomic::Ordering::SeqCst)
                    .saturating_add(extra),
            )
        } else {
            budget.take(extra).err()
        };
        if let Some(total) = refused {
            let cap = budget.max;
            self.too_many.get_or_insert(TooMany {
                what: ENTRIES,
                seen: total,
                cap,
            });
            return false;
        }
        self.accounted += extra;
        true
    }

    /// Whether the records went past `--max-clients` (then nothing more is held, and the
    /// figures would be wrong: the audit stops with [`TooMany::said`]).
    pub fn too_many(&self) -> Option<TooMany> {
        self.too_many
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
        // It is still held, never counted, when it is a possible record of a client with a
        // node: the other end of a flow across midnight (a record starting at 23:59:50, the
        // other end's at 00:00:20) is matched with it, so that a flow counts in one day's run
        // only (issue 61, item 6).
        if let (Some((from, to)), Some(start)) = (self.days, flow.start.or(flow.end)) {
            if !(from..to).contains(&start) {
                self.left_out.outside_window = self.left_out.outside_window.saturating_add(1);
                if self.possible(flow) {
                    self.hold(flow, &node_of, true);
                }
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
        self.hold(flow, &node_of, false);
    }

    /// Holds a record of a client with a node as an entry (`context`: outside the days, held
    /// only to match the other end); counts the rest as left out.
    fn hold(&mut self, flow: &Flow<'_>, node_of: &impl Fn(IpAddr) -> Option<u32>, context: bool) {
        let (node, client, to_node) = match (node_of(flow.srcaddr), node_of(flow.dstaddr)) {
            (None, None) => {
                if !context {
                    self.left_out.no_node = self.left_out.no_node.saturating_add(1);
                }
                return;
            }
            (Some(_), Some(_)) => {
                if !context {
                    self.left_out.between_nodes = self.left_out.between_nodes.saturating_add(1);
                    self.between_nodes_bytes = self.between_nodes_bytes.saturating_add(flow.bytes);
                }
                return;
            }
            (None, Some(node)) => (node, flow.srcaddr, true),
            (Some(node), None) => (node, flow.dstaddr, false),
        };
        if self.too_many.is_some() || (self.budget.as_ref().is_some_and(|b| b.tripped()) && !self.room_for(0)) {
            return;
        }
        let interface = match flow.interface_id {
            None => NO_INTERFACE,
            Some(name) => {
                let id = self.interfaces.intern(name);
                if self.interfaces.len() as u64 > self.max_clients {
                    self.too_many = Some(TooMany {
                        what: "interface ids",
                        seen: self.interfaces.len() as u64,
                        cap: self.max_clients,
                    });
                    return;
                }
                id
            }
        };
        let captured = match flow.direction {
            Some(direction) if (direction == Direction::Ingress) == to_node => CapturedAt::Node,
            Some(_) => CapturedAt::Client,
            None => CapturedAt::ByInterface,
        };
        // A record without a time overlaps every time. (Possible times end within a day of
        // now: seconds fit 32 bits until 2106; beyond, they are held at the last second.)
        let second = |t: u64| u32::try_from(t).unwrap_or(u32::MAX - 1);
        let window = match (flow.start, flow.end) {
            // Closed seconds [start, end], held as [start, end + 1).
            (Some(start), Some(end)) => (second(start), second(end.max(start).saturating_add(1))),
            (Some(time), None) | (None, Some(time)) => (second(time), second(time.saturating_add(1))),
            (None, None) => (0, u32::MAX),
        };
        let mut entry = Entry::new(client, node, window, interface, captured);
        if context {
            entry.flags |= 8;
        }
        entry.bytes = flow.bytes;
        entry.records = 1;
        // Consecutive records of one key (a request and its answer) share an entry.
        if let Some(last) = self.entries.last_mut() {
            if last.absorb(&entry) {
                return;
            }
        }
        if self.entries.len() == self.entries.capacity() && self.entries.len() >= COMPACT_FROM {
            let before = self.entries.len();
            if std::mem::take(&mut self.skip_compaction) {
                // Grown by half instead, once: the last compaction left more than three
                // quarters of a list of C, so 2.25 C is still at most three times the distinct
                // entries, and the next fill compacts again.
            } else {
                self.compact();
                if self.too_many.is_some() {
                    return;
                }
                self.skip_compaction = (before - self.entries.len()) * 4 < before;
            }
            // Room for a half more when the merged entries fill half of it: the list holds at
            // most three times the distinct entries, and at least as many records arrive
            // between two compactions as there are distinct entries.
            let (len, capacity) = (self.entries.len(), self.entries.capacity());
            if len.saturating_mul(2) > capacity {
                if !self.room_for(capacity + capacity / 2 + 1) {
                    return;
                }
                self.entries.reserve_exact(capacity / 2 + 1);
            }
        } else if self.entries.len() == self.entries.capacity() && !self.room_for((self.entries.capacity() * 2).max(4))
        {
            return;
        }
        self.entries.push(entry);
        self.compacted = false;
    }

    /// Sorts the entries, merges those of one key, and checks the clients against the cap.
    fn compact(&mut self) {
        if !self.compacted {
            // A stable sort finds the part sorted at the last compaction as one run and
            // merges the new entries into it (its scratch is half the entries, for a moment).
            self.entries.sort_by_key(Entry::key);
            self.entries.dedup_by(|next, kept| kept.absorb(next));
            self.compacted = true;
        }
        if self.too_many.is_none() {
            let clients = self.entries.chunk_by(Entry::same_client).count() as u64;
            if clients > self.max_clients {
                self.too_many = Some(TooMany {
                    what: "clients",
                    seen: clients,
                    cap: self.max_clients,
                });
            }
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

    /// Adds another tally (another file's) to this one, and checks the cap
    /// ([`Tally::too_many`]) on the whole.
    pub fn merge(&mut self, other: Tally) {
        if other.last_read.is_some() {
            self.last_read.clone_from(&other.last_read);
        }
        // The other's interface numbers, in this tally's numbering.
        let renumber: Vec<u32> = other.interfaces.names().map(|n| self.interfaces.intern(n)).collect();
        let mut entries = other.entries;
        for entry in &mut entries {
            if entry.interface != NO_INTERFACE {
                entry.interface = renumber.get(entry.interface as usize).copied().unwrap_or(NO_INTERFACE);
            }
        }
        // The other's room comes with its entries (kept as they are, or given back once copied).
        let other_accounted = other.accounted;
        if self.entries.is_empty() {
            if let Some(budget) = &self.budget {
                budget.give_back(self.accounted);
            }
            self.accounted = other_accounted;
            self.entries = entries;
        } else {
            let needed = self.entries.len() + entries.len();
            if needed > self.entries.capacity() {
                // (Past the bound: the entries are merged still, and the audit stops with the
                // sentence; the room is not refused here, where the other's is given back.)
                let _ = self.room_for(needed);
            }
            self.entries.extend_from_slice(&entries);
            drop(entries);
            if let Some(budget) = &self.budget {
                budget.give_back(other_accounted);
            }
        }
        self.compacted = false;
        self.too_many = self.too_many.or(other.too_many);
        if self.too_many.is_none() && self.interfaces.len() as u64 > self.max_clients {
            self.too_many = Some(TooMany {
                what: "interface ids",
                seen: self.interfaces.len() as u64,
                cap: self.max_clients,
            });
        }
        self.compact();
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

    /// Which interfaces captured each node's flows at the node's end (see the module's note),
    /// as `(node, interface)`, sorted. The entries must be compacted.
    fn node_interfaces(&self) -> Vec<(u32, u32)> {
        // Per pair, each interface once (with whether flow-direction said the node's end): a
        // (node, interface)'s distinct clients are its tuples.
        let mut tuples: Vec<(u32, u32, bool)> = Vec::new();
        let mut scratch: Vec<(u32, u32, bool)> = Vec::new();
        // Per interface: whether flow-direction said a client's end.
        let mut client_end = vec![false; self.interfaces.len()];
        for pair in self.entries.chunk_by(Entry::same_pair) {
            scratch.clear();
            for entry in pair.iter().filter(|e| e.interface != NO_INTERFACE) {
                scratch.push((entry.node, entry.interface, entry.captured() == CapturedAt::Node));
                if entry.captured() == CapturedAt::Client {
                    if let Some(flag) = client_end.get_mut(entry.interface as usize) {
                        *flag = true;
                    }
                }
            }
            scratch.sort_unstable();
            scratch.dedup_by(|next, kept| {
                let same = (next.0, next.1) == (kept.0, kept.1);
                kept.2 |= same && next.2;
                same
            });
            tuples.extend_from_slice(&scratch);
        }
        tuples.sort_unstable();
        // Per (node, interface): distinct clients, and whether some record said the node's end.
        let mut per: Vec<(u32, u32, u64, bool)> = Vec::new();
        for (node, interface, node_end) in tuples {
            match per.last_mut() {
                Some(last) if (last.0, last.1) == (node, interface) => {
                    last.2 += 1;
                    last.3 |= node_end;
                }
                _ => per.push((node, interface, 1, node_end)),
            }
        }
        // Distinct nodes per interface; a candidate has one, and never a client's end.
        let mut nodes = vec![0u32; self.interfaces.len()];
        for (_, interface, _, _) in &per {
            if let Some(n) = nodes.get_mut(*interface as usize) {
                *n = n.saturating_add(1);
            }
        }
        let candidate = |interface: u32| {
            let at = interface as usize;
            nodes.get(at) == Some(&1) && !client_end.get(at).copied().unwrap_or(false)
        };
        let mut chosen = Vec::new();
        for node in per.chunk_by(|a, b| a.0 == b.0) {
            // The candidate with the most distinct clients (ties: the smaller id).
            let busiest = node
                .iter()
                .filter(|(_, interface, _, _)| candidate(*interface))
                .max_by(|a, b| {
                    a.2.cmp(&b.2)
                        .then_with(|| self.interfaces.name(b.1).cmp(self.interfaces.name(a.1)))
                })
                .map(|(_, interface, _, _)| *interface);
            for (n, interface, clients, node_end) in node {
                if *node_end || (candidate(*interface) && (*clients >= 2 || busiest == Some(*interface))) {
                    chosen.push((*n, *interface));
                }
            }
        }
        chosen
    }

    /// What the figures are computed from.
    pub fn counts(&mut self) -> Counts {
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

    /// Each client's bytes with each node, counted once (see the module's note). Compacts the
    /// entries first.
    pub fn counted(&mut self) -> Count {
        self.compact();
        let node_interfaces = self.node_interfaces();
        // Each interface's name, made once for all the pairs it names.
        let mut names: Vec<Option<Arc<str>>> = vec![None; self.interfaces.len()];
        let (mut records, mut other_end, mut client_end_only) = (0u64, 0u64, 0u64);
        let pair_count = self.entries.chunk_by(Entry::same_pair).count();
        let mut pairs: Vec<Counted> = Vec::with_capacity(pair_count);
        let at_node = |entry: &Entry| match entry.captured() {
            CapturedAt::Node => true,
            CapturedAt::Client => false,
            CapturedAt::ByInterface => {
                entry.interface == NO_INTERFACE || node_interfaces.binary_search(&(entry.node, entry.interface)).is_ok()
            }
        };
        // When each node's end was capturing: the windows of every record captured there, with
        // any client, merged into disjoint islands per node.
        let mut capture: Vec<(u32, u32, u32)> = self
            .entries
            .iter()
            .filter(|e| at_node(e))
            .map(|e| (e.node, e.start, e.stop))
            .collect();
        capture.sort_unstable();
        capture.dedup_by(|next, kept| {
            let merge = next.0 == kept.0 && next.1 <= kept.2;
            if merge {
                kept.2 = kept.2.max(next.2);
            }
            merge
        });
        let capturing = |node: u32, second: u32| {
            let at = capture.partition_point(|c| (c.0, c.2) <= (node, second));
            capture.get(at).is_some_and(|c| c.0 == node && c.1 <= second)
        };
        let (mut spans, mut islands, mut by_interface) = (Vec::new(), Vec::new(), Vec::new());
        for segments in self.entries.chunk_by(Entry::same_pair) {
            let node = segments[0].node;
            // The node's end: its windows merged into disjoint islands, in time order.
            spans.clear();
            spans.extend(segments.iter().filter(|e| at_node(e)).map(|e| (e.start, e.stop)));
            spans.sort_unstable();
            islands.clear();
            for &(start, stop) in &spans {
                match islands.last_mut() {
                    Some((_, last_stop)) if start <= *last_stop => *last_stop = (*last_stop).max(stop),
                    _ => islands.push((start, stop)),
                }
            }
            let covered = |entry: &Entry| {
                // The first island ending after the entry starts; it overlaps when it starts
                // before the entry stops.
                let at = islands.partition_point(|island: &(u32, u32)| island.1 <= entry.start);
                if islands.get(at).is_some_and(|island| island.0 < entry.stop) {
                    return true;
                }
                // Within the lateness of an island, while the node's end was capturing.
                let late = LATENESS_SECONDS;
                let at = islands.partition_point(|island: &(u32, u32)| island.1.saturating_add(late) <= entry.start);
                islands
                    .get(at)
                    .is_some_and(|island| island.0 < entry.stop.saturating_add(late))
                    && capturing(node, entry.start)
                    && capturing(node, entry.stop.saturating_sub(1))
            };
            let mut bytes = 0u64;
            // Bytes per interface: the node's end, then the client's.
            by_interface.clear();
            for entry in segments {
                // Outside the days: it matched the other end (in the islands above), no more.
                if entry.context() {
                    continue;
                }
                let node_end = at_node(entry);
                if !node_end && covered(entry) {
                    other_end = other_end.saturating_add(u64::from(entry.records));
                    continue;
                }
                records = records.saturating_add(u64::from(entry.records));
                bytes = bytes.saturating_add(entry.bytes);
                if !node_end && capturing(node, entry.start) && capturing(node, entry.stop.saturating_sub(1)) {
                    client_end_only = client_end_only.saturating_add(entry.bytes);
                }
                if entry.interface != NO_INTERFACE {
                    by_interface.push((node_end, entry.interface, entry.bytes));
                }
            }
            if bytes == 0 {
                continue;
            }
            // The interface named: the node's end's busiest (most bytes, ties to the smaller
            // id), else the client's end's.
            by_interface.sort_unstable_by_key(|(end, interface, _)| (*end, *interface));
            let mut best: Option<(bool, u64, u32)> = None;
            for group in by_interface.chunk_by(|a, b| (a.0, a.1) == (b.0, b.1)) {
                let (end, interface) = (group[0].0, group[0].1);
                let sum = group.iter().fold(0u64, |sum, g| sum.saturating_add(g.2));
                let better = match best {
                    None => true,
                    Some((best_end, best_sum, best_interface)) => (end, sum)
                        .cmp(&(best_end, best_sum))
                        .then_with(|| {
                            self.interfaces
                                .name(best_interface)
                                .cmp(self.interfaces.name(interface))
                        })
                        .is_gt(),
                };
                if better {
                    best = Some((end, sum, interface));
                }
            }
            let interface = best.and_then(|(_, _, id)| {
                names
                    .get_mut(id as usize)
                    .map(|name| name.get_or_insert_with(|| Arc::from(self.interfaces.name(id))).clone())
            });
            pairs.push(Counted {
                node: node as usize,
                client: segments[0].client(),
                bytes,
                interface,
            });
        }
        Count {
            pairs,
            records,
            other_end,
            client_end_only_bytes: client_end_only,
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

    /// A record at `start..=end` (closed seconds), with flow-direction.
    fn timed<'a>(
        src: &str,
        dst: &str,
        bytes: u64,
        interface: &'a str,
        direction: Direction,
        start: u64,
        end: u64,
    ) -> Flow<'a> {
        Flow {
            start: Some(start),
            end: Some(end),
            ..flow(src, dst, bytes, interface, Some(direction))
        }
    }

    /// Issue 61, item 6: AWS's `[start, end]` is closed. A client-end record that shares only
    /// its last second with the node's record is the same flow; one that follows it is not.
    #[test]
    fn records_that_share_a_second_are_one_flow() {
        let (c, n) = ("10.0.2.5", "10.0.1.10");
        let mut tally = Tally::new(NOW);
        tally.add(
            &timed(c, n, 700, "eni-node", Direction::Ingress, T0 + 30, T0 + 59),
            node,
        );
        tally.add(&timed(c, n, 700, "eni-c", Direction::Egress, T0, T0 + 30), node);
        let count = tally.counted();
        assert_eq!((count.pairs[0].bytes, count.other_end), (700, 1));
    }

    /// Issue 62, drill e: the ends' clocks differ (AWS stamps each interface's records up to 60 s
    /// late). A burst recorded 40 s later at the client's end than at the node's counts once
    /// while the node's end was capturing then (other clients); where the node's end was not
    /// capturing (its flow log starting later), the client's record is the only one and counts.
    #[test]
    fn records_late_by_less_than_the_lateness_are_one_flow_while_the_node_captures() {
        let (c, other, n) = ("10.0.2.5", "10.0.3.5", "10.0.1.10");
        // The bytes counted for `c` when its node-end burst at T0+100 meets its client-end burst
        // `late` seconds later, while another client keeps the node's end capturing ten minutes.
        let counted_with_lateness = |late: u64| {
            let mut tally = Tally::new(NOW);
            for minute in 0..10 {
                let start = T0 + minute * 60;
                tally.add(
                    &timed(other, n, 10, "eni-node", Direction::Ingress, start, start + 59),
                    node,
                );
            }
            tally.add(
                &timed(c, n, 500, "eni-node", Direction::Ingress, T0 + 100, T0 + 102),
                node,
            );
            tally.add(
                &timed(c, n, 500, "eni-c", Direction::Egress, T0 + 100 + late, T0 + 102 + late),
                node,
            );
            let count = tally.counted();
            let bytes = count.pairs.iter().find(|p| p.client.to_string() == c).map(|p| p.bytes);
            (bytes, count.other_end)
        };
        assert_eq!(counted_with_lateness(40), (Some(500), 1));
        // Beyond the lateness: two flows.
        assert_eq!(counted_with_lateness(63).0, Some(1000));

        // The node's flow log starts at T0 + 120: the client's records of the minute before
        // are the only ones of that minute, and count.
        let mut tally = Tally::new(NOW);
        for minute in 2..10 {
            let start = T0 + minute * 60;
            tally.add(
                &timed(other, n, 10, "eni-node", Direction::Ingress, start, start + 59),
                node,
            );
        }
        tally.add(&timed(c, n, 500, "eni-c", Direction::Egress, T0 + 60, T0 + 119), node);
        tally.add(
            &timed(c, n, 500, "eni-node", Direction::Ingress, T0 + 120, T0 + 179),
            node,
        );
        tally.add(&timed(c, n, 500, "eni-c", Direction::Egress, T0 + 120, T0 + 179), node);
        let count = tally.counted();
        assert_eq!(
            count.pairs.iter().find(|p| p.client.to_string() == c).unwrap().bytes,
            1000
        );
        assert_eq!(count.other_end, 1);
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

    /// Issue 58, item 2: a sender of many addresses (one IPv6 /64) past `--max-clients`: the
    /// tally stops holding and says so, with the cap and what to do; under the cap nothing is
    /// said. The same for interface ids.
    #[test]
    fn a_sender_of_many_addresses_stops_at_the_cap() {
        let n = "10.0.1.10";
        let mut tally = Tally::new(NOW).holding(1_000);
        for k in 0..(COMPACT_FROM as u32 + 10) {
            let client =
                std::net::Ipv6Addr::from(0x2600_1f18_0000_0002_0000_0000_0000_0000u128 + u128::from(k)).to_string();
            tally.add(&flow(&client, n, 100, "eni-node", None), node);
        }
        let too_many = tally.too_many().expect("past the cap");
        assert_eq!((too_many.what, too_many.cap), ("clients", 1_000));
        assert!(too_many.seen > 1_000, "{too_many:?}");
        assert!(tally.entries.len() <= COMPACT_FROM, "{}", tally.entries.len());
        let said = too_many.said();
        assert!(
            said.contains("--max-clients 1000") && said.contains("--athena"),
            "{said}"
        );

        let mut tally = Tally::new(NOW).holding(1_000);
        for k in 0..1_001 {
            tally.add(&flow("10.0.2.5", n, 100, &format!("eni-{k:017x}"), None), node);
        }
        assert_eq!(
            tally.too_many().map(|t| (t.what, t.seen)),
            Some(("interface ids", 1_001))
        );

        let mut tally = Tally::new(NOW).holding(1_000);
        for k in 0..1_000u32 {
            tally.add(
                &flow(
                    &std::net::Ipv4Addr::from(0x0a00_0200 + k).to_string(),
                    n,
                    100,
                    "eni-node",
                    None,
                ),
                node,
            );
        }
        assert_eq!(tally.too_many(), None);
        assert_eq!(tally.counted().pairs.len(), 1_000);
    }

    /// Compaction (sorting and merging the entries when the list is full) changes nothing that
    /// is counted: the same records, interleaved across many pairs so that the list fills and
    /// is compacted several times, and in an order that never fills it, give the same counts;
    /// an IPv4 client and the same address mapped into IPv6 stay two clients.
    #[test]
    fn compaction_counts_what_the_records_say() {
        let n = "10.0.1.10";
        let mut records = Vec::new();
        for k in 0..3 * COMPACT_FROM as u32 {
            let client = std::net::Ipv4Addr::from(0x0a00_0200 + k % 5_000).to_string();
            let at_node = k % 3 != 0;
            let eni = if at_node {
                "eni-node".to_string()
            } else {
                format!("eni-c{}", k % 5_000)
            };
            let mut record = (client, 10 + u64::from(k % 7), eni, T0 + u64::from(k % 40) * 60);
            if k % 11 == 0 {
                record.0 = format!("::ffff:{}", record.0);
            }
            records.push(record);
        }
        let add = |tally: &mut Tally, (client, bytes, eni, start): &(String, u64, String, u64)| {
            let mut f = flow(client, n, *bytes, eni, None);
            f.start = Some(*start);
            f.end = Some(start + 60);
            tally.add(&f, node);
        };
        let mut interleaved = Tally::new(NOW);
        for record in &records {
            add(&mut interleaved, record);
        }
        let mut sorted_records = records.clone();
        sorted_records.sort();
        let mut in_order = Tally::new(NOW);
        for record in &sorted_records {
            add(&mut in_order, record);
        }
        let (a, b) = (interleaved.counted(), in_order.counted());
        assert_eq!(a, b);
        assert_eq!(a.records + a.other_end, records.len() as u64);
        assert!(a.pairs.iter().any(|p| p.client.is_ipv6()) && a.pairs.iter().any(|p| p.client.is_ipv4()));
        assert!(a.pairs.is_sorted_by_key(|p| (p.client, p.node)));
        // Each entry is one key: 5,000 clients (their ::ffff: twins apart) × 40 windows at most.
        assert!(
            interleaved.entries.len() <= 2 * 5_000 * 40,
            "{}",
            interleaved.entries.len()
        );
        assert_eq!(std::mem::size_of::<Entry>(), 48);
    }
}
