//! `locality gen`: golden files (checked by the real `terraform fmt -check` and by
//! `terraform validate` against a stand-in google provider), structure parsed back, every class
//! of spec error with its exact location, and the CLI's write / check / JSON behaviour.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use hcl_edit::expr::Expression;
use hcl_edit::repr::Span as _;
use locality::generator::{generate, Format, Level, SourceFile};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/generator")
}

struct Case {
    dir: PathBuf,
    spec_name: &'static str,
    format: Format,
    expected: &'static str,
}

fn cases() -> Vec<Case> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(fixtures()).unwrap() {
        let dir = entry.unwrap().path();
        let json_spec = dir.join("spec.json").exists();
        let json_out = dir.file_name().unwrap().to_str().unwrap().ends_with("json-output");
        out.push(Case {
            spec_name: if json_spec { "spec.json" } else { "spec.hcl" },
            format: if json_out { Format::Json } else { Format::Hcl },
            expected: if json_out { "expected.tf.json" } else { "expected.tf" },
            dir,
        });
    }
    out.sort_by(|a, b| a.dir.cmp(&b.dir));
    out
}

fn generate_case(case: &Case) -> String {
    let text = std::fs::read_to_string(case.dir.join(case.spec_name)).unwrap();
    let generated = generate(
        &SourceFile {
            name: case.spec_name,
            text: &text,
        },
        case.format,
    );
    assert!(
        generated.diagnostics.iter().all(|d| d.level == Level::Warning),
        "{}: {:?}",
        case.dir.display(),
        generated.diagnostics
    );
    generated.text.expect("valid spec")
}

/// Every golden matches the generator, is unchanged by `terraform fmt`, and validates against
/// the google provider's schema (HCL and JSON alike).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn goldens_match_and_terraform_accepts_them() {
    let bless = std::env::var("BLESS").is_ok_and(|v| v == "1");
    let reattach =
        common::aws_provider::merge(&common::google::start().await, &common::aws_provider::start(None).await);
    let cases = cases();
    assert!(cases.len() >= 10, "fixtures missing");
    tokio::task::spawn_blocking(move || {
        for case in &cases {
            let generated = generate_case(case);
            let expected_path = case.dir.join(case.expected);
            if bless {
                std::fs::write(&expected_path, &generated).unwrap();
            }
            let expected = std::fs::read_to_string(&expected_path).unwrap_or_default();
            assert_eq!(
                generated,
                expected,
                "{} is stale (BLESS=1 regenerates)",
                expected_path.display()
            );

            // google: the in-process stand-in; locality (for managed weights): the built provider.
            let mut tf = common::Terraform::dev_overrides();
            tf.env("TF_REATTACH_PROVIDERS", &reattach);
            tf.write(case.expected, &generated);
            if generated.contains("locality_weighted_backend") || generated.contains("locality_lb_forward_weights") {
                // The module declares where `locality` comes from; the generated file does not
                // (a second required_providers entry for it would clash with the user's).
                tf.write("versions.tf", common::PREAMBLE);
            }
            if case.format == Format::Hcl {
                let fmt = tf.run(&["fmt", "-check", "-diff"]);
                assert_eq!(
                    fmt.code,
                    0,
                    "{}: terraform fmt would change it:\n{}",
                    case.dir.display(),
                    fmt.all()
                );
            }
            let validate = tf.run(&["validate"]);
            assert_eq!(
                validate.code,
                0,
                "{}: terraform validate:\n{}",
                case.dir.display(),
                validate.all()
            );
        }
    })
    .await
    .unwrap();
}

/// What the parsed output holds: resource addresses and, per URL map, (backend, weight).
fn structure(hcl: &str) -> (Vec<String>, Vec<(String, i64)>) {
    let body = hcl_edit::parser::parse_body(hcl).unwrap();
    let mut resources = Vec::new();
    let mut weights = Vec::new();
    for block in body.blocks() {
        assert_eq!(block.ident.as_str(), "resource");
        let labels: Vec<&str> = block.labels.iter().map(|l| l.as_str()).collect();
        resources.push(labels.join("."));
        for b in block.body.blocks() {
            if b.ident.as_str() == "backend" {
                let group = b.body.get_attribute("group").unwrap();
                assert!(
                    matches!(group.value, Expression::Traversal(_)),
                    "backend.group is a reference, not a string"
                );
            }
        }
        if labels[0] == "google_compute_url_map" {
            let route = block
                .body
                .blocks()
                .find(|b| b.ident.as_str() == "default_route_action")
                .unwrap();
            for wbs in route.body.blocks() {
                let target = &wbs.body.get_attribute("backend_service").unwrap().value;
                assert!(
                    matches!(target, Expression::Traversal(_)),
                    "backend_service must be a traversal: {target:?}"
                );
                let text = &hcl[target.span().unwrap()];
                let weight = wbs
                    .body
                    .get_attribute("weight")
                    .unwrap()
                    .value
                    .as_number()
                    .unwrap()
                    .as_i64()
                    .unwrap();
                weights.push((text.trim().to_string(), weight));
            }
        }
    }
    (resources, weights)
}

