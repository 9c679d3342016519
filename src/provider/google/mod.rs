//! A small Compute Engine v1 client: global and regional URL maps (`urlMaps`, `regionUrlMaps`)
//! and their operations, and the one domain operation on them, [`Compute::set_weights`] (read,
//! change only the weights of one route, write with the fingerprint, retry on HTTP 412, wait
//! for the operation). Plain reqwest + serde; knows nothing about Terraform.
//!
//! A URL map is kept as the JSON the API returned. Weighted backend services live in a route
//! action: the URL map's `defaultRouteAction`, a path matcher's `defaultRouteAction`, or a
//! route rule's `routeAction` ([`Route`]). A write is a JSON merge patch (`urlMaps.patch`:
//! objects merge, arrays are replaced whole) built from that JSON with only weights changed,
//! so every other field — of the entries, the route and the URL map — goes back as it was.

use std::collections::BTreeMap;
use std::time::Duration;

use reqwest::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value as Json};

use crate::http::{self, RetryPolicy};

pub mod auth;
pub use auth::{AuthError, GoogleAuth};

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
    /// The fingerprint is stale: HTTP 412 `conditionNotMet` on the write, or its operation
    /// ending with "Invalid fingerprint" (another change landed while it was queued).
    #[error("the URL map changed since it was read (stale fingerprint)")]
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
    /// No access token (nothing was sent).
    #[error("{0}")]
    Auth(AuthError),
}

/// How often a weights write is retried after a stale fingerprint (someone changed the URL map
/// in between).
pub const CONFLICT_RETRIES: u32 = 5;

/// The first wait before a write retried after a stale fingerprint; it doubles each time, and
/// each wait is a random half to all of it, so that writers in other processes get out of each
/// other's way.
const CONFLICT_BACKOFF: Duration = Duration::from_millis(200);

/// Whether a finished operation failed on a stale fingerprint: Compute accepts a PATCH whose
/// fingerprint was current, and its operation fails ("Invalid fingerprint.", code
/// `CONDITION_NOT_MET`, HTTP 412) when another change landed first.
fn stale_fingerprint(operation: &Json) -> bool {
    if operation.get("httpErrorStatusCode").and_then(Json::as_u64) == Some(412) {
        return true;
    }
    operation
        .pointer("/error/errors")
        .and_then(Json::as_array)
        .into_iter()
        .flatten()
        .any(|e| {
            e.get("code").and_then(Json::as_str) == Some("CONDITION_NOT_MET")
                || e.get("message")
                    .and_then(Json::as_str)
                    .is_some_and(|m| m.to_ascii_lowercase().contains("invalid fingerprint"))
        })
}

impl ComputeError {
    /// Whether the error's text already names what it is about ("URL map p/m was not found"),
    /// so that no context repeats it.
    pub fn names_its_object(&self) -> bool {
        matches!(self, ComputeError::NotFound(_))
    }

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

/// One weighted backend service entry of a route action.
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

/// Where a URL map lives: a project, and a region for regional URL maps (`regionUrlMaps`,
/// used by internal and regional Application Load Balancers); global otherwise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UrlMapLocation {
    /// The project.
    pub project: String,
    /// The region of a regional URL map; `None` for a global one.
    pub region: Option<String>,
    /// The URL map's name.
    pub name: String,
}

impl UrlMapLocation {
    /// A global URL map.
    pub fn global(project: &str, name: &str) -> Self {
        UrlMapLocation {
            project: project.to_string(),
            region: None,
            name: name.to_string(),
        }
    }

    /// The collection path: `projects/P/global` or `projects/P/regions/R`.
    fn scope(&self) -> String {
        scope(&self.project, self.region.as_deref())
    }
}

fn scope(project: &str, region: Option<&str>) -> String {
    match region {
        Some(region) => format!("projects/{project}/regions/{region}"),
        None => format!("projects/{project}/global"),
    }
}

/// `project/url_map` or, for a regional URL map, `project/region/url_map`.
impl std::fmt::Display for UrlMapLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.region {
            Some(region) => write!(f, "{}/{region}/{}", self.project, self.name),
            None => write!(f, "{}/{}", self.project, self.name),
        }
    }
}

