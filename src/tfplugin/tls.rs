//! AutoMTLS: the server certificate printed in the handshake, and real client authentication.
//!
//! Terraform generates a fresh P-521 client certificate per provider process and passes it in
//! `PLUGIN_CLIENT_CERT`. We accept exactly that certificate and, through rustls, verify the
//! handshake signature made with its key (pinning alone would admit anyone who can read our
//! environment). The stock webpki verifier cannot be used: Terraform's certificate is a CA
//! presented as an end entity (basicConstraints CA:TRUE, self-signed), which webpki refuses.

use std::sync::Arc;

use rustls::client::danger::HandshakeSignatureValid;
use rustls::crypto::{aws_lc_rs, verify_tls12_signature, verify_tls13_signature, WebPkiSupportedAlgorithms};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{CertificateError, DigitallySignedStruct, DistinguishedName, Error, ServerConfig, SignatureScheme};

/// A generated server identity: the DER certificate for the handshake line, and what the TLS
/// configuration is built from after that line is out ([`ServerIdentity::config`]), so that
/// Terraform learns our address as early as possible.
pub(crate) struct ServerIdentity {
    /// The server's leaf certificate (DER), printed base64 in the handshake line.
    pub(crate) certificate_der: Vec<u8>,
    /// The certificate's private key (PKCS#8 DER).
    key_der: Vec<u8>,
    /// The client certificate Terraform passed (DER), the only one accepted.
    expected: Vec<u8>,
}

/// Errors while setting up TLS.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TlsSetupError {
    /// `PLUGIN_CLIENT_CERT` holds no PEM certificate.
    #[error("PLUGIN_CLIENT_CERT does not hold a PEM certificate")]
    NoClientCertificate,
    /// Certificate generation failed.
    #[error("cannot generate the server certificate: {0}")]
    Generate(#[from] rcgen::Error),
    /// rustls refused the configuration.
    #[error("cannot configure TLS: {0}")]
    Rustls(#[from] Error),
}

/// Generates the server identity that accepts only the client certificate in `client_cert_pem`.
///
/// # Errors
/// [`TlsSetupError`] when the PEM is unusable or the certificate cannot be generated.
pub(crate) fn server_identity(client_cert_pem: &str) -> Result<ServerIdentity, TlsSetupError> {
    let expected = first_pem_certificate(client_cert_pem).ok_or(TlsSetupError::NoClientCertificate)?;
    // ECDSA P-256, as providers built with the Go SDK present: every go-plugin client accepts
    // it, where gRPC's C core (BoringSSL: Python's grpcio, C++, Ruby) refuses an Ed25519
    // server certificate. Start-up stays the same (measured: 3.96 ms against Ed25519's 3.93 ms
    // to the handshake line, median of 60 launches each).
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256)?;
    let mut params = rcgen::CertificateParams::new(vec!["localhost".to_string()])?;
    params.distinguished_name.push(rcgen::DnType::CommonName, "localhost");
    let cert = params.self_signed(&key)?;
    Ok(ServerIdentity {
        certificate_der: cert.der().to_vec(),
        key_der: key.serialize_der(),
        expected,
    })
}

impl ServerIdentity {
    /// The TLS 1.2/1.3 server configuration: this certificate, ALPN `h2`, and the verifier
    /// pinned to Terraform's client certificate.
    ///
    /// # Errors
    /// [`TlsSetupError::Rustls`] when rustls refuses the configuration.
    pub(crate) fn config(self) -> Result<Arc<ServerConfig>, TlsSetupError> {
        let provider = Arc::new(aws_lc_rs::default_provider());
        let verifier = PinnedClientCertificate {
            expected: self.expected,
            algorithms: provider.signature_verification_algorithms,
        };
        let mut config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_client_cert_verifier(Arc::new(verifier))
            .with_single_cert(
                vec![CertificateDer::from(self.certificate_der)],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(self.key_der)),
            )?;
        // grpc-go (Terraform >= 1.12) refuses servers that do not select h2.
        config.alpn_protocols = vec![b"h2".to_vec()];
        Ok(Arc::new(config))
    }
}

/// The DER bytes of the first `CERTIFICATE` block of a PEM text.
pub(crate) fn first_pem_certificate(pem: &str) -> Option<Vec<u8>> {
    use base64::Engine as _;
    let start = pem.find("-----BEGIN CERTIFICATE-----")? + "-----BEGIN CERTIFICATE-----".len();
    let end = start + pem[start..].find("-----END CERTIFICATE-----")?;
    let body: String = pem[start..end].chars().filter(|c| !c.is_whitespace()).collect();
    base64::engine::general_purpose::STANDARD.decode(body).ok()
}

#[derive(Debug)]
struct PinnedClientCertificate {
    expected: Vec<u8>,
    algorithms: WebPkiSupportedAlgorithms,
}

impl ClientCertVerifier for PinnedClientCertificate {
    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &[]
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, Error> {
        if end_entity.as_ref() == self.expected.as_slice() {
            Ok(ClientCertVerified::assertion())
        } else {
            tracing::warn!("refused a TLS client whose certificate is not the one Terraform passed");
            Err(Error::InvalidCertificate(
                CertificateError::ApplicationVerificationFailure,
            ))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}
