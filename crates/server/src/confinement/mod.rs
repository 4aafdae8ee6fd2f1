//! The sandbox of one session (docs/BEHAVIOUR.md §5), decided once: the plan and the prepared kernel objects,
//! plus the per-call choice between that and a one-time escalated (unconfined) run.
//!
//! The Landlock ruleset (and the seccomp filter) are built once per server; each confined
//! child applies them to itself between clone and exec, so confinement costs two or three
//! system calls per command, and a command keeps its own pid and process group. Where paths are
//! kept from reads, each call asks for the reads' ruleset as of now (`Prepared::reads_now_in`:
//! an `lstat` of each directory above a hidden path, and the rules made again when one changed;
//! for an HTTP caller with a PID namespace of its own, made from that namespace's view); the
//! launchers that clone its command have applied that one to themselves.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use agentty_core::spawn::Confine;
use agentty_guard::Workspace;
use agentty_sandbox::{
    Enforcement, Mode, Op, Plan, Policy, Prepared, Protected, RanIn, Ruleset, Stand, Unreadable,
    detect_denial,
};

use notice::{Retry, denial_retry};

pub mod notice;
pub(crate) mod planted;

struct PreparedConfine(Prepared);

impl Confine for PreparedConfine {
    fn apply_own(&self) -> std::io::Result<()> {
        self.0.apply_own()
    }

    fn own_fd(&self) -> Option<std::os::fd::RawFd> {
        self.0.own_fd()
    }

    fn shared_fd(&self) -> Option<std::os::fd::RawFd> {
        self.0.shared_fd()
    }

    fn apply_shared(&self) -> std::io::Result<()> {
        self.0.apply_shared()
    }

    fn apply_to_launcher(&self) -> std::io::Result<()> {
        self.0.apply_to_launcher()
    }

    fn apply_to_cloner(&self) -> std::io::Result<Option<std::os::fd::OwnedFd>> {
        self.0.apply_to_cloner()
    }

    fn adopt_listener(&self, listener: std::os::fd::OwnedFd, per_spawn: bool) -> bool {
        self.0.adopt_listener(listener, None, per_spawn)
    }
}

/// One command's confinement: the server's, with the reads' ruleset current when the call came
/// (where paths are kept from reads). The reads' ruleset is part of what a launcher applies to
/// itself once, so its key is the launchers': a ruleset made again gets launchers of its own.
struct CallConfine {
    shared: Arc<PreparedConfine>,
    reads: Option<Ruleset>,
    /// Whose command it is: an HTTP caller's (its token's name), `None` over stdio. Its
    /// launchers are its own, and so is its share of what the network supervisor holds.
    caller: Option<Arc<str>>,
    /// The command's own rules, where they are made for it alone (a terminal of its own:
    /// [`Confine::with_terminals`]); else the server's.
    #[cfg(target_os = "linux")]
    own: Option<agentty_sandbox::OwnRules>,
}

impl Confine for CallConfine {
    fn apply_own(&self) -> std::io::Result<()> {
        #[cfg(target_os = "linux")]
        if let Some(own) = &self.own {
            return own.apply();
        }
        self.shared.0.apply_own()
    }

    fn own_fd(&self) -> Option<std::os::fd::RawFd> {
        #[cfg(target_os = "linux")]
        if let Some(own) = &self.own {
            return Some(own.fd());
        }
        self.shared.0.own_fd()
    }

    fn shared_fd(&self) -> Option<std::os::fd::RawFd> {
        self.reads.as_ref().and_then(agentty_sandbox::Ruleset::fd)
    }

    fn apply_shared(&self) -> std::io::Result<()> {
        self.shared.0.apply_shared_with(self.reads.as_ref())
    }

    fn apply_to_launcher(&self) -> std::io::Result<()> {
        self.shared
            .0
            .apply_to_launcher_with(self.reads.as_ref(), self.caller.as_deref())
    }

    fn apply_to_cloner(&self) -> std::io::Result<Option<std::os::fd::OwnedFd>> {
        self.shared.0.apply_to_cloner_with(self.reads.as_ref())
    }

