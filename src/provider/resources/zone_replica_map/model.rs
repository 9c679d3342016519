//! The `locality_zone_replica_map` model: the only place its attributes and blocks are named.

use std::collections::BTreeMap;

use super::replica_map::{self, Role};
use super::target::Target;
use crate::provider::aws::ParameterKind;
use crate::provider::timeouts::TimeoutsModel;
use crate::tfplugin::{Field, Set};

crate::model! {
    /// One `member` block.
    pub struct MemberModel {
        /// `host:port`.
        pub endpoint: Field<String>,
        /// The AZ.
        pub zone: Field<String>,
        /// `replica` or `primary`.
        pub role: Field<String>,
        /// The node group (shard), in cluster mode.
        pub shard: Field<String>,
    }
}

crate::model! {
    /// The `file` block.
    pub struct FileModel {
        /// The file's path.
        pub path: Field<String>,
        /// The file's mode, octal text (default `0600`).
        pub file_permission: Field<String>,
        /// The mode of directories created for it, octal text (default `0777`, less the umask).
        pub directory_permission: Field<String>,
    }
}

crate::model! {
    /// The `secretsmanager` block.
    pub struct SecretsManagerModel {
        /// The secret's name or ARN.
        pub secret_id: Field<String>,
        /// The key of a JSON secret holding the map.
        pub key: Field<String>,
    }
}

crate::model! {
    /// The `ssm_parameter` block.
    pub struct SsmParameterModel {
        /// The parameter's name.
        pub name: Field<String>,
        /// `String` or `SecureString`.
        pub r#type: Field<String>,
        /// The KMS key of a `SecureString`.
        pub key_id: Field<String>,
        /// `Standard`, `Advanced` or `Intelligent-Tiering`.
        pub tier: Field<String>,
    }
}

crate::model! {
    /// The replica map resource.
    pub struct ZoneReplicaMapModel {
        /// `<kind>:<name>` of the publish target.
        pub id: Field<String>,
        /// The ElastiCache replication group to discover.
        pub replication_group_id: Field<String>,
        /// The endpoint for AZs without an entry.
        pub fallback_endpoint: Field<String>,
        /// The client AZs to publish.
        pub zones: Field<Set<Field<String>>>,
        /// Whether a primary-only AZ routes to the primary.
        pub read_from_primary: Field<bool>,
        /// AZ name → AZ ID.
        pub zone_ids: Field<BTreeMap<String, Field<String>>>,
        /// Whether every usable node of each AZ is listed.
        pub spread_replicas: Field<bool>,
        /// AZ ID → endpoint, as published (with `zone_ids`).
        pub endpoints_by_zone_id: Field<BTreeMap<String, Field<String>>>,
        /// AZ name or ID → every usable node, as published (with `spread_replicas`).
        pub replicas: Field<BTreeMap<String, Field<Vec<Field<String>>>>>,
        /// AZ → endpoint, as published.
        pub endpoints: Field<BTreeMap<String, Field<String>>>,
        /// AZs whose reads still cross a zone.
        pub uncovered_zones: Field<Vec<Field<String>>>,
        /// A cluster-mode-enabled group's configuration endpoint.
        pub configuration_endpoint: Field<String>,
        /// Cluster mode: shard → AZ → its nodes there.
        pub shards: Field<BTreeMap<String, Field<BTreeMap<String, Field<Vec<Field<String>>>>>>>,
        /// The published JSON.
        pub document: Field<String>,
        /// The published version.
        pub version: Field<String>,
        /// The members, instead of discovery (a set: their order carries no meaning).
        pub member: Field<Set<MemberModel>>,
        /// Publish to a file.
        pub file: Field<Vec<FileModel>>,
        /// Publish to a Secrets Manager secret.
        pub secretsmanager: Field<Vec<SecretsManagerModel>>,
        /// Publish to an SSM parameter.
        pub ssm_parameter: Field<Vec<SsmParameterModel>>,
        /// Tags of the SSM parameter.
        pub tags: Field<BTreeMap<String, Field<String>>>,
        /// `tags` merged over the provider's `default_tags`.
        pub tags_all: Field<BTreeMap<String, Field<String>>>,
        /// How long create, update and delete may take.
        pub timeouts: Field<TimeoutsModel>,
    }
}

/// The elements of a list block that is known (an unknown list, from a `dynamic` block fed by
/// another resource, has none yet).
pub(super) fn blocks<T>(field: &Field<Vec<T>>) -> &[T] {
    field.get().map_or(&[], Vec::as_slice)
}

