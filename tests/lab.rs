//! The lab (`scripts/lab`, docs/guides/lab.md), run as CI runs it: as root, its short run, and
//! every figure of its report checked here again from `report.json`, against the truth it
//! carries (the kernel's counters) rather than against the lab's own verdicts. Then the lab
//! failing half way and interrupted half way: the step named, and no namespace, process or
//! file in /etc/netns left behind.
//!
//! The lab needs root (network namespaces, nft) and Linux; `scripts/test` runs as root in CI.
//! Run as another user these tests fail with the lab's own sentence: a gap is never skipped.

use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// One lab at a time: they share the machine's namespace list and its two cores.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn lab_command(out: &Path, extra: &[&str]) -> Command {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_locality"))
        .parent()
        .unwrap()
        .to_path_buf();
    let mut cmd = Command::new(root.join("scripts/lab"));
    cmd.arg("--out").arg(out).args(extra);
    // The binaries this test run built (scripts/lab would build the same ones otherwise).
    cmd.env("LOCALITY_LAB_BIN_DIR", &bin_dir);
    cmd
}

/// Namespaces, /etc/netns entries and processes of labs.
fn leftovers() -> Vec<String> {
    let mut found = Vec::new();
    let list = Command::new("ip").args(["netns", "list"]).output().unwrap();
    for line in String::from_utf8_lossy(&list.stdout).lines() {
        if line.starts_with("lab") {
            found.push(format!("namespace {line}"));
        }
    }
    if let Ok(entries) = std::fs::read_dir("/etc/netns") {
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().to_string();
            if name.starts_with("lab") {
                found.push(format!("/etc/netns/{name}"));
            }
        }
    }
    let ps = Command::new("ps").args(["-eo", "pid,args"]).output().unwrap();
    for line in String::from_utf8_lossy(&ps.stdout).lines() {
        if line.contains("locality-lab-") || line.contains("scripts/lib/lab/agents.py") {
            found.push(format!("process {}", line.trim()));
        }
    }
    found
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))).unwrap()
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                out.extend(files_under(&path));
            } else {
                out.push(path);
            }
        }
    }
    out
}

