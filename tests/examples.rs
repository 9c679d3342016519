//! Every example under `examples/` is valid for the real terraform, and the quick-start
//! example applies and publishes what the README promises.

mod common;

use std::path::Path;

use common::{Terraform, PREAMBLE};

fn example_dirs(root: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(root).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            example_dirs(&path, out);
        } else if path.extension().is_some_and(|e| e == "tf") && !out.contains(&root.to_path_buf()) {
            out.push(root.to_path_buf());
        }
    }
}

/// Every example directory validates with the real terraform; generated Google configurations
/// are checked against the stand-in google provider.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_example_validates() {
    let reattach = common::google::start().await;
    let mut dirs = Vec::new();
    example_dirs(&Path::new(env!("CARGO_MANIFEST_DIR")).join("examples"), &mut dirs);
    assert!(dirs.len() >= 4, "{dirs:?}");
    tokio::task::spawn_blocking(move || {
        for dir in dirs {
            let mut tf = Terraform::dev_overrides();
            tf.env("TF_REATTACH_PROVIDERS", &reattach);
            let mut has_terraform_block = false;
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.extension().is_some_and(|e| e == "tf") {
                    let text = std::fs::read_to_string(&path).unwrap();
                    has_terraform_block |= text.contains("required_providers");
                    tf.write(path.file_name().unwrap().to_str().unwrap(), &text);
                }
            }
            if !has_terraform_block {
                tf.write("versions.tf", PREAMBLE);
            }
            let out = tf.run(&["validate"]);
            assert_eq!(out.code, 0, "{} does not validate:\n{}", dir.display(), out.all());
            let fmt = tf.run(&["fmt", "-check", "-recursive"]);
            assert_eq!(
                fmt.code,
                0,
                "{} is not terraform-fmt formatted: {}",
                dir.display(),
                fmt.all()
            );
        }
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
        r#"{"version":1,"fallback":"cache-ro.example.apne1.cache.amazonaws.com:6379","zones":{"ap-northeast-1c":"cache-002.example.apne1.cache.amazonaws.com:6379","ap-northeast-1d":"cache-003.example.apne1.cache.amazonaws.com:6379"}}"#
    );
    assert_eq!(tf.output("document"), published);
    tf.assert_no_changes();
    tf.ok(&["destroy", "-auto-approve"]);
    assert!(!tf.exists("replica-map.json"));
}
