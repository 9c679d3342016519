//! The layers hold: no module imports from a layer above it (README "Layout", `src/lib.rs`).
//!
//! - leaves: `naming`; `regions` (the region catalogue, may use `naming`); `http`; `files`;
//! - `ranges` (IP ranges) and `generator` use only the leaves;
//! - `tfplugin` (the protocol layer) uses nothing else;
//! - `audit` (`locality audit`) uses only the leaves: no protocol layer, no provider;
//! - `provider` uses all of the above but the generator; its API clients (`cloudflare`,
//!   `google`, `aws`) and `secret.rs` do not know Terraform (no `tfplugin`, no resources).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("readable source dir") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level modules a file names through `crate::…` (in `use` lines and paths), and
/// the provider submodules it names through `crate::provider::…` or `super::…`.
fn imports(text: &str, prefix: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for (i, _) in text.match_indices(prefix) {
        let rest = &text[i + prefix.len()..];
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if name.is_empty() {
            // `use crate::{a, b::c}`
            if let Some(group) = rest.strip_prefix('{') {
                let group = &group[..group.find('}').unwrap_or(group.len())];
                for item in group.split(',') {
                    let item = item.trim();
                    let head: String = item
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect();
                    if !head.is_empty() {
                        found.insert(head);
                    }
                }
            }
        } else {
            found.insert(name);
        }
    }
    found
}

/// A source file without its comment lines (module docs name layers they must not import).
fn code(file: &Path) -> String {
    std::fs::read_to_string(file)
        .expect("readable source")
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn check(dir: &str, allowed: &[&str], problems: &mut Vec<String>) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let path = root.join(dir);
    let mut files = Vec::new();
    if path.is_dir() {
        rust_files(&path, &mut files);
    } else {
        files.push(path.with_extension("rs"));
    }
    let own = dir.split('/').next().expect("a module name");
    for file in files {
        let text = code(&file);
        for module in imports(&text, "crate::") {
            if module != own && module != "model" && !allowed.contains(&module.as_str()) {
                problems.push(format!("{} imports crate::{module}", file.display()));
            }
        }
    }
}

#[test]
fn no_layer_imports_from_one_above_it() {
    let mut problems = Vec::new();
    check("naming", &[], &mut problems);
    check("regions", &["naming"], &mut problems);
    check("http", &[], &mut problems);
    check("files", &[], &mut problems);
    check("ranges", &["naming", "regions", "http", "files"], &mut problems);
    check("tfplugin", &[], &mut problems);
    check("generator", &["naming", "regions", "files"], &mut problems);
    check("audit", &["naming", "regions", "http", "files"], &mut problems);
    check(
        "provider",
        &["naming", "regions", "http", "files", "ranges", "tfplugin"],
        &mut problems,
    );
    assert!(problems.is_empty(), "layering violations:\n{}", problems.join("\n"));
}