/// The elements of a set block that is known (none while it is unknown).
pub(super) fn set_blocks<T>(field: &Field<Set<T>>) -> &[T] {
    field.get().map_or(&[], |set| set.0.as_slice())
}

/// A map of strings, all known (empty when null; `None` while the map or a value is unknown).
pub(super) fn known_strings(map: &Field<BTreeMap<String, Field<String>>>) -> Option<BTreeMap<String, String>> {
    match map {
        Field::Null => Some(BTreeMap::new()),
        Field::Unknown => None,
        Field::Known(entries) => entries
            .iter()
            .map(|(k, v)| Some((k.clone(), v.get()?.clone())))
            .collect(),
    }
}

/// The known strings of a collection.
pub(super) fn strings<'a>(items: impl IntoIterator<Item = &'a Field<String>>) -> Option<Vec<String>> {
    items.into_iter().map(|f| f.get().cloned()).collect()
}

impl ZoneReplicaMapModel {
    /// The publish target, when its block and name are known.
    pub fn target(&self) -> Option<Target> {
        if let Some(block) = blocks(&self.secretsmanager).first() {
            let id = block.secret_id.get()?.clone();
            return match &block.key {
                Field::Null => Some(Target::SecretsManager(id)),
                Field::Known(key) => Some(Target::SecretKey {
                    secret_id: id,
                    key: key.clone(),
                }),
                Field::Unknown => None,
            };
        }
        if let Some(name) = blocks(&self.ssm_parameter).first().and_then(|b| b.name.get()) {
            return Some(Target::Ssm(name.clone()));
        }
        blocks(&self.file)
            .first()
            .and_then(|b| b.path.get())
            .map(|p| Target::File(p.into()))
    }

    /// The modes of the `file` target (the defaults where not known or not valid).
    pub(super) fn file_modes(&self) -> super::target::FileModes {
        let file = blocks(&self.file).first();
        let mode = |field: Option<&Field<String>>, default: u32| {
            field
                .and_then(Field::get)
                .and_then(|text| super::target::parse_permission(text).ok())
                .unwrap_or(default)
        };
        super::target::FileModes {
            file: mode(file.map(|f| &f.file_permission), super::target::FILE_MODE),
            directory: mode(file.map(|f| &f.directory_permission), 0o777),
        }
    }

    /// How the `ssm_parameter` target stores the map (the defaults without one).
    pub(super) fn parameter_kind(&self) -> ParameterKind {
        let Some(block) = blocks(&self.ssm_parameter).first() else {
            return ParameterKind::default();
        };
        ParameterKind {
            secure: block.r#type.get().is_some_and(|t| t == "SecureString"),
            key_id: block.key_id.get().cloned(),
            tier: block.tier.get().cloned().unwrap_or_else(|| "Standard".into()),
        }
    }

    /// `tags_all` as known strings (empty when null; `None` while any is unknown).
    pub(super) fn known_tags_all(&self) -> Option<BTreeMap<String, String>> {
        known_strings(&self.tags_all)
    }

    /// A state for an imported target: the target block and no members.
    pub fn imported(target: &Target) -> Self {
        let mut model = ZoneReplicaMapModel {
            id: target.id().into(),
            member: Field::Known(Set::default()),
            ..Default::default()
        };
        match target {
            Target::SecretsManager(id) => {
                model.secretsmanager = Field::Known(vec![SecretsManagerModel {
                    secret_id: id.as_str().into(),
                    key: Field::Null,
                }])
            }
            Target::SecretKey { secret_id, key } => {
                model.secretsmanager = Field::Known(vec![SecretsManagerModel {
                    secret_id: secret_id.as_str().into(),
                    key: key.as_str().into(),
                }])
            }
            Target::Ssm(name) => {
                model.ssm_parameter = Field::Known(vec![SsmParameterModel {
                    name: name.as_str().into(),
                    r#type: "String".into(),
                    key_id: Field::Null,
                    tier: "Standard".into(),
                }])
            }
            Target::File(path) => {
                model.file = Field::Known(vec![FileModel {
                    path: path.display().to_string().into(),
                    file_permission: super::target::DEFAULT_FILE_PERMISSION.into(),
                    directory_permission: super::target::DEFAULT_DIRECTORY_PERMISSION.into(),
                }])
            }
        }
        model
    }

