//! The sidecar's own metrics: what HAProxy cannot know — this host's zone, the map's version
//! and age, whether the last read of it failed and why, the route chosen and the reason — served
//! as `/metrics` (Prometheus' OpenMetrics text) on `--metrics` (default `127.0.0.1:8405`), beside
//! HAProxy's own `/metrics` on `--stats`. Read-only and unauthenticated, like HAProxy's (in
//! Kubernetes it is on the pod IP, which any pod can reach): no value of the map or of a secret,
//! and no remote text, is exposed. A read error is one word, its class
//! ([`crate::source::ReadError`]: `timeout`, `not_a_map`, `untrusted_file`, … or the AWS error
//! code, `AccessDeniedException`); the sentence (which may name a role's ARN) stays in the
//! sidecar's log. The listener is bounded ([`Listener`]): a flood of connections or an endless
//! request costs one thread and a few MiB whatever its size, a scrape is answered ahead of
//! held connections (the one idle longest makes room), and it accepts again once the
//! descriptors come back.
//!
//! Every series:
//!
//! | metric | labels | value |
//! |---|---|---|
//! | `locality_sidecar_info` | `version`, `zone`, `zone_source` (empty until the zone is known: a sidecar started without it detects it again every `--failure-ttl`), `listen` | 1 |
//! | `locality_sidecar_map_read_interval_seconds` | | `--interval` |
//! | `locality_sidecar_map_reads_total` | `result` (`ok`, `error`) | reads of the map |
//! | `locality_sidecar_map_last_success_timestamp_seconds` | | the last good read (absent before one) |
//! | `locality_sidecar_map_read_error` | `error` (the class) | 1 while the last read failed (absent otherwise) |
//! | `locality_sidecar_map_consecutive_read_failures` | | failed reads since the last good one |
//! | `locality_sidecar_map` | `version` (the source's), `digest` (of the text) | 1 |
//! | `locality_sidecar_map_modified_timestamp_seconds` | | when the source says this version was written |
//! | `locality_sidecar_zone_replicas` | | the zone's replicas the map lists |
//! | `locality_sidecar_route` | `route` (`zone`, `reader`), `reason` | 1 |
//! | `locality_sidecar_route_replicas` | | the zone's replicas reads go to (0: the reader only) |
//! | `locality_sidecar_replicas_left_out` | `reason` (`zone_mismatch`, `no_answer`) | replicas not used |
//!
//! `reason` of `locality_sidecar_route` is `none` on the zone's route, else one of
//! [`super::ReaderCause`]: `map_unreadable`, `zone_unknown`, `no_replica`, `zone_mismatch` (the
//! data plane contradicts the map), `no_answer`.

use std::net::SocketAddr;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use prometheus_client::encoding::text::encode;
use prometheus_client::encoding::{EncodeMetric, MetricEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

use super::Layout;
use crate::source::MapVersion;

/// The longest read error class shown in the `error` label (characters).
pub const MAX_ERROR_CHARS: usize = 64;

/// A set of labels.
type Labels = Vec<(String, String)>;
/// A gauge of seconds (a float).
type Seconds = Gauge<f64, AtomicU64>;

/// The sidecar's metrics, updated as it reads the map and plans the route.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    info: SidecarInfo,
    reads: Family<Labels, Counter>,
    last_success: Family<Labels, Seconds>,
    read_error: Family<Labels, Gauge>,
    failing: Gauge,
    map: Family<Labels, Gauge>,
    modified: Family<Labels, Seconds>,
    zone_replicas: Gauge,
    route: Family<Labels, Gauge>,
    route_replicas: Gauge,
    left_out: Family<Labels, Gauge>,
}

