//! The protocol-floor provider for `scripts/bench` (built with
//! `cargo build --release --example floor-provider`; never shipped).
//!
//! It is the `locality` provider with extra resources that do no work: each answers every RPC
//! through the same protocol layer (`locality::tfplugin`) and the same framework planning, but
//! its create returns the plan with computed values filled in, its read returns the prior state
//! and its delete does nothing. Comparing them with each other, with `terraform_data` and with
//! the real resources separates Terraform's own cost, the protocol's cost and the cost of a
//! schema's shape (one thing varied at a time):
//!
//! - `locality_floor`: the minimal schema, shaped like `terraform_data` (`id`, `input`);
//! - `locality_floor_zrm`: exactly `locality_zone_replica_map`'s schema (nested blocks, a
//!   sensitive `document`, descriptions);
//! - `locality_floor_zrm_plain`: the same with `document` not sensitive;
//! - `locality_floor_zrm_nested`: the same with nested attributes instead of blocks;
//! - `locality_floor_zrm_nodesc`: the same without descriptions;
//! - `locality_floor_zrm_nocomputed`: the same without its computed attributes but `id`;
//! - `locality_floor_big`: the minimal schema plus a computed `output` of 1,000 bytes, the
//!   state size of `locality_zone_replica_map` with 3 attributes instead of 13.
//!
//! `LOCALITY_FLOOR_ONLY=1` serves the floor resources alone (a small provider schema).

use std::process::ExitCode;
use std::sync::Arc;

use async_trait::async_trait;
use locality::provider::resources::zone_replica_map;
use locality::provider::{LocalityProvider, ProviderData, SOURCE_ADDRESS};
use locality::tfplugin::schema::AttributeKind;
use locality::tfplugin::{
    run, Attribute, Block, Context, Diagnostics, DynamicAction, DynamicDataSource, DynamicListResource,
    DynamicResource, Nesting, Provider, Schema, ServeOptions, Type, Value,
};

/// A resource that answers every RPC and does no work.
struct Floor {
    name: &'static str,
    /// Built once: `fill` reads it on every create and update.
    schema: Schema,
}

/// Fills every unknown top-level attribute with a value of its type (what a create returns);
/// `output` gets 1,000 bytes.
fn fill(schema: &Schema, planned: &Value) -> Value {
    let mut state = planned.clone();
    for attribute in &schema.block.attributes {
        if !state.get(&attribute.name).is_unknown() {
            continue;
        }
        let value = match attribute.value_type() {
            Type::String if attribute.name == "output" => Value::string("o".repeat(1000)),
            Type::String => Value::string(format!("{}-of-the-floor-resource", attribute.name)),
            other => sample(&other),
        };
        state.set(&attribute.name, value);
    }
    state
}

/// A value of `ty`: maps hold one AZ's entry of their element type (a map of strings, or of
/// lists as `replicas`), lists and sets are empty.
fn sample(ty: &Type) -> Value {
    match ty {
        Type::String => Value::string("node-1.example:6379"),
        Type::Map(element) => Value::Map([("ap-northeast-1a".to_string(), sample(element))].into()),
        Type::List(_) => Value::List(Vec::new()),
        Type::Set(_) => Value::Set(Vec::new()),
        Type::Bool => Value::Bool(false),
        _ => Value::Null,
    }
}

#[async_trait]
impl DynamicResource<ProviderData> for Floor {
    fn type_name(&self) -> &'static str {
        self.name
    }
    fn schema(&self) -> Schema {
        self.schema.clone()
    }
    async fn read(&self, _: &Context<ProviderData>, state: &Value, _: &mut Diagnostics) -> Option<Value> {
        Some(state.clone())
    }
    async fn create(&self, _: &Context<ProviderData>, planned: &Value, _: &mut Diagnostics) -> Option<Value> {
        Some(fill(&self.schema, planned))
    }
    async fn update(
        &self,
        _: &Context<ProviderData>,
        _: &Value,
        planned: &Value,
        _: &mut Diagnostics,
    ) -> Option<Value> {
        Some(fill(&self.schema, planned))
    }
    async fn delete(&self, _: &Context<ProviderData>, _: &Value, _: &mut Diagnostics) {}
}

