//! What confinement a plan actually gets on this host, as data.
//!
//! The states are kept apart on purpose: "disabled by configuration", "no backend on this
//! platform" and "kernel lacks Landlock" send the user to three different fixes, so they must
//! never collapse into one "not sandboxed". The sentences themselves live in `notice.rs`.

use crate::mode::{Mode, Network};

/// Lowest Landlock ABI that handles every write right we ask for (REFER is ABI 2, TRUNCATE 3).
pub const LANDLOCK_ABI_FULL_WRITES: u32 = 3;

/// The sandbox backend this host offers, detected once per plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// Linux with Landlock at this ABI version (as reported by the kernel).
    Landlock { abi: u32 },
    /// Linux, but `landlock_create_ruleset` is missing, disabled at boot, or filtered.
    KernelLacksLandlock,
    /// Any other platform: agentty's engine is Linux-only (README, *Platforms*).
    None,
}

impl Backend {
    pub fn detect() -> Backend {
        #[cfg(target_os = "linux")]
        {
            match crate::landlock::kernel_abi() {
                Some(abi) => Backend::Landlock { abi },
                None => Backend::KernelLacksLandlock,
            }
        }
        #[cfg(not(target_os = "linux"))]
        {
            Backend::None
        }
    }
}

/// Write rights an older Landlock ABI cannot handle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartialWhy {
    /// ABI 1: no REFER (every cross-directory rename or link fails, even inside the workspace)
    /// and no TRUNCATE (`truncate(2)` of files outside the writable set is not refused).
    NoReferNoTruncate,
    /// ABI 2: no TRUNCATE.
    NoTruncate,
}

/// Why writes are not confined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotEnforcedWhy {
    DisabledByConfig,
    NoBackend,
    KernelLacksLandlock,
    FullAccess,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Landlock at `abi`, every write right handled.
    Enforced {
        abi: u32,
    },
    Partial {
        abi: u32,
        why: PartialWhy,
    },
    NotEnforced {
        why: NotEnforcedWhy,
    },
}

/// What holds a confined command's network (docs/BEHAVIOUR.md §13).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetEnforcement {
    /// Network `on`, or nothing is confined (`auto`, the sandbox switched off): commands reach
    /// what the machine reaches.
    Open,
    /// Network `off`: `installed` when the seccomp filter refuses IP sockets here.
    Off { installed: bool },
    /// `allowlist` or `ask`.
    Filtered {
        mode: Network,
        held: NetHold,
        /// Loopback stays reachable (`[sandbox] loopback`).
        loopback: bool,
        /// Commands run in a network namespace of the session's own, with nothing but `lo`
        /// (a server with `CAP_SYS_ADMIN`): what the filter misses has no route out.
        namespace: bool,
    },
}

/// What holds the `allowlist` and `ask` modes on this host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetHold {
    /// The seccomp supervisor makes every connection, and the command's Landlock domain refuses
    /// its own TCP connects (ABI 4 and later).
    Full,
    /// The supervisor alone (Landlock ABI below 4): a command that races its own memory or fd
    /// table against the supervisor may connect where it likes.
    SupervisorOnly,
    /// No seccomp filter on this architecture: nothing filters.
    Nothing,
}

/// The mode plus what the host does with it; `line()` is the one line every result carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Enforcement {
    pub mode: Mode,
    pub state: State,
    /// What holds the network.
    pub network: NetEnforcement,
}

impl Enforcement {
    /// What `mode` gets with `backend` (`enabled` is `sandbox.terminal`). `Plan::enforcement`
    /// calls this with the detected backend; it is public so callers can word hypotheticals.
    pub fn decide(mode: Mode, enabled: bool, backend: &Backend) -> Enforcement {
        use NotEnforcedWhy as N;
        let state = if mode == Mode::Auto {
            State::NotEnforced { why: N::FullAccess }
        } else if !enabled {
            State::NotEnforced {
                why: N::DisabledByConfig,
            }
        } else {
            match *backend {
                Backend::Landlock { abi } if abi >= LANDLOCK_ABI_FULL_WRITES => {
                    State::Enforced { abi }
                }
                Backend::Landlock { abi: 2 } => State::Partial {
                    abi: 2,
                    why: PartialWhy::NoTruncate,
                },
                Backend::Landlock { abi } => State::Partial {
                    abi,
                    why: PartialWhy::NoReferNoTruncate,
                },
                Backend::KernelLacksLandlock => State::NotEnforced {
                    why: N::KernelLacksLandlock,
                },
                Backend::None => State::NotEnforced { why: N::NoBackend },
            }
        };
        Enforcement {
            mode,
            state,
            network: NetEnforcement::Open,
        }
    }

    /// True when some writes are refused by the kernel.
    pub fn confines(&self) -> bool {
        !matches!(self.state, State::NotEnforced { .. })
    }

    /// The single line every result carries, e.g.
    /// `[sandbox] workspace-write: enforced (Landlock ABI 7)`, as a client that can be asked
    /// about a host gets it.
    pub fn line(&self) -> String {
        self.line_for(true)
    }

    /// The line for a client that can (`client_asks`) or cannot be asked about a host not
    /// listed: network `ask` is `allowlist` for the latter.
    pub fn line_for(&self, client_asks: bool) -> String {
        crate::notice::enforcement_line(self, client_asks)
    }
}

impl std::fmt::Display for Enforcement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.line())
    }
}
