//! The `locality_region_hints` model: the only place its attributes are named.

use std::collections::BTreeMap;

use crate::provider::timeouts::TimeoutsModel;
use crate::tfplugin::{Field, Number};

crate::model! {
    /// All of one zone's hints, as configured and as stored.
    pub struct RegionHintsModel {
        /// The zone ID.
        pub id: Field<String>,
        /// The zone.
        pub zone_id: Field<String>,
        /// Origin IP → `vendor:region`, as configured.
        pub hints: Field<BTreeMap<String, Field<String>>>,
        /// Origin IPs whose hint is derived from the IP ranges.
        pub origins: Field<Vec<Field<String>>>,
        /// Whether the zone's other mappings are deleted.
        pub exclusive: Field<bool>,
        /// Whether mappings with another value are overwritten.
        pub takeover: Field<bool>,
        /// Canonical IP → `vendor:region`: every managed hint, as the zone holds it.
        pub effective: Field<BTreeMap<String, Field<String>>>,
        /// How many of the zone's mappings this resource does not manage.
        pub unmanaged: Field<Number>,
        /// While exclusive: the zone's mappings this resource does not manage.
        pub unmanaged_mappings: Field<BTreeMap<String, Field<String>>>,
        /// How long each operation may take.
        pub timeouts: Field<TimeoutsModel>,
    }
}

impl RegionHintsModel {
    /// The managed hints as stored (`effective`), when known: canonical IP → `vendor:region`.
    pub fn effective_hints(&self) -> Option<BTreeMap<String, String>> {
        let map = self.effective.get()?;
        Some(
            map.iter()
                .filter_map(|(ip, v)| Some((ip.clone(), v.get()?.clone())))
                .collect(),
        )
    }

    /// Sets `effective`.
    pub fn set_effective(&mut self, hints: &BTreeMap<String, String>) {
        self.effective = Field::known_map(hints.clone());
    }

    /// Sets `unmanaged`.
    pub fn set_unmanaged(&mut self, count: usize) {
        self.unmanaged = Field::Known(Number::from(count as u64));
    }

    /// Sets `unmanaged` and, while exclusive, `unmanaged_mappings`, from what the zone holds
    /// (canonical IP → mapping, shown as `vendor:region` by `hint`) and what this resource
    /// manages. The mappings are only spelled out while exclusive.
    pub fn set_unmanaged_from<M>(
        &mut self,
        zone: &BTreeMap<String, M>,
        effective: &BTreeMap<String, String>,
        hint: impl Fn(&M) -> String,
    ) {
        let others = zone.iter().filter(|(ip, _)| !effective.contains_key(*ip));
        if self.is_exclusive() {
            let others: BTreeMap<String, String> = others.map(|(ip, m)| (ip.clone(), hint(m))).collect();
            self.set_unmanaged(others.len());
            self.unmanaged_mappings = Field::known_map(others);
        } else {
            self.set_unmanaged(others.count());
            self.unmanaged_mappings = Field::Null;
        }
    }

    /// Whether `exclusive` is true.
    pub fn is_exclusive(&self) -> bool {
        self.exclusive.get() == Some(&true)
    }

    /// Whether `takeover` is true.
    pub fn takes_over(&self) -> bool {
        self.takeover.get() == Some(&true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tfplugin::model::ModelValue;

    #[test]
    fn model_and_schema_name_the_same_attributes_with_the_same_types() {
        assert_eq!(
            RegionHintsModel::value_type(),
            super::super::schema().block.value_type()
        );
    }
}
