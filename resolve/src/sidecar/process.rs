//! HAProxy as a child that gets no more than it needs and never outlives the sidecar:
//! - its environment is cleared (the sidecar's holds cloud credentials): only a fixed `PATH`;
//! - it starts in the run directory through the open handle (`fchdir`), and its configuration
//!   names its files relative to it, so a swap of a path after the check cannot redirect them;
//! - started as root, its workers run as an unprivileged user ([`HaproxyUser`], `nobody` by
//!   default), while its master and the admin socket stay the sidecar's;
//! - on Linux it gets SIGTERM when the sidecar dies, however it dies (`PR_SET_PDEATHSIG`),
//!   and a restarted sidecar stops any process still working in its run directory before it
//!   starts its own ([`stop_leftovers`]); one sidecar per run directory ([`RunLock`]).

use std::os::unix::io::{AsFd, AsRawFd as _};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::trusted::TrustedDir;

/// The only environment HAProxy gets.
pub const HAPROXY_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// The user and group HAProxy's workers run as when the sidecar runs as root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HaproxyUser {
    /// The user's name (or number, as given).
    pub name: String,
    /// Its uid.
    pub uid: u32,
    /// The group: the one given, else the user's primary group.
    pub gid: u32,
}

/// The user HAProxy's workers run as: `spec` (`USER` or `USER:GROUP`, names or numbers;
/// default `nobody`) when the sidecar runs as root; nobody else can change users, so `None`
/// then (and a `spec` is an error).
///
/// # Errors
/// The user or group does not exist, is root, or a user was named without root.
pub fn haproxy_user(spec: Option<&str>) -> Result<Option<HaproxyUser>, String> {
    if !crate::trusted::is_root() {
        return match spec {
            None => Ok(None),
            Some(spec) => Err(format!(
                "--haproxy-user {spec}: only a sidecar running as root can start HAProxy as another user (this one runs as uid {}, and so does HAProxy); leave the flag out, or run the sidecar as root with e.g. --haproxy-user nobody or 65534:65534",
                crate::trusted::euid()
            )),
        };
    }
    let spec = spec.unwrap_or("nobody");
    let allowed =
        "give an existing unprivileged user as USER or USER:GROUP (names or numbers), e.g. nobody or 65534:65534";
    let (user, group) = match spec.split_once(':') {
        Some((user, group)) => (user, Some(group)),
        None => (spec, None),
    };
    let shown = |s: &str| s.chars().take(64).collect::<String>().escape_debug().to_string();
    let found = match user.parse::<u32>() {
        Ok(uid) => nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid))
            .ok()
            .flatten()
            .map(|u| (u.uid.as_raw(), u.gid.as_raw()))
            // A number without a passwd entry is still a user id (containers often have none).
            .or(Some((uid, uid))),
        Err(_) => nix::unistd::User::from_name(user)
            .ok()
            .flatten()
            .map(|u| (u.uid.as_raw(), u.gid.as_raw())),
    };
    let Some((uid, primary_gid)) = found else {
        return Err(format!(
            "--haproxy-user: there is no user \"{}\" on this host; {allowed}",
            shown(user)
        ));
    };
    let gid = match group {
        None => primary_gid,
        Some(group) => match group.parse::<u32>() {
            Ok(gid) => gid,
            Err(_) => nix::unistd::Group::from_name(group)
                .ok()
                .flatten()
                .map(|g| g.gid.as_raw())
                .ok_or_else(|| {
                    format!(
                        "--haproxy-user: there is no group \"{}\" on this host; {allowed}",
                        shown(group)
                    )
                })?,
        },
    };
    if uid == 0 || gid == 0 {
        return Err(format!(
            "--haproxy-user {}: HAProxy's workers must not run as root (uid or gid 0); {allowed}",
            shown(spec)
        ));
    }
    Ok(Some(HaproxyUser {
        name: user.to_string(),
        uid,
        gid,
    }))
}

/// The descriptor limit HAProxy can reach: the hard `RLIMIT_NOFILE` it inherits (its master
/// raises the soft limit up to it), 1,024 when it cannot be read, and never more than `u64`.
pub fn descriptor_limit() -> u64 {
    let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile);
    limit.maximum.or(limit.current).unwrap_or(1 << 20)
}

/// The program to run: `program` as given when it names a path, else found on the sidecar's
/// `PATH` (HAProxy itself gets [`HAPROXY_PATH`]).
pub fn find_program(program: &Path) -> Option<PathBuf> {
    if program.components().count() > 1 {
        return Some(program.to_path_buf());
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| HAPROXY_PATH.into());
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::metadata(candidate).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// A command for HAProxy: environment cleared but for `PATH`, started in `dir` through its
/// handle, and (Linux) sent SIGTERM when the thread that spawns it — the sidecar's main
/// thread for the long-running HAProxy — ends.
#[allow(unsafe_code)]
pub fn haproxy_command(program: &Path, dir: &TrustedDir) -> Command {
    let mut command = Command::new(program);
    command.env_clear().env("PATH", HAPROXY_PATH);
    let dir_fd = dir.fd().as_raw_fd();
    let parent = rustix::process::getpid();
    let setup = move || -> std::io::Result<()> {
        // SAFETY (of the borrow): the handle is open in the parent for as long as the command
        // is spawned (`dir` outlives this call's use), and a forked child has the same table.
        let fd = unsafe { std::os::unix::io::BorrowedFd::borrow_raw(dir_fd) };
        rustix::process::fchdir(fd)?;
        #[cfg(any(target_os = "linux", target_os = "android"))]
        {
            rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::TERM))?;
            // The sidecar may have died between the fork and the line above.
            if rustix::process::getppid() != Some(parent) {
                return Err(std::io::Error::other("the sidecar exited while HAProxy was starting"));
            }
        }
        #[cfg(not(any(target_os = "linux", target_os = "android")))]
        let _ = parent;
        Ok(())
    };
    // SAFETY: between fork and exec the closure only makes system calls that are
    // async-signal-safe (fchdir, prctl, getppid) through rustix, which allocates nothing and
    // takes no lock; the error path builds an `io::Error` from a static string only.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut command, setup);
    }
    command
}

