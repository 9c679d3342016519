//! `locality_region_hints` through the real terraform CLI against the fake Cloudflare API: the
//! lifecycle (canonical keys, case-insensitive values, hints derived from the IP ranges), plan-
//! time checks on each element, the 3,500-mapping zone with its request counts, the zone limit
//! as per-item failures and as a whole-request refusal (narrowed down), takeover refused and
//! allowed, exclusive mode, drift, import, destroy, two resources claiming one IP, and the
//! migration from `locality_region_hint` without deleting anything.

mod common;

use std::process::Command;

use common::fake_cloudflare::{FakeCloudflare, TOKEN, ZONE};
use common::{Terraform, PREAMBLE};

fn provider(fake: &FakeCloudflare) -> String {
    format!("{PREAMBLE}\nprovider \"locality\" {{\n  cloudflare {{\n    api_token = \"{TOKEN}\"\n    base_url  = \"{}\"\n  }}\n}}\n", fake.base_url())
}

/// A `locality_region_hints` with the given attribute lines.
fn hints(fake: &FakeCloudflare, body: &str) -> String {
    format!(
        "{}\nresource \"locality_region_hints\" \"zone\" {{\n  zone_id = \"{ZONE}\"\n{body}\n}}\n\noutput \"effective\" {{\n  value = jsonencode(locality_region_hints.zone.effective)\n}}\n",
        provider(fake)
    )
}

/// Terraform's output with line wrapping undone.
fn flat(out: &str) -> String {
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn count(requests: &[String], prefix: &str) -> usize {
    requests.iter().filter(|r| r.starts_with(prefix)).count()
}

fn live(fake: &FakeCloudflare) -> Vec<(String, String)> {
    fake.mappings()
        .into_iter()
        .map(|(ip, (v, r))| (ip, format!("{v}:{r}")))
        .collect()
}

fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = items.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect();
    v.sort();
    v
}

