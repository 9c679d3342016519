//! Fakes of the metadata services `locality resolve` asks for its availability zone, written
//! from their published contracts, on one loopback server with a request count: EC2 IMDS
//! (IMDSv2: `PUT /latest/api/token` with a TTL header, then GETs with the token; IMDSv1: GETs
//! without one), ECS task metadata v4 (`GET <ECS_CONTAINER_METADATA_URI_V4>/task`) and the
//! Lambda metadata API (`GET /2026-01-15/metadata/execution-environment` with the bearer
//! token). Behaviours: normal, a refused token (v1 only), slow, silent, garbage, HTML, a huge
//! body, failing N times then recovering.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Router;

pub const LAMBDA_TOKEN: &str = "lambda-metadata-token-1234";

/// How the fake answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    /// As the real services do.
    Normal,
    /// IMDS refuses tokens (HTTP 403, as with `HttpTokens` disabled or a hop limit) but
    /// answers v1 GETs.
    V1Only,
    /// Answers after this long.
    Slow(Duration),
    /// Accepts and never answers.
    Silent,
    /// Answers 200 with this body to everything.
    Body(String),
    /// Answers 500 to the next N requests, then normally.
    FailTimes(u32),
}

pub struct Inner {
    pub mode: Mode,
    /// Every request: "METHOD path".
    pub requests: Vec<String>,
    pub zone: String,
    pub zone_id: String,
    /// ECS answers without `AvailabilityZoneID` when false.
    pub ecs_has_id: bool,
}

#[derive(Clone)]
pub struct FakeMetadata {
    pub addr: SocketAddr,
    pub state: Arc<Mutex<Inner>>,
}

impl FakeMetadata {
    pub async fn start(zone: &str, zone_id: &str) -> Self {
        let state = Arc::new(Mutex::new(Inner {
            mode: Mode::Normal,
            requests: Vec::new(),
            zone: zone.to_string(),
            zone_id: zone_id.to_string(),
            ecs_has_id: true,
        }));
        let app = Router::new().fallback(handle).with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        FakeMetadata { addr, state }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn set_mode(&self, mode: Mode) {
        self.state.lock().unwrap().mode = mode;
    }

    pub fn take_requests(&self) -> Vec<String> {
        std::mem::take(&mut self.state.lock().unwrap().requests)
    }
}

async fn handle(State(state): State<Arc<Mutex<Inner>>>, method: Method, uri: Uri, headers: HeaderMap) -> Response {
    let (mode, zone, zone_id, ecs_has_id) = {
        let mut s = state.lock().unwrap();
        s.requests.push(format!("{method} {}", uri.path()));
        let mode = s.mode.clone();
        if let Mode::FailTimes(n) = mode {
            s.mode = if n > 1 { Mode::FailTimes(n - 1) } else { Mode::Normal };
        }
        (mode, s.zone.clone(), s.zone_id.clone(), s.ecs_has_id)
    };
    match mode {
        Mode::Silent => {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            return StatusCode::GATEWAY_TIMEOUT.into_response();
        }
        Mode::Slow(d) => tokio::time::sleep(d).await,
        Mode::Body(body) => return (StatusCode::OK, body).into_response(),
        Mode::FailTimes(_) => return (StatusCode::INTERNAL_SERVER_ERROR, "internal error").into_response(),
        Mode::Normal | Mode::V1Only => {}
    }
    let token = headers.get("x-aws-ec2-metadata-token").and_then(|v| v.to_str().ok());
    match (method.as_str(), uri.path()) {
        ("PUT", "/latest/api/token") => {
            if mode == Mode::V1Only {
                return StatusCode::FORBIDDEN.into_response();
            }
            if headers.get("x-aws-ec2-metadata-token-ttl-seconds").is_none() {
                return StatusCode::BAD_REQUEST.into_response();
            }
            "imds-token-abc".into_response()
        }
        (
            "GET",
            "/latest/meta-data/placement/availability-zone" | "/latest/meta-data/placement/availability-zone-id",
        ) => {
            // IMDSv2-only instances refuse tokenless GETs; v1-only ones accept them.
            if mode != Mode::V1Only && token != Some("imds-token-abc") {
                return StatusCode::UNAUTHORIZED.into_response();
            }
            if uri.path().ends_with("-id") {
                zone_id.into_response()
            } else {
                zone.into_response()
            }
        }
        ("GET", "/ecs/v4/task") => {
            let mut body = serde_json::json!({"Cluster": "prod", "AvailabilityZone": zone});
            if ecs_has_id {
                body["AvailabilityZoneID"] = zone_id.into();
            }
            axum::Json(body).into_response()
        }
        ("GET", "/2026-01-15/metadata/execution-environment") => {
            let auth = headers.get("authorization").and_then(|v| v.to_str().ok());
            if auth != Some(&format!("Bearer {LAMBDA_TOKEN}")) {
                return StatusCode::UNAUTHORIZED.into_response();
            }
            axum::Json(serde_json::json!({"AvailabilityZoneID": zone_id})).into_response()
        }
        _ => StatusCode::NOT_FOUND.into_response(),
    }
}
