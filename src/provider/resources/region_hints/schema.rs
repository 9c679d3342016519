//! The `locality_region_hints` schema. Its descriptions are the resource's documentation.

use std::collections::BTreeSet;

use crate::provider::cloudflare::canonical_ip;
use crate::provider::timeouts::{self, ALL};
use crate::tfplugin::{Attribute, Block, IdentityAttribute, IdentitySchema, Schema, Type, Value};

/// The same hints spelled differently: the same canonical IPs with the same values, case aside.
fn same_hints(a: &Value, b: &Value) -> bool {
    let canonical = |v: &Value| -> Option<BTreeSet<(String, String)>> {
        v.entries()?
            .iter()
            .map(|(ip, hint)| Some((canonical_ip(ip)?, hint.as_str()?.to_ascii_lowercase())))
            .collect()
    };
    matches!((canonical(a), canonical(b)), (Some(x), Some(y)) if x == y)
}

/// The same origins spelled or ordered differently.
fn same_origins(a: &Value, b: &Value) -> bool {
    let canonical = |v: &Value| -> Option<(usize, BTreeSet<String>)> {
        let items = v.elements();
        let set = items
            .iter()
            .map(|ip| canonical_ip(ip.as_str()?))
            .collect::<Option<BTreeSet<String>>>()?;
        Some((items.len(), set))
    };
    matches!((canonical(a), canonical(b)), (Some(x), Some(y)) if x == y)
}

/// The resource schema.
pub fn schema() -> Schema {
    Schema {
        version: 0,
        block: Block::new(
            "All of one Cloudflare zone's origin cloud-region hints in one resource: the way to manage hundreds or \
             thousands of origins. Applying writes only the difference, 100 mappings a batch request, so the zone \
             limit of 3,500 mappings applies in 35 write requests plus the listing, and refreshes in 35 list \
             requests.\n\n\
             Give hints explicitly in `hints` (origin IP → `vendor:region`), or list IPs in `origins` and let the \
             provider derive each hint at plan time from the clouds' published IP ranges (the snapshot built into \
             the binary, or the file named by `LOCALITY_RANGES_FILE`); the plan shows the derived values in \
             `effective`. IPs are compared in canonical form (RFC 5952) and values without regard to case, so \
             spelling never makes a diff. Every element is checked at plan time: a bad IP, an unknown vendor or \
             region (with suggestions), an IP given twice or in both `hints` and `origins`, or an `origins` IP in \
             no cloud's ranges is an error on that element.\n\n\
             A mapping that already exists with the same value is adopted without a write. One with another value \
             is refused, with its IPs listed and nothing written, unless `takeover = true`. When some items fail \
             (Cloudflare refuses a region, the zone is full), the rest is still applied, each failed IP is an error \
             on its own element with Cloudflare's code and message, and the state records exactly what the zone \
             holds, so the next plan shows only what is still missing. An IP managed both here and by a \
             `locality_region_hint` of the same configuration is reported at plan time.\n\n\
             A create that fails part-way leaves the resource tainted (Terraform's rule for failed creates), and \
             the next apply replaces it: the mappings it wrote are deleted and written again. With \
             `lifecycle { create_before_destroy = true }` the replacement adopts them instead, and nothing is \
             deleted.",
        )
        .attribute(
            Attribute::string("id")
                .computed()
                .use_state_for_unknown()
                .description("The zone ID."),
        )
        .attribute(
            Attribute::string("zone_id")
                .required()
                .requires_replace()
                .description("The zone's ID (32 hexadecimal characters). Changing it replaces the resource."),
        )
        .attribute(
            Attribute::typed("hints", Type::map(Type::String))
                .optional()
                .semantic_equality(same_hints)
                .description(
                    "Origin IP → `vendor:region`, e.g. `\"192.0.2.10\" = \"aws:us-east-1\"`. Vendors are `aws`, `azure`, \
                     `gcp` and `oci`; regions are checked against the built-in catalogue at plan time and against the \
                     zone's `supported_regions` at apply time.",
                ),
        )
        .attribute(
            Attribute::typed("origins", Type::list(Type::String))
                .optional()
                .semantic_equality(same_origins)
                .description(
                    "Origin IPs whose hint is derived at plan time from the clouds' published IP ranges (longest \
                     prefix wins), e.g. `[\"34.85.1.1\"]` gives `gcp:asia-northeast1`. An IP in no cloud's ranges, or \
                     in a range without a region, is an error: give its hint in `hints` instead.",
                ),
        )
        .attribute(Attribute::bool("exclusive").optional().description(
            "When `true`, the zone's mappings that this resource does not manage are deleted: the plan shows each \
             of them as an element removed from `unmanaged_mappings` (IP and current value), and `unmanaged` is \
             planned as 0, so mappings added outside Terraform show as drift. Turning `exclusive` on lists the \
             mappings it will delete in a plan warning. Default: `false`, other mappings are left alone.",
        ))
        .attribute(Attribute::bool("takeover").optional().description(
            "When `true`, mappings that already exist with another value are overwritten. Default: `false`, such \
             mappings are refused with their IPs listed (same-value mappings are adopted either way).",
        ))
        .attribute(Attribute::typed("effective", Type::map(Type::String)).computed().description(
            "Canonical IP → `vendor:region` (lowercase): every hint this resource manages, derived ones included, \
             as the zone holds them. Drift shows here per IP.",
        ))
        .attribute(Attribute::number("unmanaged").computed().description(
            "How many of the zone's mappings this resource does not manage; planned 0 when `exclusive`.",
        ))
        .attribute(Attribute::typed("unmanaged_mappings", Type::map(Type::String)).computed().description(
            "While `exclusive = true`: the zone's mappings this resource does not manage, canonical IP → \
             `vendor:region`, as refresh found them. Planned empty, so the plan names every mapping the apply will \
             delete, with its value. Null when not exclusive (the zone's other mappings are not tracked then).",
        ))
        .block(timeouts::block(
            &ALL,
            super::TIMEOUTS,
            "listing the zone, the batch requests with their retries, and the read-back after a lost response",
        )),
    }
}

/// The resource identity (Terraform 1.12+): the zone.
pub fn identity_schema() -> IdentitySchema {
    IdentitySchema {
        version: 0,
        attributes: vec![IdentityAttribute::required("zone_id", "The zone's ID.")],
    }
}
