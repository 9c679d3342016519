//! The AWS part of the spec (issue 63): a `forward "NAME"` block describes one weighted forward
//! of an AWS load balancer — a new listener on a load balancer, or a new rule on an Application
//! Load Balancer's listener — its target groups, which of them are active (or their weights),
//! the stickiness, and who owns the weights. It becomes `aws_lb_target_group`s, the
//! `aws_lb_listener` or `aws_lb_listener_rule` with its weighted `forward`, and, when the weights
//! are owned elsewhere, `lifecycle { ignore_changes = [...forward[0].target_group] }` on it
//! plus a `locality_lb_forward_weights` (when locality owns them).
//!
//! Every argument written is one that hashicorp/aws 6.x has (`tests/common/aws_provider.rs` is
//! the schema subset `terraform validate` checks the output against).

use std::collections::HashMap;
use std::ops::Range;
use std::time::Duration;

use super::diagnostic::{suggest, Level, SpecDiagnostic};
use super::hcl::{Block, Expr};
use super::names::label as ident;
use super::spec::{attributes, describe, one_label, required, string, unknown};
use super::tree::{Literal, Node, Spanned};
use crate::naming::elb::{LoadBalancerKind, Target, MAX_GROUPS, MAX_WEIGHT};

/// The weight `active` splits between the active target groups.
pub const TOTAL_WEIGHT: u32 = 100;

/// Longest target group name AWS takes.
pub const MAX_TARGET_GROUP_NAME: usize = 32;

/// The longest stickiness AWS takes (7 days).
pub const MAX_STICKINESS: Duration = Duration::from_secs(604_800);

/// Who sets the forward's weights after it is created.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WeightsOwner {
    /// The listener or rule itself (the weights follow the spec; no `ignore_changes`).
    Listener,
    /// A `locality_lb_forward_weights` (the listener ignores its target groups).
    Locality,
    /// CodeDeploy's blue/green deployments (the listener ignores its target groups; nothing else).
    CodeDeploy,
    /// ECS blue/green deployments (the same).
    Ecs,
}

/// The values `weights_owner` takes.
pub const WEIGHTS_OWNERS: [&str; 4] = ["listener", "locality_lb_forward_weights", "codedeploy", "ecs"];

/// Where the forward lives.
#[derive(Debug, Clone, PartialEq)]
pub enum Placement {
    /// A new listener on a load balancer.
    Listener {
        /// The load balancer's ARN.
        load_balancer_arn: String,
        /// ALB or NLB.
        kind: LoadBalancerKind,
        /// The listener's port.
        port: u32,
        /// The listener's protocol.
        protocol: String,
        /// The certificate of an HTTPS or TLS listener.
        certificate_arn: Option<String>,
    },
    /// A new rule on an existing ALB listener.
    Rule {
        /// The listener's ARN.
        listener_arn: String,
        /// The rule's priority (1–50000).
        priority: u32,
        /// `path-pattern` values.
        path_patterns: Vec<String>,
        /// `host-header` values.
        host_headers: Vec<String>,
    },
}

/// One target group of a forward.
#[derive(Debug, Clone, PartialEq)]
pub struct TargetGroup {
    /// The block label (e.g. `blue`).
    pub name: String,
    /// The port targets listen on.
    pub port: u32,
    /// The protocol to the targets.
    pub protocol: String,
    /// `instance`, `ip`, `lambda` or `alb`; `None`: AWS's default (`instance`).
    pub target_type: Option<String>,
    /// Its weight, from `active` or its own `weight`.
    pub weight: u32,
}

/// One weighted forward.
#[derive(Debug, Clone, PartialEq)]
pub struct Forward {
    /// The block label; prefix of every generated name.
    pub name: String,
    /// The listener or rule.
    pub placement: Placement,
    /// The target groups' VPC.
    pub vpc_id: String,
    /// Target groups in spec order.
    pub groups: Vec<TargetGroup>,
    /// How the weights were given, for the comment: `active: blue` or `weights`.
    pub weights_from: String,
    /// Stickiness (ALB), if any.
    pub stickiness: Option<Duration>,
    /// Who owns the weights.
    pub owner: WeightsOwner,
}

