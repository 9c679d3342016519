//! Provider-defined functions through the real Terraform CLI, 1.11.4 and 1.15.5: `terraform
//! console` calls (a hit, a miss, bad arguments), the documented examples applied as written
//! (their outputs, then an empty plan), and the definitions Terraform reads next to the
//! signature the docs show.

mod common;

use common::{terraform_1_15, terraform_binary, Terraform};

const VERSIONS_TF: &str = r#"terraform {
  required_providers {
    locality = { source = "locality/locality" }
  }
}
"#;

fn console(tf: &Terraform, expression: &str) -> (i32, String) {
    use std::io::Write;
    let mut child = tf
        .command(&["console"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(format!("{expression}\n").as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

#[test]
fn functions_in_console_and_outputs_under_both_terraform_versions() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    for binary in [terraform_binary(), terraform_1_15()] {
        let tf = Terraform::dev_overrides().with_binary(&binary);
        let version = tf.version();
        tf.write("versions.tf", VERSIONS_TF);

        // A hit: the object, every attribute.
        let (code, out) = console(&tf, r#"provider::locality::cloud_region("3.112.0.10")"#);
        assert_eq!(code, 0, "{version}: {out}");
        for line in [
            r#""hint" = "aws:ap-northeast-1""#,
            r#""region" = "ap-northeast-1""#,
            r#""vendor" = "aws""#,
            r#""prefix" = "#,
            r#""service" = "#,
        ] {
            assert!(out.contains(line), "{version}: {line} missing from\n{out}");
        }
        // A miss: null.
        let (code, out) = console(&tf, r#"provider::locality::cloud_region("192.0.2.10")"#);
        assert_eq!((code, out.trim()), (0, "null /* object */"), "{version}");
        let (code, out) = console(&tf, r#"provider::locality::canonical_ip("2001:DB8:0:0:0:0:0:0001")"#);
        assert_eq!((code, out.trim()), (0, "\"2001:db8::1\""), "{version}");
        // Bad arguments: an error on the argument, naming it and what is allowed; no crash.
        for (expression, shown) in [
            (
                r#"provider::locality::cloud_region("not-an-ip")"#,
                r#"Invalid value for "ip" parameter: "not-an-ip" is not an IPv4 or IPv6 address; expected e.g. "192.0.2.1""#,
            ),
            (
                r#"provider::locality::canonical_ip("2001:db8::g")"#,
                r#"Invalid value for "ip" parameter: "2001:db8::g" is not an IPv4 or IPv6 address"#,
            ),
        ] {
            let (code, out) = console(&tf, expression);
            // (Terraform wraps long lines.)
            let out = out.split_whitespace().collect::<Vec<_>>().join(" ");
            assert_ne!(code, 0, "{version}: {out}");
            assert!(
                out.contains("Invalid function argument") && out.contains(shown),
                "{version}: {out}"
            );
            assert!(
                !out.contains("panic") && !out.contains("Plugin did not respond"),
                "{version}: {out}"
            );
        }
        let (code, out) = console(&tf, r#"provider::locality::cloud_region(null)"#);
        assert_ne!(code, 0, "{version}: {out}");
        assert!(out.contains("Invalid function argument"), "{version}: {out}");

        // The documented examples, as written: apply, the outputs, an empty plan.
        for name in ["cloud_region", "canonical_ip"] {
            let example = std::fs::read_to_string(root.join(format!("examples/functions/{name}/function.tf"))).unwrap();
            tf.write(&format!("{name}.tf"), &example);
        }
        tf.ok(&["apply", "-auto-approve"]);
        assert_eq!(tf.output("origin_key"), "2001:db8::1", "{version}");
        let hints: serde_json::Value = serde_json::from_str(&tf.ok(&["output", "-json", "origin_hints"])).unwrap();
        assert_eq!(
            hints,
            serde_json::json!({"3.112.0.10": "aws:ap-northeast-1", "34.85.1.1": "gcp:asia-northeast1"}),
            "{version}"
        );
        tf.assert_no_changes();

        // The definitions Terraform reads, next to the docs' signatures.
        let schema: serde_json::Value = serde_json::from_str(&tf.ok(&["providers", "schema", "-json"])).unwrap();
        let functions = schema["provider_schemas"]["registry.terraform.io/locality/locality"]["functions"]
            .as_object()
            .unwrap_or_else(|| panic!("{version}: no functions in {schema}"));
        for name in ["cloud_region", "canonical_ip"] {
            let function = &functions[name];
            let parameters: Vec<String> = function["parameters"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| format!("{} {}", p["name"].as_str().unwrap(), friendly(&p["type"])))
                .collect();
            let signature = format!(
                "{name}({}) {}",
                parameters.join(", "),
                friendly(&function["return_type"])
            );
            let page = std::fs::read_to_string(root.join(format!("docs/functions/{name}.md"))).unwrap();
            assert!(
                page.contains(&format!("```text\n{signature}\n```")),
                "{version}: {signature} not in docs/functions/{name}.md"
            );
            assert!(function["description"].as_str().unwrap().len() > 50);
        }
    }
}

/// `string`, `object`, ... of a cty type in JSON.
fn friendly(ty: &serde_json::Value) -> String {
    match ty {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Array(parts) => parts[0].as_str().unwrap_or_default().to_string(),
        _ => "dynamic".into(),
    }
}
