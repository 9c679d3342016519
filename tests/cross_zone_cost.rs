//! `locality_cross_zone_cost` through the real terraform against moto's Cost Explorer (its
//! answers injected through moto's API): the page's example `check` block as written warns in
//! the plan when the average is over budget and says nothing under it; the figures (only the
//! matching usage types, summed per day) in outputs; bad windows as diagnostics on the attribute.

mod common;

use std::io::{Read as _, Write as _};
use std::path::Path;

use common::moto::{Moto, ENV};
use common::{Terraform, PREAMBLE};

/// Queues Cost Explorer answers in moto: seven days, each with a matching usage type at
/// `usd_per_day` (and 100 GB per USD) and one that must not count.
fn inject(moto: &Moto, usd_per_day: f64) {
    let days: Vec<serde_json::Value> = (24..31)
        .map(|day| {
            serde_json::json!({
                "TimePeriod": {"Start": format!("2026-11-{day}"), "End": format!("2026-11-{}", day + 1)},
                "Total": {},
                "Groups": [
                    {"Keys": ["APN1-DataTransfer-Regional-Bytes"],
                     "Metrics": {"UnblendedCost": {"Amount": format!("{usd_per_day}"), "Unit": "USD"},
                                 "UsageQuantity": {"Amount": format!("{}", usd_per_day * 100.0), "Unit": "GB"}}},
                    {"Keys": ["APN1-BoxUsage:t3.micro"],
                     "Metrics": {"UnblendedCost": {"Amount": "1000", "Unit": "USD"},
                                 "UsageQuantity": {"Amount": "24", "Unit": "Hrs"}}}
                ],
                "Estimated": false
            })
        })
        .collect();
    let body = serde_json::json!({"results": [{"ResultsByTime": days, "DimensionValueAttributes": []}]}).to_string();
    let mut s = std::net::TcpStream::connect(moto.endpoint.trim_start_matches("http://")).unwrap();
    write!(
        s,
        "POST /moto-api/static/ce/cost-and-usage-results HTTP/1.0\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    let _ = s.read_to_string(&mut response);
    assert!(response.contains(" 201 "), "moto: {response}");
}

fn terraform(moto: &Moto, body: &str) -> Terraform {
    let mut tf = Terraform::dev_overrides();
    for (k, v) in ENV {
        tf.env(k, v);
    }
    tf.write(
        "main.tf",
        &format!(
            "{PREAMBLE}\nprovider \"locality\" {{\n  aws {{\n    region       = \"ap-northeast-1\"\n    endpoint_url = \"{}\"\n  }}\n}}\n\n{body}",
            moto.endpoint
        ),
    );
    tf
}

fn example() -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/data-sources/locality_cross_zone_cost/data-source.tf"),
    )
    .unwrap()
}

#[test]
fn the_check_block_warns_in_the_plan_over_budget_and_not_under() {
    // Over: 40 USD a day against the example's 25.
    let moto = Moto::start();
    inject(&moto, 40.0);
    // The guide's block is the page's example, byte for byte.
    let guide =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/guides/consuming-the-replica-map.md"))
            .unwrap();
    assert!(
        guide.contains(&format!("```terraform\n{}```", example())),
        "the guide's check block is not the example's"
    );
    let tf = terraform(&moto, "");
    tf.write("cost.tf", &example());
    let plan = tf.run(&["plan", "-input=false", "-no-color"]);
    assert_eq!(plan.code, 0, "{}", plan.all());
    let out = plan.all();
    assert!(out.contains("Warning: Check block assertion failed"), "{out}");
    assert!(
        out.contains("Cross-zone data transfer averaged 40 USD a day") && out.contains("above the 25 USD budget"),
        "{out}"
    );
    eprintln!("over budget:\n{out}");
    // The warning as the guide shows it (the window's dates are today's).
    let warning = &out[out.find("Warning: Check block assertion failed").unwrap()..];
    let warning = warning[..warning.find("across zones.").unwrap() + "across zones.".len()].to_string();
    let start = warning
        .find("a day from ")
        .map(|i| &warning[i + 11..i + 21])
        .unwrap()
        .to_string();
    let end = warning
        .find(" to 20")
        .map(|i| &warning[i + 4..i + 14])
        .unwrap()
        .to_string();
    let shown = warning.replace(&start, "2026-11-27").replace(&end, "2026-12-04");
    let after = &guide[guide.find("Over budget, every plan says so").unwrap()..];
    let block = &after[after.find("```text\n").unwrap() + 8..];
    let block = &block[..block.find("```").unwrap()];
    // (Terraform wraps the message to its width: compared word by word.)
    let words = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
    assert_eq!(words(block), words(&shown), "the guide's warning");

    // Under: 10 USD a day.
    let moto = Moto::start();
    inject(&moto, 10.0);
    let tf = terraform(&moto, &example());
    let plan = tf.run(&["plan", "-input=false", "-no-color"]);
    assert_eq!(plan.code, 0, "{}", plan.all());
    assert!(!plan.all().contains("Check block assertion failed"), "{}", plan.all());
    assert!(
        plan.all()
            .contains("data.locality_cross_zone_cost.last_week: Read complete"),
        "{}",
        plan.all()
    );
    assert!(!plan.all().contains("budget"), "{}", plan.all());
}