/// Seconds since the epoch.
fn epoch_seconds(time: SystemTime) -> f64 {
    time.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// One label.
fn label(name: &str, value: &str) -> Labels {
    vec![(name.to_string(), value.to_string())]
}

/// A gauge of a count.
fn count(value: usize) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// A read error's class for the label: letters, digits, `_`, `.` and `-`, at most
/// [`MAX_ERROR_CHARS`] (a class is one already; this keeps any other text out).
fn error_class(class: &str) -> String {
    let kept: String = class
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
        .take(MAX_ERROR_CHARS)
        .collect();
    if kept.is_empty() {
        "error".into()
    } else {
        kept
    }
}

/// `locality_sidecar_info`: an info metric whose labels change once, when a zone that was not
/// known at start is detected later (prometheus-client's `Info` is fixed when made).
#[derive(Debug, Clone, Default)]
struct SidecarInfo(Arc<std::sync::RwLock<Vec<(String, String)>>>);

impl EncodeMetric for SidecarInfo {
    fn encode(&self, mut encoder: MetricEncoder<'_>) -> Result<(), std::fmt::Error> {
        let labels = self.0.read().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
        encoder.encode_info(&labels)
    }

    fn metric_type(&self) -> MetricType {
        MetricType::Info
    }
}

impl Metrics {
    /// The metrics of one sidecar: its zone (`zone`, with where it came from; see
    /// [`Metrics::zone_detected`]) and listener; the map is re-read every `interval`.
    pub fn new(zone: Option<String>, zone_source: Option<&str>, listen: SocketAddr, interval: Duration) -> Metrics {
        let mut registry = Registry::default();
        let info = SidecarInfo::default();
        *info.0.write().unwrap_or_else(std::sync::PoisonError::into_inner) = vec![
            ("version".to_string(), env!("CARGO_PKG_VERSION").to_string()),
            ("zone".to_string(), zone.unwrap_or_default()),
            ("zone_source".to_string(), zone_source.unwrap_or_default().to_string()),
            ("listen".to_string(), listen.to_string()),
        ];
        registry.register(
            "locality_sidecar",
            "The sidecar: its version, this host's zone (empty: not known yet) and where it came from, the local listener",
            info.clone(),
        );
        let interval_gauge = Seconds::default();
        interval_gauge.set(interval.as_secs_f64());
        registry.register(
            "locality_sidecar_map_read_interval_seconds",
            "How often the map is re-read (--interval)",
            interval_gauge,
        );
        let mut metrics = Metrics {
            registry,
            info,
            reads: Family::default(),
            last_success: Family::default(),
            read_error: Family::default(),
            failing: Gauge::default(),
            map: Family::default(),
            modified: Family::default(),
            zone_replicas: Gauge::default(),
            route: Family::default(),
            route_replicas: Gauge::default(),
            left_out: Family::default(),
        };
        // Both results from the start, so that a rate over them is defined before the first error.
        for result in ["ok", "error"] {
            let _ = metrics.reads.get_or_create(&label("result", result));
        }
        let registry = &mut metrics.registry;
        registry.register(
            "locality_sidecar_map_reads",
            "Reads of the map, by result",
            metrics.reads.clone(),
        );
        registry.register(
            "locality_sidecar_map_last_success_timestamp_seconds",
            "When the map was last read and parsed (absent before the first good read)",
            metrics.last_success.clone(),
        );
        registry.register(
            "locality_sidecar_map_read_error",
            "1 while the last read of the map failed, with its class: timeout, not_a_map, untrusted_file, ... or the AWS error code (absent when it succeeded; the sidecar's log has the sentence)",
            metrics.read_error.clone(),
        );
        registry.register(
            "locality_sidecar_map_consecutive_read_failures",
            "Failed reads of the map since the last good one (0: the last read succeeded)",
            metrics.failing.clone(),
        );
        registry.register(
            "locality_sidecar_map",
            "The map in use: the source's version (SSM parameter version, Secrets Manager version ID; empty for a file) and a digest of its text",
            metrics.map.clone(),
        );
        registry.register(
            "locality_sidecar_map_modified_timestamp_seconds",
            "When the source says the map in use was written (file modification time, SSM LastModifiedDate, Secrets Manager CreatedDate)",
            metrics.modified.clone(),
        );
        registry.register(
            "locality_sidecar_zone_replicas",
            "The zone's replicas the map lists",
            metrics.zone_replicas.clone(),
        );
        registry.register(
            "locality_sidecar_route",
            "Where reads go: route zone (the zone's replicas, the reader as backup) or reader (every read), and why (none, map_unreadable, zone_unknown, no_replica, zone_mismatch, no_answer)",
            metrics.route.clone(),
        );
        registry.register(
            "locality_sidecar_route_replicas",
            "The zone's replicas reads go to (0: the reader only)",
            metrics.route_replicas.clone(),
        );
        registry.register(
            "locality_sidecar_replicas_left_out",
            "The zone's replicas not used: zone_mismatch (they report another zone), no_answer (silent at the probe)",
            metrics.left_out.clone(),
        );
        metrics
    }

    /// The zone, detected after the sidecar started without it: `zone` and `zone_source` of
    /// `locality_sidecar_info` say it from now on.
    pub fn zone_detected(&self, zone: &str, zone_source: &str) {
        let mut labels = self.info.0.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        for (name, value) in labels.iter_mut() {
            match name.as_str() {
                "zone" => *value = zone.to_string(),
                "zone_source" => *value = zone_source.to_string(),
                _ => {}
            }
        }
    }

    /// A good read of the map, at `when`.
    pub fn map_read(&self, version: &MapVersion, digest: &str, when: SystemTime) {
        self.reads.get_or_create(&label("result", "ok")).inc();
        self.last_success.get_or_create(&Vec::new()).set(epoch_seconds(when));
        self.read_error.clear();
        self.failing.set(0);
        let labels = vec![
            // The source's text: escaped (no raw control, format or separator character in a
            // scrape) and cut.
            (
                "version".to_string(),
                crate::printable::printable_cut(version.version.as_deref().unwrap_or_default(), MAX_ERROR_CHARS),
            ),
            ("digest".to_string(), digest.to_string()),
        ];
        if self.map.get(&labels).is_none() {
            self.map.clear();
            self.map.get_or_create(&labels).set(1);
        }
        match version.modified {
            Some(modified) => {
                self.modified.get_or_create(&Vec::new()).set(epoch_seconds(modified));
            }
            None => self.modified.clear(),
        }
    }

    /// A failed read of the map, of `class` ([`crate::source::ReadError::class`]): the last good
    /// map stays in use.
    pub fn map_failed(&self, class: &str) {
        self.reads.get_or_create(&label("result", "error")).inc();
        self.failing.inc();
        let labels = label("error", &error_class(class));
        if self.read_error.get(&labels).is_none() {
            self.read_error.clear();
            self.read_error.get_or_create(&labels).set(1);
        }
    }

    /// The route planned (at start and at every read of the map).
    pub fn route(&self, layout: &Layout) {
        let seen = &layout.seen;
        let (route, reason) = match seen.cause {
            None => ("zone", "none"),
            Some(cause) => ("reader", cause.as_str()),
        };
        let labels = vec![
            ("route".to_string(), route.to_string()),
            ("reason".to_string(), reason.to_string()),
        ];
        if self.route.get(&labels).is_none() {
            self.route.clear();
            self.route.get_or_create(&labels).set(1);
        }
        self.route_replicas.set(count(layout.replicas.len()));
        self.zone_replicas.set(count(seen.listed));
        self.left_out
            .get_or_create(&label("reason", "zone_mismatch"))
            .set(count(seen.mismatched));
        self.left_out
            .get_or_create(&label("reason", "no_answer"))
            .set(count(seen.silent));
    }

    /// The exposition text (OpenMetrics, ending in `# EOF`).
    pub fn text(&self) -> String {
        let mut text = String::new();
        // Writing to a String does not fail.
        let _ = encode(&mut text, &self.registry);
        text
    }
}

/// The content type of [`Metrics::text`].
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The most connections the metrics listener holds at once. Every connection is accepted; when
/// this many are held, the one idle longest (accepted or answered longest ago, and not being
/// answered) is closed to make room, so a scrape never waits behind held connections: an
/// attacker's idle or slow connections, older than the scrape's, go first. (Places taken before
/// `accept`, in the order connections came, let 160 idle connections reopened as they closed
/// hold scrapes for 19–24 s, and 96 keep-alive clients for 78 s.) An idle connection costs a
/// task and hyper's buffers (about 10 KiB), never a thread.
pub const MAX_CONNECTIONS: usize = 256;
/// The largest request head read (bytes; hyper's smallest buffer is 8 KiB): a longer one is
/// answered 431 and the connection closed.
pub const MAX_HEAD_BYTES: usize = 16 * 1024;
/// The most requests one connection is answered (pipelined or kept alive); the last is
/// answered `Connection: close`. A scraper asks once a scrape interval, so it reconnects after
/// hours; a client pipelining requests reconnects at once, behind the scrapes.
pub const MAX_REQUESTS_PER_CONNECTION: usize = 100;
/// How long a request head may take to arrive, idle keep-alive time included (a scraper sends
/// its request at once, and Prometheus reconnects for its next scrape).
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(2);
/// The longest a connection lives, whatever it does (a client that never reads the answer).
pub const CONNECTION_LIFETIME: Duration = Duration::from_secs(30);
/// The pause after an accept error (out of descriptors: EMFILE, ENFILE; ECONNABORTED) before
/// the next accept: the listener keeps accepting, without spinning.
const ACCEPT_PAUSE: Duration = Duration::from_millis(100);
/// How often the same accept error is said again while it lasts.
const ACCEPT_ERROR_REPEAT: Duration = Duration::from_secs(60);

/// The metrics listener: answers `GET /metrics` until dropped. Two threads whatever the load
/// (one-thread tokio runtimes): one accepts, whatever the connections do, the other answers
/// them, one request per connection per turn and at most [`MAX_REQUESTS_PER_CONNECTION`] on a
/// connection; at most [`MAX_CONNECTIONS`] connections (a new one closes the one idle longest),
/// each with a request head of at most [`MAX_HEAD_BYTES`] that arrives within [`HEAD_TIMEOUT`],
/// and none older than [`CONNECTION_LIFETIME`]; accept errors (out of descriptors) pause it,
/// never end it.
pub struct Listener {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl std::fmt::Debug for Listener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listener").finish_non_exhaustive()
    }
}

