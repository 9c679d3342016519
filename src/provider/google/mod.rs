//! A small Compute Engine v1 client: URL maps and global operations (reference/gcp/FACTS.md §2).
//! Plain reqwest + serde; knows nothing about Terraform.
//!
//! URL maps are kept as raw JSON so that fields this client does not know survive a write.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{json, Value as Json};

use super::config::Secret;
use super::http::{self, RetryPolicy};

/// How long operations are polled.
#[derive(Debug, Clone, Copy)]
pub struct Polling {
    /// First wait; grows by half each poll.
    pub first: Duration,
    /// Longest wait between polls.
    pub max: Duration,
    /// Give up after this long.
    pub timeout: Duration,
}

impl Default for Polling {
    fn default() -> Self {
        Polling {
            first: Duration::from_millis(100),
            max: Duration::from_secs(5),
            timeout: Duration::from_secs(600),
        }
    }
}

/// What can go wrong talking to Compute Engine.
#[derive(Debug, thiserror::Error)]
pub enum ComputeError {
    /// HTTP 404.
    #[error("{0} was not found")]
    NotFound(String),
    /// HTTP 412 `conditionNotMet`: the fingerprint is stale.
    #[error("the URL map changed since it was read (HTTP 412 conditionNotMet)")]
    Conflict,
    /// Any other API error, with Google's status, reason and message.
    #[error("HTTP {status} {reason}: {message}")]
    Api {
        /// HTTP status.
        status: u16,
        /// `errors[0].reason`, e.g. `forbidden`.
        reason: String,
        /// `error.message`.
        message: String,
    },
    /// No response (after retries).
    #[error("{0}")]
    Transport(String),
    /// The operation finished with errors.
    #[error("operation {name} failed: {messages}")]
    Operation {
        /// Operation name.
        name: String,
        /// The `error.errors[].message` lines.
        messages: String,
    },
    /// The operation did not reach DONE in time.
    #[error("operation {name} was not DONE after {seconds} s")]
    Timeout {
        /// Operation name.
        name: String,
        /// How long it was polled.
        seconds: u64,
    },
    /// A response that does not match the API contract.
    #[error("unexpected response: {0}")]
    Decode(String),
}

/// One `defaultRouteAction.weightedBackendServices` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WeightedBackend {
    /// The backend service reference as the API returns it (a full self-link).
    pub backend_service: String,
    /// 0..=1000
    pub weight: u32,
}

impl WeightedBackend {
    /// The backend service's name (the last path segment of the reference).
    pub fn name(&self) -> &str {
        backend_name(&self.backend_service)
    }
}

/// The name in a backend-service reference: `web-bs`, `projects/p/global/backendServices/web-bs`
/// and `https://.../backendServices/web-bs` all name `web-bs`.
pub fn backend_name(reference: &str) -> &str {
    reference.trim_end_matches('/').rsplit('/').next().unwrap_or(reference)
}

/// A URL map as returned by the API.
#[derive(Debug, Clone)]
pub struct UrlMap {
    /// The whole resource.
    pub raw: Json,
}

impl UrlMap {
    /// The optimistic-locking fingerprint.
    pub fn fingerprint(&self) -> Option<&str> {
        self.raw.get("fingerprint").and_then(Json::as_str)
    }

    /// The raw `defaultRouteAction.weightedBackendServices` entries.
    pub fn weighted_entries(&self) -> Vec<Json> {
        self.raw
            .pointer("/defaultRouteAction/weightedBackendServices")
            .and_then(Json::as_array)
            .cloned()
            .unwrap_or_default()
    }

    /// The weighted backend services.
    pub fn weighted(&self) -> Vec<WeightedBackend> {
        self.weighted_entries()
            .iter()
            .map(|e| WeightedBackend {
                backend_service: e
                    .get("backendService")
                    .and_then(Json::as_str)
                    .unwrap_or_default()
                    .to_string(),
                weight: e.get("weight").and_then(Json::as_u64).unwrap_or(0) as u32,
            })
            .collect()
    }
}

/// The Compute Engine client.
#[derive(Clone)]
pub struct Compute {
    http: reqwest::Client,
    base_url: String,
    token: Secret,
    retry: RetryPolicy,
    polling: Polling,
}

impl Compute {
    /// A client for `base_url` (e.g. `https://compute.googleapis.com/compute/v1`).
    pub fn new(http: reqwest::Client, base_url: &str, token: Secret, retry: RetryPolicy, polling: Polling) -> Self {
        Compute {
            http,
            base_url: base_url.trim_end_matches('/').to_string(),
            token,
            retry,
            polling,
        }
    }

