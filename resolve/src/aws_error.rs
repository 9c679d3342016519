//! AWS errors as one readable sentence, for `locality resolve` and the provider alike: what was
//! being done, then the cause — the service's error code and message, or the chain of causes
//! of a failure before an answer (no credentials found, and where they were looked for; no
//! region; a connection refused). Never the SDK's debug form: no raw response, body or header
//! reaches a user (a Secrets Manager body holds secrets). And the transport rule behind the
//! errors it names: [`guarded_http_client`] refuses any AWS request whose endpoint is not https
//! (or on this host), before it is sent.

use std::error::Error;

use aws_sdk_ssm::error::{ProvideErrorMetadata, SdkError};

/// Where the default credential chain looks, in its order (what "tried" means in a message).
pub const CREDENTIAL_SOURCES: &str = "the environment (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY), \
the profile of the shared files (AWS_PROFILE, else \"default\", in ~/.aws/credentials and ~/.aws/config, \
or AWS_SHARED_CREDENTIALS_FILE and AWS_CONFIG_FILE), web identity (AWS_WEB_IDENTITY_TOKEN_FILE with AWS_ROLE_ARN), \
ECS container credentials (AWS_CONTAINER_CREDENTIALS_RELATIVE_URI or _FULL_URI) and the EC2 instance profile (IMDS)";

/// The sentence for a missing region.
pub const NO_REGION: &str = "no AWS region is set: set AWS_REGION (or AWS_DEFAULT_REGION, or `region` in the \
profile of ~/.aws/config); on EC2 and ECS the region also comes from the instance metadata";

/// The shared files the SDK reads when none are named, as messages list them.
pub const DEFAULT_SHARED_FILES: &str =
    "~/.aws/config, ~/.aws/credentials, AWS_CONFIG_FILE, AWS_SHARED_CREDENTIALS_FILE";

/// The profile `AWS_PROFILE` names (trimmed; `None` when unset or blank).
pub fn env_profile() -> Option<String> {
    let profile = std::env::var("AWS_PROFILE").ok()?;
    let profile = profile.trim();
    (!profile.is_empty()).then(|| profile.to_string())
}

/// Checks that the shared files (`files`, else the SDK's defaults) hold `profile`: without
/// it, the SDK falls through to the next credential source and the error names that one ("IMDS
/// is disabled", "no AWS region is set"). The sentence names the profile, where it came from
/// (`AWS_PROFILE` when `from_env`) and the profiles found; `None` when found.
pub async fn missing_profile(
    profile: &str,
    from_env: bool,
    files: Option<&aws_runtime::env_config::file::EnvConfigFiles>,
) -> Option<String> {
    let defaults = aws_runtime::env_config::file::EnvConfigFiles::default();
    let fs = aws_types::os_shim_internal::Fs::real();
    let env = aws_types::os_shim_internal::Env::real();
    let set = match aws_config::profile::load(&fs, &env, files.unwrap_or(&defaults), None).await {
        Ok(set) => set,
        Err(e) => return Some(format!("The shared AWS files cannot be read: {e}.")),
    };
    if set.get_profile(profile).is_some() {
        return None;
    }
    let mut known: Vec<&str> = set.profiles().collect();
    known.sort_unstable();
    Some(format!(
        "{} is not in the shared config or credentials files ({}); profiles there: {}.",
        if from_env {
            format!("AWS_PROFILE names profile {profile:?}, which")
        } else {
            format!("Profile {profile:?}")
        },
        if files.is_some() {
            "named in the `aws` block".to_string()
        } else {
            DEFAULT_SHARED_FILES.to_string()
        },
        if known.is_empty() {
            "none".to_string()
        } else {
            known.join(", ")
        }
    ))
}

/// The shared files the SDK reads when none are named, each with what named it:
/// `AWS_CONFIG_FILE` (else `~/.aws/config`, from `HOME`) and `AWS_SHARED_CREDENTIALS_FILE`
/// (else `~/.aws/credentials`).
pub fn default_shared_files() -> Vec<(String, std::path::PathBuf)> {
    [true, false].into_iter().filter_map(default_shared_file).collect()
}

