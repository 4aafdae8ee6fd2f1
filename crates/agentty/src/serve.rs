//! `agentty serve`: the start-up in its order, then serving (MCP over HTTP, or over stdio with
//! the web view beside it), then the end.
//!
//! The order is what this module keeps. The watchdog's fork and the entry into the mount and
//! PID namespaces need a process of one thread, so they come before anything starts a thread:
//! the dead-session sweep and the async runtime come after them. The token file is read before
//! the namespace (which covers it where the kernel has no Landlock to keep it from reads); the
//! capabilities go last, from this
//! thread and from every thread of the runtime. [`serve`] takes the steps in turn, and the
//! comments there say why each stands where it does.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use agentty_core::watchdog::{Watchdog, WatchdogError};
use agentty_core::{SPILL_RETENTION, prune, remove_dead_servers_dirs};
use agentty_sandbox::Mode;
use agentty_server::{Agentty, Settings};

use crate::config::{self, Flags, HttpFlags};
use crate::http::{self, HttpOptions, Tokens};
use crate::{shutdown, stdio};

/// Said on stderr when `serve` is started by hand in a terminal, where it would look hung.
const TERMINAL_BANNER: &str = "agentty: an MCP server, waiting for an MCP client on stdin \
(JSON-RPC lines); connect it from an MCP host, or try `agentty doctor` to check this machine. \
Ctrl+C ends it.";

/// Serves until the client, or a signal, ends it; by then every session's jobs are stopped,
/// and what they left goes before this returns.
pub fn serve(flags: &Flags, http_flags: &HttpFlags) -> Result<()> {
    keep_inherited_fds_from_commands();
    let mut settings = config::resolve(flags)?;
    let http_options = http_flags.options(flags, &settings)?;
    // Read (or made) now, so the file can be hidden from confined commands below.
    let tokens = http_options.as_ref().map(Tokens::load).transpose()?;
    hide_token_file(&mut settings, tokens.as_ref());
    let serving = Serving::new(http_options, tokens);
    if serving.is_stdio() && std::io::IsTerminal::is_terminal(&std::io::stdin()) {
        eprintln!("{TERMINAL_BANNER}");
    }
    // Forked while this process still has one thread (before the runtime): this process stays
    // behind as the watchdog, and only the server (the child) returns here. However the server
    // ends, the watchdog stops every process its commands left.
    let session = agentty_core::watchdog::session_name();
    let runs = Runs::open(&settings, &session);
    let watchdog = start_watchdog(&session, &runs);
    let confining = settings.sandbox_enabled && settings.mode != Mode::Auto;
    // Also while one thread: a mount namespace is entered by the thread, and inherited only by
    // what it starts afterwards.
    if confining {
        hide_other_terminals();
    }
    // Also while one thread, and after the terminals (its mount namespace copies the server's):
    // confined commands run in a PID namespace whose init dies with this server, and, where
    // caches are writable, see the package sources already extracted as read-only.
    if confining {
        // What confined commands may write, judged once for every check below.
        let plan = config::plan_for(settings.mode, &settings.workspace, &settings.add_dirs);
        let entered = enter_namespace(
            &settings,
            &plan,
            runs.recorded(),
            serving.tokens(),
            serving.mcp_callers(),
            !serving.is_stdio(),
        );
        settings.start_up_files_writable =
            start_up_files_writable(&settings, &plan, entered == Some(true));
        if let Some(tokens) = serving.tokens()
            && entered.is_none()
        {
            let exposed = if tokens.callers() > 1 {
                Some(config::TokenUse::SeveralCallers)
            } else if serving.view_control() {
                Some(config::TokenUse::ViewControl)
            } else {
                None
            };
            if let Some(exposed) = exposed {
                config::refuse_readable_tokens(&plan, tokens.file_to_hide(), exposed)?;
                let pages = settings.state_dir().join(crate::http::login::LEAD_PAGES);
                config::refuse_readable_login_pages(&plan, &pages, exposed)?;
            }
        }
    }
    // The session's name names this server when the watchdog could not start: its heartbeat
    // is then this server's, on a thread (the watchdog beats otherwise).
    if watchdog.is_err() {
        agentty_core::runs::heartbeat_on_thread();
    }
    // What a session killed together with its watchdog left running (`pkill -9 agentty`) is
    // stopped now, off the start-up path.
    sweep_dead_sessions(runs.dir);
    // In a confining mode, every thread that may start a command gives up, once, the
    // capabilities a confined command must not have (see agentty_sandbox's caps.rs): what it
    // starts cannot gain them back, and each confined spawn is spared dropping them itself.
    drop_capabilities(confining);
    let runtime = runtime(confining)?;
    let served = runtime.block_on(serve_until_ended(settings, session, serving));
    // What the jobs' stops could not attribute (an escapee that wiped its environment) is
    // still a child of this subreaper: stop it before leaving, in case the watchdog is gone.
    // Every process of the session's PID namespace goes with its init (the jobs' stops above
    // already gave their trees a grace). Also when serving failed (an MCP initialization that
    // failed): nothing may outlive the server on any path.
    stop_what_is_left();
    served
}

