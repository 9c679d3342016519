//! The `locality_weighted_backend` model: the only place its attributes are named.

use std::collections::BTreeMap;

use crate::tfplugin::{Field, Number};

/// Largest weight the API takes.
pub const MAX_WEIGHT: u64 = 1000;

crate::model! {
    /// The weights of one URL map.
    pub struct WeightedBackendModel {
        /// `<project>/<url_map>`.
        pub id: Field<String>,
        /// The project (default: the provider's).
        pub project: Field<String>,
        /// The URL map's name.
        pub url_map: Field<String>,
        /// Backend service (name, path or self-link) → weight.
        pub weights: Field<BTreeMap<String, Field<Number>>>,
    }
}

/// A weight as the API takes it: a whole number from 0 to [`MAX_WEIGHT`].
pub fn weight(n: &Number) -> Option<u32> {
    n.as_u64()
        .filter(|w| *w <= MAX_WEIGHT)
        .and_then(|w| u32::try_from(w).ok())
}

impl WeightedBackendModel {
    /// The resource ID, when project and URL map are known.
    pub fn identity(&self) -> Option<(&str, &str)> {
        Some((self.project.get()?.as_str(), self.url_map.get()?.as_str()))
    }

    /// The weights, when every one is known and valid, keyed as configured.
    pub fn known_weights(&self) -> Option<BTreeMap<String, u32>> {
        self.weights
            .get()?
            .iter()
            .map(|(k, v)| Some((k.clone(), weight(v.get()?)?)))
            .collect()
    }

    /// Sets the weights from the API's values.
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
            WeightedBackendModel::value_type(),
            super::super::schema().block.value_type()
        );
    }

    #[test]
    fn weights_are_whole_numbers_up_to_the_maximum() {
        let n = |s: &str| Number::parse(s).unwrap();
        assert_eq!(weight(&n("1000")), Some(1000));
        assert_eq!(weight(&n("1001")), None);
        assert_eq!(weight(&n("1.5")), None);
        assert_eq!(weight(&n("-1")), None);
    }
}
