//! `locality resolve`, the built binary, against fake metadata services (IMDS v2 and v1, ECS,
//! Lambda; slow, silent, garbage, recovering) and real Redis nodes (Debian's redis-server) on
//! loopback: every route (zone, cache, each failure class to the fallback), the request
//! counts, the cache's TTLs, the `--check` cycle (healthy → stopped → unhealthy → back), the
//! cross-account match by AZ ID, and maps that are malformed or huge.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::fake_metadata::{FakeMetadata, Mode, LAMBDA_TOKEN};
use serde_json::{json, Value};

const ZONE: &str = "ap-northeast-1a";
const ZONE_ID: &str = "apne1-az4";

/// A map: zone a → replica-a, zone c → replica-c.
fn map_json() -> Value {
    json!({"version": 1, "fallback": "reader.example:6379", "zones": {ZONE: "replica-a.example:6379", "ap-northeast-1c": "replica-c.example:6379"}})
}

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
    elapsed: Duration,
}

impl Run {
    fn json(&self) -> Value {
        serde_json::from_str(self.stdout.trim()).unwrap_or_else(|e| panic!("{e}: {:?} / {}", self.stdout, self.stderr))
    }
}

/// Runs `locality resolve` with only the environment given (plus PATH and HOME).
fn resolve(env: &[(&str, &str)], args: &[&str]) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_locality"));
    cmd.arg("resolve").args(args).env_clear();
    cmd.env("PATH", std::env::var("PATH").unwrap_or_default());
    // Never the real metadata address: every run names a fake or disables IMDS.
    let mut has_imds = false;
    for (k, v) in env {
        has_imds |= k.starts_with("AWS_EC2_METADATA");
        cmd.env(k, v);
    }
    if !has_imds {
        cmd.env("AWS_EC2_METADATA_DISABLED", "true");
    }
    // The default cache directory of a run that names none: its own, never the machine's
    // per-user one (another test's unhealthy marks must not leak in).
    let runtime = tempfile::tempdir().unwrap();
    if !env.iter().any(|(k, _)| *k == "XDG_RUNTIME_DIR") {
        cmd.env("XDG_RUNTIME_DIR", runtime.path());
    }
    let started = Instant::now();
    let out = cmd.output().unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        elapsed: started.elapsed(),
    }
}

