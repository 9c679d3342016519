//! Directories and files that no other local user can swap. The sidecar often runs as root on
//! hosts with other users, and the resolve cache steers where reads go: a directory is only
//! used when every directory from `/` down to it is owned by root or by this process's user and
//! is not writable by group or others (a sticky directory such as `/tmp` is allowed on the way,
//! since only an entry's owner can rename or remove it, and the entry below is checked in turn).
//! The walk opens each component relative to the one above it without following links (a
//! link is followed only when it is owned by root or this user, and its target is walked the
//! same way), and the files inside are then written and read relative to the open directory
//! handle, never by path, so that a swap after the check cannot redirect them.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::io::{AsFd, AsRawFd as _, BorrowedFd, OwnedFd};
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};

/// Symbolic links followed in one walk at most (as the kernel's own limit).
const MAX_LINKS: usize = 40;

/// This process's effective user.
pub fn euid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// Whether this process runs as root.
pub fn is_root() -> bool {
    euid() == 0
}

/// A directory checked from the root down, held open.
#[derive(Debug)]
pub struct TrustedDir {
    fd: OwnedFd,
    path: PathBuf,
}

/// Who may own the things on the way: root or this process's user.
fn trusted_owner(uid: u32) -> bool {
    uid == 0 || uid == euid()
}

/// Why `path` (`what` it is: "" or "a symbolic link ") cannot be trusted for its owner `uid`.
fn owner_problem(path: &Path, what: &str, uid: u32) -> Result<(), String> {
    if trusted_owner(uid) {
        return Ok(());
    }
    Err(format!(
        "{} is {what}owned by uid {uid} (allowed: root, or this process's user, uid {})",
        path.display(),
        euid()
    ))
}

/// `/`, opened.
fn open_root() -> Result<OwnedFd, String> {
    rustix::fs::open("/", OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())
        .map_err(|e| format!("/: {}", std::io::Error::from(e)))
}

// (`st_mode` is u16 on some systems.)
#[allow(clippy::unnecessary_cast)]
fn mode_bits(stat: &rustix::fs::Stat) -> u32 {
    (stat.st_mode as u32) & 0o7777
}

/// Why `stat` (a directory on the way, at `path`) cannot be trusted; `last`: the directory
/// itself, which must be this user's and closed to writers other than its owner.
fn judge(stat: &rustix::fs::Stat, path: &Path, last: bool) -> Result<(), String> {
    let mode = mode_bits(stat);
    if last {
        if stat.st_uid != euid() {
            return Err(format!(
                "{} is owned by uid {}, not by this process's user (uid {})",
                path.display(),
                stat.st_uid,
                euid()
            ));
        }
        if mode & 0o022 != 0 {
            return Err(format!(
                "{} is writable by {} (mode {:04o}); it must be writable by its owner only",
                path.display(),
                if mode & 0o002 != 0 { "others" } else { "its group" },
                mode
            ));
        }
        return Ok(());
    }
    owner_problem(path, "", stat.st_uid)?;
    if mode & 0o022 != 0 && mode & 0o1000 == 0 {
        return Err(format!(
            "{} is writable by {} and not sticky (mode {:04o})",
            path.display(),
            if mode & 0o002 != 0 { "others" } else { "its group" },
            mode
        ));
    }
    Ok(())
}

