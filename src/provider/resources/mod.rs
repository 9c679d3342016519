//! The provider's managed resource types, one folder each.

pub mod lb_forward_weights;
pub mod region_hint;
pub mod region_hints;
pub mod weighted_backend;
pub mod zone_replica_map;
