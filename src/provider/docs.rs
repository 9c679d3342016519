//! Renders the registry docs (`docs/index.md`, `docs/resources/*.md`, `docs/data-sources/*.md`)
//! from the schemas and from `examples/` (a resource's `guide.md` there is appended to its
//! page), in tfplugindocs' layout. `tests/docs.rs` fails when
//! the committed `docs/` differs; `BLESS=1 cargo test --test docs` rewrites it.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::tfplugin::schema::{Attribute, AttributeKind, Block, NestedBlock, Nesting};
use crate::tfplugin::{Provider, Schema};

use super::LocalityProvider;

/// One rendered page: its path under `docs/` and its content.
pub struct Page {
    /// e.g. `resources/zone_replica_map.md`
    pub path: PathBuf,
    /// Markdown.
    pub content: String,
}

/// Renders every page. `examples` is the repository's `examples/` folder.
///
/// # Errors
/// When an example file the docs embed is missing.
pub fn render_all(examples: &Path) -> std::io::Result<Vec<Page>> {
    let provider = LocalityProvider;
    let read = |p: &str| std::fs::read_to_string(examples.join(p));
    let mut pages = vec![Page {
        path: "index.md".into(),
        content: render_page(
            "locality Provider",
            "locality Provider",
            &provider.schema(),
            &read("provider/provider.tf")?,
            None,
        ),
    }];
    for resource in provider.resources() {
        let name = resource.type_name();
        let short = name.trim_start_matches("locality_");
        let import = read(&format!("resources/{name}/import.sh")).ok();
        let mut content = render_page(
            &format!("{name} Resource - locality"),
            &format!("{name} (Resource)"),
            &resource.schema(),
            &read(&format!("resources/{name}/resource.tf"))?,
            import.as_deref(),
        );
        // Longer guidance (e.g. a migration guide) written as Markdown next to the example.
        if let Ok(guide) = read(&format!("resources/{name}/guide.md")) {
            content = format!(
                "{content}

{}",
                guide.trim_end()
            );
        }
        pages.push(Page {
            path: format!("resources/{short}.md").into(),
            content,
        });
    }
    for data_source in provider.data_sources() {
        let name = data_source.type_name();
        let short = name.trim_start_matches("locality_");
        pages.push(Page {
            path: format!("data-sources/{short}.md").into(),
            content: render_page(
                &format!("{name} Data Source - locality"),
                &format!("{name} (Data Source)"),
                &data_source.schema(),
                &read(&format!("data-sources/{name}/data-source.tf"))?,
                None,
            ),
        });
    }
    Ok(pages)
}

fn render_page(page_title: &str, heading: &str, schema: &Schema, example: &str, import: Option<&str>) -> String {
    let block = &schema.block;
    let summary = block.description.split("\n\n").next().unwrap_or_default();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "---\n# Generated from the provider schema by src/provider/docs.rs; do not edit."
    );
    let _ = writeln!(out, "page_title: \"{page_title}\"\nsubcategory: \"\"\ndescription: |-");
    for line in summary.lines() {
        let _ = writeln!(out, "  {line}");
    }
    let _ = writeln!(out, "---\n\n# {heading}\n\n{}\n", block.description.trim_end());
    let _ = writeln!(out, "## Example Usage\n\n```terraform\n{}\n```\n", example.trim_end());
    let _ = writeln!(out, "## Schema\n");
    let mut nested = Vec::new();
    render_block(&mut out, block, "", &mut nested);
    while !nested.is_empty() {
        let (anchor, title, inner) = nested.remove(0);
        let _ = writeln!(out, "<a id=\"{anchor}\"></a>\n### Nested Schema for `{title}`\n");
        let mut more = Vec::new();
        render_block_inline(&mut out, &inner, &title, &mut more);
        nested.extend(more);
    }
    if let Some(import) = import {
        let _ = writeln!(
            out,
            "## Import\n\nImport is supported using the following syntax:\n\n```shell\n{}\n```",
            import.trim_end()
        );
    }
    while out.ends_with("\n\n") {
        out.pop();
    }
    out
}

/// A nested block or nested attribute still to document: (anchor, dotted path, content).
type Pending = Vec<(String, String, Block)>;

fn render_block(out: &mut String, block: &Block, prefix: &str, nested: &mut Pending) {
    for (heading, group) in groups(block) {
        if group.is_empty() {
            continue;
        }
        let _ = writeln!(out, "### {heading}\n");
        for line in group.iter().map(|item| item.line(prefix, nested)) {
            let _ = writeln!(out, "{line}");
        }
        let _ = writeln!(out);
    }
}

fn render_block_inline(out: &mut String, block: &Block, prefix: &str, nested: &mut Pending) {
    for (heading, group) in groups(block) {
        if group.is_empty() {
            continue;
        }
        let _ = writeln!(out, "{heading}:\n");
        for line in group.iter().map(|item| item.line(prefix, nested)) {
            let _ = writeln!(out, "{line}");
        }
        let _ = writeln!(out);
    }
}

