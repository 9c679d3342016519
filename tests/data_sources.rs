//! `locality_cloud_region` and `locality_anycast_check`: lookups against the built-in snapshot
//! (addresses taken from its own data, IPv4 and IPv6), snapshot building from the official file
//! formats, the speed-of-light rule on real geography, input validation, `locality lookup`, and
//! both data sources through the real terraform, feeding `locality_region_hint`.

mod common;

use std::net::IpAddr;
use std::path::Path;
use std::process::Command;

use common::fake_cloudflare::{FakeCloudflare, TOKEN, ZONE};
use common::{Terraform, PREAMBLE};
use locality::ranges::{builtin, Table, Vendor};

/// For each cloud and family, a range from the snapshot that no other range nests inside, and an
/// address in its middle: the lookup must answer with exactly that range.
#[test]
fn known_addresses_of_every_cloud_resolve_to_their_region() {
    let table = builtin();
    assert_eq!(table.date, "2026-10-26");
    let mut checked = Vec::new();
    for vendor in [Vendor::Aws, Vendor::Gcp, Vendor::Azure, Vendor::Oci] {
        for v6 in [false, true] {
            if vendor == Vendor::Oci && v6 {
                continue; // Oracle publishes IPv4 only
            }
            let candidate = table
                .ranges()
                .filter(|r| r.vendor == vendor && r.region.is_some() && r.net.addr().is_ipv6() == v6)
                .find(|r| {
                    let mid = middle(r.net);
                    table.lookup(mid).is_some_and(|hit| hit.net == r.net)
                });
            let r = candidate.unwrap_or_else(|| panic!("no {vendor:?} v6={v6} range"));
            let hit = table.lookup(middle(r.net)).unwrap();
            assert_eq!((hit.vendor, hit.region), (vendor, r.region));
            assert_eq!(hit.hint(), Some(format!("{}:{}", vendor.as_str(), r.region.unwrap())));
            checked.push(format!("{} {}", r.net, hit.hint().unwrap()));
        }
    }
    assert_eq!(checked.len(), 7, "{checked:?}");
    // Well-known addresses.
    let aws = table.lookup("3.112.0.10".parse().unwrap()).unwrap();
    assert_eq!(aws.hint().as_deref(), Some("aws:ap-northeast-1"));
    let gcp = table.lookup("34.84.1.1".parse().unwrap()).unwrap();
    assert_eq!(gcp.hint().as_deref(), Some("gcp:asia-northeast1"));
    assert!(
        table.lookup("192.0.2.1".parse().unwrap()).is_none(),
        "documentation range is in no cloud"
    );
    assert!(table.lookup("2001:db8::1".parse().unwrap()).is_none());
}

fn middle(net: ipnet::IpNet) -> IpAddr {
    match net {
        ipnet::IpNet::V4(n) => {
            let span = 1u64 << (32 - n.prefix_len());
            IpAddr::from(std::net::Ipv4Addr::from(
                (u32::from(n.network()) as u64 + span / 2) as u32,
            ))
        }
        ipnet::IpNet::V6(n) => {
            let host_bits = 128 - u32::from(n.prefix_len());
            let half = if host_bits == 0 { 0 } else { 1u128 << (host_bits - 1) };
            IpAddr::from(std::net::Ipv6Addr::from(u128::from(n.network()) + half))
        }
    }
}

