//! The `provider "locality"` block (documented in `docs/index.md`): its schema, validation and the resolved
//! configuration with environment-variable fallbacks. Secrets are wrapped in [`Secret`], whose
//! `Debug` never shows the value.

pub use super::secret::Secret;
use crate::tfplugin::{Attribute, AttributePath, Block, Diagnostics, NestedBlock, Nesting, Schema, Type, Value};

/// Cloudflare settings.
#[derive(Debug, Clone, Default)]
pub struct CloudflareConfig {
    /// API token (block, else `CLOUDFLARE_API_TOKEN`).
    pub api_token: Option<Secret>,
    /// API base URL (block, else `CLOUDFLARE_BASE_URL`, else the public API).
    pub base_url: String,
}

/// AWS settings.
#[derive(Debug, Clone, Default)]
pub struct AwsConfig {
    /// Region; `None` means the standard AWS chain.
    pub region: Option<String>,
    /// Endpoint override from the block (the environment's are the SDK's to read).
    pub endpoint_url: Option<String>,
    /// The named profile; `None` means the chain's (`AWS_PROFILE`, else `default`).
    pub profile: Option<String>,
    /// Shared config files instead of `~/.aws/config` (empty: the default).
    pub shared_config_files: Vec<String>,
    /// Shared credentials files instead of `~/.aws/credentials` (empty: the default).
    pub shared_credentials_files: Vec<String>,
    /// A role to assume with the credentials found.
    pub assume_role: Option<AssumeRole>,
    /// The accounts the credentials may belong to (empty: any).
    pub allowed_account_ids: Vec<String>,
    /// The accounts the credentials must not belong to.
    pub forbidden_account_ids: Vec<String>,
    /// `default_tags { tags }`: tags every AWS resource the provider creates carries, under
    /// the resource's own `tags`.
    pub default_tags: std::collections::BTreeMap<String, String>,
}

impl AwsConfig {
    /// Whether the credentials' account must be checked (STS GetCallerIdentity).
    pub fn checks_account(&self) -> bool {
        !self.allowed_account_ids.is_empty() || !self.forbidden_account_ids.is_empty()
    }
}

/// `assume_role` in the `aws` block.
#[derive(Debug, Clone, Default)]
pub struct AssumeRole {
    /// The role's ARN.
    pub role_arn: String,
    /// The session name (default: `terraform-provider-locality`).
    pub session_name: Option<String>,
    /// The external ID the role's trust policy requires.
    pub external_id: Option<Secret>,
    /// How long the session lasts.
    pub duration: Option<std::time::Duration>,
}

/// The session name of an assumed role when none is given.
pub const DEFAULT_SESSION_NAME: &str = "terraform-provider-locality";

/// Google Cloud settings.
#[derive(Debug, Clone, Default)]
pub struct GoogleConfig {
    /// OAuth access token (block, else `GOOGLE_OAUTH_ACCESS_TOKEN`); wins over everything else.
    pub access_token: Option<Secret>,
    /// A credentials JSON document (block — a path or the content —, else `GOOGLE_CREDENTIALS`),
    /// with where it came from; `None`: Application Default Credentials.
    pub credentials: Option<(Secret, String)>,
    /// The service account to impersonate (block, else `GOOGLE_IMPERSONATE_SERVICE_ACCOUNT`).
    pub impersonate_service_account: Option<String>,
    /// Its delegation chain.
    pub impersonate_service_account_delegates: Vec<String>,
    /// Default project: the block, `GOOGLE_PROJECT`, `GOOGLE_CLOUD_PROJECT`,
    /// `CLOUDSDK_CORE_PROJECT`, then the credentials' `project_id`.
    pub project: Option<String>,
    /// Compute API base URL.
    pub base_url: String,
    /// IAM Credentials API base URL (impersonation).
    pub iam_credentials_base_url: String,
}

/// How Cloudflare and Google requests are sent: the provider block's `request_timeout` and
/// `max_retries`, else `LOCALITY_HTTP_TIMEOUT` and `LOCALITY_HTTP_RETRIES`, else the defaults.
#[derive(Debug, Clone, Copy, Default)]
pub struct HttpConfig {
    /// How long one request may take.
    pub timeout: Option<std::time::Duration>,
    /// Retries after the first attempt (429, 5xx, connection errors).
    pub max_retries: Option<u32>,
}

/// The default of `max_retries`.
pub const DEFAULT_MAX_RETRIES: u32 = 4;

/// The largest `max_retries` accepted.
pub const MAX_RETRIES_LIMIT: u32 = 25;

/// The resolved provider configuration: what resources receive.
#[derive(Debug, Clone, Default)]
pub struct ProviderConfig {
    /// Request timeout and retries of the Cloudflare and Google clients.
    pub http: HttpConfig,
    /// Set when a `cloudflare` block is present or the environment provides a token.
    pub cloudflare: CloudflareConfig,
    /// AWS settings.
    pub aws: AwsConfig,
    /// Google settings.
    pub google: GoogleConfig,
}

