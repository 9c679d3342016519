//! Google credentials the way pipelines have them, through the real terraform CLI against the
//! fake Compute API, which here accepts only tokens that the fake token services issued (or a
//! self-signed JWT of a service-account key it knows): a service-account key file, gcloud's
//! application-default file (refresh token), the metadata server, workload identity federation
//! (file- and URL-sourced subject tokens through a fake STS), impersonation with delegates
//! through a fake IAM Credentials API, `access_token` winning, the project defaults, every
//! failure as a diagnostic that names what to set, and no credential in trace logs. Tokens that
//! expire between the steps of `locality_shift_weights` are refreshed (Terraform 1.15.5).

mod common;

use std::time::{Duration, Instant};

use common::fake_compute::{FakeCompute, TOKEN};
use common::fake_google_auth::{self as ga, FakeGoogleAuth};
use common::{terraform_1_15, Terraform, PREAMBLE};
use serde_json::json;

const PROJECT: &str = "winticket-prod";
const MAP: &str = "web-urlmap";
const DEPLOYER: &str = "deployer@winticket-prod.iam.gserviceaccount.com";
const CI: &str = "ci@winticket-ops.iam.gserviceaccount.com";

/// A provider block with `google` settings, and one weighted backend.
fn config(compute: &FakeCompute, google: &str, weight: u32) -> String {
    format!(
        "{PREAMBLE}\nprovider \"locality\" {{\n  google {{\n    base_url = \"{}\"\n{google}  }}\n}}\n\n\
         resource \"locality_weighted_backend\" \"web\" {{\n  url_map = \"{MAP}\"\n  weights = {{\n    \"web-bs\" = {weight}\n    \"web-bs-tokyo\" = {}\n  }}\n}}\n",
        compute.base_url(),
        100 - weight
    )
}