fn open_dir_at(parent: BorrowedFd<'_>, name: &OsStr) -> rustix::io::Result<OwnedFd> {
    rustix::fs::openat(
        parent,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
}

impl TrustedDir {
    /// Opens `path` (relative paths are taken from the current directory), creating what is
    /// missing with mode 0700 when `create` is set. Nothing that exists is changed.
    ///
    /// # Errors
    /// One sentence naming the directory on the way that cannot be trusted, and why.
    pub fn open(path: &Path, create: bool) -> Result<TrustedDir, String> {
        let absolute = if path.is_absolute() {
            path.to_path_buf()
        } else {
            std::env::current_dir()
                .map_err(|e| format!("the current directory cannot be read ({e})"))?
                .join(path)
        };
        let io = |at: &Path, e: rustix::io::Errno| format!("{}: {}", at.display(), std::io::Error::from(e));
        let mut pending: Vec<std::ffi::OsString> = Vec::new();
        let mut links = 0;
        // Components still to walk, last first (so that a link's target can be pushed on).
        push_components(&mut pending, &absolute);
        let mut fd = open_root()?;
        let mut at = PathBuf::from("/");
        judge(
            &rustix::fs::fstat(&fd).map_err(|e| io(&at, e))?,
            &at,
            pending.is_empty(),
        )?;
        while let Some(name) = pending.pop() {
            let last = pending.is_empty();
            if name == ".." {
                fd = open_dir_at(fd.as_fd(), OsStr::new("..")).map_err(|e| io(&at, e))?;
                at.pop();
                judge(&rustix::fs::fstat(&fd).map_err(|e| io(&at, e))?, &at, last)?;
                continue;
            }
            let next = at.join(&name);
            let opened = match open_dir_at(fd.as_fd(), &name) {
                Err(rustix::io::Errno::NOENT) if create => {
                    match rustix::fs::mkdirat(fd.as_fd(), &name, Mode::from_raw_mode(0o700)) {
                        Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                        Err(e) => return Err(io(&next, e)),
                    }
                    open_dir_at(fd.as_fd(), &name)
                }
                other => other,
            };
            match opened {
                Ok(child) => {
                    judge(&rustix::fs::fstat(&child).map_err(|e| io(&next, e))?, &next, last)?;
                    fd = child;
                    at = next;
                }
                Err(rustix::io::Errno::LOOP | rustix::io::Errno::NOTDIR) => {
                    let stat =
                        rustix::fs::statat(fd.as_fd(), &name, AtFlags::SYMLINK_NOFOLLOW).map_err(|e| io(&next, e))?;
                    if FileType::from_raw_mode(stat.st_mode) != FileType::Symlink {
                        return Err(format!("{} is not a directory", next.display()));
                    }
                    owner_problem(&next, "a symbolic link ", stat.st_uid)?;
                    links += 1;
                    if links > MAX_LINKS {
                        return Err(format!("{}: too many symbolic links", absolute.display()));
                    }
                    let target = rustix::fs::readlinkat(fd.as_fd(), &name, Vec::new()).map_err(|e| io(&next, e))?;
                    let target = PathBuf::from(OsStr::from_bytes(target.as_bytes()));
                    if target.is_absolute() {
                        fd = open_root()?;
                        at = PathBuf::from("/");
                    }
                    push_components(&mut pending, &target);
                }
                Err(e) => return Err(io(&next, e)),
            }
        }
        Ok(TrustedDir { fd, path: absolute })
    }

    /// The path it was opened by (for messages and for tools that take a path).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The open handle.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// A path to `name` inside that goes through the open handle where the system offers one
    /// (Linux: `/proc/self/fd/N/name`, which is also short enough for any Unix socket), else
    /// the path it was opened by.
    pub fn path_of(&self, name: &str) -> PathBuf {
        let by_handle = PathBuf::from(format!("/proc/self/fd/{}", self.fd.as_raw_fd()));
        if cfg!(target_os = "linux") && by_handle.is_dir() {
            by_handle.join(name)
        } else {
            self.path.join(name)
        }
    }

    /// Writes `bytes` to `name` with mode 0600, through a temporary file and a rename: a
    /// reader sees the old contents or the new, never a part.
    ///
    /// # Errors
    /// The file cannot be written or renamed.
    pub fn write(&self, name: &str, bytes: &[u8]) -> std::io::Result<()> {
        let temp = format!(".{name}.{}.tmp", std::process::id());
        let _ = rustix::fs::unlinkat(self.fd(), temp.as_str(), AtFlags::empty());
        let file = rustix::fs::openat(
            self.fd(),
            temp.as_str(),
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )?;
        let written = std::io::Write::write_all(&mut std::fs::File::from(file), bytes)
            .and_then(|()| rustix::fs::renameat(self.fd(), temp.as_str(), self.fd(), name).map_err(Into::into));
        if written.is_err() {
            let _ = rustix::fs::unlinkat(self.fd(), temp.as_str(), AtFlags::empty());
        }
        written
    }

    /// The contents of `name` when it is a regular file of this user that nobody else may
    /// write and no larger than `limit`; `Ok(None)` when there is no such file. A file that is
    /// not ours, not plain, or writable by others is removed (so the next write is ours).
    ///
    /// # Errors
    /// It cannot be read.
    pub fn read(&self, name: &str, limit: u64) -> std::io::Result<Option<Vec<u8>>> {
        let file = match rustix::fs::openat(
            self.fd(),
            name,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK,
            Mode::empty(),
        ) {
            Ok(file) => file,
            Err(rustix::io::Errno::NOENT) => return Ok(None),
            Err(rustix::io::Errno::LOOP) => {
                self.remove(name);
                return Ok(None);
            }
            Err(e) => return Err(e.into()),
        };
        let stat = rustix::fs::fstat(&file)?;
        let ours = FileType::from_raw_mode(stat.st_mode) == FileType::RegularFile
            && stat.st_uid == euid()
            && mode_bits(&stat) & 0o022 == 0;
        if !ours || stat.st_size as u64 > limit {
            self.remove(name);
            return Ok(None);
        }
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut std::io::Read::take(std::fs::File::from(file), limit), &mut bytes)?;
        Ok(Some(bytes))
    }

    /// Removes `name` (nothing when it does not exist).
    pub fn remove(&self, name: &str) {
        let _ = rustix::fs::unlinkat(self.fd(), name, AtFlags::empty());
    }

    /// Device and inode, to recognise the directory elsewhere (a process's working directory).
    pub fn identity(&self) -> std::io::Result<(u64, u64)> {
        let stat = rustix::fs::fstat(&self.fd)?;
        #[allow(clippy::useless_conversion, clippy::unnecessary_cast)]
        Ok((stat.st_dev as u64, stat.st_ino as u64))
    }
}

