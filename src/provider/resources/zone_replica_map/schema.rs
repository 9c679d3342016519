//! The `locality_zone_replica_map` schema. Its descriptions are the resource's documentation.

use crate::provider::timeouts::{self, ALL};
use crate::tfplugin::{Attribute, Block, IdentityAttribute, IdentitySchema, NestedBlock, Nesting, Schema, Type};

/// The resource schema.
pub fn schema() -> Schema {
    Schema {
        version: 0,
        block: Block::new(
            "The per-availability-zone read-endpoint map that applications load at start-up, so that each \
             client reads from the cache replica in its own AZ instead of crossing zones through the reader \
             endpoint. The topology is discovered from an ElastiCache replication group (`replication_group_id`) \
             or given as `member` blocks; the map is published as a small, deterministic JSON document to a \
             Secrets Manager secret, an SSM parameter or a file.\n\n\
             Refresh is the point of this resource: `terraform plan` re-discovers the topology and re-reads the \
             published document, so a replaced replica, a member in a new AZ or an out-of-band edit shows up as a \
             plan diff naming the AZ whose endpoint changes, instead of a silent loss of same-AZ reads.\n\n\
             Applications read the map with `locality resolve` (or the `locality-resolve` Rust crate), which \
             finds the process's AZ and falls back to the reader endpoint on every failure path: see the guide \
             [Consuming the replica map](../guides/consuming-the-replica-map.md).",
        )
        .attribute(
            Attribute::string("id")
                .computed()
                .use_state_for_unknown()
                .description("The publish target as `<kind>:<name>`, e.g. `file:/etc/locality/replicas.json`."),
        )
        .attribute(Attribute::string("replication_group_id").optional().description(
            "The ElastiCache replication group to discover the topology from: every member's read endpoint, AZ and \
             role (DescribeReplicationGroups, at every plan). Exactly one of this and `member` blocks. A \
             cluster-mode-enabled group is accepted: every shard's members and AZs from DescribeReplicationGroups, \
             their endpoints from DescribeCacheClusters (`ShowCacheNodeInfo`; where it gives none, as some emulators \
             do, named from the configuration endpoint as ElastiCache names nodes, with a warning), and their role as \
             each shard was created (ElastiCache reports no live role in cluster mode: member `-001` is the primary). \
             The map then holds no zone entry (no one replica serves every key), `configuration_endpoint` is \
             published, the fallback defaults to it, and `uncovered_zones` lists the AZs where some shard has no replica. \
             The document names the group (`replication_group_id`), so that an import reads it back.",
        ))
        .attribute(Attribute::string("fallback_endpoint").optional().computed().description(
            "`host:port` that clients use when their AZ has no entry. Required with `member` blocks, unless \
             `configuration_endpoint` is set (cluster mode: it defaults to the configuration endpoint). With \
             `replication_group_id` it defaults to the group's reader endpoint; when the API returns none (some \
             emulators), to the primary endpoint, with a warning.",
        ))
        .attribute(Attribute::typed("zones", Type::set(Type::String)).optional().description(
            "The client AZs to publish an entry for. Default: every AZ that has a member. An AZ listed here \
             with no usable member is reported in `uncovered_zones`, and published in the document's \
             `uncovered_zones` (so that an import gives `zones` back).",
        ))
        .attribute(Attribute::bool("read_from_primary").optional().description(
            "Whether an AZ whose only local node is the primary routes its reads there. Default: `false` \
             (such an AZ uses the fallback and is listed in `uncovered_zones`).",
        ))
        .attribute(Attribute::typed("zone_ids", Type::map(Type::String)).optional().description(
            "AZ name → AZ ID of the cache's account, typically \
             `zipmap(data.aws_availability_zones.all.names, data.aws_availability_zones.all.zone_ids)`. AZ names \
             differ between accounts (`ap-northeast-1a` in one is another's `ap-northeast-1c`); AZ IDs \
             (`apne1-az4`) do not. When set, the document also maps each AZ ID to its endpoint (`zone_ids`), so \
             a client in another account (VPC peering, Transit Gateway) or on Lambda (which knows only its AZ \
             ID) is routed by ID (`locality resolve` matches by ID when both sides have one). Unknown at plan \
             time, the document is planned unknown.",
        ))
        .attribute(Attribute::bool("spread_replicas").optional().description(
            "Whether the document also lists every usable node of each AZ (`\"replicas\": {\"<az>\": [\"host:port\", ...]}`, \
             and by AZ ID with `zone_ids`), so that clients in one AZ spread over its replicas (`locality resolve` \
             picks one per host, stably) instead of all reading from the one that sorts first. Default: `false`.",
        ))
        .attribute(Attribute::typed("endpoints_by_zone_id", Type::map(Type::String)).computed().description(
            "With `zone_ids`: the published map by AZ ID → `host:port` (null without `zone_ids`).",
        ))
        .attribute(Attribute::typed("replicas", Type::map(Type::list(Type::String))).computed().description(
            "With `spread_replicas`: the published lists of every usable node, AZ name (and AZ ID with \
             `zone_ids`) → `host:port`s (null without `spread_replicas`). A list changed out of band shows in \
             the plan under its AZ.",
        ))
        .attribute(Attribute::typed("tags", Type::map(Type::String)).optional().description(
            "Tags of the SSM parameter this resource creates (`ssm_parameter` only: a file is not an AWS resource, \
             and a secret belongs to whoever created it, with its own tags). Merged over the provider's \
             `aws.default_tags` as the AWS provider merges them (these win on the same key); given to \
             `PutParameter` as the parameter is created, then kept with `AddTagsToResource` and \
             `RemoveTagsFromResource`. Refresh reads the parameter's tags (`ListTagsForResource`) when it has or \
             should have any, so a tag changed outside Terraform shows in the plan and the next apply sets it back.",
        ))
        .attribute(Attribute::typed("tags_all", Type::map(Type::String)).computed().description(
            "The parameter's tags: `tags` over the provider's `aws.default_tags` (null for a file or secret target).",
        ))
        .attribute(Attribute::string("configuration_endpoint").optional().computed().description(
            "`host:port` of a cluster-mode-enabled group's configuration endpoint, where cluster clients (Valkey GLIDE's \
             cluster client) start: discovered with `replication_group_id`; with `member` blocks, given here (with each \
             `member`'s `shard`). Published as `configuration_endpoint`; null for a group without cluster mode.",
        ))
        .attribute(
            Attribute::typed("shards", Type::map(Type::map(Type::list(Type::String))))
                .computed()
                .description(
                    "Cluster mode: shard (node group ID) → AZ → the shard's nodes in that AZ, as published in `nodes`; a \
                     replaced node or a shard that loses its replica in an AZ shows in the plan under its shard and AZ. \
                     Null without cluster mode.",
                ),
        )
        .attribute(Attribute::typed("endpoints", Type::map(Type::String)).computed().description(
            "The published map: AZ name → `host:port` of the replica in that AZ. When several replicas share \
             an AZ, the one whose endpoint sorts first is used.",
        ))
        .attribute(Attribute::typed("uncovered_zones", Type::list(Type::String)).computed().description(
            "AZs (sorted) whose reads will still cross a zone: they have no replica (or only the primary while \
             `read_from_primary` is false) and use the fallback.",
        ))
        .attribute(Attribute::string("document").computed().sensitive().description(
            "The exact JSON published, e.g. \
             `{\"version\":1,\"fallback\":\"reader.example:6379\",\"zones\":{\"ap-northeast-1a\":\"node-002.example:6379\"}}`. \
             Keys are sorted and there is no timestamp, so the same topology always gives the same bytes. \
             Sensitive, since an imported secret may hold other values: `endpoints`, `endpoints_by_zone_id` \
             and `replicas` show each AZ's change in plans.",
        ))
        .attribute(Attribute::string("version").computed().tracks(&["document", "ssm_parameter"]).description(
            "The published version: the secret's VersionId, the parameter's version number, or for a `file` the \
             SHA-256 (hex) of its content.",
        ))
        .block(NestedBlock::new(
            "member",
            Nesting::Set,
            Block::new(
                "One node of the replication group (instead of `replication_group_id`). The blocks form a set: \
                 their order carries no meaning, as the document lists its `nodes` sorted. An import reads them \
                 back from the published document's `nodes`, so importing a map that this configuration \
                 published plans no change.",
            )
                .attribute(Attribute::string("endpoint").required().description(
                    "The node's read endpoint as `host:port` (IPv6 hosts in brackets: `[2001:db8::1]:6379`).",
                ))
                .attribute(Attribute::string("zone").required().description(
                    "The node's availability zone name, e.g. `ap-northeast-1a`.",
                ))
                .attribute(Attribute::string("role").default("replica").description(
                    "The node's role: `replica` or `primary`.",
                ))
                .attribute(Attribute::string("shard").optional().description(
                    "The node group (shard) ID, in cluster mode (with `configuration_endpoint`); published in `nodes`.",
                )),
        ))
        .block(
            NestedBlock::new(
                "file",
                Nesting::List,
                Block::new(
                    "Publish to a local file that the resource owns (created, rewritten, and removed on destroy). \
                     Every write is atomic (an exclusive temporary file with a random name in the same folder, \
                     fsync, rename) and gives the file exactly `file_permission` (default `0600`), whatever mode a \
                     file there had (never setuid, setgid or sticky); a mode changed outside Terraform shows as drift \
                     and the next apply sets it back. A file already at the path when the resource is created is adopted: \
                     replaced, with a warning. Refresh and import read the path itself: a symbolic link there, \
                     anything but a regular file, or a file over 4 MiB is an error, never followed into state. \
                     A path with `..` components is refused. Exactly one publish target (`secretsmanager`, `ssm_parameter` or `file`) is required.",
                )
                .attribute(
                    Attribute::string("path")
                        .required()
                        .requires_replace()
                        .description("Path of the file; relative paths are resolved against the directory Terraform runs in. Changing it replaces the resource."),
                )
                .attribute(Attribute::string("file_permission").default("0600").description(
                    "The file's mode as three or four octal digits, as `local_file` takes it, e.g. `\"0640\"` for a \
                     group that runs the application; set exactly (the umask does not apply). At most `0777`. \
                     Default `0600`: the user Terraform runs as. Changing it rewrites the file with the new mode. \
                     On Windows, which has no Unix modes, it is kept in state but not applied (the folder's ACL \
                     governs access).",
                ))
                .attribute(Attribute::string("directory_permission").default("0777").description(
                    "The mode of directories created for the file when they are missing (existing ones are left as \
                     they are), as `local_file` takes it; the umask applies, as for `mkdir`. Default `0777` (with the \
                     usual umask 022: `0755`). Not applied on Windows.",
                )),
            )
            .items(0, 1),
        )
        .block(
            NestedBlock::new(
                "secretsmanager",
                Nesting::List,
                Block::new(
                    "Publish as a new version of an existing Secrets Manager secret. What an apply does: when the \
                     document changes (and only then), one `PutSecretValue` replaces the secret's whole `SecretString` \
                     with the document; Secrets Manager makes that version `AWSCURRENT` and the one before it \
                     `AWSPREVIOUS` (older versions lose their labels and are eventually removed by Secrets Manager), \
                     encrypted with the secret's own KMS key. Any other content of the secret is replaced, so give \
                     this resource a secret of its own. The secret must exist (create it with `aws_secretsmanager_secret`); \
                     its description, policy, rotation and tags are never touched. Refresh reads `AWSCURRENT`, so an \
                     out-of-band edit shows as drift. The secret's lifecycle stays with whoever created it: destroy \
                     leaves it (and its last value) in place. Needs `secretsmanager:GetSecretValue` and \
                     `secretsmanager:PutSecretValue` on the secret (and `kms:Decrypt`/`kms:GenerateDataKey` on a \
                     customer-managed key).",
                )
                .attribute(
                    Attribute::string("secret_id")
                        .required()
                        .requires_replace()
                        .description("The secret's name or ARN. Changing it replaces the resource."),
                )
                .attribute(Attribute::string("key").optional().requires_replace().description(
                    "Publish the map as a JSON object under this key of a secret that holds a JSON object (as \
                     applications keep several values in one secret), keeping every other key exactly as it is. A \
                     secret whose value is not a JSON object is an error, and nothing is written. Each write \
                     re-reads the secret and checks that no other writer got in between (when one did, the \
                     change is made again on top of theirs, so theirs is not lost). Refresh reads only this key; \
                     destroy removes only this key (the secret stays). Import ID: `secretsmanager:<secret>#<key>`. \
                     Needs `secretsmanager:DescribeSecret` too. Changing it replaces the resource.",
                )),
            )
            .items(0, 1),
        )
        .block(
            NestedBlock::new(
                "ssm_parameter",
                Nesting::List,
                Block::new(
                    "Publish to an SSM parameter that the resource owns: created (an existing parameter is refused: \
                     import it), overwritten on change, deleted on destroy. A `String` by default (the map holds \
                     endpoints, not secrets, so neither writing nor reading it involves KMS); `type = \"SecureString\"` \
                     encrypts it with KMS, as a policy that requires every parameter to be encrypted asks. Refresh \
                     reads it decrypted (`GetParameter` with decryption), so drift is the text applications read.",
                )
                .attribute(
                    Attribute::string("name")
                        .required()
                        .requires_replace()
                        .description("The parameter name, e.g. `/prod/cache/replica-map`. Changing it replaces the resource."),
                )
                .attribute(Attribute::string("type").default("String").requires_replace().description(
                    "`String` (default) or `SecureString`. SSM cannot change a parameter's type in place, so changing \
                     it replaces the parameter (deleted, then created: readers fall back to the reader endpoint \
                     meanwhile). A type changed outside Terraform shows as drift.",
                ))
                .attribute(Attribute::string("key_id").optional().description(
                    "The KMS key of a `SecureString` (key ID, key ARN, alias name or alias ARN). Default: the \
                     account's AWS managed key `alias/aws/ssm`, which needs no KMS permission in your policy. A \
                     customer managed key needs `kms:Encrypt` (apply) and `kms:Decrypt` (refresh) on it, and \
                     `kms:GenerateDataKey` for an `Advanced` parameter. Only with `type = \"SecureString\"`. Changing \
                     it writes the map again under the new key. Refresh reads the key (`DescribeParameters`).",
                ))
                .attribute(Attribute::string("tier").default("Standard").description(
                    "`Standard` (default, free, up to 4 KB), `Advanced` (up to 8 KB, charged) or \
                     `Intelligent-Tiering` (SSM picks). Standard → Advanced is done in place; SSM cannot move a \
                     parameter back to Standard, so that change is refused at plan with what to do. With a tier \
                     other than Standard, or a `SecureString`, refresh reads the tier and key (`DescribeParameters`).",
                )),
            )
            .items(0, 1),
        )
        .block(timeouts::block(
            &ALL,
            super::TIMEOUTS,
            "publishing the map with the AWS SDK's retries and its read-backs, or removing what was published",
        )),
    }
}

/// The resource identity (Terraform 1.12+): where the map is published.
pub fn identity_schema() -> IdentitySchema {
    IdentitySchema {
        version: 0,
        attributes: vec![
            IdentityAttribute::required("kind", "The publish target: `file`, `secretsmanager` or `ssm`."),
            IdentityAttribute::required(
                "name",
                "The file path, the secret's name or ARN, or the parameter name.",
            ),
        ],
    }
}