/// What `serve` serves, from its flags.
enum Serving {
    /// MCP over HTTP, the web view at its `/` (`--http`).
    Http(HttpOptions, Tokens),
    /// MCP over stdio, with the web view beside it when `--view` asks for it.
    Stdio(Option<(HttpOptions, Tokens)>),
}

impl Serving {
    fn new(options: Option<HttpOptions>, tokens: Option<Tokens>) -> Self {
        match (options, tokens) {
            (Some(options), Some(tokens)) if options.mcp => Serving::Http(options, tokens),
            (Some(options), Some(tokens)) => Serving::Stdio(Some((options, tokens))),
            _ => Serving::Stdio(None),
        }
    }

    fn is_stdio(&self) -> bool {
        matches!(self, Serving::Stdio(_))
    }

    /// How many callers MCP is served to: each token's over HTTP, the one client over stdio.
    fn mcp_callers(&self) -> usize {
        match self {
            Serving::Http(_, tokens) => tokens.callers(),
            Serving::Stdio(_) => 1,
        }
    }

    /// Whether the web view may type into shells and stop jobs (`--view-control`).
    fn view_control(&self) -> bool {
        match self {
            Serving::Http(options, _) | Serving::Stdio(Some((options, _))) => options.view_control,
            Serving::Stdio(None) => false,
        }
    }

    /// The listener's tokens, when there is a listener.
    fn tokens(&self) -> Option<&Tokens> {
        match self {
            Serving::Http(_, tokens) | Serving::Stdio(Some((_, tokens))) => Some(tokens),
            Serving::Stdio(None) => None,
        }
    }
}

/// Where this session writes down the runs the next start may stop.
struct Runs {
    dir: PathBuf,
    /// Whether the session's record could be opened there.
    recorded: bool,
}

impl Runs {
    fn open(settings: &Settings, session: &str) -> Self {
        // The runs the next start may stop are written down beside the spill directory.
        let dir = agentty_core::runs::dir_in(
            settings
                .spill_root
                .parent()
                .unwrap_or(settings.spill_root.as_path()),
        );
        let recorded = agentty_core::runs::open(&dir, session)
            .inspect_err(|e| tracing::warn!("cannot record runs in {}: {e}", dir.display()))
            .is_ok();
        Runs { dir, recorded }
    }

    /// The directory, when the session's runs are recorded in it.
    fn recorded(&self) -> Option<&Path> {
        self.recorded.then_some(&*self.dir)
    }
}

/// Marks every file descriptor this process was started with, beyond stdio, close-on-exec: a
/// host (or a shell, a test harness) that leaks one to its MCP server would otherwise hand it to
/// every command, confined or not, past every path rule (a read end of the host's own pipe, a
/// file it had open). What the server opens itself is close-on-exec already.
fn keep_inherited_fds_from_commands() {
    // SAFETY: close_range with CLOSE_RANGE_CLOEXEC closes nothing; it sets a flag on this
    // process's own fds.
    unsafe {
        libc::syscall(
            libc::SYS_close_range,
            3u32,
            u32::MAX,
            libc::CLOSE_RANGE_CLOEXEC,
        );
    }
}

