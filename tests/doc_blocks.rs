//! The docs are tests. Every fenced block of README.md and docs/ is extracted and run or
//! validated as written; how is decided by its language and content, or by a marker on the
//! line before the fence (`<!-- doc-test: ACTION -->`, invisible on the rendered page):
//!
//! | block | what is done |
//! |---|---|
//! | `terraform`, `hcl` | `terraform validate` with this provider (dev_overrides) and the hashicorp/google and hashicorp/aws stand-ins; 1.15.5 for `action` and `list` blocks (`*.tfquery.hcl`); `import` and `removed` fragments with the page's first example |
//! | `hcl` with `provider_installation` | used as the CLI config of `terraform version`: no configuration problem reported |
//! | `hcl` / `json` generator spec | `locality gen` on it succeeds |
//! | `json` replica map | valid against schema/replica-map.v1.schema.json and parsed by `locality resolve` |
//! | `json` IAM policy | parsed; every statement has Effect, Action and Resource |
//! | `yaml` | parsed (PyYAML from the moto venv) |
//! | `shell` of `terraform import` lines | each address's type is the page's resource and is declared in its example |
//! | marker `sh-run` | run by `sh -e` in the environment below (moto, a map file, `locality` on PATH) |
//! | marker `release-steps` | run by `sh -e` next to freshly packed release archives |
//! | marker `synopsis` | every flag in it is in `locality gen --help` |
//! | marker `gen-error` | the generator's error output for the example spec with the substitution below, byte for byte |
//! | marker `rust-doctest` | the lines are a doc test of `locality-resolve` (compiled by `cargo test --doc`) |
//! | marker `run-by: FILE::FUNCTION` | run by that test, which must exist |
//! | marker `skip: REASON` | not run offline, for the reason given |
//!
//! A block with none of these fails the test. Substitutions, the only ones: the environment of
//! `sh-run` and `release-steps` ([`SUBSTITUTIONS`]), `VERSION` in `release-steps`, a `versions.tf`
//! declaring the providers next to each Terraform block (registry examples leave it out), and
//! the first `"asia-northeast1"` → `"asia-northeast9"` in examples/generator/tokyo-osaka.hcl
//! for `gen-error`.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::Terraform;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The declared substitutions, printed with every failure.
const SUBSTITUTIONS: &str = "sh-run/release-steps environment: PATH += the built `locality`; AWS_ACCESS_KEY_ID/SECRET=testing, \
AWS_REGION=ap-northeast-1, AWS_ENDPOINT_URL=moto (holding /prod/cache/replica-map); LOCALITY_ZONE=ap-northeast-1a; \
HOME and XDG_RUNTIME_DIR=a temp dir; cwd holds replica-map.json and spec.hcl (examples/generator/tokyo-osaka.hcl) with its current output as failover.tf. \
release-steps: VERSION = Cargo.toml's version. Terraform blocks: versions.tf with required_providers for locality, google and aws.";

/// One fenced block.
#[derive(Debug, Clone)]
struct Block {
    file: String,
    line: usize,
    lang: String,
    marker: Option<String>,
    text: String,
}

impl Block {
    fn at(&self) -> String {
        format!("{}:{}", self.file, self.line)
    }
}

fn blocks() -> Vec<Block> {
    let mut files = vec![PathBuf::from("README.md")];
    let mut stack = vec![Path::new(ROOT).join("docs")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                files.push(path.strip_prefix(ROOT).unwrap().to_path_buf());
            }
        }
    }
    files.sort();
    let mut out = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(Path::new(ROOT).join(&file)).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let mut i = 0;
        while i < lines.len() {
            let trimmed = lines[i].trim_start();
            if let Some(lang) = trimmed.strip_prefix("```") {
                let indent = lines[i].len() - trimmed.len();
                let end = (i + 1..lines.len())
                    .find(|&j| lines[j].trim() == "```")
                    .unwrap_or_else(|| panic!("{}:{}: unclosed fence", file.display(), i + 1));
                let marker = i
                    .checked_sub(1)
                    .and_then(|p| lines[p].trim().strip_prefix("<!-- doc-test:"))
                    .and_then(|m| m.strip_suffix("-->"))
                    .map(|m| m.trim().to_string());
                let body: Vec<&str> = lines[i + 1..end]
                    .iter()
                    .map(|l| l.get(indent.min(l.len() - l.trim_start().len())..).unwrap_or(""))
                    .collect();
                out.push(Block {
                    file: file.display().to_string(),
                    line: i + 1,
                    lang: lang.trim().to_string(),
                    marker,
                    text: body.join("\n") + "\n",
                });
                i = end + 1;
            } else {
                i += 1;
            }
        }
    }
    out
}

