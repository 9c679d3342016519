//! `locality audit` against flow logs whose truth is known: a generated topology (three zones, a
//! replica in each, the primary, clients in each zone's subnets, two clients misrouted across
//! zones, one outside every subnet, replication between nodes, traffic to other services,
//! NODATA and REJECT records), written in the default format and in a custom VPC-wide format
//! with flow-direction (every flow at both interfaces), in folders and in moto's S3 under the
//! AWSLogs layout. The audit's figures must equal the generator's to the byte; the Athena query
//! must give the same figures in DuckDB; bad lines, truncated gzip, --min-share, the
//! Prometheus textfile (promtool) and the subnets from moto's EC2 are tested as well.

mod common;

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::moto::{Moto, ENV};
use serde_json::json;

/// 2026-12-01 00:00:00 UTC.
const T0: u64 = 1_796_083_200;
const ACCOUNT: &str = "123456789012";
const DEFAULT_HEADER: &str =
    "version account-id interface-id srcaddr dstaddr srcport dstport protocol packets bytes start end action log-status";
/// A custom format, another order, with flow-direction (what a VPC-wide log might use).
const CUSTOM_HEADER: &str =
    "interface-id flow-direction bytes srcaddr dstaddr start end action log-status pkt-srcaddr version";
/// A custom format in yet another order, without flow-direction.
const PLAIN_HEADER: &str = "account-id srcaddr dstaddr bytes start end interface-id log-status action";

const ZONES: [&str; 3] = ["ap-northeast-1a", "ap-northeast-1c", "ap-northeast-1d"];
const PRIMARY: &str = "10.0.1.10";
const REPLICAS: [&str; 3] = ["10.0.1.11", "10.0.2.11", "10.0.3.11"];
const MISROUTED: &str = "10.0.2.150";
const MISROUTED_LESS: &str = "10.0.3.150";
/// (Not in 172.31.0.0/16: moto, as AWS, has a default VPC there, with a subnet in each zone.)
const OUTSIDE: &str = "192.168.77.9";

fn zone_of(ip: &str) -> Option<&'static str> {
    match ip.split('.').nth(2) {
        Some("1") if ip.starts_with("10.0.") => Some(ZONES[0]),
        Some("2") if ip.starts_with("10.0.") => Some(ZONES[1]),
        Some("3") if ip.starts_with("10.0.") => Some(ZONES[2]),
        _ => None,
    }
}

fn eni(ip: &str) -> String {
    format!("eni-{}", ip.replace('.', ""))
}

/// One record, in the three formats.
struct Line {
    default: String,
    custom: String,
    plain: String,
}

/// The formats the generated records are written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    /// The default format (version 2): no flow-direction.
    Default,
    /// [`CUSTOM_HEADER`]: with flow-direction.
    Custom,
    /// [`PLAIN_HEADER`]: another order, no flow-direction.
    Plain,
}

impl Format {
    const ALL: [Format; 3] = [Format::Default, Format::Custom, Format::Plain];

    fn header(self) -> &'static str {
        match self {
            Format::Default => DEFAULT_HEADER,
            Format::Custom => CUSTOM_HEADER,
            Format::Plain => PLAIN_HEADER,
        }
    }

    fn of(self, line: &Line) -> &str {
        match self {
            Format::Default => &line.default,
            Format::Custom => &line.custom,
            Format::Plain => &line.plain,
        }
    }
}

/// Which interfaces the flow logs capture.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Capture {
    /// Every interface of the VPC: each flow at both ends.
    VpcWide,
    /// The nodes' interfaces only (flow logs on the cache's subnets).
    NodeInterfaces,
    /// The clients' interfaces only (flow logs on the clients' subnets): a client outside every
    /// subnet is never seen.
    ClientInterfaces,
    /// VPC-wide, but one pair (the lesser misrouted client with `ap-northeast-1c`'s replica) is
    /// recorded only at its client's interface: the new user's set of issue 51.
    OnePairAtItsClientOnly,
    /// The clients' subnets all the time; `ap-northeast-1c`'s replica's subnet from 03:00 of the
    /// 6-hour window on (case G of issue 56: a node's flow log turned on mid-window).
    NodeLogStartsMidWindow,
    /// VPC-wide, then the flow log of zone a's clients stops at 02:00 and that of zone a's
    /// replica at 04:00 (after which its in-zone reads are recorded nowhere).
    LogsStopMidWindow,
    /// VPC-wide; `ap-northeast-1c`'s replica's interface is replaced at 03:00 by another with
    /// the same address (case H of issue 56).
    InterfaceReplaced,
}

/// The minute (of the 360) at which [`Capture`]'s changes happen.
const CHANGE_MINUTE: u64 = 180;

impl Capture {
    const ALL: [Capture; 7] = [
        Capture::VpcWide,
        Capture::NodeInterfaces,
        Capture::ClientInterfaces,
        Capture::OnePairAtItsClientOnly,
        Capture::NodeLogStartsMidWindow,
        Capture::LogsStopMidWindow,
        Capture::InterfaceReplaced,
    ];

    fn at_node(self, client: &str, node: &str, minute: u64) -> bool {
        match self {
            Capture::VpcWide | Capture::NodeInterfaces | Capture::InterfaceReplaced => true,
            Capture::ClientInterfaces => false,
            Capture::OnePairAtItsClientOnly => !(client == MISROUTED_LESS && node == REPLICAS[1]),
            Capture::NodeLogStartsMidWindow => node != REPLICAS[1] || minute >= CHANGE_MINUTE,
            Capture::LogsStopMidWindow => node != REPLICAS[0] || minute < CHANGE_MINUTE + 60,
        }
    }

    fn at_client(self, client: &str, minute: u64) -> bool {
        zone_of(client).is_some()
            && self != Capture::NodeInterfaces
            && !(self == Capture::LogsStopMidWindow
                && zone_of(client) == Some(ZONES[0])
                && minute >= CHANGE_MINUTE - 60)
    }

    /// The interface of `node` at `minute`.
    fn node_eni(self, node: &str, minute: u64) -> String {
        if self == Capture::InterfaceReplaced && node == REPLICAS[1] && minute >= CHANGE_MINUTE {
            format!("{}-new", eni(node))
        } else {
            eni(node)
        }
    }

    /// Whether records at the nodes' interfaces other than clients' flows are captured.
    fn nodes_captured(self) -> bool {
        self != Capture::ClientInterfaces
    }
}

/// One record of a minute's capture window: `end` is the window's last second, the second of its
/// last packet (AWS's `[start, end]` is closed: the next window's records start a second later).
fn record(at: &str, direction: &str, src: &str, dst: &str, bytes: u64, start: u64, action: &str) -> Line {
    Line {
        default: format!(
            "2 {ACCOUNT} {at} {src} {dst} 40000 6379 6 {} {bytes} {start} {} {action} OK",
            bytes / 100 + 1,
            start + 59
        ),
        custom: format!(
            "{at} {direction} {bytes} {src} {dst} {start} {} {action} OK {src} 5",
            start + 59
        ),
        plain: format!("{ACCOUNT} {src} {dst} {bytes} {start} {} {at} OK {action}", start + 59),
    }
}

fn no_data(at: &str, start: u64) -> Line {
    Line {
        default: format!("2 {ACCOUNT} {at} - - - - - - - {start} {} - NODATA", start + 59),
        custom: format!("{at} - - - - {start} {} - NODATA - 5", start + 59),
        plain: format!("{ACCOUNT} - - - {start} {} {at} NODATA -", start + 59),
    }
}

/// What the generator knows: the figures the audit must find.
#[derive(Default, Debug)]
struct Truth {
    /// (node, client) → bytes, both directions.
    pairs: BTreeMap<(String, String), u64>,
    window: (u64, u64),
    records: u64,
    /// Records at the end that counts (the node's, or the client's where the node's is not captured).
    counted: u64,
    /// Records at the other end of a counted flow.
    other_end: u64,
    between_nodes: u64,
    no_node: u64,
    no_data: u64,
    rejected: u64,
}

impl Truth {
    fn role(node: &str) -> &'static str {
        if node == PRIMARY {
            "primary"
        } else {
            "replica"
        }
    }

    /// (in-zone replica bytes, cross-zone replica bytes, primary cross-zone, unknown zone).
    fn totals(&self) -> (u64, u64, u64, u64) {
        let (mut inside, mut across, mut primary, mut unknown) = (0, 0, 0, 0);
        for ((node, client), bytes) in &self.pairs {
            match zone_of(client) {
                None => unknown += bytes,
                Some(zone) if zone == zone_of(node).unwrap() => {
                    if Truth::role(node) == "replica" {
                        inside += bytes;
                    }
                }
                Some(_) if Truth::role(node) == "replica" => across += bytes,
                Some(_) => primary += bytes,
            }
        }
        (inside, across, primary, unknown)
    }

    fn node_bytes(&self, node: &str) -> (u64, u64) {
        let mut all = 0;
        let mut across = 0;
        for ((n, client), bytes) in &self.pairs {
            if n == node {
                all += bytes;
                if zone_of(client).is_some_and(|z| Some(z) != zone_of(node)) {
                    across += bytes;
                }
            }
        }
        (all, across)
    }

    /// Per cross-zone client, the replicas it read from: (endpoint, zone, bytes), most first.
    fn client_nodes(&self, client: &str) -> Vec<(String, String, u64)> {
        let mut nodes: Vec<(String, String, u64)> = self
            .pairs
            .iter()
            .filter(|((node, c), _)| {
                c == client && Truth::role(node) == "replica" && zone_of(c).is_some_and(|z| Some(z) != zone_of(node))
            })
            .map(|((node, _), bytes)| (format!("{node}:6379"), zone_of(node).unwrap().to_string(), *bytes))
            .collect();
        nodes.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(&b.0)));
        nodes
    }

    /// Clients in no known subnet, most first: (address, bytes).
    fn unknown_zone_clients(&self) -> Vec<(String, u64)> {
        let mut clients: BTreeMap<String, u64> = BTreeMap::new();
        for ((_, client), bytes) in &self.pairs {
            if zone_of(client).is_none() {
                *clients.entry(client.clone()).or_default() += bytes;
            }
        }
        let mut list: Vec<(String, u64)> = clients.into_iter().collect();
        list.sort_by_key(|c| std::cmp::Reverse(c.1));
        list
    }

    /// The monthly estimate of `bytes` across zones, as the audit computes it.
    fn monthly(&self, bytes: u64) -> f64 {
        bytes as f64 * 0.01 / 1e9 * 2_592_000.0 / (self.window.1 - self.window.0) as f64
    }

    fn cross_zone_clients(&self) -> Vec<(String, u64)> {
        let mut clients: BTreeMap<String, u64> = BTreeMap::new();
        for ((node, client), bytes) in &self.pairs {
            if Truth::role(node) == "replica" && zone_of(client).is_some_and(|z| Some(z) != zone_of(node)) {
                *clients.entry(client.clone()).or_default() += bytes;
            }
        }
        let mut list: Vec<(String, u64)> = clients.into_iter().collect();
        list.sort_by_key(|c| std::cmp::Reverse(c.1));
        list
    }
}

/// A deterministic pseudo-random sequence.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, below: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % below
    }
}

/// The records (every flow at both ends where both are in the VPC) and the truth.
fn generate() -> (Vec<Line>, Truth) {
    generate_captured(Capture::VpcWide)
}

/// The records as `capture` records them, and the truth of what they hold.
fn generate_captured(capture: Capture) -> (Vec<Line>, Truth) {
    generate_at(capture, T0)
}

/// [`generate_captured`] on the 6 hours from `t0` (each day its own pseudo-random bytes).
fn generate_at(capture: Capture, t0: u64) -> (Vec<Line>, Truth) {
    let mut rng = Lcg(42 + (t0 - T0) / 86_400);
    let mut lines = Vec::new();
    let mut truth = Truth {
        window: (u64::MAX, 0),
        ..Truth::default()
    };
    let flow =
        |lines: &mut Vec<Line>, truth: &mut Truth, client: &str, node: &str, request: u64, answer: u64, start: u64| {
            let minute = (start - t0) / 60;
            let (at_node, at_client) = (capture.at_node(client, node, minute), capture.at_client(client, minute));
            if at_node {
                // At the node: the request arrives (ingress), the answer leaves (egress).
                let node_eni = capture.node_eni(node, minute);
                lines.push(record(&node_eni, "ingress", client, node, request, start, "ACCEPT"));
                lines.push(record(&node_eni, "egress", node, client, answer, start, "ACCEPT"));
            }
            if at_client {
                // At the client, when its interface is in the VPC and captured.
                let client_eni = eni(client);
                lines.push(record(&client_eni, "egress", client, node, request, start, "ACCEPT"));
                lines.push(record(&client_eni, "ingress", node, client, answer, start, "ACCEPT"));
            }
            if at_node || at_client {
                *truth.pairs.entry((node.to_string(), client.to_string())).or_default() += request + answer;
                truth.window = (truth.window.0.min(start), truth.window.1.max(start + 59));
                truth.counted += 2;
                if at_node && at_client {
                    truth.other_end += 2;
                }
            }
        };
    for minute in 0..360u64 {
        let start = t0 + minute * 60;
        for (z, replica) in REPLICAS.iter().enumerate() {
            for host in 100..104 {
                let client = format!("10.0.{}.{host}", z + 1);
                let (request, answer) = (200 + rng.next(300), 5_000 + rng.next(20_000));
                flow(&mut lines, &mut truth, &client, replica, request, answer, start);
                if minute % 5 == 0 {
                    // Writes to the primary (in zone a): cross-zone from c and d.
                    flow(
                        &mut lines,
                        &mut truth,
                        &client,
                        PRIMARY,
                        2_000 + rng.next(1_000),
                        100,
                        start,
                    );
                }
            }
        }
        // Misrouted: a client in c reading a's replica (the most), one in d reading c's.
        flow(
            &mut lines,
            &mut truth,
            MISROUTED,
            REPLICAS[0],
            300,
            40_000 + rng.next(10_000),
            start,
        );
        if minute % 2 == 0 {
            flow(
                &mut lines,
                &mut truth,
                MISROUTED_LESS,
                REPLICAS[1],
                300,
                9_000 + rng.next(1_000),
                start,
            );
        }
        // A client outside every subnet (a peered VPC): only the node's interface sees it.
        if minute % 10 == 0 {
            flow(&mut lines, &mut truth, OUTSIDE, REPLICAS[0], 250, 3_000, start);
        }
        // Replication (between nodes) and other services: not a client's reads.
        if capture.nodes_captured() {
            for replica in REPLICAS {
                lines.push(record(&eni(PRIMARY), "egress", PRIMARY, replica, 700, start, "ACCEPT"));
                truth.between_nodes += 1;
            }
        }
        if capture.at_client("10.0.1.100", minute) {
            lines.push(record(
                &eni("10.0.1.100"),
                "egress",
                "10.0.1.100",
                "10.0.9.9",
                1_234,
                start,
                "ACCEPT",
            ));
            truth.no_node += 1;
        }
        // Rejected: nothing delivered.
        if minute % 30 == 0 && capture.nodes_captured() {
            truth.rejected += 1;
            truth.no_data += 1;
            lines.push(record(
                &eni(REPLICAS[0]),
                "ingress",
                "10.0.2.101",
                REPLICAS[0],
                60,
                start,
                "REJECT",
            ));
            lines.push(no_data(&eni(REPLICAS[2]), start));
        }
    }
    // Other-service and replication records widen the window as flows do.
    truth.records = lines.len() as u64;
    (lines, truth)
}

