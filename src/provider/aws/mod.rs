//! AWS access for `locality_zone_replica_map`: ElastiCache topology discovery, Secrets Manager
//! and SSM Parameter Store (official SDK crates, lean features). Region and endpoint come from
//! the provider's `aws` block, else the standard AWS chain. Credentials come from the chain —
//! environment, web identity (`AWS_WEB_IDENTITY_TOKEN_FILE`: EKS IRSA, GitHub OIDC), the shared
//! files' profiles (static keys, `source_profile` roles, `credential_process`, IAM Identity
//! Center), container and instance roles — optionally narrowed to one `profile` and to other
//! shared files, optionally used to assume a role; STS tells whose account they are. They are
//! never logged. Knows nothing about Terraform.

pub mod lb_forward;
pub mod lb_weights;

use std::collections::BTreeMap;
use std::time::Duration;

use aws_sdk_elasticache::error::SdkError;

/// How long AWS calls may take, so that a silent endpoint fails the plan instead of hanging it.
#[derive(Debug, Clone, Copy)]
pub struct Timeouts {
    /// Connecting.
    pub connect: Duration,
    /// Waiting for the first byte of a response (and each attempt as a whole).
    pub read: Duration,
    /// A call as a whole, retries included.
    pub operation: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            connect: Duration::from_secs(10),
            read: Duration::from_secs(30),
            operation: Duration::from_secs(90),
        }
    }
}

/// How an SSM parameter is stored: its type, KMS key and tier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParameterKind {
    /// `SecureString` (encrypted with KMS) rather than `String`.
    pub secure: bool,
    /// The KMS key of a `SecureString` (`None`: the account's `alias/aws/ssm`).
    pub key_id: Option<String>,
    /// `Standard`, `Advanced` or `Intelligent-Tiering`.
    pub tier: String,
}

impl Default for ParameterKind {
    fn default() -> Self {
        ParameterKind {
            secure: false,
            key_id: None,
            tier: "Standard".into(),
        }
    }
}

/// Most tags AWS allows on one resource.
pub const MAX_TAGS: usize = 50;

/// What is wrong with a tag, by AWS's rules (key 1 to 128 characters, not starting with
/// `aws:`; value at most 256), as a sentence; `None` when it is fine.
pub fn tag_problem(key: &str, value: &str) -> Option<String> {
    let key_ok = (1..=128).contains(&key.chars().count()) && !key.to_ascii_lowercase().starts_with("aws:");
    let value_ok = value.chars().count() <= 256;
    (!key_ok || !value_ok).then(|| {
        format!(
            "Tag {key:?}: keys are 1-128 characters and do not start with \"aws:\"; values are at most 256 characters."
        )
    })
}

fn ssm_tag(key: &str, value: &str) -> Result<aws_sdk_ssm::types::Tag, AwsError> {
    aws_sdk_ssm::types::Tag::builder()
        .key(key)
        .value(value)
        .build()
        .map_err(|e| AwsError::Sdk(format!("tag {key:?}: {e}")))
}

/// One node of a replication group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// `host:port` of its read endpoint.
    pub endpoint: String,
    /// Its AZ.
    pub zone: String,
    /// `primary` or `replica`.
    pub role: String,
    /// Its node group (shard) ID, in cluster mode.
    pub shard: Option<String>,
}

/// A discovered topology.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Discovered {
    /// The nodes.
    pub nodes: Vec<Node>,
    /// The reader endpoint, when the API returns one.
    pub reader_endpoint: Option<String>,
    /// The primary endpoint (used as the fallback when there is no reader endpoint).
    pub primary_endpoint: Option<String>,
    /// A cluster-mode-enabled group's configuration endpoint.
    pub configuration_endpoint: Option<String>,
    /// Nodes whose endpoint DescribeCacheClusters did not give, named from the configuration
    /// endpoint as ElastiCache names them (`clustercfg.X` → `<cache cluster ID>.X`).
    pub named_from_configuration: Vec<String>,
}

/// What can go wrong.
#[derive(Debug, thiserror::Error)]
pub enum AwsError {
    /// The replication group, secret or parameter does not exist.
    #[error("{0} not found")]
    NotFound(String),
    /// The parameter already exists (create refuses to take it over).
    #[error("{0} already exists")]
    AlreadyExists(String),
    /// Anything else the SDK reports (access denied, throttling, ...), with its full context.
    #[error("{0}")]
    Sdk(String),
    /// No usable response (connection lost, timeout, unreadable answer) after the SDK's
    /// retries: a write may have been applied.
    #[error("{0}")]
    Unconfirmed(String),
}

/// An SDK error as one sentence: `what` (the operation and the resource), then the service's
/// error code and message or the chain of causes — never the raw response (a Secrets Manager
/// body holds secrets), never headers (locality_resolve::aws_error, shared with the CLI).
fn sdk<E, R>(what: &str, e: SdkError<E, R>) -> AwsError
where
    E: aws_sdk_elasticache::error::ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug + 'static,
{
    let unconfirmed = matches!(
        e,
        SdkError::DispatchFailure(_) | SdkError::TimeoutError(_) | SdkError::ResponseError(_)
    );
    let text = locality_resolve::aws_error::describe(what, &e);
    if unconfirmed {
        AwsError::Unconfirmed(text)
    } else {
        AwsError::Sdk(text)
    }
}

/// The only region Cost Explorer's API is served from (for the `aws` partition).
pub const COST_EXPLORER_REGION: &str = "us-east-1";

