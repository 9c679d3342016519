//! The parts of an Elastic Load Balancing v2 forward action that `locality_lb_forward_weights`
//! and `locality_shift_lb_weights` read and check before any call (issue 63): the target (a
//! listener's default action, or an ALB listener rule) from its ARN, target groups named by name
//! or ARN as one, and the weights AWS takes (whole numbers 0–999, at most 5 groups, not every
//! group at 0). Pure: no SDK type, so that the plan's checks and their sentences are tested
//! alone.
//!
//! Work in progress on branch `wip/issue-63-lb-weights`: not wired into the provider yet.

use std::collections::BTreeMap;

/// The largest weight a target group of a forward action takes (ALB and NLB: 0–999).
pub const MAX_WEIGHT: u32 = 999;

/// The most target groups one forward action takes.
pub const MAX_GROUPS: usize = 5;

/// Where the weights live: a listener's default action, or a listener rule's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The whole ARN, as given.
    pub arn: String,
    /// `aws`, `aws-cn`, `aws-us-gov`.
    pub partition: String,
    /// The region in the ARN (it must match the provider's `aws.region`).
    pub region: String,
    /// The account.
    pub account: String,
    /// `app` (ALB) or `net` (NLB).
    pub kind: LoadBalancerKind,
    /// The load balancer's name.
    pub load_balancer: String,
    /// The listener's ARN (the target's own for a listener; the rule's listener for a rule).
    pub listener_arn: String,
    /// A rule's id, when the target is a rule.
    pub rule_id: Option<String>,
}

/// The kind of load balancer an ARN names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadBalancerKind {
    /// An Application Load Balancer (`app`).
    Application,
    /// A Network Load Balancer (`net`).
    Network,
}

