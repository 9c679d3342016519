//! Files written and read on the user's behalf, safely in shared directories: a file is
//! replaced whole through an exclusive temporary file with a random name next to it (a name
//! planted by someone else is never followed or overwritten), written, synced and renamed into
//! place, with exactly the mode asked for (never setuid, setgid or sticky); a file is read as
//! the path itself (a final symlink is refused), only when it is a regular file, and only up to
//! a size limit. With [`Directories::NoLinks`] (files the provider owns), each directory on the
//! way is opened without following symbolic links and the file is reached through that handle,
//! so a symlinked directory is refused, named, and never written or read through. Knows
//! nothing about Terraform.
//!
//! On Windows, which has no Unix modes, the modes are not applied (as `local_file` does there)
//! and symlinks are refused by checks before opening instead of by `O_NOFOLLOW`.

use std::io::{ErrorKind, Read as _, Write as _};
use std::path::{Component, Path};

/// How the directories on the way to a file are reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Directories {
    /// Symbolic links followed, as a shell does (the CLI's own outputs).
    Follow,
    /// Each directory opened without following symbolic links: a path through one is refused,
    /// naming it (a file the provider owns is never written, read or removed elsewhere).
    NoLinks,
}

/// Replaces `path` with `bytes` so that readers see the old file or the new one, never a part.
/// The new file gets `mode` (the permission bits only: setuid, setgid and sticky are dropped),
/// whatever the old file's mode was; the parent directory is created when missing.
///
/// # Errors
/// The I/O error; the temporary file is removed.
pub fn write_atomically(path: &Path, bytes: &[u8], mode: u32) -> std::io::Result<()> {
    write_atomically_in(path, bytes, mode, 0o777, Directories::Follow)
}

/// [`write_atomically`], creating missing parent directories with `directory_mode` (less the
/// umask, as `mkdir -p -m` would not but `local_file` does), reaching them as `directories` says.
///
/// # Errors
/// The I/O error (a symlinked directory under [`Directories::NoLinks`] is `InvalidInput`,
/// naming it); the temporary file is removed.
pub fn write_atomically_in(
    path: &Path,
    bytes: &[u8],
    mode: u32,
    directory_mode: u32,
    directories: Directories,
) -> std::io::Result<()> {
    let mode = mode & 0o777;
    let parent = modes::Parent::open(path, directories, Some(directory_mode & 0o777))?;
    let temp = format!(
        ".{}.locality-{:016x}.tmp",
        parent.name.to_string_lossy(),
        fastrand::u64(..)
    );
    let written = (|| {
        let mut file = parent.create_new(&temp, mode)?;
        file.write_all(bytes)?;
        modes::set_exactly(&file, mode)?;
        file.sync_all()?;
        parent.rename_into_place(&temp)
    })();
    if written.is_err() {
        parent.remove_quietly(&temp);
    }
    written
}

