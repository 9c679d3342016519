//! The `locality_lb_forward_weights` schema. Its descriptions are the resource's documentation.

use crate::provider::aws::lb_forward::group_name;
use crate::provider::timeouts::{self, Operation};
use crate::tfplugin::{Attribute, Block, IdentityAttribute, IdentitySchema, Schema, Type};

fn same_target_group(a: &str, b: &str) -> bool {
    match (group_name(a), group_name(b)) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

/// The resource schema.
pub fn schema() -> Schema {
    Schema {
        version: 0,
        block: Block::new(
            "The weights of one forward action of an AWS load balancer — an Application Load Balancer's or a \
             Network Load Balancer's listener (its default action) or an Application Load Balancer's listener \
             rule — and nothing else: the switch that moves traffic between target groups (blue/green, a \
             canary, draining a group), managed beside the `aws_lb_listener` or `aws_lb_listener_rule` that \
             owns everything else, which ignores the forward's `target_group` (`lifecycle { ignore_changes = \
             [default_action[0].forward[0].target_group] }`).\n\n\
             Plan reads the action list and refuses, naming the key: a weight outside 0–999, a target group \
             that is not in the forward action, more than 5 groups, and weights that would leave every group of \
             the action at 0 (the groups not listed count with their live weight). Apply reads the action list, \
             changes only the forward's weights, and writes the whole list back (`ModifyListener` for a \
             listener and for a listener's default rule, `ModifyRule` for another rule: AWS replaces the whole \
             list). Every other action keeps its `Order` and settings; an `authenticate-oidc` action is re-sent \
             with `UseExistingClientSecret` and never with a secret (AWS never returns it); the forward's \
             stickiness, the rule's conditions and priority, the listener's port, protocol and certificates \
             are not touched. Then it reads the list again: a change made by someone else since is reported as \
             an error naming it, not overwritten silently (the API has no fingerprint, so a change landing \
             inside the one round trip between the read and the write cannot be seen by any client). Writes to \
             one listener (its default action and its rules) go one at a time within the provider.\n\n\
             Refresh reads the live weights of the groups listed, so a change made in the console, by CodeDeploy \
             or by `locality_shift_lb_weights` shows as drift, with a warning naming the groups. Destroy leaves \
             the load balancer as it is: the resource only stops managing the weights. AWS access (credentials, \
             region, endpoint) comes from the provider's `aws` block; the target's region must be that region.",
        )
        .attribute(
            Attribute::string("id")
                .computed()
                .use_state_for_unknown()
                .description("The listener's or rule's ARN (the one of `listener_arn` and `rule_arn` that is set)."),
        )
        .attribute(Attribute::string("listener_arn").optional().requires_replace().description(
            "The ARN of a listener whose default action is the forward (`aws_lb_listener.NAME.arn`): an \
             Application Load Balancer's (`listener/app/...`) or a Network Load Balancer's (`listener/net/...`). \
             Exactly one of `listener_arn` and `rule_arn`. Changing it replaces the resource (destroy changes \
             nothing in AWS).",
        ))
        .attribute(Attribute::string("rule_arn").optional().requires_replace().description(
            "The ARN of an Application Load Balancer listener rule whose actions hold the forward \
             (`aws_lb_listener_rule.NAME.arn`, `listener-rule/app/...`). A listener's default rule is written \
             through `ModifyListener`, as AWS requires. Exactly one of `listener_arn` and `rule_arn`. Changing \
             it replaces the resource.",
        ))
        .attribute(
            Attribute::typed("weights", Type::map(Type::Number))
                .required()
                .key_equality(same_target_group)
                .description(
                    "Target group → weight, a whole number from 0 to 999. Keys are target group names (`web-blue`) \
                     or ARNs (`aws_lb_target_group.NAME.arn`), compared as the same group. Every key must already \
                     be a target group of the forward action (at most 5, as AWS allows); groups not listed keep \
                     their live weight. The weights after the change must not all be 0, so traffic is never \
                     black-holed: draining one group (`\"web-blue\" = 0` while another takes traffic) is fine.",
                ),
        )
        .block(timeouts::block(
            &[Operation::Create, Operation::Update],
            super::TIMEOUTS,
            "reading the action list, the write (with the SDK's retries) and the read that checks it; destroy calls no API",
        )),
    }
}

/// The resource identity (Terraform 1.12+): the listener's or the rule's ARN.
pub fn identity_schema() -> IdentitySchema {
    IdentitySchema {
        version: 0,
        attributes: vec![
            IdentityAttribute::optional(
                "listener_arn",
                "The listener whose default action's weights are managed; absent for a rule.",
            ),
            IdentityAttribute::optional(
                "rule_arn",
                "The listener rule whose forward's weights are managed; absent for a listener.",
            ),
        ],
    }
}
