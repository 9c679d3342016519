//! Is a cache node alive, and in which zone does it say it is? Connect, send a Redis `PING`, and
//! take any reply as proof: `+PONG`, and also `-NOAUTH` (ElastiCache with AUTH answers so before
//! authentication). Then `INFO server`, best effort: Valkey 8+ reports the node's own
//! `availability_zone` there (its `availability-zone` setting), which lets a client see that a
//! map entry points at a node of another zone. With TLS (ElastiCache in-transit encryption) the
//! handshake comes first. The whole check — name lookup included — runs within one time limit,
//! on a thread of its own.
//!
//! A node may be hostile or broken (one that dribbles its reply a byte at a time): every read
//! and write of a probe waits at most until the probe's absolute deadline, after which the
//! socket is closed; a probe reads at most [`MAX_PROBE_BYTES`] from the socket; at most
//! [`MAX_RUNNING_PROBES`] probes run at once in a process, and an endpoint whose last probe is
//! still running (a name lookup that hangs) is not probed again until it ends.

use std::collections::HashSet;
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::{mpsc, Mutex};
use std::time::{Duration, Instant};

use crate::zone::{is_zone_id, is_zone_name, Zone};

/// The RESP form of `PING`.
const PING: &[u8] = b"*1\r\n$4\r\nPING\r\n";
/// The RESP form of `INFO server`.
const INFO_SERVER: &[u8] = b"*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n";
/// The most of an `INFO server` reply that is read (it is about 1.5 kB).
const INFO_LIMIT: usize = 64 * 1024;

/// The most bytes one probe reads from its socket (a `PING` reply, an `INFO server` reply of
/// at most `INFO_LIMIT` (64 KiB), and a TLS handshake's certificates).
pub const MAX_PROBE_BYTES: usize = 192 * 1024;
/// The most probes running at once in this process; one more is refused at once.
pub const MAX_RUNNING_PROBES: usize = 64;

/// The endpoints being probed now (a probe's thread removes its own when it ends).
static RUNNING: Mutex<Option<HashSet<String>>> = Mutex::new(None);

/// A place among the running probes, for one endpoint, given back when dropped.
struct Running(String);

impl Running {
    /// A place for `endpoint`, unless its last probe is still running or
    /// [`MAX_RUNNING_PROBES`] are.
    fn take(endpoint: &str) -> Result<Running, String> {
        let mut running = RUNNING.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let set = running.get_or_insert_with(HashSet::new);
        if set.contains(endpoint) {
            return Err("its last probe is still running (not started again)".into());
        }
        if set.len() >= MAX_RUNNING_PROBES {
            return Err(format!("{MAX_RUNNING_PROBES} probes are still running (not started)"));
        }
        set.insert(endpoint.to_string());
        Ok(Running(endpoint.to_string()))
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let mut running = RUNNING.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(set) = running.as_mut() {
            set.remove(&self.0);
        }
    }
}

/// A connection whose every read and write ends by `deadline` (then `TimedOut`, and the
/// socket is closed when dropped), reading at most `budget` bytes in all.
struct Deadlined {
    stream: TcpStream,
    deadline: Instant,
    budget: usize,
}

impl Deadlined {
    /// The time left, or `TimedOut` once the deadline has passed.
    fn left(&self) -> std::io::Result<Duration> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(std::io::ErrorKind::TimedOut.into());
        }
        Ok(left)
    }
}

impl Read for Deadlined {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.budget == 0 {
            return Err(std::io::Error::other(format!(
                "the reply is longer than {MAX_PROBE_BYTES} bytes"
            )));
        }
        let left = self.left()?;
        self.stream.set_read_timeout(Some(left))?;
        let at_most = buf.len().min(self.budget);
        let n = self.stream.read(&mut buf[..at_most])?;
        self.budget -= n;
        Ok(n)
    }
}

impl Write for Deadlined {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let left = self.left()?;
        self.stream.set_write_timeout(Some(left))?;
        self.stream.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.stream.flush()
    }
}