fn map_json() -> String {
    let node = |endpoint: &str, role: &str, zone: &str| {
        format!(r#"{{"endpoint":"{endpoint}:6379","role":"{role}","zone":"{zone}"}}"#)
    };
    let mut nodes = vec![node(PRIMARY, "primary", ZONES[0])];
    for (replica, zone) in REPLICAS.iter().zip(ZONES) {
        nodes.push(node(replica, "replica", zone));
    }
    let zones: Vec<String> = REPLICAS
        .iter()
        .zip(ZONES)
        .map(|(r, z)| format!(r#""{z}":"{r}:6379""#))
        .collect();
    format!(
        r#"{{"version":1,"fallback":"reader.example:6379","zones":{{{}}},"nodes":[{}]}}"#,
        zones.join(","),
        nodes.join(",")
    )
}

fn subnets_json() -> String {
    let subnets: Vec<String> = ZONES
        .iter()
        .enumerate()
        .map(|(n, zone)| {
            format!(
                r#"{{"SubnetId":"subnet-{n}","CidrBlock":"10.0.{}.0/24","AvailabilityZone":"{zone}","AvailabilityZoneId":"apne1-az{}","Ipv6CidrBlockAssociationSet":[]}}"#,
                n + 1,
                n + 1
            )
        })
        .collect();
    format!(r#"{{"Subnets":[{}]}}"#, subnets.join(","))
}

fn gzip(text: &str) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(text.as_bytes()).unwrap();
    encoder.finish().unwrap()
}

/// Splits the records into `parts` files' texts, each with `header` first when given.
fn split(lines: &[String], parts: usize, header: Option<&str>) -> Vec<String> {
    let per = lines.len().div_ceil(parts);
    lines
        .chunks(per)
        .map(|chunk| {
            let mut text = header.map(|h| format!("{h}\n")).unwrap_or_default();
            for line in chunk {
                text.push_str(line);
                text.push('\n');
            }
            text
        })
        .collect()
}

/// The default-format records in a folder: three gzip files with a header (nested folders, as
/// S3 delivers them), one plain file without a header, and a file that is not a flow log.
fn default_format_folder(root: &Path, lines: &[Line]) {
    let texts: Vec<String> = lines.iter().map(|l| l.default.clone()).collect();
    let parts = split(&texts, 4, None);
    for (n, part) in parts.iter().enumerate() {
        if n == 3 {
            std::fs::write(root.join("headerless.log"), part).unwrap();
        } else {
            let dir = root.join(format!("2026/12/0{}", n + 1));
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(
                dir.join(format!("{ACCOUNT}_vpcflowlogs_ap-northeast-1_fl-1_part{n}.log.gz")),
                gzip(&format!("{DEFAULT_HEADER}\n{part}")),
            )
            .unwrap();
        }
    }
    std::fs::write(root.join("README.txt"), "not a flow log\n").unwrap();
}

fn locality() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_locality"))
}

fn audit(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(locality());
    cmd.arg("audit").args(args);
    cmd.env_remove("AWS_PROFILE").env("AWS_EC2_METADATA_DISABLED", "true");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Every figure of the audit's JSON against the truth.
fn assert_figures(json: &serde_json::Value, truth: &Truth, what: &str) {
    let (inside, across, primary, unknown) = truth.totals();
    let share = inside as f64 / (inside + across) as f64;
    assert_eq!(json["in_zone_share"].as_f64(), Some(share), "{what}: share");
    assert_eq!(
        json["in_zone_share_undefined_because"],
        serde_json::Value::Null,
        "{what}"
    );
    assert_eq!(json["in_zone_bytes"], inside, "{what}");
    assert_eq!(json["cross_zone_bytes"], across, "{what}");
    assert_eq!(json["primary_cross_zone_bytes"], primary, "{what}");
    assert_eq!(json["unknown_zone_bytes"], unknown, "{what}");
    assert_eq!(json["window"]["start"], truth.window.0, "{what}");
    assert_eq!(json["window"]["end"], truth.window.1, "{what}");
    // As computed: not rounded.
    assert_eq!(
        json["estimated_monthly_cost_usd"].as_f64(),
        Some(truth.monthly(across)),
        "{what}"
    );
    for node in json["nodes"].as_array().unwrap() {
        let endpoint = node["endpoint"].as_str().unwrap();
        let address = endpoint.trim_end_matches(":6379");
        let (all, cross) = truth.node_bytes(address);
        assert_eq!(node["bytes"], all, "{what}: {endpoint}");
        assert_eq!(node["cross_zone_bytes"], cross, "{what}: {endpoint}");
        assert_eq!(node["role"], Truth::role(address), "{what}: {endpoint}");
    }
    let clients: Vec<(String, u64)> = json["cross_zone_clients"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["address"].as_str().unwrap().to_string(), c["bytes"].as_u64().unwrap()))
        .collect();
    assert_eq!(clients, truth.cross_zone_clients(), "{what}");
    assert_eq!(clients[0].0, MISROUTED, "{what}: the misrouted client at the top");
    // Who read what from where, and what each costs a month.
    for client in json["cross_zone_clients"].as_array().unwrap() {
        let address = client["address"].as_str().unwrap();
        let nodes: Vec<(String, String, u64)> = client["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| {
                (
                    n["endpoint"].as_str().unwrap().to_string(),
                    n["zone"].as_str().unwrap().to_string(),
                    n["bytes"].as_u64().unwrap(),
                )
            })
            .collect();
        assert_eq!(nodes, truth.client_nodes(address), "{what}: {address}");
        let bytes = client["bytes"].as_u64().unwrap();
        assert_eq!(
            client["estimated_monthly_cost_usd"].as_f64(),
            Some(truth.monthly(bytes)),
            "{what}: {address}"
        );
    }
    let unknown_clients: Vec<(String, u64)> = json["unknown_zone_clients"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["address"].as_str().unwrap().to_string(), c["bytes"].as_u64().unwrap()))
        .collect();
    assert_eq!(unknown_clients, truth.unknown_zone_clients(), "{what}");
    for client in json["unknown_zone_clients"].as_array().unwrap() {
        // Only the node's interface sees a client outside every subnet.
        assert_eq!(client["interface"], eni(REPLICAS[0]), "{what}: {client}");
        assert_eq!(
            client["nodes"][0]["endpoint"],
            format!("{}:6379", REPLICAS[0]),
            "{what}"
        );
    }
    // Every record read is counted or left out for a reason.
    assert_eq!(json["records"], truth.records, "{what}");
    assert_eq!(json["counted_records"], truth.counted, "{what}");
    let skipped = &json["skipped"];
    assert_eq!(skipped["other_end"], truth.other_end, "{what}: {skipped}");
    assert_eq!(skipped["between_nodes"], truth.between_nodes, "{what}: {skipped}");
    assert_eq!(skipped["no_node"], truth.no_node, "{what}: {skipped}");
    assert_eq!(skipped["no_data"], truth.no_data, "{what}: {skipped}");
    assert_eq!(skipped["rejected"], truth.rejected, "{what}: {skipped}");
    assert_eq!(skipped["impossible"], 0, "{what}: {skipped}");
    let left_out: u64 = skipped
        .as_object()
        .unwrap()
        .iter()
        .filter(|(reason, _)| *reason != "unparsed_lines")
        .map(|(_, n)| n.as_u64().unwrap())
        .sum();
    assert_eq!(
        truth.counted + left_out,
        truth.records,
        "{what}: counted and left out make every record"
    );
}

struct Fixture {
    dir: tempfile::TempDir,
    lines: Vec<Line>,
    truth: Truth,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let (lines, truth) = generate();
        std::fs::write(dir.path().join("map.json"), map_json()).unwrap();
        std::fs::write(dir.path().join("subnets.json"), subnets_json()).unwrap();
        std::fs::create_dir_all(dir.path().join("default")).unwrap();
        default_format_folder(&dir.path().join("default"), &lines);
        Fixture { dir, lines, truth }
    }

    fn path(&self, name: &str) -> String {
        self.dir.path().join(name).display().to_string()
    }
}

