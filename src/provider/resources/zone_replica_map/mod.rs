//! `locality_zone_replica_map`: the per-AZ replica endpoint map (its page:
//! `docs/resources/zone_replica_map.md`).
//!
//! - `schema.rs`: the schema (its descriptions are the docs);
//! - `model.rs`: the model, the only place attributes and blocks are named;
//! - `validate.rs`: offline configuration checks;
//! - `replica_map.rs`: the domain: topology → map → document, and back;
//! - `target.rs`: where the document is published and read back (file, Secrets Manager, SSM);
//! - this file: the glue, and topology discovery (`crate::provider::aws`).

mod model;
mod replica_map;
mod schema;
pub mod shared_secret;
mod target;

pub use target::parse_permission;
mod validate;

use std::collections::{BTreeMap, BTreeSet};

use async_trait::async_trait;

pub use model::{FileModel, MemberModel, SecretsManagerModel, SsmParameterModel, ZoneReplicaMapModel};
pub use replica_map::{parse_document, Member, ReplicaMap, Role, Topology};
pub use schema::{identity_schema, schema};
pub use target::{PublishError, Target};
pub use validate::is_zone_name;

use self::model::{blocks, strings};
use self::target::KNOWN_KINDS;
use crate::provider::aws::AwsError;
use crate::provider::resources::region_hint::required_identity;
use crate::provider::ProviderData;
use crate::tfplugin::{
    AttributePath, Context, Diagnostic, Diagnostics, Field, IdentitySchema, Resource, Schema, Value,
};

/// The resource type.
pub struct ZoneReplicaMap;

/// The Terraform type name.
pub const TYPE_NAME: &str = "locality_zone_replica_map";

#[async_trait]
impl Resource<ProviderData> for ZoneReplicaMap {
    type Model = ZoneReplicaMapModel;

