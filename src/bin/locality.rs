//! The `locality` command-line tool. `locality gen` turns a compact spec into the Google Cloud
//! regional-failover HCL (see docs/guides/generator.md); `locality resolve` tells an
//! application which cache endpoint to read from (the `locality-resolve` crate, see
//! docs/guides/consuming-the-replica-map.md) and `locality sidecar` does the same for
//! applications that cannot change code (HAProxy steered by the map); `locality audit` says
//! where reads really went, from VPC Flow Logs; `locality lookup` and `locality ranges` answer
//! "which cloud region is this IP in".

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use locality::generator::command::{run, GenArgs};
use locality::generator::Format;
use locality::ranges::command;
use std::io::Write as _;

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
    /// Which cloud region is this IP in? (from the snapshot of the clouds' ranges the provider
    /// uses: --ranges FILE, else LOCALITY_RANGES_FILE, else the built-in one)
    Lookup {
        /// IPv4 or IPv6 addresses.
        #[arg(required = true)]
        ips: Vec<String>,
        /// One JSON object per address.
        #[arg(long)]
        json: bool,
        /// A snapshot file written by `locality ranges update` (default: LOCALITY_RANGES_FILE,
        /// else the built-in snapshot).
        #[arg(long, value_name = "FILE")]
        ranges: Option<PathBuf>,
    },
    /// Where reads to the cache went, from VPC Flow Logs: the in-zone share, the clients that
    /// read across zones, and what that costs a month (or the same as one Athena query).
    #[cfg(feature = "audit")]
    Audit(Box<locality::audit::AuditArgs>),
    /// `resolve` and `sidecar` (the application side, also in `locality-app`).
    #[command(flatten)]
    App(Box<locality_resolve::cli::AppCommand>),
    /// The IP-range snapshot: rebuild it from the clouds' files, or show one.
    Ranges {
        #[command(subcommand)]
        command: RangesCommand,
    },
}

#[derive(Subcommand)]
enum RangesCommand {
    /// Rebuild the IP-range snapshot from the clouds' official files (paths or https URLs).
    Update {
        /// AWS ip-ranges.json.
        #[arg(long, default_value = locality::ranges::command::AWS_URL)]
        aws: String,
        /// Google Cloud cloud.json.
        #[arg(long, default_value = locality::ranges::command::GCP_URL)]
        gcp: String,
        /// Azure ServiceTags_Public_YYYYMMDD.json (or the download page that links it).
        #[arg(long, default_value = locality::ranges::command::AZURE_PAGE)]
        azure: String,
        /// Oracle public_ip_ranges.json.
        #[arg(long, default_value = locality::ranges::command::OCI_URL)]
        oci: String,
        /// The snapshot's date (default: the newest date in the files).
        #[arg(long)]
        date: Option<String>,
        /// Where to write the snapshot (default: $XDG_DATA_HOME/locality/ranges.bin, else
        /// ~/.local/share/locality/ranges.bin). Point LOCALITY_RANGES_FILE at it.
        #[arg(short = 'o', long = "output", value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Show a snapshot's source, date, size and contents (--ranges FILE, else
    /// LOCALITY_RANGES_FILE, else the built-in one).
    Info {
        /// A snapshot file written by `locality ranges update`.
        #[arg(long, value_name = "FILE")]
        ranges: Option<PathBuf>,
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
        Command::App(command) => command.run(),
        #[cfg(feature = "audit")]
        Command::Audit(args) => ExitCode::from(locality::audit::run(
            &args,
            &mut std::io::stdout(),
            &mut std::io::stderr(),
        )),
        Command::Lookup { ips, json, ranges } => ExitCode::from(command::lookup(
            ranges.as_deref(),
            &ips,
            json,
            &mut std::io::stdout(),
            &mut std::io::stderr(),
        )),
        Command::Ranges {
            command: RangesCommand::Info { ranges },
        } => ExitCode::from(command::info(
            ranges.as_deref(),
            &mut std::io::stdout(),
            &mut std::io::stderr(),
        )),
        Command::Ranges {
            command:
                RangesCommand::Update {
                    aws,
                    gcp,
                    azure,
                    oci,
                    date,
                    output,
                },
        } => {
            let Some(output) = output.or_else(command::default_update_path) else {
                let _ = writeln!(
                    std::io::stderr(),
                    "error: neither XDG_DATA_HOME nor HOME is set: pass -o FILE"
                );
                return ExitCode::from(2);
            };
            let sources = command::Sources { aws, gcp, azure, oci };
            let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
            match runtime.block_on(command::update(&sources, date, &output, &mut std::io::stdout())) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    let _ = writeln!(std::io::stderr(), "error: {e}");
                    ExitCode::from(2)
                }
            }
        }
    }
}
