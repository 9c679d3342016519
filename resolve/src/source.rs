//! Where a map is read from, spelled as the provider's import IDs spell publish targets: a file
//! path, `ssm:<name>`, `secretsmanager:<id>`, or `secretsmanager:<id>#<key>` (the map under one
//! key of a JSON secret, as an object or as a JSON string). AWS reads go through the official
//! SDK and the standard credential chain (feature `aws`).

use std::io::Read;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use crate::document::MAX_MAP_BYTES;

/// What the source says of the map it gave, when it says: a version (an SSM parameter's version
/// number, a Secrets Manager version ID) and when that version was made (the parameter's last
/// modification, the secret version's creation, a file's modification time).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MapVersion {
    /// The source's own version of the map; `None` for a file.
    pub version: Option<String>,
    /// When this version was written.
    pub modified: Option<SystemTime>,
}

/// Why a map could not be read: the sentence (for the log and messages) and its class, one
/// word with no remote text but an AWS error code (for metrics labels, which an
/// unauthenticated listener serves): `not_found`, `permission_denied`, `untrusted_file`,
/// `not_regular_file`, `too_large`, `not_utf8`, `io_error`, `not_a_map`, `invalid_map`,
/// `unsupported_version`, `timeout`, `credentials`, `no_region`, `profile_not_found`,
/// `unreachable`, `no_value`, an AWS error code (`AccessDeniedException`,
/// `ParameterNotFound`, …), `aws_error`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadError {
    /// The sentence.
    pub message: String,
    /// The class.
    pub class: String,
}

impl ReadError {
    /// A read error of `class`.
    pub fn new(class: impl Into<String>, message: impl Into<String>) -> ReadError {
        ReadError {
            message: message.into(),
            class: class.into(),
        }
    }
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// A map source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MapSource {
    /// A file.
    File(PathBuf),
    /// An SSM parameter (decrypted when it is a SecureString).
    Ssm(String),
    /// A Secrets Manager secret, or one key of a JSON secret.
    SecretsManager {
        /// Secret name or ARN.
        id: String,
        /// The key holding the map.
        key: Option<String>,
    },
}

impl MapSource {
    /// Parses `--map`.
    ///
    /// # Errors
    /// A sentence saying what is allowed.
    pub fn parse(value: &str) -> Result<MapSource, String> {
        let empty = || {
            format!(
                "{value:?} names no map: use a file path, ssm:<name>, secretsmanager:<id> or secretsmanager:<id>#<key>"
            )
        };
        if let Some(name) = value.strip_prefix("ssm:") {
            return if name.is_empty() {
                Err(empty())
            } else {
                Ok(MapSource::Ssm(name.to_string()))
            };
        }
        if let Some(rest) = value.strip_prefix("secretsmanager:") {
            let (id, key) = match rest.split_once('#') {
                Some((id, key)) if !key.is_empty() => (id, Some(key.to_string())),
                Some(_) => return Err(empty()),
                None => (rest, None),
            };
            return if id.is_empty() {
                Err(empty())
            } else {
                Ok(MapSource::SecretsManager {
                    id: id.to_string(),
                    key,
                })
            };
        }
        if value.is_empty() {
            return Err(empty());
        }
        // `s3://bucket/map.json`, `https://…`: a scheme this command does not read is a usage
        // error, not a file of that name. (A single letter is a Windows drive, `C:\map.json`; a
        // file whose name has a colon is written `./name:x`.)
        if let Some((scheme, _)) = value.split_once(':') {
            let looks_like_scheme = scheme.len() > 1
                && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
            if looks_like_scheme {
                return Err(format!(
                    "{scheme:?} is not a map source this command reads; the sources are: a file path, ssm:<name>, secretsmanager:<id> and secretsmanager:<id>#<key> (a file whose name has a colon: ./{value})"
                ));
            }
        }
        Ok(MapSource::File(PathBuf::from(value)))
    }

    /// Reads the map's text within `timeout` (AWS calls).
    ///
    /// # Errors
    /// One sentence: what could not be read and why.
    pub fn read(&self, timeout: Duration) -> Result<String, String> {
        self.read_noting(timeout).map(|(text, _)| text)
    }

    /// [`MapSource::read`], and what is worth a warning on the way: a map file that another
    /// user could have written (owned by someone other than root or this user, or writable by
    /// others) is named in a warning; a process running as root does not read it at all.
    ///
    /// # Errors
    /// As [`MapSource::read`].
    pub fn read_noting(&self, timeout: Duration) -> Result<(String, Vec<String>), String> {
        self.read_versioned(timeout).map(|(text, notes, _)| (text, notes))
    }

