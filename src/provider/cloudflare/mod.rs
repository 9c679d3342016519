//! A Cloudflare API client for origin cloud-region mappings, v2 endpoints under
//! `/zones/{zone_id}/origin/cloud_regions` (Cloudflare's published API schema for origin cloud
//! regions; at most 3,500 mappings a zone, batches of 100): paged list, PUT
//! upsert, batch PUT (merge), batch DELETE (with the IP array as its body), supported_regions.
//! Plain reqwest + serde; knows nothing about Terraform. `zone.rs` adds the per-process listing
//! cache and request batching; `sync.rs` writes a whole zone's changes at the batch floor.

mod sync;
mod zone;

pub use sync::{SyncError, SyncOutcomes, CONCURRENT_REQUESTS};
pub use zone::{CreateError, Owner, Support, Zones, BATCH_WINDOW};

use std::collections::BTreeMap;
use std::net::IpAddr;

use reqwest::StatusCode;
use serde::Deserialize;
use serde_json::{json, Value as Json};

use super::secret::Secret;
use crate::http::{self, RetryPolicy};

/// Items a batch request may hold.
pub const BATCH_LIMIT: usize = 100;
/// Entries per list page (the API's maximum).
pub const PAGE_SIZE: usize = 100;
/// Mappings a zone may hold.
pub const ZONE_LIMIT: usize = 3500;

/// One mapping.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Mapping {
    /// The origin IP, canonical (RFC 5952).
    pub origin_ip: String,
    /// `aws`, `azure`, `gcp` or `oci`.
    pub vendor: String,
    /// The vendor's region name.
    pub region: String,
    /// When it last changed (RFC 3339), if the API says.
    #[serde(default)]
    pub modified_on: Option<String>,
}

/// A region a zone supports, with its upper-tier data centers.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct SupportedRegion {
    /// Region name.
    pub name: String,
    /// Upper-tier colo codes (may be empty when `obtained_codes` is false).
    #[serde(default)]
    pub upper_tier_colos: Vec<String>,
}

/// `supported_regions` of a zone.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct SupportedRegions {
    /// vendor → regions.
    #[serde(default)]
    pub vendors: BTreeMap<String, Vec<SupportedRegion>>,
    /// Whether the colo lists are complete.
    #[serde(default)]
    pub obtained_codes: bool,
}

impl SupportedRegions {
    /// The region entry for `vendor`/`region`, if the zone supports it.
    pub fn find(&self, vendor: &str, region: &str) -> Option<&SupportedRegion> {
        self.vendors.get(vendor)?.iter().find(|r| r.name == region)
    }
}

/// One item of a batch result.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct BatchItem {
    /// The origin IP.
    pub origin_ip: String,
    /// Why it failed (failed items only).
    #[serde(default)]
    pub error: Option<String>,
    /// The vendor (succeeded items).
    #[serde(default)]
    pub vendor: Option<String>,
    /// The region (succeeded items).
    #[serde(default)]
    pub region: Option<String>,
}

/// A batch result: some items may fail while others succeed (HTTP 200 either way).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct BatchResult {
    /// Applied items.
    #[serde(default)]
    pub succeeded: Vec<BatchItem>,
    /// Refused items, with their error.
    #[serde(default)]
    pub failed: Vec<BatchItem>,
}

/// What can go wrong, keeping Cloudflare's code and message.
#[derive(Debug, Clone, thiserror::Error)]
pub enum CloudflareError {
    /// HTTP 404 (codes 1142 / 1163 / 7003).
    #[error("not found (Cloudflare error {code}: {message})")]
    NotFound {
        /// Cloudflare's error code.
        code: u32,
        /// Cloudflare's message.
        message: String,
    },
    /// Any other API error.
    #[error("HTTP {status}, Cloudflare error {code}: {message}")]
    Api {
        /// HTTP status.
        status: u16,
        /// Cloudflare's first error code (0 when absent).
        code: u32,
        /// Cloudflare's first error message.
        message: String,
    },
    /// No response after retries.
    #[error("{0}")]
    Transport(String),
    /// A response that does not match the contract.
    #[error("unexpected response: {0}")]
    Decode(String),
}

