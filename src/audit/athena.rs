//! `locality audit --print-sql athena`: the audit as one SQL query over the flow-log table that
//! AWS's Athena integration creates (`srcaddr`, `dstaddr`, `bytes`, `start`, `end`,
//! `interface_id`, `action`, `log_status`), with the nodes and subnets inlined.
//!
//! Each flow counts once by the rule of [`super::tally`], stated in SQL: records at the node's
//! end count, a record at the client's end counts unless the node's end captured the same pair
//! at a time that can be the same (closed seconds, and AWS's lateness while the node's end was
//! capturing: [`super::tally::LATENESS_SECONDS`]); which end captured a record by `flow_direction` when the table has
//! that column (`--fields` names the table's format), else by the interface. The share, the
//! cross-zone bytes, the per-node bytes and the worst clients follow as the audit computes them.
//! Client zones: IPv4 subnets (a client with an IPv6 address counts as zone `unknown` here).

use std::fmt::Write as _;
use std::net::IpAddr;

use locality_resolve::document::NodeRole;

use super::days::Days;
use super::tally::{EARLIEST_START, LATENESS_SECONDS, LINK_BYTES_PER_SECOND, LONGEST_WINDOW_SECONDS};
use super::topology::{Node, Subnets};

/// Checks `--table`: a table name, `db.table` or `catalog.db.table`, each part an identifier
/// (letters, digits and `_`, not starting with a digit) or a quoted one (`"…"`, `""` for a
/// quote, no control characters). Nothing else reaches the SQL.
///
/// # Errors
/// A sentence saying what is allowed.
pub fn check_table(name: &str) -> Result<(), String> {
    table_parts(name).map(|_| ())
}

/// The parts of a `--table` that [`check_table`] accepts, unquoted (`""` back to `"`):
/// `[NAME]`, `[DATABASE, NAME]` or `[CATALOG, DATABASE, NAME]`. The one reading of the name that
/// the query (as written), the DDL (each part in backticks) and Athena's database all follow: a
/// dot inside quotes is part of the name.
///
/// # Errors
/// [`check_table`]'s sentence.
pub fn table_parts(name: &str) -> Result<Vec<String>, String> {
    let refuse = || {
        Err(format!(
            "--table {:?} is not a table name: give NAME, DATABASE.NAME or CATALOG.DATABASE.NAME, each part letters, digits and _ (not starting with a digit), or quoted as \"part\"",
            name.chars().take(80).collect::<String>()
        ))
    };
    let mut parts: Vec<String> = Vec::new();
    let mut rest = name;
    loop {
        if let Some(quoted) = rest.strip_prefix('"') {
            // Up to the closing quote ("" is a quote inside).
            let mut end = None;
            let mut chars = quoted.char_indices().peekable();
            while let Some((at, c)) = chars.next() {
                if c.is_control() {
                    return refuse();
                }
                if c == '"' {
                    if chars.peek().is_some_and(|(_, next)| *next == '"') {
                        chars.next();
                        continue;
                    }
                    end = Some(at);
                    break;
                }
            }
            let Some(end) = end.filter(|e| *e > 0) else {
                return refuse();
            };
            parts.push(quoted[..end].replace("\"\"", "\""));
            rest = &quoted[end + 1..];
        } else {
            let length = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            if length == 0 || rest.starts_with(|c: char| c.is_ascii_digit()) {
                return refuse();
            }
            parts.push(rest[..length].to_string());
            rest = &rest[length..];
        }
        match rest.strip_prefix('.') {
            Some(next) if parts.len() < 3 => rest = next,
            Some(_) => return refuse(),
            None if rest.is_empty() => return Ok(parts),
            None => return refuse(),
        }
    }
}

/// A string literal.
/// A value from outside (a zone's name, an endpoint) as an SQL string literal: escaped as every
/// printed name is ([`locality_resolve::printable`]: no raw control, format or separator
/// character reaches the terminal or Athena's console; injective, so equal names stay equal),
/// then quoted.
fn text(value: &str) -> String {
    format!(
        "'{}'",
        locality_resolve::printable::printable(value).replace('\'', "''")
    )
}

fn optional(value: Option<&str>) -> String {
    value.map_or("CAST(NULL AS VARCHAR)".to_string(), text)
}

/// The IPv4 address in `column` as a number (NULL for anything else).
fn ipv4_number(column: &str) -> String {
    (1..=4)
        .map(|part| {
            let weight = 1u64 << (8 * (4 - part));
            format!("TRY_CAST(split_part({column}, '.', {part}) AS BIGINT) * {weight}")
        })
        .collect::<Vec<_>>()
        .join(" + ")
}