const FORWARD_ATTRS: [&str; 12] = [
    "load_balancer_arn",
    "port",
    "protocol",
    "certificate_arn",
    "listener_arn",
    "priority",
    "path_patterns",
    "host_headers",
    "vpc_id",
    "active",
    "stickiness",
    "weights_owner",
];
const FORWARD_BLOCKS: [&str; 1] = ["target_group"];
const GROUP_ATTRS: [&str; 4] = ["port", "protocol", "target_type", "weight"];
const ALB_PROTOCOLS: [&str; 2] = ["HTTP", "HTTPS"];
const NLB_PROTOCOLS: [&str; 4] = ["TCP", "TLS", "UDP", "TCP_UDP"];
const TARGET_TYPES: [&str; 4] = ["instance", "ip", "lambda", "alb"];

/// The name of a target group (`<forward>-<group>`).
pub fn target_group_name(forward: &str, group: &str) -> String {
    format!("{forward}-{group}")
}

fn is_aws_name(text: &str) -> bool {
    !text.is_empty()
        && text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        && !text.starts_with('-')
        && !text.ends_with('-')
}

fn number(value: &Spanned<Literal>, name: &str, min: u32, max: u32, d: &mut Vec<SpecDiagnostic>) -> Option<u32> {
    let parsed = match &value.value {
        Literal::Num(n) => n.parse::<u32>().ok().filter(|x| (min..=max).contains(x)),
        _ => None,
    };
    if parsed.is_none() {
        d.push(SpecDiagnostic::error(
            value.span.clone(),
            format!("`{name}` must be a whole number from {min} to {max}"),
        ));
    }
    parsed
}

fn strings(value: &Spanned<Literal>, name: &str, d: &mut Vec<SpecDiagnostic>) -> Option<Vec<String>> {
    let Literal::List(items) = &value.value else {
        d.push(SpecDiagnostic::error(
            value.span.clone(),
            format!("`{name}` must be a list of strings, not {}", describe(&value.value)),
        ));
        return None;
    };
    let mut out = Vec::new();
    for item in items {
        match &item.value {
            Literal::Str(s) if !s.is_empty() => out.push(s.clone()),
            other => {
                d.push(SpecDiagnostic::error(
                    item.span.clone(),
                    format!("`{name}` holds non-empty strings, not {}", describe(other)),
                ));
                return None;
            }
        }
    }
    if out.is_empty() {
        d.push(SpecDiagnostic::error(value.span.clone(), format!("`{name}` is empty")));
        return None;
    }
    Some(out)
}

fn one_of(value: &Spanned<Literal>, name: &str, allowed: &[&str], d: &mut Vec<SpecDiagnostic>) -> Option<String> {
    let text = string(value, name, d)?;
    if allowed.contains(&text) {
        return Some(text.to_string());
    }
    let mut diag = SpecDiagnostic::error(
        value.span.clone(),
        format!("`{name}` = \"{text}\" is not supported here"),
    );
    diag.help = Some(match suggest(text, allowed.iter().copied()) {
        Some(s) => format!("did you mean \"{s}\"? allowed: \"{}\"", allowed.join("\", \"")),
        None => format!("allowed: \"{}\"", allowed.join("\", \"")),
    });
    d.push(diag);
    None
}

/// A load balancer's ARN: `arn:PARTITION:elasticloadbalancing:REGION:ACCOUNT:loadbalancer/app|net/NAME/ID`.
fn load_balancer_kind(arn: &str) -> Option<LoadBalancerKind> {
    // The listener form shares everything but the resource: reuse its check.
    let listener = arn.replacen(":loadbalancer/", ":listener/", 1) + "/0";
    if !arn.contains(":loadbalancer/") {
        return None;
    }
    Target::parse("listener_arn", &listener).ok().map(|t| t.kind)
}

