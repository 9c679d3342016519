//! A stateful fake of Cloudflare's v2 origin cloud-region API (from Cloudflare's published
//! OpenAPI schema for origin cloud regions): paged list (per_page 1..100), single GET/PUT/DELETE,
//! batch PUT that merges and reports per-item failures, batch DELETE whose body is the IP array,
//! supported_regions, the 3,500-mapping limit (1164), unknown regions (1157), missing mappings
//! (1142), bearer auth, and fault injection (429 + Retry-After, 5xx, slow responses, dropped
//! connections) with a request log. Listens on 127.0.0.1 only.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, put};
use axum::{Json, Router};
use serde_json::{json, Value};

/// The token the fake accepts.
pub const TOKEN: &str = "fake-cloudflare-token";

/// A zone ID that exists in the fake.
pub const ZONE: &str = "023e105f4ecef8ad9ca31a8372d0c353";

/// An injected fault.
#[derive(Debug, Clone, Copy)]
pub enum Fault {
    /// Answer with this status (and Retry-After seconds).
    Status(u16, Option<u64>),
    /// Answer normally after this delay.
    Slow(Duration),
    /// Apply the request, then drop the connection without answering.
    DropAfterApplying,
    /// Drop the connection without applying the request.
    DropBeforeApplying,
    /// Apply the request at once, answer after this delay (a client that gives up in between
    /// leaves a change it does not know of).
    SlowAfterApplying(Duration),
}

#[derive(Default)]
pub struct Inner {
    /// zone → canonical IP → (vendor, region, modified_on)
    pub zones: HashMap<String, BTreeMap<String, (String, String, String)>>,
    pub limit: usize,
    pub faults: VecDeque<Fault>,
    /// Faults for writes only (PUT, DELETE), taken before `faults`.
    pub write_faults: VecDeque<Fault>,
    /// Writes (PUT, DELETE) to apply and then answer by dropping the connection: responses lost
    /// after the server acted, whatever reads come in between.
    pub drop_writes: u32,
    /// A broken server: every list request gets the first page and a huge `total_pages`.
    pub repeat_first_page: bool,
    /// A batch PUT that would take the zone past its limit is refused as a whole (403, 1164)
    /// instead of item by item: the other way the API may report the limit.
    pub limit_refuses_whole_batch: bool,
    pub requests: Vec<String>,
    /// Every User-Agent seen.
    pub user_agents: std::collections::BTreeSet<String>,
    clock: u64,
}

#[derive(Clone)]
pub struct FakeCloudflare {
    pub addr: SocketAddr,
    pub state: Arc<Mutex<Inner>>,
}

/// A region and its upper-tier colos.
type Region = (&'static str, Vec<&'static str>);

/// vendor → [(region, upper-tier colos)]
fn supported() -> Vec<(&'static str, Vec<Region>)> {
    vec![
        (
            "aws",
            vec![
                ("us-east-1", vec!["IAD", "EWR"]),
                ("us-west-2", vec!["SEA"]),
                ("ap-northeast-1", vec!["NRT"]),
                ("eu-central-1", vec!["FRA"]),
            ],
        ),
        (
            "gcp",
            vec![
                ("us-central1", vec!["ORD"]),
                ("asia-northeast1", vec!["NRT", "KIX"]),
                ("europe-west1", vec![]),
            ],
        ),
        ("azure", vec![("japaneast", vec!["NRT"]), ("westeurope", vec!["AMS"])]),
        ("oci", vec![("ap-tokyo-1", vec!["NRT"])]),
    ]
}

fn is_supported(vendor: &str, region: &str) -> bool {
    supported()
        .iter()
        .any(|(v, rs)| *v == vendor && rs.iter().any(|(r, _)| *r == region))
}

fn envelope(result: Value) -> Response {
    Json(json!({"success": true, "errors": [], "messages": [], "result": result})).into_response()
}

fn failure(status: StatusCode, code: u32, message: &str) -> Response {
    (
        status,
        Json(json!({"success": false, "errors": [{"code": code, "message": message}], "messages": [], "result": null})),
    )
        .into_response()
}

fn canonical(ip: &str) -> Option<String> {
    ip.parse::<IpAddr>().ok().map(|i| i.to_string())
}

