//! One MCP session's server, [`Agentty`]: what every session of this process shares (settings,
//! workspace, sandbox, planted-code watch, secret requests, the tool router) and this session's
//! own state, made at its first use. The tool families add their handlers to it
//! (`terminal/`, `tasks/`, `shells/`); `handler.rs` answers MCP with it; `http_sessions.rs`
//! finds the session an HTTP request belongs to.

use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};

use agentty_core::SpillStore;
use agentty_core::jobs::{Ids, JobTable};
use agentty_guard::{BoundaryError, Workspace};
use rmcp::RoleServer;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::Tool;
use rmcp::service::RequestContext;

use crate::confinement::Confinement;
use crate::confinement::notice::Retry;
use crate::escalation::mrtr::{STATE_TTL, Sealer};
use crate::session::{LazySession, Registry, Session, TaskIndex};
use crate::settings::Settings;
use crate::transport::EarlyCancels;

/// One MCP session's server: what every session of this process shares, and this session's own
/// jobs, shells and spill files. Over stdio there is one; over HTTP one per client session
/// ([`Agentty::new_session`]).
#[derive(Clone)]
pub struct Agentty {
    pub(crate) inner: Arc<Shared>,
    pub(crate) session: Arc<LazySession>,
    /// Shared: HTTP makes a server per request (see `new_session`).
    pub(crate) tool_router: Arc<ToolRouter<Self>>,
    /// What `tools/list` answers: the router's tools, tidied and ordered once; and the same for
    /// a client that cannot be asked to lift the sandbox.
    pub(crate) tools: Arc<Vec<Tool>>,
    pub(crate) tools_no_escalation: Arc<Vec<Tool>>,
}

/// What every session of this process shares.
pub(crate) struct Shared {
    settings: Settings,
    workspace: Workspace,
    confinement: Confinement,
    /// This process's session name (`watchdog::session_name`): run markers start with it.
    pub(crate) session: String,
    /// The directories its sessions spill in and its shells write their start-up files in:
    /// the server's own, and over HTTP each caller's (`own_dirs.rs`).
    pub(crate) own_dirs: crate::own_dirs::OwnDirs,
    /// Every session state of this process, found again by HTTP id, caller or liveness.
    pub(crate) registry: Registry,
    /// Requests cancelled before their handler ran, seen by the stdio transport's look-ahead.
    early_cancels: Arc<EarlyCancels>,
    /// Git hooks and config, and the other paths that run code later, a command could plant
    /// for the user's next unconfined git, shell or editor.
    planted: crate::confinement::planted::Planted,
    /// What the watch found, kept for the web view (and logged as it was found).
    pub(crate) told: crate::confinement::planted::told::Record,
    /// Requests for a secret the user types in the web view.
    secrets: crate::secrets::Pending,
    /// The web view's address, once it listens (`http://host:port`).
    view_url: OnceLock<String>,
    /// The sealing key and open questions of escalations asked with `input_required`.
    pub(crate) sealer: Arc<Sealer>,
    /// What confined commands may reach, and what they met (docs/BEHAVIOUR.md §13).
    pub(crate) egress: Arc<crate::network::Egress>,
    /// Every tool call being answered, of every session: the drain waits for them.
    pub(crate) calls: crate::session::InFlight,
    /// Serving, draining or stopping (docs/BEHAVIOUR.md §14; its phases are `drain.rs`'s).
    pub(crate) drain_phase: std::sync::atomic::AtomicU8,
    /// What the state dir keeps of HTTP sessions across a restart.
    pub(crate) kept: Arc<crate::session::kept::Kept>,
}

/// What this server's confined commands may not read: what the settings hide, save this
/// server's own spill directory and shells' start-up directory (made now, so a rule can be bound
/// to each: results tell the model to read its spill files, and a shell reads its start-up
/// file), opened as the commands see it (in the session's mount namespace, whose `/proc` is its
/// own).
fn unreadable(settings: &Settings, own: &[&std::path::Path]) -> agentty_sandbox::Unreadable {
    let mut unreadable = settings.unreadable.clone();
    if !unreadable.is_empty() {
        for dir in own {
            match agentty_core::ensure_private_dir(dir) {
                Ok(()) => unreadable.readable.push(dir.to_path_buf()),
                Err(e) => tracing::warn!(
                    "cannot make {}: {e}; confined commands will not read what this server \
                     writes there",
                    dir.display()
                ),
            }
        }
        unreadable.seen_from = agentty_core::namespace::init_pid()
            .map(|pid| std::path::PathBuf::from(format!("/proc/{pid}/root")));
    }
    unreadable
}

