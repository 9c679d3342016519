//! Fakes of Google's token services, written from their published contracts, on one loopback
//! server: the OAuth 2.0 token endpoint (`refresh_token` grant, what gcloud's authorized_user
//! file uses), the metadata server's token endpoint (`Metadata-Flavor: Google` required), STS
//! token exchange (workload identity federation), a URL that serves a subject token, and IAM
//! Credentials `generateAccessToken` (impersonation: the caller's token must be one this fake
//! issued, and the target must allow it). Every token it issues is remembered with its expiry
//! and who it stands for, so the Compute fake can accept only those — and self-signed
//! service-account JWTs, verified against the key's public half (RS256, issuer, scope, expiry).

use std::collections::{BTreeSet, HashMap};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use base64::Engine as _;
use serde_json::{json, Value};

pub const CLIENT_ID: &str = "fake-client-id.apps.googleusercontent.com";
pub const CLIENT_SECRET: &str = "fake-client-secret-d41d8cd9";
pub const REFRESH_TOKEN: &str = "1//fake-refresh-token-7b5c";
pub const SUBJECT_TOKEN: &str = "eyJfake-github-oidc-subject-token";
pub const AUDIENCE: &str =
    "//iam.googleapis.com/projects/123456/locations/global/workloadIdentityPools/ci/providers/github";
pub const SCOPE: &str = "https://www.googleapis.com/auth/cloud-platform";

#[derive(Default)]
pub struct AuthState {
    /// token → (expiry, who it stands for: `user`, `metadata`, `federated`, `impersonated:<email>`;
    /// a self-signed key JWT stands for `sa:<email>`).
    issued: HashMap<String, (Instant, String)>,
    counter: u64,
    /// Lifetime of the tokens issued from now on.
    pub lifetime: Duration,
    /// Every request: "METHOD path".
    pub requests: Vec<String>,
    /// Service accounts whose impersonation is allowed, with the callers allowed (`who`).
    pub impersonation: HashMap<String, BTreeSet<String>>,
    /// Service-account keys: email → (key id, RSAPublicKey DER).
    pub service_accounts: HashMap<String, (String, Vec<u8>)>,
    /// Metadata token requests to accept and never answer.
    pub silent_metadata: bool,
    /// Every token request body or form, to check that no secret is missing or extra.
    pub seen_forms: Vec<HashMap<String, String>>,
}

#[derive(Clone)]
pub struct FakeGoogleAuth {
    pub addr: SocketAddr,
    pub state: Arc<Mutex<AuthState>>,
}

type Shared = State<Arc<Mutex<AuthState>>>;

fn oauth_error(status: StatusCode, error: &str, description: &str) -> Response {
    (status, Json(json!({"error": error, "error_description": description}))).into_response()
}

fn google_error(status: StatusCode, message: &str) -> Response {
    let reason = if status == StatusCode::FORBIDDEN {
        "PERMISSION_DENIED"
    } else {
        "UNAUTHENTICATED"
    };
    (
        status,
        Json(json!({"error": {"code": status.as_u16(), "message": message, "status": reason}})),
    )
        .into_response()
}

impl AuthState {
    fn issue(&mut self, who: &str) -> (String, Duration) {
        self.counter += 1;
        let token = format!("ya29.fake-{}-{}", who.replace([':', '@', '.'], "-"), self.counter);
        self.issued
            .insert(token.clone(), (Instant::now() + self.lifetime, who.to_string()));
        (token, self.lifetime)
    }

    /// Who a bearer token stands for, if this fake issued it and it has not expired, or if it
    /// is a valid self-signed JWT of a known service-account key.
    pub fn who(&self, token: &str) -> Option<String> {
        if let Some((expiry, who)) = self.issued.get(token) {
            return (Instant::now() < *expiry).then(|| who.clone());
        }
        self.verify_jwt(token)
    }

    fn verify_jwt(&self, token: &str) -> Option<String> {
        let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let mut parts = token.split('.');
        let (header, claims, signature) = (parts.next()?, parts.next()?, parts.next()?);
        let header_json: Value = serde_json::from_slice(&b64.decode(header).ok()?).ok()?;
        let claims_json: Value = serde_json::from_slice(&b64.decode(claims).ok()?).ok()?;
        if header_json["alg"] != "RS256" {
            return None;
        }
        let email = claims_json["iss"].as_str()?;
        let (key_id, public_key) = self.service_accounts.get(email)?;
        if header_json["kid"].as_str() != Some(key_id) || claims_json["sub"].as_str() != Some(email) {
            return None;
        }
        let scopes = claims_json["scope"].as_str().unwrap_or_default();
        if !scopes.split(' ').any(|s| s == SCOPE) {
            return None;
        }
        let now = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).ok()?.as_secs();
        if claims_json["exp"].as_u64()? <= now || claims_json["iat"].as_u64()? > now + 60 {
            return None;
        }
        let key =
            aws_lc_rs::signature::UnparsedPublicKey::new(&aws_lc_rs::signature::RSA_PKCS1_2048_8192_SHA256, public_key);
        key.verify(format!("{header}.{claims}").as_bytes(), &b64.decode(signature).ok()?)
            .ok()?;
        Some(format!("sa:{email}"))
    }
}

