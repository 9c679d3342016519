//! API requests and wall time of the real terraform driving the release provider against the
//! fake Cloudflare and Compute APIs of the test suite (`scripts/bench` runs this after building
//! the provider in release):
//!
//! - `apply` and `plan` (refresh) of 250 and 3,500 region hints in one zone, as N
//!   `locality_region_hint` and as one `locality_region_hints`, next to the ceil(N/100) floor
//!   and to one request per hint;
//! - one regional failover of `locality_weighted_backend` with 2-poll operations.

#![allow(clippy::print_stdout)] // a benchmark prints its figures

#[path = "../tests/common/fake_cloudflare.rs"]
#[allow(dead_code, unreachable_pub)]
mod fake_cloudflare;
#[path = "../tests/common/fake_compute.rs"]
#[allow(dead_code, unreachable_pub)]
mod fake_compute;
#[path = "../tests/common/fake_google_auth.rs"]
#[allow(dead_code, unreachable_pub)]
mod fake_google_auth;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

struct Tf {
    dir: tempfile::TempDir,
}

impl Tf {
    fn new() -> Tf {
        let dir = tempfile::tempdir().unwrap();
        let bin = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/release");
        assert!(
            bin.join("terraform-provider-locality").exists(),
            "build the provider first: cargo build --release"
        );
        std::fs::write(
            dir.path().join("cli.tfrc"),
            format!("provider_installation {{\n  dev_overrides {{\n    \"locality/locality\" = \"{}\"\n  }}\n  direct {{}}\n}}\n", bin.display()),
        )
        .unwrap();
        Tf { dir }
    }
    fn path(&self) -> PathBuf {
        self.dir.path().to_path_buf()
    }
    /// Runs terraform; returns wall time in ms.
    fn run(&self, args: &[&str]) -> f64 {
        let t = Instant::now();
        let out = Command::new("terraform")
            .args(args)
            .arg("-no-color")
            .current_dir(self.dir.path())
            .env("TF_CLI_CONFIG_FILE", self.dir.path().join("cli.tfrc"))
            .env("CHECKPOINT_DISABLE", "1")
            .env_remove("TF_LOG")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "terraform {args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        t.elapsed().as_secs_f64() * 1e3
    }
}

const PREAMBLE: &str =
    "terraform {\n  required_providers {\n    locality = {\n      source = \"locality/locality\"\n    }\n  }\n}\n";

fn count(requests: &[String], prefix: &str) -> usize {
    requests.iter().filter(|r| r.starts_with(prefix)).count()
}

/// Apply and refresh figures of one configuration: (requests, ms) each.
struct Run {
    apply: (Vec<String>, f64),
    refresh: (Vec<String>, f64),
}

async fn measure(fake: &fake_cloudflare::FakeCloudflare, resources: String) -> Run {
    let tf = Tf::new();
    let main = format!(
        "{PREAMBLE}\nprovider \"locality\" {{\n  cloudflare {{\n    api_token = \"{}\"\n    base_url  = \"{}\"\n  }}\n}}\n{resources}",
        fake_cloudflare::TOKEN,
        fake.base_url(),
    );
    std::fs::write(tf.path().join("main.tf"), main).unwrap();
    let f = fake.clone();
    tokio::task::spawn_blocking(move || {
        f.take_requests();
        let apply_ms = tf.run(&["apply", "-auto-approve", "-parallelism=10"]);
        let apply = f.take_requests();
        let plan_ms = tf.run(&["plan"]);
        let plan = f.take_requests();
        Run {
            apply: (apply, apply_ms),
            refresh: (plan, plan_ms),
        }
    })
    .await
    .unwrap()
}