/// Which route action of a URL map holds the weighted backend services.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Route {
    /// The URL map's `defaultRouteAction`.
    Default,
    /// `pathMatchers[name = …].defaultRouteAction`.
    PathMatcher(String),
    /// `pathMatchers[name = …].routeRules[priority = …].routeAction`.
    RouteRule {
        /// The path matcher's name.
        path_matcher: String,
        /// The route rule's priority (unique within its path matcher).
        priority: u64,
    },
}

impl Route {
    /// The suffix of IDs that address this route: empty, `#matcher` or `#matcher/priority`.
    pub fn id_suffix(&self) -> String {
        match self {
            Route::Default => String::new(),
            Route::PathMatcher(name) => format!("#{name}"),
            Route::RouteRule { path_matcher, priority } => format!("#{path_matcher}/{priority}"),
        }
    }
}

/// `defaultRouteAction`, `path matcher "api"` or `route rule 10 of path matcher "api"`.
impl std::fmt::Display for Route {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Route::Default => f.write_str("the default route"),
            Route::PathMatcher(name) => write!(f, "the default route of path matcher {name:?}"),
            Route::RouteRule { path_matcher, priority } => {
                write!(f, "route rule {priority} of path matcher {path_matcher:?}")
            }
        }
    }
}

/// A route that the URL map does not have.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RouteError {
    /// No path matcher of that name.
    #[error(
        "URL map {url_map} has no path matcher {name:?}; its path matchers are: {}.",
        listed(real)
    )]
    NoPathMatcher {
        /// The URL map.
        url_map: String,
        /// The name asked for.
        name: String,
        /// The path matchers it has.
        real: Vec<String>,
    },
    /// No route rule of that priority in the path matcher.
    #[error("Path matcher {path_matcher:?} of URL map {url_map} has no route rule with priority {priority}; its route rules' priorities are: {}.", listed(real))]
    NoRouteRule {
        /// The URL map.
        url_map: String,
        /// The path matcher.
        path_matcher: String,
        /// The priority asked for.
        priority: u64,
        /// The priorities it has.
        real: Vec<String>,
    },
}

fn listed(items: &[String]) -> String {
    if items.is_empty() {
        "none".to_string()
    } else {
        items.join(", ")
    }
}

/// A URL map: its JSON exactly as the API returned it, with typed access to what this client
/// needs. Writes change only weights inside this JSON, so every other field goes back as read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UrlMap {
    /// The URL map's name.
    pub name: String,
    /// The optimistic-locking fingerprint.
    pub fingerprint: Option<String>,
    raw: Json,
}

impl UrlMap {
    /// A URL map from the API's JSON.
    ///
    /// # Errors
    /// The JSON is not an object.
    pub fn from_json(raw: Json) -> Result<UrlMap, String> {
        if !raw.is_object() {
            return Err("a URL map is a JSON object".into());
        }
        let text = |key: &str| raw.get(key).and_then(Json::as_str).map(str::to_string);
        Ok(UrlMap {
            name: text("name").unwrap_or_default(),
            fingerprint: text("fingerprint"),
            raw,
        })
    }

    /// The JSON pointer of a route's `weightedBackendServices`.
    ///
    /// # Errors
    /// [`RouteError`] when the URL map has no such path matcher or route rule.
    fn pointer(&self, route: &Route) -> Result<String, RouteError> {
        let matcher = |name: &str| {
            let matchers = self.raw.get("pathMatchers").and_then(Json::as_array);
            let found = matchers.and_then(|all| {
                all.iter()
                    .position(|m| m.get("name").and_then(Json::as_str) == Some(name))
            });
            found.ok_or_else(|| RouteError::NoPathMatcher {
                url_map: self.name.clone(),
                name: name.to_string(),
                real: matchers
                    .into_iter()
                    .flatten()
                    .filter_map(|m| m.get("name").and_then(Json::as_str).map(|n| format!("{n:?}")))
                    .collect(),
            })
        };
        Ok(match route {
            Route::Default => "/defaultRouteAction/weightedBackendServices".to_string(),
            Route::PathMatcher(name) => {
                format!(
                    "/pathMatchers/{}/defaultRouteAction/weightedBackendServices",
                    matcher(name)?
                )
            }
            Route::RouteRule { path_matcher, priority } => {
                let i = matcher(path_matcher)?;
                let rules = self
                    .raw
                    .pointer(&format!("/pathMatchers/{i}/routeRules"))
                    .and_then(Json::as_array);
                let priority_of = |r: &Json| r.get("priority").and_then(json_u64);
                let j = rules
                    .and_then(|all| all.iter().position(|r| priority_of(r) == Some(*priority)))
                    .ok_or_else(|| RouteError::NoRouteRule {
                        url_map: self.name.clone(),
                        path_matcher: path_matcher.clone(),
                        priority: *priority,
                        real: rules
                            .into_iter()
                            .flatten()
                            .filter_map(|r| priority_of(r).map(|p| p.to_string()))
                            .collect(),
                    })?;
                format!("/pathMatchers/{i}/routeRules/{j}/routeAction/weightedBackendServices")
            }
        })
    }