/// Default Cloudflare API base URL.
pub const CLOUDFLARE_DEFAULT_BASE_URL: &str = "https://api.cloudflare.com/client/v4";
/// Default Compute Engine API base URL.
pub const GOOGLE_DEFAULT_BASE_URL: &str = "https://compute.googleapis.com/compute/v1";

/// The provider block's schema.
pub fn schema() -> Schema {
    Schema {
        version: 0,
        block: Block::new(
            "The `locality` provider manages locality-aware routing: per-AZ replica maps, Cloudflare origin \
             cloud-region hints and Google Cloud URL-map weights. Every block is optional: configure only the \
             clouds your resources use.\n\n\
             **Terraform versions.** Resources and data sources work with Terraform 1.11 and later. Resource \
             identity (`import` blocks with `identity`, identities in `terraform show -json`) needs Terraform \
             1.12 or later; list resources (`terraform query`, with `list` blocks in `*.tfquery.hcl` files) and \
             the actions (`locality_shift_weights`, `locality_shift_lb_weights`) need Terraform 1.14 or later. Tested with 1.11.4 and 1.15.5.\n\n\
             **Environment variables** the provider and the `locality` CLI read:\n\n\
             | variable | what |\n\
             |---|---|\n\
             | `CLOUDFLARE_API_TOKEN`, `CLOUDFLARE_BASE_URL` | `cloudflare.api_token`, `cloudflare.base_url` when the block does not set them |\n\
             | `GOOGLE_OAUTH_ACCESS_TOKEN` | `google.access_token` when the block does not set it |\n\
             | `GOOGLE_CREDENTIALS` | `google.credentials` when the block does not set it (a path or the JSON content) |\n\
             | `GOOGLE_IMPERSONATE_SERVICE_ACCOUNT` | `google.impersonate_service_account` when the block does not set it |\n\
             | `GOOGLE_PROJECT`, `GOOGLE_CLOUD_PROJECT`, `CLOUDSDK_CORE_PROJECT` | `google.project` when the block does not set it, in this order |\n\
             | `GOOGLE_APPLICATION_CREDENTIALS`, `HOME` (gcloud's `~/.config/gcloud/application_default_credentials.json`), `GCE_METADATA_HOST` | Google's Application Default Credentials, used when neither `access_token` nor `credentials` is set |\n\
             | `GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES` | `1` lets an `external_account` credential run its executable |\n\
             | `AWS_REGION`, `AWS_PROFILE`, `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, `AWS_CONFIG_FILE`, `AWS_SHARED_CREDENTIALS_FILE`, `AWS_WEB_IDENTITY_TOKEN_FILE`, `AWS_ROLE_ARN`, `AWS_ROLE_SESSION_NAME`, `AWS_CONTAINER_CREDENTIALS_*`, `AWS_EC2_METADATA_DISABLED`, `AWS_EC2_METADATA_SERVICE_ENDPOINT`, `AWS_MAX_ATTEMPTS` | the standard AWS chain, as every AWS SDK reads it (the `aws` block's attributes win) |\n\
             | `AWS_ENDPOINT_URL`, `AWS_ENDPOINT_URL_<SERVICE>` (`_SSM`, `_SECRETS_MANAGER`, `_ELASTICACHE`, `_ELASTIC_LOAD_BALANCING_V2`, `_STS`), `endpoint_url` in the shared config file | the endpoints when `aws.endpoint_url` is not set, the service's own first, as in the AWS CLI; whatever sets them, plain `http` is refused unless the host is loopback |\n\
             | `TF_LOG_PROVIDER`, `TF_LOG` | the provider's log level (logs never carry credentials) |\n\
             | `LOCALITY_HTTP_TIMEOUT` | seconds one Cloudflare or Google request may take, when `request_timeout` is not set (default 60) |\n\
             | `LOCALITY_HTTP_RETRIES` | retries of a Cloudflare or Google request, when `max_retries` is not set (default 4) |\n\
             | `LOCALITY_RANGES_FILE` | an IP-range snapshot written by `locality ranges update`, used instead of the built-in one by `locality_cloud_region`, `locality_region_hints.origins` and `locality lookup` |\n\
             | `XDG_DATA_HOME`, `HOME` | where `locality ranges update` writes without `-o` |\n\
             | `LOCALITY_ZONE` | `locality resolve`: this process's AZ name or ID when `--zone` is not given; anything else is a usage error (exit 2), empty is unset |\n\
             | `LOCALITY_FALLBACK` | `locality resolve`: the endpoint (the reader endpoint, `host:port`) to print when the map cannot be read, when `--fallback` is not given; anything but `host:port` is a usage error (exit 2) |\n\
             | `ECS_CONTAINER_METADATA_URI_V4`, `AWS_LAMBDA_METADATA_API`, `AWS_LAMBDA_METADATA_TOKEN`, `AWS_EC2_METADATA_SERVICE_ENDPOINT`, `AWS_EC2_METADATA_DISABLED` | `locality resolve`: where it detects its AZ (ECS, Lambda, EC2 IMDS) |\n\
             | `XDG_RUNTIME_DIR`, `TMPDIR` | `locality resolve`: its cache directory without `--cache-dir` |\n\
             | `LOCALITY_TLS_CA_FILE` | `locality resolve --check --tls`: a PEM file of CAs to trust besides the system's |\n\
             | the AWS chain (`AWS_REGION`, `AWS_PROFILE`, `AWS_ENDPOINT_URL`, ...) | `locality resolve --map ssm:...` / `secretsmanager:...` |\n\n\
             **Google credentials**, first match wins: `access_token` (or `GOOGLE_OAUTH_ACCESS_TOKEN`), used as \
             given; `credentials` (or `GOOGLE_CREDENTIALS`); else Application Default Credentials: the file named by \
             `GOOGLE_APPLICATION_CREDENTIALS`, gcloud's `~/.config/gcloud/application_default_credentials.json` \
             (`gcloud auth application-default login`), then the metadata server (GCE, GKE workload identity, \
             Cloud Run, Cloud Build; `GCE_METADATA_HOST` is honoured). With `impersonate_service_account`, the \
             credentials found are used only to get that service account's tokens. Tokens are refreshed before \
             they expire, so a long apply or a long `locality_shift_weights` keeps working (a static \
             `access_token` is not refreshed). Credentials are loaded when a Google resource first needs them, \
             and a failure is an error of that resource's plan.\n\n\
             Every API request's User-Agent names the provider's and Terraform's versions \
             (`Terraform/1.15.5 (+https://www.terraform.io) terraform-provider-locality/0.1.0`; the AWS SDK's \
             carries `app/terraform-provider-locality_0.1.0-terraform_1.15.5`), so the clouds' own logs tell \
             its calls apart. (Google's token endpoints — OAuth, STS, the metadata server — are called by \
             Google's auth library, with its own.)",
        )
        .attribute(Attribute::string("request_timeout").optional().description(
            "How long one Cloudflare or Google API request may take, as a duration such as `\"60s\"` or `\"2m\"` (1s to 1h), as the Google provider's `request_timeout`. Default: `LOCALITY_HTTP_TIMEOUT` (seconds), else `60s`. A resource's `timeouts` bound its whole operation, retries included.",
        ))
        .attribute(Attribute::number("max_retries").optional().description(
            "How many times a Cloudflare or Google API request is retried after a 429, a 5xx or a connection error (0 to 25), with exponential backoff and full jitter, honouring `Retry-After`. Default: `LOCALITY_HTTP_RETRIES`, else 4. AWS calls follow the AWS SDK's own retry settings (`AWS_MAX_ATTEMPTS`, `max_attempts` in the shared config file).",
        ))
        .block(NestedBlock::new(
            "cloudflare",
            Nesting::Single,
            Block::new("Cloudflare API access, for the resources `locality_region_hint` and `locality_region_hints` and the list resource `locality_region_hint`.")
                .attribute(Attribute::string("api_token").optional().sensitive().description(
                    "API token with Zone Settings edit permission. Default: the `CLOUDFLARE_API_TOKEN` environment variable.",
                ))
                .attribute(Attribute::string("base_url").optional().description(
                    "API base URL. Default: `CLOUDFLARE_BASE_URL`, else `https://api.cloudflare.com/client/v4`. \
                     Must be `https` unless the host is a loopback address.",
                )),
        ))
        .block(NestedBlock::new(
            "aws",
            Nesting::Single,
            Block::new("AWS access, for the resource `locality_zone_replica_map` when it discovers the topology (`replication_group_id`: ElastiCache) or publishes to Secrets Manager or SSM (a `file` target with `member` blocks needs no AWS access), for the resource `locality_lb_forward_weights` and the action `locality_shift_lb_weights` (Elastic Load Balancing), and for the data source `locality_cross_zone_cost` (Cost Explorer).")
                .attribute(Attribute::string("region").optional().description(
                    "AWS region. Default: the standard AWS chain (`AWS_REGION`, profile, ...).",
                ))
                .attribute(Attribute::string("profile").optional().description(
                    "A named profile of the shared config and credentials files. Default: `AWS_PROFILE`, else \
                     `default`. Every kind of profile works: static keys, `role_arn` + `source_profile`, \
                     `credential_process` (aws-vault, granted), IAM Identity Center (`sso_session`, after `aws sso login`) \
                     and `web_identity_token_file`.",
                ))
                .attribute(Attribute::typed("shared_config_files", Type::list(Type::String)).optional().description(
                    "Paths of shared config files to read instead of `~/.aws/config` (and `AWS_CONFIG_FILE`).",
                ))
                .attribute(Attribute::typed("shared_credentials_files", Type::list(Type::String)).optional().description(
                    "Paths of shared credentials files to read instead of `~/.aws/credentials` (and \
                     `AWS_SHARED_CREDENTIALS_FILE`).",
                ))
                .attribute(Attribute::typed("allowed_account_ids", Type::set(Type::String)).optional().description(
                    "The AWS account IDs the credentials may belong to. Checked once per provider process with STS \
                     GetCallerIdentity when the provider is configured, so credentials of another account fail the plan \
                     before anything is read or written. Conflicts with `forbidden_account_ids`.",
                ))
                .attribute(Attribute::typed("forbidden_account_ids", Type::set(Type::String)).optional().description(
                    "AWS account IDs the credentials must not belong to (checked like `allowed_account_ids`).",
                ))
                .block(
                    NestedBlock::new(
                        "assume_role",
                        Nesting::List,
                        Block::new(
                            "Assume this role (STS AssumeRole) with the credentials the chain or `profile` finds, and use \
                             the role's credentials for every call. They are refreshed before they expire.",
                        )
                        .attribute(Attribute::string("role_arn").required().description(
                            "The role's ARN, e.g. `arn:aws:iam::123456789012:role/locality`.",
                        ))
                        .attribute(Attribute::string("session_name").optional().description(
                            "The session name, shown in CloudTrail. Default: `terraform-provider-locality`.",
                        ))
                        .attribute(Attribute::string("external_id").optional().sensitive().description(
                            "The external ID the role's trust policy requires, if any.",
                        ))
                        .attribute(Attribute::string("duration").optional().description(
                            "How long the role session lasts, e.g. `1h` (15m to 12h, and at most the role's maximum \
                             session duration). Default: 1h.",
                        )),
                    )
                    .items(0, 1),
                )
                .block(
                    NestedBlock::new(
                        "default_tags",
                        Nesting::List,
                        Block::new(
                            "Tags for every AWS resource this provider creates (the SSM parameter of a `locality_zone_replica_map`), as the AWS provider's `default_tags`: a resource's own `tags` win on the same key, and its `tags_all` shows the merge.",
                        )
                        .attribute(Attribute::typed("tags", Type::map(Type::String)).optional().description(
                            "Tag key → value (keys 1 to 128 characters, not starting with `aws:`; values up to 256).",
                        )),
                    )
                    .items(0, 1),
                )
                .attribute(Attribute::string("endpoint_url").optional().description(
                    "Endpoint override for every AWS service. Default: the SDK's (`AWS_ENDPOINT_URL_<SERVICE>`, \
                     `AWS_ENDPOINT_URL`, `endpoint_url` in the shared config file), else AWS's own. Every endpoint, \
                     whatever sets it, must be `https` unless the host is a loopback address: a request to any \
                     other is refused before it is sent.",
                )),
        ))
        .block(NestedBlock::new(
            "google",
            Nesting::Single,
            Block::new("Google Cloud access, for the resource `locality_weighted_backend`, the list resource `locality_weighted_backend` and the action `locality_shift_weights`. Credentials: see **Google credentials** above.")
                .attribute(Attribute::string("access_token").optional().sensitive().description(
                    "OAuth 2.0 access token, used as given (not refreshed; e.g. `gcloud auth print-access-token`). \
                     Wins over every other credential. Default: the `GOOGLE_OAUTH_ACCESS_TOKEN` environment variable.",
                ))
                .attribute(Attribute::string("credentials").optional().sensitive().description(
                    "The path of a credentials JSON file, or its content: a service-account key \
                     (`\"type\": \"service_account\"`), gcloud's application-default file (`authorized_user`), a \
                     workload identity federation configuration (`external_account`: file-, URL- or \
                     executable-sourced tokens, e.g. GitHub Actions or GitLab OIDC; executables need \
                     `GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES=1`), or gcloud's `impersonated_service_account`. \
                     Default: `GOOGLE_CREDENTIALS`, else Application Default Credentials.",
                ))
                .attribute(Attribute::string("impersonate_service_account").optional().description(
                    "A service account email to impersonate: the credentials found get its tokens from the IAM \
                     Credentials API (`generateAccessToken`; they need `roles/iam.serviceAccountTokenCreator` on it), and \
                     every Compute call uses those. Default: `GOOGLE_IMPERSONATE_SERVICE_ACCOUNT`.",
                ))
                .attribute(Attribute::typed("impersonate_service_account_delegates", Type::list(Type::String)).optional().description(
                    "The delegation chain of service account emails for `impersonate_service_account`, each with \
                     `roles/iam.serviceAccountTokenCreator` on the next.",
                ))
                .attribute(Attribute::string("project").optional().description(
                    "Default project of `locality_weighted_backend`, its list resource and `locality_shift_weights`. \
                     Default: `GOOGLE_PROJECT`, `GOOGLE_CLOUD_PROJECT`, `CLOUDSDK_CORE_PROJECT`, then the `project_id` \
                     of the credentials file (`credentials`, `GOOGLE_CREDENTIALS` or `GOOGLE_APPLICATION_CREDENTIALS`).",
                ))
                .attribute(Attribute::string("iam_credentials_base_url").optional().description(
                    "IAM Credentials API base URL, for impersonation. Default: \
                     `https://iamcredentials.googleapis.com/v1`. Must be `https` unless the host is a loopback address.",
                ))
                .attribute(Attribute::string("base_url").optional().description(
                    "Compute Engine API base URL. Default: `https://compute.googleapis.com/compute/v1`. \
                     Must be `https` unless the host is a loopback address.",
                )),
        )),
    }
}

