//! `locality_weighted_backend`: the weights of a URL map's weighted backend services
//! (DESIGN.md §2.2). The Compute client lives in `crate::provider::google`.

mod schema;

use std::collections::BTreeMap;

use async_trait::async_trait;

pub use schema::schema;

use crate::naming::{is_google_name, is_project_id};
use crate::provider::google::{backend_name, Compute, ComputeError};
use crate::provider::ProviderData;
use crate::tfplugin::{AttributePath, Context, Diagnostics, Number, PlanRequest, Resource, Schema, Value};

/// The resource type.
pub struct WeightedBackend;

/// The Terraform type name.
pub const TYPE_NAME: &str = "locality_weighted_backend";

/// Largest weight the API takes.
pub const MAX_WEIGHT: u64 = 1000;

/// How often a write is retried after HTTP 412 (someone changed the URL map in between).
pub const CONFLICT_RETRIES: u32 = 5;

#[async_trait]
impl Resource<ProviderData> for WeightedBackend {
    fn type_name(&self) -> &'static str {
        TYPE_NAME
    }

    fn schema(&self) -> Schema {
        schema()
    }

    fn validate(&self, config: &Value, diags: &mut Diagnostics) {
        if let Some(name) = config.get("url_map").as_str() {
            if !is_google_name(name) {
                diags.attribute_error(
                    AttributePath::root("url_map"),
                    "Invalid URL map name",
                    format!("{name:?} is not a URL map name: 1-63 lowercase letters, digits and hyphens, starting with a letter and not ending with a hyphen."),
                );
            }
        }
        if let Some(project) = config.get("project").as_str() {
            if !is_project_id(project) {
                diags.attribute_error(
                    AttributePath::root("project"),
                    "Invalid project ID",
                    format!("{project:?} is not a Google Cloud project ID: 6-30 lowercase letters, digits and hyphens, starting with a letter."),
                );
            }
        }
        let Some(weights) = config.get("weights").entries() else {
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
                Value::Unknown => all_known = false,
                Value::Number(n) => match weight(n) {
                    Some(w) => any_nonzero |= w > 0,
                    None => diags.attribute_error(
                        at,
                        "Invalid weight",
                        format!("{n} is not a weight: use a whole number from 0 to {MAX_WEIGHT}."),
                    ),
                },
                _ => diags.attribute_error(
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
        req: PlanRequest<'_>,
        planned: &mut Value,
        diags: &mut Diagnostics,
    ) {
        if let Err(problem) = ctx.data.compute() {
            diags.error("Google Cloud is not configured", problem);
            return;
        }
        if req.config.get("project").is_null() {
            match (&ctx.data.config.google.project, req.prior.get("project")) {
                (_, Value::String(prior)) => planned.set("project", prior.as_str().into()),
                (Some(project), _) => planned.set("project", project.as_str().into()),
                (None, _) => {
                    diags.attribute_error(
                        AttributePath::root("project"),
                        "No project",
                        "Set `project` here, or `project` in the provider's `google` block.",
                    );
                    return;
                }
            }
        }
        if let (Some(project), Some(url_map)) = (planned.get("project").as_str(), planned.get("url_map").as_str()) {
            let id = format!("{project}/{url_map}");
            planned.set("id", id.into());
        }
    }

    async fn read(&self, ctx: &Context<ProviderData>, state: &Value, diags: &mut Diagnostics) -> Option<Value> {
        let compute = match ctx.data.compute() {
            Ok(c) => c,
            Err(problem) => {
                diags.error("Google Cloud is not configured", problem);
                return Some(state.clone());
            }
        };
        let (project, url_map) = (state.get("project").as_str()?, state.get("url_map").as_str()?);
        let map = match compute.get_url_map(project, url_map).await {
            Ok(map) => map,
            Err(ComputeError::NotFound(_)) => {
                diags.warning(
                    "URL map not found",
                    format!("URL map {project}/{url_map} no longer exists; locality_weighted_backend will be removed from state."),
                );
                return None;
            }
            Err(e) => {
                diags.error(
                    "Cannot read the URL map",
                    format!("Reading URL map {project}/{url_map}: {e}"),
                );
                return Some(state.clone());
            }
        };
        let live: BTreeMap<String, u32> = map
            .weighted()
            .iter()
            .map(|w| (w.name().to_string(), w.weight))
            .collect();
        // Keep the key spelling the configuration uses (name, path or self-link): no perpetual diff.
        let weights: BTreeMap<String, Value> = match state.get("weights").entries() {
            Some(prior) => prior
                .keys()
                .filter_map(|key| live.get(backend_name(key)).map(|w| (key.clone(), weight_value(*w))))
                .collect(),
            None => live.iter().map(|(name, w)| (name.clone(), weight_value(*w))).collect(),
        };
        let mut new = state.clone();
        new.set("weights", Value::Map(weights));
        new.set("id", format!("{project}/{url_map}").into());
        Some(new)
    }

    async fn create(&self, ctx: &Context<ProviderData>, planned: &Value, diags: &mut Diagnostics) -> Option<Value> {
        write(ctx, planned, diags).await
    }

    async fn update(
        &self,
        ctx: &Context<ProviderData>,
        _prior: &Value,
        planned: &Value,
        diags: &mut Diagnostics,
    ) -> Option<Value> {
        write(ctx, planned, diags).await
    }

    async fn delete(&self, _ctx: &Context<ProviderData>, prior: &Value, diags: &mut Diagnostics) {
        let id = prior.get("id").as_str().unwrap_or_default();
        diags.warning(
            "URL map left as it is",
            format!("Terraform no longer manages the weights of URL map {id}; the URL map and its current weights stay unchanged in Google Cloud."),
        );
    }

    async fn import(&self, _ctx: &Context<ProviderData>, id: &str, diags: &mut Diagnostics) -> Option<Value> {
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
        Some(Value::object([
            ("id", Value::from(id)),
            ("project", Value::from(project)),
            ("url_map", Value::from(url_map)),
        ]))
    }
}

fn weight(n: &Number) -> Option<u32> {
    n.as_u64().filter(|w| *w <= MAX_WEIGHT).map(|w| w as u32)
}

fn weight_value(w: u32) -> Value {
    Value::Number(Number::from(u64::from(w)))
}

/// Applies the planned weights and returns the new state (the planned value itself).
async fn write(ctx: &Context<ProviderData>, planned: &Value, diags: &mut Diagnostics) -> Option<Value> {
    let compute = match ctx.data.compute() {
        Ok(c) => c,
        Err(problem) => {
            diags.error("Google Cloud is not configured", problem);
            return None;
        }
    };
    let (Some(project), Some(url_map), Some(weights)) = (
        planned.get("project").as_str(),
        planned.get("url_map").as_str(),
        planned.get("weights").entries(),
    ) else {
        diags.error("Provider bug", "The planned weights are not known at apply time.");
        return None;
    };
    let desired: BTreeMap<String, u32> = weights
        .iter()
        .filter_map(|(k, v)| Some((backend_name(k).to_string(), weight(v.as_number()?)?)))
        .collect();
    match set_weights(&compute, project, url_map, &desired).await {
        Ok(()) => Some(planned.clone()),
        Err(WriteError::UnknownBackends { unknown, real }) => {
            for key in weights.keys().filter(|k| unknown.iter().any(|u| u == backend_name(k))) {
                diags.attribute_error(
                    AttributePath::root("weights").key(key),
                    "Not a weighted backend service of this URL map",
                    format!(
                        "{key:?} is not in the weightedBackendServices of URL map {project}/{url_map}. Its weighted backend services are: {}.",
                        real.join(", ")
                    ),
                );
            }
            None
        }
        Err(WriteError::Other(summary, detail)) => {
            diags.error(summary, detail);
            None
        }
    }
}

enum WriteError {
    UnknownBackends { unknown: Vec<String>, real: Vec<String> },
    Other(String, String),
}

/// Read → change only the weights → write with the fingerprint → wait; on HTTP 412 re-read and
/// try again, at most [`CONFLICT_RETRIES`] times.
async fn set_weights(
    compute: &Compute,
    project: &str,
    url_map: &str,
    desired: &BTreeMap<String, u32>,
) -> Result<(), WriteError> {
    let api = |e: ComputeError| {
        WriteError::Other(
            "Google Cloud API error".into(),
            format!("URL map {project}/{url_map}: {e}"),
        )
    };
    for attempt in 1..=CONFLICT_RETRIES + 1 {
        let map = compute.get_url_map(project, url_map).await.map_err(api)?;
        let entries = map.weighted_entries();
        let live = map.weighted();
        if live.is_empty() {
            return Err(WriteError::Other(
                "No weighted backend services".into(),
                format!("URL map {project}/{url_map} has no defaultRouteAction.weightedBackendServices to set weights on. Give it some first (`locality gen` writes them)."),
            ));
        }
        let real: Vec<String> = live.iter().map(|w| w.name().to_string()).collect();
        let unknown: Vec<String> = desired.keys().filter(|k| !real.contains(k)).cloned().collect();
        if !unknown.is_empty() {
            return Err(WriteError::UnknownBackends { unknown, real });
        }
        let mut changed = false;
        let mut total = 0;
        let new_entries: Vec<serde_json::Value> = entries
            .into_iter()
            .zip(&live)
            .map(|(mut entry, w)| {
                let weight = desired.get(w.name()).copied().unwrap_or(w.weight);
                total += weight;
                if weight != w.weight {
                    changed = true;
                    entry["weight"] = weight.into();
                }
                entry
            })
            .collect();
        if total == 0 {
            return Err(WriteError::Other(
                "Every weight would be zero".into(),
                format!("With these weights every weighted backend service of URL map {project}/{url_map} would be 0, sending traffic nowhere."),
            ));
        }
        if !changed {
            return Ok(());
        }
        let fingerprint = map
            .fingerprint()
            .ok_or_else(|| api(ComputeError::Decode("the URL map has no fingerprint".into())))?;
        match compute
            .patch_weighted(
                project,
                url_map,
                fingerprint,
                new_entries,
                &crate::provider::http::uuid_v4(),
            )
            .await
        {
            Ok(()) => return Ok(()),
            Err(ComputeError::Conflict) => {
                tracing::info!(
                    attempt,
                    "URL map changed between read and write (HTTP 412); reading it again"
                );
            }
            Err(e) => return Err(api(e)),
        }
    }
    Err(WriteError::Other(
        "URL map keeps changing".into(),
        format!(
            "URL map {project}/{url_map} changed between read and write {} times in a row (HTTP 412); try again.",
            CONFLICT_RETRIES + 1
        ),
    ))
}
