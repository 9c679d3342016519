//! Which cloud region is an IP in: the clouds' published IP ranges, a compact snapshot of them
//! built into the binaries (with its date), and longest-prefix lookup. Used by the
//! `locality_cloud_region` data source and by `locality lookup`; `locality ranges update`
//! rebuilds the snapshot from the official files (`sources.rs`).

pub mod command;
pub mod sources;

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::OnceLock;

use ipnet::IpNet;

/// The clouds, spelled as Cloudflare's hints spell them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Vendor {
    /// Amazon Web Services.
    Aws,
    /// Microsoft Azure.
    Azure,
    /// Google Cloud.
    Gcp,
    /// Oracle Cloud Infrastructure.
    Oci,
}

impl Vendor {
    /// `aws`, `azure`, `gcp` or `oci`.
    pub fn as_str(self) -> &'static str {
        match self {
            Vendor::Aws => "aws",
            Vendor::Azure => "azure",
            Vendor::Gcp => "gcp",
            Vendor::Oci => "oci",
        }
    }
    fn from_u8(v: u8) -> Option<Vendor> {
        [Vendor::Aws, Vendor::Azure, Vendor::Gcp, Vendor::Oci]
            .get(usize::from(v))
            .copied()
    }
    fn to_u8(self) -> u8 {
        self as u8
    }
}

/// One published range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Range {
    /// The prefix.
    pub net: IpNet,
    /// The cloud.
    pub vendor: Vendor,
    /// The region, when the range belongs to one (None for global ranges).
    pub region: Option<String>,
    /// The service the cloud lists it under (`EC2`, `Google Cloud`, `AzureCloud`, `OCI`, ...).
    pub service: String,
}

impl Range {
    /// The Cloudflare hint, e.g. `aws:ap-northeast-1` (None without a region).
    pub fn hint(&self) -> Option<String> {
        self.region.as_ref().map(|r| format!("{}:{r}", self.vendor.as_str()))
    }
}

/// A set of ranges with longest-prefix lookup.
pub struct Table {
    /// The snapshot's date (YYYY-MM-DD).
    pub date: String,
    ranges: Vec<Range>,
    /// The address space cut into disjoint intervals, each holding its longest prefix: a
    /// lookup is one binary search, whatever the nesting (see [`Intervals`]).
    v4: Intervals<u32>,
    v6: Intervals<u128>,
}

/// Disjoint address intervals, sorted, each with the index of the range that answers for it:
/// `starts[i]..=ends[i]` → `ranges[index[i]]`. Starts live apart from the rest so the binary
/// search touches one dense array.
struct Intervals<T> {
    starts: Vec<T>,
    ends: Vec<T>,
    index: Vec<u32>,
}

impl<T: Addr> Intervals<T> {
    fn find(&self, ip: T) -> Option<usize> {
        let after = self.starts.partition_point(|&s| s <= ip);
        let i = after.checked_sub(1)?;
        (ip <= self.ends[i]).then(|| self.index[i] as usize)
    }
}

/// An address as an integer.
trait Addr: Copy + Ord {
    /// The next address, if any.
    fn succ(self) -> Option<Self>;
    /// The previous address (never called on 0).
    fn pred(self) -> Self;
}

impl Addr for u32 {
    fn succ(self) -> Option<Self> {
        self.checked_add(1)
    }
    fn pred(self) -> Self {
        self.saturating_sub(1)
    }
}

impl Addr for u128 {
    fn succ(self) -> Option<Self> {
        self.checked_add(1)
    }
    fn pred(self) -> Self {
        self.saturating_sub(1)
    }
}