/// What [`Aws::daily_cost`] asks Cost Explorer.
#[derive(Debug, Clone, Default)]
pub struct CostQuery {
    /// First day, `YYYY-MM-DD` (inclusive).
    pub start: String,
    /// Last day, `YYYY-MM-DD` (exclusive).
    pub end: String,
    /// Usage types whose name contains this count (`DataTransfer-Regional-Bytes` matches every
    /// region's, `APN1-DataTransfer-Regional-Bytes` …).
    pub usage_type_pattern: String,
    /// Only this service (`SERVICE` dimension).
    pub service: Option<String>,
    /// Only this linked account (`LINKED_ACCOUNT` dimension).
    pub linked_account: Option<String>,
    /// Only resources with this cost allocation tag (key, value).
    pub tag: Option<(String, String)>,
}

/// One day of cost and usage.
#[derive(Debug, Clone, PartialEq)]
pub struct DailyCost {
    /// `YYYY-MM-DD`.
    pub date: String,
    /// Unblended cost, USD.
    pub usd: f64,
    /// Usage quantity (GB for data transfer).
    pub gb: f64,
}

/// What Cost Explorer answered: the matching usage types per day, and what else it saw.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CostReport {
    /// Per day, oldest first.
    pub days: Vec<DailyCost>,
    /// How many (day, usage type) groups matched the pattern.
    pub matched_groups: u64,
    /// The usage types that did not match (escaped and cut), with their cost over the window
    /// (USD).
    pub other_usage_types: std::collections::BTreeMap<String, f64>,
    /// Amounts that are not a finite, non-negative number, left out of the sums: `day usage
    /// type metric = amount`.
    pub bad_amounts: Vec<String>,
    /// Days whose `TimePeriod.Start` is not a real `YYYY-MM-DD` date of the window asked for,
    /// escaped (the first 20): left out.
    pub bad_dates: Vec<String>,
    /// How many more such days there were.
    pub more_bad_dates: u64,
}

/// `text` quoted, escaped and cut to 40 characters, as a diagnostic names a value it refused.
fn printable_cut_debug(text: &str) -> String {
    format!(
        "\"{}\"",
        locality_resolve::printable::printable_cut(text, 40).replace('"', "\\\"")
    )
}

/// The most one usage type's amount may be on one day (USD or GB): 10^12.
pub const MOST_DAILY_AMOUNT: f64 = 1e12;

/// Whether `text` is a real `YYYY-MM-DD` date as Cost Explorer writes them (never
/// `0001-02-31`: the day exists in its month, leap years counted).
fn is_date(text: &str) -> bool {
    let bytes = text.as_bytes();
    let shaped = bytes.len() == 10
        && bytes.iter().enumerate().all(|(i, b)| {
            if i == 4 || i == 7 {
                *b == b'-'
            } else {
                b.is_ascii_digit()
            }
        });
    if !shaped {
        return false;
    }
    let (Ok(year), Ok(month), Ok(day)) = (
        text[0..4].parse::<u32>(),
        text[5..7].parse::<u32>(),
        text[8..10].parse::<u32>(),
    ) else {
        return false;
    };
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let last = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    year >= 1 && (1..=last).contains(&day)
}

/// A usage type or amount from Cost Explorer as a diagnostic shows it: escaped, at most 120
/// characters (a forged "Apply complete!" line, a terminal's escape, cannot pass).
fn shown(text: &str) -> String {
    locality_resolve::printable::printable_cut(text, 120)
}

/// Most pages of one GetCostAndUsage query (a year of days grouped by usage type is a few).
pub const COST_PAGES_MAX: usize = 100;

/// The SDK clients of one provider process.
#[derive(Clone)]
pub struct Aws {
    elasticache: aws_sdk_elasticache::Client,
    secrets: aws_sdk_secretsmanager::Client,
    ssm: aws_sdk_ssm::Client,
    sts: aws_sdk_sts::Client,
    /// Cost Explorer: served from us-east-1 only, whatever the block's region.
    cost_explorer: aws_sdk_costexplorer::Client,
    /// Elastic Load Balancing v2: the weights of a listener's or rule's forward action.
    elbv2: aws_sdk_elasticloadbalancingv2::Client,
    /// The region calls go to (the block's, else the chain's).
    region: Option<String>,
    /// No region from the block or the chain: every call fails, and says why.
    no_region: bool,
    /// `AWS_PROFILE` names a profile the shared files do not hold (the block names none):
    /// every call fails for want of credentials, and says this instead of the next source's
    /// failure ("IMDS is disabled"). Checked when AWS is first used, so a configuration that
    /// uses no AWS resource is not troubled by a stray AWS_PROFILE.
    profile_problem: Option<String>,
}

/// Credentials that are never given: the shared files were refused ([`Aws::load`]), and every
/// call says why.
#[derive(Debug)]
struct Refused(String);

impl aws_credential_types::provider::ProvideCredentials for Refused {
    fn provide_credentials<'a>(&'a self) -> aws_credential_types::provider::future::ProvideCredentials<'a>
    where
        Self: 'a,
    {
        aws_credential_types::provider::future::ProvideCredentials::ready(Err(
            aws_credential_types::provider::error::CredentialsError::not_loaded(self.0.clone()),
        ))
    }
}

/// What [`Aws::load`] takes from the provider's `aws` block.
#[derive(Debug, Clone, Default)]
pub struct AwsSettings {
    /// Region; `None`: the chain's.
    pub region: Option<String>,
    /// Endpoint override for every service.
    pub endpoint_url: Option<String>,
    /// Named profile; `None`: the chain's.
    pub profile: Option<String>,
    /// Shared config files instead of the default one.
    pub shared_config_files: Vec<String>,
    /// Shared credentials files instead of the default one.
    pub shared_credentials_files: Vec<String>,
    /// A role to assume.
    pub assume_role: Option<RoleSettings>,
    /// The application name the SDK puts in its User-Agent (`app/…`).
    pub app_name: Option<String>,
}

