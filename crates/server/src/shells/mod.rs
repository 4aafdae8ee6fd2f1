//! The persistent-shell family (docs/BEHAVIOUR.md §4): `shell_open`, `shell_send`, `shell_read`,
//! `shell_list`, `shell_close`.
//!
//! Contracts only: validation, the guard on typed command lines, the workspace boundary and
//! sandbox decided once at open (an escalation at open covers the whole shell), and rendering.
//! The engine is `agentty_core::pty`; every word is in [`crate::shell_notice`]. Shells are
//! registered in the session's one job table, so `task_list` / `task_output` see them too.

use std::sync::Arc;

use agentty_core::jobs::Job;
use agentty_core::pty::{SIZE_MAX, Shell};
use rmcp::handler::server::tool::schema_for_output;
use rmcp::model::{CallToolResult, JsonObject};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, tool, tool_router};

use crate::server::Agentty;
use crate::tools::reply as success;
use crate::tools::{input_schema, parse_args, tool_error};
use notice as say;

pub(crate) mod notice;

mod open;
mod read;
mod schema;
mod secret;
mod send;
pub(crate) use read::awaiting_note;
pub use schema::*;

/// The directory the shell is in now, as the kernel knows it.
fn shell_cwd(pid: i32) -> Option<std::path::PathBuf> {
    std::fs::read_link(format!("/proc/{pid}/cwd")).ok()
}

/// Each open shell with where it is now ([`where_now`]).
fn where_each(
    running: &[std::sync::Arc<agentty_core::jobs::Job>],
) -> Vec<(std::sync::Arc<agentty_core::jobs::Job>, String)> {
    running
        .iter()
        .map(|job| (job.clone(), where_now(job.pid).0))
        .collect()
}

/// Where an open shell is, as a list shows it: its current directory (where `cd` took it),
/// quoted with its hidden characters escaped (a directory's name is its commands' to choose),
/// its end kept when long; the raw path for `structuredContent`, `None` when the kernel cannot
/// tell it (a path past `PATH_MAX`).
fn where_now(pid: i32) -> (String, Option<std::path::PathBuf>) {
    const SHOWN_MAX_CHARS: usize = 240;
    let Some(dir) = shell_cwd(pid) else {
        return (say::CWD_UNKNOWN.to_owned(), None);
    };
    let shown = agentty_core::pty::shell::quoted(&dir.display().to_string());
    let count = shown.chars().count();
    let shown = if count > SHOWN_MAX_CHARS {
        let tail: String = shown.chars().skip(count - SHOWN_MAX_CHARS).collect();
        format!("…{tail}")
    } else {
        shown
    };
    (shown, Some(dir))
}

/// How long, past the close grace, a send that saw its shell end waits for the exit status.
const SHELL_EXIT_WAIT_MS: u64 = 500;

use crate::tools::timing::millis as ms;

/// Both or neither of `cols`/`rows`, each in range.
fn size(cols: Option<u16>, rows: Option<u16>) -> Result<Option<(u16, u16)>, String> {
    match (cols, rows) {
        (None, None) => Ok(None),
        (Some(c), Some(r)) if (1..=SIZE_MAX).contains(&c) && (1..=SIZE_MAX).contains(&r) => {
            Ok(Some((c, r)))
        }
        (Some(c), Some(r)) => Err(say::bad_size(c, r)),
        _ => Err(say::half_size()),
    }
}

impl Agentty {
    #[expect(
        clippy::result_large_err,
        reason = "the error is the tool's answer itself, made once on a failed call"
    )]
    fn open_shell_of(&self, id: &str) -> Result<(Arc<Job>, Arc<Shell>), CallToolResult> {
        self.shells()
            .get(id)
            .map_err(|why| self.shell_gone(id, &why))
    }

    /// Why there is no open shell `id`, as the tool error says it: from before a restart, or
    /// gone for `why`.
    pub(crate) fn shell_gone(&self, id: &str, why: &agentty_core::pty::Gone) -> CallToolResult {
        if *why == agentty_core::pty::Gone::Unknown
            && let Some(earlier) = self.earlier_job(id)
        {
            return tool_error(earlier);
        }
        tool_error(say::gone(id, why, self.shells().idle_limit()))
    }
}

