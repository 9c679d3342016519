//! locality: a Terraform provider and an HCL generator for locality-aware traffic routing.
//!
//! - [`tfplugin`]: the plugin protocol layer (knows Terraform, not the clouds);
//! - [`provider`]: the `locality` provider's resources and data sources.

pub mod provider;
pub mod tfplugin;