    fn adopt_listener(&self, listener: std::os::fd::OwnedFd, per_spawn: bool) -> bool {
        self.shared
            .0
            .adopt_listener(listener, self.caller.as_deref(), per_spawn)
    }

    fn caller(&self) -> Option<&str> {
        self.caller.as_deref()
    }

    /// The reads' ruleset (kept alive by this), else the server's confinement (by `shared`).
    fn shared_key(&self) -> usize {
        self.reads.as_ref().map_or_else(
            || Arc::as_ptr(&self.shared).cast::<()>() as usize,
            Ruleset::key,
        )
    }

    #[cfg(target_os = "linux")]
    fn with_terminals(
        &self,
        root: std::os::fd::BorrowedFd<'_>,
    ) -> std::io::Result<Option<Arc<dyn Confine>>> {
        let own = self
            .shared
            .0
            .own_with_terminals(root)
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        Ok(own.map(|own| {
            Arc::new(CallConfine {
                shared: Arc::clone(&self.shared),
                reads: self.reads.clone(),
                caller: self.caller.clone(),
                own: Some(own),
            }) as Arc<dyn Confine>
        }))
    }
}

/// Applies `confine` once, to a short-lived thread, so a kernel that refuses the ruleset is
/// found at start-up (every call then says so) rather than by each command in turn.
fn try_confine(confine: &Arc<PreparedConfine>) -> Result<(), String> {
    let confine = Arc::clone(confine);
    std::thread::Builder::new()
        .name("agentty-sandbox-check".into())
        .spawn(move || confine.0.apply_in_child())
        .and_then(|thread| {
            thread
                .join()
                .unwrap_or_else(|_| Err(std::io::Error::other("the check panicked")))
        })
        .map_err(|e| format!("the sandbox failed to start: {e}"))
}

pub struct Confinement {
    plan: Plan,
    enforcement: Enforcement,
    /// A writable root so wide that confining writes to it protects little (`/`, the home
    /// directory or one of its ancestors, a system directory): said on every sandbox line.
    broad_root: Option<std::path::PathBuf>,
    /// Git dirs outside the workspace made writable so commits work (a linked worktree's, or
    /// the repository's the workspace is a folder of): said on every sandbox line.
    git_dirs: Vec<std::path::PathBuf>,
    /// What each confined child applies to itself. `Ok(None)`: nothing to confine (auto
    /// mode, switched off, no backend).
    confine: Result<Option<Arc<PreparedConfine>>, String>,
    /// What the `[sandbox]` line says of the paths kept from reads, made once.
    unreadable_line: String,
    /// The paths that run code later (docs/BEHAVIOUR.md §5), and whether they are read-only.
    protection: Protection,
    /// The model was told why a tracer (`strace`, `gdb`, `perf`) was refused: once a session.
    trace_told: AtomicBool,
    /// Whether the model was told this session that a process could not be started under the
    /// bound on processes (`limit_met`).
    limit_told: AtomicBool,
}

/// The paths that run code later as the session's commands meet them.
struct Protection {
    /// What the `[sandbox]` line adds about them, made once.
    line: String,
    /// Those made read-only to confined commands (none where no namespace made them), with
    /// their names: a refused write to one is said as such.
    read_only: Vec<(std::path::PathBuf, String)>,
    workspace: std::path::PathBuf,
}

/// Names of protected paths the `[sandbox]` line lists at most (it is on every result).
const PROTECTED_NAMED: usize = 8;

impl Protection {
    fn new(protected: &Protected, confines: bool, workspace: &std::path::Path) -> Self {
        let names = |stand| agentty_sandbox::notice::protected_list(protected, stand);
        let (existing, opened) = (names(Stand::ReadOnly), names(Stand::Opened));
        let in_force = if !confines || existing.is_empty() {
            Err(String::new())
        } else {
            in_force(protected)
        };
        let mut line = String::new();
        if confines && !existing.is_empty() {
            line = match &in_force {
                Ok(()) => notice::protected_read_only(&existing, PROTECTED_NAMED),
                Err(why) => notice::protected_watched(&existing, PROTECTED_NAMED, why),
            };
        }
        if confines && !opened.is_empty() {
            line.push_str(&notice::protected_opened(&opened));
        }
        let read_only = match in_force {
            Ok(()) => protected
                .in_stand(Stand::ReadOnly)
                .map(|e| (e.path.clone(), e.name.clone()))
                .collect(),
            Err(_) => Vec::new(),
        };
        Protection {
            line,
            read_only,
            workspace: workspace.to_path_buf(),
        }
    }