fn flat(out: &str) -> String {
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The Compute fake, taking only the tokens of `auth`.
async fn compute_for(auth: &FakeGoogleAuth) -> FakeCompute {
    let compute = FakeCompute::start().await;
    compute.put_url_map(PROJECT, MAP, &[("web-bs", 100), ("web-bs-tokyo", 0)]);
    compute.state.lock().unwrap().auth = Some(auth.clone());
    compute
}

fn callers(compute: &FakeCompute) -> Vec<String> {
    std::mem::take(&mut compute.state.lock().unwrap().callers)
}

fn weights(compute: &FakeCompute) -> Vec<u64> {
    compute.weights(PROJECT, MAP).into_iter().map(|(_, w)| w).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_account_key_by_path_or_content_and_its_project() {
    let auth = FakeGoogleAuth::start().await;
    let compute = compute_for(&auth).await;
    let key = auth.service_account_key(DEPLOYER, PROJECT);
    tokio::task::spawn_blocking(move || {
        let mut tf = Terraform::dev_overrides();
        let path = tf.path("keys/deployer.json");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, key.to_string()).unwrap();
        // No project anywhere but the key's project_id.
        tf.write(
            "main.tf",
            &config(&compute, &format!("    credentials = \"{}\"\n", path.display()), 0),
        );
        tf.ok(&["apply", "-auto-approve"]);
        assert_eq!(weights(&compute), [0, 100]);
        let seen = callers(&compute);
        assert!(
            !seen.is_empty() && seen.iter().all(|c| c == &format!("sa:{DEPLOYER}")),
            "{seen:?}"
        );
        // A self-signed JWT: no token endpoint is involved.
        assert!(auth.take_requests().is_empty());

        // The content itself, from GOOGLE_CREDENTIALS; GOOGLE_CLOUD_PROJECT beats the key's
        // project (seen in the plan of a new resource), and GOOGLE_PROJECT beats both.
        tf.ok(&["state", "rm", "locality_weighted_backend.web"]);
        tf.env("GOOGLE_CREDENTIALS", &key.to_string());
        tf.env("GOOGLE_CLOUD_PROJECT", "another-project");
        tf.write("main.tf", &config(&compute, "", 100));
        let out = flat(&tf.run(&["plan"]).all());
        assert!(
            out.contains("+ project = \"another-project\""),
            "the environment's project wins over the key's: {out}"
        );
        tf.env("GOOGLE_PROJECT", PROJECT);
        let out = flat(&tf.ok(&["apply", "-auto-approve"]));
        assert!(out.contains(&format!("+ project = \"{PROJECT}\"")), "{out}");
        assert_eq!(weights(&compute), [100, 0]);
        assert!(callers(&compute).iter().all(|c| c == &format!("sa:{DEPLOYER}")));

        // TF_LOG=trace: neither the key nor a token appears anywhere in the output.
        tf.env("TF_LOG", "trace");
        let run = tf.run(&["plan"]);
        assert_eq!(run.code, 0, "{}", run.all());
        let all = run.all();
        assert!(
            all.contains("provider.terraform-provider-locality"),
            "the provider logs at trace level"
        );
        let pem = key["private_key"].as_str().unwrap();
        let body_line = pem.lines().nth(5).unwrap();
        assert!(!all.contains(body_line), "a line of the private key is in the log");
        assert!(!all.contains("eyJhbGciOiJSUzI1NiI"), "a signed JWT is in the log");
        tf.env("TF_LOG", "");
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn application_default_credentials_gcloud_file_then_metadata_server() {
    let auth = FakeGoogleAuth::start().await;
    let compute = compute_for(&auth).await;
    tokio::task::spawn_blocking(move || {
        let mut tf = Terraform::dev_overrides();
        tf.env("GOOGLE_PROJECT", PROJECT);
        // gcloud's well-known file (what `gcloud auth application-default login` writes).
        let well_known = tf.path(".config/gcloud/application_default_credentials.json");
        std::fs::create_dir_all(well_known.parent().unwrap()).unwrap();
        std::fs::write(&well_known, auth.authorized_user(ga::REFRESH_TOKEN).to_string()).unwrap();
        tf.write("main.tf", &config(&compute, "", 0));
        tf.ok(&["apply", "-auto-approve"]);
        assert_eq!(weights(&compute), [0, 100]);
        assert!(callers(&compute).iter().all(|c| c == "user"));
        let requests = auth.take_requests();
        assert!(
            requests.contains(&"POST /token refresh_token".to_string()),
            "{requests:?}"
        );
        {
            let state = auth.state.lock().unwrap();
            let form = state.seen_forms.last().unwrap();
            assert_eq!(form.get("scope").map(String::as_str), Some(ga::SCOPE), "{form:?}");
        }

        // A revoked refresh token: the token endpoint's answer, what was tried, no secret.
        std::fs::write(&well_known, auth.authorized_user("1//revoked").to_string()).unwrap();
        tf.write("main.tf", &config(&compute, "", 100));
        let out = flat(&tf.fails(&["apply", "-auto-approve"]));
        assert!(
            out.contains("Google Cloud credentials")
                && out.contains("gcloud's application-default credentials")
                && out.contains("invalid_grant"),
            "{out}"
        );
        assert!(!out.contains(ga::CLIENT_SECRET) && !out.contains("1//revoked"), "{out}");
        assert_eq!(weights(&compute), [0, 100]);

        // GOOGLE_APPLICATION_CREDENTIALS wins over the well-known file; a missing one is an error
        // that names it.
        tf.env(
            "GOOGLE_APPLICATION_CREDENTIALS",
            tf.path("nowhere.json").to_str().unwrap(),
        );
        let out = flat(&tf.fails(&["apply", "-auto-approve"]));
        assert!(
            out.contains("GOOGLE_APPLICATION_CREDENTIALS") && out.contains("nowhere.json"),
            "{out}"
        );
        let adc = tf.path("adc.json");
        std::fs::write(&adc, auth.authorized_user(ga::REFRESH_TOKEN).to_string()).unwrap();
        tf.env("GOOGLE_APPLICATION_CREDENTIALS", adc.to_str().unwrap());
        tf.ok(&["apply", "-auto-approve"]);
        assert_eq!(weights(&compute), [100, 0]);
        assert!(callers(&compute).iter().all(|c| c == "user"));

        // Nothing but the metadata server (GKE workload identity, Cloud Run, GCE).
        std::fs::remove_file(&well_known).unwrap();
        tf.env_remove("GOOGLE_APPLICATION_CREDENTIALS");
        tf.env("GCE_METADATA_HOST", &auth.host());
        tf.write("main.tf", &config(&compute, "", 0));
        auth.take_requests();
        tf.ok(&["apply", "-auto-approve"]);
        assert_eq!(weights(&compute), [0, 100]);
        assert!(callers(&compute).iter().all(|c| c == "metadata"));
        let requests = auth.take_requests();
        assert!(
            requests
                .iter()
                .all(|r| r.starts_with("GET /computeMetadata/v1/instance/service-accounts/default/token")),
            "{requests:?}"
        );

        // No metadata server either (the closed port the harness sets): the error lists every way in.
        tf.env("GCE_METADATA_HOST", "127.0.0.1:1");
        tf.write("main.tf", &config(&compute, "", 100));
        let out = flat(&tf.fails(&["plan"]));
        assert!(
            out.contains("the metadata server (127.0.0.1:1)")
                && out.contains("GOOGLE_APPLICATION_CREDENTIALS")
                && out.contains("GOOGLE_OAUTH_ACCESS_TOKEN")
                && out.contains("`credentials`"),
            "{out}"
        );

        // A metadata server that never answers: an error after the request timeout, not a hang.
        auth.state.lock().unwrap().silent_metadata = true;
        tf.env("GCE_METADATA_HOST", &auth.host());
        tf.env("LOCALITY_HTTP_TIMEOUT", "2");
        let started = Instant::now();
        let out = flat(&tf.fails(&["plan"]));
        assert!(out.contains("no answer within 2 s"), "{out}");
        assert!(started.elapsed() < Duration::from_secs(30), "{:?}", started.elapsed());
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workload_identity_federation_with_file_and_url_sourced_tokens() {
    let auth = FakeGoogleAuth::start().await;
    let compute = compute_for(&auth).await;
    auth.allow_impersonation(DEPLOYER, "federated");
    tokio::task::spawn_blocking(move || {
        let mut tf = Terraform::dev_overrides();
        tf.env("GOOGLE_CLOUD_PROJECT", PROJECT);
        // File-sourced (GitLab CI writes the OIDC token to a file), direct resource access.
        let subject = tf.path("oidc-token");
        std::fs::write(&subject, ga::SUBJECT_TOKEN).unwrap();
        let wif = tf.path("wif.json");
        std::fs::write(
            &wif,
            auth.external_account(json!({"file": subject.to_str().unwrap()}), None)
                .to_string(),
        )
        .unwrap();
        tf.write(
            "main.tf",
            &config(&compute, &format!("    credentials = \"{}\"\n", wif.display()), 0),
        );
        tf.ok(&["apply", "-auto-approve"]);
        assert_eq!(weights(&compute), [0, 100]);
        assert!(callers(&compute).iter().all(|c| c == "federated"));
        assert!(auth.take_requests().contains(&"POST /v1/token".to_string()));

        // URL-sourced (GitHub Actions' OIDC endpoint), impersonating the deployer as
        // google-github-actions/auth configures it.
        let source = json!({
            "url": auth.url("/subject-token"),
            "headers": {"Authorization": "Bearer gh-request-token"},
            "format": {"type": "json", "subject_token_field_name": "value"},
        });
        std::fs::write(&wif, auth.external_account(source, Some(DEPLOYER)).to_string()).unwrap();
        tf.write(
            "main.tf",
            &config(&compute, &format!("    credentials = \"{}\"\n", wif.display()), 100),
        );
        tf.ok(&["apply", "-auto-approve"]);
        assert_eq!(weights(&compute), [100, 0]);
        let seen = callers(&compute);
        assert!(
            !seen.is_empty() && seen.iter().all(|c| c == &format!("impersonated:{DEPLOYER}")),
            "{seen:?}"
        );
        let requests = auth.take_requests();
        for expected in [
            "GET /subject-token",
            "POST /v1/token",
            &format!("POST /v1/projects/-/serviceAccounts/{DEPLOYER}:generateAccessToken"),
        ] {
            assert!(requests.iter().any(|r| r == expected), "{expected} in {requests:?}");
        }

        // A subject token the pool does not accept: STS's answer.
        std::fs::write(&subject, "eyJsomething-else").unwrap();
        std::fs::write(
            &wif,
            auth.external_account(json!({"file": subject.to_str().unwrap()}), None)
                .to_string(),
        )
        .unwrap();
        tf.write(
            "main.tf",
            &config(&compute, &format!("    credentials = \"{}\"\n", wif.display()), 0),
        );
        let out = flat(&tf.fails(&["apply", "-auto-approve"]));
        assert!(
            out.contains("invalid_grant") && out.contains("`credentials` (file"),
            "{out}"
        );
        assert!(!out.contains("eyJsomething-else"), "{out}");
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn impersonation_with_delegates_and_a_refusal() {
    let auth = FakeGoogleAuth::start().await;
    let compute = compute_for(&auth).await;
    // The runner's metadata identity may impersonate the CI account, which may impersonate the deployer.
    auth.allow_impersonation(CI, "metadata");
    auth.allow_impersonation(DEPLOYER, &format!("sa:{CI}"));
    tokio::task::spawn_blocking(move || {
        let mut tf = Terraform::dev_overrides();
        tf.env("GCE_METADATA_HOST", &auth.host());
        let iam = format!("    project = \"{PROJECT}\"\n    iam_credentials_base_url = \"{}\"\n", auth.url("/v1"));
        tf.write(
            "main.tf",
            &config(&compute, &format!("{iam}    impersonate_service_account = \"{CI}\"\n"), 0),
        );
        tf.ok(&["apply", "-auto-approve"]);
        assert!(callers(&compute).iter().all(|c| c == &format!("impersonated:{CI}")));

        // With a delegate: metadata → CI → deployer.
        tf.write(
            "main.tf",
            &config(
                &compute,
                &format!("{iam}    impersonate_service_account = \"{DEPLOYER}\"\n    impersonate_service_account_delegates = [\"{CI}\"]\n"),
                100,
            ),
        );
        tf.ok(&["apply", "-auto-approve"]);
        assert_eq!(weights(&compute), [100, 0]);
        assert!(callers(&compute).iter().all(|c| c == &format!("impersonated:{DEPLOYER}")));

        // Straight to the deployer is not allowed: IAM's refusal and the role to grant.
        tf.env("GOOGLE_IMPERSONATE_SERVICE_ACCOUNT", DEPLOYER);
        tf.write("main.tf", &config(&compute, &iam, 0));
        let out = flat(&tf.fails(&["plan"]));
        assert!(
            out.contains(&format!("Impersonating {DEPLOYER} was refused: HTTP 403"))
                && out.contains("roles/iam.serviceAccountTokenCreator"),
            "{out}"
        );
        assert_eq!(weights(&compute), [100, 0]);

        // Offline checks: not an email; delegates without a target.
        tf.env_remove("GOOGLE_IMPERSONATE_SERVICE_ACCOUNT");
        tf.write(
            "main.tf",
            &config(&compute, "    impersonate_service_account_delegates = [\"ci\"]\n", 0),
        );
        let out = flat(&tf.fails(&["validate"]));
        assert!(out.contains("\"ci\" is not a service account email"), "{out}");
        assert!(out.contains("needs `impersonate_service_account`"), "{out}");
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn access_token_wins_and_bad_credentials_are_diagnostics_on_the_attribute() {
    let auth = FakeGoogleAuth::start().await;
    // The Compute fake takes the static token only.
    let compute = FakeCompute::start().await;
    compute.put_url_map(PROJECT, MAP, &[("web-bs", 100), ("web-bs-tokyo", 0)]);
    tokio::task::spawn_blocking(move || {
        let mut tf = Terraform::dev_overrides();
        let adc = tf.path("adc.json");
        std::fs::write(&adc, auth.authorized_user(ga::REFRESH_TOKEN).to_string()).unwrap();
        tf.env("GOOGLE_APPLICATION_CREDENTIALS", adc.to_str().unwrap());
        tf.env("GOOGLE_OAUTH_ACCESS_TOKEN", TOKEN);
        tf.write("main.tf", &config(&compute, &format!("    project = \"{PROJECT}\"\n"), 0));
        tf.ok(&["apply", "-auto-approve"]);
        assert_eq!(weights(&compute), [0, 100]);
        assert!(auth.take_requests().is_empty(), "the access token wins over ADC");
        assert!(compute.state.lock().unwrap().callers.iter().all(|c| c == "static"));

        // Each bad `credentials` is an error on the attribute, never echoing the content.
        let bad = |content: &str| -> String {
            let path = tf.path("bad.json");
            std::fs::write(&path, content).unwrap();
            tf.write(
                "main.tf",
                &config(&compute, &format!("    project = \"{PROJECT}\"\n    credentials = \"{}\"\n", path.display()), 0),
            );
            flat(&tf.fails(&["plan"]))
        };
        let out = bad("not json SECRET-MARKER");
        assert!(out.contains("Invalid Google credentials") && out.contains("is not JSON") && out.contains("credentials"), "{out}");
        assert!(!out.contains("SECRET-MARKER"), "{out}");
        let out = bad(r#"{"type":"gdch_service_account","private_key":"SECRET-MARKER"}"#);
        assert!(out.contains("\"gdch_service_account\", which is not supported") && out.contains("\"external_account\""), "{out}");
        let out = bad(r#"{"type":"authorized_user","client_id":"x","client_secret":"SECRET-MARKER"}"#);
        assert!(out.contains("authorized_user credential without refresh_token"), "{out}");
        assert!(!out.contains("SECRET-MARKER"), "{out}");
        let out = bad(r#"{"type":"service_account","client_email":"a@b.c","private_key":"-----BEGIN RSA PRIVATE KEY----- SECRET-MARKER"}"#);
        assert!(out.contains("PKCS#8"), "{out}");
        assert!(!out.contains("SECRET-MARKER"), "{out}");
        tf.write(
            "main.tf",
            &config(&compute, &format!("    project = \"{PROJECT}\"\n    credentials = \"~/missing-key.json\"\n"), 0),
        );
        let out = flat(&tf.fails(&["plan"]));
        assert!(out.contains("missing-key.json) does not exist"), "{out}");
        assert!(
            out.contains("in provider \"locality\"") && out.contains("credentials = \"~/missing-key.json\""),
            "the diagnostic points at the attribute: {out}"
        );
    })
    .await
    .unwrap();
}

/// The action's steps outlive the tokens: the metadata server issues 12-second tokens, and
/// the impersonated ones live as long; the Compute fake refuses expired ones, so every step
/// that succeeds after the first token expired used a refreshed one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_that_expire_between_action_steps_are_refreshed() {
    let auth = FakeGoogleAuth::start().await;
    let compute = compute_for(&auth).await;
    auth.set_lifetime(Duration::from_secs(12));
    auth.allow_impersonation(DEPLOYER, "metadata");
    tokio::task::spawn_blocking(move || {
        let mut tf = Terraform::dev_overrides().with_binary(&terraform_1_15());
        tf.env("GCE_METADATA_HOST", &auth.host());
        tf.write(
            "main.tf",
            &format!(
                "{PREAMBLE}\nprovider \"locality\" {{\n  google {{\n    base_url = \"{}\"\n    project = \"{PROJECT}\"\n    \
                 impersonate_service_account = \"{DEPLOYER}\"\n    iam_credentials_base_url = \"{}\"\n  }}\n}}\n\n\
                 action \"locality_shift_weights\" \"drain\" {{\n  config {{\n    url_map = \"{MAP}\"\n    \
                 weights = {{ \"web-bs\" = 0, \"web-bs-tokyo\" = 100 }}\n    steps = 3\n    interval = \"14s\"\n  }}\n}}\n",
                compute.base_url(),
                auth.url("/v1")
            ),
        );
        let out = tf.ok(&["apply", "-auto-approve", "-invoke=action.locality_shift_weights.drain"]);
        assert!(out.contains("step 3/3 done"), "{out}");
        assert_eq!(weights(&compute), [0, 100]);
        assert!(callers(&compute).iter().all(|c| c == &format!("impersonated:{DEPLOYER}")));
        let requests = auth.take_requests();
        let impersonations = requests.iter().filter(|r| r.contains(":generateAccessToken")).count();
        let metadata = requests.iter().filter(|r| r.contains("/computeMetadata/")).count();
        assert!(impersonations >= 3, "a new impersonated token for each step: {requests:?}");
        assert!(metadata >= 2, "the metadata token was refreshed: {requests:?}");
    })
    .await
    .unwrap();
}

/// Issue 27: a `credentials` value that is neither a readable path nor JSON is never repeated
/// (an access token or a mangled key put in GOOGLE_CREDENTIALS must not reach plan output);
/// base64-encoded JSON and a leading byte-order mark are accepted, as the Google provider
/// does; a base URL with user-info is shown without it. (Before the fix, the value was
/// printed whole in the "file … does not exist" message, and the URL with its password.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_values_are_never_repeated_and_base64_or_bom_json_works() {
    use base64::Engine as _;
    let auth = FakeGoogleAuth::start().await;
    let compute = compute_for(&auth).await;
    let key = auth.service_account_key(DEPLOYER, PROJECT);
    tokio::task::spawn_blocking(move || {
        let mut tf = Terraform::dev_overrides();
        tf.write(
            "main.tf",
            &config(&compute, &format!("    project = \"{PROJECT}\"\n"), 0),
        );
        // A token, a truncated base64 key, and a key with its first byte lost: errors that
        // never show the value.
        let secret_b64 = base64::engine::general_purpose::STANDARD.encode(format!("{key}SECRET-MARKER"));
        for value in [
            "ya29.a0SECRET-MARKER-token-value".to_string(),
            secret_b64[..secret_b64.len() - 3].to_string(),
            "\"type\": \"service_account\", \"private_key\": \"SECRET-MARKER\"}".to_string(),
        ] {
            tf.env("GOOGLE_CREDENTIALS", &value);
            // With trace logs: nowhere in stdout, stderr, the logs or the state.
            tf.env("TF_LOG", "trace");
            let run = tf.run(&["plan"]);
            tf.env("TF_LOG", "");
            assert_ne!(run.code, 0);
            assert!(!run.all().contains("SECRET-MARKER"), "in the trace output");
            assert!(!tf.read("terraform.tfstate").unwrap_or_default().contains("SECRET-MARKER"));
            let out = flat(&run.all());
            assert!(
                out.contains("is neither the path of a readable file nor credentials JSON")
                    && out.contains("is not shown"),
                "{out}"
            );
            assert!(
                !out.contains("SECRET-MARKER") && !out.contains(&value[..20.min(value.len())]),
                "{out}"
            );
        }
        // Base64-encoded JSON and JSON with a byte-order mark (content and file) work.
        let b64 = base64::engine::general_purpose::STANDARD.encode(key.to_string());
        tf.env("GOOGLE_CREDENTIALS", &b64);
        tf.ok(&["apply", "-auto-approve"]);
        assert_eq!(weights(&compute), [0, 100]);
        tf.env("GOOGLE_CREDENTIALS", &format!("\u{feff}{key}"));
        tf.assert_no_changes();
        let path = tf.path("bom-key.json");
        std::fs::write(&path, format!("\u{feff}{key}")).unwrap();
        tf.env("GOOGLE_CREDENTIALS", path.to_str().unwrap());
        tf.assert_no_changes();
        assert!(callers(&compute).iter().all(|c| c == &format!("sa:{DEPLOYER}")));

        // Token endpoints named by a credentials file get the https-or-loopback rule too: a
        // refresh token and client secret never go out over plain http.
        for (field, content) in [
            ("token_uri", serde_json::json!({"type": "authorized_user", "client_id": "c", "client_secret": "SECRET-MARKER", "refresh_token": "1//SECRET-MARKER", "token_uri": "http://oauth.example/token"})),
            ("token_url", auth.external_account(serde_json::json!({"file": "/dev/null"}), None)),
            // Nested: an impersonated account whose source is an authorized external user.
            ("source_credentials.token_url", serde_json::json!({
                "type": "impersonated_service_account",
                "service_account_impersonation_url": auth.url(&format!("/v1/projects/-/serviceAccounts/{DEPLOYER}:generateAccessToken")),
                "source_credentials": {"type": "external_account_authorized_user", "audience": "//iam.googleapis.com/locations/global/workforcePools/p/providers/x",
                    "client_id": "c", "client_secret": "SECRET-MARKER", "refresh_token": "SECRET-MARKER", "token_url": "http://sts.example/v1/oauthtoken"}
            })),
        ] {
            let mut content = content;
            if field == "token_url" {
                content["token_url"] = "http://sts.example/v1/token".into();
            }
            let path = tf.path("http-endpoint.json");
            std::fs::write(&path, content.to_string()).unwrap();
            tf.env("GOOGLE_CREDENTIALS", path.to_str().unwrap());
            let out = flat(&tf.fails(&["plan"]));
            assert!(out.contains(&format!("has {field}: ")) && out.contains("must use https"), "{out}");
            assert!(!out.contains("SECRET-MARKER"), "{out}");
        }
        assert!(auth.take_requests().is_empty(), "no token request was sent");

        // A base URL with user-info: refused, shown without it.
        tf.env_remove("GOOGLE_CREDENTIALS");
        tf.write(
            "main.tf",
            &config(&compute, "    access_token = \"t\"\n", 0)
                .replace("http://127.0.0.1", "http://admin:SECRET-MARKER@127.0.0.1"),
        );
        let out = flat(&tf.fails(&["validate"]));
        assert!(out.contains("carries credentials before the host (not shown)"), "{out}");
        // Terraform itself echoes the configuration line once; the provider's message does not.
        assert_eq!(out.matches("SECRET-MARKER").count(), 1, "{out}");
        assert!(out.contains("/compute/v1\" carries credentials"), "{out}");
    })
    .await
    .unwrap();
}
