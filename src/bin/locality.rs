//! The `locality` command-line tool. `locality gen` turns a compact spec into the Google Cloud
//! regional-failover HCL (see docs/guides/generator.md); `locality resolve` tells an
//! application which cache endpoint to read from (the `locality-resolve` crate, see
//! docs/guides/consuming-the-replica-map.md) and `locality sidecar` does the same for
//! applications that cannot change code (HAProxy steered by the map); `locality lookup` and `locality ranges` answer
//! "which cloud region is this IP in".

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use locality::generator::command::{run, GenArgs};
use locality::generator::Format;
use locality::ranges::command;
use std::io::Write as _;

#[derive(Parser)]
#[command(name = "locality", version, about = "Locality-aware routing tools")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Generate Google Cloud failover HCL from a compact spec.
    Gen {
        /// The spec file (HCL, or JSON of the same structure).
        spec: PathBuf,
        /// Write to FILE instead of standard output.
        #[arg(short = 'o', long = "output", value_name = "FILE")]
        output: Option<PathBuf>,
        /// Do not write: exit 1 and print a unified diff when FILE is stale.
        #[arg(long)]
        check: bool,
        /// Output syntax.
        #[arg(long, value_enum, default_value_t = OutputFormat::Hcl)]
        format: OutputFormat,
    },
    /// Which cloud region is this IP in? (from the snapshot of the clouds' ranges the provider
    /// uses: --ranges FILE, else LOCALITY_RANGES_FILE, else the built-in one)
    Lookup {
        /// IPv4 or IPv6 addresses.
        #[arg(required = true)]
        ips: Vec<String>,
        /// One JSON object per address.
        #[arg(long)]
        json: bool,
        /// A snapshot file written by `locality ranges update` (default: LOCALITY_RANGES_FILE,
        /// else the built-in snapshot).
        #[arg(long, value_name = "FILE")]
        ranges: Option<PathBuf>,
    },
    /// Which cache endpoint should this process read from? This process's availability zone
    /// (--zone, LOCALITY_ZONE, ECS or Lambda metadata, EC2 IMDSv2 then IMDSv1) looked up in the
    /// replica map; the map's fallback on every failure path (exit 0, the reason on stderr).
    Resolve(ResolveArgs),
    /// Same-zone reads with in-request failover for applications that cannot change code:
    /// HAProxy on a local port, steered by the map (the zone's replicas, the reader endpoint as
    /// backup), run in the foreground and kept in step with the map.
    Sidecar(SidecarArgs),
    /// The IP-range snapshot: rebuild it from the clouds' files, or show one.
    Ranges {
        #[command(subcommand)]
        command: RangesCommand,
    },
}

