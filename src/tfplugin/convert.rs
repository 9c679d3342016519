//! Conversions between the protocol layer's own types and the generated protobuf types.

use super::diagnostics::{AttributePath, Diagnostic, Diagnostics, PathStep, Severity};
use super::proto::tfplugin6 as pb;
use super::schema::{Attribute, AttributeKind, Block, Nesting, Schema};
use super::value::{decode_msgpack, encode_msgpack, Type, Value};

pub(crate) fn schema_to_pb(schema: &Schema) -> pb::Schema {
    pb::Schema {
        version: schema.version,
        block: Some(block_to_pb(&schema.block)),
    }
}

fn block_to_pb(block: &Block) -> pb::schema::Block {
    pb::schema::Block {
        version: 0,
        attributes: block.attributes.iter().map(attribute_to_pb).collect(),
        block_types: block
            .blocks
            .iter()
            .map(|nested| pb::schema::NestedBlock {
                type_name: nested.name.clone(),
                block: Some(block_to_pb(&nested.block)),
                nesting: match nested.nesting {
                    Nesting::Single => pb::schema::nested_block::NestingMode::Single,
                    Nesting::List => pb::schema::nested_block::NestingMode::List,
                    Nesting::Set => pb::schema::nested_block::NestingMode::Set,
                    Nesting::Map => pb::schema::nested_block::NestingMode::Map,
                    Nesting::Group => pb::schema::nested_block::NestingMode::Group,
                } as i32,
                min_items: nested.min_items,
                max_items: nested.max_items,
            })
            .collect(),
        description: block.description.clone(),
        description_kind: pb::StringKind::Markdown as i32,
        deprecated: !block.deprecation.is_empty(),
    }
}

fn attribute_to_pb(attr: &Attribute) -> pb::schema::Attribute {
    let (ty, nested_type) = match &attr.kind {
        // Terraform rejects an attribute with both `type` and `nested_type` set.
        AttributeKind::Typed(t) => (t.to_json_bytes(), None),
        AttributeKind::Nested(nesting, attrs) => (
            Vec::new(),
            Some(pb::schema::Object {
                attributes: attrs.iter().map(attribute_to_pb).collect(),
                nesting: match nesting {
                    Nesting::Single | Nesting::Group => pb::schema::object::NestingMode::Single,
                    Nesting::List => pb::schema::object::NestingMode::List,
                    Nesting::Set => pb::schema::object::NestingMode::Set,
                    Nesting::Map => pb::schema::object::NestingMode::Map,
                } as i32,
                #[allow(deprecated)]
                min_items: 0,
                #[allow(deprecated)]
                max_items: 0,
            }),
        ),
    };
    let description = if attr.deprecation.is_empty() {
        attr.description.clone()
    } else {
        format!("{} **Deprecated:** {}", attr.description, attr.deprecation)
    };
    pb::schema::Attribute {
        name: attr.name.clone(),
        r#type: ty,
        nested_type,
        description,
        required: attr.required,
        optional: attr.optional,
        computed: attr.computed,
        sensitive: attr.sensitive,
        description_kind: pb::StringKind::Markdown as i32,
        deprecated: !attr.deprecation.is_empty(),
        write_only: false,
    }
}

pub(crate) fn diagnostics_to_pb(diags: &Diagnostics) -> Vec<pb::Diagnostic> {
    diags.iter().map(diagnostic_to_pb).collect()
}

fn diagnostic_to_pb(d: &Diagnostic) -> pb::Diagnostic {
    pb::Diagnostic {
        // Never INVALID (0): Terraform would treat it as non-fatal.
        severity: match d.severity {
            Severity::Error => pb::diagnostic::Severity::Error,
            Severity::Warning => pb::diagnostic::Severity::Warning,
        } as i32,
        summary: d.summary.clone(),
        detail: d.detail.clone(),
        attribute: d.path.as_ref().map(path_to_pb),
    }
}

pub(crate) fn path_to_pb(path: &AttributePath) -> pb::AttributePath {
    use pb::attribute_path::step::Selector;
    pb::AttributePath {
        steps: path
            .0
            .iter()
            .map(|step| pb::attribute_path::Step {
                selector: Some(match step {
                    PathStep::Attribute(n) => Selector::AttributeName(n.clone()),
                    PathStep::Key(k) => Selector::ElementKeyString(k.clone()),
                    PathStep::Index(i) => Selector::ElementKeyInt(*i),
                }),
            })
            .collect(),
    }
}

/// Decodes a request DynamicValue (msgpack; JSON tolerated) into the schema's type.
pub(crate) fn decode_dynamic(
    dv: Option<&pb::DynamicValue>,
    ty: &Type,
    what: &str,
    diags: &mut Diagnostics,
) -> Option<Value> {
    let Some(dv) = dv else { return Some(Value::Null) };
    let result = if !dv.msgpack.is_empty() {
        decode_msgpack(&dv.msgpack, ty).map_err(|e| e.to_string())
    } else if !dv.json.is_empty() {
        super::value::decode_json(&dv.json, ty).map_err(|e| e.to_string())
    } else {
        Ok(Value::Null)
    };
    match result {
        Ok(v) => Some(v),
        Err(e) => {
            diags.error(
                "Invalid value from Terraform",
                format!("The provider could not decode the {what}: {e}. This is a bug in the provider."),
            );
            None
        }
    }
}

pub(crate) fn encode_dynamic(value: &Value, ty: &Type) -> pb::DynamicValue {
    pb::DynamicValue {
        msgpack: encode_msgpack(value, ty),
        json: Vec::new(),
    }
}
