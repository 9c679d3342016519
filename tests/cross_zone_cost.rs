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
    inject_groups(
        moto,
        &[
            (
                "APN1-DataTransfer-Regional-Bytes",
                format!("{usd_per_day}"),
                format!("{}", usd_per_day * 100.0),
            ),
            ("APN1-BoxUsage:t3.micro", "1000".to_string(), "24".to_string()),
        ],
    );
}

/// Queues one Cost Explorer answer in moto: the days of the fixed window the tests name
/// (2026-11-24 to 2026-11-30) and of the default one (the seven days before today, UTC: the
/// provider keeps only the window's days), each once, with `groups` (usage type, UnblendedCost
/// amount, UsageQuantity amount), amounts as written.
fn inject_groups(moto: &Moto, groups: &[(&str, String, String)]) {
    let groups: Vec<serde_json::Value> = groups
        .iter()
        .map(|(usage_type, usd, quantity)| {
            serde_json::json!({"Keys": [usage_type],
                "Metrics": {"UnblendedCost": {"Amount": usd, "Unit": "USD"},
                            "UsageQuantity": {"Amount": quantity, "Unit": "GB"}}})
        })
        .collect();
    let today = (std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        / 86_400) as i64;
    let fixed = chrono_free_days("2026-11-24");
    let mut days: Vec<i64> = (fixed..fixed + 7).chain(today - 7..today).collect();
    days.sort_unstable();
    days.dedup();
    let days: Vec<serde_json::Value> = days
        .into_iter()
        .map(|day| {
            serde_json::json!({
                "TimePeriod": {"Start": date_of_days(day), "End": date_of_days(day + 1)},
                "Total": {},
                "Groups": groups,
                "Estimated": false
            })
        })
        .collect();
    inject_days(moto, days);
}