fn write_map(dir: &Path, map: &Value) -> PathBuf {
    let path = dir.join("map.json");
    std::fs::write(&path, map.to_string()).unwrap();
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zone_given_detected_cached_and_every_failure_class_falls_back() {
    let imds = FakeMetadata::start(ZONE, ZONE_ID).await;
    let dir = tempfile::tempdir().unwrap();
    let map = write_map(dir.path(), &map_json());
    let map = map.to_str().unwrap().to_string();
    let cache = dir.path().join("cache");
    let cache = cache.to_str().unwrap().to_string();
    let url = imds.url();
    tokio::task::spawn_blocking(move || {
        let env = [("AWS_EC2_METADATA_SERVICE_ENDPOINT", url.as_str())];
        let args = |extra: &[&str]| -> Vec<String> {
            let mut v: Vec<String> = ["--map", &map, "--cache-dir", &cache, "--format", "json"].iter().map(|s| s.to_string()).collect();
            v.extend(extra.iter().map(|s| s.to_string()));
            v
        };
        let run = |extra: &[&str]| {
            let a = args(extra);
            resolve(&env, &a.iter().map(String::as_str).collect::<Vec<_>>())
        };

        // Zone given: no metadata request at all.
        let r = run(&["--zone", "ap-northeast-1c"]);
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert_eq!(
            r.json(),
            json!({"endpoint": "replica-c.example:6379", "route": "zone", "zone": "ap-northeast-1c", "zone_id": null, "zone_source": "flag", "reason": null})
        );
        assert!(imds.take_requests().is_empty());
        let r = resolve(&[("LOCALITY_ZONE", ZONE), env[0]], &["--map", &map, "--cache-dir", &cache]);
        assert_eq!((r.code, r.stdout.as_str()), (0, "replica-a.example:6379\n"));
        assert!(imds.take_requests().is_empty());

        // Cold detection through IMDSv2: a token and two GETs.
        let r = run(&[]);
        assert_eq!(
            r.json(),
            json!({"endpoint": "replica-a.example:6379", "route": "zone", "zone": ZONE, "zone_id": ZONE_ID, "zone_source": "imds-v2", "reason": null})
        );
        assert_eq!(
            imds.take_requests(),
            [
                "PUT /latest/api/token",
                "GET /latest/meta-data/placement/availability-zone",
                "GET /latest/meta-data/placement/availability-zone-id"
            ]
        );
        // The next process: from the cache, no request.
        let r = run(&[]);
        assert_eq!(r.json()["zone_source"], "cache");
        assert_eq!(r.json()["endpoint"], "replica-a.example:6379");
        assert!(imds.take_requests().is_empty());
        std::fs::remove_dir_all(&cache).unwrap();

        // IMDSv1 when no token is given (hop limit 1, tokens refused).
        imds.set_mode(Mode::V1Only);
        let r = run(&[]);
        assert_eq!(r.json()["zone_source"], "imds-v1", "{}", r.stderr);
        assert_eq!(r.json()["route"], "zone");
        assert_eq!(imds.take_requests().len(), 3, "a refused token, then two v1 GETs");
        std::fs::remove_dir_all(&cache).unwrap();

        // Each failure class: the fallback, exit 0, the reason in the JSON and on stderr.
        for (mode, expect) in [
            (Mode::Silent, "no answer in time"),
            (Mode::Slow(Duration::from_secs(2)), "no answer in time"),
            (Mode::Body("<html><body>Proxy login</body></html>".into()), "instead of an AZ name"),
            (Mode::Body("x".repeat(100_000)), "larger than"),
            (Mode::FailTimes(10), "HTTP 500"),
        ] {
            imds.set_mode(mode.clone());
            let r = run(&["--timeout", "800ms", "--failure-ttl", "0"]);
            assert_eq!(r.code, 0, "{mode:?}: {}", r.stderr);
            let j = r.json();
            assert_eq!(j["route"], "fallback", "{mode:?}");
            assert_eq!(j["endpoint"], "reader.example:6379");
            assert_eq!(j["zone_source"], Value::Null);
            let reason = j["reason"].as_str().unwrap();
            assert!(reason.contains(expect), "{mode:?}: {reason}");
            assert_eq!(r.stderr.lines().count(), 1, "one line on stderr: {}", r.stderr);
            assert!(r.stderr.contains(reason), "{}", r.stderr);
            assert!(r.elapsed < Duration::from_millis(2500), "{mode:?} took {:?}", r.elapsed);
            let requests = imds.take_requests();
            assert!(requests.len() <= 3, "{mode:?}: {requests:?}");
        }

        // A failed detection is cached for its TTL and never longer.
        imds.set_mode(Mode::FailTimes(2));
        let r = run(&["--failure-ttl", "2"]);
        assert_eq!(r.json()["route"], "fallback");
        imds.take_requests();
        let r = run(&["--failure-ttl", "2"]);
        let reason = r.json()["reason"].as_str().unwrap().to_string();
        assert!(reason.contains("cached") && reason.contains("HTTP 500"), "{reason}");
        assert!(imds.take_requests().is_empty(), "a cached failure asks nothing");
        // A shorter TTL in force wins over the stored one.
        let r = run(&["--failure-ttl", "0"]);
        assert_eq!(r.json()["route"], "zone", "{}", r.stderr);
        assert_eq!(r.json()["zone_source"], "imds-v2");
        std::fs::remove_dir_all(&cache).unwrap();
        imds.set_mode(Mode::FailTimes(2));
        run(&["--failure-ttl", "1"]);
        std::thread::sleep(Duration::from_millis(2100));
        let r = run(&["--failure-ttl", "1"]);
        assert_eq!(r.json()["route"], "zone", "the failure expired and the service recovered: {}", r.stderr);

        // IMDS disabled and nothing else: the fallback, saying so.
        let r = resolve(&[("AWS_EC2_METADATA_DISABLED", "true")], &["--map", &map, "--cache-dir", &format!("{cache}-2"), "--format", "json"]);
        assert!(r.json()["reason"].as_str().unwrap().contains("no zone source"), "{}", r.stdout);
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ecs_lambda_and_the_cross_account_match_by_zone_id() {
    // The client's account calls the physical zone apne1-az4 "ap-northeast-1c"; the cache's
    // account calls it "ap-northeast-1a".
    let meta = FakeMetadata::start("ap-northeast-1c", ZONE_ID).await;
    let dir = tempfile::tempdir().unwrap();
    let mut doc = map_json();
    doc["zone_ids"] = json!({ZONE_ID: "replica-a.example:6379", "apne1-az1": "replica-c.example:6379"});
    doc["replicas"] = json!({ZONE: ["replica-a.example:6379", "replica-a2.example:6379"], ZONE_ID: ["replica-a.example:6379", "replica-a2.example:6379"]});
    let map = write_map(dir.path(), &doc);
    let map = map.to_str().unwrap().to_string();
    let url = meta.url();
    let addr = meta.addr.to_string();
    tokio::task::spawn_blocking(move || {
        let cache = |n: &str| dir.path().join(n).to_str().unwrap().to_string();
        // EC2 in another account: the name says 1c, the ID says az4: routed by the ID.
        let r = resolve(&[("AWS_EC2_METADATA_SERVICE_ENDPOINT", &url)], &["--map", &map, "--cache-dir", &cache("ec2"), "--format", "json"]);
        let j = r.json();
        assert_eq!(j["zone"], "ap-northeast-1c");
        assert_eq!(j["zone_id"], ZONE_ID);
        assert!(
            ["replica-a.example:6379", "replica-a2.example:6379"].contains(&j["endpoint"].as_str().unwrap()),
            "{j}"
        );
        // ECS task metadata v4.
        let ecs = format!("{url}/ecs/v4");
        let r = resolve(&[("ECS_CONTAINER_METADATA_URI_V4", &ecs)], &["--map", &map, "--cache-dir", &cache("ecs"), "--format", "json"]);
        assert_eq!(r.json()["zone_source"], "ecs", "{}", r.stderr);
        assert_eq!(r.json()["zone_id"], ZONE_ID);
        assert_eq!(meta.take_requests().iter().filter(|r| r.contains("/ecs/")).count(), 1);
        // Lambda: the AZ ID only.
        let r = resolve(
            &[("AWS_LAMBDA_METADATA_API", &addr), ("AWS_LAMBDA_METADATA_TOKEN", LAMBDA_TOKEN)],
            &["--map", &map, "--cache-dir", &cache("lambda"), "--format", "json"],
        );
        let j = r.json();
        assert_eq!((j["zone_source"].as_str(), j["zone"].clone(), j["route"].as_str()), (Some("lambda"), Value::Null, Some("zone")), "{j}");
        // A wrong Lambda token: the fallback, naming the source.
        let r = resolve(
            &[("AWS_LAMBDA_METADATA_API", &addr), ("AWS_LAMBDA_METADATA_TOKEN", "wrong")],
            &["--map", &map, "--cache-dir", &cache("lambda2"), "--format", "json"],
        );
        assert!(r.json()["reason"].as_str().unwrap().contains("Lambda metadata: HTTP 401"), "{}", r.stdout);
        // Spread: the same host always gets the same replica of the zone.
        let first = resolve(&[("LOCALITY_ZONE", ZONE)], &["--map", &map, "--cache-dir", &cache("s")]).stdout;
        for _ in 0..3 {
            assert_eq!(resolve(&[("LOCALITY_ZONE", ZONE)], &["--map", &map, "--cache-dir", &cache("s")]).stdout, first);
        }
        // The env format, for eval.
        let r = resolve(&[("LOCALITY_ZONE", "ap-northeast-1c")], &["--map", &map, "--cache-dir", &cache("e"), "--format", "env"]);
        assert_eq!(
            r.stdout,
            "export LOCALITY_READ_ENDPOINT='replica-c.example:6379'\nexport LOCALITY_READ_HOST='replica-c.example'\nexport LOCALITY_READ_PORT='6379'\nexport LOCALITY_ZONE='ap-northeast-1c'\nexport LOCALITY_ROUTE='zone'\nexport LOCALITY_FALLBACK='reader.example:6379'\nexport LOCALITY_FALLBACK_HOST='reader.example'\nexport LOCALITY_FALLBACK_PORT='6379'\n"
        );
    })
    .await
    .unwrap();
}

#[test]
fn bad_maps_and_bad_usage() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("c");
    let cache = cache.to_str().unwrap();
    let run = |map: &str, extra: &[&str]| {
        let mut args = vec!["--map", map, "--cache-dir", cache, "--zone", ZONE];
        args.extend_from_slice(extra);
        resolve(&[], &args)
    };
    for (name, content) in [
        ("garbage.json", "<html>not a map</html>".to_string()),
        ("v2.json", r#"{"version":2,"fallback":"r:1"}"#.to_string()),
        ("nofallback.json", r#"{"version":1,"zones":{}}"#.to_string()),
        (
            "huge.json",
            format!(
                "{{\"version\":1,\"fallback\":\"r:1\",\"pad\":\"{}\"}}",
                "x".repeat(10 << 20)
            ),
        ),
    ] {
        let path = dir.path().join(name);
        std::fs::write(&path, content).unwrap();
        let r = run(path.to_str().unwrap(), &[]);
        assert_eq!(r.code, 1, "{name}: {}", r.stderr);
        assert!(
            r.stdout.is_empty() && r.stderr.contains("the map could not be read"),
            "{name}: {}",
            r.stderr
        );
        let r = run(
            path.to_str().unwrap(),
            &["--fallback", "reader.example:6379", "--format", "json"],
        );
        assert_eq!(r.code, 0, "{name}");
        assert_eq!(r.json()["route"], "fallback");
        assert_eq!(r.json()["endpoint"], "reader.example:6379");
    }
    let r = run(dir.path().join("missing.json").to_str().unwrap(), &[]);
    assert_eq!(r.code, 1);
    // LOCALITY_FALLBACK is --fallback from the environment (an orchestrator injects it); the
    // flag wins over it.
    let missing = dir.path().join("missing.json");
    let missing = missing.to_str().unwrap();
    let r = resolve(
        &[("LOCALITY_FALLBACK", "reader.example:6379")],
        &["--map", missing, "--zone", ZONE],
    );
    assert_eq!(
        (r.code, r.stdout.as_str()),
        (0, "reader.example:6379\n"),
        "{}",
        r.stderr
    );
    let r = resolve(
        &[("LOCALITY_FALLBACK", "reader.example:6379")],
        &["--map", missing, "--zone", ZONE, "--fallback", "other.example:6379"],
    );
    assert_eq!(r.stdout, "other.example:6379\n");
    // Empty is not given; a malformed one is a usage error naming the variable.
    let r = resolve(&[("LOCALITY_FALLBACK", "")], &["--map", missing, "--zone", ZONE]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    let r = resolve(&[("LOCALITY_FALLBACK", "no-port")], &["--map", missing, "--zone", ZONE]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("LOCALITY_FALLBACK"), "{}", r.stderr);
    // A valid --zone wins over a bad LOCALITY_ZONE (the environment is not read).
    let good = write_map(dir.path(), &map_json());
    let r = resolve(
        &[("LOCALITY_ZONE", "<html>")],
        &["--map", good.to_str().unwrap(), "--zone", ZONE],
    );
    assert_eq!(
        (r.code, r.stdout.as_str()),
        (0, "replica-a.example:6379\n"),
        "{}",
        r.stderr
    );
    let r = resolve(
        &[("LOCALITY_ZONE", "ap-northeast-1c")],
        &["--map", good.to_str().unwrap(), "--zone", ZONE],
    );
    assert_eq!(r.stdout, "replica-a.example:6379\n");
    // An unusable --cache-dir (a file here): one stderr line, same answer and status.
    let not_a_dir = dir.path().join("file");
    std::fs::write(&not_a_dir, "").unwrap();
    let r = resolve(
        &[],
        &[
            "--map",
            good.to_str().unwrap(),
            "--zone",
            ZONE,
            "--cache-dir",
            not_a_dir.to_str().unwrap(),
        ],
    );
    assert_eq!((r.code, r.stdout.as_str()), (0, "replica-a.example:6379\n"));
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("the cache directory") && r.stderr.contains("is not used"),
        "{}",
        r.stderr
    );
    // A scheme this command does not read: a usage error listing the sources.
    for map in ["s3://bucket/replica-map.json", "https://example.com/map.json"] {
        let r = resolve(&[], &["--map", map, "--zone", ZONE]);
        assert_eq!(r.code, 2, "{map}");
        assert!(
            r.stderr.contains("is not a map source") && r.stderr.contains("secretsmanager:<id>#<key>"),
            "{}",
            r.stderr
        );
    }
    // Usage errors: exit 2.
    assert_eq!(resolve(&[], &["--map", "x.json", "--zone", "nowhere"]).code, 2);
    assert_eq!(resolve(&[("LOCALITY_ZONE", "<html>")], &["--map", "x.json"]).code, 2);
    assert_eq!(resolve(&[], &["--map", "ssm:"]).code, 2);
    assert_eq!(resolve(&[], &["--map", "x.json", "--fallback", "no-port"]).code, 2);
    assert_eq!(resolve(&[], &[]).code, 2);
}

/// A redis-server on a loopback port; killed on drop.
struct Redis {
    port: u16,
    child: Child,
}

impl Redis {
    fn start(port: u16, replica_of: Option<u16>, dir: &Path) -> Redis {
        let data = dir.join(format!("redis-{port}"));
        std::fs::create_dir_all(&data).unwrap();
        let mut cmd = Command::new("redis-server");
        cmd.args([
            "--bind",
            "127.0.0.1",
            "--port",
            &port.to_string(),
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
        ])
        .arg(&data)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
        if let Some(primary) = replica_of {
            cmd.args(["--replicaof", "127.0.0.1", &primary.to_string()]);
        }
        let child = cmd
            .spawn()
            .expect("redis-server (Debian package redis-server; scripts/test installs it)");
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "redis-server on {port} did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        Redis { port, child }
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn check_pings_real_redis_marks_a_stopped_replica_and_brings_it_back() {
    let dir = tempfile::tempdir().unwrap();
    let (p, r1, r2) = (common::server_port(), common::server_port(), common::server_port());
    let _primary = Redis::start(p, None, dir.path());
    let replica = Redis::start(r1, Some(p), dir.path());
    let _other = Redis::start(r2, Some(p), dir.path());
    let doc = json!({
        "version": 1,
        "fallback": format!("127.0.0.1:{p}"),
        "zones": {ZONE: format!("127.0.0.1:{r1}"), "ap-northeast-1c": format!("127.0.0.1:{r2}")},
    });
    let map = write_map(dir.path(), &doc);
    let cache = dir.path().join("cache");
    // `resolve --zone ZONE --check --format json` of a map, with a cache directory.
    let check = |map: &Path, cache: &Path, extra: &[&str]| {
        let (map, cache) = (map.to_str().unwrap(), cache.to_str().unwrap());
        let mut args = vec![
            "--map",
            map,
            "--cache-dir",
            cache,
            "--zone",
            ZONE,
            "--check",
            "--format",
            "json",
        ];
        args.extend_from_slice(extra);
        resolve(&[], &args)
    };
    let run = |extra: &[&str]| check(&map, &cache, &[&["--unhealthy-ttl", "2"], extra].concat());
    // Healthy: the same-AZ replica.
    let r = run(&[]);
    assert_eq!(r.json()["endpoint"], format!("127.0.0.1:{r1}"), "{}", r.stderr);
    assert_eq!(r.json()["route"], "zone");

    // Stopped: the fallback within the check timeout, and the replica marked unhealthy.
    let port = replica.port;
    drop(replica);
    let marked = Instant::now();
    let r = run(&[]);
    let j = r.json();
    assert_eq!(j["route"], "fallback");
    assert_eq!(j["endpoint"], format!("127.0.0.1:{p}"));
    assert!(
        j["reason"]
            .as_str()
            .unwrap()
            .contains("failed the check: connection refused"),
        "{j}"
    );
    assert!(r.elapsed < Duration::from_millis(1500), "{:?}", r.elapsed);

    // Back up, but still marked: the fallback until the mark expires (no check is made).
    let _replica = Redis::start(port, Some(p), dir.path());
    let r = run(&[]);
    assert!(
        r.json()["reason"].as_str().unwrap().contains("marked unhealthy"),
        "{}",
        r.stdout
    );
    // Until the mark expires (a 2 s TTL kept in whole seconds: between 1 and 2 s), then the
    // replica again: waited for as a condition, whatever the machine's load.
    let r = loop {
        let r = run(&[]);
        if r.json()["route"] == "zone" {
            break r;
        }
        assert!(
            r.json()["reason"].as_str().unwrap().contains("marked unhealthy"),
            "{}",
            r.stdout
        );
        assert!(marked.elapsed() < Duration::from_secs(30), "the mark never expired");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(marked.elapsed() >= Duration::from_secs(1), "{:?}", marked.elapsed());
    assert_eq!(r.json()["endpoint"], format!("127.0.0.1:{r1}"));

    // Two replicas in the zone (spread_replicas), the one this host tries first is down: the
    // zone's other replica answers, and the dead one is marked (the library, with a host key
    // chosen so that the dead one comes first).
    let dead = format!("127.0.0.1:{}", common::server_port());
    let live = format!("127.0.0.1:{r2}");
    let doc = json!({"version": 1, "fallback": format!("127.0.0.1:{p}"), "zones": {ZONE: &live}, "replicas": {ZONE: [&dead, &live]}});
    let spread_map = dir.path().join("spread.json");
    std::fs::write(&spread_map, doc.to_string()).unwrap();
    let zone = locality_resolve::Zone::parse(ZONE).unwrap();
    let parsed = locality_resolve::ReplicaMap::parse(&doc.to_string()).unwrap();
    let host_key = (0..64)
        .map(|i| format!("host-{i}"))
        .find(|key| parsed.candidates(&zone, key).unwrap()[0] == dead)
        .expect("some host tries the dead replica first");
    let mut options = locality_resolve::Options::new(locality_resolve::MapSource::File(spread_map));
    options.zone_flag = Some(zone);
    options.cache_dir = Some(dir.path().join("spread-cache"));
    options.check = true;
    options.host_key = host_key;
    let resolution = locality_resolve::resolve(&options).unwrap();
    assert_eq!(
        (resolution.route, resolution.endpoint.as_str()),
        (locality_resolve::Route::Zone, live.as_str())
    );
    // The failed sibling is one note, which the command prints as one stderr line.
    assert!(
        matches!(resolution.notes.as_slice(), [note] if note.starts_with(&format!("the zone's replica {dead} failed the check (")) && note.ends_with(&format!("reading from {live}"))),
        "{:?}",
        resolution.notes
    );
    let mut err = Vec::new();
    let mut fresh = options.clone();
    fresh.cache_dir = Some(dir.path().join("spread-cache-2"));
    assert_eq!(
        locality_resolve::run(&fresh, locality_resolve::Format::Endpoint, &mut Vec::new(), &mut err),
        0
    );
    let err = String::from_utf8(err).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with(&format!("locality resolve: the zone's replica {dead} failed the check")),
        "{err}"
    );
    options.check = false; // no ping: only the mark keeps the dead replica out
    assert_eq!(locality_resolve::resolve(&options).unwrap().endpoint, live);
    // Both down: the fallback, naming each failure.
    let doc = json!({"version": 1, "fallback": format!("127.0.0.1:{p}"), "zones": {ZONE: &dead}, "replicas": {ZONE: [&dead, format!("127.0.0.1:{}", common::server_port())]}});
    let both_dead = dir.path().join("both-dead.json");
    std::fs::write(&both_dead, doc.to_string()).unwrap();
    let both_dead_cache = dir.path().join("both-dead-cache");
    let r = check(&both_dead, &both_dead_cache, &[]);
    let reason = r.json()["reason"].as_str().unwrap().to_string();
    assert!(
        reason.starts_with("every replica of the zone failed the check (")
            && reason.matches("connection refused").count() == 2,
        "{reason}"
    );

    // A node that accepts and never answers: the fallback after the check timeout.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let doc = json!({"version": 1, "fallback": format!("127.0.0.1:{p}"), "zones": {ZONE: silent.local_addr().unwrap().to_string()}});
    let silent_map = dir.path().join("silent.json");
    std::fs::write(&silent_map, doc.to_string()).unwrap();
    let started = Instant::now();
    let r = check(&silent_map, &cache, &["--check-timeout", "200ms"]);
    assert!(r.json()["reason"].as_str().unwrap().contains("200 ms"), "{}", r.stdout);
    assert!(started.elapsed() < Duration::from_millis(1200));
}

/// The whole loop: `terraform apply` publishes the map to SSM (moto) with `zone_ids`;
/// `locality resolve --map ssm:...` under a fake IMDS, in an account whose AZ names differ
/// (its `ap-northeast-1c` is the cache account's `ap-northeast-1a`, both `apne1-az4`), prints
/// that zone's replica, matched by ID; a replica is replaced, apply, and resolve prints the new
/// one. Runs under Terraform 1.11.4 and again under 1.15.5 (scripts/test).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_publishes_the_map_and_resolve_reads_it_from_ssm() {
    use common::moto::{Moto, ENV};
    use common::{Terraform, PREAMBLE};
    let imds = FakeMetadata::start("ap-northeast-1c", ZONE_ID).await;
    let url = imds.url();
    tokio::task::spawn_blocking(move || {
        let moto = Moto::start();
        let mut tf = Terraform::dev_overrides();
        for (k, v) in ENV {
            tf.env(k, v);
        }
        tf.env("AWS_ENDPOINT_URL", &moto.endpoint);
        let config = |replica_a: &str| {
            format!(
                "{PREAMBLE}\nprovider \"locality\" {{\n  aws {{\n    region       = \"ap-northeast-1\"\n    endpoint_url = \"{}\"\n  }}\n}}\n\n\
                 resource \"locality_zone_replica_map\" \"cache\" {{\n  \
                 member {{\n    endpoint = \"primary.example:6379\"\n    zone     = \"ap-northeast-1a\"\n    role     = \"primary\"\n  }}\n  \
                 member {{\n    endpoint = \"{replica_a}\"\n    zone     = \"ap-northeast-1a\"\n  }}\n  \
                 member {{\n    endpoint = \"replica-c1.example:6379\"\n    zone     = \"ap-northeast-1c\"\n  }}\n  \
                 fallback_endpoint = \"reader.example:6379\"\n  \
                 zone_ids = {{\n    \"ap-northeast-1a\" = \"apne1-az4\"\n    \"ap-northeast-1c\" = \"apne1-az1\"\n  }}\n  \
                 ssm_parameter {{\n    name = \"/prod/cache/replica-map\"\n  }}\n}}\n\n\
                 output \"by_id\" {{\n  value = locality_zone_replica_map.cache.endpoints_by_zone_id\n}}\n",
                moto.endpoint
            )
        };
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("cache");
        let resolve_json = || {
            let mut env: Vec<(&str, &str)> = ENV.iter().filter(|(k, _)| *k != "AWS_EC2_METADATA_DISABLED").copied().collect();
            env.push(("AWS_ENDPOINT_URL", &moto.endpoint));
            env.push(("AWS_EC2_METADATA_SERVICE_ENDPOINT", &url));
            let r = resolve(&env, &["--map", "ssm:/prod/cache/replica-map", "--cache-dir", cache.to_str().unwrap(), "--format", "json"]);
            assert_eq!(r.code, 0, "{}", r.stderr);
            r.json()
        };

        tf.write("main.tf", &config("replica-a1.example:6379"));
        tf.ok(&["apply", "-auto-approve"]);
        let by_id: Value = serde_json::from_str(&tf.ok(&["output", "-json", "by_id"])).unwrap();
        assert_eq!(by_id, json!({"apne1-az4": "replica-a1.example:6379", "apne1-az1": "replica-c1.example:6379"}));
        let j = resolve_json();
        assert_eq!(
            j,
            json!({"endpoint": "replica-a1.example:6379", "route": "zone", "zone": "ap-northeast-1c", "zone_id": ZONE_ID, "zone_source": "imds-v2", "reason": null})
        );

        // The replica in apne1-az4 is replaced: the plan names the AZ, apply publishes, and the
        // next process (zone from the cache) reads from the new one.
        tf.write("main.tf", &config("replica-a2.example:6379"));
        let plan = tf.ok(&["plan"]);
        assert!(plan.contains("\"ap-northeast-1a\" = \"replica-a1.example:6379\" -> \"replica-a2.example:6379\""), "{plan}");
        tf.ok(&["apply", "-auto-approve"]);
        let j = resolve_json();
        assert_eq!(j["endpoint"], "replica-a2.example:6379");
        assert_eq!(j["zone_source"], "cache");
        tf.assert_no_changes();

        // The sidecar's metrics say which version of the parameter it reads (2: the second
        // apply) and when SSM says it was written. (A zone without a replica: no probe, so the
        // example host names are never looked up.)
        let text = common::moto::sidecar_metrics(&moto, "ssm:/prod/cache/replica-map", &dir.path().join("run"));
        assert!(text.contains("locality_sidecar_map{version=\"2\",digest=\""), "{text}");
        common::moto::assert_modified_recently(&text);
        assert!(text.contains("locality_sidecar_route{route=\"reader\",reason=\"no_replica\"} 1"), "{text}");
    })
    .await
    .unwrap();
}

/// `--check --tls`: the TLS handshake, then `PING`, against a TLS server on loopback (the
/// ElastiCache in-transit encryption case), trusting its CA through `LOCALITY_TLS_CA_FILE`;
/// without that CA the handshake fails and the route is the fallback, saying so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_over_tls() {
    use std::sync::Arc;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    let params = rcgen::CertificateParams::new(vec!["localhost".to_string()]).unwrap();
    let cert = params.self_signed(&key).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, cert.pem()).unwrap();
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::aws_lc_rs::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![cert.der().clone()],
            rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
        )
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                if let Ok(mut tls) = acceptor.accept(stream).await {
                    let mut buf = [0u8; 14];
                    if tls.read_exact(&mut buf).await.is_ok() && &buf == b"*1\r\n$4\r\nPING\r\n" {
                        let _ = tls.write_all(b"+PONG\r\n").await;
                        let _ = tls.flush().await;
                    }
                }
            });
        }
    });
    let map = write_map(
        dir.path(),
        &json!({"version": 1, "fallback": "reader.example:6379", "zones": {ZONE: format!("localhost:{port}")}}),
    );
    let cache = dir.path().join("cache");
    tokio::task::spawn_blocking(move || {
        let args = [
            "--map",
            map.to_str().unwrap(),
            "--cache-dir",
            cache.to_str().unwrap(),
            "--zone",
            ZONE,
            "--check",
            "--tls",
            "--check-timeout",
            "2s",
            "--format",
            "json",
            "--unhealthy-ttl",
            "0",
        ];
        let r = resolve(&[("LOCALITY_TLS_CA_FILE", ca.to_str().unwrap())], &args);
        assert_eq!(r.json()["route"], "zone", "{} {}", r.stdout, r.stderr);
        assert_eq!(r.json()["endpoint"], format!("localhost:{port}"));
        let r = resolve(&[], &args);
        let reason = r.json()["reason"].as_str().unwrap().to_string();
        assert!(reason.contains("TLS"), "{reason}");
    })
    .await
    .unwrap();
}

