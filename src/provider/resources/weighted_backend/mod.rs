//! `locality_weighted_backend`: the weights of a URL map's weighted backend services
//! (DESIGN.md §2.2).
//!
//! - `schema.rs`: the schema (its descriptions are the docs), with the provider-level default
//!   project and the key equality of backend-service references declared there;
//! - `model.rs`: the model, the only place attributes are named;
//! - this file: the glue between model and client. The write itself (fingerprint, HTTP 412
//!   retry, operation wait) is `crate::provider::google::Compute::set_weights`.

mod list;
mod model;
mod schema;

use std::collections::BTreeMap;

use async_trait::async_trait;

pub use list::{list_schema, WeightedBackendListConfig};
pub use model::{weight, WeightedBackendModel, MAX_WEIGHT};
pub use schema::{identity_schema, schema};

use crate::naming::{is_google_name, is_project_id};
pub use crate::provider::google::CONFLICT_RETRIES;
use crate::provider::google::{backend_name, ComputeError};
use crate::provider::resources::region_hint::required_identity;
use crate::provider::ProviderData;
use crate::tfplugin::{
    identity_string, AttributePath, Context, Diagnostic, Diagnostics, Field, IdentitySchema, Resource, Schema, Value,
};

/// The resource type.
pub struct WeightedBackend;

/// The Terraform type name.
pub const TYPE_NAME: &str = "locality_weighted_backend";

#[async_trait]
impl Resource<ProviderData> for WeightedBackend {
    type Model = WeightedBackendModel;

