//! Publish targets: where the document goes and how it is read back for drift detection.
//!
//! - `file`: a local file the resource owns (version = SHA-256 of the content);
//! - `secretsmanager`: a new version of an existing secret (version = VersionId); the secret's
//!   lifecycle stays with whoever created it; with `key`, only that key of a JSON secret
//!   (`shared_secret.rs`);
//! - `ssm_parameter`: a parameter the resource owns, `String` or `SecureString`, with its tags
//!   (version = parameter version).

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use std::collections::BTreeMap;

use crate::provider::aws::{AwsError, ParameterKind};
use crate::provider::ProviderData;

use super::replica_map::sha256_hex;
use super::shared_secret::{self, KeyChange, SharedSecretError};
use crate::files::Directories;

/// A place the document is published to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A local file owned by the resource.
    File(PathBuf),
    /// An existing Secrets Manager secret (name or ARN).
    SecretsManager(String),
    /// One key of an existing Secrets Manager secret holding a JSON object.
    SecretKey {
        /// Name or ARN.
        secret_id: String,
        /// The key.
        key: String,
    },
    /// An SSM parameter owned by the resource.
    Ssm(String),
}

/// Publish-target kinds that an import ID may name.
pub(crate) const KNOWN_KINDS: [&str; 3] = ["file", "secretsmanager", "ssm"];

/// Why reading, writing or removing the published document failed.
#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    /// The target already exists and this resource did not create it (import it instead).
    #[error("{target} already exists and this resource did not create it.")]
    AlreadyExists {
        /// The target's ID.
        target: String,
    },
    /// The secret a write needs does not exist (it must be created first).
    #[error("secret {secret_id:?} does not exist: create the secret first (this resource writes new versions of it)")]
    MissingSecret {
        /// The secret.
        secret_id: String,
    },
    /// The whole-secret target holds a JSON object with keys a replica map does not have:
    /// another application's values, which writing the map as the whole value would delete.
    #[error("secret {secret_id:?} holds a JSON object with other keys ({}): publishing the map as its whole value would delete them, so nothing was written. Set `key` in the `secretsmanager` block to publish the map under one key of this secret and keep the others, or publish to a secret of its own.", other_keys.join(", "))]
    SharedWithoutKey {
        /// The secret.
        secret_id: String,
        /// The keys that are not a replica map's (names only, never values).
        other_keys: Vec<String>,
    },
    /// The whole-secret target holds something that is neither empty nor a replica map (plain
    /// text, a JSON array, a string): someone else's value, which writing the map would replace.
    #[error("secret {secret_id:?} holds {what}, which is not a replica map: publishing the map as its whole value would replace it, so nothing was written. Publish to a secret of its own (an empty secret, or one holding a replica map, is taken), or, when the secret holds a JSON object, set `key` in the `secretsmanager` block to publish the map under one key of it.")]
    NotAMap {
        /// The secret.
        secret_id: String,
        /// What it holds, described (never the value): "plain text of 23 characters", ….
        what: String,
    },
    /// A file could not be read, written or removed.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: String,
        /// What the system said.
        source: std::io::Error,
    },
    /// The key of a shared secret could not be changed.
    #[error("{target}: {source}")]
    SharedSecret {
        /// The target's ID.
        target: String,
        /// Why.
        source: SharedSecretError,
    },
    /// AWS refused or failed.
    #[error("{target}: {source}")]
    Aws {
        /// The target's ID.
        target: String,
        /// What AWS said.
        source: AwsError,
    },
}

impl Target {
    /// The resource ID: `<kind>:<name>`.
    pub fn id(&self) -> String {
        match self {
            Target::File(path) => format!("file:{}", path.display()),
            Target::SecretsManager(id) => format!("secretsmanager:{id}"),
            Target::SecretKey { secret_id, key } => format!("secretsmanager:{secret_id}#{key}"),
            Target::Ssm(name) => format!("ssm:{name}"),
        }
    }

    /// Whether the version can be computed from the document at plan time.
    pub fn version_is_content_hash(&self) -> bool {
        matches!(self, Target::File(_))
    }

    /// Reads the published document, its version and (an SSM parameter's) type; `Ok(None)`
    /// when nothing is published.
    ///
    /// # Errors
    /// [`PublishError`], naming the target.
    pub async fn read(&self, data: &ProviderData) -> Result<Option<Published>, PublishError> {
        if let Target::Ssm(name) = self {
            let read = data.aws().await.read_parameter_typed(name).await;
            return Ok(read.map_err(|e| self.aws(e))?.map(|(text, version, kind)| Published {
                text,
                version,
                parameter_type: Some(kind),
            }));
        }
        let read = self.read_document(data).await?;
        Ok(read.map(|(text, version)| Published {
            text,
            version,
            parameter_type: None,
        }))
    }

