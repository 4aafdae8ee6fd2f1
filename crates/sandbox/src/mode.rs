//! The permission mode and the policy the rest of the program hands us.
//!
//! Users only ever learn the permission modes (`plan`, `default`, `auto`); the sandbox names
//! (`read-only`, `workspace-write`, `danger-full-access`) are what results print, so both live
//! here and map one-to-one. `Policy` is the whole input of this crate: everything else (writable
//! paths, kernel rules, wording) is derived from it.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

/// A permission mode (docs/BEHAVIOUR.md §5). Displays as its sandbox name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    /// `read-only`: writes nowhere except `/dev/null` and the terminal.
    Plan,
    /// `workspace-write`: the workspace, extra roots, temp dirs and toolchain caches.
    Default,
    /// `danger-full-access`: no confinement (the guard still applies, elsewhere).
    Auto,
}

impl Mode {
    /// The sandbox name printed in results.
    pub const fn as_str(self) -> &'static str {
        match self {
            Mode::Plan => "read-only",
            Mode::Default => "workspace-write",
            Mode::Auto => "danger-full-access",
        }
    }

    /// The permission-mode name users type.
    pub const fn mode_name(self) -> &'static str {
        match self {
            Mode::Plan => "plan",
            Mode::Default => "default",
            Mode::Auto => "auto",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The text given to `Mode::from_str` was not a mode name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown permission mode {0:?} (expected plan, default or auto)")]
pub struct ParseModeError(pub String);

impl FromStr for Mode {
    type Err = ParseModeError;

    /// Accepts the permission-mode names, and the sandbox names too since results print those
    /// and a user may well copy them back into configuration.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "plan" | "read-only" => Ok(Mode::Plan),
            "default" | "workspace-write" => Ok(Mode::Default),
            "auto" | "danger-full-access" => Ok(Mode::Auto),
            _ => Err(ParseModeError(s.to_owned())),
        }
    }
}

/// `[sandbox] network`: what confined commands may reach (docs/BEHAVIOUR.md §13).
///
/// `Allowlist` and `Ask` are the same to the kernel (every TCP connection is made by the
/// server for the command, see `net/`); they differ in what the server decides for a host
/// not on the list, which is the server's business.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Network {
    /// Unfiltered: what agentty did before the policy existed.
    On,
    /// No IP socket at all.
    Off,
    /// Listed hosts through the server's proxy, and loopback; nothing else.
    Allowlist,
    /// As `Allowlist`, and a host not on the list is asked of the user where the client can ask.
    Ask,
}

impl Network {
    /// The name users type and results print.
    pub const fn as_str(self) -> &'static str {
        match self {
            Network::On => "on",
            Network::Off => "off",
            Network::Allowlist => "allowlist",
            Network::Ask => "ask",
        }
    }

    /// Whether the server makes every connection for the command (`allowlist` and `ask`).
    pub const fn filtered(self) -> bool {
        matches!(self, Network::Allowlist | Network::Ask)
    }
}

impl fmt::Display for Network {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The text given to `Network::from_str` was not a network mode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown network mode {0:?} (expected on, off, allowlist or ask)")]
pub struct ParseNetworkError(pub String);

impl FromStr for Network {
    type Err = ParseNetworkError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "on" => Ok(Network::On),
            "off" => Ok(Network::Off),
            "allowlist" => Ok(Network::Allowlist),
            "ask" => Ok(Network::Ask),
            _ => Err(ParseNetworkError(s.to_owned())),
        }
    }
}

/// Everything the sandbox needs to know from configuration and the session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    pub mode: Mode,
    /// Workspace root plus `--add-dir` roots, already canonical.
    pub writable_roots: Vec<PathBuf>,
    /// `sandbox.terminal`; `false` means "not confined" while the mode (and its name) is kept.
    pub enabled: bool,
    /// What confined commands may reach over the network (docs/BEHAVIOUR.md §13).
    pub network: Network,
    /// In `allowlist` and `ask`, whether the machine's loopback stays reachable (`[sandbox]
    /// loopback`); said on the `[sandbox]` line, decided by the server's judge.
    pub loopback: bool,
}

impl Policy {
    /// A confined, network-allowed policy for `mode` over `writable_roots`.
    pub fn new(mode: Mode, writable_roots: Vec<PathBuf>) -> Self {
        Policy {
            mode,
            writable_roots,
            enabled: true,
            network: Network::On,
            loopback: true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for (text, mode, name) in [
            ("plan", Mode::Plan, "read-only"),
            ("default", Mode::Default, "workspace-write"),
            ("auto", Mode::Auto, "danger-full-access"),
        ] {
            assert_eq!(text.parse::<Mode>(), Ok(mode));
            assert_eq!(name.parse::<Mode>(), Ok(mode));
            assert_eq!(mode.to_string(), name);
            assert_eq!(mode.mode_name(), text);
        }
        assert!("yolo".parse::<Mode>().is_err());
        assert_eq!(" Plan ".parse::<Mode>(), Ok(Mode::Plan));
    }

    #[test]
    fn network_names_round_trip() {
        for n in [Network::On, Network::Off, Network::Allowlist, Network::Ask] {
            assert_eq!(n.as_str().parse::<Network>(), Ok(n));
        }
        assert!("maybe".parse::<Network>().is_err());
        assert!(Network::Ask.filtered() && !Network::On.filtered() && !Network::Off.filtered());
    }
}