    fn type_name(&self) -> &'static str {
        TYPE_NAME
    }

    fn schema(&self) -> Schema {
        schema()
    }

    fn identity_schema(&self) -> Option<IdentitySchema> {
        Some(identity_schema())
    }

    fn identity(&self, state: &ZoneReplicaMapModel) -> Option<Value> {
        let (kind, name) = match state.target()? {
            Target::File(path) => ("file", path.display().to_string()),
            Target::SecretsManager(id) => ("secretsmanager", id),
            Target::SecretKey { secret_id, key } => ("secretsmanager", format!("{secret_id}#{key}")),
            Target::Ssm(name) => ("ssm", name),
        };
        Some(identity_schema().value([("kind", Value::String(kind.to_string())), ("name", Value::String(name))]))
    }

    fn import_id(&self, _ctx: &Context<ProviderData>, identity: &Value) -> Result<String, Diagnostic> {
        let kind = required_identity(identity, "kind")?;
        let name = required_identity(identity, "name")?;
        if !KNOWN_KINDS.contains(&kind) {
            return Err(Diagnostic::error(
                "Invalid identity",
                format!("`kind` is {kind:?}; allowed: \"file\", \"secretsmanager\", \"ssm\"."),
            ));
        }
        Ok(format!("{kind}:{name}"))
    }

    fn validate(&self, config: &ZoneReplicaMapModel, diags: &mut Diagnostics) {
        validate::validate(config, diags);
    }

    async fn modify_plan(
        &self,
        ctx: &Context<ProviderData>,
        _prior: Option<&ZoneReplicaMapModel>,
        config: &ZoneReplicaMapModel,
        planned: &mut ZoneReplicaMapModel,
        diags: &mut Diagnostics,
    ) {
        // Everything is derivable at plan time when the inputs are known (the topology is
        // re-discovered here), so the plan shows the exact endpoints, naming the AZ that changes.
        let target = planned.target();
        if let Some(target) = &target {
            planned.id = target.id().into();
        }
        // Without `zone_ids` there are no endpoints by ID, whatever else is unknown.
        if planned.zone_ids.is_null() {
            planned.endpoints_by_zone_id = Field::Null;
        }
        // Nor replica lists without `spread_replicas`.
        if matches!(planned.spread_replicas, Field::Null | Field::Known(false)) {
            planned.replicas = Field::Null;
        }
        let Some(topology) = topology(ctx, planned, &config.fallback_endpoint, diags).await else {
            return;
        };
        planned.fallback_endpoint = topology.fallback.as_str().into();
        let map = topology.replica_map();
        let document = map.document();
        planned.set_published(
            &map.endpoints,
            map.endpoints_by_zone_id.as_ref(),
            map.replicas.as_ref(),
            &map.uncovered_zones,
            &document,
        );
        if let Some(Target::File(path)) = &target {
            if !ctx.data.claim_published_file(path, &document) {
                diags.attribute_error(
                    AttributePath::root("file").index(0).attr("path"),
                    "File published twice",
                    format!(
                        "Another {TYPE_NAME} in this configuration publishes a different replica map to {}; each file can hold one.",
                        path.display()
                    ),
                );
                return;
            }
        }
        // A file's version is its content hash, known now. A secret's VersionId or a
        // parameter's version tracks `document` (schema): kept while it is unchanged.
        if target.is_some_and(|t| t.version_is_content_hash()) {
            planned.version = replica_map::sha256_hex(document.as_bytes()).into();
        }
    }

    async fn read(
        &self,
        ctx: &Context<ProviderData>,
        mut state: ZoneReplicaMapModel,
        diags: &mut Diagnostics,
    ) -> Option<ZoneReplicaMapModel> {
        let Some(target) = state.target() else {
            diags.error(
                "Invalid state",
                "The state has no publish target; import the resource again.",
            );
            return None;
        };
        let Some((text, version)) = diags.check(target.read(&ctx.data).await)? else {
            diags.warning(
                "Published replica map not found",
                format!(
                    "Nothing is published at {} any more; it will be published again.",
                    target.id()
                ),
            );
            return None;
        };
        let published = parse_document(&text);
        state.id = target.id().into();
        state.set_endpoints(&published.endpoints);
        state.set_endpoints_by_zone_id(published.zone_ids.as_ref());
        state.set_replicas(published.replicas.as_ref());
        if let Some(fallback) = published.fallback {
            state.fallback_endpoint = fallback.into();
        }
        state.version = version.into();
        state.document = text.into();
        // The file's mode, as drift: a chmod outside Terraform shows in the plan and the next
        // apply writes the file again with the configured mode.
        if let (Target::File(path), Field::Known(files)) = (&target, &mut state.file) {
            let Some(file) = files.first_mut() else {
                return Some(state);
            };
            use std::os::unix::fs::MetadataExt as _;
            if let Ok(meta) = std::fs::symlink_metadata(path) {
                file.file_permission = target::permission_text(meta.mode()).into();
            }
        }
        Some(state)
    }

    async fn create(
        &self,
        ctx: &Context<ProviderData>,
        planned: ZoneReplicaMapModel,
        diags: &mut Diagnostics,
    ) -> Option<ZoneReplicaMapModel> {
        publish(ctx, planned, true, diags).await
    }

    async fn update(
        &self,
        ctx: &Context<ProviderData>,
        prior: ZoneReplicaMapModel,
        planned: ZoneReplicaMapModel,
        diags: &mut Diagnostics,
    ) -> Option<ZoneReplicaMapModel> {
        // Only the configuration changed (e.g. the topology source after an import): what is
        // published is already right, and writing it again would make a new version for nothing.
        if prior.document == planned.document && prior.file == planned.file && planned.version.is_known() {
            return Some(planned);
        }
        publish(ctx, planned, false, diags).await
    }

    async fn delete(&self, ctx: &Context<ProviderData>, prior: ZoneReplicaMapModel, diags: &mut Diagnostics) {
        let Some(target) = prior.target() else { return };
        if let Some(Some(note)) = diags.check(target.delete(&ctx.data).await) {
            diags.warning("Published replica map left in place", note);
        }
    }

    async fn import(
        &self,
        _ctx: &Context<ProviderData>,
        id: &str,
        diags: &mut Diagnostics,
    ) -> Option<ZoneReplicaMapModel> {
        let (kind, name) = match id.split_once(':') {
            Some((kind, name)) if KNOWN_KINDS.contains(&kind) => (kind, name),
            _ => ("file", id),
        };
        if name.is_empty() || name.chars().any(char::is_control) {
            diags.error(
                "Invalid import ID",
                "Expected `<kind>:<name>` with kind file, secretsmanager or ssm (e.g. `ssm:/prod/cache/replica-map`), or a file path; names never hold control characters such as NUL.",
            );
            return None;
        }
        let target = match kind {
            // Secret names and ARNs never hold `#`: what follows it is the key.
            "secretsmanager" => match name.split_once('#') {
                Some((secret_id, key)) if !secret_id.is_empty() && !key.is_empty() => Target::SecretKey {
                    secret_id: secret_id.into(),
                    key: key.into(),
                },
                Some(_) => {
                    diags.error(
                        "Invalid import ID",
                        "Expected `secretsmanager:<secret>#<key>`: both the secret and the key are needed.",
                    );
                    return None;
                }
                None => Target::SecretsManager(name.into()),
            },
            "ssm" => Target::Ssm(name.into()),
            _ => Target::File(name.into()),
        };
        Some(ZoneReplicaMapModel::imported(&target))
    }
}