    fn type_name(&self) -> &'static str {
        TYPE_NAME
    }

    fn schema(&self) -> Schema {
        schema()
    }

    fn identity_schema(&self) -> Option<IdentitySchema> {
        Some(identity_schema())
    }

    fn identity(&self, state: &WeightedBackendModel) -> Option<Value> {
        Some(identity_schema().value([
            ("project", Value::String(state.project.get()?.clone())),
            ("url_map", Value::String(state.url_map.get()?.clone())),
        ]))
    }

    fn import_id(&self, ctx: &Context<ProviderData>, identity: &Value) -> Result<String, Diagnostic> {
        let url_map = required_identity(identity, "url_map")?;
        let project = match identity_string(identity, "project") {
            Some(project) => project.to_string(),
            None => ctx.data.config.google.project.clone().ok_or_else(|| {
                Diagnostic::error(
                    "No project",
                    "The identity has no `project`, and the provider's `google` block sets none: give one of them.",
                )
            })?,
        };
        Ok(format!("{project}/{url_map}"))
    }

    fn validate(&self, config: &WeightedBackendModel, diags: &mut Diagnostics) {
        if let Some(name) = config.url_map.get() {
            if !is_google_name(name) {
                diags.attribute_error(
                    AttributePath::root("url_map"),
                    "Invalid URL map name",
                    format!("{name:?} is not a URL map name: 1-63 lowercase letters, digits and hyphens, starting with a letter and not ending with a hyphen."),
                );
            }
        }
        if let Some(project) = config.project.get() {
            if !is_project_id(project) {
                diags.attribute_error(
                    AttributePath::root("project"),
                    "Invalid project ID",
                    format!("{project:?} is not a Google Cloud project ID: 6-30 lowercase letters, digits and hyphens, starting with a letter."),
                );
            }
        }
        let Some(weights) = config.weights.get() else {
            return;
        };
        if weights.is_empty() {
            diags.attribute_error(
                AttributePath::root("weights"),
                "No weights",
                "`weights` needs at least one backend service with a non-zero weight.",
            );
            return;
        }
        let mut all_known = true;
        let mut any_nonzero = false;
        let mut by_name: BTreeMap<&str, &str> = BTreeMap::new();
        for (key, value) in weights {
            let at = AttributePath::root("weights").key(key);
            let name = backend_name(key);
            if !is_google_name(name) {
                diags.attribute_error(
                    at.clone(),
                    "Invalid backend service",
                    format!("{key:?} does not name a backend service; use its name (e.g. \"web-bs\"), `projects/P/global/backendServices/NAME` or its self-link."),
                );
            } else if let Some(other) = by_name.insert(name, key) {
                diags.attribute_error(
                    at.clone(),
                    "Duplicate backend service",
                    format!("{key:?} and {other:?} both name backend service {name:?}."),
                );
            }
            match value {
                Field::Unknown => all_known = false,
                Field::Known(n) => match weight(n) {
                    Some(w) => any_nonzero |= w > 0,
                    None => diags.attribute_error(
                        at,
                        "Invalid weight",
                        format!("{n} is not a weight: use a whole number from 0 to {MAX_WEIGHT}."),
                    ),
                },
                Field::Null => diags.attribute_error(
                    at,
                    "Invalid weight",
                    format!("Use a whole number from 0 to {MAX_WEIGHT}."),
                ),
            }
        }
        if all_known && !any_nonzero && !diags.has_errors() {
            diags.attribute_error(
                AttributePath::root("weights"),
                "Every weight is zero",
                "At least one weight must be non-zero: with all weights at 0 the URL map would send traffic nowhere.",
            );
        }
    }

    async fn modify_plan(
        &self,
        ctx: &Context<ProviderData>,
        _prior: Option<&WeightedBackendModel>,
        _config: &WeightedBackendModel,
        planned: &mut WeightedBackendModel,
        diags: &mut Diagnostics,
    ) {
        if diags.check(ctx.data.compute()).is_none() {
            return;
        }
        if let Some((project, url_map)) = planned.identity() {
            planned.id = format!("{project}/{url_map}").into();
        }
    }

    async fn read(
        &self,
        ctx: &Context<ProviderData>,
        mut state: WeightedBackendModel,
        diags: &mut Diagnostics,
    ) -> Option<WeightedBackendModel> {
        let compute = diags.check(ctx.data.compute())?;
        let (project, url_map) = state.identity()?;
        let (project, url_map) = (project.to_string(), url_map.to_string());
        let live = match compute.get_url_map(&project, &url_map).await {
            Ok(map) => map.weights(),
            Err(ComputeError::NotFound(_)) => {
                diags.warning(
                    "URL map not found",
                    format!("URL map {project}/{url_map} no longer exists; {TYPE_NAME} will be removed from state."),
                );
                return None;
            }
            Err(e) => {
                diags.add(Diagnostic::from(e).context(format!("Reading URL map {project}/{url_map}")));
                return None;
            }
        };
        // Only the backend services this resource manages; the framework keeps the key spelling
        // the state uses (name, path or self-link).
        let managed: BTreeMap<String, u32> = match state.weights.get() {
            Some(prior) => live
                .into_iter()
                .filter(|(name, _)| prior.keys().any(|k| backend_name(k) == name))
                .collect(),
            None => live,
        };
        state.set_weights(managed);
        state.id = format!("{project}/{url_map}").into();
        Some(state)
    }

    async fn create(
        &self,
        ctx: &Context<ProviderData>,
        planned: WeightedBackendModel,
        diags: &mut Diagnostics,
    ) -> Option<WeightedBackendModel> {
        write(ctx, planned, diags).await
    }

    async fn update(
        &self,
        ctx: &Context<ProviderData>,
        _prior: WeightedBackendModel,
        planned: WeightedBackendModel,
        diags: &mut Diagnostics,
    ) -> Option<WeightedBackendModel> {
        write(ctx, planned, diags).await
    }

    async fn delete(&self, _ctx: &Context<ProviderData>, prior: WeightedBackendModel, diags: &mut Diagnostics) {
        let id = prior.id.get().cloned().unwrap_or_default();
        diags.warning(
            "URL map left as it is",
            format!("Terraform no longer manages the weights of URL map {id}; the URL map and its current weights stay unchanged in Google Cloud."),
        );
    }

    async fn import(
        &self,
        _ctx: &Context<ProviderData>,
        id: &str,
        diags: &mut Diagnostics,
    ) -> Option<WeightedBackendModel> {
        let Some((project, url_map)) = id
            .split_once('/')
            .filter(|(p, u)| is_project_id(p) && is_google_name(u))
        else {
            diags.error(
                "Invalid import ID",
                format!("Expected `<project>/<url_map>`, e.g. `winticket-prod/web-urlmap`; got {id:?}."),
            );
            return None;
        };
        Some(WeightedBackendModel {
            id: id.into(),
            project: project.into(),
            url_map: url_map.into(),
            weights: Field::Null,
        })
    }
}

/// Applies the planned weights and returns the new state (the plan itself).
async fn write(
    ctx: &Context<ProviderData>,
    planned: WeightedBackendModel,
    diags: &mut Diagnostics,
) -> Option<WeightedBackendModel> {
    let compute = diags.check(ctx.data.compute())?;
    let project = diags.check(planned.project.require("project"))?;
    let url_map = diags.check(planned.url_map.require("url_map"))?;
    let Some(desired) = planned.known_weights() else {
        diags.attribute_error(
            AttributePath::root("weights"),
            "Provider bug",
            format!("The planned weights are not all known whole numbers from 0 to {MAX_WEIGHT} at apply time. Please report this."),
        );
        return None;
    };
    diags.check(compute.set_weights(project, url_map, &desired).await)?;
    Some(planned)
}