/// A role to assume.
#[derive(Clone, Default)]
pub struct RoleSettings {
    /// The role's ARN.
    pub role_arn: String,
    /// The session name.
    pub session_name: String,
    /// The external ID (a secret of sorts: never logged).
    pub external_id: Option<String>,
    /// The session length.
    pub duration: Option<Duration>,
}

impl std::fmt::Debug for RoleSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RoleSettings")
            .field("role_arn", &self.role_arn)
            .field("session_name", &self.session_name)
            .field("external_id", &self.external_id.as_ref().map(|_| "(set)"))
            .field("duration", &self.duration)
            .finish()
    }
}

impl AwsSettings {
    /// The shared files to read, when the block names any (each kind it does not name stays
    /// the default one).
    fn profile_files(&self) -> Option<aws_runtime::env_config::file::EnvConfigFiles> {
        use aws_runtime::env_config::file::{EnvConfigFileKind, EnvConfigFiles};
        if self.shared_config_files.is_empty() && self.shared_credentials_files.is_empty() {
            return None;
        }
        let mut builder = EnvConfigFiles::builder()
            .include_default_config_file(self.shared_config_files.is_empty())
            .include_default_credentials_file(self.shared_credentials_files.is_empty());
        // (The SDK expands `~` only in its default paths: a file named here is expanded first,
        // so `~/.aws/config`, as the AWS provider's docs write it, works.)
        for file in &self.shared_config_files {
            builder = builder.with_file(EnvConfigFileKind::Config, expand_home(file));
        }
        for file in &self.shared_credentials_files {
            builder = builder.with_file(EnvConfigFileKind::Credentials, expand_home(file));
        }
        Some(builder.build())
    }

    /// The shared files the SDK would read, each with what named it: the block's
    /// `shared_config_files` and `shared_credentials_files`, and for a kind it does not name
    /// the default (`AWS_CONFIG_FILE` / `AWS_SHARED_CREDENTIALS_FILE`, else `~/.aws/...`).
    /// (Unix: where a file has an owner to judge.)
    #[cfg(unix)]
    fn shared_files(&self) -> Vec<(String, std::path::PathBuf)> {
        let mut files = Vec::new();
        for (attribute, named, config) in [
            ("shared_config_files", &self.shared_config_files, true),
            ("shared_credentials_files", &self.shared_credentials_files, false),
        ] {
            if named.is_empty() {
                files.extend(locality_resolve::aws_error::default_shared_file(config));
            } else {
                files.extend(
                    named
                        .iter()
                        .map(|f| (format!("`{attribute}` in the aws block"), expand_home(f))),
                );
            }
        }
        files
    }

    /// Checks what can be checked without a network: the named shared files exist, and the
    /// named profile is in them.
    ///
    /// # Errors
    /// `(attribute, sentence)` for each problem.
    pub async fn check_files(&self) -> Vec<(&'static str, String)> {
        let mut problems = Vec::new();
        for (attribute, files) in [
            ("shared_config_files", &self.shared_config_files),
            ("shared_credentials_files", &self.shared_credentials_files),
        ] {
            for file in files {
                let path = expand_home(file);
                if !path.is_file() {
                    problems.push((attribute, format!("{file:?} is not a readable file.")));
                }
            }
        }
        let Some(profile) = &self.profile else {
            return problems;
        };
        if !problems.is_empty() {
            return problems;
        }
        // Without files named in the block: the SDK's defaults (`~/.aws/config`,
        // `~/.aws/credentials`, or AWS_CONFIG_FILE / AWS_SHARED_CREDENTIALS_FILE), as the loader
        // reads them.
        let files = self.profile_files();
        if let Some(problem) = locality_resolve::aws_error::missing_profile(profile, false, files.as_ref()).await {
            problems.push(("profile", problem));
        }
        problems
    }
}

/// `~/x` → `$HOME/x`, as the SDK reads shared-file paths.
fn expand_home(path: &str) -> std::path::PathBuf {
    match (path.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => std::path::Path::new(&home).join(rest),
        _ => std::path::PathBuf::from(path),
    }
}

impl Aws {
    /// Loads the shared AWS configuration once: `region`, `endpoint_url`, `profile` and the
    /// shared files override the chain; with `assume_role`, every call uses the role's
    /// credentials (refreshed before they expire).
    pub async fn load(settings: &AwsSettings) -> Aws {
        Self::load_with(settings, Timeouts::default()).await
    }