impl Drop for Shared {
    /// This server's spill directories go once their sessions' have (best effort: a session
    /// directory still there keeps one), and its shells' start-up directories once empty.
    fn drop(&mut self) {
        for dir in self.own_dirs.all() {
            let _ = std::fs::remove_dir(dir);
        }
    }
}

impl Agentty {
    /// One session's server. Fails only when the workspace roots are unusable.
    pub fn new(settings: Settings, session: String) -> Result<Self, BoundaryError> {
        let state = LazySession::new(session.clone());
        let workspace = Workspace::new(settings.workspace.clone(), settings.add_dirs.clone())?;
        let egress = crate::network::Egress::new(
            settings.network,
            settings.allowlist.clone(),
            settings.loopback,
        );
        let confining = settings.sandbox_enabled && settings.mode != agentty_sandbox::Mode::Auto;
        let supervisor = if confining && egress.filtered() {
            crate::network::start(&egress).map(Some)
        } else if confining {
            Ok(crate::network::start_for_resizes(&egress))
        } else {
            Ok(None)
        };
        let own_dirs =
            crate::own_dirs::OwnDirs::new(&settings.spill_root, &settings.shells_root(), &session);
        let own = own_dirs.of(None);
        let confinement = Confinement::new(
            settings.mode,
            settings.sandbox_enabled,
            crate::confinement::NetSetup {
                mode: settings.network,
                loopback: settings.loopback,
                supervisor,
            },
            &workspace,
            &settings.protected,
            unreadable(&settings, &[&own.spill, &own.startup]),
        );
        let roots: Vec<std::path::PathBuf> =
            workspace.writable_roots().map(ToOwned::to_owned).collect();
        let planted = crate::confinement::planted::Planted::new(
            confinement.plan(),
            &roots,
            &settings.protected,
        );
        let state_dir = settings
            .spill_root
            .parent()
            .unwrap_or(settings.spill_root.as_path())
            .to_path_buf();
        let inner = Shared {
            kept: Arc::new(crate::session::kept::Kept::new(&state_dir)),
            calls: crate::session::InFlight::default(),
            drain_phase: std::sync::atomic::AtomicU8::new(0),
            settings,
            workspace,
            confinement,
            session,
            own_dirs,
            registry: Registry::default(),
            early_cancels: Arc::default(),
            planted,
            told: crate::confinement::planted::told::Record::default(),
            secrets: crate::secrets::Pending::default(),
            view_url: OnceLock::new(),
            sealer: Arc::new(Sealer::new(STATE_TTL)),
            egress,
        };
        let tool_router = Self::tool_router();
        let tools = Arc::new(crate::tools::catalog::catalog(tool_router.list_all()));
        let tools_no_escalation = Arc::new(crate::tools::catalog::without_escalation(&tools));
        let inner = Arc::new(inner);
        look_between_calls(Arc::downgrade(&inner));
        Ok(Self {
            inner,
            session: state,
            tool_router: Arc::new(tool_router),
            tools,
            tools_no_escalation,
        })
    }

    /// Every tool, each family's router added in: the one list of the server's tools
    /// (`tools/catalog.rs` orders it, and a test checks its order names every one).
    pub(crate) fn tool_router() -> ToolRouter<Self> {
        Self::terminal_router() + Self::tasks_router() + Self::shells_router()
    }

    /// This server bound to the session state `session` (shared settings, sandbox, router).
    pub(crate) fn with_session(&self, session: Arc<LazySession>) -> Self {
        Self {
            inner: self.inner.clone(),
            session,
            tool_router: self.tool_router.clone(),
            tools: self.tools.clone(),
            tools_no_escalation: self.tools_no_escalation.clone(),
        }
    }