#[derive(Subcommand)]
enum RangesCommand {
    /// Rebuild the IP-range snapshot from the clouds' official files (paths or https URLs).
    Update {
        /// AWS ip-ranges.json.
        #[arg(long, default_value = locality::ranges::command::AWS_URL)]
        aws: String,
        /// Google Cloud cloud.json.
        #[arg(long, default_value = locality::ranges::command::GCP_URL)]
        gcp: String,
        /// Azure ServiceTags_Public_YYYYMMDD.json (or the download page that links it).
        #[arg(long, default_value = locality::ranges::command::AZURE_PAGE)]
        azure: String,
        /// Oracle public_ip_ranges.json.
        #[arg(long, default_value = locality::ranges::command::OCI_URL)]
        oci: String,
        /// The snapshot's date (default: the newest date in the files).
        #[arg(long)]
        date: Option<String>,
        /// Where to write the snapshot (default: $XDG_DATA_HOME/locality/ranges.bin, else
        /// ~/.local/share/locality/ranges.bin). Point LOCALITY_RANGES_FILE at it.
        #[arg(short = 'o', long = "output", value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Show a snapshot's source, date, size and contents (--ranges FILE, else
    /// LOCALITY_RANGES_FILE, else the built-in one).
    Info {
        /// A snapshot file written by `locality ranges update`.
        #[arg(long, value_name = "FILE")]
        ranges: Option<PathBuf>,
    },
}

/// Where the map is, which zone this is, and what to do when the map cannot be read: the
/// options `resolve` and `sidecar` share.
#[derive(clap::Args)]
struct MapArgs {
    /// The map: a file path, ssm:<name>, secretsmanager:<id> or secretsmanager:<id>#<key>.
    #[arg(long, value_name = "SOURCE")]
    map: String,
    /// This process's zone, an AZ name (ap-northeast-1a) or ID (apne1-az4); default:
    /// LOCALITY_ZONE, else detected.
    #[arg(long, value_parser = parse_zone)]
    zone: Option<locality_resolve::Zone>,
    /// Total time for zone detection, e.g. 1s or 500ms.
    #[arg(long, default_value = "1s", value_parser = parse_duration)]
    timeout: std::time::Duration,
    /// Where detections, failures and unhealthy marks are cached (default: $RUNTIME_DIRECTORY,
    /// else $XDG_RUNTIME_DIR/locality, else /run/locality as root, else <temp dir>/locality-<uid>).
    /// Used only when every directory from / down to it is owned by root or this user and not
    /// writable by others (sticky ones such as /tmp excepted); nothing existing is changed.
    #[arg(long, value_name = "DIR")]
    cache_dir: Option<PathBuf>,
    /// How long a failed detection is cached (seconds); never longer.
    #[arg(long, default_value_t = 60, value_name = "SECONDS")]
    failure_ttl: u64,
    /// How long the check of one replica may take, e.g. 300ms.
    #[arg(long, default_value = "300ms", value_parser = parse_duration)]
    check_timeout: std::time::Duration,
    /// TLS to the nodes (ElastiCache in-transit encryption), trusting the system's CAs and
    /// those of the PEM file named by LOCALITY_TLS_CA_FILE; each node's certificate must carry
    /// its host name (or, for an IP address, --tls-server-name).
    #[arg(long)]
    tls: bool,
    /// With --tls, the name the certificates of nodes given as IP addresses must carry
    /// (default: LOCALITY_TLS_SERVER_NAME). Without it, TLS to an IP address is refused.
    #[arg(long, value_name = "NAME", value_parser = parse_server_name)]
    tls_server_name: Option<String>,
    /// The endpoint (host:port, the reader endpoint) to use when the map cannot be read
    /// (missing, unreadable, not a map); an orchestrator can inject it as LOCALITY_FALLBACK.
    #[arg(long, value_name = "HOST:PORT", value_parser = parse_endpoint)]
    fallback: Option<String>,
}

#[derive(clap::Args)]
struct ResolveArgs {
    #[command(flatten)]
    map: MapArgs,
    /// Connect to the chosen replica and PING it first; a replica that fails, or that reports
    /// another availability zone (Valkey 8+), is marked unhealthy, and the zone's next replica
    /// (with spread replicas) or else the fallback is used.
    #[arg(long)]
    check: bool,
    /// How long a replica that failed the check is avoided (seconds).
    #[arg(long, default_value_t = 60, value_name = "SECONDS")]
    unhealthy_ttl: u64,
    /// Output: host:port, shell assignments for eval, or one JSON object.
    #[arg(long, value_enum, default_value_t = ResolveFormat::Endpoint)]
    format: ResolveFormat,
}

#[derive(clap::Args)]
#[cfg_attr(not(unix), allow(dead_code))]
struct SidecarArgs {
    #[command(flatten)]
    map: MapArgs,
    /// The local listener applications connect to.
    #[arg(long, value_name = "ADDR:PORT", default_value = "127.0.0.1:6379")]
    listen: std::net::SocketAddr,
    /// How often the map is re-read (seconds); SIGHUP re-reads it at once.
    #[arg(long, default_value_t = 60, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..))]
    interval: u64,
    /// The HAProxy binary (2.6 or later).
    #[arg(long, value_name = "PATH", default_value = "haproxy")]
    haproxy: PathBuf,
    /// HAProxy's statistics over HTTP (/stats, /stats;csv, /metrics for Prometheus), or "off".
    /// Unauthenticated and read-only: keep it on loopback (the default) or a private network.
    #[arg(long, value_name = "ADDR:PORT|off", default_value = "127.0.0.1:8404", value_parser = parse_stats)]
    stats: Stats,
    /// A nameserver for the nodes' host names (repeatable); default: /etc/resolv.conf's.
    #[arg(long, value_name = "IP:PORT")]
    nameserver: Vec<std::net::SocketAddr>,
    /// Where the configuration and HAProxy's runtime API socket live (default:
    /// <cache dir>/sidecar-<listen port>). Created (mode 0700) when missing; an existing one
    /// is never changed and must be this user's, not writable by group or others, below
    /// directories only root or this user can change.
    #[arg(long, value_name = "DIR")]
    run_dir: Option<PathBuf>,
    /// When the sidecar runs as root: the user HAProxy's workers run as, USER or USER:GROUP
    /// (names or numbers; default nobody, with its primary group). Root is refused.
    #[arg(long, value_name = "USER[:GROUP]")]
    haproxy_user: Option<String>,
    /// Print the HAProxy configuration and exit (for those who run HAProxy themselves).
    #[arg(long)]
    print_config: bool,
}

/// `--stats`: an address or off.
#[derive(Clone, Copy)]
#[cfg_attr(not(unix), allow(dead_code))]
struct Stats(Option<std::net::SocketAddr>);

fn parse_stats(value: &str) -> Result<Stats, String> {
    if value == "off" {
        return Ok(Stats(None));
    }
    value
        .parse()
        .map(|addr| Stats(Some(addr)))
        .map_err(|_| format!("{value:?} is neither ADDR:PORT (127.0.0.1:8404) nor off"))
}

#[derive(Clone, Copy, ValueEnum)]
enum ResolveFormat {
    /// host:port
    Endpoint,
    /// LOCALITY_READ_ENDPOINT=... lines for eval
    Env,
    /// {"endpoint", "route", "zone", "zone_id", "zone_source", "reason"}
    Json,
}

fn parse_zone(value: &str) -> Result<locality_resolve::Zone, String> {
    locality_resolve::Zone::parse(value)
        .ok_or_else(|| format!("{value:?} is neither an AZ name (ap-northeast-1a) nor an AZ ID (apne1-az4)"))
}

fn parse_duration(value: &str) -> Result<std::time::Duration, String> {
    humantime::parse_duration(value).map_err(|e| format!("{value:?}: {e} (e.g. 1s, 300ms)"))
}

fn parse_server_name(value: &str) -> Result<String, String> {
    if locality_resolve::zone::is_dns_name(value) {
        Ok(value.to_ascii_lowercase())
    } else {
        Err(format!(
            "{:?} is not a DNS name; give the name the nodes' certificates carry, e.g. \"replicas.example.cache.amazonaws.com\"",
            value.chars().take(80).collect::<String>()
        ))
    }
}

fn parse_endpoint(value: &str) -> Result<String, String> {
    locality_resolve::zone::check_endpoint(value).map(|()| value.to_string())
}

/// The options `resolve` and `sidecar` share; `Err` with the exit code of a usage error (said on
/// stderr).
fn base_options(args: MapArgs) -> Result<locality_resolve::Options, ExitCode> {
    let usage = |what: &str, problem: &str| {
        let _ = writeln!(std::io::stderr(), "error: {what}: {problem}");
        ExitCode::from(2)
    };
    let map = locality_resolve::MapSource::parse(&args.map).map_err(|e| usage("--map", &e))?;
    let mut options = locality_resolve::Options::new(map);
    // A --zone given wins: the environment is not even read then.
    options.zone_env = None;
    options.zone_env_problem = None;
    if let (None, Ok(value)) = (&args.zone, std::env::var("LOCALITY_ZONE")) {
        if !value.trim().is_empty() {
            match parse_zone(value.trim()) {
                Ok(zone) => options.zone_env = Some(zone),
                // An unusable LOCALITY_ZONE is a failure path like a failed detection (the
                // reader endpoint, one line on stderr) when a fallback is given; without one,
                // a usage error, like --zone.
                Err(_) => options.zone_env_problem = locality_resolve::zone_env_problem(&value),
            }
        }
    }
    options.zone_flag = args.zone;
    options.budget.total = args.timeout;
    options.budget.request = options.budget.request.min(args.timeout);
    if let Some(dir) = args.cache_dir {
        options.cache_dir = Some(dir);
    }
    options.failure_ttl = std::time::Duration::from_secs(args.failure_ttl);
    options.check_timeout = args.check_timeout;
    options.tls = args.tls;
    options.tls_server_name = match args.tls_server_name {
        Some(name) => Some(name),
        None => match std::env::var("LOCALITY_TLS_SERVER_NAME") {
            Ok(value) if !value.trim().is_empty() => {
                Some(parse_server_name(value.trim()).map_err(|e| usage("LOCALITY_TLS_SERVER_NAME", &e))?)
            }
            _ => None,
        },
    };
    options.fallback = args.fallback;
    // LOCALITY_FALLBACK is --fallback from the environment; the flag wins, and an empty value
    // (an orchestrator's unset template variable) counts as not given.
    if options.fallback.is_none() {
        if let Ok(value) = std::env::var("LOCALITY_FALLBACK") {
            if !value.trim().is_empty() {
                options.fallback = Some(parse_endpoint(value.trim()).map_err(|e| usage("LOCALITY_FALLBACK", &e))?);
            }
        }
    }
    if let (Some(problem), None) = (&options.zone_env_problem, &options.fallback) {
        return Err(usage(
            "LOCALITY_ZONE",
            &format!(
                "{problem} (with --fallback or LOCALITY_FALLBACK given, the reader endpoint would be used instead)"
            ),
        ));
    }
    Ok(options)
}

fn resolve(args: ResolveArgs) -> ExitCode {
    let mut options = match base_options(args.map) {
        Ok(options) => options,
        Err(code) => return code,
    };
    options.check = args.check;
    options.unhealthy_ttl = std::time::Duration::from_secs(args.unhealthy_ttl);
    let format = match args.format {
        ResolveFormat::Endpoint => locality_resolve::Format::Endpoint,
        ResolveFormat::Env => locality_resolve::Format::Env,
        ResolveFormat::Json => locality_resolve::Format::Json,
    };
    ExitCode::from(locality_resolve::run(
        &options,
        format,
        &mut std::io::stdout(),
        &mut std::io::stderr(),
    ))
}

/// `locality sidecar` on Windows: HAProxy and the runtime API the sidecar steers it through
/// (a Unix socket, signals) are Unix tools.
#[cfg(not(unix))]
fn sidecar(_args: SidecarArgs) -> ExitCode {
    let _ = writeln!(
        std::io::stderr(),
        "error: locality sidecar runs HAProxy and steers it over a Unix socket: it runs on Linux and macOS, not on \
         Windows. Use `locality resolve` here (it works the same on every platform)."
    );
    ExitCode::from(2)
}

#[cfg(unix)]
fn sidecar(args: SidecarArgs) -> ExitCode {
    let resolve = match base_options(args.map) {
        Ok(options) => options,
        Err(code) => return code,
    };
    let mut options = locality_resolve::sidecar::SidecarOptions::new(resolve);
    options.listen = args.listen;
    options.interval = std::time::Duration::from_secs(args.interval);
    options.haproxy = args.haproxy;
    options.stats = args.stats.0;
    options.nameservers = args.nameserver;
    options.run_dir = args.run_dir;
    options.haproxy_user = args.haproxy_user;
    ExitCode::from(locality_resolve::sidecar::run(
        &options,
        args.print_config,
        &mut std::io::stdout(),
        &mut std::io::stderr(),
    ))
}

#[derive(Clone, Copy, ValueEnum)]
enum OutputFormat {
    /// Terraform HCL, formatted exactly as `terraform fmt` would.
    Hcl,
    /// Terraform JSON (`.tf.json`).
    Json,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Gen {
            spec,
            output,
            check,
            format,
        } => {
            let args = GenArgs {
                spec,
                output,
                check,
                format: match format {
                    OutputFormat::Hcl => Format::Hcl,
                    OutputFormat::Json => Format::Json,
                },
            };
            ExitCode::from(run(&args, &mut std::io::stdout(), &mut std::io::stderr()))
        }
        Command::Resolve(args) => resolve(args),
        Command::Sidecar(args) => sidecar(args),
        Command::Lookup { ips, json, ranges } => ExitCode::from(command::lookup(
            ranges.as_deref(),
            &ips,
            json,
            &mut std::io::stdout(),
            &mut std::io::stderr(),
        )),
        Command::Ranges {
            command: RangesCommand::Info { ranges },
        } => ExitCode::from(command::info(
            ranges.as_deref(),
            &mut std::io::stdout(),
            &mut std::io::stderr(),
        )),
        Command::Ranges {
            command:
                RangesCommand::Update {
                    aws,
                    gcp,
                    azure,
                    oci,
                    date,
                    output,
                },
        } => {
            let Some(output) = output.or_else(command::default_update_path) else {
                let _ = writeln!(
                    std::io::stderr(),
                    "error: neither XDG_DATA_HOME nor HOME is set: pass -o FILE"
                );
                return ExitCode::from(2);
            };
            let sources = command::Sources { aws, gcp, azure, oci };
            let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
            match runtime.block_on(command::update(&sources, date, &output, &mut std::io::stdout())) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    let _ = writeln!(std::io::stderr(), "error: {e}");
                    ExitCode::from(2)
                }
            }
        }
    }
}
