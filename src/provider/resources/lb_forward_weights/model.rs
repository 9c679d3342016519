//! The `locality_lb_forward_weights` model: the only place its attributes are named.

use std::collections::BTreeMap;

use crate::provider::aws::lb_forward::{Target, MAX_WEIGHT};
use crate::provider::timeouts::WriteTimeoutsModel;
use crate::tfplugin::{Field, Number};

crate::model! {
    /// The weights of one forward action.
    pub struct LbForwardWeightsModel {
        /// The listener's or rule's ARN.
        pub id: Field<String>,
        /// A listener whose default action is the forward.
        pub listener_arn: Field<String>,
        /// A listener rule whose actions hold the forward.
        pub rule_arn: Field<String>,
        /// Target group (name or ARN) → weight.
        pub weights: Field<BTreeMap<String, Field<Number>>>,
        /// How long create and update may take.
        pub timeouts: Field<WriteTimeoutsModel>,
    }
}

/// A weight as AWS takes it: a whole number from 0 to [`MAX_WEIGHT`].
pub fn weight(n: &Number) -> Option<u32> {
    n.as_u64()
        .filter(|w| *w <= u64::from(MAX_WEIGHT))
        .and_then(|w| u32::try_from(w).ok())
}

/// Which of `listener_arn` and `rule_arn` names the target, and its value: `None` while either
/// is unknown, or when both or neither are set.
pub fn target_attribute(listener_arn: &Field<String>, rule_arn: &Field<String>) -> Option<(&'static str, String)> {
    match (listener_arn, rule_arn) {
        (Field::Known(arn), Field::Null) => Some(("listener_arn", arn.clone())),
        (Field::Null, Field::Known(arn)) => Some(("rule_arn", arn.clone())),
        _ => None,
    }
}

impl LbForwardWeightsModel {
    /// The target, when known and valid.
    pub fn target(&self) -> Option<Target> {
        let (attribute, arn) = target_attribute(&self.listener_arn, &self.rule_arn)?;
        Target::parse(attribute, &arn).ok()
    }

    /// The attribute that names the target (for diagnostics).
    pub fn target_attribute(&self) -> &'static str {
        if self.rule_arn.is_null() {
            "listener_arn"
        } else {
            "rule_arn"
        }
    }

    /// The weights as configured, each `None` when not a whole number 0–999 (for the checks).
    pub fn asked_weights(&self) -> Option<BTreeMap<String, Option<i128>>> {
        self.weights
            .get()?
            .iter()
            .map(|(k, v)| {
                let n = v.get()?;
                Some((k.clone(), weight(n).map(i128::from)))
            })
            .collect()
    }

    /// The weights, when every one is known and valid, keyed as configured.
    pub fn known_weights(&self) -> Option<BTreeMap<String, u32>> {
        self.weights
            .get()?
            .iter()
            .map(|(k, v)| Some((k.clone(), weight(v.get()?)?)))
            .collect()
    }

    /// Sets the weights from AWS's values.
    pub fn set_weights(&mut self, weights: BTreeMap<String, u32>) {
        self.weights = Field::known_map(weights.into_iter().map(|(k, w)| (k, Number::from(u64::from(w)))));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tfplugin::model::ModelValue;

    #[test]
    fn model_and_schema_name_the_same_attributes_with_the_same_types() {
        assert_eq!(
            LbForwardWeightsModel::value_type(),
            super::super::schema().block.value_type()
        );
    }

    #[test]
    fn weights_are_whole_numbers_up_to_999() {
        let n = |s: &str| Number::parse(s).unwrap();
        assert_eq!(weight(&n("999")), Some(999));
        assert_eq!(weight(&n("1000")), None);
        assert_eq!(weight(&n("0.5")), None);
        assert_eq!(weight(&n("-1")), None);
        assert_eq!(weight(&n("1e400")), None);
    }
}