impl CloudflareError {
    /// Cloudflare's error code, if the API gave one.
    pub fn code(&self) -> Option<u32> {
        match self {
            CloudflareError::NotFound { code, .. } | CloudflareError::Api { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// Whether the request may have been applied although it failed: no response (connection
    /// lost, timeout) or a server error after every retry. Such a write is read back, not
    /// reported as failed outright.
    pub fn is_ambiguous(&self) -> bool {
        match self {
            CloudflareError::Transport(_) => true,
            CloudflareError::Api { status, .. } => *status >= 500,
            _ => false,
        }
    }
}

/// The canonical (RFC 5952) text of an IP address, or `None` when `text` is not one.
pub fn canonical_ip(text: &str) -> Option<String> {
    text.trim().parse::<IpAddr>().ok().map(|ip| ip.to_string())
}

/// The client.
#[derive(Clone)]
pub struct Cloudflare {
    http: reqwest::Client,
    base_url: String,
    token: Secret,
    retry: RetryPolicy,
}

impl Cloudflare {
    /// A client for `base_url` (e.g. `https://api.cloudflare.com/client/v4`).
    pub fn new(http: reqwest::Client, base_url: &str, token: Secret, retry: RetryPolicy) -> Self {
        Cloudflare {
            http,
            base_url: base_url.trim_end_matches('/').to_string(),
            token,
            retry,
        }
    }

    fn url(&self, zone: &str, rest: &str) -> String {
        format!("{}/zones/{zone}/origin/cloud_regions{rest}", self.base_url)
    }

    /// Sends with retries, checks the envelope, returns `(result, result_info)`.
    async fn call(&self, build: impl Fn() -> reqwest::RequestBuilder) -> Result<(Json, Json), CloudflareError> {
        let response = http::send(&self.retry, || build().bearer_auth(self.token.expose()))
            .await
            .map_err(|e| CloudflareError::Transport(e.to_string()))?;
        let status = response.status();
        let body: Json = response.json().await.unwrap_or(Json::Null);
        let (code, message) = (
            body.pointer("/errors/0/code").and_then(Json::as_u64).unwrap_or(0) as u32,
            body.pointer("/errors/0/message")
                .and_then(Json::as_str)
                .unwrap_or_else(|| status.canonical_reason().unwrap_or("error"))
                .to_string(),
        );
        if status == StatusCode::NOT_FOUND {
            return Err(CloudflareError::NotFound { code, message });
        }
        if !status.is_success() || body.get("success").and_then(Json::as_bool) == Some(false) {
            return Err(CloudflareError::Api {
                status: status.as_u16(),
                code,
                message,
            });
        }
        Ok((
            body.get("result").cloned().unwrap_or(Json::Null),
            body.get("result_info").cloned().unwrap_or(Json::Null),
        ))
    }

    fn decode<T: serde::de::DeserializeOwned>(value: Json) -> Result<T, CloudflareError> {
        serde_json::from_value(value).map_err(|e| CloudflareError::Decode(e.to_string()))
    }

    /// Every mapping of a zone, page by page (100 a page).
    ///
    /// # Errors
    /// [`CloudflareError`].
    pub async fn list(&self, zone: &str) -> Result<Vec<Mapping>, CloudflareError> {
        let url = self.url(zone, "");
        let mut all = Vec::new();
        let mut page = 1u64;
        // A zone holds at most ZONE_LIMIT mappings: a listing that goes on past that many pages
        // (a server repeating a page, or a wrong `total_pages`) is refused, not followed forever.
        let max_pages = ZONE_LIMIT.div_ceil(PAGE_SIZE) as u64 + 1;
        loop {
            if page > max_pages {
                return Err(CloudflareError::Decode(format!(
                    "the listing of zone {zone} goes on past {max_pages} pages of {PAGE_SIZE}, more than a zone can hold ({ZONE_LIMIT})"
                )));
            }
            let query = [("page", page.to_string()), ("per_page", PAGE_SIZE.to_string())];
            let (result, info) = self.call(|| self.http.get(&url).query(&query)).await?;
            let items: Vec<Mapping> = Self::decode(result)?;
            let count = items.len();
            all.extend(items);
            let total_pages = info.get("total_pages").and_then(Json::as_u64).unwrap_or(page);
            if page >= total_pages || count == 0 {
                return Ok(all);
            }
            page += 1;
        }
    }

    /// One mapping; `Ok(None)` when the IP has none.
    ///
    /// # Errors
    /// [`CloudflareError`].
    pub async fn get(&self, zone: &str, ip: &str) -> Result<Option<Mapping>, CloudflareError> {
        let url = self.url(zone, &format!("/{ip}"));
        match self.call(|| self.http.get(&url)).await {
            Ok((result, _)) => Ok(Some(Self::decode(result)?)),
            Err(CloudflareError::NotFound { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Creates or replaces one mapping (v2 PUT upsert); returns it as stored, with `modified_on`.
    ///
    /// # Errors
    /// [`CloudflareError`].
    pub async fn put(&self, zone: &str, mapping: &Mapping) -> Result<Mapping, CloudflareError> {
        let url = self.url(zone, &format!("/{}", mapping.origin_ip));
        let body = json!({"origin_ip": mapping.origin_ip, "vendor": mapping.vendor, "region": mapping.region});
        let (result, _) = self.call(|| self.http.put(&url).json(&body)).await?;
        Self::decode(result)
    }

    /// Creates or replaces several mappings (at most [`BATCH_LIMIT`]); a merge: other mappings
    /// stay.
    ///
    /// # Errors
    /// [`CloudflareError`] when the request as a whole fails; per-item failures are in the result.
    pub async fn batch_put(&self, zone: &str, items: &[Mapping]) -> Result<BatchResult, CloudflareError> {
        let url = self.url(zone, "/batch");
        let body: Vec<Json> = items
            .iter()
            .map(|m| json!({"origin_ip": m.origin_ip, "vendor": m.vendor, "region": m.region}))
            .collect();
        let (result, _) = self.call(|| self.http.put(&url).json(&body)).await?;
        Self::decode(result)
    }

    /// Deletes several mappings (at most [`BATCH_LIMIT`]). The IP array is the request body,
    /// which the API requires even though generated SDKs omit it.
    ///
    /// # Errors
    /// [`CloudflareError`] when the request as a whole fails; per-item failures are in the result.
    pub async fn batch_delete(&self, zone: &str, ips: &[String]) -> Result<BatchResult, CloudflareError> {
        let url = self.url(zone, "/batch");
        let (result, _) = self.call(|| self.http.delete(&url).json(ips)).await?;
        Self::decode(result)
    }

    /// The regions the zone supports, with their upper-tier colos.
    ///
    /// # Errors
    /// [`CloudflareError`] (e.g. when Tiered Cache is off).
    pub async fn supported_regions(&self, zone: &str) -> Result<SupportedRegions, CloudflareError> {
        let url = self.url(zone, "/supported_regions");
        let (result, _) = self.call(|| self.http.get(&url)).await?;
        Self::decode(result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_ips() {
        assert_eq!(canonical_ip("2001:DB8::0001").as_deref(), Some("2001:db8::1"));
        assert_eq!(
            canonical_ip("2001:db8:0:0:1:0:0:1").as_deref(),
            Some("2001:db8::1:0:0:1")
        );
        assert_eq!(canonical_ip("::ffff:c000:0201").as_deref(), Some("::ffff:192.0.2.1"));
        assert_eq!(canonical_ip("192.0.2.1").as_deref(), Some("192.0.2.1"));
        assert_eq!(canonical_ip("192.000.002.001"), None);
        assert_eq!(canonical_ip("example.com"), None);
    }
}
