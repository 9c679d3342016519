//! `locality audit`: where every client's cache reads really went, from AWS's own records.
//!
//! VPC Flow Logs (files, folders, S3) joined with the cache's nodes (the replica map) and the
//! VPC's subnets (client zones): bytes per node, role, client zone and client, each flow counted
//! once; the in-zone share, the cross-zone bytes and what they cost a month. `--print-sql
//! athena` prints the same computation as one Athena query.
//!
//! - [`flow_log`]: the records' format (header line, any field order) and one record;
//! - [`topology`]: nodes from the map, subnets from JSON or DescribeSubnets;
//! - [`tally`]: counting each flow once;
//! - [`read`]: files, folders and S3 objects, several at once;
//! - [`report`]: the figures and their renderings;
//! - [`athena`]: the SQL.

// The flags' doc comments are their `--help` text, where `<name>` is a placeholder, not HTML.
#![allow(rustdoc::invalid_html_tags)]

pub mod around;
pub mod athena;
pub mod athena_client;
pub mod athena_rows;
pub mod days;
pub mod flow_log;
pub mod read;
pub mod report;
pub mod tally;
pub mod topology;

use std::collections::HashMap;
use std::io::{IsTerminal as _, Write};
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::ValueEnum;
use locality_resolve::document::ReplicaMap;
use locality_resolve::printable::{json_text, printable_lines};
use locality_resolve::source::MapSource;

use self::flow_log::Layout;
use self::read::{Input, Location, Reading};
use self::report::Figures;
use self::topology::Subnets;

/// Exit status when the share is below `--min-share`, or undefined under it.
pub const BELOW_MIN_SHARE: u8 = 3;
/// Exit status when the share is undefined (no replica bytes with a client of known zone were
/// counted) and no `--min-share` was given: the report says what was read and left out.
pub const NO_SHARE: u8 = 4;

/// The flags of `locality audit`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  locality audit --map ssm:/prod/cache/replica-map --flow-logs s3://flow-logs/AWSLogs/123456789012/vpcflowlogs/us-east-1/2026/12/03/
  locality audit --map replica-map.json --subnets subnets.json --flow-logs ./flow-logs --format json --min-share 0.95
  locality audit --map replica-map.json --subnets subnets.json --print-sql athena