    /// A new session sharing this one's settings, workspace and sandbox, with jobs, shells and
    /// spill files of its own (`<process session>-h<n>`). Cheap: HTTP makes one per client
    /// session, and rmcp also asks for one per request it answers without a session.
    pub fn new_session(&self) -> Self {
        let name = self.inner.registry.next_name(&self.inner.session);
        self.with_session(LazySession::new(name))
    }

    /// The confinement for a call of `caller` (an HTTP caller; `None` over stdio): its commands
    /// read its own spill and start-up directories, no other's.
    pub(crate) fn confine_for(
        &self,
        escalated: bool,
        caller: Option<&str>,
    ) -> Result<Option<Arc<dyn agentty_core::spawn::Confine>>, String> {
        let own = caller.map(|name| (name, self.inner.own_dirs.of(Some(name)).both()));
        self.inner.confinement.confine(
            escalated,
            own.as_ref().map(|(name, dirs)| (*name, &dirs[..])),
        )
    }

    /// The sandbox line this session's commands carry, for a client that can be asked.
    pub fn sandbox_line(&self) -> String {
        self.inner.confinement.line(false, true)
    }

    /// The line a call's result carries (`Confinement::line`), for this call's client.
    pub(crate) fn sandbox_line_for(
        &self,
        escalated: bool,
        ctx: &RequestContext<RoleServer>,
    ) -> String {
        self.inner
            .confinement
            .line(escalated, self.network_asks(ctx))
    }

    /// The line of commands that outlive their call's result (a shell's, a background job's): a
    /// question about a host can only be asked while the command waits (elicitation), never
    /// with a result, so for a 2026-07-28 client their network is `allowlist`
    /// (docs/BEHAVIOUR.md §13).
    pub(crate) fn later_sandbox_line_for(
        &self,
        escalated: bool,
        ctx: &RequestContext<RoleServer>,
    ) -> String {
        self.inner.confinement.line(escalated, self.asks_now(ctx))
    }

    /// Whether the network policy may ask this call's client about a host not listed: over
    /// stdio, a client that declared form elicitation, or a 2026-07-28 client that can be asked
    /// with the result; over HTTP, never (docs/BEHAVIOUR.md §13).
    pub(crate) fn network_asks(&self, ctx: &RequestContext<RoleServer>) -> bool {
        self.asks_now(ctx) || self.asks_later(ctx)
    }

    /// The client is asked while the command waits (elicitation over stdio).
    fn asks_now(&self, ctx: &RequestContext<RoleServer>) -> bool {
        !crate::escalation::over_http(ctx)
            && ctx
                .extensions
                .get::<crate::escalation::mrtr::Slot>()
                .is_none()
            && self.state().client_can_ask.load(Ordering::Relaxed)
    }

    /// The client is asked with the result (a 2026-07-28 client).
    fn asks_later(&self, ctx: &RequestContext<RoleServer>) -> bool {
        !crate::escalation::over_http(ctx)
            && ctx
                .extensions
                .get::<crate::escalation::mrtr::Slot>()
                .is_some_and(crate::escalation::mrtr::Slot::can_ask)
    }

    /// `doctor`'s line on the network: the mode, its mechanism here, what a command could still
    /// do.
    pub fn network_report(&self) -> String {
        agentty_sandbox::notice::network_report(self.inner.confinement.network())
    }

    /// `doctor`'s lines on what confined commands may not read.
    pub fn unreadable_report(&self) -> String {
        agentty_sandbox::notice::unreadable_report(self.inner.confinement.plan())
    }

    pub fn settings(&self) -> &Settings {
        &self.inner.settings
    }

    /// This session's state, made on first use.
    pub(crate) fn state(&self) -> &Session {
        let made = self.session.state.get().is_some();
        if !made {
            // Listed for `end_all_sessions` once it has something to end.
            self.inner.registry.note_live(&self.session);
        }
        let caller = self.session.caller.get().map(|c| c.0.clone());
        let state = self.session.state(
            &self.inner.settings,
            &self.inner.own_dirs.of(caller.as_deref()).spill,
            self.inner.registry.handle_grace(),
        );
        if !made {
            self.restore_caller(state);
        }
        state
    }

