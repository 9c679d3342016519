//! The clients' domain operations, without Terraform: `Compute::set_weights` (typed entries,
//! only the weights change, fingerprint, HTTP 412 re-read and retry, operation wait, refusals)
//! and `Zones::create` (no silent takeover, one claim per IP) against the fakes.

mod common;

use std::collections::BTreeMap;

use common::fake_cloudflare::{FakeCloudflare, Fault, TOKEN as CF_TOKEN, ZONE};
use common::fake_compute::{FakeCompute, TOKEN as GOOGLE_TOKEN};
use locality::http::RetryPolicy;
use locality::provider::cloudflare::{Cloudflare, CreateError, Mapping, Zones};
use locality::provider::config::Secret;
use locality::provider::google::{Compute, Polling, Route, UrlMapLocation, WeightsError};

const PROJECT: &str = "winticket-prod";
const MAP: &str = "web-urlmap";

async fn compute() -> (FakeCompute, Compute) {
    let fake = FakeCompute::start().await;
    fake.put_url_map(
        PROJECT,
        MAP,
        &[("web-bs", 100), ("web-bs-tokyo", 0), ("web-bs-osaka", 0)],
    );
    let polling = Polling {
        first: std::time::Duration::from_millis(5),
        ..Default::default()
    };
    let client = Compute::new(
        locality::http::client(std::time::Duration::from_secs(10)),
        &fake.base_url(),
        std::sync::Arc::new(locality::provider::google::GoogleAuth::access_token(Secret::new(
            GOOGLE_TOKEN,
        ))),
        quick_retries(),
        polling,
    );
    (fake, client)
}

/// Five attempts, as in production, with short waits.
fn quick_retries() -> RetryPolicy {
    RetryPolicy {
        base_delay: std::time::Duration::from_millis(5),
        ..RetryPolicy::default()
    }
}

fn at(name: &str) -> UrlMapLocation {
    UrlMapLocation::global(PROJECT, name)
}

fn desired(pairs: &[(&str, u32)]) -> BTreeMap<String, u32> {
    pairs.iter().map(|(k, w)| (k.to_string(), *w)).collect()
}

#[tokio::test]
async fn set_weights_changes_only_the_weights_and_is_idempotent() {
    let (fake, compute) = compute().await;
    let before = fake.url_map(PROJECT, MAP);
    // Keys may be names, paths or self-links.
    let want = desired(&[
        ("web-bs", 0),
        ("projects/winticket-prod/global/backendServices/web-bs-tokyo", 100),
    ]);
    assert!(compute.set_weights(&at(MAP), &Route::Default, &want).await.unwrap());
    let weights: Vec<u64> = fake.weights(PROJECT, MAP).into_iter().map(|(_, w)| w).collect();
    assert_eq!(weights, [0, 100, 0]);
    let after = fake.url_map(PROJECT, MAP);
    assert_eq!(
        after["hostRules"], before["hostRules"],
        "the rest of the URL map is untouched"
    );
    let requests = fake.take_requests();
    assert_eq!(
        requests.iter().filter(|r| r.starts_with("PATCH")).count(),
        1,
        "{requests:?}"
    );
    assert!(
        requests.iter().any(|r| r.contains("operations")),
        "the operation is waited for"
    );
    // Same weights again: nothing is written.
    assert!(!compute.set_weights(&at(MAP), &Route::Default, &want).await.unwrap());
    assert!(!fake.take_requests().iter().any(|r| r.starts_with("PATCH")));
}