/// `WITH nodes (...) AS (VALUES ...), subnets (...) AS (VALUES ...` (the subnets' parenthesis
/// left open).
fn values(nodes: &[Node], subnets: &Subnets) -> String {
    let mut sql = String::new();
    sql.push_str("WITH nodes (address, endpoint, role, node_zone, node_zone_id) AS (\n  VALUES\n");
    let rows: Vec<String> = nodes
        .iter()
        .map(|n| {
            let role = match n.role {
                NodeRole::Primary => "primary",
                NodeRole::Replica => "replica",
            };
            format!(
                "    ({}, {}, {}, {}, {})",
                text(&n.address.to_string()),
                text(&n.endpoint),
                text(role),
                text(&n.zone),
                optional(n.zone_id.as_deref())
            )
        })
        .collect();
    sql.push_str(&rows.join(",\n"));
    sql.push_str("\n),\nsubnets (first_address, last_address, zone, zone_id) AS (\n  VALUES\n");
    let mut rows: Vec<String> = subnets
        .all()
        .iter()
        .filter_map(|s| match (s.block.network(), s.block.broadcast()) {
            (IpAddr::V4(first), IpAddr::V4(last)) => Some(format!(
                "    (BIGINT '{}', BIGINT '{}', {}, {})",
                u32::from(first),
                u32::from(last),
                text(&s.zone),
                optional(s.zone_id.as_deref())
            )),
            _ => None,
        })
        .collect();
    if rows.is_empty() {
        // No subnet: one that matches nothing keeps the query valid.
        rows.push("    (BIGINT '-1', BIGINT '-2', 'none', CAST(NULL AS VARCHAR))".to_string());
    }
    sql.push_str(&rows.join(",\n"));
    sql
}

