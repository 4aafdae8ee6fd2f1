//! `shell_open`: a persistent shell, confined like every command, with the prompt markers
//! that tell when a command is done.

use std::sync::Arc;

use agentty_core::jobs::OutputRing;
use agentty_core::pty::integration::Flavor;
use agentty_core::pty::{COLS_DEFAULT, OpenError, OpenSpec, PtyError, ROWS_DEFAULT, SIZE_MAX};
use agentty_core::spawn::{SpawnSpec, StdinMode};
use rmcp::RoleServer;
use rmcp::model::{CallToolResult, JsonObject};
use rmcp::service::RequestContext;

use super::notice as say;
use crate::escalation;
use crate::escalation::SandboxPermissions;
use crate::network::NetCall;
use crate::server::Agentty;
use crate::tools::{parse_args, tool_error};

use super::*;

impl Agentty {
    pub(super) async fn open_shell(
        &self,
        args: JsonObject,
        ctx: RequestContext<RoleServer>,
    ) -> CallToolResult {
        let p: ShellOpenParams = match parse_args(args) {
            Ok(p) => p,
            Err(e) => return e,
        };
        let (cols, rows) = match size(p.cols, p.rows) {
            Ok(s) => s.unwrap_or((COLS_DEFAULT, ROWS_DEFAULT)),
            Err(e) if p.cols.is_some() != p.rows.is_some() => {
                // One of the two alone is fine at open: the other keeps its default.
                let c = p.cols.unwrap_or(COLS_DEFAULT);
                let r = p.rows.unwrap_or(ROWS_DEFAULT);
                if !(1..=SIZE_MAX).contains(&c) || !(1..=SIZE_MAX).contains(&r) {
                    return tool_error(e);
                }
                (c, r)
            }
            Err(e) => return tool_error(e),
        };
        let workdir = match self.workspace().resolve_workdir(p.workdir.as_deref()) {
            Ok(dir) => dir,
            Err(e) => return tool_error(e.to_string()),
        };
        let env =
            match crate::tools::entry::check_env(p.env, &workdir, &self.settings().guard, true) {
                Ok(env) => env,
                Err(refused) => {
                    if refused.by_guard {
                        self.record_blocked("shell_open", &refused.text);
                    }
                    return tool_error(refused.text);
                }
            };
        let shell_path = self.settings().shell.clone();
        if self.settings().start_up_files_writable && Flavor::of(&shell_path) == Flavor::Zsh {
            return tool_error(say::ZSH_START_UP_WRITABLE.into());
        }
        // Over the cap the open would be refused after the user approved it: say so first (the
        // open checks again).
        if p.sandbox_permissions == Some(SandboxPermissions::RequireEscalated)
            && let Err(cap) = self.jobs().check_cap(agentty_core::jobs::JobKind::Shell)
        {
            return tool_error(say::cap_reached(&super::where_each(&cap.running)));
        }
        let escalated = match (p.sandbox_permissions, p.justification) {
            (Some(SandboxPermissions::RequireEscalated), Some(j)) if !j.trim().is_empty() => {
                let what = say::shell_what(&shell_path.display().to_string());
                match escalation::ask(&ctx, &what, &j).await {
                    Ok(()) => true,
                    Err(refusal) => return tool_error(refusal),
                }
            }
            (Some(SandboxPermissions::RequireEscalated), _) => {
                return tool_error(crate::escalation::notice::JUSTIFICATION_REQUIRED.into());
            }
            _ => false,
        };
        let confine = match self.confine_for(escalated, Agentty::caller_of(&ctx).as_deref()) {
            Ok(l) => l,
            Err(reason) => return tool_error(crate::confinement::notice::sandbox_failed(&reason)),
        };
        let (call, marker) = self.next_call();
        let label = shell_path.display().to_string();
        // The shell's commands reach the network as a call's do, with credentials of the
        // shell's own, let go when it ends.
        let net = self.network_shell(
            &marker,
            &call,
            &say::shell_what(&label),
            &ctx,
            confine.is_some(),
        );
        // The proxy's variables first: the shell's own `env` may set them otherwise.
        let mut env_with_proxy = net.as_ref().map(NetCall::env).unwrap_or_default();
        env_with_proxy.extend(env);
        let env = env_with_proxy;
        let output = Arc::new(OutputRing::new(Some((
            self.spill_store().clone(),
            format!("shell-{call}"),
        ))));
        let spec = OpenSpec {
            spawn: SpawnSpec {
                program: shell_path.clone().into_os_string(),
                args: Vec::new(),
                cwd: workdir.clone(),
                env,
                stdin: StdinMode::Null,
                marker,
                confine,
                caller: Agentty::caller_of(&ctx),
                pass_fds: Vec::new(),
                masks: Some(self.masks()),
            },
            cols,
            rows,
            output,
            startup_dir: self
                .inner
                .own_dirs
                .of(Agentty::caller_of(&ctx).as_deref())
                .startup,
        };
        if self.cancelled_already(&ctx) {
            return tool_error(say::CANCELLED_BEFORE_OPEN.into());
        }
        let (job, shell) = match self.shells().open(spec, label.clone()).await {
            Ok(opened) => opened,
            Err(OpenError::Cap(cap)) => {
                return tool_error(say::cap_reached(&super::where_each(&cap.0.running)));
            }
            Err(OpenError::Pty(PtyError::NoPrompt(waited))) => {
                return tool_error(say::no_prompt(waited));
            }
            Err(OpenError::Pty(PtyError::EndedAtStart(text))) => {
                return tool_error(say::ended_at_start(&text));
            }
            Err(OpenError::Pty(e)) => {
                crate::metrics::METRICS.spawn_failed();
                return tool_error(say::open_failed(&e.to_string()));
            }
        };
        self.watch_job(&job);
        crate::network::keep_while_running(&job, net);
        let marked = shell.flavor != Flavor::Unknown;
        let sandbox = self.later_sandbox_line_for(escalated, &ctx);
        let workdir = workdir.display().to_string();
        let ends = match shell.flavor {
            Flavor::Bash | Flavor::Zsh => say::Ends::FromTheShell,
            Flavor::Posix => say::Ends::FromItsPrompt,
            Flavor::Unknown => say::Ends::Unmarked,
        };
        let mut text = say::opened(&job.id, &label, &workdir, cols, rows, ends);
        if let Some(rule) = self.handle_rule() {
            text.push_str(&format!("\n{rule}"));
        }
        text.push_str(&format!("\n{sandbox}"));
        success(
            text,
            &ShellOpenResult {
                id: job.id.clone(),
                pid: shell.pid,
                shell: label,
                workdir,
                cols,
                rows,
                integration: marked,
                sandbox,
            },
        )
    }
}
