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

/// One published range as a lookup finds it, borrowing its strings from the snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hit<'a> {
    /// The prefix.
    pub net: IpNet,
    /// The cloud.
    pub vendor: Vendor,
    /// The region, when the range belongs to one.
    pub region: Option<&'a str>,
    /// The service the cloud lists it under.
    pub service: &'a str,
}

impl Hit<'_> {
    /// The Cloudflare hint, e.g. `aws:ap-northeast-1` (None without a region).
    pub fn hint(&self) -> Option<String> {
        self.region.map(|r| format!("{}:{r}", self.vendor.as_str()))
    }

    /// An owned copy.
    pub fn to_range(&self) -> Range {
        Range {
            net: self.net,
            vendor: self.vendor,
            region: self.region.map(str::to_string),
            service: self.service.to_string(),
        }
    }
}

/// A set of ranges with longest-prefix lookup, searched where its snapshot bytes lie (the
/// built-in snapshot is never copied or decoded into other structures: opening it reads the
/// header and the string table, and a lookup is one binary search over the bytes).
///
/// Snapshot format, version 2 (little-endian throughout; `str` = u16 length + UTF-8 bytes):
/// `LCRS` 2, date `str`, u32 string count + `str`s (regions and services), then for IPv4 and
/// then IPv6: u32 range count + ranges (network 4|16 bytes, prefix length u8, vendor u8,
/// region string index u16 (0xFFFF = none), service string index u16), u32 interval count +
/// interval starts (4|16 bytes each) + interval ends (same) + range indexes (u32 each): the
/// address space cut into disjoint sorted intervals, each answered by its longest prefix.
#[derive(Clone)]
pub struct Table {
    /// The snapshot's date (YYYY-MM-DD): when the clouds' files it was built from were
    /// published.
    pub date: String,
    bytes: std::borrow::Cow<'static, [u8]>,
    /// The string table (regions and services: a few hundred short names, copied once).
    strings: Vec<Box<str>>,
    v4: Family,
    v6: Family,
}

/// Where one address family's sections lie in the snapshot bytes.
#[derive(Debug, Clone, Copy, Default)]
struct Family {
    /// Address width in bytes (4 or 16).
    width: usize,
    /// Offset and count of the range records.
    ranges: usize,
    range_count: usize,
    /// Offset and count of the intervals (starts; ends and indexes follow).
    intervals: usize,
    interval_count: usize,
}

impl Family {
    fn record_len(&self) -> usize {
        self.width + 6
    }
}

/// The snapshot format written by this version.
const MAGIC_V2: &[u8] = b"LCRS\x02";
/// The format of earlier versions, still read (files written by `locality ranges update`).
const MAGIC_V1: &[u8] = b"LCRS\x01";

/// Disjoint address intervals, sorted, each with the index of the range that answers for it:
/// `starts[i]..=ends[i]` → `ranges[index[i]]`, as the snapshot stores them (starts apart from
/// the rest, so the binary search touches one dense array).
struct Intervals<T> {
    starts: Vec<T>,
    ends: Vec<T>,
    index: Vec<u32>,
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
    ///
    /// # Errors
    /// More distinct region and service names than the format numbers (65,534), or more ranges
    /// than it counts.
    pub fn new(date: &str, mut ranges: Vec<Range>) -> Result<Table, String> {
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
        Table::from_bytes(std::borrow::Cow::Owned(encode(date, &ranges)?))
    }

