//! The provider binary's process contract: magic cookie, protocol version, the handshake
//! line, AutoMTLS with real client authentication, Shutdown, and debug (reattach) mode.

mod common;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine as _;
use common::proto::plugin::grpc_controller_client::GrpcControllerClient;
use common::proto::tfplugin6::{get_provider_schema, provider_client::ProviderClient};
use locality::tfplugin::{MAGIC_COOKIE_KEY, MAGIC_COOKIE_VALUE};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::ResolvesClientCert;
use rustls::crypto::aws_lc_rs;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName, UnixTime};
use rustls::sign::CertifiedKey;
use rustls::{DigitallySignedStruct, SignatureScheme};

/// A client identity made the way Terraform makes it: P-521, self-signed, CA:TRUE.
struct ClientIdentity {
    pem: String,
    der: Vec<u8>,
    key_der: Vec<u8>,
    key_pem: String,
}

impl ClientIdentity {
    /// Authenticates with this certificate and its own key.
    fn auth(&self) -> ClientAuth<'_> {
        ClientAuth::Cert {
            cert_der: &self.der,
            key_der: &self.key_der,
        }
    }
}

fn terraform_like_identity() -> ClientIdentity {
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P521_SHA512).unwrap();
    let mut params = rcgen::CertificateParams::new(vec!["localhost".into()]).unwrap();
    params.distinguished_name.push(rcgen::DnType::CommonName, "localhost");
    params
        .distinguished_name
        .push(rcgen::DnType::OrganizationName, "HashiCorp");
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params.extended_key_usages = vec![
        rcgen::ExtendedKeyUsagePurpose::ClientAuth,
        rcgen::ExtendedKeyUsagePurpose::ServerAuth,
    ];
    let cert = params.self_signed(&key).unwrap();
    ClientIdentity {
        pem: cert.pem(),
        der: cert.der().to_vec(),
        key_der: key.serialize_der(),
        key_pem: key.serialize_pem(),
    }
}

struct Plugin {
    child: Child,
    addr: SocketAddr,
    server_cert: Vec<u8>,
}

impl Drop for Plugin {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_plugin(client_cert_pem: Option<&str>) -> Plugin {
    let mut cmd = Command::new(common::provider_binary());
    cmd.env(MAGIC_COOKIE_KEY, MAGIC_COOKIE_VALUE)
        .env("PLUGIN_PROTOCOL_VERSIONS", "6,5")
        .env("PLUGIN_MIN_PORT", "10000")
        .env("PLUGIN_MAX_PORT", "25000")
        .env_remove("TF_LOG")
        .env_remove("TF_LOG_PROVIDER")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    match client_cert_pem {
        Some(pem) => cmd.env("PLUGIN_CLIENT_CERT", pem),
        None => cmd.env_remove("PLUGIN_CLIENT_CERT"),
    };
    let mut child = cmd.spawn().unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let parts: Vec<&str> = line.trim_end().split('|').collect();
    assert_eq!(parts.len(), 6, "handshake line {line:?}");
    assert_eq!(&parts[..3], ["1", "6", "tcp"]);
    assert_eq!(parts[4], "grpc");
    let addr: SocketAddr = parts[3].parse().unwrap();
    assert!(addr.ip().is_loopback());
    assert!(
        (10000..=25000).contains(&addr.port()),
        "port from PLUGIN_MIN/MAX_PORT: {addr}"
    );
    assert!(!parts[5].contains('='), "the certificate is unpadded base64");
    let server_cert = base64::engine::general_purpose::STANDARD_NO_PAD
        .decode(parts[5])
        .unwrap();
    assert_eq!(server_cert.is_empty(), client_cert_pem.is_none());
    Plugin {
        child,
        addr,
        server_cert,
    }
}

#[derive(Debug)]
struct PinnedServer(Vec<u8>);

impl ServerCertVerifier for PinnedServer {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        assert_eq!(
            end_entity.as_ref(),
            self.0.as_slice(),
            "server presents the handshake certificate"
        );
        Ok(ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        m: &[u8],
        c: &CertificateDer<'_>,
        d: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            m,
            c,
            d,
            &aws_lc_rs::default_provider().signature_verification_algorithms,
        )
    }
    fn verify_tls13_signature(
        &self,
        m: &[u8],
        c: &CertificateDer<'_>,
        d: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            m,
            c,
            d,
            &aws_lc_rs::default_provider().signature_verification_algorithms,
        )
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        aws_lc_rs::default_provider()
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// Presents a certificate with whatever key it is given (even one that does not match).
#[derive(Debug)]
struct Presents(Arc<CertifiedKey>);

impl ResolvesClientCert for Presents {
    fn resolve(&self, _: &[&[u8]], _: &[SignatureScheme]) -> Option<Arc<CertifiedKey>> {
        Some(self.0.clone())
    }
    fn has_certs(&self) -> bool {
        true
    }
}

enum ClientAuth<'a> {
    None,
    Cert { cert_der: &'a [u8], key_der: &'a [u8] },
}

