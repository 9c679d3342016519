//! The Terraform 1.12+ features through the real Terraform 1.15.5 (`LOCALITY_TERRAFORM_1_15`,
//! installed by scripts/test): resource identity (in `terraform show -json`, and `import`
//! blocks with `identity` for every resource), `terraform query` list resources with
//! `-generate-config-out` giving configuration that imports with nothing to change, and the
//! `locality_shift_weights` action with its progress, its validation and its steps.

mod common;

use common::fake_cloudflare::{self as cf, FakeCloudflare};
use common::fake_compute::{self as gc, FakeCompute};
use common::{terraform_1_15, Terraform, PREAMBLE};

const PROJECT: &str = "winticket-prod";

fn tf() -> Terraform {
    Terraform::dev_overrides().with_binary(&terraform_1_15())
}

fn cloudflare_provider(fake: &FakeCloudflare) -> String {
    format!(
        "{PREAMBLE}\nprovider \"locality\" {{\n  cloudflare {{\n    api_token = \"{}\"\n    base_url  = \"{}\"\n  }}\n}}\n",
        cf::TOKEN,
        fake.base_url()
    )
}

fn google_provider(fake: &FakeCompute) -> String {
    format!(
        "{PREAMBLE}\nprovider \"locality\" {{\n  google {{\n    access_token = \"{}\"\n    project      = \"{PROJECT}\"\n    base_url     = \"{}\"\n  }}\n}}\n",
        gc::TOKEN,
        fake.base_url()
    )
}