/// Lowers one `forward` block.
pub fn lower_forward(block: &Node, label: &Spanned<String>, d: &mut Vec<SpecDiagnostic>) -> Option<Forward> {
    let errors_before = d.iter().filter(|x| x.level == Level::Error).count();
    let place = format!("in forward \"{}\"", label.value);
    if !is_aws_name(&label.value) {
        d.push(
            SpecDiagnostic::error(
                label.span.clone(),
                format!("forward name \"{}\" is not usable in AWS names", label.value),
            )
            .help("use letters, digits and hyphens, not starting or ending with a hyphen (it prefixes every target group's name)"),
        );
    }
    let attrs = attributes(block, &FORWARD_ATTRS, &FORWARD_BLOCKS, &place, d);
    let placement = lower_placement(&attrs, block, label, d);
    let kind = match &placement {
        Some(Placement::Listener { kind, .. }) => Some(*kind),
        Some(Placement::Rule { .. }) => Some(LoadBalancerKind::Application),
        None => None,
    };
    let vpc_id = required(
        &attrs,
        "vpc_id",
        block,
        &format!("forward \"{}\"", label.value),
        "add `vpc_id = \"vpc-0123456789abcdef0\"` (the target groups' VPC)",
        d,
    )
    .and_then(|v| {
        let id = string(v, "vpc_id", d)?;
        let ok = id
            .strip_prefix("vpc-")
            .is_some_and(|hex| (8..=17).contains(&hex.len()) && hex.bytes().all(|b| b.is_ascii_hexdigit()));
        if !ok {
            d.push(
                SpecDiagnostic::error(v.span.clone(), format!("\"{id}\" is not a VPC ID"))
                    .help("a VPC ID is `vpc-` and 8 or 17 hexadecimal digits"),
            );
            return None;
        }
        Some(id.to_string())
    });
    let owner = match attrs.get("weights_owner") {
        None => Some(WeightsOwner::Listener),
        Some(v) => one_of(v, "weights_owner", &WEIGHTS_OWNERS, d).map(|o| match o.as_str() {
            "locality_lb_forward_weights" => WeightsOwner::Locality,
            "codedeploy" => WeightsOwner::CodeDeploy,
            "ecs" => WeightsOwner::Ecs,
            _ => WeightsOwner::Listener,
        }),
    };
    let stickiness = match attrs.get("stickiness") {
        None => None,
        Some(v) => {
            let text = string(v, "stickiness", d);
            let parsed = text.and_then(|text| {
                humantime::parse_duration(text)
                    .ok()
                    .filter(|t| t.subsec_nanos() == 0 && *t >= Duration::from_secs(1) && *t <= MAX_STICKINESS)
            });
            if text.is_some() && parsed.is_none() {
                d.push(
                    SpecDiagnostic::error(
                        v.span.clone(),
                        "`stickiness` must be a whole number of seconds from 1s to 7d",
                    )
                    .help("e.g. `stickiness = \"5m\"`"),
                );
            }
            if kind == Some(LoadBalancerKind::Network) {
                d.push(
                    SpecDiagnostic::error(
                        v.span.clone(),
                        "a Network Load Balancer's forward takes no stickiness duration",
                    )
                    .help("remove `stickiness`: hashicorp/aws requires `stickiness.duration`, which an NLB forward does not take (terraform-provider-aws #45164)"),
                );
            }
            parsed
        }
    };

    // Target groups.
    let mut groups: Vec<(TargetGroup, Range<usize>, Option<u32>)> = Vec::new();
    let mut seen: HashMap<String, Range<usize>> = HashMap::new();
    for child in &block.blocks {
        if child.ident.value != "target_group" {
            d.push(unknown(
                &child.ident.value,
                child.ident.span.clone(),
                &place,
                &FORWARD_ATTRS,
                &FORWARD_BLOCKS,
            ));
            continue;
        }
        let Some(group_label) = one_label(child, d) else {
            continue;
        };
        if seen
            .insert(group_label.value.clone(), group_label.span.clone())
            .is_some()
        {
            d.push(SpecDiagnostic::error(
                group_label.span.clone(),
                format!("duplicate target group \"{}\" {place}", group_label.value),
            ));
            continue;
        }
        let name = target_group_name(&label.value, &group_label.value);
        if !is_aws_name(&group_label.value) || name.len() > MAX_TARGET_GROUP_NAME {
            d.push(
                SpecDiagnostic::error(
                    group_label.span.clone(),
                    format!(
                        "the target group's name \"{name}\" is not one AWS takes ({} characters)",
                        name.chars().count()
                    ),
                )
                .help(format!(
                    "`<forward>-<target group>` must be letters, digits and hyphens, at most {MAX_TARGET_GROUP_NAME} characters"
                )),
            );
        }
        let group_place = format!("in target_group \"{}\"", group_label.value);
        let group_attrs = attributes(child, &GROUP_ATTRS, &[], &group_place, d);
        let port = required(
            &group_attrs,
            "port",
            child,
            &format!("target_group \"{}\"", group_label.value),
            "add `port = 8080` (the port the targets listen on)",
            d,
        )
        .and_then(|v| number(v, "port", 1, 65535, d));
        let protocols: &[&str] = if kind == Some(LoadBalancerKind::Network) {
            &NLB_PROTOCOLS
        } else {
            &ALB_PROTOCOLS
        };
        let protocol = match group_attrs.get("protocol") {
            None => Some(protocols[0].to_string()),
            Some(v) => one_of(v, "protocol", protocols, d),
        };
        let target_type = match group_attrs.get("target_type") {
            None => Some(None),
            Some(v) => one_of(v, "target_type", &TARGET_TYPES, d).map(Some),
        };
        let weight = match group_attrs.get("weight") {
            None => None,
            Some(v) => number(v, "weight", 0, MAX_WEIGHT, d),
        };
        if let (Some(port), Some(protocol), Some(target_type)) = (port, protocol, target_type) {
            groups.push((
                TargetGroup {
                    name: group_label.value.clone(),
                    port,
                    protocol,
                    target_type,
                    weight: 0,
                },
                group_label.span.clone(),
                weight,
            ));
        }
    }
    if seen.is_empty() {
        d.push(
            SpecDiagnostic::error(
                label.span.clone(),
                format!("forward \"{}\" has no target group", label.value),
            )
            .help("add `target_group \"blue\" { port = 8080 }` blocks"),
        );
    } else if seen.len() > MAX_GROUPS {
        d.push(SpecDiagnostic::error(
            label.span.clone(),
            format!(
                "forward \"{}\" has {} target groups; a forward action takes at most {MAX_GROUPS}",
                label.value,
                seen.len()
            ),
        ));
    }

    // Weights: `active`, or each group's `weight`.
    let explicit = groups.iter().filter(|(_, _, w)| w.is_some()).count();
    let mut weights_from = String::from("all target groups active");
    match (attrs.get("active"), explicit) {
        (Some(v), n) if n > 0 => {
            d.push(
                SpecDiagnostic::error(
                    v.span.clone(),
                    format!("`active` and target groups' `weight` both given {place}"),
                )
                .help(
                    "give `active` (the groups that share the traffic) or a `weight` in every target group, not both",
                ),
            );
        }
        (None, n) if n > 0 && n < groups.len() => {
            for (group, span, w) in &groups {
                if w.is_none() {
                    d.push(
                        SpecDiagnostic::error(span.clone(), format!("target group \"{}\" has no `weight`", group.name))
                            .help("with weights given, every target group needs one (0 to 999)"),
                    );
                }
            }
        }
        (None, n) if n > 0 => {
            for (group, _, w) in &mut groups {
                group.weight = w.unwrap_or(0);
            }
            weights_from = "each target group's weight".into();
            if groups.iter().all(|(g, _, _)| g.weight == 0) {
                d.push(
                    SpecDiagnostic::error(
                        label.span.clone(),
                        "every target group's weight is 0: nothing would take traffic",
                    )
                    .help("give at least one target group a weight above 0"),
                );
            }
        }
        (active, _) => {
            let names: Vec<String> = groups.iter().map(|(g, _, _)| g.name.clone()).collect();
            let chosen = match active {
                None => Some(names.clone()),
                Some(v) => lower_active(v, &names, &place, d),
            };
            if let Some(chosen) = chosen {
                if active.is_some() {
                    weights_from = format!("active: {}", chosen.join(", "));
                }
                let share = TOTAL_WEIGHT / u32::try_from(chosen.len().max(1)).unwrap_or(1);
                let mut remainder = TOTAL_WEIGHT - share * u32::try_from(chosen.len()).unwrap_or(0);
                for (group, _, _) in &mut groups {
                    group.weight = if chosen.contains(&group.name) {
                        let extra = u32::from(remainder > 0);
                        remainder -= extra;
                        share + extra
                    } else {
                        0
                    };
                }
            }
        }
    }
    let errors_after = d.iter().filter(|x| x.level == Level::Error).count();
    if errors_after > errors_before {
        return None;
    }
    Some(Forward {
        name: label.value.clone(),
        placement: placement?,
        vpc_id: vpc_id?,
        groups: groups.into_iter().map(|(g, _, _)| g).collect(),
        weights_from,
        stickiness,
        owner: owner?,
    })
}