/// Starts the listener on `addr`.
///
/// # Errors
/// The address cannot be listened on (in use, not this host's), said with the address.
pub fn serve(addr: SocketAddr, metrics: Arc<Metrics>) -> Result<Listener, String> {
    let opened = std::net::TcpListener::bind(addr).and_then(|listener| {
        listener.set_nonblocking(true)?;
        Ok(listener)
    });
    let listener = opened.map_err(|e| {
        format!("the metrics listener {addr} cannot be opened ({e}); pass --metrics ADDR:PORT or --metrics off")
    })?;
    // Two one-thread runtimes: one accepts and nothing else, so that connections, however busy
    // (pipelined requests), never keep a scrape's connection in the kernel's backlog; the other
    // serves the connections.
    let runtime = |what: &str| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("the metrics listener cannot start its {what} ({e})"))
    };
    let (accepting, serving) = (runtime("accept loop")?, runtime("connections")?);
    let (stop, stopped) = tokio::sync::oneshot::channel();
    let (serving_stop, serving_stopped) = tokio::sync::oneshot::channel::<()>();
    let handle = serving.handle().clone();
    let server = std::thread::Builder::new()
        .name("metrics".into())
        .spawn(move || {
            serving.block_on(async {
                let _ = serving_stopped.await;
            });
        })
        .map_err(|e| format!("the metrics listener cannot start a thread ({e})"))?;
    let thread = std::thread::Builder::new()
        .name("metrics-accept".into())
        .spawn(move || {
            accepting.block_on(accept_loop(listener, metrics, stopped, handle));
            let _ = serving_stop.send(());
            let _ = server.join();
        })
        .map_err(|e| format!("the metrics listener cannot start a thread ({e})"))?;
    Ok(Listener {
        stop: Some(stop),
        thread: Some(thread),
    })
}

