//! The fuzz targets' bodies, shared by the libFuzzer binaries (`fuzz/fuzz_targets/*.rs`, run by
//! `scripts/fuzz`) and by the replay test (`tests/fuzz_replay.rs`, in the default suite), so
//! that every corpus entry and every crash found stays a regression case.
//!
//! Each target feeds untrusted bytes to what Terraform, a spec file or a user can reach:
//! - `msgpack`: a DynamicValue as msgpack, decoded against every resource's and data source's
//!   schema, conformed, converted to its model and validated (ValidateResourceConfig);
//! - `json`: the same as JSON (UpgradeResourceState's raw state);
//! - `spec`: `locality gen` on HCL and on JSON text, diagnostics rendered;
//! - `import`: every resource's import ID parser (no credentials: nothing leaves the process);
//! - `text`: IP, endpoint, zone, URL and region-name parsers;
//! - `snapshot`: an IP-range snapshot file (`LOCALITY_RANGES_FILE`, either format version),
//!   then lookups and a walk over its ranges when it opens;
//! - `resolve`: what `locality resolve` reads: a replica map (then an endpoint chosen for a few
//!   zones), metadata answers (IMDS, ECS, Lambda), `--zone`, `--map`, a shared secret's key;
//! - `flow_log`: what `locality audit` reads: flow-log text (the first line as a header when it
//!   is one, else the default format; after a first line of `describe-subnets` JSON, which then
//!   gives the subnets), counted and reported in every format; the same bytes as
//!   `describe-subnets` JSON and as `--flow-logs` and `--fields` values. No error sentence and
//!   no line of a report holds a control, format or separator character raw.

#![allow(dead_code, unreachable_pub)] // shared with the fuzz crate, where these items are its own

use std::sync::{Arc, OnceLock};

use locality::generator::{generate, Format, SourceFile};
use locality::provider::config::ProviderConfig;
use locality::provider::{LocalityProvider, ProviderData};
use locality::tfplugin::value::{decode_json, decode_msgpack};
use locality::tfplugin::{Context, Diagnostics, Provider};

/// The targets, by name.
pub const TARGETS: [&str; 8] = [
    "msgpack", "json", "spec", "import", "text", "snapshot", "resolve", "flow_log",
];

/// Runs target `name` on `data`. Panics only on a bug (what the fuzzer looks for).
pub fn run(name: &str, data: &[u8]) {
    match name {
        "msgpack" => values(data, |bytes, ty| decode_msgpack(bytes, ty).ok()),
        "json" => values(data, |bytes, ty| decode_json(bytes, ty).ok()),
        "spec" => spec(data),
        "import" => import(data),
        "text" => text(data),
        "snapshot" => snapshot(data),
        "resolve" => resolve(data),
        "flow_log" => flow_log(data),
        other => panic!("no fuzz target {other:?}"),
    }
}

fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime")
    })
}

fn values(data: &[u8], decode: impl Fn(&[u8], &locality::tfplugin::Type) -> Option<locality::tfplugin::Value>) {
    let provider = LocalityProvider;
    for resource in provider.resources() {
        let block = resource.schema().block;
        if let Some(value) = decode(data, &block.value_type()) {
            let mut diags = Diagnostics::default();
            resource.validate(&block.conform(&value), &mut diags);
        }
    }
    for data_source in provider.data_sources() {
        let block = data_source.schema().block;
        if let Some(value) = decode(data, &block.value_type()) {
            let mut diags = Diagnostics::default();
            data_source.validate(&block.conform(&value), &mut diags);
        }
    }
}

fn spec(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    for (name, format) in [("spec.hcl", Format::Hcl), ("spec.json", Format::Json)] {
        let source = SourceFile { name, text: &text };
        for diagnostic in generate(&source, format).diagnostics {
            let _ = source.render(&diagnostic);
        }
    }
}

fn import(data: &[u8]) {
    let id = String::from_utf8_lossy(data);
    let ctx = Context {
        data: Arc::new(ProviderData::new(ProviderConfig::default())),
        stop: Default::default(),
    };
    for resource in LocalityProvider.resources() {
        let mut diags = Diagnostics::default();
        runtime().block_on(resource.import(&ctx, &id, &mut diags));
    }
}

fn text(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let _ = locality::provider::cloudflare::canonical_ip(&text);
    let _ = locality_resolve::zone::check_endpoint(&text);
    let _ = locality::provider::resources::zone_replica_map::is_zone_name(&text);
    let _ = locality::provider::resources::region_hint::is_zone_id(&text);
    let _ = locality::provider::config::check_base_url(&text);
    let _ = locality::regions::near_matches(&text, &locality::regions::AWS);
    let _ = locality::provider::resources::zone_replica_map::parse_permission(&text);
    for attribute in ["listener_arn", "rule_arn"] {
        let _ = locality::provider::aws::lb_forward::Target::parse(attribute, &text);
    }
    let _ = locality::provider::aws::lb_forward::group_name(&text);
    {
        use locality::tfplugin::Value;
        for function in locality::provider::functions::all() {
            let _ = function.call(&[Value::string(text.as_ref())]);
        }
    }
    if let Ok(ip) = text.trim().parse::<std::net::IpAddr>() {
        let _ = locality::ranges::builtin().lookup(ip);
    }
}

