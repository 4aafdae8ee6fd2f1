//! The `agentty` binary: command line, configuration, logging, and the stdio server.

mod config;
mod doctor;
mod http;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use rmcp::transport::IntoTransport;
use rmcp::{RoleServer, ServiceExt};
use tracing_subscriber::EnvFilter;

use agentty_core::{SPILL_RETENTION, prune};
use agentty_server::Agentty;
use agentty_server::transport::{LineFilter, LookAhead, Refused};

/// An MCP server that gives AI coding agents a real terminal.
#[derive(Parser)]
#[command(name = "agentty", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve MCP over stdio (the client's connection is one session), or over HTTP (--http)
    Serve {
        #[command(flatten)]
        flags: config::Flags,
        #[command(flatten)]
        http: config::HttpFlags,
    },
    /// Print the measured state: Landlock ABI, a denied-write probe, PTYs, shell, config in use
    Doctor {
        #[command(flatten)]
        flags: config::Flags,
    },
    /// Show how the guard reads a command and whether it would block it (runs nothing).
    /// One argument is a shell command line; several are an argv.
    /// It is judged as a `terminal` call whose `workdir` is this directory would be, with this
    /// process's environment where a call has the server's plus its `env`: a variable unset
    /// here is empty (`rm -rf "$X/"*` is `rm -rf /*`), so run it with the server's environment
    /// to see the verdict a call gets.
    /// Exits 1 when blocked.
    Guard {
        #[command(flatten)]
        flags: config::GuardFlags,
        /// List the rule names and reasons instead
        #[arg(long)]
        rules: bool,
        /// The command line (or argv) to judge
        #[arg(last = true)]
        command: Vec<String>,
    },
    /// Parse a command's output (read on stdin) as `terminal` with `parse: true` would, and print
    /// the typed result as JSON. One argument is a shell command line; several are an argv.
    /// Exits 1, saying why, when the command or its output is not one agentty parses.
    Parse {
        /// The command's stderr, from this file
        #[arg(long, value_name = "FILE")]
        stderr: Option<std::path::PathBuf>,
        /// The command's exit code
        #[arg(long, value_name = "N", allow_negative_numbers = true)]
        exit_code: Option<i32>,
        /// Print the JSON Schema of this type instead (e.g. DirectoryListing), or every type's
        /// name with `--schema list`
        #[arg(long, value_name = "TYPE")]
        schema: Option<String>,
        /// The command line (or argv) that produced the output
        #[arg(last = true)]
        command: Vec<String>,
    },
}