fn hcl_output(fixture: &str) -> String {
    let case = cases().into_iter().find(|c| c.dir.ends_with(fixture)).unwrap();
    generate_case(&case)
}

#[test]
fn two_regions_all_active_give_the_all_regions_service_everything() {
    let (resources, weights) = structure(&hcl_output("two-regions"));
    assert_eq!(
        resources,
        [
            "google_compute_region_network_endpoint_group.web_tokyo",
            "google_compute_region_network_endpoint_group.web_osaka",
            "google_compute_backend_service.web",
            "google_compute_backend_service.web_tokyo",
            "google_compute_backend_service.web_osaka",
            "google_compute_url_map.web",
        ]
    );
    assert_eq!(
        weights,
        [
            ("google_compute_backend_service.web.id".to_string(), 100),
            ("google_compute_backend_service.web_tokyo.id".to_string(), 0),
            ("google_compute_backend_service.web_osaka.id".to_string(), 0),
        ]
    );
    let text = hcl_output("two-regions");
    assert!(text.starts_with("# Code generated by locality gen from spec.hcl; DO NOT EDIT.\n\n"));
    assert!(
        text.contains("max_ejection_percent                  = 50"),
        "default for two regions"
    );
    assert_eq!(text.matches("load_balancing_scheme = \"EXTERNAL_MANAGED\"").count(), 3);
    assert_eq!(text.matches("outlier_detection {").count(), 3);
}

#[test]
fn subsets_split_the_weight_over_the_active_regions() {
    let (_, weights) = structure(&hcl_output("two-regions-tokyo-only"));
    assert_eq!(weights.iter().map(|w| w.1).collect::<Vec<_>>(), [0, 100, 0]);
    let (_, weights) = structure(&hcl_output("three-regions-subset"));
    assert_eq!(weights.iter().map(|w| w.1).collect::<Vec<_>>(), [0, 50, 0, 50]);
    let (resources, weights) = structure(&hcl_output("several-services"));
    assert_eq!(resources.len(), 12);
    assert_eq!(weights.iter().map(|w| w.1).collect::<Vec<_>>(), [0, 0, 100, 100, 0, 0]);
}

#[test]
fn managed_weights_leave_the_url_map_alone_and_follow_active_in_locality_weighted_backend() {
    let text = hcl_output("managed-weights");
    let (resources, url_map_weights) = structure(&text);
    assert_eq!(resources.last().unwrap(), "locality_weighted_backend.web");
    // The URL map keeps the all-active weights and ignores later changes to them.
    assert_eq!(url_map_weights.iter().map(|w| w.1).collect::<Vec<_>>(), [100, 0, 0]);
    for i in 0..3 {
        assert!(
            text.contains(&format!(
                "default_route_action[0].weighted_backend_services[{i}].weight,"
            )),
            "{text}"
        );
    }
    let body = hcl_edit::parser::parse_body(&text).unwrap();
    let resource = body
        .blocks()
        .find(|b| b.labels.iter().any(|l| l.as_str() == "locality_weighted_backend"))
        .unwrap();
    let url_map = &resource.body.get_attribute("url_map").unwrap().value;
    assert!(
        matches!(url_map, Expression::Traversal(_)),
        "url_map refers to the URL map resource"
    );
    assert!(
        text.contains("    \"web-bs\"       = 0\n    \"web-bs-tokyo\" = 0\n    \"web-bs-osaka\" = 100\n"),
        "{text}"
    );

    // Switching `active` changes only the locality_weighted_backend block.
    let spec = std::fs::read_to_string(fixtures().join("managed-weights/spec.hcl")).unwrap();
    let other = spec.replace(
        "active             = [\"osaka\"]",
        "active             = [\"tokyo\", \"osaka\"]",
    );
    let after = generate(
        &SourceFile {
            name: "spec.hcl",
            text: &other,
        },
        Format::Hcl,
    )
    .text
    .unwrap();
    let diff = similar::TextDiff::from_lines(&text, &after);
    let changed: Vec<String> = diff
        .iter_all_changes()
        .filter(|c| c.tag() != similar::ChangeTag::Equal)
        .map(|c| c.value().to_string())
        .collect();
    assert_eq!(changed.len(), 6, "{changed:#?}");
    assert!(
        changed.iter().all(|l| l.contains("Weights:") || l.contains("\"web-bs")),
        "{changed:#?}"
    );
}