#[tokio::test]
async fn set_weights_rereads_and_retries_on_a_stale_fingerprint() {
    let (fake, compute) = compute().await;
    // Someone edits the URL map right after our first read: the write gets HTTP 412.
    fake.state.lock().unwrap().after_get = Some((
        1,
        Box::new(|map: &mut serde_json::Value| {
            map["description"] = "edited in the console".into();
        }),
    ));
    assert!(compute
        .set_weights(
            &at(MAP),
            &Route::Default,
            &desired(&[("web-bs", 0), ("web-bs-osaka", 100)])
        )
        .await
        .unwrap());
    let weights: Vec<u64> = fake.weights(PROJECT, MAP).into_iter().map(|(_, w)| w).collect();
    assert_eq!(weights, [0, 0, 100]);
    assert_eq!(fake.url_map(PROJECT, MAP)["description"], "edited in the console");
    let gets = fake
        .take_requests()
        .iter()
        .filter(|r| r.starts_with("GET urlMaps"))
        .count();
    assert_eq!(gets, 2, "read, 412, read again");
}

#[tokio::test]
async fn set_weights_refuses_unknown_backends_and_all_zero() {
    let (fake, compute) = compute().await;
    match compute
        .set_weights(
            &at(MAP),
            &Route::Default,
            &desired(&[("web-bs", 50), ("web-bs-nagoya", 50)]),
        )
        .await
    {
        Err(WeightsError::UnknownBackends { unknown, real, .. }) => {
            assert_eq!(unknown, ["web-bs-nagoya"]);
            assert_eq!(real, ["web-bs", "web-bs-tokyo", "web-bs-osaka"]);
        }
        other => panic!("expected UnknownBackends, got {other:?}"),
    }
    // Draining the one service that carries traffic while the others are at 0: all zero
    // after the change, refused with every service named.
    let err = compute
        .set_weights(&at(MAP), &Route::Default, &desired(&[("web-bs", 0)]))
        .await
        .unwrap_err();
    match &err {
        WeightsError::AllZero { services, unlisted, .. } => {
            assert_eq!(services, &["web-bs", "web-bs-tokyo", "web-bs-osaka"]);
            assert_eq!(unlisted, &["web-bs-tokyo", "web-bs-osaka"]);
        }
        other => panic!("expected AllZero, got {other:?}"),
    }
    let message = err.to_string();
    assert!(message.contains("web-bs, web-bs-tokyo, web-bs-osaka"), "{message}");
    assert!(!fake.take_requests().iter().any(|r| r.starts_with("PATCH")));
    let missing = compute
        .set_weights(&at("nope"), &Route::Default, &desired(&[("web-bs", 1)]))
        .await;
    assert!(matches!(missing, Err(WeightsError::Api { .. })), "{missing:?}");
}

async fn zones() -> (FakeCloudflare, std::sync::Arc<Zones>) {
    let fake = FakeCloudflare::start().await;
    let client = Cloudflare::new(
        locality::http::client(std::time::Duration::from_secs(10)),
        &fake.base_url(),
        Secret::new(CF_TOKEN),
        quick_retries(),
    );
    (fake, std::sync::Arc::new(Zones::new(client)))
}

fn mapping(ip: &str, vendor: &str, region: &str) -> Mapping {
    Mapping {
        origin_ip: ip.into(),
        vendor: vendor.into(),
        region: region.into(),
        modified_on: None,
    }
}

#[tokio::test]
async fn create_refuses_to_take_over_and_to_write_an_ip_twice() {
    let (fake, zones) = zones().await;
    fake.set("192.0.2.1", "aws", "us-east-1");
    match zones.create(ZONE, mapping("192.0.2.1", "gcp", "us-central1")).await {
        Err(CreateError::Exists { existing, .. }) => assert_eq!(existing.vendor, "aws"),
        other => panic!("expected Exists, got {other:?}"),
    }
    assert_eq!(
        fake.mappings()["192.0.2.1"],
        ("aws".to_string(), "us-east-1".to_string())
    );

    let stored = zones
        .create(ZONE, mapping("192.0.2.2", "gcp", "us-central1"))
        .await
        .unwrap();
    assert_eq!(stored.origin_ip, "192.0.2.2");
    assert!(stored.modified_on.is_some(), "a single write returns modified_on");
    assert!(fake.mappings().contains_key("192.0.2.2"));

    let again = zones.create(ZONE, mapping("192.0.2.2", "gcp", "us-central1")).await;
    assert!(matches!(again, Err(CreateError::Claimed { .. })), "{again:?}");
}