    /// [`Aws::load`] with other timeouts.
    pub async fn load_with(settings: &AwsSettings, timeouts: Timeouts) -> Aws {
        let timeout_config = aws_config::timeout::TimeoutConfig::builder()
            .connect_timeout(timeouts.connect)
            .read_timeout(timeouts.read)
            .operation_attempt_timeout(timeouts.read)
            .operation_timeout(timeouts.operation)
            .build();
        // Every request — the services', STS's for roles and web identity, SSO's — goes through
        // the https-or-loopback guard, whatever set its endpoint.
        let mut loader = aws_config::defaults(aws_config::BehaviorVersion::latest())
            .timeout_config(timeout_config)
            .http_client(locality_resolve::aws_error::guarded_http_client());
        if let Some(r) = &settings.region {
            loader = loader.region(aws_config::Region::new(r.clone()));
        }
        if let Some(url) = &settings.endpoint_url {
            loader = loader.endpoint_url(url);
        }
        if let Some(profile) = &settings.profile {
            loader = loader.profile_name(profile);
        }
        if let Some(name) = settings
            .app_name
            .clone()
            .and_then(|n| aws_types::app_name::AppName::new(n).ok())
        {
            loader = loader.app_name(name);
        }
        if let Some(files) = settings.profile_files() {
            loader = loader.profile_files(files);
        }
        let mut profile_problem = None;
        // Running as root, shared files that another user owns or could write are not read at
        // all (their credential_process would run as root): no shared file, and credentials
        // that fail with the reason, so that every call says it.
        #[cfg(unix)]
        let refused = locality_resolve::aws_error::shared_files_refused(&settings.shared_files());
        #[cfg(not(unix))]
        let refused: Option<String> = None;
        if let Some(problem) = refused {
            use aws_runtime::env_config::file::{EnvConfigFileKind, EnvConfigFiles};
            // (The SDK wants one file at least: an empty one.)
            let none = EnvConfigFiles::builder()
                .include_default_config_file(false)
                .include_default_credentials_file(false)
                .with_file(EnvConfigFileKind::Config, "/dev/null")
                .build();
            loader = loader.profile_files(none).credentials_provider(
                aws_credential_types::provider::SharedCredentialsProvider::new(Refused(problem.clone())),
            );
            profile_problem = Some(problem);
        } else if let (None, Some(profile)) = (&settings.profile, locality_resolve::aws_error::env_profile()) {
            profile_problem =
                locality_resolve::aws_error::missing_profile(&profile, true, settings.profile_files().as_ref()).await;
        }
        let mut config = loader.load().await;
        if let Some(role) = &settings.assume_role {
            let mut builder = aws_config::sts::AssumeRoleProvider::builder(role.role_arn.clone())
                .session_name(role.session_name.clone())
                .configure(&config);
            if let Some(id) = &role.external_id {
                builder = builder.external_id(id.clone());
            }
            if let Some(length) = role.duration {
                builder = builder.session_length(length);
            }
            let provider = builder.build().await;
            config = config
                .into_builder()
                .credentials_provider(aws_credential_types::provider::SharedCredentialsProvider::new(provider))
                .build();
        }
        Aws {
            elasticache: aws_sdk_elasticache::Client::new(&config),
            secrets: aws_sdk_secretsmanager::Client::new(&config),
            ssm: aws_sdk_ssm::Client::new(&config),
            sts: aws_sdk_sts::Client::new(&config),
            cost_explorer: aws_sdk_costexplorer::Client::from_conf(
                aws_sdk_costexplorer::config::Builder::from(&config)
                    .region(aws_config::Region::new(COST_EXPLORER_REGION))
                    .build(),
            ),
            elbv2: aws_sdk_elasticloadbalancingv2::Client::new(&config),
            region: config.region().map(|r| r.as_ref().to_string()),
            no_region: config.region().is_none(),
            profile_problem,
        }
    }

    /// An SDK error of `what`, as [`sdk`] says it; without a region, that is the cause.
    fn sdk<E, R>(&self, what: &str, e: SdkError<E, R>) -> AwsError
    where
        E: aws_sdk_elasticache::error::ProvideErrorMetadata + std::error::Error + 'static,
        R: std::fmt::Debug + 'static,
    {
        if let Some(problem) = &self.profile_problem {
            return AwsError::Sdk(format!("{what}: {problem}"));
        }
        if self.no_region {
            return AwsError::Sdk(format!(
                "{what}: {} (or `region` in the provider's aws block)",
                locality_resolve::aws_error::NO_REGION
            ));
        }
        sdk(what, e)
    }

    /// The region calls go to: the `aws` block's, else the standard chain's.
    pub fn region(&self) -> Option<&str> {
        self.region.as_deref()
    }

    /// The action list of a listener's default action (DescribeListeners) or of a rule
    /// (DescribeRules), and whether that rule is its listener's default rule.
    ///
    /// # Errors
    /// [`AwsError::NotFound`] when the listener or rule does not exist; else the SDK's error.
    pub async fn forward_actions(&self, target: &lb_forward::Target) -> Result<lb_forward::LiveActions, AwsError> {
        let not_found = |e: &dyn aws_sdk_elasticloadbalancingv2::error::ProvideErrorMetadata| {
            matches!(
                e.code(),
                Some("ListenerNotFound" | "RuleNotFound" | "LoadBalancerNotFound")
            )
        };
        match &target.rule_id {
            None => {
                tracing::debug!(aws_call = "elasticloadbalancing:DescribeListeners");
                let out = match self.elbv2.describe_listeners().listener_arns(&target.arn).send().await {
                    Ok(out) => out,
                    Err(e) if e.as_service_error().is_some_and(|s| not_found(s)) => {
                        return Err(AwsError::NotFound(format!("listener {}", target.arn)))
                    }
                    Err(e) => {
                        return Err(self.sdk(&format!("elasticloadbalancing:DescribeListeners {}", target.arn), e))
                    }
                };
                let listener = out
                    .listeners()
                    .iter()
                    .find(|l| l.listener_arn() == Some(target.arn.as_str()))
                    .ok_or_else(|| AwsError::NotFound(format!("listener {}", target.arn)))?;
                Ok(lb_forward::LiveActions {
                    actions: listener.default_actions().to_vec(),
                    default_rule: false,
                })
            }
            Some(_) => {
                tracing::debug!(aws_call = "elasticloadbalancing:DescribeRules");
                let out = match self.elbv2.describe_rules().rule_arns(&target.arn).send().await {
                    Ok(out) => out,
                    Err(e) if e.as_service_error().is_some_and(|s| not_found(s)) => {
                        return Err(AwsError::NotFound(format!("listener rule {}", target.arn)))
                    }
                    Err(e) => return Err(self.sdk(&format!("elasticloadbalancing:DescribeRules {}", target.arn), e)),
                };
                let rule = out
                    .rules()
                    .iter()
                    .find(|r| r.rule_arn() == Some(target.arn.as_str()))
                    .ok_or_else(|| AwsError::NotFound(format!("listener rule {}", target.arn)))?;
                Ok(lb_forward::LiveActions {
                    actions: rule.actions().to_vec(),
                    default_rule: rule.is_default() == Some(true),
                })
            }
        }
    }

