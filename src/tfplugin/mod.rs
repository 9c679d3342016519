//! The protocol layer: Terraform's plugin protocol v6 over gRPC, independent of any cloud.
//!
//! - [`value`]: three-state values and the msgpack/JSON codecs;
//! - [`schema`], [`diagnostics`]: what resources declare and report;
//! - [`Provider`], [`Resource`], [`DataSource`]: what a provider implements, on typed
//!   [`model`]s (three-state [`Field`]s) converted from and to values in one place;
//! - [`function`]: provider-defined functions (Terraform 1.8+);
//! - [`identity`], [`ListResource`], [`Action`]: resource identity, `terraform query` list
//!   resources and actions (protocol 6.9/6.10, Terraform 1.12+);
//! - [`run`]: the handshake, TLS and the gRPC server.
//!
//! This module never imports from `crate::provider` or `crate::generator`.

pub mod action;
mod convert;
pub mod diagnostics;
pub mod function;
mod guard;
pub mod identity;
pub mod list;
pub mod logging;
pub mod model;
mod plan;
mod proto;
pub mod schema;
mod server;
mod service;
mod tls;
mod traits;
pub mod value;

pub use action::{action, Action, DynamicAction, Progress};
pub use diagnostics::{AttributePath, Diagnostic, Diagnostics, Severity};
pub use function::{Function, FunctionDefinition, FunctionError, Parameter};
pub use identity::{identity_number, identity_string, IdentityAttribute, IdentitySchema};
pub use list::{list_resource, DynamicListResource, ListResource, ListResult, Listed};
pub use model::{Field, Model, Set};
pub use schema::{Attribute, Block, NestedBlock, Nesting, Schema};
pub use server::{run, serve_plaintext, ServeOptions, MAGIC_COOKIE_KEY, MAGIC_COOKIE_VALUE};
pub use service::ProviderService;
pub use traits::{
    data_source, resource, Context, DataSource, DynamicDataSource, DynamicResource, MoveSource, PlanRequest, Provider,
    Resource,
};
pub use value::{Number, Type, Value};