#[test]
fn switching_active_is_a_small_diff() {
    let before = hcl_output("two-regions");
    let after = hcl_output("two-regions-tokyo-only");
    let diff = similar::TextDiff::from_lines(&before, &after);
    let changed: Vec<String> = diff
        .iter_all_changes()
        .filter(|c| c.tag() != similar::ChangeTag::Equal)
        .map(|c| format!("{}{}", c.tag(), c.value()))
        .collect();
    // The comment and two weights change: 3 lines out, 3 lines in.
    assert_eq!(changed.len(), 6, "{changed:#?}");
}

#[test]
fn json_spec_gives_the_same_output_as_hcl() {
    let from_json = hcl_output("json-spec").replace("from spec.json", "from spec.hcl");
    assert_eq!(from_json, hcl_output("two-regions"));
}

#[test]
fn json_output_has_the_same_structure() {
    let case = cases().into_iter().find(|c| c.dir.ends_with("json-output")).unwrap();
    let json: serde_json::Value = serde_json::from_str(&generate_case(&case)).unwrap();
    let wbs =
        &json["resource"]["google_compute_url_map"]["web"]["default_route_action"][0]["weighted_backend_services"];
    assert_eq!(wbs[0]["backend_service"], "${google_compute_backend_service.web.id}");
    assert_eq!(wbs[0]["weight"], 100);
    assert_eq!(wbs.as_array().unwrap().len(), 3);
    assert!(json["//"].as_str().unwrap().contains("DO NOT EDIT"));
}

/// Each class of spec error: (spec text, expected location, expected words).
#[test]
fn every_error_names_its_location_and_what_is_allowed() {
    let base = std::fs::read_to_string(fixtures().join("two-regions/spec.hcl")).unwrap();
    let cases: Vec<(String, &str, &[&str])> = vec![
        (
            base.replace(
                "    location  = \"asia-northeast1\"",
                "    lcation   = \"asia-northeast1\"",
            ),
            "spec.hcl:8:5",
            &["unknown `lcation`", "did you mean `location`", "allowed here"],
        ),
        (
            base.replace(
                "    cloud_run = \"web\"\n  }\n\n  region \"osaka\"",
                "  }\n\n  region \"osaka\"",
            ),
            "spec.hcl:7:10",
            &["missing the required attribute `cloud_run`"],
        ),
        (
            base.replace("region \"osaka\"", "region \"tokyo\""),
            "spec.hcl:12:10",
            &["duplicate region \"tokyo\""],
        ),
        (
            base.replace("active = [\"tokyo\", \"osaka\"]", "active = [\"tokyo\", \"nagoya\"]"),
            "spec.hcl:17:22",
            &["\"nagoya\", which is not defined", "regions: osaka, tokyo"],
        ),
        (
            base.replace("active = [\"tokyo\", \"osaka\"]", "active = []"),
            "spec.hcl:17:12",
            &["`active` is empty"],
        ),
        (
            base.replace("service \"web\"", "service \"Web_1\""),
            "spec.hcl:4:9",
            &["not a valid Google Cloud resource name"],
        ),
        (
            base.replace("region \"osaka\"", &format!("region \"{}\"", "o".repeat(60))),
            "spec.hcl:12:10",
            &["characters; Google allows at most 63"],
        ),
        (
            base.replace("asia-northeast2", "asia-northeast9"),
            "spec.hcl:13:17",
            &["not a Cloud Run location", "did you mean"],
        ),
        (
            base.replace("\"10s\"", "\"10 seconds\""),
            "spec.hcl:20:45",
            &["`interval`", "durations are like"],
        ),
        (
            base.replace("\"3m\"", "\"48h\""),
            "spec.hcl:21:45",
            &["greater than 0s and at most 24h"],
        ),
        (
            base.replace(
                "consecutive_errors                    = 5",
                "consecutive_errors                    = 0",
            ),
            "spec.hcl:22:45",
            &["whole number from 1 to 1000"],
        ),
        (
            base.replace(
                "enforcing_consecutive_gateway_failure = 100",
                "enforcing_consecutive_gateway_failure = 101",
            ),
            "spec.hcl:24:45",
            &["from 0 to 100"],
        ),
        (
            base.replace(
                "enforcing_consecutive_gateway_failure = 100",
                "enforcing_consecutive_gateway_failure = 100\n    max_ejection_percent = 0",
            ),
            "spec.hcl:25:28",
            &["can never eject one of the 2 regions", "1 to 50"],
        ),
        (
            base.replace(
                "enforcing_consecutive_gateway_failure = 100",
                "enforcing_consecutive_gateway_failure = 100\n    max_ejection_percent = 60",
            ),
            "spec.hcl:25:28",
            &["can eject all 2 regions"],
        ),
        (
            base.replace("project = \"winticket-prod\"", "project = \"WT\""),
            "spec.hcl:5:13",
            &["not a Google Cloud project ID"],
        ),
        (
            base.replace(
                "cloud_run = \"web\"\n  }\n\n  region \"osaka\"",
                "cloud_run = \"Web!\"\n  }\n\n  region \"osaka\"",
            ),
            "spec.hcl:9:17",
            &["not a valid Cloud Run service name"],
        ),
        (
            base.replace("service \"web\" {", "service \"web\" {\n  projct = 1"),
            "spec.hcl:5:3",
            &["unknown `projct`", "did you mean `project`"],
        ),
        (
            base.replace("  project = \"winticket-prod\"\n", ""),
            "spec.hcl:4:9",
            &["missing the required attribute `project`"],
        ),
        (
            "service \"web\" {\n  project = \n}\n".to_string(),
            "spec.hcl:2:13",
            &["syntax error"],
        ),
        (
            base.replace(
                "  project = \"winticket-prod\"\n",
                "  project = \"winticket-prod\"\n  protocol = \"GRPC\"\n",
            ),
            "spec.hcl:6:14",
            &["protocol \"GRPC\"", "allowed: HTTP, HTTPS, HTTP2"],
        ),
    ];
    for (text, location, words) in cases {
        let generated = generate(
            &SourceFile {
                name: "spec.hcl",
                text: &text,
            },
            Format::Hcl,
        );
        assert!(
            generated.text.is_none(),
            "{location}: an invalid spec must produce nothing"
        );
        let source = SourceFile {
            name: "spec.hcl",
            text: &text,
        };
        let rendered: String = generated
            .diagnostics
            .iter()
            .filter(|d| d.level == Level::Error)
            .map(|d| source.render(d))
            .collect();
        assert!(
            rendered.contains(&format!("error: {location}: ")),
            "expected {location}:\n{rendered}"
        );
        for word in words {
            assert!(rendered.contains(word), "expected {word:?}:\n{rendered}");
        }
        // The offending line is shown under the message.
        let line: usize = location.split(':').nth(1).unwrap().parse().unwrap();
        let source_line = text.lines().nth(line - 1).unwrap();
        assert!(rendered.contains(&format!("{line} | {source_line}")), "{rendered}");
    }
}

