//! The `locality_cloud_region` model: the only place its attributes are named.

use crate::tfplugin::Field;

crate::model! {
    /// An IP and the cloud range it is in.
    pub struct CloudRegionModel {
        /// The address to look up.
        pub ip: Field<String>,
        /// Whether it is in a published range.
        pub found: Field<bool>,
        /// The vendor.
        pub vendor: Field<String>,
        /// The region.
        pub region: Field<String>,
        /// The longest matching prefix.
        pub prefix: Field<String>,
        /// The service of the prefix.
        pub service: Field<String>,
        /// `vendor:region`.
        pub hint: Field<String>,
        /// The snapshot's date.
        pub ranges_date: Field<String>,
        /// Which snapshot answered: `built-in` or the file's path.
        pub ranges_source: Field<String>,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tfplugin::model::ModelValue;

    #[test]
    fn model_and_schema_name_the_same_attributes_with_the_same_types() {
        assert_eq!(
            CloudRegionModel::value_type(),
            super::super::schema().block.value_type()
        );
    }
}
