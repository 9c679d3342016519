//! A stateful fake of the Compute Engine v1 subset `locality_weighted_backend` uses, written from
//! the published Compute v1 contract (urlMaps and regionUrlMaps get/patch with fingerprints and
//! HTTP 412 `conditionNotMet`, PATCH as an RFC 7386 JSON merge patch — objects merge, arrays are
//! replaced whole —, global and regional operations polled until DONE, googleapi error bodies,
//! full self-links; list paged with `maxResults`/`pageToken`), with fault injection and a
//! request log. Listens on 127.0.0.1 only.

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{json, Value};

/// A fault injected into a PATCH.
#[derive(Debug, Clone, Copy)]
pub enum Fault {
    /// Answer with this status (and Retry-After seconds).
    Status(u16, Option<u64>),
    /// Drop the connection without applying the request.
    DropBefore,
    /// Apply the request, then drop the connection without answering.
    LostAfter,
    /// Accept the request and never answer.
    Silent,
}

/// The bearer token the fake accepts.
pub const TOKEN: &str = "fake-google-token";

/// A change applied to a URL map's JSON.
pub type Mutation = Box<dyn FnOnce(&mut Value) + Send>;

#[derive(Default)]
pub struct Inner {
    /// (project, scope, name) → URL map; scope is `global` or `regions/<region>`.
    maps: HashMap<(String, String, String), Value>,
    fingerprints: u64,
    /// (scope, name) → the operation.
    operations: HashMap<(String, String), Operation>,
    op_counter: u64,
    /// Apply an accepted PATCH when its operation ends, as Compute does, instead of at once:
    /// the operation then fails with "Invalid fingerprint." (CONDITION_NOT_MET, HTTP 412) when
    /// another change landed after the PATCH was accepted.
    pub apply_at_operation_end: bool,
    /// Keep every operation RUNNING until this many PATCHes have been accepted (or 5 s passed
    /// since the first): two writers that read the same fingerprint are then both in flight.
    pub hold_operations_until: Option<(usize, Option<std::time::Instant>)>,
    /// Operations that failed on a stale fingerprint.
    pub stale_operations: u32,
    /// Polls an operation takes before it is DONE.
    pub polls_per_operation: u32,
    /// The next operation ends DONE with this error (and changes nothing).
    pub fail_next_operation: Option<String>,
    /// Responses to serve instead of the real ones: (status, Retry-After seconds).
    pub faults: VecDeque<(u16, Option<u64>)>,
    /// Applied right after a GET of a URL map is answered (a concurrent edit): after the GET
    /// numbered by the counter (1 = the next one).
    pub after_get: Option<(u32, Mutation)>,
    /// Every request: "METHOD path".
    pub requests: Vec<String>,
    /// Every User-Agent seen.
    pub user_agents: std::collections::BTreeSet<String>,
    /// URL-map GETs to accept and never answer.
    pub silent_reads: u32,
    /// Faults for PATCHes only, in order.
    pub write_faults: VecDeque<Fault>,
    /// PATCHes to apply and then answer by dropping the connection (a lost response).
    pub drop_after_applying: u32,
    /// requestId → the operation it started: a retried PATCH gets the same operation back
    /// instead of being applied again (Google's idempotency contract).
    request_ids: HashMap<String, String>,
    /// When set, only tokens this fake token service issued (and has not seen expire) are
    /// accepted, instead of [`TOKEN`].
    pub auth: Option<super::fake_google_auth::FakeGoogleAuth>,
    /// Who each accepted request's token stood for (with `auth` set).
    pub callers: Vec<String>,
}

/// An accepted PATCH.
struct Operation {
    polls_left: u32,
    failure: Option<String>,
    /// With `apply_at_operation_end`: the URL map, the merge patch and its fingerprint.
    pending: Option<((String, String, String), Value)>,
}

#[derive(Clone)]
pub struct FakeCompute {
    pub addr: SocketAddr,
    pub state: Arc<Mutex<Inner>>,
}

