//! Is a cache node alive? Connect, send a Redis `PING`, and take any reply as proof: `+PONG`,
//! and also `-NOAUTH` (ElastiCache with AUTH answers so before authentication). With TLS
//! (ElastiCache in-transit encryption) the handshake comes first. The whole check — name
//! lookup included — runs within one time limit, on a thread of its own.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The RESP form of `PING`.
const PING: &[u8] = b"*1\r\n$4\r\nPING\r\n";

/// Pings `endpoint` (`host:port`); `Err` says why it is not alive.
///
/// # Errors
/// A short phrase: `connection refused`, `no answer within 300 ms`, ...
pub fn ping(endpoint: &str, timeout: Duration, tls: bool) -> Result<(), String> {
    let (tx, rx) = mpsc::channel();
    let target = endpoint.to_string();
    std::thread::spawn(move || {
        let _ = tx.send(ping_blocking(&target, timeout, tls));
    });
    match rx.recv_timeout(timeout) {
        Ok(result) => result,
        Err(_) => Err(format!("no answer within {} ms", timeout.as_millis())),
    }
}

fn ping_blocking(endpoint: &str, timeout: Duration, tls: bool) -> Result<(), String> {
    let started = Instant::now();
    let addr = endpoint
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve the host ({})", e.kind()))?
        .next()
        .ok_or("the host has no address")?;
    let left = |started: Instant| timeout.saturating_sub(started.elapsed()).max(Duration::from_millis(1));
    let mut stream = TcpStream::connect_timeout(&addr, left(started)).map_err(|e| match e.kind() {
        std::io::ErrorKind::ConnectionRefused => "connection refused".to_string(),
        std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock => {
            format!("no connection within {} ms", timeout.as_millis())
        }
        kind => format!("connection failed ({kind})"),
    })?;
    stream
        .set_read_timeout(Some(left(started)))
        .map_err(|e| e.to_string())?;
    stream
        .set_write_timeout(Some(left(started)))
        .map_err(|e| e.to_string())?;
    let mut first = [0u8; 1];
    if tls {
        tls_ping(endpoint, stream, &mut first)?;
    } else {
        stream
            .write_all(PING)
            .map_err(|e| format!("the PING could not be sent ({})", e.kind()))?;
        read_reply(&mut stream, &mut first, timeout)?;
    }
    Ok(())
}

fn read_reply(stream: &mut impl Read, first: &mut [u8; 1], timeout: Duration) -> Result<(), String> {
    match stream.read(first) {
        Ok(0) => Err("the connection was closed without a reply".into()),
        Ok(_) => Ok(()),
        Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
            Err(format!("no reply within {} ms", timeout.as_millis()))
        }
        Err(e) => Err(format!("no reply ({})", e.kind())),
    }
}

#[cfg(feature = "tls")]
fn tls_ping(endpoint: &str, stream: TcpStream, first: &mut [u8; 1]) -> Result<(), String> {
    use std::sync::Arc;
    let host = endpoint.rsplit_once(':').map_or(endpoint, |(h, _)| h);
    let host = host.trim_start_matches('[').trim_end_matches(']').to_string();
    let mut roots = rustls::RootCertStore::empty();
    let found = rustls_native_certs::load_native_certs();
    for cert in found.certs {
        let _ = roots.add(cert);
    }
    if let Some(path) = std::env::var_os("LOCALITY_TLS_CA_FILE") {
        use rustls::pki_types::pem::PemObject;
        let certs = rustls::pki_types::CertificateDer::pem_file_iter(&path)
            .map_err(|e| format!("LOCALITY_TLS_CA_FILE cannot be read ({e})"))?;
        for cert in certs.flatten() {
            let _ = roots.add(cert);
        }
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::aws_lc_rs::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let name =
        rustls::pki_types::ServerName::try_from(host).map_err(|_| "the host is not a TLS server name".to_string())?;
    let connection = rustls::ClientConnection::new(Arc::new(config), name).map_err(|e| e.to_string())?;
    let mut tls = rustls::StreamOwned::new(connection, stream);
    tls.write_all(PING)
        .map_err(|e| format!("TLS handshake or PING failed ({e})"))?;
    tls.flush().map_err(|e| format!("TLS handshake or PING failed ({e})"))?;
    read_reply(&mut tls, first, Duration::ZERO).map_err(|e| format!("TLS: {e}"))
}

#[cfg(not(feature = "tls"))]
fn tls_ping(_endpoint: &str, _stream: TcpStream, _first: &mut [u8; 1]) -> Result<(), String> {
    Err("this build has no TLS (the `tls` feature of locality-resolve)".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn any_reply_is_alive_and_silence_is_not() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            for stream in listener.incoming().take(2) {
                let mut s = stream.unwrap();
                let mut buf = [0u8; 14];
                let _ = s.read_exact(&mut buf);
                let _ = s.write_all(b"-NOAUTH Authentication required.\r\n");
            }
        });
        assert_eq!(ping(&addr.to_string(), Duration::from_millis(500), false), Ok(()));
        // A listener that accepts and never answers.
        let silent = TcpListener::bind("127.0.0.1:0").unwrap();
        let silent_addr = silent.local_addr().unwrap();
        let started = Instant::now();
        let err = ping(&silent_addr.to_string(), Duration::from_millis(200), false).unwrap_err();
        assert!(err.contains("200 ms"), "{err}");
        assert!(started.elapsed() < Duration::from_millis(600));
        drop(silent);
        // Nothing listening.
        let closed = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
        assert_eq!(
            ping(&closed.to_string(), Duration::from_millis(200), false),
            Err("connection refused".into())
        );
    }
}
