//! The `locality_shift_weights` schema. Its descriptions are the action's documentation.

use crate::tfplugin::{Attribute, Block, Schema, Type};

/// Most steps one invocation takes.
pub const MAX_STEPS: u64 = 100;

/// The action schema.
pub fn schema() -> Schema {
    Schema {
        version: 0,
        block: Block::new(
            "Sets the weights of a Google Cloud URL map's weighted backend services now, optionally in equal \
             steps: the operator's tool for draining a region during an incident \
             (`terraform apply -invoke=action.locality_shift_weights.NAME`; Terraform 1.14 and later). Global \
             and regional URL maps, and any route of them, addressed like `locality_weighted_backend`.\n\n\
             Each step is the same fingerprint-safe write as `locality_weighted_backend` (read, change only the \
             weights, write with the fingerprint, retry on a stale fingerprint, wait for the operation) and is reported as it \
             completes. Weights are checked like the resource's, against the live URL map when the action is \
             planned and again before anything is written: whole numbers from 0 to 1000, keys that are weighted \
             backend services of the route, and weights after the shift that are not all zero (the services not \
             named keep their weight and count: draining one region works). No step on the way is all zero either. \
             Ctrl-C stops between steps and says which step was the last.\n\n\
             A `locality_weighted_backend` managing the same route shows the new weights as drift on its next \
             plan, with a warning naming the services that were moved, and its next apply moves them back: change \
             the configuration in the same incident (see the runbook below).",
        )
        .attribute(
            Attribute::string("project")
                .optional()
                .description("The project; default: the provider's `google.project`."),
        )
        .attribute(Attribute::string("region").optional().description(
            "The region of a regional URL map (`regionUrlMaps`); unset: a global URL map.",
        ))
        .attribute(Attribute::string("url_map").required().description("The URL map's name."))
        .attribute(Attribute::string("path_matcher").optional().description(
            "A path matcher whose default route (or, with `route_rule_priority`, one route rule) holds the weighted \
             backend services; unset: the URL map's default route. Same addressing as `locality_weighted_backend`.",
        ))
        .attribute(Attribute::number("route_rule_priority").optional().description(
            "The priority of the route rule within `path_matcher` whose weights are shifted.",
        ))
        .attribute(
            Attribute::typed("weights", Type::map(Type::Number))
                .required()
                .description("Backend service (name, `projects/P/global/backendServices/NAME` or self-link) → target weight, 0 to 1000."),
        )
        .attribute(Attribute::number("steps").optional().description(
            "How many equal steps lead from the current weights to the target, 1 to 100. Default: 1 (at once).",
        ))
        .attribute(Attribute::string("interval").optional().description(
            "The pause between steps, e.g. `30s` or `2m` (at most 1h). Default: no pause.",
        )),
    }
}
