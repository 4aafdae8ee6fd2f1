//! `Plan::prepare` and the async-signal-safe `Prepared::apply_in_child`.
//!
//! Everything that can allocate or fail slowly (opening paths, building the ruleset, compiling the
//! network filter) happens once in `prepare`, in the parent and before any fork. What the child
//! does is fixed syscalls on data owned by `Prepared`, so one `Prepared` (shared through an `Arc`)
//! serves every spawn of a session: the per-call cost is a few microseconds, and the command keeps
//! its pid and process group because nothing forks or re-execs on its behalf.

#[cfg(target_os = "linux")]
use std::os::fd::{AsRawFd, OwnedFd};

use crate::enforcement::Enforcement;
#[cfg(target_os = "linux")]
use crate::enforcement::State;
use crate::error::SandboxError;
use crate::plan::Plan;

/// A plan made ready to apply in children. `Send + Sync`; share it behind an `Arc`.
#[derive(Debug)]
pub struct Prepared {
    enforcement: Enforcement,
    #[cfg(target_os = "linux")]
    ruleset: Option<OwnedFd>,
    #[cfg(target_os = "linux")]
    filter: Option<crate::seccomp::Filter>,
    /// The server holds capabilities, so a confined child drops those that reach past the
    /// sandbox (`caps.rs`).
    #[cfg(target_os = "linux")]
    drop_caps: bool,
}

impl Plan {
    /// Builds the kernel objects for this plan. Call once, before forking; an error here means the
    /// sandbox failed to start (error 2009) and the command must not run.
    pub fn prepare(&self) -> Result<Prepared, SandboxError> {
        let mut enforcement = self.enforcement();
        #[cfg(target_os = "linux")]
        {
            let ruleset = match enforcement.state {
                State::Enforced { .. } | State::Partial { .. } => {
                    let fd = crate::landlock::build_ruleset(&self.writable)?;
                    if fd.is_none() {
                        enforcement.state = State::NotEnforced {
                            why: crate::enforcement::NotEnforcedWhy::KernelLacksLandlock,
                        };
                    }
                    fd
                }
                _ => None,
            };
            // The seccomp filter (see `seccomp.rs`) goes with any confinement, Landlock or not;
            // `sandbox.terminal = false` and `auto` both mean "do not confine this command".
            let confining = self.enabled && self.mode != crate::Mode::Auto;
            let filter = confining
                .then(|| {
                    crate::seccomp::Filter::new(crate::seccomp::FilterSpec {
                        network_off: !self.network,
                        unix_off: self.mode == crate::Mode::Plan,
                    })
                })
                .flatten();
            if confining && !self.network {
                enforcement.network_off = Some(filter.is_some());
            }
            Ok(Prepared {
                enforcement,
                ruleset,
                filter,
                drop_caps: confining && crate::caps::held(),
            })
        }
        #[cfg(not(target_os = "linux"))]
        {
            if !self.network && self.enabled && self.mode != crate::Mode::Auto {
                enforcement.network_off = Some(false);
            }
            Ok(Prepared { enforcement })
        }
    }
}

impl Prepared {
    /// What this prepared sandbox enforces; `enforcement().line()` is the result line.
    pub fn enforcement(&self) -> Enforcement {
        self.enforcement
    }

    /// Confines the calling process. Meant for the child between fork and exec: only raw syscalls
    /// on data prepared before the fork, no allocation, no lock. A no-op when nothing is confined.
    /// The same as [`Self::apply_own`] then [`Self::apply_shared`].
    pub fn apply_in_child(&self) -> std::io::Result<()> {
        self.apply_own()?;
        self.apply_shared()
    }

    /// The part of the sandbox that must be each command's own: its Landlock domain. Landlock
    /// scopes signals and abstract unix sockets to a domain, so two commands that shared one
    /// could signal and reach each other; each makes its own, beside every other.
    /// Async-signal-safe, as [`Self::apply_in_child`].
    pub fn apply_own(&self) -> std::io::Result<()> {
        #[cfg(target_os = "linux")]
        if let Some(fd) = &self.ruleset {
            crate::landlock::restrict_self(fd.as_raw_fd())?;
        }
        Ok(())
    }

    /// The part of the sandbox that may be shared, applied to the calling thread (and so to
    /// every process it starts after): the seccomp filter and the capabilities dropped. A
    /// spawning thread may take it once for all its children (the filter's compile is the
    /// costly step of a confined spawn); `no_new_privs` comes with it. Async-signal-safe.
    pub fn apply_shared(&self) -> std::io::Result<()> {
        #[cfg(target_os = "linux")]
        {
            if let Some(filter) = &self.filter {
                filter.install()?;
            }
            if self.drop_caps {
                crate::caps::drop_in_child()?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn prepared_is_send_and_sync() {
        fn shareable<T: Send + Sync>() {}
        shareable::<super::Prepared>();
    }
}