Exit status: 0; 1 when something cannot be read (nothing half-counted is printed); 2 for a usage error; 3 when the in-zone share is below --min-share (or undefined with it); 4 when the share is undefined: records were read and none was a replica's bytes with a client of known zone (the report says what was left out and why).")]
pub struct AuditArgs {
    /// The replica map: a file path, ssm:<name>, secretsmanager:<id> or secretsmanager:<id>#<key>.
    /// Its `nodes` (every node, its role and zone) when it lists them, else its zones' replicas.
    #[arg(long, value_name = "SOURCE", required_unless_present = "print_ddl")]
    map: Option<String>,
    /// Flow logs: a file, a folder (recursively *.log and *.log.gz) or s3://BUCKET/PREFIX
    /// (AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL for an S3-compatible endpoint). Repeatable.
    #[arg(long = "flow-logs", value_name = "LOCATION", required_unless_present_any = ["print_sql", "athena"])]
    flow_logs: Vec<String>,
    /// The subnets, as `aws ec2 describe-subnets` prints them (default: ec2:DescribeSubnets in
    /// the region). A client in no known subnet counts as zone `unknown`, never as in-zone.
    #[arg(long, value_name = "FILE")]
    subnets: Option<PathBuf>,
    /// The fields of files without a header line, in order (default: the default format,
    /// version 2). Files delivered to S3 name their fields in their first line. With
    /// --print-sql: the table's format, so that the query reads `flow_direction` when the
    /// table has it.
    #[arg(long, value_name = "FIELDS")]
    fields: Option<String>,
    /// The first UTC day to count (YYYY-MM-DD, inclusive): flow records that start before it
    /// are left out (`outside_window`; NODATA and REJECT records keep their own reasons).
    /// Without --since and --until, every record read counts.
    #[arg(long, value_name = "DATE")]
    since: Option<String>,
    /// The last UTC day to count (YYYY-MM-DD, inclusive).
    #[arg(long, value_name = "DATE")]
    until: Option<String>,
    /// Output.
    #[arg(long, value_enum, default_value_t = OutputFormat::Table)]
    format: OutputFormat,
    /// USD per GB (10^9 bytes) of data crossing zones between a client and a cache node, billed
    /// once: AWS charges it at the client's EC2 side, and nothing in or out of the ElastiCache
    /// node itself. Each cross-zone byte is priced at this once.
    #[arg(long = "price-per-gb", value_name = "USD", default_value_t = 0.01)]
    price_per_gb: f64,
    /// Exit 3 when the in-zone share is below this (0 to 1): a scheduled job fails loudly.
    #[arg(long = "min-share", value_name = "SHARE")]
    min_share: Option<f64>,
    /// Print the same computation as one SQL query instead, over the flow-log table that AWS's
    /// Athena integration creates (`vpc_flow_logs`), with the nodes and subnets inlined.
    #[arg(long = "print-sql", value_enum, value_name = "ENGINE")]
    print_sql: Option<SqlEngine>,
    /// Print the `CREATE EXTERNAL TABLE` for the flow logs at --flow-logs
    /// (s3://BUCKET/[PREFIX/]AWSLogs/ACCOUNT/vpcflowlogs/REGION/), in their format (the first
    /// object's header line, or --fields), with partition projection by day.
    #[arg(long = "print-ddl", value_enum, value_name = "ENGINE", conflicts_with_all = ["print_sql", "athena"])]
    print_ddl: Option<SqlEngine>,
    /// One flow log's files, by the id AWS writes in their names (`fl-...`), where the table's
    /// location holds the files of more than one flow log: --print-ddl prints the table in
    /// that log's format, and --print-sql and --athena read only its files (`"$path"`).
    #[arg(long = "flow-log-id", value_name = "ID", value_parser = athena::FlowLogId::parse)]
    flow_log_id: Option<athena::FlowLogId>,
    /// The table `--print-sql` and `--athena` query: NAME or DATABASE.NAME.
    #[arg(long, value_name = "NAME", default_value = "vpc_flow_logs")]
    table: String,
    /// Run the audit in Athena, over --table, reading only the days asked for (--since and
    /// --until; default: yesterday and today, UTC) and one on each side (AWS files a record
    /// under the day it delivered it), and print the same report. Endpoint and
    /// credentials: the AWS SDK's usual configuration (AWS_ENDPOINT_URL_ATHENA, profiles).
    #[arg(long, conflicts_with_all = ["print_sql", "flow_logs"])]
    athena: bool,
    /// The database of --table (default: the table's database part, else `default`).
    #[arg(long = "athena-database", value_name = "NAME")]
    athena_database: Option<String>,
    /// The Athena workgroup.
    #[arg(long = "athena-workgroup", value_name = "NAME", default_value = "primary")]
    athena_workgroup: String,
    /// Where Athena writes the results (s3://...; default: the workgroup's result location).
    #[arg(long = "athena-output", value_name = "S3_URI")]
    athena_output: Option<String>,
    /// How long the query may take, results read included; past it the query is stopped.
    #[arg(long = "athena-timeout", value_name = "DURATION", default_value = "30m", value_parser = parse_duration)]
    athena_timeout: Duration,
    /// Let Athena answer from a previous identical query's results up to this old (minutes).
    #[arg(long = "athena-reuse", value_name = "MINUTES", value_parser = clap::value_parser!(u32).range(1..=10080))]
    athena_reuse: Option<u32>,
    /// USD per TB scanned, for the report's price of the query.
    #[arg(long = "athena-price-per-tb", value_name = "USD", default_value_t = 5.0)]
    athena_price_per_tb: f64,
    /// How the table is partitioned: `projected` (the text table AWS documents, `day` as
    /// yyyy/MM/dd) or `hive` (Parquet: aws-service, year, month, day, hour).
    #[arg(long = "table-layout", value_enum, default_value_t = athena::TableLayout::Projected)]
    table_layout: athena::TableLayout,
    /// The most S3 keys one --flow-logs prefix may list (a day of a large VPC's flow logs is a
    /// few hundred thousand); a listing past it, or one that repeats a continuation token, ends
    /// with an error naming the bucket and prefix.
    #[arg(long = "max-objects", value_name = "N", default_value_t = 1_000_000)]
    max_objects: u64,
    /// The most lines one file or object may have: a gzip of tiny lines expands to billions (a
    /// flow-log file holds a few million records at most); past it the audit stops, naming the
    /// file.
    #[arg(long = "max-lines-per-file", value_name = "N", default_value_t = 100_000_000, value_parser = clap::value_parser!(u64).range(1..))]
    max_lines_per_file: u64,
    /// The most distinct clients (and as many distinct interface ids) the audit holds, at about
    /// 300 bytes each: past it the audit stops with a sentence (a VPC's clients are thousands; a
    /// sender of many addresses, one IPv6 /64, is not a reason to run out of memory). Larger
    /// fleets: --athena.
    #[arg(long = "max-clients", value_name = "N", default_value_t = tally::DEFAULT_MAX_CLIENTS, value_parser = clap::value_parser!(u64).range(1..))]
    max_clients: u64,
    /// The most entries the audit holds for the records, its reader threads together (48
    /// bytes each, spare room included; an entry is a distinct client, node, window and
    /// interface): past it the audit stops with a sentence.
    #[arg(long = "max-entries", value_name = "N", default_value_t = tally::DEFAULT_MAX_ENTRIES, value_parser = clap::value_parser!(u64).range(4096..))]
    max_entries: u64,
    /// How many files or objects are read at once (default: the number of cores).
    #[arg(long, value_name = "N")]
    threads: Option<usize>,
}

