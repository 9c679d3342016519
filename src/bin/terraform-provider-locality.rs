//! The Terraform provider binary. Terraform starts it; run it with `--debug` to attach
//! Terraform to a long-running instance (it prints `TF_REATTACH_PROVIDERS`).

use std::process::ExitCode;

use locality::provider::{LocalityProvider, SOURCE_ADDRESS};
use locality::tfplugin::{logging, serve, ServeOptions};

#[tokio::main]
async fn main() -> ExitCode {
    logging::init("provider.terraform-provider-locality");
    let debug = std::env::args().skip(1).any(|a| a == "--debug" || a == "-debug");
    serve(
        LocalityProvider,
        ServeOptions {
            address: SOURCE_ADDRESS,
            debug,
        },
    )
    .await
}