/// Keeps the token file from confined commands' reads where the state dir, hidden already,
/// does not hold it (`--token-file`).
fn hide_token_file(settings: &mut Settings, tokens: Option<&Tokens>) {
    let Some(file) = tokens.and_then(Tokens::file_to_hide) else {
        return;
    };
    let state = settings
        .spill_root
        .parent()
        .unwrap_or(settings.spill_root.as_path());
    if !file.starts_with(state) {
        settings
            .unreadable
            .hide(file, agentty_sandbox::HiddenWhy::Token);
    }
}

/// Forks the watchdog (see `agentty_core::watchdog`); only the server returns. A watchdog
/// that cannot start is said, and the server runs without it.
fn start_watchdog(session: &str, runs: &Runs) -> Result<Watchdog, WatchdogError> {
    agentty_core::watchdog::start(&format!("{session}-"), runs.recorded())
        .inspect_err(|e| tracing::warn!("{e}; jobs may outlive a killed server"))
}

/// Covers the user's other terminals from confined commands, where the kernel lets it.
fn hide_other_terminals() {
    if let Err(why) = agentty_sandbox::hide_other_terminals() {
        tracing::info!(
            "confined commands can write to the user's other terminals (a /dev/pts of the \
             session's own: {why}); `agentty doctor` says whether each shell's terminal is its own"
        );
    }
}

/// Enters the PID namespace of confined commands (in network `allowlist` and `ask`, their
/// network namespace too), the package sources extracted already and the paths that run code
/// later mounted read-only (in `default` mode), and the run records and the token file covered;
/// says so when several MCP callers' processes cannot be kept apart.
/// Whether zsh's start-up files would lie where confined commands may write: the kernel has
/// no Landlock, or the plan lets them write the shells' root (the workspace holds the state
/// dir, the warned setup), and no read-only mount of the session's covers it (`read_only_held`:
/// the session's mount namespace made every protected path read-only). zsh is refused then
/// (review 39 M1): a job could add to the file a later zsh reads, and forge its results.
fn start_up_files_writable(
    settings: &Settings,
    plan: &agentty_sandbox::Plan,
    read_only_held: bool,
) -> bool {
    let root = settings.shells_root();
    let covered = read_only_held
        && settings
            .protected
            .read_only
            .iter()
            .any(|path| root.starts_with(path));
    let refused = config::landlock_cannot_hide(plan, &root) && !covered;
    if refused
        && agentty_core::pty::integration::Flavor::of(&settings.shell)
            == agentty_core::pty::integration::Flavor::Zsh
    {
        tracing::warn!(
            "zsh shells are refused: confined commands may write the state dir that holds \
             their start-up files, and no mount namespace keeps it read-only (use --shell \
             /bin/bash, or a --state-dir outside what they may write)"
        );
    }
    refused
}

