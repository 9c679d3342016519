//! Google Cloud credentials for the Compute client, as the official provider takes them: a
//! static access token; a credentials JSON (service-account key, gcloud's `authorized_user`
//! file, workload identity federation's `external_account`, gcloud's
//! `impersonated_service_account`); or Application Default Credentials
//! (`GOOGLE_APPLICATION_CREDENTIALS`, gcloud's well-known file, then the metadata server,
//! which honours `GCE_METADATA_HOST`). Every JSON and ADC path goes through Google's own
//! library, `google-cloud-auth`, which caches its tokens and refreshes them before they expire.
//!
//! Impersonation (`impersonate_service_account`) is done here, on top of any of those: an IAM
//! Credentials `generateAccessToken` call with the source's token, cached until shortly before
//! the token it returns expires. (The library's own impersonation builder takes no endpoint, so
//! it could not be pointed at anything but Google; this one takes the base URL.)
//!
//! Knows nothing about Terraform. Tokens are [`Secret`]s; errors never carry them.

use std::time::{Duration, Instant, SystemTime};

use google_cloud_auth::credentials::{self as gauth, AccessTokenCredentials};
use serde_json::{json, Value as Json};

use super::super::secret::Secret;
use crate::http::{self, RetryPolicy};

/// The OAuth scope every token is requested with.
pub const CLOUD_PLATFORM_SCOPE: &str = "https://www.googleapis.com/auth/cloud-platform";

/// The IAM Credentials API's base URL.
pub const IAM_CREDENTIALS_DEFAULT_BASE_URL: &str = "https://iamcredentials.googleapis.com/v1";

/// The credential types a credentials JSON may have (its `type`).
pub const CREDENTIAL_TYPES: [&str; 4] = [
    "service_account",
    "authorized_user",
    "external_account",
    "impersonated_service_account",
];

/// Where the source token comes from.
#[derive(Debug, Clone)]
pub enum CredentialsSource {
    /// A static OAuth access token (it is not refreshed).
    AccessToken(Secret),
    /// A credentials JSON document; `origin` says where it came from, for messages
    /// (`` `credentials` (file /path/key.json) ``).
    Json {
        /// The document.
        content: Secret,
        /// Where it came from.
        origin: String,
    },
    /// Application Default Credentials.
    ApplicationDefault,
}

/// A service account to impersonate with the source's token.
#[derive(Debug, Clone)]
pub struct Impersonation {
    /// The target service account's email.
    pub service_account: String,
    /// The delegation chain (service account emails), if any.
    pub delegates: Vec<String>,
    /// The IAM Credentials API's base URL.
    pub base_url: String,
}

/// How the client gets its tokens.
#[derive(Debug, Clone)]
pub struct AuthSettings {
    /// The source credentials.
    pub source: CredentialsSource,
    /// Impersonate this service account with them.
    pub impersonation: Option<Impersonation>,
    /// How long getting one token may take (a silent metadata server or token endpoint).
    pub timeout: Duration,
}

/// Credentials that could not be loaded, or a token that could not be obtained. The message
/// says what was tried and what to set; it never carries a credential.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct AuthError(pub String);

/// What a credentials JSON is: its type and the project it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CredentialsInfo {
    /// `type`: one of [`CREDENTIAL_TYPES`].
    pub kind: String,
    /// `project_id`, where the document has one (service-account keys do).
    pub project_id: Option<String>,
}