fn lower_active(
    value: &Spanned<Literal>,
    names: &[String],
    place: &str,
    d: &mut Vec<SpecDiagnostic>,
) -> Option<Vec<String>> {
    let listed = strings(value, "active", d)?;
    let mut out = Vec::new();
    let mut ok = true;
    for name in listed {
        if !names.contains(&name) {
            let mut diag = SpecDiagnostic::error(
                value.span.clone(),
                format!("`active` names target group \"{name}\", which is not defined {place}"),
            );
            diag.help = Some(match suggest(&name, names.iter().map(String::as_str)) {
                Some(s) => format!("did you mean \"{s}\"? target groups: {}", names.join(", ")),
                None => format!("target groups: {}", names.join(", ")),
            });
            d.push(diag);
            ok = false;
        } else if !out.contains(&name) {
            out.push(name);
        }
    }
    ok.then_some(out)
}

fn lower_placement(
    attrs: &HashMap<&str, &Spanned<Literal>>,
    block: &Node,
    label: &Spanned<String>,
    d: &mut Vec<SpecDiagnostic>,
) -> Option<Placement> {
    let listener_only = ["port", "protocol", "certificate_arn"];
    let rule_only = ["priority", "path_patterns", "host_headers"];
    match (attrs.get("load_balancer_arn"), attrs.get("listener_arn")) {
        (Some(_), Some(rule)) => {
            d.push(
                SpecDiagnostic::error(rule.span.clone(), "`load_balancer_arn` and `listener_arn` both given").help(
                    "a new listener takes `load_balancer_arn`; a rule on an existing listener takes `listener_arn`",
                ),
            );
            None
        }
        (None, None) => {
            d.push(
                SpecDiagnostic::error(
                    label.span.clone(),
                    format!("forward \"{}\" needs `load_balancer_arn` (a new listener) or `listener_arn` (a rule on an existing ALB listener)", label.value),
                )
                .help("add `load_balancer_arn = aws_lb.web.arn`'s value, with `port` and `protocol`"),
            );
            None
        }
        (Some(lb), None) => {
            for name in rule_only {
                if let Some(v) = attrs.get(name) {
                    d.push(SpecDiagnostic::error(
                        v.span.clone(),
                        format!("`{name}` belongs to a rule (`listener_arn`), not to a new listener"),
                    ));
                }
            }
            let arn = string(lb, "load_balancer_arn", d)?;
            let Some(kind) = load_balancer_kind(arn) else {
                d.push(
                    SpecDiagnostic::error(lb.span.clone(), format!("\"{arn}\" is not a load balancer ARN"))
                        .help("arn:aws:elasticloadbalancing:REGION:ACCOUNT:loadbalancer/app|net/NAME/ID"),
                );
                return None;
            };
            let port = required(
                attrs,
                "port",
                block,
                &format!("forward \"{}\"", label.value),
                "add `port = 443`",
                d,
            )
            .and_then(|v| number(v, "port", 1, 65535, d));
            let protocols: &[&str] = match kind {
                LoadBalancerKind::Application => &ALB_PROTOCOLS,
                LoadBalancerKind::Network => &NLB_PROTOCOLS,
            };
            let protocol = required(
                attrs,
                "protocol",
                block,
                &format!("forward \"{}\"", label.value),
                &format!("add `protocol = \"{}\"`", protocols[0]),
                d,
            )
            .and_then(|v| one_of(v, "protocol", protocols, d));
            let secure = protocol.as_deref().is_some_and(|p| p == "HTTPS" || p == "TLS");
            let certificate_arn = match (attrs.get("certificate_arn"), secure) {
                (Some(v), true) => string(v, "certificate_arn", d).map(str::to_string),
                (Some(v), false) => {
                    d.push(SpecDiagnostic::error(
                        v.span.clone(),
                        "`certificate_arn` is for an HTTPS or TLS listener",
                    ));
                    None
                }
                (None, true) => {
                    let span = protocol_span(attrs, label);
                    d.push(
                        SpecDiagnostic::error(span, "an HTTPS or TLS listener needs `certificate_arn`")
                            .help("add `certificate_arn = \"arn:aws:acm:REGION:ACCOUNT:certificate/ID\"`"),
                    );
                    None
                }
                (None, false) => None,
            };
            Some(Placement::Listener {
                load_balancer_arn: arn.to_string(),
                kind,
                port: port?,
                protocol: protocol?,
                certificate_arn,
            })
        }
        (None, Some(listener)) => {
            for name in listener_only {
                if let Some(v) = attrs.get(name) {
                    d.push(SpecDiagnostic::error(
                        v.span.clone(),
                        format!("`{name}` belongs to a new listener (`load_balancer_arn`), not to a rule"),
                    ));
                }
            }
            let arn = string(listener, "listener_arn", d)?;
            match Target::parse("listener_arn", arn) {
                Ok(target) if target.kind == LoadBalancerKind::Application => {}
                Ok(_) => {
                    d.push(
                        SpecDiagnostic::error(listener.span.clone(), "a Network Load Balancer's listener has no rules")
                            .help("use `load_balancer_arn` with `port` and `protocol` for an NLB forward"),
                    );
                    return None;
                }
                Err(said) => {
                    d.push(SpecDiagnostic::error(listener.span.clone(), said));
                    return None;
                }
            }
            let priority = required(
                attrs,
                "priority",
                block,
                &format!("forward \"{}\"", label.value),
                "add `priority = 10` (unique on the listener)",
                d,
            )
            .and_then(|v| number(v, "priority", 1, 50_000, d));
            let path_patterns = match attrs.get("path_patterns") {
                None => Some(Vec::new()),
                Some(v) => strings(v, "path_patterns", d),
            };
            let host_headers = match attrs.get("host_headers") {
                None => Some(Vec::new()),
                Some(v) => strings(v, "host_headers", d),
            };
            if attrs.get("path_patterns").is_none() && attrs.get("host_headers").is_none() {
                d.push(
                    SpecDiagnostic::error(listener.span.clone(), "a rule needs a condition")
                        .help("add `path_patterns = [\"/api/*\"]` or `host_headers = [\"api.example.com\"]`"),
                );
            }
            Some(Placement::Rule {
                listener_arn: arn.to_string(),
                priority: priority?,
                path_patterns: path_patterns?,
                host_headers: host_headers?,
            })
        }
    }
}