    /// The protected path a refused write in `output` was aimed at, by its name, when the
    /// output shows one: a read-only file system, a busy mount point, or git failing to write
    /// its config, on a line naming a path made read-only.
    fn refused(&self, output: &str) -> Option<&str> {
        if self.read_only.is_empty() {
            return None;
        }
        const SYMPTOMS: &[&str] = &[
            "Read-only file system",
            "Device or resource busy",
            "could not write config file",
            "could not lock config file",
        ];
        let lines: Vec<&str> = output.lines().collect();
        let tail = &lines[lines.len().saturating_sub(DENIAL_LINES_READ)..];
        tail.iter()
            .filter(|line| SYMPTOMS.iter().any(|s| line.contains(s)))
            .find_map(|line| {
                self.read_only.iter().find_map(|(path, name)| {
                    let relative = path.strip_prefix(&self.workspace).ok();
                    let named = line.contains(&*path.to_string_lossy())
                        || relative.is_some_and(|r| {
                            !r.as_os_str().is_empty() && line.contains(&*r.to_string_lossy())
                        });
                    named.then_some(name.as_str())
                })
            })
    }
}

/// Lines at the end of an output searched for a refused write to a protected path (as for a
/// 2008: what ends a long output is what failed).
const DENIAL_LINES_READ: usize = 400;

/// Whether the protected paths are read-only to confined commands: the session's namespace made
/// them (a serving process), or could (`doctor`, which makes none); `Err` says why not.
fn in_force(protected: &Protected) -> Result<(), String> {
    match agentty_core::namespace::started() {
        Some(Ok(started)) if started.protected == 0 && !protected.read_only.is_empty() => {
            Err("the read-only mounts could not be made".to_owned())
        }
        Some(made) => made.map(drop),
        None => agentty_core::namespace::available(),
    }
}

/// Top-level directories whose contents are the system itself.
const SYSTEM_DIRS: &[&str] = &[
    "/usr", "/etc", "/var", "/opt", "/bin", "/sbin", "/lib", "/boot",
];

/// `/`, the home directory or one of its ancestors, or a system directory.
fn is_broad(root: &std::path::Path, home: Option<&std::path::Path>) -> bool {
    root.parent().is_none()
        || home.is_some_and(|h| h.starts_with(root))
        || SYSTEM_DIRS.iter().any(|d| root == std::path::Path::new(d))
}

/// What confined commands may reach (docs/BEHAVIOUR.md §13), as `Confinement::new` takes it.
pub struct NetSetup {
    pub mode: agentty_sandbox::Network,
    /// Loopback stays reachable in `allowlist` and `ask`.
    pub loopback: bool,
    /// The supervisor of connections (`allowlist` and `ask`), or why it could not start.
    pub supervisor: Result<Option<Arc<agentty_sandbox::Supervisor>>, String>,
}

