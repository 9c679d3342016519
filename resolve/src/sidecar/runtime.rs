//! HAProxy's runtime API over its stats socket (`level admin`): one command per connection,
//! the reply read to the end. Used to move servers to new addresses when the map changes, to
//! read the per-server statistics, and to close sessions on replicas marked down.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::haproxy::{is_ip, replica_server, split, BACKEND, READER};
use super::Layout;

/// The runtime API of one HAProxy.
#[derive(Debug, Clone)]
pub struct Admin {
    socket: PathBuf,
}

/// One server's line of `show stat`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerStat {
    /// `zone1`, ..., `reader`.
    pub name: String,
    /// `UP`, `DOWN`, `MAINT`, `UP 1/2`, ...
    pub status: String,
    /// Sessions open now.
    pub current_sessions: u64,
    /// Sessions since start.
    pub total_sessions: u64,
    /// Bytes sent to clients (the replies: what was read).
    pub bytes_out: u64,
    /// Whether it is the backup (the reader while the zone has replicas).
    pub backup: bool,
    /// The address in use.
    pub address: String,
}

impl Admin {
    /// The API at `socket` (a path through the run directory's handle where the system offers
    /// one: [`crate::trusted::TrustedDir::path_of`]).
    pub fn new(socket: &Path) -> Admin {
        Admin {
            socket: socket.to_path_buf(),
        }
    }

    /// Sends one command; the reply text.
    ///
    /// # Errors
    /// The socket cannot be reached or the reply cannot be read.
    pub fn command(&self, command: &str) -> std::io::Result<String> {
        let mut stream = UnixStream::connect(&self.socket)?;
        stream.set_read_timeout(Some(Duration::from_secs(5)))?;
        stream.set_write_timeout(Some(Duration::from_secs(5)))?;
        stream.write_all(format!("{command}\n").as_bytes())?;
        let mut reply = String::new();
        stream.read_to_string(&mut reply)?;
        Ok(reply)
    }

    /// The servers of the sidecar's backend.
    ///
    /// # Errors
    /// As [`Admin::command`].
    pub fn servers(&self) -> std::io::Result<Vec<ServerStat>> {
        Ok(parse_stat(&self.command("show stat")?))
    }
}

/// The servers of the sidecar's backend in a `show stat` CSV.
pub fn parse_stat(csv: &str) -> Vec<ServerStat> {
    let mut lines = csv.lines();
    let Some(header) = lines.next().and_then(|h| h.strip_prefix("# ")) else {
        return Vec::new();
    };
    let columns: Vec<&str> = header.split(',').collect();
    let at = |name: &str| columns.iter().position(|c| *c == name);
    let (Some(px), Some(sv), Some(status), Some(scur), Some(stot), Some(bout), Some(bck), Some(addr)) = (
        at("pxname"),
        at("svname"),
        at("status"),
        at("scur"),
        at("stot"),
        at("bout"),
        at("bck"),
        at("addr"),
    ) else {
        return Vec::new();
    };
    lines
        .map(|line| line.split(',').collect::<Vec<_>>())
        .filter(|f| f.get(px) == Some(&BACKEND) && !matches!(f.get(sv), Some(&"BACKEND") | Some(&"FRONTEND")))
        .map(|f| {
            let text = |i: usize| f.get(i).copied().unwrap_or_default().to_string();
            let number = |i: usize| f.get(i).and_then(|v| v.parse().ok()).unwrap_or(0);
            ServerStat {
                name: text(sv),
                status: text(status),
                current_sessions: number(scur),
                total_sessions: number(stot),
                bytes_out: number(bout),
                backup: number(bck) == 1,
                address: text(addr),
            }
        })
        .collect()
}