/// Offline checks of the provider block.
pub fn validate(config: &Value, diags: &mut Diagnostics) {
    for (block, attr) in [
        ("cloudflare", "base_url"),
        ("aws", "endpoint_url"),
        ("google", "base_url"),
        ("google", "iam_credentials_base_url"),
    ] {
        if let Some(url) = config.get(block).get(attr).as_str() {
            if let Err(problem) = check_base_url(url) {
                diags.attribute_error(AttributePath::root(block).attr(attr), "Invalid URL", problem);
            }
        }
    }
    if let Some(text) = config.get("request_timeout").as_str() {
        if let Err(problem) = request_timeout(text) {
            diags.attribute_error(
                AttributePath::root("request_timeout"),
                "Invalid request timeout",
                problem,
            );
        }
    }
    if let Some(n) = config.get("max_retries").as_number() {
        if n.as_u64().is_none_or(|n| n > u64::from(MAX_RETRIES_LIMIT)) {
            diags.attribute_error(
                AttributePath::root("max_retries"),
                "Invalid retry count",
                format!("`max_retries` is {n}: give a whole number from 0 to {MAX_RETRIES_LIMIT}."),
            );
        }
    }
    let aws = config.get("aws");
    let at = |attr: &str| AttributePath::root("aws").attr(attr);
    for block in aws.get("default_tags").elements() {
        let Some(tags) = block.get("tags").entries() else {
            continue;
        };
        let path = || at("default_tags").index(0).attr("tags");
        if tags.len() > crate::provider::aws::MAX_TAGS {
            diags.attribute_error(
                path(),
                "Too many tags",
                format!(
                    "{} default tags; AWS allows {} on a resource.",
                    tags.len(),
                    crate::provider::aws::MAX_TAGS
                ),
            );
        }
        for (key, value) in tags {
            if let Some(problem) = crate::provider::aws::tag_problem(key, value.as_str().unwrap_or("")) {
                diags.attribute_error(path(), "Invalid tag", problem);
            }
        }
    }
    for attr in ["allowed_account_ids", "forbidden_account_ids"] {
        for id in aws.get(attr).elements().iter().filter_map(Value::as_str) {
            if !is_account_id(id) {
                diags.attribute_error(
                    at(attr),
                    "Invalid AWS account ID",
                    format!("{id:?} is not an AWS account ID: 12 digits, e.g. \"123456789012\"."),
                );
            }
        }
    }
    if !aws.get("allowed_account_ids").elements().is_empty() && !aws.get("forbidden_account_ids").elements().is_empty()
    {
        diags.attribute_error(
            at("forbidden_account_ids"),
            "Conflicting account lists",
            "Set `allowed_account_ids` or `forbidden_account_ids`, not both.",
        );
    }
    if let Some(role) = aws.get("assume_role").elements().first() {
        let role_at = |attr: &str| AttributePath::root("aws").attr("assume_role").index(0).attr(attr);
        if let Some(arn) = role.get("role_arn").as_str() {
            if !is_role_arn(arn) {
                diags.attribute_error(
                    role_at("role_arn"),
                    "Invalid role ARN",
                    format!("{arn:?} is not an IAM role ARN such as \"arn:aws:iam::123456789012:role/locality\"."),
                );
            }
        }
        if let Some(name) = role.get("session_name").as_str() {
            if !is_session_name(name) {
                diags.attribute_error(
                    role_at("session_name"),
                    "Invalid session name",
                    format!("{name:?} is not a role session name: 2-64 letters, digits and any of =,.@-_"),
                );
            }
        }
        if let Some(text) = role.get("duration").as_str() {
            if let Err(problem) = session_duration(text) {
                diags.attribute_error(role_at("duration"), "Invalid duration", problem);
            }
        }
    }
    let google = config.get("google");
    let google_at = |attr: &str| AttributePath::root("google").attr(attr);
    if let Some(email) = google.get("impersonate_service_account").as_str() {
        if let Err(problem) = check_service_account_email(email) {
            diags.attribute_error(
                google_at("impersonate_service_account"),
                "Invalid service account",
                problem,
            );
        }
    }
    for email in google
        .get("impersonate_service_account_delegates")
        .elements()
        .iter()
        .filter_map(Value::as_str)
    {
        if let Err(problem) = check_service_account_email(email) {
            diags.attribute_error(
                google_at("impersonate_service_account_delegates"),
                "Invalid service account",
                problem,
            );
        }
    }
    if !google
        .get("impersonate_service_account_delegates")
        .elements()
        .is_empty()
        && google.get("impersonate_service_account").is_null()
    {
        diags.attribute_error(
            google_at("impersonate_service_account_delegates"),
            "Delegates without a service account",
            "`impersonate_service_account_delegates` needs `impersonate_service_account`.",
        );
    }
    if let Some(region) = config.get("aws").get("region").as_str() {
        if !is_region_name(region) {
            diags.attribute_error(
                AttributePath::root("aws").attr("region"),
                "Invalid AWS region",
                format!("{region:?} is not an AWS region name; expected something like \"ap-northeast-1\"."),
            );
        }
    }
}

