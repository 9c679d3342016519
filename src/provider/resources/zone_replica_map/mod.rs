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
pub use target::{PublishError, Published, Target};
pub use validate::is_zone_name;

use self::model::{blocks, known_strings, set_blocks, strings};
use self::target::{WriteOptions, KNOWN_KINDS};
use crate::provider::aws::AwsError;
use crate::provider::resources::region_hint::required_identity;
use crate::provider::timeouts::{self, Operation};
use crate::provider::ProviderData;
use crate::tfplugin::{
    AttributePath, Context, Diagnostic, Diagnostics, Field, IdentitySchema, Resource, Schema, Value,
};

/// The resource type.
pub struct ZoneReplicaMap;

/// The Terraform type name.
pub const TYPE_NAME: &str = "locality_zone_replica_map";

/// Default `timeouts`: 5 minutes for each operation.
pub const TIMEOUTS: timeouts::Defaults = timeouts::Defaults::all(std::time::Duration::from_secs(5 * 60));

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
        prior: Option<&ZoneReplicaMapModel>,
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
        plan_parameter(ctx, prior, config, planned, diags);
        // Without `zone_ids` there are no endpoints by ID, whatever else is unknown.
        if planned.zone_ids.is_null() {
            planned.endpoints_by_zone_id = Field::Null;
        }
        // Nor replica lists without `spread_replicas`.
        if matches!(planned.spread_replicas, Field::Null | Field::Known(false)) {
            planned.replicas = Field::Null;
        }
        // Cluster mode only with a configuration endpoint: with `member` blocks and none
        // configured, both cluster attributes are null now (no "known after apply" in plans).
        if planned.replication_group_id.is_null() {
            planned.configuration_endpoint = config.configuration_endpoint.clone();
            if config.configuration_endpoint.is_null() {
                planned.shards = Field::Null;
            }
        }
        let Some(topology) = topology(
            ctx,
            planned,
            &config.fallback_endpoint,
            &config.configuration_endpoint,
            diags,
        )
        .await
        else {
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
        planned.set_cluster(map.configuration_endpoint.as_deref(), map.shards.as_ref());
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
        let Some(Published {
            text,
            version,
            parameter_type,
        }) = diags.check(target.read(&ctx.data).await)?
        else {
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
        // An imported state knows only its target: the topology (and the settings the document
        // shows) are read back from the document, so that importing what this configuration
        // published plans no change.
        if state.replication_group_id.is_null() && set_blocks(&state.member).is_empty() {
            if let Some(found) = replica_map::reconstruct(&text) {
                state.set_reconstructed(&found);
            }
        }
        state.id = target.id().into();
        state.set_endpoints(&published.endpoints);
        state.set_endpoints_by_zone_id(published.zone_ids.as_ref());
        state.set_replicas(published.replicas.as_ref());
        state.set_cluster(published.configuration_endpoint.as_deref(), published.shards.as_ref());
        if let Some(fallback) = published.fallback {
            state.fallback_endpoint = fallback.into();
        }
        state.version = version.into();
        state.document = text.into();
        if let (Target::Ssm(name), Some(kind)) = (&target, parameter_type) {
            read_parameter(ctx, name, &kind, &mut state, diags).await?;
        }
        // The file's mode, as drift: a chmod outside Terraform shows in the plan and the next
        // apply writes the file again with the configured mode.
        if let (Target::File(path), Field::Known(files)) = (&target, &mut state.file) {
            let Some(file) = files.first_mut() else {
                return Some(state);
            };
            // (No Unix modes on Windows: the configured one stays.) The state keeps the form the
            // configuration wrote (`644` or `0644`) while the mode is the same: no diff from
            // spelling alone.
            if let Some(mode) = crate::files::mode_of(path, crate::files::Directories::NoLinks) {
                let same = file
                    .file_permission
                    .get()
                    .and_then(|text| target::parse_permission(text).ok())
                    == Some(mode & 0o777);
                if !same {
                    file.file_permission = target::permission_text(mode).into();
                }
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
        let limit = timeouts::of(&planned.timeouts, Operation::Create, TIMEOUTS);
        let published = timeouts::within(limit, Operation::Create, TYPE_NAME, publish(ctx, planned, true));
        let (state, result) = diags.check(published.await)?;
        diags.extend(result);
        state
    }

    async fn update(
        &self,
        ctx: &Context<ProviderData>,
        prior: ZoneReplicaMapModel,
        planned: ZoneReplicaMapModel,
        diags: &mut Diagnostics,
    ) -> Option<ZoneReplicaMapModel> {
        let limit = timeouts::of(&planned.timeouts, Operation::Update, TIMEOUTS);
        let work = async {
            // Only the configuration changed (e.g. the topology source after an import, or the
            // tags): what is published is already right, and writing it again would make a new
            // version for nothing.
            let unchanged = prior.document == planned.document
                && prior.file == planned.file
                && prior.parameter_kind() == planned.parameter_kind()
                && planned.version.is_known();
            let (state, mut result) = if unchanged {
                (Some(planned), Diagnostics::default())
            } else {
                publish(ctx, planned, false).await
            };
            // Tags: only the changes, after the write (an overwrite takes none).
            if let (Some(state), Some(Target::Ssm(name))) = (&state, prior.target()) {
                let before = prior.known_tags_all().unwrap_or_default();
                let after = state.known_tags_all().unwrap_or_default();
                if before != after {
                    let aws = ctx.data.aws().await;
                    if let Err(e) = aws.retag_parameter(&name, &before, &after).await {
                        result.add(Diagnostic::from(PublishError::Aws {
                            target: format!("ssm:{name}"),
                            source: e,
                        }));
                        // The map is published; the tags are as they were.
                        let mut kept = state.clone();
                        kept.tags = prior.tags.clone();
                        kept.tags_all = prior.tags_all.clone();
                        return (Some(kept), result);
                    }
                }
            }
            (state, result)
        };
        let (state, result) = diags.check(timeouts::within(limit, Operation::Update, TYPE_NAME, work).await)?;
        diags.extend(result);
        state
    }

    async fn delete(&self, ctx: &Context<ProviderData>, prior: ZoneReplicaMapModel, diags: &mut Diagnostics) {
        let Some(target) = prior.target() else { return };
        let limit = timeouts::of(&prior.timeouts, Operation::Delete, TIMEOUTS);
        let deleted = timeouts::within(limit, Operation::Delete, TYPE_NAME, target.delete(&ctx.data));
        let Some(deleted) = diags.check(deleted.await) else {
            return;
        };
        if let Some(Some(note)) = diags.check(deleted) {
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
            // `s3:foo`, `https://…`: a kind this resource does not publish to is said as such,
            // not taken as a file of that name. (A single letter is a Windows drive, `C:\x`.)
            Some((scheme, _))
                if scheme.len() > 1
                    && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
                    && scheme
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')) =>
            {
                diags.error(
                    "Invalid import ID",
                    format!(
                        "{scheme:?} is not a place this resource publishes to; the import IDs are file:<path>, \
                         ssm:<name>, secretsmanager:<secret> and secretsmanager:<secret>#<key>, or a file path \
                         (a file whose name has a colon: file:{id})."
                    ),
                );
                return None;
            }
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
        // A file that is not there: named, with where a relative path is taken from (Terraform
        // would only say "Cannot import non-existent remote object").
        if let Target::File(path) = &target {
            if let Err(e) = std::fs::symlink_metadata(path) {
                let whole = std::env::current_dir()
                    .map(|d| d.join(path))
                    .unwrap_or_else(|_| path.clone());
                let why = if e.kind() == std::io::ErrorKind::NotFound {
                    "there is no file there".to_string()
                } else {
                    e.to_string()
                };
                diags.error(
                    "Cannot import the replica map",
                    format!(
                        "{}: {why} (a relative path is taken from the directory terraform runs in). Import a file \
                         that holds a published map, or declare the resource and apply to publish one.",
                        whole.display()
                    ),
                );
                return None;
            }
        }
        Some(ZoneReplicaMapModel::imported(&target))
    }
}

/// Writes the planned (wholly known) document and returns the new state, with what there is to
/// say (its own diagnostics, so that a timeout around it keeps none half-written).
async fn publish(
    ctx: &Context<ProviderData>,
    planned: ZoneReplicaMapModel,
    creating: bool,
) -> (Option<ZoneReplicaMapModel>, Diagnostics) {
    let mut diags = Diagnostics::default();
    let state = publish_into(ctx, planned, creating, &mut diags).await;
    (state, diags)
}

async fn publish_into(
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
    let options = WriteOptions {
        modes: planned.file_modes(),
        parameter: planned.parameter_kind(),
        tags: planned.known_tags_all().unwrap_or_default(),
    };
    let version = diags.check(target.write(&ctx.data, &document, creating, &options).await)?;
    planned.version = version.into();
    Some(planned)
}

/// The plan's `tags_all` (the provider's `default_tags` under `tags`, for an SSM target), a new
/// version when the parameter's key or tier changes, and the one tier change SSM refuses.
fn plan_parameter(
    ctx: &Context<ProviderData>,
    prior: Option<&ZoneReplicaMapModel>,
    config: &ZoneReplicaMapModel,
    planned: &mut ZoneReplicaMapModel,
    diags: &mut Diagnostics,
) {
    if blocks(&planned.ssm_parameter).is_empty() && !planned.ssm_parameter.is_unknown() {
        planned.tags_all = Field::Null;
        return;
    }
    planned.tags_all = match known_strings(&config.tags) {
        Some(own) => {
            let mut all = ctx.data.config.aws.default_tags.clone();
            all.extend(own);
            Field::known_map(all)
        }
        None => Field::Unknown,
    };
    let Some(prior) = prior else { return };
    let (before, after) = (prior.parameter_kind(), planned.parameter_kind());
    if before.tier == "Advanced" && after.tier == "Standard" {
        diags.attribute_error(
            AttributePath::root("ssm_parameter").index(0).attr("tier"),
            "Tier cannot go back to Standard",
            "SSM cannot move an Advanced parameter back to the Standard tier. Keep `tier = \"Advanced\"`, or \
             replace the parameter (`terraform apply -replace=...`: it is deleted and created again as Standard; \
             readers fall back to the reader endpoint meanwhile).",
        );
    }
    // A new key or tier is a new write, hence a new version: `version` tracks `ssm_parameter`
    // as well as `document` (schema).
}

/// An SSM parameter's type, and its key, tier and tags when they matter, into the state.
async fn read_parameter(
    ctx: &Context<ProviderData>,
    name: &str,
    parameter_type: &str,
    state: &mut ZoneReplicaMapModel,
    diags: &mut Diagnostics,
) -> Option<()> {
    let aws = ctx.data.aws().await;
    let at = |what: &str, e: AwsError| {
        Diagnostic::from(PublishError::Aws {
            target: format!("ssm:{name}"),
            source: e,
        })
        .context(format!("Reading the parameter's {what}"))
    };
    let Field::Known(blocks) = &mut state.ssm_parameter else {
        return Some(());
    };
    let Some(block) = blocks.first_mut() else {
        return Some(());
    };
    block.r#type = parameter_type.into();
    // A state written before `tier` existed: those versions always created Standard parameters.
    if block.tier.is_null() {
        block.tier = "Standard".into();
    }
    let tier_in_state = block.tier.get().cloned().unwrap_or_else(|| "Standard".into());
    if parameter_type == "SecureString" || tier_in_state != "Standard" {
        if let Some((key_id, tier)) =
            diags.check(aws.parameter_settings(name).await.map_err(|e| at("key and tier", e)))?
        {
            // The account's default key, however SSM spells it, is what a null `key_id` means.
            let default_key = key_id.as_deref().is_none_or(|k| k == "alias/aws/ssm");
            block.key_id = match key_id {
                Some(_) if default_key && block.key_id.is_null() => Field::Null,
                Some(k) if parameter_type == "SecureString" => k.into(),
                _ => Field::Null,
            };
            // Intelligent-Tiering is a choice SSM makes: what it picked is not drift.
            if tier_in_state != "Intelligent-Tiering" {
                block.tier = tier.into();
            }
        }
    }
    let defaults = &ctx.data.config.aws.default_tags;
    let has_tags = !state.known_tags_all().unwrap_or_default().is_empty()
        || !known_strings(&state.tags).unwrap_or_default().is_empty()
        || !defaults.is_empty();
    if has_tags {
        let live = diags.check(aws.parameter_tags(name).await.map_err(|e| at("tags", e)))?;
        let own = known_strings(&state.tags).unwrap_or_default();
        // `tags`: the live tags this resource sets itself: the ones it had, and any that the
        // provider's defaults do not explain.
        let tags: BTreeMap<String, String> = live
            .iter()
            .filter(|(k, v)| own.contains_key(*k) || defaults.get(*k) != Some(*v))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        state.tags = if tags.is_empty() && state.tags.is_null() {
            Field::Null
        } else {
            Field::known_map(tags)
        };
        state.tags_all = Field::known_map(live);
    } else {
        state.tags_all = Field::known_map(BTreeMap::new());
    }
    Some(())
}

/// The topology, when every part of it is known: from ElastiCache, or from `member` blocks.
/// `configured_fallback` and `configured_configuration_endpoint` are the configuration's own
/// values (the planned ones may be the prior state's, which must not outlive a rediscovered
/// endpoint).
async fn topology(
    ctx: &Context<ProviderData>,
    planned: &ZoneReplicaMapModel,
    configured_fallback: &Field<String>,
    configured_configuration_endpoint: &Field<String>,
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
    let (members, fallback, configuration_endpoint) = match &planned.replication_group_id {
        Field::Unknown => return None,
        Field::Known(group) => discovered(ctx, group, configured_fallback, diags).await?,
        Field::Null => {
            if planned.member.is_unknown() {
                return None; // a `dynamic` block fed by another resource
            }
            let members = set_blocks(&planned.member)
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
                        shard: match &m.shard {
                            Field::Known(shard) => Some(shard.clone()),
                            Field::Null => None,
                            Field::Unknown => return None,
                        },
                    })
                })
                .collect::<Option<Vec<_>>>()?;
            let configuration_endpoint = match configured_configuration_endpoint {
                Field::Known(endpoint) => Some(endpoint.clone()),
                Field::Null => None,
                Field::Unknown => return None,
            };
            // In cluster mode the fallback defaults to the configuration endpoint.
            let fallback = match (configured_fallback.get(), &configuration_endpoint) {
                (Some(fallback), _) => fallback.clone(),
                (None, Some(endpoint)) => endpoint.clone(),
                (None, None) => return None,
            };
            (members, fallback, configuration_endpoint)
        }
    };
    Some(Topology {
        members,
        fallback,
        zones,
        read_from_primary,
        zone_ids,
        spread_replicas,
        configuration_endpoint,
        replication_group_id: planned.replication_group_id.get().cloned(),
    })
}