/// The CTEs that count each flow once (see [`super::tally`]), from a `records` CTE of possible
/// ACCEPTed records (`srcaddr`, `dstaddr`, `bytes`, `start`, `"end"`, `interface_id`,
/// `flow_direction`) and `nodes`: `flows` (a client with a node) through `counted` (address,
/// client, bytes, records). Each ends with `,` and a newline.
const COUNTING: &str = r#"-- One row per record of a client with a node; its closed window [start, end] held as
-- [start, stop) with stop = end + 1; the end that captured it when flow_direction says; context 1
-- for a record outside the days asked for (it matches the other end of a flow, never counts).
flows AS (
  SELECT n.address, r.srcaddr AS client, r.interface_id, r.bytes, r.start, greatest(r."end", r.start) + 1 AS stop,
         r.context, CASE r.flow_direction WHEN 'ingress' THEN 'node' WHEN 'egress' THEN 'client' END AS direction_end
  FROM records r JOIN nodes n ON r.dstaddr = n.address
  WHERE r.srcaddr NOT IN (SELECT address FROM nodes)
  UNION ALL
  SELECT n.address, r.dstaddr AS client, r.interface_id, r.bytes, r.start, greatest(r."end", r.start) + 1 AS stop,
         r.context, CASE r.flow_direction WHEN 'egress' THEN 'node' WHEN 'ingress' THEN 'client' END AS direction_end
  FROM records r JOIN nodes n ON r.srcaddr = n.address
  WHERE r.dstaddr NOT IN (SELECT address FROM nodes)
),
-- Without flow_direction, the interface says which end: one that flow_direction ever put at
-- this node's end is the node's; one it put at a client's end, or that saw several nodes, is a
-- client's; of the rest, one with two or more distinct clients of the node is the node's, and so
-- is the one with the most (ties: the smaller id).
interface_clients AS (
  SELECT address, interface_id, count(DISTINCT client) AS clients,
         max(CASE WHEN direction_end = 'node' THEN 1 ELSE 0 END) AS seen_at_node
  FROM flows WHERE interface_id IS NOT NULL GROUP BY address, interface_id
),
interface_nodes AS (
  SELECT interface_id, count(DISTINCT address) AS nodes,
         max(CASE WHEN direction_end = 'client' THEN 1 ELSE 0 END) AS seen_at_client
  FROM flows WHERE interface_id IS NOT NULL GROUP BY interface_id
),
candidates AS (
  SELECT c.address, c.interface_id, c.clients, c.seen_at_node,
         CASE WHEN n.nodes = 1 AND n.seen_at_client = 0 THEN 1 ELSE 0 END AS candidate
  FROM interface_clients c JOIN interface_nodes n ON c.interface_id = n.interface_id
),
busiest AS (
  SELECT address, interface_id FROM (
    SELECT address, interface_id,
           row_number() OVER (PARTITION BY address ORDER BY clients DESC, interface_id) AS rank
    FROM candidates WHERE candidate = 1
  ) ranked WHERE rank = 1
),
node_interfaces AS (
  SELECT c.address, c.interface_id
  FROM candidates c LEFT JOIN busiest b ON c.address = b.address AND c.interface_id = b.interface_id
  WHERE c.seen_at_node = 1 OR (c.candidate = 1 AND (c.clients >= 2 OR b.interface_id IS NOT NULL))
),
ends AS (
  SELECT f.address, f.client, f.interface_id, f.bytes, f.start, f.stop, f.context,
         coalesce(f.direction_end,
                  CASE WHEN f.interface_id IS NULL OR ni.interface_id IS NOT NULL THEN 'node' ELSE 'client' END)
           AS captured_at
  FROM flows f LEFT JOIN node_interfaces ni ON f.address = ni.address AND f.interface_id = ni.interface_id
),
-- The node's end of each pair, merged into disjoint islands of time.
node_reach AS (
  SELECT address, client, start, stop,
         max(stop) OVER (PARTITION BY address, client ORDER BY start, stop
                         ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS reach
  FROM ends WHERE captured_at = 'node'
),
node_islands AS (
  SELECT address, client, min(start) AS start, max(stop) AS stop FROM (
    SELECT address, client, start, stop,
           sum(CASE WHEN reach IS NULL OR start > reach THEN 1 ELSE 0 END)
             OVER (PARTITION BY address, client ORDER BY start, stop ROWS UNBOUNDED PRECEDING) AS island
    FROM node_reach
  ) marked
  GROUP BY address, client, island
),
-- When each node's end was capturing: every node-end window, any client, merged per node.
capture_reach AS (
  SELECT address, start, stop,
         max(stop) OVER (PARTITION BY address ORDER BY start, stop
                         ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS reach
  FROM ends WHERE captured_at = 'node'
),
node_capture AS (
  SELECT address, min(start) AS start, max(stop) AS stop FROM (
    SELECT address, start, stop,
           sum(CASE WHEN reach IS NULL OR start > reach THEN 1 ELSE 0 END)
             OVER (PARTITION BY address ORDER BY start, stop ROWS UNBOUNDED PRECEDING) AS island
    FROM capture_reach
  ) marked
  GROUP BY address, island
),
-- The client's end counts where no island of its pair overlaps it, nor lies within AWS's
-- lateness (LATENESS s) of it while the node's end was capturing at its first and last seconds.
client_windows AS (
  SELECT address, client, interface_id, start, stop, sum(bytes) AS bytes, count(*) AS records
  FROM ends WHERE captured_at = 'client' AND context = 0 GROUP BY address, client, interface_id, start, stop
),
client_gated AS (
  SELECT w.address, w.client, w.interface_id, w.start, w.stop, w.bytes, w.records,
         CASE WHEN first_second.address IS NOT NULL AND last_second.address IS NOT NULL THEN 1 ELSE 0 END AS capturing
  FROM client_windows w
  LEFT JOIN node_capture first_second
    ON first_second.address = w.address AND first_second.start <= w.start AND w.start < first_second.stop
  LEFT JOIN node_capture last_second
    ON last_second.address = w.address AND last_second.start <= w.stop - 1 AND w.stop - 1 < last_second.stop
),
client_counted AS (
  SELECT w.address, w.client, w.interface_id, w.start, w.stop, max(w.bytes) AS bytes, max(w.records) AS records,
         max(w.capturing) AS capturing
  FROM client_gated w
  LEFT JOIN node_islands i ON i.address = w.address AND i.client = w.client
    AND ((i.start < w.stop AND w.start < i.stop)
         OR (w.capturing = 1 AND i.start < w.stop + LATENESS AND w.start < i.stop + LATENESS))
  GROUP BY w.address, w.client, w.interface_id, w.start, w.stop
  HAVING count(i.start) = 0
),
counted AS (
  SELECT address, client, sum(bytes) AS bytes, sum(records) AS records FROM (
    SELECT address, client, bytes, 1 AS records FROM ends WHERE captured_at = 'node' AND context = 0
    UNION ALL
    SELECT address, client, bytes, records FROM client_counted
  ) both_ends
  GROUP BY address, client
),
"#;

/// [`COUNTING`] with AWS's lateness ([`LATENESS_SECONDS`]) written in.
fn counting() -> String {
    COUNTING.replace("LATENESS", &LATENESS_SECONDS.to_string())
}

/// The columns of the flow-log table that the query reads besides the default format's, and
/// the files it reads.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Columns {
    /// The table has `interface_id`.
    pub interface_id: bool,
    /// The table has `flow_direction`.
    pub flow_direction: bool,
    /// The table has `pkt_srcaddr` and `pkt_dstaddr`: read instead of `srcaddr`/`dstaddr`
    /// where they are not `-` (a pod behind its node's address).
    pub pkt_addresses: bool,
    /// Read only the files of this flow log (`"$path"` holds `_ID_`, as AWS names them): the
    /// table's location also holds another flow log's files, in another format.
    pub flow_log_id: Option<FlowLogId>,
}

impl Columns {
    /// The condition on `"$path"` that keeps one flow log's files (empty: every file).
    fn files(&self) -> String {
        match &self.flow_log_id {
            Some(id) => format!("\n    AND strpos(\"$path\", '_{}_') > 0", id.as_str()),
            None => String::new(),
        }
    }
}

/// A flow log's id (`fl-` and hexadecimal digits), as AWS writes it in the names of the files it
/// delivers: `ACCOUNT_vpcflowlogs_REGION_ID_YYYYMMDDTHHmmZ_HASH.log.gz`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowLogId(String);

impl FlowLogId {
    /// `text` when it is a flow log's id.
    pub fn parse(text: &str) -> Result<FlowLogId, String> {
        let digits = text.strip_prefix("fl-").unwrap_or("");
        if (1..=32).contains(&digits.len()) && digits.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        {
            Ok(FlowLogId(text.to_string()))
        } else {
            Err(format!(
                "{:?} is not a flow log's id: fl- and 1 to 32 lowercase hexadecimal digits (fl-0123456789abcdef0)",
                text.chars().take(60).collect::<String>()
            ))
        }
    }

    /// The flow log whose delivery named this file (its last path segment), if AWS named it.
    pub fn of_file(key: &str) -> Option<FlowLogId> {
        let name = key.rsplit('/').next().unwrap_or(key);
        let mut parts = name.split('_');
        let (_account, service, _region, id) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
        if service != "vpcflowlogs" {
            return None;
        }
        FlowLogId::parse(id).ok()
    }

    /// The id.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The expressions of a record's source and destination addresses: the packet's own
/// (`pkt_srcaddr`, `pkt_dstaddr`) where the table has them and they say something.
fn addresses(columns: &Columns) -> (&'static str, &'static str) {
    if columns.pkt_addresses {
        (
            "CASE WHEN pkt_srcaddr IS NULL OR pkt_srcaddr = '-' THEN srcaddr ELSE pkt_srcaddr END",
            "CASE WHEN pkt_dstaddr IS NULL OR pkt_dstaddr = '-' THEN dstaddr ELSE pkt_dstaddr END",
        )
    } else {
        ("srcaddr", "dstaddr")
    }
}

/// The query. `latest_end` is the latest end a record may have (epoch seconds: when the query
/// is printed, plus a day), as [`super::tally`] bounds records.
pub fn query(
    table: &str,
    columns: Columns,
    nodes: &[Node],
    subnets: &Subnets,
    price_per_gb: f64,
    latest_end: u64,
) -> String {
    let mut sql = String::new();
    let _ = writeln!(
        sql,
        "-- Where reads to the cache went, from VPC Flow Logs: `locality audit --print-sql athena`.\n\
         -- One row per figure: kind 'summary' (in-zone share, cross-zone replica bytes, monthly estimate,\n\
         -- window), 'primary' (cross-zone bytes with the primary: writes), 'unknown' (bytes with clients in\n\
         -- no known subnet), 'node' (per node) and 'client' (the 20 clients with the most cross-zone bytes, each\n\
         -- with its monthly estimate)."
    );
    sql.push_str(&values(nodes, subnets));
    let client_number = ipv4_number("c.client");
    let interface_id = if columns.interface_id {
        "interface_id"
    } else {
        "CAST(NULL AS VARCHAR)"
    };
    let flow_direction = if columns.flow_direction {
        "flow_direction"
    } else {
        "CAST(NULL AS VARCHAR)"
    };
    let counting = counting();
    let (srcaddr, dstaddr) = addresses(&columns);
    let files = columns.files();
    let _ = write!(
        sql,
        r#"
),
records AS (
  SELECT {srcaddr} AS srcaddr, {dstaddr} AS dstaddr, bytes, start, "end", {interface_id} AS interface_id, {flow_direction} AS flow_direction,
         0 AS context
  FROM {table}
  WHERE log_status = 'OK' AND action = 'ACCEPT'{files}
    -- Possible records only: a window of at most {LONGEST_WINDOW_SECONDS} s, from 2015-06-01 to a day after the query
    -- was printed, and bytes a link can carry in it ({LINK_BYTES_PER_SECOND} bytes a second).
    AND start >= {EARLIEST_START} AND "end" >= start AND "end" - start <= {LONGEST_WINDOW_SECONDS}
    AND "end" <= {latest_end} AND bytes <= {LINK_BYTES_PER_SECOND} * ("end" - start + 1)
),
{counting}client_zone AS (
  SELECT client, zone, zone_id FROM (
    SELECT c.client, s.zone, s.zone_id,
           row_number() OVER (PARTITION BY c.client ORDER BY s.last_address - s.first_address) AS rank
    FROM (SELECT DISTINCT client FROM counted) c
    JOIN subnets s ON {client_number} BETWEEN s.first_address AND s.last_address
  ) ranked WHERE rank = 1
),
joined AS (
  SELECT n.endpoint, n.address, n.role, n.node_zone, c.client, c.bytes,
         coalesce(z.zone, 'unknown') AS client_zone,
         CASE
           WHEN z.zone IS NULL THEN 'unknown'
           WHEN z.zone_id IS NOT NULL AND n.node_zone_id IS NOT NULL AND z.zone_id = n.node_zone_id THEN 'in'
           WHEN z.zone_id IS NOT NULL AND n.node_zone_id IS NOT NULL THEN 'across'
           WHEN z.zone = n.node_zone THEN 'in'
           ELSE 'across'
         END AS placement
  FROM counted c JOIN nodes n ON c.address = n.address
  LEFT JOIN client_zone z ON c.client = z.client
),
window_bounds AS (
  SELECT min(start) AS window_start, max("end") AS window_end FROM records
),
totals AS (
  SELECT
    coalesce(sum(CASE WHEN role = 'replica' AND placement = 'in' THEN bytes END), 0) AS in_zone_bytes,
    coalesce(sum(CASE WHEN role = 'replica' AND placement = 'across' THEN bytes END), 0) AS cross_zone_bytes,
    coalesce(sum(CASE WHEN role = 'primary' AND placement = 'across' THEN bytes END), 0) AS primary_cross_zone_bytes,
    coalesce(sum(CASE WHEN placement = 'unknown' THEN bytes END), 0) AS unknown_zone_bytes
  FROM joined
),
clients AS (
  SELECT client, client_zone, sum(bytes) AS bytes,
         row_number() OVER (ORDER BY sum(bytes) DESC, client) AS rank
  FROM joined WHERE role = 'replica' AND placement = 'across'
  GROUP BY client, client_zone
)
SELECT 'summary' AS kind, CAST(NULL AS VARCHAR) AS name, CAST(NULL AS VARCHAR) AS role, CAST(NULL AS VARCHAR) AS zone,
       t.in_zone_bytes + t.cross_zone_bytes AS bytes, t.cross_zone_bytes,
       CASE WHEN t.in_zone_bytes + t.cross_zone_bytes > 0
            THEN CAST(t.in_zone_bytes AS DOUBLE) / (t.in_zone_bytes + t.cross_zone_bytes) END AS in_zone_share,
       CASE WHEN w.window_end > w.window_start
            THEN CAST(t.cross_zone_bytes AS DOUBLE) * {price_per_gb} / 1e9 * 2592000 / (w.window_end - w.window_start) END
         AS estimated_monthly_cost_usd,
       w.window_start, w.window_end
FROM totals t CROSS JOIN window_bounds w
UNION ALL
SELECT 'primary', NULL, 'primary', NULL, NULL, primary_cross_zone_bytes, NULL, NULL, NULL, NULL FROM totals
UNION ALL
SELECT 'unknown', NULL, NULL, 'unknown', unknown_zone_bytes, NULL, NULL, NULL, NULL, NULL FROM totals
UNION ALL
SELECT 'node', n.endpoint, n.role, n.node_zone,
       coalesce(sum(j.bytes), 0),
       coalesce(sum(CASE WHEN j.placement = 'across' THEN j.bytes END), 0),
       NULL, NULL, NULL, NULL
FROM nodes n LEFT JOIN joined j ON j.address = n.address
GROUP BY n.endpoint, n.address, n.role, n.node_zone
UNION ALL
SELECT 'client', c.client, 'replica', c.client_zone, NULL, c.bytes, NULL,
       CASE WHEN w.window_end > w.window_start
            THEN CAST(c.bytes AS DOUBLE) * {price_per_gb} / 1e9 * 2592000 / (w.window_end - w.window_start) END,
       NULL, NULL
FROM clients c CROSS JOIN window_bounds w WHERE c.rank <= 20
"#
    );
    sql
}

/// How the flow-log table is partitioned (`--table-layout`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TableLayout {
    /// The text table AWS documents, with partition projection: `PARTITIONED BY (accid,
    /// region, day)`, `day` as `yyyy/MM/dd`.
    Projected,
    /// Hive-compatible Parquet: `aws-service`, `year`, `month`, `day` (and `hour`) partitions.
    Hive,
}

