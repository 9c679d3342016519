//! The `locality_shift_weights` model: the only place its attributes are named.

use std::collections::BTreeMap;

use crate::tfplugin::{Field, Number};

crate::model! {
    /// One weight shift, as configured.
    pub struct ShiftWeightsModel {
        /// The project (default: the provider's).
        pub project: Field<String>,
        /// The region of a regional URL map; null for a global one.
        pub region: Field<String>,
        /// The URL map's name.
        pub url_map: Field<String>,
        /// The path matcher whose route is shifted; null for the URL map's default route.
        pub path_matcher: Field<String>,
        /// The priority of the route rule shifted, within `path_matcher`.
        pub route_rule_priority: Field<Number>,
        /// Backend service (name, path or self-link) → target weight.
        pub weights: Field<BTreeMap<String, Field<Number>>>,
        /// How many equal steps lead from the current weights to the target.
        pub steps: Field<Number>,
        /// The pause between steps, e.g. `30s`.
        pub interval: Field<String>,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tfplugin::model::ModelValue;

    #[test]
    fn model_and_schema_name_the_same_attributes_with_the_same_types() {
        assert_eq!(
            ShiftWeightsModel::value_type(),
            super::super::schema().block.value_type()
        );
    }
}
