//! Process lifecycle: the go-plugin handshake, the gRPC server with its side services
//! (GRPCController.Shutdown, GRPCStdio), SIGINT handling, and debug (reattach) mode.
//!
//! The handshake line is the only thing this program ever writes to stdout.

use std::io::Write as _;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use base64::Engine as _;
use tokio::net::TcpListener;
use tokio_stream::wrappers::{ReceiverStream, TcpListenerStream};
use tokio_util::sync::CancellationToken;
use tonic::{Request, Response, Status};

use super::proto::plugin as pp;
use super::service::ProviderService;
use super::tls::server_identity;
use super::traits::Provider;

/// go-plugin's magic cookie for Terraform providers.
pub const MAGIC_COOKIE_KEY: &str = "TF_PLUGIN_MAGIC_COOKIE";
/// Its value.
pub const MAGIC_COOKIE_VALUE: &str = "d602bf8f470bc67ca7faa0386276bbdd4330efaf76d1a219cb4d6991ca9872b2";

/// How the binary was asked to run.
pub struct ServeOptions {
    /// The provider's source address, e.g. `registry.terraform.io/locality/locality`.
    pub address: &'static str,
    /// Debug mode: serve plaintext and print `TF_REATTACH_PROVIDERS`.
    pub debug: bool,
}

/// Runs a provider process until Terraform shuts it down. Returns the process exit code.
///
/// Only what the handshake needs comes before the handshake line, on the calling thread:
/// SIGINT ignored, the checks, the listener and the TLS identity. The async runtime and the
/// provider's service (its schemas) are built after the line is out, while Terraform dials and
/// runs its TLS handshake; the connection waits in the listen backlog meanwhile. Call it from a
/// plain `main`, not from inside a runtime.
pub fn run<P: Provider>(provider: impl FnOnce() -> P, options: ServeOptions) -> ExitCode {
    if options.debug {
        return match runtime() {
            Ok(rt) => rt.block_on(serve_debug(provider(), options.address)),
            Err(e) => exit_with(&format!("cannot start the async runtime: {e}")),
        };
    }
    if std::env::var(MAGIC_COOKIE_KEY).as_deref() != Ok(MAGIC_COOKIE_VALUE) {
        return exit_with(&format!(
            "This binary is a plugin for Terraform ({}). It is not meant to be run directly:\n\
             Terraform starts it when a configuration uses the provider.\n\
             To debug it, run it with --debug and follow the instructions it prints.",
            options.address
        ));
    }
    let versions = std::env::var("PLUGIN_PROTOCOL_VERSIONS").unwrap_or_default();
    if !versions.split(',').any(|v| v.trim() == "6") {
        return exit_with(&format!(
            "This provider speaks plugin protocol 6 only; Terraform offered {versions:?}. Use Terraform 1.0 or newer."
        ));
    }
    if let Err(e) = ignore_interrupts() {
        return exit_with(&format!("cannot ignore SIGINT: {e}"));
    }
    let listening = bind_in_plugin_range().and_then(|l| {
        l.set_nonblocking(true)?;
        let addr = l.local_addr()?;
        Ok((l, addr))
    });
    let (listener, addr) = match listening {
        Ok(l) => l,
        Err(e) => return exit_with(&format!("cannot listen on 127.0.0.1: {e}")),
    };
    let client_cert = std::env::var("PLUGIN_CLIENT_CERT").ok().filter(|c| !c.is_empty());
    let identity = match client_cert.as_deref().map(server_identity).transpose() {
        Ok(i) => i,
        Err(e) => return exit_with(&format!("cannot set up TLS: {e}")),
    };
    handshake(addr, identity.as_ref().map(|i| i.certificate_der.as_slice()));

    let rt = match runtime() {
        Ok(rt) => rt,
        Err(e) => return exit_with(&format!("cannot start the async runtime: {e}")),
    };
    rt.block_on(async move {
        let listener = match TcpListener::from_std(listener) {
            Ok(l) => l,
            Err(e) => return exit_with(&format!("cannot listen on 127.0.0.1: {e}")),
        };
        let shutdown = CancellationToken::new();
        let router = router(provider(), shutdown.clone());
        let served = match identity {
            Some(identity) => {
                // Built after the handshake line: Terraform dials while we finish.
                let config = match identity.config() {
                    Ok(config) => config,
                    Err(e) => return exit_with(&format!("cannot set up TLS: {e}")),
                };
                let incoming = tls_incoming(listener, tokio_rustls::TlsAcceptor::from(config));
                tokio::spawn(router.serve_with_incoming_shutdown(incoming, shutdown.clone().cancelled_owned()))
            }
            // TF_DISABLE_PLUGIN_TLS: Terraform speaks plaintext and passes no certificate.
            None => tokio::spawn(
                router.serve_with_incoming_shutdown(no_delay(listener), shutdown.clone().cancelled_owned()),
            ),
        };
        shutdown.cancelled().await;
        // Give the Shutdown reply a moment to leave, then exit without waiting for Terraform to
        // hang up: it waits for our exit, not for a graceful close.
        let _ = tokio::time::timeout(Duration::from_millis(50), served).await;
        ExitCode::SUCCESS
    })
}

