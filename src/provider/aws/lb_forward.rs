//! The parts of an Elastic Load Balancing v2 forward action that `locality_lb_forward_weights`
//! and `locality_shift_lb_weights` read and check before any call (issue 63): the target (a
//! listener's default action, or an ALB listener rule) from its ARN, target groups named by name
//! or ARN as one, and the weights AWS takes (whole numbers 0–999, at most 5 groups, not every
//! group at 0), and [`rewrite`], which turns the action list read into the one to send back
//! whole (`ModifyListener`/`ModifyRule` replace the list), changing only the forward's weights.
//! Pure: no call, so that the checks and their sentences are tested alone. The calls are
//! `Aws::forward_actions` and `Aws::write_actions`; one write with its reads is
//! `super::lb_weights::set_weights`.

use std::collections::BTreeMap;

use aws_sdk_elasticloadbalancingv2::types::{Action, ActionTypeEnum, ForwardActionConfig, TargetGroupTuple};

pub use crate::naming::elb::{group_name, LoadBalancerKind, Target, MAX_GROUPS, MAX_WEIGHT};

/// The action list as read, and whether it is a listener's default rule (written through
/// ModifyListener).
#[derive(Debug, Clone)]
pub struct LiveActions {
    /// The actions, in the order AWS gave them.
    pub actions: Vec<Action>,
    /// The rule read is its listener's default rule.
    pub default_rule: bool,
}

/// A refusal of `weights` at plan: which key or value, and what is allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The key of `weights` at fault; `None` for the whole map.
    pub key: Option<String>,
    /// The sentence.
    pub said: String,
}

/// Checks `weights` (key: a group's name or ARN; value: the weight asked for, `None` when not a
/// whole number) against the forward action's live groups (`live`: name → ARN, weight):
/// each weight 0–999, each key a group of the action, at most 5 groups, not every group at 0
/// (those left out keep their live weight). The weights to write, by target group ARN.
///
/// # Errors
/// Every refusal, each naming its key.
pub fn plan_weights(
    weights: &BTreeMap<String, Option<i128>>,
    live: &[(String, String, u32)],
) -> Result<BTreeMap<String, u32>, Vec<Refusal>> {
    let mut refusals = Vec::new();
    let mut out: BTreeMap<String, u32> = live.iter().map(|(_, arn, w)| (arn.clone(), *w)).collect();
    let groups: Vec<&str> = live.iter().map(|(name, _, _)| name.as_str()).collect();
    if live.len() > MAX_GROUPS {
        refusals.push(Refusal {
            key: None,
            said: format!(
                "the forward action has {} target groups; AWS takes at most {MAX_GROUPS}",
                live.len()
            ),
        });
    }
    let mut seen: BTreeMap<&str, &str> = BTreeMap::new();
    for (key, weight) in weights {
        let shown = locality_resolve::printable::printable_cut(key, 120);
        let Some(name) = group_name(key) else {
            refusals.push(Refusal {
                key: Some(key.clone()),
                said: format!(
                    "\"{shown}\" is neither a target group's name (1 to 32 letters, digits and -) nor its ARN (arn:aws:elasticloadbalancing:REGION:ACCOUNT:targetgroup/NAME/ID)"
                ),
            });
            continue;
        };
        if let Some(other) = seen.insert(name, key) {
            refusals.push(Refusal {
                key: Some(key.clone()),
                said: format!(
                    "\"{shown}\" and \"{}\" are the same target group ({name}): give it once",
                    locality_resolve::printable::printable_cut(other, 120)
                ),
            });
            continue;
        }
        let Some((_, arn, _)) = live.iter().find(|(group, _, _)| group == name) else {
            refusals.push(Refusal {
                key: Some(key.clone()),
                said: format!(
                    "target group {name} is not in the forward action (its groups: {}); a weight only moves traffic between the groups the action already has",
                    groups.join(", ")
                ),
            });
            continue;
        };
        match weight.and_then(|w| u32::try_from(w).ok()).filter(|w| *w <= MAX_WEIGHT) {
            Some(w) => {
                out.insert(arn.clone(), w);
            }
            None => refusals.push(Refusal {
                key: Some(key.clone()),
                said: format!("the weight of {name} must be a whole number from 0 to {MAX_WEIGHT}"),
            }),
        }
    }
    if refusals.is_empty() && !out.is_empty() && out.values().all(|w| *w == 0) {
        refusals.push(Refusal {
            key: None,
            said: format!(
                "every target group of the forward action would be at 0 ({}): at least one must take traffic",
                groups.join(", ")
            ),
        });
    }
    if refusals.is_empty() {
        Ok(out)
    } else {
        Err(refusals)
    }
}

