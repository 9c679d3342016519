//! The output model (blocks, attributes, expressions) and its two writers: HCL laid out
//! exactly as `terraform fmt` would (aligned `=` within runs of single-line attributes, blank
//! lines between blocks; the fixtures in `tests/fixtures/generator/` are its contract), and
//! Terraform JSON.
//!
//! Why a writer of our own: hcl-rs formats valid HCL but does not align `=` the way
//! `terraform fmt` does, and byte-identical output is the contract.

use std::fmt::Write as _;

/// An expression in the output.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// A quoted string.
    Str(String),
    /// A whole number.
    Int(i64),
    /// `true` or `false`.
    Bool(bool),
    /// A reference such as `google_compute_backend_service.web.id` (written bare, never quoted;
    /// `"${...}"` in JSON).
    Traversal(Vec<String>),
    /// A static reference as meta-arguments take them (`ignore_changes`): bare in HCL, a plain
    /// string in JSON.
    StaticRef(String),
    /// A list, written one element per line.
    List(Vec<Expr>),
    /// An object with string keys, written one entry per line with `=` aligned.
    Map(Vec<(String, Expr)>),
}

/// An item of a body.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    /// `name = expr`
    Attribute(String, Expr),
    /// A nested block.
    Block(Block),
    /// A `#` comment line.
    Comment(String),
}

/// A block: `ident "label" ... { body }`.
#[derive(Debug, Clone, PartialEq)]
pub struct Block {
    /// Block type.
    pub ident: String,
    /// Labels.
    pub labels: Vec<String>,
    /// Body items in order.
    pub body: Vec<Item>,
}

impl Block {
    /// A block with labels.
    pub fn new(ident: &str, labels: &[&str]) -> Self {
        Block {
            ident: ident.into(),
            labels: labels.iter().map(|l| l.to_string()).collect(),
            body: Vec::new(),
        }
    }
    /// Adds an attribute.
    pub fn attr(mut self, name: &str, value: Expr) -> Self {
        self.body.push(Item::Attribute(name.into(), value));
        self
    }
    /// Adds a nested block.
    pub fn block(mut self, block: Block) -> Self {
        self.body.push(Item::Block(block));
        self
    }
    /// Adds a comment line.
    pub fn comment(mut self, text: &str) -> Self {
        self.body.push(Item::Comment(text.into()));
        self
    }
}

/// A string literal as HCL writes it.
fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c => out.push(c),
        }
    }
    // `${` and `%{` would start a template: escape them.
    let out = out.replace("${", "$${").replace("%{", "%%{");
    format!("{out}\"")
}

impl Expr {
    fn is_multiline(&self) -> bool {
        matches!(self, Expr::List(items) if !items.is_empty())
            || matches!(self, Expr::Map(entries) if !entries.is_empty())
    }

    /// The expression as HCL; multi-line values are indented for `depth`.
    fn hcl(&self, depth: usize) -> String {
        let inner = "  ".repeat(depth + 1);
        let close = "  ".repeat(depth);
        match self {
            Expr::Str(s) => quote(s),
            Expr::Int(i) => i.to_string(),
            Expr::Bool(b) => b.to_string(),
            Expr::Traversal(parts) => parts.join("."),
            Expr::StaticRef(r) => r.clone(),
            Expr::List(items) if items.is_empty() => "[]".into(),
            Expr::List(items) => {
                let mut out = String::from("[\n");
                for item in items {
                    let _ = writeln!(out, "{inner}{},", item.hcl(depth + 1));
                }
                format!("{out}{close}]")
            }
            Expr::Map(entries) if entries.is_empty() => "{}".into(),
            Expr::Map(entries) => {
                let keys: Vec<String> = entries.iter().map(|(k, _)| quote(k)).collect();
                let width = keys.iter().map(String::len).max().unwrap_or(0);
                let mut out = String::from("{\n");
                for (key, (_, value)) in keys.iter().zip(entries) {
                    let _ = writeln!(out, "{inner}{key:<width$} = {}", value.hcl(depth + 1));
                }
                format!("{out}{close}}}")
            }
        }
    }

    fn json(&self) -> serde_json::Value {
        match self {
            Expr::Str(s) => s.replace("${", "$${").replace("%{", "%%{").into(),
            Expr::Int(i) => (*i).into(),
            Expr::Bool(b) => (*b).into(),
            Expr::Traversal(parts) => format!("${{{}}}", parts.join(".")).into(),
            Expr::StaticRef(r) => r.clone().into(),
            Expr::List(items) => items.iter().map(Expr::json).collect::<Vec<_>>().into(),
            Expr::Map(entries) => entries
                .iter()
                .map(|(k, v)| (k.clone(), v.json()))
                .collect::<serde_json::Map<_, _>>()
                .into(),
        }
    }
}

/// Writes top-level blocks as `terraform fmt` lays them out: two-space indent, `=` aligned
/// within runs of single-line attributes, one blank line between blocks, LF, one final newline.
/// `header` lines are written first as `#` comments.
pub fn to_hcl(header: &[String], blocks: &[Block]) -> String {
    let mut out = String::new();
    for line in header {
        let _ = writeln!(out, "# {line}");
    }
    for block in blocks {
        if !out.is_empty() {
            out.push('\n');
        }
        write_block(&mut out, block, 0);
    }
    out
}