/// Builds [`Intervals`] from prefixes `(network, last address, prefix length, range index)`.
/// Every prefix's first and one-past-last address cut the space into elementary intervals;
/// each lies wholly inside the same prefixes, so it is answered by the innermost one (for
/// equal prefixes the first row wins). Neighbours with the same answer are merged.
fn intervals<T: Addr>(prefixes: impl IntoIterator<Item = (T, T, u8, usize)>) -> Intervals<T> {
    // In nesting order, outer before inner: by (network, length); the first row of a prefix
    // wins. (Table::new hands them over sorted so already; sorting again is cheap then.)
    let mut sorted: Vec<(T, u8, T, usize)> = prefixes
        .into_iter()
        .map(|(net, last, len, i)| (net, len, last, i))
        .collect();
    sorted.sort_by_key(|a| (a.0, a.1, a.3));
    sorted.dedup_by(|later, first| (later.0, later.1) == (first.0, first.1));
    let mut cuts: Vec<T> = Vec::with_capacity(sorted.len() * 2);
    for &(net, _, last, _) in &sorted {
        cuts.push(net);
        cuts.extend(last.succ());
    }
    cuts.sort_unstable();
    cuts.dedup();
    let mut out = Intervals {
        starts: Vec::new(),
        ends: Vec::new(),
        index: Vec::new(),
    };
    let mut pending = sorted.into_iter().peekable();
    let mut open: Vec<(T, u32)> = Vec::new(); // (last address, index), innermost on top
    for (k, &cut) in cuts.iter().enumerate() {
        while let Some((_, _, last, i)) = pending.next_if(|(net, _, _, _)| *net <= cut) {
            open.push((last, u32::try_from(i).unwrap_or(u32::MAX)));
        }
        while open.last().is_some_and(|(last, _)| *last < cut) {
            open.pop();
        }
        let Some(&(last, index)) = open.last() else { continue };
        let end = cuts.get(k + 1).map_or(last, |next| next.pred());
        let joins = out.index.last() == Some(&index) && out.ends.last().and_then(|e: &T| e.succ()) == Some(cut);
        match out.ends.last_mut() {
            Some(previous_end) if joins => *previous_end = end,
            _ => {
                out.starts.push(cut);
                out.ends.push(end);
                out.index.push(index);
            }
        }
    }
    out
}

/// Generic services that a more specific row for the same prefix should win over.
fn generic(service: &str) -> bool {
    matches!(service, "AMAZON" | "AzureCloud")
}

impl Table {
    /// Builds a table: duplicate (prefix, vendor, region) rows are merged, keeping the most
    /// specific service name; the order is made canonical so that snapshots are reproducible.
    pub fn new(date: &str, mut ranges: Vec<Range>) -> Table {
        ranges.sort_by(|a, b| {
            (
                a.net.network(),
                a.net.prefix_len(),
                a.vendor,
                &a.region,
                generic(&a.service),
                &a.service,
            )
                .cmp(&(
                    b.net.network(),
                    b.net.prefix_len(),
                    b.vendor,
                    &b.region,
                    generic(&b.service),
                    &b.service,
                ))
        });
        ranges.dedup_by(|later, first| {
            later.net == first.net && later.vendor == first.vendor && later.region == first.region
        });
        let v4 = intervals(ranges.iter().enumerate().filter_map(|(i, r)| match r.net {
            IpNet::V4(n) => Some((u32::from(n.network()), u32::from(n.broadcast()), n.prefix_len(), i)),
            IpNet::V6(_) => None,
        }));
        let v6 = intervals(ranges.iter().enumerate().filter_map(|(i, r)| match r.net {
            IpNet::V6(n) => Some((u128::from(n.network()), u128::from(n.broadcast()), n.prefix_len(), i)),
            IpNet::V4(_) => None,
        }));
        Table {
            date: date.to_string(),
            ranges,
            v4,
            v6,
        }
    }

    /// Every range (after merging).
    pub fn ranges(&self) -> &[Range] {
        &self.ranges
    }

    /// The longest published prefix that holds `ip`: one binary search over disjoint intervals.
    pub fn lookup(&self, ip: IpAddr) -> Option<&Range> {
        let index = match ip {
            IpAddr::V4(a) => self.v4.find(u32::from(a)),
            IpAddr::V6(a) => match a.to_ipv4_mapped() {
                // An IPv4-mapped address is looked up as IPv4.
                Some(v4) => self.v4.find(u32::from(v4)),
                None => self.v6.find(u128::from(a)),
            },
        }?;
        self.ranges.get(index)
    }

    /// The snapshot encoding (see [`Table::decode`]).
    pub fn encode(&self) -> Vec<u8> {
        let mut strings: Vec<&str> = Vec::new();
        let mut index: HashMap<&str, u16> = HashMap::new();
        let mut out = Vec::new();
        out.extend_from_slice(b"LCRS\x01");
        put_str(&mut out, &self.date);
        for r in &self.ranges {
            for s in r.region.iter().map(String::as_str).chain([r.service.as_str()]) {
                if !index.contains_key(s) {
                    index.insert(s, strings.len() as u16);
                    strings.push(s);
                }
            }
        }
        out.extend_from_slice(&(strings.len() as u32).to_le_bytes());
        for s in &strings {
            put_str(&mut out, s);
        }
        out.extend_from_slice(&(self.ranges.len() as u32).to_le_bytes());
        for r in &self.ranges {
            let region = r.region.as_deref().map_or(u16::MAX, |s| index[s]);
            let service = index[r.service.as_str()];
            match r.net {
                IpNet::V4(n) => {
                    out.push(4);
                    out.extend_from_slice(&n.network().octets());
                }
                IpNet::V6(n) => {
                    out.push(6);
                    out.extend_from_slice(&n.network().octets());
                }
            }
            out.push(r.net.prefix_len());
            out.push(r.vendor.to_u8());
            out.extend_from_slice(&region.to_le_bytes());
            out.extend_from_slice(&service.to_le_bytes());
        }
        out
    }