    fn url_map_url(&self, project: &str, name: &str) -> String {
        format!("{}/projects/{project}/global/urlMaps/{name}", self.base_url)
    }

    async fn call(&self, what: &str, build: impl Fn() -> reqwest::RequestBuilder) -> Result<Json, ComputeError> {
        let response = http::send(&self.retry, || build().bearer_auth(self.token.expose()))
            .await
            .map_err(|e| ComputeError::Transport(e.to_string()))?;
        let status = response.status();
        let body: Json = response.json().await.unwrap_or(Json::Null);
        if status.is_success() {
            return Ok(body);
        }
        if status == StatusCode::NOT_FOUND {
            return Err(ComputeError::NotFound(what.to_string()));
        }
        if status == StatusCode::PRECONDITION_FAILED {
            return Err(ComputeError::Conflict);
        }
        Err(ComputeError::Api {
            status: status.as_u16(),
            reason: body
                .pointer("/error/errors/0/reason")
                .and_then(Json::as_str)
                .unwrap_or_default()
                .to_string(),
            message: body
                .pointer("/error/message")
                .and_then(Json::as_str)
                .unwrap_or_else(|| status.canonical_reason().unwrap_or("error"))
                .to_string(),
        })
    }

    /// `urlMaps.get`.
    ///
    /// # Errors
    /// [`ComputeError`], with `NotFound` when the URL map does not exist.
    pub async fn get_url_map(&self, project: &str, name: &str) -> Result<UrlMap, ComputeError> {
        let url = self.url_map_url(project, name);
        let raw = self
            .call(&format!("URL map {project}/{name}"), || self.http.get(&url))
            .await?;
        Ok(UrlMap { raw })
    }

    /// `urlMaps.patch` of `defaultRouteAction.weightedBackendServices` only (JSON merge patch:
    /// the rest of the URL map and of the route action stay as they are), with the fingerprint
    /// the entries were read with, then waits for the operation. `request_id` makes retries of
    /// the same change idempotent on Google's side.
    ///
    /// # Errors
    /// [`ComputeError::Conflict`] on a stale fingerprint; others as they come.
    pub async fn patch_weighted(
        &self,
        project: &str,
        name: &str,
        fingerprint: &str,
        entries: Vec<Json>,
        request_id: &str,
    ) -> Result<(), ComputeError> {
        let url = self.url_map_url(project, name);
        let body = json!({
            "fingerprint": fingerprint,
            "defaultRouteAction": {"weightedBackendServices": entries},
        });
        let operation = self
            .call(&format!("URL map {project}/{name}"), || {
                self.http.patch(&url).query(&[("requestId", request_id)]).json(&body)
            })
            .await?;
        self.wait(project, &operation).await
    }

    /// Polls a global operation until it is DONE; an operation that ends with errors is an error.
    async fn wait(&self, project: &str, operation: &Json) -> Result<(), ComputeError> {
        let name = operation
            .get("name")
            .and_then(Json::as_str)
            .ok_or_else(|| ComputeError::Decode("the operation has no name".into()))?
            .to_string();
        let started = tokio::time::Instant::now();
        let mut delay = self.polling.first;
        let mut current = operation.clone();
        loop {
            if current.get("status").and_then(Json::as_str) == Some("DONE") {
                let errors: Vec<&str> = current
                    .pointer("/error/errors")
                    .and_then(Json::as_array)
                    .map(|errs| {
                        errs.iter()
                            .filter_map(|e| e.get("message").and_then(Json::as_str))
                            .collect()
                    })
                    .unwrap_or_default();
                return if errors.is_empty() {
                    Ok(())
                } else {
                    Err(ComputeError::Operation {
                        name,
                        messages: errors.join("; "),
                    })
                };
            }
            if started.elapsed() >= self.polling.timeout {
                return Err(ComputeError::Timeout {
                    name,
                    seconds: self.polling.timeout.as_secs(),
                });
            }
            tokio::time::sleep(delay).await;
            delay = delay.mul_f64(1.5).min(self.polling.max);
            let url = format!("{}/projects/{project}/global/operations/{name}", self.base_url);
            current = self.call(&format!("operation {name}"), || self.http.get(&url)).await?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backend_names_from_any_reference_form() {
        assert_eq!(backend_name("web-bs"), "web-bs");
        assert_eq!(backend_name("projects/p/global/backendServices/web-bs"), "web-bs");
        assert_eq!(
            backend_name("https://www.googleapis.com/compute/v1/projects/p/global/backendServices/web-bs"),
            "web-bs"
        );
    }
}
