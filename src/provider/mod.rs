//! The `locality` provider: its configuration, resources and data sources.
//!
//! Built on the protocol layer (`crate::tfplugin`); knows nothing of gRPC.

pub mod aws;
pub mod cloudflare;
pub mod config;
pub mod data_sources;
pub mod docs;
pub mod google;
pub mod http;
pub mod regions;
pub mod resources;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use async_trait::async_trait;

use crate::tfplugin::{DataSource, Diagnostics, Provider, Resource, Schema, Value};
use config::ProviderConfig;

/// The provider's source address.
pub const SOURCE_ADDRESS: &str = "registry.terraform.io/locality/locality";

/// What resources receive: the resolved configuration and lazily built API clients.
pub struct ProviderData {
    /// The provider block, resolved against the environment.
    pub config: ProviderConfig,
    http: OnceLock<reqwest::Client>,
    zones: OnceLock<Arc<cloudflare::Zones>>,
    aws: tokio::sync::OnceCell<aws::Aws>,
}

impl ProviderData {
    /// Wraps a resolved configuration.
    pub fn new(config: ProviderConfig) -> Self {
        ProviderData {
            config,
            http: OnceLock::new(),
            zones: OnceLock::new(),
            aws: tokio::sync::OnceCell::new(),
        }
    }

    /// The HTTP client shared by every API client of this provider process.
    pub fn http(&self) -> reqwest::Client {
        self.http.get_or_init(|| http::client(Duration::from_secs(60))).clone()
    }

    /// The Cloudflare client with this process's zone caches and batchers.
    ///
    /// # Errors
    /// What to set, when no Cloudflare API token is configured.
    pub fn cloudflare(&self) -> Result<Arc<cloudflare::Zones>, String> {
        if let Some(zones) = self.zones.get() {
            return Ok(zones.clone());
        }
        let token = self.config.cloudflare.api_token.clone().ok_or_else(|| {
            "No Cloudflare credentials: set `api_token` in the provider's `cloudflare` block, or the \
             CLOUDFLARE_API_TOKEN environment variable (a token with Zone Settings edit permission)."
                .to_string()
        })?;
        let client =
            cloudflare::Cloudflare::new(self.http(), &self.config.cloudflare.base_url, token, Default::default());
        Ok(self
            .zones
            .get_or_init(|| Arc::new(cloudflare::Zones::new(client)))
            .clone())
    }

    /// The AWS clients (configuration loaded once per process, on first use).
    pub async fn aws(&self) -> &aws::Aws {
        let c = &self.config.aws;
        self.aws
            .get_or_init(|| aws::Aws::load(c.region.as_deref(), c.endpoint_url.as_deref()))
            .await
    }

    /// The Compute Engine client.
    ///
    /// # Errors
    /// What to set, when no Google access token is configured.
    pub fn compute(&self) -> Result<google::Compute, String> {
        let token = self.config.google.access_token.clone().ok_or_else(|| {
            "No Google Cloud credentials: set `access_token` in the provider's `google` block, or the \
             GOOGLE_OAUTH_ACCESS_TOKEN environment variable (e.g. from `gcloud auth print-access-token`)."
                .to_string()
        })?;
        Ok(google::Compute::new(
            self.http(),
            &self.config.google.base_url,
            token,
            Default::default(),
            Default::default(),
        ))
    }
}

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

    fn resources(&self) -> Vec<Arc<dyn Resource<ProviderData>>> {
        vec![
            Arc::new(resources::zone_replica_map::ZoneReplicaMap),
            Arc::new(resources::region_hint::RegionHint),
            Arc::new(resources::weighted_backend::WeightedBackend),
        ]
    }

    fn data_sources(&self) -> Vec<Arc<dyn DataSource<ProviderData>>> {
        vec![
            Arc::new(data_sources::cloud_region::CloudRegion),
            Arc::new(data_sources::anycast_check::AnycastCheck),
        ]
    }
}