/// The runtime commands that turn the running `old` layout into `new`, or `None` when only a
/// reload can (a different number of replicas, a route change between the zone and the reader
/// only, a name that needs a resolvers section the running configuration lacks, a new port for
/// a name, or any change under TLS, whose names are part of the server lines).
pub fn commands(old: &Layout, new: &Layout, resolvers: bool, tls: bool) -> Option<Vec<String>> {
    if old.replicas.len() != new.replicas.len() {
        return None;
    }
    let pairs = old
        .replicas
        .iter()
        .zip(&new.replicas)
        .enumerate()
        .map(|(n, (o, w))| (replica_server(n + 1), o, w))
        .chain(std::iter::once((READER.to_string(), &old.reader, &new.reader)));
    let mut out = Vec::new();
    for (server, from, to) in pairs {
        if from == to {
            continue;
        }
        if tls {
            return None;
        }
        let (to_host, to_port) = split(to);
        if is_ip(to) {
            if !is_ip(from) {
                // The resolvers would go on resolving the old name.
                return None;
            }
            out.push(format!("set server {BACKEND}/{server} addr {to_host} port {to_port}"));
        } else {
            if !resolvers || is_ip(from) || split(from).1 != to_port {
                return None;
            }
            out.push(format!("set server {BACKEND}/{server} fqdn {to_host}"));
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(replicas: &[&str], reader: &str) -> Layout {
        Layout {
            replicas: replicas.iter().map(|r| r.to_string()).collect(),
            reader: reader.into(),
            reason: None,
            seen: Default::default(),
            zone: None,
        }
    }

    #[test]
    fn address_changes_become_runtime_commands_and_the_rest_reloads() {
        let old = layout(&["10.0.0.1:6379"], "reader.example:6379");
        let replaced = layout(&["10.0.0.2:6380"], "reader.example:6379");
        assert_eq!(
            commands(&old, &replaced, true, false),
            Some(vec![
                "set server locality_replica/zone1 addr 10.0.0.2 port 6380".to_string()
            ])
        );
        let new_reader = layout(&["10.0.0.1:6379"], "reader2.example:6379");
        assert_eq!(
            commands(&old, &new_reader, true, false),
            Some(vec![
                "set server locality_replica/reader fqdn reader2.example".to_string()
            ])
        );
        assert_eq!(commands(&old, &old, false, false), Some(vec![]));
        // More replicas, reader only, a name without resolvers, a port change of a name, TLS.
        assert_eq!(
            commands(
                &old,
                &layout(&["10.0.0.1:6379", "10.0.0.3:6379"], "reader.example:6379"),
                true,
                false
            ),
            None
        );
        assert_eq!(commands(&old, &layout(&[], "reader.example:6379"), true, false), None);
        let ips = layout(&["10.0.0.1:6379"], "10.0.0.9:6379");
        assert_eq!(
            commands(&ips, &layout(&["node.example:6379"], "10.0.0.9:6379"), false, false),
            None
        );
        assert_eq!(
            commands(&old, &layout(&["10.0.0.1:6379"], "reader.example:6380"), true, false),
            None
        );
        assert_eq!(commands(&old, &replaced, true, true), None);
    }

    #[test]
    fn show_stat_is_read_by_column_name() {
        let csv = "# pxname,svname,qcur,qmax,scur,smax,slim,stot,bin,bout,status,bck,addr\n\
                   locality_local,FRONTEND,,,1,1,,5,10,20,OPEN,,\n\
                   locality_replica,zone1,0,0,1,1,,4,100,2000,UP,0,127.0.0.1:7001\n\
                   locality_replica,reader,0,0,0,0,,1,10,200,UP,1,127.0.0.1:7009\n\
                   locality_replica,BACKEND,0,0,1,1,,5,110,2200,UP,1,\n";
        let servers = parse_stat(csv);
        assert_eq!(servers.len(), 2);
        assert_eq!(servers[0].name, "zone1");
        assert_eq!(
            (
                servers[0].current_sessions,
                servers[0].total_sessions,
                servers[0].bytes_out
            ),
            (1, 4, 2000)
        );
        assert!(servers[1].backup && !servers[0].backup);
        assert_eq!(servers[1].address, "127.0.0.1:7009");
    }
}