/// What will be done with a block; `None`: nothing (the test fails).
#[derive(Debug, Clone, PartialEq)]
enum Action {
    Terraform { v115: bool, query: bool },
    CliConfig,
    GenSpec { json: bool },
    ReplicaMap,
    IamPolicy,
    Yaml,
    Imports,
    ShRun,
    ReleaseSteps,
    Synopsis,
    GenError,
    RustDoctest,
    RunBy(String),
    Skip(String),
}

fn action(block: &Block) -> Option<Action> {
    if let Some(marker) = &block.marker {
        return Some(
            match marker
                .split_once(':')
                .map_or((marker.as_str(), ""), |(a, b)| (a.trim(), b.trim()))
            {
                ("sh-run", _) => Action::ShRun,
                ("release-steps", _) => Action::ReleaseSteps,
                ("synopsis", _) => Action::Synopsis,
                ("gen-error", _) => Action::GenError,
                ("rust-doctest", _) => Action::RustDoctest,
                ("run-by", test) if !test.is_empty() => Action::RunBy(test.to_string()),
                ("skip", reason) if reason.len() > 20 => Action::Skip(reason.to_string()),
                _ => panic!(
                    "{}: unknown or incomplete marker {marker:?} (a skip needs a reason)",
                    block.at()
                ),
            },
        );
    }
    let text = block.text.as_str();
    match block.lang.as_str() {
        "terraform" | "hcl" | "tf" => Some(if text.contains("provider_installation") {
            Action::CliConfig
        } else if text.trim_start().starts_with("service \"") || text.contains("\nservice \"") {
            Action::GenSpec { json: false }
        } else {
            Action::Terraform {
                // (Actions, list resources and import by identity: Terraform 1.12 and later.)
                v115: text.contains("action \"") || text.contains("list \"") || text.contains("identity = {"),
                query: text.contains("list \""),
            }
        }),
        "json" => {
            let value: serde_json::Value =
                serde_json::from_str(text).unwrap_or_else(|e| panic!("{}: not JSON: {e}", block.at()));
            Some(if value.get("Statement").is_some() {
                Action::IamPolicy
            } else if value.get("fallback").is_some() {
                Action::ReplicaMap
            } else if value.get("service").is_some() {
                Action::GenSpec { json: true }
            } else {
                return None;
            })
        }
        "yaml" | "yml" => Some(Action::Yaml),
        "shell" | "sh" | "bash"
            if text
                .lines()
                .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
                .all(|l| l.starts_with("terraform import ")) =>
        {
            Some(Action::Imports)
        }
        _ => None,
    }
}

#[test]
fn every_block_has_an_action() {
    let all = blocks();
    assert!(all.len() > 30, "{} blocks", all.len());
    let missing: Vec<String> = all
        .iter()
        .filter(|b| action(b).is_none())
        .map(|b| {
            format!(
                "{} ({})",
                b.at(),
                if b.lang.is_empty() { "no language" } else { &b.lang }
            )
        })
        .collect();
    assert!(
        missing.is_empty(),
        "these blocks are neither run nor validated: give each a `<!-- doc-test: ... -->` marker (see tests/doc_blocks.rs): {missing:?}"
    );
}

/// The page's first Terraform block (its example), for fragments that need it.
fn page_example(all: &[Block], file: &str) -> Option<String> {
    all.iter()
        .find(|b| {
            b.file == file
                && matches!(b.lang.as_str(), "terraform" | "hcl")
                && !b.text.trim_start().starts_with("import {")
        })
        .map(|b| b.text.clone())
}

fn run(cmd: &mut Command) -> std::process::Output {
    cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"))
}

fn locality(args: &[&str], dir: &Path) -> std::process::Output {
    run(Command::new(env!("CARGO_BIN_EXE_locality")).args(args).current_dir(dir))
}

