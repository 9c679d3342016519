//! `locality sidecar`: same-zone reads with in-request failover for applications that cannot
//! change code. It turns the map into an HAProxy configuration ([`haproxy`]) — a local listener,
//! the zone's replicas with Redis-speaking health checks, the reader endpoint as backup — runs
//! HAProxy in the foreground (master-worker mode, signals passed on, its exit status returned),
//! and follows the map while it runs: a changed replica or fallback is applied through HAProxy's
//! runtime API ([`runtime`]) without a restart, or, when the change is not an address change,
//! by a graceful reload (open sessions finish on the old worker). We generate and steer HAProxy;
//! we do not proxy.
//!
//! The data plane confirms the map: the zone's replicas are probed concurrently within one
//! deadline (the check timeout); a replica that reports (Valkey 8+, `INFO server`) an
//! availability zone other than this client's is left out, with a reason naming both, and one
//! that does not answer is not added until it does (one already serving stays: HAProxy's
//! health checks own it). Until then reads go to the reader.
//!
//! What HAProxy cannot know — the zone, the map's version and age, a failing read, the route
//! and why — is served as metrics of its own ([`metrics`], `--metrics`).
//!
//! It runs as root beside other users on many hosts, so ([`process`], [`crate::trusted`]): its
//! run directory is checked from the root down and used through an open handle; HAProxy gets
//! a cleared environment, an unprivileged user for its workers, and never outlives the
//! sidecar; one sidecar per run directory.

pub mod haproxy;
pub mod metrics;
pub mod process;
pub mod runtime;

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use crate::trusted::TrustedDir;
use crate::{check, read_map_versioned, Options, ReplicaMap, Zone, ZoneSource};

/// The most replicas of one zone the sidecar spreads over.
pub const MAX_REPLICAS: usize = 8;
/// The most replicas of one zone probed at one map read (the first in this host's order).
pub const MAX_PROBED: usize = 64;

/// Where reads go: the zone's replicas (empty: the reader only) and the reader endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// The zone's replicas to read from, in this host's order.
    pub replicas: Vec<String>,
    /// The reader endpoint (the map's fallback, or `--fallback`).
    pub reader: String,
    /// Why the zone's replicas are not used, when they are not.
    pub reason: Option<String>,
    /// This client's zone, as far as known.
    pub zone: Option<String>,
    /// What the plan saw on the way, for the sidecar's metrics.
    pub seen: Seen,
}

/// What a plan saw: why reads go to the reader (when they do) and the zone's replicas counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Seen {
    /// Why every read goes to the reader; `None` when the zone's replicas serve.
    pub cause: Option<ReaderCause>,
    /// The zone's replicas the map lists.
    pub listed: usize,
    /// Replicas left out because they report another zone (the data plane contradicts the map).
    pub mismatched: usize,
    /// Replicas left out because they did not answer the probe.
    pub silent: usize,
}

/// Why every read goes to the reader, as one word (the `reason` label of the sidecar's
/// `locality_sidecar_route` metric; the log has the sentence).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReaderCause {
    /// The map could not be read (a fallback was given).
    MapUnreadable,
    /// This process's zone is not known.
    ZoneUnknown,
    /// The map has no replica for this zone.
    NoReplica,
    /// The zone's replicas report another availability zone: the data plane contradicts the map.
    ZoneMismatch,
    /// None of the zone's replicas answered the probe.
    NoAnswer,
}

impl ReaderCause {
    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            ReaderCause::MapUnreadable => "map_unreadable",
            ReaderCause::ZoneUnknown => "zone_unknown",
            ReaderCause::NoReplica => "no_replica",
            ReaderCause::ZoneMismatch => "zone_mismatch",
            ReaderCause::NoAnswer => "no_answer",
        }
    }
}

impl Layout {
    /// Every endpoint of the layout.
    pub fn endpoints(&self) -> impl Iterator<Item = &String> {
        self.replicas.iter().chain(std::iter::once(&self.reader))
    }

    /// Whether the two layouts use the same servers (the reasons may differ).
    pub fn same_servers(&self, other: &Layout) -> bool {
        self.replicas == other.replicas && self.reader == other.reader
    }

    /// One line for the log: where reads go and why.
    pub fn describe(&self) -> String {
        match (self.replicas.as_slice(), &self.reason) {
            ([], reason) => format!(
                "all reads go to the reader {}: {}",
                self.reader,
                reason.as_deref().unwrap_or("the zone has no replica")
            ),
            (replicas, _) => format!(
                "reads go to the zone's replica{} {} (zone {}), the reader {} as backup",
                if replicas.len() == 1 { "" } else { "s" },
                replicas.join(", "),
                self.zone.as_deref().unwrap_or("?"),
                self.reader
            ),
        }
    }
}