/// Issue 11: a listing that never ends (a server repeating a page with a huge `total_pages`)
/// is an error after the pages a full zone needs, not an endless loop.
#[tokio::test]
async fn listing_stops_at_the_pages_a_zone_can_hold() {
    let (fake, zones) = zones().await;
    fake.set("192.0.2.1", "aws", "us-east-1");
    fake.state.lock().unwrap().repeat_first_page = true;
    let err = zones.client().list(ZONE).await.unwrap_err();
    assert!(err.to_string().contains("more than a zone can hold"), "{err}");
    let lists = fake
        .take_requests()
        .iter()
        .filter(|r| r.starts_with("GET list"))
        .count();
    assert!(lists <= 37, "{lists} list requests");
}

/// Issue 11: a batch DELETE answered "not found" as a whole means the mappings are gone:
/// success, not a failed destroy.
#[tokio::test]
async fn delete_answered_not_found_as_a_whole_is_success() {
    let (fake, zones) = zones().await;
    fake.state.lock().unwrap().faults.push_back(Fault::Status(404, None));
    zones.delete(ZONE, "192.0.2.9".into()).await.unwrap();
    fake.state.lock().unwrap().faults.push_back(Fault::Status(403, None));
    assert!(
        zones.delete(ZONE, "192.0.2.9".into()).await.is_err(),
        "other errors still fail"
    );
}

/// Issue 11: a failure to list a zone is not remembered for the rest of the run: the next
/// read lists again.
#[tokio::test]
async fn a_failed_listing_is_tried_again() {
    let (fake, zones) = zones().await;
    fake.set("192.0.2.1", "aws", "us-east-1");
    fake.state.lock().unwrap().faults.push_back(Fault::Status(403, None));
    assert!(zones.listing(ZONE).await.is_err());
    assert_eq!(zones.listing(ZONE).await.unwrap().len(), 1);
    assert_eq!(zones.listing(ZONE).await.unwrap().len(), 1, "success is remembered");
    let lists = fake
        .take_requests()
        .iter()
        .filter(|r| r.starts_with("GET list"))
        .count();
    assert_eq!(lists, 2);
}

/// Issue 11: a PATCH whose every response was lost after Google applied it is read back and
/// adopted, not reported as failed.
#[tokio::test]
async fn set_weights_adopts_a_write_whose_responses_were_lost() {
    let (fake, compute) = compute().await;
    fake.state.lock().unwrap().drop_after_applying = 10;
    let want = desired(&[("web-bs", 0), ("web-bs-tokyo", 100)]);
    assert!(compute.set_weights(&at(MAP), &Route::Default, &want).await.unwrap());
    let weights: Vec<u64> = fake.weights(PROJECT, MAP).into_iter().map(|(_, w)| w).collect();
    assert_eq!(weights, [0, 100, 0]);
    let patches = fake.take_requests().iter().filter(|r| r.starts_with("PATCH")).count();
    assert!(patches >= 2, "retried with the same requestId: {patches}");
}

/// Issue 11: a create whose every response was lost after Cloudflare applied it is read back
/// and adopted (the next apply used to say "already exists, import it").
#[tokio::test]
async fn create_adopts_a_write_whose_responses_were_lost() {
    let (fake, zones) = zones().await;
    zones.listing(ZONE).await.unwrap();
    for _ in 0..5 {
        fake.state.lock().unwrap().faults.push_back(Fault::DropAfterApplying);
    }
    let stored = zones
        .create(ZONE, mapping("192.0.2.7", "aws", "us-east-1"))
        .await
        .unwrap();
    assert_eq!((stored.vendor.as_str(), stored.region.as_str()), ("aws", "us-east-1"));
    assert!(fake.mappings().contains_key("192.0.2.7"));
}