/// The shared config file (`config`) or credentials file the SDK reads when none is named, with
/// what named it; `None` when neither the variable nor `HOME` is set.
pub fn default_shared_file(config: bool) -> Option<(String, std::path::PathBuf)> {
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty());
    let (variable, default) = if config {
        ("AWS_CONFIG_FILE", "config")
    } else {
        ("AWS_SHARED_CREDENTIALS_FILE", "credentials")
    };
    match std::env::var_os(variable).filter(|v| !v.is_empty()) {
        Some(value) => {
            let text = value.to_string_lossy();
            let path = match (text.strip_prefix("~/"), &home) {
                (Some(rest), Some(home)) => std::path::Path::new(home).join(rest),
                _ => std::path::PathBuf::from(&value),
            };
            Some((variable.to_string(), path))
        }
        None => home.map(|home| {
            (
                format!("HOME (~/.aws/{default})"),
                std::path::Path::new(&home).join(".aws").join(default),
            )
        }),
    }
}

/// Running as root, why the shared AWS files (`files`: what named each, and its path) must
/// not be read: one that another user owns, could write, or could have put in the way (a
/// directory or link of theirs). Such a file's `credential_process` would run as root, and its
/// `endpoint_url` or `role_arn` would steer root's requests. `None` when not root, or when every
/// file is root's or this user's and closed to others (a missing file is fine).
#[cfg(unix)]
pub fn shared_files_refused(files: &[(String, std::path::PathBuf)]) -> Option<String> {
    if !crate::trusted::is_root() {
        return None;
    }
    for (variable, path) in files {
        let problem = match crate::trusted::open_file(path, false) {
            Ok((file, _)) => crate::trusted::untrusted_file(&file, path),
            // Missing or unreadable: the SDK says so, if it matters.
            Err(e) if matches!(e.refusal, crate::trusted::Refusal::Io(_)) => None,
            Err(e) => Some(e.problem),
        };
        if let Some(problem) = problem {
            return Some(format!(
                "the shared AWS file {} (from {variable}) is refused: {problem}. Running as root, a shared config or credentials file must be owned by root or this user and not writable by others (its credential_process would run as root); fix its owner and mode, or point {variable} at one that is",
                path.display()
            ));
        }
    }
    None
}

/// `{what}: {cause}` for an SDK error.
pub fn describe<E, R>(what: &str, error: &SdkError<E, R>) -> String
where
    E: ProvideErrorMetadata + Error + 'static,
    R: std::fmt::Debug + 'static,
{
    format!("{what}: {}", cause(error))
}