/// Everything the sidecar takes: the `resolve` options (map, zone, cache, fallback, TLS, check
/// timeout) and its own.
#[derive(Debug, Clone)]
pub struct SidecarOptions {
    /// Map, zone detection, cache, fallback, TLS and the check timeout, as for `resolve`.
    pub resolve: Options,
    /// The local listener (default `127.0.0.1:6379`).
    pub listen: SocketAddr,
    /// How often the map is re-read.
    pub interval: Duration,
    /// The HAProxy binary (a path, or a name looked up on `PATH`).
    pub haproxy: PathBuf,
    /// The HTTP statistics listener (`/stats`, `/stats;csv`, `/metrics`; unauthenticated and
    /// read-only); `None`: off.
    pub stats: Option<SocketAddr>,
    /// The sidecar's own metrics ([`metrics`]: `/metrics`; unauthenticated and read-only);
    /// `None`: off.
    pub metrics: Option<SocketAddr>,
    /// Nameservers for host names (default: the system's).
    pub nameservers: Vec<SocketAddr>,
    /// Where the configuration, the runtime API socket and the CA bundle live; `None`:
    /// [`SidecarOptions::run_dir`]'s default.
    pub run_dir: Option<PathBuf>,
    /// Who HAProxy's workers run as when the sidecar runs as root (`USER` or `USER:GROUP`);
    /// `None`: `nobody`.
    pub haproxy_user: Option<String>,
}

impl SidecarOptions {
    /// Defaults: `127.0.0.1:6379`, every 60 s, `haproxy` on PATH, statistics on
    /// `127.0.0.1:8404`, the sidecar's metrics on `127.0.0.1:8405`, the system's nameservers,
    /// the run directory in the cache directory.
    pub fn new(resolve: Options) -> SidecarOptions {
        SidecarOptions {
            resolve,
            listen: SocketAddr::from(([127, 0, 0, 1], 6379)),
            interval: Duration::from_secs(60),
            haproxy: PathBuf::from("haproxy"),
            stats: Some(SocketAddr::from(([127, 0, 0, 1], 8404))),
            metrics: Some(SocketAddr::from(([127, 0, 0, 1], 8405))),
            nameservers: Vec::new(),
            run_dir: None,
            haproxy_user: None,
        }
    }

    /// The run directory: the one given, else `<cache dir>/sidecar-<listen port>` (the cache
    /// directory: the one given, else [`crate::cache::default_dir`]: `$RUNTIME_DIRECTORY`,
    /// `$XDG_RUNTIME_DIR/locality`, `/run/locality` as root, `<temp dir>/locality-<uid>`).
    pub fn run_dir(&self) -> PathBuf {
        self.run_dir.clone().unwrap_or_else(|| {
            self.resolve
                .cache_dir
                .clone()
                .unwrap_or_else(crate::cache::default_dir)
                .join(format!("sidecar-{}", self.listen.port()))
        })
    }
}

/// What one probe of a replica gave: `None` when it was not probed, or gave no answer by the
/// deadline.
type Probed = Option<Result<check::Probe, String>>;

/// Probes the first [`MAX_PROBED`] candidates at once, all within one deadline (the check
/// timeout and a little): 50 silent replicas cost one timeout, not 50.
fn probe_all(candidates: &[String], options: &Options) -> Vec<Probed> {
    let deadline = Instant::now() + options.check_timeout + Duration::from_millis(100);
    let (tx, rx) = mpsc::channel();
    let mut started = 0;
    for (n, endpoint) in candidates.iter().take(MAX_PROBED).enumerate() {
        let (tx, endpoint) = (tx.clone(), endpoint.clone());
        let (timeout, tls, name) = (options.check_timeout, options.tls, options.tls_server_name.clone());
        let spawned = std::thread::Builder::new().spawn(move || {
            let tls = tls.then_some(check::Tls {
                server_name: name.as_deref(),
            });
            let _ = tx.send((n, check::probe(&endpoint, timeout, tls)));
        });
        if spawned.is_err() {
            break;
        }
        started += 1;
    }
    drop(tx);
    let mut results: Vec<Probed> = vec![None; candidates.len()];
    for _ in 0..started {
        match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok((n, result)) => results[n] = Some(result),
            Err(_) => break,
        }
    }
    results
}

/// A few items of a list, and how many more.
fn some_of(items: &[String]) -> String {
    const SHOWN: usize = 4;
    let mut text = items.iter().take(SHOWN).cloned().collect::<Vec<_>>().join("; ");
    if items.len() > SHOWN {
        text.push_str(&format!("; and {} more", items.len() - SHOWN));
    }
    text
}

/// Which replicas that did not answer the probe are kept all the same.
#[derive(Debug, Clone, Copy)]
pub enum Unanswered<'a> {
    /// Those the running configuration reads from (HAProxy's health checks own them); any
    /// other is added once it answers. At start: none.
    Serving(&'a [String]),
    /// All (a configuration printed for HAProxy run by hand: its health checks decide).
    All,
}

