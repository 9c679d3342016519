//! The HAProxy configuration of a [`Layout`]: a local TCP listener; the zone's replicas as
//! active servers with a Redis-speaking health check; the reader endpoint as backup. Pure text
//! generation (HAProxy 2.6, Debian 12's), tested by `haproxy -c`.
//!
//! How the failover behaves, and which line does it:
//! - `observe layer4 error-limit 1 on-error mark-down`: the first refused (or timed-out) connect
//!   to a replica marks it down at once, and `retries` with `option redispatch 1` retries that
//!   same client connect on the next server — the reader once no replica is left — before any
//!   health check has noticed;
//! - `timeout connect` (the check timeout) also bounds HAProxy's pause before that retry;
//! - `on-marked-up shutdown-backup-sessions`: when a replica passes its checks again, sessions
//!   on the reader are closed, so clients reconnect to the replica;
//! - sessions still open on a replica that was marked down (a hung node, not a dead one) are
//!   closed by the sidecar itself (`shutdown sessions server`; HAProxy's `on-marked-down
//!   shutdown-sessions` would also cut the connect being retried);
//! - `noreuseport`: no second HAProxy can ever bind the same port beside this one;
//! - started as root, `uid`/`gid` run the workers as an unprivileged user;
//! - every file is named relative to the run directory HAProxy starts in;
//! - nothing read from the network or the map reaches the text but values that were parsed
//!   and checked (addresses, ports, host names, zones); comments carry no remote text;
//! - the statistics frontend has a small `maxconn` of its own ([`STATS_MAX_CONNECTIONS`]) and
//!   `timeout http-request`, and the global `maxconn` ([`Settings::max_connections`], from the
//!   descriptor limit) keeps the rest for the reads' frontend: a flood of idle statistics
//!   connections waits in the kernel's queue and never takes a read's place;
//! - host names go through a `resolvers` section (the system's nameservers, or `--nameserver`)
//!   and are followed when their addresses change; `init-addr` lets HAProxy start before a name
//!   resolves.

use std::fmt::Write as _;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use super::process::HaproxyUser;
use super::Layout;

/// The runtime API socket's name in the run directory (`level admin`, mode 600, the sidecar's).
pub const SOCKET: &str = "haproxy.sock";
/// The configuration's name in the run directory.
pub const CONFIG: &str = "haproxy.cfg";

/// The backend every name below refers to (the runtime API addresses servers as
/// `locality_replica/zone1`).
pub const BACKEND: &str = "locality_replica";
/// The server name of the reader endpoint.
pub const READER: &str = "reader";

/// The most connections the statistics frontend takes at once (the rest wait in the kernel's
/// queue; a scrape or a look at `/stats` needs one).
pub const STATS_MAX_CONNECTIONS: u32 = 10;
/// How long a statistics request may take to arrive (`timeout http-request`).
pub const STATS_REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// Descriptors HAProxy keeps for itself beside two per connection (listeners, health checks,
/// the runtime API, resolvers, the master's pipes).
const RESERVED_DESCRIPTORS: u64 = 64;
/// The most connections HAProxy takes in all, however many descriptors it may have.
pub const MAX_CONNECTIONS_CAP: u32 = 10_000;

/// The global `maxconn` for a descriptor limit of `nofile` (HAProxy's hard limit, which its
/// master raises the soft one to): two descriptors a connection, 64 kept (listeners, checks, sockets),
/// at most [`MAX_CONNECTIONS_CAP`], at least enough for the statistics and a few reads.
pub fn max_connections_for(nofile: u64) -> u32 {
    let usable = nofile.saturating_sub(RESERVED_DESCRIPTORS) / 2;
    let floor = u64::from(STATS_MAX_CONNECTIONS) + 16;
    u32::try_from(usable.clamp(floor, u64::from(MAX_CONNECTIONS_CAP))).unwrap_or(MAX_CONNECTIONS_CAP)
}

/// The name of the `n`th replica's server (1-based).
pub fn replica_server(n: usize) -> String {
    format!("zone{n}")
}

