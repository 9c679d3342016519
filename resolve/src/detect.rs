//! This process's availability zone, from the first source that answers: the configured zone
//! (`--zone`, `LOCALITY_ZONE`), ECS task metadata v4, the Lambda metadata API, EC2 IMDSv2, then
//! IMDSv1. Every request is bounded (connect and read), and so is the whole detection; bodies
//! are read up to a few kilobytes, and an answer that is not an AZ name or ID is a failure of
//! that source, not a zone. Plain blocking HTTP (ureq), never through a proxy.

use std::time::{Duration, Instant};

use crate::zone::{is_zone_id, is_zone_name, Zone};

/// Where the zone came from (the `zone_source` of the JSON output).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ZoneSource {
    /// `--zone`.
    Flag,
    /// `LOCALITY_ZONE`.
    Env,
    /// ECS task metadata v4.
    Ecs,
    /// The Lambda metadata API.
    Lambda,
    /// EC2 IMDSv2.
    #[serde(rename = "imds-v2")]
    ImdsV2,
    /// EC2 IMDSv1.
    #[serde(rename = "imds-v1")]
    ImdsV1,
    /// A zone detected earlier, from the cache.
    Cache,
}

impl ZoneSource {
    /// The name in the JSON output.
    pub fn as_str(self) -> &'static str {
        match self {
            ZoneSource::Flag => "flag",
            ZoneSource::Env => "env",
            ZoneSource::Ecs => "ecs",
            ZoneSource::Lambda => "lambda",
            ZoneSource::ImdsV2 => "imds-v2",
            ZoneSource::ImdsV1 => "imds-v1",
            ZoneSource::Cache => "cache",
        }
    }
}

/// The metadata services to ask, as the AWS SDKs find them in the environment.
#[derive(Debug, Clone, Default)]
pub struct MetadataEnv {
    /// `ECS_CONTAINER_METADATA_URI_V4`.
    pub ecs_uri: Option<String>,
    /// `AWS_LAMBDA_METADATA_API` (`host:port`).
    pub lambda_api: Option<String>,
    /// `AWS_LAMBDA_METADATA_TOKEN`.
    pub lambda_token: Option<String>,
    /// `AWS_EC2_METADATA_SERVICE_ENDPOINT` (default `http://169.254.169.254`).
    pub imds_endpoint: Option<String>,
    /// `AWS_EC2_METADATA_DISABLED=true`.
    pub imds_disabled: bool,
}

impl MetadataEnv {
    /// From the process environment.
    pub fn from_env() -> MetadataEnv {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        MetadataEnv {
            ecs_uri: var("ECS_CONTAINER_METADATA_URI_V4"),
            lambda_api: var("AWS_LAMBDA_METADATA_API"),
            lambda_token: var("AWS_LAMBDA_METADATA_TOKEN"),
            imds_endpoint: var("AWS_EC2_METADATA_SERVICE_ENDPOINT"),
            imds_disabled: var("AWS_EC2_METADATA_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true")),
        }
    }
}

/// The default IMDS endpoint.
pub const IMDS_DEFAULT_ENDPOINT: &str = "http://169.254.169.254";
/// The Lambda metadata API's path.
pub const LAMBDA_METADATA_PATH: &str = "/2026-01-15/metadata/execution-environment";
/// The most a metadata answer may be.
const MAX_BODY: u64 = 16 * 1024;

/// Time limits of a detection.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// The whole detection.
    pub total: Duration,
    /// One request (connect and read).
    pub request: Duration,
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            total: Duration::from_secs(1),
            request: Duration::from_millis(300),
        }
    }
}

/// A detected zone, where it came from, and how many metadata requests it took.
#[derive(Debug, Clone)]
pub struct Detected {
    /// The zone.
    pub zone: Zone,
    /// The source that answered.
    pub source: ZoneSource,
}

/// What every source said, when none gave a zone; and the requests made.
#[derive(Debug, Clone, Default)]
pub struct Attempts {
    /// One line per source tried: `IMDSv2: token request timed out`.
    pub failures: Vec<String>,
    /// Metadata requests made.
    pub requests: u32,
}

impl Attempts {
    /// One sentence.
    pub fn reason(&self) -> String {
        if self.failures.is_empty() {
            "no zone source is available (no --zone, LOCALITY_ZONE, ECS or Lambda metadata, and IMDS is disabled)"
                .to_string()
        } else {
            format!("zone detection failed: {}", self.failures.join("; "))
        }
    }
}