/// Where reads go for this zone and map, and lines worth logging on the way (replicas left
/// out). A replica that did not answer the probe is kept only as `unanswered` says, or when
/// its host name does not resolve (yet): HAProxy keeps such a server out of service until its
/// resolvers find an address (`init-addr ... none`), so it takes no read before it can answer.
/// A map that cannot be read gives the reader only when a fallback is given.
///
/// # Errors
/// The map cannot be read and there is no fallback; or TLS is asked for and an endpoint is an
/// IP address without `--tls-server-name`.
pub fn plan(
    options: &Options,
    zone: Option<&Zone>,
    zone_failure: Option<&str>,
    map: Result<ReplicaMap, String>,
    unanswered: Unanswered<'_>,
) -> Result<(Layout, Vec<String>), String> {
    let zone_text = zone.map(Zone::describe);
    let reader_only = |reader: String, reason: String, seen: Seen| Layout {
        replicas: Vec::new(),
        reader,
        reason: Some(reason),
        zone: zone_text.clone(),
        seen,
    };
    let only = |cause: ReaderCause| Seen {
        cause: Some(cause),
        ..Seen::default()
    };
    let tls_names = |endpoints: &mut dyn Iterator<Item = &String>| -> Result<(), String> {
        if options.tls {
            for endpoint in endpoints {
                check::tls_server_name(endpoint, options.tls_server_name.as_deref())?;
            }
        }
        Ok(())
    };
    let map = match map {
        Ok(map) => map,
        Err(problem) => {
            let reason = format!("the map could not be read: {problem}");
            return match &options.fallback {
                Some(fallback) => {
                    tls_names(&mut std::iter::once(fallback))?;
                    Ok((
                        reader_only(fallback.clone(), reason, only(ReaderCause::MapUnreadable)),
                        Vec::new(),
                    ))
                }
                None => Err(format!(
                    "{reason}, and no fallback was given (--fallback or LOCALITY_FALLBACK)"
                )),
            };
        }
    };
    if let Some(configuration) = &map.configuration_endpoint {
        return Err(format!(
            "the map is a cluster-mode-enabled group's (configuration endpoint {configuration}): HAProxy cannot follow a cluster's MOVED redirections, so the sidecar cannot serve it; configure Valkey GLIDE's cluster client with `locality resolve --format glide` instead"
        ));
    }
    tls_names(&mut std::iter::once(&map.fallback))?;
    let Some(zone) = zone else {
        let reason = zone_failure.unwrap_or("this process's zone is not known").to_string();
        return Ok((
            reader_only(map.fallback, reason, only(ReaderCause::ZoneUnknown)),
            Vec::new(),
        ));
    };
    let candidates = match map.candidates(zone, &options.host_key) {
        Ok(list) => list,
        Err(reason) => {
            return Ok((
                reader_only(map.fallback, reason, only(ReaderCause::NoReplica)),
                Vec::new(),
            ))
        }
    };
    tls_names(&mut candidates.iter())?;
    let timeout = options.check_timeout.as_millis();
    let mut notes = Vec::new();
    let mut mismatches = Vec::new();
    let mut silent = Vec::new();
    let mut replicas = Vec::new();
    for (endpoint, probed) in candidates.iter().zip(probe_all(&candidates, options)) {
        let kept = match unanswered {
            Unanswered::All => true,
            Unanswered::Serving(serving) => serving.contains(endpoint),
        } || (!haproxy::is_ip(endpoint)
            && matches!(&probed, Some(Err(problem)) if problem.starts_with("cannot resolve")));
        match probed {
            Some(Ok(answer)) => match answer.zone_mismatch(zone) {
                Some(problem) => mismatches.push(format!("the zone's replica {endpoint} is not used: {problem}")),
                None => replicas.push(endpoint.clone()),
            },
            _ if kept => replicas.push(endpoint.clone()),
            Some(Err(problem)) => silent.push(format!("{endpoint} ({problem})")),
            None => silent.push(format!("{endpoint} (no answer within {timeout} ms)")),
        }
    }
    let silent_text = (!silent.is_empty()).then(|| {
        format!(
            "{} of the zone's replicas did not answer the probe and {} not used until {} at a later map read: {}",
            silent.len(),
            if silent.len() == 1 { "is" } else { "are" },
            if silent.len() == 1 { "it answers" } else { "they answer" },
            some_of(&silent)
        )
    });
    let mut seen = Seen {
        cause: None,
        listed: candidates.len(),
        mismatched: mismatches.len(),
        silent: silent.len(),
    };
    if replicas.is_empty() {
        seen.cause = Some(if mismatches.is_empty() {
            ReaderCause::NoAnswer
        } else {
            ReaderCause::ZoneMismatch
        });
        let mut reasons = mismatches;
        reasons.extend(silent_text);
        return Ok((reader_only(map.fallback, reasons.join("; "), seen), Vec::new()));
    }
    notes.extend(mismatches);
    notes.extend(silent_text);
    if replicas.len() > MAX_REPLICAS {
        notes.push(format!(
            "the zone has {} replicas that answer; the sidecar spreads over the first {MAX_REPLICAS} in this host's order",
            replicas.len()
        ));
        replicas.truncate(MAX_REPLICAS);
    }
    Ok((
        Layout {
            replicas,
            reader: map.fallback,
            reason: None,
            zone: zone_text,
            seen,
        },
        notes,
    ))
}

