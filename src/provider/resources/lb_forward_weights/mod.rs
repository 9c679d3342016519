//! `locality_lb_forward_weights`: the weights of one forward action of an AWS load balancer —
//! an ALB's or NLB's listener, or an ALB listener rule — (its page:
//! `docs/resources/lb_forward_weights.md`).
//!
//! - `schema.rs`: the schema (its descriptions are the docs), with the key equality of target
//!   groups named by name or ARN;
//! - `model.rs`: the model, the only place attributes are named;
//! - this file: the glue: checks at validate (the configuration alone) and at plan (against the
//!   live action list), drift warning on refresh, import. The ARN forms and weight checks are
//!   `crate::provider::aws::lb_forward`; the write (one writer per listener, the whole action
//!   list, the read after) is `crate::provider::aws::lb_weights::set_weights`.

mod model;
mod schema;

use std::collections::BTreeMap;

use async_trait::async_trait;

pub use model::{target_attribute, weight, LbForwardWeightsModel};
pub use schema::{identity_schema, schema};

use crate::provider::aws::lb_forward::{group_name, plan_weights, Refusal, Target, MAX_GROUPS, MAX_WEIGHT};
use crate::provider::aws::lb_weights::{by_name, read_groups, set_weights, WeightsFailure};
use crate::provider::aws::Aws;
use crate::provider::timeouts::{self, Operation};
use crate::provider::ProviderData;
use crate::tfplugin::{
    identity_string, AttributePath, Context, Diagnostic, Diagnostics, Field, IdentitySchema, Resource, Schema, Value,
};

/// The resource type.
pub struct LbForwardWeights;

/// The Terraform type name.
pub const TYPE_NAME: &str = "locality_lb_forward_weights";

/// Default `timeouts`: 5 minutes (a ModifyListener answers in a second; the SDK retries).
pub const TIMEOUTS: timeouts::Defaults = timeouts::Defaults::all(std::time::Duration::from_secs(5 * 60));

/// Refusals of the weights as diagnostics on `weights` or on its key.
pub(crate) fn refusal_diagnostics(refusals: &[Refusal], summary: &str, diags: &mut Diagnostics) {
    for refusal in refusals {
        let at = match &refusal.key {
            Some(key) => AttributePath::root("weights").key(key),
            None => AttributePath::root("weights"),
        };
        diags.attribute_error(at, summary, format!("{}.", refusal.said));
    }
}

/// The diagnostic of a failed read or write of `target`.
pub(crate) fn failure_diagnostic(target: &Target, attribute: &str, e: WeightsFailure, diags: &mut Diagnostics) {
    match e {
        WeightsFailure::Refused(refusals) => refusal_diagnostics(&refusals, "Weights refused", diags),
        WeightsFailure::NotFound(what) => diags.attribute_error(
            AttributePath::root(attribute),
            "Not found",
            format!(
                "{what} does not exist (in account {}, region {}).",
                target.account, target.region
            ),
        ),
        WeightsFailure::NoForward(said) => diags.attribute_error(
            AttributePath::root(attribute),
            "Not a forward action",
            format!("{said}. locality_lb_forward_weights manages the weights of a forward action to target groups."),
        ),
        WeightsFailure::Aws(e) => diags.error("AWS call failed", e.to_string()),
        WeightsFailure::ChangedSince { said, .. } => diags.error("Changed by someone else", said),
    }
}