impl FakeCloudflare {
    pub async fn start() -> Self {
        let state = Arc::new(Mutex::new(Inner {
            limit: 3500,
            ..Default::default()
        }));
        state.lock().unwrap().zones.insert(ZONE.into(), BTreeMap::new());
        let base = "/client/v4/zones/{zone}/origin/cloud_regions";
        let app = Router::new()
            .route(base, get(list))
            .route(&format!("{base}/supported_regions"), get(supported_regions))
            .route(&format!("{base}/batch"), put(batch_put).delete(batch_delete))
            .route(&format!("{base}/{{ip}}"), get(get_one).put(put_one).delete(delete_one))
            .with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        FakeCloudflare { addr, state }
    }

    pub fn base_url(&self) -> String {
        format!("http://{}/client/v4", self.addr)
    }

    /// Puts a mapping directly (an out-of-band change).
    pub fn set(&self, ip: &str, vendor: &str, region: &str) {
        let mut s = self.state.lock().unwrap();
        s.clock += 1;
        let at = format!("2026-11-30T10:{:02}:{:02}Z", (s.clock / 60) % 60, s.clock % 60);
        s.zones
            .get_mut(ZONE)
            .unwrap()
            .insert(canonical(ip).unwrap(), (vendor.into(), region.into(), at));
    }

    pub fn remove(&self, ip: &str) {
        self.state
            .lock()
            .unwrap()
            .zones
            .get_mut(ZONE)
            .unwrap()
            .remove(&canonical(ip).unwrap());
    }

    pub fn mappings(&self) -> BTreeMap<String, (String, String)> {
        self.state.lock().unwrap().zones[ZONE]
            .iter()
            .map(|(ip, (v, r, _))| (ip.clone(), (v.clone(), r.clone())))
            .collect()
    }

    pub fn take_requests(&self) -> Vec<String> {
        std::mem::take(&mut self.state.lock().unwrap().requests)
    }
}

enum Gate {
    Answer,
    Reply(Response),
    Slow(Duration),
    Drop,
    DropUnapplied,
    SlowAfter(Duration),
}

fn gate(state: &Arc<Mutex<Inner>>, headers: &HeaderMap, line: String) -> Gate {
    let mut s = state.lock().unwrap();
    s.requests.push(line);
    if let Some(agent) = headers.get("user-agent").and_then(|v| v.to_str().ok()) {
        s.user_agents.insert(agent.to_string());
    }
    let auth = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    if auth != format!("Bearer {TOKEN}") {
        return Gate::Reply(failure(StatusCode::FORBIDDEN, 10000, "Authentication error"));
    }
    let write = s
        .requests
        .last()
        .is_some_and(|l| l.starts_with("PUT") || l.starts_with("DELETE"));
    if write && s.drop_writes > 0 {
        s.drop_writes -= 1;
        return Gate::Drop;
    }
    let fault = match write.then(|| s.write_faults.pop_front()).flatten() {
        Some(fault) => Some(fault),
        None => s.faults.pop_front(),
    };
    match fault {
        None => Gate::Answer,
        Some(Fault::Status(status, retry_after)) => {
            let mut r = failure(StatusCode::from_u16(status).unwrap(), 1140, "injected fault");
            if let Some(secs) = retry_after {
                r.headers_mut().insert("retry-after", secs.to_string().parse().unwrap());
            }
            Gate::Reply(r)
        }
        Some(Fault::Slow(d)) => Gate::Slow(d),
        Some(Fault::DropAfterApplying) => Gate::Drop,
        Some(Fault::DropBeforeApplying) => Gate::DropUnapplied,
        Some(Fault::SlowAfterApplying(d)) => Gate::SlowAfter(d),
    }
}

/// Runs the handler body `f` under the injected fault.
async fn guarded(
    state: &Arc<Mutex<Inner>>,
    headers: &HeaderMap,
    line: String,
    f: impl FnOnce(&mut Inner) -> Response,
) -> Response {
    match gate(state, headers, line) {
        Gate::Reply(r) => r,
        Gate::Answer => f(&mut state.lock().unwrap()),
        Gate::Slow(d) => {
            tokio::time::sleep(d).await;
            f(&mut state.lock().unwrap())
        }
        Gate::SlowAfter(d) => {
            let response = f(&mut state.lock().unwrap());
            tokio::time::sleep(d).await;
            response
        }
        Gate::DropUnapplied => panic!("fake_cloudflare: dropping the connection before applying (injected fault)"),
        Gate::Drop => {
            let _ = f(&mut state.lock().unwrap());
            // Abort this connection's task: the client sees the connection close with no answer.
            panic!("fake_cloudflare: dropping the connection (injected fault)");
        }
    }
}

