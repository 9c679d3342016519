//! `locality_weighted_backend` through the real terraform CLI against the fake Compute API:
//! lifecycle, drift, import, the HTTP 412 path, a failing operation, transient faults, bad input.

mod common;

use std::time::Instant;

use common::fake_compute::{FakeCompute, TOKEN};
use common::{Terraform, PREAMBLE};

const PROJECT: &str = "winticket-prod";
const MAP: &str = "web-urlmap";

fn config(fake: &FakeCompute, weights: &[(&str, &str)]) -> String {
    let mut w = String::new();
    for (k, v) in weights {
        w.push_str(&format!("    \"{k}\" = {v}\n"));
    }
    format!(
        "{PREAMBLE}\nprovider \"locality\" {{\n  google {{\n    access_token = \"{TOKEN}\"\n    project      = \"{PROJECT}\"\n    base_url     = \"{}\"\n  }}\n}}\n\nresource \"locality_weighted_backend\" \"web\" {{\n  url_map = \"{MAP}\"\n  weights = {{\n{w}  }}\n}}\n",
        fake.base_url()
    )
}

const NORMAL: &[(&str, &str)] = &[
    ("web-bs", "100"),
    ("web-bs-tokyo", "0"),
    // A partial path: compared by name, no perpetual diff.
    ("projects/winticket-prod/global/backendServices/web-bs-osaka", "0"),
];
const OSAKA_DOWN: &[(&str, &str)] = &[
    ("web-bs", "0"),
    ("web-bs-tokyo", "100"),
    ("projects/winticket-prod/global/backendServices/web-bs-osaka", "0"),
];

async fn setup() -> (FakeCompute, Terraform) {
    let fake = FakeCompute::start().await;
    fake.put_url_map(
        PROJECT,
        MAP,
        &[("web-bs", 100), ("web-bs-tokyo", 0), ("web-bs-osaka", 0)],
    );
    (fake, Terraform::dev_overrides())
}