/// N hints in one zone, as N `locality_region_hint` and as one `locality_region_hints`, next to
/// the batch endpoints' floor.
async fn region_hints(n: usize) {
    let single = {
        let fake = fake_cloudflare::FakeCloudflare::start().await;
        let run = measure(
            &fake,
            format!(
                "resource \"locality_region_hint\" \"many\" {{\n  count     = {n}\n  zone_id   = \"{}\"\n  origin_ip = cidrhost(\"10.16.0.0/12\", count.index + 1)\n  vendor    = \"aws\"\n  region    = \"us-east-1\"\n}}\n",
                fake_cloudflare::ZONE
            ),
        )
        .await;
        assert_eq!(fake.mappings().len(), n);
        run
    };
    let zone_wide = {
        let fake = fake_cloudflare::FakeCloudflare::start().await;
        // range() stops at 1,024 values: maps of 500, merged.
        let run = measure(
            &fake,
            format!(
                "resource \"locality_region_hints\" \"zone\" {{\n  zone_id = \"{}\"\n  hints   = merge([for a in range({}) : {{ for b in range(500) : cidrhost(\"10.16.0.0/12\", a * 500 + b + 1) => \"aws:us-east-1\" if a * 500 + b < {n} }}]...)\n}}\n",
                fake_cloudflare::ZONE,
                n.div_ceil(500)
            ),
        )
        .await;
        assert_eq!(fake.mappings().len(), n);
        run
    };
    let floor = n.div_ceil(100);
    println!("region hints in one zone, N={n} (apply: requests of the whole `terraform apply`; refresh: of `terraform plan`)");
    println!(
        "  {:<34} {:>14} {:>10} {:>16} {:>10}",
        "", "apply requests", "apply ms", "refresh requests", "refresh ms"
    );
    for (name, run) in [
        (format!("{n} x locality_region_hint"), &single),
        ("1 x locality_region_hints".to_string(), &zone_wide),
    ] {
        let writes = count(&run.apply.0, "PUT") + count(&run.apply.0, "DELETE");
        println!(
            "  {:<34} {:>14} {:>10.0} {:>16} {:>10.0}",
            name,
            format!("{} ({writes} writes)", run.apply.0.len()),
            run.apply.1,
            run.refresh.0.len(),
            run.refresh.1
        );
    }
    println!(
        "  {:<34} {:>14} {:>10} {:>16} {:>10}",
        "floor: ceil(N/100) writes + listing",
        floor + 1,
        "-",
        floor,
        "-"
    );
    println!(
        "  {:<34} {:>14} {:>10} {:>16} {:>10}",
        "one request per hint",
        2 * n,
        "-",
        n,
        "-"
    );
}

async fn failover() {
    let fake = fake_compute::FakeCompute::start().await;
    fake.put_url_map(
        "winticket-prod",
        "web-urlmap",
        &[("web-bs", 100), ("web-bs-tokyo", 0), ("web-bs-osaka", 0)],
    );
    let tf = Tf::new();
    let base_url = fake.base_url();
    let config = move |w: [u32; 3]| {
        format!(
            "{PREAMBLE}\nprovider \"locality\" {{\n  google {{\n    access_token = \"{}\"\n    project      = \"winticket-prod\"\n    base_url     = \"{}\"\n  }}\n}}\n\nresource \"locality_weighted_backend\" \"web\" {{\n  url_map = \"web-urlmap\"\n  weights = {{\n    \"web-bs\"       = {}\n    \"web-bs-tokyo\" = {}\n    \"web-bs-osaka\" = {}\n  }}\n}}\n",
            fake_compute::TOKEN,
            base_url,
            w[0],
            w[1],
            w[2]
        )
    };
    std::fs::write(tf.path().join("main.tf"), config([100, 0, 0])).unwrap();
    let f = fake.clone();
    let path = tf.path();
    let (ms, requests) = tokio::task::spawn_blocking(move || {
        tf.run(&["apply", "-auto-approve"]);
        std::fs::write(path.join("main.tf"), config([0, 100, 0])).unwrap();
        f.take_requests();
        let ms = tf.run(&["apply", "-auto-approve"]);
        (ms, f.take_requests())
    })
    .await
    .unwrap();
    println!(
        "weighted backend failover apply (2-poll operations): {} requests {requests:?} in {ms:.0} ms",
        requests.len()
    );
}

#[tokio::main]
async fn main() {
    region_hints(250).await;
    region_hints(3500).await;
    failover().await;
}
