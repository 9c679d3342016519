//! Elastic Load Balancing v2 names and ARNs, as `locality_lb_forward_weights`, its action and
//! `locality gen`'s AWS forwards read them: a listener's or a listener rule's ARN (ALB or NLB),
//! a target group named by its name or its ARN (the same group), and the bounds AWS puts on a
//! forward action (weights 0–999, at most 5 groups). Pure, and below both the provider and the
//! generator.

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
}