fn entry(ip: &str, (vendor, region, modified_on): &(String, String, String)) -> Value {
    json!({"origin_ip": ip, "vendor": vendor, "region": region, "modified_on": modified_on})
}

async fn list(
    State(state): State<Arc<Mutex<Inner>>>,
    Path(zone): Path<String>,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    let page: usize = q.get("page").and_then(|p| p.parse().ok()).unwrap_or(1).max(1);
    let per_page: usize = q.get("per_page").and_then(|p| p.parse().ok()).unwrap_or(20);
    guarded(&state, &headers, "GET list".into(), |s| {
        if !(1..=100).contains(&per_page) {
            return failure(StatusCode::BAD_REQUEST, 1146, "invalid per_page parameter, must be between 1 and 100");
        }
        let Some(mappings) = s.zones.get(&zone) else { return failure(StatusCode::NOT_FOUND, 7003, "No route for the URI") };
        let total = mappings.len();
        let (page, pages) = if s.repeat_first_page { (1, 1_000_000) } else { (page, total.div_ceil(per_page).max(1)) };
        let items: Vec<Value> = mappings.iter().skip((page - 1) * per_page).take(per_page).map(|(ip, e)| entry(ip, e)).collect();
        let count = items.len();
        Json(json!({"success": true, "errors": [], "messages": [], "result": items,
            "result_info": {"page": page, "per_page": per_page, "count": count, "total_count": total, "total_pages": pages}}))
        .into_response()
    })
    .await
}

async fn supported_regions(
    State(state): State<Arc<Mutex<Inner>>>,
    Path(_zone): Path<String>,
    headers: HeaderMap,
) -> Response {
    guarded(&state, &headers, "GET supported_regions".into(), |_| {
        let vendors: serde_json::Map<String, Value> = supported()
            .into_iter()
            .map(|(v, rs)| {
                (
                    v.to_string(),
                    rs.into_iter()
                        .map(|(name, colos)| json!({"name": name, "upper_tier_colos": colos}))
                        .collect::<Vec<_>>()
                        .into(),
                )
            })
            .collect();
        envelope(json!({"vendors": vendors, "obtained_codes": true}))
    })
    .await
}

fn upsert(s: &mut Inner, zone: &str, ip: &str, vendor: &str, region: &str) -> Result<Value, (StatusCode, u32, String)> {
    let Some(ip) = canonical(ip) else {
        return Err((
            StatusCode::BAD_REQUEST,
            1146,
            "Invalid or missing origin IP address.".into(),
        ));
    };
    if !is_supported(vendor, region) {
        return Err((
            StatusCode::BAD_REQUEST,
            1157,
            "The vendor provided doesn't exist or the region provided does not exist for the specified cloud vendor"
                .into(),
        ));
    }
    let limit = s.limit;
    s.clock += 1;
    let at = format!("2026-11-30T12:{:02}:{:02}Z", (s.clock / 60) % 60, s.clock % 60);
    let mappings = s
        .zones
        .get_mut(zone)
        .ok_or((StatusCode::NOT_FOUND, 7003, "No route for the URI".to_string()))?;
    if !mappings.contains_key(&ip) && mappings.len() >= limit {
        return Err((
            StatusCode::FORBIDDEN,
            1164,
            "Maximum number of IP mappings configured for zone.".into(),
        ));
    }
    let value = (vendor.to_string(), region.to_string(), at);
    let e = entry(&ip, &value);
    mappings.insert(ip, value);
    Ok(e)
}