/// `--format env` exports: under dash and bash, `eval` then `exec` hands the variables to the
/// next process, and a value with quotes and spaces stays one value. (Before the fix the lines
/// were plain assignments: the exec'd process saw no LOCALITY_* variable.)
#[test]
fn env_format_reaches_the_process_an_entrypoint_execs() {
    let dir = tempfile::tempdir().unwrap();
    let map = json!({"version": 1, "fallback": "reader.example:6379", "zones": {ZONE: "replica-a.example:6379"}});
    let map = write_map(dir.path(), &map);
    let locality = env!("CARGO_BIN_EXE_locality");
    let script = format!(
        "eval \"$({locality} resolve --map {} --zone {ZONE} --cache-dir {} --format env)\"\nexec env\n",
        map.display(),
        dir.path().join("cache").display()
    );
    for shell in ["dash", "bash", "sh"] {
        let out = Command::new(shell)
            .args(["-c", &script])
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("AWS_EC2_METADATA_DISABLED", "true")
            .output()
            .unwrap();
        let env = String::from_utf8_lossy(&out.stdout);
        for line in [
            "LOCALITY_READ_ENDPOINT=replica-a.example:6379",
            "LOCALITY_READ_HOST=replica-a.example",
            "LOCALITY_READ_PORT=6379",
            &format!("LOCALITY_ZONE={ZONE}"),
            "LOCALITY_ROUTE=zone",
        ] {
            assert!(env.lines().any(|l| l == line), "{shell}: {line} not in\n{env}");
        }
    }
    // Quoting: a value with quotes, spaces and a `$` survives eval as one value.
    let tricky = "it's a \"x\" $HOME `y`";
    let line = format!("export V={}\n", locality_resolve::shell_quote(tricky));
    for shell in ["dash", "bash"] {
        let out = Command::new(shell)
            .args(["-c", "eval \"$(cat)\"\nexec printenv V"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .and_then(|mut child| {
                use std::io::Write;
                child.stdin.take().unwrap().write_all(line.as_bytes())?;
                child.wait_with_output()
            })
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), format!("{tricky}\n"), "{shell}");
    }
}

