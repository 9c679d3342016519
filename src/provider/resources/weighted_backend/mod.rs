//! `locality_weighted_backend`: the weights of one route of a URL map — global or regional;
//! the default route, a path matcher's default route or one route rule — (its page:
//! `docs/resources/weighted_backend.md`).
//!
//! - `schema.rs`: the schema (its descriptions are the docs), with the provider-level default
//!   project and the key equality of backend-service references declared there;
//! - `model.rs`: the model, the only place attributes are named, and the address (URL map
//!   location + route) they spell;
//! - `list.rs`: the list resource for `terraform query`;
//! - this file: the glue between model and client: plan-time check of the weights after the
//!   change, drift warning on refresh, import IDs. The write itself (one writer per URL map,
//!   fingerprint, retry on a stale one, operation wait) is `crate::provider::google::Compute::set_weights`.

mod list;
mod model;
mod schema;

use std::collections::BTreeMap;

use async_trait::async_trait;

pub use list::{list_schema, WeightedBackendListConfig};
pub use model::{address, priority, route_id, weight, WeightedBackendModel, MAX_PRIORITY, MAX_WEIGHT};
pub use schema::{identity_schema, schema};

use crate::naming::{is_google_name, is_project_id};
pub use crate::provider::google::CONFLICT_RETRIES;
use crate::provider::google::{backend_name, plan_weights, ComputeError, Route, UrlMapLocation, WeightsError};
use crate::provider::resources::region_hint::required_identity;
use crate::provider::timeouts::{self, Operation};
use crate::provider::ProviderData;
use crate::tfplugin::{
    identity_number, identity_string, AttributePath, Context, Diagnostic, Diagnostics, Field, IdentitySchema, Number,
    Resource, Schema, Value,
};

/// The resource type.
pub struct WeightedBackend;

/// The Terraform type name.
pub const TYPE_NAME: &str = "locality_weighted_backend";

