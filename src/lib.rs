//! locality: a Terraform provider and an HCL generator for locality-aware traffic routing.
//!
//! - [`tfplugin`]: the plugin protocol layer (knows Terraform, not the clouds);
//! - [`generator`]: `locality gen`, spec → Google Cloud HCL (no protocol layer);
//! - [`naming`]: name rules and "did you mean" shared by both;
//! - [`provider`]: the `locality` provider's resources and data sources.

pub mod generator;
pub mod naming;
pub mod provider;
pub mod ranges;
pub mod tfplugin;