/// Checks a credentials JSON offline: a JSON object of a known `type` with that type's
/// required fields.
///
/// # Errors
/// A sentence saying what is wrong and what is expected (never the content).
pub fn inspect_credentials(content: &str) -> Result<CredentialsInfo, String> {
    let json: Json = serde_json::from_str(content).map_err(|e| {
        format!(
            "is not JSON (line {}, column {}): give the path of a credentials JSON file or its content.",
            e.line(),
            e.column()
        )
    })?;
    let Some(object) = json.as_object() else {
        return Err("is not a JSON object: a credentials file is an object with a `type`.".into());
    };
    let kind = match object.get("type").and_then(Json::as_str) {
        Some(kind) if CREDENTIAL_TYPES.contains(&kind) => kind,
        Some(other) => {
            let shown: String = other.chars().take(40).collect();
            return Err(format!(
                "has the credential type {shown:?}, which is not supported: expected {}.",
                expected_types()
            ));
        }
        None => return Err(format!("has no `type`: expected {}.", expected_types())),
    };
    let required: &[&str] = match kind {
        "service_account" => &["client_email", "private_key"],
        "authorized_user" => &["client_id", "client_secret", "refresh_token"],
        "external_account" => &["audience", "subject_token_type", "token_url", "credential_source"],
        _ => &["source_credentials", "service_account_impersonation_url"],
    };
    let missing: Vec<&str> = required
        .iter()
        .copied()
        .filter(|field| object.get(*field).is_none_or(|v| v.is_null() || v.as_str() == Some("")))
        .collect();
    if !missing.is_empty() {
        return Err(format!("is a {kind} credential without {}.", missing.join(", ")));
    }
    check_endpoints(object, "")?;
    if kind == "service_account"
        && !object
            .get("private_key")
            .and_then(Json::as_str)
            .is_some_and(|k| k.contains("-----BEGIN PRIVATE KEY-----"))
    {
        return Err(
            "is a service_account key whose private_key is not a PEM PKCS#8 key (-----BEGIN PRIVATE KEY-----); download a new JSON key."
                .into(),
        );
    }
    Ok(CredentialsInfo {
        kind: kind.to_string(),
        project_id: object
            .get("project_id")
            .and_then(Json::as_str)
            .filter(|p| !p.is_empty())
            .map(str::to_string),
    })
}

/// The fields that name where a credentials file sends refresh tokens, client secrets, signed
/// assertions and subject tokens.
const TOKEN_ENDPOINTS: [&str; 3] = ["token_uri", "token_url", "service_account_impersonation_url"];

/// The URLs an `external_account`'s `credential_source` fetches from (the subject token, an
/// AWS region, an IMDSv2 session token). Its `regional_cred_verification_url` is a template
/// (`https://sts.{region}.amazonaws.com…`) written into the subject token, not fetched.
const SOURCE_URLS: [&str; 3] = ["url", "region_url", "imdsv2_session_token_url"];

/// Applies the https-or-loopback rule of every base URL to the endpoints a credentials file
/// names, at any depth of `source_credentials` (an impersonated account's source may itself
/// be an `external_account` or an `external_account_authorized_user`), before any request:
/// the library takes the file as it is. A `credential_source` URL may also be plain http to
/// the link-local metadata address (169.254.169.254, `[fd00:ec2::254]`): that is its design.
fn check_endpoints(object: &serde_json::Map<String, Json>, path: &str) -> Result<(), String> {
    for field in TOKEN_ENDPOINTS {
        if let Some(value) = object.get(field) {
            let url = value
                .as_str()
                .ok_or_else(|| format!("has a {path}{field} that is not a string."))?;
            crate::http::check_base_url(url).map_err(|problem| format!("has {path}{field}: {problem}"))?;
        }
    }
    if let Some(source) = object.get("credential_source").and_then(Json::as_object) {
        for field in SOURCE_URLS {
            let Some(value) = source.get(field) else { continue };
            let url = value
                .as_str()
                .ok_or_else(|| format!("has a {path}credential_source.{field} that is not a string."))?;
            if !is_metadata_http(url) {
                crate::http::check_base_url(url)
                    .map_err(|problem| format!("has {path}credential_source.{field}: {problem} (or the metadata address 169.254.169.254 or [fd00:ec2::254] over http)"))?;
            }
        }
    }
    match object.get("source_credentials") {
        Some(Json::Object(nested)) => check_endpoints(nested, &format!("{path}source_credentials.")),
        _ => Ok(()),
    }
}

/// `http://169.254.169.254/…` or `http://[fd00:ec2::254]/…`: the cloud metadata endpoint an
/// external account's credential source reads by design, with nothing secret sent to it.
fn is_metadata_http(url: &str) -> bool {
    let Ok(parsed) = reqwest::Url::parse(url) else {
        return false;
    };
    let metadata = match parsed.host() {
        Some(url::Host::Ipv4(ip)) => ip == std::net::Ipv4Addr::new(169, 254, 169, 254),
        Some(url::Host::Ipv6(ip)) => ip == std::net::Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254),
        _ => false,
    };
    metadata && parsed.scheme() == "http" && parsed.username().is_empty() && parsed.password().is_none()
}

fn expected_types() -> String {
    CREDENTIAL_TYPES.map(|t| format!("\"{t}\"")).join(", ")
}