struct Http {
    deadline: Instant,
    request: Duration,
}

impl Http {
    fn agent(&self) -> Result<ureq::Agent, String> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err("the detection budget was spent".into());
        }
        let limit = left.min(self.request);
        let config = ureq::Agent::config_builder()
            .timeout_global(Some(limit))
            .timeout_connect(Some(limit))
            .http_status_as_error(false)
            .proxy(None)
            .max_redirects(0)
            .build();
        Ok(config.into())
    }

    /// One request; the status and up to [`MAX_BODY`] bytes of the body as text.
    fn call(
        &self,
        method: &str,
        url: &str,
        headers: &[(&str, &str)],
        attempts: &mut Attempts,
    ) -> Result<(u16, String), String> {
        let agent = self.agent()?;
        attempts.requests += 1;
        let result = match method {
            "PUT" => {
                let mut req = agent.put(url);
                for (k, v) in headers {
                    req = req.header(*k, *v);
                }
                req.send_empty()
            }
            _ => {
                let mut req = agent.get(url);
                for (k, v) in headers {
                    req = req.header(*k, *v);
                }
                req.call()
            }
        };
        let mut response = result.map_err(describe)?;
        let status = response.status().as_u16();
        let body = response
            .body_mut()
            .with_config()
            .limit(MAX_BODY)
            .read_to_string()
            .map_err(|e| match e {
                ureq::Error::BodyExceedsLimit(_) => format!("the answer is larger than {MAX_BODY} bytes"),
                other => describe(other),
            })?;
        Ok((status, body))
    }
}

fn describe(e: ureq::Error) -> String {
    match e {
        ureq::Error::Timeout(_) => "no answer in time".into(),
        ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::ConnectionRefused => "connection refused".into(),
        ureq::Error::Io(io) => format!("connection failed ({})", io.kind()),
        ureq::Error::HostNotFound => "host not found".into(),
        other => {
            let text = other.to_string();
            text.chars().take(120).collect()
        }
    }
}

fn shown(body: &str) -> String {
    let one_line: String = body.chars().filter(|c| !c.is_control()).take(40).collect();
    format!("{one_line:?}")
}

/// A zone name from an IMDS `placement/availability-zone` answer, or why it is not one.
///
/// # Errors
/// A phrase quoting (the start of) what was answered instead.
pub fn zone_name(body: &str) -> Result<String, String> {
    let value = body.trim();
    if is_zone_name(value) {
        Ok(value.to_string())
    } else {
        Err(format!("answered {} instead of an AZ name", shown(value)))
    }
}

/// Asks the metadata sources in order, within the budget. The configured zone is not asked
/// here (it needs no detection).
///
/// # Errors
/// [`Attempts`]: what each source said.
pub fn detect(env: &MetadataEnv, budget: Budget) -> Result<(Detected, Attempts), Attempts> {
    let http = Http {
        deadline: Instant::now() + budget.total,
        request: budget.request,
    };
    let mut attempts = Attempts::default();
    if let Some(uri) = &env.ecs_uri {
        match ecs(&http, uri, &mut attempts) {
            Ok(zone) => {
                return Ok((
                    Detected {
                        zone,
                        source: ZoneSource::Ecs,
                    },
                    attempts,
                ))
            }
            Err(e) => attempts.failures.push(format!("ECS task metadata: {e}")),
        }
    }
    if let Some(api) = &env.lambda_api {
        match lambda(
            &http,
            api,
            env.lambda_token.as_deref().unwrap_or_default(),
            &mut attempts,
        ) {
            Ok(zone) => {
                return Ok((
                    Detected {
                        zone,
                        source: ZoneSource::Lambda,
                    },
                    attempts,
                ))
            }
            Err(e) => attempts.failures.push(format!("Lambda metadata: {e}")),
        }
    }
    if !env.imds_disabled {
        let endpoint = env
            .imds_endpoint
            .as_deref()
            .unwrap_or(IMDS_DEFAULT_ENDPOINT)
            .trim_end_matches('/');
        match imds(&http, endpoint, &mut attempts) {
            Ok(detected) => return Ok((detected, attempts)),
            Err(e) => attempts.failures.push(e),
        }
    }
    Err(attempts)
}

fn ecs(http: &Http, uri: &str, attempts: &mut Attempts) -> Result<Zone, String> {
    let (status, body) = http.call("GET", &format!("{}/task", uri.trim_end_matches('/')), &[], attempts)?;
    if status != 200 {
        return Err(format!("HTTP {status}"));
    }
    ecs_zone(&body)
}