    /// The weighted backend services of a route (empty when it has none).
    ///
    /// # Errors
    /// [`RouteError`] when the URL map has no such path matcher or route rule.
    pub fn weighted(&self, route: &Route) -> Result<Vec<WeightedBackendService>, RouteError> {
        let pointer = self.pointer(route)?;
        Ok(entries(self.raw.pointer(&pointer)))
    }

    /// Backend-service name → weight, of a route.
    ///
    /// # Errors
    /// [`RouteError`] when the URL map has no such path matcher or route rule.
    pub fn weights(&self, route: &Route) -> Result<BTreeMap<String, u32>, RouteError> {
        Ok(by_name(&self.weighted(route)?))
    }

    /// Every route that has weighted backend services, in the URL map's order: the default
    /// route, then each path matcher's default route and route rules.
    pub fn weighted_routes(&self) -> Vec<(Route, Vec<WeightedBackendService>)> {
        let mut routes = vec![(
            Route::Default,
            entries(self.raw.pointer("/defaultRouteAction/weightedBackendServices")),
        )];
        for matcher in self
            .raw
            .get("pathMatchers")
            .and_then(Json::as_array)
            .into_iter()
            .flatten()
        {
            let Some(name) = matcher.get("name").and_then(Json::as_str) else {
                continue;
            };
            routes.push((
                Route::PathMatcher(name.to_string()),
                entries(matcher.pointer("/defaultRouteAction/weightedBackendServices")),
            ));
            for rule in matcher.get("routeRules").and_then(Json::as_array).into_iter().flatten() {
                if let Some(priority) = rule.get("priority").and_then(json_u64) {
                    routes.push((
                        Route::RouteRule {
                            path_matcher: name.to_string(),
                            priority,
                        },
                        entries(rule.pointer("/routeAction/weightedBackendServices")),
                    ));
                }
            }
        }
        routes.retain(|(_, weighted)| !weighted.is_empty());
        routes
    }

    /// The JSON merge patch that sets these weights (by backend-service name) on a route and
    /// changes nothing else: for the default route its `weightedBackendServices`; for a path
    /// matcher's routes the whole `pathMatchers` array (merge patch replaces arrays whole),
    /// exactly as read but for the weights.
    fn patch(&self, route: &Route, weights: &BTreeMap<String, u32>) -> Result<Json, RouteError> {
        let pointer = self.pointer(route)?;
        let mut raw = self.raw.clone();
        if let Some(items) = raw.pointer_mut(&pointer).and_then(Json::as_array_mut) {
            for item in items {
                let name = item.get("backendService").and_then(Json::as_str).map(backend_name);
                if let Some(&weight) = name.and_then(|n| weights.get(n)) {
                    if item.get("weight").and_then(json_u64) != Some(u64::from(weight)) {
                        item["weight"] = weight.into();
                    }
                }
            }
        }
        let mut patch = json!({"fingerprint": self.fingerprint});
        match route {
            Route::Default => {
                patch["defaultRouteAction"] = json!({"weightedBackendServices": raw.pointer(&pointer)});
            }
            Route::PathMatcher(_) | Route::RouteRule { .. } => patch["pathMatchers"] = raw["pathMatchers"].take(),
        }
        Ok(patch)
    }
}