    async fn read_document(&self, data: &ProviderData) -> Result<Option<(String, String)>, PublishError> {
        match self {
            Target::File(path) => {
                // The path itself: a symlink there, or anything but a regular file, is refused
                // (refresh and import would store what it points to in state), and so is a
                // file over MAX_FILE_BYTES.
                refuse_parent_components(path).map_err(|e| self.io(e))?;
                let owned = path.clone();
                let read = tokio::task::spawn_blocking(move || {
                    crate::files::read_regular(&owned, MAX_FILE_BYTES, Directories::NoLinks)
                })
                .await
                .map_err(|e| self.io(std::io::Error::other(e)))?;
                match read {
                    Ok(bytes) => Ok(Some((String::from_utf8_lossy(&bytes).into_owned(), sha256_hex(&bytes)))),
                    Err(crate::files::ReadError::NotFound) => Ok(None),
                    Err(problem) => Err(self.io(std::io::Error::other(format!(
                        "not read: {problem} (the map's file must be a regular file of at most {MAX_FILE_BYTES} bytes)"
                    )))),
                }
            }
            Target::SecretsManager(id) => {
                let read = data.aws().await.read_secret(id).await.map_err(|e| self.aws(e))?;
                // Another application's keys never reach the state (refresh, import).
                self.refuse_foreign_keys(read.as_ref().map(|(value, _)| value.as_str()))?;
                Ok(read)
            }
            Target::SecretKey { secret_id, key } => {
                let Some((text, version)) = data.aws().await.read_secret(secret_id).await.map_err(|e| self.aws(e))?
                else {
                    return Ok(None);
                };
                Ok(shared_secret::document_under(&text, key)
                    .map_err(|e| self.shared(e))?
                    .map(|document| (document, version)))
            }
            Target::Ssm(name) => data.aws().await.read_parameter(name).await.map_err(|e| self.aws(e)),
        }
    }

    /// A whole-secret target's value is taken only when it is empty or a replica map: a JSON
    /// object with keys a replica map does not have is another application's (refused, naming
    /// those keys), and anything else (plain text, an array, a string) is refused, described
    /// but never shown.
    fn refuse_foreign_keys(&self, value: Option<&str>) -> Result<(), PublishError> {
        let (Target::SecretsManager(id), Some(value)) = (self, value) else {
            return Ok(());
        };
        let other_keys = foreign_keys(value);
        if !other_keys.is_empty() {
            return Err(PublishError::SharedWithoutKey {
                secret_id: id.clone(),
                other_keys,
            });
        }
        match not_a_map(value) {
            Some(what) => Err(PublishError::NotAMap {
                secret_id: id.clone(),
                what,
            }),
            None => Ok(()),
        }
    }

    fn io(&self, source: std::io::Error) -> PublishError {
        let path = match self {
            Target::File(path) => path.display().to_string(),
            other => other.id(),
        };
        PublishError::Io { path, source }
    }

    fn shared(&self, source: SharedSecretError) -> PublishError {
        match source {
            SharedSecretError::Aws(AwsError::NotFound(_)) => PublishError::MissingSecret {
                secret_id: match self {
                    Target::SecretKey { secret_id, .. } => secret_id.clone(),
                    other => other.id(),
                },
            },
            SharedSecretError::Aws(e) => self.aws(e),
            other => PublishError::SharedSecret {
                target: self.id(),
                source: other,
            },
        }
    }

    fn aws(&self, source: AwsError) -> PublishError {
        PublishError::Aws {
            target: self.id(),
            source,
        }
    }