    /// [`MapSource::read_noting`], and the version the source gives ([`MapVersion`]).
    ///
    /// # Errors
    /// As [`MapSource::read`].
    pub fn read_versioned(&self, timeout: Duration) -> Result<(String, Vec<String>, MapVersion), String> {
        self.read_classified(timeout).map_err(|e| e.message)
    }

    /// [`MapSource::read_versioned`], with the error's class ([`ReadError`]).
    ///
    /// # Errors
    /// As [`MapSource::read`], classified.
    pub fn read_classified(&self, timeout: Duration) -> Result<(String, Vec<String>, MapVersion), ReadError> {
        match self {
            MapSource::File(path) => read_file(path),
            #[cfg(feature = "aws")]
            MapSource::Ssm(_) | MapSource::SecretsManager { .. } => {
                aws::read(self, timeout).map(|(text, version)| (text, Vec::new(), version))
            }
            #[cfg(not(feature = "aws"))]
            _ => {
                let _ = timeout;
                Err(ReadError::new(
                    "unsupported_source",
                    "this build reads files only (the `aws` feature of locality-resolve reads SSM and Secrets Manager)",
                ))
            }
        }
    }
}

/// Opens the map file: on Unix, as [`crate::trusted::open_checked`] opens a file that steers
/// where reads go (refused as root when another user could have put it there, a warning
/// otherwise).
#[cfg(unix)]
fn open_map_file(path: &std::path::Path) -> Result<(std::fs::File, Vec<String>), ReadError> {
    crate::trusted::open_checked(path, "the map").map_err(|e| ReadError::new(e.class(), e.problem))
}

#[cfg(not(unix))]
fn open_map_file(path: &std::path::Path) -> Result<(std::fs::File, Vec<String>), ReadError> {
    let file = std::fs::File::open(path).map_err(|e| {
        ReadError::new(
            io_class(&e),
            format!(
                "{} cannot be read ({})",
                path.display(),
                crate::io_problem::io_problem(&e)
            ),
        )
    })?;
    if file.metadata().is_ok_and(|m| m.is_dir()) {
        return Err(ReadError::new(
            "not_regular_file",
            format!("{} cannot be read (it is a directory)", path.display()),
        ));
    }
    Ok((file, Vec::new()))
}

/// The class of an I/O error.
fn io_class(e: &std::io::Error) -> &'static str {
    match e.kind() {
        std::io::ErrorKind::NotFound => "not_found",
        std::io::ErrorKind::PermissionDenied => "permission_denied",
        std::io::ErrorKind::InvalidData => "not_utf8",
        _ => "io_error",
    }
}

fn read_file(path: &std::path::Path) -> Result<(String, Vec<String>, MapVersion), ReadError> {
    let (file, notes) = open_map_file(path)?;
    let version = MapVersion {
        version: None,
        modified: file.metadata().ok().and_then(|m| m.modified().ok()),
    };
    let mut text = String::new();
    file.take(MAX_MAP_BYTES as u64 + 1)
        .read_to_string(&mut text)
        .map_err(|e| {
            ReadError::new(
                io_class(&e),
                format!(
                    "{} cannot be read ({})",
                    path.display(),
                    crate::io_problem::io_problem(&e)
                ),
            )
        })?;
    if text.len() > MAX_MAP_BYTES {
        return Err(ReadError::new(
            "too_large",
            format!("{} is larger than {MAX_MAP_BYTES} bytes", path.display()),
        ));
    }
    Ok((text, notes, version))
}

/// The map under `key` of a JSON secret: an object (what the provider writes) or a string
/// holding one.
///
/// # Errors
/// A sentence saying what the secret holds instead.
pub fn under_key(secret: &str, key: &str) -> Result<String, String> {
    let value: serde_json::Value =
        serde_json::from_str(secret).map_err(|_| "the secret is not a JSON object, so it has no keys".to_string())?;
    let object = value
        .as_object()
        .ok_or("the secret is not a JSON object, so it has no keys")?;
    match object.get(key) {
        Some(serde_json::Value::String(text)) => Ok(text.clone()),
        Some(other @ serde_json::Value::Object(_)) => Ok(other.to_string()),
        Some(_) => Err(format!("the secret's key {key:?} holds neither an object nor a string")),
        None => Err(format!("the secret has no key {key:?}")),
    }
}

#[cfg(feature = "aws")]
mod aws {
    use super::{under_key, MapSource, MapVersion, ReadError};
    use std::time::{Duration, SystemTime};

    /// An AWS timestamp (seconds since the epoch) as a system time; `None` before the epoch.
    fn system_time(seconds: i64) -> Option<SystemTime> {
        let seconds = u64::try_from(seconds).ok()?;
        SystemTime::UNIX_EPOCH.checked_add(Duration::from_secs(seconds))
    }

