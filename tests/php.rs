//! The stack the replica map was first made for: PHP on PHP-FPM. The guide's PHP section run as
//! written with Debian's PHP 8.2 — its `php-fpm` with the packaged `www.conf`, `php-cli`,
//! phpredis (`php-redis`) and APCu (`php-apcu`) — asked over FastCGI with `cgi-fcgi`
//! (`libfcgi-bin`), against Valkey 9 nodes whose own `INFO commandstats` count where each read
//! went. `scripts/test` installs all of these.
//!
//! The one stand-in: `php-fpm` on PATH is a two-line script that runs Debian's binary with a
//! global section of this test's (pid file, log and listening port in a temp dir, so that tests
//! run side by side and nothing under /run or /var is touched), which includes Debian's
//! `pool.d/*.conf` as installed and then the guide's pool file.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod common;

use common::fake_metadata::FakeMetadata;
use common::valkey::{command, Node};

const ZONE_A: &str = "ap-northeast-1a";
const ZONE_B: &str = "ap-northeast-1b";
const ZONE_C: &str = "ap-northeast-1c";
const GUIDE: &str = "docs/guides/consuming-the-replica-map.md";

/// The fenced block of language `lang` that comes first after `heading` in the guide.
fn guide_block(heading: &str, lang: &str) -> String {
    let guide = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(GUIDE)).unwrap();
    let after = &guide[guide
        .find(heading)
        .unwrap_or_else(|| panic!("{heading} not in the guide"))..];
    let fence = format!("```{lang}\n");
    let start = after
        .find(&fence)
        .unwrap_or_else(|| panic!("no {lang} block after {heading}"))
        + fence.len();
    after[start..start + after[start..].find("```").unwrap()].to_string()
}

const PHP_HEADING: &str = "## PHP on PHP-FPM (EKS, ECS Fargate)";

/// Debian's PHP-FPM binary (`/usr/sbin/php-fpm8.2` on Debian 12), or `LOCALITY_PHP_FPM`.
fn php_fpm_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("LOCALITY_PHP_FPM") {
        return PathBuf::from(path);
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/sbin")
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("php-fpm") && n.len() > "php-fpm".len())
        })
        .collect();
    found.sort();
    found
        .pop()
        .expect("Debian's php-fpm (/usr/sbin/php-fpmX.Y; scripts/test installs the php-fpm package)")
}

/// The directory of Debian's pool files for that binary (`/etc/php/8.2/fpm/pool.d`).
fn debian_pool_dir(binary: &Path) -> PathBuf {
    let version = binary
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .trim_start_matches("php-fpm");
    let dir = PathBuf::from(format!("/etc/php/{version}/fpm/pool.d"));
    assert!(
        dir.join("www.conf").exists(),
        "{}/www.conf: Debian's default pool",
        dir.display()
    );
    dir
}

/// A directory PHP-FPM's workers (`www-data` when the master runs as root) can read.
fn readable_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    dir
}

fn write(path: &Path, text: &str, mode: u32) {
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(mode)).unwrap();
}

/// What a FastCGI request got back.
#[derive(Debug)]
struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
    elapsed: Duration,
}

impl Response {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A PHP-FPM master started through the test's `php-fpm` on PATH, listening on a loopback port.
struct Fpm {
    child: Child,
    port: u16,
    dir: tempfile::TempDir,
}

impl Fpm {
    /// Lays out `php-fpm` (Debian's binary, this test's global section), `locality` on PATH,
    /// and the pool files: the guide's (`zz-locality.conf`) when `guide_pool` is set, then the
    /// test's own lines (`zzz-test.conf`: the port, and `extra`).
    fn prepare(guide_pool: bool, extra: &str) -> (tempfile::TempDir, u16) {
        let dir = readable_dir();
        let binary = php_fpm_binary();
        let pool_d = dir.path().join("pool.d");
        std::fs::create_dir_all(&pool_d).unwrap();
        let port = common::server_port();
        write(
            &dir.path().join("php-fpm.conf"),
            &format!(
                "[global]\npid = {d}/php-fpm.pid\nerror_log = {d}/php-fpm.log\ninclude = {debian}/*.conf\ninclude = {d}/pool.d/*.conf\n",
                d = dir.path().display(),
                debian = debian_pool_dir(&binary).display()
            ),
            0o644,
        );
        if guide_pool {
            write(
                &pool_d.join("zz-locality.conf"),
                &guide_block(PHP_HEADING, "ini"),
                0o644,
            );
        }
        write(
            &pool_d.join("zzz-test.conf"),
            &format!("[www]\nlisten = 127.0.0.1:{port}\n{extra}\n"),
            0o644,
        );
        let bin = dir.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        write(
            &bin.join("php-fpm"),
            &format!(
                "#!/bin/sh\nexec '{}' -y '{}/php-fpm.conf' \"$@\"\n",
                binary.display(),
                dir.path().display()
            ),
            0o755,
        );
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_locality"), bin.join("locality")).unwrap();
        (dir, port)
    }

    /// `cmd` (which ends by exec'ing `php-fpm`), until PHP-FPM accepts on its port.
    fn start(mut cmd: Command, dir: tempfile::TempDir, port: u16) -> Fpm {
        let path = format!(
            "{}:{}",
            dir.path().join("bin").display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let child = cmd
            .env("PATH", path)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.path().join("stderr")).unwrap())
            .spawn()
            .unwrap();
        let mut fpm = Fpm { child, port, dir };
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Ok(Some(status)) = fpm.child.try_wait() {
                panic!("PHP-FPM ended ({status}) before it listened:\n{}", fpm.logs());
            }
            assert!(Instant::now() < deadline, "PHP-FPM did not listen:\n{}", fpm.logs());
            std::thread::sleep(Duration::from_millis(20));
        }
        fpm
    }

    /// PHP-FPM's log and the process's stderr.
    fn logs(&self) -> String {
        let read = |name: &str| std::fs::read_to_string(self.dir.path().join(name)).unwrap_or_default();
        format!("stderr:\n{}\nphp-fpm.log:\n{}", read("stderr"), read("php-fpm.log"))
    }

    /// Copies `script` (byte for byte) where the workers can read it.
    fn install(&self, script: &Path) -> PathBuf {
        let to = self.dir.path().join(script.file_name().unwrap());
        std::fs::copy(script, &to).unwrap();
        std::fs::set_permissions(&to, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
        to
    }

    /// A GET of `script?query` through `cgi-fcgi`, as a web server would send it.
    fn get(&self, script: &Path, query: &str) -> Response {
        self.get_with(script, query, &[])
    }

    /// [`Fpm::get`] with more FastCGI parameters (`REQUEST_URI` for a router).
    fn get_with(&self, script: &Path, query: &str, params: &[(&str, &str)]) -> Response {
        let started = Instant::now();
        let out = Command::new("cgi-fcgi")
            .args(["-bind", "-connect", &format!("127.0.0.1:{}", self.port)])
            .env_clear()
            .envs(params.iter().copied())
            .env("SCRIPT_FILENAME", script)
            .env(
                "SCRIPT_NAME",
                format!("/{}", script.file_name().unwrap().to_str().unwrap()),
            )
            .env("REQUEST_METHOD", "GET")
            .env("QUERY_STRING", query)
            .env("SERVER_PROTOCOL", "HTTP/1.1")
            .output()
            .expect("cgi-fcgi (Debian's libfcgi-bin; scripts/test installs it)");
        let elapsed = started.elapsed();
        let text = String::from_utf8_lossy(&out.stdout).replace("\r\n", "\n");
        let (head, body) = text
            .split_once("\n\n")
            .unwrap_or_else(|| panic!("no FastCGI response: {text:?}\n{}", self.logs()));
        let headers: Vec<(String, String)> = head
            .lines()
            .filter_map(|l| l.split_once(':'))
            .map(|(n, v)| (n.trim().to_string(), v.trim().to_string()))
            .collect();
        let status = headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("Status"))
            .and_then(|(_, v)| v.split_whitespace().next()?.parse().ok())
            .unwrap_or(200);
        Response {
            status,
            headers,
            body: body.to_string(),
            elapsed,
        }
    }
}

