//! Publish targets: where the document goes and how it is read back for drift detection.
//! Only the `file` target exists in this version.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

/// A place the document is published to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A local file owned by the resource.
    File(PathBuf),
}

/// Publish-target kinds that an import ID may name.
pub const KNOWN_KINDS: [&str; 3] = ["file", "secretsmanager", "ssm"];

impl Target {
    /// The resource ID: `<kind>:<name>`.
    pub fn id(&self) -> String {
        match self {
            Target::File(path) => format!("file:{}", path.display()),
        }
    }

    /// Reads the published bytes; `Ok(None)` when nothing is published.
    ///
    /// # Errors
    /// A message naming the target and the I/O error.
    pub async fn read(&self) -> Result<Option<Vec<u8>>, String> {
        match self {
            Target::File(path) => match tokio::fs::read(path).await {
                Ok(bytes) => Ok(Some(bytes)),
                Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
                Err(e) => Err(format!("cannot read {}: {e}", path.display())),
            },
        }
    }

    /// Publishes `bytes`, returning the new version (the file's SHA-256). The file is replaced
    /// atomically (written beside it, then renamed), so readers never see half a document.
    ///
    /// # Errors
    /// A message naming the target and the I/O error.
    pub async fn write(&self, bytes: &[u8]) -> Result<String, String> {
        match self {
            Target::File(path) => {
                write_atomically(path, bytes)
                    .await
                    .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
                Ok(super::model::sha256_hex(bytes))
            }
        }
    }

    /// Removes the published document; one that is already gone is success.
    ///
    /// # Errors
    /// A message naming the target and the I/O error.
    pub async fn delete(&self) -> Result<(), String> {
        match self {
            Target::File(path) => match tokio::fs::remove_file(path).await {
                Ok(()) => Ok(()),
                Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
                Err(e) => Err(format!("cannot remove {}: {e}", path.display())),
            },
        }
    }
}

async fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        tokio::fs::create_dir_all(dir).await?;
    }
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temp = path.with_file_name(format!(".{file_name}.locality-{}.tmp", std::process::id()));
    tokio::fs::write(&temp, bytes).await?;
    if let Err(e) = tokio::fs::rename(&temp, path).await {
        let _ = tokio::fs::remove_file(&temp).await;
        return Err(e);
    }
    Ok(())
}