/// Issue 11: an AWS endpoint that accepts connections and never answers fails the call within
/// the timeouts (it used to hang the plan until Ctrl-C).
#[tokio::test]
async fn a_silent_aws_endpoint_times_out() {
    use locality::provider::aws::{Aws, AwsSettings, Timeouts};
    // Static test credentials, as the tests' moto setup uses: the call must reach the network.
    std::env::set_var("AWS_ACCESS_KEY_ID", "testing");
    std::env::set_var("AWS_SECRET_ACCESS_KEY", "testing");
    std::env::set_var("AWS_EC2_METADATA_DISABLED", "true");
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", silent.local_addr().unwrap());
    let timeouts = Timeouts {
        connect: std::time::Duration::from_secs(1),
        read: std::time::Duration::from_secs(1),
        operation: std::time::Duration::from_secs(3),
    };
    let settings = AwsSettings {
        region: Some("ap-northeast-1".into()),
        endpoint_url: Some(endpoint.clone()),
        ..AwsSettings::default()
    };
    let aws = Aws::load_with(&settings, timeouts).await;
    let started = std::time::Instant::now();
    let call = tokio::time::timeout(std::time::Duration::from_secs(20), aws.discover("sessions"));
    let err = call.await.expect("the call ends on its own").unwrap_err();
    let waited = started.elapsed();
    assert!(waited < std::time::Duration::from_secs(6), "{waited:?}: {err}");
    assert!(
        err.to_string().to_ascii_lowercase().contains("timeout") || err.to_string().contains("timed out"),
        "{err}"
    );
    drop(silent);
}

#[tokio::test]
async fn draining_one_region_moves_traffic_to_the_unlisted_other() {
    let (fake, compute) = compute().await;
    fake.put_url_map(PROJECT, "two", &[("web-bs-tokyo", 100), ("web-bs-osaka", 100)]);
    // Only Tokyo listed, at 0: Osaka (unlisted, 100) carries all traffic — allowed.
    assert!(compute
        .set_weights(&at("two"), &Route::Default, &desired(&[("web-bs-tokyo", 0)]))
        .await
        .unwrap());
    let weights: Vec<u64> = fake.weights(PROJECT, "two").into_iter().map(|(_, w)| w).collect();
    assert_eq!(weights, [0, 100]);
}

