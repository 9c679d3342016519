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
pub mod functions;
pub mod google;
pub mod resources;
mod secret;
pub mod timeouts;
pub mod write_lock;

use std::sync::Arc;

use async_trait::async_trait;

use crate::tfplugin::{
    action, data_source, list_resource, resource, AttributePath, Diagnostics, DynamicAction, DynamicDataSource,
    DynamicListResource, DynamicResource, Provider, Schema, Value,
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

    async fn configure(
        &self,
        config: &Value,
        terraform_version: &str,
        diags: &mut Diagnostics,
    ) -> Option<ProviderData> {
        let resolved = config::resolve(config, diags);
        tracing::debug!(config = ?resolved, terraform_version, "provider configured");
        if diags.has_errors() {
            return None;
        }
        let data = ProviderData::new(resolved).with_terraform_version(terraform_version);
        check_aws_credentials(&data, diags).await;
        (!diags.has_errors()).then_some(data)
    }

    fn resources(&self) -> Vec<Arc<dyn DynamicResource<ProviderData>>> {
        vec![
            resource(resources::zone_replica_map::ZoneReplicaMap),
            resource(resources::region_hint::RegionHint),
            resource(resources::region_hints::RegionHints),
            resource(resources::weighted_backend::WeightedBackend),
            resource(resources::lb_forward_weights::LbForwardWeights),
        ]
    }

    fn data_sources(&self) -> Vec<Arc<dyn DynamicDataSource<ProviderData>>> {
        vec![
            data_source(data_sources::cloud_region::CloudRegion),
            data_source(data_sources::anycast_check::AnycastCheck),
            data_source(data_sources::cross_zone_cost::CrossZoneCost),
        ]
    }

    fn list_resources(&self) -> Vec<Arc<dyn DynamicListResource<ProviderData>>> {
        vec![
            list_resource(resources::region_hint::RegionHint),
            list_resource(resources::weighted_backend::WeightedBackend),
        ]
    }

    fn actions(&self) -> Vec<Arc<dyn DynamicAction<ProviderData>>> {
        vec![
            action(actions::shift_weights::ShiftWeights),
            action(actions::shift_lb_weights::ShiftLbWeights),
        ]
    }

    fn functions(&self) -> Vec<Arc<dyn crate::tfplugin::Function>> {
        functions::all()
    }

    fn attribute_default(data: &ProviderData, key: &str) -> Option<Value> {
        match key {
            DEFAULT_PROJECT => data.config.google.project.as_deref().map(Value::from),
            _ => None,
        }
    }
}

/// The AWS checks a configuration asks for, once per provider process and before anything is
/// read or written: the named shared files and profile exist, and (with `allowed_account_ids`
/// or `forbidden_account_ids`) the credentials belong to an allowed account (STS
/// GetCallerIdentity). Errors point at the `aws` block's attributes.
async fn check_aws_credentials(data: &ProviderData, diags: &mut Diagnostics) {
    let at = |attr: &str| AttributePath::root("aws").attr(attr);
    let settings = data.aws_settings();
    let problems = settings.check_files().await;
    for (attribute, problem) in &problems {
        diags.attribute_error(at(attribute), "AWS configuration not found", problem.clone());
    }
    let aws = &data.config.aws;
    if !problems.is_empty() || !aws.checks_account() {
        return;
    }
    let account = match data.aws().await.caller_account().await {
        Ok(account) => account,
        Err(e) => {
            let (attribute, what) = if aws.assume_role.is_some() {
                ("assume_role", "Assuming the role")
            } else {
                ("allowed_account_ids", "Checking the account")
            };
            diags.attribute_error(
                at(attribute),
                "AWS credentials not usable",
                format!(
                    "{what} failed (STS GetCallerIdentity): {e}. Check the credentials the chain finds (AWS_PROFILE, `profile`, \
                     AWS_ACCESS_KEY_ID, `aws sso login`, ...){}.",
                    if aws.assume_role.is_some() { " and that they may assume `role_arn`" } else { "" }
                ),
            );
            return;
        }
    };
    if !aws.allowed_account_ids.is_empty() && !aws.allowed_account_ids.contains(&account) {
        diags.attribute_error(
            at("allowed_account_ids"),
            "AWS account not allowed",
            format!(
                "The AWS credentials belong to account {account}, which is not in `allowed_account_ids` ({}). Use \
                 credentials of an allowed account (`profile`, `assume_role`, AWS_PROFILE) or change the list.",
                aws.allowed_account_ids.join(", ")
            ),
        );
    }
    if aws.forbidden_account_ids.contains(&account) {
        diags.attribute_error(
            at("forbidden_account_ids"),
            "AWS account forbidden",
            format!(
                "The AWS credentials belong to account {account}, which `forbidden_account_ids` lists. Use credentials of \
                 another account (`profile`, `assume_role`, AWS_PROFILE)."
            ),
        );
    }
}