    /// Publishes the document and returns the new version. `creating` refuses to take over an
    /// SSM parameter that already exists (and gives the parameter its tags as it is created).
    ///
    /// # Errors
    /// [`PublishError`].
    pub async fn write(
        &self,
        data: &ProviderData,
        document: &str,
        creating: bool,
        options: &WriteOptions,
    ) -> Result<String, PublishError> {
        let modes = options.modes;
        match self {
            Target::File(path) => {
                refuse_parent_components(path).map_err(|e| self.io(e))?;
                write_atomically(path, document.as_bytes(), modes)
                    .await
                    .map_err(|e| self.io(e))?;
                Ok(sha256_hex(document.as_bytes()))
            }
            Target::SecretsManager(id) => {
                let aws = data.aws().await;
                let _one_writer_per_secret = hold_secret(id).await;
                let current = aws.read_secret(id).await.map_err(|e| self.aws(e))?;
                self.refuse_foreign_keys(current.as_ref().map(|(value, _)| value.as_str()))?;
                match aws.write_secret(id, document).await {
                    Ok(version) => Ok(version),
                    Err(AwsError::NotFound(_)) => Err(PublishError::MissingSecret { secret_id: id.clone() }),
                    // The response was lost: the secret holding exactly this document now is
                    // our write, applied.
                    Err(e @ AwsError::Unconfirmed(_)) => match aws.read_secret(id).await {
                        Ok(Some((value, version))) if value == document => Ok(version),
                        _ => Err(self.aws(e)),
                    },
                    Err(other) => Err(self.aws(other)),
                }
            }
            Target::SecretKey { secret_id, key } => {
                let aws = data.aws().await;
                let secret = shared_secret::Secret { aws, id: secret_id };
                let _one_writer_per_secret = hold_secret(secret_id).await;
                match shared_secret::change_key(&secret, key, KeyChange::Set(document)).await {
                    Ok(Some(version)) => Ok(version),
                    Ok(None) => Err(PublishError::MissingSecret {
                        secret_id: secret_id.clone(),
                    }),
                    Err(e) => Err(self.shared(e)),
                }
            }
            Target::Ssm(name) => {
                let aws = data.aws().await;
                match aws
                    .write_parameter(name, document, !creating, &options.parameter, &options.tags)
                    .await
                {
                    Ok(version) => Ok(version),
                    // "Already exists" may be our own write: the SDK retries a PutParameter whose
                    // response was lost. A parameter that holds exactly this document is adopted
                    // (and given its tags); so is one after a write whose every response was lost.
                    Err(AwsError::AlreadyExists(_)) => match aws.read_parameter(name).await {
                        Ok(Some((value, version))) if value == document => {
                            let live = aws.parameter_tags(name).await.map_err(|e| self.aws(e))?;
                            aws.retag_parameter(name, &live, &options.tags)
                                .await
                                .map_err(|e| self.aws(e))?;
                            Ok(version)
                        }
                        _ => Err(PublishError::AlreadyExists { target: self.id() }),
                    },
                    Err(e @ AwsError::Unconfirmed(_)) => match aws.read_parameter(name).await {
                        Ok(Some((value, version))) if value == document => Ok(version),
                        _ => Err(self.aws(e)),
                    },
                    Err(other) => Err(self.aws(other)),
                }
            }
        }
    }

    /// Removes what the resource owns. Returns a note for the user when something is left in
    /// place on purpose (a secret belongs to whoever created it).
    ///
    /// # Errors
    /// [`PublishError`], naming the target.
    pub async fn delete(&self, data: &ProviderData) -> Result<Option<String>, PublishError> {
        match self {
            Target::File(path) => {
                refuse_parent_components(path).map_err(|e| self.io(e))?;
                let owned = path.clone();
                let removed = tokio::task::spawn_blocking(move || crate::files::remove(&owned, Directories::NoLinks))
                    .await
                    .map_err(|e| self.io(std::io::Error::other(e)))?;
                removed.map(|_| None).map_err(|e| self.io(e))
            }
            Target::SecretsManager(id) => Ok(Some(format!(
                "Secret {id:?} keeps its last published replica map: its lifecycle belongs to whoever created it. Delete or rotate it there."
            ))),
            // Only the key goes; the secret and its other keys stay.
            Target::SecretKey { secret_id, key } => {
                let aws = data.aws().await;
                let secret = shared_secret::Secret { aws, id: secret_id };
                let _one_writer_per_secret = hold_secret(secret_id).await;
                match shared_secret::change_key(&secret, key, KeyChange::Remove).await {
                    Ok(_) | Err(SharedSecretError::Aws(AwsError::NotFound(_))) => Ok(None),
                    Err(e) => Err(self.shared(e)),
                }
            }
            Target::Ssm(name) => {
                let aws = data.aws().await;
                match aws.delete_parameter(name).await {
                    Ok(()) => Ok(None),
                    // The response was lost: a parameter that is gone now was deleted.
                    Err(e @ AwsError::Unconfirmed(_)) => match aws.read_parameter(name).await {
                        Ok(None) => Ok(None),
                        _ => Err(self.aws(e)),
                    },
                    Err(e) => Err(self.aws(e)),
                }
            }
        }
    }
}