/// The multi-threaded runtime every provider process serves on.
fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread().enable_all().build()
}

/// Says why the process cannot serve, on stderr (Terraform shows it), and gives exit code 1.
fn exit_with(message: &str) -> ExitCode {
    super::logging::eprint_plain(message);
    ExitCode::from(1)
}

fn router<P: Provider>(provider: P, shutdown: CancellationToken) -> tonic::transport::server::Router {
    let stop = CancellationToken::new();
    tonic::transport::Server::builder()
        .add_service(ProviderService::new(provider, stop).into_server())
        .add_service(pp::grpc_controller_server::GrpcControllerServer::new(Controller {
            shutdown,
        }))
        .add_service(pp::grpc_stdio_server::GrpcStdioServer::new(Stdio))
}

/// Prints `1|6|tcp|ADDR|grpc|CERT`: core protocol 1, app protocol 6, and the server
/// certificate as unpadded standard base64 of its DER (go-plugin's RawStdEncoding).
#[allow(clippy::print_stdout)]
fn handshake(addr: SocketAddr, certificate_der: Option<&[u8]>) {
    let cert = certificate_der
        .map(|der| base64::engine::general_purpose::STANDARD_NO_PAD.encode(der))
        .unwrap_or_default();
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "1|6|tcp|{addr}|grpc|{cert}");
    let _ = stdout.flush();
}

/// Set by SIGINT; nothing reads it: registering it is what keeps the signal from ending us.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Terraform shares our process group, so a terminal Ctrl-C reaches us too; Terraform
/// handles it by sending StopProvider, and dying here would abort applies mid-way. Installed
/// before the handshake line, so there is no moment when Terraform knows us and Ctrl-C kills us.
fn ignore_interrupts() -> std::io::Result<()> {
    signal_hook::flag::register(signal_hook::consts::SIGINT, &INTERRUPTED).map(|_| ())
}

/// Binds 127.0.0.1 on a port in Terraform's PLUGIN_MIN_PORT..=PLUGIN_MAX_PORT (any port when
/// they are unset).
fn bind_in_plugin_range() -> std::io::Result<std::net::TcpListener> {
    let min: u16 = std::env::var("PLUGIN_MIN_PORT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let max: u16 = std::env::var("PLUGIN_MAX_PORT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    if min == 0 || max < min {
        return std::net::TcpListener::bind("127.0.0.1:0");
    }
    // Start at a pid-dependent port so that parallel providers rarely collide.
    let span = u32::from(max - min) + 1;
    let offset = std::process::id() % span;
    let mut last_error = None;
    for i in 0..span {
        let port = min + ((offset + i) % span) as u16;
        match std::net::TcpListener::bind(("127.0.0.1", port)) {
            Ok(l) => return Ok(l),
            Err(e) => last_error = Some(e),
        }
    }
    Err(last_error.unwrap_or_else(|| std::io::Error::other("empty port range")))
}

/// Plaintext connections with TCP_NODELAY set (see `tls_incoming`).
fn no_delay(listener: TcpListener) -> impl tokio_stream::Stream<Item = std::io::Result<tokio::net::TcpStream>> {
    use tokio_stream::StreamExt as _;
    TcpListenerStream::new(listener).map(|conn| {
        let conn = conn?;
        conn.set_nodelay(true)?;
        Ok(conn)
    })
}

type TlsStream = tokio_rustls::server::TlsStream<tokio::net::TcpStream>;

/// How long a connection may take to complete its TLS handshake (Terraform takes
/// milliseconds); a peer that connects and stays silent is dropped after this.
const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);

/// The pause after a failed accept (e.g. out of file descriptors), so the loop does not spin.
const ACCEPT_ERROR_PAUSE: Duration = Duration::from_millis(100);