#[test]
fn api_clients_do_not_know_terraform() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/provider");
    let mut files = Vec::new();
    for client in ["cloudflare", "google", "aws"] {
        rust_files(&root.join(client), &mut files);
    }
    files.push(root.join("secret.rs"));
    let mut problems = Vec::new();
    for file in files {
        let text = code(&file);
        let crate_imports = imports(&text, "crate::");
        let provider_imports = imports(&text, "crate::provider::");
        let super_imports = imports(&text, "super::");
        for bad in ["tfplugin", "generator"] {
            if crate_imports.contains(bad) {
                problems.push(format!("{} imports crate::{bad}", file.display()));
            }
        }
        for bad in ["resources", "data_sources", "config", "data", "diagnostics"] {
            if provider_imports.contains(bad) || (super_imports.contains(bad) && !file.ends_with("mod.rs")) {
                problems.push(format!("{} imports provider::{bad}", file.display()));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "API clients must not know Terraform:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_checker_sees_imports() {
    let text = "use crate::{naming::x, regions};\nlet c = crate::http::client();\nuse super::secret::Secret;";
    let found = imports(text, "crate::");
    assert!(
        found.contains("naming") && found.contains("regions") && found.contains("http"),
        "{found:?}"
    );
    assert!(imports(text, "super::").contains("secret"));
}

#[test]
fn attributes_are_read_by_name_only_in_model_files() {
    // Resources and data sources work on their models: no `.get("attribute")` on values
    // outside `model.rs` (and the schema's semantic-equality helpers, which get values).
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/provider");
    let mut files = Vec::new();
    rust_files(&root.join("resources"), &mut files);
    rust_files(&root.join("data_sources"), &mut files);
    let offenders: Vec<String> = files
        .iter()
        .filter(|f| !f.ends_with("model.rs"))
        .filter(|f| std::fs::read_to_string(f).expect("readable").contains(".get(\""))
        .map(|f| f.display().to_string())
        .collect();
    assert!(
        offenders.is_empty(),
        "attributes read by string key outside model.rs: {offenders:?}"
    );
}

#[test]
fn comments_point_only_at_files_in_the_repository() {
    // The design notes and reference material live outside the repository: a comment that
    // cites them leaves a reader with nothing to open. Say it in the comment, or point at docs/.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["src", "tests", "benches", "fuzz"] {
        rust_files(&root.join(dir), &mut files);
    }
    let offenders: Vec<String> = files
        .iter()
        .filter(|f| !f.ends_with("architecture.rs"))
        .filter(|f| {
            let text = std::fs::read_to_string(f).expect("readable");
            ["DESIGN.md", "reference/", "FACTS.md", "shared/"]
                .iter()
                .any(|needle| text.contains(needle))
        })
        .map(|f| f.display().to_string())
        .collect();
    assert!(
        offenders.is_empty(),
        "comments citing files outside the repository: {offenders:?}"
    );
}

/// `resolve/` has no circle between its modules (issue 52: `trusted` took from `source`, which
/// took from `aws_error`, which took from `trusted`): the graph of `crate::` imports between
/// its top-level modules (a folder is one module) has no cycle.
#[test]
fn resolve_has_no_circle_between_its_modules() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("resolve/src");
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    let mut edges: std::collections::BTreeMap<String, BTreeSet<String>> = std::collections::BTreeMap::new();
    for file in &files {
        let relative = file.strip_prefix(&root).unwrap();
        let module = relative
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy()
            .trim_end_matches(".rs")
            .to_string();
        if module == "lib" || module == "main" || module == "bin" {
            continue;
        }
        let targets = edges.entry(module.clone()).or_default();
        for target in imports(&code(file), "crate::") {
            if target != module {
                targets.insert(target);
            }
        }
    }
    assert!(edges.len() > 5, "the checker sees resolve's modules: {edges:?}");
    // Depth-first search for a back edge; the cycle is named.
    fn visit(
        node: &str,
        edges: &std::collections::BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|n| n == node) {
            let mut cycle = path[at..].to_vec();
            cycle.push(node.to_string());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for next in edges.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, edges, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    for module in edges.keys() {
        let cycle = visit(module, &edges, &mut Vec::new(), &mut done);
        assert!(cycle.is_none(), "a circle in resolve/: {}", cycle.unwrap().join(" → "));
    }
}

/// The audit's record parser reads nothing from the tally (issue 61, item 4: they imported each
/// other through one constant, which now lives with the record's format).
#[test]
fn the_flow_log_parser_imports_nothing_from_the_tally() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let parser = code(&root.join("src/audit/flow_log.rs"));
    assert!(!parser.contains("tally"), "src/audit/flow_log.rs names the tally");
}

/// Tests write only under temp dirs: no Redis or Valkey data file in the source tree (issue 61,
/// item 8: a test's redis-server once wrote `tests/fixtures/laravel-app/dump.rdb`, committed).
#[test]
fn no_server_data_file_in_the_source_tree() {
    fn walk(dir: &Path, found: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().to_string();
            if path.is_dir() {
                if !matches!(name.as_str(), "target" | ".git" | "node_modules") {
                    walk(&path, found);
                }
            } else if name.ends_with(".rdb") || name.ends_with(".aof") || name == "nodes.conf" {
                found.push(path);
            }
        }
    }
    let mut found = Vec::new();
    walk(Path::new(env!("CARGO_MANIFEST_DIR")), &mut found);
    assert!(found.is_empty(), "server data files in the source tree: {found:?}");
}
