//! Generated protocol code (tonic + prost) from `proto/`. Hidden from the docs: only the
//! protocol layer and the tests use these types.

#![allow(missing_docs, unreachable_pub, clippy::all, clippy::pedantic)]

/// Terraform plugin protocol 6.8.
pub mod tfplugin6 {
    tonic::include_proto!("tfplugin6");
}

/// go-plugin's controller and stdio services.
pub mod plugin {
    tonic::include_proto!("plugin");
}
