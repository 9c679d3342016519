//! Renders the registry docs (`docs/index.md`, `docs/resources/*.md`, `docs/data-sources/*.md`,
//! `docs/list-resources/*.md`, `docs/actions/*.md`, `docs/functions/*.md`) from the schemas, the
//! function definitions and `examples/`, in
//! tfplugindocs' layout: resource pages show import by command, by `id` and by `identity` (with
//! the identity schema) when the examples exist; a `guide.md` next to a resource's, list
//! resource's or action's example is appended to its page. `tests/docs.rs` fails when
//! the committed `docs/` differs; `BLESS=1 cargo test --test docs` rewrites it.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::tfplugin::schema::{Attribute, AttributeKind, Block, NestedBlock, Nesting};
use crate::tfplugin::{IdentitySchema, Provider, Schema};

use super::LocalityProvider;

/// One rendered page: its path under `docs/` and its content.
pub struct Page {
    /// e.g. `resources/zone_replica_map.md`
    pub path: PathBuf,
    /// Markdown.
    pub content: String,
}

/// The ways a resource page shows how to import: the `terraform import` command
/// (`import.sh`), an `import` block with `id` (`import-by-string-id.tf`), and one with
/// `identity` (`import-by-identity.tf`, with the identity schema), as tfplugindocs lays them out.
#[derive(Default)]
struct Import<'a> {
    command: Option<String>,
    by_id: Option<String>,
    by_identity: Option<(String, &'a IdentitySchema)>,
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
            ("terraform", &read("provider/provider.tf")?),
            &Import::default(),
        ),
    }];
    for resource in provider.resources() {
        let name = resource.type_name();
        let short = name.trim_start_matches("locality_");
        let identity = resource.identity_schema();
        let by_identity = read(&format!("resources/{name}/import-by-identity.tf")).ok();
        let import = Import {
            command: read(&format!("resources/{name}/import.sh")).ok(),
            by_id: read(&format!("resources/{name}/import-by-string-id.tf")).ok(),
            by_identity: by_identity.zip(identity.as_ref()),
        };
        let mut content = render_page(
            &format!("{name} Resource - locality"),
            &format!("{name} (Resource)"),
            &resource.schema(),
            ("terraform", &read(&format!("resources/{name}/resource.tf"))?),
            &import,
        );
        content = with_guide(content, read(&format!("resources/{name}/guide.md")).ok());
        pages.push(Page {
            path: format!("resources/{short}.md").into(),
            content,
        });
    }
    for data_source in provider.data_sources() {
        let name = data_source.type_name();
        let short = name.trim_start_matches("locality_");
        let content = render_page(
            &format!("{name} Data Source - locality"),
            &format!("{name} (Data Source)"),
            &data_source.schema(),
            ("terraform", &read(&format!("data-sources/{name}/data-source.tf"))?),
            &Import::default(),
        );
        pages.push(Page {
            path: format!("data-sources/{short}.md").into(),
            content: with_guide(content, read(&format!("data-sources/{name}/guide.md")).ok()),
        });
    }
    for list in provider.list_resources() {
        let name = list.type_name();
        let short = name.trim_start_matches("locality_");
        let content = render_page(
            &format!("{name} List Resource - locality"),
            &format!("{name} (List Resource)"),
            &list.schema(),
            (
                "terraform",
                &read(&format!("list-resources/{name}/list-resource.tfquery.hcl"))?,
            ),
            &Import::default(),
        );
        pages.push(Page {
            path: format!("list-resources/{short}.md").into(),
            content: with_guide(content, read(&format!("list-resources/{name}/guide.md")).ok()),
        });
    }
    for action in provider.actions() {
        let name = action.type_name();
        let short = name.trim_start_matches("locality_");
        let content = render_page(
            &format!("{name} Action - locality"),
            &format!("{name} (Action)"),
            &action.schema(),
            ("terraform", &read(&format!("actions/{name}/action.tf"))?),
            &Import::default(),
        );
        pages.push(Page {
            path: format!("actions/{short}.md").into(),
            content: with_guide(content, read(&format!("actions/{name}/guide.md")).ok()),
        });
    }
    for function in provider.functions() {
        let definition = function.definition();
        let name = definition.name;
        pages.push(Page {
            path: format!("functions/{name}.md").into(),
            content: render_function(&definition, &read(&format!("functions/{name}/function.tf"))?),
        });
    }
    Ok(pages)
}

/// A function's page, in tfplugindocs' layout: summary, description, example, signature,
/// arguments.
fn render_function(definition: &crate::tfplugin::FunctionDefinition, example: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "---\n# Generated from the provider's function definitions by src/provider/docs.rs; do not edit.\npage_title: \"{name} function - locality\"\nsubcategory: \"\"\ndescription: |-\n  {summary}\n---\n\n# function: {name}\n\n{description}\n\n## Example Usage\n\n```terraform\n{example}\n```\n",
        name = definition.name,
        summary = definition.summary,
        description = definition.description.trim_end(),
        example = example.trim_end()
    );
    let parameters: Vec<String> = definition
        .parameters
        .iter()
        .map(|p| format!("{} {}", p.name, p.ty.friendly_name().to_lowercase()))
        .collect();
    let _ = writeln!(
        out,
        "## Signature\n\n<!-- doc-test: run-by: tests/functions.rs::functions_in_console_and_outputs_under_both_terraform_versions -->\n```text\n{}({}) {}\n```\n\n## Arguments\n",
        definition.name,
        parameters.join(", "),
        definition.return_type.friendly_name().to_lowercase()
    );
    for (n, p) in definition.parameters.iter().enumerate() {
        let _ = writeln!(
            out,
            "{}. `{}` ({}) {}",
            n + 1,
            p.name,
            p.ty.friendly_name(),
            p.description
        );
    }
    out
}

