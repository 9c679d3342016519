//! The `locality_weighted_backend` schema. Its descriptions are the resource's documentation.

use crate::provider::google::backend_name;
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
            "The weights of a Google Cloud URL map's `defaultRouteAction.weightedBackendServices`: the switch \
             that moves traffic between regions during a regional outage, without touching anything else in the \
             URL map.\n\n\
             Apply reads the URL map, changes only the listed weights, writes them with the URL map's fingerprint \
             (re-reading and retrying when someone else changed it in between) and waits for the operation to \
             finish. Refresh reads the live weights, so a change made in the console shows as drift. Destroy \
             leaves the URL map as it is: the resource only stops managing the weights.",
        )
        .attribute(
            Attribute::string("id")
                .computed()
                .use_state_for_unknown()
                .description("`<project>/<url_map>`."),
        )
        .attribute(
            Attribute::string("project")
                .provider_default(DEFAULT_PROJECT, "`project` in the provider's `google` block")
                .requires_replace()
                .description(
            "The project of the URL map. Default: the provider's `google.project`. Changing it replaces the resource.",
                ),
        )
        .attribute(Attribute::string("url_map").required().requires_replace().description(
            "The URL map's name. Changing it replaces the resource.",
        ))
        .attribute(Attribute::typed("weights", Type::map(Type::Number)).required().key_equality(same_backend_service).description(
            "Backend service → weight, a whole number from 0 to 1000. Keys are backend-service names (`web-bs`); \
             `projects/P/global/backendServices/NAME` paths and full self-links are accepted and compared by \
             name. Every key must already be one of the URL map's weighted backend services (checked at apply, \
             with the real list in the error), and at least one weight must be non-zero, so traffic is never \
             black-holed. Weighted backend services not listed keep their live weight.",
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
            IdentityAttribute::required("url_map", "The URL map's name."),
        ],
    }
}
