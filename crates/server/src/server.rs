//! The MCP face of agentty: the tool router, `initialize` identity, and per-call plumbing
//! (cancellation, progress) around the engine.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use agentty_core::SpillStore;
use agentty_core::jobs::{Ids, JobTable};
use agentty_guard::{BoundaryError, GuardConfig, Workspace};
use agentty_sandbox::Mode;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::schema_for_input;
use rmcp::model::{
    CallToolResult, ContentBlock, Implementation, InitializeRequestParams, InitializeResult,
    JsonObject, ServerCapabilities, ServerConfig,
};
use rmcp::schemars::JsonSchema;
use rmcp::service::{ElicitationMode, RequestContext};
use rmcp::{ErrorData, RoleServer, ServerHandler, tool_handler};
use serde::de::DeserializeOwned;

use crate::confinement::Confinement;
use crate::notice;
use crate::session::{Caller, LazySession, Session};
use crate::transport::EarlyCancels;

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
    /// Extra writable roots (`--add-dir`), inside the workspace boundary too.
    pub add_dirs: Vec<PathBuf>,
    /// Permission mode: plan (read-only), default (workspace-write), auto (full access).
    pub mode: Mode,
    /// `sandbox.terminal`: false keeps the mode but confines nothing, and says so.
    pub sandbox_enabled: bool,
    /// `sandbox.network`: false turns the network off for commands (seccomp).
    pub network: bool,
    /// Guard rules switched off by the user.
    pub guard: GuardConfig,
    /// Close a shell unused for this long (`None`: 10 minutes).
    pub shell_idle_ms: Option<u64>,
}

/// How long ending an HTTP session waits for its cancelled calls to return: each stops its
/// tree first (a grace, then SIGKILL rounds), more only for a process stuck in the kernel.
const END_WAIT: Duration = Duration::from_secs(5);

/// One MCP session's server: what every session of this process shares, and this session's own
/// jobs, shells and spill files. Over stdio there is one; over HTTP one per client session
/// ([`Agentty::new_session`]).
#[derive(Clone)]
pub struct Agentty {
    inner: Arc<Shared>,
    session: Arc<LazySession>,
    /// Shared: HTTP makes a server per request (see `new_session`).
    tool_router: Arc<ToolRouter<Self>>,
    /// What `tools/list` answers: the router's tools, tidied and ordered once; and the same for
    /// a client that cannot be asked to lift the sandbox.
    tools: Arc<Vec<rmcp::model::Tool>>,
    tools_no_escalation: Arc<Vec<rmcp::model::Tool>>,
}

/// What every session of this process shares.
struct Shared {
    settings: Settings,
    workspace: Workspace,
    confinement: Confinement,
    /// This process's session name (`watchdog::session_name`): run markers start with it.
    session: String,
    /// Sessions made so far, to name their spill directories.
    sessions: AtomicU64,
    /// Requests cancelled before their handler ran, seen by the stdio transport's look-ahead.
    early_cancels: Arc<EarlyCancels>,
    /// Git hooks and config a command could plant for the user's next unconfined git.
    planted: crate::planted::Planted,
    /// The jobs and shells of HTTP callers without a session (protocol 2026-07-28), per caller.
    sessionless: std::sync::Mutex<std::collections::HashMap<Caller, Arc<LazySession>>>,
    /// How long a caller without a session's job lives with no request naming it (HTTP's
    /// `--session-grace`); unset over stdio.
    handle_grace: std::sync::OnceLock<Duration>,
    /// Requests for a secret the user types in the web view.
    secrets: crate::secrets::Pending,
    /// The web view's address, once it listens (`http://host:port`).
    view_url: std::sync::OnceLock<String>,
    /// The sealing key and open questions of escalations asked with `input_required`.
    sealer: Arc<crate::escalation::mrtr::Sealer>,
    /// The HTTP client sessions made so far, while they live.
    live: std::sync::Mutex<Vec<std::sync::Weak<LazySession>>>,
    /// HTTP client sessions by their `Mcp-Session-Id`, once a request after `initialize` has
    /// named it: what [`Agentty::end_http_session`] ends.
    by_http_id: std::sync::Mutex<std::collections::HashMap<String, std::sync::Weak<LazySession>>>,
}