    /// Opens version-2 snapshot bytes where they lie, checking every record and interval
    /// (so that a lookup never reads past a section or names a missing string).
    fn from_bytes(bytes: std::borrow::Cow<'static, [u8]>) -> Result<Table, String> {
        let mut r = Reader { bytes: &bytes, at: 0 };
        if r.take(MAGIC_V2.len())? != MAGIC_V2 {
            return Err("not a locality range snapshot (version 2)".into());
        }
        let date = r.string()?;
        let count = r.u32()? as usize;
        let mut strings = Vec::with_capacity(count.min(1 << 16));
        for _ in 0..count {
            strings.push(r.string()?.into_boxed_str());
        }
        let family = |width: usize, r: &mut Reader<'_>| -> Result<Family, String> {
            let mut f = Family {
                width,
                ..Family::default()
            };
            f.range_count = r.u32()? as usize;
            f.ranges = r.at;
            for _ in 0..f.range_count {
                let record = r.take(f.record_len())?;
                let (len, vendor) = (record[width], record[width + 1]);
                let region = u16::from_le_bytes([record[width + 2], record[width + 3]]);
                let service = u16::from_le_bytes([record[width + 4], record[width + 5]]);
                if usize::from(len) > width * 8 || Vendor::from_u8(vendor).is_none() {
                    return Err("bad range record".into());
                }
                if (region != u16::MAX && usize::from(region) >= strings.len()) || usize::from(service) >= strings.len()
                {
                    return Err("bad string index".into());
                }
            }
            f.interval_count = r.u32()? as usize;
            f.intervals = r.at;
            r.take(f.interval_count.checked_mul(width * 2).ok_or("truncated snapshot")?)?;
            let indexes = r.take(f.interval_count.checked_mul(4).ok_or("truncated snapshot")?)?;
            if indexes
                .chunks_exact(4)
                .any(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]) as usize >= f.range_count)
            {
                return Err("bad range index".into());
            }
            Ok(f)
        };
        let v4 = family(4, &mut r)?;
        let v6 = family(16, &mut r)?;
        if r.at != bytes.len() {
            return Err("trailing bytes after the snapshot".into());
        }
        Ok(Table {
            date,
            strings,
            v4,
            v6,
            bytes,
        })
    }

    fn string(&self, index: u16) -> &str {
        self.strings.get(usize::from(index)).map_or("", |s| s)
    }

    /// Range `i` of a family.
    fn hit(&self, f: &Family, i: usize) -> Option<Hit<'_>> {
        let at = f.ranges + i * f.record_len();
        let record = self.bytes.get(at..at + f.record_len())?;
        let w = f.width;
        let addr = if w == 4 {
            IpAddr::from(<[u8; 4]>::try_from(&record[..4]).ok()?)
        } else {
            IpAddr::from(<[u8; 16]>::try_from(&record[..16]).ok()?)
        };
        let region = u16::from_le_bytes([record[w + 2], record[w + 3]]);
        Some(Hit {
            net: IpNet::new(addr, record[w]).ok()?,
            vendor: Vendor::from_u8(record[w + 1])?,
            region: (region != u16::MAX).then(|| self.string(region)),
            service: self.string(u16::from_le_bytes([record[w + 4], record[w + 5]])),
        })
    }

    /// How many ranges the table holds (after merging).
    pub fn len(&self) -> usize {
        self.v4.range_count + self.v6.range_count
    }

    /// Whether the table holds no range.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every range (after merging), IPv4 first, each in address order.
    pub fn ranges(&self) -> impl Iterator<Item = Hit<'_>> + '_ {
        let v4 = (0..self.v4.range_count).filter_map(|i| self.hit(&self.v4, i));
        let v6 = (0..self.v6.range_count).filter_map(|i| self.hit(&self.v6, i));
        v4.chain(v6)
    }

    /// The longest published prefix that holds `ip`: one binary search over disjoint intervals,
    /// in the snapshot bytes.
    pub fn lookup(&self, ip: IpAddr) -> Option<Hit<'_>> {
        match ip {
            IpAddr::V4(a) => self.find(&self.v4, u128::from(u32::from(a))),
            IpAddr::V6(a) => match a.to_ipv4_mapped() {
                // An IPv4-mapped address is looked up as IPv4.
                Some(v4) => self.find(&self.v4, u128::from(u32::from(v4))),
                None => self.find(&self.v6, u128::from(a)),
            },
        }
    }

    fn find(&self, f: &Family, ip: u128) -> Option<Hit<'_>> {
        let starts = f.intervals;
        let ends = starts + f.interval_count * f.width;
        let indexes = ends + f.interval_count * f.width;
        let i = if f.width == 4 {
            let ip = u32::try_from(ip).ok()?;
            search(&self.bytes, starts, ends, f.interval_count, ip, u32::from_le_bytes)?
        } else {
            search(&self.bytes, starts, ends, f.interval_count, ip, u128::from_le_bytes)?
        };
        let b = self.bytes.get(indexes + i * 4..indexes + i * 4 + 4)?;
        self.hit(f, u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
    }

    /// The snapshot bytes (format version 2).
    pub fn encode(&self) -> Vec<u8> {
        self.bytes.to_vec()
    }

    /// Reads a snapshot of either format version: version 2 is searched where it lies (after
    /// its records are checked), version 1 (earlier releases) is converted.
    ///
    /// # Errors
    /// A message when the bytes are not a snapshot.
    pub fn decode(bytes: &[u8]) -> Result<Table, String> {
        if bytes.starts_with(MAGIC_V1) {
            return decode_v1(bytes);
        }
        Table::from_bytes(std::borrow::Cow::Owned(bytes.to_vec()))
    }

    /// How many days old the snapshot is on `today` (None when its date does not parse).
    pub fn age_days(&self, today: std::time::SystemTime) -> Option<u64> {
        let published = humantime::parse_rfc3339(&format!("{}T00:00:00Z", self.date)).ok()?;
        Some(today.duration_since(published).map_or(0, |d| d.as_secs() / 86_400))
    }
}