/// No request is sent without a region or credentials, and the message says which: no
/// "could not connect".
#[test]
fn aws_maps_without_region_or_credentials_say_so() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().to_str().unwrap();
    let base = [("HOME", home), ("AWS_ENDPOINT_URL", "http://127.0.0.1:1")];
    let r = resolve(
        &[
            base[0],
            base[1],
            ("AWS_ACCESS_KEY_ID", "AKID"),
            ("AWS_SECRET_ACCESS_KEY", "s"),
        ],
        &["--map", "ssm:/prod/cache/replica-map", "--zone", ZONE],
    );
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains("no AWS region is set: set AWS_REGION") && !r.stderr.contains("could not connect"),
        "{}",
        r.stderr
    );
    let r = resolve(
        &[base[0], base[1], ("AWS_REGION", "ap-northeast-1")],
        &["--map", "ssm:/prod/cache/replica-map", "--zone", ZONE],
    );
    assert_eq!(r.code, 1);
    assert!(
        r.stderr
            .contains("no AWS credentials were found; tried, in order: the environment (AWS_ACCESS_KEY_ID")
            && r.stderr.contains("~/.aws/credentials")
            && r.stderr.contains("EC2 instance profile")
            && !r.stderr.contains("could not connect"),
        "{}",
        r.stderr
    );
    // AWS_PROFILE naming a profile the files do not hold: said as such (not "no AWS region"),
    // with the profiles that are there.
    std::fs::create_dir_all(dir.path().join(".aws")).unwrap();
    std::fs::write(
        dir.path().join(".aws/config"),
        "[default]\nregion = ap-northeast-1\n\n[profile staging]\nregion = ap-northeast-1\n",
    )
    .unwrap();
    let r = resolve(
        &[base[0], base[1], ("AWS_PROFILE", "prod")],
        &["--map", "ssm:/prod/cache/replica-map", "--zone", ZONE],
    );
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains(
            "AWS_PROFILE names profile \"prod\", which is not in the shared config or credentials files (~/.aws/config"
        ) && r.stderr.contains("profiles there: default, staging")
            && !r.stderr.contains("region"),
        "{}",
        r.stderr
    );
    std::fs::remove_dir_all(dir.path().join(".aws")).unwrap();
    // With both, a closed endpoint is a connection failure, said once, without a debug dump.
    let r = resolve(
        &[
            base[0],
            base[1],
            ("AWS_REGION", "ap-northeast-1"),
            ("AWS_ACCESS_KEY_ID", "AKID"),
            ("AWS_SECRET_ACCESS_KEY", "s"),
            ("AWS_MAX_ATTEMPTS", "1"),
        ],
        &["--map", "ssm:/prod/cache/replica-map", "--zone", ZONE],
    );
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains(
            "ssm:GetParameter of \"/prod/cache/replica-map\": dispatch failure: could not reach http://127.0.0.1:1:"
        ) && r.stderr.contains("Connection refused")
            && !r.stderr.contains("DispatchFailure {")
            && !r.stderr.contains("ConnectorError {"),
        "{}",
        r.stderr
    );
}