#[test]
fn json_spec_errors_point_into_the_json() {
    let text = std::fs::read_to_string(fixtures().join("json-spec/spec.json"))
        .unwrap()
        .replace("\"asia-northeast2\"", "\"osaka-1\"");
    let generated = generate(
        &SourceFile {
            name: "spec.json",
            text: &text,
        },
        Format::Hcl,
    );
    let source = SourceFile {
        name: "spec.json",
        text: &text,
    };
    let rendered: String = generated.diagnostics.iter().map(|d| source.render(d)).collect();
    assert!(
        rendered.contains("error: spec.json:7:32: \"osaka-1\" is not a Cloud Run location"),
        "{rendered}"
    );
    let generated = generate(
        &SourceFile {
            name: "spec.json",
            text: "{\"service\": {\"web\": {\"project\": }}}",
        },
        Format::Hcl,
    );
    assert!(generated.diagnostics[0].message.contains("syntax error"));
}

#[test]
fn warnings_do_not_block() {
    let text = std::fs::read_to_string(fixtures().join("one-region/spec.hcl")).unwrap();
    let generated = generate(
        &SourceFile {
            name: "spec.hcl",
            text: &text,
        },
        Format::Hcl,
    );
    assert!(generated.text.is_some());
    assert!(generated
        .diagnostics
        .iter()
        .any(|d| d.level == Level::Warning && d.message.contains("nothing to fail over to")));
}

