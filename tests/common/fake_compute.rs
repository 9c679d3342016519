//! A stateful fake of the Compute Engine v1 subset `locality_weighted_backend` uses, written from
//! the contract in reference/gcp (urlMaps get/patch with fingerprints and HTTP 412
//! `conditionNotMet`, global operations polled until DONE, googleapi error bodies, full
//! self-links; urlMaps.list paged with `maxResults`/`pageToken`), with fault injection and a
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
    maps: HashMap<(String, String), Value>,
    fingerprints: u64,
    operations: HashMap<String, (u32, Option<String>)>,
    op_counter: u64,
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
    /// URL-map GETs to accept and never answer.
    pub silent_reads: u32,
    /// Faults for PATCHes only, in order.
    pub write_faults: VecDeque<Fault>,
    /// PATCHes to apply and then answer by dropping the connection (a lost response).
    pub drop_after_applying: u32,
    /// requestId → the operation it started: a retried PATCH gets the same operation back
    /// instead of being applied again (Google's idempotency contract).
    request_ids: HashMap<String, String>,
}

#[derive(Clone)]
pub struct FakeCompute {
    pub addr: SocketAddr,
    pub state: Arc<Mutex<Inner>>,
}

fn self_link(project: &str, name: &str) -> String {
    format!("https://www.googleapis.com/compute/v1/projects/{project}/global/backendServices/{name}")
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
            .route("/compute/v1/projects/{project}/global/urlMaps", get(list_maps))
            .route(
                "/compute/v1/projects/{project}/global/urlMaps/{name}",
                get(get_map).patch(patch_map),
            )
            .route(
                "/compute/v1/projects/{project}/global/operations/{op}",
                get(get_operation),
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
        s.maps.insert((project.into(), name.into()), map);
    }

    pub fn delete_url_map(&self, project: &str, name: &str) {
        self.state
            .lock()
            .unwrap()
            .maps
            .remove(&(project.to_string(), name.to_string()));
    }

    /// An out-of-band change of one weight (as in the console): new fingerprint.
    pub fn set_weight(&self, project: &str, name: &str, backend: &str, weight: u32) {
        let mut s = self.state.lock().unwrap();
        s.fingerprints += 1;
        let fp = format!("fp-{}", s.fingerprints);
        let map = s.maps.get_mut(&(project.to_string(), name.to_string())).unwrap();
        set_weight_in(map, backend, weight);
        map["fingerprint"] = fp.into();
    }

    /// The live weights by backend name, in order.
    pub fn weights(&self, project: &str, name: &str) -> Vec<(String, u64)> {
        let s = self.state.lock().unwrap();
        s.maps[&(project.to_string(), name.to_string())]["defaultRouteAction"]["weightedBackendServices"]
            .as_array()
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
                    e["weight"].as_u64().unwrap(),
                )
            })
            .collect()
    }

    pub fn url_map(&self, project: &str, name: &str) -> Value {
        self.state.lock().unwrap().maps[&(project.to_string(), name.to_string())].clone()
    }

    /// Takes the request log.
    pub fn take_requests(&self) -> Vec<String> {
        std::mem::take(&mut self.state.lock().unwrap().requests)
    }
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
    if auth != format!("Bearer {TOKEN}") {
        return Some(error(
            StatusCode::UNAUTHORIZED,
            "authError",
            "Request had invalid authentication credentials.",
        ));
    }
    None
}

/// `urlMaps.list`: names in order, `maxResults` a page (default 500), `nextPageToken` the
/// next name.
async fn list_maps(
    State(state): State<Arc<Mutex<Inner>>>,
    Path(project): Path<String>,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    let mut s = state.lock().unwrap();
    if let Some(r) = preamble(&mut s, &headers, "GET urlMaps (list)".to_string()) {
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
        .filter(|((p, name), _)| *p == project && *name >= start)
        .map(|((_, name), map)| (name, map))
        .collect();
    maps.sort_by(|a, b| a.0.cmp(b.0));
    let page: Vec<Value> = maps.iter().take(max).map(|(_, m)| (*m).clone()).collect();
    let mut body =
        json!({"kind": "compute#urlMapList", "id": format!("projects/{project}/global/urlMaps"), "items": page});
    if let Some((next, _)) = maps.get(max) {
        body["nextPageToken"] = json!(next);
    }
    Json(body).into_response()
}

async fn get_map(
    State(state): State<Arc<Mutex<Inner>>>,
    Path((project, name)): Path<(String, String)>,
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
    if let Some(r) = preamble(&mut s, &headers, format!("GET urlMaps/{name}")) {
        return r;
    }
    let key = (project.clone(), name.clone());
    let Some(map) = s.maps.get(&key).cloned() else {
        return error(
            StatusCode::NOT_FOUND,
            "notFound",
            &format!("The resource 'projects/{project}/global/urlMaps/{name}' was not found"),
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
    State(state): State<Arc<Mutex<Inner>>>,
    Path((project, name)): Path<(String, String)>,
    Query(query): Query<HashMap<String, String>>,
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
    if let Some(r) = preamble(&mut s, &headers, format!("PATCH urlMaps/{name}")) {
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
        return operation_reply(s, &op, &project, &name);
    }
    let key = (project.clone(), name.clone());
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
    if failure.is_none() {
        // JSON merge patch: objects merge, arrays are replaced whole.
        let mut updated = current;
        if let Some(entries) = body.pointer("/defaultRouteAction/weightedBackendServices") {
            updated["defaultRouteAction"]["weightedBackendServices"] = entries.clone();
        }
        s.fingerprints += 1;
        updated["fingerprint"] = format!("fp-{}", s.fingerprints).into();
        s.maps.insert(key, updated);
    }
    let polls = s.polls_per_operation;
    s.operations.insert(op.clone(), (polls, failure));
    s.request_ids.insert(request_id, op.clone());
    operation_reply(s, &op, &project, &name)
}

/// The reply to an accepted PATCH: its operation, or a dropped connection when a lost
/// response is injected.
fn operation_reply(mut s: std::sync::MutexGuard<'_, Inner>, op: &str, project: &str, name: &str) -> Response {
    if s.drop_after_applying > 0 {
        s.drop_after_applying -= 1;
        drop(s);
        // Abort this connection's task: the client sees the connection close with no answer.
        panic!("fake_compute: dropping the connection after applying (injected fault)");
    }
    Json(
        json!({"kind": "compute#operation", "name": op, "status": "RUNNING", "operationType": "patch",
        "targetLink": format!("https://www.googleapis.com/compute/v1/projects/{project}/global/urlMaps/{name}")}),
    )
    .into_response()
}

async fn get_operation(
    State(state): State<Arc<Mutex<Inner>>>,
    Path((_project, op)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    let mut s = state.lock().unwrap();
    if let Some(r) = preamble(&mut s, &headers, format!("GET operations/{op}")) {
        return r;
    }
    let Some((polls_left, failure)) = s.operations.get_mut(&op) else {
        return error(StatusCode::NOT_FOUND, "notFound", "no such operation");
    };
    *polls_left = polls_left.saturating_sub(1);
    if *polls_left > 0 {
        return Json(json!({"name": op, "status": "RUNNING", "progress": 50})).into_response();
    }
    let mut done = json!({"name": op, "status": "DONE", "progress": 100});
    if let Some(message) = failure {
        done["error"] = json!({"errors": [{"code": "INVALID_USAGE", "message": message}]});
        done["httpErrorStatusCode"] = 400.into();
    }
    Json(done).into_response()
}
