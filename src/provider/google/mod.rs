//! A small Compute Engine v1 client: URL maps and global operations (reference/gcp/FACTS.md §2),
//! and the one domain operation on them, [`Compute::set_weights`] (read, change only the
//! weights, write with the fingerprint, retry on HTTP 412, wait for the operation).
//! Plain reqwest + serde; knows nothing about Terraform.
//!
//! URL maps are typed as far as this client needs them; the fields of a weighted backend
//! service that it does not know (e.g. `headerAction`) are kept and written back as they were.

use std::collections::BTreeMap;
use std::time::Duration;

use reqwest::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value as Json};

use super::secret::Secret;
use crate::http::{self, RetryPolicy};

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

/// How often a weights write is retried after HTTP 412 (someone changed the URL map in between).
pub const CONFLICT_RETRIES: u32 = 5;

impl ComputeError {
    /// Whether the request may have been applied although it failed: no response, a server
    /// error after every retry, or an operation that was not seen to finish.
    pub fn is_ambiguous(&self) -> bool {
        match self {
            ComputeError::Transport(_) | ComputeError::Timeout { .. } => true,
            ComputeError::Api { status, .. } => *status >= 500,
            _ => false,
        }
    }
}

/// One `defaultRouteAction.weightedBackendServices` entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WeightedBackendService {
    /// The backend service reference as the API returns it (a full self-link).
    pub backend_service: String,
    /// 0..=1000
    #[serde(default)]
    pub weight: u32,
    /// Fields this client does not model (`headerAction`, ...), written back unchanged.
    #[serde(flatten)]
    pub other: serde_json::Map<String, Json>,
}

impl WeightedBackendService {
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

/// A URL map's default route action, as far as this client needs it.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RouteAction {
    /// The weighted backend services.
    #[serde(default)]
    pub weighted_backend_services: Vec<WeightedBackendService>,
}

/// A URL map, as far as this client needs it.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UrlMap {
    /// The URL map's name.
    #[serde(default)]
    pub name: String,
    /// The optimistic-locking fingerprint.
    #[serde(default)]
    pub fingerprint: Option<String>,
    /// The default route action, if any.
    #[serde(default)]
    pub default_route_action: Option<RouteAction>,
}

impl UrlMap {
    /// The weighted backend services of the default route action.
    pub fn weighted(&self) -> &[WeightedBackendService] {
        self.default_route_action
            .as_ref()
            .map_or(&[], |a| a.weighted_backend_services.as_slice())
    }

    /// Backend-service name → weight.
    pub fn weights(&self) -> BTreeMap<String, u32> {
        self.weighted()
            .iter()
            .map(|w| (w.name().to_string(), w.weight))
            .collect()
    }
}

/// Why [`Compute::set_weights`] did not set the weights.
#[derive(Debug, thiserror::Error)]
pub enum WeightsError {
    /// The URL map has no weighted backend services to set weights on.
    #[error("URL map {url_map} has no defaultRouteAction.weightedBackendServices to set weights on. Give it some first (`locality gen` writes them).")]
    NoWeightedBackends {
        /// `project/url_map`.
        url_map: String,
    },
    /// Some keys are not weighted backend services of the URL map.
    #[error("{} not in the weightedBackendServices of URL map {url_map}. Its weighted backend services are: {}.", quoted(unknown), real.join(", "))]
    UnknownBackends {
        /// `project/url_map`.
        url_map: String,
        /// The keys as the caller gave them.
        unknown: Vec<String>,
        /// The URL map's weighted backend services.
        real: Vec<String>,
    },
    /// Every weight would be zero, sending traffic nowhere.
    #[error(
        "With these weights every weighted backend service of URL map {url_map} would be 0, sending traffic nowhere."
    )]
    AllZero {
        /// `project/url_map`.
        url_map: String,
    },
    /// HTTP 412 on every attempt.
    #[error("URL map {url_map} changed between read and write {attempts} times in a row (HTTP 412); try again.")]
    KeepsChanging {
        /// `project/url_map`.
        url_map: String,
        /// Attempts made.
        attempts: u32,
    },
    /// The API failed.
    #[error("URL map {url_map}: {source}")]
    Api {
        /// `project/url_map`.
        url_map: String,
        /// What the API said.
        source: ComputeError,
    },
}

fn quoted(keys: &[String]) -> String {
    let list: Vec<String> = keys.iter().map(|k| format!("{k:?}")).collect();
    match list.len() {
        1 => format!("{} is", list[0]),
        _ => format!("{} are", list.join(", ")),
    }
}