fn locality(args: &[&str], dir: &Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_locality"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

#[test]
fn cli_writes_checks_and_refuses_invalid_specs() {
    let dir = tempfile::tempdir().unwrap();
    let spec = std::fs::read_to_string(fixtures().join("two-regions/spec.hcl")).unwrap();
    std::fs::write(dir.path().join("spec.hcl"), &spec).unwrap();

    let out = locality(&["gen", "spec.hcl", "-o", "lb.tf"], dir.path());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let written = std::fs::read_to_string(dir.path().join("lb.tf")).unwrap();
    assert_eq!(
        written,
        std::fs::read_to_string(fixtures().join("two-regions/expected.tf")).unwrap()
    );

    let out = locality(&["gen", "spec.hcl", "-o", "lb.tf", "--check"], dir.path());
    assert_eq!(out.status.code(), Some(0), "up to date");

    std::fs::write(
        dir.path().join("spec.hcl"),
        spec.replace("active = [\"tokyo\", \"osaka\"]", "active = [\"tokyo\"]"),
    )
    .unwrap();
    let out = locality(&["gen", "spec.hcl", "-o", "lb.tf", "--check"], dir.path());
    assert_eq!(out.status.code(), Some(1), "stale");
    let diff = String::from_utf8_lossy(&out.stdout);
    assert!(
        diff.contains("--- lb.tf") && diff.contains("+++ lb.tf (from spec.hcl)"),
        "{diff}"
    );
    assert!(
        diff.contains("-      weight          = 100") && diff.contains("+      weight          = 0"),
        "{diff}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("lb.tf")).unwrap(),
        written,
        "--check never writes"
    );

    // An invalid spec: exit 2, the error on stderr, the existing file untouched.
    std::fs::write(
        dir.path().join("spec.hcl"),
        spec.replace("asia-northeast2", "asia-northeast9"),
    )
    .unwrap();
    let out = locality(&["gen", "spec.hcl", "-o", "lb.tf"], dir.path());
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("error: spec.hcl:13:17") && stderr.contains("nothing was written"),
        "{stderr}"
    );
    assert_eq!(std::fs::read_to_string(dir.path().join("lb.tf")).unwrap(), written);

    // JSON output to stdout.
    std::fs::write(dir.path().join("spec.hcl"), &spec).unwrap();
    let out = locality(&["gen", "spec.hcl", "--format", "json"], dir.path());
    assert!(out.status.success());
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(json["resource"]["google_compute_url_map"]["web"].is_object());
}

/// The example next to the docs is what the generator makes of its spec, and `--check` says so
/// from any directory: the repository root, the example's own folder (as the spec's comment
/// runs it), and another one with absolute paths. (Before the fix the header recorded the spec
/// path as typed, and the check from the example's folder called the committed file stale.)
#[test]
fn example_output_is_current() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let elsewhere = tempfile::tempdir().unwrap();
    for (dir, name) in [
        ("examples/generator", "tokyo-osaka"),
        ("examples/generator/managed-weights", "tokyo-osaka"),
        ("examples/generator/aws-blue-green", "web"),
    ] {
        let (spec, tf) = (format!("{dir}/{name}.hcl"), format!("{dir}/{name}.tf"));
        let (spec_file, tf_file) = (format!("{name}.hcl"), format!("{name}.tf"));
        let (abs_spec, abs_tf) = (root.join(&spec), root.join(&tf));
        for (args, cwd) in [
            (vec![spec.as_str(), tf.as_str()], root.to_path_buf()),
            (vec![spec_file.as_str(), tf_file.as_str()], root.join(dir)),
            (
                vec![abs_spec.to_str().unwrap(), abs_tf.to_str().unwrap()],
                elsewhere.path().to_path_buf(),
            ),
        ] {
            let out = locality(&["gen", args[0], "-o", args[1], "--check"], &cwd);
            assert_eq!(
                out.status.code(),
                Some(0),
                "from {}: run `locality gen {spec} -o {tf}`:\n{}",
                cwd.display(),
                String::from_utf8_lossy(&out.stdout)
            );
        }
    }
}

/// Issue 37: `locality gen SPEC > FILE` and `locality gen SPEC -o FILE --check` agree, whatever
/// the working directory of each: the header names the spec by its file name. (Before: the
/// first recorded `specs/lb.hcl`, the second expected `../specs/lb.hcl`, and called the file
/// stale.)
#[test]
fn stdout_and_check_agree_from_any_directory() {
    let work = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(work.path().join("specs")).unwrap();
    std::fs::create_dir_all(work.path().join("out")).unwrap();
    std::fs::copy(
        fixtures().join("two-regions/spec.hcl"),
        work.path().join("specs/lb.hcl"),
    )
    .unwrap();
    let printed = locality(&["gen", "specs/lb.hcl"], work.path());
    assert!(printed.status.success());
    assert!(String::from_utf8_lossy(&printed.stdout)
        .starts_with("# Code generated by locality gen from lb.hcl; DO NOT EDIT.\n"));
    std::fs::write(work.path().join("out/lb.tf"), &printed.stdout).unwrap();
    for (cwd, args) in [
        (work.path().to_path_buf(), ["specs/lb.hcl", "out/lb.tf"]),
        (work.path().join("out"), ["../specs/lb.hcl", "lb.tf"]),
        (work.path().join("specs"), ["lb.hcl", "../out/lb.tf"]),
    ] {
        let out = locality(&["gen", args[0], "-o", args[1], "--check"], &cwd);
        assert_eq!(
            out.status.code(),
            Some(0),
            "from {}: {}",
            cwd.display(),
            String::from_utf8_lossy(&out.stdout)
        );
    }
    let from_out = locality(&["gen", "../specs/lb.hcl"], &work.path().join("out"));
    assert_eq!(
        from_out.stdout, printed.stdout,
        "stdout does not depend on the working directory"
    );
}