impl Agentty {
    /// One session's server. Fails only when the workspace roots are unusable.
    pub fn new(settings: Settings, session: String) -> Result<Self, BoundaryError> {
        let state = LazySession::new(session.clone());
        let workspace = Workspace::new(settings.workspace.clone(), settings.add_dirs.clone())?;
        let confinement = Confinement::new(
            settings.mode,
            settings.sandbox_enabled,
            settings.network,
            &workspace,
        );
        let settings_workspace = settings.workspace.clone();
        let inner = Shared {
            settings,
            workspace,
            confinement,
            session,
            sessions: AtomicU64::new(0),
            early_cancels: Arc::default(),
            planted: crate::planted::Planted::new(&settings_workspace),
            sessionless: std::sync::Mutex::default(),
            handle_grace: std::sync::OnceLock::new(),
            secrets: crate::secrets::Pending::default(),
            view_url: std::sync::OnceLock::new(),
            sealer: Arc::new(crate::escalation::mrtr::Sealer::new(
                crate::escalation::mrtr::STATE_TTL,
            )),
            live: std::sync::Mutex::default(),
            by_http_id: std::sync::Mutex::default(),
        };
        let tool_router = Self::terminal_router() + Self::tasks_router() + Self::shells_router();
        let tools = Arc::new(crate::catalog::catalog(tool_router.list_all()));
        let tools_no_escalation = Arc::new(crate::catalog::without_escalation(&tools));
        Ok(Self {
            inner: Arc::new(inner),
            session: state,
            tool_router: Arc::new(tool_router),
            tools,
            tools_no_escalation,
        })
    }

    /// A new session sharing this one's settings, workspace and sandbox, with jobs, shells and
    /// spill files of its own (`<process session>-<n>`). Cheap: HTTP makes one per client
    /// session, and rmcp also asks for one per request it answers without a session.
    pub fn new_session(&self) -> Self {
        let n = self.inner.sessions.fetch_add(1, Ordering::Relaxed) + 1;
        let name = format!("{}-h{n}", self.inner.session);
        let session = LazySession::new(name);
        Self {
            inner: self.inner.clone(),
            session,
            tool_router: self.tool_router.clone(),
            tools: self.tools.clone(),
            tools_no_escalation: self.tools_no_escalation.clone(),
        }
    }

    /// Every session state made so far that still lives (the stdio one, HTTP sessions, callers
    /// without a session).
    pub(crate) fn live_sessions(&self) -> Vec<Arc<LazySession>> {
        self.inner
            .live
            .lock()
            .map(|live| live.iter().filter_map(std::sync::Weak::upgrade).collect())
            .unwrap_or_default()
    }

    /// Ends every HTTP session still alive and the sessionless callers' (the server stops):
    /// their jobs are stopped, one log line each, and their spill directories removed.
    pub async fn end_all_sessions(&self) {
        // Every made state is listed once in `live` (callers without a session included).
        for lazy in self.live_sessions() {
            if let Some(session) = lazy.state.get() {
                session.ended.store(true, Ordering::Relaxed);
                crate::tasks::stop_and_log(&session.jobs, &session.spill).await;
            }
        }
    }

    /// Ends the HTTP client session `id` (its client sent `DELETE /mcp`): its tool calls in
    /// flight are cancelled and each stops its process tree, then its jobs and shells are
    /// stopped and its spill directory removed; returns once that is done (bounded for what
    /// is stuck in the kernel). Every DELETE of the session waits for the same end. A session
    /// no request has named since its `initialize` started nothing.
    pub async fn end_http_session(&self, id: &str) {
        let lazy = self
            .inner
            .by_http_id
            .lock()
            .ok()
            .and_then(|ids| ids.get(id).and_then(std::sync::Weak::upgrade));
        let Some(lazy) = lazy else {
            return;
        };
        lazy.ending
            .get_or_init(|| async {
                let all_returned = lazy.in_flight.end(END_WAIT).await;
                if !all_returned {
                    tracing::warn!("session {id}: a cancelled call did not return in time");
                }
                if let Some(session) = lazy.state.get() {
                    // Left unended while a call still runs: the session's drop stops what
                    // that call may still start.
                    session.ended.store(all_returned, Ordering::Relaxed);
                    crate::tasks::stop_and_log(&session.jobs, &session.spill).await;
                }
            })
            .await;
        if let Ok(mut ids) = self.inner.by_http_id.lock() {
            ids.remove(id);
        }
    }

    /// Notes the HTTP session id a request of this client session carries, the first time.
    /// A server rmcp made for one request is never noted: it is not the session the id names.
    fn note_http_id(&self, parts: &http::request::Parts) {
        if self.session.http_id.get().is_some() || !self.session.initialized.load(Ordering::Relaxed)
        {
            return;
        }
        let Some(id) = parts
            .headers
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
        else {
            return;
        };
        if self.session.http_id.set(id.to_owned()).is_ok()
            && let Ok(mut ids) = self.inner.by_http_id.lock()
        {
            ids.retain(|_, weak| weak.strong_count() > 0);
            ids.entry(id.to_owned())
                .or_insert_with(|| Arc::downgrade(&self.session));
        }
    }

