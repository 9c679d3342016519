//! VPC Flow Logs records: the fields a file names in its header line (any format, any order),
//! and one record's values. Nothing here allocates per record: a line is split in place and only
//! the fields the audit needs are read.

use std::net::IpAddr;

/// The longest interface-id kept (AWS's are 21 bytes, `eni-` and 17 hex digits): a longer one
/// is no interface id, and would make each distinct name cost what it holds. (Here, with the
/// record's format, so that the tally, the Athena rows and the parser read it from one place
/// and the parser imports nothing from the tally.)
pub const MAX_INTERFACE_ID_BYTES: usize = 64;

/// The default format's fields (version 2), used for a file without a header line.
pub const DEFAULT_FIELDS: &str =
    "version account-id interface-id srcaddr dstaddr srcport dstport protocol packets bytes start end action log-status";

/// Where each field the audit reads sits in a record (0-based), from the header line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// `srcaddr`.
    pub srcaddr: usize,
    /// `dstaddr`.
    pub dstaddr: usize,
    /// `bytes`.
    pub bytes: usize,
    /// `start` (epoch seconds), when the format has it.
    pub start: Option<usize>,
    /// `end` (epoch seconds), when the format has it.
    pub end: Option<usize>,
    /// `interface-id`, when the format has it.
    pub interface_id: Option<usize>,
    /// `flow-direction` (`ingress`, `egress`), when the format has it.
    pub flow_direction: Option<usize>,
    /// `log-status` (`OK`, `NODATA`, `SKIPDATA`), when the format has it.
    pub log_status: Option<usize>,
    /// `action` (`ACCEPT`, `REJECT`), when the format has it.
    pub action: Option<usize>,
    /// `pkt-srcaddr` and `pkt-dstaddr` (version 3): the packet's own addresses, where they
    /// differ from the interface's (an EKS pod on a secondary address of its node's interface:
    /// `srcaddr` is the node's primary address, `pkt-srcaddr` the pod's). Read instead of
    /// `srcaddr`/`dstaddr` when the format has them.
    pub pkt_srcaddr: Option<usize>,
    /// See [`Layout::pkt_srcaddr`].
    pub pkt_dstaddr: Option<usize>,
    /// How many fields a record has.
    pub fields: usize,
}

impl Layout {
    /// The layout of a header line (`version account-id interface-id srcaddr …`; the `${…}`
    /// spelling of a format string is accepted too).
    ///
    /// # Errors
    /// A sentence naming the missing field, when `srcaddr`, `dstaddr` or `bytes` is absent.
    pub fn from_header(header: &str) -> Result<Layout, String> {
        let names: Vec<&str> = header
            .split_ascii_whitespace()
            .map(|n| n.trim_start_matches("${").trim_end_matches('}'))
            .collect();
        let find = |name: &str| names.iter().position(|n| *n == name);
        let required = |name: &str| {
            find(name).ok_or_else(|| {
                format!(
                    "the header line has no `{name}` field (a flow-log format needs srcaddr, dstaddr and bytes; it names: {})",
                    locality_resolve::printable::printable_cut(&names.join(" "), 400)
                )
            })
        };
        Ok(Layout {
            srcaddr: required("srcaddr")?,
            dstaddr: required("dstaddr")?,
            bytes: required("bytes")?,
            start: find("start"),
            end: find("end"),
            interface_id: find("interface-id"),
            flow_direction: find("flow-direction"),
            log_status: find("log-status"),
            action: find("action"),
            pkt_srcaddr: find("pkt-srcaddr"),
            pkt_dstaddr: find("pkt-dstaddr"),
            fields: names.len(),
        })
    }

    /// The default format's layout.
    pub fn default_format() -> Layout {
        Layout::from_header(DEFAULT_FIELDS).expect("the default format names every field")
    }

    /// Whether `line` is a header line (its first field is a field name, not a value).
    pub fn is_header(line: &str) -> bool {
        line.split_ascii_whitespace()
            .next()
            .is_some_and(|first| first.starts_with(|c: char| c.is_ascii_alphabetic() || c == '$'))
            && line.contains("srcaddr")
    }
}

/// Which side captured a record (`flow-direction`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Traffic arriving at the interface.
    Ingress,
    /// Traffic leaving the interface.
    Egress,
}

/// One record's values the audit reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record<'a> {
    /// A flow: addresses, bytes, and what the format has of the rest.
    Flow(Flow<'a>),
    /// `NODATA`, `SKIPDATA`, or a record whose addresses or bytes are `-`.
    NoData,
    /// A flow the security groups or network ACLs rejected.
    Rejected,
}

/// A flow record's values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flow<'a> {
    /// Source address.
    pub srcaddr: IpAddr,
    /// Destination address.
    pub dstaddr: IpAddr,
    /// Bytes in the capture window.
    pub bytes: u64,
    /// Window start, epoch seconds.
    pub start: Option<u64>,
    /// Window end, epoch seconds.
    pub end: Option<u64>,
    /// The interface that captured it.
    pub interface_id: Option<&'a str>,
    /// Which way it crossed that interface.
    pub direction: Option<Direction>,
}

/// Why a line is not a record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadLine(pub String);