/// Where Application Default Credentials come from on this machine, as the library looks:
/// `GOOGLE_APPLICATION_CREDENTIALS`, else gcloud's well-known file, else the metadata server.
pub fn application_default_origin() -> String {
    if let Some(path) = std::env::var_os("GOOGLE_APPLICATION_CREDENTIALS") {
        return format!(
            "GOOGLE_APPLICATION_CREDENTIALS ({})",
            std::path::Path::new(&path).display()
        );
    }
    if let Some(path) = well_known_file().filter(|p| p.exists()) {
        return format!("gcloud's application-default credentials ({})", path.display());
    }
    let host = std::env::var("GCE_METADATA_HOST").unwrap_or_else(|_| "metadata.google.internal".into());
    format!("the metadata server ({host})")
}

/// gcloud's application-default credentials file.
pub fn well_known_file() -> Option<std::path::PathBuf> {
    std::env::var_os("HOME")
        .map(|home| std::path::PathBuf::from(home).join(".config/gcloud/application_default_credentials.json"))
}

enum Source {
    Static(Secret),
    Library {
        credentials: AccessTokenCredentials,
        origin: String,
    },
}

struct Impersonator {
    url: String,
    service_account: String,
    delegates: Vec<String>,
    http: reqwest::Client,
    retry: RetryPolicy,
    cached: tokio::sync::Mutex<Option<(Secret, Instant)>>,
}

/// A source of access tokens for Google APIs.
pub struct GoogleAuth {
    source: Source,
    impersonation: Option<Impersonator>,
    timeout: Duration,
}

impl std::fmt::Debug for GoogleAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GoogleAuth")
            .field("origin", &self.origin())
            .finish_non_exhaustive()
    }
}

/// An error and its sources, one line (the library's errors keep the HTTP detail in sources).
fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let more = s.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = s.source();
    }
    text
}

fn build_from_json(json: Json) -> Result<AccessTokenCredentials, google_cloud_auth::build_errors::Error> {
    use google_cloud_auth::credentials::{external_account, impersonated, service_account, user_account};
    let scopes = [CLOUD_PLATFORM_SCOPE];
    match json.get("type").and_then(Json::as_str).unwrap_or_default() {
        "service_account" => service_account::Builder::new(json)
            .with_access_specifier(service_account::AccessSpecifier::from_scopes(scopes))
            .build_access_token_credentials(),
        "authorized_user" => user_account::Builder::new(json)
            .with_scopes(scopes)
            .build_access_token_credentials(),
        "external_account" => external_account::Builder::new(json)
            .with_scopes(scopes)
            .build_access_token_credentials(),
        _ => impersonated::Builder::new(json)
            .with_scopes(scopes)
            .build_access_token_credentials(),
    }
}

impl GoogleAuth {
    /// A static access token, used as it is.
    pub fn access_token(token: Secret) -> GoogleAuth {
        GoogleAuth {
            source: Source::Static(token),
            impersonation: None,
            timeout: Duration::from_secs(60),
        }
    }

    /// Loads the credentials. Runs inside a tokio runtime: the library starts refreshing
    /// tokens in the background at once.
    ///
    /// # Errors
    /// [`AuthError`] when the credentials cannot be loaded (a missing ADC file, a malformed
    /// document).
    pub fn new(settings: &AuthSettings, http: reqwest::Client) -> Result<GoogleAuth, AuthError> {
        let source = match &settings.source {
            CredentialsSource::AccessToken(token) => Source::Static(token.clone()),
            CredentialsSource::Json { content, origin } => {
                inspect_credentials(content.expose()).map_err(|problem| AuthError(format!("{origin} {problem}")))?;
                let json: Json =
                    serde_json::from_str(content.expose()).map_err(|e| AuthError(format!("{origin}: {e}")))?;
                let credentials = build_from_json(json)
                    .map_err(|e| AuthError(format!("{origin} could not be loaded: {}", chain(&e))))?;
                Source::Library {
                    credentials,
                    origin: origin.clone(),
                }
            }
            CredentialsSource::ApplicationDefault => {
                let origin = format!("Application Default Credentials from {}", application_default_origin());
                let credentials = gauth::Builder::default()
                    .with_scopes([CLOUD_PLATFORM_SCOPE])
                    .build_access_token_credentials()
                    .map_err(|e| AuthError(format!("{origin} could not be loaded: {}", chain(&e))))?;
                Source::Library { credentials, origin }
            }
        };
        let impersonation = settings.impersonation.as_ref().map(|target| Impersonator {
            url: format!(
                "{}/projects/-/serviceAccounts/{}:generateAccessToken",
                target.base_url.trim_end_matches('/'),
                target.service_account
            ),
            service_account: target.service_account.clone(),
            delegates: target.delegates.clone(),
            http,
            retry: RetryPolicy::default(),
            cached: tokio::sync::Mutex::new(None),
        });
        Ok(GoogleAuth {
            source,
            impersonation,
            timeout: settings.timeout,
        })
    }