fn write_block(out: &mut String, block: &Block, depth: usize) {
    let indent = "  ".repeat(depth);
    out.push_str(&indent);
    out.push_str(&block.ident);
    for label in &block.labels {
        out.push(' ');
        out.push_str(&quote(label));
    }
    if block.body.is_empty() {
        out.push_str(" {}\n");
        return;
    }
    out.push_str(" {\n");
    let inner = "  ".repeat(depth + 1);
    let mut i = 0;
    let mut previous_was_block = false;
    while i < block.body.len() {
        match &block.body[i] {
            Item::Attribute(..) => {
                // A run of consecutive attributes is aligned on `=`.
                let run: Vec<(&String, &Expr)> = block.body[i..]
                    .iter()
                    .map_while(|item| {
                        if let Item::Attribute(n, e) = item {
                            Some((n, e))
                        } else {
                            None
                        }
                    })
                    .collect();
                if previous_was_block {
                    out.push('\n');
                }
                // A multi-line value is not padded and splits the run, as `terraform fmt` does.
                for group in run.split_inclusive(|(_, e)| e.is_multiline()) {
                    let width = group
                        .iter()
                        .filter(|(_, e)| !e.is_multiline())
                        .map(|(n, _)| n.len())
                        .max()
                        .unwrap_or(0);
                    for (name, expr) in group {
                        if expr.is_multiline() {
                            let _ = writeln!(out, "{inner}{name} = {}", expr.hcl(depth + 1));
                        } else {
                            let _ = writeln!(out, "{inner}{name:<width$} = {}", expr.hcl(depth + 1));
                        }
                    }
                }
                i += run.len();
                previous_was_block = false;
            }
            Item::Comment(text) => {
                if previous_was_block || i > 0 {
                    out.push('\n');
                }
                let _ = writeln!(out, "{inner}# {text}");
                i += 1;
                // The item after a comment sticks to it.
                previous_was_block = false;
                if let Some(Item::Block(b)) = block.body.get(i) {
                    write_block(out, b, depth + 1);
                    i += 1;
                    previous_was_block = true;
                }
            }
            Item::Block(b) => {
                if i > 0 {
                    out.push('\n');
                }
                write_block(out, b, depth + 1);
                i += 1;
                previous_was_block = true;
            }
        }
    }
    out.push_str(&indent);
    out.push_str("}\n");
}

/// Writes the same blocks in Terraform's JSON syntax (`.tf.json`): references become
/// `"${...}"` strings, repeated blocks become arrays, `header` becomes a `"//"` comment.
pub fn to_json(header: &[String], blocks: &[Block]) -> String {
    let mut root = serde_json::Map::new();
    if !header.is_empty() {
        root.insert("//".into(), header.join(" ").into());
    }
    for block in blocks {
        // resource "TYPE" "NAME" { ... } → {"resource": {"TYPE": {"NAME": {...}}}}
        let mut slot = root
            .entry(block.ident.clone())
            .or_insert_with(|| serde_json::Value::Object(Default::default()));
        for label in &block.labels {
            slot = slot
                .as_object_mut()
                .expect("labels nest objects")
                .entry(label.clone())
                .or_insert_with(|| serde_json::Value::Object(Default::default()));
        }
        *slot = body_json(&block.body);
    }
    let mut text = serde_json::to_string_pretty(&serde_json::Value::Object(root)).expect("JSON serializes");
    text.push('\n');
    text
}

fn body_json(body: &[Item]) -> serde_json::Value {
    let mut map = serde_json::Map::new();
    for item in body {
        match item {
            Item::Attribute(name, expr) => {
                map.insert(name.clone(), expr.json());
            }
            Item::Block(b) => {
                let entry = map
                    .entry(b.ident.clone())
                    .or_insert_with(|| serde_json::Value::Array(Vec::new()));
                if let serde_json::Value::Array(items) = entry {
                    items.push(body_json(&b.body));
                }
            }
            Item::Comment(_) => {}
        }
    }
    serde_json::Value::Object(map)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligns_runs_and_separates_blocks() {
        let block = Block::new("resource", &["t", "n"])
            .attr("name", Expr::Str("x".into()))
            .attr("load_balancing_scheme", Expr::Str("EXTERNAL_MANAGED".into()))
            .block(Block::new("backend", &[]).attr("group", Expr::Traversal(vec!["a".into(), "b".into(), "id".into()])))
            .block(Block::new("empty", &[]));
        let text = to_hcl(&["h".into()], &[block]);
        assert_eq!(
            text,
            "# h\n\nresource \"t\" \"n\" {\n  name                  = \"x\"\n  load_balancing_scheme = \"EXTERNAL_MANAGED\"\n\n  backend {\n    group = a.b.id\n  }\n\n  empty {}\n}\n"
        );
    }

    #[test]
    fn strings_never_become_templates() {
        assert_eq!(quote("a${b}\"c"), "\"a$${b}\\\"c\"");
    }
}