/// A duration such as `30m`, `90s` or `1h`.
fn parse_duration(text: &str) -> Result<Duration, String> {
    humantime::parse_duration(text.trim())
        .ok()
        .filter(|d| !d.is_zero() && *d <= Duration::from_secs(7 * 86_400))
        .ok_or_else(|| format!("{text:?} is not a duration of up to 7 days: e.g. 30m, 90s or 2h"))
}

/// `--format`.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum OutputFormat {
    /// For people: the summary, the worst clients first, the nodes.
    Table,
    /// One JSON object.
    Json,
    /// A node_exporter textfile (Prometheus text format).
    Prometheus,
}

/// `--print-sql`.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum SqlEngine {
    /// Amazon Athena (Trino SQL).
    Athena,
}

/// Runs `locality audit`; its exit status.
pub fn run(args: &AuditArgs, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    match audit(args, out, err) {
        Ok(status) => status,
        Err(Failure::Usage(message)) => {
            let _ = writeln!(err, "locality audit: {}", printable_lines(&message));
            2
        }
        Err(Failure::Error(message)) => {
            let _ = writeln!(err, "locality audit: {}", printable_lines(&message));
            1
        }
        Err(Failure::Interrupted(message)) => {
            let _ = writeln!(err, "locality audit: {}", printable_lines(&message));
            130
        }
    }
}

enum Failure {
    Usage(String),
    Error(String),
    /// Ctrl-C or SIGTERM (exit 130).
    Interrupted(String),
}

/// The flags, checked: every usage error is said before anything is read.
struct Checked {
    fields: Layout,
    locations: Vec<Location>,
    days: Option<days::Days>,
}