impl Drop for Fpm {
    fn drop(&mut self) {
        // SIGTERM: the master stops its workers, then itself (SIGKILL would leave them behind).
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The variables the guide's entrypoint exports, as a worker's `getenv()` returns them
/// (`false` when absent), as JSON.
const ENV_PHP: &str = r#"<?php
header('Content-Type: application/json');
$names = ['LOCALITY_READ_ENDPOINT', 'LOCALITY_READ_HOST', 'LOCALITY_READ_PORT', 'LOCALITY_FALLBACK',
          'LOCALITY_FALLBACK_HOST', 'LOCALITY_FALLBACK_PORT', 'LOCALITY_ZONE', 'LOCALITY_ROUTE', 'LOCALITY_GLIDE'];
echo json_encode(array_combine($names, array_map('getenv', $names)));
"#;

/// The guide's PHP-FPM entrypoint and pool file, as written (dash runs the entrypoint, which
/// `exec`s Debian's php-fpm), with the map in SSM (moto): a worker's `getenv()` returns the
/// zone's replica, the reader as `LOCALITY_FALLBACK`, the zone and the GLIDE JSON, whether the
/// zone is given as on EKS (`LOCALITY_ZONE`, the downward API) or found as on ECS Fargate (task
/// metadata v4, a loopback fake of `/task`). The adversary is PHP-FPM's default: Debian's
/// `www.conf` alone (`clear_env = yes`) gives the workers nothing (`false`), the report that
/// started this section.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_guides_php_fpm_entrypoint_hands_every_worker_the_endpoint() {
    let moto = common::moto::Moto::start();
    let ssm = aws_sdk_ssm::Client::new(&moto.config().await);
    let ecs = FakeMetadata::start(ZONE_A, "apne1-az4").await;
    // Nodes on loopback ports nothing listens on: `--format glide` asks one how it spells its
    // zone, is refused at once, and uses the map's spelling.
    let [replica_a, replica_c, primary] = [0; 3].map(|_| format!("127.0.0.1:{}", common::server_port()));
    let reader = "reader.example:6379";
    let map = serde_json::json!({
        "version": 1,
        "fallback": reader,
        "zones": {ZONE_A: &replica_a, ZONE_C: &replica_c},
        "nodes": [
            {"endpoint": &primary, "role": "primary", "zone": ZONE_C},
            {"endpoint": &replica_a, "role": "replica", "zone": ZONE_A},
            {"endpoint": &replica_c, "role": "replica", "zone": ZONE_C},
        ],
    });
    ssm.put_parameter()
        .name("/prod/cache/replica-map")
        .value(map.to_string())
        .r#type(aws_sdk_ssm::types::ParameterType::String)
        .send()
        .await
        .unwrap();
    let entrypoint = guide_block(PHP_HEADING, "sh");
    let ecs_uri = format!("{}/ecs/v4", ecs.url());
    let endpoint = moto.endpoint.clone();
    tokio::task::spawn_blocking(move || {
        for (case, zone_env, guide_pool) in [
            ("EKS (LOCALITY_ZONE)", Some(("LOCALITY_ZONE", ZONE_A.to_string())), true),
            (
                "ECS Fargate (task metadata v4)",
                Some(("ECS_CONTAINER_METADATA_URI_V4", ecs_uri.clone())),
                true,
            ),
            (
                "Debian's www.conf alone",
                Some(("LOCALITY_ZONE", ZONE_A.to_string())),
                false,
            ),
        ] {
            let (dir, port) = Fpm::prepare(guide_pool, "");
            write(&dir.path().join("entrypoint.sh"), &entrypoint, 0o755);
            write(&dir.path().join("env.php"), ENV_PHP, 0o644);
            let mut cmd = Command::new("dash");
            cmd.arg(dir.path().join("entrypoint.sh"))
                .env_clear()
                .env("HOME", dir.path())
                .env("XDG_RUNTIME_DIR", dir.path())
                .env("AWS_ACCESS_KEY_ID", "testing")
                .env("AWS_SECRET_ACCESS_KEY", "testing")
                .env("AWS_REGION", "ap-northeast-1")
                .env("AWS_ENDPOINT_URL", &endpoint)
                .env("AWS_EC2_METADATA_DISABLED", "true")
                .env("LOCALITY_FALLBACK", reader);
            if let Some((name, value)) = &zone_env {
                cmd.env(name, value);
            }
            let env_php = dir.path().join("env.php");
            let fpm = Fpm::start(cmd, dir, port);
            let response = fpm.get(&env_php, "");
            assert_eq!(response.status, 200, "{case}: {response:?}\n{}", fpm.logs());
            let seen: serde_json::Value = serde_json::from_str(&response.body)
                .unwrap_or_else(|e| panic!("{case}: {e}: {}\n{}", response.body, fpm.logs()));
            eprintln!("{case}: a worker's getenv(): {seen}");
            if !guide_pool {
                for (name, value) in seen.as_object().unwrap() {
                    assert_eq!(value, &serde_json::Value::Bool(false), "{case}: {name}");
                }
                continue;
            }
            let (host, port_a) = replica_a.split_once(':').unwrap();
            for (name, expected) in [
                ("LOCALITY_READ_ENDPOINT", replica_a.as_str()),
                ("LOCALITY_READ_HOST", host),
                ("LOCALITY_READ_PORT", port_a),
                ("LOCALITY_FALLBACK", reader),
                ("LOCALITY_FALLBACK_HOST", "reader.example"),
                ("LOCALITY_FALLBACK_PORT", "6379"),
                ("LOCALITY_ZONE", ZONE_A),
                ("LOCALITY_ROUTE", "zone"),
            ] {
                assert_eq!(seen[name], expected, "{case}: {name}\n{}", fpm.logs());
            }
            let glide: serde_json::Value =
                serde_json::from_str(seen["LOCALITY_GLIDE"].as_str().unwrap()).expect("the GLIDE JSON, intact");
            assert_eq!(glide["client_az"], ZONE_A, "{case}");
            assert_eq!(glide["read_from"], "AZAffinity", "{case}");
            assert_eq!(
                glide["addresses"].as_array().map(Vec::len),
                Some(3),
                "{case}: every node"
            );
        }
        assert!(
            ecs.take_requests().iter().any(|r| r == "GET /ecs/v4/task"),
            "the Fargate case asked task metadata"
        );
    })
    .await
    .unwrap();
}

/// A loopback port whose connections time out: a listener that never accepts, its queue full
/// (Linux then drops new SYNs, so a connect waits for its own timeout).
struct BlackHole {
    _listener: TcpListener,
    _queued: Vec<TcpStream>,
    endpoint: String,
}

impl BlackHole {
    fn new() -> BlackHole {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let mut queued = Vec::new();
        loop {
            match TcpStream::connect_timeout(&addr, Duration::from_millis(200)) {
                Ok(stream) => queued.push(stream),
                Err(_) => break,
            }
            assert!(queued.len() < 10_000, "the accept queue never filled");
        }
        BlackHole {
            _listener: listener,
            _queued: queued,
            endpoint: addr.to_string(),
        }
    }
}

/// `php read.php KEY` with only these variables (and PATH).
fn php_cli(script: &Path, key: &str, env: &[(&str, &str)]) -> (String, String, Duration) {
    let started = Instant::now();
    let out = Command::new("php")
        .arg(script)
        .arg(key)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .envs(env.iter().copied())
        .output()
        .expect("php (Debian's php-cli; scripts/test installs it)");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        started.elapsed(),
    )
}