fn weights(fake: &FakeCompute) -> Vec<u64> {
    fake.weights(PROJECT, MAP).into_iter().map(|(_, w)| w).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lifecycle_failover_drift_import_destroy() {
    let (fake, tf) = setup().await;
    let f = fake.clone();
    tokio::task::spawn_blocking(move || {
        let fake = f;
        // create = take over the live weights (already as configured: no write)
        tf.write("main.tf", &config(&fake, NORMAL));
        tf.ok(&["apply", "-auto-approve"]);
        assert!(
            !fake.take_requests().iter().any(|r| r.starts_with("PATCH")),
            "nothing to change, nothing written"
        );
        tf.assert_no_changes();

        // drain Osaka: only the weights change, the rest of the URL map is untouched
        let before = fake.url_map(PROJECT, MAP);
        tf.write("main.tf", &config(&fake, OSAKA_DOWN));
        let (code, plan) = tf.plan_exit_code();
        assert_eq!(code, 2);
        assert!(plan.contains("\"web-bs\"") && plan.contains("100 -> 0"), "{plan}");
        fake.take_requests();
        let started = Instant::now();
        tf.ok(&["apply", "-auto-approve"]);
        let elapsed = started.elapsed();
        let requests = fake.take_requests();
        eprintln!(
            "failover apply: {} requests in {elapsed:?}: {requests:?}",
            requests.len()
        );
        assert_eq!(weights(&fake), [0, 100, 0]);
        assert_eq!(requests.iter().filter(|r| r.starts_with("PATCH")).count(), 1);
        assert_eq!(
            requests.iter().filter(|r| r.starts_with("GET operations")).count(),
            2,
            "2-poll operation"
        );
        let after = fake.url_map(PROJECT, MAP);
        assert_eq!(after["hostRules"], before["hostRules"]);
        assert_eq!(
            after["defaultRouteAction"]["timeout"],
            before["defaultRouteAction"]["timeout"]
        );
        assert_eq!(
            after["defaultRouteAction"]["weightedBackendServices"][0]["headerAction"],
            before["defaultRouteAction"]["weightedBackendServices"][0]["headerAction"],
            "fields of the entries survive"
        );
        tf.assert_no_changes();

        // restore
        tf.write("main.tf", &config(&fake, NORMAL));
        tf.ok(&["apply", "-auto-approve"]);
        assert_eq!(weights(&fake), [100, 0, 0]);
        tf.assert_no_changes();

        // a console change shows as drift, with a warning naming the moved service, and
        // apply restores it
        fake.set_weight(PROJECT, MAP, "web-bs-osaka", 40);
        let (code, plan) = tf.plan_exit_code();
        assert_eq!(code, 2);
        assert!(plan.contains("40 -> 0"), "{plan}");
        let flat = plan.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            flat.contains("Live weights were changed outside this configuration")
                && flat.contains("web-bs-osaka: live 40, configured 0"),
            "{plan}"
        );
        tf.ok(&["apply", "-auto-approve"]);
        assert_eq!(weights(&fake), [100, 0, 0]);
        tf.assert_no_changes();

        // import by command, then by block
        tf.ok(&["state", "rm", "locality_weighted_backend.web"]);
        tf.ok(&["import", "locality_weighted_backend.web", &format!("{PROJECT}/{MAP}")]);
        let (code, plan) = tf.plan_exit_code();
        // The imported keys are names; the config spells one as a path: only that key changes.
        assert_eq!(code, 2, "{plan}");
        tf.ok(&["apply", "-auto-approve"]);
        tf.assert_no_changes();
        tf.ok(&["state", "rm", "locality_weighted_backend.web"]);
        tf.write(
            "import.tf",
            &format!("import {{\n  to = locality_weighted_backend.web\n  id = \"{PROJECT}/{MAP}\"\n}}\n"),
        );
        let (_, plan) = tf.plan_exit_code();
        assert!(plan.contains("1 to import"), "{plan}");
        tf.ok(&["apply", "-auto-approve"]);
        std::fs::remove_file(tf.path("import.tf")).unwrap();
        tf.assert_no_changes();

        // Every request names the provider and the Terraform that drives it.
        let agents = fake.state.lock().unwrap().user_agents.clone();
        let terraform = tf.version();
        assert_eq!(
            agents.into_iter().collect::<Vec<_>>(),
            [format!(
                "Terraform/{terraform} (+https://www.terraform.io) terraform-provider-locality/{}",
                common::VERSION
            )]
        );

        // destroy leaves the URL map as it is, and says so
        fake.take_requests();
        let out = tf.ok(&["destroy", "-auto-approve"]);
        assert!(out.contains("URL map left as it is"), "{out}");
        assert!(!fake.take_requests().iter().any(|r| r.starts_with("PATCH")));
        assert_eq!(weights(&fake), [100, 0, 0]);
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_concurrent_change_between_read_and_write_is_retried() {
    let (fake, tf) = setup().await;
    let f = fake.clone();
    tokio::task::spawn_blocking(move || {
        let fake = f;
        tf.write("main.tf", &config(&fake, NORMAL));
        tf.ok(&["apply", "-auto-approve"]);
        tf.write("main.tf", &config(&fake, OSAKA_DOWN));
        fake.take_requests();
        // Someone changes the map right after the provider reads it for the write. `apply`
        // refreshes (GET 1) and checks the change (GET 2) in the plan walk, checks it again as
        // the apply walk plans (GET 3), then reads before writing (GET 4).
        fake.state.lock().unwrap().after_get = Some((
            4,
            Box::new(|map| {
                map["defaultRouteAction"]["weightedBackendServices"][2]["weight"] = 5.into();
            }),
        ));
        tf.ok(&["apply", "-auto-approve"]);
        let requests = fake.take_requests();
        let patches = requests.iter().filter(|r| r.starts_with("PATCH")).count();
        assert_eq!(
            patches, 2,
            "first write refused with 412, second accepted: {requests:?}"
        );
        // The concurrent change to a managed key is overwritten with the configured value.
        assert_eq!(weights(&fake), [0, 100, 0]);
        tf.assert_no_changes();
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_operation_is_an_error_and_state_keeps_the_old_weights() {
    let (fake, tf) = setup().await;
    let f = fake.clone();
    tokio::task::spawn_blocking(move || {
        let fake = f;
        tf.write("main.tf", &config(&fake, NORMAL));
        tf.ok(&["apply", "-auto-approve"]);
        tf.write("main.tf", &config(&fake, OSAKA_DOWN));
        fake.state.lock().unwrap().fail_next_operation = Some("Backend service web-bs-tokyo is not ready".into());
        let out = tf
            .fails(&["apply", "-auto-approve"])
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        assert!(
            out.contains("operation operation-1 failed: Backend service web-bs-tokyo is not ready"),
            "{out}"
        );
        assert_eq!(weights(&fake), [100, 0, 0]);
        // Nothing changed, so the change is still planned; the next apply converges.
        let (code, _) = tf.plan_exit_code();
        assert_eq!(code, 2);
        tf.ok(&["apply", "-auto-approve"]);
        assert_eq!(weights(&fake), [0, 100, 0]);
        tf.assert_no_changes();
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transient_faults_are_retried() {
    let (fake, tf) = setup().await;
    let f = fake.clone();
    tokio::task::spawn_blocking(move || {
        let fake = f;
        tf.write("main.tf", &config(&fake, NORMAL));
        tf.ok(&["apply", "-auto-approve"]);
        tf.write("main.tf", &config(&fake, OSAKA_DOWN));
        fake.state
            .lock()
            .unwrap()
            .faults
            .extend([(500, None), (429, Some(1)), (503, None)]);
        let started = Instant::now();
        tf.ok(&["apply", "-auto-approve"]);
        assert!(started.elapsed().as_secs_f64() >= 1.0, "Retry-After: 1 was honoured");
        assert_eq!(weights(&fake), [0, 100, 0]);
        tf.assert_no_changes();
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_a_diagnostic_on_the_attribute() {
    let (fake, tf) = setup().await;
    let f = fake.clone();
    tokio::task::spawn_blocking(move || {
        let fake = f;
        let flat = |s: String| s.split_whitespace().collect::<Vec<_>>().join(" ");
        for (weights, words) in [
            (&[("web-bs", "1001")][..], "Invalid weight"),
            (&[("web-bs", "1.5")][..], "whole number from 0 to 1000"),
            (&[("web-bs", "-1")][..], "Invalid weight"),
            (&[("Web BS", "10")][..], "Invalid backend service"),
            (
                &[("web-bs", "10"), ("projects/p/global/backendServices/web-bs", "5")][..],
                "Duplicate backend service",
            ),
        ] {
            tf.write("main.tf", &config(&fake, weights));
            let out = flat(tf.fails(&["validate"]));
            assert!(out.contains(words), "{words}: {out}");
            // The diagnostic points into the weights map: at the key's line, or at the attribute.
            let at_key = weights.iter().any(|(k, v)| out.contains(&format!("\"{k}\" = {v}")));
            assert!(at_key || out.contains("weights = {"), "{out}");
        }
        tf.write(
            "main.tf",
            &config(&fake, NORMAL).replace("url_map = \"web-urlmap\"", "url_map = \"Web_UrlMap\""),
        );
        let out = flat(tf.fails(&["validate"]));
        assert!(
            out.contains("Invalid URL map name") && out.contains("url_map = \"Web_UrlMap\""),
            "{out}"
        );

        // Every weighted service listed, all at 0: the configuration alone proves it, a plan error
        // naming them. Listing some at 0 while the others are 0 live: a plan warning, then the
        // apply is refused before anything is written, naming the unlisted ones.
        tf.write(
            "main.tf",
            &config(&fake, &[("web-bs", "0"), ("web-bs-tokyo", "0"), ("web-bs-osaka", "0")]),
        );
        let out = flat(tf.fails(&["plan"]));
        assert!(
            out.contains("Every weight would be zero")
                && out.contains("would have weight 0 (web-bs, web-bs-tokyo, web-bs-osaka)"),
            "{out}"
        );
        tf.write("main.tf", &config(&fake, &[("web-bs", "0"), ("web-bs-tokyo", "0")]));
        let (code, plan) = tf.plan_exit_code();
        assert_eq!(code, 2);
        let plan = flat(plan);
        assert!(
            plan.contains("The apply will fail unless the URL map changes first")
                && plan.contains("Not listed, and 0 now: web-bs-osaka"),
            "{plan}"
        );
        fake.take_requests();
        let out = flat(tf.fails(&["apply", "-auto-approve"]));
        assert!(out.contains("Not listed, and 0 now: web-bs-osaka"), "{out}");
        assert!(!fake.take_requests().iter().any(|r| r.starts_with("PATCH")));
        assert_eq!(weights(&fake), [100, 0, 0]);

        // Keys that are not weighted backend services of the URL map: apply-time, with the real list.
        tf.write("main.tf", &config(&fake, &[("web-bs", "50"), ("web-bs-nagoya", "50")]));
        let out = flat(tf.fails(&["apply", "-auto-approve"]));
        assert!(
            out.contains("\"web-bs-nagoya\" is not in the weightedBackendServices of the default route"),
            "{out}"
        );
        assert!(out.contains("web-bs, web-bs-tokyo, web-bs-osaka"), "{out}");
        assert_eq!(weights(&fake), [100, 0, 0]);

        // A misspelled service (two edits from a real one): an error at plan already, on the
        // key, naming the service meant; nothing written. (Before: a plan warning, the error
        // only at apply.)
        tf.write("main.tf", &config(&fake, &[("web-bs", "50"), ("web-bs-osak", "50")]));
        fake.take_requests();
        let out = flat(tf.fails(&["plan"]));
        assert!(
            out.contains("Error: Not a weighted backend service of this URL map")
                && out.contains("\"web-bs-osak\" is not in the weightedBackendServices of the default route")
                && out.contains("Did you mean \"web-bs-osaka\"?"),
            "{out}"
        );
        assert!(!fake.take_requests().iter().any(|r| r.starts_with("PATCH")));

        // A misspelled URL map: a plan warning on url_map, and the apply's error names it once.
        tf.write(
            "main.tf",
            &config(&fake, NORMAL).replace(&format!("\"{MAP}\""), "\"web-urlmpa\""),
        );
        let (_, plan) = tf.plan_exit_code();
        let plan = flat(plan);
        assert!(
            plan.contains("Warning: URL map not found")
                && plan.contains("URL map winticket-prod/web-urlmpa was not found. The apply fails"),
            "{plan}"
        );
        let out = flat(tf.fails(&["apply", "-auto-approve"]));
        assert!(
            out.contains("Error: Not found in Google Cloud")
                && out.contains("URL map winticket-prod/web-urlmpa was not found")
                && !out.contains("web-urlmpa: URL map"),
            "{out}"
        );

        // No credentials: a plan-time error that says what to set.
        tf.write(
            "main.tf",
            &config(&fake, NORMAL).replace(&format!("    access_token = \"{TOKEN}\"\n"), ""),
        );
        let out = flat(tf.fails(&["plan"]));
        assert!(out.contains("GOOGLE_OAUTH_ACCESS_TOKEN"), "{out}");

        // No project anywhere.
        tf.write(
            "main.tf",
            &config(&fake, NORMAL).replace(&format!("    project      = \"{PROJECT}\"\n"), ""),
        );
        let out = flat(tf.fails(&["plan"]));
        assert!(out.contains("No project"), "{out}");

        // A wrong token is the API's 401, reported with Google's message.
        tf.write("main.tf", &config(&fake, NORMAL).replace(TOKEN, "wrong-token"));
        let out = flat(tf.fails(&["apply", "-auto-approve"]));
        assert!(
            out.contains("HTTP 401") && out.contains("invalid authentication credentials"),
            "{out}"
        );
        assert!(!out.contains("wrong-token"), "the token is never echoed");

        // A URL map deleted out of band: removed from state with a warning, then planned again.
        tf.write("main.tf", &config(&fake, NORMAL));
        tf.ok(&["apply", "-auto-approve"]);
        fake.delete_url_map(PROJECT, MAP);
        let (code, plan) = tf.plan_exit_code();
        assert_eq!(code, 2);
        assert!(
            plan.contains("will be created") && plan.contains("URL map not found"),
            "{plan}"
        );
    })
    .await
    .unwrap();
}

/// The generator's output with `weights_managed_by = "locality_weighted_backend"` and this
/// resource work together: the URL map is created with its initial weights, the weights resource
/// takes over, and a failover is a change of `active` that touches only the weights.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generated_configuration_fails_over_without_touching_the_url_map() {
    let fake = FakeCompute::start().await;
    let reattach = common::google::start_with(Some(fake.clone())).await;
    let f = fake.clone();
    tokio::task::spawn_blocking(move || {
        let fake = f;
        let mut tf = Terraform::dev_overrides();
        tf.env("TF_REATTACH_PROVIDERS", &reattach);
        let spec = std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/generator/managed-weights/spec.hcl")).unwrap();
        let spec = spec.replace("active             = [\"osaka\"]", "active             = [\"tokyo\", \"osaka\"]");
        let generate = |spec: &str| {
            locality::generator::generate(&locality::generator::SourceFile { name: "lb.hcl", text: spec }, locality::generator::Format::Hcl).text.unwrap()
        };
        tf.write("lb.tf", &generate(&spec));
        tf.write(
            "versions.tf",
            &format!("{PREAMBLE}\nprovider \"locality\" {{\n  google {{\n    access_token = \"{TOKEN}\"\n    base_url     = \"{}\"\n  }}\n}}\n", fake.base_url()),
        );
        tf.ok(&["apply", "-auto-approve"]);
        assert_eq!(weights(&fake), [100, 0, 0]);
        tf.assert_no_changes();

        // Tokyo outage: regenerate with active = ["osaka"]; only the weights resource changes.
        tf.write("lb.tf", &generate(&spec.replace("[\"tokyo\", \"osaka\"]", "[\"osaka\"]")));
        let (code, plan) = tf.plan_exit_code();
        assert_eq!(code, 2);
        assert!(plan.contains("Plan: 0 to add, 1 to change, 0 to destroy."), "{plan}");
        assert!(plan.contains("locality_weighted_backend.web will be updated in-place"), "{plan}");
        tf.ok(&["apply", "-auto-approve"]);
        assert_eq!(weights(&fake), [0, 0, 100]);
        tf.assert_no_changes();
    })
    .await
    .unwrap();
}

/// The incident move of a regional outage: drain one of two regions by listing only it, at 0; the
/// unlisted region keeps its weight and carries all traffic.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn draining_one_region_lists_only_that_region() {
    let fake = FakeCompute::start().await;
    fake.put_url_map(PROJECT, MAP, &[("web-bs-tokyo", 100), ("web-bs-osaka", 100)]);
    let f = fake.clone();
    tokio::task::spawn_blocking(move || {
        let fake = f;
        let tf = Terraform::dev_overrides();
        tf.write("main.tf", &config(&fake, &[("web-bs-tokyo", "100")]));
        tf.ok(&["apply", "-auto-approve"]);
        tf.write("main.tf", &config(&fake, &[("web-bs-tokyo", "0")]));
        let (code, plan) = tf.plan_exit_code();
        assert_eq!(code, 2, "{plan}");
        assert!(
            plan.contains("100 -> 0") && !plan.contains("outside this configuration") && !plan.contains("will fail"),
            "{plan}"
        );
        eprintln!("drain plan:\n{plan}");
        tf.ok(&["apply", "-auto-approve"]);
        assert_eq!(weights(&fake), [0, 100]);
        tf.assert_no_changes();
    })
    .await
    .unwrap();
}

/// A regional URL map as real ones look (host rules, path matchers, route rules): one resource
/// manages a path matcher's default route, another one route rule; each change leaves every
/// other byte of the URL map as it was; import by ID and identity carry region and route.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn regional_path_matcher_and_route_rule_weights() {
    const REGION: &str = "asia-northeast1";
    const API: &str = "/pathMatchers/0/defaultRouteAction/weightedBackendServices";
    const V2: &str = "/pathMatchers/0/routeRules/0/routeAction/weightedBackendServices";
    let fake = FakeCompute::start().await;
    fake.put_path_matcher_map(PROJECT, Some(REGION), MAP);
    // A global URL map of the same name, which nothing here may touch.
    fake.put_path_matcher_map(PROJECT, None, MAP);
    let f = fake.clone();
    tokio::task::spawn_blocking(move || {
        let fake = f;
        let tf = Terraform::dev_overrides();
        let provider = format!(
            "{PREAMBLE}\nprovider \"locality\" {{\n  google {{\n    access_token = \"{TOKEN}\"\n    project      = \"{PROJECT}\"\n    base_url     = \"{}\"\n  }}\n}}\n",
            fake.base_url()
        );
        let write = |api: (u32, u32), v2: (u32, u32)| {
            tf.write(
                "main.tf",
                &format!(
                    "{provider}\nresource \"locality_weighted_backend\" \"api\" {{\n  region       = \"{REGION}\"\n  url_map      = \"{MAP}\"\n  path_matcher = \"api\"\n  weights = {{\n    \"api-bs-tokyo\" = {}\n    \"api-bs-osaka\" = {}\n  }}\n}}\n\n\
                     resource \"locality_weighted_backend\" \"v2\" {{\n  region              = \"{REGION}\"\n  url_map             = \"{MAP}\"\n  path_matcher        = \"api\"\n  route_rule_priority = 10\n  weights = {{\n    \"api-v2-tokyo\" = {}\n    \"api-v2-osaka\" = {}\n  }}\n}}\n\n\
                     output \"ids\" {{\n  value = join(\" \", [locality_weighted_backend.api.id, locality_weighted_backend.v2.id])\n}}\n",
                    api.0, api.1, v2.0, v2.1
                ),
            )
        };
        let global_before = fake.url_map_at(PROJECT, None, MAP);
        write((100, 0), (100, 0));
        tf.ok(&["apply", "-auto-approve"]);
        assert!(
            !fake.take_requests().iter().any(|r| r.starts_with("PATCH")),
            "live weights as configured: nothing written"
        );
        let ids = tf.output("ids");
        assert!(
            ids == format!("{PROJECT}/{REGION}/{MAP}#api {PROJECT}/{REGION}/{MAP}#api/10"),
            "{ids}"
        );
        tf.assert_no_changes();

        // Drain Tokyo on the route rule only: one regional PATCH; the document after is the one
        // before with those two weights changed (and a new fingerprint), byte for byte.
        let before = fake.url_map_at(PROJECT, Some(REGION), MAP);
        write((100, 0), (0, 100));
        fake.take_requests();
        tf.ok(&["apply", "-auto-approve"]);
        let requests = fake.take_requests();
        let patches: Vec<&String> = requests.iter().filter(|r| r.starts_with("PATCH")).collect();
        assert_eq!(patches, [&format!("PATCH regions/{REGION}/urlMaps/{MAP}")], "{requests:?}");
        let after = fake.url_map_at(PROJECT, Some(REGION), MAP);
        let mut expected = before.clone();
        expected.pointer_mut(V2).unwrap()[0]["weight"] = 0.into();
        expected.pointer_mut(V2).unwrap()[1]["weight"] = 100.into();
        expected["fingerprint"] = after["fingerprint"].clone();
        assert_eq!(after, expected);
        assert_eq!(fake.weights_at(PROJECT, Some(REGION), MAP, API), [("api-bs-tokyo".to_string(), 100), ("api-bs-osaka".to_string(), 0)]);
        assert_eq!(fake.url_map_at(PROJECT, None, MAP), global_before, "the global URL map is untouched");
        tf.assert_no_changes();

        // Drift on the path matcher's default route is seen by that resource only.
        fake.edit(PROJECT, Some(REGION), MAP, |map| {
            map.pointer_mut(API).unwrap()[1]["weight"] = 7.into();
        });
        let (code, plan) = tf.plan_exit_code();
        assert_eq!(code, 2);
        assert!(plan.contains("locality_weighted_backend.api will be updated") && plan.contains("7 -> 0"), "{plan}");
        assert!(!plan.contains("locality_weighted_backend.v2 will be"), "{plan}");
        tf.ok(&["apply", "-auto-approve"]);
        tf.assert_no_changes();

        // Import by ID: the route rule of the regional URL map.
        tf.ok(&["state", "rm", "locality_weighted_backend.v2"]);
        tf.ok(&["import", "locality_weighted_backend.v2", &format!("{PROJECT}/{REGION}/{MAP}#api/10")]);
        tf.assert_no_changes();

        // A path matcher or route rule that does not exist: the error names the real ones.
        tf.write(
            "main.tf",
            &format!(
                "{provider}\nresource \"locality_weighted_backend\" \"bad\" {{\n  region              = \"{REGION}\"\n  url_map             = \"{MAP}\"\n  path_matcher        = \"api\"\n  route_rule_priority = 15\n  weights = {{ \"api-v2-tokyo\" = 1 }}\n}}\n"
            ),
        );
        let out = tf.fails(&["apply", "-auto-approve"]).split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(out.contains("no route rule with priority 15") && out.contains("priorities are: 10, 20"), "{out}");
        // Two resources on one route with different weights: a plan-time error, nothing written.
        fake.take_requests();
        tf.write(
            "main.tf",
            &format!(
                "{provider}\nresource \"locality_weighted_backend\" \"a\" {{\n  region       = \"{REGION}\"\n  url_map      = \"{MAP}\"\n  path_matcher = \"api\"\n  weights      = {{ \"api-bs-tokyo\" = 100 }}\n}}\n\nresource \"locality_weighted_backend\" \"b\" {{\n  region       = \"{REGION}\"\n  url_map      = \"{MAP}\"\n  path_matcher = \"api\"\n  weights      = {{ \"api-bs-tokyo\" = 0, \"api-bs-osaka\" = 100 }}\n}}\n"
            ),
        );
        let out = tf.fails(&["plan"]).split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(out.contains("Route managed twice") && out.contains("the default route of path matcher \"api\""), "{out}");
        assert!(!fake.take_requests().iter().any(|r| r.starts_with("PATCH")));
        // route_rule_priority without path_matcher: an offline error on the attribute.
        tf.write(
            "main.tf",
            &format!(
                "{provider}\nresource \"locality_weighted_backend\" \"bad\" {{\n  url_map             = \"{MAP}\"\n  route_rule_priority = 10\n  weights = {{ \"api-v2-tokyo\" = 1 }}\n}}\n"
            ),
        );
        let out = tf.fails(&["validate"]).split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(out.contains("needs `path_matcher`") && out.contains("route_rule_priority = 10"), "{out}");
    })
    .await
    .unwrap();
}

/// The four routes of `FakeCompute::put_four_route_map`: (resource name, route attributes,
/// JSON pointer of its weighted backend services).
const FOUR_ROUTES: [(&str, &str, &str); 4] = [
    ("web", "", "/defaultRouteAction/weightedBackendServices"),
    (
        "api",
        "path_matcher = \"api\"\n",
        "/pathMatchers/0/defaultRouteAction/weightedBackendServices",
    ),
    (
        "v2",
        "path_matcher = \"api\"\n  route_rule_priority = 10\n",
        "/pathMatchers/0/routeRules/0/routeAction/weightedBackendServices",
    ),
    (
        "v3",
        "path_matcher = \"api\"\n  route_rule_priority = 20\n",
        "/pathMatchers/0/routeRules/1/routeAction/weightedBackendServices",
    ),
];

/// One `locality_weighted_backend` per route of the four-route URL map, all at these weights.
fn four_resources(fake: &FakeCompute, tokyo: u32, osaka: u32) -> String {
    let mut out = format!(
        "{PREAMBLE}\nprovider \"locality\" {{\n  google {{\n    access_token = \"{TOKEN}\"\n    project      = \"{PROJECT}\"\n    base_url     = \"{}\"\n  }}\n}}\n",
        fake.base_url()
    );
    for (name, route, _) in FOUR_ROUTES {
        out.push_str(&format!(
            "\nresource \"locality_weighted_backend\" \"{name}\" {{\n  url_map = \"{MAP}\"\n  {route}  weights = {{\n    \"{name}-tokyo\" = {tokyo}\n    \"{name}-osaka\" = {osaka}\n  }}\n}}\n"
        ));
    }
    out
}

/// Four resources on four routes of one URL map, at Terraform's default parallelism (10),
/// against a Compute that applies a PATCH when its operation ends and fails the operation with
/// "Invalid fingerprint." when another change landed first (as Compute does): three applies
/// in a row, each changing every route at once, all succeed, every route ends as configured,
/// the next plan is empty, and no operation fails on a stale fingerprint (the provider writes
/// one URL map one change at a time).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_routes_of_one_url_map_apply_together_at_default_parallelism() {
    let fake = FakeCompute::start().await;
    fake.put_four_route_map(PROJECT, MAP, 50, 50);
    {
        let mut s = fake.state.lock().unwrap();
        s.apply_at_operation_end = true;
        s.polls_per_operation = 2;
    }
    let f = fake.clone();
    tokio::task::spawn_blocking(move || {
        let fake = f;
        let tf = Terraform::dev_overrides();
        for (tokyo, osaka) in [(100, 0), (0, 100), (30, 70)] {
            tf.write("main.tf", &four_resources(&fake, tokyo, osaka));
            fake.take_requests();
            let out = tf.ok(&["apply", "-auto-approve"]);
            assert!(out.contains("Apply complete!"), "{out}");
            for (name, _, pointer) in FOUR_ROUTES {
                assert_eq!(
                    fake.weights_at(PROJECT, None, MAP, pointer),
                    [
                        (format!("{name}-tokyo"), u64::from(tokyo)),
                        (format!("{name}-osaka"), u64::from(osaka))
                    ],
                    "route {name} after the apply to ({tokyo}, {osaka})"
                );
            }
            let patches = fake.take_requests().iter().filter(|r| r.starts_with("PATCH")).count();
            assert_eq!(patches, 4, "one write per route");
            assert_eq!(
                fake.state.lock().unwrap().stale_operations,
                0,
                "writes to one URL map never overlap"
            );
            tf.assert_no_changes();
        }
    })
    .await
    .unwrap();
}

/// Cloudflare and Google errors as users see them: what was being done (the request), against
/// which endpoint, and the cause — one sentence, with no token in it.
#[test]
fn api_errors_say_what_where_and_why() {
    let closed = common::server_port();
    let tf = Terraform::dev_overrides();
    tf.write(
        "main.tf",
        &format!(
            "{PREAMBLE}\nprovider \"locality\" {{\n  cloudflare {{\n    api_token = \"cf-secret-token\"\n    base_url  = \"http://127.0.0.1:{closed}/client/v4\"\n  }}\n  google {{\n    access_token = \"{TOKEN}\"\n    base_url     = \"http://127.0.0.1:{closed}/compute/v1/\"\n    project      = \"{PROJECT}\"\n  }}\n}}\n\n\
             resource \"locality_region_hint\" \"a\" {{\n  zone_id   = \"023e105f4ecef8ad9ca31a8372d0c353\"\n  origin_ip = \"192.0.2.1\"\n  vendor    = \"aws\"\n  region    = \"us-east-1\"\n}}\n\n\
             resource \"locality_weighted_backend\" \"w\" {{\n  url_map = \"{MAP}\"\n  weights = {{ \"web-bs\" = 100 }}\n}}\n"
        ),
    );
    let out = tf
        .fails(&["apply", "-auto-approve"])
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        out.contains(&format!(
            "GET http://127.0.0.1:{closed}/client/v4/zones/023e105f4ecef8ad9ca31a8372d0c353/origin/cloud_regions: could not connect: Connection refused"
        )),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "URL map {PROJECT}/{MAP}: GET http://127.0.0.1:{closed}/compute/v1/projects/{PROJECT}/global/urlMaps/{MAP}: could not connect: Connection refused"
        )),
        "{out}"
    );
    assert!(!out.contains("cf-secret-token") && !out.contains(TOKEN), "{out}");
}

/// Issue 29: `timeouts { update }` bounds the whole write, its operation polling included: an
/// error naming the setting, the prior state kept, and the next plan converges by reading the
/// live weights. A bad duration fails `validate` on the attribute. The provider's
/// `max_retries` and `request_timeout` bound each request (attribute over environment).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeouts_and_the_provider_request_settings() {
    let (fake, tf) = setup().await;
    let f = fake.clone();
    tokio::task::spawn_blocking(move || {
        let (fake, mut tf) = (f, tf);
        let with = |weights: &[(&str, &str)], provider_settings: &str, timeouts: &str| {
            config(&fake, weights)
                .replacen(
                    "provider \"locality\" {\n",
                    &format!("provider \"locality\" {{\n{provider_settings}"),
                    1,
                )
                .replacen("  weights = {", &format!("{timeouts}  weights = {{"), 1)
        };
        tf.write(
            "main.tf",
            &with(NORMAL, "", "  timeouts {\n    update = \"ten minutes\"\n  }\n"),
        );
        let out = tf.fails(&["validate"]);
        assert!(
            out.contains("Invalid timeout") && out.contains("update = \"ten minutes\"") && out.contains("\"30s\""),
            "{out}"
        );

        tf.write("main.tf", &with(NORMAL, "", ""));
        tf.ok(&["apply", "-auto-approve"]);
        // An operation that never ends: the update gives up after `timeouts.update`.
        fake.state.lock().unwrap().polls_per_operation = u32::MAX;
        let three_seconds = "  timeouts {\n    update = \"3s\"\n  }\n";
        tf.write("main.tf", &with(OSAKA_DOWN, "", three_seconds));
        let started = Instant::now();
        let out = tf.fails(&["apply", "-auto-approve"]);
        let elapsed = started.elapsed();
        assert!(
            out.contains("update timed out") && out.contains("timeouts.update") && out.contains("3s"),
            "{out}"
        );
        assert!(elapsed.as_secs() < 20, "the 3s timeout bounded the apply: {elapsed:?}");
        // The PATCH was accepted before time ran out: the next plan reads the live weights and
        // has nothing to write (only the new `timeouts` block to record, as in the official
        // providers, which Terraform shows as an in-place update without an API call).
        fake.state.lock().unwrap().polls_per_operation = 2;
        assert_eq!(weights(&fake), [0, 100, 0]);
        let (code, plan) = tf.plan_exit_code();
        assert_eq!(code, 2, "{plan}");
        assert!(plan.contains("+ update = \"3s\"") && !plan.contains(" -> "), "{plan}");
        fake.take_requests();
        tf.ok(&["apply", "-auto-approve"]);
        let requests = fake.take_requests();
        assert!(!requests.iter().any(|r| r.starts_with("PATCH")), "{requests:?}");
        tf.assert_no_changes();

        // `max_retries = 0`: one 503 fails the refresh after a single request...
        tf.write("main.tf", &with(OSAKA_DOWN, "  max_retries = 0\n", three_seconds));
        fake.take_requests();
        fake.state.lock().unwrap().faults.push_back((503, None));
        let out = tf.fails(&["plan"]);
        assert!(out.contains("503"), "{out}");
        let requests = fake.take_requests();
        assert_eq!(requests.len(), 1, "no retry: {requests:?}");
        // ... and the attribute wins over the environment variable.
        tf.env("LOCALITY_HTTP_RETRIES", "3");
        fake.state.lock().unwrap().faults.push_back((503, None));
        tf.fails(&["plan"]);
        assert_eq!(
            fake.take_requests().len(),
            1,
            "max_retries = 0 wins over LOCALITY_HTTP_RETRIES=3"
        );
        tf.env_remove("LOCALITY_HTTP_RETRIES");
        // Retries allowed: the same fault is retried, and the plan is empty.
        tf.write("main.tf", &with(OSAKA_DOWN, "  max_retries = 1\n", three_seconds));
        fake.state.lock().unwrap().faults.push_back((503, None));
        tf.assert_no_changes();

        // A bad value names the attribute and what is allowed.
        tf.write(
            "main.tf",
            &with(
                OSAKA_DOWN,
                "  request_timeout = \"0s\"\n  max_retries = 99\n",
                three_seconds,
            ),
        );
        let out = tf.fails(&["validate"]);
        assert!(
            out.contains("Invalid request timeout") && out.contains("Invalid retry count") && out.contains("0 to 25"),
            "{out}"
        );
    })
    .await
    .unwrap();
}
