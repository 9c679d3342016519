//! The provider's data sources, one folder each.

pub mod anycast_check;
pub mod cloud_region;
pub mod cross_zone_cost;