    /// Sets what is published: the endpoints (by AZ name, and by AZ ID when the map has
    /// them), the replica lists (when it has them), the uncovered zones and the document.
    pub fn set_published(
        &mut self,
        endpoints: &BTreeMap<String, String>,
        by_zone_id: Option<&BTreeMap<String, String>>,
        replicas: Option<&BTreeMap<String, Vec<String>>>,
        uncovered: &[String],
        document: &str,
    ) {
        self.set_endpoints(endpoints);
        self.set_endpoints_by_zone_id(by_zone_id);
        self.set_replicas(replicas);
        self.uncovered_zones = Field::known_list(uncovered.iter().cloned());
        self.document = document.into();
    }

    /// Sets what an imported state learns from its document (see [`replica_map::reconstruct`]):
    /// always the replication group or the `member` blocks, and the uncovered zones; the settings
    /// the document shows (`read_from_primary`, `spread_replicas`, `zone_ids`) only when they
    /// reproduce it byte for byte. A setting at its default stays null, as a configuration that
    /// leaves it out has it.
    pub(super) fn set_reconstructed(&mut self, found: &replica_map::Reconstructed) {
        let topology = &found.topology;
        // Discovered: the replication group, and no `member` blocks.
        let members = match &topology.replication_group_id {
            Some(group) => {
                self.replication_group_id = group.as_str().into();
                &[][..]
            }
            None => &topology.members[..],
        };
        self.member = Field::Known(Set(members
            .iter()
            .map(|m| MemberModel {
                endpoint: m.endpoint.as_str().into(),
                zone: m.zone.as_str().into(),
                role: match m.role {
                    Role::Primary => "primary",
                    Role::Replica => "replica",
                }
                .into(),
                shard: m.shard.clone().into(),
            })
            .collect()));
        self.uncovered_zones = Field::known_list(found.map.uncovered_zones.iter().cloned());
        if found.exact {
            if topology.read_from_primary {
                self.read_from_primary = Field::Known(true);
            }
            if topology.spread_replicas {
                self.spread_replicas = Field::Known(true);
            }
            if let Some(ids) = &topology.zone_ids {
                self.zone_ids = Field::known_map(ids.clone());
            }
            if let Some(zones) = &topology.zones {
                self.zones = Field::Known(Set(zones.iter().map(|z| Field::Known(z.clone())).collect()));
            }
        }
    }

    /// Sets the endpoints by AZ ID (null when the map has none).
    pub fn set_endpoints_by_zone_id(&mut self, by_zone_id: Option<&BTreeMap<String, String>>) {
        self.endpoints_by_zone_id = match by_zone_id {
            Some(map) => Field::known_map(map.clone()),
            None => Field::Null,
        };
    }

    /// Sets the replica lists (null when the map has none).
    pub fn set_replicas(&mut self, replicas: Option<&BTreeMap<String, Vec<String>>>) {
        self.replicas = match replicas {
            Some(map) => Field::Known(
                map.iter()
                    .map(|(zone, list)| (zone.clone(), Field::known_list(list.iter().cloned())))
                    .collect(),
            ),
            None => Field::Null,
        };
    }

    /// Sets the cluster-mode parts: the configuration endpoint (kept as configured when not
    /// cluster mode) and the shards (null when not cluster mode).
    pub fn set_cluster(&mut self, configuration_endpoint: Option<&str>, shards: Option<&super::replica_map::Shards>) {
        self.configuration_endpoint = match configuration_endpoint {
            Some(endpoint) => endpoint.into(),
            None => Field::Null,
        };
        self.shards = match shards {
            Some(shards) => Field::Known(
                shards
                    .iter()
                    .map(|(shard, zones)| {
                        let zones = zones
                            .iter()
                            .map(|(zone, list)| (zone.clone(), Field::known_list(list.iter().cloned())))
                            .collect();
                        (shard.clone(), Field::Known(zones))
                    })
                    .collect(),
            ),
            None => Field::Null,
        };
    }

    /// Sets the endpoints map.
    pub fn set_endpoints(&mut self, endpoints: &BTreeMap<String, String>) {
        self.endpoints = Field::known_map(endpoints.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tfplugin::model::ModelValue;

    #[test]
    fn model_and_schema_name_the_same_attributes_with_the_same_types() {
        assert_eq!(
            ZoneReplicaMapModel::value_type(),
            super::super::schema().block.value_type()
        );
    }
}
