//! Every example under `examples/` is valid for the real terraform, and the quick-start
//! example applies and publishes what the README promises.

mod common;

use std::path::Path;

use common::{terraform_1_15, Terraform, PREAMBLE};

fn example_dirs(root: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(root).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            example_dirs(&path, out);
        } else if path.extension().is_some_and(|e| e == "tf" || e == "hcl") && !out.contains(&root.to_path_buf()) {
            out.push(root.to_path_buf());
        }
    }
}

/// One `terraform validate` of an example directory: which files, with which terraform.
struct Variant {
    files: Vec<std::path::PathBuf>,
    needs_1_15: bool,
    query: bool,
}

/// The ways a directory is validated: its configuration alone, then with each `import`
/// example (one import block per resource at a time). Import by identity, `action` blocks and
/// `.tfquery.hcl` files need Terraform 1.12+/1.14+: those go to 1.15.5.
fn variants(dir: &Path) -> Vec<Variant> {
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "tf" || e == "hcl"))
        .collect();
    files.sort();
    let name = |p: &std::path::PathBuf| p.file_name().unwrap().to_string_lossy().into_owned();
    let (imports, base): (Vec<_>, Vec<_>) = files.into_iter().partition(|p| name(p).starts_with("import-by-"));
    let query = base.iter().any(|p| name(p).ends_with(".tfquery.hcl"));
    let newer = query || dir.components().any(|c| c.as_os_str() == "actions");
    let mut out = vec![Variant {
        files: base.clone(),
        needs_1_15: newer,
        query,
    }];
    for import in imports {
        let needs_1_15 = newer || name(&import) == "import-by-identity.tf";
        let mut files = base.clone();
        files.push(import);
        out.push(Variant {
            files,
            needs_1_15,
            query,
        });
    }
    out
}

/// Every example directory validates with the real terraform (each import example on its own;
/// the 1.12+ ones with Terraform 1.15.5); generated Google configurations are checked against
/// the stand-in google provider, generated AWS ones against the stand-in aws provider.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_example_validates() {
    let reattach =
        common::aws_provider::merge(&common::google::start().await, &common::aws_provider::start(None).await);
    let mut dirs = Vec::new();
    example_dirs(&Path::new(env!("CARGO_MANIFEST_DIR")).join("examples"), &mut dirs);
    assert!(dirs.len() >= 8, "{dirs:?}");
    tokio::task::spawn_blocking(move || {
        let mut validated = 0;
        for dir in dirs {
            for variant in variants(&dir) {
                let tf = Terraform::dev_overrides();
                let mut tf = if variant.needs_1_15 {
                    tf.with_binary(&terraform_1_15())
                } else {
                    tf
                };
                tf.env("TF_REATTACH_PROVIDERS", &reattach);
                let mut has_terraform_block = false;
                for path in &variant.files {
                    let text = std::fs::read_to_string(path).unwrap();
                    has_terraform_block |= text.contains("required_providers");
                    tf.write(path.file_name().unwrap().to_str().unwrap(), &text);
                }
                if !has_terraform_block {
                    tf.write("versions.tf", PREAMBLE);
                }
                let args: &[&str] = if variant.query {
                    &["validate", "-query"]
                } else {
                    &["validate"]
                };
                let out = tf.run(args);
                assert_eq!(
                    out.code,
                    0,
                    "{} ({:?}) does not validate:\n{}",
                    dir.display(),
                    variant.files,
                    out.all()
                );
                let fmt = tf.run(&["fmt", "-check", "-recursive"]);
                assert_eq!(
                    fmt.code,
                    0,
                    "{} is not terraform-fmt formatted: {}",
                    dir.display(),
                    fmt.all()
                );
                validated += 1;
            }
        }
        assert!(validated >= 16, "{validated} validations");
    })
    .await
    .unwrap();
}

#[test]
fn quickstart_applies_and_publishes_the_map() {
    let tf = Terraform::dev_overrides();
    let main =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/quickstart/main.tf")).unwrap();
    tf.write("main.tf", &main);
    tf.ok(&["apply", "-auto-approve"]);
    let published = tf.read("replica-map.json").unwrap();
    assert_eq!(
        published,
        r#"{"version":1,"fallback":"cache-ro.example.apne1.cache.amazonaws.com:6379","zones":{"ap-northeast-1c":"cache-002.example.apne1.cache.amazonaws.com:6379","ap-northeast-1d":"cache-003.example.apne1.cache.amazonaws.com:6379"},"uncovered_zones":["ap-northeast-1a"],"nodes":[{"endpoint":"cache-001.example.apne1.cache.amazonaws.com:6379","role":"primary","zone":"ap-northeast-1a"},{"endpoint":"cache-002.example.apne1.cache.amazonaws.com:6379","role":"replica","zone":"ap-northeast-1c"},{"endpoint":"cache-003.example.apne1.cache.amazonaws.com:6379","role":"replica","zone":"ap-northeast-1d"}]}"#
    );
    assert_eq!(tf.output("document"), published);
    tf.assert_no_changes();
    tf.ok(&["destroy", "-auto-approve"]);
    assert!(!tf.exists("replica-map.json"));
}