/// `terraform_data`'s shape: a computed `id` and an optional `input`.
fn minimal() -> Schema {
    Schema {
        version: 0,
        block: Block::new("Does nothing.")
            .attribute(Attribute::string("id").computed().use_state_for_unknown())
            .attribute(Attribute::string("input").optional()),
    }
}

fn big() -> Schema {
    let mut schema = minimal();
    schema.block = schema.block.attribute(Attribute::string("output").computed());
    schema
}

fn zrm_nocomputed() -> Schema {
    let mut schema = zone_replica_map::schema();
    schema
        .block
        .attributes
        .retain(|a| a.name == "id" || a.optional || a.required);
    schema
}

fn zrm_plain() -> Schema {
    let mut schema = zone_replica_map::schema();
    for attribute in &mut schema.block.attributes {
        attribute.sensitive = false;
    }
    schema
}

/// The blocks become nested attributes of the same nesting (a max-1 list becomes single).
fn zrm_nested() -> Schema {
    let mut schema = zone_replica_map::schema();
    for block in std::mem::take(&mut schema.block.blocks) {
        let nesting = if block.max_items == 1 {
            Nesting::Single
        } else {
            block.nesting
        };
        schema
            .block
            .attributes
            .push(Attribute::nested(&block.name, nesting, block.block.attributes).optional());
    }
    schema
}

fn strip(block: &mut Block) {
    block.description.clear();
    for attribute in &mut block.attributes {
        attribute.description.clear();
        if let AttributeKind::Nested(_, inner) = &mut attribute.kind {
            inner.iter_mut().for_each(|a| a.description.clear());
        }
    }
    block.blocks.iter_mut().for_each(|b| strip(&mut b.block));
}

fn zrm_nodesc() -> Schema {
    let mut schema = zone_replica_map::schema();
    strip(&mut schema.block);
    schema
}

fn floors() -> Vec<Arc<dyn DynamicResource<ProviderData>>> {
    let floor = |name, schema: fn() -> Schema| {
        Arc::new(Floor { name, schema: schema() }) as Arc<dyn DynamicResource<ProviderData>>
    };
    vec![
        floor("locality_floor", minimal),
        floor("locality_floor_zrm", zone_replica_map::schema),
        floor("locality_floor_zrm_plain", zrm_plain),
        floor("locality_floor_zrm_nested", zrm_nested),
        floor("locality_floor_zrm_nodesc", zrm_nodesc),
        floor("locality_floor_zrm_nocomputed", zrm_nocomputed),
        floor("locality_floor_big", big),
    ]
}

/// The `locality` provider plus the floor resources (or the floor resources alone).
struct FloorProvider {
    only: bool,
}

#[async_trait]
impl Provider for FloorProvider {
    type Data = ProviderData;
    fn schema(&self) -> Schema {
        LocalityProvider.schema()
    }
    fn validate(&self, config: &Value, diags: &mut Diagnostics) {
        LocalityProvider.validate(config, diags);
    }
    async fn configure(
        &self,
        config: &Value,
        terraform_version: &str,
        diags: &mut Diagnostics,
    ) -> Option<ProviderData> {
        LocalityProvider.configure(config, terraform_version, diags).await
    }
    fn resources(&self) -> Vec<Arc<dyn DynamicResource<ProviderData>>> {
        let mut resources = if self.only {
            Vec::new()
        } else {
            LocalityProvider.resources()
        };
        resources.extend(floors());
        resources
    }
    fn data_sources(&self) -> Vec<Arc<dyn DynamicDataSource<ProviderData>>> {
        if self.only {
            Vec::new()
        } else {
            LocalityProvider.data_sources()
        }
    }
    fn list_resources(&self) -> Vec<Arc<dyn DynamicListResource<ProviderData>>> {
        if self.only {
            Vec::new()
        } else {
            LocalityProvider.list_resources()
        }
    }
    fn actions(&self) -> Vec<Arc<dyn DynamicAction<ProviderData>>> {
        if self.only {
            Vec::new()
        } else {
            LocalityProvider.actions()
        }
    }
    fn attribute_default(data: &ProviderData, key: &str) -> Option<Value> {
        LocalityProvider::attribute_default(data, key)
    }
}

fn main() -> ExitCode {
    let only = std::env::var("LOCALITY_FLOOR_ONLY").is_ok_and(|v| v == "1");
    run(
        || FloorProvider { only },
        ServeOptions {
            address: SOURCE_ADDRESS,
            debug: false,
        },
    )
}
