//! The `locality_region_hint` schema. Its descriptions are the resource's documentation.

use crate::provider::cloudflare::canonical_ip;
use crate::provider::timeouts::{self, ALL};
use crate::tfplugin::{Attribute, Block, IdentityAttribute, IdentitySchema, Schema, Type, Value};

fn same_ip(a: &Value, b: &Value) -> bool {
    match (a.as_str().and_then(canonical_ip), b.as_str().and_then(canonical_ip)) {
        (Some(x), Some(y)) => x == y,
        _ => false,
    }
}

fn same_ignoring_case(a: &Value, b: &Value) -> bool {
    matches!((a.as_str(), b.as_str()), (Some(x), Some(y)) if x.eq_ignore_ascii_case(y))
}

/// The resource schema.
pub fn schema() -> Schema {
    Schema {
        version: 0,
        block: Block::new(
            "One Cloudflare origin cloud-region hint: tells Smart Tiered Cache which cloud region an origin IP \
             really lives in (`aws:us-east-1`, `gcp:asia-northeast1`, ...), so that an anycast or regional cloud \
             front end still gets the right upper-tier data center.\n\n\
             IPs are compared in canonical form (RFC 5952) and vendors and regions without regard to case, so \
             `2001:DB8::0001` and `2001:db8::1` never diff. `vendor` and `region` are checked at plan time against \
             a built-in region catalogue (with suggestions) and at apply time against the zone's \
             `supported_regions`. Creating a hint for an IP that already has one fails and shows the import \
             command, instead of silently taking it over. Refreshing many hints in one zone lists the zone \
             (100 a page) once and shares it; writes arriving together are sent as batch requests.",
        )
        .attribute(Attribute::string("id").computed().use_state_for_unknown().description("`<zone_id>/<origin_ip>`, with the IP in canonical form."))
        .attribute(
            Attribute::string("zone_id")
                .required()
                .requires_replace()
                .description("The zone's ID (32 hexadecimal characters). Changing it replaces the resource."),
        )
        .attribute(
            Attribute::string("origin_ip")
                .required()
                .requires_replace()
                .semantic_equality(same_ip)
                .description("The origin's IPv4 or IPv6 address; compared in canonical form (RFC 5952). Changing it replaces the resource."),
        )
        .attribute(
            Attribute::string("vendor")
                .required()
                .semantic_equality(same_ignoring_case)
                .description("The cloud: `aws`, `azure`, `gcp` or `oci` (case-insensitive)."),
        )
        .attribute(
            Attribute::string("region")
                .required()
                .semantic_equality(same_ignoring_case)
                .description("The vendor's region name, e.g. `us-east-1` (aws), `asia-northeast1` (gcp), `japaneast` (azure), `ap-tokyo-1` (oci)."),
        )
        .attribute(
            Attribute::typed("upper_tier_colos", Type::list(Type::String))
                .computed()
                .tracks(&["vendor", "region"])
                .description("The upper-tier Cloudflare data centers Smart Tiered Cache uses for this region (from the zone's `supported_regions`; empty when Cloudflare has not published them)."),
        )
        .attribute(Attribute::string("modified_on").computed().description(
            "When the mapping last changed (RFC 3339), as Cloudflare reports it. After a write that was sent in a batch it is null until the next refresh (batch responses do not carry it).",
        ))
        .block(timeouts::block(
            &ALL,
            super::TIMEOUTS,
            "the batched write or delete with its retries, and the read-back after a lost response",
        )),
    }
}

/// The resource identity (Terraform 1.12+): zone and canonical IP.
pub fn identity_schema() -> IdentitySchema {
    IdentitySchema {
        version: 0,
        attributes: vec![
            IdentityAttribute::required("zone_id", "The zone's ID."),
            IdentityAttribute::required(
                "origin_ip",
                "The origin IP; any spelling on import, canonical (RFC 5952) when Terraform stores it.",
            ),
        ],
    }
}