async fn get_schema(plugin: &Plugin, auth: ClientAuth<'_>) -> Result<get_provider_schema::Response, String> {
    let provider = Arc::new(aws_lc_rs::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .unwrap()
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(PinnedServer(plugin.server_cert.clone())));
    let mut config = match auth {
        ClientAuth::None => builder.with_no_client_auth(),
        ClientAuth::Cert { cert_der, key_der } => {
            let key = provider
                .key_provider
                .load_private_key(PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key_der.to_vec())))
                .unwrap();
            let certified = CertifiedKey::new(vec![CertificateDer::from(cert_der.to_vec())], key);
            builder.with_client_cert_resolver(Arc::new(Presents(Arc::new(certified))))
        }
    };
    config.alpn_protocols = vec![b"h2".to_vec()];
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let addr = plugin.addr;
    let channel = tonic::transport::Endpoint::from_static("http://localhost")
        .connect_with_connector(tower::service_fn(move |_| {
            let connector = connector.clone();
            async move {
                let tcp = tokio::net::TcpStream::connect(addr).await?;
                let tls = connector
                    .connect(ServerName::try_from("localhost").unwrap(), tcp)
                    .await?;
                Ok::<_, std::io::Error>(hyper_util::rt::TokioIo::new(tls))
            }
        }))
        .await
        .map_err(|e| format!("connect: {e:?}"))?;
    let mut client = ProviderClient::new(channel);
    let call = client.get_provider_schema(get_provider_schema::Request {});
    match tokio::time::timeout(Duration::from_secs(10), call).await {
        Ok(Ok(r)) => Ok(r.into_inner()),
        Ok(Err(status)) => Err(format!("rpc: {status}")),
        Err(_) => Err("timed out".into()),
    }
}

#[tokio::test]
async fn only_the_certificate_terraform_passed_with_its_key_is_accepted() {
    let terraform = terraform_like_identity();
    let plugin = start_plugin(Some(&terraform.pem));

    let schema = get_schema(&plugin, terraform.auth())
        .await
        .expect("Terraform's own certificate and key are accepted");
    assert!(schema.resource_schemas.contains_key("locality_zone_replica_map"));

    let refused = get_schema(&plugin, ClientAuth::None).await;
    assert!(refused.is_err(), "a client without a certificate is refused");

    let other = terraform_like_identity();
    let refused = get_schema(
        &plugin,
        ClientAuth::Cert {
            cert_der: &other.der,
            key_der: &other.key_der,
        },
    )
    .await;
    assert!(refused.is_err(), "another certificate is refused");

    let refused = get_schema(
        &plugin,
        ClientAuth::Cert {
            cert_der: &terraform.der,
            key_der: &other.key_der,
        },
    )
    .await;
    assert!(
        refused.is_err(),
        "the right certificate with another key is refused (handshake signature)"
    );

    // The server still serves the legitimate client after refusing the others.
    get_schema(
        &plugin,
        ClientAuth::Cert {
            cert_der: &terraform.der,
            key_der: &terraform.key_der,
        },
    )
    .await
    .unwrap();
}

