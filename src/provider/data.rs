//! [`ProviderData`]: what every resource and data source receives once the provider is
//! configured: the resolved configuration and the API clients, built lazily and shared by the
//! whole provider process. A missing credential is a [`NotConfigured`] error, raised here only.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use super::aws::{Aws, AwsSettings, RoleSettings};
use super::cloudflare::{Cloudflare, Zones};
use super::config::ProviderConfig;
use super::google::auth::{AuthSettings, CredentialsSource, Impersonation};
use super::google::{AuthError, Compute, GoogleAuth};

/// How long one Cloudflare or Google API request may take (each retry gets as long again).
pub(crate) const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// A cloud a resource needs but the provider has no credentials for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum NotConfigured {
    /// No Cloudflare API token.
    #[error(
        "No Cloudflare credentials: set `api_token` in the provider's `cloudflare` block, or the \
         CLOUDFLARE_API_TOKEN environment variable (a token with Zone Settings edit permission)."
    )]
    Cloudflare,
}

impl NotConfigured {
    /// The diagnostic's headline.
    pub fn summary(&self) -> &'static str {
        match self {
            NotConfigured::Cloudflare => "Cloudflare is not configured",
        }
    }
}

/// Backend-service name → (weight in Terraform's state, live weight).
pub(crate) type MovedWeights = BTreeMap<String, (u32, u32)>;

/// What an apply would put back (the drift warning of `locality_weighted_backend` and
/// `locality_lb_forward_weights`): each configured weight, by name, that refresh found moved
/// outside Terraform to another value, as `name: live L, configured C`.
pub(crate) fn reverted_weights<'a>(
    moved: &MovedWeights,
    desired: impl IntoIterator<Item = (&'a str, u32)>,
) -> Vec<String> {
    desired
        .into_iter()
        .filter_map(|(name, configured)| {
            let &(_, live) = moved.get(name)?;
            (live != configured).then(|| format!("{name}: live {live}, configured {configured}"))
        })
        .collect()
}

/// What resources receive: the resolved configuration and lazily built API clients.
pub struct ProviderData {
    /// The provider block, resolved against the environment.
    pub config: ProviderConfig,
    http: OnceLock<reqwest::Client>,
    zones: OnceLock<Arc<Zones>>,
    aws: tokio::sync::OnceCell<Aws>,
    google_auth: OnceLock<Result<Arc<GoogleAuth>, AuthError>>,
    /// Files planned as publish targets in this run, with the document planned for each.
    published_files: Mutex<HashMap<PathBuf, String>>,
    /// Weights that refresh found moved outside Terraform, by resource ID: backend-service
    /// name → (weight in Terraform's state, live weight). Refresh and plan of one resource run
    /// in the same provider process, so plan can tell a live change from a configuration change.
    moved_weights: Mutex<HashMap<String, MovedWeights>>,
    /// Routes of URL maps planned in this run, with the weights planned for each.
    planned_routes: Mutex<HashMap<String, BTreeMap<String, u32>>>,
    /// The Terraform version ConfigureProvider reported (for the User-Agent).
    terraform_version: String,
}

impl ProviderData {
    /// Wraps a resolved configuration.
    pub fn new(config: ProviderConfig) -> Self {
        ProviderData {
            config,
            http: OnceLock::new(),
            zones: OnceLock::new(),
            aws: tokio::sync::OnceCell::new(),
            google_auth: OnceLock::new(),
            published_files: Mutex::default(),
            moved_weights: Mutex::default(),
            planned_routes: Mutex::default(),
            terraform_version: String::new(),
        }
    }

    /// Records the Terraform version ConfigureProvider reported: every API request's
    /// User-Agent names it.
    pub fn with_terraform_version(mut self, version: &str) -> Self {
        self.terraform_version = version.to_string();
        self
    }

    /// The User-Agent of every Cloudflare and Google request, as official providers write it:
    /// `Terraform/1.15.5 (+https://www.terraform.io) terraform-provider-locality/0.1.0`.
    pub fn user_agent(&self) -> String {
        let provider = concat!("terraform-provider-locality/", env!("CARGO_PKG_VERSION"));
        match self.terraform_version.as_str() {
            "" => provider.to_string(),
            tf => format!("Terraform/{tf} (+https://www.terraform.io) {provider}"),
        }
    }

    /// The AWS SDK's application name (`app/…` in its User-Agent; letters, digits and
    /// `-._` only): `terraform-provider-locality_0.1.0-terraform_1.15.5`.
    pub fn aws_app_name(&self) -> String {
        let clean = |s: &str| -> String {
            s.chars()
                .map(|c| if c.is_ascii_alphanumeric() || c == '.' { c } else { '-' })
                .take(16)
                .collect()
        };
        let mut name = format!("terraform-provider-locality_{}", clean(env!("CARGO_PKG_VERSION")));
        if !self.terraform_version.is_empty() {
            name.push_str(&format!("-terraform_{}", clean(&self.terraform_version)));
        }
        name.chars().take(50).collect()
    }

    /// Records that a resource of this run sets these weights on a route (its ID); `false`
    /// when another one sets other weights there (two resources fighting over one route).
    pub fn claim_route(&self, id: &str, weights: &BTreeMap<String, u32>) -> bool {
        let mut routes = self.planned_routes.lock().unwrap_or_else(|e| e.into_inner());
        match routes.get(id) {
            Some(other) => other == weights,
            None => {
                routes.insert(id.to_string(), weights.clone());
                true
            }
        }
    }

