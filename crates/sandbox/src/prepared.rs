//! `Plan::prepare` and the async-signal-safe `Prepared::apply_in_child`.
//!
//! Everything that can allocate or fail slowly (opening paths, building the ruleset, compiling the
//! network filter) happens once in `prepare`, in the parent and before any fork. What the child
//! does is fixed syscalls on data owned by `Prepared`, so one `Prepared` (shared through an `Arc`)
//! serves every spawn of a session: the per-call cost is a few microseconds, and the command keeps
//! its pid and process group because nothing forks or re-execs on its behalf.

#[cfg(target_os = "linux")]
use std::os::fd::{AsRawFd, OwnedFd};

#[cfg(target_os = "linux")]
use crate::enforcement::State;
use crate::enforcement::{Enforcement, NetEnforcement, NetHold};
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
    /// Where the listener of a filter that sends `connect` to a supervisor goes (network
    /// `allowlist` and `ask`); without one, such connects fail with ENOSYS.
    #[cfg(target_os = "linux")]
    supervisor: Option<std::sync::Arc<crate::net::Supervisor>>,
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
            let confining = self.enabled && self.mode != crate::Mode::Auto;
            let filtered = confining && self.network.filtered();
            let ruleset = match enforcement.state {
                State::Enforced { .. } | State::Partial { .. } => {
                    let fd = crate::landlock::build_ruleset(&self.writable, filtered)?;
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
            use crate::seccomp::NetFilter;
            let network = match self.network {
                crate::Network::On => NetFilter::Open,
                crate::Network::Off => NetFilter::Off,
                crate::Network::Allowlist | crate::Network::Ask => NetFilter::Supervised,
            };
            let filter = confining
                .then(|| {
                    crate::seccomp::Filter::new(crate::seccomp::FilterSpec {
                        network,
                        unix_off: self.mode == crate::Mode::Plan,
                    })
                })
                .flatten();
            enforcement.network = match (confining, self.network) {
                (false, _) | (true, crate::Network::On) => NetEnforcement::Open,
                (true, crate::Network::Off) => NetEnforcement::Off {
                    installed: filter.is_some(),
                },
                (true, mode) => NetEnforcement::Filtered {
                    mode,
                    held: if filter.is_none() {
                        NetHold::Nothing
                    } else if ruleset.is_some()
                        && crate::landlock::kernel_abi()
                            .is_some_and(|abi| abi >= crate::landlock::ABI_TCP)
                    {
                        NetHold::Full
                    } else {
                        NetHold::SupervisorOnly
                    },
                    loopback: self.loopback,
                },
            };
            Ok(Prepared {
                enforcement,
                ruleset,
                filter,
                supervisor: None,
                drop_caps: confining && crate::caps::held(),
            })
        }
        #[cfg(not(target_os = "linux"))]
        {
            if self.enabled && self.mode != crate::Mode::Auto {
                enforcement.network = match self.network {
                    crate::Network::On => NetEnforcement::Open,
                    crate::Network::Off => NetEnforcement::Off { installed: false },
                    mode => NetEnforcement::Filtered {
                        mode,
                        held: NetHold::Nothing,
                        loopback: self.loopback,
                    },
                };
            }
            Ok(Prepared { enforcement })
        }
    }
}

impl Prepared {
    /// Sends the connections of the commands this confines to `supervisor` (network
    /// `allowlist` and `ask`): launchers hand it their filter's listener
    /// ([`Self::apply_to_launcher`]).
    #[cfg(target_os = "linux")]
    pub fn supervised_by(mut self, supervisor: std::sync::Arc<crate::net::Supervisor>) -> Self {
        self.supervisor = Some(supervisor);
        self
    }

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
    ///
    /// A filter that sends `connect` to a supervisor comes with a listener, which this drops
    /// (closed: such a child's connects fail with ENOSYS); a launcher keeps it with
    /// [`Self::apply_to_launcher`].
    pub fn apply_shared(&self) -> std::io::Result<()> {
        #[cfg(target_os = "linux")]
        {
            if let Some(filter) = &self.filter {
                drop(filter.install()?);
            }
            if self.drop_caps {
                crate::caps::drop_in_child()?;
            }
        }
        Ok(())
    }

    /// [`Self::apply_shared`] for a thread that clones commands (not a child between clone and
    /// exec: this may allocate and lock): the filter's listener, if any, goes to the supervisor,
    /// which then answers the connects of every command the thread starts.
    pub fn apply_to_launcher(&self) -> std::io::Result<()> {
        #[cfg(target_os = "linux")]
        {
            if let Some(filter) = &self.filter
                && let Some(listener) = filter.install()?
                && let Some(supervisor) = &self.supervisor
            {
                supervisor.adopt(listener);
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
