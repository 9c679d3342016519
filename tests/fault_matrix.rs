//! The fault matrix (issue 11): for `locality_region_hint`, `locality_region_hints` and
//! `locality_weighted_backend`,
//! each operation (create, update, delete, refresh) under each fault (429 with Retry-After,
//! 5xx on every attempt, the connection dropped before the server acts on every attempt, every
//! response lost after the server acted), driven by the real terraform CLI against the fakes.
//! Each cell: the operation either succeeds or fails with an error in bounded time, at most
//! one more apply converges, and afterwards the plan is empty and the remote state is exactly
//! the configuration (no duplicate, no orphan, no lost object). The table is printed.
//!
//! `locality_zone_replica_map` is driven with its SSM target through a fault-injecting proxy in
//! front of moto (AWS faults come 3 at a time, the SDK's attempts).
//!
//! Faults target the operation's own requests: writes for create/update/delete, the first
//! request of the refresh for refresh. (The silent server is covered for AWS in
//! tests/clients.rs; for Cloudflare and Google it is bounded by the 60 s request timeout times
//! 5 attempts, too long for the default suite.)

mod common;

use std::time::{Duration, Instant};

use common::fake_cloudflare::{self as cf, FakeCloudflare};
use common::fake_compute::{self as gc, FakeCompute};
use common::{Terraform, PREAMBLE};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Op {
    Create,
    Update,
    Delete,
    Refresh,
}

const OPS: [Op; 4] = [Op::Create, Op::Update, Op::Delete, Op::Refresh];
const FAULTS: [&str; 5] = [
    "429 + Retry-After",
    "5xx x5",
    "drop before x5",
    "lost after x5",
    "silent x5",
];

/// The per-request timeout the provider gets in these tests (`LOCALITY_HTTP_TIMEOUT`), so that
/// a silent server costs seconds, not 5 x 60 s.
const HTTP_TIMEOUT_SECS: &str = "2";

/// One cell: how many more applies converged (0 or 1), whether the operation itself failed,
/// and how long it took.
struct Cell {
    extra_applies: u32,
    failed: bool,
    took: Duration,
}

/// What every table must show besides convergence: a single 429 is retried (honouring
/// Retry-After) and succeeds; a write whose responses were all lost is read back and adopted.
fn check_expectations(resource: &str, cells: &[(Op, &str, Cell)]) {
    for (op, fault, cell) in cells {
        let must_succeed = *fault == "429 + Retry-After" || (*fault == "lost after x5" && *op != Op::Refresh);
        assert!(
            !(must_succeed && cell.failed),
            "{resource}: {op:?} under {fault} should succeed"
        );
        assert!(cell.extra_applies <= 1);
    }
}

fn print_table(resource: &str, cells: &[(Op, &str, Cell)]) {
    let mut out = format!("\nfault matrix for {resource} (extra applies to converge; time of the faulted run)\n");
    out.push_str(&format!("{:<9}", "op"));
    for f in FAULTS {
        out.push_str(&format!(" | {f:<22}"));
    }
    out.push('\n');
    for op in OPS {
        out.push_str(&format!("{:<9}", format!("{op:?}").to_lowercase()));
        for f in FAULTS {
            let text = match cells.iter().find(|(o, name, _)| *o == op && *name == f) {
                Some((_, _, cell)) => format!(
                    "{} +{} ({:.1} s)",
                    if cell.failed { "error" } else { "ok" },
                    cell.extra_applies,
                    cell.took.as_secs_f64()
                ),
                None => "n/a".to_string(),
            };
            out.push_str(&format!(" | {text:<22}"));
        }
        out.push('\n');
    }
    eprintln!("{out}");
}

/// Runs the faulted operation, then converges with at most one more apply.
fn exercise(tf: &Terraform, op: Op, inject: &dyn Fn(), converged: &dyn Fn() -> bool) -> Cell {
    inject();
    let started = Instant::now();
    let run = match op {
        Op::Refresh => tf.run(&["plan", "-detailed-exitcode"]),
        _ => tf.run(&["apply", "-auto-approve"]),
    };
    let took = started.elapsed();
    let failed = run.code == 1;
    assert!(took < Duration::from_secs(90), "bounded time: {took:?}\n{}", run.all());
    let mut extra = 0;
    let (code, _) = tf.plan_exit_code();
    if code != 0 {
        extra = 1;
        tf.ok(&["apply", "-auto-approve"]);
    }
    tf.assert_no_changes();
    assert!(
        converged(),
        "remote state matches the configuration after {extra} extra applies"
    );
    Cell {
        extra_applies: extra,
        failed,
        took,
    }
}