/// The predicate on the partition columns that reads only `days` (never absent: a query without
/// one would scan the table's whole history).
pub fn partition_predicate(layout: TableLayout, days: &Days) -> String {
    let partitions = days.partitions();
    match layout {
        TableLayout::Projected => format!(
            "day BETWEEN {} AND {}",
            text(partitions.first().map_or("", String::as_str)),
            text(partitions.last().map_or("", String::as_str))
        ),
        TableLayout::Hive => {
            let each: Vec<String> = partitions
                .iter()
                .map(|p| {
                    let mut parts = p.split('/');
                    let (y, m, d) = (
                        parts.next().unwrap_or(""),
                        parts.next().unwrap_or(""),
                        parts.next().unwrap_or(""),
                    );
                    format!("(year = {} AND month = {} AND day = {})", text(y), text(m), text(d))
                })
                .collect();
            format!("\"aws-service\" = 'vpcflowlogs' AND ({})", each.join(" OR "))
        }
    }
}

/// The columns of [`pairs_query`]'s rows, in order.
pub const PAIRS_COLUMNS: [&str; 6] = ["kind", "name", "detail", "bytes", "records", "interface"];

/// The query `locality audit --athena` runs: it reads the days asked for once and returns what
/// the file audit's tally holds, from which the CLI computes every figure with the same code:
/// - `pair`: `name` a node's address, `detail` a client's, its counted `bytes` and `records`,
///   and the `interface` whose records counted (as [`super::tally::Tally::counted`] names it);
/// - `left_out`: `name` the reason (`no_data`, `rejected`, `impossible`, `outside_window`,
///   `no_node`, `between_nodes`, `other_end`, `unparsed`: a field Athena could tell was
///   malformed), `records`;
/// - `between_nodes`: their `bytes`; `window`: `bytes` the earliest start, `records` the latest
///   end; `records`: every record read.
///
/// Records are taken in the file audit's order: NODATA/SKIPDATA and `-` fields, REJECT,
/// outside the days, impossible windows or bytes, then by node. `latest_end` should not change
/// between two runs over the same days (Athena's result reuse needs the same query text): the
/// CLI gives the day after the last day asked for, which no possible record of those days
/// passes.
pub fn pairs_query(
    table: &str,
    columns: Columns,
    layout: TableLayout,
    days: &Days,
    nodes: &[Node],
    latest_end: u64,
) -> String {
    let mut sql = String::from(
        "-- locality audit --athena: each client's counted bytes with each node, and every record read counted or\n\
         -- left out by reason, for the days asked for.\n",
    );
    sql.push_str(&values(
        nodes,
        &Subnets::from_json(r#"{"Subnets":[]}"#).unwrap_or_default(),
    ));
    let interface_id = if columns.interface_id {
        "interface_id"
    } else {
        "CAST(NULL AS VARCHAR)"
    };
    let flow_direction = if columns.flow_direction {
        "flow_direction"
    } else {
        "CAST(NULL AS VARCHAR)"
    };
    // The days' partitions and their neighbours (module `around`): what lies there outside
    // the days is context, never counted.
    let predicate = partition_predicate(layout, &days.around());
    let (from, to) = days.seconds();
    let counting = counting();
    let (srcaddr, dstaddr) = addresses(&columns);
    let files = columns.files();
    let most_bytes = LINK_BYTES_PER_SECOND * LONGEST_WINDOW_SECONDS;
    let _ = write!(
        sql,
        r#"
),
read AS (
  SELECT {srcaddr} AS srcaddr, {dstaddr} AS dstaddr, bytes, start, "end", {interface_id} AS interface_id, {flow_direction} AS flow_direction,
         action, log_status
  FROM {table}
  WHERE {predicate}{files}
),
based AS (
  SELECT *,
    coalesce(start, "end") IS NOT NULL
      AND NOT (coalesce(start, "end") >= {from} AND coalesce(start, "end") < {to}) AS outside,
    CASE
      WHEN log_status IN ('NODATA', 'SKIPDATA') THEN 'no_data'
      WHEN log_status IS NOT NULL AND log_status <> 'OK' THEN 'unparsed'
      WHEN srcaddr IS NULL OR dstaddr IS NULL OR bytes IS NULL THEN 'no_data'
      WHEN action = 'REJECT' THEN 'rejected'
      WHEN action IS NOT NULL AND action <> 'ACCEPT' THEN 'unparsed'
      WHEN flow_direction IS NOT NULL AND flow_direction NOT IN ('ingress', 'egress') THEN 'unparsed'
      WHEN start IS NOT NULL AND "end" IS NOT NULL AND NOT (
             "end" >= start AND "end" - start <= {LONGEST_WINDOW_SECONDS} AND start >= {EARLIEST_START}
             AND "end" <= {latest_end} AND bytes <= {LINK_BYTES_PER_SECOND} * ("end" - start + 1)) THEN 'impossible'
      WHEN (start IS NULL) <> ("end" IS NULL) AND NOT (
             coalesce(start, "end") >= {EARLIEST_START} AND coalesce(start, "end") <= {latest_end}
             AND bytes <= {most_bytes}) THEN 'impossible'
      WHEN start IS NULL AND "end" IS NULL AND bytes > {most_bytes} THEN 'impossible'
      WHEN srcaddr IN (SELECT address FROM nodes) AND dstaddr IN (SELECT address FROM nodes) THEN 'between_nodes'
      WHEN srcaddr NOT IN (SELECT address FROM nodes) AND dstaddr NOT IN (SELECT address FROM nodes) THEN 'no_node'
      ELSE 'flow'
    END AS base_fate
  FROM read
),
-- Outside the days asked for: left out as outside_window (after the reasons a record has
-- whatever its time), and held as context when it is a flow of a client with a node.
classified AS (
  SELECT *,
    CASE WHEN base_fate IN ('no_data', 'unparsed', 'rejected') THEN base_fate
         WHEN outside THEN 'outside_window'
         ELSE base_fate END AS fate,
    CASE WHEN outside AND base_fate = 'flow' THEN 1 ELSE 0 END AS context
  FROM based
),
records AS (
  SELECT srcaddr, dstaddr, bytes, coalesce(start, "end", 0) AS start,
         coalesce("end", start, {far}) AS "end", interface_id, flow_direction, context
  FROM classified WHERE fate = 'flow' OR context = 1
),
{counting}-- The interface named for a pair: the node's end's with the most counted bytes (ties: the smaller
-- id), else the client's end's.
labels AS (
  SELECT address, client, interface_id FROM (
    SELECT address, client, interface_id,
           row_number() OVER (PARTITION BY address, client ORDER BY node_end DESC, bytes DESC, interface_id) AS rank
    FROM (
      SELECT address, client, interface_id, 1 AS node_end, sum(bytes) AS bytes
      FROM ends WHERE captured_at = 'node' AND context = 0 AND interface_id IS NOT NULL GROUP BY address, client, interface_id
      UNION ALL
      SELECT address, client, interface_id, 0 AS node_end, sum(bytes) AS bytes
      FROM client_counted WHERE interface_id IS NOT NULL GROUP BY address, client, interface_id
    ) by_interface
  ) ranked WHERE rank = 1
),
client_ends AS (
  SELECT count(*) AS records FROM ends WHERE captured_at = 'client' AND context = 0
),
counted_client_ends AS (
  SELECT coalesce(sum(records), 0) AS records FROM client_counted
)
SELECT 'pair' AS kind, c.address AS name, c.client AS detail, c.bytes, c.records, l.interface_id AS interface
FROM counted c LEFT JOIN labels l ON c.address = l.address AND c.client = l.client
UNION ALL
SELECT 'left_out', fate, NULL, NULL, count(*), NULL FROM classified WHERE fate NOT IN ('flow', 'between_nodes') GROUP BY fate
UNION ALL
SELECT 'left_out', 'between_nodes', NULL, NULL, count(*), NULL FROM classified WHERE fate = 'between_nodes'
UNION ALL
SELECT 'between_nodes', NULL, NULL, coalesce(sum(bytes), 0), NULL, NULL FROM classified WHERE fate = 'between_nodes'
UNION ALL
SELECT 'client_end_only', NULL, NULL, coalesce(sum(bytes), 0), NULL, NULL FROM client_counted WHERE capturing = 1
UNION ALL
SELECT 'left_out', 'other_end', NULL, NULL, c.records - k.records, NULL FROM client_ends c CROSS JOIN counted_client_ends k
UNION ALL
SELECT 'window', NULL, NULL, min(start), max("end"), NULL FROM classified
  WHERE fate IN ('flow', 'between_nodes', 'no_node') AND start IS NOT NULL AND "end" IS NOT NULL
UNION ALL
SELECT 'records', NULL, NULL, NULL, count(*), NULL FROM classified
"#,
        far = u64::MAX / 2,
    );
    sql
}