/// What a node said about itself.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Probe {
    /// The node's `availability_zone` from `INFO server` (Valkey 8+ with the setting); `None`
    /// when it reports none, does not answer `INFO`, or requires authentication first.
    pub availability_zone: Option<String>,
}

impl Probe {
    /// Why this node must not serve a client in `client`: it reports a zone of the same kind
    /// (name or ID) that differs from the client's. `None` when it agrees or cannot be judged (no
    /// zone reported, the other kind than the client knows, or a label that is neither).
    pub fn zone_mismatch(&self, client: &Zone) -> Option<String> {
        let reported = self.availability_zone.as_deref()?;
        let own = if is_zone_id(reported) {
            client.id.as_deref()
        } else if is_zone_name(reported) {
            client.name.as_deref()
        } else {
            None
        }?;
        (own != reported).then(|| {
            format!(
                "it reports availability zone {reported}, and this client is in {} (the map's entry is wrong)",
                client.describe()
            )
        })
    }
}

/// Pings `endpoint` (`host:port`); `Err` says why it is not alive.
///
/// # Errors
/// A short phrase: `connection refused`, `no answer within 300 ms`, ...
pub fn ping(endpoint: &str, timeout: Duration, tls: Option<Tls<'_>>) -> Result<(), String> {
    probe(endpoint, timeout, tls).map(|_| ())
}

/// Whether `endpoint` accepts a TCP connection within `timeout` (nothing is sent).
///
/// # Errors
/// As [`ping`]: `connection refused`, `no connection within 300 ms`, ...
pub fn accepts(endpoint: &str, timeout: Duration) -> Result<(), String> {
    connect(endpoint, timeout).map(drop)
}

/// TLS for a check: the name to verify an endpoint given as an IP address against (the
/// endpoint's own host name always wins).
#[derive(Debug, Clone, Copy, Default)]
pub struct Tls<'a> {
    /// `--tls-server-name`: the name the certificates of IP-address endpoints carry.
    pub server_name: Option<&'a str>,
}

/// The name the certificate of `endpoint` must carry: its host name, or for an IP address the
/// name given. The sidecar's HAProxy checks the same name.
///
/// # Errors
/// An IP address and no name given: there is nothing to verify the certificate against.
pub fn tls_server_name(endpoint: &str, given: Option<&str>) -> Result<String, String> {
    let (host, _) = crate::split_endpoint(endpoint);
    if host.parse::<std::net::IpAddr>().is_err() {
        return Ok(host.to_string());
    }
    let Some(name) = given else {
        return Err(format!(
            "TLS to {endpoint}: an IP address gives no name to verify the certificate against; pass --tls-server-name NAME (or set LOCALITY_TLS_SERVER_NAME) with the name the nodes' certificates carry"
        ));
    };
    // A DNS name only (it is written into HAProxy's configuration).
    if !crate::zone::is_dns_name(name) {
        return Err(format!(
            "the TLS server name {:?} is not a DNS name",
            name.chars().take(80).collect::<String>()
        ));
    }
    Ok(name.to_string())
}

/// Pings `endpoint` and asks it for its zone, all within `timeout`; `Err` says why it is not
/// alive. The zone question is best effort: a node that answered the `PING` is alive even when
/// `INFO` fails or the time runs out before its answer.
///
/// # Errors
/// A short phrase: `connection refused`, `no answer within 300 ms`, ...
pub fn probe(endpoint: &str, timeout: Duration, tls: Option<Tls<'_>>) -> Result<Probe, String> {
    let tls = match tls {
        Some(tls) => Some(tls_server_name(endpoint, tls.server_name)?),
        None => None,
    };
    let running = Running::take(endpoint)?;
    let (tx, rx) = mpsc::channel();
    let target = endpoint.to_string();
    let started = Instant::now();
    let deadline = started + timeout;
    let spawned = std::thread::Builder::new().name("probe".into()).spawn(move || {
        // The PING's outcome first (so a slow INFO cannot turn an alive node into a dead one),
        // then the zone if it comes in time.
        let report = Report {
            tx,
            running: std::cell::Cell::new(Some(running)),
        };
        probe_blocking(&target, deadline, timeout, tls, &report);
    });
    if let Err(e) = spawned {
        return Err(format!("the probe could not start ({e})"));
    }
    match rx.recv_timeout(timeout) {
        Ok(Err(problem)) => Err(problem),
        Ok(Ok(None)) => {
            let left = timeout.saturating_sub(started.elapsed());
            match rx.recv_timeout(left) {
                Ok(Ok(Some(probe))) => Ok(probe),
                _ => Ok(Probe::default()),
            }
        }
        Ok(Ok(Some(probe))) => Ok(probe),
        Err(_) => Err(format!("no answer within {} ms", timeout.as_millis())),
    }
}

