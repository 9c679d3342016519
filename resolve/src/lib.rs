//! `locality-resolve`: the application side of locality's replica map. Given where the map is
//! ([`MapSource`]) it answers the one question an application has at start-up — which cache
//! endpoint do I read from? — with every failure path ending at the map's fallback (the
//! reader endpoint): this process's zone ([`detect`], cached across processes by [`cache`]),
//! the map's entry for it ([`document`]), optionally a `PING` of the chosen node ([`check`]).
//! The `locality resolve` command is a thin wrapper over [`resolve`].
//!
//! ```no_run
//! let options = locality_resolve::Options::new(locality_resolve::MapSource::parse("ssm:/prod/cache/replica-map").unwrap());
//! let resolution = locality_resolve::resolve(&options).expect("a map or a fallback");
//! println!("read from {}", resolution.endpoint);
//! ```
//!
//! With the check, as the consuming guide shows it:
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let mut options = locality_resolve::Options::new(locality_resolve::MapSource::parse("ssm:/prod/cache/replica-map")?);
//! options.check = true;
//! let resolution = locality_resolve::resolve(&options)?;
//! // resolution.endpoint, resolution.route, resolution.reason
//! # Ok(())
//! # }
//! ```

#[cfg(feature = "aws")]
pub mod aws_error;
#[cfg(feature = "aws")]
pub mod body_limit;
pub mod cache;
pub mod check;
#[cfg(feature = "cli")]
pub mod cli;
pub mod detect;
pub mod document;
pub mod glide;
// HAProxy, its runtime API over a Unix socket, and signals: Unix only.
#[cfg(unix)]
pub mod sidecar;
// An I/O error in plain words (the lowest room: it uses nothing of this crate).
mod io_problem;
pub mod printable;
pub mod source;
// Directories and files no other local user can swap (owners and modes from the root down).
#[cfg(unix)]
pub mod trusted;
pub mod zone;

use std::path::PathBuf;
use std::time::Duration;

pub use detect::{Budget, MetadataEnv, ZoneSource};
pub use document::ReplicaMap;
pub use source::MapSource;
pub use zone::Zone;

/// Everything [`resolve`] takes.
#[derive(Debug, Clone)]
pub struct Options {
    /// Where the map is.
    pub map: MapSource,
    /// The zone when it is given (`--zone`), an AZ name or ID.
    pub zone_flag: Option<Zone>,
    /// The zone from `LOCALITY_ZONE`.
    pub zone_env: Option<Zone>,
    /// Why `LOCALITY_ZONE` is set but cannot be used (neither an AZ name nor an AZ ID): a
    /// failure path like a detection that failed, ending at the fallback.
    pub zone_env_problem: Option<String>,
    /// The metadata services.
    pub metadata: MetadataEnv,
    /// Detection time limits.
    pub budget: Budget,
    /// The cache directory; `None`: no cache.
    pub cache_dir: Option<PathBuf>,
    /// How long a failed detection is remembered.
    pub failure_ttl: Duration,
    /// `PING` the chosen node first; when it fails, or reports an availability zone other than
    /// this process's (Valkey 8+), the zone's next healthy replica, else the fallback.
    pub check: bool,
    /// How long the check of one node may take.
    pub check_timeout: Duration,
    /// TLS for the check.
    pub tls: bool,
    /// With TLS, the name the certificates of endpoints given as IP addresses carry (an
    /// endpoint's host name is always checked against its own name).
    pub tls_server_name: Option<String>,
    /// How long a node that failed the check is avoided.
    pub unhealthy_ttl: Duration,
    /// The endpoint when the map cannot be read.
    pub fallback: Option<String>,
    /// How long reading the map from AWS may take.
    pub map_timeout: Duration,
    /// What spreads hosts over a zone's replicas (default: the host name).
    pub host_key: String,
    /// With `--format glide`: fail (exit 1) when `client_az` is known not to match the nodes'
    /// spelling of zones, instead of printing it with a warning.
    pub strict: bool,
}