/// The source of the map as `--map` spells it.
fn map_text(options: &Options) -> String {
    match &options.map {
        crate::MapSource::File(path) => path.display().to_string(),
        crate::MapSource::Ssm(name) => format!("ssm:{name}"),
        crate::MapSource::SecretsManager { id, key: None } => format!("secretsmanager:{id}"),
        crate::MapSource::SecretsManager { id, key: Some(key) } => format!("secretsmanager:{id}#{key}"),
    }
}

/// System CA bundles, as the distributions place them.
const SYSTEM_CA_FILES: &[&str] = &[
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/ca-bundle.pem",
    "/etc/ssl/cert.pem",
];

/// The CA file name in the run directory, when the system's CAs are not enough.
const CA_FILE: &str = "ca.pem";

/// The CA file for TLS: HAProxy's `@system-ca`, or the system's bundle plus
/// `LOCALITY_TLS_CA_FILE` in one file in the run directory (`dir`; `None`: print only, the
/// given file is named as it is), and the warnings of reading it ([`check::extra_ca_file`]: as
/// root, another user's file is refused).
fn prepare_ca_file(
    options: &SidecarOptions,
    dir: Option<&TrustedDir>,
) -> Result<(Option<String>, Vec<String>), String> {
    if !options.resolve.tls {
        return Ok((None, Vec::new()));
    }
    let Some(dir) = dir else {
        let Some(extra) = std::env::var_os("LOCALITY_TLS_CA_FILE").filter(|v| !v.is_empty()) else {
            return Ok((Some("@system-ca".into()), Vec::new()));
        };
        let text = PathBuf::from(extra).display().to_string();
        if text.chars().any(|c| c.is_whitespace() || c.is_control() || c == '#') {
            return Err(format!(
                "LOCALITY_TLS_CA_FILE ({}) has blanks or control characters; HAProxy's configuration cannot name it",
                haproxy::comment_text(&text)
            ));
        }
        return Ok((Some(text), Vec::new()));
    };
    let Some(extra) = check::extra_ca_file()? else {
        return Ok((Some("@system-ca".into()), Vec::new()));
    };
    let mut bundle = SYSTEM_CA_FILES
        .iter()
        .find_map(|path| std::fs::read(path).ok())
        .unwrap_or_default();
    bundle.push(b'\n');
    bundle.extend_from_slice(&extra.pem);
    dir.write(CA_FILE, &bundle)
        .map_err(|e| format!("{}: {e}", dir.path().join(CA_FILE).display()))?;
    Ok((Some(CA_FILE.into()), extra.notes))
}

/// The configuration settings for these options.
fn settings(
    options: &SidecarOptions,
    ca_file: Option<String>,
    user: Option<process::HaproxyUser>,
    comments: Vec<String>,
) -> haproxy::Settings {
    haproxy::Settings {
        listen: options.listen,
        stats: options.stats,
        tls_ca_file: ca_file,
        tls_server_name: options.resolve.tls_server_name.clone(),
        user,
        nameservers: options.nameservers.clone(),
        check_timeout: options.resolve.check_timeout,
        max_connections: haproxy::max_connections_for(process::descriptor_limit()),
        comments,
    }
}

/// The comment at the top of the configuration: where it came from, the zone, the route. No
/// remote text: the reasons (error messages from the network) go to the log only.
fn header(options: &SidecarOptions, zone: Option<&Zone>, source: Option<ZoneSource>, layout: &Layout) -> Vec<String> {
    vec![
        format!(
            "Generated by `locality sidecar` ({} {}) from the map {}.",
            env!("CARGO_PKG_NAME"),
            env!("CARGO_PKG_VERSION"),
            map_text(&options.resolve)
        ),
        format!(
            "Zone: {}{}.",
            zone.map_or("not known".to_string(), Zone::describe),
            source.map_or(String::new(), |s| format!(" (from {})", s.as_str()))
        ),
        if layout.replicas.is_empty() {
            "Route: the reader only (the sidecar's log says why).".to_string()
        } else {
            format!(
                "Route: {} replica(s) of the zone, the reader as backup.",
                layout.replicas.len()
            )
        },
    ]
}

/// One line for the log, escaped by the one function every printed text goes through
/// ([`crate::printable::recheck`]: controls, format characters such as U+202E and the line
/// separators shown as `\n`, `\u{202e}`; remote text in it was escaped where it was taken).
pub(crate) fn one_line(text: &str) -> String {
    crate::printable::recheck(text)
}