/// Resolves the configuration against the environment.
pub fn resolve(config: &Value, diags: &mut Diagnostics) -> ProviderConfig {
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let text = |block: &str, attr: &str| config.get(block).get(attr).as_str().map(str::to_string);
    let cloudflare_url = text("cloudflare", "base_url")
        .or_else(|| env("CLOUDFLARE_BASE_URL"))
        .unwrap_or_else(|| CLOUDFLARE_DEFAULT_BASE_URL.into());
    // Only the block's own endpoint is given to the SDK: AWS_ENDPOINT_URL and the per-service
    // AWS_ENDPOINT_URL_<SERVICE> (which wins over it, as in the AWS CLI) are the SDK's to read,
    // and every request, whatever its endpoint's source, passes the https-or-loopback check
    // before it is sent (locality_resolve::aws_error::guarded_http_client).
    let aws_endpoint = text("aws", "endpoint_url");
    let resolved = ProviderConfig {
        cloudflare: CloudflareConfig {
            api_token: text("cloudflare", "api_token")
                .or_else(|| env("CLOUDFLARE_API_TOKEN"))
                .map(Secret::new),
            base_url: cloudflare_url,
        },
        aws: AwsConfig {
            region: text("aws", "region"),
            endpoint_url: aws_endpoint,
            profile: text("aws", "profile"),
            shared_config_files: strings(config.get("aws").get("shared_config_files")),
            shared_credentials_files: strings(config.get("aws").get("shared_credentials_files")),
            assume_role: config
                .get("aws")
                .get("assume_role")
                .elements()
                .first()
                .map(|role| AssumeRole {
                    role_arn: role.get("role_arn").as_str().unwrap_or_default().to_string(),
                    session_name: role.get("session_name").as_str().map(str::to_string),
                    external_id: role.get("external_id").as_str().map(Secret::new),
                    duration: role.get("duration").as_str().and_then(|d| session_duration(d).ok()),
                }),
            allowed_account_ids: strings(config.get("aws").get("allowed_account_ids")),
            forbidden_account_ids: strings(config.get("aws").get("forbidden_account_ids")),
            default_tags: config
                .get("aws")
                .get("default_tags")
                .elements()
                .first()
                .map(|block| {
                    block
                        .get("tags")
                        .entries()
                        .into_iter()
                        .flatten()
                        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                        .collect()
                })
                .unwrap_or_default(),
        },
        google: resolve_google(config, diags),
        http: resolve_http(config, diags),
    };
    // Values from the environment are checked here; the block's own were checked in validate.
    for (name, url) in [
        ("CLOUDFLARE_BASE_URL", &Some(resolved.cloudflare.base_url.clone())),
        ("AWS_ENDPOINT_URL", &env("AWS_ENDPOINT_URL")),
    ] {
        if let Some(url) = url {
            if let Err(problem) = check_base_url(url) {
                diags.error("Invalid URL", format!("{name} (or the provider block): {problem}"));
            }
        }
    }
    resolved
}

