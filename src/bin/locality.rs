//! The `locality` command-line tool. `locality gen` turns a compact spec into the Google Cloud
//! regional-failover HCL (see docs/guides/generator.md).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use locality::generator::command::{run, GenArgs};
use locality::generator::Format;

#[derive(Parser)]
#[command(name = "locality", version, about = "Locality-aware routing tools")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Generate Google Cloud failover HCL from a compact spec.
    Gen {
        /// The spec file (HCL, or JSON of the same structure).
        spec: PathBuf,
        /// Write to FILE instead of standard output.
        #[arg(short = 'o', long = "output", value_name = "FILE")]
        output: Option<PathBuf>,
        /// Do not write: exit 1 and print a unified diff when FILE is stale.
        #[arg(long)]
        check: bool,
        /// Output syntax.
        #[arg(long, value_enum, default_value_t = OutputFormat::Hcl)]
        format: OutputFormat,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum OutputFormat {
    /// Terraform HCL, formatted exactly as `terraform fmt` would.
    Hcl,
    /// Terraform JSON (`.tf.json`).
    Json,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Gen {
            spec,
            output,
            check,
            format,
        } => {
            let args = GenArgs {
                spec,
                output,
                check,
                format: match format {
                    OutputFormat::Hcl => Format::Hcl,
                    OutputFormat::Json => Format::Json,
                },
            };
            ExitCode::from(run(&args, &mut std::io::stdout(), &mut std::io::stderr()))
        }
    }
}