/// `locality ranges update` from files in the official formats builds a snapshot the lookup
/// reads; nested prefixes resolve to the longest one.
#[test]
fn snapshots_are_built_from_the_official_file_formats() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, json: serde_json::Value| {
        let p = dir.path().join(name);
        std::fs::write(&p, json.to_string()).unwrap();
        p.display().to_string()
    };
    let aws = write(
        "ip-ranges.json",
        serde_json::json!({"syncToken": "1", "createDate": "2026-11-29-10-00-00",
        "prefixes": [
            {"ip_prefix": "52.192.0.0/11", "region": "ap-northeast-1", "service": "AMAZON", "network_border_group": "ap-northeast-1"},
            {"ip_prefix": "52.196.0.0/14", "region": "ap-northeast-1", "service": "EC2", "network_border_group": "ap-northeast-1"},
            {"ip_prefix": "52.199.0.0/16", "region": "ap-northeast-3", "service": "EC2", "network_border_group": "ap-northeast-3"}],
        "ipv6_prefixes": [{"ipv6_prefix": "2406:da14::/32", "region": "ap-northeast-1", "service": "EC2", "network_border_group": "ap-northeast-1"}]}),
    );
    let gcp = write(
        "cloud.json",
        serde_json::json!({"syncToken": "1", "creationTime": "2026-11-28T00:00:00", "prefixes": [{"ipv4Prefix": "35.187.192.0/19", "service": "Google Cloud", "scope": "asia-northeast1"}]}),
    );
    let azure = write(
        "ServiceTags_Public_20261130.json",
        serde_json::json!({"changeNumber": 1, "cloud": "Public", "values": [
        {"name": "AzureCloud.japaneast", "id": "AzureCloud.japaneast", "properties": {"region": "japaneast", "systemService": "", "addressPrefixes": ["20.18.0.0/16", "2603:1040::/47"]}}]}),
    );
    let oci = write(
        "public_ip_ranges.json",
        serde_json::json!({"last_updated_timestamp": "2026-11-27T00:00:00", "regions": [{"region": "ap-osaka-1", "cidrs": [{"cidr": "140.238.48.0/20", "tags": ["OCI"]}]}]}),
    );
    let out = dir.path().join("snapshot.bin");
    let status = Command::new(env!("CARGO_BIN_EXE_locality"))
        .args([
            "ranges", "update", "--aws", &aws, "--gcp", &gcp, "--azure", &azure, "--oci", &oci, "-o",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert!(status.status.success(), "{}", String::from_utf8_lossy(&status.stderr));
    let table = Table::decode(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(table.date, "2026-11-29", "the newest file date");
    let look = |ip: &str| table.lookup(ip.parse().unwrap()).and_then(|r| r.hint());
    assert_eq!(
        look("52.199.1.1").as_deref(),
        Some("aws:ap-northeast-3"),
        "the /16 inside the /14 inside the /11"
    );
    assert_eq!(look("52.197.1.1").as_deref(), Some("aws:ap-northeast-1"));
    assert_eq!(
        table.lookup("52.197.1.1".parse().unwrap()).unwrap().service,
        "EC2",
        "the specific service over AMAZON"
    );
    assert_eq!(look("2406:da14::abcd").as_deref(), Some("aws:ap-northeast-1"));
    assert_eq!(look("35.187.200.1").as_deref(), Some("gcp:asia-northeast1"));
    assert_eq!(look("2603:1040:1::1").as_deref(), Some("azure:japaneast"));
    assert_eq!(look("140.238.50.1").as_deref(), Some("oci:ap-osaka-1"));

    // Without -o: the per-user data path, never the source tree.
    let data_home = dir.path().join("data");
    let status = Command::new(env!("CARGO_BIN_EXE_locality"))
        .env("XDG_DATA_HOME", &data_home)
        .args([
            "ranges", "update", "--aws", &aws, "--gcp", &gcp, "--azure", &azure, "--oci", &oci,
        ])
        .output()
        .unwrap();
    assert!(status.status.success(), "{}", String::from_utf8_lossy(&status.stderr));
    let written = data_home.join("locality/ranges.bin");
    assert!(Table::decode(&std::fs::read(&written).unwrap()).is_ok());
    assert!(
        String::from_utf8_lossy(&status.stdout).contains(&format!("export LOCALITY_RANGES_FILE={}", written.display()))
    );

    // A file in the wrong format is refused with its name.
    let bad = write("bad.json", serde_json::json!({"prefixes": "nope"}));
    let status = Command::new(env!("CARGO_BIN_EXE_locality"))
        .args([
            "ranges", "update", "--aws", &bad, "--gcp", &gcp, "--azure", &azure, "--oci", &oci, "-o",
        ])
        .arg(dir.path().join("x.bin"))
        .output()
        .unwrap();
    assert_eq!(status.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&status.stderr).contains("AWS ip-ranges.json"));

    // Unreachable (offline): the URL once, why, and the way out. (Before: the URL twice and
    // "error sending request", without the cause.)
    let url = format!("http://127.0.0.1:{}/ip-ranges.json", common::server_port());
    let status = Command::new(env!("CARGO_BIN_EXE_locality"))
        .args([
            "ranges", "update", "--aws", &url, "--gcp", &gcp, "--azure", &azure, "--oci", &oci, "-o",
        ])
        .arg(dir.path().join("x.bin"))
        .output()
        .unwrap();
    assert_eq!(status.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&status.stderr);
    assert!(
        stderr.contains(&format!("{url}: could not connect: Connection refused"))
            && stderr.contains("pass it with --aws FILE")
            && stderr.matches(&url).count() == 1,
        "{stderr}"
    );
}

#[test]
fn lookup_command_answers_like_the_data_source() {
    let out = Command::new(env!("CARGO_BIN_EXE_locality"))
        .env_remove("LOCALITY_RANGES_FILE")
        .args(["lookup", "--json", "3.112.0.10", "192.0.2.1"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["hint"], "aws:ap-northeast-1");
    assert_eq!(lines[0]["found"], true);
    assert_eq!(lines[0]["ranges_source"], "built-in");
    assert_eq!(lines[1]["found"], false);
    let out = Command::new(env!("CARGO_BIN_EXE_locality"))
        .args(["lookup", "not-an-ip"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

fn probe(name: &str, lat: f64, lon: f64, rtt: f64) -> String {
    format!("\n  probe {{\n    name      = \"{name}\"\n    latitude  = {lat}\n    longitude = {lon}\n    rtt_ms    = {rtt}\n  }}\n")
}

/// Both data sources through terraform; the cloud_region result feeds a region hint.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn data_sources_through_terraform_feed_region_hints() {
    let fake = FakeCloudflare::start().await;
    let f = fake.clone();
    tokio::task::spawn_blocking(move || {
        let fake = f;
        let tf = Terraform::dev_overrides();
        let main = format!(
            "{PREAMBLE}\nprovider \"locality\" {{\n  cloudflare {{\n    api_token = \"{TOKEN}\"\n    base_url  = \"{}\"\n  }}\n}}\n\
             \ndata \"locality_cloud_region\" \"origin\" {{\n  ip = \"3.112.0.10\"\n}}\n\
             \ndata \"locality_cloud_region\" \"v6\" {{\n  ip = \"2406:da14::1\"\n}}\n\
             \ndata \"locality_cloud_region\" \"nowhere\" {{\n  ip = \"192.0.2.1\"\n}}\n\
             \nresource \"locality_region_hint\" \"origin\" {{\n  zone_id   = \"{ZONE}\"\n  origin_ip = data.locality_cloud_region.origin.ip\n  vendor    = data.locality_cloud_region.origin.vendor\n  region    = data.locality_cloud_region.origin.region\n}}\n\
             \ndata \"locality_anycast_check\" \"anycast\" {{{}{}}}\n\
             \ndata \"locality_anycast_check\" \"unicast\" {{{}{}}}\n\
             \noutput \"hint\" {{\n  value = data.locality_cloud_region.origin.hint\n}}\n\
             output \"v6\" {{\n  value = data.locality_cloud_region.v6.hint\n}}\n\
             output \"nowhere\" {{\n  value = data.locality_cloud_region.nowhere.found\n}}\n\
             output \"date\" {{\n  value = data.locality_cloud_region.origin.ranges_date\n}}\n\
             output \"source\" {{\n  value = data.locality_cloud_region.origin.ranges_source\n}}\n\
             output \"anycast\" {{\n  value = data.locality_anycast_check.anycast.anycast\n}}\n\
             output \"unicast\" {{\n  value = data.locality_anycast_check.unicast.anycast\n}}\n\
             output \"violations\" {{\n  value = jsonencode(data.locality_anycast_check.anycast.violations)\n}}\n",
            fake.base_url(),
            probe("tokyo", 35.6762, 139.6503, 5.0),
            probe("frankfurt", 50.1109, 8.6821, 5.0),
            probe("tokyo", 35.6762, 139.6503, 5.0),
            probe("frankfurt", 50.1109, 8.6821, 240.0),
        );
        tf.write("main.tf", &main);
        tf.ok(&["apply", "-auto-approve"]);
        assert_eq!(tf.output("hint"), "aws:ap-northeast-1");
        assert_eq!(tf.output("v6"), "aws:ap-northeast-1");
        assert_eq!(tf.output("nowhere"), "false");
        assert_eq!(tf.output("date"), "2026-10-26");
        assert_eq!(tf.output("source"), "built-in");
        assert_eq!(fake.mappings()["3.112.0.10"], ("aws".into(), "ap-northeast-1".into()), "the hint came from the data source");
        assert_eq!(tf.output("anycast"), "true");
        assert_eq!(tf.output("unicast"), "false");
        let v: serde_json::Value = serde_json::from_str(&tf.output("violations")).unwrap();
        assert_eq!(v[0]["probe_a"], "tokyo");
        let d = v[0]["distance_km"].as_f64().unwrap();
        assert!((9300.0..9400.0).contains(&d), "{d}");
        assert!(v[0]["margin_ms"].as_f64().unwrap() > 40.0);
        tf.assert_no_changes();

        // Validation: coordinates, rtt, count, names, IP.
        let flat = |s: String| s.split_whitespace().collect::<Vec<_>>().join(" ");
        for (body, words) in [
            (format!("{}{}", probe("a", 91.0, 0.0, 5.0), probe("b", 0.0, 0.0, 5.0)), "`latitude` is 91; it must be from -90 to 90"),
            (format!("{}{}", probe("a", 0.0, 181.0, 5.0), probe("b", 0.0, 0.0, 5.0)), "`longitude` is 181"),
            (format!("{}{}", probe("a", 0.0, 0.0, 0.0), probe("b", 0.0, 0.0, 5.0)), "`rtt_ms` is 0; it must be greater than 0"),
            (probe("a", 0.0, 0.0, 5.0), "At least two `probe` blocks"),
            (format!("{}{}", probe("a", 0.0, 0.0, 5.0), probe("a", 1.0, 1.0, 5.0)), "Duplicate probe"),
        ] {
            tf.write("main.tf", &format!("{PREAMBLE}\ndata \"locality_anycast_check\" \"x\" {{{body}}}\n"));
            let out = flat(tf.fails(&["validate"]));
            assert!(out.contains(words), "{words}: {out}");
        }
        tf.write("main.tf", &format!("{PREAMBLE}\ndata \"locality_cloud_region\" \"x\" {{\n  ip = \"300.1.1.1\"\n}}\n"));
        let out = flat(tf.fails(&["validate"]));
        assert!(out.contains("Invalid IP address") && out.contains("ip = \"300.1.1.1\""), "{out}");
    })
    .await
    .unwrap();
}

/// The snapshot in the repository is what the build script makes (its size is reported by
/// `locality ranges info`).
#[test]
fn the_builtin_snapshot_is_present_and_dated() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/ranges/snapshot.bin");
    let table = Table::decode(&std::fs::read(path).unwrap()).unwrap();
    assert_eq!(table.date, "2026-10-26");
    assert!(table.len() > 50_000);
    let out = Command::new(env!("CARGO_BIN_EXE_locality"))
        .env_remove("LOCALITY_RANGES_FILE")
        .args(["ranges", "info"])
        .output()
        .unwrap();
    let info = String::from_utf8_lossy(&out.stdout);
    assert!(
        info.contains("snapshot: the built-in snapshot") && info.contains("snapshot date: 2026-10-26 ("),
        "{info}"
    );
    // A file that is not a snapshot: exit 1, named.
    let out = Command::new(env!("CARGO_BIN_EXE_locality"))
        .env("LOCALITY_RANGES_FILE", "/nonexistent/ranges.bin")
        .args(["ranges", "info"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("LOCALITY_RANGES_FILE=/nonexistent/ranges.bin"));
}