/// The connections held: each one's place in the order of eviction, and the way to close it.
#[derive(Default)]
struct Held {
    connections: std::collections::HashMap<u64, Connection>,
}

struct Connection {
    /// When it was accepted or last answered; `None` while a request is being answered.
    idle_since: Option<Instant>,
    /// Requests it was answered.
    answered: usize,
    /// Dropped to close the connection (its task ends when the sender goes).
    _close: tokio::sync::oneshot::Sender<()>,
}

/// How long a new or just-answered connection is spared by [`Held::make_room`] while others
/// can go: a scrape's request arrives with its connection, and is answered within it.
const SPARED_FOR: Duration = Duration::from_millis(1500);

impl Held {
    /// Makes room for one more: closes, first, the connection idle longest past
    /// [`SPARED_FOR`]; else the one answered the most requests (a client pipelining requests:
    /// it reconnects behind the scrapes); else the one idle longest. Whether one was closed.
    fn make_room(&mut self) -> bool {
        if self.connections.len() < MAX_CONNECTIONS {
            return false;
        }
        let now = Instant::now();
        let stale = self
            .connections
            .iter()
            .filter_map(|(id, c)| {
                c.idle_since
                    .filter(|since| now.duration_since(*since) >= SPARED_FOR)
                    .map(|since| (since, *id))
            })
            .min()
            .map(|(_, id)| id);
        let busiest = || {
            self.connections
                .iter()
                .filter(|(_, c)| c.answered > 1)
                .max_by_key(|(id, c)| (c.answered, std::cmp::Reverse(**id)))
                .map(|(id, _)| *id)
        };
        let oldest = || {
            self.connections
                .iter()
                .min_by_key(|(id, c)| (c.idle_since.is_none(), c.idle_since, **id))
                .map(|(id, _)| *id)
        };
        let chosen = stale.or_else(busiest).or_else(oldest);
        chosen.is_some_and(|id| self.connections.remove(&id).is_some())
    }