/// `request_timeout` and `max_retries`, else their environment variables (checked here: a bad
/// value is an error naming the variable, not silently the default).
fn resolve_http(config: &Value, diags: &mut Diagnostics) -> HttpConfig {
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    let timeout = match config.get("request_timeout").as_str() {
        Some(text) => request_timeout(text).ok(),
        None => env("LOCALITY_HTTP_TIMEOUT").and_then(|v| match v.trim().parse::<u64>() {
            Ok(s) if (1..=3600).contains(&s) => Some(std::time::Duration::from_secs(s)),
            _ => {
                diags.error(
                    "Invalid LOCALITY_HTTP_TIMEOUT",
                    format!("LOCALITY_HTTP_TIMEOUT is {v:?}: give whole seconds from 1 to 3600, or set `request_timeout` in the provider block."),
                );
                None
            }
        }),
    };
    let max_retries = match config.get("max_retries").as_number() {
        Some(n) => n.as_u64().and_then(|n| u32::try_from(n).ok()),
        None => env("LOCALITY_HTTP_RETRIES").and_then(|v| match v.trim().parse::<u32>() {
            Ok(n) if n <= MAX_RETRIES_LIMIT => Some(n),
            _ => {
                diags.error(
                    "Invalid LOCALITY_HTTP_RETRIES",
                    format!("LOCALITY_HTTP_RETRIES is {v:?}: give a whole number from 0 to {MAX_RETRIES_LIMIT}, or set `max_retries` in the provider block."),
                );
                None
            }
        }),
    };
    HttpConfig { timeout, max_retries }
}

