//! Offline checks of a `locality_zone_replica_map` configuration. Every problem is a
//! diagnostic on the offending attribute; unknown values are skipped (they are checked again
//! once known).

use std::collections::HashMap;
use std::sync::OnceLock;

use locality_resolve::zone::check_endpoint;
use regex_lite::Regex;

use super::model::{blocks, set_blocks, ZoneReplicaMapModel};
use crate::provider::aws::{tag_problem, MAX_TAGS};
use crate::tfplugin::{AttributePath, Diagnostics, Field};

/// `tags`: only for an SSM target, with AWS's limits on keys and values.
fn validate_tags(config: &ZoneReplicaMapModel, diags: &mut Diagnostics) {
    let Field::Known(tags) = &config.tags else { return };
    let has_ssm = !blocks(&config.ssm_parameter).is_empty() || config.ssm_parameter.is_unknown();
    if !has_ssm && !tags.is_empty() {
        diags.attribute_error(
            AttributePath::root("tags"),
            "Nothing to tag",
            "`tags` are the SSM parameter's: only an `ssm_parameter` target creates an AWS resource. A file is not one, \
             and a secret is tagged where it is created (`aws_secretsmanager_secret`).",
        );
        return;
    }
    if tags.len() > MAX_TAGS {
        diags.attribute_error(
            AttributePath::root("tags"),
            "Too many tags",
            format!("{} tags; SSM allows {MAX_TAGS} on a parameter.", tags.len()),
        );
    }
    for (key, value) in tags {
        if let Some(problem) = tag_problem(key, value.get().map_or("", String::as_str)) {
            diags.attribute_error(AttributePath::root("tags"), "Invalid tag", problem);
        }
    }
}