/// One word for an SDK error, for a metrics label (no remote text but the error code, cut to
/// letters, digits, `_`, `.` and `-`): the service's error code (`AccessDeniedException`,
/// `ParameterNotFound`), else `timeout`, `credentials`, `unreachable`, `bad_response` or
/// `aws_error`.
pub fn class<E, R>(error: &SdkError<E, R>) -> String
where
    E: ProvideErrorMetadata + Error + 'static,
    R: std::fmt::Debug + 'static,
{
    let credentials = || {
        let mut next: Option<&(dyn Error + 'static)> = Some(error);
        while let Some(e) = next {
            if e.is::<aws_credential_types::provider::error::CredentialsError>() {
                return true;
            }
            next = e.source();
        }
        false
    };
    match error {
        SdkError::ServiceError(service) => service
            .err()
            .code()
            .map(|code| {
                code.chars()
                    .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
                    .take(64)
                    .collect::<String>()
            })
            .filter(|code| !code.is_empty())
            .unwrap_or_else(|| "service_error".into()),
        SdkError::TimeoutError(_) => "timeout".into(),
        _ if credentials() => "credentials".into(),
        SdkError::DispatchFailure(failure) if failure.is_timeout() => "timeout".into(),
        SdkError::DispatchFailure(failure) if failure.is_io() => "unreachable".into(),
        SdkError::ResponseError(_) => "bad_response".into(),
        _ => "aws_error".into(),
    }
}

/// The cause of an SDK error, without the raw response, in one line: what the service said
/// (its `<Message>` can hold anything, `&#13;` and U+202E among it) goes through
/// [`crate::printable::printable`].
pub fn cause<E, R>(error: &SdkError<E, R>) -> String
where
    E: ProvideErrorMetadata + Error + 'static,
    R: std::fmt::Debug + 'static,
{
    crate::printable::printable(&raw_cause(error))
}

fn raw_cause<E, R>(error: &SdkError<E, R>) -> String
where
    E: ProvideErrorMetadata + Error + 'static,
    R: std::fmt::Debug + 'static,
{
    match error {
        SdkError::ServiceError(service) => {
            let err = service.err();
            match (err.code(), err.message()) {
                (Some(code), Some(message)) => format!("{code}: {message}"),
                (Some(code), None) => code.to_string(),
                (None, Some(message)) => message.to_string(),
                // An answer that could not be read (a badly typed field): the parser's words,
                // which name the place, never the content.
                (None, None) => format!("the answer could not be read: {}", chain(err)),
            }
        }
        // (A timeout's chain says which limit: "request has timed out: … after 3s".)
        other => chain(other),
    }
}

/// The chain of causes of `error`, joined with `: ` (credential errors said in full).
pub fn chain(error: &(dyn Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut next: Option<&(dyn Error + 'static)> = Some(error);
    while let Some(e) = next {
        if let Some(credentials) = e.downcast_ref::<aws_credential_types::provider::error::CredentialsError>() {
            parts.push(credentials_problem(credentials));
            break;
        }
        let text = e.to_string();
        // SDK layers repeat their cause in their own text, or say only what kind of failure
        // it was ("other", "io error", "user error"): keep one.
        let kind_only = matches!(text.as_str(), "other" | "io error" | "user error");
        if !text.is_empty() && !kind_only && !parts.last().is_some_and(|p| p.contains(&text)) {
            parts.push(text);
        }
        next = e.source();
    }
    if parts.is_empty() {
        "an error without a description".to_string()
    } else {
        parts.join(": ")
    }
}

fn credentials_problem(error: &aws_credential_types::provider::error::CredentialsError) -> String {
    use aws_credential_types::provider::error::CredentialsError as C;
    match error {
        C::CredentialsNotLoaded(_) => format!("no AWS credentials were found; tried, in order: {CREDENTIAL_SOURCES}"),
        C::ProviderTimedOut(_) => "the AWS credentials did not arrive in time".to_string(),
        other => {
            let mut text = format!("the AWS credentials could not be loaded: {other}");
            if let Some(source) = other.source() {
                text.push_str(": ");
                text.push_str(&chain(source));
            }
            text
        }
    }
}

/// The AWS configuration every command uses: the shared files checked (running as root, files
/// another user could have written are refused), a missing profile said as such, every request
/// through [`guarded_http_client`], a region, and credentials that load.
///
/// # Errors
/// The error's class (`untrusted_file`, `profile_not_found`, `no_region`, `credentials`,
/// `timeout`) and the sentence.
pub async fn checked_config() -> Result<aws_config::SdkConfig, (&'static str, String)> {
    #[cfg(unix)]
    if let Some(problem) = shared_files_refused(&default_shared_files()) {
        return Err(("untrusted_file", problem));
    }
    if let Some(profile) = env_profile() {
        if let Some(problem) = missing_profile(&profile, true, None).await {
            return Err(("profile_not_found", problem));
        }
    }
    let config = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .http_client(guarded_http_client())
        .load()
        .await;
    if config.region().is_none() {
        return Err(("no_region", NO_REGION.to_string()));
    }
    if let Some(credentials) = config.credentials_provider() {
        use aws_credential_types::provider::error::CredentialsError;
        use aws_credential_types::provider::ProvideCredentials as _;
        if let Err(e) = credentials.provide_credentials().await {
            let kind = if matches!(e, CredentialsError::ProviderTimedOut(_)) {
                "timeout"
            } else {
                "credentials"
            };
            return Err((kind, chain(&e)));
        }
    }
    Ok(config)
}

/// The SDK's HTTPS client behind a guard that refuses, before anything is sent, a request whose
/// endpoint is neither https nor on this host (loopback, or link-local: the instance and
/// container metadata services) — whatever set the endpoint (`endpoint_url`,
/// `AWS_ENDPOINT_URL`, `AWS_ENDPOINT_URL_<SERVICE>`, `endpoint_url` in the shared config file)
/// and whatever makes the request (the service clients, and the credential providers: STS for
/// roles and web identity, SSO). A signed request carries the session token and the payload (a
/// secret's value); a token request carries the web identity token. Give it to the config
/// loader (`http_client`).
///
/// `HTTP_PROXY`, `HTTPS_PROXY` and `NO_PROXY` are honoured as usual, except for endpoints on
/// this host: a request to a loopback or link-local address (IMDS, the ECS and EKS Pod Identity
/// credential endpoints, with `AWS_CONTAINER_AUTHORIZATION_TOKEN`) never goes through a proxy,
/// as the AWS SDKs do for their metadata endpoints.
pub fn guarded_http_client() -> aws_smithy_runtime_api::client::http::SharedHttpClient {
    use aws_smithy_http_client::proxy::ProxyConfig;
    aws_smithy_runtime_api::client::http::SharedHttpClient::new(GuardedClient {
        proxied: https_client(ProxyConfig::from_env()),
        direct: https_client(ProxyConfig::disabled()),
    })
}

/// What the SDK builds by default (rustls with aws-lc), with this proxy configuration.
fn https_client(
    proxy: aws_smithy_http_client::proxy::ProxyConfig,
) -> aws_smithy_runtime_api::client::http::SharedHttpClient {
    use aws_smithy_http_client::{tls, ConnectorBuilder};
    aws_smithy_http_client::Builder::new().build_with_connector_fn(move |settings, components| {
        let mut connector =
            ConnectorBuilder::default().tls_provider(tls::Provider::Rustls(tls::rustls_provider::CryptoMode::AwsLc));
        connector.set_connector_settings(settings.cloned());
        if let Some(components) = components {
            connector.set_sleep_impl(components.sleep_impl());
        }
        connector.set_proxy_config(Some(proxy.clone()));
        connector.build()
    })
}

#[derive(Debug)]
struct GuardedClient {
    /// Through the environment's proxy, if any.
    proxied: aws_smithy_runtime_api::client::http::SharedHttpClient,
    /// Never through a proxy: for endpoints on this host.
    direct: aws_smithy_runtime_api::client::http::SharedHttpClient,
}

impl aws_smithy_runtime_api::client::http::HttpClient for GuardedClient {
    fn http_connector(
        &self,
        settings: &aws_smithy_runtime_api::client::http::HttpConnectorSettings,
        components: &aws_smithy_runtime_api::client::runtime_components::RuntimeComponents,
    ) -> aws_smithy_runtime_api::client::http::SharedHttpConnector {
        aws_smithy_runtime_api::client::http::SharedHttpConnector::new(GuardedConnector {
            proxied: self.proxied.http_connector(settings, components),
            direct: self.direct.http_connector(settings, components),
        })
    }
}

#[derive(Debug)]
struct GuardedConnector {
    proxied: aws_smithy_runtime_api::client::http::SharedHttpConnector,
    direct: aws_smithy_runtime_api::client::http::SharedHttpConnector,
}

impl aws_smithy_runtime_api::client::http::HttpConnector for GuardedConnector {
    fn call(
        &self,
        request: aws_smithy_runtime_api::client::orchestrator::HttpRequest,
    ) -> aws_smithy_runtime_api::client::http::HttpConnectorFuture {
        match check_endpoint_uri(request.uri()) {
            Ok(()) => {
                // A failure before an answer names the endpoint it could not reach.
                let endpoint = endpoint_of(request.uri());
                let connector = if on_this_host(request.uri()) {
                    &self.direct
                } else {
                    &self.proxied
                };
                let call = connector.call(request);
                aws_smithy_runtime_api::client::http::HttpConnectorFuture::new(async move {
                    call.await.map_err(|e| at_endpoint(e, endpoint))
                })
            }
            Err(problem) => aws_smithy_runtime_api::client::http::HttpConnectorFuture::ready(Err(
                aws_smithy_runtime_api::client::result::ConnectorError::user(problem.into()),
            )),
        }
    }
}

/// `scheme://host:port` of a request URI (no user-info, path or query).
fn endpoint_of(uri: &str) -> String {
    let (scheme, rest) = uri.split_once("://").unwrap_or(("", uri));
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    format!("{scheme}://{host_port}")
}

/// A connector error (no answer: refused, reset, timed out, TLS) that names the endpoint.
#[derive(Debug)]
struct Unreached {
    endpoint: String,
    cause: aws_smithy_runtime_api::client::result::ConnectorError,
}

impl std::fmt::Display for Unreached {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "could not reach {}", self.endpoint)
    }
}

impl Error for Unreached {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        Some(&self.cause)
    }
}