impl Options {
    /// Defaults: zone from `LOCALITY_ZONE` and the metadata services of the environment, a 1 s
    /// detection budget, the default cache directory, 60 s failure and unhealthy TTLs, a 300 ms
    /// check when asked for, no fallback of its own.
    pub fn new(map: MapSource) -> Options {
        Options {
            map,
            zone_flag: None,
            zone_env: std::env::var("LOCALITY_ZONE").ok().and_then(|z| Zone::parse(z.trim())),
            zone_env_problem: std::env::var("LOCALITY_ZONE").ok().and_then(|z| zone_env_problem(&z)),
            metadata: MetadataEnv::from_env(),
            budget: Budget::default(),
            cache_dir: Some(cache::default_dir()),
            failure_ttl: Duration::from_secs(60),
            check: false,
            check_timeout: Duration::from_millis(300),
            tls: false,
            tls_server_name: None,
            unhealthy_ttl: Duration::from_secs(60),
            fallback: None,
            map_timeout: Duration::from_secs(5),
            host_key: host_name(),
            strict: false,
        }
    }
}

/// The program messages are prefixed with: `locality` (the default) or the binary's own name,
/// as its `main` sets it ([`set_program`]).
static PROGRAM: std::sync::OnceLock<&'static str> = std::sync::OnceLock::new();

/// Names the program in messages (`locality-app` sets its own name; the first call wins).
pub fn set_program(name: &'static str) {
    let _ = PROGRAM.set(name);
}

/// `PROGRAM COMMAND:`, the prefix of a command's messages: `locality resolve:`,
/// `locality-app sidecar:`.
pub fn prefix(command: &str) -> String {
    format!("{} {command}:", PROGRAM.get().copied().unwrap_or("locality"))
}

/// Why a `LOCALITY_ZONE` value cannot be used, or `None` when it can (or is empty: not set).
pub fn zone_env_problem(value: &str) -> Option<String> {
    let value = value.trim();
    if value.is_empty() || Zone::parse(value).is_some() {
        return None;
    }
    let shown: String = value.chars().take(64).collect();
    Some(format!(
        "LOCALITY_ZONE={:?} is neither an AZ name (ap-northeast-1a) nor an AZ ID (apne1-az4)",
        shown
    ))
}

/// TLS for the check, as the options ask for it.
pub(crate) fn check_tls(options: &Options) -> Option<check::Tls<'_>> {
    options.tls.then_some(check::Tls {
        server_name: options.tls_server_name.as_deref(),
    })
}

/// This host's name (`/proc/sys/kernel/hostname`, else `HOSTNAME`).
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_string())
        .unwrap_or_default()
}

/// Whether the answer is the zone's own node or the fallback.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Route {
    /// The zone's entry.
    Zone,
    /// The map's (or `--fallback`'s) fallback.
    Fallback,
}

/// The answer.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Resolution {
    /// `host:port` to read from.
    pub endpoint: String,
    /// Zone or fallback.
    pub route: Route,
    /// The zone's name, when known.
    pub zone: Option<String>,
    /// The zone's ID, when known.
    pub zone_id: Option<String>,
    /// Where the zone came from, when it is known.
    pub zone_source: Option<ZoneSource>,
    /// On the fallback route, which step failed; `None` on the zone route.
    pub reason: Option<String>,
    /// The reader endpoint an application turns to when the endpoint stops answering in the
    /// middle of a request: the map's `fallback`, or the one given (`--fallback`,
    /// `LOCALITY_FALLBACK`) when the map could not be read. Not in the JSON line (its six
    /// fields are a contract); `LOCALITY_FALLBACK` in `--format env`.
    #[serde(skip)]
    pub fallback: String,
    /// Metadata requests this resolution made.
    #[serde(skip)]
    pub metadata_requests: u32,
    /// What went wrong on the way without changing the route (a replica of the zone that
    /// failed the check while another answered, a cache directory that cannot be used): one
    /// line each for stderr.
    #[serde(skip)]
    pub notes: Vec<String>,
}