impl Confinement {
    pub fn new(
        mode: Mode,
        enabled: bool,
        net: NetSetup,
        workspace: &Workspace,
        protected: &Protected,
        unreadable: Unreadable,
    ) -> Self {
        let NetSetup {
            mode: network,
            loopback,
            supervisor,
        } = net;
        let policy = Policy {
            mode,
            writable_roots: workspace.writable_roots().map(ToOwned::to_owned).collect(),
            enabled,
            network,
            loopback,
        };
        let plan = Plan::new(&policy).hide(unreadable);
        let mut enforcement = plan.enforcement();
        let prepared = match supervisor {
            Ok(supervisor) => {
                plan.prepare()
                    .map_err(|e| e.to_string())
                    .map(|prepared| match supervisor {
                        // The session's namespace (core's `namespace`) has a network of its
                        // own where the kernel allowed it (`doctor`: where it would).
                        Some(supervisor) if agentty_core::namespace::network_isolated() => {
                            prepared.supervised_by(supervisor).in_network_namespace()
                        }
                        Some(supervisor) => prepared.supervised_by(supervisor),
                        None => prepared,
                    })
            }
            Err(why) => Err(notice::supervisor_failed(&why)),
        };
        let confine = match prepared {
            Ok(prepared) => {
                enforcement = prepared.enforcement();
                let network_held = matches!(
                    enforcement.network,
                    agentty_sandbox::NetEnforcement::Off { installed: true }
                        | agentty_sandbox::NetEnforcement::Filtered { .. }
                );
                if enforcement.confines() || network_held {
                    let confine = Arc::new(PreparedConfine(prepared));
                    try_confine(&confine).map(|()| Some(confine))
                } else {
                    Ok(None)
                }
            }
            Err(e) => Err(e),
        };
        if let Err(e) = &confine {
            tracing::error!("{e}");
        }
        let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
        let unreadable_line = if enforcement.confines() {
            agentty_sandbox::notice::unreadable_line(&plan, home.as_deref())
        } else {
            String::new()
        };
        let broad_root = (mode == Mode::Default)
            .then(|| {
                workspace
                    .writable_roots()
                    .find(|root| is_broad(root, home.as_deref()))
                    .map(ToOwned::to_owned)
            })
            .flatten();
        if let Some(root) = &broad_root {
            tracing::warn!(
                "the workspace root {} covers most of the system: the write sandbox protects \
                 little; pass --workspace with the project directory",
                root.display()
            );
        }
        let git_dirs = plan
            .writable()
            .iter()
            .filter(|w| w.why == agentty_sandbox::Why::GitDir)
            .map(|w| w.path.clone())
            .collect();
        let protection = Protection::new(protected, enforcement.confines(), workspace.root());
        Self {
            plan,
            enforcement,
            broad_root,
            git_dirs,
            confine,
            unreadable_line,
            protection,
            trace_told: AtomicBool::new(false),
            limit_told: AtomicBool::new(false),
        }
    }

    pub fn mode(&self) -> Mode {
        self.plan.mode()
    }

    /// What confined commands may write.
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// Whether commands not escalated run confined (what [`Self::confine`] would give them,
    /// without making their read rules now: the web view asks it for every state it sends).
    pub fn confines(&self) -> bool {
        matches!(self.confine, Ok(Some(_)))
    }

    /// The confinement for a call: the session's, or none for an approved escalation. An error
    /// is the 2009 message: the command must not run. `caller`: an HTTP caller's name and the
    /// directories of the state dir its commands may read (its own spill and start-up
    /// directories), `None` over stdio. Where paths are kept from reads, a caller's commands get
    /// read rules of their own: with those exceptions, and, where it runs in a PID namespace of
    /// its own (with a `/proc` of its own), made from that namespace's view.
    pub fn confine(
        &self,
        escalated: bool,
        caller: Option<(&str, &[std::path::PathBuf])>,
    ) -> Result<Option<Arc<dyn Confine>>, String> {
        if escalated {
            return Ok(None);
        }
        let Some(shared) = self.confine.clone()? else {
            return Ok(None);
        };
        // Made now, as the spawn would; one that cannot be made refuses the spawn, saying why.
        let root = caller
            .and_then(|(name, _)| agentty_core::namespace::root_of(Some(name)).ok().flatten());
        let now = shared
            .0
            .reads_now_in(root.as_deref(), caller.map(|(_, readable)| readable));
        if let Some(e) = &now.failed {
            tracing::warn!("{e}; confined commands keep the read rules made before");
        }
        let reads = now.ruleset().cloned();
        Ok(Some(Arc::new(CallConfine {
            shared,
            reads,
            caller: caller.map(|(name, _)| Arc::from(name)),
            #[cfg(target_os = "linux")]
            own: None,
        })))
    }

    /// What holds the network for confined commands.
    pub fn network(&self) -> agentty_sandbox::NetEnforcement {
        self.enforcement.network
    }