/// The interval holding `ip`: a binary search over `count` sorted starts at `starts` (each
/// `N` little-endian bytes, read by `read`), then a check against its end at `ends`.
fn search<const N: usize, T: Copy + Ord>(
    bytes: &[u8],
    starts: usize,
    ends: usize,
    count: usize,
    ip: T,
    read: impl Fn([u8; N]) -> T,
) -> Option<usize> {
    let (starts, _) = bytes.get(starts..starts + count * N)?.as_chunks::<N>();
    let (ends, _) = bytes.get(ends..ends + count * N)?.as_chunks::<N>();
    let i = starts.partition_point(|s| read(*s) <= ip).checked_sub(1)?;
    (ip <= read(*ends.get(i)?)).then_some(i)
}

/// Snapshots older than this get a warning where they are used: the clouds add ranges every
/// week.
pub const STALE_AFTER_DAYS: u64 = 180;

/// Writes the version-2 format (see [`Table`]) of canonically ordered, merged ranges.
///
/// # Errors
/// Names or ranges beyond what the format counts (0xFFFF means "no region").
fn encode(date: &str, ranges: &[Range]) -> Result<Vec<u8>, String> {
    let count =
        |n: usize, what: &str| u32::try_from(n).map_err(|_| format!("{n} {what} are more than a snapshot holds"));
    let mut strings: Vec<&str> = Vec::new();
    let mut index: HashMap<&str, u16> = HashMap::new();
    for r in ranges {
        for s in r.region.iter().map(String::as_str).chain([r.service.as_str()]) {
            if !index.contains_key(s) {
                let next = u16::try_from(strings.len()).ok().filter(|i| *i < u16::MAX).ok_or(
                    "the files name more than 65,534 distinct regions and services, more than a snapshot holds",
                )?;
                index.insert(s, next);
                strings.push(s);
            }
        }
    }
    let mut out = Vec::new();
    out.extend_from_slice(MAGIC_V2);
    put_str(&mut out, date);
    out.extend_from_slice(&count(strings.len(), "names")?.to_le_bytes());
    for s in &strings {
        put_str(&mut out, s);
    }
    let (v4, v6): (Vec<&Range>, Vec<&Range>) = ranges.iter().partition(|r| r.net.addr().is_ipv4());
    for (family, v6_family) in [(v4, false), (v6, true)] {
        out.extend_from_slice(&count(family.len(), "ranges")?.to_le_bytes());
        for r in &family {
            match r.net {
                IpNet::V4(n) => out.extend_from_slice(&n.network().octets()),
                IpNet::V6(n) => out.extend_from_slice(&n.network().octets()),
            }
            out.push(r.net.prefix_len());
            out.push(r.vendor.to_u8());
            out.extend_from_slice(&r.region.as_deref().map_or(u16::MAX, |s| index[s]).to_le_bytes());
            out.extend_from_slice(&index[r.service.as_str()].to_le_bytes());
        }
        let prefixes = family.iter().enumerate().map(|(i, r)| match r.net {
            IpNet::V4(n) => (
                u128::from(u32::from(n.network())),
                u128::from(u32::from(n.broadcast())),
                n.prefix_len(),
                i,
            ),
            IpNet::V6(n) => (u128::from(n.network()), u128::from(n.broadcast()), n.prefix_len(), i),
        });
        let found = intervals(prefixes);
        out.extend_from_slice(&count(found.starts.len(), "intervals")?.to_le_bytes());
        let width = if v6_family { 16 } else { 4 };
        for values in [&found.starts, &found.ends] {
            for v in values {
                out.extend_from_slice(&v.to_le_bytes()[..width]);
            }
        }
        for i in &found.index {
            out.extend_from_slice(&i.to_le_bytes());
        }
    }
    Ok(out)
}

