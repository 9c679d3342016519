//! The command lines of `resolve` and `sidecar`, shared by the `locality` CLI and the
//! application-side binary `locality-app` (this crate's, with only what an application host
//! needs): their flags, the environment they read (LOCALITY_ZONE, LOCALITY_FALLBACK,
//! LOCALITY_TLS_SERVER_NAME) and the calls into [`crate::run`] and [`crate::sidecar::run`].

// The flags' doc comments are their `--help` text, where `<cache dir>` is a placeholder, not HTML.
#![allow(rustdoc::invalid_html_tags)]

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Subcommand, ValueEnum};

/// The application-side commands, as `locality` and `locality-app` both offer them.
#[derive(Subcommand)]
pub enum AppCommand {
    /// Which cache endpoint should this process read from? This process's availability zone
    /// (--zone, LOCALITY_ZONE, ECS or Lambda metadata, EC2 IMDSv2 then IMDSv1) looked up in the
    /// replica map; the map's fallback on every failure path (exit 0, the reason on stderr).
    Resolve(ResolveArgs),
    /// Same-zone reads with in-request failover for applications that cannot change code:
    /// HAProxy on a local port, steered by the map (the zone's replicas, the reader endpoint as
    /// backup), run in the foreground and kept in step with the map.
    Sidecar(Box<SidecarArgs>),
    /// Is the sidecar serving? A PING through its listener, answered by a node behind it (with
    /// --listening: HAProxy accepts on the listener): exit 0 when it is, 1 with the reason on
    /// stderr when not (an image's health check, a probe).
    Health(HealthArgs),
}

impl AppCommand {
    /// Runs the command; its exit code.
    pub fn run(self) -> ExitCode {
        match self {
            AppCommand::Resolve(args) => resolve(args),
            AppCommand::Sidecar(args) => sidecar(*args),
            AppCommand::Health(args) => health(&args),
        }
    }
}

/// The flags of `health`.
#[derive(clap::Args)]
pub struct HealthArgs {
    /// The sidecar's listener: ADDR:PORT, HOST:PORT or a port alone for 127.0.0.1.
    #[arg(long, value_name = "ADDR:PORT", default_value = "127.0.0.1:6379", value_parser = parse_listen)]
    listen: std::net::SocketAddr,
    /// How long the PING may take, e.g. 1s.
    #[arg(long, default_value = "1s", value_parser = parse_duration)]
    timeout: std::time::Duration,
    /// Only that the listener accepts a connection (HAProxy runs), not that a node answers: a
    /// liveness check that an outage of the cache does not fail.
    #[arg(long)]
    listening: bool,
}

