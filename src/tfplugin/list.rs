//! List resources (protocol 6.10, Terraform 1.14+): what `terraform query` finds for a
//! `list "TYPE" "NAME" { config { ... } }` block of a `*.tfquery.hcl` file. A list resource
//! has the type name of the managed resource it finds instances of, its own small config
//! schema, and answers with one result per remote object: a display name, the identity, and
//! (with `include_resource`) the full object, which `-generate-config-out` turns into
//! configuration plus an `import` block.

use std::sync::Arc;

use async_trait::async_trait;

use super::diagnostics::Diagnostics;
use super::model::{Model, ModelValue};
use super::schema::Schema;
use super::traits::{present, Context, Resource, Typed};
use super::value::Value;

/// One instance a list finds.
#[derive(Debug, Clone)]
pub struct Listed<M> {
    /// What a person looks for, e.g. `198.51.100.10 → aws:us-east-1`.
    pub display_name: String,
    /// The instance's state, as `read` would return it.
    pub state: M,
}

/// A managed resource type that can list its remote objects.
#[async_trait]
pub trait ListResource<D>: Resource<D> {
    /// The model of the `config` block of a `list` block.
    type ListConfig: Model;

    /// The schema of the `config` block.
    fn list_schema(&self) -> Schema;

    /// Offline checks of a `config` block (values may be unknown: skip them).
    fn validate_list(&self, _config: &Self::ListConfig, _diags: &mut Diagnostics) {}

    /// The instances, at most `limit` of them (Terraform stops reading there anyway).
    async fn list(
        &self,
        ctx: &Context<D>,
        config: Self::ListConfig,
        limit: usize,
        diags: &mut Diagnostics,
    ) -> Vec<Listed<Self::Model>>;
}

/// One result as the service streams it.
#[derive(Debug, Clone)]
pub struct ListResult {
    /// The display name.
    pub display_name: String,
    /// The identity (an object of the identity schema's type).
    pub identity: Value,
    /// The full object (in the managed resource's schema).
    pub object: Value,
}

/// A list resource over dynamic values (what the service dispatches to).
#[async_trait]
pub trait DynamicListResource<D>: Send + Sync + 'static {
    /// The managed resource type name.
    fn type_name(&self) -> &'static str;
    /// The schema of the `config` block.
    fn schema(&self) -> Schema;
    /// Offline checks of a `config` block.
    fn validate(&self, _config: &Value, _diags: &mut Diagnostics) {}
    /// The results.
    async fn list(&self, ctx: &Context<D>, config: &Value, limit: usize, diags: &mut Diagnostics) -> Vec<ListResult>;
}

/// A typed list resource as the service sees it.
pub fn list_resource<D: Send + Sync + 'static, R: ListResource<D>>(resource: R) -> Arc<dyn DynamicListResource<D>> {
    Arc::new(Typed(resource))
}

#[async_trait]
impl<D: Send + Sync + 'static, R: ListResource<D>> DynamicListResource<D> for Typed<R> {
    fn type_name(&self) -> &'static str {
        Resource::type_name(&self.0)
    }

    fn schema(&self) -> Schema {
        self.0.list_schema()
    }

    fn validate(&self, config: &Value, diags: &mut Diagnostics) {
        if let Some(config) = present::<R::ListConfig>(config, diags) {
            self.0.validate_list(&config, diags);
        }
    }

    async fn list(&self, ctx: &Context<D>, config: &Value, limit: usize, diags: &mut Diagnostics) -> Vec<ListResult> {
        let Some(config) = present::<R::ListConfig>(config, diags) else {
            return Vec::new();
        };
        self.0
            .list(ctx, config, limit, diags)
            .await
            .into_iter()
            .take(limit)
            .filter_map(|listed| {
                Some(ListResult {
                    identity: self.0.identity(&listed.state)?,
                    display_name: listed.display_name,
                    object: listed.state.to_value(),
                })
            })
            .collect()
    }
}
