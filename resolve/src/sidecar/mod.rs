//! `locality sidecar`: same-zone reads with in-request failover for applications that cannot
//! change code. It turns the map into an HAProxy configuration ([`haproxy`]) — a local listener,
//! the zone's replicas with Redis-speaking health checks, the reader endpoint as backup — runs
//! HAProxy in the foreground (master-worker mode, signals passed on, its exit status returned),
//! and follows the map while it runs: a changed replica or fallback is applied through HAProxy's
//! runtime API ([`runtime`]) without a restart, or, when the change is not an address change,
//! by a graceful reload (open sessions finish on the old worker). We generate and steer HAProxy;
//! we do not proxy.
//!
//! The data plane confirms the map: a replica that reports (Valkey 8+, `INFO server`) an
//! availability zone other than this client's is left out, with a reason naming both.

pub mod haproxy;
pub mod runtime;

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::{check, read_map, Options, ReplicaMap, Zone, ZoneSource};

/// The most replicas of one zone the sidecar spreads over.
pub const MAX_REPLICAS: usize = 8;

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
    /// The HAProxy binary.
    pub haproxy: PathBuf,
    /// The HTTP statistics listener (`/stats`, `/stats;csv`, `/metrics`); `None`: off.
    pub stats: Option<SocketAddr>,
    /// Nameservers for host names (default: the system's).
    pub nameservers: Vec<SocketAddr>,
    /// Where the configuration, the runtime API socket and the CA bundle live.
    pub run_dir: PathBuf,
}

impl SidecarOptions {
    /// Defaults: `127.0.0.1:6379`, every 60 s, `haproxy` on PATH, statistics on
    /// `127.0.0.1:8404`, the system's nameservers, the run directory beside the cache.
    pub fn new(resolve: Options) -> SidecarOptions {
        let listen = SocketAddr::from(([127, 0, 0, 1], 6379));
        SidecarOptions {
            resolve,
            listen,
            interval: Duration::from_secs(60),
            haproxy: PathBuf::from("haproxy"),
            stats: Some(SocketAddr::from(([127, 0, 0, 1], 8404))),
            nameservers: Vec::new(),
            run_dir: default_run_dir(listen),
        }
    }
}

/// `<cache dir>/sidecar-<port>`: one per listener.
pub fn default_run_dir(listen: SocketAddr) -> PathBuf {
    crate::cache::default_dir().join(format!("sidecar-{}", listen.port()))
}