fn protocol_span(attrs: &HashMap<&str, &Spanned<Literal>>, label: &Spanned<String>) -> Range<usize> {
    attrs.get("protocol").map_or(label.span.clone(), |v| v.span.clone())
}

fn s(value: &str) -> Expr {
    Expr::Str(value.into())
}

fn int(value: u32) -> Expr {
    Expr::Int(i64::from(value))
}

/// The blocks of one forward, in output order.
pub fn blocks(forward: &Forward) -> Vec<Block> {
    let fwd = ident(&forward.name);
    let mut out = Vec::new();
    for group in &forward.groups {
        let mut tg = Block::new(
            "resource",
            &["aws_lb_target_group", &format!("{fwd}_{}", ident(&group.name))],
        )
        .attr("name", s(&target_group_name(&forward.name, &group.name)))
        .attr("port", int(group.port))
        .attr("protocol", s(&group.protocol))
        .attr("vpc_id", s(&forward.vpc_id));
        if let Some(kind) = &group.target_type {
            tg = tg.attr("target_type", s(kind));
        }
        out.push(tg);
    }
    let mut forward_block = Block::new("forward", &[]);
    for group in &forward.groups {
        forward_block = forward_block.block(
            Block::new("target_group", &[])
                .attr(
                    "arn",
                    Expr::Traversal(vec![
                        "aws_lb_target_group".into(),
                        format!("{fwd}_{}", ident(&group.name)),
                        "arn".into(),
                    ]),
                )
                .attr("weight", int(group.weight)),
        );
    }
    if let Some(duration) = forward.stickiness {
        forward_block = forward_block.block(Block::new("stickiness", &[]).attr("enabled", Expr::Bool(true)).attr(
            "duration",
            Expr::Int(i64::try_from(duration.as_secs()).unwrap_or(i64::MAX)),
        ));
    }
    let action = |name: &str| {
        Block::new(name, &[])
            .attr("type", s("forward"))
            .block(forward_block.clone())
    };
    let (resource_type, action_name) = match &forward.placement {
        Placement::Listener { .. } => ("aws_lb_listener", "default_action"),
        Placement::Rule { .. } => ("aws_lb_listener_rule", "action"),
    };
    let mut main = Block::new("resource", &[resource_type, &fwd]);
    match &forward.placement {
        Placement::Listener {
            load_balancer_arn,
            port,
            protocol,
            certificate_arn,
            ..
        } => {
            main = main
                .attr("load_balancer_arn", s(load_balancer_arn))
                .attr("port", int(*port))
                .attr("protocol", s(protocol));
            if let Some(certificate) = certificate_arn {
                main = main.attr("certificate_arn", s(certificate));
            }
        }
        Placement::Rule {
            listener_arn, priority, ..
        } => {
            main = main
                .attr("listener_arn", s(listener_arn))
                .attr("priority", int(*priority));
        }
    }
    let owner_said = match forward.owner {
        WeightsOwner::Listener => None,
        WeightsOwner::Locality => Some("locality_lb_forward_weights"),
        WeightsOwner::CodeDeploy => Some("CodeDeploy"),
        WeightsOwner::Ecs => Some("ECS blue/green deployments"),
    };
    main = match owner_said {
        Some(who) => main.comment(&format!("Weights are set by {who}; these are only the initial ones.")),
        None => main.comment(&format!("Weights: {}.", forward.weights_from)),
    };
    main = main.block(action(action_name));
    if let Placement::Rule {
        path_patterns,
        host_headers,
        ..
    } = &forward.placement
    {
        let values = |items: &[String]| Expr::List(items.iter().map(|v| s(v)).collect());
        if !path_patterns.is_empty() {
            main = main.block(
                Block::new("condition", &[])
                    .block(Block::new("path_pattern", &[]).attr("values", values(path_patterns))),
            );
        }
        if !host_headers.is_empty() {
            main = main.block(
                Block::new("condition", &[]).block(Block::new("host_header", &[]).attr("values", values(host_headers))),
            );
        }
    }
    if owner_said.is_some() {
        main = main.block(Block::new("lifecycle", &[]).attr(
            "ignore_changes",
            Expr::List(vec![Expr::StaticRef(format!(
                "{action_name}[0].forward[0].target_group"
            ))]),
        ));
    }
    out.push(main);
    if forward.owner == WeightsOwner::Locality {
        let target = match &forward.placement {
            Placement::Listener { .. } => "listener_arn",
            Placement::Rule { .. } => "rule_arn",
        };
        out.push(
            Block::new("resource", &["locality_lb_forward_weights", &fwd])
                .attr(
                    target,
                    Expr::Traversal(vec![resource_type.into(), fwd.clone(), "arn".into()]),
                )
                .comment(&format!("Weights: {}.", forward.weights_from))
                .attr(
                    "weights",
                    Expr::Map(
                        forward
                            .groups
                            .iter()
                            .map(|g| (target_group_name(&forward.name, &g.name), int(g.weight)))
                            .collect(),
                    ),
                ),
        );
    }
    out
}

/// Target group names and Terraform labels that two forwards both generate.
pub fn check_collisions(forwards: &[(Forward, Range<usize>)], d: &mut Vec<SpecDiagnostic>) {
    let mut names: HashMap<String, &str> = HashMap::new();
    for (forward, span) in forwards {
        for group in &forward.groups {
            let name = target_group_name(&forward.name, &group.name);
            if let Some(other) = names.insert(ident(&name), &forward.name) {
                if other != forward.name {
                    d.push(
                        SpecDiagnostic::error(
                            span.clone(),
                            format!("forward \"{}\" generates target group \"{name}\", which forward \"{other}\" generates too", forward.name),
                        )
                        .help("rename one of them (`-` becomes `_` in Terraform names)"),
                    );
                }
            }
        }
    }
}
