//! Athena's answer to [`super::athena::pairs_query`], read into [`Counts`], the figures' input
//! that the file audit's tally also gives. Every value is checked (its column, its kind, a
//! whole number, an address of the map's nodes), the rows must add up (every record read is
//! counted or left out), and anything else is an error naming the column: a broken or hostile
//! endpoint cannot forge a report, and nothing it sends can panic.

use std::collections::HashMap;
use std::net::IpAddr;

use super::athena::PAIRS_COLUMNS;
use super::tally::{Count, Counted, Counts, LeftOut};
use super::topology::Node;

/// One row: each column's value, `None` for SQL NULL.
pub type Row = Vec<Option<String>>;

/// The most rows an answer may have: one per client and node, plus a few (a VPC of a million
/// clients reading from ten nodes is ten million).
pub const MOST_ROWS: usize = 20_000_000;

/// Up to 40 characters of a value, escaped ([`locality_resolve::printable`]).
fn shown(value: &str) -> String {
    locality_resolve::printable::printable_cut(value, 40)
}

/// A whole number as Athena prints one (decimal digits only).
fn number(row: usize, column: &str, value: Option<&str>) -> Result<u64, String> {
    let value = value.ok_or_else(|| format!("Athena's row {row}: {column} is empty where a number belongs"))?;
    if value.is_empty() || value.len() > 20 || !value.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "Athena's row {row}: {column} \"{}\" is not a whole number",
            shown(value)
        ));
    }
    value
        .parse()
        .map_err(|_| format!("Athena's row {row}: {column} \"{}\" is too large", shown(value)))
}

/// The longest value a row may hold (bytes): addresses, numbers, reasons and interface ids are
/// far shorter; a longer one is refused as the page arrives, never held.
pub const MAX_VALUE_BYTES: usize = 256;

/// Athena's rows read one at a time, as each page arrives: each row is checked and counted
/// then dropped, so an answer's memory is its distinct pairs (at most `--max-clients` clients),
/// never its rows.
#[derive(Debug)]
pub struct RowReader {
    node_of: HashMap<IpAddr, usize>,
    max_clients: u64,
    clients: std::collections::HashSet<IpAddr>,
    rows: usize,
    pairs: HashMap<(usize, IpAddr), Counted>,
    counted_records: u64,
    left_out: LeftOut,
    seen_reasons: Vec<String>,
    total: Option<u64>,
    window: Option<Option<(u64, u64)>>,
    between_nodes_bytes: Option<u64>,
    client_end_only_bytes: Option<u64>,
}

impl RowReader {
    /// A reader of the answer whose first row is `header`, with `nodes` the map's nodes and at
    /// most `max_clients` distinct clients (`--max-clients`).
    ///
    /// # Errors
    /// The header is not [`PAIRS_COLUMNS`].
    pub fn new(header: &[Option<String>], nodes: &[Node], max_clients: u64) -> Result<RowReader, String> {
        let names: Vec<&str> = header.iter().map(|h| h.as_deref().unwrap_or("")).collect();
        if names != PAIRS_COLUMNS {
            return Err(format!(
                "Athena's result has the columns [{}], not [{}]: it is not the answer to locality audit's query",
                names.iter().map(|n| shown(n)).collect::<Vec<_>>().join(", "),
                PAIRS_COLUMNS.join(", ")
            ));
        }
        Ok(RowReader {
            node_of: nodes.iter().enumerate().map(|(i, n)| (n.address, i)).collect(),
            max_clients,
            clients: std::collections::HashSet::new(),
            rows: 0,
            pairs: HashMap::new(),
            counted_records: 0,
            left_out: LeftOut::default(),
            seen_reasons: Vec::new(),
            total: None,
            window: None,
            between_nodes_bytes: None,
            client_end_only_bytes: None,
        })
    }