/// The forward action of `actions` (exactly one).
///
/// # Errors
/// None or several, said with what the list holds.
fn forward_of(actions: &[Action]) -> Result<usize, String> {
    let forwards: Vec<usize> = actions
        .iter()
        .enumerate()
        .filter(|(_, a)| a.r#type == Some(ActionTypeEnum::Forward))
        .map(|(i, _)| i)
        .collect();
    match forwards.as_slice() {
        [one] => Ok(*one),
        [] => Err(format!(
            "its actions hold no forward action ({}): weights belong to a forward to target groups",
            actions
                .iter()
                .map(|a| a.r#type.as_ref().map_or("?", |t| t.as_str()))
                .collect::<Vec<_>>()
                .join(", ")
        )),
        _ => Err("its actions hold more than one forward action".to_string()),
    }
}

/// The forward action's target groups as they are live: (name, ARN, weight). A forward to one
/// `TargetGroupArn` without a `ForwardConfig` is that group at weight 1; a tuple without a
/// weight is at 1, as AWS takes it.
///
/// # Errors
/// No forward action, or a group ARN that is not one.
pub fn live_groups(actions: &[Action]) -> Result<Vec<(String, String, u32)>, String> {
    let forward = &actions[forward_of(actions)?];
    let tuples: Vec<(String, u32)> = match forward.forward_config.as_ref().and_then(|f| f.target_groups.as_ref()) {
        Some(groups) if !groups.is_empty() => groups
            .iter()
            .map(|t| {
                (
                    t.target_group_arn.clone().unwrap_or_default(),
                    t.weight.map_or(1, |w| u32::try_from(w).unwrap_or(0)),
                )
            })
            .collect(),
        _ => forward
            .target_group_arn
            .clone()
            .map(|arn| vec![(arn, 1)])
            .unwrap_or_default(),
    };
    tuples
        .into_iter()
        .map(|(arn, weight)| match group_name(&arn) {
            Some(name) if arn.starts_with("arn:") => Ok((name.to_string(), arn.clone(), weight)),
            _ => Err(format!(
                "the forward action names \"{}\", which is not a target group ARN",
                locality_resolve::printable::printable_cut(&arn, 120)
            )),
        })
        .collect()
}

/// The action list to write back: `actions` as read, with the forward's weights set from
/// `weights` (target group ARN → weight; a group not in it keeps its weight) and nothing else
/// changed: every other action and every `Order`, the forward's stickiness, an
/// `authenticate-cognito` as it is, and an `authenticate-oidc` re-sent with
/// `UseExistingClientSecret` and no secret (AWS never returns it; sending one would replace it).
/// A forward given as one `TargetGroupArn` is written as its `ForwardConfig`.
///
/// # Errors
/// No forward action.
pub fn rewrite(actions: &[Action], weights: &BTreeMap<String, u32>) -> Result<Vec<Action>, String> {
    let at = forward_of(actions)?;
    let live = live_groups(actions)?;
    let mut out = actions.to_vec();
    for action in &mut out {
        if let Some(oidc) = action.authenticate_oidc_config.as_mut() {
            oidc.client_secret = None;
            oidc.use_existing_client_secret = Some(true);
        }
    }
    let forward = &mut out[at];
    let stickiness = forward
        .forward_config
        .as_ref()
        .and_then(|f| f.target_group_stickiness_config.clone());
    let groups: Vec<TargetGroupTuple> = live
        .iter()
        .map(|(_, arn, weight)| {
            let weight = weights.get(arn).copied().unwrap_or(*weight);
            TargetGroupTuple::builder()
                .target_group_arn(arn)
                .weight(i32::try_from(weight).unwrap_or(i32::MAX))
                .build()
        })
        .collect();
    forward.target_group_arn = None;
    forward.forward_config = Some(
        ForwardActionConfig::builder()
            .set_target_groups(Some(groups))
            .set_target_group_stickiness_config(stickiness)
            .build(),
    );
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_elasticloadbalancingv2::types::{
        AuthenticateOidcActionConfig, FixedResponseActionConfig, TargetGroupStickinessConfig,
    };

    fn tg(name: &str) -> String {
        format!("arn:aws:elasticloadbalancing:ap-northeast-1:123456789012:targetgroup/{name}/73e2d6bc24d8a067")
    }

    /// A rule's actions as AWS describes them: an OIDC login first (its secret never returned),
    /// then the weighted forward with stickiness; and a fixed response elsewhere.
    fn described() -> Vec<Action> {
        vec![
            Action::builder()
                .r#type(ActionTypeEnum::AuthenticateOidc)
                .order(1)
                .authenticate_oidc_config(
                    AuthenticateOidcActionConfig::builder()
                        .issuer("https://idp.example")
                        .authorization_endpoint("https://idp.example/auth")
                        .token_endpoint("https://idp.example/token")
                        .user_info_endpoint("https://idp.example/userinfo")
                        .client_id("locality")
                        .build(),
                )
                .build(),
            Action::builder()
                .r#type(ActionTypeEnum::Forward)
                .order(2)
                .forward_config(
                    ForwardActionConfig::builder()
                        .target_groups(
                            TargetGroupTuple::builder()
                                .target_group_arn(tg("blue"))
                                .weight(90)
                                .build(),
                        )
                        .target_groups(
                            TargetGroupTuple::builder()
                                .target_group_arn(tg("green"))
                                .weight(10)
                                .build(),
                        )
                        .target_group_stickiness_config(
                            TargetGroupStickinessConfig::builder()
                                .enabled(true)
                                .duration_seconds(300)
                                .build(),
                        )
                        .build(),
                )
                .build(),
        ]
    }

    #[test]
    fn the_rewrite_changes_the_weights_and_nothing_else() {
        let actions = described();
        assert_eq!(
            live_groups(&actions).unwrap(),
            [
                ("blue".to_string(), tg("blue"), 90),
                ("green".to_string(), tg("green"), 10)
            ]
        );
        let written = rewrite(&actions, &BTreeMap::from([(tg("green"), 100), (tg("blue"), 0)])).unwrap();
        assert_eq!(written.len(), 2);
        // The login: the same, re-sent with the existing secret and none of its own.
        let oidc = written[0].authenticate_oidc_config.as_ref().unwrap();
        assert_eq!(
            (oidc.use_existing_client_secret, oidc.client_secret.as_deref()),
            (Some(true), None)
        );
        assert_eq!(oidc.client_id.as_deref(), Some("locality"));
        assert_eq!(written[0].order, Some(1));
        // The forward: new weights, same groups in the same order, the stickiness kept.
        let forward = written[1].forward_config.as_ref().unwrap();
        let weights: Vec<(Option<&str>, Option<i32>)> = forward
            .target_groups()
            .iter()
            .map(|t| (t.target_group_arn(), t.weight()))
            .collect();
        assert_eq!(
            weights,
            [
                (Some(tg("blue").as_str()), Some(0)),
                (Some(tg("green").as_str()), Some(100))
            ]
        );
        let stickiness = forward.target_group_stickiness_config().unwrap();
        assert_eq!(
            (stickiness.enabled(), stickiness.duration_seconds()),
            (Some(true), Some(300))
        );
        assert_eq!(written[1].order, Some(2));
        // A group not named keeps its weight.
        let kept = rewrite(&actions, &BTreeMap::from([(tg("blue"), 50)])).unwrap();
        let w: Vec<Option<i32>> = kept[1]
            .forward_config
            .as_ref()
            .unwrap()
            .target_groups()
            .iter()
            .map(|t| t.weight())
            .collect();
        assert_eq!(w, [Some(50), Some(10)]);
    }

    #[test]
    fn a_plain_forward_is_one_group_and_a_list_without_one_is_refused() {
        let plain = vec![Action::builder()
            .r#type(ActionTypeEnum::Forward)
            .target_group_arn(tg("blue"))
            .build()];
        assert_eq!(live_groups(&plain).unwrap(), [("blue".to_string(), tg("blue"), 1)]);
        let written = rewrite(&plain, &BTreeMap::from([(tg("blue"), 7)])).unwrap();
        assert_eq!(written[0].target_group_arn, None);
        assert_eq!(
            written[0].forward_config.as_ref().unwrap().target_groups()[0].weight(),
            Some(7)
        );
        let fixed = vec![Action::builder()
            .r#type(ActionTypeEnum::FixedResponse)
            .fixed_response_config(FixedResponseActionConfig::builder().status_code("503").build())
            .build()];
        let said = live_groups(&fixed).unwrap_err();
        assert!(said.contains("no forward action (fixed-response)"), "{said}");
    }

    fn live() -> Vec<(String, String, u32)> {
        ["blue", "green", "canary"]
            .iter()
            .zip([90, 10, 0])
            .map(|(name, w)| {
                (
                    name.to_string(),
                    format!(
                        "arn:aws:elasticloadbalancing:ap-northeast-1:123456789012:targetgroup/{name}/73e2d6bc24d8a067"
                    ),
                    w,
                )
            })
            .collect()
    }

    #[test]
    fn weights_are_checked_against_the_live_action_and_each_refusal_names_its_key() {
        let weights = |pairs: &[(&str, Option<i128>)]| -> BTreeMap<String, Option<i128>> {
            pairs.iter().map(|(k, w)| (k.to_string(), *w)).collect()
        };
        // A group left out keeps its live weight; a group named by ARN is the same group.
        let planned = plan_weights(
            &weights(&[
                ("blue", Some(0)),
                (
                    "arn:aws:elasticloadbalancing:ap-northeast-1:123456789012:targetgroup/green/73e2d6bc24d8a067",
                    Some(100),
                ),
            ]),
            &live(),
        )
        .unwrap();
        assert_eq!(planned.values().copied().collect::<Vec<_>>(), [0, 0, 100]);
        let refused = plan_weights(
            &weights(&[
                ("blue", Some(1000)),
                ("purple", Some(1)),
                ("green", Some(-1)),
                ("a b", Some(1)),
            ]),
            &live(),
        )
        .unwrap_err();
        let said: Vec<(Option<&str>, &str)> = refused.iter().map(|r| (r.key.as_deref(), r.said.as_str())).collect();
        assert!(
            said.contains(&(Some("blue"), "the weight of blue must be a whole number from 0 to 999")),
            "{said:?}"
        );
        assert!(
            said.contains(&(
                Some("green"),
                "the weight of green must be a whole number from 0 to 999"
            )),
            "{said:?}"
        );
        assert!(
            said.iter().any(|(k, s)| *k == Some("purple")
                && s.contains("is not in the forward action (its groups: blue, green, canary)")),
            "{said:?}"
        );
        assert!(
            said.iter()
                .any(|(k, s)| *k == Some("a b") && s.contains("is neither a target group's name")),
            "{said:?}"
        );
        let all_zero = plan_weights(&weights(&[("blue", Some(0)), ("green", Some(0))]), &live()).unwrap_err();
        assert!(
            all_zero[0]
                .said
                .starts_with("every target group of the forward action would be at 0"),
            "{all_zero:?}"
        );
        let twice = plan_weights(
            &weights(&[
                ("blue", Some(1)),
                (
                    "arn:aws:elasticloadbalancing:ap-northeast-1:123456789012:targetgroup/blue/73e2d6bc24d8a067",
                    Some(2),
                ),
            ]),
            &live(),
        )
        .unwrap_err();
        assert!(twice[0].said.contains("are the same target group (blue)"), "{twice:?}");
        let mut six = live();
        for n in 0..3 {
            six.push((
                format!("g{n}"),
                format!("arn:aws:elasticloadbalancing:ap-northeast-1:123456789012:targetgroup/g{n}/1"),
                1,
            ));
        }
        let too_many = plan_weights(&weights(&[("blue", Some(1))]), &six).unwrap_err();
        assert!(
            too_many[0].said.contains("has 6 target groups; AWS takes at most 5"),
            "{too_many:?}"
        );
    }
}