fn push_components(pending: &mut Vec<std::ffi::OsString>, path: &Path) {
    let mut names: Vec<std::ffi::OsString> = Vec::new();
    for component in path.components() {
        match component {
            Component::Normal(name) => names.push(name.to_os_string()),
            Component::ParentDir => names.push("..".into()),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    pending.extend(names.into_iter().rev());
}

/// Why the file at `path`, opened as `file`, must not be believed by a process of this user:
/// owned by someone other than root or this user, or writable by others (or by a group other
/// than root's and this process's). `None` when it may be.
pub fn untrusted_file(file: &std::fs::File, path: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt as _;
    let meta = file.metadata().ok()?;
    let mode = meta.mode() & 0o7777;
    let group_ok = mode & 0o020 == 0 || meta.gid() == 0 || meta.gid() == rustix::process::getegid().as_raw();
    if let Err(problem) = owner_problem(path, "", meta.uid()) {
        return Some(problem);
    }
    if mode & 0o002 != 0 || !group_ok {
        return Some(format!(
            "{} is writable by {} (mode {mode:04o})",
            path.display(),
            if mode & 0o002 != 0 { "others" } else { "another group" }
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    #[test]
    fn a_chain_of_our_directories_is_created_and_reused_and_nothing_is_chmodded() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("a/b/c");
        let opened = TrustedDir::open(&dir, true).unwrap();
        assert_eq!(std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700);
        opened.write("x", b"one").unwrap();
        opened.write("x", b"two").unwrap();
        assert_eq!(opened.read("x", 10).unwrap().as_deref(), Some(&b"two"[..]));
        assert_eq!(
            std::fs::metadata(dir.join("x")).unwrap().permissions().mode() & 0o777,
            0o600
        );
        assert_eq!(opened.read("missing", 10).unwrap(), None);
        // An existing directory open to others is refused and left as it is.
        let open = root.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        let err = TrustedDir::open(&open, true).unwrap_err();
        assert!(err.contains("writable by others") && err.contains("open"), "{err}");
        assert_eq!(std::fs::metadata(&open).unwrap().permissions().mode() & 0o7777, 0o777);
        // Below it, too: a directory writable by others on the way (not sticky).
        let err = TrustedDir::open(&open.join("below"), true).unwrap_err();
        assert!(err.contains("not sticky"), "{err}");
        assert!(!open.join("below").exists());
        // A sticky one on the way is fine.
        let sticky = root.path().join("sticky");
        std::fs::create_dir(&sticky).unwrap();
        std::fs::set_permissions(&sticky, std::fs::Permissions::from_mode(0o1777)).unwrap();
        TrustedDir::open(&sticky.join("mine"), true).unwrap();
        // A link of ours is followed, and the target is walked.
        std::os::unix::fs::symlink(&dir, root.path().join("link")).unwrap();
        let via = TrustedDir::open(&root.path().join("link"), false).unwrap();
        assert_eq!(via.read("x", 10).unwrap().as_deref(), Some(&b"two"[..]));
        std::os::unix::fs::symlink(&open, root.path().join("to-open")).unwrap();
        assert!(TrustedDir::open(&root.path().join("to-open/x"), true).is_err());
        // A file writable by others is not believed, and is removed.
        std::fs::set_permissions(dir.join("x"), std::fs::Permissions::from_mode(0o666)).unwrap();
        assert_eq!(opened.read("x", 10).unwrap(), None);
        assert!(!dir.join("x").exists());
    }
}