/// The zone in an ECS task metadata v4 `/task` answer.
///
/// # Errors
/// Why the answer holds no zone.
pub fn ecs_zone(body: &str) -> Result<Zone, String> {
    let json: serde_json::Value =
        serde_json::from_str(body).map_err(|_| format!("answered {} instead of JSON", shown(body)))?;
    let name = json
        .get("AvailabilityZone")
        .and_then(|v| v.as_str())
        .filter(|v| is_zone_name(v));
    let id = json
        .get("AvailabilityZoneID")
        .and_then(|v| v.as_str())
        .filter(|v| is_zone_id(v));
    if name.is_none() && id.is_none() {
        return Err("the task metadata has no AvailabilityZone".into());
    }
    Ok(Zone {
        name: name.map(str::to_string),
        id: id.map(str::to_string),
    })
}

fn lambda(http: &Http, api: &str, token: &str, attempts: &mut Attempts) -> Result<Zone, String> {
    let bearer = format!("Bearer {token}");
    let (status, body) = http.call(
        "GET",
        &format!("http://{api}{LAMBDA_METADATA_PATH}"),
        &[("Authorization", bearer.as_str())],
        attempts,
    )?;
    if status != 200 {
        return Err(format!("HTTP {status}"));
    }
    lambda_zone(&body)
}

/// The zone (its ID) in a Lambda metadata API answer.
///
/// # Errors
/// Why the answer holds no zone.
pub fn lambda_zone(body: &str) -> Result<Zone, String> {
    let json: serde_json::Value =
        serde_json::from_str(body).map_err(|_| format!("answered {} instead of JSON", shown(body)))?;
    let id = json
        .get("AvailabilityZoneID")
        .and_then(|v| v.as_str())
        .filter(|v| is_zone_id(v))
        .ok_or("the answer has no AvailabilityZoneID")?;
    Ok(Zone {
        name: None,
        id: Some(id.to_string()),
    })
}

/// IMDSv2 (a token, then the zone name and ID: 3 requests); without a token, IMDSv1 (pods
/// behind a hop limit of 1 get none).
fn imds(http: &Http, endpoint: &str, attempts: &mut Attempts) -> Result<Detected, String> {
    let token = http.call(
        "PUT",
        &format!("{endpoint}/latest/api/token"),
        &[("X-aws-ec2-metadata-token-ttl-seconds", "21600")],
        attempts,
    );
    let (token, v2_failure) = match token {
        Ok((200, body))
            if !body.trim().is_empty() && body.len() < 4096 && !body.trim().contains(char::is_whitespace) =>
        {
            (Some(body.trim().to_string()), None)
        }
        Ok((200, body)) => (None, Some(format!("answered {} instead of a token", shown(&body)))),
        Ok((status, _)) => (None, Some(format!("HTTP {status}"))),
        Err(e) => (None, Some(e)),
    };
    let (source, headers): (ZoneSource, Vec<(&str, &str)>) = match &token {
        Some(t) => (ZoneSource::ImdsV2, vec![("X-aws-ec2-metadata-token", t.as_str())]),
        None => (ZoneSource::ImdsV1, Vec::new()),
    };
    let label = |s: ZoneSource| if s == ZoneSource::ImdsV2 { "IMDSv2" } else { "IMDSv1" };
    let prefix = match &v2_failure {
        Some(e) => format!("IMDSv2: token request: {e}; "),
        None => String::new(),
    };
    let name = match http.call(
        "GET",
        &format!("{endpoint}/latest/meta-data/placement/availability-zone"),
        &headers,
        attempts,
    ) {
        Ok((200, body)) => zone_name(&body).map_err(|e| format!("{prefix}{}: {e}", label(source)))?,
        Ok((status, _)) => return Err(format!("{prefix}{}: HTTP {status}", label(source))),
        Err(e) => return Err(format!("{prefix}{}: {e}", label(source))),
    };
    // The ID is a bonus: older or odd metadata services lack it, and the name still routes.
    let id = match http.call(
        "GET",
        &format!("{endpoint}/latest/meta-data/placement/availability-zone-id"),
        &headers,
        attempts,
    ) {
        Ok((200, body)) if is_zone_id(body.trim()) => Some(body.trim().to_string()),
        _ => None,
    };
    Ok(Detected {
        zone: Zone { name: Some(name), id },
        source,
    })
}
