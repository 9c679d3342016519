//! Compiles the vendored protocol files in `proto/` with protox (pure Rust: no `protoc`
//! needed on the build machine) and generates tonic server and client code.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let files = [
        "proto/tfplugin6.proto",
        "proto/plugin/grpc_controller.proto",
        "proto/plugin/grpc_stdio.proto",
    ];
    for file in files {
        println!("cargo:rerun-if-changed={file}");
    }
    let descriptors = protox::compile(files, ["proto"])?;
    tonic_prost_build::configure()
        .build_server(true)
        .build_client(true)
        .generate_default_stubs(true)
        .compile_fds(descriptors)?;
    Ok(())
}