fn self_link(project: &str, name: &str) -> String {
    format!("https://www.googleapis.com/compute/v1/projects/{project}/global/backendServices/{name}")
}

/// The scope of a URL map: `global` or `regions/<region>`.
pub fn scope(region: Option<&str>) -> String {
    region.map_or_else(|| "global".to_string(), |r| format!("regions/{r}"))
}

fn key(project: &str, region: Option<&str>, name: &str) -> (String, String, String) {
    (project.to_string(), scope(region), name.to_string())
}

/// RFC 7386 JSON merge patch: objects merge recursively, null deletes, anything else replaces.
pub fn merge_patch(target: &mut Value, patch: &Value) {
    let Some(fields) = patch.as_object() else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = json!({});
    }
    let object = target.as_object_mut().unwrap();
    for (k, v) in fields {
        if v.is_null() {
            object.remove(k);
        } else {
            merge_patch(object.entry(k.clone()).or_insert(Value::Null), v);
        }
    }
}

/// A weighted backend services array, `(name, weight)` each, in one project.
pub fn weighted(project: &str, weights: &[(&str, u32)]) -> Value {
    weights
        .iter()
        .map(|(bs, w)| json!({"backendService": self_link(project, bs), "weight": w}))
        .collect()
}

fn error(status: StatusCode, reason: &str, message: &str) -> Response {
    (status, Json(json!({"error": {"code": status.as_u16(), "message": message, "errors": [{"reason": reason, "message": message, "domain": "global"}]}}))).into_response()
}

impl FakeCompute {
    pub async fn start() -> Self {
        let state = Arc::new(Mutex::new(Inner {
            polls_per_operation: 2,
            ..Default::default()
        }));
        let app = Router::new()
            .route("/compute/v1/projects/{project}/global/urlMaps", get(list_global))
            .route(
                "/compute/v1/projects/{project}/global/urlMaps/{name}",
                get(get_global).patch(patch_global),
            )
            .route(
                "/compute/v1/projects/{project}/global/operations/{op}",
                get(get_operation_global),
            )
            .route(
                "/compute/v1/projects/{project}/regions/{region}/urlMaps",
                get(list_regional),
            )
            .route(
                "/compute/v1/projects/{project}/regions/{region}/urlMaps/{name}",
                get(get_regional).patch(patch_regional),
            )
            .route(
                "/compute/v1/projects/{project}/regions/{region}/operations/{op}",
                get(get_operation_regional),
            )
            .with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        FakeCompute { addr, state }
    }

    pub fn base_url(&self) -> String {
        format!("http://{}/compute/v1", self.addr)
    }

    /// A URL map with weighted backend services `(name, weight)`; the first entry also carries a
    /// headerAction, which writes must preserve.
    pub fn put_url_map(&self, project: &str, name: &str, weights: &[(&str, u32)]) {
        let mut s = self.state.lock().unwrap();
        s.fingerprints += 1;
        let entries: Vec<Value> = weights
            .iter()
            .enumerate()
            .map(|(i, (bs, w))| {
                let mut e = json!({"backendService": self_link(project, bs), "weight": w});
                if i == 0 {
                    e["headerAction"] = json!({"requestHeadersToAdd": [{"headerName": "x-route", "headerValue": "all", "replace": true}]});
                }
                e
            })
            .collect();
        let map = json!({
            "kind": "compute#urlMap",
            "name": name,
            "id": "1234567890123456789",
            "selfLink": format!("https://www.googleapis.com/compute/v1/projects/{project}/global/urlMaps/{name}"),
            "fingerprint": format!("fp-{}", s.fingerprints),
            "defaultRouteAction": {"weightedBackendServices": entries, "timeout": {"seconds": "30"}},
            "hostRules": [{"hosts": ["*"], "pathMatcher": "all"}],
        });
        s.maps.insert(key(project, None, name), map);
    }