/// The members, fallback and (cluster mode) configuration endpoint of a replication group,
/// from ElastiCache.
async fn discovered(
    ctx: &Context<ProviderData>,
    group: &str,
    configured_fallback: &Field<String>,
    diags: &mut Diagnostics,
) -> Option<(Vec<Member>, String, Option<String>)> {
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
            shard: n.shard.clone(),
        })
        .collect();
    if !found.named_from_configuration.is_empty() {
        diags.warning(
            "Node endpoints named from the configuration endpoint",
            format!(
                "DescribeCacheClusters gave no endpoint for {} of {group:?} (an emulator); their endpoints in `nodes` are named from the configuration endpoint as ElastiCache names nodes (`clustercfg.X` → `<cache cluster ID>.X`).",
                found.named_from_configuration.join(", ")
            ),
        );
    }
    let fallback = match (
        configured_fallback.get(),
        &found.reader_endpoint,
        &found.primary_endpoint,
    ) {
        (Some(configured), _, _) => configured.clone(),
        // Cluster mode: clients start at the configuration endpoint.
        (None, _, _) if found.configuration_endpoint.is_some() => {
            found.configuration_endpoint.clone().unwrap_or_default()
        }
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
    Some((members, fallback, found.configuration_endpoint))
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
        // Issue 46: a kind that does not exist, and a file that is not there, are said as such.
        let mut diags = Diagnostics::default();
        assert!(ZoneReplicaMap.import(&ctx, "s3:foo", &mut diags).await.is_none());
        let said = format!("{diags:?}");
        assert!(
            said.contains("\\\"s3\\\" is not a place") && said.contains("file:<path>"),
            "{said}"
        );
        let mut diags = Diagnostics::default();
        assert!(ZoneReplicaMap
            .import(&ctx, "file:missing.json", &mut diags)
            .await
            .is_none());
        let said = format!("{diags:?}");
        assert!(said.contains("missing.json: there is no file there"), "{said}");
        let mut diags = Diagnostics::default();
        let imported = ZoneReplicaMap.import(&ctx, "ssm:/prod/map", &mut diags).await.unwrap();
        assert_eq!(imported.id.get().map(String::as_str), Some("ssm:/prod/map"));
    }

    /// Issue 43, item 8: delete refuses a path with `..` components, as create and read do, and
    /// removes nothing there.
    #[tokio::test]
    async fn delete_refuses_parent_components_as_create_and_read_do() {
        let data = ProviderData::new(ProviderConfig::default());
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let victim = dir.path().join("victim.json");
        std::fs::write(&victim, "{}").unwrap();
        let target = Target::File(dir.path().join("sub/../victim.json"));
        let refused = target.delete(&data).await.unwrap_err().to_string();
        assert!(
            refused.contains("`..` components are refused") || refused.contains("with `..` components"),
            "{refused}"
        );
        assert!(victim.exists(), "the file behind `..` was removed");
        let read = target.read(&data).await.unwrap_err().to_string();
        assert!(read.contains("`..`"), "{read}");
    }
}
