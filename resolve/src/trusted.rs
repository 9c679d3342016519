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
fn open_root() -> rustix::io::Result<OwnedFd> {
    rustix::fs::open("/", OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())
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

/// A directory on the way to a file: opened for search only where the system can (Linux
/// `O_PATH`), so that a directory this user may pass through but not list is no obstacle.
fn search_dir_at(parent: BorrowedFd<'_>, name: &OsStr) -> rustix::io::Result<OwnedFd> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    let read = OFlags::PATH;
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    let read = OFlags::RDONLY;
    rustix::fs::openat(
        parent,
        name,
        read | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
}

/// What a walk ends at: a directory (created with mode 0700 when missing and `create` is set,
/// this user's and closed to others), or a file opened for reading without blocking (a FIFO
/// cannot hold the reader), whose type the caller checks.
#[derive(Debug, Clone, Copy)]
enum End {
    Dir { create: bool },
    File,
}

/// Walks `absolute` from `/`, opening each component relative to the one above it without
/// following links; a link is followed only when it is owned by root or this user, and its
/// target is walked the same way. Every directory on the way is [`judge`]d; with `notes`, a
/// judgement against one (not the end's type) is noted there and the walk goes on, else it
/// ends the walk.
fn walk(absolute: &Path, end: End, mut notes: Option<&mut Vec<String>>) -> Result<OwnedFd, OpenError> {
    let io = |at: &Path, e: rustix::io::Errno| {
        let e = std::io::Error::from(e);
        OpenError {
            problem: format!("{}: {e}", at.display()),
            refusal: Refusal::Io(e.kind()),
        }
    };
    let mut note = |problem: String| -> Result<(), String> {
        match notes.as_deref_mut() {
            Some(notes) => {
                if !notes.contains(&problem) {
                    notes.push(problem);
                }
                Ok(())
            }
            None => Err(problem),
        }
    };
    let dir_end = matches!(end, End::Dir { .. });
    let mut pending: Vec<std::ffi::OsString> = Vec::new();
    let mut links = 0;
    // Components still to walk, last first (so that a link's target can be pushed on).
    push_components(&mut pending, absolute);
    let mut fd = open_root().map_err(|e| io(Path::new("/"), e))?;
    let mut at = PathBuf::from("/");
    if let Err(problem) = judge(
        &rustix::fs::fstat(&fd).map_err(|e| io(&at, e))?,
        &at,
        dir_end && pending.is_empty(),
    ) {
        note(problem).map_err(OpenError::rule)?;
    }
    while let Some(name) = pending.pop() {
        let last = pending.is_empty();
        if name == ".." {
            let parent = if dir_end { open_dir_at } else { search_dir_at };
            fd = parent(fd.as_fd(), OsStr::new("..")).map_err(|e| io(&at, e))?;
            at.pop();
            if let Err(problem) = judge(&rustix::fs::fstat(&fd).map_err(|e| io(&at, e))?, &at, dir_end && last) {
                note(problem).map_err(OpenError::rule)?;
            }
            continue;
        }
        let next = at.join(&name);
        let opened = match end {
            End::File if last => open_file_at(fd.as_fd(), &name),
            End::File => search_dir_at(fd.as_fd(), &name),
            End::Dir { create: true } => match open_dir_at(fd.as_fd(), &name) {
                Err(rustix::io::Errno::NOENT) => {
                    match rustix::fs::mkdirat(fd.as_fd(), &name, Mode::from_raw_mode(0o700)) {
                        Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                        Err(e) => return Err(io(&next, e)),
                    }
                    open_dir_at(fd.as_fd(), &name)
                }
                other => other,
            },
            _ => open_dir_at(fd.as_fd(), &name),
        };
        match opened {
            Ok(child) if matches!(end, End::File) && last => return Ok(child),
            Ok(child) => {
                if let Err(problem) = judge(
                    &rustix::fs::fstat(&child).map_err(|e| io(&next, e))?,
                    &next,
                    dir_end && last,
                ) {
                    note(problem).map_err(OpenError::rule)?;
                }
                fd = child;
                at = next;
            }
            Err(rustix::io::Errno::LOOP | rustix::io::Errno::NOTDIR) => {
                let stat =
                    rustix::fs::statat(fd.as_fd(), &name, AtFlags::SYMLINK_NOFOLLOW).map_err(|e| io(&next, e))?;
                if FileType::from_raw_mode(stat.st_mode) != FileType::Symlink {
                    return Err(OpenError {
                        problem: format!("{} is not a directory", next.display()),
                        refusal: Refusal::Io(std::io::ErrorKind::NotADirectory),
                    });
                }
                owner_problem(&next, "a symbolic link ", stat.st_uid)
                    .or_else(&mut note)
                    .map_err(OpenError::rule)?;
                links += 1;
                if links > MAX_LINKS {
                    return Err(OpenError::rule(format!(
                        "{}: too many symbolic links",
                        absolute.display()
                    )));
                }
                let target = rustix::fs::readlinkat(fd.as_fd(), &name, Vec::new()).map_err(|e| io(&next, e))?;
                let target = PathBuf::from(OsStr::from_bytes(target.as_bytes()));
                if target.is_absolute() {
                    fd = open_root().map_err(|e| io(Path::new("/"), e))?;
                    at = PathBuf::from("/");
                }
                push_components(&mut pending, &target);
            }
            Err(e) => return Err(io(&next, e)),
        }
    }
    if matches!(end, End::File) {
        return Err(OpenError::not_regular(format!(
            "{} is a directory; only a regular file is read",
            absolute.display()
        )));
    }
    Ok(fd)
}

/// Why a walk stopped: a sentence naming the place, and which kind of refusal it was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenError {
    /// One sentence naming the place.
    pub problem: String,
    /// Who refused.
    pub refusal: Refusal,
}

/// Who refused a walk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The system (no such file, permission denied).
    Io(std::io::ErrorKind),
    /// This module's rule: another user could have put it there.
    Untrusted,
    /// It is not a regular file (a FIFO, a device, a directory).
    NotRegular,
}