fn hint_config(fake: &FakeCloudflare, region: Option<&str>) -> String {
    let mut out = format!(
        "{PREAMBLE}\nprovider \"locality\" {{\n  cloudflare {{\n    api_token = \"{}\"\n    base_url  = \"{}\"\n  }}\n}}\n",
        cf::TOKEN,
        fake.base_url()
    );
    if let Some(region) = region {
        out.push_str(&format!(
            "\nresource \"locality_region_hint\" \"x\" {{\n  zone_id   = \"{}\"\n  origin_ip = \"192.0.2.80\"\n  vendor    = \"aws\"\n  region    = \"{region}\"\n}}\n",
            cf::ZONE
        ));
    }
    out
}

fn cf_faults(name: &str) -> Vec<cf::Fault> {
    match name {
        "429 + Retry-After" => vec![cf::Fault::Status(429, Some(1))],
        "5xx x5" => vec![cf::Fault::Status(503, None); 5],
        "drop before x5" => vec![cf::Fault::DropBeforeApplying; 5],
        "silent x5" => vec![cf::Fault::Slow(Duration::from_secs(3600)); 5],
        _ => vec![cf::Fault::DropAfterApplying; 5],
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn region_hint_fault_matrix() {
    let mut cells = Vec::new();
    for op in OPS {
        for fault in FAULTS {
            let fake = FakeCloudflare::start().await;
            let cell = tokio::task::spawn_blocking(move || {
                let mut tf = Terraform::dev_overrides();
                tf.env("LOCALITY_HTTP_TIMEOUT", HTTP_TIMEOUT_SECS);
                if op != Op::Create {
                    tf.write("main.tf", &hint_config(&fake, Some("us-east-1")));
                    tf.ok(&["apply", "-auto-approve"]);
                }
                let want: Option<&str> = match op {
                    Op::Create | Op::Refresh => Some("us-east-1"),
                    Op::Update => Some("us-west-2"),
                    Op::Delete => None,
                };
                tf.write("main.tf", &hint_config(&fake, want));
                let f = fake.clone();
                let inject = move || {
                    let mut s = f.state.lock().unwrap();
                    if op == Op::Refresh {
                        s.faults.extend(cf_faults(fault));
                    } else {
                        s.write_faults.extend(cf_faults(fault));
                    }
                };
                let converged = || {
                    let m = fake.mappings();
                    match want {
                        Some(region) => m.len() == 1 && m["192.0.2.80"] == ("aws".to_string(), region.to_string()),
                        None => m.is_empty(),
                    }
                };
                exercise(&tf, op, &inject, &converged)
            })
            .await
            .unwrap();
            cells.push((op, fault, cell));
        }
    }
    print_table("locality_region_hint", &cells);
    check_expectations("locality_region_hint", &cells);
}

fn hints_config(fake: &FakeCloudflare, hints: Option<&[(&str, &str)]>) -> String {
    let mut out = hint_config(fake, None);
    if let Some(hints) = hints {
        let body: String = hints
            .iter()
            .map(|(ip, hint)| format!("    \"{ip}\" = \"{hint}\"\n"))
            .collect();
        out.push_str(&format!(
            "\nresource \"locality_region_hints\" \"zone\" {{\n  zone_id = \"{}\"\n  hints = {{\n{body}  }}\n}}\n",
            cf::ZONE
        ));
    }
    out
}

/// `locality_region_hints`: create writes three hints; update changes one, adds one and
/// removes one (a batch PUT and a batch DELETE); delete removes them all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn region_hints_fault_matrix() {
    const BEFORE: [(&str, &str); 3] = [
        ("192.0.2.80", "aws:us-east-1"),
        ("192.0.2.81", "aws:us-east-1"),
        ("2001:db8::80", "gcp:us-central1"),
    ];
    const AFTER: [(&str, &str); 3] = [
        ("192.0.2.80", "aws:us-west-2"),
        ("192.0.2.81", "aws:us-east-1"),
        ("192.0.2.82", "azure:japaneast"),
    ];
    let mut cells = Vec::new();
    for op in OPS {
        for fault in FAULTS {
            let fake = FakeCloudflare::start().await;
            let cell = tokio::task::spawn_blocking(move || {
                let mut tf = Terraform::dev_overrides();
                tf.env("LOCALITY_HTTP_TIMEOUT", HTTP_TIMEOUT_SECS);
                if op != Op::Create {
                    tf.write("main.tf", &hints_config(&fake, Some(&BEFORE)));
                    tf.ok(&["apply", "-auto-approve"]);
                }
                let want: Option<&[(&str, &str)]> = match op {
                    Op::Create | Op::Refresh => Some(&BEFORE),
                    Op::Update => Some(&AFTER),
                    Op::Delete => None,
                };
                tf.write("main.tf", &hints_config(&fake, want));
                let f = fake.clone();
                let inject = move || {
                    let mut s = f.state.lock().unwrap();
                    if op == Op::Refresh {
                        s.faults.extend(cf_faults(fault));
                    } else {
                        s.write_faults.extend(cf_faults(fault));
                    }
                };
                let converged = || {
                    let live = fake.mappings();
                    let live: Vec<(String, String)> =
                        live.into_iter().map(|(ip, (v, r))| (ip, format!("{v}:{r}"))).collect();
                    let mut expected: Vec<(String, String)> = want
                        .unwrap_or_default()
                        .iter()
                        .map(|(ip, h)| (ip.to_string(), h.to_string()))
                        .collect();
                    expected.sort();
                    live == expected
                };
                exercise(&tf, op, &inject, &converged)
            })
            .await
            .unwrap();
            cells.push((op, fault, cell));
        }
    }
    print_table("locality_region_hints", &cells);
    check_expectations("locality_region_hints", &cells);
}

const PROJECT: &str = "winticket-prod";
const MAP: &str = "web-urlmap";

fn weights_config(fake: &FakeCompute, weights: Option<[u32; 3]>) -> String {
    let mut out = format!(
        "{PREAMBLE}\nprovider \"locality\" {{\n  google {{\n    access_token = \"{}\"\n    project      = \"{PROJECT}\"\n    base_url     = \"{}\"\n  }}\n}}\n",
        gc::TOKEN,
        fake.base_url()
    );
    if let Some([a, b, c]) = weights {
        out.push_str(&format!(
            "\nresource \"locality_weighted_backend\" \"web\" {{\n  url_map = \"{MAP}\"\n  weights = {{\n    \"web-bs\"       = {a}\n    \"web-bs-tokyo\" = {b}\n    \"web-bs-osaka\" = {c}\n  }}\n}}\n"
        ));
    }
    out
}

fn gc_faults(name: &str) -> Vec<gc::Fault> {
    match name {
        "429 + Retry-After" => vec![gc::Fault::Status(429, Some(1))],
        "5xx x5" => vec![gc::Fault::Status(503, None); 5],
        "drop before x5" => vec![gc::Fault::DropBefore; 5],
        "silent x5" => vec![gc::Fault::Silent; 5],
        _ => vec![gc::Fault::LostAfter; 5],
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn weighted_backend_fault_matrix() {
    let mut cells = Vec::new();
    for op in OPS {
        for fault in FAULTS {
            let fake = FakeCompute::start().await;
            fake.put_url_map(
                PROJECT,
                MAP,
                &[("web-bs", 100), ("web-bs-tokyo", 0), ("web-bs-osaka", 0)],
            );
            let cell = tokio::task::spawn_blocking(move || {
                let mut tf = Terraform::dev_overrides();
                tf.env("LOCALITY_HTTP_TIMEOUT", HTTP_TIMEOUT_SECS);
                if op != Op::Create {
                    tf.write("main.tf", &weights_config(&fake, Some([100, 0, 0])));
                    tf.ok(&["apply", "-auto-approve"]);
                }
                // Create takes over different weights (a write); delete leaves them as they are.
                let (config, live): (Option<[u32; 3]>, [u32; 3]) = match op {
                    Op::Create | Op::Update => (Some([0, 100, 0]), [0, 100, 0]),
                    Op::Refresh => (Some([100, 0, 0]), [100, 0, 0]),
                    Op::Delete => (None, [100, 0, 0]),
                };
                tf.write("main.tf", &weights_config(&fake, config));
                let f = fake.clone();
                let inject = move || {
                    let mut s = f.state.lock().unwrap();
                    match (op, gc_faults(fault).as_slice()) {
                        // A refresh makes no PATCH: its GET gets the status faults; drops and lost
                        // responses of reads are the same to the client as of writes.
                        (Op::Refresh, faults) => {
                            for fault in faults {
                                match fault {
                                    gc::Fault::Status(code, retry) => s.faults.push_back((*code, *retry)),
                                    gc::Fault::Silent => s.silent_reads += 1,
                                    _ => s.faults.push_back((502, None)),
                                }
                            }
                        }
                        (_, faults) => s.write_faults.extend(faults.iter().copied()),
                    }
                };
                let converged = || {
                    let w: Vec<u64> = fake.weights(PROJECT, MAP).into_iter().map(|(_, w)| w).collect();
                    w == live.map(u64::from)
                };
                exercise(&tf, op, &inject, &converged)
            })
            .await
            .unwrap();
            cells.push((op, fault, cell));
        }
    }
    print_table("locality_weighted_backend", &cells);
    check_expectations("locality_weighted_backend", &cells);
}

fn map_config(proxy: &str, param: &str, replica: Option<&str>) -> String {
    let mut out = format!(
        "{PREAMBLE}\nprovider \"locality\" {{\n  aws {{\n    region       = \"ap-northeast-1\"\n    endpoint_url = \"{proxy}\"\n  }}\n}}\n"
    );
    if let Some(replica) = replica {
        out.push_str(&format!(
            "\nresource \"locality_zone_replica_map\" \"cache\" {{\n  fallback_endpoint = \"reader.example:6379\"\n\n  member {{\n    endpoint = \"{replica}\"\n    zone     = \"ap-northeast-1a\"\n  }}\n\n  ssm_parameter {{\n    name = \"{param}\"\n  }}\n}}\n"
        ));
    }
    out
}

fn aws_faults(name: &str) -> Vec<common::fault_proxy::Fault> {
    use common::fault_proxy::Fault;
    // The AWS SDK makes 3 attempts.
    match name {
        "429 + Retry-After" => vec![Fault::Status(429)],
        "5xx x5" => vec![Fault::Status(503); 3],
        "drop before x5" => vec![Fault::DropBefore; 3],
        _ => vec![Fault::LostAfter; 3],
    }
}

/// The SSM target of `locality_zone_replica_map` through a fault proxy in front of moto.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zone_replica_map_ssm_fault_matrix() {
    let moto = common::moto::Moto::start();
    let proxy = common::fault_proxy::FaultProxy::start(&moto.endpoint).await;
    let ssm = aws_sdk_ssm::Client::new(&moto.config().await);
    let runtime = tokio::runtime::Handle::current();
    let mut cells = Vec::new();
    for op in OPS {
        for (i, fault) in FAULTS.into_iter().enumerate() {
            if fault == "silent x5" {
                continue; // the SDK's timeouts: tests/clients.rs (a 90 s call is too long here)
            }
            let param = format!("/matrix/{op:?}/{i}").to_lowercase();
            let (proxy, ssm, runtime) = (proxy.clone(), ssm.clone(), runtime.clone());
            let cell = tokio::task::spawn_blocking(move || {
                let mut tf = Terraform::dev_overrides();
                for (k, v) in common::moto::ENV {
                    tf.env(k, v);
                }
                if op != Op::Create {
                    tf.write(
                        "main.tf",
                        &map_config(&proxy.endpoint(), &param, Some("node-1.example:6379")),
                    );
                    tf.ok(&["apply", "-auto-approve"]);
                }
                let replica = match op {
                    Op::Create | Op::Refresh => Some("node-1.example:6379"),
                    Op::Update => Some("node-2.example:6379"),
                    Op::Delete => None,
                };
                tf.write("main.tf", &map_config(&proxy.endpoint(), &param, replica));
                let p = proxy.clone();
                let inject = move || {
                    let mut s = p.state.lock().unwrap();
                    if op == Op::Refresh {
                        s.faults.extend(aws_faults(fault));
                    } else {
                        s.write_faults.extend(aws_faults(fault));
                    }
                };
                let converged = || {
                    let value = runtime.block_on(async {
                        ssm.get_parameter()
                            .name(&param)
                            .send()
                            .await
                            .ok()
                            .and_then(|o| o.parameter().and_then(|p| p.value().map(String::from)))
                    });
                    match replica {
                        Some(r) => value.is_some_and(|v| v.contains(r)),
                        None => value.is_none(),
                    }
                };
                let cell = exercise(&tf, op, &inject, &converged);
                let mut s = proxy.state.lock().unwrap();
                s.faults.clear();
                s.write_faults.clear();
                cell
            })
            .await
            .unwrap();
            cells.push((op, fault, cell));
        }
    }
    print_table(
        "locality_zone_replica_map (ssm_parameter; AWS faults x3, the SDK's attempts)",
        &cells,
    );
    check_expectations("locality_zone_replica_map", &cells);
}

fn lb_config(proxy: &str, listener: &str, weights: Option<(u32, u32)>) -> String {
    let mut out = format!(
        "{PREAMBLE}\nprovider \"locality\" {{\n  aws {{\n    region       = \"ap-northeast-1\"\n    endpoint_url = \"{proxy}\"\n  }}\n}}\n"
    );
    if let Some((blue, green)) = weights {
        out.push_str(&format!(
            "\nresource \"locality_lb_forward_weights\" \"web\" {{\n  listener_arn = \"{listener}\"\n  weights = {{\n    \"web-blue\"  = {blue}\n    \"web-green\" = {green}\n  }}\n  timeouts {{\n    create = \"15s\"\n    update = \"15s\"\n  }}\n}}\n"
        ));
    }
    out
}

/// `locality_lb_forward_weights` through a fault proxy in front of moto's ELBv2 (behind the
/// layer that answers as AWS does). Writes are ModifyListener; the silent server is bounded by
/// the resource's `timeouts` (15 s here) for create and update; refresh under a silent server is
/// the SDK's timeouts (tests/clients.rs). Delete calls no API (nothing to fault).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lb_forward_weights_fault_matrix() {
    use common::fault_proxy::Fault;
    let aws = common::elbv2::Elbv2::start();
    let fixture = aws.fixture().await;
    let proxy = common::fault_proxy::FaultProxy::start(&aws.endpoint).await;
    let elb = aws.client().await;
    let runtime = tokio::runtime::Handle::current();
    let mut cells = Vec::new();
    let mut step = 0u32;
    for op in [Op::Create, Op::Update, Op::Refresh] {
        for fault in FAULTS {
            if fault == "silent x5" && op == Op::Refresh {
                continue;
            }
            step += 1;
            // Weights that differ from the last cell's, so each write is a real change.
            let (blue, green) = (step % 7, 50 + step);
            let (proxy, elb, runtime, listener) =
                (proxy.clone(), elb.clone(), runtime.clone(), fixture.listener.clone());
            let secret = aws.oidc_secrets();
            let cell = tokio::task::spawn_blocking(move || {
                let mut tf = Terraform::dev_overrides();
                for (k, v) in common::moto::ENV {
                    tf.env(k, v);
                }
                if op != Op::Create {
                    tf.write(
                        "main.tf",
                        &lb_config(&proxy.endpoint(), &listener, Some((blue + 1, green + 1))),
                    );
                    tf.ok(&["apply", "-auto-approve"]);
                }
                tf.write("main.tf", &lb_config(&proxy.endpoint(), &listener, Some((blue, green))));
                if op == Op::Refresh {
                    tf.ok(&["apply", "-auto-approve"]);
                }
                let p = proxy.clone();
                let inject = move || {
                    let faults = match fault {
                        "429 + Retry-After" => vec![Fault::Status(429)],
                        "5xx x5" => vec![Fault::Status(503); 3],
                        "drop before x5" => vec![Fault::DropBefore; 3],
                        "lost after x5" => vec![Fault::LostAfter; 3],
                        // One: its attempt outlives the resource's timeouts.
                        _ => vec![Fault::Silent],
                    };
                    let mut s = p.state.lock().unwrap();
                    if op == Op::Refresh {
                        s.faults.extend(faults);
                    } else {
                        s.write_faults.extend(faults);
                    }
                };
                let converged = || {
                    let live = runtime.block_on(common::elbv2::weights(&elb, &listener));
                    live[..2]
                        == [
                            ("web-blue".to_string(), blue as i32),
                            ("web-green".to_string(), green as i32),
                        ]
                };
                let cell = exercise(&tf, op, &inject, &converged);
                let mut s = proxy.state.lock().unwrap();
                s.faults.clear();
                s.write_faults.clear();
                cell
            })
            .await
            .unwrap();
            // The OIDC login's secret survives every cell.
            assert_eq!(aws.oidc_secrets(), secret);
            cells.push((op, fault, cell));
        }
    }
    print_table(
        "locality_lb_forward_weights (ModifyListener; AWS faults x3, the SDK's attempts; silent: timeouts 15 s)",
        &cells,
    );
    check_expectations("locality_lb_forward_weights", &cells);
}