/// Reads the version-1 format: `LCRS` 1, date, string table, then per range: family (4|6),
/// network bytes, prefix length, vendor, region index (0xFFFF = none), service index.
fn decode_v1(bytes: &[u8]) -> Result<Table, String> {
    let mut r = Reader { bytes, at: 0 };
    if r.take(5)? != MAGIC_V1 {
        return Err("not a locality range snapshot (version 1)".into());
    }
    let date = r.string()?;
    let count = r.u32()? as usize;
    let strings = (0..count).map(|_| r.string()).collect::<Result<Vec<_>, _>>()?;
    let n = r.u32()? as usize;
    let mut ranges = Vec::with_capacity(n.min(1 << 20));
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
            net: net.trunc(),
            vendor,
            region: if region == u16::MAX { None } else { Some(text(region)?) },
            service: text(service)?,
        });
    }
    Table::new(&date, ranges)
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
        let end = self.at.checked_add(n).ok_or("truncated snapshot")?;
        let slice = self.bytes.get(self.at..end).ok_or("truncated snapshot")?;
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

/// The built-in table, opened on first use where it lies in the binary (reading its header and
/// string table and checking its records: well under a millisecond).
pub fn builtin() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| {
        Table::from_bytes(std::borrow::Cow::Borrowed(SNAPSHOT)).expect("the built-in snapshot is valid")
    })
}

/// The environment variable naming a snapshot file (written by `locality ranges update`) that
/// the provider and the CLI use instead of the built-in one: newer ranges without a new binary.
pub const RANGES_FILE_ENV: &str = "LOCALITY_RANGES_FILE";

/// Which snapshot a table came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// The snapshot built into the binary.
    BuiltIn,
    /// A file named by [`RANGES_FILE_ENV`] or `--ranges`.
    File(std::path::PathBuf),
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::BuiltIn => f.write_str("the built-in snapshot"),
            Source::File(path) => write!(f, "{}", path.display()),
        }
    }
}

/// Reads a snapshot file (either format version).
///
/// # Errors
/// The file cannot be read or is not a snapshot; the message names the file.
pub fn load_file(path: &std::path::Path) -> Result<Table, String> {
    let shown = path.display();
    let bytes = std::fs::read(path).map_err(|e| format!("{shown}: {e}"))?;
    Table::decode(&bytes).map_err(|e| format!("{shown} is not a snapshot written by `locality ranges update`: {e}"))
}

/// The snapshot file [`RANGES_FILE_ENV`] names, if it is set (and not empty).
pub fn env_file() -> Option<std::path::PathBuf> {
    std::env::var_os(RANGES_FILE_ENV)
        .filter(|p| !p.is_empty())
        .map(std::path::PathBuf::from)
}