    /// Writes a whole action list back: ModifyListener's `DefaultActions` for a listener and
    /// for a listener's default rule (AWS refuses ModifyRule on it), ModifyRule's `Actions`
    /// for any other rule. Conditions, priority, port, protocol and certificates are not sent,
    /// so AWS keeps them.
    ///
    /// # Errors
    /// The SDK's error; [`AwsError::Unconfirmed`] when no answer came (the write may be applied).
    pub async fn write_actions(
        &self,
        target: &lb_forward::Target,
        default_rule: bool,
        actions: Vec<aws_sdk_elasticloadbalancingv2::types::Action>,
    ) -> Result<(), AwsError> {
        if target.rule_id.is_none() || default_rule {
            tracing::debug!(aws_call = "elasticloadbalancing:ModifyListener");
            self.elbv2
                .modify_listener()
                .listener_arn(&target.listener_arn)
                .set_default_actions(Some(actions))
                .send()
                .await
                .map_err(|e| {
                    self.sdk(
                        &format!("elasticloadbalancing:ModifyListener {}", target.listener_arn),
                        e,
                    )
                })?;
        } else {
            tracing::debug!(aws_call = "elasticloadbalancing:ModifyRule");
            self.elbv2
                .modify_rule()
                .rule_arn(&target.arn)
                .set_actions(Some(actions))
                .send()
                .await
                .map_err(|e| self.sdk(&format!("elasticloadbalancing:ModifyRule {}", target.arn), e))?;
        }
        Ok(())
    }

    /// STS GetCallerIdentity: the account the credentials belong to.
    ///
    /// # Errors
    /// No credentials, refused credentials, a role that cannot be assumed: the SDK's error.
    pub async fn caller_account(&self) -> Result<String, AwsError> {
        tracing::debug!(aws_call = "sts:GetCallerIdentity");
        let out = self
            .sts
            .get_caller_identity()
            .send()
            .await
            .map_err(|e| self.sdk("sts:GetCallerIdentity", e))?;
        out.account()
            .map(str::to_string)
            .ok_or_else(|| AwsError::Sdk("STS GetCallerIdentity returned no account".into()))
    }

    /// Cost Explorer GetCostAndUsage, DAILY, grouped by usage type (every page): the unblended
    /// cost and usage of the usage types whose name contains the query's pattern, per day.
    ///
    /// # Errors
    /// The SDK's error (AccessDenied names `ce:GetCostAndUsage`).
    pub async fn daily_cost(&self, query: &CostQuery) -> Result<CostReport, AwsError> {
        use aws_sdk_costexplorer::types::{
            DateInterval, Dimension, DimensionValues, Expression, Granularity, GroupDefinition, GroupDefinitionType,
            TagValues,
        };
        let what = format!(
            "ce:GetCostAndUsage from {} to {} (the credentials need ce:GetCostAndUsage; Cost Explorer answers from {COST_EXPLORER_REGION})",
            query.start, query.end
        );
        let dimension = |key: Dimension, value: &str| {
            Expression::builder()
                .dimensions(DimensionValues::builder().key(key).values(value).build())
                .build()
        };
        let mut filters = Vec::new();
        if let Some(service) = &query.service {
            filters.push(dimension(Dimension::Service, service));
        }
        if let Some(account) = &query.linked_account {
            filters.push(dimension(Dimension::LinkedAccount, account));
        }
        if let Some((key, value)) = &query.tag {
            filters.push(
                Expression::builder()
                    .tags(TagValues::builder().key(key).values(value).build())
                    .build(),
            );
        }
        let filter = match filters.len() {
            0 => None,
            1 => filters.pop(),
            _ => Some(Expression::builder().set_and(Some(filters)).build()),
        };
        let period = DateInterval::builder()
            .start(&query.start)
            .end(&query.end)
            .build()
            .map_err(|e| AwsError::Sdk(format!("{what}: {e}")))?;
        let mut report = CostReport::default();
        let mut by_date: std::collections::BTreeMap<String, (f64, f64)> = std::collections::BTreeMap::new();
        let mut token: Option<String> = None;
        let mut tokens_seen: std::collections::HashSet<String> = std::collections::HashSet::new();
        let mut pages = 0usize;
        loop {
            pages += 1;
            if pages > COST_PAGES_MAX {
                return Err(AwsError::Sdk(format!(
                    "{what}: Cost Explorer gave more than {COST_PAGES_MAX} pages of results (a year of days grouped by usage type is a few): stopped; narrow the window or the filters"
                )));
            }
            tracing::debug!(aws_call = "ce:GetCostAndUsage", page = pages);
            let out = self
                .cost_explorer
                .get_cost_and_usage()
                .time_period(period.clone())
                .granularity(Granularity::Daily)
                .metrics("UnblendedCost")
                .metrics("UsageQuantity")
                .group_by(
                    GroupDefinition::builder()
                        .r#type(GroupDefinitionType::Dimension)
                        .key("USAGE_TYPE")
                        .build(),
                )
                .set_filter(filter.clone())
                .set_next_page_token(token.clone())
                .send()
                .await
                .map_err(|e| self.sdk(&what, e))?;
            for result in out.results_by_time() {
                let Some(date) = result.time_period().map(|p| p.start().to_string()) else {
                    continue;
                };
                // Only the window's real days: a day outside it (or that no calendar has) would
                // add entries to `daily` that the query never asked for.
                if !is_date(&date) || date.as_str() < query.start.as_str() || date.as_str() >= query.end.as_str() {
                    if report.bad_dates.len() < 20 {
                        report.bad_dates.push(printable_cut_debug(&date));
                    } else {
                        report.more_bad_dates += 1;
                    }
                    continue;
                }
                let day = by_date.entry(date.clone()).or_default();
                for group in result.groups() {
                    let usage_type = group.keys().join(" ");
                    let mut amount = |metric: &str| -> f64 {
                        let text = group
                            .metrics()
                            .and_then(|m| m.get(metric))
                            .and_then(|v| v.amount())
                            .unwrap_or("0");
                        match text.trim().parse::<f64>() {
                            // At most 10^12 (USD or GB) a day for one usage type: more than any
                            // account's; past it the sums and their rounding would overflow.
                            Ok(value) if value.is_finite() && (0.0..=MOST_DAILY_AMOUNT).contains(&value) => value,
                            _ => {
                                if report.bad_amounts.len() < 20 {
                                    report.bad_amounts.push(format!(
                                        "{date} {} {metric} = {}",
                                        shown(&usage_type),
                                        printable_cut_debug(text)
                                    ));
                                }
                                0.0
                            }
                        }
                    };
                    let (usd, gb) = (amount("UnblendedCost"), amount("UsageQuantity"));
                    if group.keys().iter().any(|k| k.contains(&query.usage_type_pattern)) {
                        report.matched_groups += 1;
                        day.0 += usd;
                        day.1 += gb;
                    } else {
                        let usage_type = shown(&usage_type);
                        if report.other_usage_types.len() < 1_000 || report.other_usage_types.contains_key(&usage_type)
                        {
                            *report.other_usage_types.entry(usage_type).or_default() += usd;
                        }
                    }
                }
            }
            token = out.next_page_token().map(str::to_string).filter(|t| !t.is_empty());
            match &token {
                None => break,
                Some(t) if !tokens_seen.insert(t.clone()) => {
                    return Err(AwsError::Sdk(format!(
                        "{what}: Cost Explorer gave a page token it had given before (page {pages}): stopped rather than ask for the same pages forever"
                    )));
                }
                Some(_) => {}
            }
        }
        report.days = by_date
            .into_iter()
            .map(|(date, (usd, gb))| DailyCost { date, usd, gb })
            .collect();
        Ok(report)
    }