/// A whole number the API may send as a JSON number or (int64 fields) a string.
fn json_u64(value: &Json) -> Option<u64> {
    value.as_u64().or_else(|| value.as_str()?.parse().ok())
}

/// The entries of a `weightedBackendServices` array; entries that do not parse are skipped.
fn entries(array: Option<&Json>) -> Vec<WeightedBackendService> {
    array
        .and_then(Json::as_array)
        .into_iter()
        .flatten()
        .filter_map(|e| serde_json::from_value(e.clone()).ok())
        .collect()
}

fn by_name(weighted: &[WeightedBackendService]) -> BTreeMap<String, u32> {
    weighted.iter().map(|w| (w.name().to_string(), w.weight)).collect()
}

/// What a weights change does to a route: every weighted backend service's weight after it,
/// by name, in the URL map's order, with the weight before.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WeightsChange {
    /// `(name, weight now, weight after)` for every weighted backend service of the route.
    pub services: Vec<(String, u32, u32)>,
}

impl WeightsChange {
    /// Whether anything changes.
    pub fn changes(&self) -> bool {
        self.services.iter().any(|(_, before, after)| before != after)
    }

    /// Name → weight after the change.
    pub fn after(&self) -> BTreeMap<String, u32> {
        self.services.iter().map(|(n, _, after)| (n.clone(), *after)).collect()
    }
}

/// Checks a weights change against a route's live weighted backend services: every key must
/// be one of them (by name), and the weights after the change — the listed ones as given, the
/// others as they are — must not all be zero.
///
/// # Errors
/// [`WeightsError`] naming the real services.
pub fn plan_weights(
    url_map: &str,
    route: &Route,
    live: &[WeightedBackendService],
    desired: &BTreeMap<String, u32>,
) -> Result<WeightsChange, WeightsError> {
    if live.is_empty() {
        return Err(WeightsError::NoWeightedBackends {
            url_map: url_map.to_string(),
            route: route.clone(),
        });
    }
    let unknown: Vec<String> = desired
        .keys()
        .filter(|k| !live.iter().any(|w| w.name() == backend_name(k)))
        .cloned()
        .collect();
    if !unknown.is_empty() {
        return Err(WeightsError::UnknownBackends {
            url_map: url_map.to_string(),
            route: route.clone(),
            unknown,
            real: live.iter().map(|w| w.name().to_string()).collect(),
        });
    }
    let services: Vec<(String, u32, u32)> = live
        .iter()
        .map(|w| {
            let after = desired
                .iter()
                .find(|(k, _)| backend_name(k) == w.name())
                .map_or(w.weight, |(_, weight)| *weight);
            (w.name().to_string(), w.weight, after)
        })
        .collect();
    if services.iter().all(|(_, _, after)| *after == 0) {
        return Err(WeightsError::AllZero {
            url_map: url_map.to_string(),
            route: route.clone(),
            services: services.iter().map(|(n, _, _)| n.clone()).collect(),
            unlisted: services
                .iter()
                .filter(|(n, _, _)| !desired.keys().any(|k| backend_name(k) == n))
                .map(|(n, _, _)| n.clone())
                .collect(),
        });
    }
    Ok(WeightsChange { services })
}