/// Checks that make no call: exactly one target, its ARN, the weights' keys and values.
/// Shared with `locality_shift_lb_weights`.
pub(crate) fn validate_target_and_weights(
    listener_arn: &Field<String>,
    rule_arn: &Field<String>,
    weights: &Field<BTreeMap<String, Field<crate::tfplugin::Number>>>,
    diags: &mut Diagnostics,
) {
    match (listener_arn, rule_arn) {
        (Field::Null, Field::Null) => diags.attribute_error(
            AttributePath::root("listener_arn"),
            "No target",
            "Set `listener_arn` (a listener's default action) or `rule_arn` (an Application Load Balancer listener rule).",
        ),
        (Field::Known(_), Field::Known(_)) => diags.attribute_error(
            AttributePath::root("rule_arn"),
            "Two targets",
            "Set one of `listener_arn` and `rule_arn`, not both: one resource manages one forward action.",
        ),
        _ => {}
    }
    for (attribute, field) in [("listener_arn", listener_arn), ("rule_arn", rule_arn)] {
        if let Some(arn) = field.get() {
            if let Err(said) = Target::parse(attribute, arn) {
                diags.attribute_error(AttributePath::root(attribute), "Invalid ARN", format!("{said}."));
            }
        }
    }
    let Some(weights) = weights.get() else {
        return;
    };
    if weights.is_empty() {
        diags.attribute_error(
            AttributePath::root("weights"),
            "No weights",
            "`weights` needs at least one target group.",
        );
        return;
    }
    if weights.len() > MAX_GROUPS {
        diags.attribute_error(
            AttributePath::root("weights"),
            "Too many target groups",
            format!(
                "`weights` names {} target groups; a forward action holds at most {MAX_GROUPS}.",
                weights.len()
            ),
        );
    }
    let mut by_group: BTreeMap<&str, &str> = BTreeMap::new();
    for (key, value) in weights {
        let at = AttributePath::root("weights").key(key);
        let shown = locality_resolve::printable::printable_cut(key, 120);
        match group_name(key) {
            None => diags.attribute_error(
                at.clone(),
                "Invalid target group",
                format!("\"{shown}\" is neither a target group's name (1 to 32 letters, digits and -, not starting or ending with -) nor its ARN (arn:aws:elasticloadbalancing:REGION:ACCOUNT:targetgroup/NAME/ID)."),
            ),
            Some(name) => {
                if let Some(other) = by_group.insert(name, key) {
                    diags.attribute_error(
                        at.clone(),
                        "Duplicate target group",
                        format!(
                            "\"{shown}\" and \"{}\" are the same target group ({name}): give it once.",
                            locality_resolve::printable::printable_cut(other, 120)
                        ),
                    );
                }
            }
        }
        match value {
            Field::Unknown => {}
            Field::Known(n) if weight(n).is_some() => {}
            Field::Known(n) => diags.attribute_error(
                at,
                "Invalid weight",
                format!("{n} is not a weight: use a whole number from 0 to {MAX_WEIGHT}."),
            ),
            Field::Null => diags.attribute_error(
                at,
                "Invalid weight",
                format!("Use a whole number from 0 to {MAX_WEIGHT}."),
            ),
        }
    }
}

/// The AWS clients and the target, with the target's region checked against the provider's.
pub(crate) async fn connect<'a>(
    ctx: &'a Context<ProviderData>,
    attribute: &str,
    arn: &str,
    diags: &mut Diagnostics,
) -> Option<(&'a Aws, Target)> {
    let target = match Target::parse(attribute, arn) {
        Ok(target) => target,
        Err(said) => {
            diags.attribute_error(AttributePath::root(attribute), "Invalid ARN", format!("{said}."));
            return None;
        }
    };
    let aws = ctx.data.aws().await;
    if let Some(region) = aws.region() {
        if let Err(said) = target.check_region(region) {
            diags.attribute_error(AttributePath::root(attribute), "Region mismatch", format!("{said}."));
            return None;
        }
    }
    Some((aws, target))
}

#[async_trait]
impl Resource<ProviderData> for LbForwardWeights {
    type Model = LbForwardWeightsModel;