    fn set_idle(&mut self, id: u64, idle: bool) {
        if let Some(connection) = self.connections.get_mut(&id) {
            connection.idle_since = idle.then(Instant::now);
            if !idle {
                connection.answered += 1;
            }
        }
    }
}

fn lock(held: &std::sync::Mutex<Held>) -> std::sync::MutexGuard<'_, Held> {
    held.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Accepts until `stopped`, within the limits of [`Listener`].
async fn accept_loop(
    listener: std::net::TcpListener,
    metrics: Arc<Metrics>,
    mut stopped: tokio::sync::oneshot::Receiver<()>,
    serving: tokio::runtime::Handle,
) {
    let listener = match tokio::net::TcpListener::from_std(listener) {
        Ok(listener) => listener,
        Err(e) => {
            log(&format!("the metrics listener cannot run ({e})"));
            return;
        }
    };
    let held = Arc::new(std::sync::Mutex::new(Held::default()));
    let mut last_said: Option<(std::io::ErrorKind, Instant)> = None;
    for id in 0u64.. {
        let accepted = tokio::select! {
            _ = &mut stopped => return,
            accepted = listener.accept() => accepted,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(e) => {
                // Said once per kind and minute, not at every retry.
                let said_lately =
                    last_said.is_some_and(|(kind, at)| kind == e.kind() && at.elapsed() < ACCEPT_ERROR_REPEAT);
                if !said_lately {
                    log(&format!(
                        "the metrics listener could not accept a connection ({e}); it pauses and goes on"
                    ));
                    last_said = Some((e.kind(), Instant::now()));
                }
                tokio::select! {
                    _ = &mut stopped => return,
                    () = tokio::time::sleep(ACCEPT_PAUSE) => continue,
                }
            }
        };
        let (close, closed) = tokio::sync::oneshot::channel::<()>();
        let made_room = {
            let mut held = lock(&held);
            let made_room = held.make_room();
            held.connections.insert(
                id,
                Connection {
                    idle_since: Some(Instant::now()),
                    answered: 0,
                    _close: close,
                },
            );
            made_room
        };
        let (metrics, held) = (Arc::clone(&metrics), Arc::clone(&held));
        // (A tokio stream belongs to the runtime that drives it: made on the serving one.)
        let Ok(stream) = stream.into_std() else { continue };
        serving.spawn(async move {
            let Ok(stream) = tokio::net::TcpStream::from_std(stream) else {
                lock(&held).connections.remove(&id);
                return;
            };
            let service = {
                let held = Arc::clone(&held);
                let answered = std::sync::atomic::AtomicUsize::new(0);
                hyper::service::service_fn(move |request| {
                    lock(&held).set_idle(id, false);
                    let count = answered.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
                    let mut response = answer(&request, &metrics);
                    if count >= MAX_REQUESTS_PER_CONNECTION {
                        // Its last: hyper closes the connection after it.
                        response.headers_mut().insert(
                            hyper::header::CONNECTION,
                            hyper::header::HeaderValue::from_static("close"),
                        );
                    }
                    lock(&held).set_idle(id, true);
                    async move {
                        // One request per turn: pipelined requests wait behind every other
                        // connection's, a scrape's included.
                        tokio::task::yield_now().await;
                        Ok::<_, std::convert::Infallible>(response)
                    }
                })
            };
            let connection = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(HEAD_TIMEOUT)
                .max_buf_size(MAX_HEAD_BYTES)
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service);
            tokio::select! {
                // Closed to make room (its sender dropped).
                _ = closed => {}
                _ = tokio::time::timeout(CONNECTION_LIFETIME, connection) => {}
            }
            lock(&held).connections.remove(&id);
        });
        if made_room {
            // Let the closed connection's task run (and its descriptor go) before the next
            // accept: a burst of connections holds at most MAX_CONNECTIONS descriptors.
            tokio::task::yield_now().await;
        }
    }
}

