//! `locality lookup` and `locality ranges update|info`. They answer from the same snapshot as
//! the provider: `--ranges FILE`, else the file `LOCALITY_RANGES_FILE` names, else the
//! built-in one; and say which one and its date.

use std::io::Write;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use serde_json::{json, Value as Json};

use super::{builtin, env_file, load_file, sources, staleness, Hit, Source, Table, RANGES_FILE_ENV};

/// The snapshot a command uses: `--ranges FILE`, else [`RANGES_FILE_ENV`], else the built-in one.
///
/// # Errors
/// The file cannot be read or is not a snapshot (never silently the built-in one instead).
pub fn open(flag: Option<&Path>) -> Result<(Source, std::borrow::Cow<'static, Table>), String> {
    let (path, via_env) = match flag {
        Some(path) => (Some(path.to_path_buf()), false),
        None => (env_file(), true),
    };
    match path {
        None => Ok((Source::BuiltIn, std::borrow::Cow::Borrowed(builtin()))),
        Some(path) => {
            let table = load_file(&path).map_err(|e| if via_env { format!("{RANGES_FILE_ENV}={e}") } else { e })?;
            Ok((Source::File(path), std::borrow::Cow::Owned(table)))
        }
    }
}

/// The per-user file `locality ranges update` writes by default:
/// `$XDG_DATA_HOME/locality/ranges.bin`, else `$HOME/.local/share/locality/ranges.bin`.
pub fn default_update_path() -> Option<PathBuf> {
    let nonempty = |key: &str| std::env::var_os(key).filter(|v| !v.is_empty()).map(PathBuf::from);
    let data = nonempty("XDG_DATA_HOME").or_else(|| nonempty("HOME").map(|h| h.join(".local/share")))?;
    Some(data.join("locality").join("ranges.bin"))
}

/// Official locations of the range files. Azure's file name changes every week: its download
/// page is read to find the current one.
pub const AWS_URL: &str = "https://ip-ranges.amazonaws.com/ip-ranges.json";
/// Google Cloud's ranges.
pub const GCP_URL: &str = "https://www.gstatic.com/ipranges/cloud.json";
/// The page that links Azure's current Service Tags file.
pub const AZURE_PAGE: &str = "https://www.microsoft.com/en-us/download/details.aspx?id=56519";
/// Oracle's ranges.
pub const OCI_URL: &str = "https://docs.oracle.com/en-us/iaas/tools/public_ip_ranges.json";

/// How a source is named in output: `built-in` or the file's path.
fn source_name(source: &Source) -> String {
    match source {
        Source::BuiltIn => "built-in".to_string(),
        Source::File(path) => path.display().to_string(),
    }
}

/// One lookup answer as JSON (what `locality lookup --json` prints; the same fields as the
/// `locality_cloud_region` data source).
pub fn answer(ip: IpAddr, found: Option<Hit<'_>>, date: &str, source: &Source) -> Json {
    let source = source_name(source);
    match found {
        Some(r) => json!({
            "ip": ip.to_string(), "found": true, "vendor": r.vendor.as_str(), "region": r.region,
            "prefix": r.net.to_string(), "service": r.service, "hint": r.hint(), "ranges_date": date,
            "ranges_source": source,
        }),
        None => {
            json!({"ip": ip.to_string(), "found": false, "vendor": null, "region": null, "prefix": null, "service": null, "hint": null, "ranges_date": date, "ranges_source": source})
        }
    }
}

