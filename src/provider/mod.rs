//! The `locality` provider: its configuration, resources and data sources.
//!
//! Built on the protocol layer (`crate::tfplugin`); knows nothing of gRPC.

pub mod actions;
pub mod aws;
pub mod cloudflare;
pub mod config;
mod data;
pub mod data_sources;
mod diagnostics;
pub mod docs;
pub mod google;
pub mod resources;
mod secret;

use std::sync::Arc;

use async_trait::async_trait;

use crate::tfplugin::{
    action, data_source, list_resource, resource, Diagnostics, DynamicAction, DynamicDataSource, DynamicListResource,
    DynamicResource, Provider, Schema, Value,
};
pub use data::{NotConfigured, ProviderData};

/// The provider's source address.
pub const SOURCE_ADDRESS: &str = "registry.terraform.io/locality/locality";

/// The key of the provider-level default project (`google.project`).
pub const DEFAULT_PROJECT: &str = "google.project";

/// The `locality` provider.
#[derive(Debug, Default, Clone, Copy)]
pub struct LocalityProvider;

#[async_trait]
impl Provider for LocalityProvider {
    type Data = ProviderData;

    fn schema(&self) -> Schema {
        config::schema()
    }

    fn validate(&self, config: &Value, diags: &mut Diagnostics) {
        config::validate(config, diags);
    }

    async fn configure(&self, config: &Value, diags: &mut Diagnostics) -> Option<ProviderData> {
        let resolved = config::resolve(config, diags);
        tracing::debug!(config = ?resolved, "provider configured");
        (!diags.has_errors()).then(|| ProviderData::new(resolved))
    }

    fn resources(&self) -> Vec<Arc<dyn DynamicResource<ProviderData>>> {
        vec![
            resource(resources::zone_replica_map::ZoneReplicaMap),
            resource(resources::region_hint::RegionHint),
            resource(resources::region_hints::RegionHints),
            resource(resources::weighted_backend::WeightedBackend),
        ]
    }

    fn data_sources(&self) -> Vec<Arc<dyn DynamicDataSource<ProviderData>>> {
        vec![
            data_source(data_sources::cloud_region::CloudRegion),
            data_source(data_sources::anycast_check::AnycastCheck),
        ]
    }

    fn list_resources(&self) -> Vec<Arc<dyn DynamicListResource<ProviderData>>> {
        vec![
            list_resource(resources::region_hint::RegionHint),
            list_resource(resources::weighted_backend::WeightedBackend),
        ]
    }

    fn actions(&self) -> Vec<Arc<dyn DynamicAction<ProviderData>>> {
        vec![action(actions::shift_weights::ShiftWeights)]
    }

    fn attribute_default(data: &ProviderData, key: &str) -> Option<Value> {
        match key {
            DEFAULT_PROJECT => data.config.google.project.as_deref().map(Value::from),
            _ => None,
        }
    }
}