/// The fenced `sh` block under "The entrypoint pattern" of the consuming guide, extracted from
/// the page and run as written by dash.
fn guide_entrypoint() -> String {
    let guide = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/guides/consuming-the-replica-map.md"
    ))
    .unwrap();
    let section = &guide[guide.find("## The entrypoint pattern").expect("the section")..];
    let start = section.find("```sh\n").expect("an sh block") + "```sh\n".len();
    section[start..start + section[start..].find("```").unwrap()].to_string()
}

/// The guide's entrypoint, as written, under dash: the `locality` binary and a stand-in
/// application, `node` (which records the environment it is exec'd with) on PATH, the map in SSM (moto),
/// and the environment an orchestrator gives (the one visible list of substitutions below).
/// Every broken map — missing, not JSON, version 2, AWS unreachable — still hands the
/// application the reader endpoint; a good map hands it the zone's replica. (Before the fix
/// the exec'd process saw no LOCALITY_* variable at all.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_guides_entrypoint_hands_the_application_an_endpoint_on_every_path() {
    let moto = common::moto::Moto::start();
    let ssm = aws_sdk_ssm::Client::new(&moto.config().await);
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_locality"), bin.join("locality")).unwrap();
    let seen = dir.path().join("seen-env");
    std::fs::write(bin.join("node"), format!("#!/bin/sh\nenv > '{}'\n", seen.display())).unwrap();
    std::fs::set_permissions(bin.join("node"), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let script = dir.path().join("entrypoint.sh");
    std::fs::write(&script, guide_entrypoint()).unwrap();
    let closed = format!("http://127.0.0.1:{}", common::server_port());
    const PARAM: &str = "/prod/cache/replica-map";

    let cases: [(&str, Option<String>, bool); 5] = [
        ("missing", None, false),
        ("not json", Some("<html>maintenance</html>".into()), false),
        (
            "version 2",
            Some(r#"{"version":2,"fallback":"reader.example:6379"}"#.into()),
            false,
        ),
        ("aws unreachable", Some(map_json().to_string()), true),
        ("good", Some(map_json().to_string()), false),
    ];
    for (name, value, unreachable) in cases {
        let _ = ssm.delete_parameter().name(PARAM).send().await;
        if let Some(value) = &value {
            ssm.put_parameter()
                .name(PARAM)
                .value(value)
                .r#type(aws_sdk_ssm::types::ParameterType::String)
                .send()
                .await
                .unwrap();
        }
        let _ = std::fs::remove_file(&seen);
        // The substitutions: the environment only; the script is the guide's text.
        let env: Vec<(&str, String)> = vec![
            (
                "PATH",
                format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default()),
            ),
            ("HOME", dir.path().display().to_string()),
            ("AWS_ACCESS_KEY_ID", "testing".into()),
            ("AWS_SECRET_ACCESS_KEY", "testing".into()),
            ("AWS_REGION", "ap-northeast-1".into()),
            (
                "AWS_ENDPOINT_URL",
                if unreachable {
                    closed.clone()
                } else {
                    moto.endpoint.clone()
                },
            ),
            ("AWS_EC2_METADATA_DISABLED", "true".into()),
            ("LOCALITY_ZONE", ZONE.into()),
            ("LOCALITY_FALLBACK", "reader.example:6379".into()),
            // (locality resolve's default cache directory: this test's own.)
            ("XDG_RUNTIME_DIR", dir.path().display().to_string()),
        ];
        let script = script.clone();
        let out = tokio::task::spawn_blocking(move || {
            Command::new("dash")
                .arg(&script)
                .env_clear()
                .envs(env)
                .output()
                .unwrap()
        })
        .await
        .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{name}: {stderr}");
        let app_env = std::fs::read_to_string(&seen)
            .unwrap_or_else(|_| panic!("{name}: the application was not exec'd: {stderr}"));
        let (endpoint, route) = if name == "good" {
            ("replica-a.example:6379", "zone")
        } else {
            ("reader.example:6379", "fallback")
        };
        for line in [
            format!("LOCALITY_READ_ENDPOINT={endpoint}"),
            format!("LOCALITY_ROUTE={route}"),
            "LOCALITY_FALLBACK=reader.example:6379".to_string(),
        ] {
            assert!(
                app_env.lines().any(|l| l == line),
                "{name}: {line} not in the app's environment:\n{app_env}\nstderr: {stderr}"
            );
        }
        if route == "fallback" {
            assert!(
                stderr.contains("locality resolve: using the fallback reader.example:6379: the map could not be read"),
                "{name}: {stderr}"
            );
        }
    }
}

