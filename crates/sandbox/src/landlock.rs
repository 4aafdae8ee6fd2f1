//! Linux backend: a Landlock ruleset that handles write rights, and, where some path is kept
//! from reads, a second one that handles `ReadFile` (`unreadable.rs` says which rules it takes).
//!
//! Split in two on purpose. `build_ruleset` runs in the parent, before any fork, and may allocate,
//! open paths and fail with a `SandboxError`. `restrict_self` runs in the forked child of a
//! multi-threaded server between fork and exec, so it is two raw syscalls on a file descriptor
//! prepared earlier: no allocation, no lock, async-signal-safe. One ruleset fd is applied by any
//! number of children (the kernel copies the rules into each child's new domain).
//!
//! The `landlock` crate builds the ruleset (best-effort across ABI versions, correct struct
//! layouts) and hands its fd out through `From<RulesetCreated> for Option<OwnedFd>`; we do not use
//! its `restrict_self`, which consumes the ruleset and allocates its status report.

use std::os::fd::{OwnedFd, RawFd};

use landlock::{
    ABI, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd, PathFdError,
    Ruleset, RulesetAttr, RulesetCreatedAttr, Scope,
};

use crate::error::SandboxError;
use crate::plan::Writable;
use crate::unreadable::{Stamp, Unreadable};

/// The newest ABI whose *write* rights we handle. ABI 2 adds REFER (links and renames across
/// directories), ABI 3 TRUNCATE. Later write-ish rights are left alone on purpose: IOCTL_DEV
/// (ABI 5) would refuse ioctls on devices opened read-only, and RESOLVE_UNIX (ABI 9) would refuse
/// connecting to unix sockets (ssh-agent, docker); neither is a write to the filesystem.
const HANDLED_ABI: ABI = ABI::V3;

/// `LANDLOCK_CREATE_RULESET_VERSION` from `<linux/landlock.h>` (not exported by libc).
const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1 << 0;

/// The Landlock ABI the running kernel offers, or `None` when it does not (ENOSYS: not built;
/// EOPNOTSUPP: disabled at boot; EPERM: filtered by a container's seccomp profile).
pub fn kernel_abi() -> Option<u32> {
    // SAFETY: the version query reads no memory (NULL attr, size 0).
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    u32::try_from(v).ok().filter(|&abi| abi > 0)
}

/// The first ABI with TCP rules (`LANDLOCK_ACCESS_NET_CONNECT_TCP`).
pub const ABI_TCP: u32 = 4;

/// The writable paths, each opened once (`O_PATH`) to anchor its rule, with whether it is a
/// directory. A ruleset made again for one command ([`build_ruleset`] with `terminals`, for each
/// spawn with a `/dev/pts` of its own) takes them as they are: the same inodes as the ruleset made
/// when the plan was prepared, which every other command applies, and no path opened again.
#[derive(Debug, Default)]
pub struct Anchors(Vec<(PathFd, bool)>);

impl Anchors {
    /// Opens each of `writable`; a path that vanished since the plan was made is left out
    /// (nothing there to write, and its parent is not writable unless covered by another rule).
    pub fn open(writable: &[Writable]) -> Result<Self, SandboxError> {
        let mut anchors = Vec::with_capacity(writable.len());
        for w in writable {
            if let Some(fd) = open_writable(w)? {
                let is_dir = std::fs::metadata(&w.path).is_ok_and(|m| m.is_dir());
                anchors.push((fd, is_dir));
            }
        }
        Ok(Self(anchors))
    }
}

