//! The `provider "locality"` block (documented in `docs/index.md`): its schema, validation and the resolved
//! configuration with environment-variable fallbacks. Secrets are wrapped in [`Secret`], whose
//! `Debug` never shows the value.

pub use super::secret::Secret;
use crate::tfplugin::{Attribute, AttributePath, Block, Diagnostics, NestedBlock, Nesting, Schema, Value};

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
    /// Endpoint override (block, else `AWS_ENDPOINT_URL`).
    pub endpoint_url: Option<String>,
}

/// Google Cloud settings.
#[derive(Debug, Clone, Default)]
pub struct GoogleConfig {
    /// OAuth access token (block, else `GOOGLE_OAUTH_ACCESS_TOKEN`).
    pub access_token: Option<Secret>,
    /// Default project.
    pub project: Option<String>,
    /// Compute API base URL.
    pub base_url: String,
}

/// The resolved provider configuration: what resources receive.
#[derive(Debug, Clone, Default)]
pub struct ProviderConfig {
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
             the `locality_shift_weights` action need Terraform 1.14 or later. Tested with 1.11.4 and 1.15.5.\n\n\
             **Environment variables** read besides the ones named below: `LOCALITY_HTTP_TIMEOUT` (seconds one \
             Cloudflare or Google request may take, default 60) and `LOCALITY_RANGES_FILE` (an IP-range snapshot \
             written by `locality ranges update`, used instead of the built-in one by `locality_cloud_region` \
             and `locality_region_hints.origins`, and by the `locality lookup` CLI).",
        )
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
            Block::new("AWS access, for the resource `locality_zone_replica_map` when it discovers the topology (`replication_group_id`: ElastiCache) or publishes to Secrets Manager or SSM (a `file` target with `member` blocks needs no AWS access).")
                .attribute(Attribute::string("region").optional().description(
                    "AWS region. Default: the standard AWS chain (`AWS_REGION`, profile, ...).",
                ))
                .attribute(Attribute::string("endpoint_url").optional().description(
                    "Endpoint override for every AWS service. Default: `AWS_ENDPOINT_URL`, else AWS's own. \
                     Must be `https` unless the host is a loopback address.",
                )),
        ))
        .block(NestedBlock::new(
            "google",
            Nesting::Single,
            Block::new("Google Cloud access, for the resource `locality_weighted_backend`, the list resource `locality_weighted_backend` and the action `locality_shift_weights`.")
                .attribute(Attribute::string("access_token").optional().sensitive().description(
                    "OAuth 2.0 access token. Default: the `GOOGLE_OAUTH_ACCESS_TOKEN` environment variable.",
                ))
                .attribute(Attribute::string("project").optional().description("Default project of `locality_weighted_backend`, its list resource and `locality_shift_weights`."))
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
    ] {
        if let Some(url) = config.get(block).get(attr).as_str() {
            if let Err(problem) = check_base_url(url) {
                diags.attribute_error(AttributePath::root(block).attr(attr), "Invalid URL", problem);
            }
        }
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
    let aws_endpoint = text("aws", "endpoint_url").or_else(|| env("AWS_ENDPOINT_URL"));
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
        },
        google: GoogleConfig {
            access_token: text("google", "access_token")
                .or_else(|| env("GOOGLE_OAUTH_ACCESS_TOKEN"))
                .map(Secret::new),
            project: text("google", "project"),
            base_url: text("google", "base_url").unwrap_or_else(|| GOOGLE_DEFAULT_BASE_URL.into()),
        },
    };
    // Values from the environment are checked here; the block's own were checked in validate.
    for (name, url) in [
        ("CLOUDFLARE_BASE_URL", &Some(resolved.cloudflare.base_url.clone())),
        ("AWS_ENDPOINT_URL", &resolved.aws.endpoint_url),
    ] {
        if let Some(url) = url {
            if let Err(problem) = check_base_url(url) {
                diags.error("Invalid URL", format!("{name} (or the provider block): {problem}"));
            }
        }
    }
    resolved
}

/// A base URL must be `https`, unless its host is a loopback address (what tests use).
///
/// # Errors
/// A sentence saying what is wrong and what is allowed.
pub fn check_base_url(url: &str) -> Result<(), String> {
    // Parsed as browsers and reqwest parse it, so the host checked is the host connected to:
    // in `http://127.0.0.1:1@evil.example/` that is evil.example, not 127.0.0.1.
    let parsed = reqwest::Url::parse(url)
        .map_err(|e| format!("{url:?} is not an absolute URL ({e}); expected https://host/path."))?;
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(format!(
            "{url:?} carries credentials before the host; give the host only (credentials go in `api_token`/`access_token` or the AWS chain)."
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

/// Whether `name` looks like an AWS region (`ap-northeast-1`, `us-gov-west-1`).
pub fn is_region_name(name: &str) -> bool {
    static RE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    RE.get_or_init(|| regex::Regex::new(r"^[a-z]{2}(-[a-z]+)+-\d+$").expect("valid regex"))
        .is_match(name)
}

#[cfg(test)]
mod tests {
    use super::*;

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
