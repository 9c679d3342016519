//! `locality-app`, the application-side binary: it answers like `locality resolve` from a map
//! file (the zone's replica, the fallback with the reason on stderr), takes the same
//! environment, refuses bad flags as usage errors, and carries only what an application host
//! needs (no provider, generator or gRPC crates in its dependency tree).

use std::process::Command;

const MAP: &str =
    r#"{"version":1,"fallback":"reader.cache.test:6379","zones":{"ap-northeast-1a":"replica-a.cache.test:6379"}}"#;

fn app(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_locality-app"));
    cmd.args(args)
        .env_remove("LOCALITY_ZONE")
        .env_remove("LOCALITY_FALLBACK");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn resolves_from_a_map_file_like_locality_resolve() {
    let dir = tempfile::tempdir().unwrap();
    let map = dir.path().join("map.json");
    std::fs::write(&map, MAP).unwrap();
    let cache = dir.path().join("cache");
    std::fs::create_dir(&cache).unwrap();
    #[cfg(unix)]
    std::fs::set_permissions(&cache, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    let base = [
        "resolve",
        "--map",
        map.to_str().unwrap(),
        "--cache-dir",
        cache.to_str().unwrap(),
    ];
    let with = |extra: &[&'static str]| -> Vec<&str> { base.iter().copied().chain(extra.iter().copied()).collect() };

    let (code, out, _) = app(&with(&["--zone", "ap-northeast-1a"]), &[]);
    assert_eq!((code, out.as_str()), (0, "replica-a.cache.test:6379\n"));
    // The zone from the environment, and JSON output.
    let (code, out, _) = app(&with(&["--format", "json"]), &[("LOCALITY_ZONE", "ap-northeast-1a")]);
    assert_eq!(code, 0);
    assert!(
        out.contains(r#""endpoint":"replica-a.cache.test:6379""#) && out.contains(r#""zone_source":"env""#),
        "{out}"
    );
    // Another zone: the fallback, with the reason on stderr.
    let (code, out, err) = app(&with(&["--zone", "ap-northeast-1c"]), &[]);
    assert_eq!((code, out.as_str()), (0, "reader.cache.test:6379\n"), "{err}");
    assert!(err.contains("ap-northeast-1c"), "{err}");
    // A bad flag value is a usage error.
    let (code, _, err) = app(&with(&["--zone", "not a zone"]), &[]);
    assert_eq!(code, 2, "{err}");
    // `health`: a PING through a listener; nothing there is unhealthy, with the reason.
    let (code, _, err) = app(&["health", "--listen", "127.0.0.1:1"], &[]);
    assert_eq!(code, 1);
    assert!(err.contains("unhealthy: 127.0.0.1:1: connection refused"), "{err}");
    let (code, _, err) = app(&["health", "--listening", "--listen", "127.0.0.1:1"], &[]);
    assert_eq!(code, 1);
    assert!(err.contains("unhealthy: 127.0.0.1:1: connection refused"), "{err}");
    // A listener whose nodes do not answer (HAProxy with every server down): not healthy, but
    // alive (`--listening`, the liveness check).
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let listen = silent.local_addr().unwrap().to_string();
    let (code, _, err) = app(&["health", "--timeout", "300ms", "--listen", &listen], &[]);
    assert_eq!(code, 1, "{err}");
    assert!(err.starts_with(&format!("unhealthy: {listen}: ")), "{err}");
    let (code, _, err) = app(&["health", "--listening", "--listen", &listen], &[]);
    assert_eq!(code, 0, "{err}");
    let (code, out, _) = app(&["--version"], &[]);
    assert_eq!(
        (code, out.trim()),
        (0, concat!("locality-app ", env!("CARGO_PKG_VERSION")))
    );
}

#[test]
fn carries_no_provider_generator_or_grpc_crate() {
    let out = Command::new(env!("CARGO"))
        .args([
            "tree",
            "--locked",
            "--offline",
            "-p",
            "locality-resolve",
            "--features",
            "cli",
            "-e",
            "normal",
            "--prefix",
            "none",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let tree = String::from_utf8_lossy(&out.stdout);
    for crate_name in [
        "locality v",
        "tonic",
        "prost",
        "hcl-rs",
        "aws-sdk-elasticache",
        "reqwest",
    ] {
        assert!(
            !tree.lines().any(|l| l.starts_with(crate_name)),
            "{crate_name} is in locality-app's tree"
        );
    }
    assert!(
        tree.lines().any(|l| l.starts_with("aws-sdk-ssm")),
        "the map sources are in it"
    );
}