fn snapshot(data: &[u8]) {
    let Ok(table) = locality::ranges::Table::decode(data) else {
        return;
    };
    for ip in [
        "0.0.0.0",
        "3.112.1.1",
        "255.255.255.255",
        "::",
        "2600:1f00::1",
        "::ffff:3.112.1.1",
    ] {
        let hit = table.lookup(ip.parse().expect("an IP"));
        let _ = hit.map(|h| (h.hint(), h.to_range()));
    }
    let _ = table.ranges().count();
    let _ = table.age_days(std::time::SystemTime::now());
    let _ = table.encode();
}

fn resolve(data: &[u8]) {
    use locality_resolve::{detect, source, zone::Zone, MapSource, ReplicaMap};
    let text = String::from_utf8_lossy(data);
    if let Ok(map) = ReplicaMap::parse(&text) {
        for zone in ["ap-northeast-1a", "apne1-az4", "us-east-1f"] {
            let zone = Zone::parse(zone).expect("a zone");
            let candidates = map.candidates(&zone, &text);
            // The sidecar's HAProxy configuration of whatever the map holds: one line per
            // server, never a line a map value could add.
            let layout = locality_resolve::sidecar::Layout {
                replicas: candidates.unwrap_or_default(),
                reader: map.fallback.clone(),
                reason: None,
                zone: zone.name.clone(),
                seen: Default::default(),
            };
            let mut settings = locality_resolve::sidecar::haproxy::Settings {
                listen: "127.0.0.1:6379".parse().expect("an address"),
                stats: None,
                tls_ca_file: Some("@system-ca".into()),
                tls_server_name: Some("replicas.example".into()),
                user: None,
                nameservers: Vec::new(),
                check_timeout: std::time::Duration::from_millis(300),
                max_connections: 490,
                comments: Vec::new(),
            };
            let config = locality_resolve::sidecar::haproxy::render(&layout, &settings);
            let servers = config.lines().filter(|l| l.trim_start().starts_with("server ")).count();
            assert_eq!(servers, layout.replicas.len() + 1, "{config}");
            // Remote text (an error message, the input itself) in the reason and the comments
            // changes no directive.
            let hostile = locality_resolve::sidecar::Layout {
                reason: Some(text.to_string()),
                ..layout.clone()
            };
            settings.comments = vec![text.to_string(), format!("x\nglobal\n  lua-load /tmp/{text}")];
            let with_text = locality_resolve::sidecar::haproxy::render(&hostile, &settings);
            assert_eq!(
                locality_resolve::sidecar::haproxy::directives(&with_text),
                locality_resolve::sidecar::haproxy::directives(&config),
                "{with_text}"
            );
        }
    }
    let _ = locality_resolve::check::parse_availability_zone(&text);
    let probe = locality_resolve::check::Probe {
        availability_zone: Some(text.to_string()),
    };
    let _ = probe.zone_mismatch(&Zone::parse("ap-northeast-1a").expect("a zone"));
    let _ = locality_resolve::sidecar::runtime::parse_stat(&text);
    let _ = detect::zone_name(&text);
    let _ = detect::ecs_zone(&text);
    let _ = detect::lambda_zone(&text);
    if let Some(zone) = Zone::parse(&text) {
        let _ = zone.describe();
    }
    let _ = MapSource::parse(&text);
    let _ = source::under_key(&text, "replica_map");
    let _ = locality::provider::resources::zone_replica_map::shared_secret::document_under(&text, "replica_map");
    let _ = locality_resolve::split_endpoint(&text);
    let _ = locality_resolve::zone_env_problem(&text);
    let _ = locality_resolve::check::tls_server_name(&text, Some(&text));
    let comment = locality_resolve::sidecar::haproxy::comment_text(&text);
    assert!(
        comment.bytes().all(|b| b == b' ' || b.is_ascii_graphic()),
        "{comment:?}"
    );
    let _ = locality_resolve::shell_quote(&text);
}