/// Every field of VPC Flow Logs' formats (v2 to v8) and its column type in Athena; the columns
/// are named as the fields with `-` → `_`.
const FIELD_TYPES: &[(&str, &str)] = &[
    ("version", "int"),
    ("account-id", "string"),
    ("interface-id", "string"),
    ("srcaddr", "string"),
    ("dstaddr", "string"),
    ("srcport", "int"),
    ("dstport", "int"),
    ("protocol", "bigint"),
    ("packets", "bigint"),
    ("bytes", "bigint"),
    ("start", "bigint"),
    ("end", "bigint"),
    ("action", "string"),
    ("log-status", "string"),
    ("vpc-id", "string"),
    ("subnet-id", "string"),
    ("instance-id", "string"),
    ("tcp-flags", "int"),
    ("type", "string"),
    ("pkt-srcaddr", "string"),
    ("pkt-dstaddr", "string"),
    ("region", "string"),
    ("az-id", "string"),
    ("sublocation-type", "string"),
    ("sublocation-id", "string"),
    ("pkt-src-aws-service", "string"),
    ("pkt-dst-aws-service", "string"),
    ("flow-direction", "string"),
    ("traffic-path", "int"),
    ("ecs-cluster-arn", "string"),
    ("ecs-cluster-name", "string"),
    ("ecs-container-instance-arn", "string"),
    ("ecs-container-instance-id", "string"),
    ("ecs-container-id", "string"),
    ("ecs-second-container-id", "string"),
    ("ecs-service-name", "string"),
    ("ecs-task-definition-arn", "string"),
    ("ecs-task-arn", "string"),
    ("ecs-task-id", "string"),
    ("reject-reason", "string"),
];