/// What the configuration depends on besides the layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// The local listener.
    pub listen: SocketAddr,
    /// HAProxy's statistics over HTTP (`/stats`, `/stats;csv`, `/metrics`); `None`: only the socket.
    pub stats: Option<SocketAddr>,
    /// TLS to the nodes, verified against this CA file (`@system-ca`: the system's CAs; else a
    /// file name in the run directory).
    pub tls_ca_file: Option<String>,
    /// With TLS, the name an endpoint given as an IP address must carry (`--tls-server-name`).
    pub tls_server_name: Option<String>,
    /// Who the workers run as (`uid`/`gid`), when the sidecar runs as root.
    pub user: Option<HaproxyUser>,
    /// Nameservers for host names; empty: the system's (`/etc/resolv.conf`).
    pub nameservers: Vec<SocketAddr>,
    /// Connect and check timeout (also HAProxy's pause before retrying a refused connect).
    pub check_timeout: Duration,
    /// The global `maxconn` ([`max_connections_for`] the descriptor limit); the reads' frontend
    /// gets all of it but the statistics' share.
    pub max_connections: u32,
    /// Lines for the comment at the top (where the layout came from); anything but printable
    /// ASCII is written as `?`, so a line can never end the comment.
    pub comments: Vec<String>,
}

/// `host` and `port` of an endpoint the map holds (`[::1]:6379` → `::1`, `6379`).
pub fn split(endpoint: &str) -> (&str, &str) {
    crate::split_endpoint(endpoint)
}

/// Whether the endpoint's host is an IP address (else a name to resolve).
pub fn is_ip(endpoint: &str) -> bool {
    split(endpoint).0.parse::<IpAddr>().is_ok()
}

/// Whether the configuration of `layout` needs a `resolvers` section.
pub fn needs_resolvers(layout: &Layout, settings: &Settings) -> bool {
    !settings.nameservers.is_empty() || layout.endpoints().any(|e| !is_ip(e))
}

/// An address as HAProxy reads it on a `server` or `bind` line.
fn haproxy_address(host: &str, port: &str) -> String {
    match host.parse::<IpAddr>() {
        Ok(IpAddr::V6(ip)) => format!("ipv6@{ip}:{port}"),
        _ => format!("{host}:{port}"),
    }
}

fn milliseconds(duration: Duration) -> u128 {
    duration.as_millis().max(1)
}

