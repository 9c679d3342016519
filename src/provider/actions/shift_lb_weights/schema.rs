//! The `locality_shift_lb_weights` schema. Its descriptions are the action's documentation.

use crate::tfplugin::{Attribute, Block, Schema, Type};

/// The action schema.
pub fn schema() -> Schema {
    Schema {
        version: 0,
        block: Block::new(
            "Sets the weights of an AWS load balancer's forward action now, optionally in equal steps: the \
             operator's tool for draining a target group, a canary and a roll back \
             (`terraform apply -invoke=action.locality_shift_lb_weights.NAME`; Terraform 1.14 and later). The \
             same targets as `locality_lb_forward_weights`: an ALB's or NLB's listener (`listener_arn`) or an \
             ALB listener rule (`rule_arn`).\n\n\
             Each step is the same write as `locality_lb_forward_weights` (read the action list, change only the \
             weights, write the whole list back keeping every other action, its `Order`, an OIDC login's secret \
             and the stickiness, read it again) and is reported as it completes. Weights are checked against the \
             live action when the action is planned and again before anything is written: whole numbers from 0 \
             to 999, keys that are target groups of the forward action, and weights after the shift that are not \
             all zero (groups not named keep their weight and count). No step on the way is all zero either. \
             Ctrl-C stops between steps and says which step was the last.\n\n\
             A `locality_lb_forward_weights` managing the same forward action shows the new weights as drift on \
             its next plan, with a warning naming the groups, and its next apply moves them back: change the \
             configuration in the same incident (see the runbook below).",
        )
        .attribute(Attribute::string("listener_arn").optional().description(
            "The listener whose default action is the forward (ALB or NLB). Exactly one of `listener_arn` and `rule_arn`.",
        ))
        .attribute(Attribute::string("rule_arn").optional().description(
            "The ALB listener rule whose actions hold the forward. Exactly one of `listener_arn` and `rule_arn`.",
        ))
        .attribute(
            Attribute::typed("weights", Type::map(Type::Number))
                .required()
                .description("Target group (name or ARN) → target weight, 0 to 999."),
        )
        .attribute(Attribute::number("steps").optional().description(
            "How many equal steps lead from the current weights to the target, 1 to 100. Default: 1 (at once).",
        ))
        .attribute(Attribute::string("interval").optional().description(
            "The pause between steps, e.g. `30s` or `2m` (at most 1h). Default: no pause.",
        )),
    }
}