    /// Why the sandbox is not in force as configured, if it is not (`/readyz` says it): it
    /// failed to start, the kernel has no backend for the mode asked, or the network switch
    /// asked for cannot be installed. `auto` and `--no-sandbox` ask for nothing.
    pub fn not_in_force(&self) -> Option<&'static str> {
        use agentty_sandbox::{NotEnforcedWhy, State};
        if self.confine.is_err() {
            return Some("degraded: the sandbox failed to start");
        }
        if let State::NotEnforced {
            why: NotEnforcedWhy::NoBackend | NotEnforcedWhy::KernelLacksLandlock,
        } = self.enforcement.state
        {
            return Some("degraded: no sandbox backend on this kernel");
        }
        if matches!(
            self.enforcement.network,
            agentty_sandbox::NetEnforcement::Off { installed: false }
                | agentty_sandbox::NetEnforcement::Filtered {
                    held: agentty_sandbox::NetHold::Nothing,
                    ..
                }
        ) {
            return Some("degraded: the network switch cannot be installed");
        }
        None
    }

    /// The one line every result carries. `client_asks`: the network may ask the call's
    /// client about a host not listed (`Agentty::network_asks`).
    pub fn line(&self, escalated: bool, client_asks: bool) -> String {
        if escalated {
            return notice::escalated_line(self.plan.mode());
        }
        let mut line = self.enforcement.line_for(client_asks);
        if self.enforcement.confines() && !self.git_dirs.is_empty() {
            line = notice::git_dirs_writable(&line, &self.git_dirs);
        }
        line.push_str(&self.unreadable_line);
        line.push_str(&self.protection.line);
        match &self.broad_root {
            Some(root) if self.enforcement.confines() => notice::broad_root(&line, root),
            _ => line,
        }
    }

    /// The 2008 sentence, when a command's output shows a write the sandbox refused, ending
    /// with how to run it again (`retry`). `exit`: the exit code, `None` after a signal.
    /// `command` and `cwd` (where it ended up, worked out only when the output shows a
    /// permission error at all: it runs after every command) let a relative path be judged.
    pub fn denial(
        &self,
        escalated: bool,
        exit: Option<i32>,
        output: &str,
        retry: Retry,
        command: &str,
        cwd: impl FnOnce() -> Option<std::path::PathBuf>,
    ) -> Option<Refused> {
        if escalated {
            return None;
        }
        if let Some(name) = self.protection.refused(output) {
            // The output alone is the command's to write: only a command line that names the
            // path (or runs git, for git's files) has the model told how to make it writable,
            // which lets code run outside the sandbox later (review 35, F1).
            if !names_protected(command, name) {
                return Some(Refused::Write(notice::protected_refused_unnamed(
                    self.plan.mode(),
                    name,
                )));
            }
            let sentence = notice::protected_refused(self.plan.mode(), name);
            return Some(Refused::Write(format!(
                "{sentence} {}",
                notice::protected_retry(retry)
            )));
        }
        if !agentty_sandbox::shows_denial_symptom(output, &self.plan) {
            return self
                .trace_refused(output)
                .or_else(|| self.limit_met(output));
        }
        let cwd = cwd();
        let ran = cwd.as_deref().map(|cwd| RanIn { cwd, command });
        let Some(denial) = detect_denial(exit, output, &self.plan, ran) else {
            return self
                .trace_refused(output)
                .or_else(|| self.limit_met(output));
        };
        let sentence = denial.notice(self.plan.mode());
        Some(match denial.op {
            Op::Write => Refused::Write(format!("{sentence} {}", denial_retry(retry))),
            Op::Read | Op::Hidden(_) => Refused::Read(sentence),
        })
    }
}

/// Whether the command line `command` names the protected path `name` (as the protection
/// names it), or is made of programs that write it only: git's commands that write
/// `.git/config`, hook installers for `.git/hooks`, `git sparse-checkout` for `.git/info`, with
/// nothing else but inert builtins. Not a word that merely holds a part of the name
/// (`--config ci.json`), nor a writer chained with any other program (`git config … && npm
/// test`: the output may be the other's) (reviews 37, 38).
fn names_protected(command: &str, name: &str) -> bool {
    if command.contains(name) {
        return true;
    }
    let mut writer = false;
    for simple in command.split(|c: char| ";&|()\n`".contains(c)) {
        let words: Vec<&str> = simple
            .split_whitespace()
            .skip_while(|word| word.contains('=') && !word.starts_with('-'))
            .collect();
        let Some(first) = words.first() else { continue };
        if INERT.contains(first) {
            continue;
        }
        if !writes_protected(name, &words) {
            return false;
        }
        writer = true;
    }
    writer
}