fn flat(out: &str) -> String {
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `terraform show -json`'s identity of one resource address.
fn identity_of(tf: &Terraform, address: &str) -> serde_json::Value {
    let run = tf.run(&["show", "-json"]);
    assert_eq!(run.code, 0, "{}", run.all());
    let state: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let resources = state["values"]["root_module"]["resources"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let found = resources
        .iter()
        .find(|r| r["address"] == address)
        .unwrap_or_else(|| panic!("{address} in {state}"));
    found["identity"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_resource_has_an_identity_and_imports_by_it() {
    let cloudflare = FakeCloudflare::start().await;
    let compute = FakeCompute::start().await;
    compute.put_url_map(PROJECT, "web-urlmap", &[("web-bs", 100), ("web-bs-tokyo", 0)]);
    tokio::task::spawn_blocking(move || {
        let zone = cf::ZONE;
        // Created through Terraform: identities in state.
        let tf = tf();
        let map_path = tf.path("replica-map.json");
        let resources = format!(
            "{}\nprovider \"locality\" {{\n  alias = \"google\"\n  google {{\n    access_token = \"{}\"\n    project      = \"{PROJECT}\"\n    base_url     = \"{}\"\n  }}\n}}\n\n\
             resource \"locality_region_hint\" \"one\" {{\n  zone_id   = \"{zone}\"\n  origin_ip = \"2001:DB8::0001\"\n  vendor    = \"aws\"\n  region    = \"us-east-1\"\n}}\n\n\
             resource \"locality_region_hints\" \"zone\" {{\n  zone_id = \"{zone}\"\n  hints   = {{ \"192.0.2.10\" = \"gcp:us-central1\" }}\n}}\n\n\
             resource \"locality_weighted_backend\" \"web\" {{\n  provider = locality.google\n  url_map  = \"web-urlmap\"\n  weights  = {{ \"web-bs\" = 100, \"web-bs-tokyo\" = 0 }}\n}}\n\n\
             resource \"locality_zone_replica_map\" \"cache\" {{\n  member {{\n    endpoint = \"node-1.example:6379\"\n    zone     = \"ap-northeast-1a\"\n    role     = \"replica\"\n  }}\n  fallback_endpoint = \"reader.example:6379\"\n  file {{\n    path = \"{}\"\n  }}\n}}\n",
            cloudflare_provider(&cloudflare),
            gc::TOKEN,
            compute.base_url(),
            map_path.display()
        );
        tf.write("main.tf", &resources);
        tf.ok(&["apply", "-auto-approve"]);
        tf.assert_no_changes();

        // A state written by the release before regional URL maps, routes and
        // `unmanaged_mappings`: without those attributes and identity attributes. It upgrades
        // in place: an empty plan, no error.
        let state_path = tf.path("terraform.tfstate");
        let mut state: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&state_path).unwrap()).unwrap();
        for resource in state["resources"].as_array_mut().unwrap() {
            let kind = resource["type"].as_str().unwrap().to_string();
            for instance in resource["instances"].as_array_mut().unwrap() {
                let (attributes, identity): (&[&str], &[&str]) = match kind.as_str() {
                    "locality_weighted_backend" => (
                        &["region", "path_matcher", "route_rule_priority"],
                        &["region", "path_matcher", "route_rule_priority"],
                    ),
                    "locality_region_hints" => (&["unmanaged_mappings"], &[]),
                    _ => (&[], &[]),
                };
                for key in attributes {
                    instance["attributes"].as_object_mut().unwrap().remove(*key);
                }
                for key in identity {
                    instance["identity"].as_object_mut().unwrap().remove(*key);
                }
            }
        }
        std::fs::write(&state_path, serde_json::to_string_pretty(&state).unwrap()).unwrap();
        tf.assert_no_changes();
        assert_eq!(
            identity_of(&tf, "locality_region_hint.one"),
            serde_json::json!({"zone_id": zone, "origin_ip": "2001:db8::1"})
        );
        assert_eq!(identity_of(&tf, "locality_region_hints.zone"), serde_json::json!({"zone_id": zone}));
        assert_eq!(
            identity_of(&tf, "locality_weighted_backend.web"),
            serde_json::json!({"project": PROJECT, "region": null, "url_map": "web-urlmap", "path_matcher": null, "route_rule_priority": null})
        );
        assert_eq!(
            identity_of(&tf, "locality_zone_replica_map.cache"),
            serde_json::json!({"kind": "file", "name": map_path.display().to_string()})
        );

        // A fresh directory imports each of them by identity, with nothing else to do: the zone
        // replica map's `member` blocks are read back from the document's `nodes`.
        let fresh = self::tf();
        let imports = format!(
            "import {{\n  to       = locality_region_hint.one\n  identity = {{\n    zone_id   = \"{zone}\"\n    origin_ip = \"2001:0DB8::1\"\n  }}\n}}\n\n\
             import {{\n  to       = locality_weighted_backend.web\n  provider = locality.google\n  identity = {{\n    url_map = \"web-urlmap\"\n  }}\n}}\n\n\
             import {{\n  to       = locality_zone_replica_map.cache\n  identity = {{\n    kind = \"file\"\n    name = \"{}\"\n  }}\n}}\n",
            map_path.display()
        );
        let without_zone_wide = resources.replace(
            &format!("resource \"locality_region_hints\" \"zone\" {{\n  zone_id = \"{zone}\"\n  hints   = {{ \"192.0.2.10\" = \"gcp:us-central1\" }}\n}}\n"),
            "",
        );
        assert_ne!(without_zone_wide, resources);
        fresh.write("main.tf", &without_zone_wide);
        fresh.write("imports.tf", &imports);
        let (code, plan) = fresh.plan_exit_code();
        assert_eq!(code, 2);
        let plan = flat(&plan);
        assert!(plan.contains("Plan: 3 to import, 0 to add, 0 to change, 0 to destroy"), "{plan}");
        assert!(plan.contains("# locality_zone_replica_map.cache will be imported"), "{plan}");
        fresh.ok(&["apply", "-auto-approve"]);
        std::fs::remove_file(fresh.path("imports.tf")).unwrap();
        fresh.assert_no_changes();
        assert_eq!(
            identity_of(&fresh, "locality_region_hint.one"),
            serde_json::json!({"zone_id": zone, "origin_ip": "2001:db8::1"})
        );
        assert_eq!(
            identity_of(&fresh, "locality_weighted_backend.web"),
            serde_json::json!({"project": PROJECT, "region": null, "url_map": "web-urlmap", "path_matcher": null, "route_rule_priority": null}),
            "the project defaults to the provider's"
        );

        // The zone-wide resource imports every mapping of the zone by its identity.
        let zone_wide = self::tf();
        zone_wide.write(
            "main.tf",
            &format!(
                "{}\nresource \"locality_region_hints\" \"zone\" {{\n  zone_id = \"{zone}\"\n  hints   = {{\n    \"192.0.2.10\"  = \"gcp:us-central1\"\n    \"2001:db8::1\" = \"aws:us-east-1\"\n  }}\n}}\n\nimport {{\n  to       = locality_region_hints.zone\n  identity = {{\n    zone_id = \"{zone}\"\n  }}\n}}\n",
                cloudflare_provider(&cloudflare)
            ),
        );
        let (_, plan) = zone_wide.plan_exit_code();
        assert!(flat(&plan).contains("Plan: 1 to import, 0 to add, 0 to change, 0 to destroy"), "{plan}");
        zone_wide.ok(&["apply", "-auto-approve"]);
        assert_eq!(identity_of(&zone_wide, "locality_region_hints.zone"), serde_json::json!({"zone_id": zone}));

        // An identity that misses a required attribute is an error that names it.
        let broken = self::tf();
        broken.write("main.tf", &resources);
        broken.write(
            "imports.tf",
            &format!("import {{\n  to       = locality_region_hint.one\n  identity = {{\n    zone_id = \"{zone}\"\n  }}\n}}\n"),
        );
        let out = flat(&broken.fails(&["plan"]));
        assert!(out.contains("origin_ip"), "{out}");
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn query_lists_region_hints_and_generated_configuration_imports_cleanly() {
    let fake = FakeCloudflare::start().await;
    fake.set("198.51.100.10", "aws", "us-east-1");
    fake.set("2001:db8::7", "gcp", "asia-northeast1");
    fake.set("198.51.100.11", "azure", "japaneast");
    tokio::task::spawn_blocking(move || {
        let tf = tf();
        tf.write("main.tf", &cloudflare_provider(&fake));
        tf.write(
            "hints.tfquery.hcl",
            &format!("list \"locality_region_hint\" \"zone\" {{\n  provider         = locality\n  include_resource = true\n\n  config {{\n    zone_id = \"{}\"\n  }}\n}}\n", cf::ZONE),
        );
        let out = tf.ok(&["query"]);
        eprintln!("terraform query:\n{out}"); // shown with --nocapture
        for line in ["198.51.100.10 → aws:us-east-1", "2001:db8::7 → gcp:asia-northeast1", "198.51.100.11 → azure:japaneast"] {
            assert!(out.contains(line), "{line} in\n{out}");
        }
        tf.ok(&["query", "-generate-config-out=generated.tf"]);
        let generated = tf.read("generated.tf").unwrap();
        assert!(generated.contains("resource \"locality_region_hint\""), "{generated}");
        assert!(generated.contains("identity"), "{generated}");

        // Planned in a fresh directory: three imports, nothing else.
        let fresh = self::tf();
        fresh.write("main.tf", &cloudflare_provider(&fake));
        fresh.write("generated.tf", &generated);
        let (_, plan) = fresh.plan_exit_code();
        let plan = flat(&plan);
        assert!(plan.contains("Plan: 3 to import, 0 to add, 0 to change, 0 to destroy"), "{plan}");
        fresh.ok(&["apply", "-auto-approve"]);
        fresh.assert_no_changes();

        // A bad zone ID in the list's config is a diagnostic on it.
        tf.write(
            "hints.tfquery.hcl",
            "list \"locality_region_hint\" \"zone\" {\n  provider = locality\n\n  config {\n    zone_id = \"not-a-zone\"\n  }\n}\n",
        );
        let out = flat(&tf.fails(&["query"]));
        assert!(out.contains("is not a Cloudflare zone ID"), "{out}");
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn query_lists_weighted_url_maps_and_generated_configuration_imports_cleanly() {
    let fake = FakeCompute::start().await;
    fake.put_url_map(
        PROJECT,
        "web",
        &[("web-bs", 100), ("web-bs-tokyo", 0), ("web-bs-osaka", 0)],
    );
    fake.put_url_map(PROJECT, "api", &[("api-bs", 70), ("api-bs-osaka", 30)]);
    // A URL map without weighted backend services is not listed.
    fake.put_url_map(PROJECT, "static", &[]);
    // Path matcher routes are results of their own; regional URL maps are listed by region.
    fake.put_path_matcher_map(PROJECT, None, "paths");
    fake.put_path_matcher_map(PROJECT, Some("asia-northeast1"), "regional");
    tokio::task::spawn_blocking(move || {
        let tf = tf();
        tf.write("main.tf", &google_provider(&fake));
        tf.write(
            "maps.tfquery.hcl",
            "list \"locality_weighted_backend\" \"all\" {\n  provider         = locality\n  include_resource = true\n\n  config {}\n}\n",
        );
        fake.take_requests();
        let out = tf.ok(&["query"]);
        assert!(out.contains("web (3 weighted backends)") && out.contains("api (2 weighted backends)"), "{out}");
        assert!(
            out.contains("paths#api (2 weighted backends)") && out.contains("paths#api/10 (2 weighted backends)"),
            "{out}"
        );
        assert!(!out.contains("static") && !out.contains("regional") && !out.contains("paths (") && !out.contains("paths#api/20"), "{out}");
        assert!(fake.take_requests().iter().any(|r| r.starts_with("GET urlMaps (list)")));
        tf.ok(&["query", "-generate-config-out=generated.tf"]);
        let generated = tf.read("generated.tf").unwrap();
        assert!(generated.contains("api-bs-osaka = 30"), "{generated}");

        let fresh = self::tf();
        fresh.write("main.tf", &google_provider(&fake));
        fresh.write("generated.tf", &generated);
        let (_, plan) = fresh.plan_exit_code();
        let plan = flat(&plan);
        assert!(plan.contains("Plan: 4 to import, 0 to add, 0 to change, 0 to destroy"), "{plan}");
        fresh.ok(&["apply", "-auto-approve"]);
        fresh.assert_no_changes();

        // One region's regional URL maps.
        let regional = self::tf();
        regional.write("main.tf", &google_provider(&fake));
        regional.write(
            "maps.tfquery.hcl",
            "list \"locality_weighted_backend\" \"tokyo\" {\n  provider         = locality\n  include_resource = true\n\n  config {\n    region = \"asia-northeast1\"\n  }\n}\n",
        );
        regional.ok(&["query", "-generate-config-out=generated.tf"]);
        let generated = regional.read("generated.tf").unwrap();
        assert!(generated.contains("region") && generated.contains("asia-northeast1") && generated.contains("route_rule_priority"), "{generated}");
        assert!(!generated.contains("\"web\""), "{generated}");
        let (_, plan) = regional.plan_exit_code();
        assert!(flat(&plan).contains("Plan: 2 to import, 0 to add, 0 to change, 0 to destroy"), "{plan}");
        regional.ok(&["apply", "-auto-approve"]);
        regional.assert_no_changes();
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shift_weights_action_moves_in_steps_and_validates() {
    let fake = FakeCompute::start().await;
    fake.put_url_map(
        PROJECT,
        "web-urlmap",
        &[("web-bs", 0), ("web-bs-tokyo", 100), ("web-bs-osaka", 0)],
    );
    tokio::task::spawn_blocking(move || {
        let tf = tf();
        let action = |weights: &str, extra: &str| {
            format!(
                "{}\naction \"locality_shift_weights\" \"drain_tokyo\" {{\n  config {{\n    url_map = \"web-urlmap\"\n    weights = {{ {weights} }}\n{extra}  }}\n}}\n",
                google_provider(&fake)
            )
        };
        tf.write("main.tf", &action("\"web-bs-tokyo\" = 0, \"web-bs-osaka\" = 100", "    steps    = 4\n    interval = \"1s\"\n"));
        fake.take_requests();
        let out = tf.ok(&["apply", "-auto-approve", "-invoke=action.locality_shift_weights.drain_tokyo"]);
        for step in ["step 1/4 done: web-bs-osaka=25, web-bs-tokyo=75", "step 2/4 done", "step 4/4 done: web-bs-osaka=100, web-bs-tokyo=0"] {
            assert!(out.contains(step), "{step} in\n{out}");
        }
        assert_eq!(
            fake.weights(PROJECT, "web-urlmap"),
            vec![("web-bs".to_string(), 0), ("web-bs-tokyo".to_string(), 0), ("web-bs-osaka".to_string(), 100)]
        );
        let patches = fake.take_requests().iter().filter(|r| r.starts_with("PATCH")).count();
        assert_eq!(patches, 4, "one fingerprint-safe write per step");

        // Keys that are not weighted backend services: refused before anything is written.
        tf.write("main.tf", &action("\"web-bs-nagoya\" = 100", ""));
        let out = flat(&tf.fails(&["apply", "-auto-approve", "-invoke=action.locality_shift_weights.drain_tokyo"]));
        assert!(out.contains("\"web-bs-nagoya\"") && out.contains("web-bs, web-bs-tokyo, web-bs-osaka"), "{out}");
        assert!(!fake.take_requests().iter().any(|r| r.starts_with("PATCH")));

        // Drain Osaka by naming only Osaka: Tokyo (not named) keeps its weight and carries the
        // traffic, first put back to 100 by naming it.
        tf.write("main.tf", &action("\"web-bs-tokyo\" = 100", ""));
        tf.ok(&["apply", "-auto-approve", "-invoke=action.locality_shift_weights.drain_tokyo"]);
        tf.write("main.tf", &action("\"web-bs-osaka\" = 0", "    steps = 2\n"));
        let out = tf.ok(&["apply", "-auto-approve", "-invoke=action.locality_shift_weights.drain_tokyo"]);
        assert!(out.contains("step 2/2 done: web-bs-osaka=0"), "{out}");
        assert_eq!(
            fake.weights(PROJECT, "web-urlmap"),
            vec![("web-bs".to_string(), 0), ("web-bs-tokyo".to_string(), 100), ("web-bs-osaka".to_string(), 0)]
        );

        // All zero after the shift (Tokyo named at 0, the others 0 live): refused when the
        // action is planned, with the live list, before anything is written.
        fake.take_requests();
        tf.write("main.tf", &action("\"web-bs-tokyo\" = 0", ""));
        let out = flat(&tf.fails(&["apply", "-auto-approve", "-invoke=action.locality_shift_weights.drain_tokyo"]));
        assert!(
            out.contains("would have weight 0 (web-bs, web-bs-tokyo, web-bs-osaka)") && out.contains("Not listed, and 0 now: web-bs, web-bs-osaka"),
            "{out}"
        );
        assert!(!fake.take_requests().iter().any(|r| r.starts_with("PATCH")));

        // Out of range, bad steps: offline checks.
        tf.write("main.tf", &action("\"web-bs-osaka\" = 0", "    steps = 0\n"));
        let out = flat(&tf.fails(&["validate"]));
        assert!(out.contains("not a number of steps"), "{out}");
        tf.write("main.tf", &action("\"web-bs-osaka\" = 1001", "    interval = \"soon\"\n"));
        let out = flat(&tf.fails(&["validate"]));
        assert!(out.contains("Invalid weight") && out.contains("not an interval"), "{out}");
    })
    .await
    .unwrap();
}

/// The runbook of the action's page, end to end: CI manages the weights with
/// `locality_weighted_backend`; the on-call engineer drains Tokyo with the action; the next plan
/// shows the revert as the diff it is, with a warning naming the moved services; once the
/// configuration follows the shift, the plan is empty and the warning gone. Regional URL map,
/// path matcher route: the action and the resource address it the same way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_the_action_the_resource_plan_warns_before_reverting() {
    const REGION: &str = "asia-northeast1";
    let fake = FakeCompute::start().await;
    fake.put_path_matcher_map(PROJECT, Some(REGION), "web-urlmap");
    tokio::task::spawn_blocking(move || {
        let tf = tf();
        let config = |tokyo: u32, osaka: u32| {
            format!(
                "{}\nresource \"locality_weighted_backend\" \"api\" {{\n  region       = \"{REGION}\"\n  url_map      = \"web-urlmap\"\n  path_matcher = \"api\"\n  weights = {{\n    \"api-bs-tokyo\" = {tokyo}\n    \"api-bs-osaka\" = {osaka}\n  }}\n}}\n\n\
                 action \"locality_shift_weights\" \"drain_tokyo\" {{\n  config {{\n    region       = \"{REGION}\"\n    url_map      = \"web-urlmap\"\n    path_matcher = \"api\"\n    weights      = {{ \"api-bs-tokyo\" = 0, \"api-bs-osaka\" = 100 }}\n  }}\n}}\n",
                google_provider(&fake)
            )
        };
        tf.write("main.tf", &config(100, 0));
        tf.ok(&["apply", "-auto-approve"]);
        tf.assert_no_changes();

        // The incident: the action drains Tokyo now.
        let out = tf.ok(&["apply", "-auto-approve", "-invoke=action.locality_shift_weights.drain_tokyo"]);
        assert!(out.contains("step 1/1 done: api-bs-osaka=100, api-bs-tokyo=0"), "{out}");
        assert_eq!(
            fake.weights_at(PROJECT, Some(REGION), "web-urlmap", "/pathMatchers/0/defaultRouteAction/weightedBackendServices"),
            [("api-bs-tokyo".to_string(), 0), ("api-bs-osaka".to_string(), 100)]
        );

        // The next CI plan: the revert is the diff, and a warning says what it is.
        let (code, plan) = tf.plan_exit_code();
        assert_eq!(code, 2, "{plan}");
        assert!(plan.contains("\"api-bs-tokyo\" = 0 -> 100") && plan.contains("\"api-bs-osaka\" = 100 -> 0"), "{plan}");
        let flat_plan = flat(&plan);
        assert!(
            flat_plan.contains("Live weights were changed outside this configuration")
                && flat_plan.contains("api-bs-osaka: live 100, configured 0; api-bs-tokyo: live 0, configured 100")
                && flat_plan.contains("applying puts them back"),
            "{plan}"
        );
        eprintln!("revert plan:\n{plan}");

        // The runbook's second half: the configuration follows the shift; nothing to do, no warning.
        tf.write("main.tf", &config(0, 100));
        let (code, plan) = tf.plan_exit_code();
        assert_eq!(code, 0, "{plan}");
        assert!(!plan.contains("outside this configuration"), "{plan}");
        tf.ok(&["apply", "-auto-approve"]);
        tf.assert_no_changes();

        // Import by identity carries region and route.
        tf.ok(&["state", "rm", "locality_weighted_backend.api"]);
        tf.write(
            "import.tf",
            &format!("import {{\n  to       = locality_weighted_backend.api\n  identity = {{\n    region       = \"{REGION}\"\n    url_map      = \"web-urlmap\"\n    path_matcher = \"api\"\n  }}\n}}\n"),
        );
        let (_, plan) = tf.plan_exit_code();
        assert!(flat(&plan).contains("Plan: 1 to import, 0 to add, 0 to change, 0 to destroy"), "{plan}");
        tf.ok(&["apply", "-auto-approve"]);
        assert_eq!(
            identity_of(&tf, "locality_weighted_backend.api"),
            serde_json::json!({"project": PROJECT, "region": REGION, "url_map": "web-urlmap", "path_matcher": "api", "route_rule_priority": null})
        );
    })
    .await
    .unwrap();
}

/// The incident runbook of docs/actions/shift_weights.md, followed literally: the generated
/// configuration of examples/generator/managed-weights (generated by the `locality` binary, as
/// the spec's comment says) plus the action example as written, applied; the runbook's action;
/// traffic only on Osaka's own service; a plan warns before reverting; the spec changed as the
/// runbook says (`active = ["osaka"]`) and regenerated; the plan is empty. (Before the fix the
/// action left the combined `web-bs` at 100, still sending traffic to Tokyo, and the last plan
/// was not empty.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_incident_runbook_drains_the_generated_layout_and_ends_with_an_empty_plan() {
    let fake = FakeCompute::start().await;
    let reattach = common::google::start_with(Some(fake.clone())).await;
    let f = fake.clone();
    tokio::task::spawn_blocking(move || {
        let fake = f;
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut tf = tf();
        tf.env("TF_REATTACH_PROVIDERS", &reattach);
        let spec = std::fs::read_to_string(root.join("examples/generator/managed-weights/tokyo-osaka.hcl")).unwrap();
        let action = std::fs::read_to_string(root.join("examples/actions/locality_shift_weights/action.tf")).unwrap();
        let gen = |tf: &Terraform| {
            let out = std::process::Command::new(env!("CARGO_BIN_EXE_locality"))
                .args(["gen", "tokyo-osaka.hcl", "-o", "tokyo-osaka.tf"])
                .current_dir(tf.dir.path())
                .output()
                .unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        };
        tf.write("tokyo-osaka.hcl", &spec);
        gen(&tf);
        tf.write("action.tf", &action);
        tf.write("versions.tf", &google_provider(&fake));
        tf.ok(&["apply", "-auto-approve"]);
        let live = || fake.weights(PROJECT, "web-urlmap");
        let expect = |pairs: &[(&str, u64)]| pairs.iter().map(|(n, w)| (n.to_string(), *w)).collect::<Vec<_>>();
        assert_eq!(
            live(),
            expect(&[("web-bs", 100), ("web-bs-tokyo", 0), ("web-bs-osaka", 0)])
        );

        // Step 2: the runbook's action.
        let out = tf.ok(&[
            "apply",
            "-auto-approve",
            "-invoke=action.locality_shift_weights.drain_tokyo",
        ]);
        assert!(
            flat(&out).contains("step 2/2 done: web-bs=0, web-bs-osaka=100, web-bs-tokyo=0"),
            "{out}"
        );
        assert_eq!(
            live(),
            expect(&[("web-bs", 0), ("web-bs-tokyo", 0), ("web-bs-osaka", 100)])
        );
        // Until step 3 lands, a plan shows the revert and warns.
        let (code, plan) = tf.plan_exit_code();
        assert_eq!(code, 2, "{plan}");
        assert!(
            flat(&plan).contains("Live weights were changed outside this configuration"),
            "{plan}"
        );

        // Step 3: the spec as the runbook says, regenerated: nothing to change.
        let changed = spec.replace("active = [\"tokyo\", \"osaka\"]", "active = [\"osaka\"]");
        assert_ne!(changed, spec, "the spec has the line the runbook changes");
        tf.write("tokyo-osaka.hcl", &changed);
        gen(&tf);
        tf.assert_no_changes();
        assert_eq!(
            live(),
            expect(&[("web-bs", 0), ("web-bs-tokyo", 0), ("web-bs-osaka", 100)])
        );
    })
    .await
    .unwrap();
}

/// The action and an apply in another working directory (two Terraform processes, two provider
/// processes) write two routes of one URL map at the same moment: Compute accepts both PATCHes
/// (both read the same fingerprint), applies the first when its operation ends and fails the
/// second's operation with "Invalid fingerprint." The loser reads again, re-applies only its
/// own route's weights and lands: both succeed, each route ends as asked, and the resource's
/// next plan is empty.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_action_and_an_apply_on_another_route_of_one_url_map_both_land() {
    const API: &str = "/pathMatchers/0/defaultRouteAction/weightedBackendServices";
    const WEB: &str = "/defaultRouteAction/weightedBackendServices";
    let fake = FakeCompute::start().await;
    fake.put_four_route_map(PROJECT, "web-urlmap", 100, 0);
    tokio::task::spawn_blocking(move || {
        let (resource, action) = (tf(), tf());
        resource.write(
            "main.tf",
            &format!(
                "{}\nresource \"locality_weighted_backend\" \"web\" {{\n  url_map = \"web-urlmap\"\n  weights = {{ \"web-tokyo\" = 100, \"web-osaka\" = 0 }}\n}}\n",
                google_provider(&fake)
            ),
        );
        resource.ok(&["apply", "-auto-approve"]);
        resource.write(
            "main.tf",
            &format!(
                "{}\nresource \"locality_weighted_backend\" \"web\" {{\n  url_map = \"web-urlmap\"\n  weights = {{ \"web-tokyo\" = 0, \"web-osaka\" = 100 }}\n}}\n",
                google_provider(&fake)
            ),
        );
        action.write(
            "main.tf",
            &format!(
                "{}\naction \"locality_shift_weights\" \"drain_api_tokyo\" {{\n  config {{\n    url_map      = \"web-urlmap\"\n    path_matcher = \"api\"\n    weights      = {{ \"api-tokyo\" = 0, \"api-osaka\" = 100 }}\n  }}\n}}\n",
                google_provider(&fake)
            ),
        );
        {
            let mut s = fake.state.lock().unwrap();
            s.apply_at_operation_end = true;
            s.hold_operations_until = Some((2, None));
        }
        let (applied, invoked) = std::thread::scope(|scope| {
            let applied = scope.spawn(|| resource.run(&["apply", "-auto-approve"]));
            let invoked =
                scope.spawn(|| action.run(&["apply", "-auto-approve", "-invoke=action.locality_shift_weights.drain_api_tokyo"]));
            (applied.join().unwrap(), invoked.join().unwrap())
        });
        assert_eq!(applied.code, 0, "the apply:\n{}", applied.all());
        assert_eq!(invoked.code, 0, "the action:\n{}", invoked.all());
        assert_eq!(
            fake.state.lock().unwrap().stale_operations,
            1,
            "the two writes overlapped and one operation failed on the stale fingerprint"
        );
        assert_eq!(fake.weights_at(PROJECT, None, "web-urlmap", WEB), [("web-tokyo".to_string(), 0), ("web-osaka".to_string(), 100)]);
        assert_eq!(fake.weights_at(PROJECT, None, "web-urlmap", API), [("api-tokyo".to_string(), 0), ("api-osaka".to_string(), 100)]);
        resource.assert_no_changes();
    })
    .await
    .unwrap();
}