/// A `request_timeout`: 1s to 1h.
///
/// # Errors
/// A sentence saying what is allowed.
pub fn request_timeout(text: &str) -> Result<std::time::Duration, String> {
    humantime::parse_duration(text.trim())
        .ok()
        .filter(|d| (1..=3600).contains(&d.as_secs()))
        .ok_or_else(|| format!("{text:?} is not a request timeout: use e.g. \"30s\" or \"2m\", from 1s to 1h."))
}

fn resolve_google(config: &Value, diags: &mut Diagnostics) -> GoogleConfig {
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    let google = config.get("google");
    let text = |attr: &str| google.get(attr).as_str().map(str::to_string);
    let access_token = text("access_token")
        .or_else(|| env("GOOGLE_OAUTH_ACCESS_TOKEN"))
        .map(Secret::new);
    // The credentials JSON: checked here, so a bad file fails ConfigureProvider on the attribute.
    let (credentials, info) = match (text("credentials"), env("GOOGLE_CREDENTIALS")) {
        (Some(value), _) => match load_credentials(&value, "`credentials`") {
            Ok((content, origin, info)) => (Some((content, origin)), Some(info)),
            Err(problem) => {
                diags.attribute_error(
                    AttributePath::root("google").attr("credentials"),
                    "Invalid Google credentials",
                    problem,
                );
                (None, None)
            }
        },
        (None, Some(value)) => match load_credentials(&value, "GOOGLE_CREDENTIALS") {
            Ok((content, origin, info)) => (Some((content, origin)), Some(info)),
            Err(problem) => {
                diags.error("Invalid Google credentials", problem);
                (None, None)
            }
        },
        (None, None) => (None, None),
    };
    // The project a credentials file names: `credentials`, else the ADC file (read, not used).
    let file_project = || -> Option<String> {
        if let Some(info) = &info {
            return info.project_id.clone();
        }
        let path = std::env::var_os("GOOGLE_APPLICATION_CREDENTIALS")
            .map(std::path::PathBuf::from)
            .or_else(crate::provider::google::auth::well_known_file)?;
        let content = std::fs::read_to_string(path).ok()?;
        crate::provider::google::auth::inspect_credentials(&content)
            .ok()?
            .project_id
    };
    let impersonate = text("impersonate_service_account").or_else(|| {
        let email = env("GOOGLE_IMPERSONATE_SERVICE_ACCOUNT")?;
        if let Err(problem) = check_service_account_email(&email) {
            diags.error(
                "Invalid service account",
                format!("GOOGLE_IMPERSONATE_SERVICE_ACCOUNT: {problem}"),
            );
            return None;
        }
        Some(email)
    });
    GoogleConfig {
        access_token,
        credentials,
        impersonate_service_account: impersonate,
        impersonate_service_account_delegates: strings(google.get("impersonate_service_account_delegates")),
        project: text("project")
            .or_else(|| env("GOOGLE_PROJECT"))
            .or_else(|| env("GOOGLE_CLOUD_PROJECT"))
            .or_else(|| env("CLOUDSDK_CORE_PROJECT"))
            .or_else(file_project),
        base_url: text("base_url").unwrap_or_else(|| GOOGLE_DEFAULT_BASE_URL.into()),
        iam_credentials_base_url: text("iam_credentials_base_url")
            .unwrap_or_else(|| crate::provider::google::auth::IAM_CREDENTIALS_DEFAULT_BASE_URL.into()),
    }
}