impl FakeGoogleAuth {
    pub async fn start() -> Self {
        let state = Arc::new(Mutex::new(AuthState {
            lifetime: Duration::from_secs(3600),
            ..Default::default()
        }));
        let app = Router::new()
            .route("/token", post(oauth_token))
            .route("/v1/token", post(sts_token))
            .route("/subject-token", get(subject_token))
            .route(
                "/computeMetadata/v1/instance/service-accounts/default/token",
                get(metadata_token),
            )
            .route("/v1/projects/-/serviceAccounts/{target}", post(generate_access_token))
            .fallback(|| async { StatusCode::NOT_FOUND })
            .with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        FakeGoogleAuth { addr, state }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// `host:port`, for `GCE_METADATA_HOST`.
    pub fn host(&self) -> String {
        self.addr.to_string()
    }

    pub fn set_lifetime(&self, lifetime: Duration) {
        self.state.lock().unwrap().lifetime = lifetime;
    }

    pub fn allow_impersonation(&self, target: &str, caller: &str) {
        self.state
            .lock()
            .unwrap()
            .impersonation
            .entry(target.to_string())
            .or_default()
            .insert(caller.to_string());
    }

    pub fn take_requests(&self) -> Vec<String> {
        std::mem::take(&mut self.state.lock().unwrap().requests)
    }

    /// An authorized_user document (what `gcloud auth application-default login` writes)
    /// whose `token_uri` is this fake.
    pub fn authorized_user(&self, refresh_token: &str) -> Value {
        json!({
            "type": "authorized_user",
            "client_id": CLIENT_ID,
            "client_secret": CLIENT_SECRET,
            "refresh_token": refresh_token,
            "token_uri": self.url("/token"),
            "quota_project_id": "winticket-prod",
        })
    }

    /// An external_account document for workload identity federation, with a file- or
    /// URL-sourced subject token, and optionally impersonating a service account.
    pub fn external_account(&self, credential_source: Value, impersonate: Option<&str>) -> Value {
        let mut doc = json!({
            "type": "external_account",
            "audience": AUDIENCE,
            "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
            "token_url": self.url("/v1/token"),
            "credential_source": credential_source,
        });
        if let Some(target) = impersonate {
            doc["service_account_impersonation_url"] =
                json!(self.url(&format!("/v1/projects/-/serviceAccounts/{target}:generateAccessToken")));
        }
        doc
    }

    /// A new service-account key (RSA 2048, generated now) that this fake knows the public
    /// half of: its JSON key file.
    pub fn service_account_key(&self, email: &str, project: &str) -> Value {
        use aws_lc_rs::encoding::AsDer;
        use aws_lc_rs::signature::KeyPair as _;
        let pair = aws_lc_rs::rsa::KeyPair::generate(aws_lc_rs::rsa::KeySize::Rsa2048).unwrap();
        let pkcs8 = AsDer::<aws_lc_rs::encoding::Pkcs8V1Der<'static>>::as_der(&pair).unwrap();
        let b64 = base64::engine::general_purpose::STANDARD.encode(pkcs8.as_ref());
        let mut pem = String::from("-----BEGIN PRIVATE KEY-----\n");
        for line in b64.as_bytes().chunks(64) {
            pem.push_str(std::str::from_utf8(line).unwrap());
            pem.push('\n');
        }
        pem.push_str("-----END PRIVATE KEY-----\n");
        let key_id = format!("{:040x}", fastrand::u128(..));
        self.state
            .lock()
            .unwrap()
            .service_accounts
            .insert(email.to_string(), (key_id.clone(), pair.public_key().as_ref().to_vec()));
        json!({
            "type": "service_account",
            "project_id": project,
            "private_key_id": key_id,
            "private_key": pem,
            "client_email": email,
            "client_id": "100000000000000000001",
            "auth_uri": "https://accounts.google.com/o/oauth2/auth",
            "token_uri": self.url("/token"),
            "universe_domain": "googleapis.com",
        })
    }
}

fn log(s: &mut AuthState, line: String) {
    s.requests.push(line);
}

/// The token endpoint takes a form or, as Google's does, a JSON object.
fn fields(headers: &HeaderMap, body: &str) -> HashMap<String, String> {
    let json = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if json {
        let value: Value = serde_json::from_str(body).unwrap_or(Value::Null);
        value
            .as_object()
            .map(|o| {
                o.iter()
                    .map(|(k, v)| (k.clone(), v.as_str().map_or_else(|| v.to_string(), str::to_string)))
                    .collect()
            })
            .unwrap_or_default()
    } else {
        url::form_urlencoded::parse(body.as_bytes()).into_owned().collect()
    }
}

async fn oauth_token(state: Shared, headers: HeaderMap, body: String) -> Response {
    let form = fields(&headers, &body);
    let mut s = state.lock().unwrap();
    log(
        &mut s,
        format!("POST /token {}", form.get("grant_type").cloned().unwrap_or_default()),
    );
    s.seen_forms.push(form.clone());
    if form.get("grant_type").map(String::as_str) != Some("refresh_token") {
        return oauth_error(StatusCode::BAD_REQUEST, "unsupported_grant_type", "Invalid grant_type.");
    }
    if form.get("client_id").map(String::as_str) != Some(CLIENT_ID)
        || form.get("client_secret").map(String::as_str) != Some(CLIENT_SECRET)
    {
        return oauth_error(
            StatusCode::UNAUTHORIZED,
            "invalid_client",
            "The OAuth client was not found.",
        );
    }
    if form.get("refresh_token").map(String::as_str) != Some(REFRESH_TOKEN) {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_grant",
            "Token has been expired or revoked.",
        );
    }
    let (token, lifetime) = s.issue("user");
    Json(json!({"access_token": token, "expires_in": lifetime.as_secs(), "token_type": "Bearer", "scope": SCOPE}))
        .into_response()
}