/// `health`: PING through the listener (with `--listening`: a connection to it).
pub fn health(args: &HealthArgs) -> ExitCode {
    let listen = args.listen.to_string();
    let checked = if args.listening {
        crate::check::accepts(&listen, args.timeout)
    } else {
        crate::check::ping(&listen, args.timeout, None)
    };
    match checked {
        Ok(()) => ExitCode::SUCCESS,
        Err(why) => {
            let _ = writeln!(std::io::stderr(), "unhealthy: {}: {why}", args.listen);
            ExitCode::from(1)
        }
    }
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
    zone: Option<crate::Zone>,
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

/// The flags of `resolve`.
#[derive(clap::Args)]
pub struct ResolveArgs {
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
    /// Output: host:port, shell assignments for eval, one JSON object, or a Valkey GLIDE client's
    /// configuration (glide: {"addresses", "cluster_mode", "read_from", "client_az", "use_tls"};
    /// glide-env: the same as LOCALITY_GLIDE_ADDRESSES, LOCALITY_CLIENT_AZ, ... for eval).
    #[arg(long, value_enum, default_value_t = ResolveFormat::Endpoint)]
    format: ResolveFormat,
    /// With --format glide or glide-env: GLIDE's read strategy. az-affinity reads from this
    /// zone's replicas (else any replica); az-affinity-replicas-and-primary also from this
    /// zone's primary before leaving the zone; az-affinity-all-nodes from every node of this
    /// zone in turn, primary included (valkey-glide for Python 2.5.3 and later; GLIDE for
    /// Node.js 2.5.2 and GLIDE for PHP 1.1 do not have it, and the guide's snippets refuse it).
    #[arg(long, value_enum, default_value_t = ReadFromArg::AzAffinity)]
    read_from: ReadFromArg,
    /// With --format glide or glide-env: exit 1, printing nothing, when client_az is known not
    /// to match how the nodes spell zones (e.g. they report AZ IDs and the map has no
    /// zone_ids), instead of printing it with a warning.
    #[arg(long)]
    strict: bool,
}

/// `--read-from` (its values are GLIDE's names, which all start alike).
#[derive(Clone, Copy, ValueEnum)]
#[allow(clippy::enum_variant_names)]
enum ReadFromArg {
    /// AZAffinity
    AzAffinity,
    /// AZAffinityReplicasAndPrimary
    AzAffinityReplicasAndPrimary,
    /// AZAffinityAllNodes (valkey-glide for Python 2.5.3 and later)
    AzAffinityAllNodes,
}

/// The flags of `sidecar`.
#[derive(clap::Args)]
#[cfg_attr(not(unix), allow(dead_code))]
pub struct SidecarArgs {
    #[command(flatten)]
    map: MapArgs,
    /// The local listener applications connect to: ADDR:PORT or HOST:PORT (127.0.0.1:6379,
    /// localhost:6379), or a port alone for 127.0.0.1.
    #[arg(long, value_name = "ADDR:PORT", default_value = "127.0.0.1:6379", value_parser = parse_listen)]
    listen: std::net::SocketAddr,
    /// How often the map is re-read, in whole seconds: 60, 90s, 1m (the same syntax as
    /// --timeout); SIGHUP re-reads it at once.
    #[arg(long, default_value = "60", value_name = "DURATION", value_parser = parse_interval)]
    interval: u64,
    /// The HAProxy binary (2.6 or later).
    #[arg(long, value_name = "PATH", default_value = "haproxy")]
    haproxy: PathBuf,
    /// HAProxy's statistics over HTTP (/stats, /stats;csv, /metrics for Prometheus), or "off".
    /// Unauthenticated and read-only: keep it on loopback (the default) or a private network.
    #[arg(long, value_name = "ADDR:PORT|off", default_value = "127.0.0.1:8404", value_parser = parse_addr_or_off)]
    stats: AddrOrOff,
    /// The sidecar's own metrics over HTTP (/metrics for Prometheus: the zone, the map's version,
    /// age and last read error, the route and why), or "off". Unauthenticated and read-only.
    #[arg(long, value_name = "ADDR:PORT|off", default_value = "127.0.0.1:8405", value_parser = parse_addr_or_off)]
    metrics: AddrOrOff,
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

/// `--listen`: ADDR:PORT, HOST:PORT (resolved here, IPv4 first), or a port alone for 127.0.0.1.
fn parse_listen(value: &str) -> Result<std::net::SocketAddr, String> {
    use std::net::ToSocketAddrs as _;
    let example = "e.g. 127.0.0.1:6379, localhost:6379 or 6379";
    if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        return match value.parse::<u16>() {
            Ok(port) if port > 0 => Ok(std::net::SocketAddr::from(([127, 0, 0, 1], port))),
            _ => Err(format!("{value:?} is not a port (1 to 65535); {example}")),
        };
    }
    if let Ok(addr) = value.parse() {
        return Ok(addr);
    }
    let Some((host, port)) = value.rsplit_once(':').filter(|(h, p)| !h.is_empty() && !p.is_empty()) else {
        return Err(format!("{value:?} is not ADDR:PORT or HOST:PORT; {example}"));
    };
    let port: u16 = port
        .parse()
        .ok()
        .filter(|p| *p > 0)
        .ok_or_else(|| format!("{value:?}: {port:?} is not a port (1 to 65535); {example}"))?;
    let addresses: Vec<std::net::SocketAddr> = (host, port)
        .to_socket_addrs()
        .map_err(|e| format!("{value:?}: {host:?} does not resolve ({e}); {example}"))?
        .collect();
    addresses
        .iter()
        .find(|a| a.is_ipv4())
        .or(addresses.first())
        .copied()
        .ok_or_else(|| format!("{value:?}: {host:?} has no address; {example}"))
}

/// `--interval`: whole seconds, as a number (60) or a duration (90s, 1m), from 1 s to 1 day.
fn parse_interval(value: &str) -> Result<u64, String> {
    let example = "e.g. --interval 60, 90s or 1m";
    let duration = match value.parse::<u64>() {
        Ok(seconds) => std::time::Duration::from_secs(seconds),
        Err(_) => humantime::parse_duration(value).map_err(|e| format!("{value:?}: {e}; {example}"))?,
    };
    if duration.subsec_nanos() != 0 {
        return Err(format!("{value:?} is not a whole number of seconds; {example}"));
    }
    match duration.as_secs() {
        0 => Err(format!("{value:?} is no interval: give 1 second or more; {example}")),
        s if s > 86_400 => Err(format!("{value:?} is longer than a day; {example}")),
        s => Ok(s),
    }
}

/// `--stats` and `--metrics`: an address or off.
#[derive(Clone, Copy)]
#[cfg_attr(not(unix), allow(dead_code))]
struct AddrOrOff(Option<std::net::SocketAddr>);

fn parse_addr_or_off(value: &str) -> Result<AddrOrOff, String> {
    if value == "off" {
        return Ok(AddrOrOff(None));
    }
    value
        .parse()
        .map(|addr| AddrOrOff(Some(addr)))
        .map_err(|_| format!("{value:?} is neither ADDR:PORT (127.0.0.1:8405) nor off"))
}

#[derive(Clone, Copy, ValueEnum)]
enum ResolveFormat {
    /// host:port
    Endpoint,
    /// LOCALITY_READ_ENDPOINT=... lines for eval
    Env,
    /// {"endpoint", "route", "zone", "zone_id", "zone_source", "reason"}
    Json,
    /// A Valkey GLIDE client's configuration, one JSON object
    Glide,
    /// The GLIDE configuration as LOCALITY_GLIDE_* and LOCALITY_CLIENT_AZ lines for eval
    GlideEnv,
}

fn parse_zone(value: &str) -> Result<crate::Zone, String> {
    crate::Zone::parse(value)
        .ok_or_else(|| format!("{value:?} is neither an AZ name (ap-northeast-1a) nor an AZ ID (apne1-az4)"))
}

fn parse_duration(value: &str) -> Result<std::time::Duration, String> {
    humantime::parse_duration(value).map_err(|e| format!("{value:?}: {e} (e.g. 1s, 300ms)"))
}

fn parse_server_name(value: &str) -> Result<String, String> {
    if crate::zone::is_dns_name(value) {
        Ok(value.to_ascii_lowercase())
    } else {
        Err(format!(
            "{:?} is not a DNS name; give the name the nodes' certificates carry, e.g. \"replicas.example.cache.amazonaws.com\"",
            value.chars().take(80).collect::<String>()
        ))
    }
}

fn parse_endpoint(value: &str) -> Result<String, String> {
    crate::zone::check_endpoint(value).map(|()| value.to_string())
}

/// The options `resolve` and `sidecar` share; `Err` with the exit code of a usage error (said on
/// stderr).
fn base_options(args: MapArgs) -> Result<crate::Options, ExitCode> {
    let usage = |what: &str, problem: &str| {
        let _ = writeln!(std::io::stderr(), "error: {what}: {problem}");
        ExitCode::from(2)
    };
    let map = crate::MapSource::parse(&args.map).map_err(|e| usage("--map", &e))?;
    let mut options = crate::Options::new(map);
    // A --zone given wins: the environment is not even read then. A LOCALITY_ZONE that is not
    // a zone is a configuration mistake, said loudly (exit 2) like a malformed flag, never
    // papered over with the fallback: the guide's entrypoints stop the container on it.
    options.zone_env = None;
    options.zone_env_problem = None;
    if let (None, Ok(value)) = (&args.zone, std::env::var("LOCALITY_ZONE")) {
        if !value.trim().is_empty() {
            match parse_zone(value.trim()) {
                Ok(zone) => options.zone_env = Some(zone),
                Err(_) => {
                    let problem = crate::zone_env_problem(&value).unwrap_or_default();
                    return Err(usage(
                        "LOCALITY_ZONE",
                        &format!("{problem}; leave it empty or unset to detect the zone from the metadata services"),
                    ));
                }
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
    Ok(options)
}

/// `resolve`: prints the endpoint (or the fallback, with the reason on stderr).
pub fn resolve(args: ResolveArgs) -> ExitCode {
    let mut options = match base_options(args.map) {
        Ok(options) => options,
        Err(code) => return code,
    };
    options.check = args.check;
    options.unhealthy_ttl = std::time::Duration::from_secs(args.unhealthy_ttl);
    options.strict = args.strict;
    let read_from = match args.read_from {
        ReadFromArg::AzAffinity => crate::glide::ReadFrom::AzAffinity,
        ReadFromArg::AzAffinityReplicasAndPrimary => crate::glide::ReadFrom::AzAffinityReplicasAndPrimary,
        ReadFromArg::AzAffinityAllNodes => crate::glide::ReadFrom::AzAffinityAllNodes,
    };
    let format = match args.format {
        ResolveFormat::Endpoint => crate::Format::Endpoint,
        ResolveFormat::Env => crate::Format::Env,
        ResolveFormat::Json => crate::Format::Json,
        ResolveFormat::Glide => crate::Format::Glide(read_from),
        ResolveFormat::GlideEnv => crate::Format::GlideEnv(read_from),
    };
    ExitCode::from(crate::run(
        &options,
        format,
        &mut std::io::stdout(),
        &mut std::io::stderr(),
    ))
}

/// `locality sidecar` on Windows: HAProxy and the runtime API the sidecar steers it through
/// (a Unix socket, signals) are Unix tools.
#[cfg(not(unix))]
pub fn sidecar(_args: SidecarArgs) -> ExitCode {
    let _ = writeln!(
        std::io::stderr(),
        "error: locality sidecar runs HAProxy and steers it over a Unix socket: it runs on Linux and macOS, not on \
         Windows. Use `locality resolve` here (it works the same on every platform)."
    );
    ExitCode::from(2)
}

/// `sidecar`: HAProxy on a local port, steered by the map, in the foreground.
#[cfg(unix)]
pub fn sidecar(args: SidecarArgs) -> ExitCode {
    let resolve = match base_options(args.map) {
        Ok(options) => options,
        Err(code) => return code,
    };
    let mut options = crate::sidecar::SidecarOptions::new(resolve);
    options.listen = args.listen;
    options.interval = std::time::Duration::from_secs(args.interval);
    options.haproxy = args.haproxy;
    options.stats = args.stats.0;
    options.metrics = args.metrics.0;
    options.nameservers = args.nameserver;
    options.run_dir = args.run_dir;
    options.haproxy_user = args.haproxy_user;
    ExitCode::from(crate::sidecar::run(
        &options,
        args.print_config,
        &mut std::io::stdout(),
        &mut std::io::stderr(),
    ))
}