    /// Over HTTP, a job of a caller without a session is stopped once no request has named it
    /// for `grace` (set once, before serving).
    pub fn set_handle_grace(&self, grace: Duration) {
        let _ = self.inner.handle_grace.set(grace);
    }

    /// This server bound to the jobs and shells of `caller`, an HTTP caller without a session.
    fn sessionless(&self, caller: Caller) -> Self {
        let session = {
            let mut callers = self
                .inner
                .sessionless
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let n = callers.len() + 1;
            callers
                .entry(caller)
                .or_insert_with(|| {
                    LazySession::sessionless(format!("{}-caller{n}", self.inner.session))
                })
                .clone()
        };
        Self {
            inner: self.inner.clone(),
            session,
            tool_router: self.tool_router.clone(),
            tools: self.tools.clone(),
            tools_no_escalation: self.tools_no_escalation.clone(),
        }
    }

    /// The sandbox line this session's commands carry.
    pub fn sandbox_line(&self) -> String {
        self.inner.confinement.line(false)
    }

    pub fn settings(&self) -> &Settings {
        &self.inner.settings
    }

    /// This session's state, made on first use.
    fn state(&self) -> &Session {
        if self.session.state.get().is_none() {
            // Listed for `end_all_sessions` once it has something to end.
            if let Ok(mut live) = self.inner.live.lock() {
                live.retain(|s| s.strong_count() > 0);
                live.push(Arc::downgrade(&self.session));
            }
        }
        self.session
            .state(&self.inner.settings, self.inner.handle_grace.get().copied())
    }

    /// What the model is told of a new job's life where handles are unguessable (callers
    /// without a session): it is stopped once no request names it for the grace period.
    pub(crate) fn handle_rule(&self) -> Option<String> {
        let grace = self.inner.handle_grace.get()?;
        (self.jobs().ids() == Ids::Unguessable).then(|| crate::task_notice::handle_rule(*grace))
    }

    pub fn jobs(&self) -> &Arc<JobTable> {
        &self.state().jobs
    }

    pub(crate) fn spill_store(&self) -> &Arc<SpillStore> {
        &self.state().spill
    }

    /// The web view listens at `url` (`http://host:port`): secrets can be asked for.
    pub fn set_view_url(&self, url: String) {
        let _ = self.inner.view_url.set(url);
    }

    pub(crate) fn view_url(&self) -> Option<&str> {
        self.inner.view_url.get().map(String::as_str)
    }

    pub(crate) fn secrets(&self) -> &crate::secrets::Pending {
        &self.inner.secrets
    }

    /// What the secret request `id` asks for (the web view's page).
    pub fn secret_asked(&self, id: &str) -> Option<crate::secrets::Asked> {
        self.inner.secrets.asked(id)
    }

    /// Types the secret the user gave on the page for request `id`.
    pub async fn enter_secret(
        &self,
        id: &str,
        secret: String,
    ) -> Result<(), crate::secrets::EnterRefused> {
        self.inner.secrets.enter(id, secret).await
    }

    pub(crate) fn task_index(&self) -> &crate::tasks_ext::TaskIndex {
        &self.state().tasks
    }

    /// Whether this server confines commands at all (so an unconfined job was escalated).
    pub(crate) fn confines(&self) -> bool {
        matches!(self.confinement().confine(false), Ok(Some(_)))
    }

    pub(crate) fn shells(&self) -> &Arc<agentty_core::pty::Shells> {
        &self.state().shells
    }

    /// `end_session` has run: the drop has nothing left to stop.
    pub(crate) fn mark_ended(&self) {
        self.state().ended.store(true, Ordering::Relaxed);
    }

    pub(crate) fn workspace(&self) -> &Workspace {
        &self.inner.workspace
    }

    pub(crate) fn confinement(&self) -> &Confinement {
        &self.inner.confinement
    }

    /// How a command the sandbox refused a write can be run again in this session
    /// (`in_shell`: it ran in a persistent shell).
    pub(crate) fn retry(&self, in_shell: bool) -> notice::Retry {
        if !self.state().client_can_ask.load(Ordering::Relaxed) {
            notice::Retry::Impossible
        } else if in_shell {
            notice::Retry::Shell
        } else {
            notice::Retry::Terminal
        }
    }