/// The `locality sidecar` command. With `print_config`, prints the configuration on `out` and
/// returns, writing nothing to disk; else runs HAProxy under it until HAProxy exits, and
/// returns 0 when SIGTERM, SIGINT or SIGQUIT stopped it, else HAProxy's exit status (128 + the
/// signal when a signal ended it). 1 when it cannot start.
pub fn run(options: &SidecarOptions, print_config: bool, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let mut fail = |problem: String| {
        let _ = writeln!(err, "{} {}", crate::prefix("sidecar"), one_line(&problem));
        1
    };
    let user = match process::haproxy_user(options.haproxy_user.as_deref()) {
        Ok(user) => user,
        // The flag's value is wrong: a usage error (exit 2), as clap's own.
        Err(problem) => {
            let _ = writeln!(err, "{} {}", crate::prefix("sidecar"), one_line(&problem));
            return 2;
        }
    };
    let (zone, source, zone_failure, _) = crate::find_zone(&options.resolve);
    let read_at = std::time::SystemTime::now();
    let (map, warnings, version) = match read_map_versioned(&options.resolve) {
        Ok((map, warnings, version, digest)) => (Ok(map), warnings, Ok((version, digest))),
        Err(problem) => (Err(problem.message.clone()), Vec::new(), Err(problem)),
    };
    let unanswered = if print_config {
        Unanswered::All
    } else {
        Unanswered::Serving(&[])
    };
    let (layout, notes) = match plan(
        &options.resolve,
        zone.as_ref(),
        zone_failure.as_deref(),
        map,
        unanswered,
    ) {
        Ok(planned) => planned,
        Err(problem) => return fail(problem),
    };
    let mut comments = header(options, zone.as_ref(), source, &layout);
    if print_config {
        comments.push(
            "Run HAProxy with it yourself, in a directory of its own; the map is not followed then (`locality sidecar` does that).".into(),
        );
        let ca_file = match prepare_ca_file(options, None) {
            Ok((ca_file, _)) => ca_file,
            Err(problem) => return fail(problem),
        };
        for note in warnings.iter().chain(&notes) {
            let _ = writeln!(err, "{} {}", crate::prefix("sidecar"), one_line(note));
        }
        let _ = writeln!(err, "{} {}", crate::prefix("sidecar"), one_line(&layout.describe()));
        let text = haproxy::render(&layout, &settings(options, ca_file, user, comments));
        return match out.write_all(text.as_bytes()) {
            Ok(()) => 0,
            Err(_) => 1,
        };
    }
    let run_dir = options.run_dir();
    let dir = match TrustedDir::open(&run_dir, true) {
        Ok(dir) => dir,
        Err(problem) => {
            return fail(format!(
                "the run directory {} cannot be used: {problem}. Every directory from / down to it must be owned by root or this user and not writable by group or others (sticky ones such as /tmp excepted), and the run directory itself this user's: pass --run-dir DIR, or run with RUNTIME_DIRECTORY (systemd's RuntimeDirectory=) or XDG_RUNTIME_DIR set",
                run_dir.display()
            ))
        }
    };
    let lock = match process::RunLock::take(&dir) {
        Ok(lock) => lock,
        Err(problem) => return fail(problem),
    };
    let log = |line: String| {
        let _ = writeln!(std::io::stderr(), "{} {}", crate::prefix("sidecar"), one_line(&line));
    };
    let Some(program) = process::find_program(&options.haproxy) else {
        return fail(format!(
            "cannot run {} (not found on PATH); install HAProxy (Debian and Ubuntu: apt-get install haproxy) or pass --haproxy PATH",
            options.haproxy.display()
        ));
    };
    let metrics = Arc::new(metrics::Metrics::new(
        zone.as_ref().map(Zone::describe),
        source.map(ZoneSource::as_str),
        options.listen,
        options.interval,
    ));
    match &version {
        Ok((version, digest)) => metrics.map_read(version, digest, read_at),
        Err(problem) => metrics.map_failed(&problem.class),
    }
    metrics.route(&layout);
    let listener = match options.metrics.map(|addr| metrics::serve(addr, Arc::clone(&metrics))) {
        Some(Ok(listener)) => Some(listener),
        Some(Err(problem)) => return fail(problem),
        None => None,
    };
    let stopped = process::stop_leftovers(&dir, &program);
    if !stopped.is_empty() {
        log(format!(
            "stopped {} process(es) left behind in {} by an earlier sidecar (pids {:?})",
            stopped.len(),
            dir.path().display(),
            stopped
        ));
    }
    let (ca_file, ca_notes) = match prepare_ca_file(options, Some(&dir)) {
        Ok(prepared) => prepared,
        Err(problem) => return fail(problem),
    };
    for note in warnings.iter().chain(&notes).chain(&ca_notes) {
        log(note.clone());
    }
    // A port taken by another process is said now, in the sidecar's own words, before any claim
    // to listen (HAProxy would say it in an [ALERT] and exit).
    if !print_config {
        if let Err(e) = std::net::TcpListener::bind(options.listen) {
            return fail(if e.kind() == std::io::ErrorKind::AddrInUse {
                in_use(options.listen, "another process listens there")
            } else {
                format!(
                    "cannot listen on {}: {e}; give another --listen, e.g. --listen 127.0.0.1:16379",
                    options.listen
                )
            });
        }
    }
    // ("listening on …" is said once HAProxy answers on its runtime API: see `Supervisor::follow`.)
    let settings = settings(options, ca_file, user, comments);
    if let Err(e) = dir.write(haproxy::CONFIG, haproxy::render(&layout, &settings).as_bytes()) {
        return fail(format!("{}: {e}", dir.path().join(haproxy::CONFIG).display()));
    }
    let supervisor = Supervisor {
        options: options.clone(),
        program,
        zone,
        zone_failure,
        source,
        settings,
        dir: Arc::new(dir),
        metrics,
    };
    let status = supervisor.run(layout, err);
    drop(listener);
    drop(lock);
    status
}