/// Every route of a URL map with path matchers and route rules, global and regional: a change
/// to one route changes exactly its weights; every other byte of the URL map stays as it was.
#[tokio::test]
async fn a_path_matcher_route_changes_and_every_other_byte_stays() {
    let (fake, compute) = compute().await;
    let region = Some("asia-northeast1");
    for (where_, location) in [
        (None, at("paths")),
        (
            region,
            UrlMapLocation {
                project: PROJECT.into(),
                region: region.map(String::from),
                name: "paths".into(),
            },
        ),
    ] {
        fake.put_path_matcher_map(PROJECT, where_, "paths");
        let cases = [
            (
                Route::PathMatcher("api".into()),
                "/pathMatchers/0/defaultRouteAction/weightedBackendServices",
                desired(&[("api-bs-tokyo", 0), ("api-bs-osaka", 100)]),
            ),
            (
                Route::RouteRule {
                    path_matcher: "api".into(),
                    priority: 10,
                },
                "/pathMatchers/0/routeRules/0/routeAction/weightedBackendServices",
                desired(&[("api-v2-tokyo", 30), ("api-v2-osaka", 70)]),
            ),
        ];
        for (route, pointer, want) in cases {
            let before = fake.url_map_at(PROJECT, where_, "paths");
            assert!(compute.set_weights(&location, &route, &want).await.unwrap(), "{route}");
            let after = fake.url_map_at(PROJECT, where_, "paths");
            // The expected document: the one before, with only these weights and the
            // fingerprint changed.
            let mut expected = before.clone();
            for entry in expected.pointer_mut(pointer).unwrap().as_array_mut().unwrap() {
                let name = entry["backendService"]
                    .as_str()
                    .unwrap()
                    .rsplit('/')
                    .next()
                    .unwrap()
                    .to_string();
                entry["weight"] = want[&name].into();
            }
            expected["fingerprint"] = after["fingerprint"].clone();
            assert_ne!(after["fingerprint"], before["fingerprint"]);
            assert_eq!(after, expected, "{route}: only the weights changed");
            let requests = fake.take_requests();
            let prefix = if where_.is_some() {
                "PATCH regions/asia-northeast1/urlMaps/paths"
            } else {
                "PATCH urlMaps/paths"
            };
            assert_eq!(
                requests.iter().filter(|r| r.starts_with(prefix)).count(),
                1,
                "{requests:?}"
            );
            if where_.is_some() {
                assert!(
                    requests
                        .iter()
                        .any(|r| r.starts_with("GET regions/asia-northeast1/operations/")),
                    "{requests:?}"
                );
            }
        }
        // A route that does not exist is named with the real ones.
        let err = compute
            .set_weights(&location, &Route::PathMatcher("web".into()), &desired(&[("x", 1)]))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("\"api\", \"static\""), "{err}");
        let err = compute
            .set_weights(
                &location,
                &Route::RouteRule {
                    path_matcher: "api".into(),
                    priority: 15,
                },
                &desired(&[("x", 1)]),
            )
            .await
            .unwrap_err();
        assert!(err.to_string().contains("priorities are: 10, 20"), "{err}");
        // Route rule 20 routes to a plain service: no weighted backend services to set.
        let err = compute
            .set_weights(
                &location,
                &Route::RouteRule {
                    path_matcher: "api".into(),
                    priority: 20,
                },
                &desired(&[("legacy-bs", 1)]),
            )
            .await
            .unwrap_err();
        assert!(matches!(err, WeightsError::NoWeightedBackends { .. }), "{err:?}");
    }
    // The regional and global maps of one name are different objects.
    assert_eq!(
        fake.weights_at(
            PROJECT,
            None,
            "paths",
            "/pathMatchers/0/defaultRouteAction/weightedBackendServices"
        ),
        fake.weights_at(
            PROJECT,
            region,
            "paths",
            "/pathMatchers/0/defaultRouteAction/weightedBackendServices"
        ),
    );
}

/// Issue 27: the API clients follow a redirect only to the same origin; one to another host
/// (which would carry a 307's body there) or from https to http is refused, saying where.
#[tokio::test]
async fn redirects_leave_neither_the_origin_nor_https() {
    use axum::response::IntoResponse;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = axum::Router::new()
        .route(
            "/same",
            axum::routing::post(move || async move {
                (axum::http::StatusCode::TEMPORARY_REDIRECT, [("location", "/final")]).into_response()
            }),
        )
        .route(
            "/final",
            axum::routing::post(|body: String| async move { format!("got {body}") }),
        )
        .route(
            "/elsewhere",
            axum::routing::post(move || async move {
                // Another host: 127.0.0.2 is loopback too, but another origin.
                (
                    axum::http::StatusCode::TEMPORARY_REDIRECT,
                    [("location", format!("http://127.0.0.2:{}/final?token=x", addr.port()))],
                )
                    .into_response()
            }),
        );
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let client = locality::http::client(std::time::Duration::from_secs(5));
    let policy = RetryPolicy {
        attempts: 1,
        ..quick_retries()
    };
    let base = format!("http://{addr}");
    let same = locality::http::send(&policy, || client.post(format!("{base}/same")).body("the-body"))
        .await
        .unwrap();
    assert_eq!(same.text().await.unwrap(), "got the-body");
    let err = locality::http::send(&policy, || client.post(format!("{base}/elsewhere")).body("SECRET-BODY"))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(&format!(
            "a redirect to another origin (http://127.0.0.2:{}/final) was refused",
            addr.port()
        )),
        "{err}"
    );
    assert!(!err.contains("token=x") && !err.contains("SECRET-BODY"), "{err}");
}
