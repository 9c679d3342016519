//! `locality lookup` and `locality ranges update|info`.

use std::io::Write;
use std::net::IpAddr;
use std::path::PathBuf;

use serde_json::{json, Value as Json};

use super::{builtin, sources, Range, Table};

/// Official locations of the range files. Azure's file name changes every week: its download
/// page is read to find the current one.
pub const AWS_URL: &str = "https://ip-ranges.amazonaws.com/ip-ranges.json";
/// Google Cloud's ranges.
pub const GCP_URL: &str = "https://www.gstatic.com/ipranges/cloud.json";
/// The page that links Azure's current Service Tags file.
pub const AZURE_PAGE: &str = "https://www.microsoft.com/en-us/download/details.aspx?id=56519";
/// Oracle's ranges.
pub const OCI_URL: &str = "https://docs.oracle.com/en-us/iaas/tools/public_ip_ranges.json";

/// One lookup answer as JSON (what `locality lookup --json` prints and the data source returns).
pub fn answer(ip: IpAddr, found: Option<&Range>, date: &str) -> Json {
    match found {
        Some(r) => json!({
            "ip": ip.to_string(), "found": true, "vendor": r.vendor.as_str(), "region": r.region,
            "prefix": r.net.to_string(), "service": r.service, "hint": r.hint(), "ranges_date": date,
        }),
        None => {
            json!({"ip": ip.to_string(), "found": false, "vendor": null, "region": null, "prefix": null, "service": null, "hint": null, "ranges_date": date})
        }
    }
}

/// `locality lookup IP...`: exit 0, or 2 when an argument is not an IP address.
pub fn lookup(ips: &[String], as_json: bool, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let table = builtin();
    let mut code = 0;
    for text in ips {
        let Ok(ip) = text.trim().parse::<IpAddr>() else {
            let _ = writeln!(err, "error: {text:?} is not an IPv4 or IPv6 address");
            code = 2;
            continue;
        };
        let hit = table.lookup(ip);
        if as_json {
            let _ = writeln!(out, "{}", answer(ip, hit, &table.date));
        } else {
            match hit {
                Some(r) => {
                    let _ = writeln!(
                        out,
                        "{ip}\t{}\t{}\t{}\t{}\t{}",
                        r.vendor.as_str(),
                        r.region.as_deref().unwrap_or("-"),
                        r.net,
                        r.service,
                        r.hint().unwrap_or_else(|| "-".into())
                    );
                }
                None => {
                    let _ = writeln!(out, "{ip}\tnot in any cloud's published ranges ({})", table.date);
                }
            }
        }
    }
    code
}

/// `locality ranges info`.
pub fn info(out: &mut dyn Write) -> u8 {
    let table = builtin();
    let mut per_vendor = std::collections::BTreeMap::new();
    for r in table.ranges() {
        *per_vendor.entry(r.vendor.as_str()).or_insert(0usize) += 1;
    }
    let _ = writeln!(out, "snapshot date: {}", table.date);
    let _ = writeln!(out, "snapshot size: {} bytes", super::SNAPSHOT.len());
    let _ = writeln!(out, "ranges: {}", table.ranges().len());
    for (vendor, n) in per_vendor {
        let _ = writeln!(out, "  {vendor}: {n}");
    }
    0
}

/// Where each cloud's file comes from: a local path or an https URL.
pub struct Sources {
    /// AWS ip-ranges.json.
    pub aws: String,
    /// Google cloud.json.
    pub gcp: String,
    /// Azure Service Tags (or the download page to find it on).
    pub azure: String,
    /// Oracle public_ip_ranges.json.
    pub oci: String,
}

impl Default for Sources {
    fn default() -> Self {
        Sources {
            aws: AWS_URL.into(),
            gcp: GCP_URL.into(),
            azure: AZURE_PAGE.into(),
            oci: OCI_URL.into(),
        }
    }
}

async fn fetch(location: &str) -> Result<String, String> {
    if location.starts_with("https://") || location.starts_with("http://") {
        let client = crate::http::client(std::time::Duration::from_secs(120));
        let response = client
            .get(location)
            .send()
            .await
            .map_err(|e| format!("{location}: {e}"))?;
        if !response.status().is_success() {
            return Err(format!("{location}: HTTP {}", response.status()));
        }
        response.text().await.map_err(|e| format!("{location}: {e}"))
    } else {
        std::fs::read_to_string(location).map_err(|e| format!("{location}: {e}"))
    }
}

async fn fetch_json(location: &str) -> Result<Json, String> {
    let text = fetch(location).await?;
    serde_json::from_str(&text).map_err(|e| format!("{location}: not JSON: {e}"))
}

/// Azure: a Service Tags file, or the download page whose link to the current file is followed.
async fn azure_json(location: &str) -> Result<Json, String> {
    let text = fetch(location).await?;
    if let Ok(json) = serde_json::from_str::<Json>(&text) {
        return Ok(json);
    }
    let link = regex::Regex::new(r#"https://download\.microsoft\.com/download/[^"'\s]+/ServiceTags_Public_\d{8}\.json"#)
        .expect("valid regex")
        .find(&text)
        .map(|m| m.as_str().to_string())
        .ok_or_else(|| format!("{location}: no ServiceTags_Public_YYYYMMDD.json link found; download the file and pass it with --azure FILE"))?;
    fetch_json(&link).await
}

/// `locality ranges update`: builds a snapshot from the four files and writes it to `output`.
///
/// # Errors
/// A message naming the file that could not be read or parsed.
pub async fn update(
    sources: &Sources,
    date: Option<String>,
    output: &PathBuf,
    out: &mut dyn Write,
) -> Result<(), String> {
    let (mut ranges, aws_date) = sources::aws(&fetch_json(&sources.aws).await?).map_err(|e| e.to_string())?;
    let (gcp, gcp_date) = sources::gcp(&fetch_json(&sources.gcp).await?).map_err(|e| e.to_string())?;
    let azure = sources::azure(&azure_json(&sources.azure).await?).map_err(|e| e.to_string())?;
    let (oci, oci_date) = sources::oci(&fetch_json(&sources.oci).await?).map_err(|e| e.to_string())?;
    ranges.extend(gcp);
    ranges.extend(azure);
    ranges.extend(oci);
    // The snapshot's date: the newest file date, unless given.
    let date = date
        .or_else(|| [aws_date, gcp_date, oci_date].into_iter().flatten().max())
        .ok_or("no file carries a date: pass --date YYYY-MM-DD")?;
    let table = Table::new(&date, ranges);
    let bytes = table.encode();
    std::fs::write(output, &bytes).map_err(|e| format!("{}: {e}", output.display()))?;
    let _ = writeln!(
        out,
        "wrote {} ({} ranges, {} bytes, dated {date})",
        output.display(),
        table.ranges().len(),
        bytes.len()
    );
    Ok(())
}
