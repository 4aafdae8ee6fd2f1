//! The `agentty` binary's command line: its subcommands and flags, logging, and the small
//! commands (`guard`, `parse`) that need no more than a function each. `serve` starts up in
//! [`serve`], `doctor` measures in [`doctor`].

mod config;
mod doctor;
mod http;
mod proxy_connect;
mod serve;
mod shutdown;
mod stdio;

use anyhow::Result;
use clap::{Parser, Subcommand};
use tracing_subscriber::EnvFilter;

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
        /// Boxed: the HTTP flags would make every other command as large.
        #[command(flatten)]
        http: Box<config::HttpFlags>,
    },
    /// Print the measured state: Landlock ABI, a denied-write probe, PTYs, shell, config in use
    Doctor {
        #[command(flatten)]
        flags: config::Flags,
    },
    /// Open the web view in the browser, logged in as a caller of the token file: a one-time
    /// login code goes in the address, never the token, and the browser is handed a page in
    /// the state dir that leads there, never the address itself
    View {
        /// The view's address: `serve --view`'s (the default), or a `serve --http` server's
        #[arg(long, default_value = "http://127.0.0.1:7338")]
        url: String,
        /// The server's state dir, which confined commands cannot read: the page that leads
        /// the browser to the view goes there (default: as `serve`'s without --state-dir, the
        /// config file's `state_dir` or the default)
        #[arg(long, value_name = "DIR")]
        state_dir: Option<std::path::PathBuf>,
        /// The token file (default: `token` in the state dir)
        #[arg(long, value_name = "FILE")]
        token_file: Option<std::path::PathBuf>,
        /// The caller to log in as, by its NAME in the token file (default: the first)
        #[arg(long, value_name = "NAME")]
        caller: Option<String>,
        /// Print the address instead of opening a browser
        #[arg(long)]
        print: bool,
    },
    /// Connect to HOST PORT through agentty's proxy and relay stdin and stdout: the
    /// ProxyCommand of ssh inside the sandbox (network allowlist and ask), e.g.
    /// ssh -o ProxyCommand='agentty proxy-connect %h %p' git@github.com
    ProxyConnect { host: String, port: u16 },
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
///
/// Built with `no_thp`: mimalloc otherwise asks for transparent huge pages on its 1 GiB arena
/// (`madvise(MADV_HUGEPAGE)`), so each 2 MiB of it touched at all became resident whole. That
/// was 6 MiB of huge pages in each of the idle server, the watchdog and the session init (a fork
/// of the server's), and 47 MiB of the server's 68 MiB with 32 finished jobs kept (`cargo bench
/// -p agentty --bench memory`). The feature only drops that `madvise`: the THP setting of the
/// process, which the commands it starts inherit, is left alone.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// What is logged without `RUST_LOG`: agentty's own lines from INFO up (where it serves, each
/// job a session's end or the user stopped, one line each), its dependencies' from WARN up.
const LOG_DEFAULT: &str = "warn,agentty=info,agentty_server=info,agentty_core=info,\
agentty_sandbox=info";

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    // stdout belongs to the protocol: logs go to stderr only.
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(LOG_DEFAULT)),
        )
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .init();
    let result = match cli.command {
        Command::Serve { flags, http } => {
            serve::serve(&flags, &http).map(|()| std::process::ExitCode::SUCCESS)
        }
        Command::Doctor { flags } => doctor::run(&flags)
            .and_then(|report| write_stdout(&report))
            .map(|()| std::process::ExitCode::SUCCESS),
        Command::View {
            url,
            state_dir,
            token_file,
            caller,
            print,
        } => view(&url, state_dir, token_file, caller.as_deref(), print)
            .map(|()| std::process::ExitCode::SUCCESS),
        Command::ProxyConnect { host, port } => proxy_connect::run(&host, port),
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

/// `agentty view`: the page's address with a one-time login code, opened in the user's browser
/// (`$BROWSER`, else `xdg-open`) through a page of the state dir that leads there
/// ([`http::login::lead_page`]), or printed.
fn view(
    url: &str,
    state_dir: Option<std::path::PathBuf>,
    token_file: Option<std::path::PathBuf>,
    caller: Option<&str>,
    print: bool,
) -> Result<()> {
    let state_dir = match state_dir {
        Some(dir) => dir,
        None => config::state_dir_in_effect()?,
    };
    let token_file = token_file.unwrap_or_else(|| state_dir.join("token"));
    let address = http::login::address(url, &token_file, caller)?;
    if !print {
        let opener = std::env::var("BROWSER").unwrap_or_else(|_| "xdg-open".into());
        let opened = http::login::lead_page(&state_dir, &address)
            .map_err(|e| format!("no page to lead there: {e:#}"))
            .and_then(|page| {
                let target = format!("file://{}", page.display());
                open_with(&opener, &target).map(|()| target)
            });
        match opened {
            Ok(target) => {
                eprintln!(
                    "agentty: opened the view through {target} (readable by your user only; the \
                     login code it leads to works once, for a minute). A browser that cannot \
                     read it (a snap's cannot read hidden directories): `agentty view --print` \
                     prints the address to paste"
                );
                return Ok(());
            }
            Err(why) => eprintln!(
                "agentty: could not open a browser ({opener}: {why}); open this address \
                 (its login code works once, for a minute):"
            ),
        }
    }
    write_stdout(&format!("{address}\n"))
}

/// How long `agentty view` waits for the browser's opener to fail before taking it as opened:
/// `xdg-open` answers at once, while a browser started directly runs on.
const OPENER_WAIT: std::time::Duration = std::time::Duration::from_secs(3);

/// Opens `address` with `opener`: an error if it cannot start or ends unsuccessfully within
/// [`OPENER_WAIT`] (`xdg-open` with no browser to run exits 3). One still running then is
/// taken as a browser that opened it.
fn open_with(opener: &str, address: &str) -> std::result::Result<(), String> {
    let mut child = std::process::Command::new(opener)
        .arg(address)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| e.to_string())?;
    let until = std::time::Instant::now() + OPENER_WAIT;
    while std::time::Instant::now() < until {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => return Ok(()),
            Ok(Some(status)) => return Err(status.to_string()),
            Ok(None) => std::thread::sleep(std::time::Duration::from_millis(20)),
            Err(e) => return Err(e.to_string()),
        }
    }
    Ok(())
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