/// Accepts TCP connections and completes the TLS handshake (with client authentication)
/// before tonic sees them; refused connections never reach the gRPC server.
fn tls_incoming(
    listener: TcpListener,
    acceptor: tokio_rustls::TlsAcceptor,
) -> ReceiverStream<std::io::Result<TlsStream>> {
    let (tx, rx) = tokio::sync::mpsc::channel(16);
    tokio::spawn(async move {
        loop {
            let tcp = match listener.accept().await {
                Ok((tcp, _)) => tcp,
                Err(e) => {
                    tracing::warn!(error = %e, "accepting a connection failed; pausing before the next");
                    tokio::time::sleep(ACCEPT_ERROR_PAUSE).await;
                    continue;
                }
            };
            // gRPC is request/response: Nagle + delayed ACKs would add ~40 ms per round trip.
            let _ = tcp.set_nodelay(true);
            let (acceptor, tx) = (acceptor.clone(), tx.clone());
            tokio::spawn(async move {
                match tokio::time::timeout(TLS_HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
                    Ok(Ok(tls)) => {
                        let _ = tx.send(Ok(tls)).await;
                    }
                    Ok(Err(e)) => {
                        tracing::warn!(error = %e, "refused a connection that failed TLS client authentication")
                    }
                    Err(_) => tracing::warn!("dropped a connection that did not finish its TLS handshake in time"),
                }
            });
        }
    });
    ReceiverStream::new(rx)
}

/// Debug mode: plaintext on 127.0.0.1, prints the `TF_REATTACH_PROVIDERS` value, runs until
/// Ctrl-C. Terraform connects to it instead of starting the provider itself.
#[allow(clippy::print_stdout)]
async fn serve_debug<P: Provider>(provider: P, address: &str) -> ExitCode {
    let listener = match TcpListener::bind("127.0.0.1:0").await {
        Ok(l) => l,
        Err(e) => {
            super::logging::eprint_plain(&format!("cannot listen on 127.0.0.1: {e}"));
            return ExitCode::from(1);
        }
    };
    let addr = listener.local_addr().expect("bound listener has an address");
    let reattach = serde_json::json!({
        address: {
            "Protocol": "grpc",
            "ProtocolVersion": 6,
            "Pid": std::process::id(),
            "Test": true,
            "Addr": {"Network": "tcp", "String": addr.to_string()},
        }
    });
    println!(
        "Provider started. To attach Terraform CLI, set the TF_REATTACH_PROVIDERS environment variable with the following:\n\n\tTF_REATTACH_PROVIDERS='{reattach}'\n"
    );
    let _ = std::io::stdout().flush();
    let shutdown = CancellationToken::new();
    let server = router(provider, shutdown.clone()).serve_with_incoming_shutdown(no_delay(listener), async move {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            () = shutdown.cancelled() => {}
        }
    });
    match server.await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            super::logging::eprint_plain(&format!("server error: {e}"));
            ExitCode::from(1)
        }
    }
}

/// Serves `provider` in plaintext on `listener` (with the Shutdown and Stdio side services)
/// until `shutdown` is cancelled: what tests use to drive the protocol layer in-process, and
/// what `--debug` mode does. Terraform attaches to it through `TF_REATTACH_PROVIDERS`.
///
/// # Errors
/// When the server fails.
pub async fn serve_plaintext<P: Provider>(
    provider: P,
    listener: TcpListener,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    router(provider, shutdown.clone())
        .serve_with_incoming_shutdown(no_delay(listener), shutdown.cancelled_owned())
        .await
        .map_err(std::io::Error::other)
}

struct Controller {
    shutdown: CancellationToken,
}

#[tonic::async_trait]
impl pp::grpc_controller_server::GrpcController for Controller {
    async fn shutdown(&self, _: Request<pp::Empty>) -> Result<Response<pp::Empty>, Status> {
        tracing::debug!("Shutdown requested by Terraform");
        self.shutdown.cancel();
        Ok(Response::new(pp::Empty {}))
    }
}

struct Stdio;

#[tonic::async_trait]
impl pp::grpc_stdio_server::GrpcStdio for Stdio {
    async fn stream_stdio(&self, _: Request<()>) -> Result<Response<tonic::codegen::BoxStream<pp::StdioData>>, Status> {
        // We never write to stdout or stderr outside logging, so there is nothing to forward.
        Ok(Response::new(Box::pin(tokio_stream::empty())))
    }
}