/// `credentials`: the JSON content itself (it starts with `{`, after an optional byte-order
/// mark), else a path (`~/` is the home directory), else base64-encoded JSON (as CI secrets
/// often hold it). Returns the content, where it came from, and what it is. A value that is
/// none of these is an error that never repeats it: it may be a key or a token.
fn load_credentials(
    value: &str,
    name: &str,
) -> Result<(Secret, String, crate::provider::google::auth::CredentialsInfo), String> {
    use crate::provider::google::auth::inspect_credentials;
    use base64::Engine as _;
    let without_bom = |text: &str| text.strip_prefix('\u{feff}').unwrap_or(text).to_string();
    let value_trimmed = without_bom(value.trim_start());
    let (content, origin) = if value_trimmed.trim_start().starts_with('{') {
        (value_trimmed, format!("{name} (JSON content)"))
    } else {
        let path = match (value.strip_prefix("~/"), std::env::var_os("HOME")) {
            (Some(rest), Some(home)) => std::path::PathBuf::from(home).join(rest),
            _ => std::path::PathBuf::from(value),
        };
        let looks_like_a_path = value.len() < 4096 && !value.contains('\n');
        match looks_like_a_path.then(|| std::fs::read_to_string(&path)) {
            Some(Ok(content)) => (without_bom(&content), format!("{name} (file {})", path.display())),
            Some(Err(e)) if e.kind() != std::io::ErrorKind::NotFound && path.exists() => {
                return Err(format!("{name} (file {}) cannot be read: {e}.", path.display()))
            }
            _ => {
                let compact: String = value.chars().filter(|c| !c.is_whitespace()).collect();
                let decoded = base64::engine::general_purpose::STANDARD
                    .decode(compact.as_bytes())
                    .ok()
                    .and_then(|bytes| String::from_utf8(bytes).ok())
                    .map(|text| without_bom(text.trim_start()))
                    .filter(|text| text.starts_with('{'));
                // A value named like a key file is a path, and shown; anything else may be a secret.
                let named_like_a_file = value.len() < 1024
                    && !value.contains(char::is_whitespace)
                    && value.to_ascii_lowercase().ends_with(".json");
                match decoded {
                    Some(json) => (json, format!("{name} (base64-encoded JSON content)")),
                    None if named_like_a_file => {
                        return Err(format!(
                        "{name} (file {}) does not exist. Give the path of a credentials JSON file (a service-account \
                             key, gcloud's application_default_credentials.json, a workload identity federation \
                             configuration) or its content.",
                        path.display()
                    ))
                    }
                    None => {
                        return Err(format!(
                            "{name} is neither the path of a readable file nor credentials JSON (nor base64-encoded \
                             JSON); the value ({} characters) is not shown, since it may be a key or a token. Give \
                             the path of a credentials JSON file (a service-account key, gcloud's \
                             application_default_credentials.json, a workload identity federation configuration) or \
                             its content; an access token goes in `access_token` (GOOGLE_OAUTH_ACCESS_TOKEN).",
                            value.chars().count()
                        ))
                    }
                }
            }
        }
    };
    let info = inspect_credentials(&content).map_err(|problem| format!("{origin} {problem}"))?;
    Ok((Secret::new(content), origin, info))
}