/// The table the provider looks IPs up in: the snapshot named by [`RANGES_FILE_ENV`] when it is
/// set, else the built-in one. Read once per process.
///
/// # Errors
/// The file named by the variable cannot be read or is not a snapshot (never silently the
/// built-in table instead).
pub fn active() -> Result<&'static Table, String> {
    static FILE: OnceLock<Option<Result<Table, String>>> = OnceLock::new();
    let file = FILE.get_or_init(|| {
        let path = env_file()?;
        Some(load_file(&path).map_err(|e| format!("{RANGES_FILE_ENV}={e}")))
    });
    match file {
        None => Ok(builtin()),
        Some(result) => result.as_ref().map_err(Clone::clone),
    }
}

/// Where [`active`] took its table from.
pub fn active_source() -> Source {
    env_file().map_or(Source::BuiltIn, Source::File)
}

/// A warning, when a table's snapshot is older than [`STALE_AFTER_DAYS`] on `today`.
pub fn staleness(table: &Table, source: &Source, today: std::time::SystemTime) -> Option<String> {
    let age = table.age_days(today)?;
    (age > STALE_AFTER_DAYS).then(|| {
        format!(
            "The IP-range snapshot in use ({source}) is dated {}, {age} days ago; the clouds add ranges every week, so \
             newer addresses are missing from it. Run `locality ranges update` and point {RANGES_FILE_ENV} at the \
             file it writes, or upgrade the provider.",
            table.date
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lookup before intervals: every range holding the address, longest prefix first; the
    /// first row for a prefix wins. The reference the interval lookup must agree with.
    fn reference(ranges: &[Range], ip: IpAddr) -> Option<Range> {
        let ip = match ip {
            IpAddr::V6(a) => a.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            v4 => v4,
        };
        let mut best: Option<&Range> = None;
        for r in ranges {
            if r.net.contains(&ip) && best.is_none_or(|b| r.net.prefix_len() > b.net.prefix_len()) {
                best = Some(r);
            }
        }
        best.cloned()
    }

    #[test]
    fn interval_lookup_agrees_with_longest_prefix_match_at_every_boundary() {
        let table = builtin();
        let ranges: Vec<Range> = table.ranges().map(|h| h.to_range()).collect();
        assert_eq!(ranges.len(), table.len());
        let mut rng = fastrand::Rng::with_seed(11);
        let mut checked = 0;
        for r in ranges.iter().step_by(197) {
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
                assert_eq!(table.lookup(ip).map(|h| h.to_range()), reference(&ranges, ip), "{ip}");
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
                assert_eq!(table.lookup(ip).map(|h| h.to_range()), reference(&ranges, ip), "{ip}");
                checked += 1;
            }
        }
        assert!(checked > 1000, "{checked}");
    }

    fn range(cidr: &str, vendor: Vendor, region: Option<&str>, service: &str) -> Range {
        Range {
            net: cidr.parse().unwrap(),
            vendor,
            region: region.map(String::from),
            service: service.into(),
        }
    }

    fn sample() -> Table {
        Table::new(
            "2026-10-26",
            vec![
                range("3.0.0.0/9", Vendor::Aws, None, "AMAZON"),
                range("3.112.0.0/14", Vendor::Aws, Some("ap-northeast-1"), "AMAZON"),
                range("3.112.0.0/14", Vendor::Aws, Some("ap-northeast-1"), "EC2"),
                range("2600:1f00::/24", Vendor::Aws, Some("us-east-1"), "EC2"),
            ],
        )
        .unwrap()
    }

    #[test]
    fn more_names_than_the_format_numbers_is_an_error_not_a_panic() {
        let ranges: Vec<Range> = (0..70_000u32)
            .map(|i| Range {
                net: IpNet::new(IpAddr::from(std::net::Ipv4Addr::from(i << 8)), 24).unwrap(),
                vendor: Vendor::Aws,
                region: None,
                service: format!("svc-{i}"),
            })
            .collect();
        let err = Table::new("2026-10-26", ranges).err().unwrap();
        assert!(err.contains("65,534"), "{err}");
    }

    #[test]
    fn longest_prefix_wins_and_snapshots_round_trip() {
        let table = sample();
        assert_eq!(table.len(), 3, "duplicate prefix rows merged");
        let hit = table.lookup("3.112.10.20".parse().unwrap()).unwrap();
        assert_eq!((hit.region, hit.service), (Some("ap-northeast-1"), "EC2"));
        assert_eq!(hit.hint().as_deref(), Some("aws:ap-northeast-1"));
        let outer = table.lookup("3.1.2.3".parse().unwrap()).unwrap();
        assert_eq!(outer.region, None);
        assert_eq!(
            table.lookup("2600:1f00::1".parse().unwrap()).unwrap().region,
            Some("us-east-1")
        );
        assert!(table.lookup("192.0.2.1".parse().unwrap()).is_none());
        assert!(table.lookup("2a00::1".parse().unwrap()).is_none());
        assert_eq!(
            table.lookup("::ffff:3.112.1.1".parse().unwrap()).unwrap().service,
            "EC2"
        );
        let decoded = Table::decode(&table.encode()).unwrap();
        assert!(decoded.ranges().eq(table.ranges()));
        assert_eq!(decoded.date, "2026-10-26");
    }

    #[test]
    fn version_1_snapshots_of_earlier_releases_still_load() {
        // `LCRS` 1, date, 2 strings, 1 range: 3.112.0.0/14 aws ap-northeast-1 EC2.
        let mut v1 = b"LCRS\x01".to_vec();
        put_str(&mut v1, "2026-01-02");
        v1.extend_from_slice(&2u32.to_le_bytes());
        put_str(&mut v1, "ap-northeast-1");
        put_str(&mut v1, "EC2");
        v1.extend_from_slice(&1u32.to_le_bytes());
        v1.extend_from_slice(&[4, 3, 112, 0, 0, 14, 0, 0, 0, 1, 0]);
        let table = Table::decode(&v1).unwrap();
        assert_eq!(table.date, "2026-01-02");
        assert_eq!(
            table.lookup("3.113.0.1".parse().unwrap()).unwrap().hint().as_deref(),
            Some("aws:ap-northeast-1")
        );
    }

    #[test]
    fn damaged_snapshots_are_refused_not_searched() {
        let bytes = sample().encode();
        // Every truncation, and a byte flipped at every position: an error or a table whose
        // lookups stay in bounds, never a panic.
        for cut in 0..bytes.len() {
            assert!(Table::decode(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        for at in 0..bytes.len() {
            let mut damaged = bytes.clone();
            damaged[at] ^= 0xA5;
            if let Ok(table) = Table::decode(&damaged) {
                for ip in [
                    "3.112.10.20",
                    "3.1.2.3",
                    "2600:1f00::1",
                    "0.0.0.0",
                    "255.255.255.255",
                    "::",
                ] {
                    let _ = table.lookup(ip.parse().unwrap());
                }
                let _ = table.ranges().count();
            }
        }
        let mut trailing = bytes.clone();
        trailing.push(0);
        assert!(Table::decode(&trailing).is_err());
    }

    #[test]
    fn staleness_is_judged_on_the_snapshot_date() {
        let table = sample();
        let day = |d: &str| humantime::parse_rfc3339(&format!("{d}T12:00:00Z")).unwrap();
        assert_eq!(table.age_days(day("2026-10-26")), Some(0));
        assert_eq!(table.age_days(day("2027-04-24")), Some(180));
        assert!(staleness(&table, &Source::BuiltIn, day("2027-04-24")).is_none());
        let warning = staleness(&table, &Source::BuiltIn, day("2027-04-25")).unwrap();
        assert!(
            warning.contains("the built-in snapshot") && warning.contains("2026-10-26, 181 days ago"),
            "{warning}"
        );
        assert_eq!(
            table.age_days(day("2020-01-01")),
            Some(0),
            "a clock before the date is not an error"
        );
    }

    #[test]
    fn the_built_in_snapshot_opens_in_place_and_passes_every_check() {
        // Borrowed, not copied: opening it checks the records and reads the string table
        // (the time it takes is a figure of scripts/bench, not asserted on a noisy machine).
        let table = Table::from_bytes(std::borrow::Cow::Borrowed(SNAPSHOT)).unwrap();
        assert_eq!(table.len(), builtin().len());
        assert!(table.strings.len() < 10_000);
    }
}
