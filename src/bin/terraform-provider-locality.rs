//! The Terraform provider binary. Terraform starts it; run it with `--debug` to attach
//! Terraform to a long-running instance (it prints `TF_REATTACH_PROVIDERS`), or with
//! `--version` to print its version.

use std::process::ExitCode;

use locality::provider::{LocalityProvider, SOURCE_ADDRESS};
use locality::tfplugin::{logging, run, ServeOptions};

/// The version, as in Cargo.toml (and in the release archives' names).
const VERSION: &str = env!("CARGO_PKG_VERSION");

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--version" || a == "-version") {
        #[allow(clippy::print_stdout)] // asked for on the command line, not under Terraform
        {
            println!("terraform-provider-locality {VERSION}");
        }
        return ExitCode::SUCCESS;
    }
    logging::init("provider.terraform-provider-locality");
    tracing::info!(version = VERSION, "terraform-provider-locality {VERSION} starting");
    let debug = args.iter().any(|a| a == "--debug" || a == "-debug");
    run(
        || LocalityProvider,
        ServeOptions {
            address: SOURCE_ADDRESS,
            debug,
        },
    )
}
