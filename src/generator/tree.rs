//! The spec as a spanned tree of blocks and attributes, read from HCL (hcl-edit, which keeps
//! source spans) or from JSON of the same structure (jsonc-parser, which keeps ranges).
//!
//! JSON follows Terraform's JSON syntax: a labeled block is an object keyed by its label
//! (`"region": {"tokyo": {...}}`), an unlabeled block is an object (or an array of them).

use std::ops::Range;

use jsonc_parser::common::Ranged as _;

use super::diagnostic::SpecDiagnostic;

/// A string with where it came from.
#[derive(Debug, Clone)]
pub struct Spanned<T> {
    /// The value.
    pub value: T,
    /// Byte range in the spec.
    pub span: Range<usize>,
}

/// An attribute value.
#[derive(Debug, Clone)]
pub enum Literal {
    /// A string.
    Str(String),
    /// A number, as written.
    Num(String),
    /// A bool.
    Bool(bool),
    /// A list.
    List(Vec<Spanned<Literal>>),
    /// Anything else (an expression, an object, null): named for the error message.
    Other(&'static str),
}

/// A block of the spec.
#[derive(Debug, Clone)]
pub struct Node {
    /// The block type.
    pub ident: Spanned<String>,
    /// Its labels.
    pub labels: Vec<Spanned<String>>,
    /// Attributes in source order.
    pub attributes: Vec<(Spanned<String>, Spanned<Literal>)>,
    /// Nested blocks in source order.
    pub blocks: Vec<Node>,
}

/// Which block types exist and how many labels each takes: the JSON reader needs it to tell
/// blocks from attributes.
pub type BlockShape = fn(parent: &str, name: &str) -> Option<usize>;

fn span_of(s: &impl hcl_edit::repr::Span) -> Range<usize> {
    s.span().unwrap_or(0..0)
}

/// Reads an HCL spec.
///
/// # Errors
/// A syntax error with its location.
pub fn from_hcl(text: &str) -> Result<Node, SpecDiagnostic> {
    let body = hcl_edit::parser::parse_body(text).map_err(|e| {
        let loc = e.location();
        let offset = line_col_to_offset(text, loc.line(), loc.column());
        SpecDiagnostic::error(offset..offset + 1, format!("syntax error: {}", e.message()))
    })?;
    Ok(Node {
        ident: Spanned {
            value: String::new(),
            span: 0..0,
        },
        labels: Vec::new(),
        attributes: body.attributes().map(hcl_attribute).collect(),
        blocks: body.blocks().map(hcl_block).collect(),
    })
}

/// The byte offset of a 1-based line and column, the column counted in characters (as the
/// HCL parser counts it): multi-byte text before the error must not shift it off a character
/// boundary.
fn line_col_to_offset(text: &str, line: usize, col: usize) -> usize {
    let start: usize = text
        .split_inclusive('\n')
        .take(line.saturating_sub(1))
        .map(str::len)
        .sum();
    let start = start.min(text.len());
    let in_line = text[start..]
        .char_indices()
        .nth(col.saturating_sub(1))
        .map_or(text.len() - start, |(i, _)| i);
    start + in_line
}

fn hcl_block(block: &hcl_edit::structure::Block) -> Node {
    Node {
        ident: Spanned {
            value: block.ident.as_str().to_string(),
            span: span_of(&block.ident),
        },
        labels: block
            .labels
            .iter()
            .map(|l| Spanned {
                value: l.as_str().to_string(),
                span: span_of(l),
            })
            .collect(),
        attributes: block.body.attributes().map(hcl_attribute).collect(),
        blocks: block.body.blocks().map(hcl_block).collect(),
    }
}

fn hcl_attribute(attr: &hcl_edit::structure::Attribute) -> (Spanned<String>, Spanned<Literal>) {
    (
        Spanned {
            value: attr.key.as_str().to_string(),
            span: span_of(&attr.key),
        },
        hcl_literal(&attr.value),
    )
}

fn hcl_literal(expr: &hcl_edit::expr::Expression) -> Spanned<Literal> {
    use hcl_edit::expr::Expression as E;
    let value = match expr {
        E::String(s) => Literal::Str(s.as_str().to_string()),
        E::Number(n) => Literal::Num(n.as_ref().to_string()),
        E::Bool(b) => Literal::Bool(*b.value()),
        E::Array(items) => Literal::List(items.iter().map(hcl_literal).collect()),
        E::Null(_) => Literal::Other("null"),
        E::Object(_) => Literal::Other("an object"),
        E::StringTemplate(_) | E::HeredocTemplate(_) => Literal::Other("a template"),
        _ => Literal::Other("an expression"),
    };
    Spanned {
        value,
        span: span_of(expr),
    }
}

/// Reads a JSON spec with the given block shapes.
///
/// # Errors
/// A syntax error, or a block written with the wrong JSON shape.
pub fn from_json(text: &str, shape: BlockShape) -> Result<Node, Vec<SpecDiagnostic>> {
    use jsonc_parser::ast::Value as J;
    // JSON as every JSON parser reads it: jsonc-parser's leniencies (missing or trailing
    // commas, comments, single quotes, JSON5 numbers) all off.
    let options = jsonc_parser::ParseOptions {
        allow_comments: false,
        allow_loose_object_property_names: false,
        allow_trailing_commas: false,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
        allow_bare_decimal_point_numbers: false,
        allow_non_finite_numbers: false,
        allow_extended_string_escapes: false,
    };
    let parsed = jsonc_parser::parse_to_ast(text, &Default::default(), &options).map_err(|e| {
        let r = e.range();
        vec![SpecDiagnostic::error(
            r.start..r.end.max(r.start + 1),
            format!("syntax error: {}", e.kind()),
        )]
    })?;
    let Some(J::Object(root)) = parsed.value else {
        return Err(vec![SpecDiagnostic::error(0..1, "a JSON spec must be an object")
            .help(r#"expected {"service": {"NAME": {...}}}"#)]);
    };
    let mut errors = Vec::new();
    let mut node = Node {
        ident: Spanned {
            value: String::new(),
            span: 0..0,
        },
        labels: Vec::new(),
        attributes: Vec::new(),
        blocks: Vec::new(),
    };
    json_body(&root, "", shape, &mut node, &mut errors);
    if errors.is_empty() {
        Ok(node)
    } else {
        Err(errors)
    }
}

fn range(r: jsonc_parser::common::Range) -> Range<usize> {
    r.start..r.end
}

fn json_body(
    object: &jsonc_parser::ast::Object<'_>,
    block_name: &str,
    shape: BlockShape,
    node: &mut Node,
    errors: &mut Vec<SpecDiagnostic>,
) {
    use jsonc_parser::ast::Value as J;
    for prop in &object.properties {
        let key = prop.name.as_str().to_string();
        let key_span = match &prop.name {
            jsonc_parser::ast::ObjectPropName::String(s) => range(s.range),
            jsonc_parser::ast::ObjectPropName::Word(w) => range(w.range),
        };
        let ident = Spanned {
            value: key.clone(),
            span: key_span.clone(),
        };
        match shape(block_name, &key) {
            Some(0) => {
                let bodies: Vec<&jsonc_parser::ast::Object<'_>> = match &prop.value {
                    J::Object(o) => vec![o],
                    J::Array(a) => a
                        .elements
                        .iter()
                        .filter_map(|e| if let J::Object(o) = e { Some(o) } else { None })
                        .collect(),
                    other => {
                        errors.push(SpecDiagnostic::error(
                            range(other.range()),
                            format!("`{key}` is a block: write it as a JSON object"),
                        ));
                        continue;
                    }
                };
                for body in bodies {
                    let mut child = Node {
                        ident: ident.clone(),
                        labels: Vec::new(),
                        attributes: Vec::new(),
                        blocks: Vec::new(),
                    };
                    json_body(body, &key, shape, &mut child, errors);
                    node.blocks.push(child);
                }
            }
            Some(_) => {
                let J::Object(by_label) = &prop.value else {
                    errors.push(
                        SpecDiagnostic::error(
                            range(prop.value.range()),
                            format!("`{key}` blocks are written as an object keyed by label"),
                        )
                        .help(format!(r#"e.g. "{key}": {{"NAME": {{...}}}}"#)),
                    );
                    continue;
                };
                for labeled in &by_label.properties {
                    let label_span = match &labeled.name {
                        jsonc_parser::ast::ObjectPropName::String(s) => range(s.range),
                        jsonc_parser::ast::ObjectPropName::Word(w) => range(w.range),
                    };
                    let J::Object(body) = &labeled.value else {
                        errors.push(SpecDiagnostic::error(
                            range(labeled.value.range()),
                            format!("the body of a `{key}` block must be a JSON object"),
                        ));
                        continue;
                    };
                    let mut child = Node {
                        ident: ident.clone(),
                        labels: vec![Spanned {
                            value: labeled.name.as_str().to_string(),
                            span: label_span,
                        }],
                        attributes: Vec::new(),
                        blocks: Vec::new(),
                    };
                    json_body(body, &key, shape, &mut child, errors);
                    node.blocks.push(child);
                }
            }
            None => node.attributes.push((ident, json_literal(&prop.value))),
        }
    }
}

fn json_literal(value: &jsonc_parser::ast::Value<'_>) -> Spanned<Literal> {
    use jsonc_parser::ast::Value as J;
    let literal = match value {
        J::StringLit(s) => Literal::Str(s.value.to_string()),
        J::NumberLit(n) => Literal::Num(n.value.to_string()),
        J::BooleanLit(b) => Literal::Bool(b.value),
        J::Array(a) => Literal::List(a.elements.iter().map(json_literal).collect()),
        J::Object(_) => Literal::Other("an object"),
        J::NullKeyword(_) => Literal::Other("null"),
    };
    Spanned {
        value: literal,
        span: range(value.range()),
    }
}
