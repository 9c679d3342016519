//! The `locality_cross_zone_cost` model: the only place its attributes are named.

use crate::provider::timeouts::ReadTimeoutsModel;
use crate::tfplugin::{Field, Number};

crate::model! {
    /// One day of cross-zone data transfer.
    pub struct DayModel {
        /// `YYYY-MM-DD`.
        pub date: Field<String>,
        /// Unblended cost, USD.
        pub usd: Field<Number>,
        /// GB transferred.
        pub gb: Field<Number>,
    }
}

crate::model! {
    /// The query and Cost Explorer's answer.
    pub struct CrossZoneCostModel {
        /// Usage types whose name contains this.
        pub usage_type_pattern: Field<String>,
        /// Days in the window.
        pub days: Field<Number>,
        /// First day (inclusive).
        pub start_date: Field<String>,
        /// The day after the window (exclusive).
        pub end_date: Field<String>,
        /// The window's last day (inclusive).
        pub last_date: Field<String>,
        /// Only this service.
        pub service: Field<String>,
        /// Only this linked account.
        pub linked_account: Field<String>,
        /// Only resources with this cost allocation tag key ...
        pub tag_key: Field<String>,
        /// ... and value.
        pub tag_value: Field<String>,
        /// Per day.
        pub daily: Field<Vec<DayModel>>,
        /// Sum of `daily[*].usd`.
        pub total_usd: Field<Number>,
        /// `total_usd` over the window's days.
        pub average_daily_usd: Field<Number>,
        /// Sum of `daily[*].gb`.
        pub total_gb: Field<Number>,
        /// How long the read may take.
        pub timeouts: Field<ReadTimeoutsModel>,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tfplugin::model::ModelValue;

    #[test]
    fn model_and_schema_name_the_same_attributes_with_the_same_types() {
        assert_eq!(
            CrossZoneCostModel::value_type(),
            super::super::schema().block.value_type()
        );
    }
}
