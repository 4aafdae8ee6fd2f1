//! agentty-sandbox: permission mode -> write confinement (docs/BEHAVIOUR.md §5).
//!
//! Writes are confined; reads only where a path is kept from them (agentty's own state and keys,
//! the user's `deny_read`: `unreadable.rs`), because a read allow-list breaks `git push` reading
//! `~/.ssh`; the network by its mode (`on`, `off`, `allowlist`, `ask`: the kernel side, the
//! seccomp filter and the supervisor of connections in `net/`). The flow is
//! `Policy -> Plan` (what is writable, `plan.rs`) `-> Prepared` (kernel objects built once, before
//! any fork, `prepared.rs`) `-> apply_own` + `apply_shared` (raw syscalls between fork and exec,
//! so the command keeps its pid and process group; the shared part may be applied once to the
//! thread that clones the commands). Every result states its `Enforcement` in one line, and a
//! failed command's output can be checked for a sandbox `Denial`. This is a leaf crate: it imports
//! nothing of ours.

#[cfg(target_os = "linux")]
mod caps;
mod denial;
pub mod deputy;
mod enforcement;
mod error;
pub mod git_files;
#[cfg(target_os = "linux")]
mod landlock;
mod mode;
#[cfg(target_os = "linux")]
mod net;
pub mod notice;
mod plan;
mod prepared;
mod probe;
mod protected;
mod roots;
mod sealed;
#[cfg(target_os = "linux")]
mod seccomp;
mod tables;
#[cfg(target_os = "linux")]
mod terminals;
mod unreadable;

#[cfg(target_os = "linux")]
pub use caps::{DROPPED_NAMES as DROPPED_CAPABILITIES, drop_bounding_set};
pub use denial::{Denial, Op, RanIn, detect_denial, shows_denial_symptom, shows_trace_refusal};
pub use enforcement::{
    Backend, Enforcement, NetEnforcement, NetHold, NotEnforcedWhy, PartialWhy, State,
};
pub use error::SandboxError;
pub use mode::{Mode, Network, ParseModeError, ParseNetworkError, Policy};
#[cfg(target_os = "linux")]
pub use net::{Judge, Supervisor, Verdict, keep_from_commands};
pub use plan::{HostContext, Plan, Why, Writable, worktree_git_dirs};
#[cfg(target_os = "linux")]
pub use prepared::OwnRules;
pub use prepared::{Prepared, Ruleset, RulesetNow};
pub use probe::{ProbeOutcome, ProbeReport, daemon_sockets, probe};
pub use protected::{
    Entry as ProtectedEntry, GIT_DIRS_MAX, IN_GIT_DIR, IN_HOME, IN_ROOT, Protected, Stand,
    check_names as check_protected_names, names as protected_names,
};
pub use roots::{LinkedRoot, linked_root};
pub use sealed::{SEALED_MAX, Sealed, extracted_sources};
pub use tables::{
    CacheDir, CacheLocation, HARMLESS_DEVICES, TEMP_DIRS, TERMINAL_DEVICES, TOOLCHAIN_CACHES,
};
pub use unreadable::{HiddenPath, HiddenWhy, Unreadable, check_deny_read};

/// Gives this process, and every command it starts afterwards, terminals of its own: a new
/// `/dev/pts` without the user's other terminals (Linux, `CAP_SYS_ADMIN`). Call once at start-up
/// while the process has one thread. `Err` says why not.
pub fn hide_other_terminals() -> Result<(), String> {
    #[cfg(target_os = "linux")]
    {
        terminals::isolate_process()
    }
    #[cfg(not(target_os = "linux"))]
    {
        Err("Linux only".to_owned())
    }
}

/// Whether this process's commands have terminals of their own ([`hide_other_terminals`] done),
/// or would have if it were called; `Err` says why not. For `doctor`.
pub fn private_terminals() -> Result<(), String> {
    #[cfg(target_os = "linux")]
    {
        terminals::available()
    }
    #[cfg(not(target_os = "linux"))]
    {
        Err("Linux only".to_owned())
    }
}

/// Kernel's Landlock ABI (`None` when absent or not Linux); for `doctor` and tests.
pub fn landlock_abi() -> Option<u32> {
    #[cfg(target_os = "linux")]
    {
        landlock::kernel_abi()
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}