/// The short run, as `.ci/run` runs it: every drill's figures from `report.json`.
#[test]
fn the_short_lab_proves_each_claim_on_real_packets() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let out = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let run = lab_command(out.path(), &["--short"])
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr).to_string();
    eprintln!("{stderr}");
    eprintln!("the short lab took {:.0} s", started.elapsed().as_secs_f64());
    assert!(leftovers().is_empty(), "left behind: {:?}", leftovers());
    let report = json(&out.path().join("report.json"));
    assert!(run.status.success(), "scripts/lab --short failed:\n{stderr}");

    // a. Load: read bytes across zones, at the replicas' end, by the kernel.
    let baseline = report["cross_zone_read_bytes"]["baseline"].as_u64().unwrap();
    let locality = report["cross_zone_read_bytes"]["locality"].as_u64().unwrap();
    assert!(baseline > 1_000_000, "the baseline read across zones: {baseline} B");
    assert!(
        locality * 10 <= baseline,
        "at least 90 % less: {locality} B against {baseline} B"
    );
    let load = &report["load"];
    for run in ["baseline", "locality"] {
        assert_eq!(load[run]["failed"], 0, "{run}: {}", load[run]);
        assert!(load[run]["answered"].as_u64().unwrap() > 500, "{run}: {}", load[run]);
    }
    assert_eq!(
        load["locality"]["routes"]["zone"], load["locality"]["answered"],
        "every read in the zone: {}",
        load["locality"]
    );

    // b and c: no request failed; b's zone went to the reader and came back; c's too.
    assert_eq!(
        report["failed_requests"]["node_failure"], 0,
        "{}",
        report["node_failure"]
    );
    assert_eq!(
        report["failed_requests"]["metadata_outage"], 0,
        "{}",
        report["metadata_outage"]
    );
    let nf = &report["node_failure"];
    assert!(nf["zone_requests"]["routes"]["fallback"].as_u64().unwrap() > 0, "{nf}");
    assert!(nf["first_fallback_after_s"].as_f64().unwrap() < 2.0, "{nf}");
    assert!(nf["back_in_zone_after_kill_s"].as_f64().is_some(), "{nf}");
    let mo = &report["metadata_outage"];
    assert!(mo["during_outage"]["routes"]["fallback"].as_u64().unwrap() > 0, "{mo}");
    assert_eq!(mo["during_outage"]["routes"].get("zone"), None, "{mo}");
    assert!(mo["back_at"].as_f64().is_some(), "{mo}");

    // The audit's share is the kernel's, in every phase, to the last bit, in both formats.
    assert_eq!(report["audit_share"], report["kernel_share"]);
    let shares = report["shares"].as_array().unwrap();
    assert_eq!(shares.len(), 6, "{shares:?}");
    for phase in shares {
        assert_eq!(phase["audit"], phase["kernel"], "{phase}");
        assert_eq!(phase["audit_custom_format"], phase["kernel"], "{phase}");
        assert_eq!(phase["audit_in_zone_bytes"], phase["kernel_in_zone_bytes"], "{phase}");
        assert_eq!(
            phase["audit_cross_zone_bytes"], phase["kernel_cross_zone_bytes"],
            "{phase}"
        );
    }
    assert_eq!(report["athena"]["share"], report["audit_share"], "{}", report["athena"]);

    // d. The savings vanish silently: the audit says so, the plan shows it, the apply ends it.
    let replaced = &report["replaced_replica"];
    assert!(replaced["share_stale_map"].as_f64().unwrap() < 0.95, "{replaced}");
    assert_eq!(replaced["min_share"]["exit"], 3, "{replaced}");
    assert_eq!(replaced["plan_exit"], 2, "{replaced}");
    let plan = replaced["plan"].as_str().unwrap();
    assert!(
        plan.contains("10.0.3.21:6379") && plan.contains("ap-northeast-1d"),
        "{plan}"
    );
    assert_eq!(replaced["share_after_apply"], 1.0, "{replaced}");
    assert_eq!(replaced["plan_after_apply_exit"], 0, "{replaced}");

    // e. AWS's clock: a row per skew, the audit never above the kernel's bytes.
    let skews = report["clock_skew"].as_array().unwrap();
    assert!(skews.iter().any(|s| s["max_skew_s"] == 60), "{skews:?}");

    // The delay line delayed, at the start and at the end.
    for measured in report["delay"]["measured"].as_array().unwrap() {
        assert!(measured["added_rtt_ms"].as_f64().unwrap() >= 1.0, "{measured}");
        assert_eq!(measured["delay_line_alive"], true, "{measured}");
    }

    // The records as AWS delivers them, and what the audit read, kept beside the report.
    let logs = PathBuf::from(report["flow_logs"].as_str().unwrap());
    let gz: Vec<PathBuf> = files_under(&logs)
        .into_iter()
        .filter(|p| p.to_string_lossy().ends_with(".log.gz"))
        .collect();
    assert!(!gz.is_empty());
    for file in &gz {
        let text = file.to_string_lossy();
        assert!(
            text.contains("/AWSLogs/123456789012/vpcflowlogs/ap-northeast-1/20"),
            "{text}"
        );
        let name = file.file_name().unwrap().to_string_lossy().to_string();
        assert!(
            name.starts_with("123456789012_vpcflowlogs_ap-northeast-1_fl-"),
            "{name}"
        );
    }
    let subnets = json(&out.path().join("subnets.json"));
    assert_eq!(subnets["Subnets"].as_array().unwrap().len(), 3);
    let map = json(&out.path().join("replica-map.json"));
    assert_eq!(map["zones"]["ap-northeast-1d"], "10.0.3.21:6379", "{map}");
    let png = std::fs::read(out.path().join("report.png")).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    let md = std::fs::read_to_string(out.path().join("report.md")).unwrap();
    assert!(md.contains("| claim | the seed |") && md.contains("report.png"), "{md}");

    // Anyone can run the audit again on the same records, and gets the same share.
    let again = Command::new(env!("CARGO_BIN_EXE_locality"))
        // (Without --since/--until: every record read counts.)
        .args(["audit", "--format", "json", "--map"])
        .arg(out.path().join("replica-map.json"))
        .arg("--subnets")
        .arg(out.path().join("subnets.json"))
        .arg("--flow-logs")
        .arg(logs.join("d-applied"))
        .output()
        .unwrap();
    assert!(again.status.success(), "{}", String::from_utf8_lossy(&again.stderr));
    let again: serde_json::Value = serde_json::from_slice(&again.stdout).unwrap();
    let d_applied = shares.iter().find(|s| s["phase"] == "d-applied").unwrap();
    assert_eq!(again["in_zone_share"], d_applied["kernel"]);
}