/// The environment of `sh-run` and `release-steps` (see [`SUBSTITUTIONS`]).
struct ShellEnv {
    dir: tempfile::TempDir,
    env: Vec<(String, String)>,
}

async fn shell_env(moto: &common::moto::Moto) -> ShellEnv {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_locality"), bin.join("locality")).unwrap();
    let map = r#"{"version":1,"fallback":"reader.example:6379","zones":{"ap-northeast-1a":"replica-a.example:6379"}}"#;
    std::fs::write(dir.path().join("replica-map.json"), map).unwrap();
    let ssm = aws_sdk_ssm::Client::new(&moto.config().await);
    ssm.put_parameter()
        .name("/prod/cache/replica-map")
        .value(map)
        .r#type(aws_sdk_ssm::types::ParameterType::String)
        .send()
        .await
        .unwrap();
    std::fs::copy(
        Path::new(ROOT).join("examples/generator/tokyo-osaka.hcl"),
        dir.path().join("spec.hcl"),
    )
    .unwrap();
    let out = locality(&["gen", "spec.hcl", "-o", "failover.tf"], dir.path());
    assert!(out.status.success());
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let env = vec![
        (
            "PATH".to_string(),
            format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default()),
        ),
        ("HOME".into(), home.display().to_string()),
        ("AWS_ACCESS_KEY_ID".into(), "testing".into()),
        ("AWS_SECRET_ACCESS_KEY".into(), "testing".into()),
        ("AWS_REGION".into(), "ap-northeast-1".into()),
        ("AWS_ENDPOINT_URL".into(), moto.endpoint.clone()),
        ("AWS_EC2_METADATA_DISABLED".into(), "true".into()),
        ("LOCALITY_ZONE".into(), "ap-northeast-1a".into()),
        // locality resolve's default cache directory: this run's own.
        ("XDG_RUNTIME_DIR".into(), home.display().to_string()),
    ];
    ShellEnv { dir, env }
}

fn sh(script: &str, cwd: &Path, env: &[(String, String)]) -> std::process::Output {
    run(Command::new("sh")
        .args(["-e", "-c", script])
        .current_dir(cwd)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str()))))
}

fn terraform_validate(block: &Block, all: &[Block], v115: bool, query: bool, google: &str) -> Result<(), String> {
    let mut tf = Terraform::dev_overrides();
    if v115 {
        tf = tf.with_binary(&common::terraform_1_15());
    }
    tf.env("TF_REATTACH_PROVIDERS", google);
    let mut text = block.text.clone();
    let trimmed = text.trim_start();
    if trimmed.starts_with("import {") || trimmed.starts_with("removed {") {
        let example = page_example(all, &block.file).ok_or("a fragment on a page without an example")?;
        if trimmed.starts_with("import {") {
            text = format!("{example}\n{text}");
        }
    }
    if !text.contains("required_providers") {
        tf.write(
            "versions.tf",
            "terraform {\n  required_providers {\n    locality = { source = \"locality/locality\" }\n    google   = { source = \"hashicorp/google\" }\n    aws      = { source = \"hashicorp/aws\" }\n  }\n}\n",
        );
    }
    tf.write(if query { "main.tfquery.hcl" } else { "main.tf" }, &text);
    let args: &[&str] = if query { &["validate", "-query"] } else { &["validate"] };
    let run = tf.run(args);
    if run.code == 0 {
        Ok(())
    } else {
        Err(run.all())
    }
}

