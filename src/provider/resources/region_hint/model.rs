//! The `locality_region_hint` model: the only place its attributes are named.

use crate::provider::cloudflare::{canonical_ip, Mapping};
use crate::provider::timeouts::TimeoutsModel;
use crate::tfplugin::Field;

crate::model! {
    /// One origin cloud-region mapping, as configured and as stored.
    pub struct RegionHintModel {
        /// `<zone_id>/<origin_ip>` (canonical IP).
        pub id: Field<String>,
        /// The zone.
        pub zone_id: Field<String>,
        /// The origin IP, as configured.
        pub origin_ip: Field<String>,
        /// `aws`, `azure`, `gcp` or `oci`.
        pub vendor: Field<String>,
        /// The vendor's region.
        pub region: Field<String>,
        /// The region's upper-tier colos.
        pub upper_tier_colos: Field<Vec<Field<String>>>,
        /// When the mapping last changed.
        pub modified_on: Field<String>,
        /// How long each operation may take.
        pub timeouts: Field<TimeoutsModel>,
    }
}

/// A mapping a model describes, when its identifying and value attributes are known: the IP
/// canonical, vendor and region lowercase.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hint {
    /// The zone.
    pub zone: String,
    /// The mapping (canonical IP, lowercase vendor and region).
    pub mapping: Mapping,
}

impl Hint {
    /// The resource ID, `<zone_id>/<origin_ip>`.
    pub fn id(&self) -> String {
        format!("{}/{}", self.zone, self.mapping.origin_ip)
    }
}

impl RegionHintModel {
    /// The hint, when zone, IP, vendor and region are known (and the IP is valid).
    pub fn hint(&self) -> Option<Hint> {
        Some(Hint {
            zone: self.zone_id.get()?.clone(),
            mapping: Mapping {
                origin_ip: canonical_ip(self.origin_ip.get()?)?,
                vendor: self.vendor.get()?.to_ascii_lowercase(),
                region: self.region.get()?.to_ascii_lowercase(),
                modified_on: None,
            },
        })
    }

    /// A state for a mapping the zone holds.
    pub fn from_mapping(zone: &str, mapping: Mapping) -> Self {
        RegionHintModel {
            id: format!("{zone}/{}", mapping.origin_ip).into(),
            zone_id: zone.into(),
            origin_ip: mapping.origin_ip.into(),
            vendor: mapping.vendor.into(),
            region: mapping.region.into(),
            upper_tier_colos: Field::Null,
            modified_on: mapping.modified_on.into(),
            timeouts: Field::Null,
        }
    }

    /// Sets the upper-tier colos.
    pub fn set_colos(&mut self, colos: Vec<String>) {
        self.upper_tier_colos = Field::known_list(colos);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tfplugin::model::ModelValue;

    #[test]
    fn model_and_schema_name_the_same_attributes_with_the_same_types() {
        assert_eq!(RegionHintModel::value_type(), super::super::schema().block.value_type());
    }
}
