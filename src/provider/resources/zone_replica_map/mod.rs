//! `locality_zone_replica_map`: the per-AZ replica endpoint map (DESIGN.md §2.2).
//!
//! - `schema.rs`: the schema (its descriptions are the docs);
//! - `validate.rs`: offline configuration checks;
//! - `model.rs`: topology → map → document, and back;
//! - `target.rs`: where the document is published and read back (file, Secrets Manager, SSM);
//! - this file: the Terraform lifecycle glue, and topology discovery (`crate::provider::aws`).

mod model;
mod schema;
mod target;
mod validate;

use std::collections::BTreeSet;

use async_trait::async_trait;

pub use model::{parse_document, Member, ReplicaMap, Role, Topology};
pub use schema::schema;
pub use validate::{check_endpoint, is_zone_name};

use self::target::{Target, WriteError, KNOWN_KINDS};
use crate::provider::aws::AwsError;
use crate::provider::ProviderData;
use crate::tfplugin::{AttributePath, Context, Diagnostics, PlanRequest, Resource, Schema, Value};

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
        ctx: &Context<ProviderData>,
        req: PlanRequest<'_>,
        planned: &mut Value,
        diags: &mut Diagnostics,
    ) {
        // Everything is derivable at plan time when the inputs are known (the topology is
        // re-discovered here), so the plan shows the exact endpoints, naming the AZ that changes.
        let target = target_of(planned);
        if let Some(target) = &target {
            planned.set("id", target.id().into());
        }
        let Some(topology) = topology(ctx, planned, req.config.get("fallback_endpoint"), diags).await else {
            return;
        };
        planned.set("fallback_endpoint", topology.fallback.as_str().into());
        let map = topology.replica_map();
        let document = map.document();
        set_published(planned, &map, &document);
        // A content hash is known now; a secret's VersionId or a parameter's version only after
        // the write, unless nothing is written.
        let unchanged = req.prior.get("document").as_str() == Some(document.as_str());
        match target {
            Some(t) if t.version_is_content_hash() => {
                planned.set("version", model::sha256_hex(document.as_bytes()).into())
            }
            _ if unchanged => planned.set("version", req.prior.get("version").clone()),
            _ => planned.set("version", Value::Unknown),
        }
    }

    async fn read(&self, ctx: &Context<ProviderData>, state: &Value, diags: &mut Diagnostics) -> Option<Value> {
        let Some(target) = target_of(state) else {
            diags.error(
                "Invalid state",
                "The state has no publish target; import the resource again.",
            );
            return Some(state.clone());
        };
        match target.read(&ctx.data).await {
            Ok(None) => {
                diags.warning(
                    "Published replica map not found",
                    format!(
                        "Nothing is published at {} any more; it will be published again.",
                        target.id()
                    ),
                );
                None
            }
            Ok(Some((text, version))) => {
                let published = parse_document(&text);
                let mut new = state.clone();
                new.set("id", target.id().into());
                new.set("endpoints", string_map(&published.endpoints));
                if let Some(fallback) = published.fallback {
                    new.set("fallback_endpoint", fallback.into());
                }
                new.set("version", version.into());
                new.set("document", text.into());
                Some(new)
            }
            Err(e) => {
                diags.error("Cannot read the published replica map", e);
                Some(state.clone())
            }
        }
    }

    async fn create(&self, ctx: &Context<ProviderData>, planned: &Value, diags: &mut Diagnostics) -> Option<Value> {
        publish(ctx, planned, true, diags).await
    }

    async fn update(
        &self,
        ctx: &Context<ProviderData>,
        prior: &Value,
        planned: &Value,
        diags: &mut Diagnostics,
    ) -> Option<Value> {
        // Only the configuration changed (e.g. the topology source after an import): what is
        // published is already right, and writing it again would make a new version for nothing.
        if prior.get("document") == planned.get("document") && planned.get("version").as_str().is_some() {
            return Some(planned.clone());
        }
        publish(ctx, planned, false, diags).await
    }

    async fn delete(&self, ctx: &Context<ProviderData>, prior: &Value, diags: &mut Diagnostics) {
        if let Some(target) = target_of(prior) {
            match target.delete(&ctx.data).await {
                Ok(Some(note)) => diags.warning("Published replica map left in place", note),
                Ok(None) => {}
                Err(e) => diags.error("Cannot remove the published replica map", e),
            }
        }
    }

    async fn import(&self, _ctx: &Context<ProviderData>, id: &str, diags: &mut Diagnostics) -> Option<Value> {
        let (kind, name) = match id.split_once(':') {
            Some((kind, name)) if KNOWN_KINDS.contains(&kind) => (kind, name),
            _ => ("file", id),
        };
        if name.is_empty() {
            diags.error(
                "Invalid import ID",
                "Expected `<kind>:<name>` with kind file, secretsmanager or ssm (e.g. `ssm:/prod/cache/replica-map`), or a file path.",
            );
            return None;
        }
        let (block, attr, target) = match kind {
            "secretsmanager" => ("secretsmanager", "secret_id", Target::SecretsManager(name.into())),
            "ssm" => ("ssm_parameter", "name", Target::Ssm(name.into())),
            _ => ("file", "path", Target::File(name.into())),
        };
        Some(Value::object([
            ("id", Value::from(target.id())),
            (block, Value::List(vec![Value::object([(attr, Value::from(name))])])),
            ("member", Value::List(Vec::new())),
        ]))
    }
}