#[test]
fn only_the_matching_usage_types_count_and_the_window_is_checked() {
    let moto = Moto::start();
    inject(&moto, 12.5);
    let tf = terraform(
        &moto,
        "data \"locality_cross_zone_cost\" \"week\" {\n  start_date = \"2026-11-24\"\n  end_date   = \"2026-12-01\"\n}\n\n\
         output \"total_usd\" {\n  value = data.locality_cross_zone_cost.week.total_usd\n}\n\
         output \"average\" {\n  value = data.locality_cross_zone_cost.week.average_daily_usd\n}\n\
         output \"total_gb\" {\n  value = data.locality_cross_zone_cost.week.total_gb\n}\n\
         output \"days\" {\n  value = length(data.locality_cross_zone_cost.week.daily)\n}\n\
         output \"first\" {\n  value = data.locality_cross_zone_cost.week.daily[0]\n}\n\
         output \"pattern\" {\n  value = data.locality_cross_zone_cost.week.usage_type_pattern\n}\n",
    );
    tf.ok(&["apply", "-auto-approve", "-input=false"]);
    assert_eq!(tf.output("total_usd"), "87.5");
    assert_eq!(tf.output("average"), "12.5");
    assert_eq!(tf.output("total_gb"), "8750");
    assert_eq!(tf.output("days"), "7");
    let first: serde_json::Value = serde_json::from_str(&tf.run(&["output", "-json", "first"]).stdout).unwrap();
    assert_eq!(
        first,
        serde_json::json!({"date": "2026-11-24", "usd": 12.5, "gb": 1250})
    );
    assert_eq!(tf.output("pattern"), "DataTransfer-Regional-Bytes");

    // Bad windows: diagnostics on the attribute, before any call.
    for (attributes, expected) in [
        ("start_date = \"2026-11-31\"", "is not a date: write YYYY-MM-DD"),
        (
            "start_date = \"2026-12-01\"\n  end_date = \"2026-11-24\"",
            "is not after start_date",
        ),
        ("days = 0", "days = 0 is not a whole number from 1 to 366"),
        ("tag_key = \"team\"", "tag_key and tag_value go together"),
    ] {
        let tf = terraform(
            &moto,
            &format!("data \"locality_cross_zone_cost\" \"bad\" {{\n  {attributes}\n}}\n"),
        );
        let out = tf.fails(&["plan", "-input=false", "-no-color"]);
        assert!(out.contains(expected), "{attributes}: {out}");
        assert!(out.contains("data.locality_cross_zone_cost.bad"), "{out}");
    }
}

/// Cost Explorer is served from us-east-1 only: the request is signed for `us-east-1/ce` while
/// the block's region is ap-northeast-1. A 429 and a 500 on the way are retried, and the plan
/// gets the figures.
#[test]
fn cost_explorer_is_asked_in_us_east_1_and_faults_are_retried() {
    use common::fault_proxy::{Fault, FaultProxy};
    let moto = Moto::start();
    inject(&moto, 3.0);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let proxy = runtime.block_on(FaultProxy::start(&moto.endpoint));
    {
        let mut state = proxy.state.lock().unwrap();
        state.faults.push_back(Fault::Status(429));
        state.faults.push_back(Fault::Status(500));
    }
    let mut tf = Terraform::dev_overrides();
    for (k, v) in ENV {
        tf.env(k, v);
    }
    tf.write(
        "main.tf",
        &format!(
            "{PREAMBLE}\nprovider \"locality\" {{\n  aws {{\n    region       = \"ap-northeast-1\"\n    endpoint_url = \"{}\"\n  }}\n}}\n\n\
             data \"locality_cross_zone_cost\" \"week\" {{}}\n\noutput \"total_usd\" {{\n  value = data.locality_cross_zone_cost.week.total_usd\n}}\n",
            proxy.endpoint()
        ),
    );
    tf.ok(&["apply", "-auto-approve", "-input=false"]);
    assert_eq!(tf.output("total_usd"), "21");
    let state = proxy.state.lock().unwrap();
    let asked: Vec<&String> = state
        .actions
        .iter()
        .zip(&state.scopes)
        .filter(|(action, _)| action.as_str() == "GetCostAndUsage")
        .map(|(_, scope)| scope)
        .collect();
    assert!(asked.len() >= 3, "{:?}", state.actions);
    assert!(asked.iter().all(|s| s.as_str() == "us-east-1/ce"), "{asked:?}");
}