#[test]
fn a_folder_of_default_format_logs_gives_the_generators_figures_to_the_byte() {
    let f = Fixture::new();
    let out = audit(
        &[
            "--map",
            &f.path("map.json"),
            "--subnets",
            &f.path("subnets.json"),
            "--flow-logs",
            &f.path("default"),
            "--format",
            "json",
        ],
        &[],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_figures(&json, &f.truth, "default format, VPC-wide");
    assert_eq!(json["skipped"]["unparsed_lines"], 0);
    assert_eq!(json["skipped"]["no_data"], 12);
    assert_eq!(json["skipped"]["rejected"], 12);
    let (inside, across, ..) = f.truth.totals();
    eprintln!(
        "default format: {} records, share {:.4} ({inside} in, {across} across), {:?}",
        f.truth.records, json["in_zone_share"], json["cross_zone_clients"][0]
    );

    // The table: what a person reads, the misrouted client first.
    let out = audit(
        &[
            "--map",
            &f.path("map.json"),
            "--subnets",
            &f.path("subnets.json"),
            "--flow-logs",
            &f.path("default"),
        ],
        &[],
    );
    let table = text(&out.stdout);
    assert!(out.status.success());
    let after = table
        .split("Clients reading across zones, worst first:")
        .nth(1)
        .unwrap();
    let first = after.lines().nth(2).unwrap();
    assert!(first.trim_start().starts_with(MISROUTED), "{table}");
    assert!(table.contains("In-zone share"), "{table}");
    eprintln!("{table}");

    // --min-share in both directions.
    let share = json["in_zone_share"].as_f64().unwrap();
    let below = format!("{:.3}", share - 0.01);
    let above = format!("{:.3}", share + 0.01);
    let base = [
        "--map",
        &f.path("map.json"),
        "--subnets",
        &f.path("subnets.json"),
        "--flow-logs",
        &f.path("default"),
    ];
    let out = audit(&[&base[..], &["--min-share", &below]].concat(), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = audit(&[&base[..], &["--min-share", &above]].concat(), &[]);
    assert_eq!(out.status.code(), Some(3));
    assert!(text(&out.stderr).contains("below --min-share"), "{}", text(&out.stderr));
    assert!(!out.stdout.is_empty(), "the report is printed before failing");
    let out = audit(&[&base[..], &["--min-share", "95"]].concat(), &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("from 0 to 1"), "{}", text(&out.stderr));
}

#[test]
fn the_prometheus_textfile_passes_promtool() {
    let f = Fixture::new();
    let out = audit(
        &[
            "--map",
            &f.path("map.json"),
            "--subnets",
            &f.path("subnets.json"),
            "--flow-logs",
            &f.path("default"),
            "--format",
            "prometheus",
        ],
        &[],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let textfile = f.dir.path().join("locality_audit.prom");
    std::fs::write(&textfile, &out.stdout).unwrap();
    let check = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::fs::File::open(&textfile).unwrap())
        .output()
        .expect("promtool (Debian's prometheus package; scripts/test installs it)");
    assert!(
        check.status.success() && check.stdout.is_empty() && check.stderr.is_empty(),
        "promtool: {}{}",
        text(&check.stdout),
        text(&check.stderr)
    );
    let metrics = text(&out.stdout);
    let (inside, across, ..) = f.truth.totals();
    let share = inside as f64 / (inside + across) as f64;
    assert!(
        metrics.contains(&format!("locality_audit_in_zone_share_ratio {share}\n")),
        "{metrics}"
    );
    assert!(
        metrics.contains(&format!(
            "locality_audit_cross_zone_bytes{{role=\"replica\"}} {across}\n"
        )),
        "{metrics}"
    );
}

#[test]
fn bad_lines_are_skipped_and_named_and_a_truncated_gzip_fails_naming_it() {
    let f = Fixture::new();
    let bad = f.dir.path().join("bad");
    std::fs::create_dir_all(&bad).unwrap();
    default_format_folder(&bad, &f.lines);
    // A file with a header, a NODATA record, a line cut short and one with a bad address.
    std::fs::write(
        bad.join("broken.log"),
        format!(
            "{DEFAULT_HEADER}\n2 {ACCOUNT} eni-x - - - - - - - {T0} {} - NODATA\n2 {ACCOUNT} eni-x 10.0.1.5 10.0.1.11 1\n2 {ACCOUNT} eni-x 10.0.1.5 10.0.1.300 1 2 6 1 50 {T0} {} ACCEPT OK\n",
            T0 + 60,
            T0 + 60
        ),
    )
    .unwrap();
    let out = audit(
        &[
            "--map",
            &f.path("map.json"),
            "--subnets",
            &f.path("subnets.json"),
            "--flow-logs",
            &bad.display().to_string(),
            "--format",
            "json",
        ],
        &[],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["skipped"]["unparsed_lines"], 2);
    assert_eq!(json["skipped"]["no_data"], 13);
    // (The broken file's NODATA record is one more than the truth's.)
    assert_eq!(json["records"], f.truth.records + 1);
    let mut with_it = json.clone();
    with_it["records"] = json!(f.truth.records);
    with_it["skipped"]["no_data"] = json!(f.truth.no_data);
    assert_figures(&with_it, &f.truth, "with bad lines");
    // The table's count: records read = counted + left out; lines that did not parse apart.
    let out = audit(
        &[
            "--map",
            &f.path("map.json"),
            "--subnets",
            &f.path("subnets.json"),
            "--flow-logs",
            &bad.display().to_string(),
        ],
        &[],
    );
    let table = text(&out.stdout);
    let read = f.truth.records + 1;
    assert!(
        table.contains(&format!(
            "Records          {read} read, {} counted, {} left out; 2 line(s) did not parse\n",
            f.truth.counted,
            read - f.truth.counted
        )),
        "{table}"
    );
    assert!(
        table.contains("\n                 2 lines that did not parse\n")
            || table.contains("Left out         2 lines that did not parse\n"),
        "{table}"
    );
    let first = json["first_skipped"].as_str().unwrap();
    assert!(
        first.contains("broken.log, line 3") && first.contains("6 fields"),
        "{first}"
    );
    assert!(
        text(&out.stderr).contains("broken.log, line 3"),
        "{}",
        text(&out.stderr)
    );

    // A gzip file cut in the middle: an error naming it, and nothing printed as if whole.
    let truncated = f.dir.path().join("truncated");
    std::fs::create_dir_all(&truncated).unwrap();
    let whole = gzip(&format!(
        "{DEFAULT_HEADER}\n{}\n",
        f.lines
            .iter()
            .map(|l| l.default.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    ));
    std::fs::write(truncated.join("cut.log.gz"), &whole[..whole.len() / 2]).unwrap();
    let out = audit(
        &[
            "--map",
            &f.path("map.json"),
            "--subnets",
            &f.path("subnets.json"),
            "--flow-logs",
            &truncated.display().to_string(),
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty(), "{}", text(&out.stdout));
    let err = text(&out.stderr);
    assert!(
        err.contains("cut.log.gz") && err.contains("nothing of it is counted"),
        "{err}"
    );
    eprintln!("truncated: {err}");

    // A location that does not exist, and one the audit does not read.
    let out = audit(
        &[
            "--map",
            &f.path("map.json"),
            "--subnets",
            &f.path("subnets.json"),
            "--flow-logs",
            &f.path("nowhere"),
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("nowhere"), "{}", text(&out.stderr));
    let out = audit(
        &[
            "--map",
            &f.path("map.json"),
            "--subnets",
            &f.path("subnets.json"),
            "--flow-logs",
            "gs://bucket/x",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("s3://BUCKET/PREFIX"),
        "{}",
        text(&out.stderr)
    );
}

/// The custom VPC-wide format with flow-direction, as S3 delivery lays it out, in moto's S3;
/// the subnets from moto's EC2 (DescribeSubnets); the endpoint from AWS_ENDPOINT_URL (an IP
/// address: path-style requests).
#[test]
fn a_custom_format_in_s3_with_subnets_from_ec2_gives_the_same_figures() {
    let f = Fixture::new();
    let moto = Moto::start();
    let prefix = format!("AWSLogs/{ACCOUNT}/vpcflowlogs/ap-northeast-1/2026/12/01/");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let config = moto.config().await;
        let ec2 = aws_sdk_ec2::Client::new(&config);
        let vpc = ec2.create_vpc().cidr_block("10.0.0.0/16").send().await.unwrap();
        let vpc_id = vpc.vpc().unwrap().vpc_id().unwrap().to_string();
        for (n, zone) in ZONES.iter().enumerate() {
            ec2.create_subnet()
                .vpc_id(&vpc_id)
                .cidr_block(format!("10.0.{}.0/24", n + 1))
                .availability_zone(*zone)
                .send()
                .await
                .unwrap();
        }
        let s3 = aws_sdk_s3::Client::from_conf(
            aws_sdk_s3::config::Builder::from(&config)
                .force_path_style(true)
                .build(),
        );
        s3.create_bucket()
            .bucket("flow-logs")
            .create_bucket_configuration(
                aws_sdk_s3::types::CreateBucketConfiguration::builder()
                    .location_constraint(aws_sdk_s3::types::BucketLocationConstraint::ApNortheast1)
                    .build(),
            )
            .send()
            .await
            .unwrap();
        let texts: Vec<String> = f.lines.iter().map(|l| l.custom.clone()).collect();
        for (n, part) in split(&texts, 3, Some(CUSTOM_HEADER)).iter().enumerate() {
            s3.put_object()
                .bucket("flow-logs")
                .key(format!(
                    "{prefix}{ACCOUNT}_vpcflowlogs_ap-northeast-1_fl-2_20261201T00{n}0Z_abc.log.gz"
                ))
                .body(gzip(part).into())
                .send()
                .await
                .unwrap();
        }
        // Not a flow log: not read.
        s3.put_object()
            .bucket("flow-logs")
            .key(format!(
                "AWSLogs/{ACCOUNT}/vpcflowlogs/ap-northeast-1/aws-logs-write-test"
            ))
            .body(b"Permission Check Successful".to_vec().into())
            .send()
            .await
            .unwrap();
    });
    let mut env: Vec<(&str, &str)> = ENV.to_vec();
    env.push(("AWS_ENDPOINT_URL", &moto.endpoint));
    let location = format!("s3://flow-logs/AWSLogs/{ACCOUNT}/vpcflowlogs/");
    let out = audit(
        &[
            "--map",
            &f.path("map.json"),
            "--flow-logs",
            &location,
            "--format",
            "json",
            "--threads",
            "3",
        ],
        &env,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_figures(&json, &f.truth, "custom format with flow-direction, S3, EC2 subnets");
    assert_eq!(json["records"], f.truth.records);

    // Both locations at once (the same records twice): every byte twice, the share the same.
    let out = audit(
        &[
            "--map",
            &f.path("map.json"),
            "--flow-logs",
            &location,
            "--flow-logs",
            &f.path("default"),
            "--format",
            "json",
        ],
        &env,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let twice: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        twice["cross_zone_bytes"].as_u64(),
        json["cross_zone_bytes"].as_u64().map(|b| b * 2)
    );
    assert_eq!(twice["records"].as_u64(), Some(f.truth.records * 2));

    // A bucket that does not exist: the AWS error, named.
    let out = audit(
        &["--map", &f.path("map.json"), "--flow-logs", "s3://no-such-bucket/x/"],
        &env,
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("no-such-bucket"), "{}", text(&out.stderr));

    // The table for these logs: the format from the first object's header line, every field a
    // column (`end` quoted), partition projection on the account, the region and the day.
    let delivered = format!("s3://flow-logs/AWSLogs/{ACCOUNT}/vpcflowlogs/ap-northeast-1/");
    let out = audit(&["--print-ddl", "athena", "--flow-logs", &delivered], &env);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let ddl = text(&out.stdout);
    check_ddl(&ddl, CUSTOM_HEADER, "region");
    assert!(
        ddl.contains("\"storage.location.template\"=\"s3://flow-logs/AWSLogs/${accid}/vpcflowlogs/${region}/${day}\"")
            && ddl.contains(&format!("\"projection.accid.values\"=\"{ACCOUNT}\"")),
        "{ddl}"
    );
    eprintln!("--print-ddl athena from the first object's header line:\n{ddl}");
    // A v5 format with its own `region` field: the partition is aws_region.
    let v5 = "version account-id interface-id srcaddr dstaddr srcport dstport protocol packets bytes start end action log-status vpc-id subnet-id instance-id tcp-flags type pkt-srcaddr pkt-dstaddr region az-id sublocation-type sublocation-id pkt-src-aws-service pkt-dst-aws-service flow-direction traffic-path";
    let out = audit(
        &["--print-ddl", "athena", "--flow-logs", &delivered, "--fields", v5],
        &[],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    check_ddl(&text(&out.stdout), v5, "aws_region");
    // Not a flow-log field; not where flow logs are delivered.
    let out = audit(
        &[
            "--print-ddl",
            "athena",
            "--flow-logs",
            &delivered,
            "--fields",
            "srcaddr dstaddr bytes `x` DROP",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("not a VPC Flow Logs field"),
        "{}",
        text(&out.stderr)
    );
    let out = audit(&["--print-ddl", "athena", "--flow-logs", "s3://flow-logs/logs/"], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("AWSLogs/ACCOUNT/vpcflowlogs/REGION/"),
        "{}",
        text(&out.stderr)
    );

    // moto's Athena runs no SQL, but it serves the SDK's calls: with an answer queued, `--athena`
    // starts, polls and reads it as from Athena, and renders the report.
    let rows = serde_json::json!([
        ["kind", "name", "detail", "bytes", "records", "interface"],
        ["pair", REPLICAS[0], "10.0.1.100", "1000", "2", "eni-100111"],
        ["pair", REPLICAS[0], MISROUTED, "3000", "2", "eni-100111"],
        ["window", null, null, "1796083200", "1796083260", null],
        ["records", null, null, null, "4", null],
    ]);
    let datum = |v: &serde_json::Value| match v.as_str() {
        Some(text) => serde_json::json!({"VarCharValue": text}),
        None => serde_json::json!({}),
    };
    let rows: Vec<serde_json::Value> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|row| serde_json::json!({"Data": row.as_array().unwrap().iter().map(datum).collect::<Vec<_>>()}))
        .collect();
    let answer = serde_json::json!({
        "region": "ap-northeast-1",
        "results": [{"rows": rows, "column_info": []}],
    });
    let queued = std::process::Command::new("curl")
        .args(["-sf", "-X", "POST", "-H", "Content-Type: application/json", "--data"])
        .arg(answer.to_string())
        .arg(format!("{}/moto-api/static/athena/query-results", moto.endpoint))
        .output()
        .unwrap();
    assert!(queued.status.success(), "{}", text(&queued.stderr));
    let out = audit(
        &[
            "--map",
            &f.path("map.json"),
            "--subnets",
            &f.path("subnets.json"),
            "--athena",
            "--format",
            "json",
        ],
        &env,
    );
    assert!(out.status.success(), "moto's Athena: {}", text(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (&json["in_zone_bytes"], &json["cross_zone_bytes"]),
        (&1000.into(), &3000.into()),
        "{json}"
    );
    assert!(json["athena"]["query_execution_id"]
        .as_str()
        .is_some_and(|id| !id.is_empty()));
}

/// Checks `ddl` (from `--print-ddl athena`) as Athena's dialect with sqlglot: a CREATE EXTERNAL
/// TABLE whose columns are `format`'s fields (`-` → `_`), partitioned by `accid`, `region` and
/// `day`, with `end` quoted.
fn check_ddl(ddl: &str, format: &str, region: &str) {
    let python = common::venv_python("LOCALITY_DUCKDB_PYTHON", "audit-venv", "duckdb");
    let script = r#"
import json, sys, sqlglot
from sqlglot import exp
tree = sqlglot.parse_one(sys.stdin.read(), read="athena")
assert isinstance(tree, exp.Create), type(tree)
schema = tree.this
columns = [c.name for c in schema.expressions if isinstance(c, exp.ColumnDef)]
partitions = [c.name for c in tree.find(exp.PartitionedByProperty).this.expressions]
print(json.dumps({"columns": columns, "partitions": partitions}))
"#;
    let mut child = Command::new(python)
        .args(["-c", script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(ddl.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "sqlglot: {}\n{ddl}", text(&out.stderr));
    let parsed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let expected: Vec<String> = format.split_whitespace().map(|f| f.replace('-', "_")).collect();
    assert_eq!(parsed["columns"], serde_json::json!(expected), "{ddl}");
    assert_eq!(
        parsed["partitions"],
        serde_json::json!(["accid", region, "day"]),
        "{ddl}"
    );
    assert!(ddl.contains("  `end` bigint"), "{ddl}");
}

/// `--print-sql athena` run in DuckDB over the same records (loaded as AWS's Athena integration
/// names the columns) gives the audit's figures.
#[test]
fn the_athena_query_in_duckdb_gives_the_audits_figures() {
    let f = Fixture::new();
    // The guide's command, as written, in a folder holding replica-map.json and subnets.json.
    std::fs::copy(f.dir.path().join("map.json"), f.dir.path().join("replica-map.json")).unwrap();
    let guide =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/guides/consuming-the-replica-map.md"))
            .unwrap();
    let after = &guide[guide.find("#### Beyond one machine: Athena").unwrap()..];
    let start = after.find("```sh\n").unwrap() + 6;
    let command = &after[start..start + after[start..].find("```").unwrap()];
    let path = format!(
        "{}:{}",
        locality().parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new("sh")
        .args(["-e", "-c", command])
        .current_dir(f.dir.path())
        .env("PATH", path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{command}: {}", text(&out.stderr));
    let sql = std::fs::read_to_string(f.dir.path().join("audit.sql")).unwrap();
    let mut all = format!("{DEFAULT_HEADER}\n");
    for line in &f.lines {
        all.push_str(&line.default);
        all.push('\n');
    }
    let rows = duckdb_rows(f.dir.path(), &all, &sql);

    let audit_out = audit(
        &[
            "--map",
            &f.path("map.json"),
            "--subnets",
            &f.path("subnets.json"),
            "--flow-logs",
            &f.path("default"),
            "--format",
            "json",
        ],
        &[],
    );
    let json: serde_json::Value = serde_json::from_slice(&audit_out.stdout).unwrap();
    let kind = |k: &'static str| rows.iter().filter(move |r| r["kind"] == k);
    let summary = kind("summary").next().unwrap();
    let share = summary["in_zone_share"].as_f64().unwrap();
    assert!(
        (share - json["in_zone_share"].as_f64().unwrap()).abs() < 1e-12,
        "{summary} vs {json}"
    );
    assert_eq!(summary["cross_zone_bytes"], json["cross_zone_bytes"]);
    assert_eq!(summary["window_start"], json["window"]["start"]);
    assert_eq!(summary["window_end"], json["window"]["end"]);
    let monthly = summary["estimated_monthly_cost_usd"].as_f64().unwrap();
    assert!((monthly - json["estimated_monthly_cost_usd"].as_f64().unwrap()).abs() <= 0.005);
    assert_eq!(
        kind("primary").next().unwrap()["cross_zone_bytes"],
        json["primary_cross_zone_bytes"]
    );
    assert_eq!(kind("unknown").next().unwrap()["bytes"], json["unknown_zone_bytes"]);
    for node in json["nodes"].as_array().unwrap() {
        let row = kind("node").find(|r| r["name"] == node["endpoint"]).unwrap();
        assert_eq!(row["bytes"], node["bytes"], "{row}");
        assert_eq!(row["cross_zone_bytes"], node["cross_zone_bytes"], "{row}");
    }
    let clients: Vec<(&str, u64)> = kind("client")
        .map(|r| (r["name"].as_str().unwrap(), r["cross_zone_bytes"].as_u64().unwrap()))
        .collect();
    let expected: Vec<(&str, u64)> = json["cross_zone_clients"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["address"].as_str().unwrap(), c["bytes"].as_u64().unwrap()))
        .collect();
    let mut sorted = clients.clone();
    sorted.sort_by_key(|c| std::cmp::Reverse(c.1));
    assert_eq!(sorted, expected);
    eprintln!(
        "duckdb: share {share}, {} node rows, top client {:?}",
        kind("node").count(),
        sorted[0]
    );
}

/// Runs `sql` in DuckDB over `records` (a header line, then records), loaded as AWS's Athena
/// integration names the columns (`interface-id` → `interface_id`); the rows, as JSON.
fn duckdb_rows(dir: &Path, records: &str, sql: &str) -> Vec<serde_json::Value> {
    duckdb_rows_of(dir, &[records], sql)
}

/// [`duckdb_rows`] over files of several formats (a format changed mid-window): each loaded
/// with its own header, the table their union by column name (a column a file lacks is NULL,
/// as in a table whose format gained a field).
fn duckdb_rows_of(dir: &Path, files: &[&str], sql: &str) -> Vec<serde_json::Value> {
    let paths: Vec<PathBuf> = files
        .iter()
        .enumerate()
        .map(|(n, records)| {
            let path = dir.join(format!("records-for-duckdb-{n}.log"));
            std::fs::write(&path, records).unwrap();
            path
        })
        .collect();
    std::fs::write(dir.join("query.sql"), sql).unwrap();
    let python = common::venv_python("LOCALITY_DUCKDB_PYTHON", "audit-venv", "duckdb");
    let script = r#"
import duckdb, json, sys
query, files = open(sys.argv[1]).read(), sys.argv[2:]
kinds = {'version': 'INTEGER', 'srcport': 'INTEGER', 'dstport': 'INTEGER', 'protocol': 'INTEGER',
         'packets': 'BIGINT', 'bytes': 'BIGINT', 'start': 'BIGINT', 'end': 'BIGINT'}
db = duckdb.connect()
for n, records in enumerate(files):
    header = open(records).readline().split()
    columns = {name.replace('-', '_'): kinds.get(name, 'VARCHAR') for name in header}
    db.execute(f"CREATE TABLE part{n} AS SELECT * FROM read_csv(?, delim=' ', header=true, nullstr='-', columns=?)",
               [records, columns])
db.execute("CREATE TABLE vpc_flow_logs AS " + " UNION ALL BY NAME ".join(f"SELECT * FROM part{n}" for n in range(len(files))))
cursor = db.execute(query)
names = [d[0] for d in cursor.description]
print(json.dumps([dict(zip(names, row)) for row in cursor.fetchall()]))
"#;
    let out = Command::new(python)
        .args(["-c", script])
        .arg(dir.join("query.sql"))
        .args(&paths)
        .output()
        .unwrap();
    assert!(out.status.success(), "duckdb: {}\n{sql}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Every layout AWS delivers (VPC-wide, the nodes' interfaces only, the clients' interfaces
/// only, one pair recorded only at its client's end) and the VPC changing under the window
/// (a node's flow log starting at 03:00, logs stopping, a node's interface replaced, the format
/// changed at 03:00 from the default to a custom one with flow-direction), in every format
/// (the default; a custom order with flow-direction; another without it): the CLI and the
/// Athena query in DuckDB (printed with `--fields` naming the table's format, so that it reads
/// `flow_direction` when the table has it) give the generator's figures, to the byte and to the
/// last bit of the share and the estimate.
#[test]
fn every_layout_gives_the_truth_from_the_cli_and_from_the_sql() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("map.json"), map_json()).unwrap();
    std::fs::write(dir.path().join("subnets.json"), subnets_json()).unwrap();
    for capture in Capture::ALL {
        let (lines, truth) = generate_captured(capture);
        for format in Format::ALL {
            let texts: Vec<String> = lines.iter().map(|l| format.of(l).to_string()).collect();
            let files = split(&texts, 2, Some(format.header()));
            check_layout(
                dir.path(),
                &format!("{capture:?}, {format:?} format"),
                &files,
                format.header(),
                &truth,
            );
        }
    }
    // The format changed at 03:00: the default format before, the custom one (flow-direction)
    // after, VPC-wide and with the replaced interface; the table has the later format's columns.
    for capture in [Capture::VpcWide, Capture::InterfaceReplaced] {
        let (lines, truth) = generate_captured(capture);
        let changed = |line: &&Line| {
            let start: u64 = line.default.split(' ').nth(10).unwrap().parse().unwrap();
            start >= T0 + CHANGE_MINUTE * 60
        };
        let before: Vec<String> = lines
            .iter()
            .filter(|l| !changed(l))
            .map(|l| l.default.clone())
            .collect();
        let after: Vec<String> = lines.iter().filter(changed).map(|l| l.custom.clone()).collect();
        let mut files = split(&before, 1, Some(DEFAULT_HEADER));
        files.extend(split(&after, 1, Some(CUSTOM_HEADER)));
        check_layout(
            dir.path(),
            &format!("{capture:?}, format changed at 03:00"),
            &files,
            CUSTOM_HEADER,
            &truth,
        );
    }
}

/// The CLI over `files` (gzip, each with its header line) and `--print-sql athena --fields
/// table_format` in DuckDB over the same records: both equal `truth`.
fn check_layout(dir: &Path, what: &str, files: &[String], table_format: &str, truth: &Truth) {
    let map = dir.join("map.json").display().to_string();
    let subnets = dir.join("subnets.json").display().to_string();
    let (inside, across, ..) = truth.totals();
    let share = inside as f64 / (inside + across) as f64;
    let folder = dir.join(what.replace([' ', ',', ':'], "-"));
    std::fs::create_dir_all(&folder).unwrap();
    for (n, part) in files.iter().enumerate() {
        std::fs::write(folder.join(format!("part{n}.log.gz")), gzip(part)).unwrap();
    }
    let out = audit(
        &[
            "--map",
            &map,
            "--subnets",
            &subnets,
            "--flow-logs",
            &folder.display().to_string(),
            "--format",
            "json",
        ],
        &[],
    );
    assert!(out.status.success(), "{what}: {}", text(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_figures(&json, truth, what);

    let out = audit(
        &[
            "--map",
            &map,
            "--subnets",
            &subnets,
            "--print-sql",
            "athena",
            "--fields",
            table_format,
        ],
        &[],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let sql = text(&out.stdout);
    assert_eq!(
        sql.contains(" flow_direction AS flow_direction"),
        table_format.contains("flow-direction"),
        "{what}: the query reads flow_direction when the table has it"
    );
    let parts: Vec<&str> = files.iter().map(String::as_str).collect();
    let rows = duckdb_rows_of(dir, &parts, &sql);
    let kind = |k: &'static str| rows.iter().filter(move |r| r["kind"] == k);
    let summary = kind("summary").next().unwrap();
    assert_eq!(summary["in_zone_share"].as_f64(), Some(share), "{what}: SQL {summary}");
    assert_eq!(summary["cross_zone_bytes"], across, "{what}: SQL");
    assert_eq!(
        summary["estimated_monthly_cost_usd"].as_f64(),
        Some(truth.monthly(across)),
        "{what}: SQL"
    );
    assert_eq!(summary["window_start"], truth.window.0, "{what}: SQL");
    assert_eq!(summary["window_end"], truth.window.1, "{what}: SQL");
    for node in json["nodes"].as_array().unwrap() {
        let row = kind("node").find(|r| r["name"] == node["endpoint"]).unwrap();
        assert_eq!(row["bytes"], node["bytes"], "{what}: SQL {row}");
        assert_eq!(row["cross_zone_bytes"], node["cross_zone_bytes"], "{what}: SQL {row}");
    }
    let mut sql_clients: Vec<(String, u64, Option<f64>)> = kind("client")
        .map(|r| {
            (
                r["name"].as_str().unwrap().to_string(),
                r["cross_zone_bytes"].as_u64().unwrap(),
                r["estimated_monthly_cost_usd"].as_f64(),
            )
        })
        .collect();
    sql_clients.sort_by_key(|c| std::cmp::Reverse(c.1));
    let expected: Vec<(String, u64, Option<f64>)> = truth
        .cross_zone_clients()
        .into_iter()
        .map(|(client, bytes)| (client, bytes, Some(truth.monthly(bytes))))
        .collect();
    assert_eq!(sql_clients, expected, "{what}: SQL clients");
    eprintln!(
        "{what}: truth share {share:.6} ({inside} B in, {across} B across), monthly {:.6} USD; CLI {} / {:.6}; SQL {} / {:.6}; {} records, {} counted, {} other end",
        truth.monthly(across),
        json["in_zone_share"],
        json["estimated_monthly_cost_usd"].as_f64().unwrap(),
        summary["in_zone_share"],
        summary["estimated_monthly_cost_usd"].as_f64().unwrap(),
        truth.records,
        truth.counted,
        truth.other_end,
    );
}

/// Records read and none counted: the share is undefined, and the audit says so loudly (exit
/// 4; the table, the JSON and the textfile say how many records were left out and why).
#[test]
fn records_read_and_none_counted_is_never_a_quiet_none() {
    let f = Fixture::new();
    // A map of other nodes: every record has no node of this map at either end.
    let other_map = r#"{"version":1,"fallback":"reader.example:6379","zones":{"ap-northeast-1a":"10.0.7.11:6379"},"nodes":[{"endpoint":"10.0.7.10:6379","role":"primary","zone":"ap-northeast-1a"},{"endpoint":"10.0.7.11:6379","role":"replica","zone":"ap-northeast-1a"}]}"#;
    std::fs::write(f.dir.path().join("other-map.json"), other_map).unwrap();
    let base = [
        "--map",
        &f.path("other-map.json"),
        "--subnets",
        &f.path("subnets.json"),
        "--flow-logs",
        &f.path("default"),
    ];
    let out = audit(&base, &[]);
    assert_eq!(out.status.code(), Some(4), "{}", text(&out.stderr));
    let table = text(&out.stdout);
    let records = f.truth.records;
    assert!(
        table.contains(&format!(
            "Records          {records} read, 0 counted, {records} left out"
        )),
        "{table}"
    );
    assert!(
        table.contains("In-zone share    none: ") && table.contains("none is between a client and a node of the map"),
        "{table}"
    );
    // An undefined share says why, and not "… of replica bytes" after it (issue 61, item 8).
    assert!(!table.contains("of replica bytes"), "{table}");
    assert!(table.contains("no node of the map at either end"), "{table}");
    assert!(!table.contains("No client read across zones"), "{table}");
    assert!(
        text(&out.stderr).contains("the share is undefined"),
        "{}",
        text(&out.stderr)
    );

    let out = audit(&[&base[..], &["--format", "json"]].concat(), &[]);
    assert_eq!(out.status.code(), Some(4));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["in_zone_share"], serde_json::Value::Null);
    assert!(
        json["in_zone_share_undefined_because"]
            .as_str()
            .unwrap()
            .contains("left out"),
        "{json}"
    );
    assert_eq!(json["counted_records"], 0);
    assert_eq!(json["skipped"]["no_node"], f.truth.records - 24);

    let out = audit(&[&base[..], &["--format", "prometheus"]].concat(), &[]);
    assert_eq!(out.status.code(), Some(4));
    let metrics = text(&out.stdout);
    assert!(
        metrics.contains("locality_audit_in_zone_share_defined 0\n"),
        "{metrics}"
    );
    assert!(
        metrics.contains(&format!(
            "locality_audit_skipped_records{{reason=\"no_node\"}} {}\n",
            f.truth.records - 24
        )),
        "{metrics}"
    );
    // --min-share keeps its exit status, 3.
    let out = audit(&[&base[..], &["--min-share", "0.9"]].concat(), &[]);
    assert_eq!(out.status.code(), Some(3));
}

/// The guide's sample run, as written: its command in a folder holding `replica-map.json`,
/// `subnets.json` and `flow-logs/` (the generated records), run by `sh -e` with `locality` on
/// PATH; the table and the Prometheus textfile it shows are what the audit prints.
#[test]
fn the_guides_sample_is_what_the_audit_prints() {
    let f = Fixture::new();
    let dir = f.dir.path();
    std::fs::copy(dir.join("map.json"), dir.join("replica-map.json")).unwrap();
    std::fs::rename(dir.join("default"), dir.join("flow-logs")).unwrap();
    let guide =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/guides/consuming-the-replica-map.md"))
            .unwrap();
    let section = &guide[guide
        .find("#### `locality audit`: which clients read across zones")
        .unwrap()..];
    let block = |from: &str, fence: &str| -> String {
        let after = &section[section.find(from).unwrap()..];
        let start = after.find(fence).unwrap() + fence.len();
        after[start..start + after[start..].find("```").unwrap()].to_string()
    };
    let command = block("`locality audit` reads VPC Flow Logs", "```sh\n");
    let path = format!(
        "{}:{}",
        locality().parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let run = |script: &str| {
        let out = Command::new("sh")
            .args(["-e", "-c", script])
            .current_dir(dir)
            .env("PATH", &path)
            .env("HOME", dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "{script}: {}", text(&out.stderr));
        text(&out.stdout)
    };
    let table = run(&command);
    assert_eq!(
        block("A sample run", "```text\n"),
        table,
        "the guide's table; the audit printed:\n{table}"
    );
    let textfile = run(&format!("{} --format prometheus", command.trim_end()));
    assert_eq!(
        block("gives a node_exporter textfile", "```text\n"),
        textfile,
        "the guide's textfile; the audit printed:\n{textfile}"
    );
}

/// A progress bar on stderr when stderr is a terminal (a pseudo-terminal from util-linux's
/// `script`), and none in a pipe; standard output is the report either way.
#[test]
fn a_progress_bar_on_a_terminal_and_none_in_a_pipe() {
    let f = Fixture::new();
    let command = format!(
        "{} audit --map {} --subnets {} --flow-logs {} --format json > {}",
        locality().display(),
        f.path("map.json"),
        f.path("subnets.json"),
        f.path("default"),
        f.path("report.json")
    );
    let out = Command::new("script")
        .args(["-qefc", &command, "/dev/null"])
        .output()
        .expect("script (util-linux)");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let terminal = text(&out.stdout);
    assert!(
        terminal.contains("B/") && terminal.contains("left"),
        "no progress bar on the terminal: {terminal:?}"
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(f.path("report.json")).unwrap()).unwrap();
    assert_figures(&report, &f.truth, "behind a terminal");
    let piped = audit(
        &[
            "--map",
            &f.path("map.json"),
            "--subnets",
            &f.path("subnets.json"),
            "--flow-logs",
            &f.path("default"),
        ],
        &[],
    );
    assert!(
        piped.status.success() && piped.stderr.is_empty(),
        "{}",
        text(&piped.stderr)
    );
}

/// Hostile inputs (issue 52): an S3 listing that never ends (a new continuation token on every
/// page, or the same one again) stops with an error naming the bucket and prefix; a file name
/// with terminal escapes and a forged line is printed escaped; `--table` takes an identifier
/// only; a symbolic link in a folder is said once.
#[test]
fn hostile_listings_names_and_tables_are_bounded_and_escaped() {
    use common::fault_proxy::{Fault, FaultProxy};
    let f = Fixture::new();
    let moto = Moto::start();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    // (keys per page, same token each time, --max-objects, what is said, requests made)
    for (per_page, same_token, cap, expected, requests) in [
        (100, false, "250", "more than 250 objects listed (--max-objects)", 3),
        (0, false, "5000", "the listing went past 10 pages without ending", 10),
        (
            1,
            true,
            "1000000",
            "a continuation token it had given before (page 2)",
            2,
        ),
    ] {
        let proxy = runtime.block_on(FaultProxy::start(&moto.endpoint));
        {
            let mut state = proxy.state.lock().unwrap();
            for n in 0..100 {
                let token = if same_token {
                    "again".to_string()
                } else {
                    format!("t{n}")
                };
                let contents: String = (0..per_page)
                    .map(|k| format!("<Contents><Key>AWSLogs/{n}-{k}.log.gz</Key><Size>10</Size></Contents>"))
                    .collect();
                state.faults.push_back(Fault::Answer(format!(
                    r#"<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>flow-logs</Name><Prefix>AWSLogs/</Prefix><KeyCount>{per_page}</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>true</IsTruncated><NextContinuationToken>{token}</NextContinuationToken>{contents}</ListBucketResult>"#
                )));
            }
        }
        let mut env: Vec<(&str, &str)> = ENV.to_vec();
        let endpoint = proxy.endpoint();
        env.push(("AWS_ENDPOINT_URL", &endpoint));
        let out = audit(
            &[
                "--map",
                &f.path("map.json"),
                "--subnets",
                &f.path("subnets.json"),
                "--flow-logs",
                "s3://flow-logs/AWSLogs/",
                "--max-objects",
                cap,
            ],
            &env,
        );
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(
            err.contains("s3://flow-logs/AWSLogs/") && err.contains(expected),
            "{err}"
        );
        assert_eq!(proxy.state.lock().unwrap().actions.len(), requests, "{err}");
        eprintln!("{expected}: {requests} requests; {err}");
    }

    // A file whose name carries a terminal escape and a forged report line.
    let evil = f.dir.path().join("evil");
    std::fs::create_dir_all(&evil).unwrap();
    default_format_folder(&evil, &f.lines);
    let name = "x\u{1b}[2J\nIn-zone share    100.00 % of replica bytes\u{202e}.log";
    std::fs::write(evil.join(name), format!("{DEFAULT_HEADER}\nnot a record\n")).unwrap();
    // And a symbolic link named like a flow log (not followed: said once).
    std::os::unix::fs::symlink(f.dir.path().join("default"), evil.join("elsewhere.log")).unwrap();
    let out = audit(
        &[
            "--map",
            &f.path("map.json"),
            "--subnets",
            &f.path("subnets.json"),
            "--flow-logs",
            &evil.display().to_string(),
        ],
        &[],
    );
    let (table, err) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{err}");
    for printed in [&table, &err] {
        assert!(
            !printed.contains('\u{1b}') && !printed.contains('\u{202e}'),
            "{printed:?}"
        );
        assert!(printed.contains("x\\u{1b}[2J\\nIn-zone share"), "{printed}");
        assert!(
            printed.lines().filter(|l| l.starts_with("In-zone share")).count() <= 1,
            "a forged line: {printed}"
        );
    }
    assert!(table.contains("In-zone share    78.70 %"), "{table}");
    assert_eq!(err.matches("symbolic link").count(), 1, "{err}");
    assert!(
        err.contains("1 symbolic link(s) named like flow logs") && err.contains("elsewhere.log"),
        "{err}"
    );

    // --table: an identifier, or exit 2.
    for (table, code) in [
        ("flowlogs.vpc_flow_logs", 0),
        ("\"my-db\".\"flow logs\"", 0),
        ("vpc_flow_logs; DROP TABLE x", 2),
        ("t UNION SELECT 1", 2),
    ] {
        let out = audit(
            &[
                "--map",
                &f.path("map.json"),
                "--subnets",
                &f.path("subnets.json"),
                "--print-sql",
                "athena",
                "--table",
                table,
            ],
            &[],
        );
        assert_eq!(out.status.code(), Some(code), "{table}: {}", text(&out.stderr));
        if code == 0 {
            assert!(text(&out.stdout).contains(&format!("FROM {table}\n")), "{table}");
        } else {
            assert!(
                text(&out.stderr).contains("is not a table name"),
                "{}",
                text(&out.stderr)
            );
            assert!(out.stdout.is_empty());
        }
    }
}

/// `--since` and `--until` pick UTC days: a folder of three days (2026-12-01 to 03, each the
/// VPC-wide set), `--since 2026-12-02 --until 2026-12-02` gives that day's truth to the byte,
/// every record of the other two days left out as `outside_window`; a day that is not a date,
/// or days backwards, is a usage error.
#[test]
fn since_and_until_count_only_the_days_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("map.json"), map_json()).unwrap();
    std::fs::write(dir.path().join("subnets.json"), subnets_json()).unwrap();
    let folder = dir.path().join("three-days");
    let mut truths = Vec::new();
    for day in 0..3u64 {
        let (lines, truth) = generate_at(Capture::VpcWide, T0 + day * 86_400);
        let texts: Vec<String> = lines.iter().map(|l| l.default.clone()).collect();
        let path = folder.join(format!("2026/12/0{}", day + 1));
        std::fs::create_dir_all(&path).unwrap();
        for (n, part) in split(&texts, 2, Some(DEFAULT_HEADER)).iter().enumerate() {
            std::fs::write(path.join(format!("part{n}.log.gz")), gzip(part)).unwrap();
        }
        truths.push(truth);
    }
    let map = dir.path().join("map.json").display().to_string();
    let subnets = dir.path().join("subnets.json").display().to_string();
    let logs = folder.display().to_string();
    let run = |extra: &[&str]| {
        let mut args = vec![
            "--map",
            &map,
            "--subnets",
            &subnets,
            "--flow-logs",
            &logs,
            "--format",
            "json",
        ];
        args.extend_from_slice(extra);
        audit(&args, &[])
    };
    let out = run(&["--since", "2026-12-02", "--until", "2026-12-02"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let mut json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // NODATA and REJECT records keep their own reasons whatever their time; every other record
    // of the other days is outside the window.
    let others = truths[0].records + truths[2].records;
    let (no_data, rejected) = (
        truths[0].no_data + truths[2].no_data,
        truths[0].rejected + truths[2].rejected,
    );
    assert_eq!(
        json["skipped"]["outside_window"],
        others - no_data - rejected,
        "{}",
        json["skipped"]
    );
    // The day's own figures: its truth, once the other days' records are set aside.
    json["records"] = (json["records"].as_u64().unwrap() - others).into();
    json["skipped"]["outside_window"] = 0.into();
    json["skipped"]["no_data"] = (json["skipped"]["no_data"].as_u64().unwrap() - no_data).into();
    json["skipped"]["rejected"] = (json["skipped"]["rejected"].as_u64().unwrap() - rejected).into();
    assert_figures(&json, &truths[1], "--since 2026-12-02 --until 2026-12-02");
    // Without the flags, every record counts (three days).
    let all: serde_json::Value = serde_json::from_slice(&run(&[]).stdout).unwrap();
    assert_eq!(all["skipped"]["outside_window"], 0);
    assert_eq!(all["records"], truths.iter().map(|t| t.records).sum::<u64>());
    eprintln!(
        "three days: {} records; --since/--until 2026-12-02: {} counted, {} outside the window",
        all["records"],
        json["counted_records"],
        others - no_data - rejected
    );
    for (bad, said) in [
        (&["--since", "2026-12-32"][..], "--since \"2026-12-32\" is not a day"),
        (
            &["--since", "2026-12-03", "--until", "2026-12-01"][..],
            "is after --until",
        ),
        (&["--until", "yesterday"][..], "--until \"yesterday\" is not a day"),
    ] {
        let out = run(bad);
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
        assert!(text(&out.stderr).contains(said), "{bad:?}: {}", text(&out.stderr));
    }
}

/// The stand-in Athena of `tests/fixtures/athena_standin.py` over the flow-log files under
/// `logs`, on a loopback port; killed when dropped.
struct StandIn {
    child: std::process::Child,
    endpoint: String,
    calls: PathBuf,
    _dir: tempfile::TempDir,
}

impl StandIn {
    fn start(logs: &Path, faults: &[&str]) -> StandIn {
        let dir = tempfile::tempdir().unwrap();
        let port_file = dir.path().join("port");
        let calls = dir.path().join("calls");
        let python = common::venv_python("LOCALITY_DUCKDB_PYTHON", "audit-venv", "duckdb");
        let child = Command::new(python)
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/athena_standin.py"))
            .arg("--logs")
            .arg(logs)
            .arg("--port-file")
            .arg(&port_file)
            .arg("--calls")
            .arg(&calls)
            .args(faults)
            .stderr(std::process::Stdio::inherit())
            .spawn()
            .unwrap();
        let mut standin = StandIn {
            child,
            endpoint: String::new(),
            calls,
            _dir: dir,
        };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while !port_file.exists() {
            assert!(
                std::time::Instant::now() < deadline,
                "the stand-in Athena did not start"
            );
            if let Ok(Some(status)) = standin.child.try_wait() {
                panic!("the stand-in Athena ended: {status}");
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        standin.endpoint = format!("http://127.0.0.1:{}", std::fs::read_to_string(&port_file).unwrap());
        standin
    }

    /// The calls it was sent, one a line (a start with the bytes it scanned).
    fn calls(&self) -> Vec<String> {
        std::fs::read_to_string(&self.calls)
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// The environment that points `locality audit --athena` at it.
    fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ENDPOINT_URL_ATHENA", self.endpoint.clone()),
            ("AWS_ACCESS_KEY_ID", "testing".into()),
            ("AWS_SECRET_ACCESS_KEY", "testing".into()),
            ("AWS_REGION", "ap-northeast-1".into()),
            ("AWS_EC2_METADATA_DISABLED", "true".into()),
        ]
    }
}

impl Drop for StandIn {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The file audit's JSON without what Athena cannot know (lines that did not parse) or that only
/// Athena has (its query).
fn comparable(json: &serde_json::Value) -> serde_json::Value {
    let mut json = json.clone();
    json["skipped"]["unparsed_lines"] = serde_json::Value::Null;
    json["unparsed_lines_unknown_because"] = serde_json::Value::Null;
    json["athena"] = serde_json::Value::Null;
    json
}

/// `locality audit --athena` against the stand-in Athena (DuckDB really running the query) gives
/// the report that reading the same records from files gives, for every layout and format of
/// `every_layout_gives_the_truth_from_the_cli_and_from_the_sql`: every figure equal, the share
/// and the estimate to the last bit; lines that did not parse said as not known (JSON `null`
/// with the reason), and the query's id, bytes scanned and price.
#[test]
fn athena_gives_the_file_audits_report_for_every_layout() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("map.json"), map_json()).unwrap();
    std::fs::write(dir.path().join("subnets.json"), subnets_json()).unwrap();
    let map = dir.path().join("map.json").display().to_string();
    let subnets = dir.path().join("subnets.json").display().to_string();
    for capture in Capture::ALL {
        let (lines, truth) = generate_captured(capture);
        for format in Format::ALL {
            let what = format!("{capture:?}, {format:?} format");
            let logs = dir.path().join(what.replace([' ', ',', ':'], "-"));
            let day = logs.join("AWSLogs/123456789012/vpcflowlogs/ap-northeast-1/2026/12/01");
            std::fs::create_dir_all(&day).unwrap();
            let texts: Vec<String> = lines.iter().map(|l| format.of(l).to_string()).collect();
            for (n, part) in split(&texts, 2, Some(format.header())).iter().enumerate() {
                std::fs::write(day.join(format!("part{n}.log.gz")), gzip(part)).unwrap();
            }
            let common = [
                "--map",
                &map,
                "--subnets",
                &subnets,
                "--since",
                "2026-12-01",
                "--until",
                "2026-12-01",
                "--format",
                "json",
            ];
            let logs_arg = logs.display().to_string();
            let mut files_args = common.to_vec();
            files_args.extend(["--flow-logs", &logs_arg]);
            let files = audit(&files_args, &[]);
            assert!(files.status.success(), "{what}: {}", text(&files.stderr));
            let files: serde_json::Value = serde_json::from_slice(&files.stdout).unwrap();
            assert_figures(&files, &truth, &what);

            let standin = StandIn::start(&logs, &[]);
            let env = standin.env();
            let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let mut athena_args = common.to_vec();
            athena_args.extend(["--athena", "--fields", format.header()]);
            let out = audit(&athena_args, &env);
            assert!(out.status.success(), "{what}: {}", text(&out.stderr));
            let athena: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            assert_eq!(athena["skipped"]["unparsed_lines"], serde_json::Value::Null, "{what}");
            assert!(athena["unparsed_lines_unknown_because"]
                .as_str()
                .unwrap()
                .contains("NULL"));
            let query = athena["athena"].clone();
            assert!(
                query["query_execution_id"].as_str().is_some_and(|id| !id.is_empty()),
                "{query}"
            );
            assert!(query["data_scanned_bytes"].as_u64().unwrap() > 0, "{query}");
            assert_eq!(
                query["cost_usd"].as_f64(),
                Some(10e6 / 1e12 * 5.0),
                "10 MB at least: {query}"
            );
            assert_eq!(comparable(&athena), comparable(&files), "{what}: Athena and the files");
            eprintln!(
                "{what}: files and Athena both share {} ({} B across), {} records counted, {} other end; Athena scanned {} B ({} calls)",
                files["in_zone_share"],
                files["cross_zone_bytes"],
                files["counted_records"],
                files["skipped"]["other_end"],
                query["data_scanned_bytes"],
                standin.calls().len()
            );
        }
    }
}

/// Writes the VPC-wide default-format set under `root`, one day folder per day of `days`
/// (2026-12-01 is day 0); the truths.
fn athena_days(root: &Path, days: std::ops::Range<u64>) -> Vec<Truth> {
    let mut truths = Vec::new();
    for day in days {
        let (lines, truth) = generate_at(Capture::VpcWide, T0 + day * 86_400);
        let texts: Vec<String> = lines.iter().map(|l| l.default.clone()).collect();
        let folder = root.join(format!(
            "AWSLogs/123456789012/vpcflowlogs/ap-northeast-1/2026/12/{:02}",
            day + 1
        ));
        std::fs::create_dir_all(&folder).unwrap();
        for (n, part) in split(&texts, 2, Some(DEFAULT_HEADER)).iter().enumerate() {
            std::fs::write(folder.join(format!("part{n}.log.gz")), gzip(part)).unwrap();
        }
        truths.push(truth);
    }
    truths
}

/// A report over a day whose neighbours' records were read as context (`others`' truths): the
/// day's own figures, once those records are set aside (NODATA and REJECT records keep their
/// reasons whatever their time; every other record of the others is outside the window).
fn set_aside(json: &serde_json::Value, others: &[&Truth]) -> serde_json::Value {
    let mut json = json.clone();
    let records: u64 = others.iter().map(|t| t.records).sum();
    let no_data: u64 = others.iter().map(|t| t.no_data).sum();
    let rejected: u64 = others.iter().map(|t| t.rejected).sum();
    assert_eq!(
        json["skipped"]["outside_window"],
        records - no_data - rejected,
        "{}",
        json["skipped"]
    );
    json["records"] = (json["records"].as_u64().unwrap() - records).into();
    json["skipped"]["outside_window"] = 0.into();
    json["skipped"]["no_data"] = (json["skipped"]["no_data"].as_u64().unwrap() - no_data).into();
    json["skipped"]["rejected"] = (json["skipped"]["rejected"].as_u64().unwrap() - rejected).into();
    json
}

/// The query's lifecycle against the stand-in Athena:
/// - five days in the table, one asked for: that day's truth, its partition and its two
///   neighbours' read (three fifths of the bytes scanned: AWS files a record under the day it
///   delivered it);
/// - results paged 4 rows at a time: the same report;
/// - a FAILED query: exit 1 with Athena's reason and the query id, nothing on stdout;
/// - polls throttled (TooManyRequestsException) five times: retried, the same report;
/// - the Hive-compatible table (`--table-layout hive`): the same report;
/// - a query kept RUNNING and SIGINT or SIGTERM: StopQueryExecution is sent, exit 130; kept RUNNING past
///   `--athena-timeout 2s`: stopped, exit 1 naming the flag;
/// - hostile results (a forged share column, non-numeric bytes, a row that does not add up):
///   exit 1 naming what is wrong, nothing on stdout.
#[test]
fn athena_queries_are_started_polled_paged_and_stopped_safely() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("map.json"), map_json()).unwrap();
    std::fs::write(dir.path().join("subnets.json"), subnets_json()).unwrap();
    let map = dir.path().join("map.json").display().to_string();
    let subnets = dir.path().join("subnets.json").display().to_string();
    let logs = dir.path().join("five-days");
    let truths = athena_days(&logs, 0..5);
    let args = |extra: &[&str]| -> Vec<String> {
        let mut args: Vec<String> = [
            "--map",
            &map,
            "--subnets",
            &subnets,
            "--athena",
            "--since",
            "2026-12-03",
            "--until",
            "2026-12-03",
            "--format",
            "json",
        ]
        .iter()
        .map(|a| a.to_string())
        .collect();
        args.extend(extra.iter().map(|a| a.to_string()));
        args
    };
    let run = |standin: &StandIn, extra: &[&str]| {
        let env = standin.env();
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let args = args(extra);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        audit(&args, &env)
    };
    let total: u64 = walk_size(&logs);

    // One day of five, whole pages and 4-row pages: its partition and its neighbours' are read.
    let mut reports = Vec::new();
    for faults in [&[][..], &["--page-size", "4"][..], &["--throttle", "5"][..]] {
        let standin = StandIn::start(&logs, faults);
        let started = std::time::Instant::now();
        let out = run(&standin, &[]);
        assert!(out.status.success(), "{faults:?}: {}", text(&out.stderr));
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let mut day = set_aside(&json, &[&truths[1], &truths[3]]);
        day["skipped"]["unparsed_lines"] = 0.into();
        assert_figures(&day, &truths[2], &format!("Athena, 2026-12-03, {faults:?}"));
        let calls = standin.calls();
        let scanned = json["athena"]["data_scanned_bytes"].as_u64().unwrap();
        let pages = calls.iter().filter(|c| *c == "GetQueryResults").count();
        eprintln!(
            "Athena {faults:?}: {:?}; calls: 1 start, {} polls, {pages} pages; scanned {scanned} of {total} B",
            started.elapsed(),
            calls.iter().filter(|c| *c == "GetQueryExecution").count()
        );
        assert_eq!(calls.iter().filter(|c| c.starts_with("StartQueryExecution")).count(), 1);
        assert!(
            scanned * 5 > total * 2 && scanned * 5 < total * 4,
            "about three fifths of the table (the day and its neighbours): {scanned} of {total}"
        );
        if faults.contains(&"--page-size") {
            assert!(pages >= 5, "4 rows a page: {pages} pages");
        }
        reports.push(json);
    }
    assert_eq!(reports[0], {
        let mut paged = reports[1].clone();
        paged["athena"] = reports[0]["athena"].clone();
        paged
    });

    // --athena-reuse: the second identical query is answered from the first's results, nothing
    // scanned (the 10 MB minimum is still the price), `reused` says so.
    let standin = StandIn::start(&logs, &[]);
    let first = run(&standin, &["--athena-reuse", "60"]);
    let second = run(&standin, &["--athena-reuse", "60"]);
    let (first, second): (serde_json::Value, serde_json::Value) = (
        serde_json::from_slice(&first.stdout).unwrap(),
        serde_json::from_slice(&second.stdout).unwrap(),
    );
    assert_eq!(first["athena"]["reused"], false);
    assert_eq!(
        (&second["athena"]["reused"], &second["athena"]["data_scanned_bytes"]),
        (&serde_json::json!(true), &serde_json::json!(0))
    );
    assert_eq!(second["athena"]["cost_usd"].as_f64(), Some(10e6 / 1e12 * 5.0));
    assert_eq!(second["in_zone_share"], first["in_zone_share"]);

    // The Hive-compatible layout (`--table-layout hive`): the same day's report, three fifths
    // scanned.
    let standin = StandIn::start(&logs, &["--hive"]);
    let out = run(&standin, &["--table-layout", "hive"]);
    assert!(out.status.success(), "hive: {}", text(&out.stderr));
    let hive: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let scanned = hive["athena"]["data_scanned_bytes"].as_u64().unwrap();
    assert!(
        scanned * 5 > total * 2 && scanned * 5 < total * 4,
        "hive: {scanned} of {total}"
    );
    assert_eq!(comparable(&hive), comparable(&reports[0]), "hive and projected");

    // FAILED.
    let standin = StandIn::start(&logs, &["--fail", "HIVE_BAD_DATA: Error parsing field value"]);
    let out = run(&standin, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(out.stdout.is_empty());
    let said = text(&out.stderr);
    assert!(
        said.contains("Athena query q-0001 failed: HIVE_BAD_DATA: Error parsing field value"),
        "{said}"
    );

    // RUNNING, then SIGINT or SIGTERM; RUNNING past the deadline.
    for signal in ["INT", "TERM"] {
        let standin = StandIn::start(&logs, &["--hold"]);
        let env = standin.env();
        let all = args(&[]);
        let child = Command::new(locality())
            .arg("audit")
            .args(&all)
            .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while !standin.calls().iter().any(|c| c == "GetQueryExecution") {
            assert!(std::time::Instant::now() < deadline, "no poll");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let _ = Command::new("kill")
            .args([&format!("-{signal}"), &child.id().to_string()])
            .status();
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(130), "SIG{signal}: {}", text(&out.stderr));
        assert!(out.stdout.is_empty());
        assert!(
            standin.calls().iter().any(|c| c == "StopQueryExecution"),
            "{:?}",
            standin.calls()
        );
        assert!(
            text(&out.stderr).contains("stopped (StopQueryExecution)"),
            "{}",
            text(&out.stderr)
        );
    }
    // SIGINT while a poll is in flight (each answered 5 s after it arrives): the signal is kept
    // and ends the audit at once, the query stopped. (The listener was made afresh at each wait:
    // a signal during a call was lost, and the audit polled a held query to its deadline.)
    let standin = StandIn::start(&logs, &["--hold", "--slow-poll", "5"]);
    let env = standin.env();
    let all = args(&["--athena-timeout", "120s"]);
    let child = Command::new(locality())
        .arg("audit")
        .args(&all)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !standin.calls().iter().any(|c| c == "GetQueryExecution") {
        assert!(std::time::Instant::now() < deadline, "no poll");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let signalled = std::time::Instant::now();
    let _ = Command::new("kill").args(["-INT", &child.id().to_string()]).status();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", text(&out.stderr));
    assert!(
        signalled.elapsed() < std::time::Duration::from_secs(4),
        "the audit ended {:?} after SIGINT, a poll in flight",
        signalled.elapsed()
    );
    assert!(
        text(&out.stderr).contains("stopped (StopQueryExecution)"),
        "{}",
        text(&out.stderr)
    );

    let standin = StandIn::start(&logs, &["--hold"]);
    let started = std::time::Instant::now();
    let out = run(&standin, &["--athena-timeout", "2s"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert!(
        text(&out.stderr).contains("--athena-timeout 2s"),
        "{}",
        text(&out.stderr)
    );
    assert!(standin.calls().iter().any(|c| c == "StopQueryExecution"));

    // Hostile results.
    let header = ["kind", "name", "detail", "bytes", "records", "interface"];
    for (rows, said) in [
        (
            serde_json::json!([
                ["kind", "name", "detail", "in_zone_share", "records", "interface"],
                [["records", null, null, null, "1", null]]
            ]),
            "not the answer",
        ),
        (
            serde_json::json!([
                header,
                [
                    ["pair", "10.0.1.11", "10.0.2.100", "lots", "1", null],
                    ["records", null, null, null, "1", null],
                    ["window", null, null, null, null, null]
                ]
            ]),
            "bytes \"lots\" is not a whole number",
        ),
        (
            serde_json::json!([
                header,
                [
                    ["pair", "10.0.1.11", "10.0.2.100", "999999", "1", null],
                    ["records", null, null, null, "7", null],
                    ["window", null, null, null, null, null]
                ]
            ]),
            "do not add up",
        ),
    ] {
        let file = dir.path().join("rows.json");
        let (names, rows) = (rows[0].clone(), rows[1].clone());
        std::fs::write(&file, serde_json::json!([names, rows]).to_string()).unwrap();
        let standin = StandIn::start(&logs, &["--rows-json", file.to_str().unwrap()]);
        let out = run(&standin, &[]);
        assert_eq!(out.status.code(), Some(1), "{said}: {}", text(&out.stderr));
        assert!(out.stdout.is_empty(), "{said}");
        assert!(text(&out.stderr).contains(said), "{said}: {}", text(&out.stderr));
    }
}

/// The compressed bytes of every file under `root`.
fn walk_size(root: &Path) -> u64 {
    let mut total = 0;
    for entry in std::fs::read_dir(root).unwrap() {
        let entry = entry.unwrap();
        total += if entry.file_type().unwrap().is_dir() {
            walk_size(&entry.path())
        } else {
            entry.metadata().unwrap().len()
        };
    }
    total
}

/// Issue 58, item 9: a small gzip of many tiny lines (the issue's attacker: 10^9 one-byte lines
/// in 1.9 MB took 77.6 s of CPU). Past `--max-lines-per-file` the file stops the audit with a
/// sentence naming it, escaped; below it, the lines count as unparsed, as before.
#[test]
fn a_file_past_max_lines_per_file_stops_the_audit_naming_it() {
    let f = Fixture::new();
    let folder = f.dir.path().join("tiny-lines");
    std::fs::create_dir_all(&folder).unwrap();
    let name = folder.join("bomb\u{1b}[31m.log.gz");
    std::fs::write(&name, gzip(&"x\n".repeat(5_000))).unwrap();
    let args = |max: &str| {
        vec![
            "--map".to_string(),
            f.path("map.json"),
            "--subnets".to_string(),
            f.path("subnets.json"),
            "--flow-logs".to_string(),
            folder.display().to_string(),
            "--format".to_string(),
            "json".to_string(),
            "--max-lines-per-file".to_string(),
            max.to_string(),
        ]
    };
    let run = |max: &str| {
        let args = args(max);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        audit(&args, &[])
    };
    let out = run("1000");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(out.stdout.is_empty());
    let said = text(&out.stderr);
    assert!(
        said.contains("more than 1000 lines (--max-lines-per-file)") && said.contains("bomb\\u{1b}[31m.log.gz"),
        "{said}"
    );
    assert!(!said.contains('\u{1b}'), "the name is escaped: {said}");
    let out = run("100000");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["skipped"]["unparsed_lines"], 5_000, "{}", text(&out.stderr));
}

/// Issue 58, item 4: DescribeSubnets pages that never end. The SDK's paginator stopped only on
/// the same token twice in a row: tokens alternating A/B made 1,261 requests in 40 s and went
/// on. Now a token given before ends the audit at once (page 3, 3 requests), and a new token on
/// every page ends it past 100 pages (100 requests), each with a sentence pointing at
/// `--subnets`.
#[test]
fn describe_subnets_pages_end() {
    use common::fault_proxy::{Fault, FaultProxy};
    let f = Fixture::new();
    let moto = Moto::start();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    for (alternating, expected, requests) in [
        (true, "a page token it had given before (page 3)", 3),
        (false, "more than 100 pages", 100),
    ] {
        let proxy = runtime.block_on(FaultProxy::start(&moto.endpoint));
        {
            let mut state = proxy.state.lock().unwrap();
            for n in 0..150 {
                let token = match (alternating, n % 2) {
                    (true, 0) => "A".to_string(),
                    (true, _) => "B".to_string(),
                    (false, _) => format!("page-{n}"),
                };
                state.faults.push_back(Fault::Answer(format!(
                    r#"<DescribeSubnetsResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"><requestId>r{n}</requestId><subnetSet><item><subnetId>subnet-{n}</subnetId><cidrBlock>10.0.1.0/24</cidrBlock><availabilityZone>ap-northeast-1a</availabilityZone></item></subnetSet><nextToken>{token}</nextToken></DescribeSubnetsResponse>"#
                )));
            }
        }
        let mut env: Vec<(&str, &str)> = ENV.to_vec();
        let endpoint = proxy.endpoint();
        env.push(("AWS_ENDPOINT_URL", &endpoint));
        let started = std::time::Instant::now();
        let out = audit(&["--map", &f.path("map.json"), "--flow-logs", &f.path("default")], &env);
        assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
        let said = text(&out.stderr);
        assert!(said.contains(expected) && said.contains("--subnets FILE"), "{said}");
        let asked = proxy.state.lock().unwrap().actions.len();
        assert_eq!(asked, requests, "{said}");
        eprintln!(
            "DescribeSubnets, {expected}: {asked} requests in {:?}",
            started.elapsed()
        );
    }
}

/// Issue 58, item 3: S3 names and tokens past S3's own limits. A 66,000-byte continuation
/// token made the SDK panic (`InvalidUri(TooLong)`, exit 101), and keys of 60 KB filled memory
/// page after page; now a key over 1,024 bytes or a token over 4,096 ends the listing with a
/// sentence naming `s3://bucket/prefix`, exit 1, never a panic.
#[test]
fn s3_keys_and_tokens_past_s3s_limits_are_refused() {
    use common::fault_proxy::{Fault, FaultProxy};
    let f = Fixture::new();
    let moto = Moto::start();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let long_key = format!("AWSLogs/{}.log.gz", "k".repeat(60_000));
    let long_token = "t".repeat(66_000);
    for (key, token, expected) in [
        (
            long_key.as_str(),
            "next",
            "a key of 60015 bytes, and S3 keys are at most 1024",
        ),
        (
            "AWSLogs/a.log.gz",
            long_token.as_str(),
            "a continuation token of 66000 bytes",
        ),
    ] {
        let proxy = runtime.block_on(FaultProxy::start(&moto.endpoint));
        proxy.state.lock().unwrap().faults.push_back(Fault::Answer(format!(
            r#"<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>flow-logs</Name><Prefix>AWSLogs/</Prefix><KeyCount>1</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>true</IsTruncated><NextContinuationToken>{token}</NextContinuationToken><Contents><Key>{key}</Key><Size>10</Size></Contents></ListBucketResult>"#
        )));
        let mut env: Vec<(&str, &str)> = ENV.to_vec();
        let endpoint = proxy.endpoint();
        env.push(("AWS_ENDPOINT_URL", &endpoint));
        let out = audit(
            &[
                "--map",
                &f.path("map.json"),
                "--subnets",
                &f.path("subnets.json"),
                "--flow-logs",
                "s3://flow-logs/AWSLogs/",
            ],
            &env,
        );
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(
            err.contains("s3://flow-logs/AWSLogs/") && err.contains(expected),
            "{err}"
        );
        assert!(!err.contains("panicked"), "{err}");
        assert_eq!(proxy.state.lock().unwrap().actions.len(), 1, "{err}");
        eprintln!("{expected}: exit 1 after one request");
    }
}

/// Issue 58, item 6: names from outside, each path an attacker took around the escaping, now
/// printed through the one function (`locality_resolve::printable`: Cc, Cf, Zl, Zp escaped).
/// Before: a header line without `dstaddr` printed its fields raw (an OSC title, BEL, U+202E,
/// U+0085); a subnet zone holding a newline forged a node row of the table; an S3 error's
/// `<Message>` with `&#13;`, a newline, U+202E or U+0085 forged a `locality audit:` line.
#[test]
fn names_from_outside_are_printed_escaped_on_every_path() {
    use common::fault_proxy::{Fault, FaultProxy};
    fn raw(text: &str) -> Option<char> {
        text.chars()
            .find(|c| *c != '\n' && locality_resolve::printable::is_unsafe(*c))
    }
    let f = Fixture::new();
    const FORGED_ROW: &str = "  10.0.9.9:6379                                replica  ap-northeast-1c  9.9 GB  0 B";
    let forgery = format!("\n{FORGED_ROW}\u{1b}]0;owned\u{7}\u{202e}\u{85}\u{2028}\u{2029}\u{61c}\u{feff}");

    // A subnet whose zone holds a newline and a node row of the table.
    let mut subnets: serde_json::Value = serde_json::from_str(&subnets_json()).unwrap();
    for subnet in subnets["Subnets"].as_array_mut().unwrap() {
        let zone = subnet["AvailabilityZone"].as_str().unwrap().to_string();
        subnet["AvailabilityZone"] = serde_json::Value::String(format!("{zone}{forgery}"));
    }
    std::fs::write(f.path("forged-subnets.json"), subnets.to_string()).unwrap();
    let args = |format: &'static str| {
        let (map, subnets, logs) = (f.path("map.json"), f.path("forged-subnets.json"), f.path("default"));
        move || {
            audit(
                &[
                    "--map",
                    &map,
                    "--subnets",
                    &subnets,
                    "--flow-logs",
                    &logs,
                    "--format",
                    format,
                ],
                &[],
            )
        }
    };
    let out = args("table")();
    let table = text(&out.stdout);
    assert_eq!(raw(&table), None, "{table}");
    assert!(
        !table.lines().any(|l| l.starts_with("  10.0.9.9:6379")),
        "a forged row:\n{table}"
    );
    assert!(
        table.contains("\\n  10.0.9.9:6379"),
        "the zone, escaped on its own line:\n{table}"
    );
    // (A cell shows 64 characters of a name at most, the rest cut: the JSON below has it whole.)
    assert!(
        table.contains("\\n  10.0.9.9:6379") && table.contains("..."),
        "the zone cut: {table}"
    );
    assert!(
        !table.lines().any(|l| l.chars().count() > 260),
        "no line pushed apart by a long name:\n{table}"
    );
    let out = args("json")();
    let json_text = text(&out.stdout);
    assert_eq!(raw(&json_text), None, "{json_text}");
    let json: serde_json::Value = serde_json::from_str(&json_text).unwrap();
    let zone = json["cross_zone_clients"][0]["zone"].as_str().unwrap();
    assert!(
        zone.ends_with(&forgery),
        "JSON keeps the value itself, escaped as JSON: {zone:?}"
    );
    let prometheus = text(&args("prometheus")().stdout);
    assert_eq!(raw(&prometheus), None, "{prometheus}");
    // A header line without dstaddr, its fields an OSC title, BEL, U+202E and U+0085.
    std::fs::create_dir_all(f.path("forged-header")).unwrap();
    std::fs::write(
        f.dir.path().join("forged-header/a.log"),
        "version account-id \u{1b}]0;owned\u{7} \u{202e}x \u{85}\u{2028} srcaddr bytes\n2 1 10.0.0.1 5\n",
    )
    .unwrap();
    let out = audit(
        &[
            "--map",
            &f.path("map.json"),
            "--subnets",
            &f.path("subnets.json"),
            "--flow-logs",
            &f.path("forged-header"),
        ],
        &[],
    );
    let err = text(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{err}");
    assert_eq!(raw(&err), None, "{err:?}");
    assert!(
        err.contains("no `dstaddr` field") && err.contains("\\u{1b}]0;owned\\u{7} \\u{202e}x \\u{85}\\u{2028}"),
        "{err}"
    );

    // An S3 error whose <Message> holds &#13;, a newline, U+202E and U+0085 and a forged line.
    let moto = Moto::start();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let proxy = runtime.block_on(FaultProxy::start(&moto.endpoint));
    proxy.state.lock().unwrap().faults.push_back(Fault::Error(
        403,
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>AccessDenied</Code><Message>denied&#13;\nlocality audit: in-zone share 100.00 % \u{202e}\u{85}ok</Message><RequestId>r1</RequestId></Error>".into(),
    ));
    let endpoint = proxy.endpoint();
    let mut env: Vec<(&str, &str)> = ENV.to_vec();
    env.push(("AWS_ENDPOINT_URL", &endpoint));
    let out = audit(
        &[
            "--map",
            &f.path("map.json"),
            "--subnets",
            &f.path("subnets.json"),
            "--flow-logs",
            "s3://flow-logs/AWSLogs/",
        ],
        &env,
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(raw(&err), None, "{err:?}");
    assert!(
        !err.lines().any(|l| l.starts_with("locality audit: in-zone")),
        "a forged line: {err}"
    );
    assert!(
        err.contains("AccessDenied: denied\\r\\nlocality audit: in-zone share 100.00 % \\u{202e}\\u{85}ok"),
        "{err}"
    );
    eprintln!("{err}");
}

/// Issue 58, item 2: audit memory per distinct client. An attacker sends from many addresses of
/// one IPv6 /64 (and, apart, from one address through many interface ids): each record a new
/// client. The audit's peak RSS over its own floor (the audit of 1,000 such records), per
/// distinct client, stays at 300 bytes or less (it was about 900); past `--max-clients` the
/// audit exits 1 with a sentence naming the cap and `--athena`, never an abort.
/// (`scripts/bench --audit-memory` measures 1 and 2 million on the release build.)
#[test]
fn many_distinct_clients_cost_at_most_300_bytes_each_and_the_cap_is_a_sentence() {
    const REPLICA: &str = "2600:1f18:0:1::11";
    let dir = tempfile::tempdir().unwrap();
    let map = format!(
        r#"{{"version":1,"fallback":"reader.example:6379","zones":{{"ap-northeast-1a":"[{REPLICA}]:6379"}},"nodes":[{{"endpoint":"[{REPLICA}]:6379","role":"replica","zone":"ap-northeast-1a"}}]}}"#
    );
    std::fs::write(dir.path().join("map.json"), map).unwrap();
    std::fs::write(
        dir.path().join("subnets.json"),
        r#"{"Subnets":[{"CidrBlock":"10.0.2.0/24","AvailabilityZone":"ap-northeast-1c","Ipv6CidrBlockAssociationSet":[{"Ipv6CidrBlock":"2600:1f18:0:2::/64"}]}]}"#,
    )
    .unwrap();
    let header = "version account-id interface-id srcaddr dstaddr srcport dstport protocol packets bytes start end action log-status\n";
    let write = |name: &str, distinct: u32, many_interfaces: bool| {
        let mut text = String::from(header);
        for n in 0..distinct {
            let (client, eni) = if many_interfaces {
                ("2600:1f18:0:2::7".to_string(), format!("eni-{n:017x}"))
            } else {
                (
                    format!("2600:1f18:0:2::{:x}:{:x}", n >> 16, n & 0xffff),
                    "eni-0node0000000000".to_string(),
                )
            };
            let start = 1_796_083_200 + u64::from(n % 1440) * 60;
            text.push_str(&format!(
                "2 123456789012 {eni} {client} {REPLICA} 40000 6379 6 10 4000 {start} {} ACCEPT OK\n",
                start + 60
            ));
        }
        let path = dir.path().join(name);
        // Plain text (a debug build compresses slowly; the audit reads both alike).
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    };
    // The child's peak RSS, from getrusage of the one child Python waits for.
    let peak = |log: &str, extra: &[&str]| -> (Option<i32>, String, u64) {
        let out = Command::new("python3")
            .args([
                "-c",
                "import os, subprocess, sys\np = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)\nerr = p.stderr.read()\n_, status, usage = os.wait4(p.pid, 0)\nsys.stderr.buffer.write(err)\nprint(os.waitstatus_to_exitcode(status), usage.ru_maxrss * 1024)",
            ])
            .arg(locality())
            .args(["audit", "--map"])
            .arg(dir.path().join("map.json"))
            .arg("--subnets")
            .arg(dir.path().join("subnets.json"))
            .args(["--flow-logs", log, "--format", "json"])
            .args(extra)
            .env("AWS_EC2_METADATA_DISABLED", "true")
            .output()
            .unwrap();
        let said = text(&out.stdout);
        let mut words = said.split_whitespace();
        let code = words.next().and_then(|c| c.parse().ok());
        let rss = words.next().and_then(|r| r.parse().ok()).expect("the peak RSS");
        (code, text(&out.stderr), rss)
    };
    const DISTINCT: u32 = 400_000;
    let floor_log = write("floor.log", 1_000, false);
    let (code, err, floor) = peak(&floor_log, &[]);
    assert_eq!(code, Some(0), "{err}");
    for (name, many_interfaces) in [("clients", false), ("interfaces", true)] {
        let log = write(&format!("{name}.log"), DISTINCT, many_interfaces);
        let (code, err, rss) = peak(&log, &[]);
        assert_eq!(code, Some(0), "{err}");
        let each = rss.saturating_sub(floor) as f64 / f64::from(DISTINCT);
        eprintln!(
            "{DISTINCT} distinct {name}: peak {:.1} MiB, floor {:.1} MiB: {each:.0} B each",
            rss as f64 / 1048576.0,
            floor as f64 / 1048576.0
        );
        assert!(each <= 300.0, "{name}: {each:.0} B each (goal: 300)");
        // Past the cap: a sentence, exit 1, nothing on stdout.
        let (code, err, _) = peak(&log, &["--max-clients", "100000"]);
        assert_eq!(code, Some(1), "{err}");
        assert!(
            err.contains(&format!(
                "more than 100000 distinct {}",
                if many_interfaces { "interface ids" } else { "clients" }
            )) && err.contains("--max-clients 100000")
                && err.contains("--athena")
                && err.contains(&format!("{name}.log")),
            "{err}"
        );
        assert!(!err.contains("panicked") && !err.contains("memory allocation"), "{err}");
        if !many_interfaces {
            // The guide's sentence, as the audit says it (numbers and the file's place aside).
            let guide = std::fs::read_to_string(
                Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/guides/consuming-the-replica-map.md"),
            )
            .unwrap();
            let shape = |line: &str| -> String {
                let after = line.split_once(", line ").map_or(line, |(_, rest)| rest);
                after
                    .chars()
                    .map(|c| if c.is_ascii_digit() { '#' } else { c })
                    .collect::<String>()
                    .split('#')
                    .filter(|p| !p.is_empty())
                    .collect::<Vec<_>>()
                    .join("#")
            };
            let said = guide
                .lines()
                .find(|l| l.starts_with("locality audit: …/clients-"))
                .expect("the guide's sentence");
            assert_eq!(
                shape(said),
                shape(err.trim_end().lines().last().unwrap_or_default()),
                "the guide says:\n{said}\nthe audit says:\n{err}"
            );
        }
    }
}

/// Issue 61, item 5: EKS pods on secondary addresses of their node's interface. At the pod's end
/// (the node's interface), `srcaddr`/`dstaddr` are the node's primary address and
/// `pkt-srcaddr`/`pkt-dstaddr` the pod's; at the cache's end both are the pod's. With the `pkt-*`
/// fields in the format, the CLI and the SQL (the stand-in Athena, DuckDB) read the packet's own
/// addresses: each flow counts once, and the EKS node is no client. Without them, the same
/// records count the pods' reads at both ends.
#[test]
fn eks_pods_behind_their_nodes_address_count_once_with_the_pkt_fields() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("map.json"), map_json()).unwrap();
    std::fs::write(dir.path().join("subnets.json"), subnets_json()).unwrap();
    // The EKS node 10.0.2.50 (zone c) and its pods 10.0.2.60 and .61 read zone a's replica.
    let (eks_node, pods, replica) = ("10.0.2.50", ["10.0.2.60", "10.0.2.61"], REPLICAS[0]);
    let header = "version account-id interface-id srcaddr dstaddr pkt-srcaddr pkt-dstaddr srcport dstport protocol packets bytes start end action log-status flow-direction";
    let mut lines = vec![header.to_string()];
    let (mut truth_across, t0) = (0u64, 1_796_083_200u64);
    for minute in 0..30u64 {
        let start = t0 + minute * 60;
        let end = start + 59;
        for (n, pod) in pods.iter().enumerate() {
            let (ask, answer) = (200 + n as u64, 16_000 + 100 * minute);
            truth_across += ask + answer;
            // At the pod's end: the node's interface, the node's primary address.
            lines.push(format!("5 {ACCOUNT} eni-eks {eks_node} {replica} {pod} {replica} 4{n}000 6379 6 3 {ask} {start} {end} ACCEPT OK egress"));
            lines.push(format!("5 {ACCOUNT} eni-eks {replica} {eks_node} {replica} {pod} 6379 4{n}000 6 12 {answer} {start} {end} ACCEPT OK ingress"));
            // At the cache's end: the pod's address in both.
            lines.push(format!("5 {ACCOUNT} eni-cache {pod} {replica} {pod} {replica} 4{n}000 6379 6 3 {ask} {start} {end} ACCEPT OK ingress"));
            lines.push(format!("5 {ACCOUNT} eni-cache {replica} {pod} {replica} {pod} 6379 4{n}000 6 12 {answer} {start} {end} ACCEPT OK egress"));
        }
    }
    let day = |root: &Path| root.join("AWSLogs/123456789012/vpcflowlogs/ap-northeast-1/2026/12/01");
    let with_pkt = dir.path().join("with-pkt");
    std::fs::create_dir_all(day(&with_pkt)).unwrap();
    std::fs::write(day(&with_pkt).join("eks.log.gz"), gzip(&(lines.join("\n") + "\n"))).unwrap();
    // The same records in a format without the pkt-* fields.
    let without: Vec<String> = lines
        .iter()
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            [&f[..5], &f[7..]].concat().join(" ")
        })
        .collect();
    let without_pkt = dir.path().join("without-pkt");
    std::fs::create_dir_all(day(&without_pkt)).unwrap();
    std::fs::write(day(&without_pkt).join("eks.log.gz"), gzip(&(without.join("\n") + "\n"))).unwrap();

    let map = dir.path().join("map.json").display().to_string();
    let subnets = dir.path().join("subnets.json").display().to_string();
    let common = [
        "--map",
        &map,
        "--subnets",
        &subnets,
        "--since",
        "2026-12-01",
        "--until",
        "2026-12-01",
        "--format",
        "json",
    ];
    let run = |logs: &Path, extra: &[&str], env: &[(&str, &str)]| {
        let logs = logs.display().to_string();
        let mut args = common.to_vec();
        if extra.is_empty() {
            args.extend(["--flow-logs", &logs]);
        }
        args.extend(extra);
        let out = audit(&args, env);
        assert!(out.status.success(), "{}", text(&out.stderr));
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    let files = run(&with_pkt, &[], &[]);
    assert_eq!(files["cross_zone_bytes"], truth_across, "{files}");
    let clients: Vec<&str> = files["cross_zone_clients"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["address"].as_str().unwrap())
        .collect();
    let mut clients = clients;
    clients.sort_unstable();
    assert_eq!(clients, pods, "the pods, never the EKS node: {files}");

    let standin = StandIn::start(&with_pkt, &[]);
    let env = standin.env();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let athena = run(&with_pkt, &["--athena", "--fields", header], &env);
    assert_eq!(athena["cross_zone_bytes"], truth_across, "{athena}");
    assert_eq!(comparable(&athena), comparable(&files), "Athena and the files");

    // Without the pkt-* fields, the node's primary address is a client of its own: the pods'
    // reads count at both ends.
    let doubled = run(&without_pkt, &[], &[]);
    assert_eq!(doubled["cross_zone_bytes"], 2 * truth_across, "{doubled}");
    // Never silently: the report says which bytes a client's end alone counted while the node's
    // end was recording, and the table tells what to do.
    assert_eq!(doubled["client_end_only_bytes"], truth_across, "{doubled}");
    assert_eq!(files["client_end_only_bytes"], 0, "{files}");
    let logs = without_pkt.display().to_string();
    let mut args: Vec<&str> = common
        .iter()
        .copied()
        .filter(|a| *a != "--format" && *a != "json")
        .collect();
    args.extend(["--flow-logs", &logs]);
    let table = text(&audit(&args, &[]).stdout);
    assert!(
        table.contains("One end only") && table.contains("pkt-srcaddr and pkt-dstaddr"),
        "{table}"
    );
    // The same figure from Athena's rows.
    let standin = StandIn::start(&without_pkt, &[]);
    let env = standin.env();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let fields_without = header.replace(" pkt-srcaddr pkt-dstaddr", "");
    let athena = run(&without_pkt, &["--athena", "--fields", &fields_without], &env);
    assert_eq!(
        comparable(&athena),
        comparable(&doubled),
        "Athena and the files, without pkt-*"
    );
}

/// Issue 61, item 8: files read in parallel, each under `--max-clients`, together past it: the
/// sentence names a file and a line, as it does when one file passes the cap.
#[test]
fn a_cap_passed_only_by_files_together_is_said_with_a_file_and_a_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("map.json"), map_json()).unwrap();
    std::fs::write(dir.path().join("subnets.json"), subnets_json()).unwrap();
    let logs = dir.path().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    for file in 0..2u32 {
        let mut text = String::from(DEFAULT_HEADER);
        text.push('\n');
        for n in 0..700u32 {
            let client = format!("10.{}.{}.{}", 100 + file, n / 250, n % 250 + 1);
            text.push_str(&format!(
                "2 {ACCOUNT} eni-c{file} {client} {} 40000 6379 6 1 100 1796083200 1796083259 ACCEPT OK\n",
                REPLICAS[0]
            ));
        }
        std::fs::write(logs.join(format!("part{file}.log")), text).unwrap();
    }
    let map = dir.path().join("map.json").display().to_string();
    let subnets = dir.path().join("subnets.json").display().to_string();
    let logs = logs.display().to_string();
    let out = audit(
        &[
            "--map",
            &map,
            "--subnets",
            &subnets,
            "--flow-logs",
            &logs,
            "--threads",
            "2",
            "--max-clients",
            "1000",
        ],
        &[],
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("more than 1000 distinct clients"), "{err}");
    assert!(
        err.contains("part0.log, line 701") || err.contains("part1.log, line 701"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
}

/// Issue 61, item 6: a flow across midnight. Its node's end recorded it from 23:59:50, its
/// client's end (stamped 30 s later) from 00:00:20, both delivered (by their end, as AWS does)
/// in the second day's folder, in a file AWS wrote at 00:05; another flow on each day, in its
/// own day's folder. Each daily run counts only the records that start on its day, matches the
/// ends with every record it read, and reads around its days (module `around`): the day's
/// folder and its neighbours' files written within 2 h of the day. So the daily runs, each
/// given one day's folder as the guide's daily job does, add up to the run over everything:
/// the first day counts the flow across midnight once (before, given its own folder, it lost
/// it: the record sat in the next day's folder), the second not again (before, the second
/// day's run counted the client's end too: 3,000 + 3,000 B for one flow of 3,000). Athena
/// (partitions of the days and one on each side) gives the same figures.
#[test]
fn a_flow_across_midnight_counts_in_one_days_run() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("map.json"), map_json()).unwrap();
    std::fs::write(dir.path().join("subnets.json"), subnets_json()).unwrap();
    let midnight = 1_796_169_600u64; // 2026-12-02 00:00:00 UTC
    let (client, node) = ("10.0.2.5", REPLICAS[0]);
    let header = "version account-id interface-id srcaddr dstaddr srcport dstport protocol packets bytes start end action log-status flow-direction";
    let record = |eni: &str, direction: &str, bytes: u64, start: u64, end: u64| {
        format!("5 {ACCOUNT} {eni} {client} {node} 40000 6379 6 10 {bytes} {start} {end} ACCEPT OK {direction}\n")
    };
    let logs = dir.path().join("logs");
    let region = logs.join("AWSLogs/123456789012/vpcflowlogs/ap-northeast-1");
    let file = |day: &str, written: &str, text: String| {
        let folder = region.join(day);
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(
            folder.join(format!(
                "{ACCOUNT}_vpcflowlogs_ap-northeast-1_fl-0a_{written}_abc.log.gz"
            )),
            gzip(&format!("{header}\n{text}")),
        )
        .unwrap();
    };
    // The flow across midnight, in the second day's folder.
    file(
        "2026/12/02",
        "20261202T0005Z",
        record("eni-node", "ingress", 3000, midnight - 10, midnight + 49)
            + &record("eni-c", "egress", 3000, midnight + 20, midnight + 79),
    );
    // A flow at noon of each day, in its own folder (both ends).
    file(
        "2026/12/01",
        "20261201T1210Z",
        record("eni-node", "ingress", 500, midnight - 43_200, midnight - 43_140)
            + &record("eni-c", "egress", 500, midnight - 43_200, midnight - 43_140),
    );
    file(
        "2026/12/02",
        "20261202T1210Z",
        record("eni-node", "ingress", 700, midnight + 43_200, midnight + 43_260)
            + &record("eni-c", "egress", 700, midnight + 43_200, midnight + 43_260),
    );
    let map = dir.path().join("map.json").display().to_string();
    let subnets = dir.path().join("subnets.json").display().to_string();
    let run = |days: Option<&str>, extra: &[&str], env: &[(&str, &str)]| {
        let mut args = vec!["--map", &map, "--subnets", &subnets, "--format", "json"];
        if let Some(date) = days {
            args.extend(["--since", date, "--until", date]);
        }
        args.extend(extra);
        let out = audit(&args, env);
        assert!(
            matches!(out.status.code(), Some(0 | 4)),
            "{days:?}: {}",
            text(&out.stderr)
        );
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    let folder = |day: &str| region.join(day).display().to_string();
    let first = run(Some("2026-12-01"), &["--flow-logs", &folder("2026/12/01")], &[]);
    let second = run(Some("2026-12-02"), &["--flow-logs", &folder("2026/12/02")], &[]);
    let whole = run(None, &["--flow-logs", &logs.display().to_string()], &[]);
    let bytes = |r: &serde_json::Value| r["in_zone_bytes"].as_u64().unwrap() + r["cross_zone_bytes"].as_u64().unwrap();
    assert_eq!(
        bytes(&first),
        500 + 3000,
        "the first day: its noon flow and the flow across midnight: {first}"
    );
    assert_eq!(
        bytes(&second),
        700,
        "the second day does not count the flow across midnight again: {second}"
    );
    assert_eq!(bytes(&whole), 500 + 3000 + 700, "{whole}");
    assert_eq!(
        bytes(&first) + bytes(&second),
        bytes(&whole),
        "the daily runs add up to the whole"
    );
    // The same runs given the region's delivery path.
    let region_path = region.display().to_string();
    assert_eq!(
        bytes(&run(Some("2026-12-01"), &["--flow-logs", &region_path], &[])),
        3500
    );
    // The Athena query reads the days' partitions and one on each side, and matches the ends
    // the same way.
    let standin = StandIn::start(&logs, &[]);
    let env = standin.env();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    for (date, files) in [("2026-12-01", &first), ("2026-12-02", &second)] {
        let athena = run(Some(date), &["--athena", "--fields", header], &env);
        assert_eq!(bytes(&athena), bytes(files), "Athena, {date}: {athena}");
        assert_eq!(athena["counted_records"], files["counted_records"], "Athena, {date}");
    }
}

/// Issue 61, item 7: two flow logs of two formats deliver into the same day folders (a custom
/// format, flow log `fl-0a`; the default one, `fl-0b`).
/// - `--print-ddl athena` on their prefix (moto's S3) refuses one table for both (exit 2), names
///   each log with its format and object count, and says how to keep them apart; with
///   `--flow-log-id` it prints each log's table; an id with no object there is an error.
/// - The stand-in Athena reads by position, as Athena does, the table in `fl-0b`'s format:
///   `--athena --flow-log-id fl-0b` gives the file audit's figures for `fl-0b`'s files alone,
///   while the same query over every file (no `--flow-log-id`) reads `fl-0a`'s records into the
///   wrong columns (its addresses where the bytes should be: every record lost as "no data").
///   Before: one table, exit 0, without a word.
#[test]
fn two_flow_logs_under_one_prefix_get_a_table_each_never_one() {
    let (lines, truth) = generate_captured(Capture::VpcWide);
    let logs = tempfile::tempdir().unwrap();
    let day_path = format!("AWSLogs/{ACCOUNT}/vpcflowlogs/ap-northeast-1/2026/12/01/");
    let day = logs.path().join(&day_path);
    std::fs::create_dir_all(&day).unwrap();
    let mut objects = Vec::new();
    for (id, format) in [("fl-0a", Format::Plain), ("fl-0b", Format::Default)] {
        let texts: Vec<String> = lines.iter().map(|l| format.of(l).to_string()).collect();
        for (n, part) in split(&texts, 2, Some(format.header())).iter().enumerate() {
            let name = format!("{ACCOUNT}_vpcflowlogs_ap-northeast-1_{id}_20261201T00{n}0Z_abc{n}.log.gz");
            std::fs::write(day.join(&name), gzip(part)).unwrap();
            objects.push((format!("{day_path}{name}"), gzip(part)));
        }
    }
    let moto = Moto::start();
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        let config = moto.config().await;
        let s3 = aws_sdk_s3::Client::from_conf(
            aws_sdk_s3::config::Builder::from(&config)
                .force_path_style(true)
                .build(),
        );
        s3.create_bucket()
            .bucket("flow-logs")
            .create_bucket_configuration(
                aws_sdk_s3::types::CreateBucketConfiguration::builder()
                    .location_constraint(aws_sdk_s3::types::BucketLocationConstraint::ApNortheast1)
                    .build(),
            )
            .send()
            .await
            .unwrap();
        for (key, body) in &objects {
            s3.put_object()
                .bucket("flow-logs")
                .key(key)
                .body(body.clone().into())
                .send()
                .await
                .unwrap();
        }
    });
    let mut env: Vec<(&str, &str)> = ENV.to_vec();
    env.push(("AWS_ENDPOINT_URL", &moto.endpoint));
    let delivered = format!("s3://flow-logs/AWSLogs/{ACCOUNT}/vpcflowlogs/ap-northeast-1/");
    let out = audit(&["--print-ddl", "athena", "--flow-logs", &delivered], &env);
    let said = text(&out.stderr);
    eprintln!("{said}");
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(out.stdout.is_empty(), "no table printed");
    for expected in [
        "holds 2 formats",
        &format!("flow log fl-0a (2 objects): {PLAIN_HEADER}"),
        &format!("flow log fl-0b (2 objects): {DEFAULT_HEADER}"),
        "--flow-log-id fl-0a",
        "a prefix of its own",
    ] {
        assert!(said.contains(expected), "{expected:?} in {said}");
    }
    for (id, header) in [("fl-0a", PLAIN_HEADER), ("fl-0b", DEFAULT_HEADER)] {
        let out = audit(
            &["--print-ddl", "athena", "--flow-logs", &delivered, "--flow-log-id", id],
            &env,
        );
        assert!(out.status.success(), "{id}: {}", text(&out.stderr));
        check_ddl(&text(&out.stdout), header, "region");
    }
    let out = audit(
        &[
            "--print-ddl",
            "athena",
            "--flow-logs",
            &delivered,
            "--flow-log-id",
            "fl-0c",
        ],
        &env,
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("no object of flow log fl-0c"),
        "{}",
        text(&out.stderr)
    );
    let out = audit(
        &[
            "--print-ddl",
            "athena",
            "--flow-logs",
            &delivered,
            "--flow-log-id",
            "fl-0b'--",
        ],
        &env,
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("is not a flow log's id"),
        "{}",
        text(&out.stderr)
    );

    // Athena, by position: the table in fl-0b's format over both logs' files.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("map.json"), map_json()).unwrap();
    std::fs::write(dir.path().join("subnets.json"), subnets_json()).unwrap();
    let map = dir.path().join("map.json").display().to_string();
    let subnets = dir.path().join("subnets.json").display().to_string();
    let common = [
        "--map",
        &map,
        "--subnets",
        &subnets,
        "--since",
        "2026-12-01",
        "--until",
        "2026-12-01",
        "--format",
        "json",
    ];
    let only_b = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(&day).unwrap() {
        let entry = entry.unwrap();
        if entry.file_name().to_string_lossy().contains("_fl-0b_") {
            std::fs::copy(entry.path(), only_b.path().join(entry.file_name())).unwrap();
        }
    }
    let mut files_args = common.to_vec();
    let only_b_arg = only_b.path().display().to_string();
    files_args.extend(["--flow-logs", &only_b_arg]);
    let files = audit(&files_args, &[]);
    assert!(files.status.success(), "{}", text(&files.stderr));
    let files: serde_json::Value = serde_json::from_slice(&files.stdout).unwrap();
    assert_figures(&files, &truth, "fl-0b's files");
    let standin = StandIn::start(logs.path(), &["--fields", DEFAULT_HEADER]);
    let standin_env = standin.env();
    let standin_env: Vec<(&str, &str)> = standin_env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let mut athena_args = common.to_vec();
    athena_args.extend(["--athena", "--fields", DEFAULT_HEADER, "--flow-log-id", "fl-0b"]);
    let out = audit(&athena_args, &standin_env);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let athena: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        comparable(&athena),
        comparable(&files),
        "--flow-log-id fl-0b: Athena and the files"
    );
    athena_args.truncate(athena_args.len() - 2);
    let out = audit(&athena_args, &standin_env);
    let mixed: Option<serde_json::Value> = serde_json::from_slice(&out.stdout).ok();
    assert_ne!(
        mixed.as_ref().map(comparable),
        Some(comparable(&files)),
        "without --flow-log-id, fl-0a's records are read by fl-0b's positions"
    );
    eprintln!(
        "one table over both logs: exit {:?}, no_data {:?} against {} for fl-0b alone (fl-0a's records misread)",
        out.status.code(),
        mixed.as_ref().map(|m| m["skipped"]["no_data"].clone()),
        files["skipped"]["no_data"]
    );
}

/// Issue 61, item 9 (escapes): text from outside reaches no output raw.
/// - `--print-sql athena`: a subnet's zone that holds ESC, a newline with a forged SQL comment,
///   and U+202E is inlined escaped (before: raw in the query text);
/// - `--subnets` with a block that is not a CIDR, holding an OSC title sequence: the error shows
///   it escaped;
/// - an Athena endpoint whose query id holds a newline and a forged line: refused, the id shown
///   escaped (before: printed raw in the report and the errors).
#[test]
fn hostile_names_reach_no_output_raw() {
    let dir = tempfile::tempdir().unwrap();
    let map = dir.path().join("map.json");
    std::fs::write(&map, map_json()).unwrap();
    let map = map.display().to_string();
    let zone = "ap-northeast-1x\u{1b}[2J\n-- forged\u{202e}";
    let subnets = dir.path().join("subnets.json");
    std::fs::write(
        &subnets,
        serde_json::json!({"Subnets": [
            {"CidrBlock": "10.0.1.0/24", "AvailabilityZone": ZONES[0]},
            {"CidrBlock": "10.9.0.0/16", "AvailabilityZone": zone},
        ]})
        .to_string(),
    )
    .unwrap();
    let subnets = subnets.display().to_string();
    let out = audit(&["--map", &map, "--subnets", &subnets, "--print-sql", "athena"], &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let sql = text(&out.stdout);
    assert!(
        !sql.contains('\u{1b}') && !sql.contains('\u{202e}') && !sql.contains("\n-- forged"),
        "{sql}"
    );
    assert!(
        sql.contains("'ap-northeast-1x\\u{1b}[2J\\n-- forged\\u{202e}'"),
        "{sql}"
    );
    let checked = check_sql_parses(&sql);
    assert!(checked, "the query still parses");

    let bad = dir.path().join("bad-subnets.json");
    std::fs::write(
        &bad,
        serde_json::json!({"Subnets": [{"CidrBlock": "10.0.0.0/33\u{1b}]0;owned\u{7}", "AvailabilityZone": zone}]})
            .to_string(),
    )
    .unwrap();
    let out = audit(
        &[
            "--map",
            &map,
            "--subnets",
            &bad.display().to_string(),
            "--print-sql",
            "athena",
        ],
        &[],
    );
    let said = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains("subnet block \"10.0.0.0/33\\u{1b}]0;owned\\u{7}\" (zone ap-northeast-1x\\u{1b}[2J\\n-- forged\\u{202e}) is not a CIDR block"),
        "{said}"
    );
    assert!(!said.contains('\u{1b}') && !said.contains('\u{7}'), "{said}");

    // The query id: a hostile Athena endpoint.
    let logs = dir
        .path()
        .join("logs/AWSLogs/123456789012/vpcflowlogs/ap-northeast-1/2026/12/01");
    std::fs::create_dir_all(&logs).unwrap();
    let (lines, _) = generate_captured(Capture::VpcWide);
    let texts: Vec<String> = lines.iter().map(|l| l.default.clone()).collect();
    std::fs::write(
        logs.join("part.log.gz"),
        gzip(&split(&texts, 1, Some(DEFAULT_HEADER))[0]),
    )
    .unwrap();
    let standin = StandIn::start(
        &dir.path().join("logs"),
        &["--query-id", "q-1\nlocality audit: in-zone share 1.0000"],
    );
    let env = standin.env();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let good_subnets = dir.path().join("good-subnets.json");
    std::fs::write(&good_subnets, subnets_json()).unwrap();
    let out = audit(
        &[
            "--map",
            &map,
            "--subnets",
            &good_subnets.display().to_string(),
            "--athena",
            "--since",
            "2026-12-01",
            "--until",
            "2026-12-01",
        ],
        &env,
    );
    let said = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains("a query execution id that is not one")
            && said.contains("\"q-1\\nlocality audit: in-zone share 1.0000\""),
        "{said}"
    );
    assert_eq!(
        said.lines()
            .filter(|l| l.starts_with("locality audit: in-zone"))
            .count(),
        0,
        "{said}"
    );
    assert!(out.stdout.is_empty(), "no report");
}

/// Whether sqlglot parses `sql` as Athena's dialect.
fn check_sql_parses(sql: &str) -> bool {
    let python = common::venv_python("LOCALITY_DUCKDB_PYTHON", "audit-venv", "duckdb");
    let mut child = Command::new(python)
        .args([
            "-c",
            "import sys, sqlglot; sqlglot.parse(sys.stdin.read(), read='athena')",
        ])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write as _;
    child.stdin.take().unwrap().write_all(sql.as_bytes()).unwrap();
    child.wait().unwrap().success()
}

/// A loopback endpoint that answers every request with `head` and then `chunk` again and again
/// (chunked) until `total` bytes or the client leaves: a hostile page of any size.
fn endless_answer(head: &'static str, open: &'static str, chunk: String, total: usize) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let chunk = chunk.clone();
            std::thread::spawn(move || {
                use std::io::{BufRead as _, Write as _};
                let mut reader = std::io::BufReader::new(stream.try_clone().unwrap());
                let mut length = 0usize;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                        length = v.trim().parse().unwrap_or(0);
                    }
                    if line == "\r\n" {
                        break;
                    }
                }
                let mut body = vec![0; length];
                let _ = std::io::Read::read_exact(&mut reader, &mut body);
                let mut write = |bytes: &[u8]| -> std::io::Result<()> {
                    stream.write_all(format!("{:x}\r\n", bytes.len()).as_bytes())?;
                    stream.write_all(bytes)?;
                    stream.write_all(b"\r\n")
                };
                if stream_write(&mut reader, head).is_err() || write(open.as_bytes()).is_err() {
                    return;
                }
                let mut sent = 0;
                while sent < total {
                    if write(chunk.as_bytes()).is_err() {
                        return;
                    }
                    sent += chunk.len();
                }
            });
        }
    });
    endpoint
}

/// Writes `text` to the stream under `reader` (the answer's head).
fn stream_write(reader: &mut std::io::BufReader<std::net::TcpStream>, text: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    reader.get_mut().write_all(text.as_bytes())
}

/// `locality audit ARGS` with `env`, under a parent that reports the child's peak RSS: (exit
/// code, stderr, bytes).
fn audit_peak(args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String, u64) {
    let out = Command::new("python3")
        .args([
            "-c",
            "import os, subprocess, sys\np = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)\nerr = p.stderr.read()\n_, status, usage = os.wait4(p.pid, 0)\nsys.stderr.buffer.write(err)\nprint(os.waitstatus_to_exitcode(status), usage.ru_maxrss * 1024)",
        ])
        .arg(locality())
        .arg("audit")
        .args(args)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let said = text(&out.stdout);
    let mut words = said.split_whitespace();
    let code = words.next().and_then(|c| c.parse().ok());
    let rss = words.next().and_then(|r| r.parse().ok()).expect("the peak RSS");
    (code, text(&out.stderr), rss)
}

/// Issue 61, item 9 (S3 pages, DescribeSubnets): an endpoint that answers one listing page of
/// ~1.5 M keys (200 MB, chunked), or one DescribeSubnets page of 200 MB, is refused once the
/// answer passes its bound (8 MiB, 16 MiB) with a sentence naming it, the audit's peak memory
/// staying under 150 MB (before: the SDK buffered and parsed the whole page, 3.38 GB for 1.5 M
/// keys).
#[test]
fn an_endless_listing_page_or_subnet_page_is_cut_at_its_bound() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("map.json"), map_json()).unwrap();
    std::fs::write(dir.path().join("subnets.json"), subnets_json()).unwrap();
    let map = dir.path().join("map.json").display().to_string();
    let subnets = dir.path().join("subnets.json").display().to_string();
    let head = "HTTP/1.1 200 OK\r\nContent-Type: application/xml\r\nTransfer-Encoding: chunked\r\n\r\n";
    let keys: String = (0..1000)
        .map(|n| format!("<Contents><Key>AWSLogs/123456789012/vpcflowlogs/ap-northeast-1/2026/12/01/k{n:06}.log.gz</Key><Size>1</Size></Contents>"))
        .collect();
    let s3 = endless_answer(
        head,
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Name>b</Name><Prefix></Prefix><KeyCount>1000</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated>",
        keys,
        200 << 20,
    );
    let mut env: Vec<(&str, &str)> = ENV.to_vec();
    env.push(("AWS_ENDPOINT_URL", &s3));
    let (code, said, rss) = audit_peak(
        &[
            "--map",
            &map,
            "--subnets",
            &subnets,
            "--flow-logs",
            "s3://flow-logs/AWSLogs/",
        ],
        &env,
    );
    eprintln!(
        "an endless S3 listing page: exit {code:?}, peak {} MB: {said}",
        rss >> 20
    );
    assert_eq!(code, Some(1), "{said}");
    assert!(said.contains("an S3 listing page larger than 8388608 bytes"), "{said}");
    assert!(rss < 150 << 20, "peak {rss} B");

    let subnet: String = (0..1000)
        .map(|n| format!("<item><subnetId>subnet-{n:08}</subnetId><cidrBlock>10.{}.{}.0/24</cidrBlock><availabilityZone>ap-northeast-1a</availabilityZone></item>", n / 256, n % 256))
        .collect();
    let ec2 = endless_answer(
        head,
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><DescribeSubnetsResponse xmlns=\"http://ec2.amazonaws.com/doc/2016-11-15/\"><requestId>r</requestId><subnetSet>",
        subnet,
        200 << 20,
    );
    let logs = dir.path().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    std::fs::write(logs.join("a.log"), format!("{DEFAULT_HEADER}\n")).unwrap();
    let mut env: Vec<(&str, &str)> = ENV.to_vec();
    env.push(("AWS_ENDPOINT_URL", &ec2));
    let (code, said, rss) = audit_peak(&["--map", &map, "--flow-logs", &logs.display().to_string()], &env);
    eprintln!(
        "an endless DescribeSubnets page: exit {code:?}, peak {} MB: {said}",
        rss >> 20
    );
    assert_eq!(code, Some(1), "{said}");
    assert!(
        said.contains("a DescribeSubnets page larger than 16777216 bytes"),
        "{said}"
    );
    assert!(rss < 150 << 20, "peak {rss} B");
}