    /// Where the tokens come from, for messages and logs.
    pub fn origin(&self) -> String {
        let source = match &self.source {
            Source::Static(_) => "the access token".to_string(),
            Source::Library { origin, .. } => origin.clone(),
        };
        match &self.impersonation {
            Some(target) => format!("{source}, impersonating {}", target.service_account),
            None => source,
        }
    }

    /// An access token for the API: cached while it is valid, refreshed before it expires.
    ///
    /// # Errors
    /// [`AuthError`] saying which credentials failed and how (a refused refresh token, a
    /// metadata server that does not answer, a denied impersonation).
    pub async fn token(&self) -> Result<Secret, AuthError> {
        match &self.impersonation {
            None => self.source_token().await,
            Some(target) => {
                let mut cached = target.cached.lock().await;
                if let Some((token, refresh_at)) = cached.as_ref() {
                    if Instant::now() < *refresh_at {
                        return Ok(token.clone());
                    }
                }
                let source = self.source_token().await?;
                let fresh = tokio::time::timeout(self.timeout, target.generate(&source))
                    .await
                    .map_err(|_| {
                        AuthError(format!(
                            "impersonating {}: the IAM Credentials API did not answer within {} s.",
                            target.service_account,
                            self.timeout.as_secs()
                        ))
                    })??;
                let token = fresh.0.clone();
                *cached = Some(fresh);
                Ok(token)
            }
        }
    }

    async fn source_token(&self) -> Result<Secret, AuthError> {
        match &self.source {
            Source::Static(token) => Ok(token.clone()),
            Source::Library { credentials, origin } => {
                match tokio::time::timeout(self.timeout, credentials.access_token()).await {
                    Ok(Ok(token)) => Ok(Secret::new(token.token)),
                    Ok(Err(e)) => Err(AuthError(format!(
                        "No Google access token from {origin}: {}.{}",
                        chain(&e),
                        hint(origin)
                    ))),
                    Err(_) => Err(AuthError(format!(
                        "No Google access token from {origin}: no answer within {} s.{}",
                        self.timeout.as_secs(),
                        hint(origin)
                    ))),
                }
            }
        }
    }
}

/// What to do when the metadata server was the last resort and failed.
fn hint(origin: &str) -> &'static str {
    if origin.contains("the metadata server") {
        " Outside Google Cloud, give the provider credentials: `credentials` in the provider's `google` block (or \
         GOOGLE_CREDENTIALS), GOOGLE_APPLICATION_CREDENTIALS, `gcloud auth application-default login`, or \
         `access_token` (or GOOGLE_OAUTH_ACCESS_TOKEN)."
    } else {
        ""
    }
}

impl Impersonator {
    /// `generateAccessToken` with the source's token: the new token and when to refresh it.
    async fn generate(&self, source: &Secret) -> Result<(Secret, Instant), AuthError> {
        let body = json!({
            "scope": [CLOUD_PLATFORM_SCOPE],
            "delegates": self.delegates.iter().map(|d| format!("projects/-/serviceAccounts/{d}")).collect::<Vec<_>>(),
            "lifetime": "3600s",
        });
        let who = &self.service_account;
        let response = http::send(&self.retry, || {
            self.http.post(&self.url).bearer_auth(source.expose()).json(&body)
        })
        .await
        .map_err(|e| {
            AuthError(format!(
                "impersonating {who}: the IAM Credentials API could not be reached: {e}."
            ))
        })?;
        let status = response.status();
        let text = response.text().await.unwrap_or_default();
        if !status.is_success() {
            let message = serde_json::from_str::<Json>(&text)
                .ok()
                .and_then(|j| j.pointer("/error/message").and_then(Json::as_str).map(str::to_string))
                .unwrap_or_else(|| text.chars().take(200).collect());
            let advice = if status == reqwest::StatusCode::FORBIDDEN || status == reqwest::StatusCode::UNAUTHORIZED {
                format!(
                    " The source credentials need roles/iam.serviceAccountTokenCreator (iam.serviceAccounts.getAccessToken) on {who}{}.",
                    if self.delegates.is_empty() { "" } else { " and on each delegate" }
                )
            } else {
                String::new()
            };
            return Err(AuthError(format!(
                "Impersonating {who} was refused: HTTP {} {message}.{advice}",
                status.as_u16()
            )));
        }
        let parsed: Json = serde_json::from_str(&text).map_err(|_| {
            AuthError(format!(
                "impersonating {who}: the IAM Credentials API answered something that is not JSON."
            ))
        })?;
        let token = parsed
            .get("accessToken")
            .and_then(Json::as_str)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| AuthError(format!("impersonating {who}: the answer has no accessToken.")))?;
        let lifetime = parsed
            .get("expireTime")
            .and_then(Json::as_str)
            .and_then(|t| humantime::parse_rfc3339_weak(t).ok())
            .and_then(|at| at.duration_since(SystemTime::now()).ok())
            .unwrap_or(Duration::from_secs(300));
        Ok((Secret::new(token), Instant::now() + lifetime - refresh_margin(lifetime)))
    }
}