fn flow_log(data: &[u8]) {
    use locality::audit::flow_log::{parse, Layout, Record};
    use locality::audit::report::Figures;
    use locality::audit::tally::Tally;
    use locality::audit::topology::{Node, Subnets};
    let text = String::from_utf8_lossy(data);
    said("--flow-logs", locality::audit::read::Location::parse(&text).err());
    said("the header", Layout::from_header(&text).err());
    let subnets = Subnets::from_json(&text).unwrap_or_else(|e| {
        said("subnets", Some(e));
        Subnets::default()
    });
    // A first line that is `describe-subnets` JSON gives the subnets of the records after it
    // (so that a zone from the subnets reaches the report's rows).
    let (subnets, text) = match text.split_once('\n') {
        Some((first, rest)) if first.starts_with('{') => match Subnets::from_json(first) {
            Ok(first_subnets) => (first_subnets, std::borrow::Cow::Owned(rest.to_string())),
            Err(_) => (subnets, text),
        },
        _ => (subnets, text),
    };
    let mut lines = text.lines();
    let layout = match lines.clone().next() {
        Some(first) if Layout::is_header(first) => {
            lines.next();
            Layout::from_header(first).unwrap_or_else(|_| Layout::default_format())
        }
        _ => Layout::default_format(),
    };
    let nodes = vec![Node {
        address: "10.0.1.11".parse().expect("an address"),
        endpoint: "10.0.1.11:6379".to_string(),
        role: locality_resolve::document::NodeRole::Replica,
        zone: "ap-northeast-1a".to_string(),
        zone_id: None,
    }];
    let mut tally = Tally::new(1_796_083_200);
    let mut line = Vec::new();
    let body = lines.collect::<Vec<_>>().join("\n");
    let mut reader = std::io::BufReader::with_capacity(512, body.as_bytes());
    let mut n = 0u64;
    // Through the line cap as the reader reads (a small cap here, so that long lines are cut).
    while let Ok((read, whole)) = locality::audit::read::read_line_capped(&mut reader, &mut line, 4096) {
        if read == 0 {
            break;
        }
        n += 1;
        let text = String::from_utf8_lossy(&line);
        if !whole {
            tally.skip("fuzz", n, "too long".into());
            continue;
        }
        match parse(text.trim_end_matches(['\n', '\r']), &layout) {
            Ok(Record::Flow(flow)) => tally.add(&flow, |ip| (ip == nodes[0].address).then_some(0)),
            Ok(Record::NoData) => tally.no_data(),
            Ok(Record::Rejected) => tally.rejected(),
            Err(bad) => tally.skip("fuzz", n, bad.0),
        }
    }
    let figures = Figures::compute(&mut tally, &nodes, &subnets, 0.01);
    printed(&figures);
    let _ = locality::audit::athena::query(
        "vpc_flow_logs",
        locality::audit::athena::Columns::default(),
        &nodes,
        &subnets,
        0.01,
        1_796_169_600,
    );
    said("--table", locality::audit::athena::check_table(&text).err());
    // Athena's side: the delivery location and the DDL of any format; rows of any shape (the
    // text's lines, split on tabs, `\N` for NULL) read into counts and rendered.
    if let Ok(delivery) = locality::audit::athena::Delivery::parse(&text) {
        said(
            "ddl",
            locality::audit::athena::ddl("vpc_flow_logs", &text, &delivery).err(),
        );
    }
    said(
        "--since",
        locality::audit::days::Days::from_flags(Some(&text), Some(&text), 1_796_083_200, true).err(),
    );
    let mut rows: Vec<Vec<Option<String>>> = text
        .lines()
        .map(|l| l.split('\t').map(|v| (v != "\\N").then(|| v.to_string())).collect())
        .collect();
    if !rows.is_empty() {
        let header = rows.remove(0);
        match locality::audit::athena_rows::counts(&header, &rows, &nodes) {
            Ok(counts) => printed(&Figures::from_counts(&counts, &nodes, &subnets, 0.01)),
            Err(e) => said("Athena's rows", Some(e)),
        }
    }
}

/// An error sentence holds no control, format or separator character raw (general categories
/// Cc, Cf, Zl, Zp: `locality_resolve::printable`), so it is one line whatever the input was.
fn said(what: &str, error: Option<String>) {
    if let Some(sentence) = error {
        let raw = sentence.chars().find(|c| locality_resolve::printable::is_unsafe(*c));
        assert!(raw.is_none(), "{what}: a raw {raw:?} in the error {sentence:?}");
    }
}

/// Every rendering of the figures: no line holds such a character raw (each name from outside
/// was escaped where it is written; the CLI's last pass is not counted on), and the JSON reads
/// back as the value it renders.
fn printed(figures: &locality::audit::report::Figures) {
    use locality_resolve::printable::{is_unsafe, json_text};
    let json = figures.to_json();
    let json_printed = json_text(&json);
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&json_printed).ok().as_ref(),
        Some(&json)
    );
    let why = figures.why_no_share().unwrap_or_default();
    for (what, text) in [
        ("table", figures.to_table()),
        ("prometheus", figures.to_prometheus()),
        ("json", json_printed),
        ("why", why),
    ] {
        let raw = text.chars().find(|c| *c != '\n' && is_unsafe(*c));
        assert!(raw.is_none(), "{what}: a raw {raw:?} in {text:?}");
    }
}