fn check(args: &AuditArgs) -> Result<Checked, Failure> {
    let usage = |message: String| Err(Failure::Usage(message));
    if let Some(min) = args.min_share {
        if !(0.0..=1.0).contains(&min) {
            return usage(format!(
                "--min-share {min} is not a share: give a number from 0 to 1, e.g. --min-share 0.95"
            ));
        }
    }
    if !(args.price_per_gb.is_finite() && args.price_per_gb >= 0.0) {
        return usage(format!(
            "--price-per-gb {} is not a price: give USD per GB, e.g. --price-per-gb 0.01",
            args.price_per_gb
        ));
    }
    if !(args.athena_price_per_tb.is_finite() && args.athena_price_per_tb >= 0.0) {
        return usage(format!(
            "--athena-price-per-tb {} is not a price: give USD per TB scanned, e.g. 5",
            args.athena_price_per_tb
        ));
    }
    athena::check_table(&args.table).map_err(Failure::Usage)?;
    let days = days::Days::from_flags(args.since.as_deref(), args.until.as_deref(), tally::now(), args.athena)
        .map_err(Failure::Usage)?;
    let fields = match &args.fields {
        Some(fields) => Layout::from_header(fields).map_err(|e| Failure::Usage(format!("--fields: {e}")))?,
        None => Layout::default_format(),
    };
    let locations = args
        .flow_logs
        .iter()
        .map(|l| Location::parse(l).map_err(|e| Failure::Usage(format!("--flow-logs: {e}"))))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Checked {
        fields,
        locations,
        days,
    })
}

/// The nodes of the map (`--map`), with its warnings said.
fn nodes(args: &AuditArgs, err: &mut dyn Write) -> Result<Vec<topology::Node>, Failure> {
    let given = args.map.as_deref().unwrap_or_default();
    let source = MapSource::parse(given).map_err(|e| Failure::Usage(format!("--map: {e}")))?;
    let (text, notes) = source
        .read_noting(Duration::from_secs(30))
        .map_err(|e| Failure::Error(format!("--map {given}: {e}")))?;
    for note in notes {
        let _ = writeln!(err, "locality audit: warning: {}", printable_lines(&note));
    }
    let map = ReplicaMap::parse(&text).map_err(|e| Failure::Error(format!("--map {given}: {e}")))?;
    topology::nodes_of(&map).map_err(|e| Failure::Error(format!("--map {given}: {e}")))
}

/// The subnets (`--subnets`, else DescribeSubnets), with a warning when none is known.
fn subnets(
    args: &AuditArgs,
    runtime: &tokio::runtime::Runtime,
    config: Option<&aws_config::SdkConfig>,
    err: &mut dyn Write,
) -> Result<Subnets, Failure> {
    let subnets = match (&args.subnets, config) {
        (Some(path), _) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| Failure::Error(format!("--subnets {}: {e}", path.display())))?;
            Subnets::from_json(&text).map_err(|e| Failure::Error(format!("--subnets {}: {e}", path.display())))?
        }
        (None, Some(config)) => runtime
            .block_on(topology::describe_subnets(config))
            .map_err(Failure::Error)?,
        (None, None) => return Err(Failure::Error("no AWS configuration for DescribeSubnets".into())),
    };
    if subnets.all().is_empty() {
        let _ = writeln!(
            err,
            "locality audit: warning: no subnet is known: every client counts as zone unknown, and the share is undefined"
        );
    }
    Ok(subnets)
}

fn audit(args: &AuditArgs, out: &mut dyn Write, err: &mut dyn Write) -> Result<u8, Failure> {
    let Checked {
        fields,
        locations,
        days,
    } = check(args)?;
    if let Some(SqlEngine::Athena) = args.print_ddl {
        return print_ddl(args, &locations, out);
    }
    let nodes = nodes(args, err)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Failure::Error(format!("cannot start: {e}")))?;
    let needs_aws = args.athena || args.subnets.is_none() || locations.iter().any(|l| matches!(l, Location::S3 { .. }));
    let config = if needs_aws {
        let why = if args.athena {
            "Athena"
        } else if args.subnets.is_none() {
            "the subnets (ec2:DescribeSubnets; or give --subnets FILE)"
        } else {
            "the S3 flow logs"
        };
        Some(
            runtime
                .block_on(locality_resolve::aws_error::checked_config())
                .map_err(|(_, e)| Failure::Error(format!("AWS, for {why}: {e}")))?,
        )
    } else {
        None
    };
    let subnets = subnets(args, &runtime, config.as_ref(), err)?;
    let columns = athena::Columns {
        interface_id: fields.interface_id.is_some(),
        flow_direction: fields.flow_direction.is_some(),
        pkt_addresses: fields.pkt_srcaddr.is_some() && fields.pkt_dstaddr.is_some(),
        flow_log_id: args.flow_log_id.clone(),
    };
    let figures = if let Some(SqlEngine::Athena) = args.print_sql {
        let latest_end = tally::latest_end(tally::now());
        let sql = athena::query(&args.table, columns, &nodes, &subnets, args.price_per_gb, latest_end);
        let _ = write!(out, "{sql}");
        return Ok(0);
    } else if args.athena {
        let (Some(config), Some(days)) = (&config, &days) else {
            return Err(Failure::Error("no AWS configuration for Athena".into()));
        };
        runtime.block_on(athena_figures(args, config, days, &nodes, &subnets, &fields, err))?
    } else {
        file_figures(
            args,
            &locations,
            &runtime,
            config.as_ref(),
            &nodes,
            &subnets,
            &fields,
            days,
            err,
        )?
    };
    drop(runtime);
    Ok(render(args, &figures, out, err))
}

