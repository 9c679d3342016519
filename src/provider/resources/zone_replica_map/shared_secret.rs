//! The map under one key of a shared JSON secret (`secretsmanager { secret_id, key }`): every
//! other key is kept exactly as it is (values byte for byte, key order too). A write reads the
//! current version, changes only the key, writes a new version, and checks that the version it
//! replaced is the one it read; when another writer got in between (its version is now
//! `AWSPREVIOUS`, and this write dropped its change), the change is made again on top of that
//! version. After a few rounds it gives up with an error rather than lose anyone's change.

use async_trait::async_trait;
use serde_json::{Map, Value};

use crate::provider::aws::{Aws, AwsError};

/// Rounds of read → change → write → check before giving up.
pub const ATTEMPTS: usize = 4;

/// What changes under the key.
#[derive(Debug, Clone, Copy)]
pub enum KeyChange<'a> {
    /// Set the key to this document (a JSON object).
    Set(&'a str),
    /// Remove the key.
    Remove,
}

/// Why the key could not be changed or read.
#[derive(Debug, thiserror::Error)]
pub enum SharedSecretError {
    /// The secret's value is not a JSON object (nothing was written).
    #[error("the secret's value is not a JSON object, so the map cannot be kept under a key of it (nothing was written); give the resource a secret holding a JSON object such as {{}}, or leave out `key`")]
    NotObject,
    /// Another writer kept changing the secret.
    #[error("the secret changed between every read and write ({ATTEMPTS} rounds); nothing of anyone's was lost, but the map is not published: apply again")]
    Contended,
    /// AWS failed.
    #[error(transparent)]
    Aws(#[from] AwsError),
}

/// The versions of a secret, as [`change_key`] needs them (Secrets Manager, or a fake).
#[async_trait]
pub trait SecretVersions: Send + Sync {
    /// The current value and VersionId; `None` without one.
    async fn current(&self) -> Result<Option<(String, String)>, AwsError>;
    /// The `AWSPREVIOUS` value and VersionId.
    async fn previous(&self) -> Result<Option<(String, String)>, AwsError>;
    /// The VersionIds labelled `AWSCURRENT` and `AWSPREVIOUS`.
    async fn stages(&self) -> Result<(Option<String>, Option<String>), AwsError>;
    /// Writes a new version; its VersionId.
    async fn put(&self, value: &str) -> Result<String, AwsError>;
}

/// One secret of Secrets Manager.
pub struct Secret<'a> {
    /// The clients.
    pub aws: &'a Aws,
    /// Name or ARN.
    pub id: &'a str,
}

#[async_trait]
impl SecretVersions for Secret<'_> {
    async fn current(&self) -> Result<Option<(String, String)>, AwsError> {
        self.aws.read_secret(self.id).await
    }
    async fn previous(&self) -> Result<Option<(String, String)>, AwsError> {
        self.aws.read_previous_secret(self.id).await
    }
    async fn stages(&self) -> Result<(Option<String>, Option<String>), AwsError> {
        self.aws.secret_stages(self.id).await
    }
    async fn put(&self, value: &str) -> Result<String, AwsError> {
        self.aws.write_secret(self.id, value).await
    }
}

fn object(text: &str) -> Result<Map<String, Value>, SharedSecretError> {
    if text.trim().is_empty() {
        return Ok(Map::new());
    }
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => Ok(map),
        _ => Err(SharedSecretError::NotObject),
    }
}

/// The map under `key` of a secret's value, as compact JSON; `None` when the key is absent.
///
/// # Errors
/// [`SharedSecretError::NotObject`].
pub fn document_under(text: &str, key: &str) -> Result<Option<String>, SharedSecretError> {
    Ok(match object(text)?.get(key) {
        None => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => Some(other.to_string()),
    })
}