/// Waits until `node` holds `key` (replication), without a GET (which the counts would see).
fn wait_for_key(node: &Node, key: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(mut s) = TcpStream::connect(node.endpoint()) {
            if command(&mut s, &["EXISTS", key]).is_ok_and(|r| r.starts_with(b":1")) {
                return;
            }
        }
        assert!(Instant::now() < deadline, "{key} did not reach {}", node.endpoint());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `examples/php/read.php`, the file the guide shows verbatim, run as written with phpredis
/// against Valkey nodes (the zone's replica, and a replica of another zone standing for the
/// reader endpoint), where each read went counted by the nodes' `cmdstat_get`:
/// - `php read.php KEY`: on the replica; the replica killed: the same run reads from the reader
///   (connection refused); a replica whose connects time out: the reader after one 300 ms wait;
/// - under PHP-FPM (one worker, so its persistent connection is reused): on the replica; the
///   replica killed between two requests: the second answered from the reader, status 200 and
///   `X-Locality-Route: fallback`, not an error; the replica back: the worker keeps to the reader
///   while APCu remembers the failure, and reads from the replica again after PHP-FPM restarts
///   (APCu emptied); a replica whose connects time out costs the first request 300 ms and the
///   next none.
#[test]
fn read_php_reads_in_the_zone_and_from_the_reader_when_the_replica_fails() {
    let read_php = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/php/read.php");
    assert_eq!(
        guide_block("### Plan A: the zone's replica with phpredis", "php"),
        std::fs::read_to_string(&read_php).unwrap(),
        "the guide shows examples/php/read.php verbatim"
    );
    let primary = Node::start(ZONE_C, None);
    let mut replica = Node::start(ZONE_A, Some(primary.port));
    let reader = Node::start(ZONE_B, Some(primary.port));
    const KEY: &str = "session:42";
    const VALUE: &str = "cart=3 items";
    let mut p = TcpStream::connect(primary.endpoint()).unwrap();
    command(&mut p, &["SET", KEY, VALUE]).unwrap();
    wait_for_key(&replica, KEY);
    wait_for_key(&reader, KEY);
    let gets = |replica: &Node| [replica.gets(), reader.gets()];
    let (replica_at, reader_at) = (replica.endpoint(), reader.endpoint());
    let env = |read: &str| {
        [
            ("LOCALITY_READ_ENDPOINT", read.to_string()),
            ("LOCALITY_FALLBACK", reader_at.clone()),
        ]
    };
    let cli = |read: &str| {
        let vars = env(read);
        let pairs: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
        php_cli(&read_php, KEY, &pairs)
    };

    // The command line.
    let before = gets(&replica);
    let (out, err, _) = cli(&replica_at);
    assert_eq!((out.as_str(), err.as_str()), (format!("{VALUE}\n").as_str(), ""));
    assert_eq!(diff(before, gets(&replica)), [1, 0], "on the zone's replica");
    replica.kill();
    let before = gets(&replica);
    let (out, err, _) = cli(&replica_at);
    assert_eq!(out, format!("{VALUE}\n"), "{err}");
    assert!(
        err.contains(&format!(
            "read.php: {replica_at} failed (Connection refused): reading from the fallback"
        )),
        "{err}"
    );
    assert_eq!(diff(before, gets(&replica)), [0, 1], "on the reader");
    let hole = BlackHole::new();
    let before = gets(&replica);
    let (out, err, elapsed) = cli(&hole.endpoint);
    eprintln!("command line, a replica that times out: {elapsed:?}");
    assert_eq!(out, format!("{VALUE}\n"), "{err}");
    assert!(err.contains("timed out"), "{err}");
    assert!(
        elapsed >= Duration::from_millis(250) && elapsed < Duration::from_secs(3),
        "{elapsed:?}"
    );
    assert_eq!(diff(before, gets(&replica)), [0, 1]);
    replica.restart();
    wait_for_key(&replica, KEY);

    // PHP-FPM, one worker, persistent connections, APCu.
    let one_worker = "pm = static\npm.max_children = 1";
    let start_fpm = |read: &str| {
        let (dir, port) = Fpm::prepare(true, one_worker);
        let mut cmd = Command::new(dir.path().join("bin/php-fpm"));
        cmd.arg("-F").env_clear().envs(env(read));
        let fpm = Fpm::start(cmd, dir, port);
        let script = fpm.install(&read_php);
        (fpm, script)
    };
    let query = format!("key={}", KEY.replace(':', "%3A"));
    let (fpm, script) = start_fpm(&replica_at);
    let apcu = Command::new(php_fpm_binary()).arg("-m").output().unwrap();
    assert!(
        String::from_utf8_lossy(&apcu.stdout).contains("apcu"),
        "APCu is loaded in PHP-FPM (php-apcu)"
    );
    let before = gets(&replica);
    let r = fpm.get(&script, &query);
    assert_eq!(
        (r.status, r.body.as_str(), r.header("X-Locality-Route")),
        (200, format!("{VALUE}\n").as_str(), Some("zone")),
        "{}",
        fpm.logs()
    );
    assert_eq!(diff(before, gets(&replica)), [1, 0]);
    replica.kill();
    let before = gets(&replica);
    let r = fpm.get(&script, &query);
    assert_eq!(
        (r.status, r.body.as_str(), r.header("X-Locality-Route")),
        (200, format!("{VALUE}\n").as_str(), Some("fallback")),
        "the worker's persistent connection died with the replica\n{}",
        fpm.logs()
    );
    assert_eq!(diff(before, gets(&replica)), [0, 1]);
    replica.restart();
    wait_for_key(&replica, KEY);
    let before = gets(&replica);
    let r = fpm.get(&script, &query);
    assert_eq!(
        (r.status, r.header("X-Locality-Route")),
        (200, Some("fallback")),
        "APCu remembers the failure"
    );
    assert_eq!(
        diff(before, gets(&replica)),
        [0, 1],
        "the replica is not asked while it is marked"
    );
    drop(fpm);
    let (fpm, script) = start_fpm(&replica_at);
    let before = gets(&replica);
    let r = fpm.get(&script, &query);
    assert_eq!(
        (r.status, r.header("X-Locality-Route")),
        (200, Some("zone")),
        "{}",
        fpm.logs()
    );
    assert_eq!(diff(before, gets(&replica)), [1, 0], "back on the replica");
    drop(fpm);
    let (fpm, script) = start_fpm(&hole.endpoint);
    let before = gets(&replica);
    let first = fpm.get(&script, &query);
    let second = fpm.get(&script, &query);
    eprintln!(
        "PHP-FPM, a replica that times out: first request {:?}, second {:?}",
        first.elapsed, second.elapsed
    );
    for r in [&first, &second] {
        assert_eq!(
            (r.status, r.body.as_str(), r.header("X-Locality-Route")),
            (200, format!("{VALUE}\n").as_str(), Some("fallback"))
        );
    }
    assert!(first.elapsed >= Duration::from_millis(280), "{:?}", first.elapsed);
    assert!(
        second.elapsed < first.elapsed && second.elapsed < Duration::from_millis(280),
        "the second request skips the marked replica: {:?}",
        second.elapsed
    );
    assert_eq!(diff(before, gets(&replica)), [0, 2]);
}

fn diff(before: [u64; 2], after: [u64; 2]) -> [u64; 2] {
    [after[0] - before[0], after[1] - before[1]]
}

/// Stand-ins for GLIDE for PHP's two classes: the constructor parameters of
/// `valkey-glide-php` 1.1 (`ValkeyGlide::__construct` and `ValkeyGlideCluster::__construct`,
/// transcribed from its published stubs: PHP refuses a named argument these do not have) and its
/// read strategy constants; each records what it was given.
const GLIDE_STANDINS: &str = r#"<?php
class ValkeyGlide {
    public const READ_FROM_PRIMARY = 0;
    public const READ_FROM_PREFER_REPLICA = 1;
    public const READ_FROM_AZ_AFFINITY = 2;
    public const READ_FROM_AZ_AFFINITY_REPLICAS_AND_PRIMARY = 3;
    public array $given;
    public function __construct(?array $addresses = null, bool $use_tls = false, ?array $credentials = null,
        int $read_from = 0, ?int $request_timeout = null, ?array $reconnect_strategy = null,
        ?int $database_id = null, ?string $client_name = null, ?string $client_az = null,
        ?array $advanced_config = null, ?bool $lazy_connect = null, mixed $context = null) {
        $this->given = compact('addresses', 'use_tls', 'read_from', 'client_az', 'request_timeout');
    }
}
class ValkeyGlideCluster {
    public array $given;
    public function __construct(?string $name = null, ?array $seeds = null, ?float $timeout = null,
        ?float $read_timeout = null, ?bool $persistent = null, mixed $auth = null, mixed $context = null,
        ?array $addresses = null, ?bool $use_tls = null, ?array $credentials = null, ?int $read_from = null,
        ?int $request_timeout = null, ?array $reconnect_strategy = null, ?string $client_name = null,
        ?int $periodic_checks = null, ?string $client_az = null, ?array $advanced_config = null,
        ?bool $lazy_connect = null, ?int $database_id = null) {
        $this->given = compact('addresses', 'use_tls', 'read_from', 'client_az', 'request_timeout');
    }
}
"#;

/// The guide's GLIDE for PHP snippet, as written, run by PHP 8.2 against the stand-ins with
/// `LOCALITY_GLIDE` = what `locality resolve --format glide` printed: standalone (every node)
/// and cluster mode (the configuration endpoint), AZ affinity with and without the primary,
/// TLS; each class is given exactly the addresses, TLS flag, read strategy and `client_az` the
/// JSON holds. `AZAffinityAllNodes`, which GLIDE for PHP 1.1 lacks, ends in the snippet's
/// exception naming the release that has it, never in a client that reads from the primary.
#[test]
fn the_glide_php_snippet_is_given_what_resolve_prints() {
    let dir = tempfile::tempdir().unwrap();
    let snippet = dir.path().join("glide_connect.php");
    std::fs::write(&snippet, guide_block("### Plan B: Valkey GLIDE for PHP", "php")).unwrap();
    let standins = dir.path().join("standins.php");
    std::fs::write(&standins, GLIDE_STANDINS).unwrap();
    let [p, a, c] = [0; 3].map(|_| format!("127.0.0.1:{}", common::server_port()));
    let nodes = serde_json::json!([
        {"endpoint": &p, "role": "primary", "zone": ZONE_C, "shard": "0001"},
        {"endpoint": &a, "role": "replica", "zone": ZONE_A, "shard": "0001"},
        {"endpoint": &c, "role": "replica", "zone": ZONE_C, "shard": "0001"},
    ]);
    let standalone = dir.path().join("standalone.json");
    std::fs::write(
        &standalone,
        serde_json::json!({"version": 1, "fallback": &c, "zones": {ZONE_A: &a, ZONE_C: &c}, "nodes": &nodes})
            .to_string(),
    )
    .unwrap();
    let cluster = dir.path().join("cluster.json");
    let configuration = format!("127.0.0.1:{}", common::server_port());
    std::fs::write(&cluster, serde_json::json!({"version": 1, "fallback": &configuration, "zones": {}, "nodes": &nodes, "configuration_endpoint": &configuration}).to_string()).unwrap();
    let driver = format!(
        "require '{}'; require '{}'; $c = glide_connect(); echo json_encode(['class' => get_class($c), 'given' => $c->given]);",
        standins.display(),
        snippet.display()
    );
    for (map, extra, class, read_from) in [
        (&standalone, &[][..], "ValkeyGlide", 2),
        (
            &standalone,
            &[
                "--read-from",
                "az-affinity-replicas-and-primary",
                "--tls",
                "--tls-server-name",
                "sessions.example",
            ][..],
            "ValkeyGlide",
            3,
        ),
        (&cluster, &[][..], "ValkeyGlideCluster", 2),
        (&standalone, &["--read-from", "az-affinity-all-nodes"][..], "", 0),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_locality"))
            .args([
                "resolve",
                "--format",
                "glide",
                "--zone",
                ZONE_A,
                "--check-timeout",
                "200ms",
                "--map",
            ])
            .arg(map)
            .args(extra)
            .env("AWS_EC2_METADATA_DISABLED", "true")
            .env("XDG_RUNTIME_DIR", dir.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let printed = String::from_utf8(out.stdout).unwrap();
        let conf: serde_json::Value = serde_json::from_str(printed.trim()).unwrap();
        let run = Command::new("php")
            .args(["-r", &driver])
            .env("LOCALITY_GLIDE", printed.trim())
            .output()
            .unwrap();
        let (stdout, stderr) = (
            String::from_utf8_lossy(&run.stdout),
            String::from_utf8_lossy(&run.stderr),
        );
        if class.is_empty() {
            assert!(!run.status.success(), "{stdout}");
            assert!(
                format!("{stdout}{stderr}").contains("GLIDE for PHP has no read strategy AZAffinityAllNodes (AZAffinityAllNodes is in valkey-glide for Python 2.5.3 and later)"),
                "{stdout}{stderr}"
            );
            continue;
        }
        assert!(run.status.success(), "{stdout}{stderr}");
        let got: serde_json::Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}{stderr}"));
        eprintln!("{}: {got}", conf);
        assert_eq!(got["class"], class, "{conf}");
        assert_eq!(got["given"]["addresses"], conf["addresses"], "{conf}");
        assert_eq!(got["given"]["use_tls"], conf["use_tls"]);
        assert_eq!(got["given"]["client_az"], conf["client_az"]);
        assert_eq!(got["given"]["client_az"], ZONE_A);
        assert_eq!(got["given"]["read_from"], read_from);
        assert_eq!(got["given"]["request_timeout"], 500);
        if class == "ValkeyGlideCluster" {
            let (host, port) = configuration.split_once(':').unwrap();
            assert_eq!(
                conf["addresses"],
                serde_json::json!([{"host": host, "port": port.parse::<u16>().unwrap()}])
            );
        } else {
            assert_eq!(conf["addresses"].as_array().unwrap().len(), 3, "every node");
        }
    }
}

/// Copies the tree at `from` into `to` (created), files 0644 and folders 0755, so that PHP-FPM's
/// workers (`www-data`) read them.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    std::fs::set_permissions(to, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
            std::fs::set_permissions(&target, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
        }
    }
}