    /// The next row, checked and counted.
    ///
    /// # Errors
    /// A sentence naming the row and the column.
    pub fn add(&mut self, row: &[Option<String>]) -> Result<(), String> {
        self.rows += 1;
        let at = self.rows;
        if at > MOST_ROWS {
            return Err(format!("Athena's result has more than {MOST_ROWS} rows"));
        }
        if row.len() != PAIRS_COLUMNS.len() {
            return Err(format!(
                "Athena's row {at} has {} values, not {}",
                row.len(),
                PAIRS_COLUMNS.len()
            ));
        }
        if let Some((column, long)) = row
            .iter()
            .enumerate()
            .find_map(|(i, v)| v.as_deref().filter(|v| v.len() > MAX_VALUE_BYTES).map(|v| (i, v)))
        {
            return Err(format!(
                "Athena's row {at}: {} holds {} bytes, more than the {MAX_VALUE_BYTES} any value of the answer needs (\"{}\")",
                PAIRS_COLUMNS[column],
                long.len(),
                shown(long)
            ));
        }
        let value = |column: usize| row[column].as_deref();
        let kind = value(0).unwrap_or("");
        match kind {
            "pair" => {
                let address = |column: usize| -> Result<IpAddr, String> {
                    let text = value(column).unwrap_or("");
                    text.parse().map_err(|_| {
                        format!(
                            "Athena's row {at}: {} \"{}\" is not an IP address",
                            PAIRS_COLUMNS[column],
                            shown(text)
                        )
                    })
                };
                let (node_address, client) = (address(1)?, address(2)?);
                let node = *self
                    .node_of
                    .get(&node_address)
                    .ok_or_else(|| format!("Athena's row {at}: name {node_address} is not a node of the map"))?;
                if self.node_of.contains_key(&client) {
                    return Err(format!("Athena's row {at}: detail {client} is a node, not a client"));
                }
                if self.clients.insert(client) && self.clients.len() as u64 > self.max_clients {
                    return Err(format!(
                        "more than {} distinct clients in Athena's answer (at row {at}; --max-clients {}): narrow the days (--since/--until), or raise --max-clients",
                        self.max_clients, self.max_clients
                    ));
                }
                let bytes = number(at, "bytes", value(3))?;
                let records = number(at, "records", value(4))?;
                let interface = match value(5) {
                    None => None,
                    Some(name) if !name.is_empty() && name.len() <= super::flow_log::MAX_INTERFACE_ID_BYTES => {
                        Some(std::sync::Arc::from(name))
                    }
                    Some(name) => {
                        return Err(format!(
                            "Athena's row {at}: interface \"{}\" is not an interface id",
                            shown(name)
                        ))
                    }
                };
                self.counted_records = self.counted_records.saturating_add(records);
                if self
                    .pairs
                    .insert(
                        (node, client),
                        Counted {
                            node,
                            client,
                            bytes,
                            interface,
                        },
                    )
                    .is_some()
                {
                    return Err(format!(
                        "Athena's row {at}: the pair {node_address} and {client} comes twice"
                    ));
                }
            }
                "left_out" => {
                    let reason = value(1).unwrap_or("");
                    let records = number(at, "records", value(4))?;
                    let slot = match reason {
                        "unparsed" => &mut self.left_out.unparsed_lines,
                        "no_data" => &mut self.left_out.no_data,
                        "rejected" => &mut self.left_out.rejected,
                        "impossible" => &mut self.left_out.impossible,
                        "outside_window" => &mut self.left_out.outside_window,
                        "other_end" => &mut self.left_out.other_end,
                        "between_nodes" => &mut self.left_out.between_nodes,
                        "no_node" => &mut self.left_out.no_node,
                        other => {
                            return Err(format!(
                                "Athena's row {at}: name \"{}\" is not a reason a record is left out",
                                shown(other)
                            ))
                        }
                    };
                    if self.seen_reasons.iter().any(|r| r == reason) {
                        return Err(format!("Athena's row {at}: the reason {reason} comes twice"));
                    }
                    self.seen_reasons.push(reason.to_string());
                    *slot = records;
                }
                "between_nodes" => {
                    if self.between_nodes_bytes.replace(number(at, "bytes", value(3))?).is_some() {
                        return Err(format!("Athena's row {at}: between_nodes comes twice"));
                    }
                }
                "client_end_only" => {
                    if self.client_end_only_bytes.replace(number(at, "bytes", value(3))?).is_some() {
                        return Err(format!("Athena's row {at}: client_end_only comes twice"));
                    }
                }
                "window" => {
                    if self.window.is_some() {
                        return Err(format!("Athena's row {at}: window comes twice"));
                    }
                    self.window = Some(match (value(3), value(4)) {
                        (None, None) => None,
                        (start, end) => {
                            let (start, end) = (number(at, "bytes", start)?, number(at, "records", end)?);
                            if end < start {
                                return Err(format!(
                                    "Athena's row {at}: the window ends ({end}) before it starts ({start})"
                                ));
                            }
                            Some((start, end))
                        }
                    });
                }
                "records" => {
                    if self.total.replace(number(at, "records", value(4))?).is_some() {
                        return Err(format!("Athena's row {at}: records comes twice"));
                    }
                }
                other => {
                    return Err(format!(
                        "Athena's row {at}: kind \"{}\" is not pair, left_out, between_nodes, client_end_only, window or records",
                        shown(other)
                    ))
                }
            }
        Ok(())
    }

