//! One write of a forward action's weights, as `locality_lb_forward_weights` and each step of
//! `locality_shift_lb_weights` do it: read the action list, check the weights against it,
//! write the whole list back with only the weights changed, read it again. Elastic Load
//! Balancing has no fingerprint or ETag, so the read after the write is what tells a change
//! made by someone else (reported, never overwritten silently). Writes to one listener — its
//! default action and its rules — go one at a time in this process.
//!
//! Costs: one DescribeListeners/DescribeRules when the weights are already live; otherwise
//! one read, one ModifyListener/ModifyRule and one read again (the SDK's retries aside).

use std::collections::BTreeMap;

use aws_sdk_elasticloadbalancingv2::types::{Action, ActionTypeEnum};

use super::lb_forward::{live_groups, plan_weights, rewrite, LiveActions, Refusal, Target};
use super::{Aws, AwsError};
use crate::provider::actions::shift_weights::show;

/// Why the weights were not written (or not as asked).
#[derive(Debug)]
pub enum WeightsFailure {
    /// The listener or rule does not exist.
    NotFound(String),
    /// The action list holds no forward action (or several), or a group that is not one.
    NoForward(String),
    /// The weights do not fit the live forward action: each refusal names its key.
    Refused(Vec<Refusal>),
    /// The call failed.
    Aws(AwsError),
    /// The list read after the write is not the one written: someone else changed it.
    ChangedSince {
        /// What differs, in one sentence.
        said: String,
        /// The live weights read after the write, by group name.
        live: BTreeMap<String, u32>,
    },
}

impl std::fmt::Display for WeightsFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WeightsFailure::NotFound(what) => write!(f, "{what} was not found"),
            WeightsFailure::NoForward(said) => f.write_str(said),
            WeightsFailure::Refused(refusals) => {
                f.write_str(&refusals.iter().map(|r| r.said.clone()).collect::<Vec<_>>().join("; "))
            }
            WeightsFailure::Aws(e) => write!(f, "{e}"),
            WeightsFailure::ChangedSince { said, .. } => f.write_str(said),
        }
    }
}

/// The live weights by group name.
pub fn by_name(groups: &[(String, String, u32)]) -> BTreeMap<String, u32> {
    groups.iter().map(|(name, _, w)| (name.clone(), *w)).collect()
}

/// Reads the target's action list and its forward's groups (name, ARN, weight).
///
/// # Errors
/// Not found, no forward action, or the call's error.
pub async fn read_groups(
    aws: &Aws,
    target: &Target,
) -> Result<(LiveActions, Vec<(String, String, u32)>), WeightsFailure> {
    let live = aws.forward_actions(target).await.map_err(|e| match e {
        AwsError::NotFound(what) => WeightsFailure::NotFound(what),
        e => WeightsFailure::Aws(e),
    })?;
    let what = if target.rule_id.is_some() {
        "listener rule"
    } else {
        "listener"
    };
    let groups = live_groups(&live.actions).map_err(|said| {
        WeightsFailure::NoForward(format!(
            "{what} {}: {said}",
            locality_resolve::printable::printable_cut(&target.arn, 160)
        ))
    })?;
    Ok((live, groups))
}

/// One action as compared before and after a write: what AWS returns, without what it never
/// returns or fills in itself (an OIDC secret and `UseExistingClientSecret`; the one-group
/// `TargetGroupArn` AWS describes beside a `ForwardConfig`).
fn comparable(action: &Action) -> String {
    let mut action = action.clone();
    if let Some(oidc) = action.authenticate_oidc_config.as_mut() {
        oidc.client_secret = None;
        oidc.use_existing_client_secret = None;
    }
    if action.r#type == Some(ActionTypeEnum::Forward) && action.forward_config.is_some() {
        action.target_group_arn = None;
    }
    format!("{action:?}")
}

