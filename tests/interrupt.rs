//! Issue 11: Ctrl-C (SIGINT to terraform) in the middle of applying 300 region hints and 3
//! weighted backends leaves state that tracks everything that exists, and the next apply
//! converges. Terraform sends StopProvider; writes in flight get a grace period to finish, so
//! none is cut off after the server acted.

mod common;

use std::collections::BTreeSet;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::fake_cloudflare::{self as cf, FakeCloudflare};
use common::fake_compute::{self as gc, FakeCompute};
use common::{Terraform, PREAMBLE};

const PROJECT: &str = "winticket-prod";
const MAPS: [&str; 3] = ["web-urlmap", "api-urlmap", "img-urlmap"];

fn config(cf: &FakeCloudflare, gc: &FakeCompute) -> String {
    let mut out = format!(
        "{PREAMBLE}\nprovider \"locality\" {{\n  cloudflare {{\n    api_token = \"{}\"\n    base_url  = \"{}\"\n  }}\n  google {{\n    access_token = \"{}\"\n    project      = \"{PROJECT}\"\n    base_url     = \"{}\"\n  }}\n}}\n",
        cf::TOKEN,
        cf.base_url(),
        gc::TOKEN,
        gc.base_url()
    );
    out.push_str(&format!(
        "\nresource \"locality_region_hint\" \"many\" {{\n  for_each  = toset([for i in range(300) : cidrhost(\"10.20.0.0/16\", i + 1)])\n  zone_id   = \"{}\"\n  origin_ip = each.key\n  vendor    = \"aws\"\n  region    = \"us-east-1\"\n}}\n",
        cf::ZONE
    ));
    for map in MAPS {
        let name = map.trim_end_matches("-urlmap");
        out.push_str(&format!(
            "\nresource \"locality_weighted_backend\" \"{name}\" {{\n  url_map = \"{map}\"\n  weights = {{\n    \"web-bs\"       = 0\n    \"web-bs-tokyo\" = 100\n  }}\n}}\n"
        ));
    }
    out
}

/// The origin IPs of the region hints in state.
fn hints_in_state(tf: &Terraform) -> BTreeSet<String> {
    let show = tf.run(&["show", "-json"]);
    assert_eq!(show.code, 0, "{}", show.all());
    let json: serde_json::Value = serde_json::from_str(&show.stdout).unwrap_or_default();
    json.pointer("/values/root_module/resources")
        .and_then(|r| r.as_array())
        .map(|resources| {
            resources
                .iter()
                .filter(|r| r["type"] == "locality_region_hint")
                .filter_map(|r| {
                    r.pointer("/values/origin_ip")
                        .and_then(|v| v.as_str())
                        .map(String::from)
                })
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_mid_apply_leaves_state_tracking_everything() {
    let cloudflare = FakeCloudflare::start().await;
    let compute = FakeCompute::start().await;
    for map in MAPS {
        compute.put_url_map(PROJECT, map, &[("web-bs", 100), ("web-bs-tokyo", 0)]);
    }
    tokio::task::spawn_blocking(move || {
        let tf = Terraform::dev_overrides();
        tf.write("main.tf", &config(&cloudflare, &compute));
        // Slow answers to writes the server has applied, so that Ctrl-C lands in the middle of
        // the apply while writes are in flight.
        cloudflare
            .state
            .lock()
            .unwrap()
            .write_faults
            .extend([cf::Fault::SlowAfterApplying(Duration::from_millis(700)); 60]);
        let mut child = tf
            .command(&["apply", "-auto-approve"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("terraform on PATH");
        let started = Instant::now();
        while cloudflare.mappings().len() < 20 && started.elapsed() < Duration::from_secs(60) {
            std::thread::sleep(Duration::from_millis(20));
        }
        let before_interrupt = cloudflare.mappings().len();
        assert!(
            before_interrupt < 300,
            "the apply is still in flight ({before_interrupt} written)"
        );
        let kill = std::process::Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(kill.success());
        let status = child.wait().unwrap();
        assert!(!status.success(), "an interrupted apply reports failure");

        // Everything that exists is tracked; nothing tracked is missing.
        let live: BTreeSet<String> = cloudflare.mappings().keys().cloned().collect();
        let tracked = hints_in_state(&tf);
        assert!(live.len() < 300, "interrupted before the end ({} written)", live.len());
        assert_eq!(tracked, live, "state tracks exactly what the zone holds");

        // The next apply converges.
        cloudflare.state.lock().unwrap().write_faults.clear();
        tf.ok(&["apply", "-auto-approve"]);
        assert_eq!(cloudflare.mappings().len(), 300);
        for map in MAPS {
            let weights: Vec<u64> = compute.weights(PROJECT, map).into_iter().map(|(_, w)| w).collect();
            assert_eq!(weights, [0, 100], "{map}");
        }
        tf.assert_no_changes();
    })
    .await
    .unwrap();
}
