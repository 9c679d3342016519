//! `locality_zone_replica_map` with the file target, driven by the real terraform CLI:
//! the whole lifecycle through dev_overrides and through an offline filesystem mirror,
//! invalid configurations, unknown values, and logging without secrets.

mod common;

use common::{Terraform, PREAMBLE};

fn config(members: &[(&str, &str, &str)], path: &str) -> String {
    let mut out = format!("{PREAMBLE}\nprovider \"locality\" {{}}\n\nresource \"locality_zone_replica_map\" \"cache\" {{\n  fallback_endpoint = \"reader.example:6379\"\n");
    for (endpoint, zone, role) in members {
        out.push_str(&format!("\n  member {{\n    endpoint = \"{endpoint}\"\n    zone     = \"{zone}\"\n    role     = \"{role}\"\n  }}\n"));
    }
    out.push_str(&format!("\n  file {{\n    path = \"{path}\"\n  }}\n}}\n\noutput \"document\" {{\n  value     = locality_zone_replica_map.cache.document\n  sensitive = true\n}}\n"));
    out
}

const TOPOLOGY: &[(&str, &str, &str)] = &[
    ("node-001.example:6379", "ap-northeast-1a", "primary"),
    ("node-002.example:6379", "ap-northeast-1c", "replica"),
    ("node-003.example:6379", "ap-northeast-1d", "replica"),
];

const DOC: &str = r#"{"version":1,"fallback":"reader.example:6379","zones":{"ap-northeast-1c":"node-002.example:6379","ap-northeast-1d":"node-003.example:6379"},"nodes":[{"endpoint":"node-001.example:6379","role":"primary","zone":"ap-northeast-1a"},{"endpoint":"node-002.example:6379","role":"replica","zone":"ap-northeast-1c"},{"endpoint":"node-003.example:6379","role":"replica","zone":"ap-northeast-1d"}]}"#;