impl Resolution {
    /// The `--format json` line: exactly `endpoint`, `route`, `zone`, `zone_id`,
    /// `zone_source`, `reason`.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The `--format env` lines for `eval` (`LOCALITY_READ_ENDPOINT`, `_HOST`, `_PORT`,
    /// `LOCALITY_ZONE`, `LOCALITY_ROUTE`, `LOCALITY_FALLBACK`, `_HOST`, `_PORT`): `export
    /// NAME='value'`, single-quoted (POSIX: sh, dash, bash, busybox ash), so the variables
    /// reach the process an entrypoint `exec`s and a value with quotes or spaces stays one
    /// value. The hosts are bare (`::1`, not `[::1]`), as phpredis and Laravel's `host` take them.
    pub fn to_env(&self) -> String {
        let (host, port) = split_endpoint(&self.endpoint);
        let (fallback_host, fallback_port) = split_endpoint(&self.fallback);
        let route = match self.route {
            Route::Zone => "zone",
            Route::Fallback => "fallback",
        };
        let zone = self.zone.clone().or_else(|| self.zone_id.clone()).unwrap_or_default();
        [
            ("LOCALITY_READ_ENDPOINT", self.endpoint.as_str()),
            ("LOCALITY_READ_HOST", host),
            ("LOCALITY_READ_PORT", port),
            ("LOCALITY_ZONE", zone.as_str()),
            ("LOCALITY_ROUTE", route),
            ("LOCALITY_FALLBACK", self.fallback.as_str()),
            ("LOCALITY_FALLBACK_HOST", fallback_host),
            ("LOCALITY_FALLBACK_PORT", fallback_port),
        ]
        .iter()
        .map(|(k, v)| format!("export {k}={}\n", shell_quote(v)))
        .collect()
    }
}

/// `host` and `port` of `host:port` (`[::1]:6379` gives `::1`).
pub fn split_endpoint(endpoint: &str) -> (&str, &str) {
    let (host, port) = endpoint.rsplit_once(':').unwrap_or((endpoint, ""));
    (host.trim_start_matches('[').trim_end_matches(']'), port)
}

/// POSIX single quotes: safe for any text in `eval`.
pub fn shell_quote(value: &str) -> String {
    format!("'{}'", value.replace('\'', r"'\''"))
}

/// The map, read from its source within `options.map_timeout` and parsed, with warnings from
/// the way (a map file others could write); `Err` says why not.
pub(crate) fn read_map(options: &Options) -> Result<(ReplicaMap, Vec<String>), String> {
    read_map_versioned(options)
        .map(|(map, notes, ..)| (map, notes))
        .map_err(|e| e.message)
}

/// [`read_map`], and what the source says of the map's version, with a digest of its text
/// (FNV-1a, hex): the same text, the same digest, on every host.
#[cfg_attr(not(unix), allow(dead_code))]
pub(crate) fn read_map_versioned(
    options: &Options,
) -> Result<(ReplicaMap, Vec<String>, source::MapVersion, String), source::ReadError> {
    let (text, notes, version) = options.map.read_classified(options.map_timeout)?;
    let digest = format!("{:016x}", document::stable_hash(&text));
    ReplicaMap::parse(&text)
        .map(|map| (map, notes, version, digest))
        .map_err(|e| source::ReadError::new(e.class(), e.to_string()))
}

/// No endpoint at all: the map could not be read and no fallback was given.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct Unresolvable(pub String);

