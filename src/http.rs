//! HTTP plumbing shared by the cloud API clients: one reqwest client per provider process,
//! and retries with exponential backoff and full jitter on 429, 5xx and connection errors,
//! honouring `Retry-After`. Knows nothing about Terraform.

use std::time::Duration;

use reqwest::{RequestBuilder, Response, StatusCode};

/// How requests are retried.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    /// Attempts in all (1 = no retry).
    pub attempts: u32,
    /// First backoff; doubled each attempt.
    pub base_delay: Duration,
    /// Longest wait between attempts (also caps `Retry-After`).
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            attempts: 5,
            base_delay: Duration::from_millis(200),
            max_delay: Duration::from_secs(30),
        }
    }
}

/// A request that could not be completed.
#[derive(Debug, thiserror::Error)]
pub enum SendError {
    /// Connection, TLS or timeout failure after every retry.
    #[error("{0}")]
    Transport(String),
}

/// Builds a client with the given per-request timeout.
pub fn client(timeout: Duration) -> reqwest::Client {
    client_with_agent(
        timeout,
        concat!("terraform-provider-locality/", env!("CARGO_PKG_VERSION")),
    )
}

/// [`client`] with another User-Agent (the provider's names the Terraform version too).
pub fn client_with_agent(timeout: Duration, user_agent: &str) -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(timeout)
        .connect_timeout(Duration::from_secs(10))
        .user_agent(user_agent)
        .redirect(reqwest::redirect::Policy::custom(same_origin_redirects))
        .build()
        .expect("the TLS backend initialises")
}

/// The cloud APIs answer where they are asked; a redirect is followed only to the same scheme,
/// host and port (at most 5 times). One to another host could carry a request body (307/308)
/// there, and one from https to http would send it in the clear: both are refused, and the
/// error says where it was sent.
fn same_origin_redirects(attempt: reqwest::redirect::Attempt<'_>) -> reqwest::redirect::Action {
    let Some(first) = attempt.previous().first() else {
        return attempt.stop();
    };
    let next = attempt.url();
    let same_origin = next.scheme() == first.scheme()
        && next.host_str() == first.host_str()
        && next.port_or_known_default() == first.port_or_known_default();
    if !same_origin {
        let mut shown = next.clone();
        shown.set_query(None);
        let _ = shown.set_password(None);
        let _ = shown.set_username("");
        let message =
            format!("a redirect to another origin ({shown}) was refused: the API must answer where it is asked");
        return attempt.error(message);
    }
    if attempt.previous().len() > 5 {
        return attempt.error("more than 5 redirects");
    }
    attempt.follow()
}

fn retryable(status: StatusCode) -> bool {
    status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error()
}

/// `Retry-After` in seconds (the HTTP-date form is treated as absent).
fn retry_after(response: &Response) -> Option<Duration> {
    let value = response.headers().get(reqwest::header::RETRY_AFTER)?.to_str().ok()?;
    value.trim().parse::<u64>().ok().map(Duration::from_secs)
}

/// Full jitter: a random wait between 0 and `base * 2^attempt`, capped.
fn backoff(policy: &RetryPolicy, attempt: u32) -> Duration {
    let ceiling = policy
        .base_delay
        .saturating_mul(1 << attempt.min(16))
        .min(policy.max_delay);
    ceiling.mul_f64(fastrand::f64())
}

/// Sends the request built by `build` (called again for each attempt), retrying 429, 5xx and
/// transport errors. Returns the last response (which may still be an error status).
///
/// # Errors
/// [`SendError::Transport`] when every attempt failed to get a response.
pub async fn send(policy: &RetryPolicy, build: impl Fn() -> RequestBuilder) -> Result<Response, SendError> {
    let mut attempt = 0;
    loop {
        let last = attempt + 1 >= policy.attempts;
        match build().send().await {
            Ok(response) if retryable(response.status()) && !last => {
                let wait = retry_after(&response).map_or_else(|| backoff(policy, attempt), |d| d.min(policy.max_delay));
                tracing::debug!(status = %response.status(), wait_ms = wait.as_millis() as u64, "retrying");
                tokio::time::sleep(wait).await;
            }
            Ok(response) => return Ok(response),
            Err(e) if !last => {
                let wait = backoff(policy, attempt);
                tracing::debug!(error = %without_url(&e), wait_ms = wait.as_millis() as u64, "retrying after a transport error");
                tokio::time::sleep(wait).await;
            }
            Err(e) => {
                // What was being done, and where: the method and the URL without its query.
                let request = build().build().ok().map(|r| {
                    let mut url = r.url().clone();
                    url.set_query(None);
                    let _ = url.set_password(None);
                    let _ = url.set_username("");
                    format!("{} {url}: ", r.method())
                });
                return Err(SendError::Transport(format!(
                    "{}{}",
                    request.unwrap_or_default(),
                    without_url(&e)
                )));
            }
        }
        attempt += 1;
    }
}

/// The error text without the URL (query strings could carry identifiers; keep logs lean):
/// what failed (timed out, could not connect) and the innermost cause (DNS, refused, TLS).
pub fn without_url(e: &reqwest::Error) -> String {
    let kind = if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "could not connect"
    } else {
        "request failed"
    };
    let mut source = std::error::Error::source(e);
    let mut detail = String::new();
    while let Some(s) = source {
        detail = s.to_string();
        source = s.source();
    }
    if detail.is_empty() {
        kind.to_string()
    } else {
        format!("{kind}: {detail}")
    }
}

/// A random RFC 4122 version-4 UUID, for idempotency keys such as Google's `requestId`.
pub fn uuid_v4() -> String {
    let mut bytes = [0u8; 16];
    fastrand::fill(&mut bytes);
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex = hex::encode(bytes);
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

/// A base URL must be `https`, unless its host is a loopback address (what tests use).
///
/// # Errors
/// A sentence saying what is wrong and what is allowed.
pub fn check_base_url(url: &str) -> Result<(), String> {
    // Parsed as browsers and reqwest parse it, so the host checked is the host connected to:
    // in `http://127.0.0.1:1@evil.example/` that is evil.example, not 127.0.0.1.
    let parsed = reqwest::Url::parse(url).map_err(|e| {
        format!(
            "{:?} is not an absolute URL ({e}); expected https://host/path.",
            without_userinfo_text(url)
        )
    })?;
    if !parsed.username().is_empty() || parsed.password().is_some() {
        let mut shown = parsed.clone();
        let _ = shown.set_username("");
        let _ = shown.set_password(None);
        return Err(format!(
            "{:?} carries credentials before the host (not shown); give the host only (credentials go in `api_token`/`access_token` or the AWS chain).",
            shown.as_str()
        ));
    }
    let loopback = match parsed.host() {
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => return Err(format!("{url:?} has no host.")),
    };
    match parsed.scheme() {
        "https" => Ok(()),
        "http" if loopback => Ok(()),
        _ => Err(format!(
            "{url:?} must use https; plain http is allowed only for a loopback host (127.0.0.1, ::1, localhost)."
        )),
    }
}

/// `url` as typed, with anything between `//` and the last `@` before the path hidden: an
/// unparseable URL may still carry a password.
fn without_userinfo_text(url: &str) -> String {
    let Some(start) = url.find("//").map(|i| i + 2) else {
        return url.to_string();
    };
    let authority_end = url[start..].find(['/', '?', '#']).map_or(url.len(), |i| start + i);
    match url[start..authority_end].rfind('@') {
        Some(at) => format!("{}…@{}", &url[..start], &url[start + at + 1..]),
        None => url.to_string(),
    }
}
