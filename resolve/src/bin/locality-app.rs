//! `locality-app`: the application side of locality and nothing else — `resolve` (which cache
//! endpoint this process should read from) and `sidecar` (HAProxy steered by the replica map),
//! with the map sources, the zone detection and the TLS check. No provider, no generator, no
//! gRPC: the binary an application host or the sidecar image carries. The commands and their
//! flags are `locality resolve` and `locality sidecar`'s (docs/guides/consuming-the-replica-map.md).

use std::process::ExitCode;

use clap::Parser;
use locality_resolve::cli::AppCommand;

#[derive(Parser)]
#[command(
    name = "locality-app",
    version,
    about = "The application side of locality: which cache endpoint to read from, and the sidecar"
)]
struct Cli {
    #[command(subcommand)]
    command: AppCommand,
}

fn main() -> ExitCode {
    locality_resolve::set_program("locality-app");
    Cli::parse().command.run()
}
