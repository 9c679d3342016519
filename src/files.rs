//! Files written and read on the user's behalf, safely in shared directories: a file is
//! replaced whole through an exclusive temporary file with a random name next to it (a name
//! planted by someone else is never followed or overwritten), written, synced and renamed into
//! place, with exactly the mode asked for (never setuid, setgid or sticky); a file is read as
//! the path itself (a final symlink is refused), only when it is a regular file, and only up to
//! a size limit. Knows nothing about Terraform.
//!
//! On Windows, which has no Unix modes, the modes are not applied (as `local_file` does there)
//! and a final symlink is refused by a check before opening instead of by `O_NOFOLLOW`.

use std::io::{ErrorKind, Read as _, Write as _};
use std::path::{Component, Path};

/// Replaces `path` with `bytes` so that readers see the old file or the new one, never a part.
/// The new file gets `mode` (the permission bits only: setuid, setgid and sticky are dropped),
/// whatever the old file's mode was; the parent directory is created when missing.
///
/// # Errors
/// The I/O error; the temporary file is removed.
pub fn write_atomically(path: &Path, bytes: &[u8], mode: u32) -> std::io::Result<()> {
    write_atomically_in(path, bytes, mode, 0o777)
}

/// [`write_atomically`], creating missing parent directories with `directory_mode` (less the
/// umask, as `mkdir -p -m` would not but `local_file` does).
///
/// # Errors
/// The I/O error; the temporary file is removed.
pub fn write_atomically_in(path: &Path, bytes: &[u8], mode: u32, directory_mode: u32) -> std::io::Result<()> {
    let mode = mode & 0o777;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        modes::create_dir(dir, directory_mode & 0o777)?;
    }
    let file_name = path
        .file_name()
        .ok_or_else(|| std::io::Error::new(ErrorKind::InvalidInput, "the path names no file"))?
        .to_string_lossy()
        .into_owned();
    let temp = path.with_file_name(format!(".{file_name}.locality-{:016x}.tmp", fastrand::u64(..)));
    let written = (|| {
        let mut file = modes::create_new(&temp, mode)?;
        file.write_all(bytes)?;
        modes::set_exactly(&file, mode)?;
        file.sync_all()?;
        std::fs::rename(&temp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written
}

/// What [`read_regular`] refuses.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// Nothing at the path.
    #[error("it does not exist")]
    NotFound,
    /// A symlink at the path (not followed).
    #[error("it is a symbolic link, which is not followed")]
    Symlink,
    /// A directory, a device, a FIFO, a socket.
    #[error("it is not a regular file")]
    NotRegular,
    /// Larger than the limit.
    #[error("it is larger than {0} bytes")]
    TooLarge(u64),
    /// Any other I/O error.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// Reads `path` itself: a symlink at the path is refused (O_NOFOLLOW), and so is anything but a
/// regular file (checked on the opened file) or a file over `limit` bytes.
///
/// # Errors
/// [`ReadError`].
pub fn read_regular(path: &Path, limit: u64) -> Result<Vec<u8>, ReadError> {
    let file = modes::open_no_follow(path)?;
    let meta = file.metadata()?;
    if !meta.file_type().is_file() {
        return Err(ReadError::NotRegular);
    }
    if meta.len() > limit {
        return Err(ReadError::TooLarge(limit));
    }
    let mut bytes = Vec::new();
    file.take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(ReadError::TooLarge(limit));
    }
    Ok(bytes)
}

/// The mode of the file at `path` itself (`None` where there are no Unix modes, or nothing there).
pub fn mode_of(path: &Path) -> Option<u32> {
    modes::mode_of(path)
}

/// Modes and no-follow opening, on Unix.
#[cfg(unix)]
mod modes {
    use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _, OpenOptionsExt as _, PermissionsExt as _};
    use std::path::Path;

    use super::ReadError;

    pub(super) fn create_dir(dir: &Path, mode: u32) -> std::io::Result<()> {
        std::fs::DirBuilder::new().recursive(true).mode(mode).create(dir)
    }

    pub(super) fn create_new(path: &Path, mode: u32) -> std::io::Result<std::fs::File> {
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(path)
    }

    /// The mode given at creation is reduced by the umask: set it exactly.
    pub(super) fn set_exactly(file: &std::fs::File, mode: u32) -> std::io::Result<()> {
        file.set_permissions(std::fs::Permissions::from_mode(mode))
    }

    pub(super) fn mode_of(path: &Path) -> Option<u32> {
        std::fs::symlink_metadata(path).ok().map(|m| m.mode())
    }

    pub(super) fn open_no_follow(path: &Path) -> Result<std::fs::File, ReadError> {
        use rustix::fs::{Mode, OFlags};
        // O_NONBLOCK: opening a FIFO planted at the path must not hang.
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK;
        match rustix::fs::open(path, flags, Mode::empty()) {
            Ok(fd) => Ok(std::fs::File::from(fd)),
            Err(rustix::io::Errno::NOENT) => Err(ReadError::NotFound),
            Err(rustix::io::Errno::LOOP) => Err(ReadError::Symlink),
            Err(e) => Err(ReadError::Io(e.into())),
        }
    }
}

