//! The traits a provider implements: [`Provider`], and [`Resource`] and [`DataSource`] over
//! typed models ([`Model`]).
//!
//! The protocol layer (service.rs) does the decoding, the planning contract (plan.rs) and the
//! encoding; the adapters here convert between the dynamic [`Value`] and each type's model in
//! one place, so implementations only see their own model and a [`Context`].
//! [`DynamicResource`] and [`DynamicDataSource`] are what the service dispatches to; they stay
//! public for schema-less test providers.

use std::sync::Arc;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use super::diagnostics::{Diagnostic, Diagnostics};
use super::identity::IdentitySchema;
use super::model::{Model, ModelValue};
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

    /// Builds the provider data from a wholly known `provider` block. `terraform_version` is
    /// the version Terraform reported (e.g. `1.15.5`; empty when it sent none).
    async fn configure(&self, config: &Value, terraform_version: &str, diags: &mut Diagnostics) -> Option<Self::Data>;

    /// The managed resource types (see [`resource`] for typed ones).
    fn resources(&self) -> Vec<Arc<dyn DynamicResource<Self::Data>>>;

    /// The data source types (see [`data_source`] for typed ones).
    fn data_sources(&self) -> Vec<Arc<dyn DynamicDataSource<Self::Data>>>;

    /// The list resources for `terraform query` (see [`super::list_resource()`]); none by default.
    fn list_resources(&self) -> Vec<Arc<dyn super::list::DynamicListResource<Self::Data>>> {
        Vec::new()
    }

    /// The actions (see [`super::action()`]); none by default.
    fn actions(&self) -> Vec<Arc<dyn super::action::DynamicAction<Self::Data>>> {
        Vec::new()
    }

    /// The provider-defined functions; none by default.
    fn functions(&self) -> Vec<Arc<dyn super::function::Function>> {
        Vec::new()
    }

    /// The provider-level default named `key` (see `Attribute::provider_default`), e.g. a
    /// default project; `None` when the provider has none.
    fn attribute_default(_data: &Self::Data, _key: &str) -> Option<Value> {
        None
    }
}

/// The values a resource sees while planning.
pub struct PlanRequest<'a> {
    /// The state before the change; null on create.
    pub prior: &'a Value,
    /// The configuration (may hold unknowns).
    pub config: &'a Value,
}

/// A managed resource type over dynamic values (what the service dispatches to).
///
/// The framework already applies defaults, marks computed attributes unknown when the
/// resource changes, keeps them when nothing changes, and reports `requires_replace`
/// attributes; `modify_plan` only fills in what the resource can know at plan time.
#[async_trait]
pub trait DynamicResource<D>: Send + Sync + 'static {
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

    /// Converts another resource type's state (a `moved` block across types, Terraform 1.8+)
    /// into this type's. The default refuses.
    fn move_state(&self, source: &MoveSource<'_>, diags: &mut Diagnostics) -> Option<Value> {
        diags.error(
            "Unsupported `moved` across resource types",
            refuse_move(self.type_name(), source),
        );
        None
    }

    /// The identity schema (Terraform 1.12+); `None`: the type has no identity.
    fn identity_schema(&self) -> Option<IdentitySchema> {
        None
    }

    /// The identity of a state (an object of the identity schema's type); `None` when it
    /// cannot be known yet (unknown attributes while planning).
    fn identity(&self, _state: &Value) -> Option<Value> {
        None
    }

    /// The import ID that an identity stands for, so that `import { identity = {...} }`
    /// imports exactly like `terraform import` with that ID.
    ///
    /// # Errors
    /// A diagnostic naming the identity attribute that is missing or wrong.
    fn import_id(&self, _ctx: &Context<D>, _identity: &Value) -> Result<String, Diagnostic> {
        Err(Diagnostic::error(
            "Import by identity not supported",
            format!(
                "{} cannot be imported by identity; use its import ID.",
                self.type_name()
            ),
        ))
    }
}

/// The state a `moved` block brings from another resource type (MoveResourceState).
#[derive(Debug, Clone, Copy)]
pub struct MoveSource<'a> {
    /// The source provider's address, e.g. `registry.terraform.io/cloudflare/cloudflare`.
    pub provider: &'a str,
    /// The source resource type, e.g. `cloudflare_origin_cloud_region`.
    pub type_name: &'a str,
    /// The schema version the source state was written with.
    pub schema_version: i64,
    /// The source state, as JSON (the source provider's schema, which this provider may not know).
    pub state_json: &'a [u8],
}

fn refuse_move(target: &str, source: &MoveSource<'_>) -> String {
    format!(
        "{target} cannot take the state of {} ({}); use `terraform state rm` and an `import` block instead.",
        source.type_name, source.provider
    )
}

/// A data source type over dynamic values (what the service dispatches to).
#[async_trait]
pub trait DynamicDataSource<D>: Send + Sync + 'static {
    /// The full type name.
    fn type_name(&self) -> &'static str;
    /// The data source schema.
    fn schema(&self) -> Schema;
    /// Offline checks of one configuration (values may be unknown).
    fn validate(&self, _config: &Value, _diags: &mut Diagnostics) {}
    /// Reads: returns the config with every computed attribute filled in.
    async fn read(&self, ctx: &Context<D>, config: &Value, diags: &mut Diagnostics) -> Option<Value>;
}