    /// What the model is told of a new job's life where handles are unguessable (callers
    /// without a session): it is stopped once no request names it for the grace period.
    pub(crate) fn handle_rule(&self) -> Option<String> {
        let grace = self.inner.registry.handle_grace()?;
        (self.jobs().ids() == Ids::Unguessable).then(|| crate::job_words::handle_rule(grace))
    }

    pub fn jobs(&self) -> &Arc<JobTable> {
        &self.state().jobs
    }

    /// What became of job `id`, when it names one of this session's from before a restart
    /// (docs/BEHAVIOUR.md §14): the answer instead of "no such job".
    pub(crate) fn earlier_job(&self, id: &str) -> Option<String> {
        let job = self.state().before_restart(id)?;
        let restarted = crate::session::kept::epoch(self.inner.kept.started());
        Some(crate::job_words::earlier(&job.earlier(), restarted))
    }

    /// This session's jobs from before a restart, as the state dir kept them.
    pub(crate) fn earlier_jobs(&self) -> &[crate::session::kept::JobRecord] {
        self.state().before.get().map_or(&[][..], Vec::as_slice)
    }

    pub(crate) fn spill_store(&self) -> &Arc<SpillStore> {
        &self.state().spill
    }

    /// The secrets masked in this session's output.
    pub(crate) fn masks(&self) -> Arc<agentty_core::mask::Masks> {
        self.state().masks.clone()
    }