/// Why [`Compute::set_weights`] did not set the weights.
#[derive(Debug, thiserror::Error)]
pub enum WeightsError {
    /// The route has no weighted backend services to set weights on.
    #[error("URL map {url_map} has no weightedBackendServices in {route} to set weights on. Give it some first (`locality gen` writes them), or address another route (`path_matcher`, `route_rule_priority`).")]
    NoWeightedBackends {
        /// The URL map.
        url_map: String,
        /// The route.
        route: Route,
    },
    /// Some keys are not weighted backend services of the route.
    #[error("{} not in the weightedBackendServices of {route} of URL map {url_map}. Its weighted backend services are: {}.", quoted(unknown), real.join(", "))]
    UnknownBackends {
        /// The URL map.
        url_map: String,
        /// The route.
        route: Route,
        /// The keys as the caller gave them.
        unknown: Vec<String>,
        /// The route's weighted backend services.
        real: Vec<String>,
    },
    /// Every weight would be zero after the change, sending traffic nowhere.
    #[error(
        "After this change every weighted backend service of {route} of URL map {url_map} would have weight 0 ({}), sending traffic nowhere.{} Keep at least one non-zero: drain a region by setting its weight to 0 while another carries the traffic.",
        services.join(", "),
        if unlisted.is_empty() { String::new() } else { format!(" Not listed, and 0 now: {}.", unlisted.join(", ")) }
    )]
    AllZero {
        /// The URL map.
        url_map: String,
        /// The route.
        route: Route,
        /// Every weighted backend service of the route.
        services: Vec<String>,
        /// Those the change does not list (they keep their weight, which is 0).
        unlisted: Vec<String>,
    },
    /// The URL map has no such route.
    #[error(transparent)]
    Route(#[from] RouteError),
    /// A stale fingerprint on every attempt.
    #[error(
        "URL map {url_map} changed between read and write {attempts} times in a row (stale fingerprint); try again."
    )]
    KeepsChanging {
        /// The URL map.
        url_map: String,
        /// Attempts made.
        attempts: u32,
    },
    /// The API failed (a missing URL map is named once).
    #[error("{}", if source.names_its_object() { source.to_string() } else { format!("URL map {url_map}: {source}") })]
    Api {
        /// The URL map.
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
    auth: std::sync::Arc<GoogleAuth>,
    retry: RetryPolicy,
    polling: Polling,
}

impl Compute {
    /// A client for `base_url` (e.g. `https://compute.googleapis.com/compute/v1`).
    pub fn new(
        http: reqwest::Client,
        base_url: &str,
        auth: std::sync::Arc<GoogleAuth>,
        retry: RetryPolicy,
        polling: Polling,
    ) -> Self {
        Compute {
            http,
            base_url: base_url.trim_end_matches('/').to_string(),
            auth,
            retry,
            polling,
        }
    }

    /// This client with operations polled for at most `limit` (a resource's `timeouts`).
    pub fn waiting_at_most(mut self, limit: Duration) -> Self {
        self.polling.timeout = limit;
        self
    }

    fn url_map_url(&self, at: &UrlMapLocation) -> String {
        format!("{}/{}/urlMaps/{}", self.base_url, at.scope(), at.name)
    }

    async fn call(&self, what: &str, build: impl Fn() -> reqwest::RequestBuilder) -> Result<Json, ComputeError> {
        let token = self.auth.token().await.map_err(ComputeError::Auth)?;
        let response = http::send(&self.retry, || build().bearer_auth(token.expose()))
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

    /// `urlMaps.get` (`regionUrlMaps.get` for a regional URL map).
    ///
    /// # Errors
    /// [`ComputeError`], with `NotFound` when the URL map does not exist.
    pub async fn get_url_map(&self, at: &UrlMapLocation) -> Result<UrlMap, ComputeError> {
        let url = self.url_map_url(at);
        let raw = self.call(&format!("URL map {at}"), || self.http.get(&url)).await?;
        UrlMap::from_json(raw).map_err(|e| ComputeError::Decode(format!("URL map {at}: {e}")))
    }

    /// `urlMaps.list` (`regionUrlMaps.list` with a region): every URL map of a project, page by
    /// page (500 a page, at most [`MAX_LIST_PAGES`] pages).
    ///
    /// # Errors
    /// [`ComputeError`]; a listing that goes on past the page bound is a decode error.
    pub async fn list_url_maps(&self, project: &str, region: Option<&str>) -> Result<Vec<UrlMap>, ComputeError> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Page {
            #[serde(default)]
            items: Vec<Json>,
            #[serde(default)]
            next_page_token: Option<String>,
        }
        let where_ = scope(project, region);
        let url = format!("{}/{where_}/urlMaps", self.base_url);
        let mut all = Vec::new();
        let mut token: Option<String> = None;
        for _ in 0..MAX_LIST_PAGES {
            let mut query = vec![("maxResults", "500".to_string())];
            if let Some(t) = &token {
                query.push(("pageToken", t.clone()));
            }
            let raw = self
                .call(&format!("the URL maps of {where_}"), || {
                    self.http.get(&url).query(&query)
                })
                .await?;
            let page: Page = serde_json::from_value(raw)
                .map_err(|e| ComputeError::Decode(format!("URL map list of {where_}: {e}")))?;
            for item in page.items {
                all.push(
                    UrlMap::from_json(item)
                        .map_err(|e| ComputeError::Decode(format!("URL map list of {where_}: {e}")))?,
                );
            }
            match page.next_page_token.filter(|t| !t.is_empty()) {
                Some(next) => token = Some(next),
                None => return Ok(all),
            }
        }
        Err(ComputeError::Decode(format!(
            "the URL map list of {where_} goes on past {MAX_LIST_PAGES} pages"
        )))
    }