    /// DescribeReplicationGroups: members, AZs, roles and read endpoints. A cluster-mode-enabled
    /// group's members have no read endpoint there: theirs come from DescribeCacheClusters
    /// (`ShowCacheNodeInfo`), and where that gives none (emulators), from the configuration
    /// endpoint as ElastiCache names nodes; their role, which ElastiCache reports only for
    /// cluster-mode-disabled groups, is the one each shard was created with (the member `-001`
    /// is its primary).
    ///
    /// # Errors
    /// [`AwsError::NotFound`], or the SDK's error.
    pub async fn discover(&self, group: &str) -> Result<Discovered, AwsError> {
        tracing::debug!(aws_call = "elasticache:DescribeReplicationGroups");
        let output = self
            .elasticache
            .describe_replication_groups()
            .replication_group_id(group)
            .send()
            .await
            .map_err(|e| {
                if e.as_service_error()
                    .is_some_and(|s| s.is_replication_group_not_found_fault())
                {
                    AwsError::NotFound(format!("replication group {group:?}"))
                } else {
                    self.sdk(&format!("elasticache:DescribeReplicationGroups of {group:?}"), e)
                }
            })?;
        let rg = output
            .replication_groups()
            .first()
            .ok_or_else(|| AwsError::NotFound(format!("replication group {group:?}")))?;
        let endpoint = |e: Option<&aws_sdk_elasticache::types::Endpoint>| {
            e.and_then(|e| Some(format!("{}:{}", e.address()?, e.port().unwrap_or(6379))))
        };
        let cluster_mode = rg.cluster_enabled() == Some(true) || rg.node_groups().len() > 1;
        let configuration_endpoint = if cluster_mode {
            endpoint(rg.configuration_endpoint())
        } else {
            None
        };
        let cache_nodes = if cluster_mode {
            self.cache_node_endpoints(group).await?
        } else {
            BTreeMap::new()
        };
        let mut nodes = Vec::new();
        let mut named_from_configuration = Vec::new();
        let (mut reader, mut primary) = (None, None);
        for ng in rg.node_groups() {
            reader = reader.or_else(|| endpoint(ng.reader_endpoint()));
            primary = primary.or_else(|| endpoint(ng.primary_endpoint()));
            for m in ng.node_group_members() {
                let Some(zone) = m.preferred_availability_zone() else {
                    continue;
                };
                let cluster_id = m.cache_cluster_id().unwrap_or_default();
                let found = endpoint(m.read_endpoint()).or_else(|| cache_nodes.get(cluster_id).cloned());
                let found = found.or_else(|| {
                    let named = configuration_endpoint
                        .as_deref()?
                        .strip_prefix("clustercfg.")
                        .filter(|_| !cluster_id.is_empty())
                        .map(|rest| format!("{cluster_id}.{rest}"))?;
                    named_from_configuration.push(cluster_id.to_string());
                    Some(named)
                });
                let Some(ep) = found else {
                    continue;
                };
                let role = match m.current_role() {
                    Some(role) => role.to_string(),
                    None if cluster_mode && cluster_id.ends_with("-001") => "primary".to_string(),
                    None => "replica".to_string(),
                };
                nodes.push(Node {
                    endpoint: ep,
                    zone: zone.to_string(),
                    role,
                    shard: if cluster_mode {
                        ng.node_group_id().map(str::to_string)
                    } else {
                        None
                    },
                });
            }
        }
        Ok(Discovered {
            nodes,
            reader_endpoint: reader,
            primary_endpoint: primary,
            configuration_endpoint,
            named_from_configuration,
        })
    }