/// The answer to one request: the metrics at `/metrics` (GET, HEAD), 404 elsewhere, 405 for
/// other methods.
fn answer(
    request: &hyper::Request<hyper::body::Incoming>,
    metrics: &Metrics,
) -> hyper::Response<http_body_util::Full<bytes::Bytes>> {
    use hyper::{Method, StatusCode};
    let text = |status: StatusCode, body: String, content_type: &'static str| {
        let mut response = hyper::Response::new(http_body_util::Full::new(bytes::Bytes::from(body)));
        *response.status_mut() = status;
        response.headers_mut().insert(
            hyper::header::CONTENT_TYPE,
            hyper::header::HeaderValue::from_static(content_type),
        );
        response
    };
    let plain = "text/plain; charset=utf-8";
    match (request.method(), request.uri().path()) {
        (&Method::GET | &Method::HEAD, "/metrics") => text(StatusCode::OK, metrics.text(), CONTENT_TYPE),
        (&Method::GET | &Method::HEAD, _) => text(
            StatusCode::NOT_FOUND,
            format!("{} the metrics are at /metrics\n", crate::prefix("sidecar")),
            plain,
        ),
        _ => text(StatusCode::METHOD_NOT_ALLOWED, "only GET and HEAD\n".into(), plain),
    }
}

/// One line on the sidecar's log.
fn log(line: &str) {
    use std::io::Write as _;
    let _ = writeln!(
        std::io::stderr(),
        "{} {}",
        crate::prefix("sidecar"),
        super::one_line(line)
    );
}