/// The sentence for a listen address another process holds: `who` says which one, and what to
/// do follows.
fn in_use(listen: std::net::SocketAddr, who: &str) -> String {
    format!(
        "{listen} is in use: {who} (`ss -ltnp 'sport = :{}'` names it); stop it, or give another --listen, e.g. --listen 127.0.0.1:16379",
        listen.port()
    )
}

/// What the sidecar says when HAProxy ended before it listened: the address in use (checked
/// again now), or that HAProxy's own lines above say why.
fn ended_before_listening(listen: std::net::SocketAddr) -> String {
    match std::net::TcpListener::bind(listen) {
        Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => {
            in_use(listen, "another process took it as HAProxy started")
        }
        _ => format!("HAProxy ended before it listened on {listen}; its [ALERT] lines above say why"),
    }
}

/// HAProxy under the sidecar: started, signalled, followed.
struct Supervisor {
    options: SidecarOptions,
    /// The HAProxy binary, as found at start.
    program: PathBuf,
    zone: Option<Zone>,
    zone_failure: Option<String>,
    source: Option<ZoneSource>,
    settings: haproxy::Settings,
    dir: Arc<TrustedDir>,
    metrics: Arc<metrics::Metrics>,
}

impl Supervisor {
    fn run(self, layout: Layout, err: &mut dyn Write) -> u8 {
        use signal_hook::consts::{SIGALRM, SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2};
        // Signals: TERM, INT and QUIT stop HAProxy (and so the sidecar) within 2 s; HUP
        // re-reads the map now; USR1, USR2 and ALRM, which would end the sidecar and leave
        // HAProxy alone, are ignored. Registered before HAProxy starts, so that one arriving in
        // between is held, not fatal. Any other death reaches HAProxy as SIGTERM (Linux:
        // parent-death signal).
        let signals =
            signal_hook::iterator::Signals::new([SIGTERM, SIGINT, SIGQUIT, SIGHUP, SIGUSR1, SIGUSR2, SIGALRM]);
        let program = self.program.clone();
        let mut child = match process::haproxy_command(&program, &self.dir)
            .args(["-W", "-db", "-f", haproxy::CONFIG])
            .stdin(std::process::Stdio::null())
            .spawn()
        {
            Ok(child) => child,
            Err(e) => {
                let _ = writeln!(
                    err,
                    "{} cannot run {} ({e}); install HAProxy (Debian and Ubuntu: apt-get install haproxy) or pass --haproxy PATH", crate::prefix("sidecar"),
                    program.display()
                );
                return 1;
            }
        };
        let pid = child.id();
        let reread = Arc::new(AtomicBool::new(false));
        // A stop asked for (TERM, INT, QUIT): HAProxy ending then is a clean stop, exit 0.
        let asked_to_stop = Arc::new(AtomicBool::new(false));
        let stop = Arc::new(AtomicBool::new(false));
        let handle = match signals {
            Ok(mut signals) => {
                let handle = signals.handle();
                let (reread, stop) = (Arc::clone(&reread), Arc::clone(&stop));
                let asked_to_stop = Arc::clone(&asked_to_stop);
                std::thread::spawn(move || {
                    for signal in signals.forever() {
                        match signal {
                            SIGHUP => reread.store(true, Ordering::SeqCst),
                            SIGTERM | SIGINT | SIGQUIT => {
                                asked_to_stop.store(true, Ordering::SeqCst);
                                send_signal(pid, rustix::process::Signal::TERM);
                                // HAProxy stops at once on SIGTERM; should it hang, it is
                                // killed (its workers exit with their master).
                                let stop = Arc::clone(&stop);
                                std::thread::spawn(move || {
                                    let started = Instant::now();
                                    while started.elapsed() < Duration::from_millis(1500) {
                                        if stop.load(Ordering::SeqCst) {
                                            return;
                                        }
                                        std::thread::sleep(Duration::from_millis(20));
                                    }
                                    send_signal(pid, rustix::process::Signal::KILL);
                                });
                            }
                            other => {
                                let _ = writeln!(
                                    std::io::stderr(),
                                    "{} signal {other} ignored (SIGTERM or SIGINT stop the sidecar and HAProxy; SIGHUP re-reads the map)", crate::prefix("sidecar")
                                );
                            }
                        }
                    }
                });
                Some(handle)
            }
            Err(e) => {
                let _ = writeln!(err, "{} signals cannot be handled ({e})", crate::prefix("sidecar"));
                None
            }
        };
        // Set once HAProxy has bound the listener and answers (and "listening" has been said).
        let listening = Arc::new(AtomicBool::new(false));
        let listen = self.options.listen;
        let follower = {
            let stop = Arc::clone(&stop);
            let reread = Arc::clone(&reread);
            let listening = Arc::clone(&listening);
            std::thread::spawn(move || self.follow(layout, pid, &stop, &reread, &listening))
        };
        let status = child.wait();
        stop.store(true, Ordering::SeqCst);
        if let Some(handle) = handle {
            handle.close();
        }
        let _ = follower.join();
        let asked = asked_to_stop.load(Ordering::SeqCst);
        // HAProxy ended before it listened, unasked: the last line is the sidecar's own, naming
        // the address (taken by another process since the sidecar's own check, most often).
        if !asked && !listening.load(Ordering::SeqCst) {
            let _ = writeln!(err, "{} {}", crate::prefix("sidecar"), ended_before_listening(listen));
        }
        match status {
            Ok(status) => {
                use std::os::unix::process::ExitStatusExt;
                match (status.code(), status.signal()) {
                    // Stopped as asked: HAProxy exits 0 on SIGTERM, or was killed by the sidecar
                    // when it lingered. A clean stop for systemd, Kubernetes and podman alike.
                    (Some(0), _) if asked => 0,
                    (None, Some(signal)) if asked && (signal == SIGTERM || signal == signal_hook::consts::SIGKILL) => 0,
                    (Some(code), _) => u8::try_from(code).unwrap_or(1),
                    (None, Some(signal)) => u8::try_from(128 + signal).unwrap_or(1),
                    (None, None) => 1,
                }
            }
            Err(e) => {
                let _ = writeln!(err, "{} waiting for HAProxy failed: {e}", crate::prefix("sidecar"));
                1
            }
        }
    }

