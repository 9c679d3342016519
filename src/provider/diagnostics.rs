//! The one place where the provider's errors become diagnostics: one `From` conversion per
//! error type (the clients' own, "not configured", publish targets), each with a short
//! summary, Cloudflare's/Google's/AWS's own code and message in the detail, and the attribute
//! path where the error is about one. Resources add context (`.context(..)`) or a more precise
//! path (`.at(..)`) and record them with `diags.check(result)?`.

use super::aws::AwsError;
use super::cloudflare::{CloudflareError, CreateError, ZONE_LIMIT};
use super::data::NotConfigured;
use super::google::{AuthError, ComputeError, RouteError, WeightsError};
use super::resources::zone_replica_map::PublishError;
use super::resources::{region_hint, zone_replica_map};
use crate::tfplugin::{AttributePath, Diagnostic};

impl From<NotConfigured> for Diagnostic {
    fn from(e: NotConfigured) -> Self {
        Diagnostic::error(e.summary(), e.to_string())
    }
}

impl From<CloudflareError> for Diagnostic {
    fn from(e: CloudflareError) -> Self {
        match e.code() {
            Some(1164) => Diagnostic::error(
                "Zone is full",
                format!("The zone has reached Cloudflare's limit of {ZONE_LIMIT} origin cloud-region mappings ({e})."),
            ),
            Some(1156 | 1157) => {
                Diagnostic::error("Region refused by Cloudflare", e.to_string()).at(AttributePath::root("region"))
            }
            _ => Diagnostic::error("Cloudflare API error", e.to_string()),
        }
    }
}

impl From<CreateError> for Diagnostic {
    fn from(e: CreateError) -> Self {
        let origin_ip = || AttributePath::root("origin_ip");
        match e {
            CreateError::Claimed { zone, ip } => Diagnostic::error(
                "Duplicate region hint",
                format!("Another {} in this configuration already manages {ip} in zone {zone}.", region_hint::TYPE_NAME),
            )
            .at(origin_ip()),
            CreateError::Exists { zone, existing } => Diagnostic::error(
                "Region hint already exists",
                format!(
                    "Zone {zone} already has a region hint for {ip} ({}:{}), which this configuration did not create. To manage it, import it:\n  terraform import {}.NAME {zone}/{ip}",
                    existing.vendor,
                    existing.region,
                    region_hint::TYPE_NAME,
                    ip = existing.origin_ip,
                ),
            )
            .at(origin_ip()),
            CreateError::ZoneFull { zone } => Diagnostic::error(
                "Zone is full",
                format!("Zone {zone} already has {ZONE_LIMIT} region hints, Cloudflare's limit."),
            ),
            CreateError::Api(e) => e.into(),
            e @ CreateError::Unconfirmed { .. } => Diagnostic::error(
                "Region hint may have been written",
                format!("{e}. The state keeps the hint (marked tainted), so the next apply replaces it and converges."),
            ),
        }
    }
}

impl From<AuthError> for Diagnostic {
    fn from(e: AuthError) -> Self {
        Diagnostic::error("Google Cloud credentials", e.to_string())
    }
}

impl From<ComputeError> for Diagnostic {
    fn from(e: ComputeError) -> Self {
        let summary = match &e {
            ComputeError::NotFound(_) => "Not found in Google Cloud",
            ComputeError::Operation { .. } => "Google Cloud operation failed",
            ComputeError::Auth(e) => return e.clone().into(),
            ComputeError::Api { status: 401, .. } => {
                return Diagnostic::error(
                    "Google Cloud refused the credentials",
                    format!(
                        "{e}. An `access_token` (or GOOGLE_OAUTH_ACCESS_TOKEN) expires after an hour and is not \
                         refreshed: give `credentials`, use Application Default Credentials, or get a new token."
                    ),
                )
            }
            _ => "Google Cloud API error",
        };
        Diagnostic::error(summary, e.to_string())
    }
}

impl From<WeightsError> for Diagnostic {
    fn from(e: WeightsError) -> Self {
        let detail = e.to_string();
        match e {
            WeightsError::UnknownBackends { unknown, .. } => {
                let key = unknown.first().cloned().unwrap_or_default();
                Diagnostic::error("Not a weighted backend service of this URL map", detail)
                    .at(AttributePath::root("weights").key(&key))
            }
            WeightsError::NoWeightedBackends { .. } => Diagnostic::error("No weighted backend services", detail),
            WeightsError::AllZero { .. } => {
                Diagnostic::error("Every weight would be zero", detail).at(AttributePath::root("weights"))
            }
            WeightsError::Route(RouteError::NoPathMatcher { .. }) => {
                Diagnostic::error("No such path matcher", detail).at(AttributePath::root("path_matcher"))
            }
            WeightsError::Route(RouteError::NoRouteRule { .. }) => {
                Diagnostic::error("No such route rule", detail).at(AttributePath::root("route_rule_priority"))
            }
            WeightsError::KeepsChanging { .. } => Diagnostic::error("URL map keeps changing", detail),
            // (A missing URL map's own message names it: said once.)
            WeightsError::Api { source, .. } if source.names_its_object() => Diagnostic::from(source),
            WeightsError::Api { url_map, source } => Diagnostic::from(source).context(format!("URL map {url_map}")),
        }
    }
}

impl From<AwsError> for Diagnostic {
    fn from(e: AwsError) -> Self {
        let summary = match &e {
            AwsError::NotFound(_) => "Not found in AWS",
            AwsError::AlreadyExists(_) => "Already exists in AWS",
            AwsError::Sdk(_) | AwsError::Unconfirmed(_) => "AWS API error",
        };
        Diagnostic::error(summary, e.to_string())
    }
}

impl From<PublishError> for Diagnostic {
    fn from(e: PublishError) -> Self {
        let detail = e.to_string();
        match e {
            PublishError::AlreadyExists { target } => Diagnostic::error(
                "Publish target already exists",
                format!(
                    "{detail} To manage it, import it:\n  terraform import {}.NAME {target}",
                    zone_replica_map::TYPE_NAME
                ),
            ),
            PublishError::SharedWithoutKey { .. } => {
                Diagnostic::error("Secret shared with other keys", detail).at(AttributePath::root("secretsmanager"))
            }
            PublishError::NotAMap { .. } => Diagnostic::error("Secret does not hold a replica map", detail)
                .at(AttributePath::root("secretsmanager")),
            PublishError::MissingSecret { .. } | PublishError::SharedSecret { .. } => {
                Diagnostic::error("Cannot publish the replica map", detail)
            }
            PublishError::Io { .. } | PublishError::Aws { .. } => {
                Diagnostic::error("Cannot access the published replica map", detail)
            }
        }
    }
}