impl OpenError {
    fn rule(problem: String) -> OpenError {
        OpenError {
            problem,
            refusal: Refusal::Untrusted,
        }
    }

    fn not_regular(problem: String) -> OpenError {
        OpenError {
            problem,
            refusal: Refusal::NotRegular,
        }
    }

    /// One word for metrics: `not_found`, `permission_denied`, `io_error`, `untrusted_file`,
    /// `not_regular_file`.
    pub fn class(&self) -> &'static str {
        match self.refusal {
            Refusal::Io(std::io::ErrorKind::NotFound) => "not_found",
            Refusal::Io(std::io::ErrorKind::PermissionDenied) => "permission_denied",
            Refusal::Io(_) => "io_error",
            Refusal::Untrusted => "untrusted_file",
            Refusal::NotRegular => "not_regular_file",
        }
    }
}

/// `path` made absolute from the current directory.
fn absolute(path: &Path) -> Result<PathBuf, String> {
    if path.is_absolute() {
        Ok(path.to_path_buf())
    } else {
        Ok(std::env::current_dir()
            .map_err(|e| format!("the current directory cannot be read ({e})"))?
            .join(path))
    }
}

/// A file another user cannot have put in the way, opened for reading: every directory from
/// `/` down to it owned by root or this user and not writable by others (sticky ones excepted),
/// a link followed only when it is owned by root or this user (its target walked the same way:
/// kubelet's links in a mounted ConfigMap or Secret pass), the file opened without following a
/// link and without blocking (`O_NOFOLLOW | O_NONBLOCK`), and only a regular file accepted. With
/// `lenient`, a directory or link of another user is a note instead of an error (a process that
/// is not root reads what it can, and warns).
///
/// # Errors
/// One sentence naming the directory, link or file, and why.
pub fn open_file(path: &Path, lenient: bool) -> Result<(std::fs::File, Vec<String>), OpenError> {
    let absolute = absolute(path).map_err(OpenError::rule)?;
    let mut notes = Vec::new();
    let fd = walk(&absolute, End::File, lenient.then_some(&mut notes))?;
    let stat = rustix::fs::fstat(&fd).map_err(|e| {
        let e = std::io::Error::from(e);
        OpenError {
            problem: format!("{}: {e}", path.display()),
            refusal: Refusal::Io(e.kind()),
        }
    })?;
    let kind = match FileType::from_raw_mode(stat.st_mode) {
        FileType::RegularFile => None,
        FileType::Directory => Some("a directory"),
        FileType::Fifo => Some("a FIFO (named pipe)"),
        FileType::Socket => Some("a socket"),
        FileType::CharacterDevice | FileType::BlockDevice => Some("a device"),
        _ => Some("not a regular file"),
    };
    if let Some(kind) = kind {
        return Err(OpenError::not_regular(format!(
            "{} is {kind}; only a regular file is read",
            path.display()
        )));
    }
    // Reads block again (a regular file never waits; the flag only mattered for the open).
    let file = std::fs::File::from(fd);
    Ok((file, notes))
}

/// A file that steers what this process does (`what`: "the map", "LOCALITY_TLS_CA_FILE"),
/// opened as [`open_file`] opens it, then judged by its own owner and mode
/// ([`untrusted_file`]). Running as root, anything another user could have put in the way is
/// refused; otherwise it is read, and each such thing is one note for a warning.
///
/// # Errors
/// One sentence: the file cannot be opened (named, with why), is not a regular file, or (as
/// root) another user could have put it there; with its [`OpenError::class`].
pub fn open_checked(path: &Path, what: &str) -> Result<(std::fs::File, Vec<String>), OpenError> {
    let root = is_root();
    let refused = |problem: String| {
        OpenError::rule(format!("{problem}: running as root, {what} is read only from a regular file that no other user can replace (the file, every directory above it and any link on the way owned by root or this user, not writable by others)"))
    };
    let (file, ways) = open_file(path, !root).map_err(|e| match e.refusal {
        Refusal::Io(kind) => OpenError {
            problem: match kind {
                std::io::ErrorKind::NotFound | std::io::ErrorKind::PermissionDenied => format!(
                    "{} cannot be read ({})",
                    path.display(),
                    crate::io_problem::io_problem(&std::io::Error::from(kind))
                ),
                // The system's own words, with the place (out of descriptors: "Too many open files").
                _ => format!("{} cannot be read ({})", path.display(), e.problem),
            },
            refusal: e.refusal,
        },
        Refusal::Untrusted if root => refused(e.problem),
        _ => e,
    })?;
    let mut notes: Vec<String> = ways
        .into_iter()
        .map(|problem| format!("{problem}: another user could change {what} (its directories and links should be owned by root or this user, not writable by others)"))
        .collect();
    if let Some(problem) = untrusted_file(&file, path) {
        if root {
            return Err(refused(problem));
        }
        notes.push(format!(
            "{problem}: another user could change {what} (make it owned by root or this user, not writable by others)"
        ));
    }
    Ok((file, notes))
}

fn open_file_at(parent: BorrowedFd<'_>, name: &OsStr) -> rustix::io::Result<OwnedFd> {
    rustix::fs::openat(
        parent,
        name,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY,
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
        let absolute = absolute(path)?;
        let fd = walk(&absolute, End::Dir { create }, None).map_err(|e| e.problem)?;
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