    pub(super) fn read(source: &MapSource, timeout: Duration) -> Result<(String, MapVersion), ReadError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| ReadError::new("io_error", format!("no runtime ({e})")))?;
        runtime.block_on(async {
            match tokio::time::timeout(timeout, fetch(source)).await {
                Ok(result) => result,
                Err(_) => Err(ReadError::new(
                    "timeout",
                    format!("no answer from AWS within {} s", timeout.as_secs_f32()),
                )),
            }
        })
    }

    /// A failed call: the sentence and the class of the SDK's error.
    fn failed<E, R>(what: &str, error: &aws_sdk_ssm::error::SdkError<E, R>) -> ReadError
    where
        E: aws_sdk_ssm::error::ProvideErrorMetadata + std::error::Error + 'static,
        R: std::fmt::Debug + 'static,
    {
        ReadError::new(crate::aws_error::class(error), crate::aws_error::describe(what, error))
    }

    async fn fetch(source: &MapSource) -> Result<(String, MapVersion), ReadError> {
        let config = crate::aws_error::checked_config()
            .await
            .map_err(|(class, message)| ReadError::new(class, message))?;
        match source {
            MapSource::Ssm(name) => {
                let client = aws_sdk_ssm::Client::new(&config);
                let out = client
                    .get_parameter()
                    .name(name)
                    .with_decryption(true)
                    .send()
                    .await
                    .map_err(|e| failed(&format!("ssm:GetParameter of {name:?}"), &e))?;
                let no_value = || ReadError::new("no_value", format!("SSM parameter {name} has no value"));
                let parameter = out.parameter.ok_or_else(no_value)?;
                let version = MapVersion {
                    version: Some(parameter.version.to_string()),
                    modified: parameter.last_modified_date.and_then(|date| system_time(date.secs())),
                };
                parameter.value.map(|text| (text, version)).ok_or_else(no_value)
            }
            MapSource::SecretsManager { id, key } => {
                let client = aws_sdk_secretsmanager::Client::new(&config);
                let out = client
                    .get_secret_value()
                    .secret_id(id)
                    .send()
                    .await
                    .map_err(|e| failed(&format!("secretsmanager:GetSecretValue of {id:?}"), &e))?;
                let version = MapVersion {
                    version: out.version_id.clone(),
                    modified: out.created_date.and_then(|date| system_time(date.secs())),
                };
                let text = out
                    .secret_string
                    .ok_or_else(|| ReadError::new("no_value", format!("secret {id} has no string value")))?;
                match key {
                    Some(key) => under_key(&text, key)
                        .map(|text| (text, version))
                        .map_err(|e| ReadError::new("not_a_map", format!("secret {id}: {e}"))),
                    None => Ok((text, version)),
                }
            }
            MapSource::File(_) => unreachable!("files are read without AWS"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_and_keys() {
        assert_eq!(
            MapSource::parse("ssm:/prod/map").unwrap(),
            MapSource::Ssm("/prod/map".into())
        );
        assert_eq!(
            MapSource::parse("secretsmanager:prod/cache#replica_map").unwrap(),
            MapSource::SecretsManager {
                id: "prod/cache".into(),
                key: Some("replica_map".into())
            }
        );
        assert!(MapSource::parse("ssm:").is_err());
        for other in ["s3://bucket/map.json", "https://example.com/map.json", "file:map.json"] {
            let problem = MapSource::parse(other).unwrap_err();
            assert!(
                problem.contains("ssm:<name>") && problem.contains("is not a map source"),
                "{problem}"
            );
        }
        assert_eq!(
            MapSource::parse("./a:b.json").unwrap(),
            MapSource::File("./a:b.json".into())
        );
        assert_eq!(
            MapSource::parse("C:\\maps\\map.json").unwrap(),
            MapSource::File("C:\\maps\\map.json".into())
        );
        assert!(MapSource::parse("secretsmanager:x#").is_err());
        assert_eq!(
            MapSource::parse("map.json").unwrap(),
            MapSource::File("map.json".into())
        );
        assert_eq!(
            under_key(r#"{"a":1,"m":{"version":1}}"#, "m").unwrap(),
            r#"{"version":1}"#
        );
        assert_eq!(
            under_key(r#"{"m":"{\"version\":1}"}"#, "m").unwrap(),
            r#"{"version":1}"#
        );
        assert!(under_key("plain", "m").unwrap_err().contains("not a JSON object"));
        assert!(under_key(r#"{"a":1}"#, "m").unwrap_err().contains("no key"));
    }
}