/// Sets the forward's weights (`weights`: a group's name or ARN → weight; groups not named keep
/// theirs) and returns the live weights by group name afterwards.
///
/// # Errors
/// See [`WeightsFailure`]. Nothing is written unless the weights fit the live action.
pub async fn set_weights(
    aws: &Aws,
    target: &Target,
    weights: &BTreeMap<String, u32>,
) -> Result<BTreeMap<String, u32>, WeightsFailure> {
    let _one_writer = crate::provider::write_lock::hold(format!("elbv2 {}", target.listener_arn)).await;
    let (live, groups) = read_groups(aws, target).await?;
    let asked: BTreeMap<String, Option<i128>> =
        weights.iter().map(|(k, w)| (k.clone(), Some(i128::from(*w)))).collect();
    let planned = plan_weights(&asked, &groups).map_err(WeightsFailure::Refused)?;
    let before: BTreeMap<String, u32> = groups.iter().map(|(_, arn, w)| (arn.clone(), *w)).collect();
    if planned == before {
        return Ok(by_name(&groups));
    }
    let written = rewrite(&live.actions, &planned).map_err(WeightsFailure::NoForward)?;
    let wanted: BTreeMap<String, u32> = groups
        .iter()
        .map(|(name, arn, _)| (name.clone(), planned.get(arn).copied().unwrap_or(0)))
        .collect();
    let outcome = aws.write_actions(target, live.default_rule, written.clone()).await;
    // Read again: the only way to see what the load balancer holds now (and, after a write whose
    // answer was lost, whether it was applied).
    let (after, after_groups) = match (outcome, read_groups(aws, target).await) {
        (Ok(()), Ok(read)) => read,
        (Err(AwsError::Unconfirmed(e)), Ok(read)) if by_name(&read.1) != wanted => {
            return Err(WeightsFailure::Aws(AwsError::Unconfirmed(format!(
                "{e}; the weights read afterwards are {} (the write did not land)",
                show(&by_name(&read.1))
            ))))
        }
        (Err(AwsError::Unconfirmed(_)), Ok(read)) => read,
        (Err(e), _) => return Err(WeightsFailure::Aws(e)),
        (Ok(()), Err(e)) => return Err(e),
    };
    let now = by_name(&after_groups);
    let others_same = written.len() == after.actions.len()
        && written
            .iter()
            .zip(&after.actions)
            .all(|(a, b)| a.r#type == Some(ActionTypeEnum::Forward) || comparable(a) == comparable(b));
    let forward_same = written
        .iter()
        .zip(&after.actions)
        .filter(|(a, _)| a.r#type == Some(ActionTypeEnum::Forward))
        .all(|(a, b)| {
            let stickiness = |x: &Action| {
                format!(
                    "{:?}",
                    x.forward_config
                        .as_ref()
                        .and_then(|f| f.target_group_stickiness_config.clone())
                )
            };
            stickiness(a) == stickiness(b) && a.order == b.order
        });
    if now != wanted || !others_same || !forward_same {
        let mut said = Vec::new();
        if now != wanted {
            said.push(format!(
                "its weights are now {}, not {} as written",
                show(&now),
                show(&wanted)
            ));
        }
        if !others_same || !forward_same {
            said.push(format!(
                "its actions changed beside the weights (now: {})",
                after
                    .actions
                    .iter()
                    .map(|a| format!(
                        "{}{}",
                        a.r#type.as_ref().map_or("?", |t| t.as_str()),
                        a.order.map(|o| format!(" (order {o})")).unwrap_or_default()
                    ))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        return Err(WeightsFailure::ChangedSince {
            said: format!(
                "{}: the action list read after the write is not the one written, so someone else changed it meanwhile: {}. It was not written again; see who else writes this listener (CodeDeploy, ECS, the console, another configuration) before the next apply",
                locality_resolve::printable::printable_cut(&target.arn, 160),
                said.join("; ")
            ),
            live: now,
        });
    }
    Ok(now)
}
