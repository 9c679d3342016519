//! `moved { from = cloudflare_origin_cloud_region.x  to = locality_region_hint.x }`: the
//! official Cloudflare provider's state (v5.20+, schema version 500: `zone_id`, `origin_ip`,
//! `vendor`, `region`, `id`, `modified_on`) converted into this resource's, with no API call.
//! The next refresh reads the live mapping (and `upper_tier_colos`); nothing is written.

use crate::provider::cloudflare::canonical_ip;
use crate::tfplugin::{Diagnostics, Field, MoveSource};

use super::{is_zone_id, region_problem, vendor_problem, RegionHintModel};

/// The official resource this one replaces.
pub(super) const OFFICIAL_TYPE: &str = "cloudflare_origin_cloud_region";

/// The schema version of the official resource's state that this conversion reads.
const OFFICIAL_SCHEMA_VERSION: i64 = 500;

/// The most characters of a moved state's value a diagnostic repeats.
const SHOWN_CHARS: usize = 64;

/// A value from the moved state as a diagnostic shows it: quoted, and cut after
/// [`SHOWN_CHARS`] characters (a state can hold anything, of any size).
fn shown(value: &str) -> String {
    let count = value.chars().count();
    if count <= SHOWN_CHARS {
        return format!("{value:?}");
    }
    let head: String = value.chars().take(SHOWN_CHARS).collect();
    format!("{head:?}… ({count} characters)")
}

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
    if source.schema_version != OFFICIAL_SCHEMA_VERSION {
        diags.error(
            "Unsupported state version to move",
            format!(
                "The {OFFICIAL_TYPE} state has schema version {}; this provider reads version {OFFICIAL_SCHEMA_VERSION} \
                 (cloudflare/cloudflare v5.20 and later). Upgrade the cloudflare provider and apply once before moving, \
                 or import the hint instead: `<zone_id>/<origin_ip>`.",
                source.schema_version
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
            format!(
                "The {OFFICIAL_TYPE} state has zone_id {} and origin_ip {}, which are not a zone ID and an IP address.",
                shown(&zone),
                shown(&ip)
            ),
        );
        return None;
    };
    let lower = vendor.to_ascii_lowercase();
    if let Some(problem) = vendor_problem(&lower).or_else(|| region_problem(&lower, &region)) {
        // The problem sentences quote the values whole: only short ones are repeated.
        let short = vendor.chars().count() <= SHOWN_CHARS && region.chars().count() <= SHOWN_CHARS;
        let why = if short {
            problem
        } else {
            format!(
                "vendor {} and region {} are not a cloud and region it knows.",
                shown(&vendor),
                shown(&region)
            )
        };
        diags.error(
            "Invalid state to move",
            format!(
                "The {OFFICIAL_TYPE} state of {ip} cannot become a locality_region_hint: {why} Fix the hint in \
                 Cloudflare, then import it instead: `<zone_id>/<origin_ip>`."
            ),
        );
        return None;
    }
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
            (
                "registry.terraform.io/cloudflare/cloudflare",
                OFFICIAL_TYPE,
                br#"{"zone_id":"023e105f4ecef8ad9ca31a8372d0c353","origin_ip":"192.0.2.1","vendor":"digitalocean","region":"nyc1"}"#,
            ),
            (
                "registry.terraform.io/cloudflare/cloudflare",
                OFFICIAL_TYPE,
                br#"{"zone_id":"023e105f4ecef8ad9ca31a8372d0c353","origin_ip":"192.0.2.1","vendor":"aws","region":"us-nowhere-1"}"#,
            ),
        ] {
            let mut diags = Diagnostics::default();
            assert!(from_official(&source(provider, type_name, json), &mut diags).is_none());
            assert!(diags.has_errors());
        }
        // Another schema version: refused, saying which one is read.
        let mut diags = Diagnostics::default();
        let mut other = source("registry.terraform.io/cloudflare/cloudflare", OFFICIAL_TYPE, json);
        other.schema_version = 0;
        assert!(from_official(&other, &mut diags).is_none());
        assert!(format!("{diags:?}").contains("schema version 0; this provider reads version 500"));
        // A huge origin_ip is repeated bounded.
        let huge = format!(
            r#"{{"zone_id":"023e105f4ecef8ad9ca31a8372d0c353","origin_ip":"{}","vendor":"aws","region":"us-east-1"}}"#,
            "9".repeat(10 << 20)
        );
        let mut diags = Diagnostics::default();
        assert!(from_official(
            &source(
                "registry.terraform.io/cloudflare/cloudflare",
                OFFICIAL_TYPE,
                huge.as_bytes()
            ),
            &mut diags
        )
        .is_none());
        let text = format!("{diags:?}");
        assert!(
            text.len() < 2000 && text.contains("(10485760 characters)"),
            "{}",
            text.chars().take(500).collect::<String>()
        );
    }
}
