//! The protocol layer: Terraform's plugin protocol v6 over gRPC, independent of any cloud.
//!
//! - [`value`]: three-state values and the msgpack/JSON codecs;
//! - [`schema`], [`diagnostics`]: what resources declare and report;
//! - [`Provider`], [`Resource`], [`DataSource`]: what a provider implements;
//! - [`serve`]: the handshake, TLS and the gRPC server.
//!
//! This module never imports from `crate::provider` or `crate::generator`.

mod convert;
pub mod diagnostics;
pub mod logging;
mod plan;
#[doc(hidden)]
pub mod proto;
pub mod schema;
mod server;
mod service;
pub mod tls;
mod traits;
pub mod value;

pub use diagnostics::{AttributePath, Diagnostic, Diagnostics, Severity};
pub use schema::{Attribute, Block, NestedBlock, Nesting, Schema};
pub use server::{serve, ServeOptions, MAGIC_COOKIE_KEY, MAGIC_COOKIE_VALUE};
pub use service::ProviderService;
pub use traits::{Context, DataSource, PlanRequest, Provider, Resource};
pub use value::{Number, Type, Value};