/// Every `sh` block of the guide that runs `locality resolve` and then `exec`s something (the
/// generic entrypoint, PHP-FPM's, GLIDE's), as written, under dash, with stand-ins for what they
/// `exec` (`node`, `php-fpm`, and `app` for `exec "$@"`) that record the environment they get.
/// The adversaries of issue 56: `LOCALITY_FALLBACK` given as `reader_endpoint_address` gives it
/// (no `:6379`), a `LOCALITY_ZONE` that is no zone, and a map that cannot be read with
/// `LOCALITY_FALLBACK` empty. Each stops the script with resolve's status (2, 2, 1) and its
/// message, and the application is never started (before: it started with
/// `LOCALITY_READ_ENDPOINT` empty and every request failed). The control: the same unreadable
/// map with a good `LOCALITY_FALLBACK` starts the application on the reader (a runtime failure
/// ends at the fallback).
#[test]
fn every_entrypoint_in_the_guide_stops_the_container_when_resolve_fails() {
    let guide = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/guides/consuming-the-replica-map.md"
    ))
    .unwrap();
    let blocks: Vec<&str> = guide
        .split("```sh\n")
        .skip(1)
        .map(|rest| &rest[..rest.find("```").unwrap()])
        .filter(|block| block.contains("locality resolve") && block.contains("\nexec "))
        .collect();
    assert_eq!(
        blocks.len(),
        3,
        "the generic, PHP-FPM and GLIDE entrypoints: {blocks:#?}"
    );
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_locality"), bin.join("locality")).unwrap();
    let seen = dir.path().join("seen-env");
    for stand_in in ["node", "php-fpm", "app"] {
        std::fs::write(bin.join(stand_in), format!("#!/bin/sh\nenv > '{}'\n", seen.display())).unwrap();
        std::fs::set_permissions(bin.join(stand_in), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    }
    // AWS on a closed loopback port: the map cannot be read.
    let closed = format!("http://127.0.0.1:{}", common::server_port());
    let cases: [(&str, &str, &str, i32, &str); 4] = [
        (
            "the reader address without its port",
            "sessions-ro.abc123.ng.0001.apne1.cache.amazonaws.com",
            ZONE,
            2,
            "LOCALITY_FALLBACK",
        ),
        (
            "a zone that is no zone",
            "reader.example:6379",
            "us-east-1-garbage_",
            2,
            "LOCALITY_ZONE",
        ),
        ("no map and no fallback", "", ZONE, 1, "--fallback or LOCALITY_FALLBACK"),
        (
            "no map, a good fallback (control)",
            "reader.example:6379",
            ZONE,
            0,
            "the map could not be read",
        ),
    ];
    for (n, block) in blocks.iter().enumerate() {
        let script = dir.path().join(format!("entrypoint-{n}.sh"));
        std::fs::write(&script, block).unwrap();
        for (case, fallback, zone, code, said) in cases {
            let _ = std::fs::remove_file(&seen);
            let out = Command::new("dash")
                .arg(&script)
                .arg("app")
                .env_clear()
                .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
                .env("HOME", dir.path())
                .env("XDG_RUNTIME_DIR", dir.path())
                .env("AWS_ACCESS_KEY_ID", "testing")
                .env("AWS_SECRET_ACCESS_KEY", "testing")
                .env("AWS_REGION", "ap-northeast-1")
                .env("AWS_ENDPOINT_URL", &closed)
                .env("AWS_MAX_ATTEMPTS", "1")
                .env("AWS_EC2_METADATA_DISABLED", "true")
                .env("LOCALITY_ZONE", zone)
                .env("LOCALITY_FALLBACK", fallback)
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            let what = format!("entrypoint {n} ({}), {case}", block.lines().last().unwrap_or_default());
            assert_eq!(out.status.code(), Some(code), "{what}: {stderr}");
            assert!(stderr.contains(said), "{what}: resolve's message on stderr: {stderr}");
            let started = std::fs::read_to_string(&seen).ok();
            if code == 0 {
                let env = started.unwrap_or_else(|| panic!("{what}: the application was not started: {stderr}"));
                let expected = if block.contains("--format glide") && !block.contains("--format env") {
                    "LOCALITY_GLIDE={"
                } else {
                    "LOCALITY_READ_ENDPOINT=reader.example:6379"
                };
                assert!(env.lines().any(|l| l.starts_with(expected)), "{what}: {env}");
            } else {
                assert_eq!(started, None, "{what}: the application was started: {stderr}");
            }
            eprintln!("{what}: exit {code}, {}", stderr.lines().last().unwrap_or_default());
        }
    }
}