/// Checks one configuration.
pub(super) fn validate(config: &ZoneReplicaMapModel, diags: &mut Diagnostics) {
    let members = set_blocks(&config.member);
    let group = &config.replication_group_id;
    if !group.is_null() && !members.is_empty() {
        diags.attribute_error(
            AttributePath::root("replication_group_id"),
            "Two topology sources",
            "Use either `replication_group_id` (discovered from ElastiCache) or `member` blocks, not both.",
        );
    } else if group.is_null() && !config.member.is_unknown() && members.is_empty() {
        diags.attribute_error(
            AttributePath::root("member"),
            "Missing topology",
            "Set `replication_group_id` to discover the topology from ElastiCache, or give `member { endpoint, zone, role }` blocks.",
        );
    }
    if let Some(id) = group.get() {
        let ok = (1..=40).contains(&id.len())
            && id.as_bytes()[0].is_ascii_alphabetic()
            && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && !id.ends_with('-')
            && !id.contains("--");
        if !ok {
            diags.attribute_error(
                AttributePath::root("replication_group_id"),
                "Invalid replication group ID",
                format!("{id:?} is not a replication group ID: 1-40 letters, digits and hyphens, starting with a letter, no two consecutive hyphens, not ending with a hyphen."),
            );
        }
    }
    if let Some(ids) = config.zone_ids.get() {
        for (name, id) in ids {
            let at = AttributePath::root("zone_ids").key(name);
            if !is_zone_name(name) {
                diags.attribute_error(
                    at.clone(),
                    "Invalid AZ name",
                    format!("{name:?} is not an availability zone name such as \"ap-northeast-1a\" (the keys of `zone_ids` are AZ names)."),
                );
            }
            if let Some(id) = id.get() {
                if !locality_resolve::zone::is_zone_id(id) {
                    diags.attribute_error(
                        at,
                        "Invalid AZ ID",
                        format!("{id:?} is not an availability zone ID such as \"apne1-az4\" (the values of `zone_ids` are AZ IDs)."),
                    );
                }
            }
        }
    }
    // `member` blocks form a set: Terraform sends them in no order of the configuration's, so
    // a problem is said at `member` and names the node by its endpoint, not by a position.
    let mut seen: HashMap<&str, &str> = HashMap::new();
    let mut primaries: HashMap<Option<&str>, &str> = HashMap::new();
    let at = || AttributePath::root("member");
    for member in members {
        let endpoint = member.endpoint.get().map(String::as_str);
        let named = endpoint.map_or_else(|| "a member".to_string(), |e| format!("member {e:?}"));
        if let Some(endpoint) = endpoint {
            let zone = member.zone.get().map_or("(unknown)", String::as_str);
            if let Err(problem) = check_endpoint(endpoint) {
                // (The problem names the endpoint.)
                diags.attribute_error(at(), "Invalid endpoint", problem);
            } else if let Some(first_zone) = seen.insert(endpoint, zone) {
                diags.attribute_error(
                    at(),
                    "Duplicate member",
                    format!(
                        "{endpoint:?} is in two member blocks (zones {first_zone:?} and {zone:?}); each node may appear once."
                    ),
                );
            }
        }
        if let Some(zone) = member.zone.get() {
            if !is_zone_name(zone) {
                diags.attribute_error(
                    at(),
                    "Invalid availability zone",
                    format!("{named}: {}", zone_problem(zone)),
                );
            }
        }
        match member.role.get().map(String::as_str) {
            Some("replica") | None => {}
            Some("primary") => {
                // One primary per replication group, or per shard in cluster mode.
                let shard = member.shard.get().map(String::as_str);
                if let Some(first) = primaries.insert(shard, endpoint.unwrap_or("?")) {
                    let scope = shard.map_or_else(
                        || "a replication group has one primary".to_string(),
                        |s| format!("shard {s:?} has one primary"),
                    );
                    diags.attribute_error(
                        at(),
                        "More than one primary",
                        format!("{named} and member {first:?} are both primaries; {scope}."),
                    );
                }
            }
            Some(other) => diags.attribute_error(
                at(),
                "Invalid role",
                format!("{named}: {other:?} is not a role; allowed: \"replica\", \"primary\"."),
            ),
        }
    }
    match &config.fallback_endpoint {
        Field::Known(endpoint) => {
            if let Err(problem) = check_endpoint(endpoint) {
                diags.attribute_error(AttributePath::root("fallback_endpoint"), "Invalid endpoint", problem);
            }
        }
        // Cluster mode (a configuration endpoint, even one known only at apply): the fallback
        // defaults to the configuration endpoint, as with discovery.
        Field::Null if !members.is_empty() && config.configuration_endpoint.is_null() => diags.attribute_error(
            AttributePath::root("fallback_endpoint"),
            "Missing fallback endpoint",
            "`fallback_endpoint` is required with `member` blocks: clients in AZs without a replica use it (`host:port`: the reader endpoint of a group without cluster mode; with cluster mode, set `configuration_endpoint` instead, and the fallback defaults to it).",
        ),
        _ => {}
    }
    if let Some(zones) = config.zones.get() {
        for (i, zone) in zones.0.iter().enumerate() {
            if let Some(z) = zone.get() {
                if !is_zone_name(z) {
                    diags.attribute_error(
                        AttributePath::root("zones").index(i),
                        "Invalid availability zone",
                        zone_problem(z),
                    );
                }
            }
        }
    }
    let present = |given: bool, unknown: bool| given || unknown;
    let targets: Vec<&str> = [
        (
            "secretsmanager",
            present(
                !blocks(&config.secretsmanager).is_empty(),
                config.secretsmanager.is_unknown(),
            ),
        ),
        (
            "ssm_parameter",
            present(
                !blocks(&config.ssm_parameter).is_empty(),
                config.ssm_parameter.is_unknown(),
            ),
        ),
        (
            "file",
            present(!blocks(&config.file).is_empty(), config.file.is_unknown()),
        ),
    ]
    .into_iter()
    .filter_map(|(name, given)| given.then_some(name))
    .collect();
    if targets.is_empty() {
        diags.attribute_error(
            AttributePath::root("file"),
            "Missing publish target",
            "Exactly one publish target block is required: `secretsmanager { secret_id = \"...\" }`, `ssm_parameter { name = \"...\" }` or `file { path = \"...\" }`.",
        );
    } else if targets.len() > 1 {
        diags.attribute_error(
            AttributePath::root(targets[1]),
            "More than one publish target",
            format!(
                "Exactly one publish target block is allowed; this resource has {}.",
                targets.join(" and ")
            ),
        );
    }
    crate::provider::timeouts::validate(&config.timeouts, diags);
    validate_tags(config, diags);
    for (i, p) in blocks(&config.ssm_parameter).iter().enumerate() {
        let at = |attr: &str| AttributePath::root("ssm_parameter").index(i).attr(attr);
        if let Some(kind) = p.r#type.get() {
            if kind != "String" && kind != "SecureString" {
                diags.attribute_error(
                    at("type"),
                    "Invalid parameter type",
                    format!("{kind:?} is not a type this resource publishes: \"String\" or \"SecureString\" (a StringList would split the map at its commas)."),
                );
            }
        }
        if let Some(tier) = p.tier.get() {
            if !["Standard", "Advanced", "Intelligent-Tiering"].contains(&tier.as_str()) {
                diags.attribute_error(
                    at("tier"),
                    "Invalid tier",
                    format!(
                        "{tier:?} is not an SSM parameter tier: \"Standard\", \"Advanced\" or \"Intelligent-Tiering\"."
                    ),
                );
            }
        }
        // (`type` not set is its default, "String"; unknown is not judged.)
        let kind = match &p.r#type {
            Field::Null => Some("String"),
            other => other.get().map(String::as_str),
        };
        if let (Some(key), Some(kind)) = (p.key_id.get(), kind) {
            if kind != "SecureString" {
                diags.attribute_error(
                    at("key_id"),
                    "Key without encryption",
                    format!("`key_id` ({key:?}) is the KMS key of a SecureString; this parameter is a {kind}. Set `type = \"SecureString\"`, or leave `key_id` out."),
                );
            } else if key.trim().is_empty() || key.len() > 2048 {
                diags.attribute_error(
                    at("key_id"),
                    "Invalid KMS key",
                    "Give a key ID, key ARN, alias name (`alias/...`) or alias ARN.",
                );
            }
        }
        if let Some(name) = p.name.get() {
            let ok = !name.is_empty()
                && name.len() <= 2048
                && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"_.-/".contains(&b))
                && !name.trim_start_matches('/').to_ascii_lowercase().starts_with("aws")
                && !name.trim_start_matches('/').to_ascii_lowercase().starts_with("ssm");
            if !ok {
                diags.attribute_error(
                    AttributePath::root("ssm_parameter").index(i).attr("name"),
                    "Invalid parameter name",
                    format!("{name:?} is not an SSM parameter name: letters, digits and _ . - /, at most 2048 characters, not starting with \"aws\" or \"ssm\"; e.g. \"/prod/cache/replica-map\"."),
                );
            }
        }
    }
    for (i, s) in blocks(&config.secretsmanager).iter().enumerate() {
        if s.secret_id.get().is_some_and(|id| id.trim().is_empty()) {
            diags.attribute_error(
                AttributePath::root("secretsmanager").index(i).attr("secret_id"),
                "Invalid secret ID",
                "Give the secret's name or ARN.",
            );
        }
        if let Some(key) = s.key.get() {
            if key.is_empty() || key.len() > 256 || key.contains('#') || key.chars().any(char::is_control) {
                diags.attribute_error(
                    AttributePath::root("secretsmanager").index(i).attr("key"),
                    "Invalid key",
                    format!("{key:?} cannot be a key of the secret: 1-256 characters, no `#` (it separates the key in import IDs) and no control characters."),
                );
            }
        }
    }
    for (i, file) in blocks(&config.file).iter().enumerate() {
        for (name, field) in [
            ("file_permission", &file.file_permission),
            ("directory_permission", &file.directory_permission),
        ] {
            match field.get().map(|text| (text, super::target::parse_permission(text))) {
                Some((_, Err(problem))) => {
                    diags.attribute_error(
                        AttributePath::root("file").index(i).attr(name),
                        "Invalid permission",
                        problem,
                    );
                }
                Some((text, Ok(mode))) if name == "file_permission" && mode & 0o002 != 0 => {
                    diags.attribute_warning(
                        AttributePath::root("file").index(i).attr(name),
                        "Map file writable by every user",
                        format!(
                            "{text:?} lets every user of this machine write the published map, so any of them could point the applications that read it at another endpoint. Use \"0644\" for a map everyone reads, or \"0640\" with the applications' group."
                        ),
                    );
                }
                _ => {}
            }
        }
        if let Some(path) = file.path.get() {
            if crate::files::has_parent_component(std::path::Path::new(path)) {
                diags.attribute_error(
                    AttributePath::root("file").index(i).attr("path"),
                    "Invalid path",
                    format!("{path:?} has `..` components; give the file's path without them (an absolute path, or one below the directory Terraform runs in)."),
                );
            } else if path.trim().is_empty() || path.ends_with('/') {
                diags.attribute_error(
                    AttributePath::root("file").index(i).attr("path"),
                    "Invalid path",
                    format!(
                        "{path:?} is not a file path; give the path of the file to publish, e.g. \"replicas.json\"."
                    ),
                );
            }
        }
    }
}