/// Issue 11: a syntax error next to multi-byte text (CJK, typographic quotes) is a diagnostic
/// with the right column, never a panic; and no edit of a valid spec, at any character
/// position, makes rendering a diagnostic panic.
#[test]
fn syntax_errors_next_to_multibyte_text_are_diagnostics() {
    for (text, column) in [
        ("service \"web\" {\n  project = \"東京\" x\n}\n", 18),
        ("service \"web\" {\n  project = “web”\n}\n", 13),
    ] {
        let source = SourceFile { name: "spec.hcl", text };
        let generated = generate(&source, Format::Hcl);
        assert!(generated.text.is_none());
        let rendered: String = generated.diagnostics.iter().map(|d| source.render(d)).collect();
        assert!(rendered.contains(&format!("spec.hcl:2:{column}:")), "{rendered}");
    }
    let valid = std::fs::read_to_string(fixtures().join("two-regions/spec.hcl")).unwrap();
    let positions: Vec<usize> = valid.char_indices().map(|(i, _)| i).collect();
    for (n, &at) in positions.iter().enumerate().step_by(7) {
        let insert = ["東", "“", "\"", "{", "é x"][n % 5];
        let mut text = valid.clone();
        text.insert_str(at, insert);
        let source = SourceFile {
            name: "spec.hcl",
            text: &text,
        };
        for d in generate(&source, Format::Hcl).diagnostics {
            let _ = source.render(&d);
        }
    }
}

/// Issue 11: two services whose generated names collide once `-` becomes `_` (`web` with
/// region `tokyo`, and `web-tokyo`) gave invalid Terraform (and JSON output silently kept one);
/// a service name whose URL map name passes 63 characters was not reported.
#[test]
fn colliding_and_too_long_generated_names_are_errors() {
    let base = std::fs::read_to_string(fixtures().join("two-regions/spec.hcl")).unwrap();
    let twin = base.replacen("service \"web\"", "service \"web-tokyo\"", 1);
    let text = format!("{base}\n{twin}");
    for format in [Format::Hcl, Format::Json] {
        let source = SourceFile {
            name: "spec.hcl",
            text: &text,
        };
        let generated = generate(&source, format);
        assert!(generated.text.is_none(), "nothing is written");
        let rendered: String = generated.diagnostics.iter().map(|d| source.render(d)).collect();
        assert!(
            rendered
                .contains("generates google_compute_backend_service.web_tokyo, which service \"web\" generates too"),
            "{rendered}"
        );
    }
    // Region names short enough for `<service>-neg-t`, too long for `<service>-urlmap`.
    let long = "w".repeat(57);
    let text = base
        .replace("\"tokyo\"", "\"t\"")
        .replace("\"osaka\"", "\"o\"")
        .replacen("service \"web\"", &format!("service \"{long}\""), 1);
    let source = SourceFile {
        name: "spec.hcl",
        text: &text,
    };
    let rendered: String = generate(&source, Format::Hcl)
        .diagnostics
        .iter()
        .map(|d| source.render(d))
        .collect();
    assert!(
        rendered.contains(&format!("\"{long}-urlmap\" is 64 characters")),
        "{rendered}"
    );
    assert!(
        rendered.contains("spec.hcl:4:9"),
        "points at the service label: {rendered}"
    );
}

/// Issue 11: `--check` against a file that exists but cannot be read is an error (exit 2), not
/// "stale" (exit 1); a missing file is still stale.
#[test]
fn check_of_an_unreadable_file_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let spec = std::fs::read_to_string(fixtures().join("two-regions/spec.hcl")).unwrap();
    std::fs::write(dir.path().join("spec.hcl"), &spec).unwrap();
    std::fs::create_dir(dir.path().join("lb.tf")).unwrap();
    let out = locality(&["gen", "spec.hcl", "-o", "lb.tf", "--check"], dir.path());
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read lb.tf"));
    let out = locality(&["gen", "spec.hcl", "-o", "missing.tf", "--check"], dir.path());
    assert_eq!(out.status.code(), Some(1));
}