/// How a probe's thread reports: `Ok(None)` once the node answered the PING, then
/// `Ok(Some(probe))`; or one `Err`. The probe's place among the running ones is given back
/// *before* its last word is sent, so a caller that probes the same endpoint again the moment
/// it hears the outcome finds the place free (under load, the thread could still be between
/// sending and ending: "its last probe is still running").
struct Report {
    tx: mpsc::Sender<Result<Option<Probe>, String>>,
    running: std::cell::Cell<Option<Running>>,
}

impl Report {
    /// The node answered the PING; the zone may follow.
    fn alive(&self) {
        let _ = self.tx.send(Ok(None));
    }

    /// The last word: the place is given back first.
    fn finish(&self, outcome: Result<Probe, String>) {
        drop(self.running.take());
        let _ = self.tx.send(outcome.map(Some));
    }
}

fn probe_blocking(endpoint: &str, deadline: Instant, timeout: Duration, tls: Option<String>, report: &Report) {
    let stream = match connect(endpoint, timeout) {
        Ok(stream) => Deadlined {
            stream,
            deadline,
            budget: MAX_PROBE_BYTES,
        },
        Err(problem) => return report.finish(Err(problem)),
    };
    if let Some(name) = tls {
        match tls_connect(&name, stream) {
            Ok(mut tls_stream) => converse(&mut tls_stream, timeout, "TLS: ", report),
            Err(problem) => report.finish(Err(problem)),
        }
    } else {
        let mut stream = stream;
        converse(&mut stream, timeout, "", report);
    }
}

/// The TCP connection, with the time left as its read and write timeouts.
fn connect(endpoint: &str, timeout: Duration) -> Result<TcpStream, String> {
    let started = Instant::now();
    let addr = endpoint
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve the host ({})", e.kind()))?
        .next()
        .ok_or("the host has no address")?;
    let left = |started: Instant| timeout.saturating_sub(started.elapsed()).max(Duration::from_millis(1));
    let stream = TcpStream::connect_timeout(&addr, left(started)).map_err(|e| match e.kind() {
        std::io::ErrorKind::ConnectionRefused => "connection refused".to_string(),
        std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock => {
            format!("no connection within {} ms", timeout.as_millis())
        }
        kind => format!("connection failed ({kind})"),
    })?;
    stream
        .set_read_timeout(Some(left(started)))
        .and_then(|()| stream.set_write_timeout(Some(left(started))))
        .map_err(|e| e.to_string())?;
    Ok(stream)
}