/// Builtins that print nothing but what the command line itself says.
const INERT: &[&str] = &["cd", "true", ":", "export", "set", "pwd", "echo", "printf"];

/// Whether the simple command `words` is a program that writes the protected path `name`.
fn writes_protected(name: &str, words: &[&str]) -> bool {
    let program = words[0].rsplit('/').next().unwrap_or(words[0]);
    match (program, name) {
        ("git", ".git/config" | ".git/config.worktree") => {
            let sub = git_subcommand(&words[1..]);
            matches!(
                sub,
                Some(
                    "config"
                        | "remote"
                        | "branch"
                        | "submodule"
                        | "init"
                        | "clone"
                        | "worktree"
                        | "lfs"
                )
            ) || (sub == Some("push") && words.iter().any(|w| *w == "-u" || *w == "--set-upstream"))
        }
        ("git", ".git/hooks") => matches!(git_subcommand(&words[1..]), Some("config" | "lfs")),
        ("git", ".git/info") => git_subcommand(&words[1..]) == Some("sparse-checkout"),
        ("pre-commit", ".git/hooks") => words.get(1) == Some(&"install"),
        ("husky", ".git/hooks") => true,
        ("npx", ".git/hooks") => words.get(1) == Some(&"husky"),
        _ => false,
    }
}

/// git's subcommand in its arguments `args`, past its own options (`-C DIR`, `-c KEY=VALUE`).
fn git_subcommand<'a>(args: &[&'a str]) -> Option<&'a str> {
    let mut rest = args.iter();
    while let Some(&word) = rest.next() {
        match word {
            "-C" | "-c" | "--git-dir" | "--work-tree" | "--namespace" => {
                rest.next();
            }
            option if option.starts_with('-') => {}
            subcommand => return Some(subcommand),
        }
    }
    None
}

impl Confinement {
    /// Why `strace`, `gdb` or `perf` said "Operation not permitted", when `output` shows it and
    /// the model was not told yet in this session: the program names no reason.
    fn trace_refused(&self, output: &str) -> Option<Refused> {
        // Told already (the usual case after once): the output is not scanned again.
        if self.trace_told.load(Ordering::Relaxed)
            || !agentty_sandbox::shows_trace_refusal(output, &self.plan)
            || self.trace_told.swap(true, Ordering::Relaxed)
        {
            return None;
        }
        Some(Refused::Trace(notice::TRACE_REFUSED.to_owned()))
    }

    /// The bound on a caller's processes, when `output` shows a process or thread that could
    /// not be started (`EAGAIN`) while the bound is in force, and the model was not told yet in
    /// this session: the program's own words never name agentty's bound.
    fn limit_met(&self, output: &str) -> Option<Refused> {
        let bounds = agentty_core::namespace::started()?.ok()?.processes?;
        if !self.plan.confines()
            || self.limit_told.load(Ordering::Relaxed)
            || !shows_start_refused(output)
            || self.limit_told.swap(true, Ordering::Relaxed)
        {
            return None;
        }
        Some(Refused::Limit(notice::processes_bounded(bounds.caller)))
    }
}

/// Whether the end of `output` says a process or thread could not be started for want of
/// room (`EAGAIN`): a shell's `fork`, Python's `[Errno 11]` or threads, Java's native threads.
fn shows_start_refused(output: &str) -> bool {
    output.lines().rev().take(40).any(|line| {
        let lower = line.to_ascii_lowercase();
        lower.contains("cannot fork")
            || lower.contains("fork: retry")
            || lower.contains("can't start new thread")
            || lower.contains("unable to create native thread")
            || (lower.contains("resource temporarily unavailable")
                && ["fork", "thread", "spawn", "errno 11", "eagain", "clone"]
                    .iter()
                    .any(|word| lower.contains(word)))
    })
}