    /// Says "listening" once HAProxy answers on its runtime API; every 200 ms: close sessions
    /// on replicas marked down; every interval (or on SIGHUP): re-read the map and apply a
    /// change.
    fn follow(mut self, mut layout: Layout, pid: u32, stop: &AtomicBool, reread: &AtomicBool, listening: &AtomicBool) {
        let admin = runtime::Admin::new(&self.dir.path_of(haproxy::SOCKET));
        let mut last_read = Instant::now();
        let mut last_detection = Instant::now();
        let mut last_failure: Option<String> = None;
        let mut last_warnings: Vec<String> = Vec::new();
        let log = |line: String| {
            let _ = writeln!(std::io::stderr(), "{} {}", crate::prefix("sidecar"), one_line(&line));
        };
        while !stop.load(Ordering::SeqCst) {
            // Every 20 ms until HAProxy answers (so that "listening" follows the bind closely),
            // then every 200 ms.
            let tick = if listening.load(Ordering::SeqCst) { 200 } else { 20 };
            std::thread::sleep(Duration::from_millis(tick));
            let servers = admin.servers();
            // HAProxy binds its listeners before its worker answers the runtime API (a unix
            // socket: no session through the listener, none on a replica).
            if servers.is_ok() && !listening.swap(true, Ordering::SeqCst) {
                log(format!("listening on {}; {}", self.options.listen, layout.describe()));
            }
            if let Ok(servers) = servers {
                for server in servers
                    .iter()
                    .filter(|s| !s.backup && s.status.starts_with("DOWN") && s.current_sessions > 0)
                {
                    let closed = admin.command(&format!(
                        "shutdown sessions server {}/{}",
                        haproxy::BACKEND,
                        server.name
                    ));
                    if closed.is_ok() {
                        log(format!(
                            "closed {} session(s) on {} ({}), marked down; clients reconnect to the reader",
                            server.current_sessions, server.name, server.address
                        ));
                    }
                }
            }
            let due = last_read.elapsed() >= self.options.interval || reread.swap(false, Ordering::SeqCst);
            if !due {
                continue;
            }
            last_read = Instant::now();
            let map = match read_map_versioned(&self.options.resolve) {
                Ok((map, warnings, version, digest)) => {
                    self.metrics.map_read(&version, &digest, std::time::SystemTime::now());
                    if warnings != last_warnings {
                        warnings.iter().for_each(|w| log(w.clone()));
                        last_warnings = warnings;
                    }
                    map
                }
                Err(failed) => {
                    self.metrics.map_failed(&failed.class);
                    let problem = failed.message;
                    if last_failure.as_ref() != Some(&problem) {
                        log(format!(
                            "the map could not be read ({problem}); keeping the last good configuration"
                        ));
                        last_failure = Some(problem);
                    }
                    continue;
                }
            };
            if last_failure.take().is_some() {
                log("the map can be read again".into());
            }
            // A zone not known at start (the metadata silent, say) is detected again once the
            // failure's TTL has passed, never cached for good: the reads move to the zone's
            // replicas at this map read.
            if self.zone.is_none() && last_detection.elapsed() >= self.options.resolve.failure_ttl {
                last_detection = Instant::now();
                self.detect_again(&log);
            }
            let (new, notes) = match plan(
                &self.options.resolve,
                self.zone.as_ref(),
                self.zone_failure.as_deref(),
                Ok(map),
                Unanswered::Serving(&layout.replicas),
            ) {
                Ok(planned) => planned,
                Err(problem) => {
                    log(format!(
                        "the map changed, but it cannot be applied: {problem}; keeping the last good configuration"
                    ));
                    continue;
                }
            };
            if new.same_servers(&layout) {
                self.metrics.route(&new);
                layout.seen = new.seen;
                continue;
            }
            for note in notes {
                log(note);
            }
            let resolvers = haproxy::needs_resolvers(&layout, &self.settings);
            let tls = self.settings.tls_ca_file.is_some();
            let applied = match runtime::commands(&layout, &new, resolvers, tls) {
                Some(commands) => commands
                    .iter()
                    .all(|command| admin.command(command).is_ok_and(|reply| reply.contains("changed"))),
                None => false,
            };
            if applied {
                log(format!("the map changed: {} (applied at run time)", new.describe()));
                self.metrics.route(&new);
                layout = new;
                continue;
            }
            match self.reload(&new, pid) {
                Ok(()) => {
                    log(format!(
                        "the map changed: {} (HAProxy reloaded; open sessions finish on the old servers)",
                        new.describe()
                    ));
                    self.metrics.route(&new);
                    layout = new;
                }
                Err(problem) => log(format!("the map changed, but HAProxy was not reloaded: {problem}")),
            }
        }
    }

