//! The sandbox of one session (SPEC §5), decided once: the plan, the prepared kernel objects,
//! and the launcher thread that carries them, plus the per-call choice between that and a
//! one-time escalated (unconfined) run.
//!
//! The Landlock ruleset is built once per session and applied once, to a dedicated launcher
//! thread; every command spawned from that thread inherits it. So confinement costs one thread
//! hand-off per call, and a command keeps its own pid and process group.

use std::sync::Arc;

use agentty_core::spawn::{Confine, Launcher};
use agentty_guard::Workspace;
use agentty_sandbox::{Enforcement, Mode, Plan, Policy, Prepared, detect_denial};

use crate::notice::{Retry, denial_retry};

/// Error code: the command ran and a write was refused by the sandbox.
pub const SANDBOX_DENIED: u32 = 2008;
/// Error code: the sandbox failed to start; the command did not run.
pub const SANDBOX_FAILED: u32 = 2009;

struct PreparedConfine(Prepared);

impl Confine for PreparedConfine {
    fn restrict_current_thread(&self) -> std::io::Result<()> {
        self.0.apply_in_child()
    }
}

pub struct Confinement {
    plan: Plan,
    enforcement: Enforcement,
    /// `Ok(None)`: nothing to confine (auto mode, switched off, no backend).
    launcher: Result<Option<Arc<Launcher>>, String>,
}

impl Confinement {
    pub fn new(mode: Mode, enabled: bool, network: bool, workspace: &Workspace) -> Self {
        let policy = Policy {
            mode,
            writable_roots: workspace.writable_roots().map(ToOwned::to_owned).collect(),
            enabled,
            network,
        };
        let plan = Plan::new(&policy);
        let mut enforcement = plan.enforcement();
        let launcher = match plan.prepare() {
            Ok(prepared) => {
                enforcement = prepared.enforcement();
                if enforcement.confines() || enforcement.network_off == Some(true) {
                    Launcher::new(Arc::new(PreparedConfine(prepared)))
                        .map(|l| Some(Arc::new(l)))
                        .map_err(|e| format!("the sandbox failed to start: {e}"))
                } else {
                    Ok(None)
                }
            }
            Err(e) => Err(e.to_string()),
        };
        if let Err(e) = &launcher {
            tracing::error!("{e}");
        }
        Self {
            plan,
            enforcement,
            launcher,
        }
    }

    pub fn mode(&self) -> Mode {
        self.plan.mode()
    }

    /// The launcher for a call: the session's, or none for an approved escalation.
    /// An error is the 2009 message: the command must not run.
    pub fn launcher(&self, escalated: bool) -> Result<Option<Arc<Launcher>>, String> {
        if escalated {
            return Ok(None);
        }
        self.launcher.clone()
    }

    /// The one line every result carries.
    pub fn line(&self, escalated: bool) -> String {
        if escalated {
            crate::notice::escalated_line(self.plan.mode())
        } else {
            self.enforcement.line()
        }
    }

    /// The 2008 sentence, when a failed command's output shows a write the sandbox refused,
    /// ending with how to run it again (`retry`).
    pub fn denial(
        &self,
        escalated: bool,
        exit_ok: bool,
        output: &str,
        retry: Retry,
    ) -> Option<String> {
        if escalated {
            return None;
        }
        detect_denial(exit_ok, output, &self.plan)
            .map(|d| format!("{} {}", d.notice(self.plan.mode()), denial_retry(retry)))
    }
}
