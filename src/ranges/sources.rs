//! Parsers for the clouds' official IP-range files (their URLs are in `command.rs`):
//! AWS `ip-ranges.json`, Google `cloud.json`, Azure `ServiceTags_Public_*.json`, Oracle
//! `public_ip_ranges.json`. Region names are normalized to what Cloudflare's hints use (Azure
//! Service Tags aliases become ARM names; AWS `GLOBAL` and Google `global` mean no region).

use ipnet::IpNet;
use serde_json::Value as Json;

use super::{Range, Vendor};
use crate::regions::azure_arm_name;

/// A range file that cannot be read.
#[derive(Debug, thiserror::Error)]
#[error("{file}: {problem}")]
pub struct SourceError {
    /// Which file (vendor).
    pub file: &'static str,
    /// What is wrong.
    pub problem: String,
}

fn err(file: &'static str, problem: impl Into<String>) -> SourceError {
    SourceError {
        file,
        problem: problem.into(),
    }
}

fn parse_net(file: &'static str, text: &str) -> Result<IpNet, SourceError> {
    text.parse::<IpNet>()
        .map(|n| n.trunc())
        .map_err(|_| err(file, format!("{text:?} is not a CIDR prefix")))
}

fn region(name: &str) -> Option<String> {
    match name {
        "" | "GLOBAL" | "global" => None,
        other => Some(other.to_string()),
    }
}

/// AWS `ip-ranges.json`. Returns the ranges and the file's date (`createDate`, YYYY-MM-DD).
///
/// # Errors
/// [`SourceError`] when the document is not in AWS's format.
pub fn aws(json: &Json) -> Result<(Vec<Range>, Option<String>), SourceError> {
    const F: &str = "AWS ip-ranges.json";
    let mut out = Vec::new();
    for (list, key) in [("prefixes", "ip_prefix"), ("ipv6_prefixes", "ipv6_prefix")] {
        let rows = json
            .get(list)
            .and_then(Json::as_array)
            .ok_or_else(|| err(F, format!("no `{list}` array")))?;
        for row in rows {
            let cidr = row
                .get(key)
                .and_then(Json::as_str)
                .ok_or_else(|| err(F, format!("a row has no `{key}`")))?;
            out.push(Range {
                net: parse_net(F, cidr)?,
                vendor: Vendor::Aws,
                region: region(row.get("region").and_then(Json::as_str).unwrap_or_default()),
                service: row
                    .get("service")
                    .and_then(Json::as_str)
                    .unwrap_or("AMAZON")
                    .to_string(),
            });
        }
    }
    let date = json
        .get("createDate")
        .and_then(Json::as_str)
        .map(|d| d.get(..10).unwrap_or(d).to_string());
    Ok((out, date))
}

/// Google `cloud.json`.
///
/// # Errors
/// [`SourceError`] when the document is not in Google's format.
pub fn gcp(json: &Json) -> Result<(Vec<Range>, Option<String>), SourceError> {
    const F: &str = "Google cloud.json";
    let rows = json
        .get("prefixes")
        .and_then(Json::as_array)
        .ok_or_else(|| err(F, "no `prefixes` array"))?;
    let mut out = Vec::new();
    for row in rows {
        let cidr = row
            .get("ipv4Prefix")
            .or_else(|| row.get("ipv6Prefix"))
            .and_then(Json::as_str)
            .ok_or_else(|| err(F, "a row has neither `ipv4Prefix` nor `ipv6Prefix`"))?;
        out.push(Range {
            net: parse_net(F, cidr)?,
            vendor: Vendor::Gcp,
            region: region(row.get("scope").and_then(Json::as_str).unwrap_or_default()),
            service: row
                .get("service")
                .and_then(Json::as_str)
                .unwrap_or("Google Cloud")
                .to_string(),
        });
    }
    let date = json
        .get("creationTime")
        .and_then(Json::as_str)
        .map(|d| d.get(..10).unwrap_or(d).to_string());
    Ok((out, date))
}