/// A folder the workers may write (Laravel's `bootstrap/cache` and `storage`).
fn writable(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::set_permissions(dir, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
}

/// Laravel, served for real: Debian's Laravel 8.83 (`php-laravel-framework`,
/// `php-illuminate-redis`) under Debian's PHP-FPM, with `examples/laravel/` as a team copies it
/// (`config/database.php`'s `redis` part, `config/cache.php`'s `zone` store, the connector, the
/// connection and the provider) into a small application (`tests/fixtures/laravel-app/`: its
/// front controller, `config/app.php` and four routes). The entrypoint resolves the map (the
/// zone's replica; the reader endpoint given as `[::1]:PORT`, the IPv6 trap) and execs PHP-FPM
/// with the guide's pool file and two workers. Valkey nodes count where each GET went:
/// - the worker's configuration: the zone's host and an integer port, the reader's host bare
///   (`::1`, which phpredis takes; before, `[[::1]]` failed to parse);
/// - `Cache::store('zone')->put()` lands on the primary; `Cache::store('zone')->get()` and
///   `Redis::connection('zone')->get()` on the zone's replica;
/// - the replica SIGKILLed: 100 requests of both kinds, every one 200 with its value, each read
///   on the reader (`X-Locality-Route: fallback`), the replica's failure logged once (APCu);
/// - a master without `LOCALITY_READ_*` (the pool hands the workers `""`): the configuration
///   falls back to the reader's host and integer port, never `""`, and reads are served.
#[test]
fn laravel_reads_in_the_zone_and_from_the_reader_when_the_replica_is_killed() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    assert_eq!(
        guide_block("### Laravel: `Redis::connection('zone')`", "php"),
        std::fs::read_to_string(root.join("examples/laravel/config/database.php")).unwrap(),
        "the guide shows examples/laravel/config/database.php verbatim"
    );
    let primary = Node::start(ZONE_C, None);
    let mut replica = Node::start(ZONE_A, Some(primary.port));
    let reader = Node::start_ipv6(ZONE_B, Some(primary.port));
    let pool = "pm = static\npm.max_children = 2\nenv[REDIS_HOST] = $REDIS_HOST\nenv[REDIS_PORT] = $REDIS_PORT\ncatch_workers_output = yes\ndecorate_workers_output = no";
    let replica_at = replica.endpoint();
    let start = |resolve: bool| {
        let (dir, port) = Fpm::prepare(true, pool);
        let app = dir.path().join("laravel");
        copy_tree(&root.join("tests/fixtures/laravel-app"), &app);
        copy_tree(&root.join("examples/laravel"), &app);
        writable(&app.join("bootstrap/cache"));
        writable(&app.join("storage/framework"));
        let map = dir.path().join("replica-map.json");
        write(
            &map,
            &serde_json::json!({
                "version": 1,
                "fallback": format!("[::1]:{}", reader.port),
                "zones": {ZONE_A: &replica_at},
            })
            .to_string(),
            0o644,
        );
        let entrypoint = if resolve {
            format!(
                "resolved=$(locality resolve --map '{}' --zone {ZONE_A} --format env) || exit\neval \"$resolved\"\nexec php-fpm -F\n",
                map.display()
            )
        } else {
            "exec php-fpm -F\n".to_string()
        };
        let mut cmd = Command::new("dash");
        cmd.args(["-c", &entrypoint])
            .env_clear()
            .env("HOME", dir.path())
            .env("XDG_RUNTIME_DIR", dir.path())
            .env("AWS_EC2_METADATA_DISABLED", "true")
            .env("REDIS_HOST", "127.0.0.1")
            .env("REDIS_PORT", primary.port.to_string());
        if !resolve {
            // What an orchestrator sets when resolve does not run: the reader alone.
            cmd.env("LOCALITY_FALLBACK_HOST", "::1")
                .env("LOCALITY_FALLBACK_PORT", reader.port.to_string());
        }
        let index = app.join("public/index.php");
        (Fpm::start(cmd, dir, port), index)
    };
    let get = |fpm: &Fpm, index: &Path, uri: &str| {
        let query = uri.split_once('?').map_or("", |(_, q)| q);
        fpm.get_with(index, query, &[("REQUEST_URI", uri)])
    };

    let (fpm, index) = start(true);
    let config = get(&fpm, &index, "/config");
    assert_eq!(config.status, 200, "{config:?}\n{}", fpm.logs());
    let zone: serde_json::Value = serde_json::from_str(&config.body).unwrap();
    assert_eq!(
        (
            &zone["host"],
            &zone["port"],
            &zone["fallback"]["host"],
            &zone["fallback"]["port"]
        ),
        (
            &serde_json::json!("127.0.0.1"),
            &serde_json::json!(replica.port),
            &serde_json::json!("::1"),
            &serde_json::json!(reader.port)
        ),
        "{zone}"
    );
    let stored = get(&fpm, &index, "/put?key=session%3A42&value=cart%3D3");
    assert_eq!(
        (stored.status, stored.body.as_str()),
        (200, "stored"),
        "{stored:?}\n{}",
        fpm.logs()
    );
    let mut p = TcpStream::connect(primary.endpoint()).unwrap();
    assert!(
        command(&mut p, &["EXISTS", "laravel_cache:session:42"])
            .unwrap()
            .starts_with(b":1"),
        "the cache's put went to the primary"
    );
    command(&mut p, &["SET", "raw:7", "plain"]).unwrap();
    for node in [&replica, &reader] {
        wait_for_key(node, "laravel_cache:session:42");
        wait_for_key(node, "raw:7");
    }
    let gets = |replica: &Node| [replica.gets(), reader.gets()];
    let expect = |fpm: &Fpm, r: &Response, body: &str, route: &str, what: &str| {
        assert_eq!(
            (r.status, r.body.as_str(), r.header("X-Locality-Route")),
            (200, body, Some(route)),
            "{what}\n{}",
            fpm.logs()
        );
    };
    let before = gets(&replica);
    expect(
        &fpm,
        &get(&fpm, &index, "/cache?key=session%3A42"),
        "cart=3",
        "zone",
        "Cache::store('zone')",
    );
    expect(
        &fpm,
        &get(&fpm, &index, "/redis?key=raw%3A7"),
        "plain",
        "zone",
        "Redis::connection('zone')",
    );
    assert_eq!(diff(before, gets(&replica)), [2, 0], "both reads on the zone's replica");

    replica.kill();
    let before = gets(&replica);
    let started = Instant::now();
    for n in 0..100 {
        if n % 2 == 0 {
            expect(
                &fpm,
                &get(&fpm, &index, "/cache?key=session%3A42"),
                "cart=3",
                "fallback",
                "cache, replica killed",
            );
        } else {
            expect(
                &fpm,
                &get(&fpm, &index, "/redis?key=raw%3A7"),
                "plain",
                "fallback",
                "redis, replica killed",
            );
        }
    }
    eprintln!(
        "Laravel under PHP-FPM, replica SIGKILLed: 100 of 100 requests answered in {:?}",
        started.elapsed()
    );
    assert_eq!(diff(before, gets(&replica)), [0, 100], "every read on the reader");
    let said = format!("locality: {} failed", replica.endpoint());
    assert_eq!(
        fpm.logs().matches(&said).count(),
        1,
        "one line for the replica's failure (APCu marks it for the pool)\n{}",
        fpm.logs()
    );
    drop(fpm);

    // The master lacks LOCALITY_READ_*: the pool hands the workers "" and the configuration
    // takes the reader, with an integer port.
    let (fpm, index) = start(false);
    let zone: serde_json::Value = serde_json::from_str(&get(&fpm, &index, "/config").body).unwrap();
    assert_eq!(
        (&zone["host"], &zone["port"]),
        (&serde_json::json!("::1"), &serde_json::json!(reader.port)),
        "{zone}"
    );
    let before = gets(&replica);
    expect(
        &fpm,
        &get(&fpm, &index, "/redis?key=raw%3A7"),
        "plain",
        "zone",
        "the reader as the zone's endpoint",
    );
    assert_eq!(diff(before, gets(&replica)), [0, 1]);
}

