//! The generated protocol code, included from the same build output the library uses (the
//! library keeps its copy private): tests drive the gRPC server as Terraform does.

#![allow(missing_docs, unreachable_pub, dead_code, clippy::all, clippy::pedantic)]

/// Terraform plugin protocol 6.8.
pub mod tfplugin6 {
    tonic::include_proto!("tfplugin6");
}

/// go-plugin's controller and stdio services.
pub mod plugin {
    tonic::include_proto!("plugin");
}