async fn with_fake(test: impl FnOnce(FakeCloudflare, Terraform) + Send + 'static) {
    let fake = FakeCloudflare::start().await;
    let tf = Terraform::dev_overrides();
    tokio::task::spawn_blocking(move || test(fake, tf)).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lifecycle_drift_and_destroy() {
    with_fake(|fake, tf| {
        // A mapping this resource does not manage: never touched without `exclusive`.
        fake.set("198.51.100.99", "aws", "us-west-2");
        let v1 = hints(
            &fake,
            "  hints = {\n    \"192.0.2.10\" = \"aws:us-east-1\"\n    \"2001:DB8:0:0::0001\" = \"GCP:Asia-Northeast1\"\n  }\n  origins = [\"34.84.1.1\", \"3.112.0.10\"]",
        );
        tf.write("main.tf", &v1);
        let (code, plan) = tf.plan_exit_code();
        assert_eq!(code, 2);
        // The plan shows the derived hints and the canonical keys.
        for line in [
            "\"34.84.1.1\"   = \"gcp:asia-northeast1\"",
            "\"3.112.0.10\"  = \"aws:ap-northeast-1\"",
            "\"2001:db8::1\" = \"gcp:asia-northeast1\"",
        ] {
            assert!(plan.contains(line), "{line} in\n{plan}");
        }
        fake.take_requests();
        tf.ok(&["apply", "-auto-approve"]);
        let requests = fake.take_requests();
        assert_eq!(count(&requests, "PUT batch"), 1, "{requests:?}");
        assert_eq!(count(&requests, "PUT one") + count(&requests, "DELETE"), 0, "{requests:?}");
        assert_eq!(
            live(&fake),
            pairs(&[
                ("192.0.2.10", "aws:us-east-1"),
                ("198.51.100.99", "aws:us-west-2"),
                ("2001:db8::1", "gcp:asia-northeast1"),
                ("3.112.0.10", "aws:ap-northeast-1"),
                ("34.84.1.1", "gcp:asia-northeast1"),
            ])
        );
        tf.assert_no_changes();
        let state = tf.ok(&["state", "show", "locality_region_hints.zone"]);
        assert!(state.contains("unmanaged = 1"), "{state}");

        // Spelling only (upper-case IPv6, another case, other order): no diff.
        tf.write(
            "main.tf",
            &hints(
                &fake,
                "  hints = {\n    \"192.0.2.10\" = \"AWS:US-EAST-1\"\n    \"2001:db8::1\" = \"gcp:asia-northeast1\"\n  }\n  origins = [\"3.112.0.10\", \"34.84.1.1\"]",
            ),
        );
        tf.assert_no_changes();

        // Change one, add one, remove one: one batch PUT and one batch DELETE.
        tf.write(
            "main.tf",
            &hints(
                &fake,
                "  hints = {\n    \"192.0.2.10\" = \"aws:us-west-2\"\n    \"192.0.2.11\" = \"azure:japaneast\"\n  }\n  origins = [\"34.84.1.1\", \"3.112.0.10\"]",
            ),
        );
        let (code, plan) = tf.plan_exit_code();
        assert_eq!(code, 2);
        assert!(plan.contains("\"aws:us-east-1\" -> \"aws:us-west-2\""), "{plan}");
        assert!(plan.contains("- \"2001:db8::1\""), "{plan}");
        fake.take_requests();
        tf.ok(&["apply", "-auto-approve"]);
        let requests = fake.take_requests();
        assert_eq!(
            (count(&requests, "PUT batch"), count(&requests, "DELETE batch")),
            (1, 1),
            "{requests:?}"
        );
        tf.assert_no_changes();

        // Drift, per IP: a changed value and a deleted mapping.
        fake.set("192.0.2.10", "aws", "eu-central-1");
        fake.remove("34.84.1.1");
        let (code, plan) = tf.plan_exit_code();
        assert_eq!(code, 2);
        assert!(plan.contains("\"aws:eu-central-1\" -> \"aws:us-west-2\""), "{plan}");
        assert!(plan.contains("+ \"34.84.1.1\""), "{plan}");
        tf.ok(&["apply", "-auto-approve"]);
        tf.assert_no_changes();
        assert_eq!(live(&fake).len(), 5);

        // Destroy deletes what it manages, not the other mapping.
        tf.ok(&["destroy", "-auto-approve"]);
        assert_eq!(live(&fake), pairs(&[("198.51.100.99", "aws:us-west-2")]));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_element_is_checked_at_plan_time() {
    with_fake(|fake, tf| {
        tf.write(
            "main.tf",
            &hints(
                &fake,
                "  hints = {\n    \"not-an-ip\" = \"aws:us-east-1\"\n    \"192.0.2.1\" = \"amazon:us-east-1\"\n    \"192.0.2.2\" = \"aws:us-east-9\"\n    \"192.0.2.3\" = \"us-east-1\"\n    \"2001:db8::5\" = \"aws:us-east-1\"\n    \"2001:DB8::5\" = \"aws:us-east-1\"\n  }\n  origins = [\"192.0.2.2\", \"192.0.2.200\", \"3.112.0.10\", \"3.112.0.10\"]",
            ),
        );
        let raw = tf.fails(&["plan"]);
        let out = flat(&raw);
        for needle in [
            "\"not-an-ip\" is not an IPv4 or IPv6 address",
            "\"amazon\" is not a cloud Cloudflare knows",
            "\"us-east-9\" is not an AWS region",
            "Did you mean \"us-east-1\"",
            "\"us-east-1\" is not `vendor:region`",
            "\"2001:db8::5\" is the same IP as hints[\"2001:DB8::5\"]",
            "also has a hint in hints[\"192.0.2.2\"]",
            "192.0.2.200 is in none of the published",
            "is the same IP as origins[2]",
        ] {
            assert!(out.contains(needle), "{needle:?} in\n{out}");
        }
        // Each error points at its element in the configuration.
        assert!(raw.contains("19:     \"not-an-ip\" = \"aws:us-east-1\""), "{raw}");
        assert_eq!(out.matches("Error: ").count(), 8, "{out}");
        assert!(fake.take_requests().is_empty(), "no API call for a configuration that does not validate");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_zone_at_the_batch_floor_then_the_limit() {
    with_fake(|fake, tf| {
        // range() stops at 1,024 values: 7 maps of 500, merged, plus `extra`.
        let config = |extra: &str| {
            hints(
                &fake,
                &format!("  hints = merge(concat([for a in range(7) : {{ for b in range(500) : cidrhost(\"10.16.0.0/16\", a * 500 + b + 1) => \"aws:us-east-1\" }}], [{{ {extra} }}])...)"),
            )
        };
        tf.write("main.tf", &config(""));
        fake.take_requests();
        tf.ok(&["apply", "-auto-approve"]);
        let apply = fake.take_requests();
        assert_eq!(fake.mappings().len(), 3500);
        assert_eq!(count(&apply, "PUT batch"), 35, "{apply:?}");
        assert!(apply.len() <= 37, "{} requests: {apply:?}", apply.len());
        tf.ok(&["plan", "-detailed-exitcode"]);
        let plan = fake.take_requests();
        assert!(plan.len() <= 36 && count(&plan, "GET list") == 35, "{plan:?}");

        // One more than the zone holds: 3,500 stay, the extra one fails with Cloudflare's code
        // on its own element, and the next plan shows only it.
        tf.write("main.tf", &config("\"10.17.0.1\" = \"aws:us-east-1\""));
        let out = flat(&tf.fails(&["apply", "-auto-approve"]));
        assert!(out.contains("1164") && out.contains("Maximum number of IP mappings"), "{out}");
        assert!(out.contains("Region hint for 10.17.0.1 failed"), "{out}");
        assert_eq!(out.matches("Error: ").count(), 1, "{out}");
        assert_eq!(fake.mappings().len(), 3500);
        let (code, plan) = tf.plan_exit_code();
        assert_eq!(code, 2);
        assert!(plan.contains("+ \"10.17.0.1\"") && plan.contains("= \"aws:us-east-1\""), "{plan}");
        assert_eq!(plan.matches("+ \"10.").count(), 1, "only the missing one:\n{plan}");
    })
    .await;
}

/// When the API refuses a whole batch over the zone limit, the batch is narrowed down: what
/// fits is written, each of the rest fails on its own element.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_refused_as_a_whole_is_narrowed_down() {
    with_fake(|fake, tf| {
        {
            let mut s = fake.state.lock().unwrap();
            s.limit = 40;
            s.limit_refuses_whole_batch = true;
        }
        for i in 0..10 {
            fake.set(&format!("198.51.100.{i}"), "aws", "us-west-2");
        }
        tf.write(
            "main.tf",
            &hints(
                &fake,
                "  hints = { for i in range(40) : cidrhost(\"10.16.0.0/16\", i + 1) => \"aws:us-east-1\" }",
            ),
        );
        let out = tf.fails(&["apply", "-auto-approve"]);
        assert_eq!(fake.mappings().len(), 40, "what fits was written");
        assert_eq!(out.matches("Region hint for 10.16.").count(), 10, "{out}");
        assert!(out.contains("1164"), "{out}");
        // The create failed part-way: Terraform taints it. State holds exactly the 30 written.
        let state = tf.ok(&["state", "show", "locality_region_hints.zone"]);
        assert_eq!(
            state.matches("\"aws:us-east-1\"").count(),
            30 + 40,
            "effective + hints:\n{state}"
        );
        // Room again: the next apply converges (the tainted resource is replaced).
        fake.state.lock().unwrap().limit = 100;
        tf.ok(&["apply", "-auto-approve"]);
        tf.assert_no_changes();
        assert_eq!(fake.mappings().len(), 50);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn takeover_refused_then_allowed_and_exclusive() {
    with_fake(|fake, tf| {
        fake.set("192.0.2.10", "aws", "us-west-2"); // another value
        fake.set("192.0.2.11", "aws", "us-east-1"); // the same value: adopted
        fake.set("198.51.100.99", "gcp", "us-central1"); // not in the configuration
        let body = |extra: &str| {
            format!("  hints = {{\n    \"192.0.2.10\" = \"aws:us-east-1\"\n    \"192.0.2.11\" = \"aws:us-east-1\"\n    \"192.0.2.12\" = \"aws:us-east-1\"\n  }}\n{extra}")
        };
        tf.write("main.tf", &hints(&fake, &body("")));
        fake.take_requests();
        let out = tf.fails(&["apply", "-auto-approve"]);
        assert!(out.contains("192.0.2.10 is aws:us-west-2 (want aws:us-east-1)"), "{out}");
        assert!(out.contains("takeover = true"), "{out}");
        assert!(!out.contains("192.0.2.11 is"), "same-value mappings are adopted:\n{out}");
        let requests = fake.take_requests();
        assert_eq!(count(&requests, "PUT") + count(&requests, "DELETE"), 0, "nothing written: {requests:?}");
        assert!(tf.ok(&["state", "list"]).trim().is_empty(), "nothing created");

        tf.write("main.tf", &hints(&fake, &body("  takeover = true")));
        tf.ok(&["apply", "-auto-approve"]);
        assert_eq!(fake.mappings()["192.0.2.10"].1, "us-east-1");
        assert_eq!(fake.mappings()["198.51.100.99"].1, "us-central1", "left alone");
        tf.assert_no_changes();

        // Exclusive: the zone's other mapping is deleted; one added later shows as drift.
        // Turning it on names what it deletes in a warning on `exclusive`.
        tf.write("main.tf", &hints(&fake, &body("  takeover = true\n  exclusive = true")));
        let (_, plan) = tf.plan_exit_code();
        assert!(plan.contains("unmanaged") && plan.contains("1 -> 0"), "{plan}");
        assert!(
            flat(&plan).contains("deletes the 1 mapping(s) of zone") && flat(&plan).contains("198.51.100.99 = gcp:us-central1"),
            "{plan}"
        );
        tf.ok(&["apply", "-auto-approve"]);
        assert!(!fake.mappings().contains_key("198.51.100.99"));
        tf.assert_no_changes();
        // A mapping added out of band: the plan names it, with its value, as a deletion.
        fake.set("198.51.100.98", "aws", "us-east-1");
        let (code, plan) = tf.plan_exit_code();
        assert_eq!(code, 2, "{plan}");
        assert!(
            flat(&plan).contains(r#"~ unmanaged_mappings = { - "198.51.100.98" = "aws:us-east-1" -> null }"#),
            "{plan}"
        );
        eprintln!("exclusive plan:\n{plan}");
        tf.ok(&["apply", "-auto-approve"]);
        assert_eq!(fake.mappings().len(), 3);
        assert!(!fake.mappings().contains_key("198.51.100.98"));
        tf.assert_no_changes();
        // Destroy with exclusive: the zone is emptied.
        fake.set("198.51.100.97", "aws", "us-east-1");
        tf.ok(&["destroy", "-auto-approve"]);
        assert!(fake.mappings().is_empty(), "{:?}", fake.mappings());
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn import_by_zone_and_one_ip_in_two_resources() {
    with_fake(|fake, tf| {
        fake.set("192.0.2.10", "aws", "us-east-1");
        fake.set("2001:db8::1", "gcp", "asia-northeast1");
        let config = hints(
            &fake,
            "  hints = {\n    \"192.0.2.10\" = \"AWS:us-east-1\"\n    \"2001:DB8::1\" = \"gcp:asia-northeast1\"\n  }",
        );
        tf.write("main.tf", &config);
        let out = tf.fails(&["import", "locality_region_hints.zone", "not-a-zone"]);
        assert!(out.contains("Expected the zone ID"), "{out}");
        tf.ok(&["import", "locality_region_hints.zone", ZONE]);
        tf.assert_no_changes();
        tf.ok(&["state", "rm", "locality_region_hints.zone"]);
        // The same by an import block.
        tf.write(
            "import.tf",
            &format!("import {{\n  to = locality_region_hints.zone\n  id = \"{ZONE}\"\n}}\n"),
        );
        let (_, plan) = tf.plan_exit_code();
        assert!(plan.contains("1 to import, 0 to add, 0 to change, 0 to destroy"), "{plan}");
        tf.ok(&["apply", "-auto-approve"]);
        std::fs::remove_file(tf.path("import.tf")).unwrap();
        tf.assert_no_changes();

        // A locality_region_hint for an IP this resource manages: reported, not fought over.
        tf.write(
            "single.tf",
            &format!("resource \"locality_region_hint\" \"one\" {{\n  zone_id   = \"{ZONE}\"\n  origin_ip = \"192.0.2.10\"\n  vendor    = \"aws\"\n  region    = \"us-west-2\"\n}}\n"),
        );
        let out = tf.fails(&["plan"]);
        assert!(out.contains("IP managed twice"), "{out}");
        assert!(out.contains("192.0.2.10 of zone"), "{out}");
        assert_eq!(fake.mappings()["192.0.2.10"].1, "us-east-1");
    })
    .await;
}

/// Hints of one zone written at once by five `locality_region_hint` and a
/// `locality_region_hints`, at Terraform's default parallelism: every mapping lands, the next
/// plan is empty (the zone-wide resource's `unmanaged` count included), a change of every
/// value at once lands the same way, and `exclusive = true` beside them (which would delete
/// their mappings) is refused at plan, naming the IPs, with nothing written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn single_hints_and_the_zone_wide_resource_write_one_zone_at_once() {
    with_fake(|fake, tf| {
        let config = |region: &str, exclusive: bool| {
            let mut out = hints(
                &fake,
                &format!(
                    "  hints = {{ for i in range(5) : \"198.51.100.${{i + 10}}\" => \"aws:{region}\" }}\n  exclusive = {exclusive}"
                ),
            );
            out.push_str(&format!(
                "\nresource \"locality_region_hint\" \"single\" {{\n  for_each  = toset([for i in range(5) : \"192.0.2.${{i + 10}}\"])\n  zone_id   = \"{ZONE}\"\n  origin_ip = each.key\n  vendor    = \"aws\"\n  region    = \"{region}\"\n}}\n"
            ));
            out
        };
        for region in ["us-east-1", "us-west-2"] {
            tf.write("main.tf", &config(region, false));
            tf.ok(&["apply", "-auto-approve"]);
            let live = live(&fake);
            assert_eq!(live.len(), 10, "{live:?}");
            assert!(live.iter().all(|(_, hint)| *hint == format!("aws:{region}")), "{live:?}");
            tf.assert_no_changes();
        }
        fake.take_requests();
        tf.write("main.tf", &config("us-west-2", true));
        let out = flat(&tf.fails(&["plan"]));
        assert!(out.contains("IP managed twice") && out.contains("192.0.2.10"), "{out}");
        assert_eq!(live(&fake).len(), 10);
        assert!(!fake.take_requests().iter().any(|r| !r.starts_with("GET")), "nothing written");
    })
    .await;
}

/// The migration guide: N locality_region_hint become one locality_region_hints with
/// `removed` blocks; nothing is deleted or written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migration_from_region_hint_deletes_nothing() {
    with_fake(|fake, tf| {
        let ips = ["198.51.100.10", "198.51.100.11", "198.51.100.20"];
        tf.write(
            "main.tf",
            &format!(
                "{}\nresource \"locality_region_hint\" \"fleet\" {{\n  for_each  = toset({ips:?})\n  zone_id   = \"{ZONE}\"\n  origin_ip = each.key\n  vendor    = \"aws\"\n  region    = \"ap-northeast-1\"\n}}\n",
                provider(&fake)
            ),
        );
        tf.ok(&["apply", "-auto-approve"]);
        assert_eq!(fake.mappings().len(), 3);
        tf.write(
            "main.tf",
            &format!(
                "{}\nremoved {{\n  from = locality_region_hint.fleet\n\n  lifecycle {{\n    destroy = false\n  }}\n}}\n",
                hints(&fake, "  hints = { for ip in [\"198.51.100.10\", \"198.51.100.11\", \"198.51.100.20\"] : ip => \"aws:ap-northeast-1\" }")
            ),
        );
        let (_, plan) = tf.plan_exit_code();
        assert!(plan.contains("1 to add, 0 to change, 0 to destroy"), "{plan}");
        assert!(plan.contains("will no longer be managed by Terraform"), "{plan}");
        fake.take_requests();
        tf.ok(&["apply", "-auto-approve"]);
        let requests = fake.take_requests();
        assert_eq!(count(&requests, "PUT") + count(&requests, "DELETE"), 0, "{requests:?}");
        assert_eq!(fake.mappings().len(), 3);
        tf.assert_no_changes();
        let effective = tf.output("effective");
        assert!(effective.contains("\"198.51.100.20\":\"aws:ap-northeast-1\""), "{effective}");
    })
    .await;
}

/// `origins` are derived from the IP-range snapshot: here one built by `locality ranges update`
/// from files in the clouds' official formats and handed to the provider with
/// LOCALITY_RANGES_FILE.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn origins_follow_the_official_range_files() {
    let fake = FakeCloudflare::start().await;
    tokio::task::spawn_blocking(move || {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, json: serde_json::Value| {
            let p = dir.path().join(name);
            std::fs::write(&p, json.to_string()).unwrap();
            p.display().to_string()
        };
        let aws = write(
            "ip-ranges.json",
            serde_json::json!({"syncToken": "1", "createDate": "2026-11-29-10-00-00",
            "prefixes": [
                {"ip_prefix": "52.192.0.0/11", "region": "ap-northeast-1", "service": "AMAZON", "network_border_group": "ap-northeast-1"},
                {"ip_prefix": "52.199.0.0/16", "region": "eu-central-1", "service": "EC2", "network_border_group": "eu-central-1"},
                {"ip_prefix": "52.94.0.0/22", "region": "GLOBAL", "service": "AMAZON", "network_border_group": "GLOBAL"}],
            "ipv6_prefixes": [{"ipv6_prefix": "2406:da14::/32", "region": "us-west-2", "service": "EC2", "network_border_group": "us-west-2"}]}),
        );
        let gcp = write(
            "cloud.json",
            serde_json::json!({"syncToken": "1", "creationTime": "2026-11-28T00:00:00", "prefixes": [{"ipv4Prefix": "35.187.192.0/19", "service": "Google Cloud", "scope": "us-central1"}]}),
        );
        let azure = write(
            "ServiceTags_Public_20261130.json",
            serde_json::json!({"changeNumber": 1, "cloud": "Public", "values": [
            {"name": "AzureCloud.japaneast", "id": "AzureCloud.japaneast", "properties": {"region": "japaneast", "systemService": "", "addressPrefixes": ["20.18.0.0/16"]}}]}),
        );
        let oci = write(
            "public_ip_ranges.json",
            serde_json::json!({"last_updated_timestamp": "2026-11-27T00:00:00", "regions": [{"region": "ap-tokyo-1", "cidrs": [{"cidr": "140.238.48.0/20", "tags": ["OCI"]}]}]}),
        );
        let snapshot = dir.path().join("snapshot.bin");
        let status = Command::new(env!("CARGO_BIN_EXE_locality"))
            .args(["ranges", "update", "--aws", &aws, "--gcp", &gcp, "--azure", &azure, "--oci", &oci, "-o"])
            .arg(&snapshot)
            .output()
            .unwrap();
        assert!(status.status.success(), "{}", String::from_utf8_lossy(&status.stderr));

        let mut tf = Terraform::dev_overrides();
        tf.env("LOCALITY_RANGES_FILE", snapshot.to_str().unwrap());
        tf.write(
            "main.tf",
            &hints(
                &fake,
                "  origins = [\"52.199.7.7\", \"52.193.1.1\", \"2406:DA14::1\", \"35.187.200.1\", \"20.18.3.4\", \"140.238.50.1\"]",
            ),
        );
        tf.ok(&["apply", "-auto-approve"]);
        assert_eq!(
            live(&fake),
            pairs(&[
                ("140.238.50.1", "oci:ap-tokyo-1"),
                ("20.18.3.4", "azure:japaneast"),
                ("2406:da14::1", "aws:us-west-2"),
                ("35.187.200.1", "gcp:us-central1"),
                ("52.193.1.1", "aws:ap-northeast-1"),
                ("52.199.7.7", "aws:eu-central-1"),
            ])
        );
        tf.assert_no_changes();

        // The CLI answers from the same snapshot as the provider (LOCALITY_RANGES_FILE, or
        // --ranges) and says which one; without either, from the built-in one.
        let lookup = |env: Option<&std::path::Path>, extra: &[&str]| {
            let mut command = Command::new(env!("CARGO_BIN_EXE_locality"));
            command.env_remove("LOCALITY_RANGES_FILE").arg("lookup").args(extra).arg("52.199.7.7");
            if let Some(file) = env {
                command.env("LOCALITY_RANGES_FILE", file);
            }
            let out = command.output().unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            (String::from_utf8_lossy(&out.stdout).to_string(), String::from_utf8_lossy(&out.stderr).to_string())
        };
        let (stdout, stderr) = lookup(Some(&snapshot), &[]);
        assert!(stdout.contains("aws:eu-central-1"), "{stdout}");
        assert!(stderr.contains(&format!("ranges: {}, dated 2026-11-29", snapshot.display())), "{stderr}");
        let (stdout, _) = lookup(None, &["--json", "--ranges", snapshot.to_str().unwrap()]);
        let answer: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
        assert_eq!(answer["hint"], "aws:eu-central-1");
        assert_eq!(answer["ranges_source"], snapshot.display().to_string());
        assert_eq!(answer["ranges_date"], "2026-11-29");
        let (stdout, stderr) = lookup(None, &[]);
        assert!(stdout.contains("aws:ap-northeast-1") && stderr.contains("ranges: the built-in snapshot, dated 2026-10-26"), "{stdout}{stderr}");

        // A snapshot older than 180 days: a plan-time warning on `origins`, naming its date.
        let old = dir.path().join("old.bin");
        let status = Command::new(env!("CARGO_BIN_EXE_locality"))
            .args(["ranges", "update", "--aws", &aws, "--gcp", &gcp, "--azure", &azure, "--oci", &oci, "--date", "2025-01-01", "-o"])
            .arg(&old)
            .output()
            .unwrap();
        assert!(status.status.success(), "{}", String::from_utf8_lossy(&status.stderr));
        tf.env("LOCALITY_RANGES_FILE", old.to_str().unwrap());
        let (code, plan) = tf.plan_exit_code();
        assert_eq!(code, 0, "{plan}");
        let flat_plan = flat(&plan);
        assert!(flat_plan.contains("Old IP-range snapshot") && flat_plan.contains("is dated 2025-01-01"), "{plan}");
        // The data source warns the same way, and says which snapshot answered.
        tf.write(
            "data.tf",
            "data \"locality_cloud_region\" \"x\" {\n  ip = \"52.199.7.7\"\n}\n\noutput \"source\" {\n  value = \"${data.locality_cloud_region.x.ranges_source} ${data.locality_cloud_region.x.ranges_date} ${data.locality_cloud_region.x.hint}\"\n}\n",
        );
        let out = flat(&tf.ok(&["apply", "-auto-approve"]));
        assert!(out.contains("Old IP-range snapshot") && out.contains("old.bin) is dated 2025-01-01"), "{out}");
        assert_eq!(tf.output("source"), format!("{} 2025-01-01 aws:eu-central-1", old.display()));
        std::fs::remove_file(tf.path("data.tf")).unwrap();
        tf.env("LOCALITY_RANGES_FILE", snapshot.to_str().unwrap());

        // A range without a region, and the built-in snapshot's 34.84.1.1 which this file lacks.
        tf.write("main.tf", &hints(&fake, "  origins = [\"52.94.1.1\", \"34.84.1.1\"]"));
        let out = tf.fails(&["plan"]);
        assert!(out.contains("52.94.1.1 is in 52.94.0.0/22 (aws, AMAZON), a range without a region"), "{out}");
        assert!(out.contains("34.84.1.1 is in none of the published"), "{out}");
        // A snapshot file that cannot be read is an error, never the built-in table instead.
        tf.env("LOCALITY_RANGES_FILE", dir.path().join("missing.bin").to_str().unwrap());
        let out = tf.fails(&["plan"]);
        assert!(out.contains("LOCALITY_RANGES_FILE="), "{out}");
    })
    .await
    .unwrap();
}

/// An IP moved from a destroyed `locality_region_hint` into the zone-wide resource in one
/// apply keeps its mapping, whichever of the two changes Terraform runs first (the zone-wide
/// resource adopts it; the delete sees it taken), and the next plan is empty.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn moving_an_ip_into_the_zone_wide_resource_in_one_apply_keeps_the_mapping() {
    with_fake(|fake, tf| {
        let single = format!("\nresource \"locality_region_hint\" \"one\" {{\n  zone_id   = \"{ZONE}\"\n  origin_ip = \"192.0.2.50\"\n  vendor    = \"aws\"\n  region    = \"us-east-1\"\n}}\n");
        let zone_wide = |with_moved: bool| {
            let moved = if with_moved { "    \"192.0.2.50\" = \"aws:us-east-1\"\n" } else { "" };
            format!("\nresource \"locality_region_hints\" \"zone\" {{\n  zone_id = \"{ZONE}\"\n  hints = {{\n    \"192.0.2.51\" = \"aws:us-west-2\"\n{moved}  }}\n}}\n")
        };
        for round in 0..4 {
            tf.write("main.tf", &format!("{}{}{single}", provider(&fake), zone_wide(false)));
            tf.ok(&["apply", "-auto-approve"]);
            tf.write("main.tf", &format!("{}{}", provider(&fake), zone_wide(true)));
            tf.ok(&["apply", "-auto-approve"]);
            assert_eq!(
                fake.mappings().get("192.0.2.50").map(|m| m.1.as_str()),
                Some("us-east-1"),
                "round {round}"
            );
            tf.assert_no_changes();
            tf.ok(&["destroy", "-auto-approve"]);
            assert!(fake.mappings().is_empty());
        }
    })
    .await;
}