enum Item<'a> {
    Attr(&'a Attribute),
    Block(&'a NestedBlock),
}

fn groups(block: &Block) -> [(&'static str, Vec<Item<'_>>); 3] {
    let mut required = Vec::new();
    let mut optional = Vec::new();
    let mut read_only = Vec::new();
    let mut items: Vec<(&str, Item<'_>)> = block
        .attributes
        .iter()
        .map(|a| (a.name.as_str(), Item::Attr(a)))
        .chain(block.blocks.iter().map(|b| (b.name.as_str(), Item::Block(b))))
        .collect();
    items.sort_by(|a, b| a.0.cmp(b.0));
    for (_, item) in items {
        match &item {
            Item::Attr(a) if a.required => required.push(item),
            Item::Attr(a) if a.optional => optional.push(item),
            Item::Attr(_) => read_only.push(item),
            Item::Block(b) if b.min_items > 0 => required.push(item),
            Item::Block(_) => optional.push(item),
        }
    }
    [("Required", required), ("Optional", optional), ("Read-Only", read_only)]
}

impl Item<'_> {
    fn line(&self, prefix: &str, nested: &mut Pending) -> String {
        let path = |name: &str| {
            if prefix.is_empty() {
                name.to_string()
            } else {
                format!("{prefix}.{name}")
            }
        };
        match self {
            Item::Attr(a) => {
                let (kind, link) = match &a.kind {
                    AttributeKind::Typed(t) => (t.friendly_name(), String::new()),
                    AttributeKind::Nested(nesting, attrs) => {
                        let anchor = format!("nestedatt--{}", path(&a.name).replace('.', "--"));
                        let inner = Block {
                            attributes: attrs.clone(),
                            ..Block::default()
                        };
                        nested.push((anchor.clone(), path(&a.name), inner));
                        (
                            format!("Attributes {}", nesting_name(*nesting)),
                            format!(" (see [below for nested schema](#{anchor}))"),
                        )
                    }
                };
                let mut flags = Vec::new();
                if a.sensitive {
                    flags.push("Sensitive");
                }
                if !a.deprecation.is_empty() {
                    flags.push("Deprecated");
                }
                let kind = if flags.is_empty() {
                    kind
                } else {
                    format!("{kind}, {}", flags.join(", "))
                };
                let mut description = a.description.clone();
                if let Some(default) = &a.default {
                    if let Some(s) = default.as_str() {
                        let _ = write!(description, " Default: `\"{s}\"`.");
                    } else if let Some(b) = default.as_bool() {
                        let _ = write!(description, " Default: `{b}`.");
                    }
                }
                if !a.deprecation.is_empty() {
                    let _ = write!(description, " **Deprecated:** {}", a.deprecation);
                }
                format!("- `{}` ({kind}) {}{link}", a.name, description.trim())
            }
            Item::Block(b) => {
                let anchor = format!("nestedblock--{}", path(&b.name).replace('.', "--"));
                nested.push((anchor.clone(), path(&b.name), b.block.clone()));
                let max = if b.max_items > 0 {
                    format!(", Max: {}", b.max_items)
                } else {
                    String::new()
                };
                let min = if b.min_items > 0 {
                    format!(", Min: {}", b.min_items)
                } else {
                    String::new()
                };
                format!(
                    "- `{}` (Block {}{min}{max}) {} (see [below for nested schema](#{anchor}))",
                    b.name,
                    nesting_name(b.nesting),
                    b.block.description.trim()
                )
            }
        }
    }
}

fn nesting_name(nesting: Nesting) -> &'static str {
    match nesting {
        Nesting::Single | Nesting::Group => "Single",
        Nesting::List => "List",
        Nesting::Set => "Set",
        Nesting::Map => "Map",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tfplugin::schema::walk_attributes;

    /// Descriptions are the docs: none may be empty.
    #[test]
    fn every_schema_element_has_a_description() {
        let provider = LocalityProvider;
        let mut schemas = vec![("provider".to_string(), provider.schema())];
        schemas.extend(
            provider
                .resources()
                .iter()
                .map(|r| (r.type_name().to_string(), r.schema())),
        );
        schemas.extend(
            provider
                .data_sources()
                .iter()
                .map(|d| (d.type_name().to_string(), d.schema())),
        );
        for (name, schema) in schemas {
            assert!(!schema.block.description.is_empty(), "{name}");
            let mut attrs = Vec::new();
            walk_attributes(&schema.block, "", &mut attrs);
            for (path, attr) in attrs {
                assert!(!attr.description.trim().is_empty(), "{name}.{path} has no description");
            }
            fn blocks(block: &Block, name: &str) {
                for nested in &block.blocks {
                    assert!(
                        !nested.block.description.is_empty(),
                        "{name}: block {} has no description",
                        nested.name
                    );
                    blocks(&nested.block, name);
                }
            }
            blocks(&schema.block, &name);
        }
    }
}