    /// Detects the zone again (through the cache, whose failure entry has expired by now); when
    /// it is found, says so in the log and in `locality_sidecar_info`.
    fn detect_again(&mut self, log: &dyn Fn(String)) {
        let (zone, source, failure, _) = crate::find_zone(&self.options.resolve);
        match zone {
            Some(zone) => {
                let source_text = source.map_or("", ZoneSource::as_str);
                log(format!(
                    "the zone is known now: {} (from {source_text}); reads move to the zone's replicas at this map read",
                    zone.describe()
                ));
                self.metrics.zone_detected(&zone.describe(), source_text);
                self.zone = Some(zone);
                self.source = source;
                self.zone_failure = None;
            }
            None => {
                if let Some(failure) = failure {
                    if self.zone_failure.as_ref() != Some(&failure) {
                        log(format!(
                            "the zone is still not known ({failure}); reads stay on the reader"
                        ));
                    }
                    self.zone_failure = Some(failure);
                }
            }
        }
    }

    /// Writes the configuration of `layout`, checks it with `haproxy -c`, and reloads
    /// (master-worker: SIGUSR2).
    fn reload(&self, layout: &Layout, pid: u32) -> Result<(), String> {
        let mut settings = self.settings.clone();
        settings.comments = header(&self.options, self.zone.as_ref(), self.source, layout);
        let text = haproxy::render(layout, &settings);
        self.dir
            .write(haproxy::CONFIG, text.as_bytes())
            .map_err(|e| format!("{}: {e}", self.dir.path().join(haproxy::CONFIG).display()))?;
        let check = process::haproxy_command(&self.program, &self.dir)
            .args(["-c", "-q", "-f", haproxy::CONFIG])
            .output()
            .map_err(|e| e.to_string())?;
        if !check.status.success() {
            return Err(format!(
                "the new configuration does not pass `haproxy -c`: {}",
                String::from_utf8_lossy(&check.stderr).trim()
            ));
        }
        send_signal(pid, rustix::process::Signal::USR2);
        Ok(())
    }
}

/// Sends `signal` to HAProxy's master.
fn send_signal(pid: u32, signal: rustix::process::Signal) {
    use rustix::process::{kill_process, Pid};
    if let Some(pid) = i32::try_from(pid).ok().and_then(Pid::from_raw) {
        let _ = kill_process(pid, signal);
    }
}