/// Issue 27: `-o` writes through an exclusive temporary file with a random name; a symlink
/// planted at the name the old code used (`lb.locality-gen.tmp`) is never followed.
#[test]
fn output_is_written_without_following_a_planted_temporary_name() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/generator/tokyo-osaka.hcl"),
        dir.path().join("spec.hcl"),
    )
    .unwrap();
    let victim = dir.path().join("victim");
    std::fs::write(&victim, "keep me").unwrap();
    std::os::unix::fs::symlink(&victim, dir.path().join("lb.locality-gen.tmp")).unwrap();
    let out = locality(&["gen", "spec.hcl", "-o", "lb.tf"], dir.path());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me");
    assert!(std::fs::read_to_string(dir.path().join("lb.tf"))
        .unwrap()
        .contains("google_compute_url_map"));
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        !names.iter().any(|n| n.ends_with(".tmp") && n != "lb.locality-gen.tmp"),
        "{names:?}"
    );
}

/// A JSON spec is JSON (issue 46): missing commas (`"project": "winticket-prod"` directly
/// followed by `"region"`) and trailing commas generated six resources with exit 0, where every
/// JSON parser refuses them. Now `locality gen` refuses them at their place, exit 2, and its hints
/// for a JSON spec are in JSON syntax.
#[test]
fn json_specs_are_read_as_json_with_hints_in_json() {
    let dir = tempfile::tempdir().unwrap();
    let good = std::fs::read_to_string(fixtures().join("json-spec/spec.json")).unwrap();
    let missing_comma = good.replacen("\",\n", "\"\n", 1);
    assert_ne!(missing_comma, good);
    let trailing_comma = good.replacen("100\n", "100,\n", 1);
    assert_ne!(trailing_comma, good);
    for (name, text) in [
        ("missing-comma.json", &missing_comma),
        ("trailing-comma.json", &trailing_comma),
    ] {
        // Every JSON parser refuses it: serde_json does.
        assert!(serde_json::from_str::<serde_json::Value>(text).is_err(), "{name}");
        std::fs::write(dir.path().join(name), text).unwrap();
        let out = locality(&["gen", name], dir.path());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: {stderr}");
        assert!(out.stdout.is_empty(), "{name}: nothing generated");
        assert!(
            stderr.contains(&format!("error: {name}:")) && stderr.contains("syntax error"),
            "{stderr}"
        );
        eprintln!("{stderr}");
    }
    // A JSON spec's hints are JSON; an HCL spec's stay HCL.
    let no_service = serde_json::json!({"service": {"web": {"project": "winticket-prod",
        "region": {"tokyo": {"location": "asia-northeast1"}, "osaka": {"location": "asia-northeast2", "cloud_run": "web"}}}}});
    std::fs::write(dir.path().join("spec.json"), no_service.to_string()).unwrap();
    let out = locality(&["gen", "spec.json"], dir.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("add `\"cloud_run\": \"SERVICE\"`"), "{stderr}");
    assert!(!stderr.contains("cloud_run = "), "{stderr}");
    std::fs::write(
        dir.path().join("spec.hcl"),
        "service \"web\" {\n  project = \"winticket-prod\"\n  region \"tokyo\" {\n    location = \"asia-northeast1\"\n  }\n}\n",
    )
    .unwrap();
    let out = locality(&["gen", "spec.hcl"], dir.path());
    assert!(String::from_utf8_lossy(&out.stderr).contains("add `cloud_run = \"SERVICE\"`"));
}

