//! What one process learns and the next one reuses (PHP-FPM and friends start processes
//! often): the detected zone, kept for good; a failed detection, kept for its TTL and never
//! longer; replicas found unhealthy, each until its mark expires. One small JSON file per
//! entry in a directory of mode 0700, files of mode 0600 written atomically (temp + rename).
//! An entry that is corrupt, not ours, or writable by others is ignored and rewritten; a
//! directory that another user could swap (checked from the root down, [`crate::trusted`]) is
//! not used at all, and entries are read and written through the open directory handle. (On Windows, where there are no modes or
//! uids, the default directory is under the user's own temporary folder, protected by its
//! ACL, and only the regular-file and size checks apply.)

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{de::DeserializeOwned, Deserialize, Serialize};

use crate::detect::ZoneSource;
use crate::zone::Zone;

/// The directory for this process's state when none is given, first that applies:
/// `$RUNTIME_DIRECTORY` (systemd's `RuntimeDirectory=`; the first when it lists several),
/// `$XDG_RUNTIME_DIR/locality`, `/run/locality` when running as root, else
/// `<temp dir>/locality-<uid>` (checked from the root down before use: see [`crate::trusted`]).
pub fn default_dir() -> PathBuf {
    let set = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(dirs) = set("RUNTIME_DIRECTORY") {
        if let Some(first) = std::env::split_paths(&dirs).find(|p| p.is_absolute()) {
            return first;
        }
    }
    if let Some(dir) = set("XDG_RUNTIME_DIR") {
        return PathBuf::from(dir).join("locality");
    }
    #[cfg(unix)]
    if crate::trusted::is_root() {
        return PathBuf::from("/run/locality");
    }
    std::env::temp_dir().join(format!("locality-{}", private::user()))
}

/// Unix: the user's number names the temporary directory; ownership and modes are checked by
/// [`crate::trusted`].
#[cfg(unix)]
mod private {
    /// This user, as a directory name's suffix.
    pub(super) fn user() -> u32 {
        crate::trusted::euid()
    }
}

/// What "ours, and closed to others" means on this platform: Windows has no modes or uids; the
/// user's temporary folder is private by its ACL.
#[cfg(not(unix))]
mod private {
    /// This user, as a directory name's suffix.
    pub(super) fn user() -> String {
        std::env::var("USERNAME").unwrap_or_else(|_| "user".into())
    }

    /// Creates `dir` and its parents.
    pub(super) fn create_dir(dir: &std::path::Path) -> std::io::Result<()> {
        std::fs::create_dir_all(dir)
    }

    /// A directory (not a link to one).
    pub(super) fn dir_is_ours(m: &std::fs::Metadata) -> bool {
        m.is_dir()
    }

    /// A regular file.
    pub(super) fn file_is_ours(m: &std::fs::Metadata) -> bool {
        m.is_file()
    }

    /// Options creating a new file.
    pub(super) fn new_file() -> std::fs::OpenOptions {
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        options
    }
}

/// Writes `bytes` to `path` readable by this user only (Windows: the user's folder's ACL), through a temporary file in
/// the same directory and a rename: a reader sees the old contents or the new, never a part.
///
/// # Errors
/// The file cannot be written or renamed.
#[cfg(not(unix))]
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temp = path.with_file_name(format!(".{name}.{}.{}", std::process::id(), now()));
    let written = private::new_file()
        .open(&temp)
        .and_then(|mut f| std::io::Write::write_all(&mut f, bytes))
        .and_then(|()| std::fs::rename(&temp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// A cached zone.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ZoneEntry {
    /// The zone.
    pub zone: Zone,
    /// The source that found it.
    pub source: ZoneSource,
}

/// A cached failed detection.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct FailureEntry {
    /// When it failed (Unix seconds).
    pub at: u64,
    /// For how long it is remembered (seconds).
    pub ttl: u64,
    /// Why.
    pub reason: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct UnhealthyEntry {
    endpoint: String,
    at: u64,
    ttl: u64,
}

/// The cache in one directory.
#[derive(Debug)]
pub struct Cache {
    store: Result<Store, String>,
}

/// Where entries live: on Unix a directory checked from the root down and held open (see
/// [`crate::trusted`]); elsewhere the directory's path.
#[cfg(unix)]
type Store = crate::trusted::TrustedDir;

#[cfg(not(unix))]
#[derive(Debug)]
struct Store(PathBuf);

#[cfg(not(unix))]
impl Store {
    fn read(&self, name: &str, limit: u64) -> std::io::Result<Option<Vec<u8>>> {
        let path = self.0.join(name);
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            return Ok(None);
        };
        if !private::file_is_ours(&meta) || meta.len() > limit {
            self.remove(name);
            return Ok(None);
        }
        std::fs::read(&path).map(Some)
    }

    fn write(&self, name: &str, bytes: &[u8]) -> std::io::Result<()> {
        write_private(&self.0.join(name), bytes)
    }

    fn remove(&self, name: &str) {
        let _ = std::fs::remove_file(self.0.join(name));
    }
}