/// Parses one record line under `layout`.
///
/// # Errors
/// [`BadLine`] saying which field is wrong (never a panic, whatever the bytes).
pub fn parse<'a>(line: &'a str, layout: &Layout) -> Result<Record<'a>, BadLine> {
    let mut fields: [&str; 64] = [""; 64];
    let mut count = 0;
    for field in line.split_ascii_whitespace() {
        if count == fields.len() {
            return Err(BadLine(format!("more than {} fields", fields.len())));
        }
        fields[count] = field;
        count += 1;
    }
    if count != layout.fields {
        return Err(BadLine(format!(
            "{count} fields where the format has {}",
            layout.fields
        )));
    }
    let field = |at: Option<usize>| at.map(|i| fields[i]).filter(|v| *v != "-");
    if let Some(status) = field(layout.log_status) {
        match status {
            "OK" => {}
            "NODATA" | "SKIPDATA" => return Ok(Record::NoData),
            other => return Err(BadLine(format!("log-status {other:?} is not OK, NODATA or SKIPDATA"))),
        }
    }
    let (src, dst, bytes) = (fields[layout.srcaddr], fields[layout.dstaddr], fields[layout.bytes]);
    if src == "-" || dst == "-" || bytes == "-" {
        return Ok(Record::NoData);
    }
    // The packet's own addresses where the format has them (a pod behind its node's address).
    let (src_name, src) = match field(layout.pkt_srcaddr) {
        Some(pkt) => ("pkt-srcaddr", pkt),
        None => ("srcaddr", src),
    };
    let (dst_name, dst) = match field(layout.pkt_dstaddr) {
        Some(pkt) => ("pkt-dstaddr", pkt),
        None => ("dstaddr", dst),
    };
    if let Some(action) = field(layout.action) {
        match action {
            "ACCEPT" => {}
            "REJECT" => return Ok(Record::Rejected),
            other => return Err(BadLine(format!("action {other:?} is not ACCEPT or REJECT"))),
        }
    }
    let address = |name: &str, value: &str| {
        value
            .parse::<IpAddr>()
            .map_err(|_| BadLine(format!("{name} {:?} is not an IP address", shorten(value))))
    };
    let number = |name: &str, value: &str| {
        value
            .parse::<u64>()
            .map_err(|_| BadLine(format!("{name} {:?} is not a whole number", shorten(value))))
    };
    let direction = match field(layout.flow_direction) {
        None => None,
        Some("ingress") => Some(Direction::Ingress),
        Some("egress") => Some(Direction::Egress),
        Some(other) => {
            return Err(BadLine(format!(
                "flow-direction {:?} is not ingress or egress",
                shorten(other)
            )))
        }
    };
    Ok(Record::Flow(Flow {
        srcaddr: address(src_name, src)?,
        dstaddr: address(dst_name, dst)?,
        bytes: number("bytes", bytes)?,
        start: field(layout.start).map(|v| number("start", v)).transpose()?,
        end: field(layout.end).map(|v| number("end", v)).transpose()?,
        interface_id: match field(layout.interface_id) {
            Some(id) if id.len() > MAX_INTERFACE_ID_BYTES => {
                return Err(BadLine(format!(
                    "interface-id {:?} is {} bytes, and an interface id is at most {}",
                    shorten(id),
                    id.len(),
                    MAX_INTERFACE_ID_BYTES
                )))
            }
            id => id,
        },
        direction,
    }))
}

/// At most 40 characters of a value, cut on a character boundary.
fn shorten(value: &str) -> String {
    match value.char_indices().nth(40) {
        Some((at, _)) => format!("{}…", &value[..at]),
        None => value.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_format_and_a_custom_one_in_another_order() {
        let layout = Layout::default_format();
        let line = "2 123456789012 eni-0a1 10.0.1.5 10.0.2.10 50000 6379 6 10 1200 1700000000 1700000060 ACCEPT OK";
        let Record::Flow(flow) = parse(line, &layout).unwrap() else {
            panic!()
        };
        assert_eq!(flow.bytes, 1200);
        assert_eq!(flow.interface_id, Some("eni-0a1"));
        assert_eq!(flow.direction, None);
        assert_eq!((flow.start, flow.end), (Some(1_700_000_000), Some(1_700_000_060)));

        let custom = Layout::from_header("${flow-direction} ${bytes} ${dstaddr} ${srcaddr} ${interface-id}").unwrap();
        let Record::Flow(flow) = parse("egress 77 10.0.0.1 10.0.0.2 eni-9", &custom).unwrap() else {
            panic!()
        };
        assert_eq!(flow.direction, Some(Direction::Egress));
        assert_eq!(flow.srcaddr.to_string(), "10.0.0.2");
        assert_eq!(flow.start, None);
    }

    #[test]
    fn no_data_rejected_and_bad_lines() {
        let layout = Layout::default_format();
        let nodata = "2 123456789012 eni-0a1 - - - - - - - 1700000000 1700000060 - NODATA";
        assert_eq!(parse(nodata, &layout), Ok(Record::NoData));
        let rejected = "2 1 eni-1 10.0.0.1 10.0.0.2 1 2 6 1 40 1 2 REJECT OK";
        assert_eq!(parse(rejected, &layout), Ok(Record::Rejected));
        assert!(parse("2 1 eni-1 10.0.0.1", &layout).unwrap_err().0.contains("4 fields"));
        let bad = "2 1 eni-1 10.0.0.999 10.0.0.2 1 2 6 1 40 1 2 ACCEPT OK";
        assert!(parse(bad, &layout).unwrap_err().0.contains("srcaddr"));
        let long = format!("2 1 eni-1 10.0.0.1 10.0.0.2 1 2 6 1 {} 1 2 ACCEPT OK", "é".repeat(60));
        assert!(parse(&long, &layout).unwrap_err().0.contains('…'));
        assert!(Layout::from_header("version srcaddr dstaddr")
            .unwrap_err()
            .contains("`bytes`"));
    }
}