    /// Any URL map, global or regional, as given (name, selfLink and a fingerprint are set).
    pub fn put_url_map_json(&self, project: &str, region: Option<&str>, name: &str, mut map: Value) {
        let mut s = self.state.lock().unwrap();
        s.fingerprints += 1;
        map["name"] = name.into();
        map["kind"] = "compute#urlMap".into();
        map["selfLink"] = format!(
            "https://www.googleapis.com/compute/v1/projects/{project}/{}/urlMaps/{name}",
            scope(region)
        )
        .into();
        map["fingerprint"] = format!("fp-{}", s.fingerprints).into();
        if let Some(region) = region {
            map["region"] = format!("https://www.googleapis.com/compute/v1/projects/{project}/regions/{region}").into();
        }
        s.maps.insert(key(project, region, name), map);
    }

    /// A URL map as real ones look: a default service, host rules, and path matchers whose
    /// default route and route rules carry weighted backend services —
    /// `api`: default route (api-bs-tokyo 100, api-bs-osaka 0), route rule 10 (`/api/v2/`:
    /// api-v2-tokyo 100, api-v2-osaka 0, with a retry policy and header action), route rule 20
    /// (`/api/legacy/`, a plain service); `static`: a default service only.
    pub fn put_path_matcher_map(&self, project: &str, region: Option<&str>, name: &str) {
        let bs = |n: &str| self_link(project, n);
        let mut v2 = weighted(project, &[("api-v2-tokyo", 100), ("api-v2-osaka", 0)]);
        v2[0]["headerAction"] =
            json!({"requestHeadersToAdd": [{"headerName": "x-region", "headerValue": "tokyo", "replace": true}]});
        let map = json!({
            "id": "9876543210987654321",
            "defaultService": bs("web-bs"),
            "hostRules": [
                {"hosts": ["api.example.com"], "pathMatcher": "api"},
                {"hosts": ["static.example.com"], "pathMatcher": "static"}
            ],
            "pathMatchers": [
                {
                    "name": "api",
                    "defaultRouteAction": {
                        "weightedBackendServices": weighted(project, &[("api-bs-tokyo", 100), ("api-bs-osaka", 0)]),
                        "timeout": {"seconds": "30", "nanos": 0}
                    },
                    "routeRules": [
                        {
                            "priority": 10,
                            "matchRules": [{"prefixMatch": "/api/v2/", "headerMatches": [{"headerName": "x-canary", "exactMatch": "1"}]}],
                            "routeAction": {
                                "weightedBackendServices": v2,
                                "retryPolicy": {"retryConditions": ["5xx", "gateway-error"], "numRetries": 2}
                            }
                        },
                        {
                            "priority": 20,
                            "matchRules": [{"prefixMatch": "/api/legacy/"}],
                            "service": bs("legacy-bs")
                        }
                    ]
                },
                {"name": "static", "defaultService": bs("static-bs"), "pathRules": [{"paths": ["/img/*"], "service": bs("img-bs")}]}
            ],
            "tests": [{"host": "api.example.com", "path": "/api/legacy/x", "service": bs("legacy-bs")}]
        });
        self.put_url_map_json(project, region, name, map);
    }

    /// A global URL map with four weighted routes, each between `<prefix>-tokyo` and
    /// `<prefix>-osaka` at the given weights: the default route (`web`), path matcher `api`'s
    /// default route (`api`) and its route rules 10 (`v2`) and 20 (`v3`).
    pub fn put_four_route_map(&self, project: &str, name: &str, tokyo: u32, osaka: u32) {
        let pair = |prefix: &str| {
            weighted(
                project,
                &[(&format!("{prefix}-tokyo"), tokyo), (&format!("{prefix}-osaka"), osaka)],
            )
        };
        let rule = |priority: u32, prefix: &str| {
            json!({"priority": priority, "matchRules": [{"prefixMatch": format!("/{prefix}/")}],
                   "routeAction": {"weightedBackendServices": pair(prefix)}})
        };
        let map = json!({
            "defaultRouteAction": {"weightedBackendServices": pair("web")},
            "hostRules": [{"hosts": ["api.example.com"], "pathMatcher": "api"}],
            "pathMatchers": [{
                "name": "api",
                "defaultRouteAction": {"weightedBackendServices": pair("api")},
                "routeRules": [rule(10, "v2"), rule(20, "v3")]
            }]
        });
        self.put_url_map_json(project, None, name, map);
    }

