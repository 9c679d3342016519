//! The `locality_shift_lb_weights` model: the only place its attributes are named.

use std::collections::BTreeMap;

use crate::tfplugin::{Field, Number};

crate::model! {
    /// One weight shift of a load balancer's forward action, as configured.
    pub struct ShiftLbWeightsModel {
        /// A listener whose default action is the forward.
        pub listener_arn: Field<String>,
        /// An ALB listener rule whose actions hold the forward.
        pub rule_arn: Field<String>,
        /// Target group (name or ARN) → target weight.
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
            ShiftLbWeightsModel::value_type(),
            super::super::schema().block.value_type()
        );
    }
}