/// A `LOCALITY_ZONE` that is neither an AZ name nor an AZ ID is a configuration mistake: a usage
/// error (exit 2, nothing on stdout, one line naming the variable and the accepted forms),
/// with or without `LOCALITY_FALLBACK` (issue 56: usage errors are loud, so that the guide's
/// entrypoint stops the container instead of starting it on the reader for ever; before, with a
/// fallback, exit 0 and the reader). An empty one is not set. A missing map file says "no
/// such file".
#[test]
fn an_unusable_zone_variable_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let map = write_map(dir.path(), &map_json());
    let map = map.to_str().unwrap();
    let garbage = ("LOCALITY_ZONE", "us-east-1-garbage_");
    for env in [
        vec![garbage, ("LOCALITY_FALLBACK", "given.example:6379")],
        vec![garbage],
    ] {
        for args in [
            &["--map", map, "--format", "env"][..],
            &["--map", "/nonexistent/map.json"][..],
        ] {
            let r = resolve(&env, args);
            assert_eq!((r.code, r.stdout.as_str()), (2, ""), "{env:?} {args:?}: {}", r.stderr);
            assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
            assert!(
                r.stderr.contains(r#"LOCALITY_ZONE="us-east-1-garbage_""#)
                    && r.stderr.contains("AZ name (ap-northeast-1a)")
                    && r.stderr.contains("AZ ID (apne1-az4)"),
                "{}",
                r.stderr
            );
        }
    }
    // Empty (a downward-API variable whose label is missing): not set; the map's zone lookup
    // goes on (here: no metadata, so the fallback, exit 0).
    let r = resolve(
        &[("LOCALITY_ZONE", " "), ("LOCALITY_FALLBACK", "given.example:6379")],
        &["--map", "/nonexistent/map.json"],
    );
    assert_eq!((r.code, r.stdout.as_str()), (0, "given.example:6379\n"), "{}", r.stderr);
    assert!(
        r.stderr.contains("/nonexistent/map.json cannot be read (no such file)"),
        "{}",
        r.stderr
    );
    // No map and no fallback: the message names both ways to give one.
    let r = resolve(&[], &["--map", "/nonexistent/map.json", "--zone", ZONE]);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains("no such file") && r.stderr.contains("--fallback or LOCALITY_FALLBACK"),
        "{}",
        r.stderr
    );
}

// ---------------------------------------------------------------------------------------------
// Issue 43: files and variables that steer root, and credentials never through a proxy.
// ---------------------------------------------------------------------------------------------

/// `daemon` (Debian): the other local user who owns a shared AWS file.
const OTHER_USER: u32 = 1;

/// Item 5. An AWS config file that another user owns, or that others may write, is not read by
/// root: its `credential_process` would run as uid 0 (shown first with root's own file, whose
/// process does run and writes `id -u`). The error names the file and the variable that named
/// it (`AWS_CONFIG_FILE`, or `HOME` for `~/.aws/config`), and the run ends at the fallback.
#[test]
fn root_refuses_shared_aws_files_another_user_could_write() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let marker = dir.path().join("ran-as");
    let config = dir.path().join("config");
    std::fs::write(
        &config,
        format!(
            "[default]\nregion = ap-northeast-1\ncredential_process = sh -c 'id -u > {}; echo {{\\\"Version\\\": 1, \\\"AccessKeyId\\\": \\\"AKIDEXAMPLE\\\", \\\"SecretAccessKey\\\": \\\"x\\\"}}'\n",
            marker.display()
        ),
    )
    .unwrap();
    let config_text = config.to_str().unwrap().to_string();
    let home = dir.path().to_str().unwrap().to_string();
    let run = |config_var: bool| {
        let mut env = vec![
            ("HOME", home.as_str()),
            ("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/credentials"),
            ("AWS_ENDPOINT_URL", "http://127.0.0.1:1"),
        ];
        if config_var {
            env.push(("AWS_CONFIG_FILE", config_text.as_str()));
        }
        resolve(
            &env,
            &[
                "--map",
                "ssm:/prod/cache/replica-map",
                "--zone",
                ZONE,
                "--fallback",
                "reader.example:6379",
            ],
        )
    };
    // Root's own file: the process runs, as root.
    let own = run(true);
    assert_eq!(
        std::fs::read_to_string(&marker)
            .map(|s| s.trim().to_string())
            .ok()
            .as_deref(),
        Some("0"),
        "root's own config ran its credential_process: {}",
        own.stderr
    );
    std::fs::remove_file(&marker).unwrap();
    // Another user's: refused before the SDK reads it; nothing runs.
    std::os::unix::fs::chown(&config, Some(OTHER_USER), Some(OTHER_USER)).unwrap();
    let refused = run(true);
    assert_eq!(
        (refused.code, refused.stdout.trim()),
        (0, "reader.example:6379"),
        "{}",
        refused.stderr
    );
    assert!(!marker.exists(), "another user's credential_process ran as root");
    assert!(
        refused.stderr.contains(&format!(
            "the shared AWS file {config_text} (from AWS_CONFIG_FILE) is refused"
        )) && refused.stderr.contains(&format!("owned by uid {OTHER_USER}")),
        "{}",
        refused.stderr
    );
    // Root's, but writable by others: refused too.
    std::os::unix::fs::chown(&config, Some(0), Some(0)).unwrap();
    std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o666)).unwrap();
    let open = run(true);
    assert!(
        !marker.exists(),
        "a config others can write ran its credential_process as root"
    );
    assert!(open.stderr.contains("writable by others"), "{}", open.stderr);
    // The default place, ~/.aws/config, named by HOME.
    std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o644)).unwrap();
    let aws_dir = dir.path().join(".aws");
    std::fs::create_dir(&aws_dir).unwrap();
    std::fs::set_permissions(&aws_dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::rename(&config, aws_dir.join("config")).unwrap();
    std::os::unix::fs::chown(aws_dir.join("config"), Some(OTHER_USER), Some(OTHER_USER)).unwrap();
    let by_home = run(false);
    assert!(!marker.exists(), "{}", by_home.stderr);
    assert!(
        by_home.stderr.contains("(from HOME (~/.aws/config)) is refused"),
        "{}",
        by_home.stderr
    );
}