/// Yii2 2.0.55 and yii2-redis 2.1.2 (BSD-3-Clause), loaded without Composer:
/// `LOCALITY_YII2_VENDOR`, or the team's vendor folder for PHP beside the checkout (the README
/// names it).
fn yii2_vendor() -> PathBuf {
    if let Some(dir) = std::env::var_os("LOCALITY_YII2_VENDOR") {
        return dir.into();
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let vendor = |base: PathBuf| base.join("shared").join("vendor").join("php");
    [vendor(root.join("..")), vendor(PathBuf::from("/work"))]
        .into_iter()
        .find(|dir| dir.join("yii2/framework/Yii.php").is_file())
        .expect("Yii2 and yii2-redis: set LOCALITY_YII2_VENDOR to the folder holding yii2/ and yii2-redis/")
}

/// Sends a signal to a node's process (SIGSTOP: the kernel still accepts its connections, and
/// nothing answers them).
fn signal(node: &Node, sig: &str) {
    let pid = node.child.as_ref().expect("the node runs").id().to_string();
    assert!(Command::new("kill").args([sig, &pid]).status().unwrap().success());
}

/// Yii2, served for real: Yii2 2.0.55 and yii2-redis 2.1.2 under Debian's PHP-FPM, with
/// `examples/yii2/` as a team copies it (`config/redis.php`'s `redis` and `cache` components,
/// `components/ZoneRedisConnection.php`) into a small application
/// (`tests/fixtures/yii2-app/`: its front controller and three routes). The guide's entrypoint
/// resolves the map (the zone's replica; the reader on `[::1]`, which yii2-redis's connection
/// string needs bracketed) and execs PHP-FPM with the guide's pool file. Valkey nodes count
/// where each GET went:
/// - the cache's `set` lands on the primary, its `get` on the zone's replica;
/// - then, without APCu and with it, the zone's replica fails four ways: nothing listens
///   (refused); Valkey at its client limit (`-ERR max number of clients reached` at the first
///   read); SIGSTOP (hung: the kernel accepts, nothing answers); SIGSTOP then SIGKILL while the
///   read waits (died mid-connection). Each time the read is answered by the reader in the same
///   request (status 200, the value, the reader's GET count), within `connectionTimeout` plus
///   `dataTimeout`, with one `locality:` log line and no fatal error. Before: the killed and
///   refusing replicas recursed through `close()` (hundreds of lines, then "Allowed memory size
///   exhausted"), and the hung one never returned without APCu.
/// - with APCu, the next request goes straight to the reader, and logs nothing.
#[test]
fn yii2_reads_in_the_zone_and_from_the_reader_when_the_replica_fails() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let heading = "### Yii2: `yii\\redis\\Cache` reading from the zone's replica";
    assert_eq!(
        guide_block(heading, "php"),
        std::fs::read_to_string(root.join("examples/yii2/config/redis.php")).unwrap(),
        "the guide shows examples/yii2/config/redis.php verbatim"
    );
    let guide = std::fs::read_to_string(root.join(GUIDE)).unwrap();
    let section = &guide[guide.find(heading).unwrap()..];
    let class = std::fs::read_to_string(root.join("examples/yii2/components/ZoneRedisConnection.php")).unwrap();
    assert!(
        section[..section.find("### Plan B").unwrap()].contains(&format!("```php\n{class}```")),
        "the guide shows examples/yii2/components/ZoneRedisConnection.php verbatim"
    );
    let vendor = yii2_vendor();
    let primary = Node::start(ZONE_C, None);
    let reader = Node::start_ipv6(ZONE_B, Some(primary.port));
    let pool = |apcu: bool| {
        format!(
            "pm = static\npm.max_children = 1\nenv[REDIS_HOST] = $REDIS_HOST\nenv[REDIS_PORT] = $REDIS_PORT\ncatch_workers_output = yes\ndecorate_workers_output = no\nphp_admin_value[apc.enabled] = {}",
            u8::from(apcu)
        )
    };
    // PHP-FPM with the application, its map naming `replica` as the zone's endpoint.
    let start = |apcu: bool, replica: &str| {
        let (dir, port) = Fpm::prepare(true, &pool(apcu));
        let app = dir.path().join("yii2");
        copy_tree(&root.join("tests/fixtures/yii2-app"), &app);
        copy_tree(&root.join("examples/yii2"), &app);
        write(&app.join("vendor-path.txt"), &vendor.display().to_string(), 0o644);
        writable(&app.join("runtime"));
        let map = dir.path().join("replica-map.json");
        write(
            &map,
            &serde_json::json!({
                "version": 1,
                "fallback": format!("[::1]:{}", reader.port),
                "zones": {ZONE_A: replica},
            })
            .to_string(),
            0o644,
        );
        let entrypoint = format!(
            "resolved=$(locality resolve --map '{}' --zone {ZONE_A} --format env) || exit\neval \"$resolved\"\nexec php-fpm -F\n",
            map.display()
        );
        let mut cmd = Command::new("dash");
        cmd.args(["-c", &entrypoint])
            .env_clear()
            .env("HOME", dir.path())
            .env("AWS_EC2_METADATA_DISABLED", "true")
            .env("REDIS_HOST", "127.0.0.1")
            .env("REDIS_PORT", primary.port.to_string());
        let index = app.join("web/index.php");
        (Fpm::start(cmd, dir, port), index)
    };
    let get = |fpm: &Fpm, index: &Path, query: &str| fpm.get(index, query);
    // The `locality:` lines of the pool's log, once `expected` of them arrived (a worker's
    // stderr reaches the master's log a moment after the response) and 200 ms more passed.
    let said_settled = |fpm: &Fpm, expected: usize| {
        let deadline = Instant::now() + Duration::from_secs(5);
        while fpm.logs().matches("locality: ").count() < expected && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(Duration::from_millis(200));
        fpm.logs().matches("locality: ").count()
    };
    let no_fatal = |fpm: &Fpm, what: &str| {
        let logs = fpm.logs();
        assert!(
            !logs.contains("Allowed memory size") && !logs.contains("Fatal error") && !logs.contains("PHP Fatal"),
            "{what}: a fatal error\n{logs}"
        );
    };

    // Writes through `redis`, reads on the zone's replica.
    let replica = Node::start(ZONE_A, Some(primary.port));
    let (fpm, index) = start(true, &replica.endpoint());
    let config: serde_json::Value = serde_json::from_str(&get(&fpm, &index, "r=site/config").body)
        .unwrap_or_else(|e| panic!("{e}\n{}", fpm.logs()));
    assert_eq!(
        config,
        serde_json::json!({"host": "127.0.0.1", "port": replica.port,
            "fallback": {"host": "[::1]", "port": reader.port}}),
        "{}",
        fpm.logs()
    );
    let stored = get(&fpm, &index, "r=site/put&key=session42&value=cart%3D3");
    assert_eq!(
        (stored.status, stored.body.as_str()),
        (200, "stored"),
        "{stored:?}\n{}",
        fpm.logs()
    );
    let mut p = TcpStream::connect(primary.endpoint()).unwrap();
    // yii\caching\Cache keeps a short alphanumeric key as it is.
    let key = "session42";
    assert!(
        command(&mut p, &["EXISTS", key]).unwrap().starts_with(b":1"),
        "the cache's set went to the primary"
    );
    wait_for_key(&replica, key);
    wait_for_key(&reader, key);
    let before = [replica.gets(), reader.gets()];
    let read = get(&fpm, &index, "r=site/get&key=session42");
    assert_eq!(
        (read.status, read.body.as_str(), read.header("X-Locality-Route")),
        (200, "cart=3", Some("zone")),
        "{read:?}\n{}",
        fpm.logs()
    );
    assert_eq!(
        diff(before, [replica.gets(), reader.gets()]),
        [1, 0],
        "the read on the zone's replica"
    );
    assert_eq!(said_settled(&fpm, 0), 0, "{}", fpm.logs());
    drop(fpm);
    drop(replica);

    let budget = Duration::from_millis(1300 + 500); // connectionTimeout + dataTimeout, and PHP's own time
    for apcu in [false, true] {
        for case in ["refused", "at its client limit", "hung", "killed mid-connection"] {
            let what = format!("{case}, APCu {}", if apcu { "on" } else { "off" });
            let mut replica = Node::start(ZONE_A, Some(primary.port));
            wait_for_key(&replica, key);
            let endpoint = replica.endpoint();
            let mut holder = None;
            match case {
                "refused" => replica.kill(),
                "at its client limit" => {
                    // Valkey's own refusal: the replica's link to its primary is a client, so
                    // with a limit of 1 every new connection gets the error at its first read.
                    let mut c = TcpStream::connect(&endpoint).unwrap();
                    command(&mut c, &["CONFIG", "SET", "maxclients", "1"]).unwrap();
                    holder = Some(c);
                }
                _ => signal(&replica, "-STOP"),
            }
            let (fpm, index) = start(apcu, &endpoint);
            let before = reader.gets();
            let started = Instant::now();
            let read = std::thread::scope(|scope| {
                let request = scope.spawn(|| get(&fpm, &index, "r=site/get&key=session42"));
                if case == "killed mid-connection" {
                    std::thread::sleep(Duration::from_millis(300));
                    replica.kill();
                }
                request.join().unwrap()
            });
            let took = started.elapsed();
            eprintln!("Yii2, the replica {what}: answered in {took:?}");
            assert_eq!(
                (read.status, read.body.as_str(), read.header("X-Locality-Route")),
                (200, "cart=3", Some("fallback")),
                "{what}: {read:?}\n{}",
                fpm.logs()
            );
            assert_eq!(reader.gets() - before, 1, "{what}: the reader answered the read");
            assert!(took < budget, "{what}: {took:?}, more than the two timeouts");
            assert_eq!(said_settled(&fpm, 1), 1, "{what}: one log line\n{}", fpm.logs());
            no_fatal(&fpm, &what);
            if apcu {
                let started = Instant::now();
                let next = get(&fpm, &index, "r=site/get&key=session42");
                assert_eq!(
                    (next.status, next.body.as_str(), next.header("X-Locality-Route")),
                    (200, "cart=3", Some("fallback")),
                    "{what}, the next request"
                );
                assert!(
                    started.elapsed() < Duration::from_millis(250),
                    "{what}: the next request waited"
                );
                assert_eq!(
                    said_settled(&fpm, 1),
                    1,
                    "{what}: the next request logs nothing\n{}",
                    fpm.logs()
                );
            }
            drop(fpm);
            if case == "hung" {
                signal(&replica, "-CONT");
            }
            drop(holder);
        }
    }
}

