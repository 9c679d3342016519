//! What the audit joins the flow records with: the cache's nodes (from the replica map) and the
//! VPC's subnets (from `aws ec2 describe-subnets` JSON, or DescribeSubnets).

use std::collections::HashSet;
use std::net::{IpAddr, ToSocketAddrs as _};

use ipnet::IpNet;
use locality_resolve::document::{NodeRole, ReplicaMap};
use serde::Deserialize;

/// One cache node at one address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// The node's address, as flow logs show it.
    pub address: IpAddr,
    /// `host:port`, as the map writes it.
    pub endpoint: String,
    /// Primary (writes) or replica.
    pub role: NodeRole,
    /// Its availability zone's name.
    pub zone: String,
    /// Its availability zone's ID, when the map has it.
    pub zone_id: Option<String>,
}

/// The nodes of a map: its `nodes` list (every node, its role and zone) when it has one, else
/// the replicas its `zones` and `replicas` name (the primary is then unknown). An endpoint
/// whose host is an IP address is taken as written; a DNS name is resolved with the system's
/// resolver (ElastiCache's node names resolve to the nodes' private addresses from anywhere).
///
/// # Errors
/// A sentence naming the endpoint whose name does not resolve, or saying that the map has no node.
pub fn nodes_of(map: &ReplicaMap) -> Result<Vec<Node>, String> {
    let mut listed: Vec<(String, NodeRole, String, Option<String>)> = map
        .nodes
        .iter()
        .map(|n| (n.endpoint.clone(), n.role, n.zone.clone(), n.zone_id.clone()))
        .collect();
    if listed.is_empty() {
        for (zone, endpoint) in &map.zones {
            listed.push((endpoint.clone(), NodeRole::Replica, zone.clone(), None));
        }
        // (A set of the endpoints listed: a map of tens of thousands of replicas is read in
        // linear time, not by searching the list for each.)
        let mut seen: HashSet<String> = listed.iter().map(|(e, ..)| e.clone()).collect();
        for (zone, endpoints) in &map.replicas {
            if zone.contains("-az") {
                continue; // an AZ ID key: the same replicas under their zone's name too
            }
            for endpoint in endpoints {
                if seen.insert(endpoint.clone()) {
                    listed.push((endpoint.clone(), NodeRole::Replica, zone.clone(), None));
                }
            }
        }
    }
    if listed.is_empty() {
        return Err("the map lists no node and no zone's replica: nothing to audit".to_string());
    }
    let mut nodes = Vec::new();
    let mut addresses: HashSet<IpAddr> = HashSet::new();
    for (endpoint, role, zone, zone_id) in listed {
        for address in addresses_of(&endpoint)? {
            if addresses.insert(address) {
                nodes.push(Node {
                    address,
                    endpoint: endpoint.clone(),
                    role,
                    zone: zone.clone(),
                    zone_id: zone_id.clone(),
                });
            }
        }
    }
    Ok(nodes)
}

/// The addresses of an endpoint's host: itself when it is an IP address, else its DNS answers.
fn addresses_of(endpoint: &str) -> Result<Vec<IpAddr>, String> {
    let (host, port) = locality_resolve::split_endpoint(endpoint);
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if let Ok(address) = host.parse::<IpAddr>() {
        return Ok(vec![address]);
    }
    let port: u16 = port.parse().unwrap_or(6379);
    let answers = (host, port)
        .to_socket_addrs()
        .map_err(|e| format!("the node {endpoint:?} of the map: its name does not resolve ({e}); run the audit where it resolves, or give a map whose endpoints are addresses"))?;
    let mut addresses: Vec<IpAddr> = answers.map(|a| a.ip()).collect();
    addresses.sort();
    addresses.dedup();
    Ok(addresses)
}

/// One subnet: its CIDR block (IPv4 or IPv6) and its availability zone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subnet {
    /// The block.
    pub block: IpNet,
    /// The zone's name.
    pub zone: String,
    /// The zone's ID.
    pub zone_id: Option<String>,
}

