//! `locality_zone_replica_map`: the per-AZ replica endpoint map (DESIGN.md §2.2).
//!
//! - `schema.rs`: the schema (its descriptions are the docs);
//! - `validate.rs`: offline configuration checks;
//! - `model.rs`: topology → map → document, and back;
//! - `target.rs`: where the document is published and read back;
//! - this file: the Terraform lifecycle glue.

mod model;
mod schema;
mod target;
mod validate;

use std::collections::BTreeSet;

use async_trait::async_trait;

pub use model::{parse_document, Member, ReplicaMap, Role, Topology};
pub use schema::schema;
pub use validate::{check_endpoint, is_zone_name};

use self::target::{Target, KNOWN_KINDS};
use crate::provider::ProviderData;
use crate::tfplugin::{Context, Diagnostics, PlanRequest, Resource, Schema, Value};

/// The resource type.
pub struct ZoneReplicaMap;

/// The Terraform type name.
pub const TYPE_NAME: &str = "locality_zone_replica_map";

#[async_trait]
impl Resource<ProviderData> for ZoneReplicaMap {
    fn type_name(&self) -> &'static str {
        TYPE_NAME
    }

    fn schema(&self) -> Schema {
        schema()
    }

    fn validate(&self, config: &Value, diags: &mut Diagnostics) {
        validate::validate(config, diags);
    }

    async fn modify_plan(
        &self,
        _ctx: &Context<ProviderData>,
        _req: PlanRequest<'_>,
        planned: &mut Value,
        _diags: &mut Diagnostics,
    ) {
        // Everything is derivable from configuration when it is known, so the plan shows the
        // exact endpoints (naming the AZ that changes) instead of "(known after apply)".
        if let Some(target) = target_of(planned) {
            planned.set("id", target.id().into());
        }
        if let Some(topology) = topology_of(planned) {
            set_published(planned, &topology.replica_map());
        }
    }

    async fn read(&self, _ctx: &Context<ProviderData>, state: &Value, diags: &mut Diagnostics) -> Option<Value> {
        let Some(target) = target_of(state) else {
            diags.error(
                "Invalid state",
                "The state has no publish target; import the resource again.",
            );
            return Some(state.clone());
        };
        match target.read().await {
            Ok(None) => None,
            Ok(Some(bytes)) => {
                let text = String::from_utf8_lossy(&bytes).into_owned();
                let published = parse_document(&text);
                let mut new = state.clone();
                new.set("id", target.id().into());
                new.set("endpoints", string_map(&published.endpoints));
                if let Some(fallback) = published.fallback {
                    new.set("fallback_endpoint", fallback.into());
                }
                new.set("version", model::sha256_hex(&bytes).into());
                new.set("document", text.into());
                Some(new)
            }
            Err(e) => {
                diags.error("Cannot read the published replica map", e);
                Some(state.clone())
            }
        }
    }

    async fn create(&self, _ctx: &Context<ProviderData>, planned: &Value, diags: &mut Diagnostics) -> Option<Value> {
        publish(planned, diags).await
    }

    async fn update(
        &self,
        _ctx: &Context<ProviderData>,
        _prior: &Value,
        planned: &Value,
        diags: &mut Diagnostics,
    ) -> Option<Value> {
        publish(planned, diags).await
    }

    async fn delete(&self, _ctx: &Context<ProviderData>, prior: &Value, diags: &mut Diagnostics) {
        if let Some(target) = target_of(prior) {
            if let Err(e) = target.delete().await {
                diags.error("Cannot remove the published replica map", e);
            }
        }
    }

    async fn import(&self, _ctx: &Context<ProviderData>, id: &str, diags: &mut Diagnostics) -> Option<Value> {
        let (kind, name) = match id.split_once(':') {
            Some((kind, name)) if KNOWN_KINDS.contains(&kind) => (kind, name),
            _ => ("file", id),
        };
        if kind != "file" {
            diags.error(
                "Unsupported publish target",
                format!("Import ID {id:?} names a `{kind}` target, which this version of the provider does not support yet. Supported: `file:<path>` (or a bare path)."),
            );
            return None;
        }
        if name.is_empty() {
            diags.error(
                "Invalid import ID",
                "Expected `file:<path>` or a file path, e.g. `file:replicas.json`.",
            );
            return None;
        }
        let target = Target::File(name.into());
        Some(Value::object([
            ("id", Value::from(target.id())),
            ("file", Value::List(vec![Value::object([("path", Value::from(name))])])),
            ("member", Value::List(Vec::new())),
        ]))
    }
}

/// Writes the document for a planned (wholly known) value and returns the new state.
async fn publish(planned: &Value, diags: &mut Diagnostics) -> Option<Value> {
    let (Some(target), Some(topology)) = (target_of(planned), topology_of(planned)) else {
        diags.error(
            "Provider bug",
            "The planned replica map is not fully known at apply time.",
        );
        return None;
    };
    let map = topology.replica_map();
    let mut state = planned.clone();
    set_published(&mut state, &map);
    state.set("id", target.id().into());
    match target.write(map.document().as_bytes()).await {
        Ok(version) => {
            state.set("version", version.into());
            Some(state)
        }
        Err(e) => {
            diags.error("Cannot publish the replica map", e);
            None
        }
    }
}

fn set_published(value: &mut Value, map: &ReplicaMap) {
    let document = map.document();
    value.set("endpoints", string_map(&map.endpoints));
    value.set(
        "uncovered_zones",
        Value::List(map.uncovered_zones.iter().map(|z| z.as_str().into()).collect()),
    );
    value.set("version", model::sha256_hex(document.as_bytes()).into());
    value.set("document", document.into());
}

fn string_map(map: &std::collections::BTreeMap<String, String>) -> Value {
    Value::Map(map.iter().map(|(k, v)| (k.clone(), v.as_str().into())).collect())
}

fn target_of(value: &Value) -> Option<Target> {
    let path = value.get("file").elements().first()?.get("path").as_str()?;
    Some(Target::File(path.into()))
}

/// The topology, when every part of it is known.
fn topology_of(value: &Value) -> Option<Topology> {
    let members = match value.get("member") {
        Value::List(items) => items
            .iter()
            .map(|m| {
                Some(Member {
                    endpoint: m.get("endpoint").as_str()?.to_string(),
                    zone: m.get("zone").as_str()?.to_string(),
                    role: match m.get("role") {
                        Value::Null => Role::Replica,
                        Value::String(r) if r == "primary" => Role::Primary,
                        Value::String(_) => Role::Replica,
                        _ => return None,
                    },
                })
            })
            .collect::<Option<Vec<_>>>()?,
        _ => return None,
    };
    let zones = match value.get("zones") {
        Value::Null => None,
        Value::Set(items) | Value::List(items) => Some(
            items
                .iter()
                .map(|z| z.as_str().map(String::from))
                .collect::<Option<BTreeSet<_>>>()?,
        ),
        _ => return None,
    };
    let read_from_primary = match value.get("read_from_primary") {
        Value::Null => false,
        Value::Bool(b) => *b,
        _ => return None,
    };
    Some(Topology {
        members,
        fallback: value.get("fallback_endpoint").as_str()?.to_string(),
        zones,
        read_from_primary,
    })
}