    fn type_name(&self) -> &'static str {
        TYPE_NAME
    }

    fn schema(&self) -> Schema {
        schema()
    }

    fn identity_schema(&self) -> Option<IdentitySchema> {
        Some(identity_schema())
    }

    fn identity(&self, state: &LbForwardWeightsModel) -> Option<Value> {
        let (attribute, arn) = target_attribute(&state.listener_arn, &state.rule_arn)?;
        let (listener, rule) = if attribute == "rule_arn" {
            (Value::Null, Value::String(arn))
        } else {
            (Value::String(arn), Value::Null)
        };
        Some(identity_schema().value([("listener_arn", listener), ("rule_arn", rule)]))
    }

    fn import_id(&self, _ctx: &Context<ProviderData>, identity: &Value) -> Result<String, Diagnostic> {
        match (
            identity_string(identity, "listener_arn"),
            identity_string(identity, "rule_arn"),
        ) {
            (Some(arn), None) | (None, Some(arn)) => Ok(arn.to_string()),
            _ => Err(Diagnostic::error(
                "Invalid identity",
                "Give one of `listener_arn` and `rule_arn` in the identity.",
            )),
        }
    }

    fn validate(&self, config: &LbForwardWeightsModel, diags: &mut Diagnostics) {
        timeouts::validate(&config.timeouts, diags);
        validate_target_and_weights(&config.listener_arn, &config.rule_arn, &config.weights, diags);
    }

    async fn modify_plan(
        &self,
        ctx: &Context<ProviderData>,
        prior: Option<&LbForwardWeightsModel>,
        _config: &LbForwardWeightsModel,
        planned: &mut LbForwardWeightsModel,
        diags: &mut Diagnostics,
    ) {
        let Some((attribute, arn)) = target_attribute(&planned.listener_arn, &planned.rule_arn) else {
            return;
        };
        let Some((aws, target)) = connect(ctx, attribute, &arn, diags).await else {
            return;
        };
        planned.id = arn.as_str().into();
        let Some(desired) = planned.known_weights() else {
            return;
        };
        let by_group: BTreeMap<String, u32> = desired
            .iter()
            .map(|(k, w)| (group_name(k).unwrap_or(k).to_string(), *w))
            .collect();
        if !ctx.data.claim_route(&format!("elbv2 {arn}"), &by_group) {
            diags.attribute_error(
                AttributePath::root(attribute),
                "Forward action managed twice",
                format!(
                    "Another {TYPE_NAME} of this configuration sets other weights on {arn}. Manage each forward action in one resource: two would undo each other's writes on every apply."
                ),
            );
            return;
        }
        warn_about_outside_changes(&arn, &ctx.data.moved_weights(&format!("elbv2 {arn}")), &by_group, diags);
        if prior.and_then(LbForwardWeightsModel::known_weights).as_ref() == Some(&desired) {
            return;
        }
        let groups = match read_groups(aws, &target).await {
            Ok((_, groups)) => groups,
            Err(WeightsFailure::Aws(e)) => {
                diags.warning(
                    "Weights not checked at plan time",
                    format!("Reading {arn} failed ({e}); apply checks the weights before it writes."),
                );
                return;
            }
            Err(e) => {
                failure_diagnostic(&target, attribute, e, diags);
                return;
            }
        };
        let asked: BTreeMap<String, Option<i128>> =
            desired.iter().map(|(k, w)| (k.clone(), Some(i128::from(*w)))).collect();
        if let Err(refusals) = plan_weights(&asked, &groups) {
            refusal_diagnostics(&refusals, "Weights refused", diags);
        }
    }

    async fn read(
        &self,
        ctx: &Context<ProviderData>,
        mut state: LbForwardWeightsModel,
        diags: &mut Diagnostics,
    ) -> Option<LbForwardWeightsModel> {
        let (attribute, arn) = target_attribute(&state.listener_arn, &state.rule_arn)?;
        let (aws, target) = connect(ctx, attribute, &arn, diags).await?;
        let live = match read_groups(aws, &target).await {
            Ok((_, groups)) => by_name(&groups),
            Err(WeightsFailure::NotFound(what)) => {
                diags.warning(
                    "Not found",
                    format!("{what} no longer exists; {TYPE_NAME} will be removed from state."),
                );
                return None;
            }
            Err(e) => {
                failure_diagnostic(&target, attribute, e, diags);
                return None;
            }
        };
        // The groups this resource manages, under the keys the state uses (name or ARN); after
        // an import, every group of the action by name.
        let managed: BTreeMap<String, u32> = match state.weights.get() {
            Some(prior) => prior
                .keys()
                .filter_map(|key| {
                    let name = group_name(key)?;
                    live.get(name).map(|w| (key.clone(), *w))
                })
                .collect(),
            None => live.clone(),
        };
        if let Some(applied) = state.known_weights() {
            let moved = applied
                .iter()
                .filter_map(|(key, &was)| {
                    let name = group_name(key)?;
                    let now = *live.get(name)?;
                    (now != was).then(|| (name.to_string(), (was, now)))
                })
                .collect();
            ctx.data.record_moved_weights(&format!("elbv2 {arn}"), moved);
        }
        state.set_weights(managed);
        state.id = arn.into();
        Some(state)
    }

    async fn create(
        &self,
        ctx: &Context<ProviderData>,
        planned: LbForwardWeightsModel,
        diags: &mut Diagnostics,
    ) -> Option<LbForwardWeightsModel> {
        write(ctx, planned, Operation::Create, diags).await
    }

    async fn update(
        &self,
        ctx: &Context<ProviderData>,
        _prior: LbForwardWeightsModel,
        planned: LbForwardWeightsModel,
        diags: &mut Diagnostics,
    ) -> Option<LbForwardWeightsModel> {
        write(ctx, planned, Operation::Update, diags).await
    }

    async fn delete(&self, _ctx: &Context<ProviderData>, prior: LbForwardWeightsModel, diags: &mut Diagnostics) {
        let id = prior.id.get().cloned().unwrap_or_default();
        diags.warning(
            "Load balancer left as it is",
            format!("Terraform no longer manages the weights of {id}; the forward action and its current weights stay unchanged in AWS."),
        );
    }

    async fn import(
        &self,
        _ctx: &Context<ProviderData>,
        id: &str,
        diags: &mut Diagnostics,
    ) -> Option<LbForwardWeightsModel> {
        let attribute = if id.contains(":listener-rule/") {
            "rule_arn"
        } else {
            "listener_arn"
        };
        if let Err(said) = Target::parse(attribute, id) {
            diags.error(
                "Invalid import ID",
                format!("Give the listener's ARN or the listener rule's ARN: {said}."),
            );
            return None;
        }
        let mut state = LbForwardWeightsModel {
            weights: Field::Null,
            ..Default::default()
        };
        if attribute == "rule_arn" {
            state.rule_arn = id.into();
        } else {
            state.listener_arn = id.into();
        }
        state.id = id.into();
        Some(state)
    }
}