/// Builds the ruleset for the writable paths `anchors` holds and returns its fd, or `None` if the
/// kernel turned out not to support Landlock after all (the crate's best-effort mode then yields
/// no fd). With
/// `refuse_tcp_connect` (network `allowlist` and `ask`) the domain refuses every TCP connect and
/// bind the command makes itself, whatever the port: the connections it gets are made, and its
/// listeners bound (to the loopback), by the server's supervisor (`net/`). Ignored below ABI 4, which has no TCP rules. `terminals`: the root of
/// a devpts instance of the command's own (its `/dev/pts`), granted as `/dev/pts` is.
pub fn build_ruleset(
    anchors: &Anchors,
    refuse_tcp_connect: bool,
    terminals: Option<std::os::fd::BorrowedFd<'_>>,
) -> Result<Option<OwnedFd>, SandboxError> {
    let handled: BitFlags<AccessFs> = AccessFs::from_write(HANDLED_ABI);
    // Device nodes are never granted, anywhere: as root, `mknod` in the workspace would make a
    // node for any device (/dev/kmsg, a disk) and write through it, past every path rule.
    let granted = handled & !(AccessFs::MakeChar | AccessFs::MakeBlock);
    // Directory-only rights (mkdir, unlink, ...) are invalid on a file rule such as /dev/null.
    let file_rights = granted & AccessFs::from_file(HANDLED_ABI);
    // Scopes (ABI 6, best effort): a confined command may signal, and connect to abstract unix
    // sockets of, only processes in its own sandbox (its own tree), never the server, its
    // watchdog, another command or the user's other processes.
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(handled)?
        .scope(Scope::Signal | Scope::AbstractUnixSocket)?;
    if refuse_tcp_connect {
        // Its own binds too: the supervisor binds its listeners, to the loopback only
        // (`net/listening.rs`).
        ruleset = ruleset.handle_access(AccessNet::ConnectTcp | AccessNet::BindTcp)?;
    }
    let mut ruleset = ruleset.create()?;
    for (fd, is_dir) in &anchors.0 {
        let rights = if *is_dir { granted } else { file_rights };
        ruleset = ruleset.add_rule(PathBeneath::new(fd, rights))?;
    }
    if let Some(root) = terminals {
        ruleset = ruleset.add_rule(PathBeneath::new(root, granted))?;
    }
    Ok(ruleset.into())
}

/// Builds the ruleset of reads where some path is kept from them: it handles `ReadFile` only
/// (listing a directory is never handled, see `unreadable.rs`), granted beneath each of
/// `unreadable`'s rules as of now and in the writable set, which stays readable; with the stamp
/// of the directories the rules were made from. No scope: it is a layer of its own, shared by
/// the commands of one spawning thread, under each command's own (writes, scopes).
///
/// Every command's domain is made on top of this layer, and the kernel copies each of its
/// rules into it (and frees them when the command ends): a command pays for every rule, about
/// 0.2 µs each on a 2-CPU VM. So a writable path beneath a rule already granted gets none of
/// its own; it always is (a writable path is never a directory above a hidden path, nor inside
/// one), and the rule is kept for one that is not.
pub fn build_reads(
    writable: &[Writable],
    unreadable: &Unreadable,
) -> Result<(Option<OwnedFd>, Stamp), SandboxError> {
    let read = AccessFs::ReadFile;
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(read)?
        .create()?;
    // `ReadFile` is valid on a file's rule as on a directory's. Each fd is closed once added.
    let mut granted: Vec<std::path::PathBuf> = Vec::new();
    let stamp = unreadable.rules(&mut |path, fd| {
        (&mut ruleset).add_rule(PathBeneath::new(fd, read))?;
        granted.push(path.to_path_buf());
        Ok(())
    })?;
    for w in writable {
        if granted.iter().any(|g| w.path.starts_with(g)) {
            continue;
        }
        if let Some(fd) = open_writable(w)? {
            ruleset = ruleset.add_rule(PathBeneath::new(fd, read))?;
        }
    }
    Ok((ruleset.into(), stamp))
}

/// A writable path opened to anchor a rule; `None` when it vanished since the plan was made.
fn open_writable(w: &Writable) -> Result<Option<PathFd>, SandboxError> {
    match PathFd::new(&w.path) {
        Ok(fd) => Ok(Some(fd)),
        Err(PathFdError::OpenCall { source, .. })
            if source.kind() == std::io::ErrorKind::NotFound =>
        {
            Ok(None)
        }
        Err(PathFdError::OpenCall { source, .. }) => Err(SandboxError::OpenPath {
            path: w.path.clone(),
            source,
        }),
        Err(other) => Err(SandboxError::OpenPath {
            path: w.path.clone(),
            source: std::io::Error::other(other.to_string()),
        }),
    }
}

/// Restricts the calling (single-threaded, forked) process with the ruleset `fd`.
/// Async-signal-safe: two syscalls, and `last_os_error` only reads errno.
pub fn restrict_self(fd: RawFd) -> std::io::Result<()> {
    // no_new_privs is required for an unprivileged process to enter a Landlock domain, and it
    // stops a setuid binary from shedding the restriction.
    // SAFETY: plain prctl with integer arguments.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fd is a live Landlock ruleset fd owned by `Prepared`; flags 0.
    if unsafe { libc::syscall(libc::SYS_landlock_restrict_self, fd, 0u32) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}