/// Writes the planned (wholly known) document and returns the new state.
async fn publish(
    ctx: &Context<ProviderData>,
    mut planned: ZoneReplicaMapModel,
    creating: bool,
    diags: &mut Diagnostics,
) -> Option<ZoneReplicaMapModel> {
    let document = diags.check(planned.document.require("document"))?.clone();
    let Some(target) = planned.target() else {
        diags.error(
            "Provider bug",
            "The planned publish target is not known at apply time. Please report this.",
        );
        return None;
    };
    planned.id = target.id().into();
    // A file already at the path when the resource is created is adopted: replaced, with a
    // warning (an SSM parameter is refused instead: it may be someone else's; a file at a path
    // this configuration names is the configuration's).
    if let (true, Target::File(path)) = (creating, &target) {
        if std::fs::symlink_metadata(path).is_ok() {
            diags.warning(
                "Existing file replaced",
                format!(
                    "{} already existed; it was replaced by the published map, with mode {} (a symbolic link there is replaced itself, not followed). Its previous content and mode are not kept.",
                    path.display(),
                    target::permission_text(planned.file_modes().file)
                ),
            );
        }
    }
    let modes = planned.file_modes();
    let version = diags.check(target.write(&ctx.data, &document, creating, modes).await)?;
    planned.version = version.into();
    Some(planned)
}

/// The topology, when every part of it is known: from ElastiCache, or from `member` blocks.
/// `configured_fallback` is the configuration's own value (the planned one may be the prior
/// state's, which must not outlive a rediscovered reader endpoint).
async fn topology(
    ctx: &Context<ProviderData>,
    planned: &ZoneReplicaMapModel,
    configured_fallback: &Field<String>,
    diags: &mut Diagnostics,
) -> Option<Topology> {
    let zones: Option<BTreeSet<String>> = match &planned.zones {
        Field::Null => None,
        Field::Known(set) => Some(strings(&set.0)?.into_iter().collect()),
        Field::Unknown => return None,
    };
    let read_from_primary = match planned.read_from_primary {
        Field::Null => false,
        Field::Known(b) => b,
        Field::Unknown => return None,
    };
    let spread_replicas = match planned.spread_replicas {
        Field::Null => false,
        Field::Known(b) => b,
        Field::Unknown => return None,
    };
    // Unknown (e.g. from data.aws_availability_zones before apply): the document is unknown.
    let zone_ids: Option<BTreeMap<String, String>> = match &planned.zone_ids {
        Field::Null => None,
        Field::Known(map) => Some(
            map.iter()
                .map(|(name, id)| Some((name.clone(), id.get()?.clone())))
                .collect::<Option<_>>()?,
        ),
        Field::Unknown => return None,
    };
    let (members, fallback) = match &planned.replication_group_id {
        Field::Unknown => return None,
        Field::Known(group) => discovered(ctx, group, configured_fallback, diags).await?,
        Field::Null => {
            if planned.member.is_unknown() {
                return None; // a `dynamic` block fed by another resource
            }
            let members = blocks(&planned.member)
                .iter()
                .map(|m| {
                    Some(Member {
                        endpoint: m.endpoint.get()?.clone(),
                        zone: m.zone.get()?.clone(),
                        role: match &m.role {
                            Field::Known(r) if r == "primary" => Role::Primary,
                            Field::Known(_) | Field::Null => Role::Replica,
                            Field::Unknown => return None,
                        },
                    })
                })
                .collect::<Option<Vec<_>>>()?;
            (members, configured_fallback.get()?.clone())
        }
    };
    Some(Topology {
        members,
        fallback,
        zones,
        read_from_primary,
        zone_ids,
        spread_replicas,
    })
}

/// The members and fallback of a replication group, from ElastiCache.
async fn discovered(
    ctx: &Context<ProviderData>,
    group: &str,
    configured_fallback: &Field<String>,
    diags: &mut Diagnostics,
) -> Option<(Vec<Member>, String)> {
    let at = || AttributePath::root("replication_group_id");
    let found = match ctx.data.aws().await.discover(group).await {
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
            diags.add(Diagnostic::error("Cannot describe the replication group", e.to_string()).at(at()));
            return None;
        }
    };
    let members = found
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
        configured_fallback.get(),
        &found.reader_endpoint,
        &found.primary_endpoint,
    ) {
        (Some(configured), _, _) => configured.clone(),
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
                format!(
                    "Replication group {group:?} has neither a reader nor a primary endpoint; set `fallback_endpoint`."
                ),
            );
            return None;
        }
    };
    Some((members, fallback))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::provider::config::ProviderConfig;

    #[tokio::test]
    async fn import_ids_with_control_characters_are_refused() {
        // Issue 11: an ID with a NUL byte was accepted as a file path.
        let ctx = Context {
            data: Arc::new(ProviderData::new(ProviderConfig::default())),
            stop: Default::default(),
        };
        for id in ["replicas\0.json", "file:a\nb", "ssm:", ""] {
            let mut diags = Diagnostics::default();
            assert!(ZoneReplicaMap.import(&ctx, id, &mut diags).await.is_none(), "{id:?}");
            assert!(diags.has_errors());
        }
        let mut diags = Diagnostics::default();
        let imported = ZoneReplicaMap.import(&ctx, "ssm:/prod/map", &mut diags).await.unwrap();
        assert_eq!(imported.id.get().map(String::as_str), Some("ssm:/prod/map"));
    }
}