    /// Reads a snapshot: `LCRS` 1, date, string table, then per range: family (4|6), network
    /// bytes, prefix length, vendor, region index (0xFFFF = none), service index.
    ///
    /// # Errors
    /// A message when the bytes are not a snapshot.
    pub fn decode(bytes: &[u8]) -> Result<Table, String> {
        let mut r = Reader { bytes, at: 0 };
        if r.take(5)? != b"LCRS\x01" {
            return Err("not a locality range snapshot (version 1)".into());
        }
        let date = r.string()?;
        let count = r.u32()? as usize;
        let strings = (0..count).map(|_| r.string()).collect::<Result<Vec<_>, _>>()?;
        let n = r.u32()? as usize;
        let mut ranges = Vec::with_capacity(n);
        for _ in 0..n {
            let family = r.take(1)?[0];
            let net = match family {
                4 => {
                    let o: [u8; 4] = r.take(4)?.try_into().map_err(|_| "truncated")?;
                    let len = r.take(1)?[0];
                    IpNet::new(IpAddr::from(o), len).map_err(|e| e.to_string())?
                }
                6 => {
                    let o: [u8; 16] = r.take(16)?.try_into().map_err(|_| "truncated")?;
                    let len = r.take(1)?[0];
                    IpNet::new(IpAddr::from(o), len).map_err(|e| e.to_string())?
                }
                _ => return Err("bad address family".into()),
            };
            let vendor = Vendor::from_u8(r.take(1)?[0]).ok_or("bad vendor")?;
            let region = r.u16()?;
            let service = r.u16()?;
            let text = |i: u16| {
                strings
                    .get(usize::from(i))
                    .cloned()
                    .ok_or_else(|| "bad string index".to_string())
            };
            ranges.push(Range {
                net,
                vendor,
                region: if region == u16::MAX { None } else { Some(text(region)?) },
                service: text(service)?,
            });
        }
        Ok(Table::new(&date, ranges))
    }
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u16).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], String> {
        let slice = self.bytes.get(self.at..self.at + n).ok_or("truncated snapshot")?;
        self.at += n;
        Ok(slice)
    }
    fn u16(&mut self) -> Result<u16, String> {
        Ok(u16::from_le_bytes(self.take(2)?.try_into().map_err(|_| "truncated")?))
    }
    fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().map_err(|_| "truncated")?))
    }
    fn string(&mut self) -> Result<String, String> {
        let len = usize::from(self.u16()?);
        String::from_utf8(self.take(len)?.to_vec()).map_err(|e| e.to_string())
    }
}

/// The snapshot built into the binaries.
pub static SNAPSHOT: &[u8] = include_bytes!("snapshot.bin");

/// The built-in table, decoded on first use (not at start-up: most provider processes never
/// look an IP up).
pub fn builtin() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| Table::decode(SNAPSHOT).expect("the built-in snapshot is valid"))
}

/// The environment variable naming a snapshot file (written by `locality ranges update`) that
/// the provider uses instead of the built-in one: newer ranges without a new binary.
pub const RANGES_FILE_ENV: &str = "LOCALITY_RANGES_FILE";

/// The table the provider looks IPs up in: the snapshot named by [`RANGES_FILE_ENV`] when it is
/// set, else the built-in one. Read once per process.
///
/// # Errors
/// The file named by the variable cannot be read or is not a snapshot (never silently the
/// built-in table instead).
pub fn active() -> Result<&'static Table, String> {
    static FILE: OnceLock<Option<Result<Table, String>>> = OnceLock::new();
    let file = FILE.get_or_init(|| {
        let path = std::env::var_os(RANGES_FILE_ENV).filter(|p| !p.is_empty())?;
        let shown = std::path::Path::new(&path).display().to_string();
        Some(
            std::fs::read(&path)
                .map_err(|e| format!("{RANGES_FILE_ENV}={shown}: {e}"))
                .and_then(|bytes| {
                    Table::decode(&bytes).map_err(|e| {
                        format!("{RANGES_FILE_ENV}={shown} is not a snapshot written by `locality ranges update`: {e}")
                    })
                }),
        )
    });
    match file {
        None => Ok(builtin()),
        Some(result) => result.as_ref().map_err(Clone::clone),
    }
}

