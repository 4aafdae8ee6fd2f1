//! The MCP face of agentty: the tool router, `initialize` identity, and per-call plumbing
//! (cancellation, progress) around the engine.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use agentty_core::run::{self, Progress, RunRequest};
use agentty_core::spawn::SpawnSpec;
use agentty_core::spill::SpillStore;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::{schema_for_input, schema_for_output};
use rmcp::model::{
    CallToolResult, ContentBlock, Implementation, JsonObject, ProgressNotificationParam,
    ServerCapabilities, ServerConfig,
};
use rmcp::schemars::JsonSchema;
use rmcp::service::RequestContext;
use rmcp::{RoleServer, ServerHandler, tool, tool_handler, tool_router};
use serde::de::DeserializeOwned;

use crate::notice;
use crate::terminal::{self, TerminalParams, TerminalResult};

/// Settings the server runs with (resolved by the binary from flags and the config file).
#[derive(Debug, Clone)]
pub struct Settings {
    /// The workspace root: default `workdir`, and the boundary later checks judge against.
    pub workspace: PathBuf,
    /// Shell for `command`.
    pub shell: PathBuf,
    /// Root of spill directories (`<state dir>/spill`).
    pub spill_root: PathBuf,
    pub default_timeout_ms: u64,
}

/// One MCP session's server.
#[derive(Clone)]
pub struct Agentty {
    inner: Arc<Inner>,
    tool_router: ToolRouter<Self>,
}

struct Inner {
    settings: Settings,
    spill: Arc<SpillStore>,
    /// Per-call ids (`c1`, `c2`, …): they name spill files and run markers.
    calls: AtomicU64,
    session: String,
}

impl Agentty {
    pub fn new(settings: Settings, session: String) -> Self {
        let spill = Arc::new(SpillStore::new(&settings.spill_root, &session));
        Self {
            inner: Arc::new(Inner {
                settings,
                spill,
                calls: AtomicU64::new(0),
                session,
            }),
            tool_router: Self::tool_router(),
        }
    }

    pub fn settings(&self) -> &Settings {
        &self.inner.settings
    }
}

/// Input schema for a tool whose handler parses its arguments itself (so that a bad argument is
/// a tool error the model can read, not a protocol error).
fn input_schema<T: JsonSchema + 'static>() -> Arc<JsonObject> {
    schema_for_input::<T>().unwrap_or_else(|e| {
        tracing::error!("input schema: {e}");
        Arc::new(JsonObject::new())
    })
}

fn parse_args<T: DeserializeOwned>(args: JsonObject) -> Result<T, CallToolResult> {
    serde_json::from_value(serde_json::Value::Object(args))
        .map_err(|e| tool_error(format!("{}: {e}", notice::INVALID_ARGS)))
}

fn tool_error(text: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(text)])
}

#[tool_router]
impl Agentty {
    #[tool(
        name = "terminal",
        description = notice::TERMINAL_DESCRIPTION,
        input_schema = input_schema::<TerminalParams>(),
        output_schema = schema_for_output::<TerminalResult>(),
        annotations(
            title = "Run a command",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    async fn terminal(&self, args: JsonObject, ctx: RequestContext<RoleServer>) -> CallToolResult {
        let params: TerminalParams = match parse_args(args) {
            Ok(p) => p,
            Err(e) => return e,
        };
        let settings = &self.inner.settings;
        let prepared = match terminal::prepare(
            params,
            &settings.shell,
            &settings.workspace,
            settings.default_timeout_ms,
        ) {
            Ok(p) => p,
            Err(e) => return tool_error(e),
        };
        let call = format!("c{}", self.inner.calls.fetch_add(1, Ordering::Relaxed) + 1);
        tracing::debug!(%call, command = %prepared.display, "terminal");
        let request = RunRequest {
            spec: SpawnSpec {
                program: prepared.program.clone(),
                args: prepared.args.clone(),
                cwd: prepared.workdir.clone(),
                env: prepared.env.clone(),
                stdin: agentty_core::spawn::StdinMode::Null,
                marker: format!("{}-{}", self.inner.session, call),
                launcher: None,
            },
            stdin: prepared.stdin.clone(),
            timeout: terminal::timeout(&prepared),
            spill: Some((self.inner.spill.clone(), call)),
        };
        let mut progress = ctx.meta.get_progress_token().map(|token| {
            let peer = ctx.peer.clone();
            move |p: Progress| {
                let param = ProgressNotificationParam::new(token.clone(), p.elapsed.as_secs_f64())
                    .with_message(format!("{}s {}", p.elapsed.as_secs(), p.line));
                let peer = peer.clone();
                tokio::spawn(async move {
                    let _ = peer.notify_progress(param).await;
                });
            }
        });
        let on_progress = progress
            .as_mut()
            .map(|f| f as &mut (dyn FnMut(Progress) + Send));
        let outcome = match run::run(request, ctx.ct.cancelled(), on_progress).await {
            Ok(o) => o,
            Err(e) => {
                let program = prepared.program.to_string_lossy();
                return tool_error(notice::spawn_failed(&program, &e));
            }
        };
        let (text, structured) = terminal::render(&prepared, &outcome);
        let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
        result.structured_content = serde_json::to_value(structured).ok();
        result
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Agentty {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(
                Implementation::new("agentty", env!("CARGO_PKG_VERSION"))
                    .with_title("agentty: a real terminal for AI agents"),
            )
            .with_instructions(notice::SERVER_INSTRUCTIONS)
    }
}