/// Pages of 500 [`Compute::list_url_maps`] follows at most (a project holds far fewer URL maps).
pub const MAX_LIST_PAGES: usize = 100;

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
        serde_json::from_value(raw).map_err(|e| ComputeError::Decode(format!("URL map {project}/{name}: {e}")))
    }

    /// `urlMaps.list`: every URL map of a project, page by page (500 a page, at most
    /// [`MAX_LIST_PAGES`] pages).
    ///
    /// # Errors
    /// [`ComputeError`]; a listing that goes on past the page bound is a decode error.
    pub async fn list_url_maps(&self, project: &str) -> Result<Vec<UrlMap>, ComputeError> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Page {
            #[serde(default)]
            items: Vec<UrlMap>,
            #[serde(default)]
            next_page_token: Option<String>,
        }
        let url = format!("{}/projects/{project}/global/urlMaps", self.base_url);
        let mut all = Vec::new();
        let mut token: Option<String> = None;
        for _ in 0..MAX_LIST_PAGES {
            let mut query = vec![("maxResults", "500".to_string())];
            if let Some(t) = &token {
                query.push(("pageToken", t.clone()));
            }
            let raw = self
                .call(&format!("the URL maps of project {project}"), || {
                    self.http.get(&url).query(&query)
                })
                .await?;
            let page: Page = serde_json::from_value(raw)
                .map_err(|e| ComputeError::Decode(format!("URL map list of {project}: {e}")))?;
            all.extend(page.items);
            match page.next_page_token.filter(|t| !t.is_empty()) {
                Some(next) => token = Some(next),
                None => return Ok(all),
            }
        }
        Err(ComputeError::Decode(format!(
            "the URL map list of {project} goes on past {MAX_LIST_PAGES} pages"
        )))
    }

    /// Sets the weights of the URL map's weighted backend services named in `desired` (keys
    /// may be names, paths or self-links; others keep their weight): read → change only the
    /// weights → write with the fingerprint → wait for the operation; on HTTP 412 re-read and
    /// try again, at most [`CONFLICT_RETRIES`] times. Returns whether anything was written.
    ///
    /// # Errors
    /// [`WeightsError`]: unknown keys (with the real list), all weights zero, a URL map without
    /// weighted backend services, a URL map that keeps changing, or the API's error.
    pub async fn set_weights(
        &self,
        project: &str,
        url_map: &str,
        desired: &BTreeMap<String, u32>,
    ) -> Result<bool, WeightsError> {
        let id = || format!("{project}/{url_map}");
        let api = |source| WeightsError::Api { url_map: id(), source };
        for attempt in 1..=CONFLICT_RETRIES + 1 {
            let map = self.get_url_map(project, url_map).await.map_err(api)?;
            let live = map.weighted();
            if live.is_empty() {
                return Err(WeightsError::NoWeightedBackends { url_map: id() });
            }
            let unknown: Vec<String> = desired
                .keys()
                .filter(|k| !live.iter().any(|w| w.name() == backend_name(k)))
                .cloned()
                .collect();
            if !unknown.is_empty() {
                let real = live.iter().map(|w| w.name().to_string()).collect();
                return Err(WeightsError::UnknownBackends {
                    url_map: id(),
                    unknown,
                    real,
                });
            }
            let wanted = |w: &WeightedBackendService| {
                desired
                    .iter()
                    .find(|(k, _)| backend_name(k) == w.name())
                    .map_or(w.weight, |(_, weight)| *weight)
            };
            let entries: Vec<WeightedBackendService> = live
                .iter()
                .map(|w| WeightedBackendService {
                    weight: wanted(w),
                    ..w.clone()
                })
                .collect();
            if entries.iter().all(|e| e.weight == 0) {
                return Err(WeightsError::AllZero { url_map: id() });
            }
            if entries.as_slice() == live {
                return Ok(false);
            }
            let fingerprint = map
                .fingerprint
                .as_deref()
                .ok_or_else(|| api(ComputeError::Decode("the URL map has no fingerprint".into())))?;
            match self
                .patch_weighted(project, url_map, fingerprint, &entries, &crate::http::uuid_v4())
                .await
            {
                Ok(()) => return Ok(true),
                Err(ComputeError::Conflict) => {
                    tracing::info!(
                        attempt,
                        "URL map changed between read and write (HTTP 412); reading it again"
                    );
                }
                // The PATCH may have been applied although its response was lost: read back.
                Err(e) if e.is_ambiguous() => {
                    let applied = self
                        .get_url_map(project, url_map)
                        .await
                        .is_ok_and(|now| now.weighted() == entries.as_slice());
                    return if applied { Ok(true) } else { Err(api(e)) };
                }
                Err(e) => return Err(api(e)),
            }
        }
        Err(WeightsError::KeepsChanging {
            url_map: id(),
            attempts: CONFLICT_RETRIES + 1,
        })
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
        entries: &[WeightedBackendService],
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