impl Cache {
    /// Opens (and creates, mode 0700) the directory. A directory that another user could
    /// swap (any directory on the way owned by someone other than root or this user, or
    /// writable by group or others without being sticky), or that is open to others itself,
    /// is not used: nothing is read from or written to it. Nothing existing is chmod-ed
    /// (`--cache-dir /tmp` run as root must not close /tmp).
    pub fn open(dir: &Path) -> Cache {
        #[cfg(unix)]
        let store = crate::trusted::TrustedDir::open(dir, true);
        #[cfg(not(unix))]
        let store = {
            let _ = private::create_dir(dir);
            if std::fs::symlink_metadata(dir).is_ok_and(|m| private::dir_is_ours(&m)) {
                Ok(Store(dir.to_path_buf()))
            } else {
                Err(format!("{} is not a directory of this user's", dir.display()))
            }
        };
        Cache { store }
    }

    /// Whether entries are read and written.
    pub fn usable(&self) -> bool {
        self.store.is_ok()
    }

    /// Why the directory is not used, when it is not.
    pub fn problem(&self) -> Option<&str> {
        self.store.as_ref().err().map(String::as_str)
    }

    fn read<T: DeserializeOwned>(&self, name: &str) -> Option<T> {
        let bytes = self.store.as_ref().ok()?.read(name, 64 * 1024).ok()??;
        serde_json::from_slice(&bytes).ok()
    }

    fn write<T: Serialize>(&self, name: &str, value: &T) {
        let (Ok(store), Ok(text)) = (&self.store, serde_json::to_string(value)) else {
            return;
        };
        let _ = store.write(name, text.as_bytes());
    }

    fn remove(&self, name: &str) {
        if let Ok(store) = &self.store {
            store.remove(name);
        }
    }

    /// The zone detected earlier, if any.
    pub fn zone(&self) -> Option<ZoneEntry> {
        let entry: ZoneEntry = self.read("zone.json")?;
        (entry.zone.name.is_some() || entry.zone.id.is_some()).then_some(entry)
    }

    /// Keeps a detected zone for good (and forgets a cached failure).
    pub fn store_zone(&self, entry: &ZoneEntry) {
        self.write("zone.json", entry);
        self.remove("failure.json");
    }

    /// A failed detection still within its TTL: the stored TTL and `ttl`, whichever is
    /// shorter, so that no setting makes a cached failure outlive the TTL in force.
    pub fn failure(&self, ttl: Duration) -> Option<FailureEntry> {
        let entry: FailureEntry = self.read("failure.json")?;
        let now = now();
        let live = entry.at <= now && now < entry.at.saturating_add(entry.ttl.min(ttl.as_secs()));
        if !live {
            self.remove("failure.json");
        }
        live.then_some(entry)
    }

    /// Remembers a failed detection for `ttl` (nothing when it is zero).
    pub fn store_failure(&self, reason: &str, ttl: Duration) {
        if ttl.as_secs() > 0 {
            self.write(
                "failure.json",
                &FailureEntry {
                    at: now(),
                    ttl: ttl.as_secs(),
                    reason: reason.to_string(),
                },
            );
        }
    }