    /// Sets the weights of a route's weighted backend services named in `desired` (keys may be
    /// names, paths or self-links; others keep their weight): read → check with
    /// [`plan_weights`] → change only the weights → write with the fingerprint → wait for the
    /// operation; on a stale fingerprint (HTTP 412, or the operation failing on it) re-read and
    /// try again after a growing, jittered wait, at most [`CONFLICT_RETRIES`] times. Writes to
    /// one URL map from this process go one at a time. Returns whether anything was written.
    ///
    /// # Errors
    /// [`WeightsError`]: unknown keys (with the real list), all weights zero after the change
    /// (naming the services), a route that does not exist or has no weighted backend
    /// services, a URL map that keeps changing, or the API's error.
    pub async fn set_weights(
        &self,
        at: &UrlMapLocation,
        route: &Route,
        desired: &BTreeMap<String, u32>,
    ) -> Result<bool, WeightsError> {
        let id = || at.to_string();
        let api = |source| WeightsError::Api { url_map: id(), source };
        let _one_writer_per_url_map =
            crate::provider::write_lock::hold(format!("urlMaps {} {at}", self.base_url)).await;
        for attempt in 1..=CONFLICT_RETRIES + 1 {
            if attempt > 1 {
                let ceiling = CONFLICT_BACKOFF * 2u32.pow(attempt - 2);
                tokio::time::sleep(ceiling.mul_f64(0.5 + fastrand::f64() / 2.0)).await;
            }
            let map = self.get_url_map(at).await.map_err(api)?;
            let change = plan_weights(&id(), route, &map.weighted(route)?, desired)?;
            if !change.changes() {
                return Ok(false);
            }
            if map.fingerprint.is_none() {
                return Err(api(ComputeError::Decode("the URL map has no fingerprint".into())));
            }
            let after = change.after();
            let body = map.patch(route, &after)?;
            match self.patch_url_map(at, &body, &crate::http::uuid_v4()).await {
                Ok(()) => return Ok(true),
                Err(ComputeError::Conflict) => {
                    tracing::info!(
                        attempt,
                        "URL map changed between read and write (stale fingerprint); reading it again"
                    );
                }
                // The PATCH may have been applied although its response was lost: read back.
                Err(e) if e.is_ambiguous() => {
                    let applied = self
                        .get_url_map(at)
                        .await
                        .ok()
                        .and_then(|now| now.weights(route).ok())
                        .is_some_and(|now| now == after);
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

    /// `urlMaps.patch` (JSON merge patch: objects merge, arrays are replaced whole) with a body
    /// that carries the fingerprint it was read with, then waits for the operation.
    /// `request_id` makes retries of the same change idempotent on Google's side.
    ///
    /// # Errors
    /// [`ComputeError::Conflict`] on a stale fingerprint (refused, or the operation failed on
    /// it); others as they come.
    pub async fn patch_url_map(&self, at: &UrlMapLocation, body: &Json, request_id: &str) -> Result<(), ComputeError> {
        let url = self.url_map_url(at);
        let operation = self
            .call(&format!("URL map {at}"), || {
                self.http.patch(&url).query(&[("requestId", request_id)]).json(body)
            })
            .await?;
        self.wait(at, &operation).await
    }

    /// Polls a (global or regional) operation until it is DONE; an operation that ends with
    /// errors is an error.
    async fn wait(&self, at: &UrlMapLocation, operation: &Json) -> Result<(), ComputeError> {
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
                } else if stale_fingerprint(&current) {
                    Err(ComputeError::Conflict)
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
            let url = format!("{}/{}/operations/{name}", self.base_url, at.scope());
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
