//! `locality_shift_lb_weights`: move an AWS load balancer forward action's weights to a target
//! now, optionally in steps (`docs/actions/shift_lb_weights.md` is its page, with the runbook).
//!
//! - `schema.rs`: the schema (its descriptions are the docs);
//! - `model.rs`: the model;
//! - this file: validation (shared with `locality_lb_forward_weights`), the steps (the same
//!   arithmetic as `locality_shift_weights`), and the writes, each through
//!   `crate::provider::aws::lb_weights::set_weights`.

mod model;
mod schema;

use std::collections::BTreeMap;
use std::time::Duration;

use async_trait::async_trait;

pub use model::ShiftLbWeightsModel;
pub use schema::schema;

use crate::provider::actions::shift_weights::{pause, show, step_count, step_weights};
use crate::provider::aws::lb_forward::{group_name, plan_weights, Target};
use crate::provider::aws::lb_weights::{by_name, read_groups, set_weights};
use crate::provider::aws::Aws;
use crate::provider::resources::lb_forward_weights::{
    connect, failure_diagnostic, refusal_diagnostics, target_attribute, validate_target_and_weights, weight,
};
use crate::provider::ProviderData;
use crate::tfplugin::{Action, AttributePath, Context, Diagnostics, Progress, Schema};

/// The action type.
pub struct ShiftLbWeights;

/// The Terraform type name.
pub const TYPE_NAME: &str = "locality_shift_lb_weights";

impl ShiftLbWeightsModel {
    fn step_count(&self) -> Result<u64, String> {
        step_count(&self.steps)
    }

    fn pause(&self) -> Result<Duration, String> {
        pause(&self.interval)
    }

    /// The target weights by group name, when every one is known and valid.
    fn target_weights(&self) -> Option<BTreeMap<String, u32>> {
        self.weights
            .get()?
            .iter()
            .map(|(k, v)| Some((group_name(k)?.to_string(), weight(v.get()?)?)))
            .collect()
    }
}

/// The client, the target and the target weights, or why not.
async fn resolve<'a>(
    ctx: &'a Context<ProviderData>,
    config: &ShiftLbWeightsModel,
    diags: &mut Diagnostics,
) -> Option<(&'a Aws, Target, &'static str, BTreeMap<String, u32>)> {
    let (Some((attribute, arn)), Some(weights)) = (
        target_attribute(&config.listener_arn, &config.rule_arn),
        config.target_weights(),
    ) else {
        diags.error(
            "Unknown target",
            "The target or the weights are not known when the action runs: give them as values known at plan time.",
        );
        return None;
    };
    let (aws, target) = connect(ctx, attribute, &arn, diags).await?;
    Some((aws, target, attribute, weights))
}

/// The forward's current weights by group name, after checking the target weights against them.
async fn current_weights(
    aws: &Aws,
    target: &Target,
    attribute: &str,
    weights: &BTreeMap<String, u32>,
    diags: &mut Diagnostics,
) -> Option<BTreeMap<String, u32>> {
    let groups = match read_groups(aws, target).await {
        Ok((_, groups)) => groups,
        Err(e) => {
            failure_diagnostic(target, attribute, e, diags);
            return None;
        }
    };
    let asked = weights.iter().map(|(k, w)| (k.clone(), Some(i128::from(*w)))).collect();
    if let Err(refusals) = plan_weights(&asked, &groups) {
        refusal_diagnostics(&refusals, "Weights refused", diags);
        return None;
    }
    Some(by_name(&groups))
}

#[async_trait]
impl Action<ProviderData> for ShiftLbWeights {
    type Model = ShiftLbWeightsModel;

    fn type_name(&self) -> &'static str {
        TYPE_NAME
    }

    fn schema(&self) -> Schema {
        schema()
    }

    fn validate(&self, config: &ShiftLbWeightsModel, diags: &mut Diagnostics) {
        validate_target_and_weights(&config.listener_arn, &config.rule_arn, &config.weights, diags);
        if let Err(problem) = config.step_count() {
            diags.attribute_error(AttributePath::root("steps"), "Invalid steps", problem);
        }
        if let Err(problem) = config.pause() {
            diags.attribute_error(AttributePath::root("interval"), "Invalid interval", problem);
        }
    }

    async fn plan(&self, ctx: &Context<ProviderData>, config: &ShiftLbWeightsModel, diags: &mut Diagnostics) {
        let Some((aws, target, attribute, weights)) = resolve(ctx, config, diags).await else {
            return;
        };
        let _ = current_weights(aws, &target, attribute, &weights, diags).await;
    }

    async fn invoke(
        &self,
        ctx: &Context<ProviderData>,
        config: ShiftLbWeightsModel,
        progress: &Progress,
        diags: &mut Diagnostics,
    ) {
        let Some((aws, target, attribute, goal)) = resolve(ctx, &config, diags).await else {
            return;
        };
        let (Ok(steps), Ok(pause)) = (config.step_count(), config.pause()) else {
            return;
        };
        let Some(current) = current_weights(aws, &target, attribute, &goal, diags).await else {
            return;
        };
        let arn = locality_resolve::printable::printable_cut(&target.arn, 160);
        progress.report(format!(
            "{arn}: {} → {} in {steps} step(s)",
            show(
                &current
                    .iter()
                    .filter(|(k, _)| goal.contains_key(*k))
                    .map(|(k, w)| (k.clone(), *w))
                    .collect()
            ),
            show(&goal)
        ));
        let mut done: Option<BTreeMap<String, u32>> = None;
        for k in 1..=steps {
            if ctx.stop.is_cancelled() {
                diags.error(
                    "Shift stopped",
                    format!(
                        "Stopped before step {k} of {steps}: {arn} has {}.",
                        done.as_ref()
                            .map_or_else(|| "its weights from before the action".to_string(), show)
                    ),
                );
                return;
            }
            let weights = step_weights(&current, &goal, k, steps);
            if let Err(e) = set_weights(aws, &target, &weights).await {
                let mut step = Diagnostics::default();
                failure_diagnostic(&target, attribute, e, &mut step);
                for d in step.0 {
                    diags.add(d.context(format!("Step {k} of {steps}")));
                }
                return;
            }
            progress.report(format!("step {k}/{steps} done: {}", show(&weights)));
            done = Some(weights.clone());
            if k < steps && !pause.is_zero() {
                tokio::select! {
                    () = ctx.stop.cancelled() => {
                        diags.error(
                            "Shift stopped",
                            format!("Stopped after step {k} of {steps}: {arn} now has {}.", show(&weights)),
                        );
                        return;
                    }
                    () = tokio::time::sleep(pause) => {}
                }
            }
        }
    }
}