/// How long before a token expires it is replaced: 5 minutes, or a quarter of a short lifetime.
fn refresh_margin(lifetime: Duration) -> Duration {
    Duration::from_secs(300).min(lifetime / 4)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_json_is_checked_without_echoing_it() {
        let err = inspect_credentials("{not json secret-value").unwrap_err();
        assert!(err.contains("is not JSON") && !err.contains("secret-value"), "{err}");
        let err = inspect_credentials(r#"{"type":"gdch_service_account","x":"secret-value"}"#).unwrap_err();
        assert!(
            err.contains("not supported") && err.contains("\"external_account\""),
            "{err}"
        );
        let err = inspect_credentials(r#"{"type":"authorized_user","client_id":"a"}"#).unwrap_err();
        assert!(err.contains("client_secret, refresh_token"), "{err}");
        let err =
            inspect_credentials(r#"{"type":"service_account","client_email":"a@b","private_key":"RSA secret-value"}"#)
                .unwrap_err();
        assert!(err.contains("PKCS#8") && !err.contains("secret-value"), "{err}");
        let ok = inspect_credentials(
            r#"{"type":"service_account","client_email":"a@b","private_key":"-----BEGIN PRIVATE KEY-----\n","project_id":"p1"}"#,
        )
        .unwrap();
        assert_eq!(ok.project_id.as_deref(), Some("p1"));
        assert!(inspect_credentials("[]").unwrap_err().contains("not a JSON object"));
        // Token endpoints at any depth of source_credentials; metadata URLs over http allowed.
        let impersonated = |source: Json| {
            json!({"type": "impersonated_service_account", "service_account_impersonation_url": "https://iamcredentials.googleapis.com/v1/projects/-/serviceAccounts/a@b:generateAccessToken", "source_credentials": source})
            .to_string()
        };
        let authorized_user = json!({"type": "external_account_authorized_user", "audience": "a", "client_id": "c", "client_secret": "s", "refresh_token": "r", "token_url": "http://sts.example/v1/oauthtoken"});
        let err = inspect_credentials(&impersonated(authorized_user.clone())).unwrap_err();
        assert!(
            err.starts_with("has source_credentials.token_url: ") && err.contains("must use https"),
            "{err}"
        );
        let deeper = json!({"type": "impersonated_service_account", "service_account_impersonation_url": "https://iam.example/x", "source_credentials": authorized_user});
        let err = inspect_credentials(&impersonated(deeper)).unwrap_err();
        assert!(
            err.starts_with("has source_credentials.source_credentials.token_url: "),
            "{err}"
        );
        let aws = |url: &str| {
            json!({"type": "external_account", "audience": "a", "subject_token_type": "t", "token_url": "https://sts.googleapis.com/v1/token",
                   "credential_source": {"environment_id": "aws1", "region_url": url, "url": url, "regional_cred_verification_url": "https://sts.{region}.amazonaws.com?Action=GetCallerIdentity&Version=2011-06-15"}})
        };
        for metadata in [
            "http://169.254.169.254/latest/meta-data/placement/availability-zone",
            "http://[fd00:ec2::254]/latest/meta-data/iam/security-credentials",
        ] {
            assert!(inspect_credentials(&impersonated(aws(metadata))).is_ok(), "{metadata}");
        }
        let err = inspect_credentials(&impersonated(aws("http://token.example/subject"))).unwrap_err();
        assert!(
            err.starts_with("has source_credentials.credential_source.url: "),
            "{err}"
        );
        assert!(inspect_credentials("{\"type\":\"\u{e9}\u{e9}\"}").is_err());
    }

    #[test]
    fn refresh_margin_is_five_minutes_or_a_quarter() {
        assert_eq!(refresh_margin(Duration::from_secs(3600)), Duration::from_secs(300));
        assert_eq!(refresh_margin(Duration::from_secs(40)), Duration::from_secs(10));
    }
}