/// Writes the planned (wholly known) document and returns the new state.
async fn publish(
    ctx: &Context<ProviderData>,
    planned: &Value,
    creating: bool,
    diags: &mut Diagnostics,
) -> Option<Value> {
    let (Some(target), Some(document)) = (target_of(planned), planned.get("document").as_str()) else {
        diags.error(
            "Provider bug",
            "The planned replica map is not fully known at apply time.",
        );
        return None;
    };
    let mut state = planned.clone();
    state.set("id", target.id().into());
    match target.write(&ctx.data, document, creating).await {
        Ok(version) => {
            state.set("version", version.into());
            Some(state)
        }
        Err(WriteError::AlreadyExists(what)) => {
            diags.error(
                "Publish target already exists",
                format!("{what} already exists and this resource did not create it. To manage it, import it:\n  terraform import {TYPE_NAME}.NAME {}", target.id()),
            );
            None
        }
        Err(WriteError::Missing(problem)) | Err(WriteError::Other(problem)) => {
            diags.error("Cannot publish the replica map", problem);
            None
        }
    }
}

fn set_published(value: &mut Value, map: &ReplicaMap, document: &str) {
    value.set("endpoints", string_map(&map.endpoints));
    value.set(
        "uncovered_zones",
        Value::List(map.uncovered_zones.iter().map(|z| z.as_str().into()).collect()),
    );
    value.set("document", document.into());
}

fn string_map(map: &std::collections::BTreeMap<String, String>) -> Value {
    Value::Map(map.iter().map(|(k, v)| (k.clone(), v.as_str().into())).collect())
}

fn target_of(value: &Value) -> Option<Target> {
    let first = |block: &str, attr: &str| {
        value
            .get(block)
            .elements()
            .first()
            .and_then(|b| b.get(attr).as_str().map(String::from))
    };
    if let Some(id) = first("secretsmanager", "secret_id") {
        return Some(Target::SecretsManager(id));
    }
    if let Some(name) = first("ssm_parameter", "name") {
        return Some(Target::Ssm(name));
    }
    first("file", "path").map(|p| Target::File(p.into()))
}

/// The topology, when every part of it is known: from ElastiCache, or from `member` blocks.
/// `configured_fallback` is the configuration's own value (the planned one may be the prior
/// state's, which must not outlive a rediscovered reader endpoint).
async fn topology(
    ctx: &Context<ProviderData>,
    value: &Value,
    configured_fallback: &Value,
    diags: &mut Diagnostics,
) -> Option<Topology> {
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
    let (members, fallback) = match value.get("replication_group_id") {
        Value::Unknown => return None,
        Value::String(group) => {
            let at = || AttributePath::root("replication_group_id");
            let discovered = match ctx.data.aws().await.discover(group).await {
                Ok(d) => d,
                Err(AwsError::NotFound(what)) => {
                    diags.attribute_error(
                        at(),
                        "Replication group not found",
                        format!("{what} does not exist in this region (DescribeReplicationGroups)."),
                    );
                    return None;
                }
                Err(AwsError::ClusterMode(g)) => {
                    diags.attribute_error(
                        at(),
                        "Cluster mode is not supported",
                        format!("Replication group {g:?} has cluster mode enabled: keys are spread over shards, so one replica per AZ cannot serve every read. Use a cluster-mode-disabled group."),
                    );
                    return None;
                }
                Err(e) => {
                    diags.attribute_error(at(), "Cannot describe the replication group", e.to_string());
                    return None;
                }
            };
            let members = discovered
                .nodes
                .iter()
                .map(|n| Member {
                    endpoint: n.endpoint.clone(),
                    zone: n.zone.clone(),
                    role: if n.role == "primary" {
                        Role::Primary
                    } else {
                        Role::Replica
                    },
                })
                .collect();
            let fallback = match (
                configured_fallback.as_str(),
                &discovered.reader_endpoint,
                &discovered.primary_endpoint,
            ) {
                (Some(configured), _, _) => configured.to_string(),
                (None, Some(reader), _) => reader.clone(),
                (None, None, Some(primary)) => {
                    diags.warning(
                        "No reader endpoint",
                        format!("DescribeReplicationGroups returned no reader endpoint for {group:?}; the fallback is the primary endpoint {primary}. Set `fallback_endpoint` to choose another."),
                    );
                    primary.clone()
                }
                (None, None, None) => {
                    diags.attribute_error(
                        AttributePath::root("fallback_endpoint"),
                        "No fallback endpoint",
                        format!("Replication group {group:?} has neither a reader nor a primary endpoint; set `fallback_endpoint`."),
                    );
                    return None;
                }
            };
            (members, fallback)
        }
        _ => {
            let members = match value.get("member") {
                Value::List(items) => items
                    .iter()
                    .map(|m| {
                        Some(Member {
                            endpoint: m.get("endpoint").as_str()?.to_string(),
                            zone: m.get("zone").as_str()?.to_string(),
                            role: match m.get("role") {
                                Value::String(r) if r == "primary" => Role::Primary,
                                Value::String(_) | Value::Null => Role::Replica,
                                _ => return None,
                            },
                        })
                    })
                    .collect::<Option<Vec<_>>>()?,
                _ => return None,
            };
            (members, configured_fallback.as_str()?.to_string())
        }
    };
    Some(Topology {
        members,
        fallback,
        zones,
        read_from_primary,
    })
}
