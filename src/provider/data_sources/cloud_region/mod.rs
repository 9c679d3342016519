//! `locality_cloud_region`: which cloud region an IP is in, from the clouds' published ranges
//! (the snapshot built into the binary or `LOCALITY_RANGES_FILE`'s, `crate::ranges`). Works
//! offline.
//!
//! - `schema.rs`: the schema (its descriptions are the docs);
//! - `model.rs`: the model, the only place attributes are named;
//! - this file: the glue between the model and the lookup.

mod model;
mod schema;

use std::net::IpAddr;

use async_trait::async_trait;

pub use model::CloudRegionModel;
pub use schema::schema;

use crate::provider::ProviderData;
use crate::ranges::{active, active_source, staleness, Source};
use crate::tfplugin::{AttributePath, Context, DataSource, Diagnostic, Diagnostics, Field, Schema};

/// The data source type.
pub struct CloudRegion;

/// The Terraform type name.
pub const TYPE_NAME: &str = "locality_cloud_region";

#[async_trait]
impl DataSource<ProviderData> for CloudRegion {
    type Model = CloudRegionModel;

    fn type_name(&self) -> &'static str {
        TYPE_NAME
    }

    fn schema(&self) -> Schema {
        schema()
    }

    fn validate(&self, config: &CloudRegionModel, diags: &mut Diagnostics) {
        if let Some(ip) = config.ip.get() {
            if ip.parse::<IpAddr>().is_err() {
                diags.attribute_error(
                    AttributePath::root("ip"),
                    "Invalid IP address",
                    format!("{ip:?} is not an IPv4 or IPv6 address, e.g. \"192.0.2.1\" or \"2001:db8::1\"."),
                );
            }
        }
    }

    async fn read(
        &self,
        _ctx: &Context<ProviderData>,
        mut config: CloudRegionModel,
        diags: &mut Diagnostics,
    ) -> Option<CloudRegionModel> {
        let text = config.ip.get()?;
        let Ok(ip) = text.parse::<IpAddr>() else {
            diags.attribute_error(
                AttributePath::root("ip"),
                "Invalid IP address",
                format!("{text:?} is not an IPv4 or IPv6 address."),
            );
            return None;
        };
        let table = diags.check(active().map_err(|e| Diagnostic::error("Cannot read the IP-range snapshot", e)))?;
        let source = active_source();
        if let Some(stale) = staleness(table, &source, std::time::SystemTime::now()) {
            diags.warning("Old IP-range snapshot", stale);
        }
        let hit = table.lookup(ip);
        config.found = Field::Known(hit.is_some());
        config.vendor = hit.map(|r| r.vendor.as_str().to_string()).into();
        config.region = hit.and_then(|r| r.region.map(str::to_string)).into();
        config.prefix = hit.map(|r| r.net.to_string()).into();
        config.service = hit.map(|r| r.service.to_string()).into();
        config.hint = hit.and_then(|r| r.hint()).into();
        config.ranges_date = table.date.as_str().into();
        config.ranges_source = match source {
            Source::BuiltIn => "built-in".to_string(),
            Source::File(path) => path.display().to_string(),
        }
        .into();
        Some(config)
    }
}