async fn get_one(
    State(state): State<Arc<Mutex<Inner>>>,
    Path((zone, ip)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    guarded(&state, &headers, "GET one".into(), |s| {
        match canonical(&ip).and_then(|ip| s.zones.get(&zone)?.get(&ip).map(|e| entry(&ip, e))) {
            Some(e) => envelope(e),
            None => failure(
                StatusCode::NOT_FOUND,
                1142,
                "Unable to retrieve origin_public_cloud_region setting value. The zone setting does not exist.",
            ),
        }
    })
    .await
}

async fn put_one(
    State(state): State<Arc<Mutex<Inner>>>,
    Path((zone, ip)): Path<(String, String)>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    guarded(&state, &headers, "PUT one".into(), |s| {
        let body_ip = body["origin_ip"].as_str().unwrap_or_default();
        if canonical(body_ip) != canonical(&ip) {
            return failure(StatusCode::BAD_REQUEST, 1146, "body origin_ip does not match URL");
        }
        match upsert(
            s,
            &zone,
            &ip,
            body["vendor"].as_str().unwrap_or_default(),
            body["region"].as_str().unwrap_or_default(),
        ) {
            Ok(e) => envelope(e),
            Err((status, code, message)) => failure(status, code, &message),
        }
    })
    .await
}

async fn delete_one(
    State(state): State<Arc<Mutex<Inner>>>,
    Path((zone, ip)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    guarded(&state, &headers, "DELETE one".into(), |s| {
        let removed = canonical(&ip).and_then(|c| s.zones.get_mut(&zone)?.remove(&c).map(|_| c));
        match removed {
            Some(c) => envelope(json!({"origin_ip": c})),
            None => failure(
                StatusCode::NOT_FOUND,
                1142,
                "Unable to retrieve origin_public_cloud_region setting value. The zone setting does not exist.",
            ),
        }
    })
    .await
}

async fn batch_put(
    State(state): State<Arc<Mutex<Inner>>>,
    Path(zone): Path<String>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    guarded(&state, &headers, "PUT batch".into(), |s| {
        let Some(items) = body.as_array() else { return failure(StatusCode::BAD_REQUEST, 1146, "body must be an array") };
        if items.len() > 100 {
            return failure(StatusCode::BAD_REQUEST, 1146, "at most 100 items per batch");
        }
        if s.limit_refuses_whole_batch {
            let mappings = s.zones.get(&zone).cloned().unwrap_or_default();
            let new: std::collections::BTreeSet<String> = items
                .iter()
                .filter_map(|i| canonical(i["origin_ip"].as_str().unwrap_or_default()))
                .filter(|ip| !mappings.contains_key(ip))
                .collect();
            if mappings.len() + new.len() > s.limit {
                return failure(StatusCode::FORBIDDEN, 1164, "Maximum number of IP mappings configured for zone.");
            }
        }
        let (mut succeeded, mut failed) = (Vec::new(), Vec::new());
        for item in items {
            let ip = item["origin_ip"].as_str().unwrap_or_default();
            match upsert(s, &zone, ip, item["vendor"].as_str().unwrap_or_default(), item["region"].as_str().unwrap_or_default()) {
                Ok(e) => succeeded.push(json!({"origin_ip": e["origin_ip"], "vendor": e["vendor"], "region": e["region"]})),
                Err((_, code, message)) => failed.push(json!({"origin_ip": canonical(ip).unwrap_or(ip.to_string()), "error": format!("{code}: {message}")})),
            }
        }
        envelope(json!({"succeeded": succeeded, "failed": failed}))
    })
    .await
}

async fn batch_delete(
    State(state): State<Arc<Mutex<Inner>>>,
    Path(zone): Path<String>,
    headers: HeaderMap,
    body: String,
) -> Response {
    guarded(&state, &headers, "DELETE batch".into(), |s| {
        let Ok(Value::Array(ips)) = serde_json::from_str::<Value>(&body) else {
            return failure(
                StatusCode::BAD_REQUEST,
                1146,
                "the request body must be a JSON array of IP addresses",
            );
        };
        let (mut succeeded, mut failed) = (Vec::new(), Vec::new());
        for ip in ips {
            let ip = ip.as_str().unwrap_or_default().to_string();
            match canonical(&ip).and_then(|c| s.zones.get_mut(&zone)?.remove(&c).map(|e| (c, e))) {
                Some((c, (v, r, _))) => succeeded.push(json!({"origin_ip": c, "vendor": v, "region": r})),
                None => {
                    failed.push(json!({"origin_ip": canonical(&ip).unwrap_or(ip), "error": "1142: mapping not found"}))
                }
            }
        }
        envelope(json!({"succeeded": succeeded, "failed": failed}))
    })
    .await
}