    /// What the transport's [`LookAhead`](crate::transport::LookAhead) notes early
    /// cancellations in, for this session's handlers to see.
    pub fn early_cancels(&self) -> Arc<EarlyCancels> {
        self.inner.early_cancels.clone()
    }

    /// Whether the request was cancelled before it started anything: checked last thing before
    /// a process starts or keys are typed, so a request already cancelled starts nothing.
    pub(crate) fn cancelled_already(&self, ctx: &RequestContext<RoleServer>) -> bool {
        // Both are looked at: the early note is forgotten once asked about.
        let early = self.inner.early_cancels.take(&ctx.id);
        early || ctx.ct.is_cancelled()
    }

    /// A warning when git hooks or config changed since the last command (see `planted`).
    pub(crate) fn planted_warning(&self) -> Option<String> {
        self.inner.planted.changes()
    }

    /// A new per-call id and the run marker derived from it.
    pub(crate) fn next_call(&self) -> (String, String) {
        let call = format!(
            "c{}",
            self.state().calls.fetch_add(1, Ordering::Relaxed) + 1
        );
        // 64 random bits: a marker the next start trusts cannot be guessed (see `runs`).
        let marker = format!(
            "{}-{}-{:016x}",
            self.inner.session,
            call,
            agentty_core::runs::random_tag()
        );
        (call, marker)
    }
}

impl Agentty {
    /// The server a request is served by: this one, or, for an HTTP request without a session
    /// (a 2026-07-28 client; rmcp makes a server for that request only), its caller's state.
    fn route(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> (std::borrow::Cow<'_, Self>, Option<Caller>) {
        let sessionless = context
            .extensions
            .get::<http::request::Parts>()
            .filter(|parts| {
                !parts.headers.contains_key("mcp-session-id")
                    || context
                        .protocol_version()
                        .is_some_and(|v| v >= rmcp::model::ProtocolVersion::V_2026_07_28)
                    // rmcp answers some requests that name a session without it (per-request
                    // `_meta`): the server it made for the request was never initialized.
                    || !self.session.initialized.load(Ordering::Relaxed)
            })
            .map(|parts| {
                parts
                    .extensions
                    .get::<Caller>()
                    .cloned()
                    .unwrap_or_else(|| Caller("default".into()))
            });
        let this = match &sessionless {
            Some(caller) => std::borrow::Cow::Owned(self.sessionless(caller.clone())),
            None => std::borrow::Cow::Borrowed(self),
        };
        (this, sessionless)
    }
}

/// Input schema for a tool whose handler parses its arguments itself (so that a bad argument is
/// a tool error the model can read, not a protocol error).
pub(crate) fn input_schema<T: JsonSchema + 'static>() -> Arc<JsonObject> {
    schema_for_input::<T>().unwrap_or_else(|e| {
        tracing::error!("input schema: {e}");
        Arc::new(JsonObject::new())
    })
}

#[expect(
    clippy::result_large_err,
    reason = "the error is the tool's answer itself, made once on a failed call"
)]
pub(crate) fn parse_args<T: DeserializeOwned>(args: JsonObject) -> Result<T, CallToolResult> {
    crate::args::parse(args)
}

