//! The `locality_zone_replica_map` schema. Its descriptions are the resource's documentation.

use crate::tfplugin::{Attribute, Block, NestedBlock, Nesting, Schema, Type};

/// The resource schema.
pub fn schema() -> Schema {
    Schema {
        version: 0,
        block: Block::new(
            "The per-availability-zone read-endpoint map that applications load at start-up, so that each \
             client reads from the cache replica in its own AZ instead of crossing zones through the reader \
             endpoint. The topology comes from `member` blocks; the map is published as a small, deterministic \
             JSON document to a `file`.\n\n\
             Refresh is the point of this resource: `terraform plan` re-reads the published document, so an \
             out-of-band edit, or a topology change in configuration, shows up as a plan diff naming the AZ \
             whose endpoint changes, instead of a silent loss of same-AZ reads.",
        )
        .attribute(
            Attribute::string("id")
                .computed()
                .use_state_for_unknown()
                .description("The publish target as `<kind>:<name>`, e.g. `file:/etc/locality/replicas.json`."),
        )
        .attribute(Attribute::string("fallback_endpoint").optional().computed().description(
            "`host:port` that clients use when their AZ has no entry (normally the reader endpoint). \
             Required with `member` blocks.",
        ))
        .attribute(Attribute::typed("zones", Type::set(Type::String)).optional().description(
            "The client AZs to publish an entry for. Default: every AZ that has a member. An AZ listed here \
             with no usable member is reported in `uncovered_zones`.",
        ))
        .attribute(Attribute::bool("read_from_primary").optional().description(
            "Whether an AZ whose only local node is the primary routes its reads there. Default: `false` \
             (such an AZ uses the fallback and is listed in `uncovered_zones`).",
        ))
        .attribute(Attribute::typed("endpoints", Type::map(Type::String)).computed().description(
            "The published map: AZ name → `host:port` of the replica in that AZ. When several replicas share \
             an AZ, the one whose endpoint sorts first is used.",
        ))
        .attribute(Attribute::typed("uncovered_zones", Type::list(Type::String)).computed().description(
            "AZs (sorted) whose reads will still cross a zone: they have no replica (or only the primary while \
             `read_from_primary` is false) and use the fallback.",
        ))
        .attribute(Attribute::string("document").computed().description(
            "The exact JSON published, e.g. \
             `{\"version\":1,\"fallback\":\"reader.example:6379\",\"zones\":{\"ap-northeast-1a\":\"node-002.example:6379\"}}`. \
             Keys are sorted and there is no timestamp, so the same topology always gives the same bytes.",
        ))
        .attribute(Attribute::string("version").computed().description(
            "The published version: for a `file`, the SHA-256 (hex) of its content.",
        ))
        .block(NestedBlock::new(
            "member",
            Nesting::List,
            Block::new("One node of the replication group.")
                .attribute(Attribute::string("endpoint").required().description(
                    "The node's read endpoint as `host:port` (IPv6 hosts in brackets: `[2001:db8::1]:6379`).",
                ))
                .attribute(Attribute::string("zone").required().description(
                    "The node's availability zone name, e.g. `ap-northeast-1a`.",
                ))
                .attribute(Attribute::string("role").default("replica").description(
                    "The node's role: `replica` or `primary`.",
                )),
        ))
        .block(
            NestedBlock::new(
                "file",
                Nesting::List,
                Block::new(
                    "Publish to a local file that the resource owns (created, rewritten, and removed on destroy). \
                     Exactly one publish target is required.",
                )
                .attribute(
                    Attribute::string("path")
                        .required()
                        .requires_replace()
                        .description("Path of the file; relative paths are resolved against the directory Terraform runs in. Changing it replaces the resource."),
                ),
            )
            .items(0, 1),
        ),
    }
}