/// What a command's output shows it was refused, in words for the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// A write the sandbox refused (2008), with how to run the command again.
    Write(String),
    /// A read the command was refused: not the sandbox's, said as a note.
    Read(String),
    /// A tracer or profiler the sandbox refused (`ptrace`, `perf_event_open`): a note, once.
    Trace(String),
    /// A process or thread not started under the bound on a caller's processes: a note, once.
    Limit(String),
}

impl Refused {
    /// The error code a result carries for it (2008 for a write; a read has none).
    pub fn code(&self) -> Option<u32> {
        matches!(self, Refused::Write(_)).then_some(notice::SANDBOX_DENIED)
    }

    /// The sentence of a refused write (`sandbox_denied` of a result).
    pub fn write_sentence(&self) -> Option<&str> {
        match self {
            Refused::Write(sentence) => Some(sentence),
            Refused::Read(_) | Refused::Trace(_) | Refused::Limit(_) => None,
        }
    }

    /// Counts it for `/metrics`: a result reports it.
    pub(crate) fn count(&self) {
        use crate::metrics::{METRICS, Refusal};
        METRICS.sandbox_refused(match self {
            Refused::Write(_) => Refusal::Write,
            // Tracing another process is reading it (its memory, its system calls).
            Refused::Read(_) | Refused::Trace(_) => Refusal::Read,
            // Not the sandbox's refusal: a bound the user sets.
            Refused::Limit(_) => return,
        });
    }