/// Issue 58, item 7: `read.php` against the requests an attacker sends through the web server.
/// - `key=missing%0Aread.php: forged`: the "no key" line is one log line, the newline escaped
///   (before: a second, forged `read.php:` line in the pool's log);
/// - `key[]=x`: 400, and no "Array to string conversion" (before: logged, then 404);
/// - a FastCGI parameter `LOCALITY_READ_ENDPOINT` naming another endpoint: ignored, the pool's
///   `env[...]` value is read (`getenv(NAME, true)`; before: the request picked the endpoint).
#[test]
fn read_php_refuses_forged_log_lines_arrays_and_endpoints_chosen_by_requests() {
    let read_php = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/php/read.php");
    let primary = Node::start(ZONE_C, None);
    let replica = Node::start(ZONE_A, Some(primary.port));
    let reader = Node::start(ZONE_B, Some(primary.port));
    let mut p = TcpStream::connect(primary.endpoint()).unwrap();
    command(&mut p, &["SET", "k", "v"]).unwrap();
    wait_for_key(&replica, "k");
    let (dir, port) = Fpm::prepare(
        true,
        "pm = static\npm.max_children = 1\ncatch_workers_output = yes\ndecorate_workers_output = no",
    );
    let mut cmd = Command::new(dir.path().join("bin/php-fpm"));
    cmd.arg("-F")
        .env_clear()
        .env("LOCALITY_READ_ENDPOINT", replica.endpoint())
        .env("LOCALITY_FALLBACK", reader.endpoint());
    let fpm = Fpm::start(cmd, dir, port);
    let script = fpm.install(&read_php);

    let r = fpm.get(&script, "key=missing%0Aread.php%3A+forged");
    assert_eq!(r.status, 404, "{r:?}");
    // (The worker's stderr reaches the master's log a moment after the response.)
    let deadline = Instant::now() + Duration::from_secs(5);
    while !fpm.logs().contains("no key missing") && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let logs = fpm.logs();
    let said: Vec<&str> = logs.lines().filter(|l| l.contains("read.php:")).collect();
    assert_eq!(said.len(), 1, "one line, the newline escaped: {said:?}\n{logs}");
    assert!(said[0].contains("no key missing\\nread.php: forged"), "{said:?}");

    let r = fpm.get(&script, "key%5B%5D=x");
    assert_eq!(r.status, 400, "{r:?}");
    assert!(!fpm.logs().contains("Array to string conversion"), "{}", fpm.logs());

    let before = [replica.gets(), reader.gets()];
    let r = fpm.get_with(&script, "key=k", &[("LOCALITY_READ_ENDPOINT", "127.0.0.1:1")]);
    assert_eq!(
        (r.status, r.body.as_str(), r.header("X-Locality-Route")),
        (200, "v\n", Some("zone")),
        "the pool's endpoint, not the request's\n{}",
        fpm.logs()
    );
    assert_eq!(diff(before, [replica.gets(), reader.gets()]), [1, 0]);
}