pub(crate) fn tool_error(text: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(text)])
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Agentty {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tasks()
                .enable_resources()
                .build(),
        )
        .with_server_info(
            Implementation::new("agentty", env!("CARGO_PKG_VERSION"))
                .with_title("agentty: a real terminal for AI agents"),
        )
        .with_instructions(notice::SERVER_INSTRUCTIONS)
    }

    async fn on_initialized(&self, context: rmcp::service::NotificationContext<RoleServer>) {
        // Known by its HTTP id from here on: a DELETE that comes before the first tool call
        // finds it.
        if let Some(parts) = context.extensions.get::<http::request::Parts>() {
            self.note_http_id(parts);
        }
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        context.peer.set_peer_info(request.clone());
        self.session.initialized.store(true, Ordering::Relaxed);
        let transport = if context.extensions.get::<http::request::Parts>().is_some() {
            "http"
        } else {
            "stdio"
        };
        self.session
            .describe(|| request.client_info.name.clone(), transport);
        // What `peer.elicit` checks before asking, remembered for the advice of error 2008.
        // Not over HTTP: nothing is escalated there (see `escalation::over_http`).
        let form = !crate::escalation::over_http(&context)
            && context
                .peer
                .supported_elicitation_modes()
                .contains(&ElicitationMode::Form);
        self.state().client_can_ask.store(form, Ordering::Relaxed);
        self.negotiate_initialize(&request)
    }

    async fn list_resources(
        &self,
        _request: Option<rmcp::model::PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourcesResult, ErrorData> {
        Ok(crate::schemas::list())
    }

    async fn read_resource(
        &self,
        request: rmcp::model::ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ReadResourceResponse, ErrorData> {
        crate::schemas::read(&request.uri).map(Into::into)
    }

    async fn get_task(
        &self,
        request: rmcp::model::GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetTaskResult, ErrorData> {
        let (this, _) = self.route(&context);
        this.get_task_state(&request.task_id)
    }

    async fn cancel_task(
        &self,
        request: rmcp::model::CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let (this, _) = self.route(&context);
        this.cancel_task_by_id(&request.task_id).await
    }

    async fn call_tool(
        &self,
        request: rmcp::model::CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CallToolResponse, ErrorData> {
        let (this, sessionless) = self.route(&context);
        // A client session's call over HTTP is listed while it runs: ending the session
        // (`DELETE /mcp`) cancels it.
        let http_parts = context.extensions.get::<http::request::Parts>();
        let _flight = match (http_parts, &sessionless) {
            (Some(parts), None) => {
                this.note_http_id(parts);
                Some(this.session.in_flight.enter(&context.ct))
            }
            _ => None,
        };
        match &sessionless {
            Some(caller) => this
                .session
                .describe(|| caller.0.to_string(), "http, no session"),
            None => this.session.describe(
                || {
                    request
                        .meta
                        .as_ref()
                        .and_then(rmcp::model::RequestMetaObject::client_info)
                        .map_or_else(|| "unknown client".to_owned(), |i| i.name)
                },
                "stdio",
            ),
        }
        // A client of 2026-07-28 (no server-to-client requests): an escalation is asked by
        // answering `input_required`, and its retry is checked before the tool runs.
        let modern = context
            .protocol_version()
            .is_some_and(|v| v >= rmcp::model::ProtocolVersion::V_2026_07_28);
        let tasks_declared = context
            .client_capabilities()
            .is_some_and(|caps| caps.supports_tasks());
        let mut context = context;
        let slot = modern.then(|| {
            crate::escalation::mrtr::Slot::for_call(
                this.inner.sealer.clone(),
                &this.session.name,
                &request,
                &context.meta,
            )
        });
        if let Some(slot) = &slot {
            context.extensions.insert(slot.clone());
        }
        let call = rmcp::handler::server::tool::ToolCallContext::new(&*this, request, context);
        let mut response = this.tool_router.call(call).await;
        if let Some(question) = slot
            .as_ref()
            .and_then(crate::escalation::mrtr::Slot::take_question)
        {
            return Ok(rmcp::model::CallToolResponse::InputRequired(question));
        }
        // A command gone to the background is a task for a client of the tasks extension.
        if tasks_declared
            && let Ok(rmcp::model::CallToolResponse::Complete(result)) = &response
            && let Some(task) = this.as_task(result)
        {
            return Ok(rmcp::model::CallToolResponse::Task(task));
        }
        // What the person watching did since the last result (web view, `--view-control`).
        if let Ok(rmcp::model::CallToolResponse::Complete(result)) = &mut response {
            let notes = this.session.take_user_notes();
            if !notes.is_empty() {
                result.content.push(ContentBlock::text(notes.join("\n")));
            }
        }
        response
    }

    async fn list_tools(
        &self,
        _request: Option<rmcp::model::PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListToolsResult, ErrorData> {
        // As rmcp's generated handler answers, with the catalog instead of the router's list.
        let cache_hints = context
            .protocol_version()
            .is_some_and(|v| v >= rmcp::model::ProtocolVersion::V_2026_07_28);
        // Only a client that can show the user a form is told that escalation asks.
        let capabilities = context
            .meta
            .client_capabilities()
            .or_else(|| context.peer.peer_info().map(|i| i.capabilities.clone()));
        let can_ask = !crate::escalation::over_http(&context)
            && capabilities
                .and_then(|c| c.elicitation)
                .is_some_and(|e| e.form.is_some() || e.url.is_none());
        let tools = if can_ask {
            &self.tools
        } else {
            &self.tools_no_escalation
        };
        Ok(rmcp::model::ListToolsResult {
            result_type: Some(rmcp::model::ResultType::COMPLETE),
            tools: tools.as_ref().clone(),
            meta: None,
            next_cursor: None,
            ttl_ms: cache_hints.then_some(0),
            // It depends on the client's capabilities.
            cache_scope: cache_hints.then_some(rmcp::model::CacheScope::Private),
        })
    }
}