    /// Its line in the model's text: `[error 2008] …`, or the read's note.
    pub fn line(&self) -> String {
        match self {
            Refused::Write(sentence) => notice::sandbox_denied(sentence),
            Refused::Read(note) | Refused::Trace(note) | Refused::Limit(note) => note.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentty_sandbox::Backend;

    /// Only a command line that names the path, or is made of programs that write it and inert
    /// builtins, gets the way to open a protected path (reviews 35 F1, 37, 38).
    #[test]
    fn a_protected_path_is_named_only_by_its_writers() {
        for (line, name) in [
            ("cat .git/config", ".git/config"),
            ("git config user.name x", ".git/config"),
            ("git -C sub config user.name x && echo done", ".git/config"),
            (
                "git remote add origin /x; git push -u origin main",
                ".git/config",
            ),
            ("X=1 git branch -u origin/main", ".git/config"),
            ("pre-commit install", ".git/hooks"),
            ("npx husky install", ".git/hooks"),
            ("git sparse-checkout set src", ".git/info"),
        ] {
            assert!(names_protected(line, name), "{line}");
        }
        for (line, name) in [
            ("sh run-tests.sh", ".git/config"),
            ("sh run-tests.sh --config ci.json", ".git/config"),
            ("git status; sh run-tests.sh", ".git/config"),
            ("git checkout -b x && npm test", ".git/config"),
            ("git config a b; make", ".git/config"),
            ("git push origin main", ".git/config"),
            ("echo $(npm test)", ".git/config"),
            ("npm install # husky", ".git/hooks"),
            ("git config core.x y", ".envrc"),
        ] {
            assert!(!names_protected(line, name), "{line}");
        }
    }

    /// The confinement of `default` mode, network `on`, for a workspace at `dir`.
    /// What a process or thread not started for want of room says, in the programs that say
    /// it most; and lines that only look alike.
    #[test]
    fn a_start_refused_for_want_of_room_is_told_by_its_words() {
        for said in [
            "bash: fork: retry: Resource temporarily unavailable",
            "sh: 1: Cannot fork",
            "BlockingIOError: [Errno 11] Resource temporarily unavailable",
            "RuntimeError: can't start new thread",
            "java.lang.OutOfMemoryError: unable to create native thread: possibly out of memory",
            "thread 'main' panicked: failed to spawn thread: Resource temporarily unavailable (os error 11)",
        ] {
            assert!(shows_start_refused(&format!("ok\n{said}\n")), "{said}");
        }
        for said in [
            "read: Resource temporarily unavailable",
            "all 12 tests passed",
            "git fork created",
        ] {
            assert!(!shows_start_refused(said), "{said}");
        }
    }

    fn confinement_in(dir: &std::path::Path) -> Confinement {
        let workspace = Workspace::new(dir.to_path_buf(), Vec::new()).unwrap();
        Confinement::new(
            Mode::Default,
            true,
            NetSetup {
                mode: agentty_sandbox::Network::On,
                loopback: true,
                supervisor: Ok(None),
            },
            &workspace,
            &Protected::default(),
            Unreadable::default(),
        )
    }

    /// A call's confinement says whose command it is (an HTTP caller's; none over stdio), so
    /// its launchers, and what the network supervisor holds for its commands, are that
    /// caller's (`Confine::caller`).
    #[test]
    fn a_calls_confinement_names_its_caller() {
        let dir = tempfile::tempdir().unwrap();
        let c = confinement_in(dir.path());
        let Ok(Some(alices)) = c.confine(false, Some(("alice", &[]))) else {
            panic!("no sandbox here (Landlock): nothing is confined");
        };
        assert_eq!(alices.caller(), Some("alice"));
        let Ok(Some(sessions)) = c.confine(false, None) else {
            panic!("confined for alice, not for the session");
        };
        assert_eq!(sessions.caller(), None);
        #[cfg(target_os = "linux")]
        {
            let root = std::fs::File::open("/").unwrap();
            let terminals = alices
                .with_terminals(std::os::fd::AsFd::as_fd(&root))
                .unwrap()
                .expect("a confinement with path rules made for its own terminals");
            assert_eq!(terminals.caller(), Some("alice"));
        }
    }

    /// `/readyz` is 503 `degraded: …` when the sandbox asked for is not in force, and only then.
    #[test]
    fn not_in_force_names_why_the_sandbox_asked_for_is_missing() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = confinement_in(dir.path());
        c.enforcement = Enforcement::decide(Mode::Default, true, &Backend::Landlock { abi: 7 });
        assert_eq!(c.not_in_force(), None);
        c.enforcement = Enforcement::decide(Mode::Default, true, &Backend::KernelLacksLandlock);
        assert_eq!(
            c.not_in_force(),
            Some("degraded: no sandbox backend on this kernel")
        );
        c.enforcement = Enforcement::decide(Mode::Default, true, &Backend::None);
        assert_eq!(
            c.not_in_force(),
            Some("degraded: no sandbox backend on this kernel")
        );
        // Asked for nothing: auto mode, or the sandbox switched off.
        c.enforcement = Enforcement::decide(Mode::Auto, true, &Backend::KernelLacksLandlock);
        assert_eq!(c.not_in_force(), None);
        c.enforcement = Enforcement::decide(Mode::Default, false, &Backend::None);
        assert_eq!(c.not_in_force(), None);
        c.enforcement = Enforcement::decide(Mode::Default, true, &Backend::Landlock { abi: 7 });
        c.enforcement.network = agentty_sandbox::NetEnforcement::Off { installed: false };
        assert_eq!(
            c.not_in_force(),
            Some("degraded: the network switch cannot be installed")
        );
        // The same for allowlist and ask without a filter to hold them.
        c.enforcement.network = agentty_sandbox::NetEnforcement::Filtered {
            mode: agentty_sandbox::Network::Ask,
            held: agentty_sandbox::NetHold::Nothing,
            loopback: true,
            namespace: false,
        };
        assert_eq!(
            c.not_in_force(),
            Some("degraded: the network switch cannot be installed")
        );
        c.enforcement.network = agentty_sandbox::NetEnforcement::Filtered {
            mode: agentty_sandbox::Network::Ask,
            held: agentty_sandbox::NetHold::Full,
            loopback: true,
            namespace: false,
        };
        assert_eq!(c.not_in_force(), None);
        c.enforcement.network = agentty_sandbox::NetEnforcement::Off { installed: true };
        c.confine = Err("the sandbox failed to start: test".into());
        assert_eq!(
            c.not_in_force(),
            Some("degraded: the sandbox failed to start")
        );
    }
}