    /// Ends this session (docs/BEHAVIOUR.md §3): stops every job first (a job still writing
    /// into a removed directory would be a bug), logs one line per job stopped, then removes
    /// the session's spill directory. Returns how many jobs were stopped.
    pub async fn end_session(&self) -> usize {
        // The drop has nothing left to stop.
        self.state().ended.store(true, Ordering::Relaxed);
        crate::session::stop_and_log(self.jobs(), self.spill_store()).await
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

    pub(crate) fn task_index(&self) -> &TaskIndex {
        &self.state().tasks
    }

    /// Whether this server confines commands at all (so an unconfined job was escalated),
    /// without making read rules as a spawn's `confine` does.
    pub(crate) fn confines(&self) -> bool {
        self.confinement().confines()
    }

    pub(crate) fn shells(&self) -> &Arc<agentty_core::pty::Shells> {
        &self.state().shells
    }

    pub(crate) fn workspace(&self) -> &Workspace {
        &self.inner.workspace
    }

    pub(crate) fn confinement(&self) -> &Confinement {
        &self.inner.confinement
    }

    pub(crate) fn egress(&self) -> &Arc<crate::network::Egress> {
        &self.inner.egress
    }

    /// How a command the sandbox refused a write can be run again in this session
    /// (`in_shell`: it ran in a persistent shell).
    pub(crate) fn retry(&self, in_shell: bool) -> Retry {
        if !self.state().client_can_ask.load(Ordering::Relaxed) {
            Retry::Impossible
        } else if in_shell {
            Retry::Shell
        } else {
            Retry::Terminal
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

    /// Looks for planted code (see `confinement::planted`): what changed since the last look is
    /// told to the user now (log, web view), and returned as the model's warning together with
    /// what looks between this session's calls found.
    pub(crate) fn planted_warning(&self) -> Option<String> {
        let found = self.inner.planted.changes();
        self.inner.told.tell(&[self.session.named()], &found);
        let mut all = self.session.take_planted();
        all.extend(found);
        (!all.is_empty()).then(|| crate::confinement::notice::planted(&all))
    }

    /// Follows a job just registered (a background command or a shell) to its end: the
    /// session's table in the state dir is written now and when it ends (docs/BEHAVIOUR.md
    /// §14), and planted code is looked for then, so a job that planted after the model's last
    /// call is told of at once to the user and in the model's next result. Holds neither the
    /// session nor the server alive.
    pub(crate) fn watch_job(&self, job: &Arc<agentty_core::jobs::Job>) {
        self.state().save_jobs();
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (shared, session, job) = (
            Arc::downgrade(&self.inner),
            Arc::downgrade(&self.session),
            job.clone(),
        );
        runtime.spawn(async move {
            job.ended().await;
            let session = session.upgrade();
            if let Some(state) = session.as_deref().and_then(|s| s.state.get()) {
                state.save_jobs();
            }
            if let Some(shared) = shared.upgrade() {
                shared.look(session.as_deref());
            }
        });
    }

    /// Registers a call's commands with the network policy (`confined`: they are; an
    /// escalated call is not filtered): over stdio, a client that can be asked is asked while
    /// the command waits; a 2026-07-28 client that can is asked with the result; over HTTP,
    /// nobody (docs/BEHAVIOUR.md §13). `granted`: hosts the user approved for this call.
    pub(crate) fn network_call(
        &self,
        marker: &str,
        call: &str,
        what: &str,
        ctx: &RequestContext<RoleServer>,
        confined: bool,
        granted: Vec<crate::network::Target>,
    ) -> Option<crate::network::NetCall> {
        self.network_register(marker, call, what, ctx, confined, Some(granted))
    }

    /// Registers a shell's commands with the network policy for as long as it is open, as
    /// [`Agentty::network_call`] does a call's: credentials of the shell's own; a host not
    /// listed is asked while the command waits (elicitation over stdio), never with a result.
    pub(crate) fn network_shell(
        &self,
        marker: &str,
        call: &str,
        what: &str,
        ctx: &RequestContext<RoleServer>,
        confined: bool,
    ) -> Option<crate::network::NetCall> {
        self.network_register(marker, call, what, ctx, confined, None)
    }

    /// What [`Agentty::network_call`] and [`Agentty::network_shell`] share: confined commands
    /// registered with the network policy, asked about now where the client can be asked.
    /// `granted`: a call's (it may also be asked about with its result); `None` for a shell's.
    fn network_register(
        &self,
        marker: &str,
        call: &str,
        what: &str,
        ctx: &RequestContext<RoleServer>,
        confined: bool,
        granted: Option<Vec<crate::network::Target>>,
    ) -> Option<crate::network::NetCall> {
        if !confined {
            return None;
        }
        let asker = self.asks_now(ctx).then(|| ctx.peer.clone());
        let ask_later = granted.is_some() && self.asks_later(ctx);
        let granted = granted.unwrap_or_default();
        self.egress().begin(crate::network::Begin {
            marker,
            session: &self.session.name,
            caller: self.session.caller.get().map(|c| c.0.clone()),
            call,
            what,
            asker,
            ask_later,
            granted,
        })
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

impl Shared {
    /// A look for planted code outside a tool call: what changed is told to the user, and kept
    /// for the model's next result in `session`, or, when no session is known (the look between
    /// calls), in every live session (they share the workspace).
    fn look(&self, session: Option<&LazySession>) {
        let found = self.planted.changes();
        if found.is_empty() {
            return;
        }
        match session {
            Some(session) => {
                self.told.tell(&[session.named()], &found);
                session.note_planted(&found);
            }
            None => {
                let live = self.registry.live();
                // Told to the user as following the sessions at work when it was found (a
                // caller's view shows it only if one is theirs), else every live session.
                let busy: Vec<_> = live
                    .iter()
                    .filter(|s| s.busy())
                    .map(|s| s.named())
                    .collect();
                let mut names = if busy.is_empty() {
                    live.iter().map(|s| s.named()).collect()
                } else {
                    busy
                };
                if names.is_empty() {
                    // Nobody's session is live: the server's own (the local user's).
                    names.push((self.session.clone(), None));
                }
                self.told.tell(&names, &found);
                for session in &live {
                    session.note_planted(&found);
                }
            }
        }
    }
}

/// Looks for planted code every `LOOK_EVERY_MS` while the server lives: a command's escapee
/// (`setsid`) or a job that plants and keeps running is told of within that time, with no call
/// to look after. A look is a few dozen `lstat`s.
fn look_between_calls(shared: std::sync::Weak<Shared>) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    runtime.spawn(async move {
        let every = std::time::Duration::from_millis(crate::confinement::planted::LOOK_EVERY_MS);
        loop {
            tokio::time::sleep(every).await;
            let Some(shared) = shared.upgrade() else {
                return;
            };
            shared.look(None);
        }
    });
}