    /// DescribeCacheClusters (`ShowCacheNodeInfo`, every page): cache cluster ID → `host:port`
    /// of its node, for the clusters of `group`.
    async fn cache_node_endpoints(&self, group: &str) -> Result<BTreeMap<String, String>, AwsError> {
        tracing::debug!(aws_call = "elasticache:DescribeCacheClusters");
        let mut found = BTreeMap::new();
        let mut pages = self
            .elasticache
            .describe_cache_clusters()
            .show_cache_node_info(true)
            .into_paginator()
            .send();
        while let Some(page) = pages.next().await {
            let page = page.map_err(|e| self.sdk(&format!("elasticache:DescribeCacheClusters for {group:?}"), e))?;
            for cluster in page.cache_clusters() {
                if cluster.replication_group_id() != Some(group) {
                    continue;
                }
                let node = cluster.cache_nodes().first().and_then(|n| n.endpoint());
                if let (Some(id), Some(node)) = (cluster.cache_cluster_id(), node) {
                    if let Some(address) = node.address() {
                        found.insert(id.to_string(), format!("{address}:{}", node.port().unwrap_or(6379)));
                    }
                }
            }
        }
        Ok(found)
    }

    /// GetSecretValue: the current string and its VersionId; `None` when the secret (or its
    /// value) does not exist.
    ///
    /// # Errors
    /// The SDK's error.
    pub async fn read_secret(&self, secret: &str) -> Result<Option<(String, String)>, AwsError> {
        self.read_secret_stage(secret, "AWSCURRENT").await
    }

    /// GetSecretValue of the version with the staging label `AWSPREVIOUS`: the string and its
    /// VersionId; `None` when there is none.
    ///
    /// # Errors
    /// The SDK's error.
    pub async fn read_previous_secret(&self, secret: &str) -> Result<Option<(String, String)>, AwsError> {
        self.read_secret_stage(secret, "AWSPREVIOUS").await
    }

    async fn read_secret_stage(&self, secret: &str, stage: &str) -> Result<Option<(String, String)>, AwsError> {
        tracing::debug!(aws_call = "secretsmanager:GetSecretValue", stage);
        match self
            .secrets
            .get_secret_value()
            .secret_id(secret)
            .version_stage(stage)
            .send()
            .await
        {
            Ok(out) => Ok(Some((
                out.secret_string().unwrap_or_default().to_string(),
                out.version_id().unwrap_or_default().to_string(),
            ))),
            Err(e)
                if e.as_service_error()
                    .is_some_and(|s| s.is_resource_not_found_exception()) =>
            {
                Ok(None)
            }
            Err(e) => Err(self.sdk(
                &format!("secretsmanager:GetSecretValue ({stage}) of secret {secret:?}"),
                e,
            )),
        }
    }

    /// DescribeSecret: the VersionIds labelled `AWSCURRENT` and `AWSPREVIOUS`.
    ///
    /// # Errors
    /// The SDK's error.
    pub async fn secret_stages(&self, secret: &str) -> Result<(Option<String>, Option<String>), AwsError> {
        tracing::debug!(aws_call = "secretsmanager:DescribeSecret");
        let out = self
            .secrets
            .describe_secret()
            .secret_id(secret)
            .send()
            .await
            .map_err(|e| self.sdk(&format!("secretsmanager:DescribeSecret of secret {secret:?}"), e))?;
        let labelled = |stage: &str| {
            out.version_ids_to_stages()
                .and_then(|m| m.iter().find(|(_, stages)| stages.iter().any(|s| s == stage)))
                .map(|(id, _)| id.clone())
        };
        Ok((labelled("AWSCURRENT"), labelled("AWSPREVIOUS")))
    }

    /// PutSecretValue: a new version of an existing secret; returns its VersionId.
    ///
    /// # Errors
    /// [`AwsError::NotFound`] when the secret does not exist; the SDK's error otherwise.
    pub async fn write_secret(&self, secret: &str, value: &str) -> Result<String, AwsError> {
        tracing::debug!(aws_call = "secretsmanager:PutSecretValue");
        match self
            .secrets
            .put_secret_value()
            .secret_id(secret)
            .secret_string(value)
            .send()
            .await
        {
            Ok(out) => Ok(out.version_id().unwrap_or_default().to_string()),
            Err(e)
                if e.as_service_error()
                    .is_some_and(|s| s.is_resource_not_found_exception()) =>
            {
                Err(AwsError::NotFound(format!("secret {secret:?}")))
            }
            Err(e) => Err(self.sdk(&format!("secretsmanager:PutSecretValue of secret {secret:?}"), e)),
        }
    }

    /// GetParameter (decrypted, so a `SecureString` reads as the text written): value, version
    /// and type; `None` when it does not exist.
    ///
    /// # Errors
    /// The SDK's error.
    pub async fn read_parameter(&self, name: &str) -> Result<Option<(String, String)>, AwsError> {
        Ok(self
            .read_parameter_typed(name)
            .await?
            .map(|(value, version, _)| (value, version)))
    }