/// Changes `key` of the secret and returns the VersionId that holds the change (the current
/// one when nothing had to change; `None` when there was nothing to remove).
///
/// # Errors
/// [`SharedSecretError`]: a value that is not an object (nothing written), a secret that kept
/// changing, or AWS's error.
pub async fn change_key(
    store: &dyn SecretVersions,
    key: &str,
    change: KeyChange<'_>,
) -> Result<Option<String>, SharedSecretError> {
    let desired: Option<Value> = match change {
        KeyChange::Set(document) => Some(serde_json::from_str(document).map_err(|_| SharedSecretError::NotObject)?),
        KeyChange::Remove => None,
    };
    let mut base = store.current().await?;
    // The version our write should replace: the one read, or after a retry our own last write
    // (which replaced the other writer's version and is now AWSPREVIOUS... until ours lands).
    let mut replaces = base.as_ref().map(|(_, version)| version.clone());
    for round in 0..ATTEMPTS {
        let (text, base_version) = match &base {
            Some((text, version)) => (text.as_str(), Some(version.clone())),
            None => ("", None),
        };
        let mut map = object(text)?;
        let unchanged = match &desired {
            Some(value) => map.get(key) == Some(value),
            None => !map.contains_key(key),
        };
        // (After a lost update, the current version is ours without the other change: write.)
        if unchanged && round == 0 {
            return Ok(base_version);
        }
        match &desired {
            Some(value) => {
                map.insert(key.to_string(), value.clone());
            }
            None => {
                map.shift_remove(key);
            }
        }
        let written = Value::Object(map).to_string();
        let version = match store.put(&written).await {
            Ok(version) => version,
            // The response was lost: the current value being exactly ours is our write.
            Err(e @ AwsError::Unconfirmed(_)) => match store.current().await {
                Ok(Some((value, version))) if value == written => version,
                _ => return Err(e.into()),
            },
            Err(e) => return Err(e.into()),
        };
        let (current, previous) = store.stages().await?;
        // Someone wrote after us: their version builds on ours (or they will see drift).
        if current.as_deref() != Some(version.as_str()) || previous == replaces {
            return Ok(Some(version));
        }
        // Someone wrote between our read and our write: their version is AWSPREVIOUS, and
        // ours dropped their change. Make ours again on top of theirs.
        base = store.previous().await?;
        replaces = Some(version);
    }
    Err(SharedSecretError::Contended)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// Versions in memory; `interfere` writes this value right after the next read (a
    /// concurrent writer), that many times.
    #[derive(Default)]
    struct Fake {
        versions: Mutex<Vec<(String, String)>>,
        interfere: Mutex<Vec<String>>,
    }

    impl Fake {
        fn push(&self, value: &str) -> String {
            let mut v = self.versions.lock().unwrap();
            let id = format!("v{}", v.len() + 1);
            v.push((value.to_string(), id.clone()));
            id
        }
        fn latest(&self) -> String {
            self.versions.lock().unwrap().last().unwrap().0.clone()
        }
    }

    #[async_trait]
    impl SecretVersions for Fake {
        async fn current(&self) -> Result<Option<(String, String)>, AwsError> {
            let current = self.versions.lock().unwrap().last().cloned();
            if let Some(other) = self.interfere.lock().unwrap().pop() {
                self.push(&other);
            }
            Ok(current)
        }
        async fn previous(&self) -> Result<Option<(String, String)>, AwsError> {
            let v = self.versions.lock().unwrap();
            let previous = v.len().checked_sub(2).map(|i| v[i].clone());
            drop(v);
            if let Some(other) = self.interfere.lock().unwrap().pop() {
                self.push(&other);
            }
            Ok(previous)
        }
        async fn stages(&self) -> Result<(Option<String>, Option<String>), AwsError> {
            let v = self.versions.lock().unwrap();
            let id = |i: Option<usize>| i.and_then(|i| v.get(i)).map(|(_, id)| id.clone());
            Ok((id(v.len().checked_sub(1)), id(v.len().checked_sub(2))))
        }
        async fn put(&self, value: &str) -> Result<String, AwsError> {
            Ok(self.push(value))
        }
    }

    const DOC: &str = r#"{"version":1,"fallback":"r:1","zones":{"a":"x:1"}}"#;

    #[tokio::test]
    async fn other_keys_stay_and_a_concurrent_change_is_not_lost() {
        let fake = Fake::default();
        fake.push(r#"{"password":"s3cr3t","port":6379,"n":1.50}"#);
        let v = change_key(&fake, "replica_map", KeyChange::Set(DOC)).await.unwrap();
        assert_eq!(v.as_deref(), Some("v2"));
        assert_eq!(
            fake.latest(),
            format!(r#"{{"password":"s3cr3t","port":6379,"n":1.50,"replica_map":{DOC}}}"#)
        );
        // Unchanged: no new version.
        assert_eq!(
            change_key(&fake, "replica_map", KeyChange::Set(DOC))
                .await
                .unwrap()
                .as_deref(),
            Some("v2")
        );
        // Another writer changes `password` between our read and our write.
        fake.interfere.lock().unwrap().push(format!(
            r#"{{"password":"rotated","port":6379,"n":1.50,"replica_map":{DOC}}}"#
        ));
        let doc2 = DOC.replace("x:1", "y:1");
        change_key(&fake, "replica_map", KeyChange::Set(&doc2)).await.unwrap();
        assert_eq!(
            fake.latest(),
            format!(r#"{{"password":"rotated","port":6379,"n":1.50,"replica_map":{doc2}}}"#),
            "the rotation survives"
        );
        assert_eq!(
            document_under(&fake.latest(), "replica_map").unwrap().as_deref(),
            Some(doc2.as_str())
        );
        // Remove only the key.
        change_key(&fake, "replica_map", KeyChange::Remove).await.unwrap();
        assert_eq!(fake.latest(), r#"{"password":"rotated","port":6379,"n":1.50}"#);
        assert_eq!(
            change_key(&fake, "replica_map", KeyChange::Remove)
                .await
                .unwrap()
                .as_deref(),
            Some("v6")
        );
    }

    #[tokio::test]
    async fn a_value_that_is_not_an_object_is_refused_and_contention_gives_up() {
        let fake = Fake::default();
        fake.push("plain-text-password");
        assert!(matches!(
            change_key(&fake, "replica_map", KeyChange::Set(DOC)).await,
            Err(SharedSecretError::NotObject)
        ));
        assert_eq!(fake.versions.lock().unwrap().len(), 1, "nothing written");
        assert!(document_under("[1]", "k").is_err());
        let fake = Fake::default();
        fake.push("{}");
        *fake.interfere.lock().unwrap() = (0..10).map(|i| format!(r#"{{"other":{i}}}"#)).collect();
        assert!(matches!(
            change_key(&fake, "replica_map", KeyChange::Set(DOC)).await,
            Err(SharedSecretError::Contended)
        ));
    }
}