    /// The counts, once every row was read.
    ///
    /// # Errors
    /// What is missing, or what does not add up.
    pub fn finish(self) -> Result<Counts, String> {
        let RowReader {
            pairs,
            counted_records,
            left_out,
            total,
            window,
            between_nodes_bytes,
            client_end_only_bytes,
            ..
        } = self;
        let total =
            total.ok_or("Athena's result has no records row: it is not the answer to locality audit's query")?;
        let window =
            window.ok_or("Athena's result has no window row: it is not the answer to locality audit's query")?;
        let accounted = counted_records.saturating_add(left_out.total());
        if accounted != total {
            return Err(format!(
                "Athena's rows do not add up: {total} records read, but {counted_records} counted and {} left out",
                left_out.total()
            ));
        }
        let mut pairs: Vec<Counted> = pairs.into_values().filter(|c| c.bytes > 0).collect();
        pairs.sort_by_key(|c| (c.client, c.node));
        Ok(Counts {
            count: Count {
                pairs,
                records: counted_records,
                other_end: left_out.other_end,
                client_end_only_bytes: client_end_only_bytes.unwrap_or(0),
            },
            // Records are the lines that parsed; those Athena could tell were malformed are not.
            records: total.saturating_sub(left_out.unparsed_lines),
            left_out,
            first_skipped: None,
            between_nodes_bytes: between_nodes_bytes.unwrap_or(0),
            window,
        })
    }
}

