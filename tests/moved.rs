//! Adoption without re-creating anything: `moved { from = cloudflare_origin_cloud_region.x  to =
//! locality_region_hint.x }` (Terraform 1.8+, MoveResourceState) under Terraform 1.11.4 and
//! 1.15.5. The working directory starts from a state that holds the official provider's resource
//! (v5.20's shape, schema version 500) — written as the local backend's `terraform.tfstate`, the
//! file `terraform state push` would write — with the official provider attached as a stand-in
//! (Terraform loads the provider of every resource in the state, so one must be there; it is
//! never asked to do anything). The hint is live in the Cloudflare fake. The plan shows the move
//! and nothing else, the apply writes nothing to the API, and the next plan is empty.

mod common;

use common::fake_cloudflare::{FakeCloudflare, TOKEN, ZONE};
use common::{terraform_1_15, terraform_binary, Terraform, PREAMBLE};

fn provider(fake: &FakeCloudflare) -> String {
    format!(
        "provider \"locality\" {{\n  cloudflare {{\n    api_token = \"{TOKEN}\"\n    base_url  = \"{}\"\n  }}\n}}\n",
        fake.base_url()
    )
}

/// The `moved` block and resource of docs/resources/region_hint.md's migration guide.
fn guide_block() -> String {
    let page =
        std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/resources/region_hint.md"))
            .unwrap();
    let section = &page[page
        .find("## Migrating from the official `cloudflare_origin_cloud_region`")
        .unwrap()..];
    let start = section.find("```terraform\n").unwrap() + "```terraform\n".len();
    let block = &section[start..start + section[start..].find("```").unwrap()];
    assert!(block.contains(ZONE) && block.contains("moved {"), "{block}");
    block.to_string()
}