/// Default `timeouts`: 20 minutes, as the Google provider's URL map.
pub const TIMEOUTS: timeouts::Defaults = timeouts::Defaults::all(std::time::Duration::from_secs(20 * 60));

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
        let (location, route) = state.address()?;
        let (path_matcher, priority) = match route {
            Route::Default => (Value::Null, Value::Null),
            Route::PathMatcher(name) => (Value::String(name), Value::Null),
            Route::RouteRule { path_matcher, priority } => {
                (Value::String(path_matcher), Value::Number(Number::from(priority)))
            }
        };
        Some(identity_schema().value([
            ("project", Value::String(location.project)),
            ("region", location.region.map_or(Value::Null, Value::String)),
            ("url_map", Value::String(location.name)),
            ("path_matcher", path_matcher),
            ("route_rule_priority", priority),
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
        let location = UrlMapLocation {
            project,
            region: identity_string(identity, "region").map(str::to_string),
            name: url_map.to_string(),
        };
        let priority = match identity_number(identity, "route_rule_priority") {
            Some(n) => Some(priority(n).ok_or_else(|| {
                Diagnostic::error(
                    "Invalid identity",
                    format!("`route_rule_priority` {n} is not a route-rule priority (0 to {MAX_PRIORITY})."),
                )
            })?),
            None => None,
        };
        let route = match (identity_string(identity, "path_matcher"), priority) {
            (None, None) => Route::Default,
            (Some(name), None) => Route::PathMatcher(name.to_string()),
            (Some(name), Some(priority)) => Route::RouteRule {
                path_matcher: name.to_string(),
                priority,
            },
            (None, Some(_)) => {
                return Err(Diagnostic::error(
                    "Incomplete identity",
                    "`route_rule_priority` needs `path_matcher`: a route rule belongs to a path matcher.",
                ))
            }
        };
        Ok(route_id(&location, &route))
    }

    fn validate(&self, config: &WeightedBackendModel, diags: &mut Diagnostics) {
        timeouts::validate(&config.timeouts, diags);
        if let Some(name) = config.url_map.get() {
            if !is_google_name(name) {
                diags.attribute_error(
                    AttributePath::root("url_map"),
                    "Invalid URL map name",
                    format!("{name:?} is not a URL map name: 1-63 lowercase letters, digits and hyphens, starting with a letter and not ending with a hyphen."),
                );
            }
        }
        validate_address(
            &config.project,
            &config.region,
            &config.path_matcher,
            &config.route_rule_priority,
            diags,
        );
        let Some(weights) = config.weights.get() else {
            return;
        };
        if weights.is_empty() {
            diags.attribute_error(
                AttributePath::root("weights"),
                "No weights",
                "`weights` needs at least one backend service.",
            );
            return;
        }
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
                Field::Unknown => {}
                Field::Known(n) => match weight(n) {
                    Some(_) => {}
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
        // Whether the weights after the change are all zero depends on the weighted services
        // not listed here: plan checks it against the live URL map.
    }

    async fn modify_plan(
        &self,
        ctx: &Context<ProviderData>,
        prior: Option<&WeightedBackendModel>,
        _config: &WeightedBackendModel,
        planned: &mut WeightedBackendModel,
        diags: &mut Diagnostics,
    ) {
        let Some(compute) = diags.check(ctx.data.compute()) else {
            return;
        };
        let Some((location, route)) = planned.address() else {
            return;
        };
        let id = route_id(&location, &route);
        planned.id = id.as_str().into();
        let Some(desired) = planned.known_weights() else {
            return;
        };
        let by_name: BTreeMap<String, u32> = desired.iter().map(|(k, w)| (backend_name(k).to_string(), *w)).collect();
        if !ctx.data.claim_route(&id, &by_name) {
            diags.attribute_error(
                AttributePath::root("url_map"),
                "Route managed twice",
                format!(
                    "Another locality_weighted_backend of this configuration sets other weights on {route} of URL map \
                     {location}. Manage each route in one resource: two would undo each other's writes on every apply."
                ),
            );
            return;
        }
        warn_about_outside_changes(&location, &route, &ctx.data.moved_weights(&id), &desired, diags);
        // Check the weights after the change against the live URL map, when there is a change
        // to check: an apply that writes nothing needs none.
        if prior.and_then(WeightedBackendModel::known_weights).as_ref() == Some(&desired) {
            return;
        }
        let live = match compute.get_url_map(&location).await {
            Ok(map) => map.weighted(&route),
            // Perhaps created in the same apply (then apply checks again), perhaps misspelled.
            Err(ComputeError::NotFound(_)) => {
                diags.attribute_warning(
                    AttributePath::root("url_map"),
                    "URL map not found",
                    format!(
                        "URL map {location} was not found. The apply fails unless this configuration creates it first; check the name and `project`{}.",
                        if location.region.is_some() { " and `region`" } else { " (a regional URL map also needs `region`)" }
                    ),
                );
                return;
            }
            // No credentials: apply could not work either; say so now.
            Err(ComputeError::Auth(e)) => {
                diags.add(e);
                return;
            }
            Err(e) => {
                diags.warning(
                    "Weights not checked at plan time",
                    format!("Reading URL map {location} failed ({e}); apply checks the weights before it writes."),
                );
                return;
            }
        };
        let shown = location.to_string();
        match live
            .map_err(WeightsError::from)
            .and_then(|live| plan_weights(&shown, &route, &live, &desired))
        {
            Ok(_) => {}
            // The configuration alone proves it: every weighted service is listed, all at 0.
            Err(e @ WeightsError::AllZero { .. }) if matches!(&e, WeightsError::AllZero { unlisted, .. } if unlisted.is_empty()) =>
            {
                diags.add(Diagnostic::from(e));
            }
            // A key one or two letters from a real service is a misspelling, not a service the
            // URL map is about to get: an error now, on the key, with the name meant.
            Err(WeightsError::UnknownBackends { unknown, real, .. })
                if unknown.iter().all(|key| misspelling_of(key, &real).is_some()) =>
            {
                for key in &unknown {
                    diags.attribute_error(
                        AttributePath::root("weights").key(key),
                        "Not a weighted backend service of this URL map",
                        format!(
                            "{key:?} is not in the weightedBackendServices of {route} of URL map {shown}. Did you mean {:?}? Its weighted backend services are: {}.",
                            misspelling_of(key, &real).unwrap_or_default(),
                            real.join(", ")
                        ),
                    );
                }
            }
            // Everything else depends on the live URL map, which may change before apply
            // (e.g. a google_compute_url_map in the same configuration): a warning now, an
            // error at apply if it still holds.
            Err(e) => diags.warning("The apply will fail unless the URL map changes first", e.to_string()),
        }
    }

    async fn read(
        &self,
        ctx: &Context<ProviderData>,
        mut state: WeightedBackendModel,
        diags: &mut Diagnostics,
    ) -> Option<WeightedBackendModel> {
        let compute = diags.check(ctx.data.compute())?;
        let (location, route) = state.address()?;
        let live = match compute.get_url_map(&location).await.map(|map| map.weights(&route)) {
            Ok(Ok(weights)) => weights,
            Err(ComputeError::NotFound(_)) => {
                diags.warning(
                    "URL map not found",
                    format!("URL map {location} no longer exists; {TYPE_NAME} will be removed from state."),
                );
                return None;
            }
            Ok(Err(gone)) => {
                diags.warning(
                    "Route not found",
                    format!("{gone} {TYPE_NAME} will be removed from state."),
                );
                return None;
            }
            Err(e) => {
                diags.add(Diagnostic::from(e).context(format!("Reading URL map {location}")));
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
        let id = route_id(&location, &route);
        if let Some(applied) = state.known_weights() {
            let moved = applied
                .iter()
                .filter_map(|(key, &was)| {
                    let name = backend_name(key);
                    let now = *managed.get(name)?;
                    (now != was).then(|| (name.to_string(), (was, now)))
                })
                .collect();
            ctx.data.record_moved_weights(&id, moved);
        }
        state.set_weights(managed);
        state.id = id.into();
        Some(state)
    }

    async fn create(
        &self,
        ctx: &Context<ProviderData>,
        planned: WeightedBackendModel,
        diags: &mut Diagnostics,
    ) -> Option<WeightedBackendModel> {
        write(ctx, planned, Operation::Create, diags).await
    }

    async fn update(
        &self,
        ctx: &Context<ProviderData>,
        _prior: WeightedBackendModel,
        planned: WeightedBackendModel,
        diags: &mut Diagnostics,
    ) -> Option<WeightedBackendModel> {
        write(ctx, planned, Operation::Update, diags).await
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
        let Some((location, route)) = parse_import_id(id) else {
            diags.error(
                "Invalid import ID",
                format!(
                    "Expected `<project>/<url_map>` (global) or `<project>/<region>/<url_map>` (regional), optionally \
                     followed by `#<path_matcher>` or `#<path_matcher>/<route_rule_priority>`, e.g. \
                     `winticket-prod/web-urlmap` or `winticket-prod/asia-northeast1/web-urlmap#api/10`; got {id:?}."
                ),
            );
            return None;
        };
        let mut state = WeightedBackendModel {
            weights: Field::Null,
            ..Default::default()
        };
        state.set_address(&location, &route);
        Some(state)
    }
}

/// An import ID: `<project>[/<region>]/<url_map>[#<path_matcher>[/<priority>]]`.
pub fn parse_import_id(id: &str) -> Option<(UrlMapLocation, Route)> {
    let (map_part, route_part) = match id.split_once('#') {
        Some((map, route)) => (map, Some(route)),
        None => (id, None),
    };
    let parts: Vec<&str> = map_part.split('/').collect();
    let (project, region, name) = match parts.as_slice() {
        [project, name] => (*project, None, *name),
        [project, region, name] => (*project, Some(*region), *name),
        _ => return None,
    };
    if !is_project_id(project) || !is_google_name(name) || region.is_some_and(|r| !is_google_name(r)) {
        return None;
    }
    let route = match route_part {
        None => Route::Default,
        Some(route) => match route.split_once('/') {
            None => Route::PathMatcher(route.to_string()),
            Some((matcher, priority)) => Route::RouteRule {
                path_matcher: matcher.to_string(),
                priority: priority.parse().ok().filter(|p| *p <= MAX_PRIORITY)?,
            },
        },
    };
    match &route {
        Route::PathMatcher(m) | Route::RouteRule { path_matcher: m, .. } if !is_google_name(m) => return None,
        _ => {}
    }
    Some((
        UrlMapLocation {
            project: project.to_string(),
            region: region.map(str::to_string),
            name: name.to_string(),
        },
        route,
    ))
}

/// Checks of the attributes that address a URL map route (shared with the action).
pub(crate) fn validate_address(
    project: &Field<String>,
    region: &Field<String>,
    path_matcher: &Field<String>,
    route_rule_priority: &Field<Number>,
    diags: &mut Diagnostics,
) {
    if let Some(project) = project.get() {
        if !is_project_id(project) {
            diags.attribute_error(
                AttributePath::root("project"),
                "Invalid project ID",
                format!("{project:?} is not a Google Cloud project ID: 6-30 lowercase letters, digits and hyphens, starting with a letter."),
            );
        }
    }
    if let Some(region) = region.get() {
        if !is_google_name(region) {
            diags.attribute_error(
                AttributePath::root("region"),
                "Invalid region",
                format!("{region:?} is not a Google Cloud region name such as \"asia-northeast1\"; leave `region` unset for a global URL map."),
            );
        }
    }
    if let Some(name) = path_matcher.get() {
        if !is_google_name(name) {
            diags.attribute_error(
                AttributePath::root("path_matcher"),
                "Invalid path matcher name",
                format!("{name:?} is not a path matcher name: 1-63 lowercase letters, digits and hyphens, starting with a letter."),
            );
        }
    }
    match route_rule_priority {
        Field::Known(n) if priority(n).is_none() => diags.attribute_error(
            AttributePath::root("route_rule_priority"),
            "Invalid route rule priority",
            format!("{n} is not a route-rule priority: use a whole number from 0 to {MAX_PRIORITY}."),
        ),
        Field::Known(_) if path_matcher.is_null() => diags.attribute_error(
            AttributePath::root("route_rule_priority"),
            "Route rule without path matcher",
            "`route_rule_priority` needs `path_matcher`: route rules belong to a path matcher. Set the path matcher's name too.",
        ),
        _ => {}
    }
}

/// Warns when refresh found weights moved outside Terraform (an operator running
/// `locality_shift_weights`, the console) that the configuration does not follow: the apply
/// would move them back.
fn warn_about_outside_changes(
    location: &UrlMapLocation,
    route: &Route,
    moved: &BTreeMap<String, (u32, u32)>,
    desired: &BTreeMap<String, u32>,
    diags: &mut Diagnostics,
) {
    let reverted = crate::provider::data::reverted_weights(
        moved,
        desired.iter().map(|(key, &configured)| (backend_name(key), configured)),
    );
    if reverted.is_empty() {
        return;
    }
    diags.warning(
        "Live weights were changed outside this configuration",
        format!(
            "The live weights of {route} of URL map {location} were changed outside Terraform since the last apply \
             ({}); applying puts them back. If this was an incident shift (locality_shift_weights), change `weights` \
             in the configuration (or the generator spec's `active`) to the live weights before the next apply, and \
             hold CI applies until then: see the runbook on the locality_shift_weights page.",
            reverted.join("; ")
        ),
    );
}

/// Applies the planned weights within `timeouts.<op>` and returns the new state (the plan
/// itself). When time runs out, nothing is returned: a create leaves no state (the next apply
/// sets the same weights again), an update keeps the prior state (the next plan reads the live
/// weights).
async fn write(
    ctx: &Context<ProviderData>,
    planned: WeightedBackendModel,
    op: Operation,
    diags: &mut Diagnostics,
) -> Option<WeightedBackendModel> {
    let limit = timeouts::of(&planned.timeouts, op, TIMEOUTS);
    let compute = diags.check(ctx.data.compute())?.waiting_at_most(limit);
    let (Some((location, route)), Some(desired)) = (planned.address(), planned.known_weights()) else {
        diags.error(
            "Provider bug",
            format!("The planned URL map, route or weights are not all known and valid at apply time (weights: whole numbers from 0 to {MAX_WEIGHT}). Please report this."),
        );
        return None;
    };
    let written = timeouts::within(limit, op, TYPE_NAME, compute.set_weights(&location, &route, &desired));
    let result = diags.check(written.await)?;
    diags.check(result)?;
    Some(planned)
}

/// The real service a key misspells: one at most two edits from the key's name (case aside).
fn misspelling_of<'a>(key: &str, real: &'a [String]) -> Option<&'a str> {
    let name = backend_name(key).to_ascii_lowercase();
    real.iter()
        .map(|r| (crate::naming::edit_distance(&name, &r.to_ascii_lowercase()), r.as_str()))
        .filter(|(distance, _)| *distance <= 2)
        .min()
        .map(|(_, r)| r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn import_ids_name_global_and_regional_maps_and_their_routes() {
        let (at, route) = parse_import_id("winticket-prod/web-urlmap").unwrap();
        assert_eq!(
            (at.to_string(), route),
            ("winticket-prod/web-urlmap".to_string(), Route::Default)
        );
        let (at, route) = parse_import_id("winticket-prod/asia-northeast1/web-urlmap#api/10").unwrap();
        assert_eq!(at.region.as_deref(), Some("asia-northeast1"));
        assert_eq!(
            route,
            Route::RouteRule {
                path_matcher: "api".into(),
                priority: 10
            }
        );
        assert_eq!(
            route_id(&at, &route),
            "winticket-prod/asia-northeast1/web-urlmap#api/10"
        );
        assert_eq!(
            parse_import_id("winticket-prod/web-urlmap#api").unwrap().1,
            Route::PathMatcher("api".into())
        );
        for bad in [
            "web-urlmap",
            "winticket-prod/a/b/c",
            "winticket-prod/web-urlmap#",
            "winticket-prod/web-urlmap#api/x",
            "winticket-prod/web-urlmap#api/99999999999",
            "winticket-prod/Web",
            "winticket-prod/web-urlmap#Api/1",
            "winticket-prod/web-urlmap#api/1/2",
            "",
            "ü/ü",
        ] {
            assert!(parse_import_id(bad).is_none(), "{bad:?}");
        }
    }
}