/// `YYYY-MM-DD` of days since 1970-01-01 (the inverse of [`chrono_free_days`]).
fn date_of_days(days: i64) -> String {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

/// Queues `days` (ResultsByTime entries) as moto's next GetCostAndUsage answer.
fn inject_days(moto: &Moto, days: Vec<serde_json::Value>) {
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
    terraform_at(&moto.endpoint, body)
}

/// A configuration whose `aws` block's endpoint is `endpoint` (moto, or a proxy in front of it).
fn terraform_at(endpoint: &str, body: &str) -> Terraform {
    let mut tf = Terraform::dev_overrides();
    for (k, v) in ENV {
        tf.env(k, v);
    }
    tf.write(
        "main.tf",
        &format!(
            "{PREAMBLE}\nprovider \"locality\" {{\n  aws {{\n    region       = \"ap-northeast-1\"\n    endpoint_url = \"{endpoint}\"\n  }}\n}}\n\n{body}"
        ),
    );
    tf
}

/// Days since 1970-01-01 of a `YYYY-MM-DD` date (a civil-calendar count, no date crate).
fn chrono_free_days(date: &str) -> i64 {
    let parts: Vec<i64> = date.split('-').map(|p| p.parse().unwrap()).collect();
    let (y, m, d) = (parts[0], parts[1], parts[2]);
    let (y, m) = if m <= 2 { (y - 1, m + 12) } else { (y, m) };
    365 * y + y / 4 - y / 100 + y / 400 + (153 * (m - 3) + 2) / 5 + d - 719_469
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
    // (Terraform may wrap the line after "through".)
    let flat = warning.split_whitespace().collect::<Vec<_>>().join(" ");
    let last = flat
        .find(" through 20")
        .map(|i| &flat[i + 9..i + 19])
        .unwrap()
        .to_string();
    // The window's days as a person reads them: seven, the last one included.
    let day = |d: &str| chrono_free_days(d);
    assert_eq!(day(&last) - day(&start), 6, "{warning}");
    let shown = warning.replace(&start, "2026-11-27").replace(&last, "2026-12-03");
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

/// The guide's drift check, as written, beside the cost check in one configuration: a plain
/// `terraform plan -detailed-exitcode` exits 2 on every run (the check block's data source is
/// read during apply), while the guide's command says "no drift" (exit 0) when nothing would
/// change and under budget, and exits 2 naming the resource when something would.
#[test]
fn the_drift_check_and_the_cost_check_work_together() {
    let moto = Moto::start();
    for _ in 0..4 {
        inject(&moto, 10.0);
    }
    let map = |replica: &str| {
        format!(
            r#"
resource "locality_zone_replica_map" "cache" {{
  fallback_endpoint = "reader.example:6379"
  member {{
    endpoint = "primary.example:6379"
    zone     = "ap-northeast-1a"
    role     = "primary"
  }}
  member {{
    endpoint = "{replica}"
    zone     = "ap-northeast-1c"
  }}
  file {{
    path = "replica-map.json"
  }}
}}

{}"#,
            example()
        )
    };
    let tf = terraform(&moto, &map("replica-c.example:6379"));
    let apply = tf.run(&["apply", "-auto-approve", "-input=false"]);
    assert_eq!(apply.code, 0, "{}", apply.all());

    // The conflict the guide explains: exit 2 with nothing to change.
    let plain = tf.run(&["plan", "-detailed-exitcode", "-input=false"]);
    assert_eq!(plain.code, 2, "{}", plain.all());
    assert!(plain.all().contains("will be read during apply"), "{}", plain.all());

    let guide =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/guides/consuming-the-replica-map.md"))
            .unwrap();
    let after = &guide[guide.find("#### A drift check that lives with the cost check").unwrap()..];
    let start = after.find("```sh\n").unwrap() + 6;
    let command = after[start..start + after[start..].find("```").unwrap()].to_string();
    let run = |tf: &Terraform| {
        let base = tf.command(&["version"]);
        let mut sh = std::process::Command::new("sh");
        sh.args(["-c", &command]).current_dir(tf.dir.path());
        for (k, v) in base.get_envs() {
            match v {
                Some(v) => sh.env(k, v),
                None => sh.env_remove(k),
            };
        }
        let out = sh.output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, stdout, stderr) = run(&tf);
    assert_eq!((code, stdout.as_str()), (Some(0), "no drift\n"), "{stderr}");
    let plan = tf.read("drift.txt").unwrap();
    assert!(
        plan.contains("No changes") || plan.contains("will be read during apply"),
        "{plan}"
    );
    assert!(!plan.contains("Check block assertion failed"), "under budget: {plan}");
    eprintln!("drift check, nothing changed: {stdout}");

    // A replica replaced: drift, named.
    tf.write(
        "main.tf",
        &tf.read("main.tf")
            .unwrap()
            .replace("replica-c.example", "replica-c2.example"),
    );
    let (code, stdout, stderr) = run(&tf);
    assert_eq!(code, Some(2), "{stdout}{stderr}");
    assert_eq!(stdout, "drift:\nlocality_zone_replica_map.cache: update\n", "{stderr}");
    eprintln!("drift check, a replica replaced: {stdout}");

    // A plan that fails is never a quiet "no drift".
    tf.write("broken.tf", "resource \"locality_zone_replica_map\" \"broken\" {}\n");
    let (code, stdout, _) = run(&tf);
    assert_eq!(code, Some(1), "{stdout}");
    assert!(!stdout.contains("no drift"), "{stdout}");
}

/// A pattern that matches none of the usage types Cost Explorer reported is a warning naming
/// the pattern and what it saw (not a silent 0); amounts that are not finite, non-negative
/// numbers (NaN, 1e999, -1e308) are a warning naming the day and usage type, the totals stay
/// numbers, and the page's check block does not fail the plan.
#[test]
fn a_pattern_that_matches_nothing_and_amounts_that_are_not_numbers_are_said() {
    let moto = Moto::start();
    inject_groups(
        &moto,
        &[
            ("APN1-DataTransfer-Out-Bytes", "4.5".to_string(), "50".to_string()),
            ("APN1-BoxUsage:t3.micro", "1000".to_string(), "24".to_string()),
            // Issue 61, item 9: a usage type that forges Terraform's last line, and reorders one.
            (
                "APN1-X\nApply complete! Resources: 9 added, 0 changed, 0 destroyed.\u{202e}",
                "1".to_string(),
                "1".to_string(),
            ),
        ],
    );
    let window = "  start_date = \"2026-11-24\"\n  end_date   = \"2026-12-01\"\n";
    let tf = terraform(
        &moto,
        &format!(
            "data \"locality_cross_zone_cost\" \"week\" {{\n{window}  usage_type_pattern = \"InterZone\"\n}}\n\noutput \"total_usd\" {{\n  value = data.locality_cross_zone_cost.week.total_usd\n}}\n"
        ),
    );
    let plan = tf.run(&["plan", "-input=false"]);
    assert_eq!(plan.code, 0, "{}", plan.all());
    let words = plan.all().split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(words.contains("Warning: No usage type matches the pattern"), "{words}");
    assert!(
        words.contains("contains usage_type_pattern \"InterZone\"")
            && words.contains("APN1-BoxUsage:t3.micro (7000.00 USD)")
            && words.contains("APN1-DataTransfer-Out-Bytes (31.50 USD)"),
        "{words}"
    );
    assert!(
        words.contains("APN1-X\\nApply complete! Resources: 9 added, 0 changed, 0 destroyed.\\u{202e} (7.00 USD)")
            && !plan.all().contains("\nApply complete!")
            && !plan.all().contains('\u{202e}'),
        "{words}"
    );
    assert!(words.contains("from 2026-11-24 to 2026-11-30"), "{words}");

    let moto = Moto::start();
    inject_groups(
        &moto,
        &[
            (
                "APN1-DataTransfer-Regional-Bytes",
                "NaN".to_string(),
                "1e999".to_string(),
            ),
            (
                "USE1-DataTransfer-Regional-Bytes",
                "-1e308".to_string(),
                "3".to_string(),
            ),
            ("USW2-DataTransfer-Regional-Bytes", "2".to_string(), "200".to_string()),
        ],
    );
    let tf = terraform(
        &moto,
        &format!(
            "data \"locality_cross_zone_cost\" \"week\" {{\n{window}}}\n\noutput \"total_usd\" {{\n  value = data.locality_cross_zone_cost.week.total_usd\n}}\n\n\
             output \"total_gb\" {{\n  value = data.locality_cross_zone_cost.week.total_gb\n}}\n\n\
             check \"budget\" {{\n  assert {{\n    condition     = data.locality_cross_zone_cost.week.average_daily_usd <= 25\n    error_message = \"over\"\n  }}\n}}\n"
        ),
    );
    let apply = tf.run(&["apply", "-auto-approve", "-input=false"]);
    assert_eq!(apply.code, 0, "{}", apply.all());
    let words = apply.all().split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        words.contains("Warning: Amounts that are not numbers were left out"),
        "{words}"
    );
    assert!(
        words.contains("2026-11-24 APN1-DataTransfer-Regional-Bytes UnblendedCost = \"NaN\"")
            && words.contains("2026-11-24 APN1-DataTransfer-Regional-Bytes UsageQuantity = \"1e999\"")
            && words.contains("2026-11-24 USE1-DataTransfer-Regional-Bytes UnblendedCost = \"-1e308\""),
        "{words}"
    );
    assert!(!words.contains("must not be null"), "{words}");
    // Only the one good amount per day counts: 7 × 2 USD, 7 × (3 + 200) GB.
    assert_eq!(tf.output("total_usd"), "14");
    assert_eq!(tf.output("total_gb"), "1421");
}

/// Cost Explorer pages end: a server that gives the same NextPageToken forever is asked twice,
/// one that gives a new token forever 100 times; each ends the plan with an error saying so
/// (before: 2,408 requests until the plan was killed).
#[test]
fn endless_pages_of_cost_explorer_end_with_an_error() {
    use common::fault_proxy::{Fault, FaultProxy};
    let moto = Moto::start();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let body = "data \"locality_cross_zone_cost\" \"week\" {\n  start_date = \"2026-11-24\"\n  end_date   = \"2026-12-01\"\n}\n";
    for (token, expected, requests) in [
        (None, "a page token it had given before (page 2)", 2),
        (Some(()), "more than 100 pages", 100),
    ] {
        let proxy = runtime.block_on(FaultProxy::start(&moto.endpoint));
        {
            let mut state = proxy.state.lock().unwrap();
            for n in 0..150 {
                let next = match token {
                    None => "same".to_string(),
                    Some(()) => format!("page-{n}"),
                };
                state.faults.push_back(Fault::Answer(format!(
                    r#"{{"ResultsByTime":[{{"TimePeriod":{{"Start":"2026-11-24","End":"2026-11-25"}},"Total":{{}},"Groups":[],"Estimated":false}}],"DimensionValueAttributes":[],"NextPageToken":"{next}"}}"#
                )));
            }
        }
        let tf = terraform_at(&proxy.endpoint(), body);
        let out = tf.fails(&["plan", "-input=false"]);
        let words = out.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(words.contains(expected), "{words}");
        let asked = proxy
            .state
            .lock()
            .unwrap()
            .actions
            .iter()
            .filter(|a| *a == "GetCostAndUsage")
            .count();
        assert_eq!(asked, requests, "{words}");
        eprintln!("{expected}: {asked} requests");
    }
}

/// The read's overall deadline (`timeouts.read`, default 5m): a silent Cost Explorer ends the
/// plan when it runs out, with a diagnostic naming the setting; a bad value is refused at
/// validation.
#[test]
fn a_silent_cost_explorer_ends_at_the_reads_deadline() {
    use common::fault_proxy::{Fault, FaultProxy};
    let moto = Moto::start();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let proxy = runtime.block_on(FaultProxy::start(&moto.endpoint));
    for _ in 0..20 {
        proxy.state.lock().unwrap().faults.push_back(Fault::Silent);
    }
    let tf = terraform_at(
        &proxy.endpoint(),
        "data \"locality_cross_zone_cost\" \"week\" {\n  timeouts {\n    read = \"3s\"\n  }\n}\n",
    );
    let started = std::time::Instant::now();
    let out = tf.fails(&["plan", "-input=false"]);
    let took = started.elapsed();
    let words = out.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        words.contains("locality_cross_zone_cost: read timed out")
            && words.contains("did not finish within 3s (`timeouts.read`)")
            && words.contains("nothing was changed"),
        "{words}"
    );
    assert!(took < std::time::Duration::from_secs(30), "{took:?}");
    eprintln!("a silent Cost Explorer: the plan ended after {took:?}: {words}");

    let tf = terraform(
        &moto,
        "data \"locality_cross_zone_cost\" \"week\" {\n  timeouts {\n    read = \"forever\"\n  }\n}\n",
    );
    let out = tf.fails(&["plan", "-input=false"]);
    assert!(
        out.contains("Invalid timeout") && out.contains("\"forever\" is not a timeout"),
        "{out}"
    );
}