/// The AWS spec's errors: each at the place the mutated text puts it (line and column found by
/// searching the text, not by the generator), with what is allowed.
#[test]
fn aws_spec_errors_name_their_location_and_what_is_allowed() {
    // The documented example (its output is checked by example_output_is_current and validated
    // by tests/examples.rs).
    let base = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/generator/aws-blue-green/web.hcl"),
    )
    .unwrap();
    let six_groups = base.replace(
        "  target_group \"canary\" {",
        "  target_group \"c1\" {\n    port   = 1\n    weight = 1\n  }\n\n  target_group \"c2\" {\n    port   = 1\n    weight = 1\n  }\n\n  target_group \"c3\" {\n    port   = 1\n    weight = 1\n  }\n\n  target_group \"c4\" {\n    port   = 1\n    weight = 1\n  }\n\n  target_group \"canary\" {",
    );
    let cases: Vec<(String, &str, &[&str])> = vec![
        (
            base.replace("weight = 90", "weight = 1000"),
            "1000",
            &["`weight` must be a whole number from 0 to 999"],
        ),
        (
            base.replace("active = [\"blue\"]", "active = [\"purple\"]"),
            "[\"purple\"]",
            &["target group \"purple\", which is not defined", "target groups: blue, green"],
        ),
        (
            base.replace("loadbalancer/app/web", "targetgroup/web"),
            "\"arn:aws:elasticloadbalancing:ap-northeast-1:123456789012:targetgroup/web",
            &["is not a load balancer ARN", "loadbalancer/app|net/NAME/ID"],
        ),
        (
            base.replace(
                "  certificate_arn   = \"arn:aws:acm:ap-northeast-1:123456789012:certificate/2c5a0f6e-9d4b-4c9e-8a57-5c1b6d2e7f10\"\n",
                "",
            ),
            "\"HTTPS\"",
            &["an HTTPS or TLS listener needs `certificate_arn`"],
        ),
        (
            base.replace("loadbalancer/app/web", "loadbalancer/net/web")
                .replace("\"HTTPS\"", "\"TLS\""),
            "\"5m\"",
            &["takes no stickiness duration", "#45164"],
        ),
        (
            base.replace("active = [\"blue\"]", "active = [\"blue\"]\n  listener_arn = \"arn:aws:elasticloadbalancing:ap-northeast-1:123456789012:listener/app/x/1/2\""),
            "\"arn:aws:elasticloadbalancing:ap-northeast-1:123456789012:listener/app/x/1/2\"",
            &["`load_balancer_arn` and `listener_arn` both given"],
        ),
        (
            base.replace("target_group \"blue\"", "target_group \"blue-blue-blue-blue-blue-blue-blue\""),
            "\"blue-blue-",
            &["\"web-blue-blue-blue-blue-blue-blue-blue\" is not one AWS takes", "at most 32 characters"],
        ),
        (six_groups, "\"api\" {", &["has 6 target groups; a forward action takes at most 5"]),
        (
            base.replace("listener/app/web", "listener/net/web"),
            "\"arn:aws:elasticloadbalancing:ap-northeast-1:123456789012:listener/net",
            &["a Network Load Balancer's listener has no rules"],
        ),
        (
            base.replacen("\"locality_lb_forward_weights\"", "\"locality_lb_forward_weight\"", 1),
            "\"locality_lb_forward_weight\"",
            &["did you mean \"locality_lb_forward_weights\"", "\"codedeploy\", \"ecs\""],
        ),
        (
            base.replace("  priority      = 10\n", "  priority      = 10\n  active        = [\"stable\"]\n"),
            "[\"stable\"]",
            &["`active` and target groups' `weight` both given"],
        ),
        (
            base.replace("weight = 90", "weight = 0").replace("weight = 10", "weight = 0"),
            "\"api\" {",
            &["every target group's weight is 0"],
        ),
        (
            base.replace("  port = 8080\n  }\n\n  target_group \"green\"", "  }\n\n  target_group \"green\""),
            "\"blue\" {",
            &["target_group \"blue\" is missing the required attribute `port`"],
        ),
        (
            base.replace("  stickiness = \"5m\"\n", "  stickiness = \"5m\"\n  description = \"web\"\n"),
            "description",
            &["unknown `description` in forward \"web\"", "allowed here: attributes load_balancer_arn"],
        ),
    ];
    for (text, needle, words) in cases {
        assert_ne!(text, base, "the case changes the spec ({needle})");
        let at = text.find(needle).unwrap_or_else(|| panic!("{needle} not in the case"));
        let line = text[..at].matches('\n').count() + 1;
        let column = text[..at].rsplit('\n').next().unwrap().chars().count() + 1;
        let location = format!("spec.hcl:{line}:{column}");
        let source = SourceFile {
            name: "spec.hcl",
            text: &text,
        };
        let generated = generate(&source, Format::Hcl);
        assert!(
            generated.text.is_none(),
            "{location}: an invalid spec must produce nothing"
        );
        let rendered: String = generated
            .diagnostics
            .iter()
            .filter(|d| d.level == Level::Error)
            .map(|d| source.render(d))
            .collect();
        assert!(
            rendered.contains(&format!("error: {location}: ")),
            "expected {location}:\n{rendered}"
        );
        for word in words {
            assert!(rendered.contains(word), "expected {word:?}:\n{rendered}");
        }
    }
}
