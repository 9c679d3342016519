//! A moto server (the pinned AWS emulator `scripts/test` installs) on 127.0.0.1, one per test,
//! plus SDK clients pointed at it with static test credentials.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Moto {
    pub endpoint: String,
    child: Child,
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The environment every AWS-using process in the tests gets.
pub const ENV: [(&str, &str); 4] = [
    ("AWS_ACCESS_KEY_ID", "testing"),
    ("AWS_SECRET_ACCESS_KEY", "testing"),
    ("AWS_REGION", "ap-northeast-1"),
    ("AWS_EC2_METADATA_DISABLED", "true"),
];

impl Moto {
    pub fn start() -> Moto {
        let server = std::env::var("LOCALITY_MOTO_SERVER")
            .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/target/moto-venv/bin/moto_server").to_string());
        assert!(
            std::path::Path::new(&server).exists(),
            "moto_server not found at {server}: run scripts/test, which installs moto 5.2.5"
        );
        let port = super::server_port();
        let mut child = Command::new(&server)
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let endpoint = format!("http://127.0.0.1:{port}");
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(started.elapsed() < Duration::from_secs(90), "moto did not start");
            if let Ok(Some(status)) = child.try_wait() {
                panic!("moto_server on port {port} exited before it listened: {status}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Moto { endpoint, child }
    }

    pub async fn config(&self) -> aws_config::SdkConfig {
        aws_config::defaults(aws_config::BehaviorVersion::latest())
            .region(aws_config::Region::new("ap-northeast-1"))
            .endpoint_url(&self.endpoint)
            .credentials_provider(aws_sdk_ssm::config::Credentials::new(
                "testing", "testing", None, None, "tests",
            ))
            .load()
            .await
    }

    /// Creates a cluster-mode-disabled replication group with one replica per AZ given (moto
    /// honours PreferredCacheClusterAZs with ReplicasPerNodeGroup).
    pub async fn create_group(&self, id: &str, azs: &[&str]) {
        let mut req = self
            .group_request(id)
            .await
            .replicas_per_node_group(azs.len() as i32 - 1);
        for az in azs {
            req = req.preferred_cache_cluster_azs(*az);
        }
        req.send().await.unwrap();
    }

    /// A cluster-mode-enabled group of three shards (`NumNodeGroups`, `ClusterMode="enabled"`,
    /// `NodeGroupConfiguration`): each primary in ap-northeast-1a, its two replicas in the AZs given.
    pub async fn create_cluster_group(&self, id: &str, replica_azs: &[[&str; 2]; 3]) {
        use aws_sdk_elasticache::types::{ClusterMode, NodeGroupConfiguration};
        let mut req = self
            .group_request(id)
            .await
            .num_node_groups(3)
            .cluster_mode(ClusterMode::Enabled);
        for (n, azs) in replica_azs.iter().enumerate() {
            req = req.node_group_configuration(
                NodeGroupConfiguration::builder()
                    .node_group_id(format!("000{}", n + 1))
                    .primary_availability_zone("ap-northeast-1a")
                    .replica_availability_zones(azs[0])
                    .replica_availability_zones(azs[1])
                    .replica_count(2)
                    .build(),
            );
        }
        req.send().await.unwrap();
    }

    /// CreateReplicationGroup of a valkey group `id`, before its topology.
    async fn group_request(
        &self,
        id: &str,
    ) -> aws_sdk_elasticache::operation::create_replication_group::builders::CreateReplicationGroupFluentBuilder {
        aws_sdk_elasticache::Client::new(&self.config().await)
            .create_replication_group()
            .replication_group_id(id)
            .replication_group_description("test")
            .engine("valkey")
            .cache_node_type("cache.t4g.micro")
    }

    /// Wipes every service (moto cannot change a group's topology in place).
    pub fn reset(&self) {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(self.endpoint.trim_start_matches("http://")).unwrap();
        s.write_all(b"POST /moto-api/reset HTTP/1.0\r\nContent-Length: 0\r\n\r\n")
            .unwrap();
        let mut response = String::new();
        let _ = s.read_to_string(&mut response);
        assert!(
            response.starts_with("HTTP/1.") && response.contains(" 200 "),
            "moto reset: {response}"
        );
    }
}

/// The metrics of `locality sidecar --map MAP` reading from moto, once it has read the map: in
/// a zone the map has no replica for (no probe, so the example host names are never looked up;
/// HAProxy resolves them through a closed loopback port). The sidecar is killed after.
pub fn sidecar_metrics(moto: &Moto, map: &str, run_dir: &std::path::Path) -> String {
    use std::io::{Read, Write};
    let port = || {
        std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port()
    };
    let (listen, metrics) = (port(), port());
    let mut sidecar = Command::new(env!("CARGO_BIN_EXE_locality"))
        .args(["sidecar", "--map", map, "--zone", "apne1-az9", "--stats", "off"])
        .args([
            "--listen",
            &format!("127.0.0.1:{listen}"),
            "--metrics",
            &format!("127.0.0.1:{metrics}"),
        ])
        .args(["--nameserver", "127.0.0.1:1", "--run-dir"])
        .arg(run_dir)
        .envs(ENV.iter().copied())
        .env("AWS_ENDPOINT_URL", &moto.endpoint)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    loop {
        let got = std::net::TcpStream::connect(("127.0.0.1", metrics)).ok().map(|mut s| {
            let _ = s.write_all(b"GET /metrics HTTP/1.0\r\n\r\n");
            let mut text = String::new();
            let _ = s.read_to_string(&mut text);
            text
        });
        match got {
            Some(text) if text.contains("locality_sidecar_map{") => {
                let _ = sidecar.kill();
                let _ = sidecar.wait();
                return text;
            }
            _ if started.elapsed() > Duration::from_secs(15) => {
                let _ = sidecar.kill();
                let out = sidecar.wait_with_output().unwrap();
                panic!("no metrics: {}", String::from_utf8_lossy(&out.stderr));
            }
            _ => std::thread::sleep(Duration::from_millis(100)),
        }
    }
}

/// The map's modification time in the sidecar's metrics is within 10 minutes of now.
pub fn assert_modified_recently(text: &str) {
    let modified: f64 = text
        .lines()
        .find_map(|l| l.strip_prefix("locality_sidecar_map_modified_timestamp_seconds "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("{text}"));
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    assert!((now - modified).abs() < 600.0, "modified {modified}, now {now}");
}