fn state(ip: &str) -> String {
    serde_json::json!({
        "version": 4,
        "terraform_version": "1.11.4",
        "serial": 3,
        "lineage": "6e1c9a4e-3b0b-4f59-9a5e-0d8c7b6f2a11",
        "outputs": {},
        "resources": [{
            "mode": "managed",
            "type": "cloudflare_origin_cloud_region",
            "name": "origin",
            "provider": "provider[\"registry.terraform.io/cloudflare/cloudflare\"]",
            "instances": [{
                "schema_version": 500,
                "attributes": {
                    "id": ip, "zone_id": ZONE, "origin_ip": ip, "vendor": "aws", "region": "us-east-1",
                    "modified_on": "2026-06-20T08:00:00Z"
                },
                "sensitive_attributes": []
            }]
        }],
        "check_results": null
    })
    .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn moved_from_cloudflare_origin_cloud_region_changes_nothing() {
    let fake = FakeCloudflare::start().await;
    let (address, attach) = common::cloudflare_provider::start().await;
    let reattach = serde_json::json!({ address: attach }).to_string();
    tokio::task::spawn_blocking(move || {
        for binary in [terraform_binary(), terraform_1_15()] {
            fake.set("2001:db8::1", "aws", "us-east-1");
            let mut tf = Terraform::dev_overrides().with_binary(&binary);
            let version = tf.version();
            tf.env("TF_REATTACH_PROVIDERS", &reattach);
            tf.write("terraform.tfstate", &state("2001:DB8::1"));
            // The migration guide's block, as written, with this test's provider block.
            tf.write("main.tf", &format!("{PREAMBLE}\n{}\n{}", provider(&fake), guide_block()));
            fake.take_requests();
            let plan = tf.ok(&["plan"]);
            let plan_before = plan.clone();
            assert!(
                plan.contains("cloudflare_origin_cloud_region.origin has moved to locality_region_hint.origin"),
                "{version}: {plan}"
            );
            assert!(plan.contains("0 to add, 0 to change, 0 to destroy"), "{version}: {plan}");
            tf.ok(&["apply", "-auto-approve"]);
            let writes: Vec<String> = fake.take_requests().into_iter().filter(|r| !r.starts_with("GET")).collect();
            assert!(writes.is_empty(), "{version}: the move wrote to the API: {writes:?}");
            let (code, plan) = tf.plan_exit_code();
            assert_eq!(code, 0, "{version}: the plan after the move is not empty:\n{plan}");
            eprintln!("{version}: the plan that moves:\n{first}\n{version}: the plan after the apply:\n{plan}", first = plan_before);
            let show = tf.ok(&["state", "show", "locality_region_hint.origin"]);
            assert!(show.contains(&format!("\"{ZONE}/2001:db8::1\"")), "{version}: {show}");
            assert!(show.contains("upper_tier_colos"), "{version}: {show}");
            assert!(
                !tf.ok(&["state", "list"]).contains("cloudflare_origin_cloud_region"),
                "{version}: the official resource is still in the state"
            );
            assert_eq!(fake.mappings()["2001:db8::1"], ("aws".into(), "us-east-1".into()));

            // Any other type is refused with a way out, and nothing changes.
            let mut other = Terraform::dev_overrides().with_binary(&binary);
            other.env("TF_REATTACH_PROVIDERS", &reattach);
            other.write("terraform.tfstate", &state("192.0.2.10").replace("cloudflare_origin_cloud_region", "cloudflare_zone"));
            other.write(
                "main.tf",
                &format!(
                    "{PREAMBLE}\nprovider \"locality\" {{\n  cloudflare {{\n    api_token = \"{TOKEN}\"\n    base_url  = \"{}\"\n  }}\n}}\n\n\
                     moved {{\n  from = cloudflare_zone.origin\n  to   = locality_region_hint.origin\n}}\n\n\
                     resource \"locality_region_hint\" \"origin\" {{\n  zone_id   = \"{ZONE}\"\n  origin_ip = \"192.0.2.10\"\n  vendor    = \"aws\"\n  region    = \"us-east-1\"\n}}\n",
                    fake.base_url()
                ),
            );
            let refused = other.fails(&["plan"]);
            let refused = refused.split_whitespace().collect::<Vec<_>>().join(" ");
            assert!(
                refused.contains("takes the state of cloudflare_origin_cloud_region (cloudflare/cloudflare) only"),
                "{version}: {refused}"
            );
        }
    })
    .await
    .unwrap();
}

/// Issue 37: a moved state is checked like the resource's configuration before anything is
/// moved: an unknown schema version, a vendor or region the resource does not accept, and an
/// `origin_ip` of 10 MB are each an error saying what is wrong, the diagnostic repeats at most
/// 64 characters of a value, and the state still holds the official resource. (Before: all
/// three moved — the 10 MB value came back whole in the "Invalid state to move" error.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_moved_state_is_validated_and_never_echoed_whole() {
    let fake = FakeCloudflare::start().await;
    let (address, attach) = common::cloudflare_provider::start().await;
    let reattach = serde_json::json!({ address: attach }).to_string();
    tokio::task::spawn_blocking(move || {
        let huge = "9".repeat(10 << 20);
        let cases = [
            (
                state("192.0.2.10").replace("\"schema_version\":500", "\"schema_version\":7"),
                "schema version 7; this provider reads version 500",
            ),
            (
                state("192.0.2.10").replace("\"vendor\":\"aws\"", "\"vendor\":\"digitalocean\""),
                "\"digitalocean\" is not a cloud Cloudflare knows",
            ),
            (
                state("192.0.2.10").replace("\"region\":\"us-east-1\"", "\"region\":\"us-nowhere-1\""),
                "\"us-nowhere-1\" is not an AWS region",
            ),
            (
                state(&huge).replace(&format!("\"id\":\"{huge}\""), "\"id\":\"x\""),
                "(10485760 characters)",
            ),
        ];
        for (state_text, expected) in cases {
            assert_ne!(state_text, state("192.0.2.10"), "each case changes the valid state");
            let mut tf = Terraform::dev_overrides();
            tf.env("TF_REATTACH_PROVIDERS", &reattach);
            tf.write("terraform.tfstate", &state_text);
            tf.write(
                "main.tf",
                &format!("{PREAMBLE}\n{}\n{}", provider(&fake), guide_block()),
            );
            let run = tf.run(&["plan"]);
            assert_ne!(run.code, 0, "{}", &run.all()[..run.all().len().min(3000)]);
            let out = run.all();
            assert!(out.len() < 20_000, "the output repeats the state: {} bytes", out.len());
            let flat = out.split_whitespace().collect::<Vec<_>>().join(" ");
            assert!(flat.contains(expected), "{expected}: {flat}");
            assert!(tf
                .ok(&["state", "list"])
                .contains("cloudflare_origin_cloud_region.origin"));
        }
    })
    .await
    .unwrap();
}