/// One sidecar per run directory: an exclusive lock on `sidecar.lock` inside it, held for the
/// sidecar's life and released by the kernel however it ends (never inherited by HAProxy).
#[derive(Debug)]
pub struct RunLock {
    _file: std::os::unix::io::OwnedFd,
}

impl RunLock {
    /// Takes the lock.
    ///
    /// # Errors
    /// Another sidecar holds it, or the file cannot be opened.
    pub fn take(dir: &TrustedDir) -> Result<RunLock, String> {
        use rustix::fs::{Mode, OFlags};
        let file = rustix::fs::openat(
            dir.fd(),
            "sidecar.lock",
            OFlags::RDWR | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )
        .map_err(|e| {
            format!(
                "{}: {}",
                dir.path().join("sidecar.lock").display(),
                std::io::Error::from(e)
            )
        })?;
        match rustix::fs::flock(file.as_fd(), rustix::fs::FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => Ok(RunLock { _file: file }),
            Err(rustix::io::Errno::WOULDBLOCK) => Err(format!(
                "another locality sidecar runs with the run directory {} (one per listener: give each its own --listen port or --run-dir)",
                dir.path().display()
            )),
            Err(e) => Err(format!("{}: {}", dir.path().join("sidecar.lock").display(), std::io::Error::from(e))),
        }
    }
}

/// HAProxy processes (the `program` the sidecar runs, or any executable named `haproxy*`) whose
/// working directory is `dir`: an HAProxy left behind by an earlier sidecar of this run
/// directory, and its workers. Nothing else is touched (an administrator's shell in the
/// directory, say). Linux (`/proc`); empty elsewhere.
pub fn leftovers(dir: &TrustedDir, program: &Path) -> Vec<i32> {
    let Ok(identity) = dir.identity() else {
        return Vec::new();
    };
    let own = std::process::id();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()))
        .filter(|pid| u32::try_from(*pid).ok() != Some(own))
        .filter(|pid| {
            use std::os::unix::fs::MetadataExt as _;
            std::fs::metadata(format!("/proc/{pid}/cwd")).is_ok_and(|m| (m.dev(), m.ino()) == identity)
        })
        .filter(|pid| {
            std::fs::read_link(format!("/proc/{pid}/exe")).is_ok_and(|exe| {
                exe == program
                    || std::fs::canonicalize(program).is_ok_and(|p| p == exe)
                    || exe
                        .file_name()
                        .is_some_and(|name| name.to_string_lossy().starts_with("haproxy"))
            })
        })
        .collect()
}

/// Stops what [`leftovers`] finds: SIGTERM, then SIGKILL for what is still there after 2 s.
/// The pids it stopped.
pub fn stop_leftovers(dir: &TrustedDir, program: &Path) -> Vec<i32> {
    use rustix::process::{kill_process, test_kill_process, Pid, Signal};
    let found = leftovers(dir, program);
    for pid in found.iter().filter_map(|p| Pid::from_raw(*p)) {
        let _ = kill_process(pid, Signal::TERM);
    }
    let deadline = Instant::now() + Duration::from_secs(2);
    let alive = |pid: &i32| {
        Pid::from_raw(*pid).is_some_and(|p| test_kill_process(p).is_ok())
            // A zombie (reaped by its new parent soon) no longer works in the directory.
            && std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .is_ok_and(|s| s.rsplit_once(')').is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z')))
    };
    while Instant::now() < deadline && found.iter().any(alive) {
        std::thread::sleep(Duration::from_millis(20));
    }
    for pid in found.iter().filter(|p| alive(p)).filter_map(|p| Pid::from_raw(*p)) {
        let _ = kill_process(pid, Signal::KILL);
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_haproxy_user_is_looked_up_and_root_is_refused() {
        if !crate::trusted::is_root() {
            assert!(haproxy_user(None).unwrap().is_none());
            assert!(haproxy_user(Some("nobody"))
                .unwrap_err()
                .contains("only a sidecar running as root"));
            return;
        }
        let nobody = haproxy_user(None).unwrap().unwrap();
        assert!(nobody.uid != 0 && nobody.gid != 0, "{nobody:?}");
        assert_eq!(haproxy_user(Some("65534:65534")).unwrap().unwrap().uid, 65534);
        assert!(haproxy_user(Some("root")).unwrap_err().contains("must not run as root"));
        assert!(haproxy_user(Some("nobody:root"))
            .unwrap_err()
            .contains("must not run as root"));
        let err = haproxy_user(Some("no-such-user-here")).unwrap_err();
        assert!(
            err.contains("no user \"no-such-user-here\"") && err.contains("USER:GROUP"),
            "{err}"
        );
    }
}