/// Terraform shares its process group with providers, so a terminal Ctrl-C reaches them; the
/// provider ignores SIGINT from before it prints the handshake line (Terraform cancels through
/// StopProvider instead). Sent the moment the line is read, it must not end the process.
#[tokio::test]
async fn sigint_right_after_the_handshake_line_does_not_end_the_provider() {
    let terraform = terraform_like_identity();
    let mut plugin = start_plugin(Some(&terraform.pem));
    let sent = Command::new("kill")
        .args(["-INT", &plugin.child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        plugin.child.try_wait().unwrap().is_none(),
        "the provider exited on SIGINT"
    );
    let schema = get_schema(&plugin, terraform.auth())
        .await
        .expect("still serves after SIGINT");
    assert!(schema.resource_schemas.contains_key("locality_zone_replica_map"));
}

#[tokio::test]
async fn shutdown_makes_the_process_exit() {
    // Plaintext (TF_DISABLE_PLUGIN_TLS: no PLUGIN_CLIENT_CERT) keeps this test about Shutdown.
    let mut plugin = start_plugin(None);
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{}", plugin.addr))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let started = Instant::now();
    GrpcControllerClient::new(channel)
        .shutdown(common::proto::plugin::Empty {})
        .await
        .expect("Shutdown is served");
    // Terraform kills a provider that has not exited 2 s after Shutdown.
    loop {
        if let Some(status) = plugin.child.try_wait().unwrap() {
            assert!(status.success(), "{status}");
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "the provider did not exit after Shutdown"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[test]
fn refuses_to_run_without_the_magic_cookie_or_protocol_6() {
    let out = Command::new(common::provider_binary())
        .env_remove(MAGIC_COOKIE_KEY)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty(), "nothing on stdout");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("plugin for Terraform") && stderr.contains("--debug"),
        "{stderr}"
    );

    let out = Command::new(common::provider_binary())
        .env(MAGIC_COOKIE_KEY, MAGIC_COOKIE_VALUE)
        .env("PLUGIN_PROTOCOL_VERSIONS", "5")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("protocol 6"));
}

#[test]
fn debug_mode_prints_reattach_config_that_terraform_uses() {
    let mut child = Command::new(common::provider_binary())
        .arg("--debug")
        .env_remove(MAGIC_COOKIE_KEY)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    let mut reattach = None;
    for _ in 0..10 {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        if let Some(rest) = line.trim().strip_prefix("TF_REATTACH_PROVIDERS='") {
            reattach = Some(rest.trim_end_matches('\'').to_string());
            break;
        }
    }
    let reattach = reattach.expect("TF_REATTACH_PROVIDERS line");
    let json: serde_json::Value = serde_json::from_str(&reattach).unwrap();
    let entry = &json["registry.terraform.io/locality/locality"];
    assert_eq!(entry["ProtocolVersion"], 6);
    assert_eq!(entry["Test"], true);

    // Terraform attaches to it: no dev_overrides, no init.
    let mut tf = common::Terraform::with_empty_cli_config();
    tf.env("TF_REATTACH_PROVIDERS", &reattach);
    // An absolute path: a reattached provider runs in its own working directory, not Terraform's.
    let published = tf.path("m.json");
    tf.write(
        "main.tf",
        &format!("{}\nresource \"locality_zone_replica_map\" \"m\" {{\n  fallback_endpoint = \"r.example:6379\"\n  member {{\n    endpoint = \"n1.example:6379\"\n    zone     = \"ap-northeast-1a\"\n  }}\n  file {{\n    path = \"{}\"\n  }}\n}}\n", common::PREAMBLE, published.display()),
    );
    let out = tf.ok(&["apply", "-auto-approve"]);
    assert!(out.contains("1 added"), "{out}");
    assert!(published.exists());
    tf.ok(&["destroy", "-auto-approve"]);
    assert!(!published.exists());
    let _ = child.kill();
    let _ = child.wait();
}

/// Issue 11: a peer that connects and never starts the TLS handshake is dropped after the
/// handshake timeout (5 s) instead of holding its task forever.
#[tokio::test]
async fn a_silent_peer_is_dropped_after_the_handshake_timeout() {
    use tokio::io::AsyncReadExt as _;
    let identity = terraform_like_identity();
    let plugin = start_plugin(Some(&identity.pem));
    let mut silent = tokio::net::TcpStream::connect(plugin.addr).await.unwrap();
    let started = std::time::Instant::now();
    let mut buf = [0u8; 16];
    let read = tokio::time::timeout(Duration::from_secs(15), silent.read(&mut buf)).await;
    let closed = matches!(read, Ok(Ok(0)) | Ok(Err(_)));
    assert!(closed, "the server closed the connection: {read:?}");
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_secs(4) && waited < Duration::from_secs(10),
        "{waited:?}"
    );
}

/// A go-plugin client that is not Go: Python's `grpcio` (gRPC's C core and BoringSSL, which
/// refuse Ed25519 server certificates) starts the provider as go-plugin does, completes
/// AutoMTLS with its certificate in `PLUGIN_CLIENT_CERT` and the server's from the handshake
/// line, calls GetMetadata, GetProviderSchema, CallFunction and StopProvider, is refused with
/// another certificate, and shuts the provider down (`tests/grpcio/go_plugin_client.py`;
/// scripts/test installs grpcio in target/grpc-venv and sets `LOCALITY_GRPC_PYTHON`).
#[test]
fn a_grpcio_client_completes_automtls_and_calls_the_provider() {
    let python = std::env::var("LOCALITY_GRPC_PYTHON")
        .expect("LOCALITY_GRPC_PYTHON must name a Python with grpcio and grpcio-tools: run scripts/test, which installs them in target/grpc-venv");
    let dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for (name, identity) in [
        ("client", terraform_like_identity()),
        ("other", terraform_like_identity()),
    ] {
        for (suffix, text) in [("cert", &identity.pem), ("key", &identity.key_pem)] {
            let path = dir.path().join(format!("{name}-{suffix}.pem"));
            std::fs::write(&path, text).unwrap();
            files.push(path);
        }
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new(python)
        .arg(root.join("tests/grpcio/go_plugin_client.py"))
        .arg(common::provider_binary())
        .args(&files)
        .arg(root.join("proto"))
        .output()
        .unwrap();
    let transcript = String::from_utf8_lossy(&out.stdout);
    eprintln!("{transcript}");
    assert!(
        out.status.success(),
        "{transcript}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for step in [
        "handshake: 1|6|tcp|127.0.0.1:",
        "server certificate: Public Key Algorithm: id-ecPublicKey NIST CURVE: P-256",
        "TLS: connected",
        "GetMetadata: resources locality_lb_forward_weights, locality_region_hint, locality_region_hints, locality_weighted_backend, locality_zone_replica_map",
        "GetProviderSchema: provider blocks aws, cloudflare, google",
        "CallFunction canonical_ip(\"2001:DB8::0001\"): '2001:db8::1'",
        "StopProvider: error ''",
        "another certificate: refused",
        "Shutdown: the provider exited with 0",
    ] {
        assert!(transcript.contains(step), "{step:?} in\n{transcript}");
    }
}