/// The subnets, searched by longest prefix: one hash lookup per prefix length in use (a /24 and
/// a /64 are two lookups, whatever the number of subnets), not a scan of every block.
#[derive(Debug, Clone, Default)]
pub struct Subnets {
    /// Every subnet, most specific first.
    all: Vec<Subnet>,
    /// (prefix length, network address) → the first subnet of `all` with that block.
    by_block: std::collections::HashMap<(u8, IpAddr), usize>,
    /// The prefix lengths of IPv4 blocks, longest first.
    v4_lengths: Vec<u8>,
    /// The prefix lengths of IPv6 blocks, longest first.
    v6_lengths: Vec<u8>,
}

/// The longest zone name or zone ID a subnet may give (AWS's are under 30 characters; a
/// longer one is still shown, escaped, up to this).
pub const MAX_ZONE_CHARS: usize = 256;

/// The most CIDR blocks one subnet may list (AWS gives an IPv4 block and at most one IPv6 one).
pub const MAX_BLOCKS_PER_SUBNET: usize = 8;

/// Checks a subnet's zone name, zone ID and number of blocks against their bounds.
fn check_subnet(zone: &str, zone_id: Option<&str>, blocks: usize) -> Result<(), String> {
    for (what, value) in [("zone", Some(zone)), ("zone ID", zone_id)] {
        if let Some(value) = value {
            if value.chars().count() > MAX_ZONE_CHARS {
                return Err(format!(
                    "a subnet's {what} \"{}\" is longer than {MAX_ZONE_CHARS} characters: not an availability zone",
                    locality_resolve::printable::printable_cut(value, 40)
                ));
            }
        }
    }
    if blocks > MAX_BLOCKS_PER_SUBNET {
        return Err(format!(
            "a subnet of zone {} lists {blocks} CIDR blocks (at most {MAX_BLOCKS_PER_SUBNET}: an IPv4 block and its IPv6 ones)",
            locality_resolve::printable::printable_cut(zone, 40)
        ));
    }
    Ok(())
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct DescribeSubnetsOutput {
    subnets: Vec<SubnetJson>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct SubnetJson {
    cidr_block: Option<String>,
    #[serde(default)]
    ipv6_cidr_block_association_set: Vec<Ipv6Association>,
    availability_zone: String,
    availability_zone_id: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Ipv6Association {
    ipv6_cidr_block: Option<String>,
}

impl Subnets {
    /// Subnets from the JSON `aws ec2 describe-subnets` prints (`Subnets`: `CidrBlock`,
    /// `Ipv6CidrBlockAssociationSet`, `AvailabilityZone`, `AvailabilityZoneId`).
    ///
    /// # Errors
    /// A sentence saying what is wrong, at which line and column, or which block is not a CIDR.
    pub fn from_json(text: &str) -> Result<Subnets, String> {
        let parsed: DescribeSubnetsOutput = serde_json::from_str(text).map_err(|e| {
            format!(
                "{e} (expected what `aws ec2 describe-subnets` prints: {{\"Subnets\": [{{\"CidrBlock\": \"10.0.1.0/24\", \"AvailabilityZone\": \"us-east-1a\", …}}]}})"
            )
        })?;
        let mut subnets = Vec::new();
        for s in parsed.subnets {
            check_subnet(
                &s.availability_zone,
                s.availability_zone_id.as_deref(),
                usize::from(s.cidr_block.is_some()) + s.ipv6_cidr_block_association_set.len(),
            )?;
            let blocks = s.cidr_block.iter().chain(
                s.ipv6_cidr_block_association_set
                    .iter()
                    .filter_map(|a| a.ipv6_cidr_block.as_ref()),
            );
            for block in blocks {
                let net: IpNet = block.parse().map_err(|_| {
                    format!(
                        "subnet block \"{}\" (zone {}) is not a CIDR block",
                        locality_resolve::printable::printable_cut(block, 60),
                        locality_resolve::printable::printable_cut(&s.availability_zone, 60)
                    )
                })?;
                subnets.push(Subnet {
                    block: net.trunc(),
                    zone: s.availability_zone.clone(),
                    zone_id: s.availability_zone_id.clone(),
                });
            }
        }
        Ok(Subnets::new(subnets))
    }

    /// Subnets from a list.
    pub fn new(mut subnets: Vec<Subnet>) -> Subnets {
        // Longest prefix first: the first match is the most specific (a stable sort: of two
        // equal blocks, the first given wins).
        subnets.sort_by_key(|s| std::cmp::Reverse(s.block.prefix_len()));
        let mut by_block = std::collections::HashMap::with_capacity(subnets.len());
        let (mut v4_lengths, mut v6_lengths) = (Vec::new(), Vec::new());
        for (at, subnet) in subnets.iter().enumerate() {
            let length = subnet.block.prefix_len();
            by_block.entry((length, subnet.block.network())).or_insert(at);
            let lengths = match subnet.block {
                IpNet::V4(_) => &mut v4_lengths,
                IpNet::V6(_) => &mut v6_lengths,
            };
            if lengths.last() != Some(&length) {
                lengths.push(length);
            }
        }
        Subnets {
            all: subnets,
            by_block,
            v4_lengths,
            v6_lengths,
        }
    }

    /// The subnet an address is in: the most specific block that holds it.
    pub fn find(&self, address: IpAddr) -> Option<&Subnet> {
        let lengths = match address {
            IpAddr::V4(_) => &self.v4_lengths,
            IpAddr::V6(_) => &self.v6_lengths,
        };
        lengths.iter().find_map(|&length| {
            let network = IpNet::new(address, length).ok()?.network();
            self.by_block.get(&(length, network)).map(|&at| &self.all[at])
        })
    }

    /// Every subnet, most specific first.
    pub fn all(&self) -> &[Subnet] {
        &self.all
    }
}

/// Whether a client in `subnet` is in `node`'s zone (by ID when both know it, else by name).
pub fn same_zone(subnet: &Subnet, node: &Node) -> bool {
    match (&subnet.zone_id, &node.zone_id) {
        (Some(a), Some(b)) => a == b,
        _ => subnet.zone == node.zone,
    }
}

/// The most bytes one DescribeSubnets page's answer may hold (1,000 subnets with their tags and
/// IPv6 blocks are a few MB).
pub const SUBNET_PAGE_MAX_BYTES: usize = 16 << 20;

/// Every subnet of the region, through EC2's DescribeSubnets (all pages).
///
/// # Errors
/// The AWS error's sentence.
pub async fn describe_subnets(config: &aws_config::SdkConfig) -> Result<Subnets, String> {
    let client = aws_sdk_ec2::Client::from_conf(
        aws_sdk_ec2::config::Builder::from(config)
            .interceptor(locality_resolve::body_limit::BodyLimit::new(
                "a DescribeSubnets page",
                SUBNET_PAGE_MAX_BYTES,
            ))
            .build(),
    );
    // The pages end: at most SUBNET_PAGES_MAX of them, never a token given before, and all
    // within SUBNET_DEADLINE (the SDK's paginator stops only on the same token twice in a row,
    // so tokens alternating A/B went on for ever).
    let started = std::time::Instant::now();
    let mut tokens: HashSet<String> = HashSet::new();
    let mut token: Option<String> = None;
    let mut subnets = Vec::new();
    for page_number in 1.. {
        if page_number > SUBNET_PAGES_MAX {
            return Err(format!(
                "ec2:DescribeSubnets gave more than {SUBNET_PAGES_MAX} pages (a region's subnets are a few pages of 1,000): stopped; give --subnets FILE"
            ));
        }
        let left = SUBNET_DEADLINE.saturating_sub(started.elapsed());
        let sent = client
            .describe_subnets()
            .max_results(1000)
            .set_next_token(token.clone())
            .send();
        let page = match tokio::time::timeout(left, sent).await {
            Ok(page) => page.map_err(|e| locality_resolve::aws_error::describe("ec2:DescribeSubnets", &e))?,
            Err(_) => {
                return Err(format!(
                    "ec2:DescribeSubnets did not finish within {} s (page {page_number}): stopped; give --subnets FILE",
                    SUBNET_DEADLINE.as_secs()
                ))
            }
        };
        let next = page.next_token.clone().filter(|t| !t.is_empty());
        for s in page.subnets.unwrap_or_default() {
            let zone = s.availability_zone.clone().unwrap_or_default();
            check_subnet(
                &zone,
                s.availability_zone_id.as_deref(),
                usize::from(s.cidr_block.is_some()) + s.ipv6_cidr_block_association_set().len(),
            )
            .map_err(|e| format!("ec2:DescribeSubnets: {e}"))?;
            let blocks = s.cidr_block.iter().cloned().chain(
                s.ipv6_cidr_block_association_set
                    .unwrap_or_default()
                    .into_iter()
                    .filter_map(|a| a.ipv6_cidr_block),
            );
            for block in blocks {
                if let Ok(net) = block.parse::<IpNet>() {
                    subnets.push(Subnet {
                        block: net.trunc(),
                        zone: zone.clone(),
                        zone_id: s.availability_zone_id.clone(),
                    });
                }
            }
        }
        match next {
            None => break,
            Some(next) if !tokens.insert(next.clone()) => {
                return Err(format!(
                    "ec2:DescribeSubnets gave a page token it had given before (page {page_number}): stopped rather than ask for the same pages for ever; give --subnets FILE"
                ));
            }
            Some(next) => token = Some(next),
        }
    }
    Ok(Subnets::new(subnets))
}

/// The most pages of DescribeSubnets one audit reads.
pub const SUBNET_PAGES_MAX: usize = 100;
/// How long reading the subnets may take, every page included.
pub const SUBNET_DEADLINE: std::time::Duration = std::time::Duration::from_secs(120);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_endpoints_are_addresses_as_written_or_resolved_names() {
        // (`localhost` resolves from /etc/hosts: no DNS query leaves the machine.)
        let map = ReplicaMap::parse(
            r#"{"version":1,"fallback":"reader.example:6379","zones":{"ap-northeast-1a":"localhost:6379","ap-northeast-1c":"10.0.2.11:6379"}}"#,
        )
        .unwrap();
        let nodes = nodes_of(&map).unwrap();
        let zone_a: Vec<IpAddr> = nodes
            .iter()
            .filter(|n| n.zone == "ap-northeast-1a")
            .map(|n| n.address)
            .collect();
        assert!(
            !zone_a.is_empty() && zone_a.iter().all(|a| a.is_loopback()),
            "{nodes:?}"
        );
        assert!(nodes
            .iter()
            .any(|n| n.address.to_string() == "10.0.2.11" && n.role == NodeRole::Replica));
    }

    /// Issue 58, item 8: a map of 69,000 replica endpoints (replicas only, just under the
    /// 1 MiB the map reader takes). Each endpoint was searched for in the list so far: 20 to 26 s
    /// in a release build before any record was read. Now a set: linear, well under 5 s even in
    /// a debug build (the time is printed).
    #[test]
    fn a_map_of_69000_replicas_is_read_in_linear_time() {
        let endpoints: Vec<String> = (0..69_000u32)
            .map(|i| format!("\"[::{:x}:{:x}]:1\"", i >> 16, i & 0xffff))
            .collect();
        let text = format!(
            r#"{{"version":1,"fallback":"reader.example:6379","replicas":{{"ap-northeast-1a":[{}]}}}}"#,
            endpoints.join(",")
        );
        assert!(text.len() < 1 << 20, "{} bytes", text.len());
        let map = ReplicaMap::parse(&text).unwrap();
        let started = std::time::Instant::now();
        let nodes = nodes_of(&map).unwrap();
        let took = started.elapsed();
        eprintln!("nodes_of, 69,000 replicas: {took:?}");
        assert_eq!(nodes.len(), 69_000);
        assert!(took < std::time::Duration::from_secs(5), "{took:?}");
    }

    #[test]
    fn subnets_from_describe_subnets_json_by_longest_prefix() {
        let subnets = Subnets::from_json(
            r#"{"Subnets":[
              {"CidrBlock":"10.0.0.0/16","AvailabilityZone":"us-east-1a","AvailabilityZoneId":"use1-az1"},
              {"CidrBlock":"10.0.2.0/24","AvailabilityZone":"us-east-1b","AvailabilityZoneId":"use1-az2",
               "Ipv6CidrBlockAssociationSet":[{"Ipv6CidrBlock":"2600:1f18:1:2::/64"}]}]}"#,
        )
        .unwrap();
        assert_eq!(subnets.find("10.0.2.9".parse().unwrap()).unwrap().zone, "us-east-1b");
        assert_eq!(subnets.find("10.0.3.9".parse().unwrap()).unwrap().zone, "us-east-1a");
        assert_eq!(
            subnets.find("2600:1f18:1:2::5".parse().unwrap()).unwrap().zone,
            "us-east-1b"
        );
        assert!(subnets.find("192.168.0.1".parse().unwrap()).is_none());
        assert!(Subnets::from_json("{\"Subnets\": [")
            .unwrap_err()
            .contains("describe-subnets"));
    }

    /// Issue 61, item 9: 200 k clients against 100 k subnets (before: every client scanned
    /// every block, 315 s). The lookup by prefix finds what the scan found (sampled), the most
    /// specific block first, IPv6 included; a zone name past its bound is refused.
    #[test]
    fn subnets_are_found_by_prefix_as_the_scan_found_them() {
        let mut subnets = Vec::new();
        for n in 0..100_000u32 {
            let (a, b, c) = (10 + n / 65_536, (n / 256) % 256, n % 256);
            subnets.push(Subnet {
                block: format!("{a}.{b}.{c}.0/24").parse().unwrap(),
                zone: format!("zone-{}", n % 3),
                zone_id: None,
            });
        }
        subnets.push(Subnet {
            block: "11.0.0.0/8".parse().unwrap(),
            zone: "wide".into(),
            zone_id: None,
        });
        subnets.push(Subnet {
            block: "10.0.5.128/25".parse().unwrap(),
            zone: "narrow".into(),
            zone_id: None,
        });
        subnets.push(Subnet {
            block: "2600:1f18::/56".parse().unwrap(),
            zone: "v6".into(),
            zone_id: None,
        });
        let scan = subnets.clone();
        let index = Subnets::new(subnets);
        let clients: Vec<IpAddr> = (0..200_000u32)
            .map(|n| {
                IpAddr::from([
                    10 + (n % 3) as u8,
                    (n / 7 % 256) as u8,
                    (n % 256) as u8,
                    (n % 200) as u8 + 1,
                ])
            })
            .collect();
        let started = std::time::Instant::now();
        let found = clients.iter().filter(|a| index.find(**a).is_some()).count();
        eprintln!(
            "200 k clients against {} subnets by prefix: {:?} ({found} in a subnet)",
            index.all().len(),
            started.elapsed()
        );
        let mut by_length = scan.clone();
        by_length.sort_by_key(|s| std::cmp::Reverse(s.block.prefix_len()));
        for address in clients.iter().step_by(100) {
            let naive = by_length.iter().find(|s| s.block.contains(address));
            assert_eq!(index.find(*address), naive, "{address}");
        }
        assert_eq!(index.find("10.0.5.200".parse().unwrap()).unwrap().zone, "narrow");
        assert_eq!(index.find("10.0.5.100".parse().unwrap()).unwrap().zone, "zone-2");
        assert_eq!(index.find("11.200.200.1".parse().unwrap()).unwrap().zone, "wide");
        assert_eq!(index.find("2600:1f18::1".parse().unwrap()).unwrap().zone, "v6");
        assert_eq!(index.find("192.168.0.1".parse().unwrap()), None);
        let long = format!(
            r#"{{"Subnets":[{{"CidrBlock":"10.0.0.0/24","AvailabilityZone":"{}"}}]}}"#,
            "z".repeat(10_000)
        );
        assert!(Subnets::from_json(&long)
            .unwrap_err()
            .contains("longer than 256 characters"));
        // The issue's 1.8 MB answer: a zone name copied for every one of thousands of blocks.
        let blocks: Vec<String> = (0..4000)
            .map(|n| format!(r#"{{"Ipv6CidrBlock":"2600:1f18:{n:x}::/64"}}"#))
            .collect();
        let many = format!(
            r#"{{"Subnets":[{{"CidrBlock":"10.0.0.0/24","AvailabilityZone":"{}","Ipv6CidrBlockAssociationSet":[{}]}}]}}"#,
            "z".repeat(200),
            blocks.join(",")
        );
        assert!(Subnets::from_json(&many)
            .unwrap_err()
            .contains("lists 4001 CIDR blocks (at most 8"));
    }
}