    fn unhealthy_name(endpoint: &str) -> String {
        let safe: String = endpoint
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .take(200)
            .collect();
        format!("unhealthy-{safe}.json")
    }

    /// Whether `endpoint` is marked unhealthy: for at most `ttl` after the mark.
    pub fn is_unhealthy(&self, endpoint: &str, ttl: Duration) -> bool {
        let Some(entry) = self.read::<UnhealthyEntry>(&Self::unhealthy_name(endpoint)) else {
            return false;
        };
        let now = now();
        entry.endpoint == endpoint && entry.at <= now && now < entry.at.saturating_add(entry.ttl.min(ttl.as_secs()))
    }

    /// Marks `endpoint` unhealthy for `ttl`.
    pub fn mark_unhealthy(&self, endpoint: &str, ttl: Duration) {
        self.write(
            &Self::unhealthy_name(endpoint),
            &UnhealthyEntry {
                endpoint: endpoint.to_string(),
                at: now(),
                ttl: ttl.as_secs(),
            },
        );
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    #[test]
    fn entries_round_trip_and_expire() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(&dir.path().join("c"));
        assert!(cache.usable());
        assert_eq!(
            std::fs::metadata(dir.path().join("c")).unwrap().permissions().mode() & 0o777,
            0o700
        );
        assert!(cache.zone().is_none());
        let entry = ZoneEntry {
            zone: Zone::parse("ap-northeast-1a").unwrap(),
            source: ZoneSource::ImdsV2,
        };
        cache.store_failure("down", Duration::from_secs(60));
        assert!(cache.failure(Duration::from_secs(60)).is_some());
        // A shorter TTL in force wins over the stored one.
        assert!(cache.failure(Duration::from_secs(0)).is_none());
        assert!(
            cache.failure(Duration::from_secs(60)).is_none(),
            "an expired failure is removed"
        );
        cache.store_failure("down", Duration::from_secs(60));
        cache.store_zone(&entry);
        assert_eq!(cache.zone(), Some(entry));
        assert!(
            cache.failure(Duration::from_secs(60)).is_none(),
            "a detected zone clears the failure"
        );
        let meta = std::fs::metadata(dir.path().join("c/zone.json")).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        cache.mark_unhealthy("a:6379", Duration::from_secs(60));
        assert!(cache.is_unhealthy("a:6379", Duration::from_secs(60)));
        assert!(!cache.is_unhealthy("a:6379", Duration::from_secs(0)));
        assert!(!cache.is_unhealthy("b:6379", Duration::from_secs(60)));
    }

    #[test]
    fn corrupt_future_and_open_entries_are_ignored() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("cache");
        let cache = Cache::open(&dir);
        assert!(cache.usable());
        std::fs::write(dir.join("zone.json"), "{garbage").unwrap();
        assert!(cache.zone().is_none());
        // A failure "from the future" (clock skew, a forged entry) is not live.
        std::fs::write(
            dir.join("failure.json"),
            format!(r#"{{"at":{},"ttl":60,"reason":"x"}}"#, now() + 3600),
        )
        .unwrap();
        std::fs::set_permissions(dir.join("failure.json"), std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(cache.failure(Duration::from_secs(60)).is_none());
        // A world-writable entry is removed and not believed.
        let zone = dir.join("zone.json");
        std::fs::write(
            &zone,
            r#"{"zone":{"name":"ap-northeast-1a","id":null},"source":"imds-v2"}"#,
        )
        .unwrap();
        std::fs::set_permissions(&zone, std::fs::Permissions::from_mode(0o666)).unwrap();
        assert!(cache.zone().is_none());
        assert!(!zone.exists());
        // A directory open to others is not used, and not chmod-ed either.
        let open = root.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o1777)).unwrap();
        assert!(!Cache::open(&open).usable());
        assert_eq!(std::fs::metadata(&open).unwrap().permissions().mode() & 0o7777, 0o1777);
    }
}