    pub fn delete_url_map(&self, project: &str, name: &str) {
        self.state.lock().unwrap().maps.remove(&key(project, None, name));
    }

    /// The live weights at a JSON pointer to a weightedBackendServices array, by backend name.
    pub fn weights_at(&self, project: &str, region: Option<&str>, name: &str, pointer: &str) -> Vec<(String, u64)> {
        let s = self.state.lock().unwrap();
        names_and_weights(&s.maps[&key(project, region, name)], pointer)
    }

    /// A URL map, global or regional.
    pub fn url_map_at(&self, project: &str, region: Option<&str>, name: &str) -> Value {
        self.state.lock().unwrap().maps[&key(project, region, name)].clone()
    }

    /// An out-of-band change (as in the console) of any URL map: new fingerprint.
    pub fn edit(&self, project: &str, region: Option<&str>, name: &str, change: impl FnOnce(&mut Value)) {
        let mut s = self.state.lock().unwrap();
        s.fingerprints += 1;
        let fp = format!("fp-{}", s.fingerprints);
        let map = s.maps.get_mut(&key(project, region, name)).unwrap();
        change(map);
        map["fingerprint"] = fp.into();
    }

    /// An out-of-band change of one weight (as in the console): new fingerprint.
    pub fn set_weight(&self, project: &str, name: &str, backend: &str, weight: u32) {
        let mut s = self.state.lock().unwrap();
        s.fingerprints += 1;
        let fp = format!("fp-{}", s.fingerprints);
        let map = s.maps.get_mut(&key(project, None, name)).unwrap();
        set_weight_in(map, backend, weight);
        map["fingerprint"] = fp.into();
    }

    /// The live weights by backend name, in order.
    pub fn weights(&self, project: &str, name: &str) -> Vec<(String, u64)> {
        self.weights_at(project, None, name, "/defaultRouteAction/weightedBackendServices")
    }

    pub fn url_map(&self, project: &str, name: &str) -> Value {
        self.url_map_at(project, None, name)
    }

    /// Takes the request log.
    pub fn take_requests(&self) -> Vec<String> {
        std::mem::take(&mut self.state.lock().unwrap().requests)
    }
}

fn names_and_weights(map: &Value, pointer: &str) -> Vec<(String, u64)> {
    map.pointer(pointer)
        .and_then(Value::as_array)
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["backendService"]
                    .as_str()
                    .unwrap()
                    .rsplit('/')
                    .next()
                    .unwrap()
                    .to_string(),
                e["weight"].as_u64().unwrap_or(0),
            )
        })
        .collect()
}

fn set_weight_in(map: &mut Value, backend: &str, weight: u32) {
    for e in map["defaultRouteAction"]["weightedBackendServices"]
        .as_array_mut()
        .unwrap()
    {
        if e["backendService"].as_str().unwrap().ends_with(&format!("/{backend}")) {
            e["weight"] = weight.into();
        }
    }
}

/// Auth, faults and the request log, common to every route.
fn preamble(s: &mut Inner, headers: &HeaderMap, line: String) -> Option<Response> {
    s.requests.push(line);
    if let Some(agent) = headers.get("user-agent").and_then(|v| v.to_str().ok()) {
        s.user_agents.insert(agent.to_string());
    }
    if let Some((status, retry_after)) = s.faults.pop_front() {
        let mut response = error(StatusCode::from_u16(status).unwrap(), "backendError", "injected fault");
        if let Some(secs) = retry_after {
            response
                .headers_mut()
                .insert("retry-after", secs.to_string().parse().unwrap());
        }
        return Some(response);
    }
    let auth = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let token = auth.strip_prefix("Bearer ").unwrap_or_default();
    let accepted = match &s.auth {
        Some(service) => service.state.lock().unwrap().who(token),
        None => (token == TOKEN).then(|| "static".to_string()),
    };
    if let Some(who) = accepted {
        s.callers.push(who);
    } else {
        return Some(error(
            StatusCode::UNAUTHORIZED,
            "authError",
            "Request had invalid authentication credentials.",
        ));
    }
    None
}