/// Where flow logs are delivered: `s3://BUCKET/[PREFIX/]AWSLogs/ACCOUNT/vpcflowlogs/REGION/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    /// `s3://BUCKET/[PREFIX/]AWSLogs/`.
    pub base: String,
    /// The 12-digit account.
    pub account: String,
    /// The region.
    pub region: String,
}

impl Delivery {
    /// Reads `s3://BUCKET/[PREFIX/]AWSLogs/ACCOUNT/vpcflowlogs/REGION[/...]`.
    ///
    /// # Errors
    /// A sentence saying what is expected.
    pub fn parse(location: &str) -> Result<Delivery, String> {
        let refuse = || {
            format!(
                "--flow-logs {:?} is not where VPC Flow Logs are delivered: give s3://BUCKET/[PREFIX/]AWSLogs/ACCOUNT/vpcflowlogs/REGION/",
                location.chars().take(200).collect::<String>()
            )
        };
        let rest = location.strip_prefix("s3://").ok_or_else(refuse)?;
        let at = rest.find("/AWSLogs/").ok_or_else(refuse)? + "/AWSLogs/".len();
        let mut parts = rest[at..].split('/');
        let (account, service, region) = (
            parts.next().unwrap_or(""),
            parts.next().unwrap_or(""),
            parts.next().unwrap_or(""),
        );
        let safe = |text: &str| {
            text.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'))
        };
        if account.len() != 12
            || !account.bytes().all(|b| b.is_ascii_digit())
            || service != "vpcflowlogs"
            || region.is_empty()
            || !region
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            || !safe(&rest[..at])
        {
            return Err(refuse());
        }
        Ok(Delivery {
            base: format!("s3://{}", &rest[..at]),
            account: account.to_string(),
            region: region.to_string(),
        })
    }
}