/// Azure Service Tags (`ServiceTags_Public_YYYYMMDD.json`). Tags without a region (global tags)
/// are skipped: they say "Azure" but not where.
///
/// # Errors
/// [`SourceError`] when the document is not in Microsoft's format.
pub fn azure(json: &Json) -> Result<Vec<Range>, SourceError> {
    const F: &str = "Azure Service Tags";
    let values = json
        .get("values")
        .and_then(Json::as_array)
        .ok_or_else(|| err(F, "no `values` array"))?;
    let mut out = Vec::new();
    for value in values {
        let props = value
            .get("properties")
            .ok_or_else(|| err(F, "a value has no `properties`"))?;
        let Some(region) = props.get("region").and_then(Json::as_str).and_then(region) else {
            continue;
        };
        let tag = value.get("name").and_then(Json::as_str).unwrap_or_default();
        let service = match props.get("systemService").and_then(Json::as_str) {
            Some(s) if !s.is_empty() => s.to_string(),
            _ => tag.split('.').next().unwrap_or("AzureCloud").to_string(),
        };
        for prefix in props
            .get("addressPrefixes")
            .and_then(Json::as_array)
            .into_iter()
            .flatten()
        {
            let cidr = prefix
                .as_str()
                .ok_or_else(|| err(F, "an address prefix is not a string"))?;
            out.push(Range {
                net: parse_net(F, cidr)?,
                vendor: Vendor::Azure,
                region: Some(azure_arm_name(&region).to_string()),
                service: service.clone(),
            });
        }
    }
    Ok(out)
}

/// Oracle `public_ip_ranges.json`.
///
/// # Errors
/// [`SourceError`] when the document is not in Oracle's format.
pub fn oci(json: &Json) -> Result<(Vec<Range>, Option<String>), SourceError> {
    const F: &str = "Oracle public_ip_ranges.json";
    let regions = json
        .get("regions")
        .and_then(Json::as_array)
        .ok_or_else(|| err(F, "no `regions` array"))?;
    let mut out = Vec::new();
    for r in regions {
        let name = r
            .get("region")
            .and_then(Json::as_str)
            .ok_or_else(|| err(F, "a region has no name"))?;
        for c in r.get("cidrs").and_then(Json::as_array).into_iter().flatten() {
            let cidr = c
                .get("cidr")
                .and_then(Json::as_str)
                .ok_or_else(|| err(F, "a cidr row has no `cidr`"))?;
            let tags: Vec<&str> = c
                .get("tags")
                .and_then(Json::as_array)
                .into_iter()
                .flatten()
                .filter_map(Json::as_str)
                .collect();
            out.push(Range {
                net: parse_net(F, cidr)?,
                vendor: Vendor::Oci,
                region: region(name),
                service: if tags.is_empty() { "OCI".into() } else { tags.join(",") },
            });
        }
    }
    let date = json
        .get("last_updated_timestamp")
        .and_then(Json::as_str)
        .map(|d| d.get(..10).unwrap_or(d).to_string());
    Ok((out, date))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn official_formats() {
        let (r, date) = aws(&json!({"createDate": "2026-10-26-01-11-04", "prefixes": [{"ip_prefix": "3.112.0.0/14", "region": "ap-northeast-1", "service": "EC2", "network_border_group": "ap-northeast-1"}],
            "ipv6_prefixes": [{"ipv6_prefix": "2600:1f00::/24", "region": "GLOBAL", "service": "AMAZON", "network_border_group": "GLOBAL"}]}))
        .unwrap();
        assert_eq!(date.as_deref(), Some("2026-10-26"));
        assert_eq!(r[0].region.as_deref(), Some("ap-northeast-1"));
        assert_eq!(r[1].region, None, "GLOBAL is no region");
        let (r, _) = gcp(&json!({"prefixes": [{"ipv4Prefix": "34.84.0.0/16", "service": "Google Cloud", "scope": "asia-northeast1"}]})).unwrap();
        assert_eq!(r[0].vendor, Vendor::Gcp);
        let r = azure(&json!({"values": [
            {"name": "AzureCloud.germanywc", "properties": {"region": "germanywc", "systemService": "", "addressPrefixes": ["20.52.0.0/18"]}},
            {"name": "AzureCloud", "properties": {"region": "", "systemService": "", "addressPrefixes": ["13.64.0.0/11"]}}]}))
        .unwrap();
        assert_eq!(r.len(), 1, "global tags are skipped");
        assert_eq!(
            r[0].region.as_deref(),
            Some("germanywestcentral"),
            "Service Tags alias → ARM name"
        );
        assert_eq!(r[0].service, "AzureCloud");
        let (r, _) = oci(
            &json!({"regions": [{"region": "ap-tokyo-1", "cidrs": [{"cidr": "140.238.32.0/20", "tags": ["OCI"]}]}]}),
        )
        .unwrap();
        assert_eq!(r[0].region.as_deref(), Some("ap-tokyo-1"));
        assert!(aws(&json!({"nope": 1})).is_err());
    }
}