/// A page with its longer guidance (a migration guide, a runbook: `guide.md` next to the
/// example, Markdown) appended.
fn with_guide(content: String, guide: Option<String>) -> String {
    match guide {
        Some(guide) => format!("{content}\n\n{}", guide.trim_end()),
        None => content,
    }
}

fn render_page(page_title: &str, heading: &str, schema: &Schema, example: (&str, &str), import: &Import<'_>) -> String {
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
    let _ = writeln!(
        out,
        "## Example Usage\n\n```{}\n{}\n```\n",
        example.0,
        example.1.trim_end()
    );
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
    if import.command.is_some() || import.by_id.is_some() || import.by_identity.is_some() {
        let _ = writeln!(out, "## Import\n\nImport is supported using the following syntax:\n");
        if let Some((example, identity)) = &import.by_identity {
            let _ = writeln!(
                out,
                "In Terraform v1.12.0 and later, the [`import` block](https://developer.hashicorp.com/terraform/language/import) can be used with the `identity` attribute, for example:\n\n```terraform\n{}\n```\n",
                example.trim_end()
            );
            render_identity(&mut out, identity);
        }
        if let Some(example) = &import.by_id {
            let _ = writeln!(
                out,
                "In Terraform v1.5.0 and later, the [`import` block](https://developer.hashicorp.com/terraform/language/import) can be used with the `id` attribute, for example:\n\n```terraform\n{}\n```\n",
                example.trim_end()
            );
        }
        if let Some(command) = &import.command {
            let _ = writeln!(
                out,
                "The [`terraform import` command](https://developer.hashicorp.com/terraform/cli/commands/import) can be used, for example:\n\n```shell\n{}\n```",
                command.trim_end()
            );
        }
    }
    while out.ends_with("\n\n") {
        out.pop();
    }
    out
}

/// The identity schema, as tfplugindocs renders it under Import.
fn render_identity(out: &mut String, identity: &IdentitySchema) {
    let _ = writeln!(out, "<a id=\"identity-schema\"></a>\n### Identity Schema\n");
    for (heading, required) in [("Required", true), ("Optional", false)] {
        let attributes: Vec<_> = identity
            .attributes
            .iter()
            .filter(|a| a.required_for_import == required)
            .collect();
        if attributes.is_empty() {
            continue;
        }
        let _ = writeln!(out, "#### {heading}\n");
        for a in attributes {
            let _ = writeln!(
                out,
                "- `{}` ({}) {}",
                a.name,
                a.ty.friendly_name(),
                a.description.trim()
            );
        }
        let _ = writeln!(out);
    }
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

/// The markers around the generated table of the replica map's fields in
/// `docs/guides/consuming-the-replica-map.md`.
pub const MAP_TABLE_BEGIN: &str =
    "<!-- generated from schema/replica-map.v1.schema.json (BLESS=1 cargo test --test docs): do not edit -->";
/// The end marker of the generated table.
pub const MAP_TABLE_END: &str = "<!-- end of the generated table -->";

/// The table of the replica map's fields (field, required, what), from its JSON Schema: every
/// top-level property in the schema's order, and the properties of array items as
/// `field[].name`. The descriptions are the schema's, so the guide and the schema cannot part.
///
/// # Errors
/// When `schema` is not JSON, or has no `properties`.
pub fn replica_map_table(schema: &str) -> Result<String, String> {
    let schema: serde_json::Value = serde_json::from_str(schema).map_err(|e| format!("the schema is not JSON: {e}"))?;
    let mut table = String::from("| field | required | what |\n|---|---|---|\n");
    fn rows(table: &mut String, prefix: &str, object: &serde_json::Value) -> Result<(), String> {
        let properties = object["properties"]
            .as_object()
            .ok_or_else(|| format!("{prefix}: no properties in the schema"))?;
        let required: Vec<&str> = object["required"]
            .as_array()
            .map(|r| r.iter().filter_map(|v| v.as_str()).collect())
            .unwrap_or_default();
        for (name, property) in properties {
            let description = property["description"].as_str().unwrap_or_default().replace('|', "\\|");
            let required = if required.contains(&name.as_str()) { "yes" } else { "no" };
            let _ = writeln!(table, "| `{prefix}{name}` | {required} | {description} |");
            if property["items"]["properties"].is_object() {
                rows(table, &format!("{prefix}{name}[]."), &property["items"])?;
            }
        }
        Ok(())
    }
    rows(&mut table, "", &schema)?;
    Ok(table)
}

/// `text` with what lies between [`MAP_TABLE_BEGIN`] and [`MAP_TABLE_END`] replaced by
/// `table`.
///
/// # Errors
/// When the markers are missing or out of order.
pub fn with_map_table(text: &str, table: &str) -> Result<String, String> {
    let begin = text
        .find(MAP_TABLE_BEGIN)
        .ok_or("the guide has no generated table's begin marker")?
        + MAP_TABLE_BEGIN.len();
    let end = text[begin..]
        .find(MAP_TABLE_END)
        .ok_or("the guide has no generated table's end marker")?
        + begin;
    Ok(format!("{}\n{table}{}", &text[..begin], &text[end..]))
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
