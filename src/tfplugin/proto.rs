//! Generated protocol code (tonic + prost) from `proto/`, private to the protocol layer: no
//! generated type escapes it. Tests include the same generated code themselves
//! (`tests/common/proto.rs`) to drive the server as Terraform does.

#![allow(missing_docs, unreachable_pub, dead_code, clippy::all, clippy::pedantic)]

/// Terraform plugin protocol 6.8.
pub mod tfplugin6 {
    tonic::include_proto!("tfplugin6");
}

/// go-plugin's controller and stdio services.
pub mod plugin {
    tonic::include_proto!("plugin");
}
