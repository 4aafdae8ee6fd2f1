//! `Plan::prepare` and the async-signal-safe `Prepared::apply_in_child`.
//!
//! Everything that can allocate or fail slowly (opening paths, building the ruleset, compiling the
//! network filter) happens once in `prepare`, in the parent and before any fork. What the child
//! does is fixed syscalls on data owned by `Prepared`, so one `Prepared` (shared through an `Arc`)
//! serves every spawn of a session: the per-call cost is a few microseconds, and the command keeps
//! its pid and process group because nothing forks or re-execs on its behalf.
//!
//! Where paths are kept from reads, the ruleset's read rules are bound to what existed when it
//! was made (`unreadable.rs`), so [`Prepared::ruleset_now`] makes it again, in the parent, when a
//! directory above a hidden path changed since; each command takes the ruleset current when it
//! starts ([`Ruleset`], shared until the last command that took it has exec'd).

#[cfg(target_os = "linux")]
use std::os::fd::{AsRawFd, OwnedFd};
#[cfg(target_os = "linux")]
use std::sync::{Arc, Mutex, PoisonError};

use crate::enforcement::Enforcement;
#[cfg(target_os = "linux")]
use crate::enforcement::State;
use crate::error::SandboxError;
use crate::plan::Plan;

/// A plan made ready to apply in children. `Send + Sync`; share it behind an `Arc`.
#[derive(Debug)]
pub struct Prepared {
    enforcement: Enforcement,
    /// The ruleset made by `prepare`: what [`Prepared::apply_own`] applies.
    #[cfg(target_os = "linux")]
    ruleset: Option<Ruleset>,
    /// Where paths are kept from reads: how to make the ruleset again, and the latest one.
    #[cfg(target_os = "linux")]
    refresh: Option<Mutex<Refresh>>,
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
            let (ruleset, refresh) = match enforcement.state {
                State::Enforced { .. } | State::Partial { .. } => {
                    let reads = if self.unreadable.is_empty() {
                        None
                    } else {
                        Some(self.unreadable.rules()?)
                    };
                    let fd = crate::landlock::build_ruleset(&self.writable, reads.as_ref())?;
                    let ruleset = fd.map(|fd| Ruleset(Arc::new(fd)));
                    if ruleset.is_none() {
                        enforcement.state = State::NotEnforced {
                            why: crate::enforcement::NotEnforcedWhy::KernelLacksLandlock,
                        };
                    }
                    let refresh = reads.zip(ruleset.clone()).map(|(reads, current)| {
                        Mutex::new(Refresh {
                            writable: self.writable.clone(),
                            unreadable: self.unreadable.clone(),
                            current,
                            stamp: reads.stamp,
                        })
                    });
                    (ruleset, refresh)
                }
                _ => (None, None),
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
                refresh,
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
        if let Some(ruleset) = &self.ruleset {
            ruleset.apply()?;
        }
        Ok(())
    }

    /// The Landlock ruleset for a command starting now (`None` where none applies): the latest
    /// one made, or, when a directory above a path kept from reads changed since, one made now.
    /// Making it again may fail (a directory that can no longer be listed): the latest one is
    /// kept, still hiding what it hid, and the error is given beside it.
    pub fn ruleset_now(&self) -> RulesetNow {
        #[cfg(target_os = "linux")]
        if let Some(refresh) = &self.refresh {
            let mut refresh = refresh.lock().unwrap_or_else(PoisonError::into_inner);
            let failed = if refresh.stamp.is_current() {
                None
            } else {
                refresh.remake().err()
            };
            return RulesetNow {
                ruleset: Some(refresh.current.clone()),
                failed,
            };
        }
        RulesetNow {
            #[cfg(target_os = "linux")]
            ruleset: self.ruleset.clone(),
            failed: None,
        }
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

/// A Landlock ruleset made ready, shared by the commands that apply it.
#[derive(Debug, Clone)]
pub struct Ruleset(#[cfg(target_os = "linux")] Arc<OwnedFd>);

impl Ruleset {
    /// Confines the calling process with this ruleset: its own Landlock domain. Meant for the
    /// child between clone and exec: two system calls on a prepared fd, no allocation, no lock.
    pub fn apply(&self) -> std::io::Result<()> {
        #[cfg(target_os = "linux")]
        crate::landlock::restrict_self(self.0.as_raw_fd())?;
        Ok(())
    }
}

/// What [`Prepared::ruleset_now`] gives: the ruleset to apply, and why it could not be made
/// again when it could not.
#[derive(Debug)]
pub struct RulesetNow {
    #[cfg(target_os = "linux")]
    pub ruleset: Option<Ruleset>,
    pub failed: Option<SandboxError>,
}

impl RulesetNow {
    /// The ruleset to apply, if any.
    pub fn ruleset(&self) -> Option<&Ruleset> {
        #[cfg(target_os = "linux")]
        {
            self.ruleset.as_ref()
        }
        #[cfg(not(target_os = "linux"))]
        {
            None
        }
    }
}

/// How the ruleset is made again (`ruleset_now`), and the latest one.
#[cfg(target_os = "linux")]
#[derive(Debug)]
struct Refresh {
    writable: Vec<crate::plan::Writable>,
    unreadable: crate::unreadable::Unreadable,
    current: Ruleset,
    stamp: crate::unreadable::Stamp,
}

#[cfg(target_os = "linux")]
impl Refresh {
    /// Makes the ruleset again; on failure the latest is kept, and not tried again until the
    /// directories change once more.
    fn remake(&mut self) -> Result<(), SandboxError> {
        let made = self.unreadable.rules().and_then(|reads| {
            let fd = crate::landlock::build_ruleset(&self.writable, Some(&reads))?;
            Ok((fd, reads.stamp))
        });
        match made {
            Ok((fd, stamp)) => {
                if let Some(fd) = fd {
                    self.current = Ruleset(Arc::new(fd));
                }
                self.stamp = stamp;
                Ok(())
            }
            Err(e) => {
                self.stamp = self.stamp.retaken();
                Err(e)
            }
        }
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