/// Enters the session's namespaces: `None` where the kernel refused them, else whether every
/// protected path is read-only in them (the token file and the records of runs are covered).
fn enter_namespace(
    settings: &Settings,
    plan: &agentty_sandbox::Plan,
    recorded_runs: Option<&Path>,
    tokens: Option<&Tokens>,
    mcp_callers: usize,
    http: bool,
) -> Option<bool> {
    let sources = if settings.mode == Mode::Default {
        let home = std::env::var_os("HOME").map(PathBuf::from);
        agentty_sandbox::extracted_sources(home.as_deref(), |name| std::env::var_os(name))
    } else {
        agentty_sandbox::Sealed::default()
    };
    let protected = &settings.protected;
    // The caches' folders and the protected paths' parents, parents first, each once.
    let pinned: std::collections::BTreeSet<PathBuf> = sources
        .pinned
        .into_iter()
        .chain(protected.pinned.iter().cloned())
        .collect();
    let readable = |path: &PathBuf| config::landlock_cannot_hide(plan, path);
    let lead_pages = crate::http::login::lead_pages_dir(settings.state_dir())
        .inspect_err(|e| tracing::warn!("the view's login pages cannot be covered: {e:#}"))
        .ok();
    let mounts = agentty_core::namespace::Mounts {
        read_only: sources.paths,
        pinned: pinned.into_iter().collect(),
        protected: protected.read_only.clone(),
        // The records of runs (their names too: reading is what Landlock refuses). Where
        // Landlock cannot keep reads from them: the HTTP token, which a confined command could
        // call this server with, and the pages that lead to the view, whose login codes would
        // let one in (review 41 H1). Elsewhere Landlock's read rules refuse them, and said so
        // (`unreadable.rs`), where a cover would read as empty.
        hidden: recorded_runs
            .map(Path::to_path_buf)
            .into_iter()
            .chain(tokens.and_then(Tokens::file_to_hide).filter(readable))
            .chain(lead_pages.filter(readable))
            .collect(),
    };
    // In `allowlist` and `ask`, a network namespace with nothing in it but `lo`: the server's
    // supervisor makes every connection and listening socket its commands get.
    let network = settings.network.filtered();
    let processes = agentty_core::namespace::ProcessBounds::new(settings.max_processes, http);
    match agentty_core::namespace::start(&mounts, network, processes) {
        Ok(started) => {
            tracing::info!(
                sealed = started.sealed,
                truncated = sources.truncated,
                protected = started.protected,
                of = mounts.protected.len(),
                "extracted package sources, and paths that run code later, read-only to \
                 confined commands"
            );
            match started.processes {
                Some(bounds) => tracing::info!(
                    all = bounds.session,
                    per_caller = bounds.caller,
                    "confined commands' processes and threads bounded (pid_max of their PID \
                     namespaces)"
                ),
                None if agentty_core::namespace::pid_max_per_namespace() => tracing::warn!(
                    "confined commands' processes and threads are not bounded: the kernel \
                     refused the session's pid_max (a read-only /proc/sys?)"
                ),
                None => tracing::info!(
                    "confined commands' processes and threads are not bounded: the kernel keeps \
                     pid_max per PID namespace from Linux 6.14"
                ),
            }
            if network && !started.network {
                tracing::warn!(
                    "confined commands share the server's network namespace: the kernel refused \
                     one of their own (the seccomp and Landlock layer holds the network alone)"
                );
            }
            Some(started.protected == mounts.protected.len())
        }
        Err(why) => {
            tracing::info!("confined commands run in the server's PID namespace: {why}");
            if mcp_callers > 1 {
                tracing::warn!(
                    "callers are not apart in processes: each caller's ps and /proc/<pid>/cmdline \
                     show the others' commands (a PID namespace per caller {why})"
                );
            }
            None
        }
    }
}

/// Stops, on a thread of its own, what sessions killed with their watchdogs left running.
fn sweep_dead_sessions(runs_dir: PathBuf) {
    let _ = std::thread::Builder::new()
        .name("agentty-sweep".into())
        .spawn(move || {
            let (found, killed) = agentty_core::sweep::dead_sessions(&runs_dir);
            if found > 0 {
                tracing::warn!(
                    found,
                    killed,
                    "stopped processes left by an agentty session that was killed with its watchdog"
                );
            }
        });
}

/// Gives up, on the calling thread, the capabilities a confined command must not have, when
/// commands are confined.
fn drop_capabilities(confining: bool) {
    #[cfg(target_os = "linux")]
    if confining {
        let _ = agentty_sandbox::drop_bounding_set();
    }
}

