//! The `locality_anycast_check` model: the only place its attributes and blocks are named.

use crate::tfplugin::{Field, Number};

crate::model! {
    /// One `probe` block.
    pub struct ProbeModel {
        /// A unique name.
        pub name: Field<String>,
        /// Degrees.
        pub latitude: Field<Number>,
        /// Degrees.
        pub longitude: Field<Number>,
        /// Round-trip time, ms.
        pub rtt_ms: Field<Number>,
    }
}

crate::model! {
    /// One impossible pair of probes.
    pub struct ViolationModel {
        /// The first probe.
        pub probe_a: Field<String>,
        /// The second probe.
        pub probe_b: Field<String>,
        /// Their distance, km.
        pub distance_km: Field<Number>,
        /// By how much light is beaten, ms.
        pub margin_ms: Field<Number>,
    }
}

crate::model! {
    /// The probes and the verdict.
    pub struct AnycastCheckModel {
        /// Whether some pair is faster than light allows.
        pub anycast: Field<bool>,
        /// The impossible pairs.
        pub violations: Field<Vec<ViolationModel>>,
        /// The probes.
        pub probe: Field<Vec<ProbeModel>>,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tfplugin::model::ModelValue;

    #[test]
    fn model_and_schema_name_the_same_attributes_with_the_same_types() {
        assert_eq!(
            AnycastCheckModel::value_type(),
            super::super::schema().block.value_type()
        );
    }
}