/// The configuration text.
pub fn render(layout: &Layout, settings: &Settings) -> String {
    let mut out = String::new();
    let timeout = milliseconds(settings.check_timeout);
    for line in &settings.comments {
        let _ = writeln!(out, "# {}", comment_text(line));
    }
    let _ = writeln!(
        out,
        "global
  stats socket unix@{SOCKET} mode 600 level admin
  # No second HAProxy can bind the listener beside this one.
  noreuseport
  # Health checks of several servers do not start in the same instant.
  spread-checks 5
  # Connections in all, from the descriptor limit; the statistics take at most {STATS_MAX_CONNECTIONS}.
  maxconn {}",
        settings.max_connections
    );
    if let Some(user) = &settings.user {
        let _ = writeln!(
            out,
            "  # The workers run as {} (the master and the admin socket stay the sidecar's).\n  uid {}\n  gid {}",
            comment_text(&user.name),
            user.uid,
            user.gid
        );
    }
    let _ = writeln!(
        out,
        "
defaults
  mode tcp
  timeout connect {timeout}ms
  timeout check {timeout}ms
  # Cache clients keep idle connections for long.
  timeout client 24h
  timeout server 24h
  retries 3
  option redispatch 1
  # Byte counters move while a session lasts, not only when it ends: pooled connections live for
  # hours, and the read share (Prometheus rules) must follow a failover as it happens.
  option contstats
"
    );
    let resolvers = needs_resolvers(layout, settings);
    if resolvers {
        out.push_str("resolvers locality\n");
        if settings.nameservers.is_empty() {
            out.push_str("  parse-resolv-conf\n");
        }
        for (n, ns) in settings.nameservers.iter().enumerate() {
            let _ = writeln!(
                out,
                "  nameserver ns{} {}",
                n + 1,
                haproxy_address(&ns.ip().to_string(), &ns.port().to_string())
            );
        }
        out.push_str("  resolve_retries 3\n  timeout resolve 1s\n  timeout retry 1s\n  hold valid 10s\n  hold nx 10s\n  accepted_payload_size 8192\n\n");
    }
    let _ = writeln!(
        out,
        "frontend locality_local
  bind {}
  maxconn {}
  default_backend {BACKEND}
",
        haproxy_address(&settings.listen.ip().to_string(), &settings.listen.port().to_string()),
        reads_max_connections(settings)
    );
    let _ = writeln!(
        out,
        "backend {BACKEND}
  balance roundrobin
  # Redis-speaking check: any reply is alive (-NOAUTH included).
  option tcp-check
  tcp-check send PING\\r\\n
  tcp-check expect rstring ^[+-]"
    );
    let mut defaults = String::from(
        "  default-server check inter 500ms fastinter 250ms fall 2 rise 2 observe layer4 error-limit 1 on-error mark-down on-marked-up shutdown-backup-sessions",
    );
    if let Some(ca) = &settings.tls_ca_file {
        let _ = write!(defaults, " ssl verify required ca-file {ca}");
    }
    if resolvers {
        let init = if settings.nameservers.is_empty() {
            "last,libc,none"
        } else {
            "none"
        };
        let _ = write!(defaults, " resolvers locality resolve-prefer ipv4 init-addr {init}");
    }
    out.push_str(&defaults);
    out.push('\n');
    for (n, endpoint) in layout.replicas.iter().enumerate() {
        let _ = writeln!(
            out,
            "  server {} {}{}",
            replica_server(n + 1),
            server_address(endpoint),
            tls_names(endpoint, settings)
        );
    }
    let role = if layout.replicas.is_empty() { "" } else { " backup" };
    let _ = writeln!(
        out,
        "  server {READER} {}{}{role}",
        server_address(&layout.reader),
        tls_names(&layout.reader, settings)
    );
    if let Some(stats) = settings.stats {
        let _ = write!(
            out,
            "
frontend locality_stats
  mode http
  bind {}
  # Its own few connections: a flood here waits in the kernel's queue, never in the reads' place.
  maxconn {STATS_MAX_CONNECTIONS}
  timeout http-request {}ms
  timeout client 10s
  http-request use-service prometheus-exporter if {{ path /metrics }}
  stats enable
  stats uri /stats
  stats refresh 10s
  stats show-legends
",
            haproxy_address(&stats.ip().to_string(), &stats.port().to_string()),
            STATS_REQUEST_TIMEOUT.as_millis()
        );
    }
    out
}

/// The reads' frontend `maxconn`: the global one less the statistics' share (when they are on).
fn reads_max_connections(settings: &Settings) -> u32 {
    let stats = if settings.stats.is_some() {
        STATS_MAX_CONNECTIONS
    } else {
        0
    };
    settings.max_connections.saturating_sub(stats).max(1)
}

fn server_address(endpoint: &str) -> String {
    let (host, port) = split(endpoint);
    haproxy_address(host, port)
}

/// The directives of a configuration: every line that is not blank or a comment, trimmed.
pub fn directives(config: &str) -> Vec<&str> {
    config
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .collect()
}

/// Printable ASCII only: anything else (a newline above all) becomes `?`.
pub fn comment_text(text: &str) -> String {
    text.chars()
        .take(200)
        .map(|c| if c == ' ' || c.is_ascii_graphic() { c } else { '?' })
        .collect()
}

/// With TLS: SNI and the name the certificate must carry — the endpoint's host name, or for an
/// IP address the name given (`--tls-server-name`; the plan refuses an IP address without one).
fn tls_names(endpoint: &str, settings: &Settings) -> String {
    if settings.tls_ca_file.is_none() {
        return String::new();
    }
    match crate::check::tls_server_name(endpoint, settings.tls_server_name.as_deref()) {
        Ok(name) => format!(" sni str({name}) check-sni {name} verifyhost {name}"),
        // Not reached (the plan refuses it first); without a name HAProxy must not connect.
        Err(_) => " disabled".to_string(),
    }
}
