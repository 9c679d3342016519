//! locality: a Terraform provider and an HCL generator for locality-aware traffic routing.
//!
//! - [`tfplugin`]: the plugin protocol layer (knows Terraform, not the clouds);
//! - [`generator`]: `locality gen`, spec → Google Cloud HCL (no protocol layer);
//! - [`naming`]: name rules and "did you mean" shared by both;
//! - [`provider`]: the `locality` provider's resources and data sources;
//! - [`ranges`]: the clouds' published IP ranges and the lookup over them;
//! - `audit` (feature `audit`, on by default): `locality audit`, VPC Flow Logs joined with the
//!   replica map's nodes and the VPC's subnets (no protocol layer, no provider);
//! - leaves that import nothing above them: [`naming`], [`regions`] (the region catalogue),
//!   [`http`] (retries and backoff), [`files`] (safe replacement and reading of files).
//!
//! Layers (checked by `tests/architecture.rs`): the leaves at the bottom; `ranges` and
//! `generator` on the leaves; `tfplugin` on nothing; `provider` on all of these but the
//! generator. Nothing imports from a layer above it.

#[cfg(feature = "audit")]
pub mod audit;
pub mod files;
pub mod generator;
pub mod http;
pub mod naming;
pub mod provider;
pub mod ranges;
pub mod regions;
pub mod tfplugin;