/// `locality lookup [--ranges FILE] IP...`: exit 0, 2 when an argument is not an IP address,
/// 1 when the snapshot file cannot be read. Which snapshot answered (and its date) goes to
/// stderr in text mode, into each object with `--json`.
pub fn lookup(ranges: Option<&Path>, ips: &[String], as_json: bool, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let (source, table) = match open(ranges) {
        Ok(opened) => opened,
        Err(e) => {
            let _ = writeln!(err, "error: {e}");
            return 1;
        }
    };
    if let Some(stale) = staleness(&table, &source, std::time::SystemTime::now()) {
        let _ = writeln!(err, "warning: {stale}");
    }
    if !as_json {
        let _ = writeln!(err, "ranges: {source}, dated {}", table.date);
    }
    let mut code = 0;
    for text in ips {
        let Ok(ip) = text.trim().parse::<IpAddr>() else {
            let _ = writeln!(err, "error: {text:?} is not an IPv4 or IPv6 address");
            code = 2;
            continue;
        };
        let hit = table.lookup(ip);
        if as_json {
            let _ = writeln!(out, "{}", answer(ip, hit, &table.date, &source));
        } else {
            match hit {
                Some(r) => {
                    let _ = writeln!(
                        out,
                        "{ip}\t{}\t{}\t{}\t{}\t{}",
                        r.vendor.as_str(),
                        r.region.unwrap_or("-"),
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

/// `locality ranges info [--ranges FILE]`: exit 0, or 1 when the snapshot file cannot be read.
pub fn info(ranges: Option<&Path>, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let (source, table) = match open(ranges) {
        Ok(opened) => opened,
        Err(e) => {
            let _ = writeln!(err, "error: {e}");
            return 1;
        }
    };
    let mut per_vendor = std::collections::BTreeMap::new();
    for r in table.ranges() {
        *per_vendor.entry(r.vendor.as_str()).or_insert(0usize) += 1;
    }
    let _ = writeln!(out, "snapshot: {source}");
    let age = table
        .age_days(std::time::SystemTime::now())
        .map_or_else(String::new, |days| format!(" ({days} days ago)"));
    let _ = writeln!(out, "snapshot date: {}{age}", table.date);
    let _ = writeln!(out, "snapshot size: {} bytes", table.encode().len());
    let _ = writeln!(out, "ranges: {}", table.len());
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

/// A file's text from its URL or path; `flag` is the option that gives a local file instead.
async fn fetch(location: &str, flag: &str) -> Result<String, String> {
    if location.starts_with("https://") || location.starts_with("http://") {
        let client = crate::http::client(std::time::Duration::from_secs(120));
        let response = client.get(location).send().await.map_err(|e| {
            format!(
                "{location}: {} (offline? download the file and pass it with {flag} FILE)",
                crate::http::without_url(&e)
            )
        })?;
        if !response.status().is_success() {
            return Err(format!("{location}: HTTP {}", response.status()));
        }
        response
            .text()
            .await
            .map_err(|e| format!("{location}: {}", crate::http::without_url(&e)))
    } else {
        std::fs::read_to_string(location).map_err(|e| format!("{location}: {e}"))
    }
}

async fn fetch_json(location: &str, flag: &str) -> Result<Json, String> {
    let text = fetch(location, flag).await?;
    serde_json::from_str(&text).map_err(|e| format!("{location}: not JSON: {e}"))
}

/// Azure: a Service Tags file, or the download page whose link to the current file is followed.
async fn azure_json(location: &str) -> Result<Json, String> {
    let text = fetch(location, "--azure").await?;
    if let Ok(json) = serde_json::from_str::<Json>(&text) {
        return Ok(json);
    }
    let link = regex_lite::Regex::new(r#"https://download\.microsoft\.com/download/[^"'\s]+/ServiceTags_Public_\d{8}\.json"#)
        .expect("valid regex")
        .find(&text)
        .map(|m| m.as_str().to_string())
        .ok_or_else(|| format!("{location}: no ServiceTags_Public_YYYYMMDD.json link found; download the file and pass it with --azure FILE"))?;
    fetch_json(&link, "--azure").await
}

/// `locality ranges update`: builds a snapshot from the four files and writes it to `output`
/// (through an exclusive temporary file in the same folder, synced and renamed into place;
/// folders are created).
///
/// # Errors
/// A message naming the file that could not be read or parsed.
pub async fn update(
    sources: &Sources,
    date: Option<String>,
    output: &std::path::Path,
    out: &mut dyn Write,
) -> Result<(), String> {
    let (mut ranges, aws_date) = sources::aws(&fetch_json(&sources.aws, "--aws").await?).map_err(|e| e.to_string())?;
    let (gcp, gcp_date) = sources::gcp(&fetch_json(&sources.gcp, "--gcp").await?).map_err(|e| e.to_string())?;
    let azure = sources::azure(&azure_json(&sources.azure).await?).map_err(|e| e.to_string())?;
    let (oci, oci_date) = sources::oci(&fetch_json(&sources.oci, "--oci").await?).map_err(|e| e.to_string())?;
    ranges.extend(gcp);
    ranges.extend(azure);
    ranges.extend(oci);
    // The snapshot's date: the newest file date, unless given.
    let date = date
        .or_else(|| [aws_date, gcp_date, oci_date].into_iter().flatten().max())
        .ok_or("no file carries a date: pass --date YYYY-MM-DD")?;
    let table = Table::new(&date, ranges)?;
    let bytes = table.encode();
    let shown = output.display();
    // An exclusive temporary file with a random name, synced and renamed (folders created): a
    // name planted in a shared folder is never followed.
    crate::files::write_atomically(output, &bytes, 0o644).map_err(|e| format!("{shown}: {e}"))?;
    let _ = writeln!(
        out,
        "wrote {shown} ({} ranges, {} bytes, dated {date})\nuse it: export {RANGES_FILE_ENV}={shown}",
        table.len(),
        bytes.len()
    );
    Ok(())
}