/// Runs or validates every block; prints the counts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_block_runs_or_validates_as_written() {
    let all = blocks();
    let moto = common::moto::Moto::start();
    let shell = shell_env(&moto).await;
    // The google and aws stand-ins, one reattach value.
    let google = common::aws_provider::merge(
        &common::google::start_with(None).await,
        &common::aws_provider::start(None).await,
    );
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(Path::new(ROOT).join("schema/replica-map.v1.schema.json")).unwrap(),
    )
    .unwrap();
    let all2 = all.clone();
    let report = tokio::task::spawn_blocking(move || {
        let validator = jsonschema::draft202012::new(&schema).unwrap();
        let mut failures = Vec::new();
        let mut counts = std::collections::BTreeMap::<&str, usize>::new();
        for block in &all2 {
            let Some(action) = action(block) else { continue };
            let (kind, result): (&str, Result<(), String>) = match &action {
                Action::Terraform { v115, query } => (
                    "validated: terraform validate",
                    terraform_validate(block, &all2, *v115, *query, &google),
                ),
                Action::CliConfig => {
                    let dir = tempfile::tempdir().unwrap();
                    let path = dir.path().join("cli.tfrc");
                    std::fs::write(&path, &block.text).unwrap();
                    let out = run(Command::new(common::terraform_binary())
                        .arg("version")
                        .env("TF_CLI_CONFIG_FILE", &path)
                        .env("CHECKPOINT_DISABLE", "1"));
                    let all = format!(
                        "{}{}",
                        String::from_utf8_lossy(&out.stdout),
                        String::from_utf8_lossy(&out.stderr)
                    );
                    (
                        "validated: CLI config read by terraform",
                        if out.status.success() && !all.contains("problems with the CLI configuration") {
                            Ok(())
                        } else {
                            Err(all)
                        },
                    )
                }
                Action::GenSpec { json } => {
                    let dir = tempfile::tempdir().unwrap();
                    let name = if *json { "spec.json" } else { "spec.hcl" };
                    std::fs::write(dir.path().join(name), &block.text).unwrap();
                    let out = locality(&["gen", name], dir.path());
                    (
                        "executed: locality gen",
                        if out.status.success() {
                            Ok(())
                        } else {
                            Err(String::from_utf8_lossy(&out.stderr).into_owned())
                        },
                    )
                }
                Action::ReplicaMap => {
                    let value: serde_json::Value = serde_json::from_str(&block.text).unwrap();
                    let errors: Vec<String> = validator.iter_errors(&value).map(|e| e.to_string()).collect();
                    let parsed = locality_resolve::ReplicaMap::parse(&block.text);
                    (
                        "validated: replica map schema and parser",
                        if errors.is_empty() && parsed.is_ok() {
                            Ok(())
                        } else {
                            Err(format!("{errors:?} {parsed:?}"))
                        },
                    )
                }
                Action::IamPolicy => {
                    let value: serde_json::Value = serde_json::from_str(&block.text).unwrap();
                    let ok = value["Version"] == "2012-10-17"
                        && value["Statement"].as_array().is_some_and(|s| {
                            !s.is_empty()
                                && s.iter().all(|st| {
                                    st["Effect"].is_string() && !st["Action"].is_null() && !st["Resource"].is_null()
                                })
                        });
                    (
                        "validated: IAM policy",
                        if ok {
                            Ok(())
                        } else {
                            Err("not an IAM policy with Effect/Action/Resource".into())
                        },
                    )
                }
                Action::Yaml => {
                    let python = Path::new(ROOT).join("target/moto-venv/bin/python");
                    let python = std::env::var("LOCALITY_MOTO_SERVER")
                        .map_or(python, |m| Path::new(&m).with_file_name("python"));
                    let out = run(Command::new(python).args([
                        "-c",
                        "import sys, yaml; yaml.safe_load(sys.argv[1])",
                        &block.text,
                    ]));
                    (
                        "validated: YAML",
                        if out.status.success() {
                            Ok(())
                        } else {
                            Err(String::from_utf8_lossy(&out.stderr).into_owned())
                        },
                    )
                }
                Action::Imports => {
                    let short = Path::new(&block.file)
                        .file_stem()
                        .unwrap()
                        .to_string_lossy()
                        .into_owned();
                    let example = page_example(&all2, &block.file).unwrap_or_default();
                    let mut problems = Vec::new();
                    for line in block.text.lines().filter(|l| l.starts_with("terraform import ")) {
                        let address = line.split_whitespace().nth(2).unwrap_or_default();
                        let (ty, name) = address.split_once('.').unwrap_or_default();
                        if ty != format!("locality_{short}")
                            || !example.contains(&format!("resource \"{ty}\" \"{name}\""))
                        {
                            problems.push(format!("{address} is not declared in the page's example"));
                        }
                    }
                    (
                        "validated: import addresses",
                        if problems.is_empty() {
                            Ok(())
                        } else {
                            Err(problems.join("; "))
                        },
                    )
                }
                Action::ShRun => {
                    let out = sh(&block.text, shell.dir.path(), &shell.env);
                    (
                        "executed: sh -e",
                        if out.status.success() {
                            Ok(())
                        } else {
                            Err(format!(
                                "{}{}",
                                String::from_utf8_lossy(&out.stdout),
                                String::from_utf8_lossy(&out.stderr)
                            ))
                        },
                    )
                }
                Action::ReleaseSteps => {
                    let out_dir = tempfile::tempdir().unwrap();
                    let bin_dir = common::provider_binary().parent().unwrap().to_path_buf();
                    let packed = run(Command::new("python3")
                        .arg(Path::new(ROOT).join("scripts/package.py"))
                        .arg(&bin_dir)
                        .arg(common::VERSION)
                        .arg(out_dir.path())
                        .args(["--level", "1"]));
                    assert!(packed.status.success(), "{}", String::from_utf8_lossy(&packed.stderr));
                    for name in ["spec.hcl", "failover.tf"] {
                        std::fs::copy(shell.dir.path().join(name), out_dir.path().join(name)).unwrap();
                    }
                    let script = block.text.replace("VERSION", common::VERSION);
                    let out = sh(&script, out_dir.path(), &shell.env);
                    (
                        "executed: sh -e next to the release archives",
                        if out.status.success() {
                            Ok(())
                        } else {
                            Err(format!(
                                "{}{}",
                                String::from_utf8_lossy(&out.stdout),
                                String::from_utf8_lossy(&out.stderr)
                            ))
                        },
                    )
                }
                Action::Synopsis => {
                    let help =
                        String::from_utf8_lossy(&locality(&["gen", "--help"], Path::new(ROOT)).stdout).into_owned();
                    let missing: Vec<&str> = block
                        .text
                        .split(|c: char| c.is_whitespace() || c == '[' || c == ']' || c == '|')
                        .filter(|w| w.starts_with('-'))
                        .filter(|w| !help.contains(w))
                        .collect();
                    (
                        "validated: synopsis against --help",
                        if missing.is_empty() {
                            Ok(())
                        } else {
                            Err(format!("{missing:?} not in locality gen --help"))
                        },
                    )
                }
                Action::GenError => {
                    let dir = tempfile::tempdir().unwrap();
                    let spec =
                        std::fs::read_to_string(Path::new(ROOT).join("examples/generator/tokyo-osaka.hcl")).unwrap();
                    let spec = spec.replacen("\"asia-northeast1\"", "\"asia-northeast9\"", 1);
                    std::fs::write(dir.path().join("tokyo-osaka.hcl"), spec).unwrap();
                    let out = locality(&["gen", "tokyo-osaka.hcl"], dir.path());
                    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
                    (
                        "executed: locality gen (its error output)",
                        if stderr == block.text {
                            Ok(())
                        } else {
                            Err(format!("the generator says:\n{stderr}"))
                        },
                    )
                }
                Action::RustDoctest => {
                    let lib = std::fs::read_to_string(Path::new(ROOT).join("resolve/src/lib.rs")).unwrap();
                    let doc: String = lib
                        .lines()
                        .filter_map(|l| l.strip_prefix("//! "))
                        .collect::<Vec<_>>()
                        .join("\n");
                    (
                        "validated: compiled as a doc test",
                        if doc.contains(block.text.trim_end()) {
                            Ok(())
                        } else {
                            Err("not a doc test of resolve/src/lib.rs".into())
                        },
                    )
                }
                Action::RunBy(test) => {
                    let (file, function) = test.split_once("::").unwrap_or((test.as_str(), ""));
                    let source = std::fs::read_to_string(Path::new(ROOT).join(file)).unwrap_or_default();
                    (
                        "executed: by another test",
                        if !function.is_empty() && source.contains(&format!("fn {function}(")) {
                            Ok(())
                        } else {
                            Err(format!("no test {test}"))
                        },
                    )
                }
                Action::Skip(_) => ("marked: not run offline", Ok(())),
            };
            *counts.entry(kind).or_default() += 1;
            if let Err(problem) = result {
                failures.push(format!("{} ({action:?}):\n{problem}", block.at()));
            }
        }
        (failures, counts)
    })
    .await
    .unwrap();
    let (failures, counts) = report;
    eprintln!("doc blocks: {} in all; {counts:#?}", all.len());
    assert!(
        failures.is_empty(),
        "{} block(s) failed ({SUBSTITUTIONS}):\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}