impl Drop for Listener {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sidecar::{ReaderCause, Seen};

    fn layout(replicas: &[&str], seen: Seen) -> Layout {
        Layout {
            replicas: replicas.iter().map(|r| r.to_string()).collect(),
            reader: "reader:6379".into(),
            reason: None,
            zone: Some("ap-northeast-1a".into()),
            seen,
        }
    }

    #[test]
    fn one_series_per_state_and_errors_bounded_to_one_line() {
        let metrics = Metrics::new(
            Some("ap-northeast-1a (apne1-az4)".into()),
            Some("env"),
            "127.0.0.1:6379".parse().unwrap(),
            Duration::from_secs(60),
        );
        let start = metrics.text();
        assert!(start.contains("locality_sidecar_info{version=\"0.1.0\",zone=\"ap-northeast-1a (apne1-az4)\",zone_source=\"env\",listen=\"127.0.0.1:6379\"} 1"), "{start}");
        assert!(
            start.contains("locality_sidecar_map_read_interval_seconds 60.0"),
            "{start}"
        );
        assert!(
            start.contains("locality_sidecar_map_reads_total{result=\"error\"} 0"),
            "{start}"
        );
        assert!(
            !start.contains("locality_sidecar_map_last_success_timestamp_seconds "),
            "{start}"
        );
        assert!(start.ends_with("# EOF\n"));

        let version = MapVersion {
            version: Some("7".into()),
            modified: Some(SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000)),
        };
        metrics.map_read(
            &version,
            "00ff",
            SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000),
        );
        metrics.route(&layout(
            &["a1:6379"],
            Seen {
                listed: 2,
                silent: 1,
                ..Seen::default()
            },
        ));
        let good = metrics.text();
        for line in [
            "locality_sidecar_map{version=\"7\",digest=\"00ff\"} 1",
            "locality_sidecar_map_modified_timestamp_seconds 1700000000.0",
            "locality_sidecar_map_last_success_timestamp_seconds 1800000000.0",
            "locality_sidecar_route{route=\"zone\",reason=\"none\"} 1",
            "locality_sidecar_route_replicas 1",
            "locality_sidecar_zone_replicas 2",
            "locality_sidecar_replicas_left_out{reason=\"no_answer\"} 1",
            "locality_sidecar_replicas_left_out{reason=\"zone_mismatch\"} 0",
            "locality_sidecar_map_reads_total{result=\"ok\"} 1",
        ] {
            assert!(good.contains(line), "{line}\n{good}");
        }
        assert!(!good.contains("locality_sidecar_map_read_error{"), "{good}");

        // A failure: one series with the class only; any other text is kept out.
        metrics.map_failed("AccessDeniedException");
        metrics.map_failed("AccessDeniedException");
        metrics.route(&layout(
            &[],
            Seen {
                cause: Some(ReaderCause::ZoneMismatch),
                listed: 1,
                mismatched: 1,
                ..Seen::default()
            },
        ));
        let bad = metrics.text();
        let error_line = bad
            .lines()
            .find(|l| l.starts_with("locality_sidecar_map_read_error{"))
            .unwrap_or_else(|| panic!("{bad}"));
        assert_eq!(
            error_line,
            "locality_sidecar_map_read_error{error=\"AccessDeniedException\"} 1"
        );
        assert_eq!(error_class("User: arn:aws:sts::1:x\n\"}"), "Userarnawssts1x");
        assert_eq!(error_class(&"x".repeat(500)).len(), MAX_ERROR_CHARS);
        assert_eq!(bad.matches("locality_sidecar_map_read_error{").count(), 1, "{bad}");
        assert!(
            bad.contains("locality_sidecar_map_reads_total{result=\"error\"} 2"),
            "{bad}"
        );
        assert!(
            bad.contains("locality_sidecar_map_consecutive_read_failures 2"),
            "{bad}"
        );
        assert!(
            bad.contains("locality_sidecar_route{route=\"reader\",reason=\"zone_mismatch\"} 1"),
            "{bad}"
        );
        assert_eq!(bad.matches("locality_sidecar_route{").count(), 1, "{bad}");
        // The last good map stays described; a good read clears the error.
        assert!(
            bad.contains("locality_sidecar_map{version=\"7\",digest=\"00ff\"} 1"),
            "{bad}"
        );
        metrics.map_read(&MapVersion::default(), "0100", SystemTime::now());
        let again = metrics.text();
        assert!(!again.contains("locality_sidecar_map_read_error{"), "{again}");
        assert!(
            again.contains("locality_sidecar_map_consecutive_read_failures 0"),
            "{again}"
        );
        assert!(
            again.contains("locality_sidecar_map{version=\"\",digest=\"0100\"} 1"),
            "{again}"
        );
        assert!(!again.contains("digest=\"00ff\""), "{again}");
        // Issue 61, item 9: a version from Secrets Manager that forges a series and reorders a
        // line: escaped and cut, one line.
        let forged = MapVersion {
            version: Some(format!(
                "v1\"}} 1\nlocality_sidecar_route{{route=\"zone\"}} 1\u{202e}\u{1b}[2J{}",
                "x".repeat(200)
            )),
            modified: None,
        };
        metrics.map_read(&forged, "0200", SystemTime::now());
        let text = metrics.text();
        let line = text
            .lines()
            .find(|l| l.starts_with("locality_sidecar_map{"))
            .unwrap_or_else(|| panic!("{text}"));
        assert!(!text.contains('\u{202e}') && !text.contains('\u{1b}'), "{text}");
        assert!(
            line.contains("\\\\u{202e}\\\\u{1b}[2J") && line.contains("...\",digest=\"0200\"} 1"),
            "{line}"
        );
        assert_eq!(
            text.lines()
                .filter(|l| l.starts_with("locality_sidecar_route{"))
                .count(),
            1,
            "{text}"
        );
        assert!(
            !again.contains("locality_sidecar_map_modified_timestamp_seconds "),
            "{again}"
        );
    }

    #[test]
    fn the_listener_answers_metrics_and_nothing_else() {
        use std::io::{Read, Write};
        let metrics = Arc::new(Metrics::new(
            None,
            None,
            "127.0.0.1:6379".parse().unwrap(),
            Duration::from_secs(1),
        ));
        let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = probe.local_addr().unwrap();
        drop(probe);
        let listener = serve(addr, Arc::clone(&metrics)).unwrap();
        let get = |request: &str| {
            let mut stream = std::net::TcpStream::connect(addr).unwrap();
            stream.write_all(request.as_bytes()).unwrap();
            let mut answer = String::new();
            stream.read_to_string(&mut answer).unwrap();
            answer
        };
        let answer = get("GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        assert!(answer.contains("application/openmetrics-text"), "{answer}");
        assert!(answer.contains("locality_sidecar_info{"), "{answer}");
        assert!(get("GET /other HTTP/1.1\r\nConnection: close\r\n\r\n").starts_with("HTTP/1.1 404"));
        assert!(
            get("POST /metrics HTTP/1.1\r\nConnection: close\r\nContent-Length: 0\r\n\r\n").starts_with("HTTP/1.1 405")
        );
        // A second listener on the same address is refused with the address named.
        let taken = serve(addr, Arc::clone(&metrics)).unwrap_err();
        assert!(
            taken.contains(&addr.to_string()) && taken.contains("--metrics"),
            "{taken}"
        );
        // Dropped: the port is closed.
        drop(listener);
        let closed = (0..100).any(|_| {
            std::thread::sleep(Duration::from_millis(20));
            std::net::TcpStream::connect(addr).is_err()
        });
        assert!(closed, "closed when dropped");
    }
}