/// The audit over files and S3 objects: every input listed, read (several at once) and counted,
/// and the figures of the counts.
#[allow(clippy::too_many_arguments)]
fn file_figures(
    args: &AuditArgs,
    locations: &[Location],
    runtime: &tokio::runtime::Runtime,
    config: Option<&aws_config::SdkConfig>,
    nodes: &[topology::Node],
    subnets: &Subnets,
    fields: &Layout,
    days: Option<days::Days>,
    err: &mut dyn Write,
) -> Result<Figures, Failure> {
    let s3 = config.map(s3_client);
    // Each location, and around the days asked for what AWS delivered next to them (module
    // `around`): a neighbour's files are read once, never twice.
    let mut inputs: Vec<Input> = Vec::new();
    let mut neighbours: Vec<Input> = Vec::new();
    for (location, given) in locations.iter().zip(&args.flow_logs) {
        let mut found_here = 0;
        for place in around::places(location, days.as_ref()) {
            let found = match &place.location {
                Location::Path(path) => {
                    let (found, note) = read::local_inputs(path).map_err(Failure::Error)?;
                    if let Some(note) = note {
                        let _ = writeln!(err, "locality audit: warning: {}", printable_lines(&note));
                    }
                    found
                }
                Location::S3 { bucket, prefix } => match &s3 {
                    Some(client) => runtime
                        .block_on(read::s3_inputs(client, bucket, prefix, args.max_objects))
                        .map_err(Failure::Error)?,
                    None => {
                        return Err(Failure::Error(format!(
                            "--flow-logs {}: no AWS configuration for S3",
                            report::printable(given)
                        )))
                    }
                },
            };
            let found = around::keep(found, place.written);
            found_here += found.len();
            if place.written.is_some() {
                neighbours.extend(found);
            } else {
                inputs.extend(found);
            }
        }
        if found_here == 0 {
            return Err(Failure::Error(format!(
                "--flow-logs {}: no flow-log file (*.log, *.log.gz) there",
                report::printable(given)
            )));
        }
    }
    let asked: std::collections::HashSet<String> = inputs.iter().map(Input::name).collect();
    let mut seen = std::collections::HashSet::new();
    for input in neighbours {
        if !asked.contains(&input.name()) && seen.insert(input.name()) {
            inputs.push(input);
        }
    }

    let node_index: HashMap<IpAddr, u32> = nodes.iter().enumerate().map(|(i, n)| (n.address, i as u32)).collect();
    let total: u64 = inputs.iter().map(Input::size).sum();
    // A progress bar on a terminal only (a CI log, a pipe or a file gets none).
    let bar = std::io::stderr().is_terminal().then(|| {
        let bar = indicatif::ProgressBar::new(total);
        bar.set_style(
            indicatif::ProgressStyle::with_template("{bytes}/{total_bytes} {wide_bar} {bytes_per_sec}, {eta} left")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar
    });
    let progress = |n: u64| {
        if let Some(bar) = &bar {
            bar.inc(n);
        }
    };
    let threads = args
        .threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let reading = Reading {
        nodes: &node_index,
        fields,
        s3: s3.as_ref().map(|c| (c, runtime.handle().clone())),
        threads,
        progress: &progress,
        days: days.map(|d| d.seconds()),
        max_lines: args.max_lines_per_file,
        max_clients: args.max_clients,
        max_entries: args.max_entries,
    };
    let tally = read::read_all(&inputs, &reading).map_err(Failure::Error);
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    let figures = Figures::compute(&mut tally?, nodes, subnets, args.price_per_gb);
    if let Some(first) = &figures.first_skipped {
        let _ = writeln!(
            err,
            "locality audit: warning: {} line(s) skipped; the first: {}",
            figures.left_out.unparsed_lines,
            locality_resolve::printable::recheck(first)
        );
    }
    Ok(figures)
}

/// The most bytes one S3 listing page's answer may hold: 1,000 keys of at most 1,024 bytes and
/// their XML are under 2 MB.
pub const S3_LIST_PAGE_MAX_BYTES: usize = 8 << 20;

/// The S3 client of the audit: path-style requests for an endpoint given as an IP address, and
/// each listing page's answer bounded ([`S3_LIST_PAGE_MAX_BYTES`]) before the SDK reads it
/// whole (objects are streamed, and not bounded here).
fn s3_client(config: &aws_config::SdkConfig) -> aws_sdk_s3::Client {
    let mut builder = aws_sdk_s3::config::Builder::from(config).interceptor(
        locality_resolve::body_limit::BodyLimit::new("an S3 listing page", S3_LIST_PAGE_MAX_BYTES)
            .only("ListObjectsV2"),
    );
    if path_style(config) {
        builder = builder.force_path_style(true);
    }
    aws_sdk_s3::Client::from_conf(builder.build())
}

/// `--print-ddl athena`: the table for the flow logs at the one `--flow-logs`, in their format.
fn print_ddl(args: &AuditArgs, locations: &[Location], out: &mut dyn Write) -> Result<u8, Failure> {
    let ([Location::S3 { bucket, prefix }], [given]) = (locations, args.flow_logs.as_slice()) else {
        return Err(Failure::Usage(
            "--print-ddl athena takes one --flow-logs s3://BUCKET/[PREFIX/]AWSLogs/ACCOUNT/vpcflowlogs/REGION/".into(),
        ));
    };
    let delivery = athena::Delivery::parse(given).map_err(Failure::Usage)?;
    let fields = match &args.fields {
        Some(fields) => fields.clone(),
        None => {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .map_err(|e| Failure::Error(format!("cannot start: {e}")))?;
            let config = runtime
                .block_on(locality_resolve::aws_error::checked_config())
                .map_err(|(_, e)| Failure::Error(format!("AWS, for the flow logs' format: {e}")))?;
            let client = s3_client(&config);
            let inputs = runtime
                .block_on(read::s3_inputs(&client, bucket, prefix, args.max_objects))
                .map_err(Failure::Error)?;
            let s3 = Some((&client, runtime.handle().clone()));
            let logs = formats(&inputs, &args.flow_log_id, &s3)?;
            match logs.as_slice() {
                [] => {
                    return Err(Failure::Error(match &args.flow_log_id {
                        Some(id) => format!(
                            "--flow-logs {}: no object of flow log {} there",
                            report::printable(given),
                            id.as_str()
                        ),
                        None => format!(
                            "--flow-logs {}: no flow-log object there; give --fields with the log's format",
                            report::printable(given)
                        ),
                    }))
                }
                [one] => one.format.clone(),
                many => return Err(Failure::Usage(two_formats(given, many))),
            }
        }
    };
    let ddl = athena::ddl(&args.table, &fields, &delivery).map_err(Failure::Usage)?;
    let _ = out.write_all(ddl.as_bytes());
    Ok(0)
}

/// One flow log's files under a prefix, and their format.
struct LogFormat {
    /// The id in the files' names (`None`: names AWS did not give).
    id: Option<athena::FlowLogId>,
    /// How many of the objects listed are its.
    objects: usize,
    /// Its header line, as the first of its objects has it.
    format: String,
}

/// The formats of the flow logs whose objects `inputs` are (only `only`'s when given): one
/// header line read per flow log, since a flow log's format never changes; objects whose names
/// carry no flow-log id are one group, read at its first object.
fn formats(
    inputs: &[read::Input],
    only: &Option<athena::FlowLogId>,
    s3: &Option<(&aws_sdk_s3::Client, tokio::runtime::Handle)>,
) -> Result<Vec<LogFormat>, Failure> {
    let mut logs: Vec<(LogFormat, &read::Input)> = Vec::new();
    for input in inputs {
        let key = match input {
            read::Input::Object { key, .. } => key.as_str(),
            read::Input::File(..) => continue,
        };
        let id = athena::FlowLogId::of_file(key);
        if only.is_some() && id != *only {
            continue;
        }
        match logs.iter_mut().find(|(log, _)| log.id == id) {
            Some((log, _)) => log.objects += 1,
            None => logs.push((
                LogFormat {
                    id,
                    objects: 1,
                    format: String::new(),
                },
                input,
            )),
        }
    }
    let mut out: Vec<LogFormat> = Vec::new();
    for (mut log, first) in logs {
        let line = read::first_line(first, s3).map_err(Failure::Error)?;
        Layout::from_header(&line).map_err(|e| {
            Failure::Error(format!(
                "{}: the first line is not a header line ({e}); give --fields",
                first.name()
            ))
        })?;
        log.format = line.split_ascii_whitespace().collect::<Vec<_>>().join(" ");
        out.push(log);
    }
    // Logs of one format make one table.
    let mut merged: Vec<LogFormat> = Vec::new();
    for log in out {
        match merged.iter_mut().find(|m| m.format == log.format) {
            Some(m) => {
                m.objects += log.objects;
                if m.id != log.id {
                    m.id = None;
                }
            }
            None => merged.push(log),
        }
    }
    Ok(merged)
}

/// The refusal of one table for files in more than one format, and the two ways apart.
fn two_formats(given: &str, logs: &[LogFormat]) -> String {
    let mut text = format!(
        "--flow-logs {} holds {} formats, and an Athena table reads every file by the positions of one: \
         the other's records would be read into the wrong columns.\n",
        report::printable(given),
        logs.len()
    );
    for log in logs {
        let who = match &log.id {
            Some(id) => format!("flow log {}", id.as_str()),
            None => "files of more than one flow log, or named otherwise".to_string(),
        };
        let format = report::printable(&log.format.chars().take(600).collect::<String>());
        text.push_str(&format!("  {who} ({} objects): {format}\n", log.objects));
    }
    let example = logs
        .iter()
        .find_map(|l| l.id.as_ref())
        .map_or("fl-0123456789abcdef0", athena::FlowLogId::as_str);
    text.push_str(&format!(
        "Keep them apart, one table per flow log: give --flow-log-id {example} (a table in that log's format, \
         and the same --flow-log-id to --athena, whose query then reads only that log's files), \
         or deliver each flow log to a prefix of its own (its destination s3://BUCKET/PREFIX/) and print a table per prefix."
    ));
    text
}

/// Prints `figures` as `--format` asks; the exit status (`--min-share`, an undefined share).
fn render(args: &AuditArgs, figures: &Figures, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    // Every name from outside is escaped where it is written; the last pass makes sure no
    // line holds a control, format or separator character raw, whatever was missed.
    let rendered = match args.format {
        OutputFormat::Table => printable_lines(&figures.to_table()),
        OutputFormat::Json => format!("{}\n", json_text(&figures.to_json())),
        OutputFormat::Prometheus => printable_lines(&figures.to_prometheus()),
    };
    let _ = out.write_all(rendered.as_bytes());
    match (args.min_share, figures.in_zone_share) {
        (Some(min), Some(share)) if share < min => {
            let _ = writeln!(
                err,
                "locality audit: the in-zone share {:.4} is below --min-share {min}",
                share
            );
            BELOW_MIN_SHARE
        }
        (Some(min), None) => {
            let _ = writeln!(
                err,
                "locality audit: the share is undefined ({}), so --min-share {min} is not met",
                figures.why_no_share().unwrap_or_default()
            );
            BELOW_MIN_SHARE
        }
        (None, None) => {
            let _ = writeln!(
                err,
                "locality audit: the share is undefined: {}",
                figures.why_no_share().unwrap_or_default()
            );
            NO_SHARE
        }
        _ => 0,
    }
}

/// The audit run in Athena: the query of [`athena::pairs_query`] over the days asked for, its
/// rows read into counts, and the figures the file audit computes from the same counts.
async fn athena_figures(
    args: &AuditArgs,
    config: &aws_config::SdkConfig,
    days: &days::Days,
    nodes: &[topology::Node],
    subnets: &Subnets,
    fields: &Layout,
    err: &mut dyn Write,
) -> Result<Figures, Failure> {
    // The table's own database (DATABASE.NAME, CATALOG.DATABASE.NAME), as the query reads it.
    let parts = athena::table_parts(&args.table).map_err(Failure::Usage)?;
    let database = match (&args.athena_database, parts.len()) {
        (Some(database), _) => database.clone(),
        (None, 2 | 3) => parts[parts.len() - 2].clone(),
        (None, _) => "default".to_string(),
    };
    let sql = athena::pairs_query(
        &args.table,
        athena::Columns {
            interface_id: fields.interface_id.is_some(),
            flow_direction: fields.flow_direction.is_some(),
            pkt_addresses: fields.pkt_srcaddr.is_some() && fields.pkt_dstaddr.is_some(),
            flow_log_id: args.flow_log_id.clone(),
        },
        args.table_layout,
        days,
        nodes,
        // (Stable for the days asked for, so that result reuse sees the same query.)
        days.seconds().1 + 86_400,
    );
    let client = aws_sdk_athena::Client::from_conf(
        aws_sdk_athena::config::Builder::from(config)
            .interceptor(locality_resolve::body_limit::BodyLimit::new(
                "an Athena answer",
                athena_client::ANSWER_MAX_BYTES,
            ))
            .build(),
    );
    let options = athena_client::Options {
        database,
        workgroup: args.athena_workgroup.clone(),
        output: args.athena_output.clone(),
        timeout: args.athena_timeout,
        reuse_minutes: args.athena_reuse,
        price_per_tb: args.athena_price_per_tb,
    };
    let _ = writeln!(
        err,
        "locality audit: Athena: {} to {} ({} partition(s) of {}: the days' and one on each side), workgroup {}",
        days::day_text(days.first),
        days::day_text(days.last),
        days.last - days.first + 3,
        args.table,
        args.athena_workgroup
    );
    // Each row checked and counted as its page arrives (the header makes the reader).
    let mut reader: Option<athena_rows::RowReader> = None;
    let mut on_row = |row: &[Option<String>]| match &mut reader {
        Some(reader) => reader.add(row),
        None => {
            reader = Some(athena_rows::RowReader::new(row, nodes, args.max_clients)?);
            Ok(())
        }
    };
    let cost = athena_client::run(&client, &sql, &options, &mut on_row)
        .await
        .map_err(|ended| match ended {
            athena_client::Ended::Interrupted(why) => Failure::Interrupted(why),
            athena_client::Ended::Failed(why) => Failure::Error(why),
        })?;
    let counts = reader
        .ok_or_else(|| Failure::Error(format!("query {} answered no header row", cost.query_execution_id)))?
        .finish()
        .map_err(|e| Failure::Error(format!("{e} (query {})", cost.query_execution_id)))?;
    let mut figures = Figures::from_counts(&counts, nodes, subnets, args.price_per_gb);
    figures.unparsed_lines_known = false;
    figures.athena = Some(cost);
    Ok(figures)
}

/// Whether S3 requests use path-style addressing: an endpoint that is an IP address or
/// `localhost` (S3-compatible servers, no bucket subdomains).
fn path_style(config: &aws_config::SdkConfig) -> bool {
    let endpoint = std::env::var("AWS_ENDPOINT_URL_S3")
        .ok()
        .or_else(|| config.endpoint_url().map(str::to_string));
    endpoint
        .and_then(|e| url::Url::parse(&e).ok())
        .and_then(|u| u.host().map(|h| h.to_owned()))
        .is_some_and(|host| match host {
            url::Host::Domain(name) => name == "localhost",
            url::Host::Ipv4(_) | url::Host::Ipv6(_) => true,
        })
}