/// `error` wrapped so that it names `endpoint`, of the same kind (the SDK retries by kind).
fn at_endpoint(
    error: aws_smithy_runtime_api::client::result::ConnectorError,
    endpoint: String,
) -> aws_smithy_runtime_api::client::result::ConnectorError {
    use aws_smithy_runtime_api::client::result::ConnectorError;
    let (timeout, io, user) = (error.is_timeout(), error.is_io(), error.is_user());
    let kind = error.as_other();
    let wrapped = Box::new(Unreached { endpoint, cause: error });
    if timeout {
        ConnectorError::timeout(wrapped)
    } else if io {
        ConnectorError::io(wrapped)
    } else if user {
        ConnectorError::user(wrapped)
    } else {
        ConnectorError::other(wrapped, kind)
    }
}

/// The https-or-loopback rule on a request URI: `Err` with the sentence to show.
///
/// # Errors
/// A plain-http (or other non-https) URI whose host is not loopback.
pub fn check_endpoint_uri(uri: &str) -> Result<(), String> {
    let (scheme, rest) = uri.split_once("://").unwrap_or(("", uri));
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    if scheme.eq_ignore_ascii_case("https") || on_this_host(uri) {
        return Ok(());
    }
    Err(format!(
        "the AWS endpoint {scheme}://{host_port} is refused: AWS requests carry credentials and values, so an endpoint \
         must use https (plain http only for a loopback or link-local host); check endpoint_url, AWS_ENDPOINT_URL, \
         AWS_ENDPOINT_URL_<SERVICE> and endpoint_url in the shared config file"
    ))
}