/// A managed resource type, working on its model.
///
/// The framework already applies defaults, marks computed attributes unknown when the
/// resource changes, keeps them when nothing changes (or when the attributes they depend on
/// did not change), applies provider-level defaults and semantic equality, and reports
/// `requires_replace` attributes (all declared in the schema); `modify_plan` only fills in
/// what the resource can know at plan time.
#[async_trait]
pub trait Resource<D>: Send + Sync + 'static {
    /// The model of the resource's values.
    type Model: Model;

    /// The full type name, e.g. `locality_zone_replica_map`.
    fn type_name(&self) -> &'static str;

    /// The resource schema.
    fn schema(&self) -> Schema;

    /// Offline checks of one configuration (values may be unknown: skip them).
    fn validate(&self, _config: &Self::Model, _diags: &mut Diagnostics) {}

    /// Adjusts the plan the framework made. `prior` is `None` on create. Never called for
    /// destroy.
    async fn modify_plan(
        &self,
        _ctx: &Context<D>,
        _prior: Option<&Self::Model>,
        _config: &Self::Model,
        _planned: &mut Self::Model,
        _diags: &mut Diagnostics,
    ) {
    }

    /// Reads the remote object. `None` means it is gone (Terraform drops it from state); on
    /// errors the framework keeps the state Terraform had.
    async fn read(&self, ctx: &Context<D>, state: Self::Model, diags: &mut Diagnostics) -> Option<Self::Model>;

    /// Creates the object and returns the new state. On failure return whatever was created
    /// (so state tracks it), or `None` when nothing was.
    async fn create(&self, ctx: &Context<D>, planned: Self::Model, diags: &mut Diagnostics) -> Option<Self::Model>;

    /// Updates the object in place and returns the new state.
    async fn update(
        &self,
        ctx: &Context<D>,
        prior: Self::Model,
        planned: Self::Model,
        diags: &mut Diagnostics,
    ) -> Option<Self::Model>;

    /// Deletes the object. Deleting an object that is already gone is success.
    async fn delete(&self, ctx: &Context<D>, prior: Self::Model, diags: &mut Diagnostics);

    /// Turns an import ID into a (partial) state; `read` fills in the rest.
    async fn import(&self, _ctx: &Context<D>, _id: &str, diags: &mut Diagnostics) -> Option<Self::Model> {
        diags.error(
            "Import not supported",
            format!("{} cannot be imported.", self.type_name()),
        );
        None
    }

    /// Upgrades a state stored by an older schema version (an older shape, so still a dynamic
    /// value). The default refuses, which is right until the first version bump.
    fn upgrade(&self, from: i64, state: Value, diags: &mut Diagnostics) -> Option<Value> {
        let _ = state;
        diags.error(
            "Unsupported state version",
            format!("{} cannot upgrade state from schema version {from}.", self.type_name()),
        );
        None
    }

    /// Converts another resource type's state (a `moved` block across types, Terraform 1.8+)
    /// into this type's model. The default refuses.
    fn move_state(&self, source: &MoveSource<'_>, diags: &mut Diagnostics) -> Option<Self::Model> {
        diags.error(
            "Unsupported `moved` across resource types",
            refuse_move(self.type_name(), source),
        );
        None
    }

    /// The identity schema (Terraform 1.12+); `None`: the type has no identity.
    fn identity_schema(&self) -> Option<IdentitySchema> {
        None
    }

    /// The identity of a state (build it with [`IdentitySchema::value`]); `None` when it
    /// cannot be known yet (unknown attributes while planning).
    fn identity(&self, _state: &Self::Model) -> Option<Value> {
        None
    }

    /// The import ID an identity stands for: `import { identity = {...} }` then imports
    /// exactly like `terraform import` with that ID.
    ///
    /// # Errors
    /// A diagnostic naming the identity attribute that is missing or wrong.
    fn import_id(&self, _ctx: &Context<D>, _identity: &Value) -> Result<String, Diagnostic> {
        Err(Diagnostic::error(
            "Import by identity not supported",
            format!(
                "{} cannot be imported by identity; use its import ID.",
                self.type_name()
            ),
        ))
    }
}

/// A data source type, working on its model.
#[async_trait]
pub trait DataSource<D>: Send + Sync + 'static {
    /// The model of the data source's values.
    type Model: Model;
    /// The full type name.
    fn type_name(&self) -> &'static str;
    /// The data source schema.
    fn schema(&self) -> Schema;
    /// Offline checks of one configuration (values may be unknown).
    fn validate(&self, _config: &Self::Model, _diags: &mut Diagnostics) {}
    /// Reads: returns the config with every computed attribute filled in.
    async fn read(&self, ctx: &Context<D>, config: Self::Model, diags: &mut Diagnostics) -> Option<Self::Model>;
}