/// Where reads go for this zone and map, and lines worth logging on the way (replicas left
/// out). A map that cannot be read gives the reader only when a fallback is given.
///
/// # Errors
/// The map cannot be read and there is no fallback.
pub fn plan(
    options: &Options,
    zone: Option<&Zone>,
    zone_failure: Option<&str>,
    map: Result<ReplicaMap, String>,
) -> Result<(Layout, Vec<String>), String> {
    let zone_text = zone.map(Zone::describe);
    let reader_only = |reader: String, reason: String| Layout {
        replicas: Vec::new(),
        reader,
        reason: Some(reason),
        zone: zone_text.clone(),
    };
    let map = match map {
        Ok(map) => map,
        Err(problem) => {
            let reason = format!("the map could not be read: {problem}");
            return match &options.fallback {
                Some(fallback) => Ok((reader_only(fallback.clone(), reason), Vec::new())),
                None => Err(format!("{reason}, and no --fallback was given")),
            };
        }
    };
    let Some(zone) = zone else {
        let reason = zone_failure.unwrap_or("this process's zone is not known").to_string();
        return Ok((reader_only(map.fallback, reason), Vec::new()));
    };
    let candidates = match map.candidates(zone, &options.host_key) {
        Ok(list) => list,
        Err(reason) => return Ok((reader_only(map.fallback, reason), Vec::new())),
    };
    let mut notes = Vec::new();
    let mut mismatches = Vec::new();
    let mut replicas = Vec::new();
    for endpoint in candidates {
        // Only a node that says it is elsewhere is left out; one that does not answer now is
        // HAProxy's health checks' business.
        let mismatch = check::probe(&endpoint, options.check_timeout, options.tls)
            .ok()
            .and_then(|answer| answer.zone_mismatch(zone));
        match mismatch {
            Some(problem) => mismatches.push(format!("the zone's replica {endpoint} is not used: {problem}")),
            None => replicas.push(endpoint),
        }
    }
    if replicas.is_empty() {
        return Ok((reader_only(map.fallback, mismatches.join("; ")), Vec::new()));
    }
    notes.extend(mismatches);
    if replicas.len() > MAX_REPLICAS {
        notes.push(format!(
            "the zone has {} replicas; the sidecar spreads over the first {MAX_REPLICAS} in this host's order",
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

/// The run directory (created, closed to others) and the CA file for TLS: HAProxy's
/// `@system-ca`, or the system's bundle plus `LOCALITY_TLS_CA_FILE` in one file there.
fn prepare_run_dir(options: &SidecarOptions) -> Result<(PathBuf, Option<String>), String> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    let dir = &options.run_dir;
    let what = |e: std::io::Error| format!("the run directory {} cannot be used: {e}", dir.display());
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(what)?;
    let meta = std::fs::symlink_metadata(dir).map_err(what)?;
    if !meta.is_dir() || meta.uid() != rustix::process::geteuid().as_raw() {
        return Err(format!(
            "the run directory {} is not a directory of this user's (pass --run-dir)",
            dir.display()
        ));
    }
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(what)?;
    if !options.resolve.tls {
        return Ok((dir.clone(), None));
    }
    let Some(extra) = std::env::var_os("LOCALITY_TLS_CA_FILE").filter(|v| !v.is_empty()) else {
        return Ok((dir.clone(), Some("@system-ca".into())));
    };
    let mut bundle = SYSTEM_CA_FILES
        .iter()
        .find_map(|path| std::fs::read(path).ok())
        .unwrap_or_default();
    let extra = std::fs::read(&extra).map_err(|e| {
        format!(
            "LOCALITY_TLS_CA_FILE ({}) cannot be read: {e}",
            Path::new(&extra).display()
        )
    })?;
    bundle.push(b'\n');
    bundle.extend_from_slice(&extra);
    let path = dir.join("ca.pem");
    crate::cache::write_private(&path, &bundle).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok((dir.clone(), Some(path.display().to_string())))
}

/// The configuration settings for these options.
fn settings(
    options: &SidecarOptions,
    run_dir: &Path,
    ca_file: Option<String>,
    comments: Vec<String>,
) -> haproxy::Settings {
    haproxy::Settings {
        listen: options.listen,
        stats: options.stats,
        socket: run_dir.join("haproxy.sock"),
        tls_ca_file: ca_file,
        nameservers: options.nameservers.clone(),
        check_timeout: options.resolve.check_timeout,
        comments,
    }
}

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
        format!("Now: {}.", layout.describe()),
    ]
}

/// The `locality sidecar` command. With `print_config`, prints the configuration on `out` and
/// returns; else runs HAProxy under it until HAProxy exits, and returns its exit status (128 +
/// the signal when a signal ended it). 1 when it cannot start.
pub fn run(options: &SidecarOptions, print_config: bool, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let (zone, source, zone_failure, _) = crate::find_zone(&options.resolve);
    let (layout, notes) = match plan(
        &options.resolve,
        zone.as_ref(),
        zone_failure.as_deref(),
        read_map(&options.resolve),
    ) {
        Ok(planned) => planned,
        Err(problem) => {
            let _ = writeln!(err, "locality sidecar: {problem}");
            return 1;
        }
    };
    let (run_dir, ca_file) = match prepare_run_dir(options) {
        Ok(prepared) => prepared,
        Err(problem) => {
            let _ = writeln!(err, "locality sidecar: {problem}");
            return 1;
        }
    };
    let mut comments = header(options, zone.as_ref(), source, &layout);
    if print_config {
        comments
            .push("Run HAProxy with it yourself; the map is not followed then (`locality sidecar` does that).".into());
        let settings = settings(options, &run_dir, ca_file, comments);
        let text = haproxy::render(&layout, &settings);
        return match out.write_all(text.as_bytes()) {
            Ok(()) => 0,
            Err(_) => 1,
        };
    }
    for note in &notes {
        let _ = writeln!(err, "locality sidecar: {note}");
    }
    let _ = writeln!(
        err,
        "locality sidecar: listening on {}; {}",
        options.listen,
        layout.describe()
    );
    let settings = settings(options, &run_dir, ca_file, comments);
    let config_path = run_dir.join("haproxy.cfg");
    if let Err(e) = crate::cache::write_private(&config_path, haproxy::render(&layout, &settings).as_bytes()) {
        let _ = writeln!(err, "locality sidecar: {}: {e}", config_path.display());
        return 1;
    }
    let supervisor = Supervisor {
        options: options.clone(),
        zone,
        zone_failure,
        source,
        settings,
        config_path,
    };
    supervisor.run(layout, err)
}

/// HAProxy under the sidecar: started, signalled, followed.
struct Supervisor {
    options: SidecarOptions,
    zone: Option<Zone>,
    zone_failure: Option<String>,
    source: Option<ZoneSource>,
    settings: haproxy::Settings,
    config_path: PathBuf,
}

impl Supervisor {
    fn run(self, layout: Layout, err: &mut dyn Write) -> u8 {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1};
        // Signals: TERM, INT, QUIT and USR1 (soft stop) go to HAProxy; HUP re-reads the map now.
        // Registered before HAProxy starts, so that one arriving in between is held, not fatal.
        let signals = signal_hook::iterator::Signals::new([SIGTERM, SIGINT, SIGQUIT, SIGUSR1, SIGHUP]);
        let mut child = match std::process::Command::new(&self.options.haproxy)
            .args(["-W", "-db", "-f"])
            .arg(&self.config_path)
            .stdin(std::process::Stdio::null())
            .spawn()
        {
            Ok(child) => child,
            Err(e) => {
                let _ = writeln!(
                    err,
                    "locality sidecar: cannot run {} ({e}); install HAProxy (Debian and Ubuntu: apt-get install haproxy) or pass --haproxy PATH",
                    self.options.haproxy.display()
                );
                return 1;
            }
        };
        let pid = child.id();
        let reread = Arc::new(AtomicBool::new(false));
        let stop = Arc::new(AtomicBool::new(false));
        let handle = match signals {
            Ok(mut signals) => {
                let handle = signals.handle();
                let reread = Arc::clone(&reread);
                std::thread::spawn(move || {
                    for signal in signals.forever() {
                        if signal == SIGHUP {
                            reread.store(true, Ordering::SeqCst);
                        } else {
                            send_signal(pid, signal);
                        }
                    }
                });
                Some(handle)
            }
            Err(e) => {
                let _ = writeln!(err, "locality sidecar: signals cannot be passed on to HAProxy ({e})");
                None
            }
        };
        let follower = {
            let stop = Arc::clone(&stop);
            let reread = Arc::clone(&reread);
            std::thread::spawn(move || self.follow(layout, pid, &stop, &reread))
        };
        let status = child.wait();
        stop.store(true, Ordering::SeqCst);
        if let Some(handle) = handle {
            handle.close();
        }
        let _ = follower.join();
        match status {
            Ok(status) => {
                use std::os::unix::process::ExitStatusExt;
                match (status.code(), status.signal()) {
                    (Some(code), _) => u8::try_from(code).unwrap_or(1),
                    (None, Some(signal)) => u8::try_from(128 + signal).unwrap_or(1),
                    (None, None) => 1,
                }
            }
            Err(e) => {
                let _ = writeln!(err, "locality sidecar: waiting for HAProxy failed: {e}");
                1
            }
        }
    }

    /// Every second: close sessions on replicas marked down; every interval (or on SIGHUP):
    /// re-read the map and apply a change.
    fn follow(self, mut layout: Layout, pid: u32, stop: &AtomicBool, reread: &AtomicBool) {
        let admin = runtime::Admin::new(&self.settings.socket);
        let mut last_read = Instant::now();
        let mut last_failure: Option<String> = None;
        let log = |line: String| {
            let _ = writeln!(std::io::stderr(), "locality sidecar: {line}");
        };
        while !stop.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(200));
            if let Ok(servers) = admin.servers() {
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
            let map = read_map(&self.options.resolve);
            if let Err(problem) = &map {
                if last_failure.as_ref() != Some(problem) {
                    log(format!(
                        "the map could not be read ({problem}); keeping the last good configuration"
                    ));
                    last_failure = Some(problem.clone());
                }
                continue;
            }
            if last_failure.take().is_some() {
                log("the map can be read again".into());
            }
            let Ok((new, notes)) = plan(
                &self.options.resolve,
                self.zone.as_ref(),
                self.zone_failure.as_deref(),
                map,
            ) else {
                continue;
            };
            if new.same_servers(&layout) {
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
                layout = new;
                continue;
            }
            match self.reload(&new, pid) {
                Ok(()) => {
                    log(format!(
                        "the map changed: {} (HAProxy reloaded; open sessions finish on the old servers)",
                        new.describe()
                    ));
                    layout = new;
                }
                Err(problem) => log(format!("the map changed, but HAProxy was not reloaded: {problem}")),
            }
        }
    }

    /// Writes the configuration of `layout`, checks it with `haproxy -c`, and reloads
    /// (master-worker: SIGUSR2).
    fn reload(&self, layout: &Layout, pid: u32) -> Result<(), String> {
        let mut settings = self.settings.clone();
        settings.comments = header(&self.options, self.zone.as_ref(), self.source, layout);
        let text = haproxy::render(layout, &settings);
        crate::cache::write_private(&self.config_path, text.as_bytes())
            .map_err(|e| format!("{}: {e}", self.config_path.display()))?;
        let check = std::process::Command::new(&self.options.haproxy)
            .args(["-c", "-q", "-f"])
            .arg(&self.config_path)
            .output()
            .map_err(|e| e.to_string())?;
        if !check.status.success() {
            return Err(format!(
                "the new configuration does not pass `haproxy -c`: {}",
                String::from_utf8_lossy(&check.stderr).trim()
            ));
        }
        send_signal(pid, signal_hook::consts::SIGUSR2);
        Ok(())
    }
}

/// Sends one of the signals the sidecar passes on.
fn send_signal(pid: u32, signal: i32) {
    use rustix::process::{kill_process, Pid, Signal};
    use signal_hook::consts::{SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2};
    let signal = match signal {
        SIGTERM => Signal::TERM,
        SIGINT => Signal::INT,
        SIGQUIT => Signal::QUIT,
        SIGUSR1 => Signal::USR1,
        SIGUSR2 => Signal::USR2,
        _ => return,
    };
    if let Some(pid) = i32::try_from(pid).ok().and_then(Pid::from_raw) {
        let _ = kill_process(pid, signal);
    }
}
