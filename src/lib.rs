//! locality: a Terraform provider and an HCL generator for locality-aware traffic routing.
//!
//! - [`tfplugin`]: the plugin protocol layer (knows Terraform, not the clouds);
//! - [`generator`]: `locality gen`, spec → Google Cloud HCL (no protocol layer);
//! - [`provider`]: the `locality` provider's resources and data sources.

pub mod generator;
pub mod provider;
pub mod ranges;
pub mod tfplugin;
