//! `locality_region_hint` through the real terraform CLI against the fake Cloudflare API:
//! lifecycle (with non-canonical IPv6 and upper-case vendor), no silent takeover, import,
//! request counts for 250 hints, the 3,500 limit, bad input, and applies under injected faults.

mod common;

use std::time::Duration;

use common::fake_cloudflare::{FakeCloudflare, Fault, TOKEN, ZONE};
use common::{Terraform, PREAMBLE};

fn provider(fake: &FakeCloudflare) -> String {
    format!("{PREAMBLE}\nprovider \"locality\" {{\n  cloudflare {{\n    api_token = \"{TOKEN}\"\n    base_url  = \"{}\"\n  }}\n}}\n", fake.base_url())
}

fn hint(name: &str, ip: &str, vendor: &str, region: &str) -> String {
    format!("\nresource \"locality_region_hint\" \"{name}\" {{\n  zone_id   = \"{ZONE}\"\n  origin_ip = \"{ip}\"\n  vendor    = \"{vendor}\"\n  region    = \"{region}\"\n}}\n")
}

/// `n` hints from `for_each` over consecutive addresses of 10.16.0.0/16.
fn many(fake: &FakeCloudflare, n: usize) -> String {
    format!(
        "{}\nresource \"locality_region_hint\" \"many\" {{\n  for_each  = toset([for i in range({n}) : cidrhost(\"10.16.0.0/16\", i + 1)])\n  zone_id   = \"{ZONE}\"\n  origin_ip = each.key\n  vendor    = \"aws\"\n  region    = \"us-east-1\"\n}}\n",
        provider(fake)
    )
}

fn count(requests: &[String], prefix: &str) -> usize {
    requests.iter().filter(|r| r.starts_with(prefix)).count()
}