/// The counts of `rows` (the header first), with `nodes` the map's nodes.
///
/// # Errors
/// A sentence naming the row and the column, or what does not add up.
pub fn counts(header: &[Option<String>], rows: &[Row], nodes: &[Node]) -> Result<Counts, String> {
    let mut reader = RowReader::new(header, nodes, u64::MAX)?;
    for row in rows {
        reader.add(row)?;
    }
    reader.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use locality_resolve::document::NodeRole;

    fn nodes() -> Vec<Node> {
        ["10.0.1.10", "10.0.1.11"]
            .iter()
            .enumerate()
            .map(|(i, a)| Node {
                address: a.parse().unwrap(),
                endpoint: format!("{a}:6379"),
                role: if i == 0 { NodeRole::Primary } else { NodeRole::Replica },
                zone: "ap-northeast-1a".into(),
                zone_id: None,
            })
            .collect()
    }

    fn row(values: &[Option<&str>]) -> Row {
        values.iter().map(|v| v.map(str::to_string)).collect()
    }

    fn header() -> Vec<Option<String>> {
        PAIRS_COLUMNS.iter().map(|c| Some(c.to_string())).collect()
    }

    fn good() -> Vec<Row> {
        vec![
            row(&[
                Some("pair"),
                Some("10.0.1.11"),
                Some("10.0.2.5"),
                Some("1000"),
                Some("4"),
                Some("eni-1"),
            ]),
            row(&[Some("left_out"), Some("other_end"), None, None, Some("4"), None]),
            row(&[Some("left_out"), Some("no_node"), None, None, Some("2"), None]),
            row(&[Some("between_nodes"), None, None, Some("700"), None, None]),
            row(&[Some("window"), None, None, Some("1796083200"), Some("1796083260"), None]),
            row(&[Some("records"), None, None, None, Some("10"), None]),
        ]
    }

    #[test]
    fn the_answer_becomes_counts() {
        let counts = counts(&header(), &good(), &nodes()).unwrap();
        assert_eq!(counts.count.pairs.len(), 1);
        assert_eq!((counts.count.pairs[0].node, counts.count.pairs[0].bytes), (1, 1000));
        assert_eq!(
            (counts.records, counts.count.records, counts.left_out.other_end),
            (10, 4, 4)
        );
        assert_eq!(counts.window, Some((1_796_083_200, 1_796_083_260)));
        assert_eq!(counts.between_nodes_bytes, 700);
    }

    /// A hostile or broken endpoint: each forgery is an error naming what is wrong.
    #[test]
    fn hostile_rows_are_refused_by_name() {
        let mut wrong_header = header();
        wrong_header[3] = Some("in_zone_share".into());
        assert!(counts(&wrong_header, &good(), &nodes())
            .unwrap_err()
            .contains("not the answer"));
        let cases: Vec<(usize, Row, &str)> = vec![
            (
                0,
                row(&[
                    Some("pair"),
                    Some("10.0.1.11"),
                    Some("10.0.2.5"),
                    Some("1e3"),
                    Some("4"),
                    None,
                ]),
                "bytes \"1e3\" is not a whole number",
            ),
            (
                0,
                row(&[
                    Some("pair"),
                    Some("10.0.1.11"),
                    Some("10.0.2.5"),
                    Some("-5"),
                    Some("4"),
                    None,
                ]),
                "is not a whole number",
            ),
            (
                0,
                row(&[Some("pair"), Some("10.0.1.11"), Some("10.0.2.5"), None, Some("4"), None]),
                "bytes is empty",
            ),
            (
                0,
                row(&[
                    Some("pair"),
                    Some("10.9.9.9"),
                    Some("10.0.2.5"),
                    Some("1"),
                    Some("4"),
                    None,
                ]),
                "not a node of the map",
            ),
            (
                0,
                row(&[
                    Some("pair"),
                    Some("10.0.1.11"),
                    Some("10.0.1.10"),
                    Some("1"),
                    Some("4"),
                    None,
                ]),
                "is a node, not a client",
            ),
            (
                0,
                row(&[
                    Some("pair"),
                    Some("10.0.1.11"),
                    Some("x\u{1b}[31m"),
                    Some("1"),
                    Some("4"),
                    None,
                ]),
                "detail \"x\\u{1b}[31m\" is not an IP address",
            ),
            (
                0,
                row(&[Some("summary"), None, None, None, Some("1"), None]),
                "kind \"summary\" is not",
            ),
            (
                1,
                row(&[Some("left_out"), Some("made_up"), None, None, Some("4"), None]),
                "not a reason",
            ),
            (
                5,
                row(&[Some("records"), None, None, None, Some("99999999999999999999999"), None]),
                "is not a whole number",
            ),
            (
                5,
                row(&[Some("records"), None, None, None, Some("11"), None]),
                "do not add up",
            ),
            (
                4,
                row(&[Some("window"), None, None, Some("20"), Some("10"), None]),
                "ends (10) before it starts (20)",
            ),
            (0, row(&[Some("pair"), Some("10.0.1.11")]), "has 2 values"),
            (
                0,
                row(&[
                    Some("pair"),
                    Some("10.0.1.11"),
                    Some("10.0.2.5"),
                    Some("1"),
                    Some("4"),
                    Some(""),
                ]),
                "is not an interface id",
            ),
        ];
        for (at, bad, said) in cases {
            let mut rows = good();
            rows[at] = bad;
            let refused = counts(&header(), &rows, &nodes()).unwrap_err();
            assert!(refused.contains(said), "{said}: {refused}");
            assert!(!refused.contains('\u{1b}'), "{refused}");
        }
        // A forged pair twice, and a missing records row.
        let mut rows = good();
        rows.push(rows[0].clone());
        assert!(counts(&header(), &rows, &nodes()).unwrap_err().contains("comes twice"));
        let rows: Vec<Row> = good()
            .into_iter()
            .filter(|r| r[0].as_deref() != Some("records"))
            .collect();
        assert!(counts(&header(), &rows, &nodes())
            .unwrap_err()
            .contains("no records row"));
    }
}
