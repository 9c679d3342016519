//! `locality_shift_weights`: move a URL map's weights to a target now, optionally in steps
//! (`docs/actions/shift_weights.md` is its page, with the incident runbook).
//!
//! - `schema.rs`: the schema (its descriptions are the docs);
//! - `model.rs`: the model;
//! - this file: validation (shared with `locality_weighted_backend`), the steps, and the
//!   writes, each through `Compute::set_weights`.

mod model;
mod schema;

use std::collections::BTreeMap;
use std::time::Duration;

use async_trait::async_trait;

pub use model::ShiftWeightsModel;
pub use schema::{schema, MAX_STEPS};

use crate::provider::google::{backend_name, plan_weights, Compute, Route, UrlMapLocation};
use crate::provider::resources::weighted_backend::{WeightedBackend, WeightedBackendModel};
use crate::provider::ProviderData;
use crate::tfplugin::{Action, AttributePath, Context, Diagnostic, Diagnostics, Field, Progress, Resource, Schema};

/// The action type.
pub struct ShiftWeights;

/// The Terraform type name.
pub const TYPE_NAME: &str = "locality_shift_weights";

/// The longest pause between steps.
const MAX_INTERVAL: Duration = Duration::from_secs(3600);

impl ShiftWeightsModel {
    /// The same values as a `locality_weighted_backend`, for its validation.
    fn as_resource(&self) -> WeightedBackendModel {
        WeightedBackendModel {
            id: Field::Null,
            project: self.project.clone(),
            region: self.region.clone(),
            url_map: self.url_map.clone(),
            path_matcher: self.path_matcher.clone(),
            route_rule_priority: self.route_rule_priority.clone(),
            weights: self.weights.clone(),
            timeouts: Field::Null,
        }
    }

    /// The number of steps (default 1), when valid.
    fn step_count(&self) -> Result<u64, String> {
        step_count(&self.steps)
    }

    /// The pause between steps (default none), when valid.
    fn pause(&self) -> Result<Duration, String> {
        pause(&self.interval)
    }
}

/// `steps`: how many equal steps (default 1), when valid (shared with `locality_shift_lb_weights`).
pub(crate) fn step_count(steps: &Field<crate::tfplugin::Number>) -> Result<u64, String> {
    match steps {
        Field::Null | Field::Unknown => Ok(1),
        Field::Known(n) => n
            .as_u64()
            .filter(|s| (1..=MAX_STEPS).contains(s))
            .ok_or_else(|| format!("{n} is not a number of steps: use a whole number from 1 to {MAX_STEPS}.")),
    }
}

/// `interval`: the pause between steps (default none), when valid (shared with
/// `locality_shift_lb_weights`).
pub(crate) fn pause(interval: &Field<String>) -> Result<Duration, String> {
    match interval.get() {
        None => Ok(Duration::ZERO),
        Some(text) => humantime::parse_duration(text)
            .ok()
            .filter(|d| *d <= MAX_INTERVAL)
            .ok_or_else(|| {
                format!(
                    "\"{}\" is not an interval: use a duration such as \"30s\" or \"2m\", at most 1h.",
                    locality_resolve::printable::printable_cut(text, 40)
                )
            }),
    }
}

/// The weights of step `k` of `n` from `current` to `target` (both by backend-service name):
/// equal steps, rounded, exactly `target` at the last, never all zero on the way.
pub fn step_weights(
    current: &BTreeMap<String, u32>,
    target: &BTreeMap<String, u32>,
    k: u64,
    n: u64,
) -> BTreeMap<String, u32> {
    // At least one step, and never past the last (steps are 1..=MAX_STEPS once validated).
    let n = i64::try_from(n.clamp(1, MAX_STEPS)).unwrap_or(1);
    let k = i64::try_from(k).unwrap_or(n).min(n);
    let mut step: BTreeMap<String, u32> = target
        .iter()
        .map(|(name, &t)| {
            let c = i64::from(current.get(name).copied().unwrap_or(0));
            let t = i64::from(t);
            let value = c + ((t - c) * k + n / 2).div_euclid(n);
            (name.clone(), u32::try_from(value.clamp(0, 1000)).unwrap_or(0))
        })
        .collect();
    let others_zero = current
        .iter()
        .filter(|(name, _)| !target.contains_key(*name))
        .all(|(_, &w)| w == 0);
    if others_zero && step.values().all(|&w| w == 0) {
        if let Some((name, _)) = target.iter().max_by_key(|(_, &w)| w) {
            step.insert(name.clone(), 1);
        }
    }
    step
}