/// Whether a request URI's host is on this host: `localhost`, a loopback address, or a
/// link-local one (IMDS: 169.254.169.254 and fd00:ec2::254; the container credential endpoints
/// 169.254.170.2 and 169.254.170.23) — reached directly, never through a proxy.
pub fn on_this_host(uri: &str) -> bool {
    let rest = uri.split_once("://").map_or(uri, |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = if let Some(inner) = host_port.strip_prefix('[') {
        inner.split(']').next().unwrap_or_default()
    } else {
        host_port.rsplit_once(':').map_or(host_port, |(h, _)| h)
    };
    // Loopback, and link-local: IMDS (169.254.169.254, fd00:ec2::254 is its IPv6 address) and
    // the container credential endpoints (169.254.170.2, 169.254.170.23) speak plain http by
    // design, and a link-local address never leaves the host's link.
    let imds_v6 = std::net::Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254);
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<std::net::IpAddr>().is_ok_and(|ip| match ip {
            std::net::IpAddr::V4(v4) => v4.is_loopback() || v4.is_link_local(),
            std::net::IpAddr::V6(v6) => v6.is_loopback() || (v6.segments()[0] & 0xffc0) == 0xfe80 || v6 == imds_v6,
        })
}

#[cfg(test)]
mod tests {
    use super::{check_endpoint_uri, on_this_host};

    #[test]
    fn https_or_loopback() {
        for ok in [
            "https://ssm.ap-northeast-1.amazonaws.com/",
            "http://127.0.0.1:5000/",
            "http://localhost/x",
            "http://[::1]:80/",
        ] {
            assert!(check_endpoint_uri(ok).is_ok(), "{ok}");
        }
        assert!(check_endpoint_uri("http://169.254.169.254/latest/api/token").is_ok());
        assert!(check_endpoint_uri("http://[fd00:ec2::254]/latest").is_ok());
        // Those go direct, never through a proxy; anything else may.
        for direct in [
            "http://169.254.170.2/v2/credentials/x",
            "http://169.254.170.23/v1/credentials",
            "http://169.254.169.254/latest/api/token",
            "http://[fd00:ec2::254]/latest",
            "http://127.0.0.1:9/creds",
            "http://localhost:9/creds",
            "https://user@[::1]:443/",
        ] {
            assert!(on_this_host(direct), "{direct}");
        }
        for proxied in [
            "https://ssm.ap-northeast-1.amazonaws.com/",
            "https://169.254.170.2.evil.example/",
        ] {
            assert!(!on_this_host(proxied), "{proxied}");
        }
        for bad in [
            "http://0.0.0.0:1/",
            "http://10.0.0.1:80/",
            "http://127.0.0.1.evil.example/",
            "http://user:pw@evil.example/",
            "ftp://x/",
        ] {
            let problem = check_endpoint_uri(bad).unwrap_err();
            assert!(!problem.contains("pw@"), "{problem}");
        }
    }
}
