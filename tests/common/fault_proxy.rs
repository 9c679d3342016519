//! A fault-injecting HTTP proxy in front of a real service (moto), for the AWS column of the
//! fault matrix: requests are forwarded unchanged, except that queued faults answer with an
//! AWS-style error, drop the connection before forwarding, or forward and then drop the
//! connection (the response is lost after the service acted). Listens on 127.0.0.1 only.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Router;

/// A fault for one request.
#[derive(Debug, Clone)]
pub enum Fault {
    /// Answer with this status and an AWS error body (429 is throttling, with Retry-After).
    Status(u16),
    /// Drop the connection without forwarding.
    DropBefore,
    /// Forward, then drop the connection without answering.
    LostAfter,
    /// Never answer (an hour's wait): a silent server.
    Silent,
    /// Answer 200 with this body without forwarding (`application/xml` when it starts with `<`,
    /// else `application/x-amz-json-1.1`): a server that says what the test wants (e.g. the
    /// same page token forever).
    Answer(String),
    /// Answer with this status and this body without forwarding (`application/xml` when it
    /// starts with `<`): an AWS error saying what the test wants.
    Error(u16, String),
}

#[derive(Default)]
pub struct Inner {
    /// Faults for any request, in order.
    pub faults: VecDeque<Fault>,
    /// Faults for writes only (AWS actions starting with Put, Delete, Create, Update, Modify).
    pub write_faults: VecDeque<Fault>,
    /// The AWS action of every request (`X-Amz-Target`'s operation, or the query protocol's
    /// `Action`).
    pub actions: Vec<String>,
    /// Each request's SigV4 credential scope, `region/service` (from `Authorization`).
    pub scopes: Vec<String>,
}

#[derive(Clone)]
pub struct FaultProxy {
    pub addr: SocketAddr,
    pub state: Arc<Mutex<Inner>>,
}

struct Shared {
    upstream: String,
    client: reqwest::Client,
    state: Arc<Mutex<Inner>>,
}

impl FaultProxy {
    /// A proxy to `upstream` (e.g. `http://127.0.0.1:5000`).
    pub async fn start(upstream: &str) -> Self {
        let state = Arc::new(Mutex::new(Inner::default()));
        let shared = Arc::new(Shared {
            upstream: upstream.trim_end_matches('/').to_string(),
            client: reqwest::Client::new(),
            state: state.clone(),
        });
        let app = Router::new().fallback(forward).with_state(shared);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        FaultProxy { addr, state }
    }

    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }
}

async fn forward(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    // JSON protocols name the action in X-Amz-Target; the query protocol (Elastic Load
    // Balancing, EC2) in the form body's `Action`.
    let query = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("application/x-www-form-urlencoded"));
    let action = headers
        .get("x-amz-target")
        .and_then(|v| v.to_str().ok())
        .and_then(|t| t.rsplit('.').next())
        .map(str::to_string)
        .or_else(|| {
            query
                .then(|| {
                    String::from_utf8_lossy(&body)
                        .split('&')
                        .find_map(|pair| pair.strip_prefix("Action=").map(str::to_string))
                })
                .flatten()
        })
        .unwrap_or_default();
    let write = ["Put", "Delete", "Create", "Update", "Modify"]
        .iter()
        .any(|p| action.starts_with(p));
    let fault = {
        let mut s = shared.state.lock().unwrap();
        s.actions.push(action);
        let scope = headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|a| a.split("Credential=").nth(1))
            .map(|c| c.split('/').skip(2).take(2).collect::<Vec<_>>().join("/"))
            .unwrap_or_default();
        s.scopes.push(scope);
        match write.then(|| s.write_faults.pop_front()).flatten() {
            Some(f) => Some(f),
            None => s.faults.pop_front(),
        }
    };
    match &fault {
        Some(Fault::Status(code)) if query => {
            let (status, kind) = if *code == 429 {
                (StatusCode::BAD_REQUEST, "Throttling")
            } else {
                (StatusCode::from_u16(*code).unwrap(), "InternalFailure")
            };
            let body = format!(
                "<ErrorResponse><Error><Type>Receiver</Type><Code>{kind}</Code><Message>injected fault</Message></Error><RequestId>fault</RequestId></ErrorResponse>"
            );
            return (status, [("content-type", "text/xml")], body).into_response();
        }
        Some(Fault::Status(429)) => {
            let body = r#"{"__type":"ThrottlingException","message":"Rate exceeded (injected)"}"#;
            return (
                StatusCode::TOO_MANY_REQUESTS,
                [("retry-after", "1"), ("x-amzn-errortype", "ThrottlingException")],
                body,
            )
                .into_response();
        }
        Some(Fault::Status(code)) => {
            let body = r#"{"__type":"InternalServerError","message":"injected fault"}"#;
            return (
                StatusCode::from_u16(*code).unwrap(),
                [("x-amzn-errortype", "InternalServerError")],
                body,
            )
                .into_response();
        }
        Some(Fault::Answer(body)) => return said(StatusCode::OK, body),
        Some(Fault::Error(code, body)) => return said(StatusCode::from_u16(*code).unwrap(), body),
        Some(Fault::Silent) => {
            tokio::time::sleep(std::time::Duration::from_secs(3600)).await;
            return StatusCode::GATEWAY_TIMEOUT.into_response();
        }
        Some(Fault::DropBefore) => panic!("fault_proxy: dropping the connection before forwarding (injected fault)"),
        _ => {}
    }
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    let mut request = shared.client.request(method, format!("{}{path}", shared.upstream));
    for (name, value) in &headers {
        if name != "host" && name != "content-length" {
            request = request.header(name, value);
        }
    }
    let upstream = request.body(body).send().await.expect("the upstream answers");
    if matches!(fault, Some(Fault::LostAfter)) {
        panic!("fault_proxy: dropping the connection after forwarding (injected fault)");
    }
    let status = upstream.status();
    let mut response_headers = HeaderMap::new();
    for (name, value) in upstream.headers() {
        if name != "content-length" && name != "transfer-encoding" && name != "connection" {
            response_headers.insert(name.clone(), value.clone());
        }
    }
    let bytes = upstream.bytes().await.unwrap_or_default();
    (status, response_headers, bytes).into_response()
}

/// An answer the test wrote: `application/xml` when it starts with `<`, else AWS's JSON.
fn said(status: StatusCode, body: &str) -> Response {
    let kind = if body.starts_with('<') {
        "application/xml"
    } else {
        "application/x-amz-json-1.1"
    };
    (status, [("content-type", kind)], body.to_string()).into_response()
}