type Shared = State<Arc<Mutex<Inner>>>;
type Params = Query<HashMap<String, String>>;

async fn list_global(state: Shared, Path(project): Path<String>, q: Params, headers: HeaderMap) -> Response {
    list_maps(state, project, "global".into(), q, headers).await
}

async fn list_regional(
    state: Shared,
    Path((project, region)): Path<(String, String)>,
    q: Params,
    headers: HeaderMap,
) -> Response {
    list_maps(state, project, scope(Some(&region)), q, headers).await
}

async fn get_global(state: Shared, Path((project, name)): Path<(String, String)>, headers: HeaderMap) -> Response {
    get_map(state, (project, "global".into(), name), headers).await
}

async fn get_regional(
    state: Shared,
    Path((project, region, name)): Path<(String, String, String)>,
    headers: HeaderMap,
) -> Response {
    get_map(state, (project, scope(Some(&region)), name), headers).await
}

async fn patch_global(
    state: Shared,
    Path((project, name)): Path<(String, String)>,
    q: Params,
    headers: HeaderMap,
    body: Json<Value>,
) -> Response {
    patch_map(state, (project, "global".into(), name), q, headers, body).await
}

async fn patch_regional(
    state: Shared,
    Path((project, region, name)): Path<(String, String, String)>,
    q: Params,
    headers: HeaderMap,
    body: Json<Value>,
) -> Response {
    patch_map(state, (project, scope(Some(&region)), name), q, headers, body).await
}