/// Windows: no Unix modes (they are not applied, as `local_file` does there); a symlink at the
/// path is refused by a check before opening.
#[cfg(not(unix))]
mod modes {
    use std::path::Path;

    use super::ReadError;

    pub(super) fn create_dir(dir: &Path, _mode: u32) -> std::io::Result<()> {
        std::fs::create_dir_all(dir)
    }

    pub(super) fn create_new(path: &Path, _mode: u32) -> std::io::Result<std::fs::File> {
        std::fs::OpenOptions::new().write(true).create_new(true).open(path)
    }

    pub(super) fn set_exactly(_file: &std::fs::File, _mode: u32) -> std::io::Result<()> {
        Ok(())
    }

    pub(super) fn mode_of(_path: &Path) -> Option<u32> {
        None
    }

    pub(super) fn open_no_follow(path: &Path) -> Result<std::fs::File, ReadError> {
        match std::fs::symlink_metadata(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(ReadError::NotFound),
            Err(e) => return Err(ReadError::Io(e)),
            Ok(meta) if meta.file_type().is_symlink() => return Err(ReadError::Symlink),
            Ok(_) => {}
        }
        std::fs::File::open(path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => ReadError::NotFound,
            _ => ReadError::Io(e),
        })
    }
}

/// Whether `path` has a `..` component (refused for files the provider owns: it would write
/// outside the folder the path seems to name).
pub fn has_parent_component(path: &Path) -> bool {
    path.components().any(|c| c == Component::ParentDir)
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
    }

    #[test]
    fn replaced_whole_with_exactly_the_mode_asked_for() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/replicas.json");
        write_atomically(&path, b"one", 0o600).unwrap();
        assert_eq!((std::fs::read(&path).unwrap(), mode(&path)), (b"one".to_vec(), 0o600));
        // An existing setuid, world-writable file: the new one is 0600 all the same.
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o4777)).unwrap();
        write_atomically(&path, b"two", 0o600).unwrap();
        assert_eq!((std::fs::read(&path).unwrap(), mode(&path)), (b"two".to_vec(), 0o600));
        write_atomically(&path, b"three", 0o6755).unwrap();
        assert_eq!(mode(&path), 0o755, "setuid and setgid are never set");
        // A symlink at the path is replaced, not followed.
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "keep").unwrap();
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        write_atomically(&link, b"new", 0o600).unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        assert!(!std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        let left: Vec<_> = std::fs::read_dir(dir.path().join("sub")).unwrap().collect();
        assert_eq!(left.len(), 1, "no temporary file is left behind");
    }

    #[test]
    fn reads_only_regular_files_by_their_own_path() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("map.json");
        std::fs::write(&file, "{}").unwrap();
        assert_eq!(read_regular(&file, 10).unwrap(), b"{}");
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert!(matches!(read_regular(&link, 10), Err(ReadError::Symlink)));
        assert!(matches!(read_regular(dir.path(), 10), Err(ReadError::NotRegular)));
        assert!(matches!(
            read_regular(&dir.path().join("none"), 10),
            Err(ReadError::NotFound)
        ));
        assert!(matches!(read_regular(&file, 1), Err(ReadError::TooLarge(1))));
        let fifo = dir.path().join("fifo");
        assert!(std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success());
        assert!(matches!(read_regular(&fifo, 10), Err(ReadError::NotRegular)));
        assert!(has_parent_component(Path::new("a/../b")) && !has_parent_component(Path::new("/a/b..c")));
    }
}