/// Whether `text` is an id as ELB writes them (hexadecimal digits).
fn is_id(text: &str) -> bool {
    (1..=32).contains(&text.len()) && text.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Whether `text` is a load balancer's or target group's name (1–32 letters, digits and `-`,
/// not starting or ending with `-`).
fn is_name(text: &str) -> bool {
    (1..=32).contains(&text.len())
        && text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        && !text.starts_with('-')
        && !text.ends_with('-')
}

/// The account, region and partition of `arn:PARTITION:elasticloadbalancing:REGION:ACCOUNT:REST`,
/// and REST.
fn elb_arn(arn: &str) -> Option<(&str, &str, &str, &str)> {
    let mut parts = arn.splitn(6, ':');
    let (prefix, partition, service, region, account, rest) = (
        parts.next()?,
        parts.next()?,
        parts.next()?,
        parts.next()?,
        parts.next()?,
        parts.next()?,
    );
    let region_ok = !region.is_empty()
        && region
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    let account_ok = account.len() == 12 && account.bytes().all(|b| b.is_ascii_digit());
    (prefix == "arn"
        && matches!(partition, "aws" | "aws-cn" | "aws-us-gov")
        && service == "elasticloadbalancing"
        && region_ok
        && account_ok)
        .then_some((partition, region, account, rest))
}

impl Target {
    /// The target a `listener_arn` or a `rule_arn` names.
    ///
    /// # Errors
    /// A sentence naming `attribute` and the form it takes.
    pub fn parse(attribute: &str, arn: &str) -> Result<Target, String> {
        let rule = attribute == "rule_arn";
        let form = if rule {
            "arn:aws:elasticloadbalancing:REGION:ACCOUNT:listener-rule/app/LOAD_BALANCER/ID/LISTENER_ID/RULE_ID (an Application Load Balancer's rule)"
        } else {
            "arn:aws:elasticloadbalancing:REGION:ACCOUNT:listener/app|net/LOAD_BALANCER/ID/LISTENER_ID"
        };
        let refuse = || {
            format!(
                "{attribute} \"{}\" is not a listener{} ARN: give {form}",
                locality_resolve::printable::printable_cut(arn, 120),
                if rule { " rule" } else { "" }
            )
        };
        let (partition, region, account, rest) = elb_arn(arn).ok_or_else(refuse)?;
        let segments: Vec<&str> = rest.split('/').collect();
        let (resource, kind, name, lb_id, listener_id, rule_id) = match segments.as_slice() {
            ["listener", kind, name, lb_id, listener_id] if !rule => (*kind, *kind, *name, *lb_id, *listener_id, None),
            ["listener-rule", kind, name, lb_id, listener_id, rule_id] if rule => {
                (*kind, *kind, *name, *lb_id, *listener_id, Some(*rule_id))
            }
            _ => return Err(refuse()),
        };
        let kind = match (resource, kind) {
            (_, "app") => LoadBalancerKind::Application,
            // NLBs have no listener rules.
            (_, "net") if !rule => LoadBalancerKind::Network,
            _ => return Err(refuse()),
        };
        if !is_name(name) || !is_id(lb_id) || !is_id(listener_id) || rule_id.is_some_and(|r| !is_id(r)) {
            return Err(refuse());
        }
        Ok(Target {
            arn: arn.to_string(),
            partition: partition.to_string(),
            region: region.to_string(),
            account: account.to_string(),
            kind,
            load_balancer: name.to_string(),
            listener_arn: format!(
                "arn:{partition}:elasticloadbalancing:{region}:{account}:listener/{}/{name}/{lb_id}/{listener_id}",
                if kind == LoadBalancerKind::Network {
                    "net"
                } else {
                    "app"
                }
            ),
            rule_id: rule_id.map(str::to_string),
        })
    }

    /// Checks the ARN's region against the provider's.
    ///
    /// # Errors
    /// A sentence naming both.
    pub fn check_region(&self, provider_region: &str) -> Result<(), String> {
        if self.region == provider_region {
            return Ok(());
        }
        Err(format!(
            "{} is in region {}, and the provider's aws.region is {}: set aws.region to {} (a provider alias for that region)",
            locality_resolve::printable::printable_cut(&self.arn, 120),
            self.region,
            locality_resolve::printable::printable_cut(provider_region, 40),
            self.region
        ))
    }
}

/// A target group's name, from its name or its ARN
/// (`arn:…:elasticloadbalancing:REGION:ACCOUNT:targetgroup/NAME/ID`): a configuration may name
/// a group either way, and the two are the same group. `None` for anything else.
pub fn group_name(text: &str) -> Option<&str> {
    if let Some((_, _, _, rest)) = elb_arn(text) {
        let mut segments = rest.split('/');
        let (resource, name, id) = (segments.next()?, segments.next()?, segments.next()?);
        return (resource == "targetgroup" && is_name(name) && is_id(id) && segments.next().is_none()).then_some(name);
    }
    is_name(text).then_some(text)
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

#[cfg(test)]
mod tests {
    use super::*;

    const LISTENER: &str =
        "arn:aws:elasticloadbalancing:ap-northeast-1:123456789012:listener/app/web/50dc6c495c0c9188/f2f7dc8efc522ab2";
    const RULE: &str = "arn:aws:elasticloadbalancing:ap-northeast-1:123456789012:listener-rule/app/web/50dc6c495c0c9188/f2f7dc8efc522ab2/9683b2d02a6cabee";
    const NLB: &str =
        "arn:aws:elasticloadbalancing:ap-northeast-1:123456789012:listener/net/edge/50dc6c495c0c9188/f2f7dc8efc522ab2";

    #[test]
    fn listener_and_rule_arns_are_read_and_anything_else_is_refused() {
        let listener = Target::parse("listener_arn", LISTENER).unwrap();
        assert_eq!(
            (listener.kind, listener.region.as_str(), listener.rule_id.as_deref()),
            (LoadBalancerKind::Application, "ap-northeast-1", None)
        );
        assert_eq!(listener.listener_arn, LISTENER);
        let rule = Target::parse("rule_arn", RULE).unwrap();
        assert_eq!(rule.listener_arn, LISTENER);
        assert_eq!(rule.rule_id.as_deref(), Some("9683b2d02a6cabee"));
        assert_eq!(
            Target::parse("listener_arn", NLB).unwrap().kind,
            LoadBalancerKind::Network
        );
        for (attribute, bad) in [
            ("listener_arn", RULE),
            ("rule_arn", LISTENER),
            ("listener_arn", "arn:aws:elasticloadbalancing:ap-northeast-1:123456789012:loadbalancer/app/web/50dc6c495c0c9188"),
            ("listener_arn", "arn:aws:s3:::bucket"),
            ("listener_arn", "web"),
            ("rule_arn", "arn:aws:elasticloadbalancing:ap-northeast-1:123456789012:listener-rule/net/edge/50dc6c495c0c9188/f2f7dc8efc522ab2/9683b2d02a6cabee"),
            ("listener_arn", "arn:aws:elasticloadbalancing:ap-northeast-1:12345:listener/app/web/50dc/f2f7"),
            ("listener_arn", "arn:aws:elasticloadbalancing:ap-northeast-1:123456789012:listener/app/web\n/50dc/f2f7"),
        ] {
            let said = Target::parse(attribute, bad).unwrap_err();
            assert!(said.starts_with(attribute) && said.contains("give arn:aws:elasticloadbalancing:"), "{said}");
            assert!(!said.contains('\n'), "{said}");
        }
        let said = listener.check_region("us-east-1").unwrap_err();
        assert!(
            said.contains("is in region ap-northeast-1, and the provider's aws.region is us-east-1"),
            "{said}"
        );
        assert_eq!(listener.check_region("ap-northeast-1"), Ok(()));
    }

    #[test]
    fn a_group_is_the_same_by_name_or_arn() {
        assert_eq!(group_name("blue"), Some("blue"));
        assert_eq!(
            group_name("arn:aws:elasticloadbalancing:ap-northeast-1:123456789012:targetgroup/blue/73e2d6bc24d8a067"),
            Some("blue")
        );
        assert_eq!(
            group_name("arn:aws:elasticloadbalancing:ap-northeast-1:123456789012:listener/app/web/1/2"),
            None
        );
        assert_eq!(group_name("-blue"), None);
        assert_eq!(group_name(&"x".repeat(33)), None);
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