fn zone_problem(zone: &str) -> String {
    format!("{zone:?} is not an availability zone name; expected a region followed by a zone letter, such as \"ap-northeast-1a\" (or a Local Zone such as \"us-west-2-lax-1a\").")
}

/// Whether `zone` is an AZ name: `ap-northeast-1a`, `us-gov-west-1b`, `us-west-2-lax-1a`.
pub fn is_zone_name(zone: &str) -> bool {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"^[a-z]{2}(-[a-z]+)+-\d+(-[a-z]+-\d+)?[a-z]$").expect("valid regex"))
        .is_match(zone)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zones() {
        for ok in [
            "ap-northeast-1a",
            "us-east-1f",
            "us-gov-west-1b",
            "us-west-2-lax-1a",
            "eu-central-2c",
        ] {
            assert!(is_zone_name(ok), "{ok}");
        }
        for bad in ["ap-northeast-1", "apne1-az1", "AP-NORTHEAST-1A", "tokyo", ""] {
            assert!(!is_zone_name(bad), "{bad}");
        }
    }

    /// One primary per replication group, or per shard in cluster mode; problems name the node.
    #[test]
    fn one_primary_per_shard_and_problems_name_the_node() {
        use crate::tfplugin::Set;

        use super::super::model::MemberModel;
        let member = |endpoint: &str, role: &str, shard: Option<&str>| MemberModel {
            endpoint: endpoint.into(),
            zone: "ap-northeast-1a".into(),
            role: role.into(),
            shard: shard.map(String::from).into(),
        };
        let check = |members: Vec<MemberModel>, configuration_endpoint: Option<&str>| {
            let config = ZoneReplicaMapModel {
                member: Field::Known(Set(members)),
                fallback_endpoint: "reader.example:6379".into(),
                configuration_endpoint: configuration_endpoint.map(String::from).into(),
                file: Field::Known(vec![super::super::model::FileModel {
                    path: "map.json".into(),
                    ..Default::default()
                }]),
                ..Default::default()
            };
            let mut diags = Diagnostics::default();
            validate(&config, &mut diags);
            diags
                .iter()
                .map(|d| format!("{}: {}", d.summary, d.detail))
                .collect::<Vec<_>>()
        };
        let cfg = Some("clustercfg.g.example:6379");
        assert_eq!(
            check(
                vec![
                    member("a:6379", "primary", Some("0001")),
                    member("b:6379", "primary", Some("0002"))
                ],
                cfg
            ),
            Vec::<String>::new()
        );
        let two = check(
            vec![
                member("a:6379", "primary", Some("0001")),
                member("b:6379", "primary", Some("0001")),
            ],
            cfg,
        );
        assert_eq!(two.len(), 1, "{two:?}");
        assert!(
            two[0].contains("are both primaries; shard \"0001\" has one primary"),
            "{two:?}"
        );
        let two = check(
            vec![member("a:6379", "primary", None), member("b:6379", "primary", None)],
            None,
        );
        assert!(two[0].contains("a replication group has one primary"), "{two:?}");
        let bad = check(vec![member("a:6379", "reader", None)], None);
        assert_eq!(
            bad,
            vec![r#"Invalid role: member "a:6379": "reader" is not a role; allowed: "replica", "primary"."#]
        );
    }

    /// Cluster mode from `member` blocks: the fallback defaults to the configuration endpoint
    /// (as with discovery), so it is not required; without cluster mode it is, and the sentence
    /// says both.
    #[test]
    fn cluster_members_need_no_fallback() {
        use crate::tfplugin::Set;

        use super::super::model::MemberModel;
        let member = |endpoint: &str, zone: &str, role: &str| MemberModel {
            endpoint: endpoint.into(),
            zone: zone.into(),
            role: role.into(),
            shard: "0001".to_string().into(),
        };
        let check = |configuration_endpoint: Field<String>| {
            let config = ZoneReplicaMapModel {
                member: Field::Known(Set(vec![
                    member("a:6379", "ap-northeast-1a", "primary"),
                    member("c:6379", "ap-northeast-1c", "replica"),
                ])),
                configuration_endpoint,
                file: Field::Known(vec![super::super::model::FileModel {
                    path: "map.json".into(),
                    ..Default::default()
                }]),
                ..Default::default()
            };
            let mut diags = Diagnostics::default();
            validate(&config, &mut diags);
            diags
                .iter()
                .map(|d| format!("{}: {}", d.summary, d.detail))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            check("clustercfg.g.example:6379".to_string().into()),
            Vec::<String>::new()
        );
        assert_eq!(check(Field::Unknown), Vec::<String>::new());
        let without = check(Field::Null);
        assert_eq!(without.len(), 1, "{without:?}");
        assert!(
            without[0].starts_with("Missing fallback endpoint")
                && without[0].contains("set `configuration_endpoint` instead"),
            "{without:?}"
        );
    }
}