/// What a loopback listener received, one entry per connection.
type Received = std::sync::Arc<std::sync::Mutex<Vec<String>>>;

/// A listener on loopback that records each connection's request head and answers `answer`.
fn recording_server(answer: String) -> (u16, Received) {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let received: Received = Default::default();
    let sink = std::sync::Arc::clone(&received);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let (sink, answer) = (std::sync::Arc::clone(&sink), answer.clone());
            std::thread::spawn(move || {
                let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
                let mut head = Vec::new();
                let mut buf = [0u8; 4096];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                sink.lock().unwrap().push(String::from_utf8_lossy(&head).into_owned());
                let _ = stream.write_all(answer.as_bytes());
            });
        }
    });
    (port, received)
}

/// Item 6. With `HTTP_PROXY` (and the other proxy variables) set, the container-credentials
/// request and its `AWS_CONTAINER_AUTHORIZATION_TOKEN` go straight to the loopback endpoint,
/// never to the proxy (before the fix the proxy received them, three times). Other AWS
/// requests still go through the proxy, as the variables say (an https endpoint: CONNECT).
#[test]
fn credentials_on_this_host_never_go_through_a_proxy() {
    const TOKEN: &str = "CONTAINER-TOKEN-MARKER";
    let (proxy, through_proxy) =
        recording_server("HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".into());
    let body = r#"{"AccessKeyId":"AKIDEXAMPLE","SecretAccessKey":"secret","Token":"token","Expiration":"2099-01-01T00:00:00Z"}"#;
    let (credentials, at_credentials) = recording_server(format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    ));
    let home = tempfile::tempdir().unwrap();
    let proxy_url = format!("http://127.0.0.1:{proxy}");
    let full_uri = format!("http://127.0.0.1:{credentials}/v2/credentials/x");
    let run = |endpoint: &str| {
        resolve(
            &[
                ("HOME", home.path().to_str().unwrap()),
                ("HTTP_PROXY", &proxy_url),
                ("HTTPS_PROXY", &proxy_url),
                ("http_proxy", &proxy_url),
                ("https_proxy", &proxy_url),
                ("ALL_PROXY", &proxy_url),
                ("AWS_REGION", "ap-northeast-1"),
                ("AWS_CONTAINER_CREDENTIALS_FULL_URI", &full_uri),
                ("AWS_CONTAINER_AUTHORIZATION_TOKEN", TOKEN),
                ("AWS_ENDPOINT_URL", endpoint),
            ],
            &[
                "--map",
                "ssm:/prod/cache/replica-map",
                "--zone",
                ZONE,
                "--fallback",
                "reader.example:6379",
            ],
        )
    };
    // SSM on loopback too (closed): everything direct.
    let direct = run("http://127.0.0.1:1");
    assert_eq!(direct.stdout.trim(), "reader.example:6379", "{}", direct.stderr);
    let asked = at_credentials.lock().unwrap().clone();
    assert!(
        asked
            .iter()
            .any(|head| head.contains(TOKEN) && head.starts_with("GET /v2/credentials/x")),
        "the credentials endpoint was asked directly: {asked:?}\n{}",
        direct.stderr
    );
    assert_eq!(
        through_proxy.lock().unwrap().clone(),
        Vec::<String>::new(),
        "{}",
        direct.stderr
    );
    // An https endpoint elsewhere: through the proxy, and the token still not.
    let proxied = run("https://ssm.example.invalid");
    assert_eq!(proxied.stdout.trim(), "reader.example:6379", "{}", proxied.stderr);
    let seen = through_proxy.lock().unwrap().clone();
    assert!(
        seen.iter()
            .any(|head| head.starts_with("CONNECT ssm.example.invalid:443")),
        "{seen:?}\n{}",
        proxied.stderr
    );
    assert!(seen.iter().all(|head| !head.contains(TOKEN)), "{seen:?}");
}

/// A truncated map, as a new user met it (`{"version":1,`): the message says the JSON ends early,
/// at its line and column (it said "not a JSON object"), and each binary prefixes its messages
/// with its own name (`locality-app` said `locality resolve:`).
#[test]
fn a_truncated_map_is_said_as_such_by_each_binary_under_its_own_name() {
    let dir = tempfile::tempdir().unwrap();
    let map = dir.path().join("replica-map.json");
    std::fs::write(&map, "{\"version\":1,\n").unwrap();
    for (binary, name) in [
        (PathBuf::from(env!("CARGO_BIN_EXE_locality")), "locality"),
        (common::app_binary(), "locality-app"),
    ] {
        let out = Command::new(&binary)
            .args([
                "resolve",
                "--map",
                &map.display().to_string(),
                "--zone",
                "ap-northeast-1a",
            ])
            .env("LOCALITY_FALLBACK", "reader.example:6379")
            .env("HOME", dir.path())
            .env("XDG_RUNTIME_DIR", dir.path())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("the map ends before its JSON is complete (at line 2, column 0)"),
            "{name}: {stderr}"
        );
        assert!(
            !stderr.is_empty() && stderr.lines().all(|l| l.starts_with(&format!("{name} resolve: "))),
            "{name}: {stderr}"
        );
        eprintln!("{name}: {stderr}");
    }
}

/// One description of the cache directory: the guide's "Caching across processes" gives the
/// order `locality resolve --help` gives (it once left out $RUNTIME_DIRECTORY and /run/locality,
/// where root did write).
#[test]
fn the_guide_and_help_describe_the_cache_directory_alike() {
    let words = |t: &str| t.replace('`', "").split_whitespace().collect::<Vec<_>>().join(" ");
    let help = Command::new(env!("CARGO_BIN_EXE_locality"))
        .args(["resolve", "--help"])
        .output()
        .unwrap();
    let help = words(&String::from_utf8_lossy(&help.stdout));
    let at = help.find("--cache-dir <DIR>").expect("--cache-dir in --help");
    let default = &help[at..];
    let start = default.find("(default: ").unwrap();
    let default = &default[start..start + default[start..].find(')').unwrap() + 1];
    let guide = words(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/guides/consuming-the-replica-map.md"),
        )
        .unwrap(),
    );
    let section = &guide[guide.find("### Caching across processes").unwrap()..];
    let section = &section[..section.find("## The map's format").unwrap()];
    let inner = default.trim_start_matches('(').trim_end_matches(')');
    assert!(section.contains(inner), "--help says {default:?}; the guide: {section}");
}