/// mimalloc, not glibc's malloc: a call's many small allocations move between the tokio
/// workers (a request parsed on one, answered on another), where glibc's per-thread arenas
/// spent ~14% of the workers' time per trivial call in malloc/free and their consolidation
/// (perf, 16 sessions). With mimalloc a trivial HTTP call took 0.94x the time (A/B in one run
/// of `cargo bench -p agentty --bench http`). Spawned children never allocate between clone
/// and exec (spawn/exec.rs), so the allocator does not reach them.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    // stdout belongs to the protocol: logs go to stderr only.
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .init();
    let result = match cli.command {
        Command::Serve { flags, http } => {
            serve(&flags, &http).map(|()| std::process::ExitCode::SUCCESS)
        }
        Command::Doctor { flags } => doctor::run(&flags)
            .and_then(|report| write_stdout(&report))
            .map(|()| std::process::ExitCode::SUCCESS),
        Command::Guard {
            flags,
            rules,
            command,
        } => guard(&flags.into(), rules, &command),
        Command::Parse {
            stderr,
            exit_code,
            schema,
            command,
        } => parse(stderr.as_deref(), exit_code, schema.as_deref(), &command),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("agentty: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// Said on stderr when `serve` is started by hand in a terminal, where it would look hung.
const TERMINAL_BANNER: &str = "agentty: an MCP server, waiting for an MCP client on stdin \
(JSON-RPC lines); connect it from an MCP host, or try `agentty doctor` to check this machine. \
Ctrl+C ends it.";

fn serve(flags: &config::Flags, http_flags: &config::HttpFlags) -> Result<()> {
    let settings = config::resolve(flags)?;
    let http_options = http_flags.options(flags, &settings)?;
    // Read (or made) now, so the file can be hidden from confined commands below.
    let tokens = http_options.as_ref().map(http::Tokens::load).transpose()?;
    let over_stdio = http_options.as_ref().is_none_or(|o| !o.mcp);
    if over_stdio && std::io::IsTerminal::is_terminal(&std::io::stdin()) {
        eprintln!("{TERMINAL_BANNER}");
    }
    // Forked while this process still has one thread (before the runtime): this process stays
    // behind as the watchdog, and only the server (the child) returns here. However the server
    // ends, the watchdog stops every process its commands left.
    let session = agentty_core::watchdog::session_name();
    // The runs the next start may stop are written down beside the spill directory.
    let runs_dir = agentty_core::runs::dir_in(
        settings
            .spill_root
            .parent()
            .unwrap_or(settings.spill_root.as_path()),
    );
    let recorded = agentty_core::runs::open(&runs_dir, &session)
        .inspect_err(|e| tracing::warn!("cannot record runs in {}: {e}", runs_dir.display()))
        .is_ok();
    let _watchdog =
        agentty_core::watchdog::start(&format!("{session}-"), recorded.then_some(&*runs_dir))
            .inspect_err(|e| tracing::warn!("{e}; jobs may outlive a killed server"));
    // Also while one thread: a mount namespace is entered by the thread, and inherited only by
    // what it starts afterwards.
    if settings.sandbox_enabled
        && settings.mode != agentty_sandbox::Mode::Auto
        && let Err(why) = agentty_sandbox::hide_other_terminals()
    {
        tracing::info!("commands share the user's terminals: {why}");
    }
    // Also while one thread, and after the terminals (its mount namespace copies the server's):
    // confined commands run in a PID namespace whose init dies with this server, and, where
    // caches are writable, see the package sources already extracted as read-only.
    if settings.sandbox_enabled && settings.mode != agentty_sandbox::Mode::Auto {
        let sources = if settings.mode == agentty_sandbox::Mode::Default {
            let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
            agentty_sandbox::extracted_sources(home.as_deref(), |name| std::env::var_os(name))
        } else {
            agentty_sandbox::Sealed::default()
        };
        let mounts = agentty_core::namespace::Mounts {
            read_only: sources.paths,
            pinned: sources.pinned,
            // The records of runs, and the HTTP token: a confined command that read it could
            // call this server as its caller does.
            hidden: recorded
                .then(|| runs_dir.clone())
                .into_iter()
                .chain(tokens.as_ref().and_then(http::Tokens::file_to_hide))
                .collect(),
        };
        match agentty_core::namespace::start(&mounts) {
            Ok(sealed) => tracing::info!(
                sealed,
                truncated = sources.truncated,
                "extracted package sources read-only to confined commands"
            ),
            Err(why) => {
                tracing::info!("confined commands run in the server's PID namespace: {why}");
            }
        }
    }
    // What a session killed together with its watchdog left running (`pkill -9 agentty`) is
    // stopped now, off the start-up path.
    let sweep_runs = runs_dir;
    let _ = std::thread::Builder::new()
        .name("agentty-sweep".into())
        .spawn(move || {
            let (found, killed) = agentty_core::watchdog::sweep_dead_sessions(&sweep_runs);
            if found > 0 {
                tracing::warn!(
                    found,
                    killed,
                    "stopped processes left by an agentty session that was killed with its watchdog"
                );
            }
        });
    // In a confining mode, every thread that may start a command gives up, once, the
    // capabilities a confined command must not have (see agentty_sandbox's caps.rs): what it
    // starts cannot gain them back, and each confined spawn is spared dropping them itself.
    let confining = settings.sandbox_enabled && settings.mode != agentty_sandbox::Mode::Auto;
    let drop_caps = move || {
        #[cfg(target_os = "linux")]
        if confining {
            let _ = agentty_sandbox::drop_bounding_set();
        }
    };
    drop_caps();
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    if std::env::var_os("TOKIO_WORKER_THREADS").is_none() {
        runtime.worker_threads(request_workers());
    }
    let runtime = runtime
        .on_thread_start(drop_caps)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async move {
        agentty_core::init().map_err(anyhow::Error::msg)?;
        let pruned = prune(&settings.spill_root, SPILL_RETENTION);
        if pruned > 0 {
            tracing::info!(pruned, "removed old spill directories");
        }
        let agentty = Agentty::new(settings.clone(), session.clone())?;
        let (http_options, view_only) = match (http_options, tokens) {
            (Some(options), Some(tokens)) if options.mcp => (Some((options, tokens)), None),
            (Some(options), Some(tokens)) => (None, Some((options, tokens))),
            _ => (None, None),
        };
        if let Some((options, tokens)) = http_options {
            tracing::info!(workspace = %settings.workspace.display(), %session, "serving over HTTP");
            let ended = http::serve(agentty.clone(), options, tokens, async {
                let signal = shutdown_signal().await;
                tracing::info!("received {signal}, shutting down");
                if signal == WATCHDOG_DIED {
                    tokio::task::block_in_place(|| {
                        agentty_core::watchdog::stop_children(false, std::time::Duration::ZERO)
                    });
                }
            })
            .await;
            // Every client session's jobs, and the sessionless callers', are stopped now.
            agentty.end_all_sessions().await;
            return ended;
        }
        tracing::info!(workspace = %settings.workspace.display(), %session, "serving on stdio");
        // `--view`: the web view beside stdio, until the stdio session ends.
        let view_done = tokio_util::sync::CancellationToken::new();
        if let Some((options, tokens)) = view_only {
            let (agentty, done) = (agentty.clone(), view_done.clone());
            tokio::spawn(async move {
                let served = http::serve(agentty, options, tokens, done.cancelled_owned()).await;
                if let Err(e) = served {
                    tracing::error!("the web view is not served: {e:#}");
                }
            });
        }
        // Decodes what is already readable ahead, so a request cancelled in the same breath
        // starts nothing.
        // Lines that are not JSON are answered (-32700), not dropped; see server::transport.
        let (stdin, stdout) = rmcp::transport::stdio_pipes();
        let refused = Refused::default();
        let stdio = IntoTransport::<RoleServer, _, _>::into_transport((
            LineFilter::new(stdin, refused.clone()),
            stdout,
        ));
        let transport = LookAhead::new(stdio, agentty.early_cancels(), refused);
        let input_closed = transport.input_closed();
        let service = agentty
            .clone()
            .serve(transport)
            .await
            .context("MCP initialization failed")?;
        let cancel = service.cancellation_token();
        let ended = tokio::select! {
            quit = service.waiting() => quit.map(drop).context("server task failed"),
            // The client closed stdin: the session is over, even if stdout is still full.
            () = input_closed => {
                tracing::info!("input ended, shutting down");
                cancel.cancel();
                Ok(())
            }
            signal = shutdown_signal() => {
                tracing::info!("received {signal}, shutting down");
                if signal == WATCHDOG_DIED {
                    // Killed hard, and nothing is left to catch what this server leaves: every
                    // child goes now, with no grace, before anything else can end this process.
                    tokio::task::block_in_place(|| {
                        agentty_core::watchdog::stop_children(false, std::time::Duration::ZERO)
                    });
                }
                cancel.cancel();
                Ok(())
            }
        };
        // The stdio connection is the session: whatever ended it, no job outlives it.
        view_done.cancel();
        agentty.end_session().await;
        ended
    })?;
    // What the jobs' stops could not attribute (an escapee that wiped its environment) is
    // still a child of this subreaper: stop it before leaving, in case the watchdog is gone.
    // Every process of the session's PID namespace goes with its init (the jobs' stops above
    // already gave their trees a grace).
    agentty_core::namespace::end();
    let grace = std::time::Duration::from_millis(agentty_core::watchdog::WATCHDOG_GRACE_MS);
    let left = agentty_core::watchdog::stop_children(false, grace);
    if left > 0 {
        tracing::warn!(left, "stopped processes that outlived their commands");
    }
    Ok(())
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

fn guard(
    flags: &config::Flags,
    list_rules: bool,
    command: &[String],
) -> Result<std::process::ExitCode> {
    let cfg = config::guard_config(flags)?;
    if list_rules {
        let mut list = String::new();
        for rule in agentty_guard::RULES {
            let state = if cfg.allows(rule.name) {
                " (allowed by config)"
            } else {
                ""
            };
            list.push_str(&format!("{}{state}: {}\n", rule.name, rule.reason));
        }
        write_stdout(&list)?;
        return Ok(std::process::ExitCode::SUCCESS);
    }
    // Judged as a call running here would be: this process's environment stands for the
    // server's, so a variable unset here is empty, as it is for a call.
    let place = std::env::current_dir()
        .ok()
        .map(|cwd| agentty_guard::Place::at(&cwd).with_env(Vec::new()));
    let (report, verdict) = match command {
        [] => anyhow::bail!("usage: agentty guard -- COMMAND"),
        [line] => agentty_guard::report(line, &cfg, place),
        argv => agentty_guard::report_argv(argv, &cfg, place),
    };
    write_stdout(&report)?;
    Ok(if verdict.is_blocked() {
        std::process::ExitCode::from(1)
    } else {
        std::process::ExitCode::SUCCESS
    })
}

fn parse(
    stderr: Option<&std::path::Path>,
    exit_code: Option<i32>,
    schema: Option<&str>,
    command: &[String],
) -> Result<std::process::ExitCode> {
    use std::io::Read;
    let text = if let Some(name) = schema {
        if name == "list" {
            agentty_parse::TYPES
                .iter()
                .map(|t| format!("{}: {}\n", t.name, t.description))
                .collect()
        } else {
            let schema = agentty_parse::schema(name).ok_or_else(|| {
                anyhow::anyhow!("no type named {name}; `--schema list` lists them")
            })?;
            format!("{}\n", serde_json::to_string_pretty(&schema)?)
        }
    } else {
        if command.is_empty() {
            anyhow::bail!(
                "usage: agentty parse [--stderr FILE] [--exit-code N] -- COMMAND < OUTPUT"
            );
        }
        let mut stdout = Vec::new();
        std::io::stdin().read_to_end(&mut stdout)?;
        let stderr = match stderr {
            Some(path) => std::fs::read(path)
                .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?,
            None => Vec::new(),
        };
        match agentty_server::terminal::parsed::offline(command, &stdout, &stderr, exit_code) {
            Ok(parsed) => format!("{}\n", serde_json::to_string(&parsed)?),
            Err(reason) => {
                eprintln!("agentty: not parsed: {reason}");
                return Ok(std::process::ExitCode::FAILURE);
            }
        }
    };
    write_stdout(&text).map(|()| std::process::ExitCode::SUCCESS)
}

/// Writes a report to stdout. Written, not printed: a reader that stops early (`| head`)
/// closes the pipe, which is no error of ours (print! would panic on it).
fn write_stdout(text: &str) -> Result<()> {
    match std::io::Write::write_all(&mut std::io::stdout().lock(), text.as_bytes()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}

/// How [`shutdown_signal`] names the death of the watchdog.
const WATCHDOG_DIED: &str = "the watchdog's death";

async fn shutdown_signal() -> &'static str {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int), Ok(mut hup), Ok(mut orphaned)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
        signal(SignalKind::hangup()),
        signal(SignalKind::from_raw(agentty_core::watchdog::WATCHDOG_DIED)),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => "SIGTERM",
        _ = int.recv() => "SIGINT",
        _ = hup.recv() => "SIGHUP",
        _ = orphaned.recv() => WATCHDOG_DIED,
    }
}