/// Issue 58, item 5: large finite amounts and days that are not dates. One amount of 1e300 and
/// two of f64::MAX passed the NaN check, then the sums and their rounding overflowed: total_usd
/// and average_daily_usd became null with no warning and the page's check block failed the plan.
/// A day whose start held a newline and ESC showed raw in the plan. Now amounts above 10^12 a
/// day are left out with a warning naming them, days that are not YYYY-MM-DD are left out with a
/// warning showing them escaped, the totals stay numbers and the check block passes.
#[test]
fn huge_amounts_and_days_that_are_not_dates_are_left_out_and_said() {
    let moto = Moto::start();
    let group = |usd: &str| {
        serde_json::json!({"Keys": ["APN1-DataTransfer-Regional-Bytes"],
            "Metrics": {"UnblendedCost": {"Amount": usd, "Unit": "USD"},
                        "UsageQuantity": {"Amount": "1", "Unit": "GB"}}})
    };
    let day = |start: &str, groups: Vec<serde_json::Value>| serde_json::json!({"TimePeriod": {"Start": start, "End": "2026-12-01"}, "Total": {}, "Groups": groups, "Estimated": false});
    inject_days(
        &moto,
        vec![
            day("2026-11-24", vec![group("1e300")]),
            day(
                "2026-11-25",
                vec![group("1.7976931348623157e308"), group("1.7976931348623157e308")],
            ),
            day("2026-11-26", vec![group("3")]),
            day("2026-11-27\n\u{1b}[31mforged", vec![group("5")]),
            // Issue 61, item 9: an impossible date, and days outside the window.
            day("0001-02-31", vec![group("7")]),
            day("2026-12-01", vec![group("11")]),
        ]
        .into_iter()
        .chain((0..3000).map(|n| day(&format!("{}-01-01", 2000 - n % 1000), vec![group("13")])))
        .collect(),
    );
    let tf = terraform(
        &moto,
        "data \"locality_cross_zone_cost\" \"week\" {\n  start_date = \"2026-11-24\"\n  end_date   = \"2026-12-01\"\n}\n\n\
         output \"total_usd\" {\n  value = data.locality_cross_zone_cost.week.total_usd\n}\n\n\
         output \"dates\" {\n  value = join(\",\", data.locality_cross_zone_cost.week.daily[*].date)\n}\n\n\
         check \"budget\" {\n  assert {\n    condition     = data.locality_cross_zone_cost.week.average_daily_usd <= 25\n    error_message = \"over\"\n  }\n}\n",
    );
    let apply = tf.run(&["apply", "-auto-approve", "-input=false"]);
    assert_eq!(apply.code, 0, "{}", apply.all());
    let all = apply.all();
    assert!(!all.contains('\u{1b}'), "no raw ESC in the plan: {all}");
    let words = all.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(words.contains("at most 10^12"), "{words}");
    assert!(
        words.contains("2026-11-24 APN1-DataTransfer-Regional-Bytes UnblendedCost = \"1e300\"")
            && words.contains("2026-11-25 APN1-DataTransfer-Regional-Bytes UnblendedCost = \"1.7976931348623157e308\""),
        "{words}"
    );
    assert!(
        words.contains("Warning: Days that are not dates of the window were left out"),
        "{words}"
    );
    assert!(words.contains("2026-11-27\\n\\u{1b}[31mforged"), "{words}");
    assert!(
        words.contains("\"0001-02-31\"; \"2026-12-01\"") && words.contains(" and 2983 more"),
        "{words}"
    );
    assert!(!words.contains("must not be null"), "{words}");
    assert_eq!(tf.output("total_usd"), "3");
    assert_eq!(tf.output("dates"), "2026-11-24,2026-11-25,2026-11-26");
}