/// The async runtime, each of its threads without the capabilities (see [`serve`]).
fn runtime(confining: bool) -> Result<tokio::runtime::Runtime> {
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    if std::env::var_os("TOKIO_WORKER_THREADS").is_none() {
        runtime.worker_threads(request_workers());
    }
    runtime
        .on_thread_start(move || drop_capabilities(confining))
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

/// Worker threads of the runtime that answers requests: a quarter of the CPUs, at least one.
///
/// A request crosses several tasks (connection, rmcp's session and service, the call) and
/// each hop to a task on another worker wakes that worker: on 2 CPUs one worker answered a
/// trivial HTTP call in 0.93x the time of two, and a ping in 0.55x, with the same throughput
/// at 16 sessions. The server's own part of a call is about a quarter of its CPU (the rest is
/// the command's), so a quarter of the CPUs keeps up when every CPU runs commands. Background
/// jobs and shells have a thread of their own (agentty_core's drivers); `TOKIO_WORKER_THREADS`
/// overrides this.
fn request_workers() -> usize {
    std::thread::available_parallelism().map_or(1, |n| (n.get() / 4).max(1))
}

/// On the runtime: the server is made, then serves until it ends; every session's jobs are
/// stopped by then.
async fn serve_until_ended(settings: Settings, session: String, serving: Serving) -> Result<()> {
    agentty_core::init().map_err(anyhow::Error::msg)?;
    let pruned = prune(&settings.spill_root, SPILL_RETENTION);
    if pruned > 0 {
        tracing::info!(pruned, "removed old spill directories");
    }
    let left = remove_dead_servers_dirs(&settings.shells_root());
    if left > 0 {
        tracing::info!(
            left,
            "removed shell directories of servers that were killed"
        );
    }
    if matches!(serving, Serving::Http(..) | Serving::Stdio(Some(_))) {
        agentty_core::view_tap::serve_view();
    }
    let agentty = Agentty::new(settings.clone(), session.clone())?;
    match serving {
        Serving::Http(options, tokens) => {
            tracing::info!(workspace = %settings.workspace.display(), %session, "serving over HTTP");
            serve_http(agentty, options, tokens).await
        }
        Serving::Stdio(view) => {
            tracing::info!(workspace = %settings.workspace.display(), %session, "serving on stdio");
            stdio::serve(agentty, view).await
        }
    }
}

/// MCP over HTTP until a signal, which starts the drain (`agentty_server::drain`); then every
/// session ends.
async fn serve_http(agentty: Agentty, options: HttpOptions, tokens: Tokens) -> Result<()> {
    let grace = options.drain_grace;
    let ended = http::serve(agentty.clone(), options, tokens, async {
        let signal = shutdown::signal().await;
        if !shutdown::drains(signal) {
            // What is stopped now is lost with the server, as the next start says.
            agentty.kept().freeze();
        }
        shutdown::shutting_down(signal);
        if shutdown::drains(signal) {
            drain(&agentty, grace).await;
        }
    })
    .await;
    // Every client session's jobs, and the sessionless callers', are stopped now (the drain
    // stopped them already, unless a second signal cut it short).
    agentty.end_all_sessions().await;
    ended
}

/// The drain after a signal: `/readyz` turns 503 at once, calls in flight get `grace`, then
/// every job and shell is stopped, saying why. A second signal ends it at once.
async fn drain(agentty: &Agentty, grace: std::time::Duration) {
    agentty.begin_drain();
    tracing::info!(
        grace_ms = grace.as_millis(),
        "draining: not ready, no new session; calls in flight may answer"
    );
    tokio::select! {
        drained = agentty.drain(grace) => tracing::info!(
            settled = drained.settled,
            stopped = drained.stopped,
            cancelled = drained.cancelled,
            "drained"
        ),
        signal = shutdown::signal() => {
            tracing::warn!("received {signal} while draining: stopping now");
        }
    }
}

/// Ends the PID namespace (its init, and every process in it) and the terminal maker, then
/// stops this subreaper's children that are left, each given the watchdog's grace.
fn stop_what_is_left() {
    agentty_core::namespace::end();
    #[cfg(target_os = "linux")]
    agentty_core::spawn::end_terminal_maker();
    let grace = std::time::Duration::from_millis(agentty_core::watchdog::WATCHDOG_GRACE_MS);
    let left = agentty_core::watchdog::stop_children(false, grace);
    if left > 0 {
        tracing::warn!(left, "stopped processes that outlived their commands");
    }
}