/// Resolves the endpoint to read from. Every failure after the map is read ends at the map's
/// fallback with a reason; a map that cannot be read ends at `options.fallback`.
///
/// # Errors
/// [`Unresolvable`] when the map cannot be read and there is no `options.fallback`.
pub fn resolve(options: &Options) -> Result<Resolution, Unresolvable> {
    let map = read_map(options);
    let (zone, source, zone_failure, requests) = find_zone(options);
    let mut notes = Vec::new();
    let cache = options.cache_dir.as_deref().map(cache::Cache::open);
    if let (Some(dir), Some(problem)) = (&options.cache_dir, cache.as_ref().and_then(cache::Cache::problem)) {
        notes.push(format!(
            "the cache directory {} is not used ({problem}; it must be a directory of this user's, closed to others, below directories only root or this user can change); every run detects anew",
            dir.display()
        ));
    }
    let fallback_route = |endpoint: String, reason: String, notes: Vec<String>| Resolution {
        fallback: endpoint.clone(),
        endpoint,
        route: Route::Fallback,
        zone: zone.as_ref().and_then(|z| z.name.clone()),
        zone_id: zone.as_ref().and_then(|z| z.id.clone()),
        zone_source: source,
        reason: Some(reason),
        metadata_requests: requests,
        notes,
    };
    let map = match map {
        Ok((map, warnings)) => {
            notes.extend(warnings);
            map
        }
        Err(problem) => {
            let reason = format!("the map could not be read: {problem}");
            return match &options.fallback {
                Some(endpoint) => Ok(fallback_route(endpoint.clone(), reason, notes)),
                None => Err(Unresolvable(format!(
                    "{reason}, and no fallback was given (--fallback or LOCALITY_FALLBACK)"
                ))),
            };
        }
    };
    let Some(zone_known) = zone.clone() else {
        return Ok(fallback_route(
            map.fallback.clone(),
            zone_failure.unwrap_or_default(),
            notes,
        ));
    };
    let candidates = match map.candidates(&zone_known, &options.host_key) {
        Ok(list) => list,
        Err(reason) => return Ok(fallback_route(map.fallback.clone(), reason, notes)),
    };
    let healthy: Vec<&String> = candidates
        .iter()
        .filter(|e| !cache.as_ref().is_some_and(|c| c.is_unhealthy(e, options.unhealthy_ttl)))
        .collect();
    let Some(chosen) = healthy.first() else {
        return Ok(fallback_route(
            map.fallback.clone(),
            format!(
                "{} marked unhealthy by an earlier check (for up to {} s)",
                describe_list(&candidates),
                options.unhealthy_ttl.as_secs()
            ),
            notes,
        ));
    };
    let chosen = if options.check {
        // The zone's healthy replicas in this host's order, each within the check timeout: a
        // zone with one dead replica of two still reads in the zone.
        let mut failures = Vec::new();
        let alive = healthy.iter().find(|endpoint| {
            match check::probe(endpoint, options.check_timeout, check_tls(options))
                .and_then(|answer| answer.zone_mismatch(&zone_known).map_or(Ok(()), Err))
            {
                Ok(()) => true,
                Err(problem) => {
                    if let Some(cache) = &cache {
                        cache.mark_unhealthy(endpoint, options.unhealthy_ttl);
                    }
                    failures.push((endpoint.as_str(), problem));
                    false
                }
            }
        });
        match alive {
            Some(endpoint) => {
                // The route is the zone's, but a sibling failed: say so, once each.
                for (failed, problem) in &failures {
                    notes.push(format!(
                        "the zone's replica {failed} failed the check ({problem}), marked unhealthy for {} s; reading from {endpoint}",
                        options.unhealthy_ttl.as_secs()
                    ));
                }
                *endpoint
            }
            None => {
                let reason = match failures.as_slice() {
                    [(endpoint, problem)] => format!("the zone's replica {endpoint} failed the check: {problem}"),
                    many => format!(
                        "every replica of the zone failed the check ({})",
                        many.iter()
                            .map(|(e, p)| format!("{e}: {p}"))
                            .collect::<Vec<_>>()
                            .join("; ")
                    ),
                };
                return Ok(fallback_route(map.fallback.clone(), reason, notes));
            }
        }
    } else {
        *chosen
    };
    Ok(Resolution {
        endpoint: chosen.clone(),
        fallback: map.fallback.clone(),
        route: Route::Zone,
        zone: zone_known.name,
        zone_id: zone_known.id,
        zone_source: source,
        reason: None,
        metadata_requests: requests,
        notes,
    })
}

fn describe_list(endpoints: &[String]) -> String {
    match endpoints {
        [one] => format!("the zone's replica {one} is"),
        many => format!("every replica of the zone ({}) is", many.join(", ")),
    }
}

