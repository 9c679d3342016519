//! The `locality_weighted_backend` model: the only place its attributes are named.

use std::collections::BTreeMap;

use crate::provider::google::{Route, UrlMapLocation};
use crate::provider::timeouts::WriteTimeoutsModel;
use crate::tfplugin::{Field, Number};

/// Largest weight the API takes.
pub const MAX_WEIGHT: u64 = 1000;

/// Largest route-rule priority the API takes.
pub const MAX_PRIORITY: u64 = 2_147_483_647;

crate::model! {
    /// The weights of one URL map.
    pub struct WeightedBackendModel {
        /// `<project>[/<region>]/<url_map>[#<path_matcher>[/<priority>]]`.
        pub id: Field<String>,
        /// The project (default: the provider's).
        pub project: Field<String>,
        /// The region of a regional URL map; null for a global one.
        pub region: Field<String>,
        /// The URL map's name.
        pub url_map: Field<String>,
        /// The path matcher whose route is addressed; null for the URL map's default route.
        pub path_matcher: Field<String>,
        /// The priority of the route rule addressed, within `path_matcher`.
        pub route_rule_priority: Field<Number>,
        /// Backend service (name, path or self-link) → weight.
        pub weights: Field<BTreeMap<String, Field<Number>>>,
        /// How long create and update may take.
        pub timeouts: Field<WriteTimeoutsModel>,
    }
}

/// A weight as the API takes it: a whole number from 0 to [`MAX_WEIGHT`].
pub fn weight(n: &Number) -> Option<u32> {
    n.as_u64()
        .filter(|w| *w <= MAX_WEIGHT)
        .and_then(|w| u32::try_from(w).ok())
}

/// A route-rule priority as the API takes it.
pub fn priority(n: &Number) -> Option<u64> {
    n.as_u64().filter(|p| *p <= MAX_PRIORITY)
}

/// Where a URL map is and which of its routes, from the attributes that say so: `None` while
/// any of them is unknown or invalid.
pub fn address(
    project: &Field<String>,
    region: &Field<String>,
    url_map: &Field<String>,
    path_matcher: &Field<String>,
    route_rule_priority: &Field<Number>,
) -> Option<(UrlMapLocation, Route)> {
    let known = |f: &Field<String>| match f {
        Field::Known(v) => Some(Some(v.clone())),
        Field::Null => Some(None),
        Field::Unknown => None,
    };
    let location = UrlMapLocation {
        project: project.get()?.clone(),
        region: known(region)?,
        name: url_map.get()?.clone(),
    };
    let route = match (known(path_matcher)?, route_rule_priority) {
        (None, Field::Null) => Route::Default,
        (Some(name), Field::Null) => Route::PathMatcher(name),
        (Some(path_matcher), Field::Known(n)) => Route::RouteRule {
            path_matcher,
            priority: priority(n)?,
        },
        _ => return None,
    };
    Some((location, route))
}

/// The ID of a route of a URL map: `<project>[/<region>]/<url_map>[#<path_matcher>[/<priority>]]`.
pub fn route_id(location: &UrlMapLocation, route: &Route) -> String {
    format!("{location}{}", route.id_suffix())
}

impl WeightedBackendModel {
    /// The URL map and route, when every attribute naming them is known.
    pub fn address(&self) -> Option<(UrlMapLocation, Route)> {
        address(
            &self.project,
            &self.region,
            &self.url_map,
            &self.path_matcher,
            &self.route_rule_priority,
        )
    }

    /// Sets the attributes naming a URL map and route (and the ID).
    pub fn set_address(&mut self, location: &UrlMapLocation, route: &Route) {
        self.id = route_id(location, route).into();
        self.project = location.project.as_str().into();
        self.region = location.region.clone().map_or(Field::Null, Field::Known);
        self.url_map = location.name.as_str().into();
        (self.path_matcher, self.route_rule_priority) = match route {
            Route::Default => (Field::Null, Field::Null),
            Route::PathMatcher(name) => (name.as_str().into(), Field::Null),
            Route::RouteRule { path_matcher, priority } => {
                (path_matcher.as_str().into(), Field::Known(Number::from(*priority)))
            }
        };
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