/// Warns when refresh found weights moved outside Terraform that the configuration does not
/// follow: the apply would move them back.
fn warn_about_outside_changes(
    arn: &str,
    moved: &BTreeMap<String, (u32, u32)>,
    desired: &BTreeMap<String, u32>,
    diags: &mut Diagnostics,
) {
    let reverted = crate::provider::data::reverted_weights(
        moved,
        desired.iter().map(|(name, &configured)| (name.as_str(), configured)),
    );
    if reverted.is_empty() {
        return;
    }
    diags.warning(
        "Live weights were changed outside this configuration",
        format!(
            "The live weights of {arn} were changed outside Terraform since the last apply ({}); applying puts them \
             back. If this was an incident shift (locality_shift_lb_weights), change `weights` in the configuration \
             (or the generator spec) to the live weights before the next apply: see the runbook on the \
             locality_shift_lb_weights page.",
            reverted.join("; ")
        ),
    );
}

/// Applies the planned weights within `timeouts.<op>` and returns the new state. A failure after
/// the write returns the live weights, so the next plan shows what is there.
async fn write(
    ctx: &Context<ProviderData>,
    mut planned: LbForwardWeightsModel,
    op: Operation,
    diags: &mut Diagnostics,
) -> Option<LbForwardWeightsModel> {
    let limit = timeouts::of(&planned.timeouts, op, TIMEOUTS);
    let attribute = planned.target_attribute();
    let (Some((_, arn)), Some(desired)) = (
        target_attribute(&planned.listener_arn, &planned.rule_arn),
        planned.known_weights(),
    ) else {
        diags.error(
            "Provider bug",
            format!("The planned target or weights are not all known and valid at apply time (weights: whole numbers from 0 to {MAX_WEIGHT}). Please report this."),
        );
        return None;
    };
    let (aws, target) = connect(ctx, attribute, &arn, diags).await?;
    let written = timeouts::within(limit, op, TYPE_NAME, set_weights(aws, &target, &desired));
    match diags.check(written.await)? {
        Ok(_) => {
            planned.id = arn.into();
            Some(planned)
        }
        Err(WeightsFailure::ChangedSince { said, live }) => {
            diags.error("Changed by someone else", said);
            let managed: BTreeMap<String, u32> = desired
                .keys()
                .filter_map(|key| Some((key.clone(), *live.get(group_name(key)?)?)))
                .collect();
            planned.set_weights(managed);
            planned.id = arn.into();
            Some(planned)
        }
        Err(e) => {
            failure_diagnostic(&target, attribute, e, diags);
            None
        }
    }
}
