//! `moved { from = cloudflare_origin_cloud_region.x  to = locality_region_hint.x }`: the
//! official Cloudflare provider's state (v5.20+, schema version 500: `zone_id`, `origin_ip`,
//! `vendor`, `region`, `id`, `modified_on`) converted into this resource's, with no API call.
//! The next refresh reads the live mapping (and `upper_tier_colos`); nothing is written.

use crate::provider::cloudflare::canonical_ip;
use crate::tfplugin::{Diagnostics, Field, MoveSource};

use super::{is_zone_id, RegionHintModel};

/// The official resource this one replaces.
pub(super) const OFFICIAL_TYPE: &str = "cloudflare_origin_cloud_region";

/// Whether `provider` is the official Cloudflare provider (any registry host or mirror).
fn is_official_provider(provider: &str) -> bool {
    provider.rsplit('/').take(2).collect::<Vec<_>>() == ["cloudflare", "cloudflare"]
}

/// The state of `source`, when it is an official `cloudflare_origin_cloud_region`.
pub(super) fn from_official(source: &MoveSource<'_>, diags: &mut Diagnostics) -> Option<RegionHintModel> {
    if source.type_name != OFFICIAL_TYPE || !is_official_provider(source.provider) {
        diags.error(
            "Unsupported `moved` across resource types",
            format!(
                "locality_region_hint takes the state of {OFFICIAL_TYPE} (cloudflare/cloudflare) only, not of {} ({}); \
                 for another type, use `terraform state rm` and an `import` block with `<zone_id>/<origin_ip>`.",
                source.type_name, source.provider
            ),
        );
        return None;
    }
    let state: serde_json::Value = match serde_json::from_slice(source.state_json) {
        Ok(state) => state,
        Err(e) => {
            diags.error(
                "Unreadable state to move",
                format!("The {OFFICIAL_TYPE} state is not JSON ({e}); nothing was moved."),
            );
            return None;
        }
    };
    let text = |name: &str| state.get(name).and_then(serde_json::Value::as_str).map(str::to_string);
    let (Some(zone), Some(ip), Some(vendor), Some(region)) =
        (text("zone_id"), text("origin_ip"), text("vendor"), text("region"))
    else {
        diags.error(
            "Incomplete state to move",
            format!(
                "The {OFFICIAL_TYPE} state lacks one of zone_id, origin_ip, vendor and region (schema version {}); \
                 import the hint instead: `<zone_id>/<origin_ip>`.",
                source.schema_version
            ),
        );
        return None;
    };
    let Some(ip) = canonical_ip(&ip).filter(|_| is_zone_id(&zone)) else {
        diags.error(
            "Invalid state to move",
            format!("The {OFFICIAL_TYPE} state has zone_id {zone:?} and origin_ip {ip:?}, which are not a zone ID and an IP address."),
        );
        return None;
    };
    Some(RegionHintModel {
        id: format!("{zone}/{ip}").into(),
        zone_id: zone.into(),
        origin_ip: ip.into(),
        vendor: vendor.into(),
        region: region.into(),
        upper_tier_colos: Field::Null,
        modified_on: text("modified_on").into(),
        timeouts: Field::Null,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source<'a>(provider: &'a str, type_name: &'a str, json: &'a [u8]) -> MoveSource<'a> {
        MoveSource {
            provider,
            type_name,
            schema_version: 500,
            state_json: json,
        }
    }

    #[test]
    fn the_official_state_converts_and_anything_else_is_refused() {
        let json = br#"{"id":"2001:DB8::0001","zone_id":"023e105f4ecef8ad9ca31a8372d0c353","origin_ip":"2001:DB8::0001","vendor":"aws","region":"us-east-1","modified_on":"2026-06-20T00:00:00Z"}"#;
        let mut diags = Diagnostics::default();
        let model = from_official(
            &source("registry.terraform.io/cloudflare/cloudflare", OFFICIAL_TYPE, json),
            &mut diags,
        )
        .unwrap();
        assert_eq!(
            model.id.get().map(String::as_str),
            Some("023e105f4ecef8ad9ca31a8372d0c353/2001:db8::1")
        );
        assert_eq!(model.origin_ip.get().map(String::as_str), Some("2001:db8::1"));
        assert_eq!(
            model.modified_on.get().map(String::as_str),
            Some("2026-06-20T00:00:00Z")
        );
        for (provider, type_name, json) in [
            ("registry.terraform.io/hashicorp/aws", OFFICIAL_TYPE, &json[..]),
            (
                "registry.terraform.io/cloudflare/cloudflare",
                "cloudflare_zone",
                &json[..],
            ),
            (
                "registry.terraform.io/cloudflare/cloudflare",
                OFFICIAL_TYPE,
                b"{not json",
            ),
            (
                "registry.terraform.io/cloudflare/cloudflare",
                OFFICIAL_TYPE,
                br#"{"zone_id":"x"}"#,
            ),
            (
                "registry.terraform.io/cloudflare/cloudflare",
                OFFICIAL_TYPE,
                br#"{"zone_id":"x","origin_ip":"y","vendor":"aws","region":"r"}"#,
            ),
        ] {
            let mut diags = Diagnostics::default();
            assert!(from_official(&source(provider, type_name, json), &mut diags).is_none());
            assert!(diags.has_errors());
        }
    }
}
