//! The traits a provider implements: [`Provider`], [`Resource`] and [`DataSource`].
//!
//! The protocol layer (service.rs) does the decoding, the planning contract (plan.rs) and the
//! encoding; implementations only see [`Value`]s of their own schema and a [`Context`].

use std::sync::Arc;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use super::diagnostics::Diagnostics;
use super::schema::Schema;
use super::value::Value;

/// What every resource and data source call receives: the data the provider built in
/// `configure`, and a token cancelled when Terraform sends StopProvider.
pub struct Context<D> {
    /// The configured provider's data (API clients, defaults).
    pub data: Arc<D>,
    /// Cancelled by StopProvider; long operations should give up when it fires.
    pub stop: CancellationToken,
}

/// A provider: its configuration schema, configuration, resources and data sources.
#[async_trait]
pub trait Provider: Send + Sync + 'static {
    /// Configured state shared by all resources (clients, credentials).
    type Data: Send + Sync + 'static;

    /// The schema of the `provider` block.
    fn schema(&self) -> Schema;

    /// Offline checks of the provider block (values may be unknown).
    fn validate(&self, _config: &Value, _diags: &mut Diagnostics) {}

    /// Builds the provider data from a wholly known `provider` block.
    async fn configure(&self, config: &Value, diags: &mut Diagnostics) -> Option<Self::Data>;

    /// The managed resource types.
    fn resources(&self) -> Vec<Arc<dyn Resource<Self::Data>>>;

    /// The data source types.
    fn data_sources(&self) -> Vec<Arc<dyn DataSource<Self::Data>>>;
}

/// The values a resource sees while planning.
pub struct PlanRequest<'a> {
    /// The state before the change; null on create.
    pub prior: &'a Value,
    /// The configuration (may hold unknowns).
    pub config: &'a Value,
}

/// A managed resource type.
///
/// The framework already applies defaults, marks computed attributes unknown when the
/// resource changes, keeps them when nothing changes, and reports `requires_replace`
/// attributes; `modify_plan` only fills in what the resource can know at plan time.
#[async_trait]
pub trait Resource<D>: Send + Sync + 'static {
    /// The full type name, e.g. `locality_zone_replica_map`.
    fn type_name(&self) -> &'static str;

    /// The resource schema.
    fn schema(&self) -> Schema;

    /// Offline checks of one configuration (values may be unknown: skip them).
    fn validate(&self, _config: &Value, _diags: &mut Diagnostics) {}

    /// Adjusts the plan the framework made (e.g. computes derived values that are known
    /// from configuration). Never called for destroy.
    async fn modify_plan(
        &self,
        _ctx: &Context<D>,
        _req: PlanRequest<'_>,
        _planned: &mut Value,
        _diags: &mut Diagnostics,
    ) {
    }

    /// Reads the remote object. `None` means it is gone (Terraform drops it from state).
    async fn read(&self, ctx: &Context<D>, state: &Value, diags: &mut Diagnostics) -> Option<Value>;

    /// Creates the object and returns the new state. On failure return whatever was created
    /// (so state tracks it), or `None` when nothing was.
    async fn create(&self, ctx: &Context<D>, planned: &Value, diags: &mut Diagnostics) -> Option<Value>;

    /// Updates the object in place and returns the new state.
    async fn update(&self, ctx: &Context<D>, prior: &Value, planned: &Value, diags: &mut Diagnostics) -> Option<Value>;

    /// Deletes the object. Deleting an object that is already gone is success.
    async fn delete(&self, ctx: &Context<D>, prior: &Value, diags: &mut Diagnostics);

    /// Turns an import ID into a (partial) state; `read` fills in the rest.
    async fn import(&self, _ctx: &Context<D>, _id: &str, diags: &mut Diagnostics) -> Option<Value> {
        diags.error(
            "Import not supported",
            format!("{} cannot be imported.", self.type_name()),
        );
        None
    }

    /// Upgrades a state stored by an older schema version (`from` < current version) to the
    /// current schema. The default refuses, which is right until the first version bump.
    fn upgrade(&self, from: i64, state: Value, diags: &mut Diagnostics) -> Option<Value> {
        let _ = state;
        diags.error(
            "Unsupported state version",
            format!("{} cannot upgrade state from schema version {from}.", self.type_name()),
        );
        None
    }
}

/// A data source type.
#[async_trait]
pub trait DataSource<D>: Send + Sync + 'static {
    /// The full type name.
    fn type_name(&self) -> &'static str;
    /// The data source schema.
    fn schema(&self) -> Schema;
    /// Offline checks of one configuration (values may be unknown).
    fn validate(&self, _config: &Value, _diags: &mut Diagnostics) {}
    /// Reads: returns the config with every computed attribute filled in.
    async fn read(&self, ctx: &Context<D>, config: &Value, diags: &mut Diagnostics) -> Option<Value>;
}