/// Issue 61, item 9 (`--athena` memory and values): a hostile Athena answer is checked page by
/// page, never held. 20 M pair rows, each a new client: the audit stops at `--max-clients`
/// with the file audit's sentence, its memory small (before: every row held until the last
/// page, about 445 B a row, 4 GiB abort at 20 M); 100 k rows whose values are 64 KiB: refused
/// at the first, naming the column and the bound (before: the same abort).
#[test]
fn a_hostile_athena_answer_is_checked_page_by_page_within_bounds() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("map.json"), map_json()).unwrap();
    std::fs::write(dir.path().join("subnets.json"), subnets_json()).unwrap();
    let map = dir.path().join("map.json").display().to_string();
    let subnets = dir.path().join("subnets.json").display().to_string();
    let logs = dir
        .path()
        .join("logs/AWSLogs/123456789012/vpcflowlogs/ap-northeast-1/2026/12/01");
    std::fs::create_dir_all(&logs).unwrap();
    std::fs::write(logs.join("part.log"), format!("{DEFAULT_HEADER}\n")).unwrap();
    let args = [
        "--map",
        &map,
        "--subnets",
        &subnets,
        "--athena",
        "--since",
        "2026-12-01",
        "--until",
        "2026-12-01",
    ];
    let node = REPLICAS[0];
    let standin = StandIn::start(
        &dir.path().join("logs"),
        &["--rows-generate", "20000000", "--rows-node", node],
    );
    let env = standin.env();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let mut capped = args.to_vec();
    capped.extend(["--max-clients", "200000"]);
    let (code, said, rss) = audit_peak(&capped, &env);
    eprintln!("20 M rows of new clients: exit {code:?}, peak {} MB: {said}", rss >> 20);
    assert_eq!(code, Some(1), "{said}");
    assert!(
        said.contains("more than 200000 distinct clients in Athena's answer (at row 200001; --max-clients 200000)"),
        "{said}"
    );
    assert!(rss < 200 << 20, "peak {rss} B");
    drop(standin);

    // 64 KiB values: a page of them is past the answer's bound (16 MiB) ...
    let standin = StandIn::start(
        &dir.path().join("logs"),
        &[
            "--rows-generate",
            "100000",
            "--rows-node",
            node,
            "--rows-value-bytes",
            "65536",
        ],
    );
    let env = standin.env();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let (code, said, rss) = audit_peak(&args, &env);
    eprintln!(
        "100 k rows of 64 KiB values: exit {code:?}, peak {} MB: {said}",
        rss >> 20
    );
    assert_eq!(code, Some(1), "{said}");
    assert!(said.contains("an Athena answer larger than 16777216 bytes"), "{said}");
    assert!(rss < 200 << 20, "peak {rss} B");
    drop(standin);
    // ... and pages of ten rows are refused at the first value past 256 bytes.
    let standin = StandIn::start(
        &dir.path().join("logs"),
        &[
            "--rows-generate",
            "100000",
            "--rows-node",
            node,
            "--rows-value-bytes",
            "65536",
            "--page-size",
            "10",
        ],
    );
    let env = standin.env();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let (code, said, rss) = audit_peak(&args, &env);
    eprintln!(
        "100 k rows of 64 KiB values: exit {code:?}, peak {} MB: {said}",
        rss >> 20
    );
    assert_eq!(code, Some(1), "{said}");
    assert!(
        said.contains("Athena's row 1: interface holds 65536 bytes, more than the 256 any value of the answer needs"),
        "{said}"
    );
    assert!(rss < 200 << 20, "peak {rss} B");
}

