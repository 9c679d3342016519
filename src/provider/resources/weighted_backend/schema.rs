//! The `locality_weighted_backend` schema. Its descriptions are the resource's documentation.

use crate::provider::google::backend_name;
use crate::provider::timeouts::{self, Operation};
use crate::provider::DEFAULT_PROJECT;
use crate::tfplugin::{Attribute, Block, IdentityAttribute, IdentitySchema, Schema, Type};

fn same_backend_service(a: &str, b: &str) -> bool {
    backend_name(a) == backend_name(b)
}

/// The resource schema.
pub fn schema() -> Schema {
    Schema {
        version: 0,
        block: Block::new(
            "The weights of a Google Cloud URL map's weighted backend services — the switch that moves traffic \
             between regions during a regional outage — without touching anything else in the URL map. Global \
             URL maps (`urlMaps`: global external and cross-region internal Application Load Balancers) and \
             regional ones (`regionUrlMaps`, with `region`: regional external and internal Application Load \
             Balancers); the URL map's default route, a path matcher's default route (`path_matcher`) or one \
             route rule (`path_matcher` + `route_rule_priority`). One resource manages one route; several \
             resources can manage different routes of one URL map: the provider writes one URL map one \
             change at a time, so they apply together at Terraform's default parallelism.\n\n\
             Plan reads the URL map and refuses weights that would leave every weighted backend service of the \
             route at 0 (the listed ones as configured, the others as they are live). Apply reads the URL map, \
             changes only the listed weights of that route, writes them with the URL map's fingerprint \
             (re-reading and retrying, with a growing wait, when someone else changed it in between: HTTP 412 \
             or an operation that fails with \"Invalid fingerprint\") and waits for the operation to \
             finish. Refresh reads the live weights, so a change made in the console or by \
             `locality_shift_weights` shows as drift, with a warning that names the services whose live weights \
             differ from what Terraform last applied (applying puts the configured weights back: see the \
             action's runbook). Destroy leaves the URL map as it is: the resource only stops managing the weights.",
        )
        .attribute(
            Attribute::string("id")
                .computed()
                .use_state_for_unknown()
                .description("`<project>/<url_map>` (global) or `<project>/<region>/<url_map>` (regional), followed by `#<path_matcher>` or `#<path_matcher>/<route_rule_priority>` when a path matcher's route is addressed. The same form imports."),
        )
        .attribute(
            Attribute::string("project")
                .provider_default(DEFAULT_PROJECT, "`project` in the provider's `google` block")
                .requires_replace()
                .description(
            "The project of the URL map. Default: the provider's `google.project`. Changing it replaces the resource.",
                ),
        )
        .attribute(Attribute::string("region").optional().requires_replace().description(
            "The region of a regional URL map (`regionUrlMaps`, e.g. `asia-northeast1`), for regional external and \
             internal Application Load Balancers. Unset: a global URL map (`urlMaps`). Changing it replaces the resource.",
        ))
        .attribute(Attribute::string("url_map").required().requires_replace().description(
            "The URL map's name. Changing it replaces the resource.",
        ))
        .attribute(Attribute::string("path_matcher").optional().requires_replace().description(
            "The name of a path matcher (`pathMatchers[].name`; `path_matcher.name` in `google_compute_url_map`) whose \
             route holds the weighted backend services: its `defaultRouteAction`, or with `route_rule_priority` one \
             of its route rules' `routeAction`. Unset: the URL map's own `defaultRouteAction`. Changing it replaces \
             the resource (destroy changes nothing in Google Cloud).",
        ))
        .attribute(Attribute::number("route_rule_priority").optional().requires_replace().description(
            "The priority of the route rule (`routeRules[].priority`, unique within its path matcher, 0 to \
             2147483647) whose `routeAction` holds the weighted backend services. Needs `path_matcher`. Changing \
             it replaces the resource.",
        ))
        .attribute(Attribute::typed("weights", Type::map(Type::Number)).required().key_equality(same_backend_service).description(
            "Backend service → weight, a whole number from 0 to 1000. Keys are backend-service names (`web-bs`); \
             `projects/P/global/backendServices/NAME` (or `regions/R/...`) paths and full self-links are accepted \
             and compared by name. Every key must already be one of the route's weighted backend services (checked \
             at apply, with the real list in the error). Weighted backend services not listed keep their live \
             weight. The route's weights after the change must not all be 0, so traffic is never black-holed: \
             draining one region (`\"web-bs-tokyo\" = 0` while another service carries traffic) is fine; a plan \
             that lists every weighted service at 0 fails, and so does an apply that would leave them all at 0.",
        ))
        .block(timeouts::block(
            &[Operation::Create, Operation::Update],
            super::TIMEOUTS,
            "reading the URL map, the PATCH with its re-reads on a stale fingerprint, and polling the Compute operation until it is DONE; destroy calls no API",
        )),
    }
}

/// The resource identity (Terraform 1.12+): project and URL map name.
pub fn identity_schema() -> IdentitySchema {
    IdentitySchema {
        version: 0,
        attributes: vec![
            IdentityAttribute::optional(
                "project",
                "The project; on import it defaults to the provider's `google.project`.",
            ),
            IdentityAttribute::optional("region", "The region of a regional URL map; absent for a global one."),
            IdentityAttribute::required("url_map", "The URL map's name."),
            IdentityAttribute::optional(
                "path_matcher",
                "The path matcher whose route is managed; absent for the URL map's default route.",
            ),
            IdentityAttribute::optional_number(
                "route_rule_priority",
                "The priority of the route rule managed, within `path_matcher`.",
            ),
        ],
    }
}