/// The largest map file read back (a map of every AZ of every region is a few kilobytes).
pub(super) const MAX_FILE_BYTES: u64 = 4 << 20;

/// The default mode of the published file (`file_permission`): readable and writable by the
/// user Terraform runs as, nobody else.
pub(super) const FILE_MODE: u32 = 0o600;
/// `file_permission`'s default, as written in configurations.
pub(super) const DEFAULT_FILE_PERMISSION: &str = "0600";
/// `directory_permission`'s default (as `local_file`'s: 0777, less the umask).
pub(super) const DEFAULT_DIRECTORY_PERMISSION: &str = "0777";

/// What a target holds.
#[derive(Debug, Clone)]
pub struct Published {
    /// The document.
    pub text: String,
    /// Its version.
    pub version: String,
    /// An SSM parameter's type (`String`, `SecureString`).
    pub parameter_type: Option<String>,
}

/// How a write publishes, beyond the document: the file's modes, or the SSM parameter's type,
/// key, tier and tags (the others ignore what is not theirs).
#[derive(Debug, Clone, Default)]
pub struct WriteOptions {
    /// A `file` target's modes.
    pub modes: FileModes,
    /// An `ssm_parameter` target's type, KMS key and tier.
    pub parameter: ParameterKind,
    /// An `ssm_parameter` target's tags (`tags_all`), given as it is created.
    pub tags: BTreeMap<String, String>,
}

/// The modes a `file` target is written with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileModes {
    /// The file's mode, exactly (the umask does not apply).
    pub file: u32,
    /// The mode of the directories created for it (the umask applies, as for `local_file`).
    pub directory: u32,
}

impl Default for FileModes {
    fn default() -> FileModes {
        FileModes {
            file: FILE_MODE,
            directory: 0o777,
        }
    }
}

/// A permission as `local_file` takes it: three or four octal digits, at most `0777` (setuid,
/// setgid and sticky are refused).
///
/// # Errors
/// A sentence saying what is allowed.
pub fn parse_permission(text: &str) -> Result<u32, String> {
    let digits = text.strip_prefix('0').filter(|rest| rest.len() == 3).unwrap_or(text);
    let mode = (digits.len() == 3 && digits.bytes().all(|b| (b'0'..=b'7').contains(&b)))
        .then(|| u32::from_str_radix(digits, 8).ok())
        .flatten();
    mode.ok_or_else(|| {
        format!(
            "{text:?} is not a permission: give three or four octal digits up to \"0777\", e.g. \"0640\" (setuid, setgid and sticky bits are not allowed)."
        )
    })
}

/// `0640` for 0o640.
pub(super) fn permission_text(mode: u32) -> String {
    format!("{:04o}", mode & 0o777)
}

/// The top-level keys of a secret's value that a published replica map does not have, quoted
/// and sorted, as a message shows them: at most 10, each cut at 64 characters, then how many
/// more (empty when the value is not a JSON object): the keys of a secret shared with others.
fn foreign_keys(value: &str) -> Vec<String> {
    const DOCUMENT_KEYS: [&str; 8] = [
        "version",
        "fallback",
        "zones",
        "zone_ids",
        "replicas",
        "nodes",
        "configuration_endpoint",
        "replication_group_id",
    ];
    const SHOWN: usize = 10;
    let Ok(serde_json::Value::Object(object)) = serde_json::from_str::<serde_json::Value>(value) else {
        return Vec::new();
    };
    let mut keys: Vec<&String> = object.keys().filter(|k| !DOCUMENT_KEYS.contains(&k.as_str())).collect();
    keys.sort();
    let mut shown: Vec<String> = keys
        .iter()
        .take(SHOWN)
        .map(|k| match k.char_indices().nth(64) {
            Some((cut, _)) => format!("{:?}…", &k[..cut]),
            None => format!("{k:?}"),
        })
        .collect();
    if keys.len() > SHOWN {
        shown.push(format!("and {} more", keys.len() - SHOWN));
    }
    shown
}