async fn with_fake(test: impl FnOnce(FakeCloudflare, Terraform) + Send + 'static) {
    let fake = FakeCloudflare::start().await;
    let tf = Terraform::dev_overrides();
    tokio::task::spawn_blocking(move || test(fake, tf)).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lifecycle_with_canonical_comparison() {
    with_fake(|fake, tf| {
        let config = |v6_region: &str, v4_ip: &str| {
            format!(
                "{}{}{}",
                provider(&fake),
                hint("v4", v4_ip, "aws", "us-east-1"),
                hint("v6", "2001:DB8:0:0::0001", "GCP", v6_region)
            )
        };
        tf.write("main.tf", &config("asia-northeast1", "192.0.2.10"));
        tf.ok(&["apply", "-auto-approve"]);
        let m = fake.mappings();
        assert_eq!(
            m["2001:db8::1"],
            ("gcp".into(), "asia-northeast1".into()),
            "stored canonical, vendor lower-case"
        );
        assert_eq!(m["192.0.2.10"], ("aws".into(), "us-east-1".into()));
        // Non-canonical IPv6 and upper-case vendor: no diff after apply, none after refresh.
        tf.assert_no_changes();
        // Every request names the provider and the Terraform that drives it.
        let agents: Vec<String> = fake.state.lock().unwrap().user_agents.iter().cloned().collect();
        assert_eq!(
            agents,
            [format!(
                "Terraform/{} (+https://www.terraform.io) terraform-provider-locality/{}",
                tf.version(),
                common::VERSION
            )]
        );
        assert!(
            tf.ok(&["state", "show", "locality_region_hint.v6"]).contains("\"NRT\""),
            "upper_tier_colos from supported_regions"
        );
        let show = tf.ok(&["state", "show", "locality_region_hint.v6"]);
        assert!(
            show.contains(&format!("id               = \"{ZONE}/2001:db8::1\"")),
            "{show}"
        );

        // update the region in place
        tf.write("main.tf", &config("us-central1", "192.0.2.10"));
        let (code, plan) = tf.plan_exit_code();
        assert_eq!(code, 2);
        assert!(
            plan.contains("updated in-place") && plan.contains("\"asia-northeast1\" -> \"us-central1\""),
            "{plan}"
        );
        tf.ok(&["apply", "-auto-approve"]);
        assert_eq!(fake.mappings()["2001:db8::1"].1, "us-central1");
        tf.assert_no_changes();

        // a new IP replaces the resource: the old mapping goes, the new one comes
        tf.write("main.tf", &config("us-central1", "192.0.2.11"));
        let (_, plan) = tf.plan_exit_code();
        assert!(plan.contains("must be replaced"), "{plan}");
        tf.ok(&["apply", "-auto-approve"]);
        let m = fake.mappings();
        assert!(!m.contains_key("192.0.2.10") && m.contains_key("192.0.2.11"), "{m:?}");
        tf.assert_no_changes();

        // out-of-band change → drift → apply restores
        fake.set("192.0.2.11", "aws", "us-west-2");
        let (code, plan) = tf.plan_exit_code();
        assert_eq!(code, 2);
        assert!(plan.contains("\"us-west-2\" -> \"us-east-1\""), "{plan}");
        tf.ok(&["apply", "-auto-approve"]);
        assert_eq!(fake.mappings()["192.0.2.11"].1, "us-east-1");

        // out-of-band delete → removed from state on refresh → created again
        fake.remove("192.0.2.11");
        let (code, plan) = tf.plan_exit_code();
        assert_eq!(code, 2);
        assert!(
            plan.contains("will be created") && plan.contains("deleted outside Terraform"),
            "{plan}"
        );
        tf.ok(&["apply", "-auto-approve"]);
        tf.assert_no_changes();

        // import by command (non-canonical IP in the ID) and by block
        tf.ok(&["state", "rm", "locality_region_hint.v6"]);
        tf.ok(&["import", "locality_region_hint.v6", &format!("{ZONE}/2001:0DB8::1")]);
        tf.assert_no_changes();
        tf.ok(&["state", "rm", "locality_region_hint.v4"]);
        tf.write(
            "import.tf",
            &format!("import {{\n  to = locality_region_hint.v4\n  id = \"{ZONE}/192.0.2.11\"\n}}\n"),
        );
        let (_, plan) = tf.plan_exit_code();
        assert!(plan.contains("1 to import, 0 to add, 0 to change"), "{plan}");
        tf.ok(&["apply", "-auto-approve"]);
        std::fs::remove_file(tf.path("import.tf")).unwrap();
        tf.assert_no_changes();

        // destroy removes both; a mapping already gone is not an error
        fake.remove("2001:db8::1");
        tf.ok(&["destroy", "-auto-approve", "-refresh=false"]);
        assert!(fake.mappings().is_empty());
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_existing_mapping_is_never_taken_over() {
    with_fake(|fake, tf| {
        fake.set("198.51.100.7", "azure", "westeurope");
        tf.write(
            "main.tf",
            &format!(
                "{}{}",
                provider(&fake),
                hint("taken", "198.51.100.7", "aws", "us-east-1")
            ),
        );
        let out = tf.fails(&["apply", "-auto-approve"]);
        assert!(out.contains("Region hint already exists"), "{out}");
        assert!(
            out.contains(&format!(
                "terraform import locality_region_hint.NAME {ZONE}/198.51.100.7"
            )),
            "{out}"
        );
        assert_eq!(
            fake.mappings()["198.51.100.7"],
            ("azure".into(), "westeurope".into()),
            "untouched"
        );
        // Two resources for one IP in one configuration: the second is refused.
        tf.write(
            "main.tf",
            &format!(
                "{}{}{}",
                provider(&fake),
                hint("a", "198.51.100.8", "aws", "us-east-1"),
                hint("b", "198.51.100.8", "aws", "us-west-2")
            ),
        );
        let out = tf.fails(&["apply", "-auto-approve"]);
        assert!(out.contains("Duplicate region hint"), "{out}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_fifty_hints_cost_list_pages_not_one_request_each() {
    with_fake(|fake, tf| {
        tf.write("main.tf", &many(&fake, 250));
        fake.take_requests();
        tf.ok(&["apply", "-auto-approve"]);
        let apply = fake.take_requests();
        assert_eq!(fake.mappings().len(), 250);
        let writes = count(&apply, "PUT");
        eprintln!(
            "apply of 250: {} requests ({writes} writes): lists {}, supported {}",
            apply.len(),
            count(&apply, "GET list"),
            count(&apply, "GET supported")
        );
        assert!(
            writes <= 50,
            "writes are batched: {writes} write requests for 250 hints"
        );
        assert_eq!(count(&apply, "GET one"), 0, "no per-hint GET");

        let (code, _) = tf.plan_exit_code();
        assert_eq!(code, 0);
        let plan = fake.take_requests();
        eprintln!("plan of 250: {} requests: {plan:?}", plan.len());
        assert_eq!(
            count(&plan, "GET list"),
            3,
            "ceil(250/100) list pages, shared by all 250 reads"
        );
        assert_eq!(plan.len(), 4, "3 list pages + 1 supported_regions: {plan:?}");

        tf.ok(&["destroy", "-auto-approve"]);
        let destroy = fake.take_requests();
        assert!(fake.mappings().is_empty());
        assert!(count(&destroy, "DELETE") <= 50, "deletes are batched: {destroy:?}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_zone_limit_is_reported_on_the_hint_that_did_not_fit() {
    with_fake(|fake, tf| {
        for i in 0..3499u32 {
            fake.set(
                &format!("10.{}.{}.{}", 100 + i / 65536, (i / 256) % 256, i % 256),
                "aws",
                "us-east-1",
            );
        }
        tf.write(
            "main.tf",
            &format!(
                "{}{}{}",
                provider(&fake),
                hint("first", "192.0.2.1", "aws", "us-east-1"),
                hint("second", "192.0.2.2", "aws", "us-east-1")
            ),
        );
        let out = tf
            .fails(&["apply", "-auto-approve"])
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        assert!(
            out.contains("limit of 3500 origin cloud-region mappings") || out.contains("already has 3500"),
            "{out}"
        );
        assert_eq!(fake.mappings().len(), 3500);
        // The one that fitted is in state; the other is still planned.
        let state = tf.ok(&["state", "list"]);
        assert_eq!(
            state.lines().filter(|l| l.starts_with("locality_region_hint.")).count(),
            1,
            "{state}"
        );
        let (code, plan) = tf.plan_exit_code();
        assert_eq!(code, 2);
        assert!(plan.contains("1 to add"), "{plan}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_a_diagnostic_on_the_attribute() {
    with_fake(|fake, tf| {
        let flat = |s: String| s.split_whitespace().collect::<Vec<_>>().join(" ");
        for (h, words, line) in [
            (
                hint("x", "192.0.2.300", "aws", "us-east-1"),
                "Invalid IP address",
                "origin_ip = \"192.0.2.300\"",
            ),
            (
                hint("x", "[2001:db8::1]", "aws", "us-east-1"),
                "Invalid IP address",
                "origin_ip = \"[2001:db8::1]\"",
            ),
            (
                hint("x", "192.0.2.1", "amazon", "us-east-1"),
                "Unknown vendor",
                "vendor = \"amazon\"",
            ),
            (
                hint("x", "192.0.2.1", "aws", "us-east-9"),
                "\"us-east-9\" is not an AWS region in the built-in catalogue",
                "region = \"us-east-9\"",
            ),
            (
                hint("x", "192.0.2.1", "aws", "us-east-9"),
                "Did you mean \"us-east-1\"",
                "region = \"us-east-9\"",
            ),
            (
                hint("x", "192.0.2.1", "gcp", "asia-northeast-1"),
                "Did you mean \"asia-northeast1\"",
                "region = \"asia-northeast-1\"",
            ),
            (
                hint("x", "192.0.2.1", "gcp", "asia-northeast-1"),
                "\"asia-northeast-1\" is not a Google Cloud region",
                "region = \"asia-northeast-1\"",
            ),
            (
                hint("x", "192.0.2.1", "oci", "ap-tokyo-9"),
                "\"ap-tokyo-9\" is not an Oracle Cloud region",
                "region = \"ap-tokyo-9\"",
            ),
            (
                hint("x", "192.0.2.1", "aws", "us-east-1").replace(ZONE, "not-a-zone"),
                "Invalid zone ID",
                "zone_id = \"not-a-zone\"",
            ),
        ] {
            tf.write("main.tf", &format!("{}{h}", provider(&fake)));
            let out = flat(tf.fails(&["validate"]));
            assert!(out.contains(words), "{words}: {out}");
            assert!(
                out.contains(&line.split_whitespace().collect::<Vec<_>>().join(" ")),
                "{line}: {out}"
            );
        }
        // In the catalogue but not supported by this zone: apply-time check on `region`.
        tf.write(
            "main.tf",
            &format!("{}{}", provider(&fake), hint("x", "192.0.2.1", "aws", "sa-east-1")),
        );
        let out = flat(tf.fails(&["apply", "-auto-approve"]));
        assert!(
            out.contains("Region not supported by the zone") && out.contains("region = \"sa-east-1\""),
            "{out}"
        );
        // No token: a plan-time error that says what to set.
        tf.write(
            "main.tf",
            &format!(
                "{}{}",
                provider(&fake).replace(&format!("    api_token = \"{TOKEN}\"\n"), ""),
                hint("x", "192.0.2.1", "aws", "us-east-1")
            ),
        );
        let out = flat(tf.fails(&["plan"]));
        assert!(out.contains("CLOUDFLARE_API_TOKEN"), "{out}");
        // A wrong token: Cloudflare's own code and message, and never the token.
        tf.write(
            "main.tf",
            &format!(
                "{}{}",
                provider(&fake).replace(TOKEN, "wrong-token-123"),
                hint("x", "192.0.2.1", "aws", "us-east-1")
            ),
        );
        let out = flat(tf.fails(&["apply", "-auto-approve"]));
        assert!(out.contains("Cloudflare error 10000: Authentication error"), "{out}");
        assert!(!out.contains("wrong-token-123"));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_apply_under_faults_converges_without_duplicates_or_lost_state() {
    with_fake(|fake, tf| {
        tf.write("main.tf", &many(&fake, 30));
        fake.state.lock().unwrap().faults.extend([
            Fault::Status(429, Some(1)),
            Fault::Status(500, None),
            Fault::Slow(Duration::from_millis(300)),
            Fault::DropAfterApplying,
            Fault::Status(503, None),
            Fault::DropAfterApplying,
        ]);
        tf.ok(&["apply", "-auto-approve"]);
        assert_eq!(fake.mappings().len(), 30);
        assert_eq!(
            tf.ok(&["state", "list"])
                .lines()
                .filter(|l| l.starts_with("locality_region_hint."))
                .count(),
            30
        );
        tf.assert_no_changes();
        fake.state
            .lock()
            .unwrap()
            .faults
            .extend([Fault::DropAfterApplying, Fault::Status(502, None)]);
        tf.ok(&["destroy", "-auto-approve"]);
        assert!(fake.mappings().is_empty());
    })
    .await;
}

/// Issue 11: `terraform apply -replace` deletes the mapping and creates it again in one run;
/// the create used to be refused ("Duplicate region hint"), losing the mapping and the state.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replace_deletes_and_creates_again() {
    with_fake(|fake, tf| {
        tf.write(
            "main.tf",
            &format!("{}{}", provider(&fake), hint("x", "192.0.2.44", "aws", "us-east-1")),
        );
        tf.ok(&["apply", "-auto-approve"]);
        fake.take_requests();
        let out = tf.ok(&["apply", "-auto-approve", "-replace=locality_region_hint.x"]);
        assert!(out.contains("1 added, 0 changed, 1 destroyed"), "{out}");
        assert_eq!(
            fake.mappings()["192.0.2.44"],
            ("aws".to_string(), "us-east-1".to_string())
        );
        let requests = fake.take_requests();
        assert!(
            count(&requests, "DELETE") >= 1 && count(&requests, "PUT") >= 1,
            "{requests:?}"
        );
        assert!(tf.ok(&["state", "list"]).contains("locality_region_hint.x"));
        tf.assert_no_changes();
    })
    .await;
}

/// Issue 11: a create whose write was applied but whose every response was lost is read back
/// and adopted: the apply succeeds and nothing is left to do (the next apply used to say the
/// hint "already exists, import it").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_create_whose_responses_were_lost_is_adopted() {
    with_fake(|fake, tf| {
        tf.write(
            "main.tf",
            &format!("{}{}", provider(&fake), hint("x", "192.0.2.55", "gcp", "us-central1")),
        );
        fake.state.lock().unwrap().drop_writes = 5;
        tf.ok(&["apply", "-auto-approve"]);
        assert_eq!(fake.state.lock().unwrap().drop_writes, 0, "every attempt was lost");
        assert_eq!(
            fake.mappings()["192.0.2.55"],
            ("gcp".to_string(), "us-central1".to_string())
        );
        tf.assert_no_changes();
    })
    .await;
}

/// Issue 29: `timeouts { create }` bounds the create. A hint whose create timed out may exist
/// (the fake applied it): the state still tracks it (tainted), the next apply replaces it and
/// the plan after is empty. `request_timeout` bounds each request and `max_retries = 0` sends
/// a write once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeouts_and_the_provider_request_settings() {
    with_fake(|fake, tf| {
        let config = |provider_settings: &str, region: &str, timeouts: &str| {
            let resource = format!(
                "\nresource \"locality_region_hint\" \"x\" {{\n  zone_id   = \"{ZONE}\"\n  origin_ip = \"192.0.2.61\"\n  vendor    = \"aws\"\n  region    = \"{region}\"\n{timeouts}}}\n"
            );
            provider(&fake).replacen("provider \"locality\" {\n", &format!("provider \"locality\" {{\n{provider_settings}"), 1) + &resource
        };
        tf.write("main.tf", &config("", "us-east-1", "  timeouts {\n    delete = \"-1m\"\n  }\n"));
        let out = tf.fails(&["validate"]);
        assert!(out.contains("Invalid timeout") && out.contains("delete = \"-1m\""), "{out}");

        // The write is applied at once and answered after 8 s; the create gives up after 2 s.
        fake.state
            .lock()
            .unwrap()
            .write_faults
            .push_back(Fault::SlowAfterApplying(Duration::from_secs(8)));
        tf.write("main.tf", &config("", "us-east-1", "  timeouts {\n    create = \"2s\"\n  }\n"));
        let started = std::time::Instant::now();
        let out = tf.fails(&["apply", "-auto-approve"]);
        assert!(out.contains("create timed out") && out.contains("timeouts.create"), "{out}");
        assert!(started.elapsed() < Duration::from_secs(8), "{:?}", started.elapsed());
        assert_eq!(fake.mappings()["192.0.2.61"], ("aws".into(), "us-east-1".into()));
        let shown = tf.ok(&["state", "show", "locality_region_hint.x"]);
        assert!(shown.contains("tainted"), "tracked, to be replaced: {shown}");
        let out = tf.ok(&["apply", "-auto-approve"]);
        assert!(out.contains("1 added, 0 changed, 1 destroyed"), "{out}");
        tf.assert_no_changes();

        // `max_retries = 0`: a 503 on the write is an error after one PUT, nothing changed.
        tf.write("main.tf", &config("  max_retries = 0\n", "us-west-2", ""));
        fake.take_requests();
        fake.state.lock().unwrap().write_faults.push_back(Fault::Status(503, None));
        tf.fails(&["apply", "-auto-approve"]);
        assert_eq!(count(&fake.take_requests(), "PUT"), 1);
        assert_eq!(fake.mappings()["192.0.2.61"], ("aws".into(), "us-east-1".into()));

        // `request_timeout = "1s"`: a request answered after 5 s is given up after 1 s.
        tf.write("main.tf", &config("  max_retries = 0\n  request_timeout = \"1s\"\n", "us-west-2", ""));
        fake.state.lock().unwrap().write_faults.push_back(Fault::Slow(Duration::from_secs(5)));
        let started = std::time::Instant::now();
        tf.fails(&["apply", "-auto-approve"]);
        assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());

        // Without faults, one more apply converges.
        tf.ok(&["apply", "-auto-approve"]);
        assert_eq!(fake.mappings()["192.0.2.61"], ("aws".into(), "us-west-2".into()));
        tf.assert_no_changes();
    })
    .await;
}
