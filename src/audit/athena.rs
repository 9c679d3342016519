//! `locality audit --print-sql athena`: the audit as one SQL query over the flow-log table that
//! AWS's Athena integration creates (`srcaddr`, `dstaddr`, `bytes`, `start`, `end`,
//! `interface_id`, `action`, `log_status`), with the nodes and subnets inlined.
//!
//! Each flow counts once by the interface rule of [`super::tally`] (the node's interface is the
//! one that captured the node's flows with the most distinct clients); the share, the
//! cross-zone bytes, the per-node bytes and the worst clients follow as the audit computes them.
//! Client zones: IPv4 subnets (a client with an IPv6 address counts as zone `unknown` here).

use std::fmt::Write as _;
use std::net::IpAddr;

use locality_resolve::document::NodeRole;

use super::topology::{Node, Subnets};

/// A string literal.
fn text(value: &str) -> String {
    format!("'{}'", value.replace('\'', "''"))
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

/// The query.
pub fn query(table: &str, nodes: &[Node], subnets: &Subnets, price_per_gb: f64) -> String {
    let mut sql = String::new();
    let _ = writeln!(
        sql,
        "-- Where reads to the cache went, from VPC Flow Logs: `locality audit --print-sql athena`.\n\
         -- One row per figure: kind 'summary' (in-zone share, cross-zone replica bytes, monthly estimate,\n\
         -- window), 'primary' (cross-zone bytes with the primary: writes), 'unknown' (bytes with clients in\n\
         -- no known subnet), 'node' (per node) and 'client' (the 20 clients with the most cross-zone bytes)."
    );
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
    let client_number = ipv4_number("c.client");
    let _ = write!(
        sql,
        r#"
),
records AS (
  SELECT srcaddr, dstaddr, bytes, start, "end", interface_id
  FROM {table}
  WHERE log_status = 'OK' AND action = 'ACCEPT'
),
flows AS (
  SELECT n.address, r.srcaddr AS client, r.interface_id, r.bytes
  FROM records r JOIN nodes n ON r.dstaddr = n.address
  WHERE r.srcaddr NOT IN (SELECT address FROM nodes)
  UNION ALL
  SELECT n.address, r.dstaddr AS client, r.interface_id, r.bytes
  FROM records r JOIN nodes n ON r.srcaddr = n.address
  WHERE r.dstaddr NOT IN (SELECT address FROM nodes)
),
-- Each flow once: per node, the interface that captured it with the most distinct clients is the
-- node's; a client seen there counts only that interface's records, any other counts its own.
interface_clients AS (
  SELECT address, interface_id, count(DISTINCT client) AS clients FROM flows GROUP BY address, interface_id
),
node_interface AS (
  SELECT address, interface_id FROM (
    SELECT address, interface_id,
           row_number() OVER (PARTITION BY address ORDER BY clients DESC, interface_id) AS rank
    FROM interface_clients
  ) ranked WHERE rank = 1
),
seen_at_node AS (
  SELECT DISTINCT f.address, f.client
  FROM flows f JOIN node_interface ni ON f.address = ni.address AND f.interface_id = ni.interface_id
),
counted AS (
  SELECT f.address, f.client, sum(f.bytes) AS bytes
  FROM flows f
  LEFT JOIN node_interface ni ON f.address = ni.address
  LEFT JOIN seen_at_node s ON f.address = s.address AND f.client = s.client
  WHERE s.client IS NULL OR f.interface_id = ni.interface_id
  GROUP BY f.address, f.client
),
client_zone AS (
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
            THEN CAST(t.cross_zone_bytes AS DOUBLE) * 2 * {price_per_gb} / 1e9 * 2592000 / (w.window_end - w.window_start) END
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
SELECT 'client', client, 'replica', client_zone, NULL, bytes, NULL, NULL, NULL, NULL
FROM clients WHERE rank <= 20
"#
    );
    sql
}