/// The `CREATE EXTERNAL TABLE` for flow logs of format `fields` (a header line or format
/// string) delivered to `delivery`: every field a column, `end` quoted, partition projection on
/// the account, the region and the day (`yyyy/MM/dd`), as AWS documents the text table.
///
/// # Errors
/// A field that is not a flow-log field, named.
pub fn ddl(table: &str, fields: &str, delivery: &Delivery) -> Result<String, String> {
    let names: Vec<&str> = fields
        .split_ascii_whitespace()
        .map(|n| n.trim_start_matches("${").trim_end_matches('}'))
        .collect();
    let mut columns = Vec::new();
    for name in &names {
        let Some((_, kind)) = FIELD_TYPES.iter().find(|(field, _)| field == name) else {
            return Err(format!(
                "the format names {:?}, which is not a VPC Flow Logs field (v2 to v8): give --fields with the log's format",
                name.chars().take(60).collect::<String>()
            ));
        };
        columns.push(format!("  `{}` {kind}", name.replace('-', "_")));
    }
    if columns.is_empty() {
        return Err("the format names no field".to_string());
    }
    // A v5 `region` field would share the partition's name.
    let region = if names.contains(&"region") {
        "aws_region"
    } else {
        "region"
    };
    // Hive's DDL quotes with backticks (a backtick doubled inside); the parts as the query
    // reads them ([`table_parts`]).
    let table = table_parts(table)?
        .iter()
        .map(|part| format!("`{}`", part.replace('`', "``")))
        .collect::<Vec<_>>()
        .join(".");
    let base = &delivery.base;
    Ok(format!(
        r#"CREATE EXTERNAL TABLE IF NOT EXISTS {table} (
{columns}
)
PARTITIONED BY (`accid` string, `{region}` string, `day` string)
ROW FORMAT DELIMITED
FIELDS TERMINATED BY ' '
LOCATION '{base}'
TBLPROPERTIES (
  "skip.header.line.count"="1",
  "projection.enabled"="true",
  "projection.accid.type"="enum",
  "projection.accid.values"="{account}",
  "projection.{region}.type"="enum",
  "projection.{region}.values"="{region_value}",
  "projection.day.type"="date",
  "projection.day.range"="2015/06/01,NOW",
  "projection.day.format"="yyyy/MM/dd",
  "storage.location.template"="{base}${{accid}}/vpcflowlogs/${{{region}}}/${{day}}"
);
"#,
        columns = columns.join(",\n"),
        account = delivery.account,
        region_value = delivery.region,
    ))
}