/// Checks that `email` looks like a service account email (`name@project.iam.gserviceaccount.com`,
/// or any `name@domain` — default service accounts have other domains).
///
/// # Errors
/// A sentence naming the value and showing the expected form.
pub fn check_service_account_email(email: &str) -> Result<(), String> {
    let looks_right = email.split_once('@').is_some_and(|(name, domain)| {
        !name.is_empty()
            && domain.contains('.')
            && !email.contains(char::is_whitespace)
            && !email.contains('/')
            && email.len() <= 254
    });
    if looks_right {
        Ok(())
    } else {
        Err(format!(
            "{email:?} is not a service account email such as \"locality@my-project.iam.gserviceaccount.com\"."
        ))
    }
}

pub use crate::http::check_base_url;

fn strings(value: &Value) -> Vec<String> {
    value
        .elements()
        .iter()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect()
}

/// Whether `id` is an AWS account ID (12 digits).
pub fn is_account_id(id: &str) -> bool {
    id.len() == 12 && id.bytes().all(|b| b.is_ascii_digit())
}

/// Whether `arn` is an IAM role ARN (`arn:<partition>:iam::<account>:role/<path/name>`).
pub fn is_role_arn(arn: &str) -> bool {
    static RE: std::sync::OnceLock<regex_lite::Regex> = std::sync::OnceLock::new();
    RE.get_or_init(|| {
        regex_lite::Regex::new(r"^arn:aws[a-z-]*:iam::[0-9]{12}:role/[A-Za-z0-9_+=,.@/-]+$").expect("valid regex")
    })
    .is_match(arn)
        && arn.len() <= 2048
}

/// Whether `name` is a role session name (2-64 of `[\w+=,.@-]`).
pub fn is_session_name(name: &str) -> bool {
    (2..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_+=,.@-".contains(&b))
}

/// A role session duration: 15 minutes to 12 hours.
///
/// # Errors
/// A sentence saying what is allowed.
pub fn session_duration(text: &str) -> Result<std::time::Duration, String> {
    humantime::parse_duration(text)
        .ok()
        .filter(|d| (900..=43_200).contains(&d.as_secs()))
        .ok_or_else(|| format!("{text:?} is not a role session duration: use e.g. \"1h\" or \"90m\", from 15m to 12h."))
}

/// Whether `name` looks like an AWS region (`ap-northeast-1`, `us-gov-west-1`).
pub fn is_region_name(name: &str) -> bool {
    static RE: std::sync::OnceLock<regex_lite::Regex> = std::sync::OnceLock::new();
    RE.get_or_init(|| regex_lite::Regex::new(r"^[a-z]{2}(-[a-z]+)+-\d+$").expect("valid regex"))
        .is_match(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aws_names() {
        assert!(is_role_arn("arn:aws:iam::123456789012:role/locality"));
        assert!(is_role_arn("arn:aws-us-gov:iam::123456789012:role/path/to/ci-role"));
        assert!(!is_role_arn("locality"));
        assert!(!is_role_arn("arn:aws:iam::12345:role/x"));
        assert!(is_account_id("123456789012") && !is_account_id("12345678901a"));
        assert!(is_session_name("ci-run") && !is_session_name("a") && !is_session_name("has space"));
        assert!(session_duration("1h").is_ok() && session_duration("10m").is_err() && session_duration("13h").is_err());
    }

    #[test]
    fn base_urls() {
        assert!(check_base_url("https://api.cloudflare.com/client/v4").is_ok());
        assert!(check_base_url("http://127.0.0.1:8080/v4").is_ok());
        assert!(check_base_url("http://[::1]:8080").is_ok());
        assert!(check_base_url("http://localhost:1").is_ok());
        assert!(check_base_url("http://example.com").unwrap_err().contains("https"));
        assert!(check_base_url("ftp://127.0.0.1").is_err());
        assert!(check_base_url("api.cloudflare.com").is_err());
        // Issue 11: the host is the one after the userinfo, and userinfo is refused.
        assert!(check_base_url("http://127.0.0.1:1@evil.example/client/v4").is_err());
        assert!(check_base_url("https://user:pw@api.cloudflare.com/client/v4").is_err());
        assert!(check_base_url("http://[::1]@evil.example/").is_err());
        assert!(check_base_url("http://evil.example#@127.0.0.1/").is_err());
    }

    #[test]
    fn secrets_do_not_print() {
        let s = Secret::new("hunter2");
        assert!(!format!("{s:?}").contains("hunter2"));
        let c = CloudflareConfig {
            api_token: Some(s),
            base_url: String::new(),
        };
        assert!(!format!("{c:?}").contains("hunter2"));
    }
}