/// The zone: the flag, the environment, the cache, then the metadata services (remembering
/// the answer for good, or the failure for its TTL).
pub(crate) fn find_zone(options: &Options) -> (Option<Zone>, Option<ZoneSource>, Option<String>, u32) {
    if let Some(zone) = &options.zone_flag {
        return (Some(zone.clone()), Some(ZoneSource::Flag), None, 0);
    }
    if let Some(zone) = &options.zone_env {
        return (Some(zone.clone()), Some(ZoneSource::Env), None, 0);
    }
    if let Some(problem) = &options.zone_env_problem {
        return (None, None, Some(problem.clone()), 0);
    }
    let cache = options.cache_dir.as_deref().map(cache::Cache::open);
    if let Some(cache) = &cache {
        if let Some(entry) = cache.zone() {
            return (Some(entry.zone), Some(ZoneSource::Cache), None, 0);
        }
        if let Some(failure) = cache.failure(options.failure_ttl) {
            let left = (failure.at + failure.ttl.min(options.failure_ttl.as_secs())).saturating_sub(
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs()),
            );
            return (
                None,
                None,
                Some(format!("{} (cached; detection is retried in {left} s)", failure.reason)),
                0,
            );
        }
    }
    match detect::detect(&options.metadata, options.budget) {
        Ok((detected, attempts)) => {
            if let Some(cache) = &cache {
                cache.store_zone(&cache::ZoneEntry {
                    zone: detected.zone.clone(),
                    source: detected.source,
                });
            }
            (Some(detected.zone), Some(detected.source), None, attempts.requests)
        }
        Err(attempts) => {
            let reason = attempts.reason();
            if let Some(cache) = &cache {
                cache.store_failure(&reason, options.failure_ttl);
            }
            (None, None, Some(reason), attempts.requests)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_output_is_quoted_for_eval() {
        let r = Resolution {
            endpoint: "[::1]:6379".into(),
            route: Route::Zone,
            zone: Some("ap-northeast-1a".into()),
            zone_id: None,
            zone_source: Some(ZoneSource::Flag),
            reason: None,
            fallback: "[fd00::5]:6390".into(),
            metadata_requests: 0,
            notes: Vec::new(),
        };
        let env = r.to_env();
        assert!(
            env.contains("export LOCALITY_READ_HOST='::1'\n")
                && env.contains("export LOCALITY_READ_PORT='6379'\n")
                && env.contains("export LOCALITY_FALLBACK='[fd00::5]:6390'\n")
                && env.contains("export LOCALITY_FALLBACK_HOST='fd00::5'\n")
                && env.contains("export LOCALITY_FALLBACK_PORT='6390'\n"),
            "{env}"
        );
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(
            r.to_json(),
            r#"{"endpoint":"[::1]:6379","route":"zone","zone":"ap-northeast-1a","zone_id":null,"zone_source":"flag","reason":null}"#
        );
    }
}

/// How [`run`] prints the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `host:port`.
    Endpoint,
    /// Shell assignments for `eval`.
    Env,
    /// One JSON object.
    Json,
    /// A Valkey GLIDE client's configuration, one JSON object ([`glide`]).
    Glide(glide::ReadFrom),
    /// The same as shell assignments for `eval`.
    GlideEnv(glide::ReadFrom),
}

/// The `locality resolve` command: resolves and prints the answer on `out`; on the fallback
/// route the reason also goes to `err` as one line. Exit status 0 whenever an endpoint is
/// printed, 1 when none can be.
pub fn run(options: &Options, format: Format, out: &mut dyn std::io::Write, err: &mut dyn std::io::Write) -> u8 {
    if let Format::Glide(read_from) | Format::GlideEnv(read_from) = format {
        return match glide::configure(options, read_from) {
            Ok(glide::Configured {
                config,
                warnings,
                unmatched,
            }) => {
                let refused = if options.strict { unmatched.as_ref() } else { None };
                // (Under --strict, the reason is said once, in the refusal.)
                for warning in warnings.iter().filter(|w| Some(*w) != refused) {
                    let _ = writeln!(err, "{} {warning}", crate::prefix("resolve"));
                }
                if let Some(why) = refused {
                    let _ = writeln!(
                        err,
                        "{} --strict: client_az cannot match the nodes' spelling of zones, so nothing is printed ({why})",
                        crate::prefix("resolve")
                    );
                    return 1;
                }
                let text = match format {
                    Format::GlideEnv(_) => config.to_env(),
                    _ => format!("{}\n", config.to_json()),
                };
                match out.write_all(text.as_bytes()) {
                    Ok(()) => 0,
                    Err(_) => 1,
                }
            }
            Err(problem) => {
                let _ = writeln!(err, "{} {problem}", crate::prefix("resolve"));
                1
            }
        };
    }
    match resolve(options) {
        Ok(resolution) => {
            let text = match format {
                Format::Endpoint => format!("{}\n", resolution.endpoint),
                Format::Env => resolution.to_env(),
                Format::Json | Format::Glide(_) | Format::GlideEnv(_) => format!("{}\n", resolution.to_json()),
            };
            for note in &resolution.notes {
                let _ = writeln!(err, "{} {note}", crate::prefix("resolve"));
            }
            if let Some(reason) = &resolution.reason {
                let _ = writeln!(
                    err,
                    "{} using the fallback {}: {reason}",
                    crate::prefix("resolve"),
                    resolution.endpoint
                );
            }
            match out.write_all(text.as_bytes()) {
                Ok(()) => 0,
                Err(_) => 1,
            }
        }
        Err(e) => {
            let _ = writeln!(err, "{} {e}", crate::prefix("resolve"));
            1
        }
    }
}