#[cfg(test)]
mod tests {
    /// The lookup before intervals: one hash map per prefix length, longest first; the first
    /// row for a prefix wins. The reference the interval lookup must agree with.
    fn reference(table: &Table, ip: IpAddr) -> Option<usize> {
        let ip = match ip {
            IpAddr::V6(a) => a.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            v4 => v4,
        };
        let mut best: Option<(u8, usize)> = None;
        for (i, r) in table.ranges().iter().enumerate() {
            if r.net.contains(&ip) && best.is_none_or(|(len, _)| r.net.prefix_len() > len) {
                best = Some((r.net.prefix_len(), i));
            }
        }
        best.map(|(_, i)| i)
    }

    #[test]
    fn interval_lookup_agrees_with_longest_prefix_match_at_every_boundary() {
        let table = builtin();
        let index_of = |r: Option<&Range>| r.map(|r| r as *const Range as usize - table.ranges().as_ptr() as usize);
        let size = std::mem::size_of::<Range>();
        let mut rng = fastrand::Rng::with_seed(11);
        let mut checked = 0;
        for r in table.ranges().iter().step_by(197) {
            let (first, last) = match r.net {
                IpNet::V4(n) => (u128::from(u32::from(n.network())), u128::from(u32::from(n.broadcast()))),
                IpNet::V6(n) => (u128::from(n.network()), u128::from(n.broadcast())),
            };
            for a in [
                first,
                last,
                first.wrapping_sub(1),
                last.wrapping_add(1),
                first + (last - first) / 2,
            ] {
                let ip = if r.net.addr().is_ipv4() {
                    IpAddr::from(std::net::Ipv4Addr::from(a as u32))
                } else {
                    IpAddr::from(std::net::Ipv6Addr::from(a))
                };
                assert_eq!(
                    index_of(table.lookup(ip)).map(|b| b / size),
                    reference(table, ip),
                    "{ip}"
                );
                checked += 1;
            }
        }
        for _ in 0..200 {
            for ip in [
                IpAddr::from(std::net::Ipv4Addr::from(rng.u32(..))),
                IpAddr::from(std::net::Ipv6Addr::from(
                    rng.u128(..) & !(0xffff_u128 << 112) | (0x2600_u128 << 112),
                )),
            ] {
                assert_eq!(
                    index_of(table.lookup(ip)).map(|b| b / size),
                    reference(table, ip),
                    "{ip}"
                );
                checked += 1;
            }
        }
        assert!(checked > 1000, "{checked}");
    }

    use super::*;

    fn range(cidr: &str, vendor: Vendor, region: Option<&str>, service: &str) -> Range {
        Range {
            net: cidr.parse().unwrap(),
            vendor,
            region: region.map(String::from),
            service: service.into(),
        }
    }

    #[test]
    fn longest_prefix_wins_and_snapshots_round_trip() {
        let table = Table::new(
            "2026-10-26",
            vec![
                range("3.0.0.0/9", Vendor::Aws, None, "AMAZON"),
                range("3.112.0.0/14", Vendor::Aws, Some("ap-northeast-1"), "AMAZON"),
                range("3.112.0.0/14", Vendor::Aws, Some("ap-northeast-1"), "EC2"),
                range("2600:1f00::/24", Vendor::Aws, Some("us-east-1"), "EC2"),
            ],
        );
        assert_eq!(table.ranges().len(), 3, "duplicate prefix rows merged");
        let hit = table.lookup("3.112.10.20".parse().unwrap()).unwrap();
        assert_eq!(
            (hit.region.as_deref(), hit.service.as_str()),
            (Some("ap-northeast-1"), "EC2")
        );
        assert_eq!(hit.hint().as_deref(), Some("aws:ap-northeast-1"));
        let outer = table.lookup("3.1.2.3".parse().unwrap()).unwrap();
        assert_eq!(outer.region, None);
        assert_eq!(
            table.lookup("2600:1f00::1".parse().unwrap()).unwrap().region.as_deref(),
            Some("us-east-1")
        );
        assert!(table.lookup("192.0.2.1".parse().unwrap()).is_none());
        assert_eq!(
            table.lookup("::ffff:3.112.1.1".parse().unwrap()).unwrap().service,
            "EC2"
        );
        let decoded = Table::decode(&table.encode()).unwrap();
        assert_eq!(decoded.ranges(), table.ranges());
        assert_eq!(decoded.date, "2026-10-26");
    }
}
