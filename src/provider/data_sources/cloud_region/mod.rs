//! `locality_cloud_region`: which cloud region an IP is in, from the clouds' published ranges
//! (the snapshot built into the binary, `crate::ranges`). Works offline.

use std::net::IpAddr;

use async_trait::async_trait;

use crate::provider::ProviderData;
use crate::ranges::builtin;
use crate::tfplugin::{Attribute, AttributePath, Block, Context, DataSource, Diagnostics, Schema, Value};

/// The data source type.
pub struct CloudRegion;

/// The Terraform type name.
pub const TYPE_NAME: &str = "locality_cloud_region";

/// The data source schema.
pub fn schema() -> Schema {
    let computed = |name: &str, text: &str| Attribute::string(name).computed().description(text);
    Schema {
        version: 0,
        block: Block::new(
            "Which cloud region an IP address is in, by longest-prefix match against the IP ranges AWS, Google \
             Cloud, Azure and Oracle publish. The ranges are a snapshot built into the provider (its date is \
             `ranges_date`; `locality ranges update` rebuilds it), so this works offline.\n\n\
             An address in no cloud's ranges is not an error: `found` is false and the other attributes are \
             null, so a configuration can filter on it. An address in a global range (e.g. AWS CloudFront) has a \
             vendor but no region and no hint.",
        )
        .attribute(Attribute::string("ip").required().description("The IPv4 or IPv6 address to look up."))
        .attribute(Attribute::bool("found").computed().description("Whether the address is in a published cloud range."))
        .attribute(computed("vendor", "`aws`, `azure`, `gcp` or `oci`, as Cloudflare's hints spell them."))
        .attribute(computed("region", "The region, in the vendor's naming (`ap-northeast-1`, `asia-northeast1`, `japaneast`, `ap-tokyo-1`); null for global ranges."))
        .attribute(computed("prefix", "The longest published prefix that holds the address."))
        .attribute(computed("service", "The service the cloud lists the prefix under (`EC2`, `Google Cloud`, `AzureCloud`, `OCI`, ...)."))
        .attribute(computed("hint", "`vendor:region`, e.g. `aws:ap-northeast-1`: ready for `locality_region_hint`; null without a region."))
        .attribute(computed("ranges_date", "The date of the built-in ranges snapshot (YYYY-MM-DD).")),
    }
}

#[async_trait]
impl DataSource<ProviderData> for CloudRegion {
    fn type_name(&self) -> &'static str {
        TYPE_NAME
    }

    fn schema(&self) -> Schema {
        schema()
    }

    fn validate(&self, config: &Value, diags: &mut Diagnostics) {
        if let Some(ip) = config.get("ip").as_str() {
            if ip.parse::<IpAddr>().is_err() {
                diags.attribute_error(
                    AttributePath::root("ip"),
                    "Invalid IP address",
                    format!("{ip:?} is not an IPv4 or IPv6 address, e.g. \"192.0.2.1\" or \"2001:db8::1\"."),
                );
            }
        }
    }

    async fn read(&self, _ctx: &Context<ProviderData>, config: &Value, diags: &mut Diagnostics) -> Option<Value> {
        let text = config.get("ip").as_str()?;
        let Ok(ip) = text.parse::<IpAddr>() else {
            diags.attribute_error(
                AttributePath::root("ip"),
                "Invalid IP address",
                format!("{text:?} is not an IPv4 or IPv6 address."),
            );
            return None;
        };
        let table = builtin();
        let hit = table.lookup(ip);
        let mut out = config.clone();
        out.set("found", hit.is_some().into());
        out.set("vendor", hit.map(|r| r.vendor.as_str()).into());
        out.set("region", hit.and_then(|r| r.region.clone()).into());
        out.set("prefix", hit.map(|r| r.net.to_string()).into());
        out.set("service", hit.map(|r| r.service.clone()).into());
        out.set("hint", hit.and_then(|r| r.hint()).into());
        out.set("ranges_date", table.date.as_str().into());
        Some(out)
    }
}