    /// Records what refresh found about a weighted route: the services whose live weight
    /// differs from the state's (empty when none do).
    pub fn record_moved_weights(&self, id: &str, moved: MovedWeights) {
        let mut all = self.moved_weights.lock().unwrap_or_else(|e| e.into_inner());
        all.insert(id.to_string(), moved);
    }

    /// The services whose weights refresh found moved outside Terraform, for a resource ID.
    pub fn moved_weights(&self, id: &str) -> MovedWeights {
        let all = self.moved_weights.lock().unwrap_or_else(|e| e.into_inner());
        all.get(id).cloned().unwrap_or_default()
    }

    /// Records that a resource of this run publishes `document` to the file at `path`; `false`
    /// when another one publishes a different document there (two resources fighting over one
    /// file). Relative paths are taken from the working directory, as writes take them.
    pub fn claim_published_file(&self, path: &Path, document: &str) -> bool {
        let key = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        let mut files = self.published_files.lock().unwrap_or_else(|e| e.into_inner());
        match files.get(&key) {
            Some(other) => other == document,
            None => {
                files.insert(key, document.to_string());
                true
            }
        }
    }

    /// How long one Cloudflare or Google request may take: `request_timeout`, else
    /// `LOCALITY_HTTP_TIMEOUT`, else 60 s.
    fn request_timeout(&self) -> Duration {
        self.config.http.timeout.unwrap_or(DEFAULT_REQUEST_TIMEOUT)
    }

    /// How Cloudflare and Google requests are retried: `max_retries` (else
    /// `LOCALITY_HTTP_RETRIES`, else 4) retries after the first attempt.
    pub fn retry_policy(&self) -> crate::http::RetryPolicy {
        crate::http::RetryPolicy {
            attempts: self
                .config
                .http
                .max_retries
                .unwrap_or(super::config::DEFAULT_MAX_RETRIES)
                + 1,
            ..Default::default()
        }
    }

    /// The HTTP client shared by every API client of this provider process.
    pub fn http(&self) -> reqwest::Client {
        self.http
            .get_or_init(|| crate::http::client_with_agent(self.request_timeout(), &self.user_agent()))
            .clone()
    }

    /// The Cloudflare client with this process's zone caches and batchers.
    ///
    /// # Errors
    /// [`NotConfigured::Cloudflare`] when no API token is configured.
    pub fn cloudflare(&self) -> Result<Arc<Zones>, NotConfigured> {
        if let Some(zones) = self.zones.get() {
            return Ok(zones.clone());
        }
        let token = self
            .config
            .cloudflare
            .api_token
            .clone()
            .ok_or(NotConfigured::Cloudflare)?;
        let client = Cloudflare::new(
            self.http(),
            &self.config.cloudflare.base_url,
            token,
            self.retry_policy(),
        );
        Ok(self.zones.get_or_init(|| Arc::new(Zones::new(client))).clone())
    }

    /// What the AWS client takes from the `aws` block.
    pub fn aws_settings(&self) -> AwsSettings {
        let c = &self.config.aws;
        AwsSettings {
            region: c.region.clone(),
            endpoint_url: c.endpoint_url.clone(),
            profile: c.profile.clone(),
            shared_config_files: c.shared_config_files.clone(),
            shared_credentials_files: c.shared_credentials_files.clone(),
            app_name: Some(self.aws_app_name()),
            assume_role: c.assume_role.as_ref().map(|role| RoleSettings {
                role_arn: role.role_arn.clone(),
                session_name: role
                    .session_name
                    .clone()
                    .unwrap_or_else(|| super::config::DEFAULT_SESSION_NAME.to_string()),
                external_id: role.external_id.as_ref().map(|id| id.expose().to_string()),
                duration: role.duration,
            }),
        }
    }

    /// The AWS clients (configuration loaded once per process, on first use).
    pub async fn aws(&self) -> &Aws {
        self.aws
            .get_or_init(|| async {
                let settings = self.aws_settings();
                Aws::load(&settings).await
            })
            .await
    }

    /// What the Google credentials are, from the `google` block and the environment.
    pub fn google_auth_settings(&self) -> AuthSettings {
        let c = &self.config.google;
        let source = match (&c.access_token, &c.credentials) {
            (Some(token), _) => CredentialsSource::AccessToken(token.clone()),
            (None, Some((content, origin))) => CredentialsSource::Json {
                content: content.clone(),
                origin: origin.clone(),
            },
            (None, None) => CredentialsSource::ApplicationDefault,
        };
        AuthSettings {
            source,
            impersonation: c.impersonate_service_account.as_ref().map(|email| Impersonation {
                service_account: email.clone(),
                delegates: c.impersonate_service_account_delegates.clone(),
                base_url: c.iam_credentials_base_url.clone(),
            }),
            timeout: self.request_timeout(),
        }
    }

    /// The Compute Engine client. Its credentials are loaded on first use and shared by the
    /// whole provider process (one token cache, refreshed before tokens expire).
    ///
    /// # Errors
    /// [`AuthError`] when the credentials cannot be loaded (e.g. `GOOGLE_APPLICATION_CREDENTIALS`
    /// names a missing file).
    pub fn compute(&self) -> Result<Compute, AuthError> {
        let auth = self
            .google_auth
            .get_or_init(|| GoogleAuth::new(&self.google_auth_settings(), self.http()).map(Arc::new))
            .clone()?;
        Ok(Compute::new(
            self.http(),
            &self.config.google.base_url,
            auth,
            self.retry_policy(),
            Default::default(),
        ))
    }
}
