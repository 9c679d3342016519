//! The `locality` provider: its configuration, resources and data sources.
//!
//! Built on the protocol layer (`crate::tfplugin`); knows nothing of gRPC.

pub mod config;
pub mod docs;
pub mod resources;

use std::sync::Arc;

use async_trait::async_trait;

use crate::tfplugin::{DataSource, Diagnostics, Provider, Resource, Schema, Value};
use config::ProviderConfig;

/// The provider's source address.
pub const SOURCE_ADDRESS: &str = "registry.terraform.io/locality/locality";

/// The `locality` provider.
#[derive(Debug, Default, Clone, Copy)]
pub struct LocalityProvider;

#[async_trait]
impl Provider for LocalityProvider {
    type Data = ProviderConfig;

    fn schema(&self) -> Schema {
        config::schema()
    }

    fn validate(&self, config: &Value, diags: &mut Diagnostics) {
        config::validate(config, diags);
    }

    async fn configure(&self, config: &Value, diags: &mut Diagnostics) -> Option<ProviderConfig> {
        let resolved = config::resolve(config, diags);
        tracing::debug!(config = ?resolved, "provider configured");
        (!diags.has_errors()).then_some(resolved)
    }

    fn resources(&self) -> Vec<Arc<dyn Resource<ProviderConfig>>> {
        vec![Arc::new(resources::zone_replica_map::ZoneReplicaMap)]
    }

    fn data_sources(&self) -> Vec<Arc<dyn DataSource<ProviderConfig>>> {
        Vec::new()
    }
}