#[cfg(test)]
mod tests {
    use super::check_table;

    #[test]
    fn the_partition_predicate_names_only_the_days_asked_for() {
        use super::{partition_predicate, TableLayout};
        let days = crate::audit::days::Days {
            first: 20_788,
            last: 20_789,
        };
        assert_eq!(
            partition_predicate(TableLayout::Projected, &days),
            "day BETWEEN '2026/12/01' AND '2026/12/02'"
        );
        assert_eq!(
            partition_predicate(TableLayout::Hive, &days),
            "\"aws-service\" = 'vpcflowlogs' AND ((year = '2026' AND month = '12' AND day = '01') OR (year = '2026' AND month = '12' AND day = '02'))"
        );
    }

    #[test]
    fn a_table_is_an_identifier_or_it_is_refused() {
        for good in [
            "vpc_flow_logs",
            "flowlogs.vpc_flow_logs",
            "awsdatacatalog.db.t",
            "\"my-db\".\"flow logs\"",
            "\"a\"\"b\"",
        ] {
            assert_eq!(check_table(good), Ok(()), "{good}");
        }
        for bad in [
            "",
            "t; DROP TABLE x",
            "t --",
            "1table",
            "a.b.c.d",
            "a.",
            "\"unclosed",
            "\"\"",
            "\"a\nb\"",
            "t)",
            "t UNION SELECT 1",
        ] {
            let refused = check_table(bad).unwrap_err();
            assert!(refused.contains("is not a table name"), "{bad}: {refused}");
        }
    }

    /// Issue 61, item 9: a quoted part holding a dot is one part, in the DDL as in the query
    /// and for Athena's database (before: the DDL split it at every dot).
    #[test]
    fn a_quoted_table_splits_the_same_in_the_ddl_and_the_query() {
        use super::{ddl, table_parts, Delivery};
        assert_eq!(table_parts("\"my.db\".\"flow.logs\"").unwrap(), ["my.db", "flow.logs"]);
        assert_eq!(table_parts("c.\"a\"\"b\".t").unwrap(), ["c", "a\"b", "t"]);
        let delivery = Delivery::parse("s3://b/AWSLogs/123456789012/vpcflowlogs/us-east-1/").unwrap();
        let printed = ddl("\"my.db\".\"flow`logs\"", "srcaddr dstaddr bytes", &delivery).unwrap();
        assert!(
            printed.starts_with("CREATE EXTERNAL TABLE IF NOT EXISTS `my.db`.`flow``logs` ("),
            "{printed}"
        );
    }
}