async fn get_operation_global(
    state: Shared,
    Path((project, op)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    get_operation(state, (project, "global".into(), op), headers).await
}

async fn get_operation_regional(
    state: Shared,
    Path((project, region, op)): Path<(String, String, String)>,
    headers: HeaderMap,
) -> Response {
    get_operation(state, (project, scope(Some(&region)), op), headers).await
}

/// `urlMaps.list`: names in order, `maxResults` a page (default 500), `nextPageToken` the
/// next name.
async fn list_maps(
    State(state): Shared,
    project: String,
    where_: String,
    Query(q): Params,
    headers: HeaderMap,
) -> Response {
    let mut s = state.lock().unwrap();
    let line = if where_ == "global" {
        "GET urlMaps (list)".to_string()
    } else {
        format!("GET {where_}/urlMaps (list)")
    };
    if let Some(r) = preamble(&mut s, &headers, line) {
        return r;
    }
    let max: usize = q
        .get("maxResults")
        .and_then(|m| m.parse().ok())
        .unwrap_or(500)
        .clamp(1, 500);
    let start = q.get("pageToken").cloned().unwrap_or_default();
    let mut maps: Vec<(&String, &Value)> = s
        .maps
        .iter()
        .filter(|((p, sc, name), _)| *p == project && *sc == where_ && *name >= start)
        .map(|((_, _, name), map)| (name, map))
        .collect();
    maps.sort_by(|a, b| a.0.cmp(b.0));
    let page: Vec<Value> = maps.iter().take(max).map(|(_, m)| (*m).clone()).collect();
    let mut body =
        json!({"kind": "compute#urlMapList", "id": format!("projects/{project}/{where_}/urlMaps"), "items": page});
    if let Some((next, _)) = maps.get(max) {
        body["nextPageToken"] = json!(next);
    }
    Json(body).into_response()
}

/// The request-log prefix of a URL map path: `urlMaps/NAME` (global) or
/// `regions/R/urlMaps/NAME`.
fn shown(where_: &str, name: &str) -> String {
    if where_ == "global" {
        format!("urlMaps/{name}")
    } else {
        format!("{where_}/urlMaps/{name}")
    }
}

async fn get_map(
    State(state): Shared,
    (project, where_, name): (String, String, String),
    headers: HeaderMap,
) -> Response {
    let silent = {
        let mut s = state.lock().unwrap();
        let silent = s.silent_reads > 0;
        s.silent_reads = s.silent_reads.saturating_sub(1);
        silent
    };
    if silent {
        return std::future::pending().await;
    }
    let mut s = state.lock().unwrap();
    if let Some(r) = preamble(&mut s, &headers, format!("GET {}", shown(&where_, &name))) {
        return r;
    }
    let key = (project.clone(), where_.clone(), name.clone());
    let Some(map) = s.maps.get(&key).cloned() else {
        return error(
            StatusCode::NOT_FOUND,
            "notFound",
            &format!("The resource 'projects/{project}/{where_}/urlMaps/{name}' was not found"),
        );
    };
    let fire = match &mut s.after_get {
        Some((countdown, _)) => {
            *countdown -= 1;
            *countdown == 0
        }
        None => false,
    };
    if fire {
        let (_, mutate) = s.after_get.take().unwrap();
        s.fingerprints += 1;
        let fp = format!("fp-{}", s.fingerprints);
        let live = s.maps.get_mut(&key).unwrap();
        mutate(live);
        live["fingerprint"] = fp.into();
    }
    Json(map).into_response()
}

async fn patch_map(
    State(state): Shared,
    (project, where_, name): (String, String, String),
    Query(query): Params,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    let silent = {
        let mut s = state.lock().unwrap();
        let silent = matches!(s.write_faults.front(), Some(Fault::Silent));
        if silent {
            s.write_faults.pop_front();
        }
        silent
    };
    if silent {
        return std::future::pending().await;
    }
    let mut s = state.lock().unwrap();
    if let Some(r) = preamble(&mut s, &headers, format!("PATCH {}", shown(&where_, &name))) {
        return r;
    }
    match s.write_faults.pop_front() {
        Some(Fault::Status(status, retry_after)) => {
            let mut response = error(StatusCode::from_u16(status).unwrap(), "backendError", "injected fault");
            if let Some(secs) = retry_after {
                response
                    .headers_mut()
                    .insert("retry-after", secs.to_string().parse().unwrap());
            }
            return response;
        }
        Some(Fault::DropBefore) => {
            drop(s);
            panic!("fake_compute: dropping the connection before applying (injected fault)");
        }
        Some(Fault::LostAfter) => s.drop_after_applying += 1,
        // Taken before the lock, at the top of the handler.
        Some(Fault::Silent) | None => {}
    }
    let Some(request_id) = query.get("requestId").filter(|id| id.len() == 36).cloned() else {
        return error(StatusCode::BAD_REQUEST, "invalid", "requestId must be a UUID");
    };
    if let Some(op) = s.request_ids.get(&request_id).cloned() {
        return operation_reply(s, &op, &project, &where_, &name);
    }
    let key = (project.clone(), where_.clone(), name.clone());
    let Some(current) = s.maps.get(&key).cloned() else {
        return error(StatusCode::NOT_FOUND, "notFound", "not found");
    };
    match body.get("fingerprint").and_then(Value::as_str) {
        None => {
            return error(
                StatusCode::BAD_REQUEST,
                "required",
                "Required field 'resource.fingerprint' not specified",
            )
        }
        Some(fp) if fp != current["fingerprint"] => {
            return error(
                StatusCode::PRECONDITION_FAILED,
                "conditionNotMet",
                "Invalid fingerprint.",
            )
        }
        Some(_) => {}
    }
    s.op_counter += 1;
    let op = format!("operation-{}", s.op_counter);
    let failure = s.fail_next_operation.take();
    let mut pending = None;
    if failure.is_none() {
        if s.apply_at_operation_end {
            pending = Some((key, body));
        } else {
            apply_patch(&mut s, key, &body);
        }
    }
    if let Some((count, started)) = &mut s.hold_operations_until {
        *count = count.saturating_sub(1);
        started.get_or_insert_with(std::time::Instant::now);
    }
    let polls_left = s.polls_per_operation;
    s.operations.insert(
        (where_.clone(), op.clone()),
        Operation {
            polls_left,
            failure,
            pending,
        },
    );
    s.request_ids.insert(request_id, op.clone());
    operation_reply(s, &op, &project, &where_, &name)
}

/// Applies a JSON merge patch (objects merge, arrays are replaced whole; output-only fields
/// stay) and gives the URL map a new fingerprint.
fn apply_patch(s: &mut Inner, key: (String, String, String), body: &Value) {
    let current = s.maps[&key].clone();
    let mut updated = current.clone();
    merge_patch(&mut updated, body);
    for output_only in ["name", "id", "selfLink", "kind", "region"] {
        match current.get(output_only) {
            Some(v) => updated[output_only] = v.clone(),
            None => {
                updated.as_object_mut().unwrap().remove(output_only);
            }
        }
    }
    s.fingerprints += 1;
    updated["fingerprint"] = format!("fp-{}", s.fingerprints).into();
    s.maps.insert(key, updated);
}

/// The reply to an accepted PATCH: its operation, or a dropped connection when a lost
/// response is injected.
fn operation_reply(
    mut s: std::sync::MutexGuard<'_, Inner>,
    op: &str,
    project: &str,
    where_: &str,
    name: &str,
) -> Response {
    if s.drop_after_applying > 0 {
        s.drop_after_applying -= 1;
        drop(s);
        // Abort this connection's task: the client sees the connection close with no answer.
        panic!("fake_compute: dropping the connection after applying (injected fault)");
    }
    Json(
        json!({"kind": "compute#operation", "name": op, "status": "RUNNING", "operationType": "patch",
        "targetLink": format!("https://www.googleapis.com/compute/v1/projects/{project}/{where_}/urlMaps/{name}")}),
    )
    .into_response()
}

async fn get_operation(
    State(state): Shared,
    (_project, where_, op): (String, String, String),
    headers: HeaderMap,
) -> Response {
    let mut s = state.lock().unwrap();
    let line = if where_ == "global" {
        format!("GET operations/{op}")
    } else {
        format!("GET {where_}/operations/{op}")
    };
    if let Some(r) = preamble(&mut s, &headers, line) {
        return r;
    }
    // An operation is found only in the scope of the URL map it changed.
    let held = s
        .hold_operations_until
        .is_some_and(|(left, started)| left > 0 && started.is_none_or(|t| t.elapsed().as_secs() < 5));
    let Some(operation) = s.operations.get_mut(&(where_.clone(), op.clone())) else {
        return error(StatusCode::NOT_FOUND, "notFound", "no such operation");
    };
    operation.polls_left = operation.polls_left.saturating_sub(1);
    if operation.polls_left > 0 || held {
        return Json(json!({"name": op, "status": "RUNNING", "progress": 50})).into_response();
    }
    let failure = operation.failure.clone();
    let mut done = json!({"name": op, "status": "DONE", "progress": 100});
    if let Some(message) = failure {
        done["error"] = json!({"errors": [{"code": "INVALID_USAGE", "message": message}]});
        done["httpErrorStatusCode"] = 400.into();
    } else if let Some((key, body)) = operation.pending.take() {
        if s.maps
            .get(&key)
            .is_some_and(|m| m["fingerprint"] == body["fingerprint"])
        {
            apply_patch(&mut s, key, &body);
        } else {
            s.stale_operations += 1;
            let message = "Invalid fingerprint.".to_string();
            s.operations.get_mut(&(where_, op.clone())).unwrap().failure = Some(message.clone());
            done["error"] = json!({"errors": [{"code": "CONDITION_NOT_MET", "message": message}]});
            done["httpErrorStatusCode"] = 412.into();
            done["httpErrorMessage"] = "PRECONDITION FAILED".into();
        }
    }
    Json(done).into_response()
}