/// Removes the file at `path` (a symlink there is removed itself); `Ok(false)` when nothing
/// was there, or a directory on the way is missing.
///
/// # Errors
/// The I/O error (a symlinked directory under [`Directories::NoLinks`] is `InvalidInput`).
pub fn remove(path: &Path, directories: Directories) -> std::io::Result<bool> {
    let parent = match modes::Parent::open(path, directories, None) {
        Ok(parent) => parent,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e),
    };
    match parent.remove() {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

/// A file path's directory (`.` when it has none) and the file's name.
fn split(path: &Path) -> std::io::Result<(&Path, std::ffi::OsString)> {
    let name = path
        .file_name()
        .ok_or_else(|| std::io::Error::new(ErrorKind::InvalidInput, "the path names no file"))?
        .to_os_string();
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    Ok((dir, name))
}

/// The error for a directory on the way that is a symbolic link.
fn symlinked_directory(dir: &Path) -> std::io::Error {
    let real = std::fs::canonicalize(dir)
        .map(|real| format!(" (it points to {})", real.display()))
        .unwrap_or_default();
    std::io::Error::new(
        ErrorKind::InvalidInput,
        format!(
            "the directory {} on the way is a symbolic link{real}; a path through a symbolic link is refused: give the real path",
            dir.display()
        ),
    )
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
/// regular file (checked on the opened file) or a file over `limit` bytes. The directories on
/// the way are reached as `directories` says.
///
/// # Errors
/// [`ReadError`].
pub fn read_regular(path: &Path, limit: u64, directories: Directories) -> Result<Vec<u8>, ReadError> {
    let parent = match modes::Parent::open(path, directories, None) {
        Ok(parent) => parent,
        Err(e) if e.kind() == ErrorKind::NotFound => return Err(ReadError::NotFound),
        Err(e) => return Err(ReadError::Io(e)),
    };
    let file = parent.open_no_follow()?;
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

/// The mode of the file at `path` itself (`None` where there are no Unix modes, nothing there,
/// or no way there as `directories` says).
pub fn mode_of(path: &Path, directories: Directories) -> Option<u32> {
    modes::Parent::open(path, directories, None).ok()?.mode()
}

/// Modes and no-follow opening, on Unix: the file's directory is held open and the file is
/// reached through it (`openat`, `renameat`, `unlinkat`).
#[cfg(unix)]
mod modes {
    use std::ffi::OsString;
    use std::os::fd::OwnedFd;
    use std::os::unix::fs::{DirBuilderExt as _, PermissionsExt as _};
    use std::path::{Component, Path, PathBuf};

    use rustix::fs::{AtFlags, Mode, OFlags, CWD};
    use rustix::io::Errno;

    use super::{Directories, ReadError};

    /// The open directory of a file, and the file's name in it.
    pub(super) struct Parent {
        dir: OwnedFd,
        pub(super) name: OsString,
    }

    fn open_dir(at: &OwnedFd, name: &Path, follow: bool) -> rustix::io::Result<OwnedFd> {
        let mut flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        if !follow {
            flags |= OFlags::NOFOLLOW;
        }
        rustix::fs::openat(at, name, flags, Mode::empty())
    }

    impl Parent {
        /// Opens the directory of `path` (created with `create` mode when missing).
        pub(super) fn open(path: &Path, directories: Directories, create: Option<u32>) -> std::io::Result<Parent> {
            let (parent, name) = super::split(path)?;
            if directories == Directories::Follow {
                if let Some(mode) = create {
                    std::fs::DirBuilder::new().recursive(true).mode(mode).create(parent)?;
                }
                let dir = rustix::fs::open(
                    parent,
                    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
                    Mode::empty(),
                )?;
                return Ok(Parent { dir, name });
            }
            let start = if parent.is_absolute() {
                Path::new("/")
            } else {
                Path::new(".")
            };
            let mut dir = rustix::fs::openat(
                CWD,
                start,
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
            )?;
            let mut walked = PathBuf::from(start);
            for component in parent.components() {
                let Component::Normal(part) = component else { continue };
                walked.push(part);
                let next = match open_dir(&dir, Path::new(part), false) {
                    Err(Errno::NOENT) if create.is_some() => {
                        match rustix::fs::mkdirat(&dir, part, Mode::from_raw_mode(create.unwrap_or(0o700))) {
                            Ok(()) | Err(Errno::EXIST) => {}
                            Err(e) => return Err(e.into()),
                        }
                        open_dir(&dir, Path::new(part), false)
                    }
                    other => other,
                };
                dir = match next {
                    Ok(next) => next,
                    Err(Errno::LOOP | Errno::NOTDIR) if is_symlink(&dir, Path::new(part)) => {
                        return Err(super::symlinked_directory(&walked));
                    }
                    Err(e) => return Err(e.into()),
                };
            }
            Ok(Parent { dir, name })
        }

        pub(super) fn create_new(&self, name: &str, mode: u32) -> std::io::Result<std::fs::File> {
            let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
            Ok(rustix::fs::openat(&self.dir, name, flags, Mode::from_raw_mode(mode))?.into())
        }

        pub(super) fn rename_into_place(&self, temp: &str) -> std::io::Result<()> {
            Ok(rustix::fs::renameat(&self.dir, temp, &self.dir, &self.name)?)
        }

        pub(super) fn remove_quietly(&self, name: &str) {
            let _ = rustix::fs::unlinkat(&self.dir, name, AtFlags::empty());
        }

        pub(super) fn remove(&self) -> std::io::Result<()> {
            Ok(rustix::fs::unlinkat(&self.dir, &self.name, AtFlags::empty())?)
        }

        // (`st_mode` is a u16 on macOS.)
        #[allow(clippy::unnecessary_cast)]
        pub(super) fn mode(&self) -> Option<u32> {
            rustix::fs::statat(&self.dir, &self.name, AtFlags::SYMLINK_NOFOLLOW)
                .ok()
                .map(|stat| stat.st_mode as u32)
        }

        pub(super) fn open_no_follow(&self) -> Result<std::fs::File, ReadError> {
            // O_NONBLOCK: opening a FIFO planted at the path must not hang.
            let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK;
            match rustix::fs::openat(&self.dir, &self.name, flags, Mode::empty()) {
                Ok(fd) => Ok(std::fs::File::from(fd)),
                Err(Errno::NOENT) => Err(ReadError::NotFound),
                Err(Errno::LOOP) => Err(ReadError::Symlink),
                Err(e) => Err(ReadError::Io(e.into())),
            }
        }
    }

    fn is_symlink(dir: &OwnedFd, name: &Path) -> bool {
        rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)
            .is_ok_and(|stat| rustix::fs::FileType::from_raw_mode(stat.st_mode as _) == rustix::fs::FileType::Symlink)
    }

    /// The mode given at creation is reduced by the umask: set it exactly.
    pub(super) fn set_exactly(file: &std::fs::File, mode: u32) -> std::io::Result<()> {
        file.set_permissions(std::fs::Permissions::from_mode(mode))
    }
}

/// Windows: no Unix modes (they are not applied, as `local_file` does there); symlinks at the
/// path and (with [`Directories::NoLinks`]) on the way are refused by checks before opening.
#[cfg(not(unix))]
mod modes {
    use std::ffi::OsString;
    use std::path::{Component, Path, PathBuf};

    use super::{Directories, ReadError};

    /// The directory of a file, by path, and the file's name in it.
    pub(super) struct Parent {
        dir: PathBuf,
        pub(super) name: OsString,
    }

    impl Parent {
        pub(super) fn open(path: &Path, directories: Directories, create: Option<u32>) -> std::io::Result<Parent> {
            let (dir, name) = super::split(path)?;
            let dir = dir.to_path_buf();
            if directories == Directories::NoLinks {
                let mut walked = PathBuf::new();
                for component in dir.components() {
                    walked.push(component);
                    if let Component::Normal(_) = component {
                        match std::fs::symlink_metadata(&walked) {
                            Ok(meta) if meta.file_type().is_symlink() => {
                                return Err(super::symlinked_directory(&walked))
                            }
                            Ok(_) => {}
                            Err(e) if e.kind() == std::io::ErrorKind::NotFound => break,
                            Err(e) => return Err(e),
                        }
                    }
                }
            }
            if create.is_some() {
                std::fs::create_dir_all(&dir)?;
            } else if !dir.is_dir() {
                return Err(std::io::ErrorKind::NotFound.into());
            }
            Ok(Parent { dir, name })
        }

        pub(super) fn create_new(&self, name: &str, _mode: u32) -> std::io::Result<std::fs::File> {
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(self.dir.join(name))
        }

        pub(super) fn rename_into_place(&self, temp: &str) -> std::io::Result<()> {
            std::fs::rename(self.dir.join(temp), self.dir.join(&self.name))
        }

        pub(super) fn remove_quietly(&self, name: &str) {
            let _ = std::fs::remove_file(self.dir.join(name));
        }

        pub(super) fn remove(&self) -> std::io::Result<()> {
            std::fs::remove_file(self.dir.join(&self.name))
        }

        pub(super) fn mode(&self) -> Option<u32> {
            None
        }

        pub(super) fn open_no_follow(&self) -> Result<std::fs::File, ReadError> {
            let path = self.dir.join(&self.name);
            match std::fs::symlink_metadata(&path) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(ReadError::NotFound),
                Err(e) => return Err(ReadError::Io(e)),
                Ok(meta) if meta.file_type().is_symlink() => return Err(ReadError::Symlink),
                Ok(_) => {}
            }
            std::fs::File::open(&path).map_err(|e| match e.kind() {
                std::io::ErrorKind::NotFound => ReadError::NotFound,
                _ => ReadError::Io(e),
            })
        }
    }

    pub(super) fn set_exactly(_file: &std::fs::File, _mode: u32) -> std::io::Result<()> {
        Ok(())
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
        assert_eq!(read_regular(&file, 10, Directories::NoLinks).unwrap(), b"{}");
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert!(matches!(
            read_regular(&link, 10, Directories::NoLinks),
            Err(ReadError::Symlink)
        ));
        assert!(matches!(
            read_regular(dir.path(), 10, Directories::NoLinks),
            Err(ReadError::NotRegular)
        ));
        assert!(matches!(
            read_regular(&dir.path().join("none"), 10, Directories::NoLinks),
            Err(ReadError::NotFound)
        ));
        assert!(matches!(
            read_regular(&file, 1, Directories::NoLinks),
            Err(ReadError::TooLarge(1))
        ));
        let fifo = dir.path().join("fifo");
        assert!(std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success());
        assert!(matches!(
            read_regular(&fifo, 10, Directories::NoLinks),
            Err(ReadError::NotRegular)
        ));
        assert!(has_parent_component(Path::new("a/../b")) && !has_parent_component(Path::new("/a/b..c")));
    }

    #[test]
    fn no_links_refuses_a_symlinked_directory_on_the_way_and_names_it() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        std::fs::create_dir(&real).unwrap();
        std::fs::write(real.join("map.json"), "{}").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let through = link.join("map.json");
        for result in [
            write_atomically_in(&link.join("new/map.json"), b"x", 0o600, 0o700, Directories::NoLinks).err(),
            read_regular(&through, 10, Directories::NoLinks)
                .err()
                .map(|e| std::io::Error::other(e.to_string())),
            remove(&through, Directories::NoLinks).err(),
        ] {
            let message = result.expect("refused").to_string();
            assert!(
                message.contains(&format!(
                    "the directory {} on the way is a symbolic link",
                    link.display()
                )),
                "{message}"
            );
        }
        assert!(!real.join("new").exists(), "nothing created through the link");
        assert_eq!(
            std::fs::read(real.join("map.json")).unwrap(),
            b"{}",
            "nothing removed through the link"
        );
        assert_eq!(mode_of(&through, Directories::NoLinks), None);
        // Followed where the caller asks for it (the CLI's outputs), and a missing directory is
        // created under NoLinks.
        write_atomically_in(&link.join("out.tf"), b"y", 0o644, 0o777, Directories::Follow).unwrap();
        assert_eq!(std::fs::read(real.join("out.tf")).unwrap(), b"y");
        write_atomically_in(&real.join("a/b/map.json"), b"z", 0o600, 0o700, Directories::NoLinks).unwrap();
        assert_eq!(
            read_regular(&real.join("a/b/map.json"), 10, Directories::NoLinks).unwrap(),
            b"z"
        );
        assert!(remove(&real.join("a/b/map.json"), Directories::NoLinks).unwrap());
        assert!(!remove(&real.join("a/b/map.json"), Directories::NoLinks).unwrap());
        assert!(!remove(&real.join("none/map.json"), Directories::NoLinks).unwrap());
    }
}