async fn sts_token(state: Shared, headers: HeaderMap, body: String) -> Response {
    let form = fields(&headers, &body);
    let mut s = state.lock().unwrap();
    log(&mut s, "POST /v1/token".into());
    s.seen_forms.push(form.clone());
    let field = |k: &str| form.get(k).map(String::as_str).unwrap_or_default();
    if field("grant_type") != "urn:ietf:params:oauth:grant-type:token-exchange"
        || field("requested_token_type") != "urn:ietf:params:oauth:token-type:access_token"
    {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "Invalid grant or requested token type.",
        );
    }
    if field("audience") != AUDIENCE {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_target",
            "The audience is not a workload identity pool provider.",
        );
    }
    if field("subject_token") != SUBJECT_TOKEN {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_grant",
            "The subject token is invalid.",
        );
    }
    // cloud-platform for direct access; iam when the token is only used to impersonate.
    if !field("scope")
        .split(' ')
        .any(|sc| sc == SCOPE || sc == "https://www.googleapis.com/auth/iam")
    {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_scope",
            &format!("The scope {:?} is not allowed.", field("scope")),
        );
    }
    let (token, lifetime) = s.issue("federated");
    Json(json!({
        "access_token": token,
        "issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
        "token_type": "Bearer",
        "expires_in": lifetime.as_secs(),
    }))
    .into_response()
}

async fn subject_token(state: Shared, headers: HeaderMap) -> Response {
    let mut s = state.lock().unwrap();
    log(&mut s, "GET /subject-token".into());
    // What GitHub's OIDC endpoint asks for: a bearer request token.
    if headers.get("authorization").and_then(|v| v.to_str().ok()) != Some("Bearer gh-request-token") {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    Json(json!({"value": SUBJECT_TOKEN})).into_response()
}

async fn metadata_token(state: Shared, headers: HeaderMap) -> Response {
    let silent = {
        let mut s = state.lock().unwrap();
        log(
            &mut s,
            "GET /computeMetadata/v1/instance/service-accounts/default/token".into(),
        );
        s.silent_metadata
    };
    if silent {
        tokio::time::sleep(Duration::from_secs(3600)).await;
    }
    if headers.get("metadata-flavor").and_then(|v| v.to_str().ok()) != Some("Google") {
        return (StatusCode::FORBIDDEN, "Missing Metadata-Flavor:Google header.").into_response();
    }
    let mut s = state.lock().unwrap();
    let (token, lifetime) = s.issue("metadata");
    Json(json!({"access_token": token, "expires_in": lifetime.as_secs(), "token_type": "Bearer"})).into_response()
}

async fn generate_access_token(
    state: Shared,
    Path(target): Path<String>,
    headers: HeaderMap,
    body: String,
) -> Response {
    let mut s = state.lock().unwrap();
    log(&mut s, format!("POST /v1/projects/-/serviceAccounts/{target}"));
    let Some(email) = target.strip_suffix(":generateAccessToken") else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let bearer = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or_default();
    let Some(caller) = s.who(bearer) else {
        return google_error(
            StatusCode::UNAUTHORIZED,
            "Request had invalid authentication credentials.",
        );
    };
    let body: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    if !body["scope"].as_array().is_some_and(|a| a.iter().any(|v| v == SCOPE)) {
        return google_error(StatusCode::BAD_REQUEST, "scope is required");
    }
    // The chain: caller → delegates… → target; each hop must be allowed.
    let mut hops: Vec<String> = body["delegates"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|d| {
                    d.as_str()?
                        .strip_prefix("projects/-/serviceAccounts/")
                        .map(str::to_string)
                })
                .collect()
        })
        .unwrap_or_default();
    hops.push(email.to_string());
    let mut from = caller;
    for hop in &hops {
        if !s.impersonation.get(hop).is_some_and(|callers| callers.contains(&from)) {
            return google_error(
                StatusCode::FORBIDDEN,
                "Permission 'iam.serviceAccounts.getAccessToken' denied on resource (or it may not exist).",
            );
        }
        from = format!("sa:{hop}");
    }
    let (token, lifetime) = s.issue(&format!("impersonated:{email}"));
    let expire = humantime::format_rfc3339_seconds(SystemTime::now() + lifetime).to_string();
    Json(json!({"accessToken": token, "expireTime": expire})).into_response()
}