#[tool_router(router = shells_router, vis = "pub(crate)")]
impl Agentty {
    #[tool(
        name = "shell_open",
        description = say::shell_open_description(),
        input_schema = input_schema::<ShellOpenParams>(),
        output_schema = schema_for_output::<ShellOpenResult>(),
        annotations(
            title = "Open a shell",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    async fn shell_open(
        &self,
        args: JsonObject,
        ctx: RequestContext<RoleServer>,
    ) -> CallToolResult {
        self.open_shell(args, ctx).await
    }

    #[tool(
        name = "shell_send",
        description = say::SHELL_SEND_DESCRIPTION,
        input_schema = input_schema::<ShellSendParams>(),
        output_schema = schema_for_output::<ShellSendResult>(),
        annotations(
            title = "Type into a shell",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    async fn shell_send(
        &self,
        args: JsonObject,
        ctx: RequestContext<RoleServer>,
    ) -> CallToolResult {
        self.send_shell(args, ctx).await
    }

    #[tool(
        name = "shell_read",
        description = say::shell_read_description(),
        input_schema = input_schema::<ShellReadParams>(),
        output_schema = schema_for_output::<ShellReadResult>(),
        annotations(
            title = "Read a shell",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn shell_read(&self, args: JsonObject) -> CallToolResult {
        self.read_shell(args).await
    }

    #[tool(
        name = "shell_list",
        description = say::SHELL_LIST_DESCRIPTION,
        input_schema = input_schema::<ShellListParams>(),
        output_schema = schema_for_output::<ShellListResult>(),
        annotations(
            title = "List shells",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn shell_list(&self, args: JsonObject) -> CallToolResult {
        if let Err(e) = parse_args::<ShellListParams>(args) {
            return e;
        }
        let mut lines = Vec::new();
        let mut shells = Vec::new();
        for (job, shell) in self.shells().list() {
            job.touch();
            let state = say::state_word(&job.state());
            let size = shell.as_ref().map(|s| s.size());
            let idle = shell.as_ref().map(|s| s.last_used().elapsed());
            let activity = shell.as_ref().map(|s| say::activity(&s.activity()));
            // An open shell is where it has gone since (`cd`), not where it opened.
            let (shown, workdir) = match shell {
                Some(_) => {
                    let (shown, dir) = where_now(job.pid);
                    (
                        shown,
                        dir.map_or_else(String::new, |d| d.display().to_string()),
                    )
                }
                None => (
                    agentty_core::pty::shell::quoted(&job.workdir.display().to_string()),
                    job.workdir.display().to_string(),
                ),
            };
            let mut line = format!("{} [{state}] {} in {shown}", job.id, job.label);
            if let Some(activity) = &activity {
                line.push_str(&format!(" · {activity}"));
            }
            if let (Some((c, r)), Some(idle)) = (size, idle) {
                line.push_str(&format!(
                    " · {c}x{r} · unused for {}",
                    crate::job_words::human_duration(idle)
                ));
            }
            line.push_str(&format!(" · {} bytes of output", job.output.total()));
            lines.push(line);
            shells.push(ShellEntry {
                id: job.id.clone(),
                state,
                shell: job.label.clone(),
                workdir,
                pid: job.pid,
                cols: size.map(|s| s.0),
                rows: size.map(|s| s.1),
                idle_ms: idle.map(ms),
                activity,
                age_ms: ms(job.started.elapsed()),
                output_bytes: job.output.total(),
            });
        }
        let text = if lines.is_empty() {
            say::NO_SHELLS.to_owned()
        } else {
            lines.join("\n")
        };
        success(text, &ShellListResult { shells })
    }

    #[tool(
        name = "shell_close",
        description = say::SHELL_CLOSE_DESCRIPTION,
        input_schema = input_schema::<ShellCloseParams>(),
        output_schema = schema_for_output::<ShellCloseResult>(),
        annotations(
            title = "Close a shell",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn shell_close(&self, args: JsonObject) -> CallToolResult {
        let p: ShellCloseParams = match parse_args(args) {
            Ok(p) => p,
            Err(e) => return e,
        };
        let marker = self.shells().get(&p.id).ok().map(|(_, s)| s.marker.clone());
        match self.shells().close(&p.id).await {
            Ok(job) => {
                // Its proxy credentials end with it, before this reply.
                if let Some(marker) = marker {
                    self.egress().revoke(&marker);
                }
                success(
                    say::closed(&job.id),
                    &ShellCloseResult {
                        id: job.id.clone(),
                        state: say::state_word(&job.state()),
                    },
                )
            }
            Err(why) => self.shell_gone(&p.id, &why),
        }
    }
}