/// A lab that fails half way (a step made to fail) says which step, and leaves nothing behind.
#[test]
fn a_lab_that_fails_half_way_names_the_step_and_leaves_nothing() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // What a lab killed by SIGKILL leaves: a namespace with a process in it, a folder in
    // /etc/netns. The next lab removes them (and says so) before it builds its own.
    assert!(Command::new("ip")
        .args(["netns", "add", "lab0dead-router"])
        .status()
        .unwrap()
        .success());
    let mut sleeper = Command::new("ip")
        .args(["netns", "exec", "lab0dead-router", "sleep", "600"])
        .spawn()
        .unwrap();
    std::fs::create_dir_all("/etc/netns/lab0dead-app-a").unwrap();
    let out = tempfile::tempdir().unwrap();
    let run = lab_command(out.path(), &["--short", "--fail-at", "the apps"])
        .output()
        .unwrap();
    let _ = sleeper.kill();
    let _ = sleeper.wait();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("failed at step «the apps"), "{stderr}");
    assert!(
        stderr.contains("removed what a lab that did not end left behind: 1 namespace, 1 /etc/netns folder (lab0dead)"),
        "{stderr}"
    );
    assert!(leftovers().is_empty(), "left behind: {:?}", leftovers());
}

/// Ctrl-C half way (SIGINT to the lab's process group, as a terminal sends it): exit 130, the
/// step named, nothing left behind.
#[test]
fn a_lab_interrupted_half_way_leaves_nothing() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let out = tempfile::tempdir().unwrap();
    let log = out.path().join("stderr");
    let mut child = lab_command(&out.path().join("report"), &["--short"])
        .stderr(std::fs::File::create(&log).unwrap())
        .process_group(0)
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(300);
    while !std::fs::read_to_string(&log)
        .unwrap_or_default()
        .contains("a-baseline:")
    {
        assert!(
            Instant::now() < deadline,
            "{}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        assert!(
            child.try_wait().unwrap().is_none(),
            "{}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    std::thread::sleep(Duration::from_secs(3));
    let group = format!("-{}", child.id());
    assert!(Command::new("kill")
        .args(["-INT", "--", &group])
        .status()
        .unwrap()
        .success());
    let status = child.wait().unwrap();
    let stderr = std::fs::read_to_string(&log).unwrap();
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("interrupted at step «drill a"), "{stderr}");
    assert!(leftovers().is_empty(), "left behind: {:?}", leftovers());
}

/// Not root: the lab says what it needs, and starts nothing.
#[test]
fn the_lab_says_it_needs_root() {
    let out = tempfile::tempdir().unwrap();
    // A copy of the script where the other user can reach it (a checkout may sit in a folder
    // only root opens, as a clean clone in a 0700 temp dir does).
    use std::os::unix::fs::PermissionsExt as _;
    let copy = tempfile::tempdir().unwrap();
    std::fs::set_permissions(copy.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::create_dir(copy.path().join("scripts")).unwrap();
    std::fs::set_permissions(copy.path().join("scripts"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let script = copy.path().join("scripts/lab");
    std::fs::copy(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/lab"), &script).unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let run = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(&script)
        .arg("--out")
        .arg(out.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("must run as root"), "{stderr}");
}