/// A typed resource as the service sees it.
pub fn resource<D: Send + Sync + 'static, R: Resource<D>>(resource: R) -> Arc<dyn DynamicResource<D>> {
    Arc::new(Typed(resource))
}

/// A typed data source as the service sees it.
pub fn data_source<D: Send + Sync + 'static, S: DataSource<D>>(data_source: S) -> Arc<dyn DynamicDataSource<D>> {
    Arc::new(Typed(data_source))
}

/// The adapter from a typed resource, data source, list resource or action to its dynamic
/// form: the one place where values become models and back.
pub(crate) struct Typed<T>(pub(crate) T);

/// The model of a value that may be null (prior state on create); mismatches are recorded.
pub(crate) fn model_of<M: Model>(value: &Value, diags: &mut Diagnostics) -> Option<Option<M>> {
    diags.check(M::from_root(value))
}

/// The model of a value that is never null here.
pub(crate) fn present<M: Model>(value: &Value, diags: &mut Diagnostics) -> Option<M> {
    match model_of(value, diags)? {
        Some(m) => Some(m),
        None => {
            diags.error(
                "Provider bug",
                "A value that is never null here was null. Please report this.",
            );
            None
        }
    }
}

#[async_trait]
impl<D: Send + Sync + 'static, R: Resource<D>> DynamicResource<D> for Typed<R> {
    fn type_name(&self) -> &'static str {
        self.0.type_name()
    }

    fn schema(&self) -> Schema {
        self.0.schema()
    }

    fn validate(&self, config: &Value, diags: &mut Diagnostics) {
        if let Some(config) = present::<R::Model>(config, diags) {
            self.0.validate(&config, diags);
        }
    }

    async fn modify_plan(&self, ctx: &Context<D>, req: PlanRequest<'_>, planned: &mut Value, diags: &mut Diagnostics) {
        let (Some(prior), Some(config), Some(mut model)) = (
            model_of::<R::Model>(req.prior, diags),
            present::<R::Model>(req.config, diags),
            present::<R::Model>(planned, diags),
        ) else {
            return;
        };
        self.0
            .modify_plan(ctx, prior.as_ref(), &config, &mut model, diags)
            .await;
        *planned = model.to_value();
    }

    async fn read(&self, ctx: &Context<D>, state: &Value, diags: &mut Diagnostics) -> Option<Value> {
        let state = present::<R::Model>(state, diags)?;
        self.0.read(ctx, state, diags).await.map(|m| m.to_value())
    }

    async fn create(&self, ctx: &Context<D>, planned: &Value, diags: &mut Diagnostics) -> Option<Value> {
        let planned = present::<R::Model>(planned, diags)?;
        self.0.create(ctx, planned, diags).await.map(|m| m.to_value())
    }

    async fn update(&self, ctx: &Context<D>, prior: &Value, planned: &Value, diags: &mut Diagnostics) -> Option<Value> {
        let prior = present::<R::Model>(prior, diags)?;
        let planned = present::<R::Model>(planned, diags)?;
        self.0.update(ctx, prior, planned, diags).await.map(|m| m.to_value())
    }

    async fn delete(&self, ctx: &Context<D>, prior: &Value, diags: &mut Diagnostics) {
        if let Some(prior) = present::<R::Model>(prior, diags) {
            self.0.delete(ctx, prior, diags).await;
        }
    }

    async fn import(&self, ctx: &Context<D>, id: &str, diags: &mut Diagnostics) -> Option<Value> {
        self.0.import(ctx, id, diags).await.map(|m| m.to_value())
    }

    fn upgrade(&self, from: i64, state: Value, diags: &mut Diagnostics) -> Option<Value> {
        self.0.upgrade(from, state, diags)
    }

    fn move_state(&self, source: &MoveSource<'_>, diags: &mut Diagnostics) -> Option<Value> {
        self.0.move_state(source, diags).map(|m| m.to_value())
    }

    fn identity_schema(&self) -> Option<IdentitySchema> {
        self.0.identity_schema()
    }

    fn identity(&self, state: &Value) -> Option<Value> {
        let model = R::Model::from_root(state).ok()??;
        self.0.identity(&model)
    }

    fn import_id(&self, ctx: &Context<D>, identity: &Value) -> Result<String, Diagnostic> {
        self.0.import_id(ctx, identity)
    }
}

#[async_trait]
impl<D: Send + Sync + 'static, S: DataSource<D>> DynamicDataSource<D> for Typed<S> {
    fn type_name(&self) -> &'static str {
        self.0.type_name()
    }

    fn schema(&self) -> Schema {
        self.0.schema()
    }

    fn validate(&self, config: &Value, diags: &mut Diagnostics) {
        if let Some(config) = present::<S::Model>(config, diags) {
            self.0.validate(&config, diags);
        }
    }

    async fn read(&self, ctx: &Context<D>, config: &Value, diags: &mut Diagnostics) -> Option<Value> {
        let config = present::<S::Model>(config, diags)?;
        self.0.read(ctx, config, diags).await.map(|m| m.to_value())
    }
}