#[test]
fn full_lifecycle_through_dev_overrides() {
    let tf = Terraform::dev_overrides();
    tf.write("main.tf", &config(TOPOLOGY, "out/replicas.json"));

    // create → the published document is exact, and the next plan is empty
    let out = tf.ok(&["apply", "-auto-approve"]);
    assert!(out.contains("1 added"), "{out}");
    assert_eq!(tf.read("out/replicas.json").as_deref(), Some(DOC));
    assert_eq!(tf.output("document"), DOC);
    tf.assert_no_changes();

    // change a member → update in place, and the plan names the AZ that changes
    let moved = [
        TOPOLOGY[0],
        ("node-004.example:6379", "ap-northeast-1c", "replica"),
        TOPOLOGY[2],
    ];
    tf.write("main.tf", &config(&moved, "out/replicas.json"));
    let (code, plan) = tf.plan_exit_code();
    assert_eq!(code, 2);
    assert!(plan.contains("will be updated in-place"), "{plan}");
    assert!(
        plan.contains(r#""ap-northeast-1c" = "node-002.example:6379" -> "node-004.example:6379""#),
        "{plan}"
    );
    tf.ok(&["apply", "-auto-approve"]);
    assert!(tf.read("out/replicas.json").unwrap().contains("node-004.example:6379"));
    tf.assert_no_changes();

    // change the path → replace: the new file exists, the old one is gone
    tf.write("main.tf", &config(&moved, "out/moved.json"));
    let (code, plan) = tf.plan_exit_code();
    assert_eq!(code, 2);
    assert!(plan.contains("must be replaced"), "{plan}");
    assert!(plan.contains("# forces replacement"), "{plan}");
    tf.ok(&["apply", "-auto-approve"]);
    assert!(!tf.exists("out/replicas.json"));
    assert!(tf.exists("out/moved.json"));
    tf.assert_no_changes();

    // edit the published file by hand → the plan shows the drift on that AZ; apply restores it
    let good = tf.read("out/moved.json").unwrap();
    tf.write(
        "out/moved.json",
        &good.replace("node-003.example:6379", "rogue.example:6379"),
    );
    let (code, plan) = tf.plan_exit_code();
    assert_eq!(code, 2, "{plan}");
    assert!(
        plan.contains(r#""ap-northeast-1d" = "rogue.example:6379" -> "node-003.example:6379""#),
        "{plan}"
    );
    tf.ok(&["apply", "-auto-approve"]);
    assert_eq!(tf.read("out/moved.json").unwrap(), good);
    tf.assert_no_changes();

    // the file deleted by hand → the plan re-creates it
    std::fs::remove_file(tf.path("out/moved.json")).unwrap();
    let (code, plan) = tf.plan_exit_code();
    assert_eq!(code, 2);
    assert!(plan.contains("will be created"), "{plan}");
    tf.ok(&["apply", "-auto-approve"]);
    assert_eq!(tf.read("out/moved.json").unwrap(), good);

    // terraform import of the file this configuration published: the `member` blocks (listed
    // here out of the document's order: they are a set) and `uncovered_zones` are read back from
    // the document, so the plan is empty (issue 46, item 5: it was "1 to change", adding them).
    tf.ok(&["state", "rm", "locality_zone_replica_map.cache"]);
    let out = tf.ok(&["import", "locality_zone_replica_map.cache", "file:out/moved.json"]);
    assert!(out.contains("Import successful"), "{out}");
    tf.assert_no_changes();
    let state = tf.ok(&["state", "show", "locality_zone_replica_map.cache"]);
    assert!(
        state.contains("uncovered_zones") && state.contains("ap-northeast-1a"),
        "{state}"
    );
    assert_eq!(tf.read("out/moved.json").unwrap(), good);

    // an import {} block, with a bare path as the ID: imported, and nothing else to do
    tf.ok(&["state", "rm", "locality_zone_replica_map.cache"]);
    tf.write(
        "import.tf",
        "import {\n  to = locality_zone_replica_map.cache\n  id = \"out/moved.json\"\n}\n",
    );
    let (code, plan) = tf.plan_exit_code();
    assert_eq!(code, 2);
    assert!(
        plan.split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .contains("Plan: 1 to import, 0 to add, 0 to change, 0 to destroy"),
        "{plan}"
    );
    tf.ok(&["apply", "-auto-approve"]);
    std::fs::remove_file(tf.path("import.tf")).unwrap();
    tf.assert_no_changes();

    // apply -refresh-only records an out-of-band edit in state and leaves the file alone
    let edited = good.replace("node-003.example:6379", "hand-edit.example:6379");
    tf.write("out/moved.json", &edited);
    tf.ok(&["apply", "-refresh-only", "-auto-approve"]);
    assert_eq!(tf.output("document"), edited);
    assert_eq!(tf.read("out/moved.json").unwrap(), edited);
    let (code, _) = tf.plan_exit_code();
    assert_eq!(code, 2, "the edit is still drift from the configuration");
    tf.ok(&["apply", "-auto-approve"]);
    assert_eq!(tf.read("out/moved.json").unwrap(), good);

    // destroy removes the file
    tf.ok(&["destroy", "-auto-approve"]);
    assert!(!tf.exists("out/moved.json"));
}

/// An import block with `-generate-config-out` and no resource written: Terraform writes the
/// configuration from what the import read back (the `member` blocks from the document's
/// nodes), and that configuration plans nothing and publishes the same bytes.
#[test]
fn generated_configuration_of_an_import_plans_nothing() {
    let tf = Terraform::dev_overrides();
    // Members out of the document's order (a set), one of them with its role left to the default.
    let members = [
        ("node-003.example:6379", "ap-northeast-1d", "replica"),
        ("node-001.example:6379", "ap-northeast-1a", "primary"),
        ("node-002.example:6379", "ap-northeast-1c", "replica"),
    ];
    tf.write(
        "main.tf",
        &config(&members, "replicas.json").replacen("\n    role     = \"replica\"", "", 1),
    );
    tf.ok(&["apply", "-auto-approve"]);
    assert_eq!(tf.read("replicas.json").as_deref(), Some(DOC));
    std::fs::remove_file(tf.path("terraform.tfstate")).unwrap();
    tf.write(
        "main.tf",
        &format!("{PREAMBLE}\nprovider \"locality\" {{}}\n\nimport {{\n  to = locality_zone_replica_map.cache\n  id = \"replicas.json\"\n}}\n"),
    );
    tf.ok(&["plan", "-generate-config-out=generated.tf"]);
    let generated = tf.read("generated.tf").unwrap();
    for (endpoint, _, _) in members {
        assert!(generated.contains(&format!("endpoint = \"{endpoint}\"")), "{generated}");
    }
    let out = tf.ok(&["apply", "-auto-approve"]);
    assert!(out.contains("1 imported, 0 added, 0 changed, 0 destroyed"), "{out}");
    tf.assert_no_changes();
    assert_eq!(tf.read("replicas.json").as_deref(), Some(DOC));
}

#[test]
fn lifecycle_through_filesystem_mirror_with_lock_file() {
    let tf = Terraform::mirror();
    let main = config(TOPOLOGY, "replicas.json").replace(
        "source = \"locality/locality\"",
        &format!(
            "source  = \"locality/locality\"\n      version = \"~> {}\"",
            common::VERSION
        ),
    );
    tf.write("main.tf", &main);
    let out = tf.ok(&["init"]);
    assert!(
        out.contains(&format!("Installed locality/locality v{}", common::VERSION)),
        "{out}"
    );
    let lock = tf.read(".terraform.lock.hcl").expect("lock file");
    assert!(
        lock.contains("provider \"registry.terraform.io/locality/locality\""),
        "{lock}"
    );
    assert!(lock.contains("h1:"), "{lock}");

    tf.ok(&["apply", "-auto-approve"]);
    assert_eq!(tf.read("replicas.json").as_deref(), Some(DOC));
    tf.assert_no_changes();
    tf.ok(&["destroy", "-auto-approve"]);
    assert!(!tf.exists("replicas.json"));
}

/// Every invalid configuration fails at validate with the diagnostic on the offending line.
#[test]
fn invalid_configurations_point_at_the_attribute() {
    let tf = Terraform::dev_overrides();
    // `member` blocks are a set: Terraform gives them to the provider in no order of the
    // file's, so their problems point at the resource and name the node by its endpoint.
    const RESOURCE: &str = r#"resource "locality_zone_replica_map" "cache""#;
    let cases: &[(&str, &str, &str, &str)] = &[
        // (what to replace in the valid config, replacement, text expected (whitespace collapsed), source text expected on the error line)
        (
            "node-002.example:6379",
            "node-002.example",
            r#"Invalid endpoint"#,
            RESOURCE,
        ),
        (
            "node-002.example:6379",
            "node-002.example:99999",
            r#""node-002.example:99999" has port "99999"; the port must be a number from 1 to 65535"#,
            RESOURCE,
        ),
        (
            "ap-northeast-1c",
            "tokyo-c",
            r#"member "node-002.example:6379": "tokyo-c" is not an availability zone name"#,
            RESOURCE,
        ),
        (
            r#"role     = "replica""#,
            r#"role     = "reader""#,
            r#"member "node-002.example:6379": "reader" is not a role; allowed: "replica", "primary"."#,
            RESOURCE,
        ),
        (
            "node-003.example:6379",
            "node-002.example:6379",
            r#""node-002.example:6379" is in two member blocks"#,
            RESOURCE,
        ),
        (
            r#"role     = "replica""#,
            r#"role     = "primary""#,
            "More than one primary",
            RESOURCE,
        ),
        (
            "fallback_endpoint = \"reader.example:6379\"",
            "fallback_endpoint = \"reader.example\"",
            "Invalid endpoint",
            "fallback_endpoint = \"reader.example\"",
        ),
        (
            "fallback_endpoint = \"reader.example:6379\"",
            "",
            "Missing fallback endpoint",
            "resource \"locality_zone_replica_map\" \"cache\"",
        ),
        (
            "file {\n    path = \"replicas.json\"\n  }",
            "",
            "Missing publish target",
            "resource \"locality_zone_replica_map\" \"cache\"",
        ),
        (
            "path = \"replicas.json\"",
            "path = \"dir/\"",
            "Invalid path",
            "path = \"dir/\"",
        ),
        (
            "provider \"locality\" {}",
            "provider \"locality\" {\n  cloudflare {\n    base_url = \"http://api.example.com\"\n  }\n}",
            "Invalid URL",
            "base_url = \"http://api.example.com\"",
        ),
    ];
    let valid = config(TOPOLOGY, "replicas.json");
    tf.ok(&["validate"]);
    for (from, to, summary, line) in cases {
        assert!(valid.contains(from), "case {from:?} does not apply");
        let broken = valid.replacen(from, to, if from.contains("node-003") { 1 } else { usize::MAX });
        // Only the replica member is edited for role cases: keep the primary intact.
        let broken = if from.starts_with("role") {
            valid.replacen(from, to, 1)
        } else {
            broken
        };
        tf.write("main.tf", &broken);
        let out = tf.fails(&["validate"]);
        // Terraform wraps long details: compare with whitespace collapsed.
        let flat = out.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(flat.contains(summary), "expected {summary:?}:\n{out}");
        assert!(out.contains(line), "expected the diagnostic to show {line:?}:\n{out}");
    }
    // Terraform's own limit: one file block.
    tf.write(
        "main.tf",
        &valid.replace("file {", "file {\n    path = \"a.json\"\n  }\n  file {"),
    );
    let out = tf.fails(&["validate"]);
    assert!(out.contains("Too many file blocks"), "{out}");
    // No member blocks at all.
    let mut none = valid.clone();
    for (endpoint, _, _) in TOPOLOGY {
        let start = none
            .find(&format!("  member {{\n    endpoint = \"{endpoint}\""))
            .unwrap();
        let end = start + none[start..].find("}\n").unwrap() + 2;
        none.replace_range(start..end, "");
    }
    tf.write("main.tf", &none);
    let out = tf.fails(&["validate"]);
    assert!(out.contains("Missing topology"), "{out}");
}

/// A member endpoint that comes from another resource is unknown at plan time: the plan
/// shows the document as known after apply, and apply publishes the real value.
#[test]
fn unknown_values_plan_and_apply() {
    let tf = Terraform::dev_overrides();
    let main = config(TOPOLOGY, "replicas.json").replace("\"node-003.example:6379\"", "terraform_data.node.output")
        + "\nresource \"terraform_data\" \"node\" {\n  input = \"node-009.example:6379\"\n}\n";
    tf.write("main.tf", &main);
    let (code, plan) = tf.plan_exit_code();
    assert_eq!(code, 2);
    assert!(plan.contains("document          = (sensitive value)"), "{plan}");
    assert!(
        plan.contains("id                = \"file:replicas.json\""),
        "known parts stay known:\n{plan}"
    );
    tf.ok(&["apply", "-auto-approve"]);
    assert!(tf
        .read("replicas.json")
        .unwrap()
        .contains(r#""ap-northeast-1d":"node-009.example:6379""#));
    tf.assert_no_changes();
}

/// With provider logging on, the logs are hclog JSON on stderr, never contain a credential,
/// and every provider process exits promptly on Shutdown (no 2-second kill).
#[test]
fn logs_hold_no_secrets_and_processes_exit_gracefully() {
    let mut tf = Terraform::dev_overrides();
    tf.env("TF_LOG", "trace");
    tf.env("CLOUDFLARE_API_TOKEN", "env-token-7f3a9c");
    let main = config(TOPOLOGY, "replicas.json").replace(
        "provider \"locality\" {}",
        "provider \"locality\" {\n  cloudflare {\n    api_token = \"block-token-5e1d2b\"\n  }\n  google {\n    access_token = \"google-token-44aa\"\n  }\n}",
    );
    tf.write("main.tf", &main);
    let run = tf.run(&["apply", "-auto-approve"]);
    assert_eq!(run.code, 0, "{}", run.all());
    let logs = run.all();
    assert!(
        logs.contains("provider.terraform-provider-locality"),
        "provider logs reach Terraform"
    );
    assert!(logs.contains("ApplyResourceChange"), "provider logs at debug level");
    for secret in ["block-token-5e1d2b", "env-token-7f3a9c", "google-token-44aa"] {
        // Terraform itself may echo configuration it parsed; what matters is that no
        // provider log line carries it.
        for line in logs
            .lines()
            .filter(|l| l.contains("provider.terraform-provider-locality"))
        {
            assert!(!line.contains(secret), "secret in a provider log line: {line}");
        }
    }
    assert!(
        !logs.contains("plugin failed to exit gracefully"),
        "a provider process had to be killed"
    );
    assert!(
        logs.contains("plugin exited"),
        "{}",
        &logs[logs.len().saturating_sub(2000)..]
    );
}

/// Issue 11: `dynamic "member"` blocks whose `for_each` comes from another resource are unknown
/// at plan time. The block list stays unknown (it used to become empty and fail with "Missing
/// topology"); the plan shows the document as known after apply, and apply publishes it.
#[test]
fn dynamic_members_unknown_at_plan_time() {
    let tf = Terraform::dev_overrides();
    tf.write(
        "main.tf",
        &format!(
            r#"{PREAMBLE}
provider "locality" {{}}

resource "terraform_data" "nodes" {{
  input = {{
    "node-002.example:6379" = "ap-northeast-1c"
    "node-003.example:6379" = "ap-northeast-1d"
  }}
}}

resource "locality_zone_replica_map" "cache" {{
  fallback_endpoint = "reader.example:6379"

  dynamic "member" {{
    for_each = terraform_data.nodes.output
    content {{
      endpoint = member.key
      zone     = member.value
    }}
  }}

  file {{
    path = "replicas.json"
  }}
}}
"#
        ),
    );
    let (code, plan) = tf.plan_exit_code();
    assert_eq!(code, 2, "{plan}");
    assert!(!plan.contains("Missing topology"), "{plan}");
    assert!(plan.contains("document          = (sensitive value)"), "{plan}");
    tf.ok(&["apply", "-auto-approve"]);
    // The two replicas of the dynamic blocks, without the primary.
    let without_primary = DOC.replace(
        r#"{"endpoint":"node-001.example:6379","role":"primary","zone":"ap-northeast-1a"},"#,
        "",
    );
    assert_eq!(tf.read("replicas.json").unwrap(), without_primary);
    tf.assert_no_changes();
}

/// Issue 11: two resources publishing different maps to one file is a plan-time error on the
/// second one's `path` (they would overwrite each other at every apply).
#[test]
fn two_resources_publishing_to_one_file_is_a_plan_time_error() {
    let tf = Terraform::dev_overrides();
    let first = config(TOPOLOGY, "out/replicas.json");
    let second = config(&TOPOLOGY[..2], "./out/../out/replicas.json")
        .split("resource \"locality_zone_replica_map\"")
        .nth(1)
        .unwrap()
        .split("output \"document\"")
        .next()
        .unwrap()
        .replacen("\"cache\"", "\"other\"", 1)
        .replace("out/../out/replicas.json", "out/replicas.json");
    tf.write(
        "main.tf",
        &format!("{first}\nresource \"locality_zone_replica_map\"{second}"),
    );
    let out = tf.fails(&["plan"]);
    assert!(out.contains("File published twice"), "{out}");
    assert!(
        out.contains("path = \"./out/replicas.json\"") || out.contains("path = \"out/replicas.json\""),
        "{out}"
    );
    assert!(!tf.exists("out/replicas.json"), "nothing written");
}

/// `zone_ids` and `spread_replicas`: opt-in additions to the document. `zone_ids` unknown at
/// plan time (from another resource) plans the document unknown, and apply publishes it;
/// without them the document is exactly what it was (no plan diff after an upgrade); bad
/// names or IDs are errors on the map's key. (Every document lists its `nodes`, with their
/// `zone_id` once `zone_ids` is set.)
#[test]
fn zone_ids_and_spread_replicas() {
    let tf = Terraform::dev_overrides();
    let members: &[(&str, &str, &str)] = &[
        ("node-001.example:6379", "ap-northeast-1a", "primary"),
        ("node-002.example:6379", "ap-northeast-1c", "replica"),
        ("node-004.example:6379", "ap-northeast-1c", "replica"),
    ];
    let plain = config(members, "replicas.json");
    tf.write("main.tf", &plain);
    tf.ok(&["apply", "-auto-approve"]);
    let before = tf.output("document");
    assert!(!before.contains("zone_ids") && !before.contains("replicas"), "{before}");

    let extra = "  zone_ids = {\n    \"ap-northeast-1a\" = \"apne1-az4\"\n    \"ap-northeast-1c\" = terraform_data.az.output\n  }\n  spread_replicas = true\n";
    let with = plain.replacen("  fallback_endpoint", &format!("{extra}  fallback_endpoint"), 1)
        + "\nresource \"terraform_data\" \"az\" {\n  input = \"apne1-az1\"\n}\n\noutput \"by_id\" {\n  value = locality_zone_replica_map.cache.endpoints_by_zone_id\n}\n";
    tf.write("main.tf", &with);
    let (code, plan) = tf.plan_exit_code();
    assert_eq!(code, 2, "{plan}");
    assert!(plan.contains("endpoints_by_zone_id = (known after apply)"), "{plan}");
    tf.ok(&["apply", "-auto-approve"]);
    tf.assert_no_changes();
    let doc = std::fs::read_to_string(tf.path("replicas.json")).unwrap();
    assert_eq!(
        doc,
        r#"{"version":1,"fallback":"reader.example:6379","zones":{"ap-northeast-1c":"node-002.example:6379"},"zone_ids":{"apne1-az1":"node-002.example:6379"},"replicas":{"ap-northeast-1c":["node-002.example:6379","node-004.example:6379"],"apne1-az1":["node-002.example:6379","node-004.example:6379"]},"nodes":[{"endpoint":"node-001.example:6379","role":"primary","zone":"ap-northeast-1a","zone_id":"apne1-az4"},{"endpoint":"node-002.example:6379","role":"replica","zone":"ap-northeast-1c","zone_id":"apne1-az1"},{"endpoint":"node-004.example:6379","role":"replica","zone":"ap-northeast-1c","zone_id":"apne1-az1"}]}"#
    );
    assert!(tf
        .ok(&["output", "-json", "by_id"])
        .contains("\"apne1-az1\":\"node-002.example:6379\""));

    // An import reads back what the document shows: the members, `zone_ids` (from the nodes'
    // `zone_id`s), `spread_replicas` and, in a second round, `read_from_primary` (the only
    // setting that gives AZ 1a its primary): each import plans nothing.
    let import = |tf: &Terraform| {
        tf.ok(&["state", "rm", "locality_zone_replica_map.cache"]);
        tf.ok(&["import", "locality_zone_replica_map.cache", "replicas.json"]);
        tf.assert_no_changes();
    };
    import(&tf);
    let from_primary = with.replacen(
        "  spread_replicas = true\n",
        "  spread_replicas = true\n  read_from_primary = true\n",
        1,
    );
    tf.write("main.tf", &from_primary);
    tf.ok(&["apply", "-auto-approve"]);
    assert!(tf
        .read("replicas.json")
        .unwrap()
        .contains(r#""ap-northeast-1a":"node-001.example:6379""#));
    import(&tf);

    // Back to the plain configuration: the document is the old one again, byte for byte.
    tf.write("main.tf", &plain);
    tf.ok(&["apply", "-auto-approve"]);
    assert_eq!(tf.output("document"), before);

    // Names and IDs the other way round: errors naming the key.
    let bad = plain.replacen(
        "  fallback_endpoint",
        "  zone_ids = {\n    \"apne1-az4\" = \"ap-northeast-1a\"\n  }\n  fallback_endpoint",
        1,
    );
    tf.write("main.tf", &bad);
    let out = tf.fails(&["validate"]).split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(out.contains("\"apne1-az4\" is not an availability zone name"), "{out}");
    assert!(
        out.contains("\"ap-northeast-1a\" is not an availability zone ID"),
        "{out}"
    );
}

/// Out-of-band edits of `replicas` and `zone_ids` show in the plan under the AZ (name or ID)
/// whose entry changed, like `zones` — not only as the sensitive `document` and a new
/// `version`. (Before the fix, an edited replica list showed no AZ at all.)
#[test]
fn drift_in_replicas_and_zone_ids_names_the_zone() {
    let tf = Terraform::dev_overrides();
    let members: &[(&str, &str, &str)] = &[
        ("node-001.example:6379", "ap-northeast-1a", "primary"),
        ("node-002.example:6379", "ap-northeast-1c", "replica"),
        ("node-004.example:6379", "ap-northeast-1c", "replica"),
    ];
    let extra = "  zone_ids = {\n    \"ap-northeast-1a\" = \"apne1-az4\"\n    \"ap-northeast-1c\" = \"apne1-az1\"\n  }\n  spread_replicas = true\n";
    let main =
        config(members, "replicas.json").replacen("  fallback_endpoint", &format!("{extra}  fallback_endpoint"), 1);
    tf.write("main.tf", &main);
    tf.ok(&["apply", "-auto-approve"]);
    tf.assert_no_changes();
    let published = std::fs::read_to_string(tf.path("replicas.json")).unwrap();

    // One AZ's replica list edited (a node dropped by hand).
    let edited = published.replacen(
        r#""ap-northeast-1c":["node-002.example:6379","node-004.example:6379"]"#,
        r#""ap-northeast-1c":["node-002.example:6379"]"#,
        1,
    );
    assert_ne!(edited, published);
    std::fs::write(tf.path("replicas.json"), &edited).unwrap();
    let (code, plan) = tf.plan_exit_code();
    assert_eq!(code, 2, "{plan}");
    let flat = plan.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains("~ replicas = {")
            && flat.contains("~ \"ap-northeast-1c\" = [")
            && flat.contains("+ \"node-004.example:6379\","),
        "{plan}"
    );
    assert!(!flat.contains("~ \"apne1-az1\" = ["), "only the edited list: {plan}");
    tf.ok(&["apply", "-auto-approve"]);
    assert_eq!(std::fs::read_to_string(tf.path("replicas.json")).unwrap(), published);

    // One AZ ID's entry edited.
    let edited = published.replacen(
        r#""apne1-az1":"node-002.example:6379""#,
        r#""apne1-az1":"stale.example:6379""#,
        1,
    );
    assert_ne!(edited, published);
    std::fs::write(tf.path("replicas.json"), &edited).unwrap();
    let (code, plan) = tf.plan_exit_code();
    assert_eq!(code, 2, "{plan}");
    let flat = plan.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains("~ endpoints_by_zone_id = {")
            && flat.contains("~ \"apne1-az1\" = \"stale.example:6379\" -> \"node-002.example:6379\""),
        "{plan}"
    );
    tf.ok(&["apply", "-auto-approve"]);
    tf.assert_no_changes();
}

/// Issue 27, files: refresh and import read the map's path itself (a symlink there, a
/// directory, a file over 4 MiB are errors, and nothing they point to reaches state); writes
/// give mode 0600 whatever the old file's mode (setuid, world-writable); a path with `..` is
/// refused; a file already there at create is replaced with a warning. (Before: refresh
/// followed a symlink and stored the 0600 file it pointed to in terraform.tfstate; a write
/// kept an existing file's setuid and world-writable bits.)
#[test]
fn the_map_file_is_read_and_written_as_itself() {
    use std::os::unix::fs::PermissionsExt as _;
    let tf = Terraform::dev_overrides();
    let mode = |p: &std::path::Path| std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777;
    // A file already at the path, setuid and world-writable: adopted with a warning, 0600.
    tf.write("replicas.json", "old content");
    std::fs::set_permissions(tf.path("replicas.json"), std::fs::Permissions::from_mode(0o4777)).unwrap();
    tf.write("main.tf", &config(TOPOLOGY, "replicas.json"));
    let out = tf.ok(&["apply", "-auto-approve"]);
    assert!(out.contains("Existing file replaced"), "{out}");
    assert_eq!(std::fs::read_to_string(tf.path("replicas.json")).unwrap(), DOC);
    assert_eq!(mode(&tf.path("replicas.json")), 0o600);

    // A symlink planted at the path, to a private file: refresh refuses it, and the private
    // content never reaches the state.
    tf.write("private.txt", "PRIVATE-MARKER db_password=hunter2");
    std::fs::set_permissions(tf.path("private.txt"), std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::remove_file(tf.path("replicas.json")).unwrap();
    std::os::unix::fs::symlink(tf.path("private.txt"), tf.path("replicas.json")).unwrap();
    let out = tf.fails(&["plan"]).split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(out.contains("it is a symbolic link, which is not followed"), "{out}");
    assert!(!out.contains("PRIVATE-MARKER"), "{out}");
    assert!(!tf.read("terraform.tfstate").unwrap().contains("PRIVATE-MARKER"));
    // Import through a symlink, of a directory, of a huge file: refused, nothing stored.
    let import = |id: &str| {
        tf.ok(&["state", "rm", "locality_zone_replica_map.cache"]);
        let out = tf
            .fails(&["import", "locality_zone_replica_map.cache", id])
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        assert!(
            !tf.read("terraform.tfstate")
                .unwrap_or_default()
                .contains("PRIVATE-MARKER"),
            "{out}"
        );
        out
    };
    let out = import(&format!("file:{}", tf.path("replicas.json").display()));
    assert!(out.contains("symbolic link"), "{out}");
    // (Back to a state holding the resource, for the next imports' `state rm`.)
    std::fs::remove_file(tf.path("replicas.json")).unwrap();
    tf.ok(&["apply", "-auto-approve"]);
    let out = import(&format!("file:{}", tf.dir.path().display()));
    assert!(out.contains("not a regular file"), "{out}");
    tf.ok(&["apply", "-auto-approve"]);
    tf.write("huge.json", &"x".repeat(5 << 20));
    let out = import(&format!("file:{}", tf.path("huge.json").display()));
    assert!(out.contains("larger than 4194304 bytes"), "{out}");
    // A kind that does not exist, and a file that is not there (issue 46): said as such, not
    // taken as a file named `s3:foo`, not Terraform's "Cannot import non-existent remote object".
    tf.ok(&["apply", "-auto-approve"]);
    let out = import("s3:foo");
    assert!(
        out.contains("\"s3\" is not a place this resource publishes to")
            && out.contains("file:<path>, ssm:<name>, secretsmanager:<secret>"),
        "{out}"
    );
    tf.ok(&["apply", "-auto-approve"]);
    let out = import("file:missing.json");
    assert!(
        out.contains(&format!(
            "{}: there is no file there",
            tf.path("missing.json").display()
        )),
        "{out}"
    );
    assert!(!out.contains("non-existent remote object"), "{out}");

    // `..` in the path: refused at plan time.
    tf.write("main.tf", &config(TOPOLOGY, "out/../../replicas.json"));
    let out = tf.fails(&["validate"]).split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(out.contains("has `..` components"), "{out}");
}

/// Issue 37: a `file` path any of whose directories is a symbolic link is refused on create,
/// refresh, import and destroy, naming that directory: nothing is written, read, stored or
/// removed where the link points. (Before: only the last component was checked, so a
/// directory swapped for a link to another user's folder was read into state and written to.)
#[test]
fn a_symlinked_directory_on_the_way_is_refused_and_named() {
    let tf = Terraform::dev_overrides();
    let flat = |out: String| out.split_whitespace().collect::<Vec<_>>().join(" ");
    tf.write("private/replicas.json", "PRIVATE-MARKER db_password=hunter2");
    std::os::unix::fs::symlink(tf.path("private"), tf.path("linked")).unwrap();
    // Create through the link: refused, nothing written there.
    tf.write("main.tf", &config(TOPOLOGY, "linked/new/replicas.json"));
    let out = flat(tf.fails(&["apply", "-auto-approve"]));
    assert!(
        out.contains("the directory ./linked on the way is a symbolic link"),
        "{out}"
    );
    assert!(!tf.path("private/new").exists());
    // Import through the link: refused, nothing stored.
    let out = flat(tf.fails(&[
        "import",
        "locality_zone_replica_map.cache",
        &format!("file:{}", tf.path("linked/replicas.json").display()),
    ]));
    assert!(
        out.contains(&format!(
            "the directory {} on the way is a symbolic link",
            tf.path("linked").display()
        )),
        "{out}"
    );
    assert!(!tf
        .read("terraform.tfstate")
        .unwrap_or_default()
        .contains("PRIVATE-MARKER"));
    // Created in a real directory, which is then swapped for a link: refresh and destroy refuse.
    tf.write("main.tf", &config(TOPOLOGY, "out/replicas.json"));
    tf.ok(&["apply", "-auto-approve"]);
    std::fs::remove_dir_all(tf.path("out")).unwrap();
    std::os::unix::fs::symlink(tf.path("private"), tf.path("out")).unwrap();
    let out = flat(tf.fails(&["plan"]));
    assert!(
        out.contains("the directory ./out on the way is a symbolic link"),
        "{out}"
    );
    assert!(!tf.read("terraform.tfstate").unwrap().contains("PRIVATE-MARKER"));
    let out = flat(tf.fails(&["destroy", "-auto-approve", "-refresh=false"]));
    assert!(
        out.contains("the directory ./out on the way is a symbolic link"),
        "{out}"
    );
    assert_eq!(
        std::fs::read_to_string(tf.path("private/replicas.json")).unwrap(),
        "PRIVATE-MARKER db_password=hunter2",
        "nothing written or removed through the link"
    );
}

/// `file_permission` and `directory_permission`, as `local_file` has them: the default stays
/// 0600; a configured mode is set exactly, directories are created with theirs (less the
/// umask); a chmod outside Terraform is drift that the next apply sets back; a mode change alone
/// rewrites the file; a bad value is an error on the attribute.
#[test]
fn file_and_directory_permissions() {
    use std::os::unix::fs::PermissionsExt as _;
    let tf = Terraform::dev_overrides();
    let mode = |p: &std::path::Path| std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777;
    let with_modes = |file: &str, dir: &str| {
        config(TOPOLOGY, "published/maps/replicas.json").replace(
            "    path = \"published/maps/replicas.json\"\n",
            &format!("    path                 = \"published/maps/replicas.json\"\n    file_permission      = \"{file}\"\n    directory_permission = \"{dir}\"\n"),
        )
    };
    tf.write("main.tf", &with_modes("0640", "0750"));
    tf.ok(&["apply", "-auto-approve"]);
    let file = tf.path("published/maps/replicas.json");
    assert_eq!(mode(&file), 0o640);
    // (0750 less any umask: never more than asked.)
    assert_eq!(mode(&tf.path("published/maps")) & !0o750, 0);
    assert_eq!(mode(&tf.path("published")) & !0o750, 0);
    tf.assert_no_changes();

    // Changed outside Terraform: drift, set back.
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o666)).unwrap();
    let plan = tf.ok(&["plan"]);
    assert!(plan.contains(r#"~ file_permission      = "0666" -> "0640""#), "{plan}");
    tf.ok(&["apply", "-auto-approve"]);
    assert_eq!(mode(&file), 0o640);
    tf.assert_no_changes();

    // A new mode alone: the file is written again with it.
    tf.write("main.tf", &with_modes("0644", "0750"));
    tf.ok(&["apply", "-auto-approve"]);
    assert_eq!(mode(&file), 0o644);
    tf.assert_no_changes();

    // Three digits, as the docs allow: the plan after the apply is empty (the state keeps the
    // configuration's form; before, every plan showed "0644" -> "644"), and spelling the same
    // mode the other way is no change to the file.
    tf.write("main.tf", &with_modes("640", "0750"));
    tf.ok(&["apply", "-auto-approve"]);
    assert_eq!(mode(&file), 0o640);
    tf.assert_no_changes();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let plan = tf.ok(&["plan"]);
    assert!(
        plan.contains(r#"~ file_permission      = "0600" -> "640""#),
        "drift still shows: {plan}"
    );
    tf.ok(&["apply", "-auto-approve"]);
    tf.assert_no_changes();

    // Writable by every user: a warning on the attribute, and the mode is applied as asked.
    for open in ["0666", "777"] {
        tf.write("main.tf", &with_modes(open, "0750"));
        let out = tf
            .ok(&["apply", "-auto-approve"])
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        assert!(
            out.contains("Map file writable by every user") && out.contains(&format!("\"{open}\" lets every user")),
            "{open}: {out}"
        );
        tf.assert_no_changes();
    }
    tf.write("main.tf", &with_modes("0664", "0750"));
    let out = tf.ok(&["validate"]);
    assert!(
        !out.contains("writable by every user"),
        "group-writable is not warned: {out}"
    );

    // Bad values: errors on the attribute, saying what is allowed.
    for bad in ["0999", "4755", "rw-r--r--", "644 "] {
        tf.write("main.tf", &with_modes(bad, "0750"));
        let out = tf.fails(&["validate"]).split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            out.contains("Invalid permission") && out.contains("file_permission") && out.contains("up to \"0777\""),
            "{bad}: {out}"
        );
    }

    // The default stays 0600 (and an import holds the defaults: no diff for them).
    let plain = Terraform::dev_overrides();
    plain.write("main.tf", &config(TOPOLOGY, "replicas.json"));
    plain.ok(&["apply", "-auto-approve"]);
    assert_eq!(mode(&plain.path("replicas.json")), 0o600);
    plain.ok(&["state", "rm", "locality_zone_replica_map.cache"]);
    plain.ok(&[
        "import",
        "locality_zone_replica_map.cache",
        &format!("file:{}", plain.path("replicas.json").display()),
    ]);
    let plan = plain.ok(&["plan"]);
    assert!(!plan.contains("file_permission"), "{plan}");
}

/// Cluster mode from `member` blocks (each with its shard) and `configuration_endpoint`, no
/// `fallback_endpoint`: the fallback defaults to the configuration endpoint (as with
/// discovery), the map has no zone entry, and `locality resolve` on it points at
/// `--format glide` rather than saying "no entry for zone".
#[test]
fn a_cluster_from_member_blocks_needs_no_fallback_and_resolve_points_at_glide() {
    let tf = Terraform::dev_overrides();
    tf.write(
        "main.tf",
        &format!(
            r#"{PREAMBLE}
provider "locality" {{}}

resource "locality_zone_replica_map" "cache" {{
  configuration_endpoint = "clustercfg.sessions.example:6379"

  member {{
    endpoint = "sessions-0001-001.example:6379"
    zone     = "ap-northeast-1a"
    role     = "primary"
    shard    = "0001"
  }}
  member {{
    endpoint = "sessions-0001-002.example:6379"
    zone     = "ap-northeast-1c"
    shard    = "0001"
  }}

  file {{
    path = "replica-map.json"
  }}
}}
"#
        ),
    );
    let out = tf.ok(&["apply", "-auto-approve"]);
    assert!(out.contains("1 added"), "{out}");
    let doc: serde_json::Value = serde_json::from_str(&tf.read("replica-map.json").unwrap()).unwrap();
    assert_eq!(doc["fallback"], "clustercfg.sessions.example:6379", "{doc}");
    assert_eq!(
        doc["configuration_endpoint"], "clustercfg.sessions.example:6379",
        "{doc}"
    );
    assert_eq!(doc["zones"], serde_json::json!({}), "{doc}");
    tf.assert_no_changes();

    let out = std::process::Command::new(env!("CARGO_BIN_EXE_locality"))
        .args(["resolve", "--zone", "ap-northeast-1c", "--map"])
        .arg(tf.path("replica-map.json"))
        .arg("--cache-dir")
        .arg(tf.path("cache"))
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env_remove("LOCALITY_ZONE")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "clustercfg.sessions.example:6379\n"
    );
    assert!(
        stderr.contains("cluster-mode-enabled")
            && stderr.contains("--format glide")
            && !stderr.contains("no entry for zone"),
        "{stderr}"
    );
    eprintln!("resolve on a cluster's map: {stderr}");
}

/// Issue 52, item 10: the configuration a new user writes first (the primary in
/// `ap-northeast-1a`, a replica in `ap-northeast-1c`, `zones` naming both): after `terraform
/// import` of the file it published, the plan is empty (it said `+ zones = [...]`, 1 to change).
#[test]
fn an_import_of_the_first_configuration_plans_nothing() {
    let tf = Terraform::dev_overrides();
    let body = format!(
        r#"{PREAMBLE}
provider "locality" {{}}

resource "locality_zone_replica_map" "cache" {{
  fallback_endpoint = "reader.example:6379"
  zones             = ["ap-northeast-1a", "ap-northeast-1c"]

  member {{
    endpoint = "primary.example:6379"
    zone     = "ap-northeast-1a"
    role     = "primary"
  }}
  member {{
    endpoint = "replica.example:6379"
    zone     = "ap-northeast-1c"
  }}

  file {{
    path = "replica-map.json"
  }}
}}
"#
    );
    tf.write("main.tf", &body);
    tf.ok(&["apply", "-auto-approve"]);
    let published = tf.read("replica-map.json").unwrap();
    tf.ok(&["state", "rm", "locality_zone_replica_map.cache"]);
    tf.ok(&["import", "locality_zone_replica_map.cache", "replica-map.json"]);
    tf.assert_no_changes();
    assert_eq!(tf.read("replica-map.json").unwrap(), published);
    let state = tf.ok(&["state", "show", "locality_zone_replica_map.cache"]);
    assert!(
        state.contains("\"ap-northeast-1a\"") && state.contains("uncovered_zones"),
        "{state}"
    );
}