/// `PING`, then `INFO server` on the same connection.
fn converse(stream: &mut (impl Read + Write), timeout: Duration, prefix: &str, report: &Report) {
    let fail = |problem: String| report.finish(Err(format!("{prefix}{problem}")));
    if let Err(e) = stream.write_all(PING).and_then(|()| stream.flush()) {
        return fail(format!("the PING could not be sent ({e})"));
    }
    let mut reply = Vec::new();
    if let Err(e) = read_line(stream, &mut reply, 512) {
        return fail(match e.kind() {
            std::io::ErrorKind::UnexpectedEof => "the connection was closed without a reply".into(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => {
                format!("no reply within {} ms", timeout.as_millis())
            }
            _ => format!("no reply ({e})"),
        });
    }
    report.alive();
    // An error reply (`-NOAUTH`) proves the node alive; INFO would get the same answer.
    let availability_zone = if reply.first() == Some(&b'-') {
        None
    } else {
        info_zone(stream)
    };
    report.finish(Ok(Probe { availability_zone }));
}

/// The `availability_zone` of an `INFO server` reply; `None` on any failure or when empty.
fn info_zone(stream: &mut (impl Read + Write)) -> Option<String> {
    stream.write_all(INFO_SERVER).and_then(|()| stream.flush()).ok()?;
    let mut header = Vec::new();
    read_line(stream, &mut header, 64).ok()?;
    let length: usize = std::str::from_utf8(header.strip_prefix(b"$")?)
        .ok()?
        .trim_end()
        .parse()
        .ok()?;
    if length > INFO_LIMIT {
        return None;
    }
    let mut body = vec![0u8; length];
    stream.read_exact(&mut body).ok()?;
    parse_availability_zone(&String::from_utf8_lossy(&body))
}

/// The `availability_zone:` field of an `INFO` text; `None` when absent or empty.
pub fn parse_availability_zone(info: &str) -> Option<String> {
    info.lines()
        .find_map(|line| line.trim_end().strip_prefix("availability_zone:"))
        .map(str::trim)
        .filter(|zone| !zone.is_empty())
        .map(str::to_string)
}

/// Reads one reply line (up to `\n`, at most `limit` bytes) a byte at a time: nothing past the
/// line is consumed.
fn read_line(stream: &mut impl Read, line: &mut Vec<u8>, limit: usize) -> std::io::Result<()> {
    let mut byte = [0u8; 1];
    loop {
        match stream.read(&mut byte)? {
            0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            _ => {
                line.push(byte[0]);
                if byte[0] == b'\n' || line.len() >= limit {
                    return Ok(());
                }
            }
        }
    }
}

/// The CA file `LOCALITY_TLS_CA_FILE` names, as read.
#[derive(Debug, Clone)]
pub struct CaFile {
    /// Its path.
    pub path: std::path::PathBuf,
    /// Its bytes (PEM).
    pub pem: Vec<u8>,
    /// Warnings (another user could change it; not root, so it is read all the same).
    pub notes: Vec<String>,
}

/// The largest CA file read (bytes).
pub const MAX_CA_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// The CA file `LOCALITY_TLS_CA_FILE` names (`None` when unset or empty). It decides which nodes are believed, so it is opened as the map is (Unix:
/// [`crate::trusted::open_checked`]): running as root, one that another user could have put
/// there is refused.
///
/// # Errors
/// It cannot be read, is not a regular file, is larger than [`MAX_CA_FILE_BYTES`], or (as
/// root) another user could have put it there; the sentence names the variable and the file.
pub fn extra_ca_file() -> Result<Option<CaFile>, String> {
    let Some(path) = std::env::var_os("LOCALITY_TLS_CA_FILE").filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    let path = std::path::PathBuf::from(path);
    let named = |problem: String| format!("LOCALITY_TLS_CA_FILE: {problem}");
    #[cfg(unix)]
    let (file, notes) =
        crate::trusted::open_checked(&path, "the CA file (LOCALITY_TLS_CA_FILE)").map_err(|e| named(e.problem))?;
    #[cfg(not(unix))]
    let (file, notes) = (
        std::fs::File::open(&path).map_err(|e| named(format!("{} cannot be read ({e})", path.display())))?,
        Vec::new(),
    );
    let mut bytes = Vec::new();
    file.take(MAX_CA_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| named(format!("{} cannot be read ({e})", path.display())))?;
    if bytes.len() as u64 > MAX_CA_FILE_BYTES {
        return Err(named(format!(
            "{} is larger than {MAX_CA_FILE_BYTES} bytes",
            path.display()
        )));
    }
    Ok(Some(CaFile {
        path,
        pem: bytes,
        notes,
    }))
}

#[cfg(feature = "tls")]
fn tls_connect(
    name: &str,
    stream: Deadlined,
) -> Result<rustls::StreamOwned<rustls::ClientConnection, Deadlined>, String> {
    use std::sync::Arc;
    let host = name.to_string();
    let mut roots = rustls::RootCertStore::empty();
    let found = rustls_native_certs::load_native_certs();
    for cert in found.certs {
        let _ = roots.add(cert);
    }
    if let Some(ca) = extra_ca_file()? {
        use rustls::pki_types::pem::PemObject;
        for cert in rustls::pki_types::CertificateDer::pem_slice_iter(&ca.pem).flatten() {
            let _ = roots.add(cert);
        }
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::aws_lc_rs::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let name =
        rustls::pki_types::ServerName::try_from(host).map_err(|_| "the host is not a TLS server name".to_string())?;
    let connection = rustls::ClientConnection::new(Arc::new(config), name).map_err(|e| e.to_string())?;
    Ok(rustls::StreamOwned::new(connection, stream))
}

#[cfg(not(feature = "tls"))]
fn tls_connect(_name: &str, _stream: Deadlined) -> Result<Deadlined, String> {
    Err("this build has no TLS (the `tls` feature of locality-resolve)".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn any_reply_is_alive_and_silence_is_not() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            for stream in listener.incoming().take(2) {
                let mut s = stream.unwrap();
                let mut buf = [0u8; 14];
                let _ = s.read_exact(&mut buf);
                let _ = s.write_all(b"-NOAUTH Authentication required.\r\n");
            }
        });
        assert_eq!(ping(&addr.to_string(), Duration::from_millis(500), None), Ok(()));
        // A listener that accepts and never answers.
        let silent = TcpListener::bind("127.0.0.1:0").unwrap();
        let silent_addr = silent.local_addr().unwrap();
        let started = Instant::now();
        let err = ping(&silent_addr.to_string(), Duration::from_millis(200), None).unwrap_err();
        assert!(err.contains("200 ms"), "{err}");
        assert!(started.elapsed() < Duration::from_millis(600));
        drop(silent);
        // Nothing listening.
        let closed = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
        assert_eq!(
            ping(&closed.to_string(), Duration::from_millis(200), None),
            Err("connection refused".into())
        );
    }

    /// The adversary is the scheduler: a probe's thread that has sent its outcome but not yet
    /// ended. Probing the same endpoint again the moment the outcome arrives, 500 times over
    /// with the other core kept busy, always probes (before, under load, some came back "its
    /// last probe is still running").
    #[test]
    fn an_endpoint_can_be_probed_again_as_soon_as_its_outcome_is_known() {
        let closed = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .to_string();
        let busy = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
        let spinners: Vec<_> = (0..2)
            .map(|_| {
                let busy = busy.clone();
                std::thread::spawn(move || {
                    while busy.load(std::sync::atomic::Ordering::Relaxed) {
                        std::hint::spin_loop();
                    }
                })
            })
            .collect();
        let outcomes: Vec<_> = (0..500)
            .map(|_| probe(&closed, Duration::from_millis(500), None).unwrap_err())
            .collect();
        busy.store(false, std::sync::atomic::Ordering::Relaxed);
        for spinner in spinners {
            spinner.join().unwrap();
        }
        let other: Vec<_> = outcomes.iter().filter(|o| *o != "connection refused").collect();
        assert!(other.is_empty(), "{} of 500: {:?}", other.len(), other.first());
    }

    /// A node that answers `PING` and then dribbles a 64 KiB `INFO` reply a byte every 50 ms:
    /// the probe ends at its deadline (before: each byte renewed the read timeout, for hours)
    /// and the node sees the socket closed; and a second probe of the same endpoint while the
    /// first runs is not started.
    #[test]
    fn a_probe_ends_at_its_deadline_whatever_the_node_sends() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let (closed_tx, closed_rx) = mpsc::channel();
        std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let started = Instant::now();
            let mut buf = [0u8; 14];
            s.read_exact(&mut buf).unwrap();
            s.write_all(b"+PONG\r\n").unwrap();
            let mut info = [0u8; INFO_SERVER.len()];
            s.read_exact(&mut info).unwrap();
            s.write_all(b"$65536\r\n").unwrap();
            while s.write_all(b"x").is_ok() && started.elapsed() < Duration::from_secs(30) {
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = closed_tx.send(started.elapsed());
        });
        let started = Instant::now();
        let endpoint = addr.to_string();
        assert_eq!(probe(&endpoint, Duration::from_millis(400), None), Ok(Probe::default()));
        assert!(
            started.elapsed() < Duration::from_millis(700),
            "{:?}",
            started.elapsed()
        );
        // Its socket is closed at the deadline: the node's next writes fail.
        let lived = closed_rx
            .recv_timeout(Duration::from_secs(5))
            .expect("the socket was closed");
        assert!(lived < Duration::from_millis(1200), "{lived:?}");
        // The same endpoint, probed while a probe of it runs, is not probed twice.
        let _running = Running::take("127.0.0.1:1").unwrap();
        let again = probe("127.0.0.1:1", Duration::from_millis(100), None).unwrap_err();
        assert!(again.contains("still running"), "{again}");
    }

    /// A node that answers `PING` and then `INFO server` with an `availability_zone`.
    fn zone_reporting_node(zone: &'static str) -> std::net::SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            for stream in listener.incoming().take(1) {
                let mut s = stream.unwrap();
                let mut buf = [0u8; 14];
                s.read_exact(&mut buf).unwrap();
                s.write_all(b"+PONG\r\n").unwrap();
                let mut info = [0u8; INFO_SERVER.len()];
                s.read_exact(&mut info).unwrap();
                let body = format!("# Server\r\nvalkey_version:9.1.2\r\navailability_zone:{zone}\r\n");
                s.write_all(format!("${}\r\n{body}\r\n", body.len()).as_bytes())
                    .unwrap();
            }
        });
        addr
    }

    #[test]
    fn the_zone_a_node_reports_is_read_and_judged() {
        let addr = zone_reporting_node("ap-northeast-1c");
        let answer = probe(&addr.to_string(), Duration::from_millis(500), None).unwrap();
        assert_eq!(answer.availability_zone.as_deref(), Some("ap-northeast-1c"));
        let client = Zone::parse("ap-northeast-1a").unwrap();
        let reason = answer.zone_mismatch(&client).unwrap();
        assert!(
            reason.contains("ap-northeast-1c") && reason.contains("ap-northeast-1a"),
            "{reason}"
        );
        assert_eq!(answer.zone_mismatch(&Zone::parse("ap-northeast-1c").unwrap()), None);
        // A client known only by its AZ ID cannot judge a name; a label that is neither is not judged.
        assert_eq!(answer.zone_mismatch(&Zone::parse("apne1-az4").unwrap()), None);
        let odd = Probe {
            availability_zone: Some("rack-7".into()),
        };
        assert_eq!(odd.zone_mismatch(&client), None);
        let by_id = Probe {
            availability_zone: Some("apne1-az1".into()),
        };
        assert!(by_id.zone_mismatch(&Zone::parse("apne1-az4").unwrap()).is_some());
        assert_eq!(parse_availability_zone("# Server\r\navailability_zone:\r\n"), None);
        // A node that answers the PING and then nothing: alive, no zone.
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let quiet = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut buf = [0u8; 14];
            s.read_exact(&mut buf).unwrap();
            s.write_all(b"+PONG\r\n").unwrap();
            std::thread::sleep(Duration::from_secs(2));
        });
        assert_eq!(
            probe(&quiet.to_string(), Duration::from_millis(300), None),
            Ok(Probe::default())
        );
    }
}