/// What a secret's whole value is when it is neither empty (nothing, blanks, `{}`) nor a
/// replica map (a JSON object with no key but a map's), described without a word of it: "plain
/// text of 23 characters", "a JSON array of 2 elements", "a JSON string", ….
fn not_a_map(value: &str) -> Option<String> {
    let trimmed = value.trim();
    if trimmed.is_empty() {
        return None;
    }
    let Ok(json) = serde_json::from_str::<serde_json::Value>(trimmed) else {
        let characters = value.chars().count();
        let plural = if characters == 1 { "" } else { "s" };
        return Some(format!("plain text of {characters} character{plural}"));
    };
    match json {
        // Keys a map does not have are refused by `foreign_keys` first.
        serde_json::Value::Object(_) => None,
        serde_json::Value::Array(items) => Some(format!(
            "a JSON array of {} element{}",
            items.len(),
            if items.len() == 1 { "" } else { "s" }
        )),
        serde_json::Value::String(_) => Some("a JSON string".into()),
        serde_json::Value::Number(_) => Some("a JSON number".into()),
        serde_json::Value::Bool(_) => Some("a JSON boolean".into()),
        serde_json::Value::Null => Some("JSON null".into()),
    }
}

/// The provider-wide lock of one secret: resources publishing under keys of one shared secret
/// change it one at a time (each change reads, changes its key, and writes the whole value).
async fn hold_secret(secret_id: &str) -> tokio::sync::OwnedMutexGuard<()> {
    crate::provider::write_lock::hold(format!("secretsmanager {secret_id}")).await
}

fn refuse_parent_components(path: &Path) -> std::io::Result<()> {
    if crate::files::has_parent_component(path) {
        return Err(std::io::Error::new(
            ErrorKind::InvalidInput,
            "a path with `..` components is refused; give the file's path without them",
        ));
    }
    Ok(())
}

/// Replaces `path` with `bytes` (see [`crate::files::write_atomically`]), with `modes.file`
/// whatever mode an existing file had.
async fn write_atomically(path: &Path, bytes: &[u8], modes: FileModes) -> std::io::Result<()> {
    let (path, bytes) = (path.to_path_buf(), bytes.to_vec());
    tokio::task::spawn_blocking(move || {
        crate::files::write_atomically_in(&path, &bytes, modes.file, modes.directory, Directories::NoLinks)
    })
    .await
    .map_err(std::io::Error::other)?
}

#[cfg(all(test, unix))]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;

    #[test]
    fn what_is_not_a_map_is_described_never_shown() {
        assert_eq!(super::not_a_map(""), None);
        assert_eq!(super::not_a_map("  \n"), None);
        assert_eq!(super::not_a_map("{}"), None);
        assert_eq!(super::not_a_map(r#"{"version":1,"fallback":"f","zones":{}}"#), None);
        assert_eq!(
            super::not_a_map("postgres://app:pw@db:5432/app").as_deref(),
            Some("plain text of 29 characters")
        );
        assert_eq!(super::not_a_map("x").as_deref(), Some("plain text of 1 character"));
        assert_eq!(super::not_a_map("[1,2]").as_deref(), Some("a JSON array of 2 elements"));
        assert_eq!(super::not_a_map("\"pw\"").as_deref(), Some("a JSON string"));
        assert_eq!(super::not_a_map("null").as_deref(), Some("JSON null"));
    }

    #[test]
    fn another_applications_keys_are_named_bounded_never_their_values() {
        assert!(foreign_keys(r#"{"version":1,"fallback":"f","zones":{}}"#).is_empty());
        assert!(foreign_keys("plain-password").is_empty());
        assert_eq!(
            foreign_keys(r#"{"zones":{},"port":1,"db_password":"hunter2"}"#),
            [r#""db_password""#, r#""port""#]
        );
        let many: serde_json::Map<String, serde_json::Value> = (0..12)
            .map(|i| (format!("k{i:02}{}", "é".repeat(100)), "v".into()))
            .collect();
        let shown = foreign_keys(&serde_json::Value::Object(many).to_string());
        assert_eq!(shown.len(), 11);
        assert_eq!(shown[10], "and 2 more");
        assert!(shown[0].ends_with('…') && shown[0].chars().count() < 70, "{}", shown[0]);
    }

    #[tokio::test]
    async fn files_are_replaced_whole_with_the_documented_mode() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/replicas.json");
        write_atomically(&path, b"one", FileModes::default()).await.unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o4777)).unwrap();
        write_atomically(&path, b"two", FileModes::default()).await.unwrap();
        let meta = std::fs::metadata(&path).unwrap();
        assert_eq!(
            (std::fs::read(&path).unwrap(), meta.permissions().mode() & 0o7777),
            (b"two".to_vec(), FILE_MODE)
        );
        assert!(refuse_parent_components(Path::new("out/../../etc/x.json")).is_err());
    }
}