/// Weights as `name=weight, ...` (the actions' progress lines).
pub(crate) fn show(weights: &BTreeMap<String, u32>) -> String {
    weights
        .iter()
        .map(|(k, w)| format!("{k}={w}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What one invocation shifts: the URL map, the route, the target weights by name.
struct Target {
    location: UrlMapLocation,
    route: Route,
    weights: BTreeMap<String, u32>,
}

/// The target and the client, or why not.
fn resolve(
    ctx: &Context<ProviderData>,
    config: &ShiftWeightsModel,
    diags: &mut Diagnostics,
) -> Option<(Target, Compute)> {
    let compute = diags.check(ctx.data.compute())?;
    let mut resource = config.as_resource();
    if resource.project.is_null() {
        resource.project = ctx.data.config.google.project.clone().into();
    }
    if resource.project.is_null() {
        diags.attribute_error(
            AttributePath::root("project"),
            "No project",
            "Set `project` here, or `project` in the provider's `google` block.",
        );
        return None;
    }
    let (Some((location, route)), Some(weights)) = (resource.address(), resource.known_weights()) else {
        diags.error(
            "Provider bug",
            "The URL map, route or weights are not known when the action runs. Please report this.",
        );
        return None;
    };
    let weights = weights
        .into_iter()
        .map(|(k, w)| (backend_name(&k).to_string(), w))
        .collect();
    Some((
        Target {
            location,
            route,
            weights,
        },
        compute,
    ))
}

/// The route's current weights, after checking the target against them: every key one of
/// the route's weighted backend services, and the weights after the shift not all zero (the
/// errors name the real services).
async fn current_weights(compute: &Compute, target: &Target) -> Result<BTreeMap<String, u32>, Diagnostic> {
    let map = compute.get_url_map(&target.location).await.map_err(Diagnostic::from)?;
    let live = map
        .weighted(&target.route)
        .map_err(|e| Diagnostic::from(crate::provider::google::WeightsError::from(e)))?;
    plan_weights(&target.location.to_string(), &target.route, &live, &target.weights).map_err(Diagnostic::from)?;
    Ok(live.iter().map(|w| (w.name().to_string(), w.weight)).collect())
}

#[async_trait]
impl Action<ProviderData> for ShiftWeights {
    type Model = ShiftWeightsModel;

    fn type_name(&self) -> &'static str {
        TYPE_NAME
    }

    fn schema(&self) -> Schema {
        schema()
    }

    fn validate(&self, config: &ShiftWeightsModel, diags: &mut Diagnostics) {
        WeightedBackend.validate(&config.as_resource(), diags);
        if let Err(problem) = config.step_count() {
            diags.attribute_error(AttributePath::root("steps"), "Invalid steps", problem);
        }
        if let Err(problem) = config.pause() {
            diags.attribute_error(AttributePath::root("interval"), "Invalid interval", problem);
        }
    }

    async fn plan(&self, ctx: &Context<ProviderData>, config: &ShiftWeightsModel, diags: &mut Diagnostics) {
        let Some((target, compute)) = resolve(ctx, config, diags) else {
            return;
        };
        if let Err(e) = current_weights(&compute, &target).await {
            diags.add(e);
        }
    }

    async fn invoke(
        &self,
        ctx: &Context<ProviderData>,
        config: ShiftWeightsModel,
        progress: &Progress,
        diags: &mut Diagnostics,
    ) {
        let Some((shift, compute)) = resolve(ctx, &config, diags) else {
            return;
        };
        let (Ok(steps), Ok(pause)) = (config.step_count(), config.pause()) else {
            return;
        };
        let current = match current_weights(&compute, &shift).await {
            Ok(current) => current,
            Err(e) => {
                diags.add(e);
                return;
            }
        };
        let (target, url_map, route) = (&shift.weights, &shift.location, &shift.route);
        progress.report(format!(
            "{url_map} ({route}): {} → {} in {steps} step(s)",
            show(
                &current
                    .iter()
                    .filter(|(k, _)| target.contains_key(*k))
                    .map(|(k, w)| (k.clone(), *w))
                    .collect()
            ),
            show(target)
        ));
        let mut done: Option<BTreeMap<String, u32>> = None;
        for k in 1..=steps {
            if ctx.stop.is_cancelled() {
                diags.error(
                    "Shift stopped",
                    format!(
                        "Stopped before step {k} of {steps}: URL map {url_map} has {}.",
                        done.as_ref()
                            .map_or_else(|| "its weights from before the action".to_string(), show)
                    ),
                );
                return;
            }
            let weights = step_weights(&current, target, k, steps);
            if let Err(e) = compute.set_weights(url_map, route, &weights).await {
                diags.add(Diagnostic::from(e).context(format!("Step {k} of {steps}")));
                return;
            }
            progress.report(format!("step {k}/{steps} done: {}", show(&weights)));
            done = Some(weights.clone());
            if k < steps && !pause.is_zero() {
                tokio::select! {
                    () = ctx.stop.cancelled() => {
                        diags.error(
                            "Shift stopped",
                            format!("Stopped after step {k} of {steps}: URL map {url_map} now has {}.", show(&weights)),
                        );
                        return;
                    }
                    () = tokio::time::sleep(pause) => {}
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(items: &[(&str, u32)]) -> BTreeMap<String, u32> {
        items.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    #[test]
    fn equal_steps_end_exactly_at_the_target_and_never_all_zero() {
        let current = map(&[("tokyo", 100), ("osaka", 0)]);
        let target = map(&[("tokyo", 0), ("osaka", 100)]);
        let steps: Vec<_> = (1..=4).map(|k| step_weights(&current, &target, k, 4)).collect();
        assert_eq!(steps[0], map(&[("tokyo", 75), ("osaka", 25)]));
        assert_eq!(steps[1], map(&[("tokyo", 50), ("osaka", 50)]));
        assert_eq!(steps[3], target);
        // 1 → 0 and 0 → 1 in two steps would round to all zero half-way: one stays up.
        let mid = step_weights(&map(&[("a", 1), ("b", 0)]), &map(&[("a", 0), ("b", 1)]), 1, 2);
        assert!(mid.values().any(|&w| w > 0), "{mid:?}");
        // Keys not named keep their weight and count.
        let kept = step_weights(&map(&[("a", 1), ("c", 5)]), &map(&[("a", 0)]), 1, 2);
        assert_eq!(kept, map(&[("a", 1)]));
    }
}