    /// [`Aws::read_parameter`] with the parameter's type (`String`, `SecureString`).
    ///
    /// # Errors
    /// The SDK's error.
    pub async fn read_parameter_typed(&self, name: &str) -> Result<Option<(String, String, String)>, AwsError> {
        tracing::debug!(aws_call = "ssm:GetParameter");
        match self.ssm.get_parameter().name(name).with_decryption(true).send().await {
            Ok(out) => {
                let p = out.parameter();
                Ok(Some((
                    p.and_then(|p| p.value()).unwrap_or_default().to_string(),
                    p.map_or(0, |p| p.version()).to_string(),
                    p.and_then(|p| p.r#type()).map_or("String", |t| t.as_str()).to_string(),
                )))
            }
            Err(e) if e.as_service_error().is_some_and(|s| s.is_parameter_not_found()) => Ok(None),
            Err(e) => Err(self.sdk(&format!("ssm:GetParameter of {name:?}"), e)),
        }
    }

    /// DescribeParameters of exactly this name: its KMS key and tier; `None` when it does not
    /// exist.
    ///
    /// # Errors
    /// The SDK's error.
    pub async fn parameter_settings(&self, name: &str) -> Result<Option<(Option<String>, String)>, AwsError> {
        tracing::debug!(aws_call = "ssm:DescribeParameters");
        let filter = aws_sdk_ssm::types::ParameterStringFilter::builder()
            .key("Name")
            .option("Equals")
            .values(name)
            .build()
            .map_err(|e| AwsError::Sdk(format!("ssm:DescribeParameters of {name:?}: {e}")))?;
        let out = self
            .ssm
            .describe_parameters()
            .parameter_filters(filter)
            .send()
            .await
            .map_err(|e| self.sdk(&format!("ssm:DescribeParameters of {name:?}"), e))?;
        Ok(out.parameters().iter().find(|p| p.name() == Some(name)).map(|p| {
            (
                p.key_id().map(str::to_string),
                p.tier().map_or("Standard", |t| t.as_str()).to_string(),
            )
        }))
    }

    /// PutParameter. `overwrite = false` refuses an existing parameter; `tags` are given only on
    /// a create (the API takes none with an overwrite).
    ///
    /// # Errors
    /// [`AwsError::AlreadyExists`], or the SDK's error.
    pub async fn write_parameter(
        &self,
        name: &str,
        value: &str,
        overwrite: bool,
        kind: &ParameterKind,
        tags: &BTreeMap<String, String>,
    ) -> Result<String, AwsError> {
        let mut put = self
            .ssm
            .put_parameter()
            .name(name)
            .value(value)
            .r#type(if kind.secure {
                aws_sdk_ssm::types::ParameterType::SecureString
            } else {
                aws_sdk_ssm::types::ParameterType::String
            })
            .set_key_id(kind.key_id.clone().filter(|_| kind.secure))
            .tier(aws_sdk_ssm::types::ParameterTier::from(kind.tier.as_str()))
            .overwrite(overwrite)
            .description("Per-AZ replica endpoint map, managed by Terraform (locality_zone_replica_map)");
        if !overwrite {
            for (key, value) in tags {
                put = put.tags(ssm_tag(key, value)?);
            }
        }
        tracing::debug!(aws_call = "ssm:PutParameter");
        match put.send().await {
            Ok(out) => Ok(out.version().to_string()),
            Err(e) if e.as_service_error().is_some_and(|s| s.is_parameter_already_exists()) => {
                Err(AwsError::AlreadyExists(format!("SSM parameter {name:?}")))
            }
            Err(e) => Err(self.sdk(&format!("ssm:PutParameter of {name:?}"), e)),
        }
    }

    /// ListTagsForResource of a parameter.
    ///
    /// # Errors
    /// The SDK's error.
    pub async fn parameter_tags(&self, name: &str) -> Result<BTreeMap<String, String>, AwsError> {
        tracing::debug!(aws_call = "ssm:ListTagsForResource");
        let out = self
            .ssm
            .list_tags_for_resource()
            .resource_type(aws_sdk_ssm::types::ResourceTypeForTagging::Parameter)
            .resource_id(name)
            .send()
            .await
            .map_err(|e| self.sdk(&format!("ssm:ListTagsForResource of {name:?}"), e))?;
        Ok(out
            .tag_list()
            .iter()
            .map(|t| (t.key().to_string(), t.value().to_string()))
            .collect())
    }

    /// Makes a parameter's tags `to` from `from`: AddTagsToResource for new and changed
    /// values, RemoveTagsFromResource for keys that go (only the calls needed).
    ///
    /// # Errors
    /// The SDK's error.
    pub async fn retag_parameter(
        &self,
        name: &str,
        from: &BTreeMap<String, String>,
        to: &BTreeMap<String, String>,
    ) -> Result<(), AwsError> {
        let added: Vec<_> = to.iter().filter(|(k, v)| from.get(*k) != Some(*v)).collect();
        let removed: Vec<String> = from.keys().filter(|k| !to.contains_key(*k)).cloned().collect();
        if !added.is_empty() {
            tracing::debug!(aws_call = "ssm:AddTagsToResource");
            let mut add = self
                .ssm
                .add_tags_to_resource()
                .resource_type(aws_sdk_ssm::types::ResourceTypeForTagging::Parameter)
                .resource_id(name);
            for (key, value) in added {
                add = add.tags(ssm_tag(key, value)?);
            }
            add.send()
                .await
                .map_err(|e| self.sdk(&format!("ssm:AddTagsToResource of {name:?}"), e))?;
        }
        if !removed.is_empty() {
            tracing::debug!(aws_call = "ssm:RemoveTagsFromResource");
            self.ssm
                .remove_tags_from_resource()
                .resource_type(aws_sdk_ssm::types::ResourceTypeForTagging::Parameter)
                .resource_id(name)
                .set_tag_keys(Some(removed))
                .send()
                .await
                .map_err(|e| self.sdk(&format!("ssm:RemoveTagsFromResource of {name:?}"), e))?;
        }
        Ok(())
    }

    /// DeleteParameter; one that is already gone is success.
    ///
    /// # Errors
    /// The SDK's error.
    pub async fn delete_parameter(&self, name: &str) -> Result<(), AwsError> {
        tracing::debug!(aws_call = "ssm:DeleteParameter");
        match self.ssm.delete_parameter().name(name).send().await {
            Ok(_) => Ok(()),
            Err(e) if e.as_service_error().is_some_and(|s| s.is_parameter_not_found()) => Ok(()),
            Err(e) => Err(self.sdk(&format!("ssm:DeleteParameter of {name:?}"), e)),
        }
    }
}