/// Issue 61, item 9 (the tally's bound is per entry): one client and one node with 800 k
/// distinct windows, in 8 files read by 8 threads. Before, the cap counted clients (one here)
/// and applied per reader thread: a few such files reached 743 MB and 60 M windows aborted at
/// 4 GiB without a sentence. Now the entries the 8 tallies hold together are bounded
/// (`--max-entries`): at 200,000 the audit stops with the sentence, its peak small; under the
/// default bound the same records are counted.
#[test]
fn the_tallys_entries_are_bounded_across_threads() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("map.json"), map_json()).unwrap();
    std::fs::write(dir.path().join("subnets.json"), subnets_json()).unwrap();
    let logs = dir.path().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    for file in 0..8u64 {
        let mut text = format!("{DEFAULT_HEADER}\n");
        for n in 0..100_000u64 {
            // Each record its own second: a distinct window of the one pair.
            let start = 1_796_083_200 + file * 100_000 + n;
            text.push_str(&format!(
                "2 123456789012 eni-1 10.0.1.100 {} 40000 6379 6 1 100 {start} {start} ACCEPT OK\n",
                REPLICAS[0]
            ));
        }
        std::fs::write(logs.join(format!("part{file}.log")), text).unwrap();
    }
    let map = dir.path().join("map.json").display().to_string();
    let subnets = dir.path().join("subnets.json").display().to_string();
    let logs = logs.display().to_string();
    let base = [
        "--map",
        &map,
        "--subnets",
        &subnets,
        "--flow-logs",
        &logs,
        "--threads",
        "8",
        "--format",
        "json",
    ];
    let mut bounded = base.to_vec();
    bounded.extend(["--max-entries", "200000", "--max-clients", "1"]);
    let (code, said, rss) = audit_peak(&bounded, &[]);
    eprintln!(
        "800 k windows of one pair, --max-entries 200000: exit {code:?}, peak {} MB: {said}",
        rss >> 20
    );
    assert_eq!(code, Some(1), "{said}");
    assert!(
        said.contains("more than 200000 entries held for the records") && said.contains("--max-entries 200000"),
        "{said}"
    );
    assert!(rss < 200 << 20, "peak {rss} B");
    let (code, said, rss) = audit_peak(&base, &[]);
    eprintln!("the same under the default bound: exit {code:?}, peak {} MB", rss >> 20);
    assert_eq!(code, Some(0), "{said}");
}