/// The body of PHP function `loggable` in `path` (its lines from `{` to the closing `}`, each
/// without its leading spaces).
fn php_loggable_body(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let start = text
        .find("function loggable(string $text): string\n")
        .unwrap_or_else(|| panic!("{}: no loggable()", path.display()));
    let lines: Vec<&str> = text[start..].lines().skip(1).collect();
    let indent = lines[0].len() - lines[0].trim_start().len();
    let end = lines
        .iter()
        .position(|l| *l == format!("{}}}", " ".repeat(indent)))
        .unwrap();
    lines[..=end]
        .iter()
        .map(|l| l.trim_start())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Issue 61, item 9: PHP's log lines escape as `locality` prints (one function, by Unicode
/// category): `read.php`'s `loggable()` is run with Debian's PHP on a hostile corpus (U+202E,
/// U+2028, NEL, C1 CSI, ESC, a backslash before `u{1b}`, tabs, CJK, an overlong text) and gives,
/// character for character, what `locality_resolve::printable` gives (before: `addcslashes`
/// worked on bytes, and U+202E, U+2028, NEL and C1 CSI passed raw); a byte that is not UTF-8 is
/// `\x{ff}`. The Laravel and Yii2 examples carry the same function.
#[test]
fn php_log_lines_escape_as_locality_prints() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let body = php_loggable_body(&root.join("examples/php/read.php"));
    for other in [
        "examples/laravel/app/Locality/ZoneReadConnection.php",
        "examples/yii2/components/ZoneRedisConnection.php",
    ] {
        assert_eq!(
            php_loggable_body(&root.join(other)),
            body,
            "{other}: the same loggable()"
        );
    }
    let corpus = [
        "ap-northeast-1a".to_string(),
        "a\u{202e}b\u{2028}c\u{2029}d\u{85}e\u{9b}31m".to_string(),
        "\u{1b}[2J\u{7}\r\n\tx".to_string(),
        "\\u{1b} is not ESC, \u{1b} is".to_string(),
        "東京 ゾーン naïve\u{200b}\u{feff}\u{e0001}".to_string(),
        "é".repeat(400),
    ];
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("loggable.php");
    std::fs::write(
        &script,
        format!(
            "<?php\nfunction loggable(string $text): string\n{body}\nforeach (array_slice($argv, 1) as $a) {{ echo loggable($a), \"\\0\"; }}\necho loggable(\"x\\xffy\"), \"\\0\";\n"
        ),
    )
    .unwrap();
    let out = Command::new("php").arg(&script).args(&corpus).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let shown: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .split('\0')
        .map(str::to_string)
        .collect();
    for (text, php) in corpus.iter().zip(&shown) {
        let rust = locality_resolve::printable::printable_cut(text, 300);
        assert_eq!(php, &rust, "{text:?}");
        assert!(!php.chars().any(locality_resolve::printable::is_unsafe), "{php:?}");
    }
    assert_eq!(shown[corpus.len()], "x\\x{ff}y");
}
