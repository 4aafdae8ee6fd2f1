//! Network egress of confined commands (docs/BEHAVIOUR.md §13), the server's half: what is
//! allowed, who asked, what the user approved, and what is said about it.
//!
//! Two ways out exist for a confined command in `allowlist` and `ask`, both through here:
//! - the **proxy** (`proxy.rs`), on 127.0.0.1, which each command is pointed at through
//!   `HTTP_PROXY`/`HTTPS_PROXY` (and git's ssh through `agentty proxy-connect`) with
//!   credentials of its own call: it resolves the name itself and connects only to a host on
//!   the [`Allowlist`] (`list.rs`), or one the user approved (`ask`), and never to an inside
//!   address (`address.rs`) unless that address is listed;
//! - the **supervisor** of the sandbox crate, which makes every TCP connection a command asks
//!   for itself and asks [`Egress`] (its `Judge`): the proxy, loopback (unless closed; never
//!   port 53, a local resolver that would carry DNS out), and listed addresses.
//!
//! Each decision is a line of the server's log (host, port, decision, rule, session, call;
//! never a path or a credential), kept for the web view (per session, bounded), and each
//! refusal is kept for the result of the call that met it, whatever the command printed
//! (`notice.rs` words it, error 2010).
//!
//! Attribution: the proxy knows the call by its credentials; the supervisor by the run marker
//! in the process's environment, which a command can forge, believed only where the process
//! runs in the PID namespace of that call's caller (where there are namespaces: root). Neither
//! grants anything beyond the list: a call's own approvals ("once") and the session's come from
//! the user, and a command that borrowed another call's credentials of the same caller gets what
//! that call may (over stdio, one session; over HTTP, nothing is asked, so the list alone).
//! Credentials of another caller's call are refused (407) to a connection the supervisor made
//! (it tells the proxy whose it is, by the address it comes from: [`ProxyPeer`]), the refusal the
//! connecting command's.

mod address;
pub(crate) mod ask;
mod call;
mod decisions;
mod framing;
pub mod list;
pub(crate) mod notice;
mod proxy;
mod whose;

use std::collections::{HashMap, HashSet, VecDeque};
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Instant;

use whose::ProxyPeer;

use agentty_sandbox::Network;
use rmcp::{Peer, RoleServer};

pub use address::Inside;
pub(crate) use call::{NetCall, keep_while_running, met_by_job};
pub use list::{Allowlist, Rule, RuleError};

/// Calls kept registered at most (background jobs and shells stay while they run): the
/// oldest are let go first.
const CALLS_KEPT: usize = 1024;
/// Refusals (and allowed hosts not reached) kept for one call's result.
const REFUSALS_KEPT: usize = 16;
/// Decisions kept per session for the web view, and sessions kept.
const RECENT_PER_SESSION: usize = 32;
const RECENT_SESSIONS: usize = 64;
/// Results kept for the answers to questions asked with them (2026-07-28 clients).
const RESULTS_KEPT: usize = 16;

/// A host and a port, the unit of a decision.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Target {
    /// A name (lower case, no trailing dot) or an address as text.
    pub host: String,
    pub port: u16,
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.port == 0 {
            // A unix socket (`unix:/path`).
            write!(f, "{}", self.host)
        } else if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

/// Why a connection was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Why {
    /// Not on the allowlist, not approved; `asked` says what became of asking.
    NotListed { asked: Asked },
    /// The user said no.
    Declined,
    /// A listed (or approved) name resolved only to inside addresses.
    Inside { kind: Inside, ip: IpAddr },
    /// A direct connection to an address that is not loopback nor listed.
    Direct,
    /// Loopback, closed by configuration.
    LoopbackClosed,
    /// A unix socket with loopback closed, not one a confined command listens on.
    UnixService,
    /// Port 53 on loopback: a local resolver would carry names (and data in them) out.
    LocalDns,
    /// A socket of a kind commands may not make (UDP, raw, …): `what` names it.
    Socket { what: &'static str },
    /// Through the proxy with credentials of another caller's call.
    OthersCredentials,
    /// Through the proxy to the proxy itself.
    ProxyItself,
}

/// What became of asking the user about a host not on the list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Asked {
    /// `allowlist` mode: nothing is asked.
    Never,
    /// `ask`, but this client cannot ask (over HTTP, or no elicitation).
    CannotAsk,
    /// `ask`, and the question can go back with the result (a 2026-07-28 client).
    Later,
    /// Asked, no answer in time.
    Unanswered,
}

/// One refusal, for the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub target: Target,
    pub why: Why,
}

/// An allowed host agentty's proxy could not reach, for the model: the network's doing, not
/// the sandbox's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreached {
    pub target: Target,
    pub why: Unreach,
}

/// What failed on the way to an allowed host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unreach {
    /// The name resolved to no address here.
    Unresolved,
    /// No address took the connection: the last attempt's error.
    Connect(std::io::ErrorKind),
}

/// The user's answer to a question about a host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    Once,
    Session,
    Deny,
}

/// A call to register ([`Egress::begin`]).
pub(crate) struct Begin<'a> {
    pub marker: &'a str,
    pub session: &'a str,
    /// The HTTP caller (a token of the token file) whose call it is; `None` over stdio.
    pub caller: Option<Arc<str>>,
    pub call: &'a str,
    /// The command, for a question to the user.
    pub what: &'a str,
    /// Where to ask the user while the command waits (a client that can, over stdio).
    pub asker: Option<Peer<RoleServer>>,
    /// A question may go back with the result instead (a 2026-07-28 client that can ask).
    pub ask_later: bool,
    /// Hosts the user approved for this call already.
    pub granted: Vec<Target>,
}

/// What the server knows of one call (or background job, or shell) whose commands may use the
/// network.
pub(crate) struct CallNet {
    pub(crate) marker: String,
    token: String,
    pub(crate) session: String,
    /// The HTTP caller whose call it is; `None` over stdio.
    caller: Option<Arc<str>>,
    pub(crate) call: String,
    /// The command, for a question to the user (a shell's: the line typed last).
    what: Mutex<String>,
    /// Where to ask the user (a client that can, over stdio); `None`: the list alone.
    asker: Option<Peer<RoleServer>>,
    /// `ask` mode, and a question could go back with the call's result instead.
    ask_later: bool,
    /// Hosts the user approved for this call.
    once: Mutex<HashSet<Target>>,
    met: Arc<Met>,
}

impl CallNet {
    /// The command, for a question to the user.
    fn what(&self) -> String {
        self.what
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// A shell's next command line: what a question names from now on; the hosts the user
    /// allowed "once" were for the command before.
    pub(crate) fn next_command(&self, line: &str) {
        *self.what.lock().unwrap_or_else(PoisonError::into_inner) = line.to_owned();
        self.once
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }

    /// The refusals met so far, emptied.
    pub(crate) fn take_refusals(&self) -> Vec<Refusal> {
        take(&self.met.refused)
    }

    fn note_refusal(&self, refusal: Refusal) {
        keep_once(&self.met.refused, refusal);
    }

    /// The allowed hosts not reached so far, emptied.
    pub(crate) fn take_unreached(&self) -> Vec<Unreached> {
        take(&self.met.unreached)
    }

    fn note_unreached(&self, unreached: Unreached) {
        keep_once(&self.met.unreached, unreached);
    }
}

/// What a call's commands met: the connections refused, and the allowed hosts not reached. A
/// background command job keeps its call's to report them once ended ([`met_by_job`]).
#[derive(Default)]
pub(crate) struct Met {
    refused: Mutex<Vec<Refusal>>,
    unreached: Mutex<Vec<Unreached>>,
}

impl Met {
    /// Both, kept.
    fn both(&self) -> (Vec<Refusal>, Vec<Unreached>) {
        (copy(&self.refused), copy(&self.unreached))
    }
}

/// A call's list, kept.
fn copy<T: Clone>(list: &Mutex<Vec<T>>) -> Vec<T> {
    list.lock().unwrap_or_else(PoisonError::into_inner).clone()
}

/// A call's list, emptied.
fn take<T>(list: &Mutex<Vec<T>>) -> Vec<T> {
    std::mem::take(&mut *list.lock().unwrap_or_else(PoisonError::into_inner))
}

/// `item` added to a call's list, once, while the list holds fewer than [`REFUSALS_KEPT`].
fn keep_once<T: PartialEq>(list: &Mutex<Vec<T>>, item: T) {
    let mut list = list.lock().unwrap_or_else(PoisonError::into_inner);
    if list.len() < REFUSALS_KEPT && !list.contains(&item) {
        list.push(item);
    }
}

#[derive(Default)]
struct Calls {
    by_marker: HashMap<String, Arc<CallNet>>,
    by_token: HashMap<String, String>,
    order: VecDeque<String>,
}

/// A decision as the web view shows it.
#[derive(Debug, Clone)]
pub struct Seen {
    /// Seconds since the epoch.
    pub time: u64,
    pub target: Target,
    pub allowed: bool,
    /// The rule that allowed it, or why it was refused.
    pub rule: String,
}

/// The network policy of this server and what it has seen.
pub struct Egress {
    mode: Network,
    list: Allowlist,
    loopback: bool,
    /// Where the proxy listens, once it does.
    proxy: OnceLock<SocketAddr>,
    /// This binary, for git's ssh (`agentty proxy-connect`).
    helper: Option<std::path::PathBuf>,
    calls: Mutex<Calls>,
    /// Connections to the proxy the supervisor made, by the address they come from, newest
    /// last: taken when the proxy reads their request.
    peers: Mutex<VecDeque<(SocketAddr, ProxyPeer, Instant)>>,
    /// Hosts the user approved for a whole session, by session.
    approved: Mutex<HashMap<String, HashSet<Target>>>,
    recent: Mutex<VecDeque<(String, VecDeque<Seen>)>>,
    /// Questions being asked, so a second connection to the same host waits for the first
    /// answer instead of asking again.
    asking: ask::Pending,
    /// Results whose refusals went back to a 2026-07-28 client as a question, by key: a
    /// "deny" answers with the result the command had.
    kept: Mutex<VecDeque<(String, rmcp::model::CallToolResult)>>,
}

impl std::fmt::Debug for Egress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Egress")
            .field("mode", &self.mode)
            .finish_non_exhaustive()
    }
}

impl Egress {
    pub fn new(mode: Network, list: Allowlist, loopback: bool) -> Arc<Egress> {
        Arc::new(Egress {
            mode,
            list,
            loopback,
            proxy: OnceLock::new(),
            helper: std::env::current_exe().ok(),
            calls: Mutex::default(),
            peers: Mutex::default(),
            approved: Mutex::default(),
            recent: Mutex::default(),
            asking: ask::Pending::default(),
            kept: Mutex::default(),
        })
    }

    /// Whether commands' connections are filtered here (`allowlist` and `ask`).
    pub fn filtered(&self) -> bool {
        self.mode.filtered()
    }

    pub fn mode(&self) -> Network {
        self.mode
    }

    /// Starts the proxy on this runtime (`allowlist` and `ask`); its address.
    pub fn start_proxy(self: &Arc<Self>) -> std::io::Result<SocketAddr> {
        let at = proxy::start(Arc::clone(self))?;
        let _ = self.proxy.set(at);
        tracing::info!(%at, mode = %self.mode, "network proxy for confined commands listening");
        Ok(at)
    }

    /// Registers a call whose commands may connect (`None` when nothing is filtered, or the
    /// proxy is not running): its environment points them at the proxy with credentials of
    /// their own. `granted`: hosts the user approved for this call already (a 2026-07-28
    /// client's retry).
    pub(crate) fn begin(self: &Arc<Self>, call: Begin<'_>) -> Option<NetCall> {
        let Begin {
            marker,
            session,
            caller,
            call,
            what,
            asker,
            ask_later,
            granted,
        } = call;
        if !self.filtered() {
            return None;
        }
        self.proxy.get()?;
        let token = agentty_core::random::hex(16);
        let net = Arc::new(CallNet {
            marker: marker.to_owned(),
            token: token.clone(),
            session: session.to_owned(),
            caller,
            call: call.to_owned(),
            what: Mutex::new(what.to_owned()),
            asker: asker.filter(|_| self.mode == Network::Ask),
            ask_later: ask_later && self.mode == Network::Ask,
            once: Mutex::new(granted.into_iter().collect()),
            met: Arc::default(),
        });
        let mut calls = self.calls.lock().unwrap_or_else(PoisonError::into_inner);
        while calls.order.len() >= CALLS_KEPT {
            if let Some(old) = calls.order.pop_front()
                && let Some(gone) = calls.by_marker.remove(&old)
            {
                calls.by_token.remove(&gone.token);
            }
        }
        calls.order.push_back(marker.to_owned());
        calls.by_token.insert(token, marker.to_owned());
        calls.by_marker.insert(marker.to_owned(), Arc::clone(&net));
        Some(NetCall {
            egress: Arc::clone(self),
            net,
        })
    }

    /// Lets go of the registration of `marker` (a call that ended, a shell closed): its
    /// credentials are refused from now on.
    pub(crate) fn revoke(&self, marker: &str) {
        let mut calls = self.calls.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(gone) = calls.by_marker.remove(marker) {
            calls.by_token.remove(&gone.token);
            calls.order.retain(|m| m != marker);
        }
    }

    /// The registration of the call (or shell) whose run marker is `marker`, while it is
    /// registered.
    pub(crate) fn call_of(&self, marker: &str) -> Option<Arc<CallNet>> {
        self.calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .by_marker
            .get(marker)
            .cloned()
    }

    fn by_token(&self, token: &str) -> Option<Arc<CallNet>> {
        let calls = self.calls.lock().unwrap_or_else(PoisonError::into_inner);
        let marker = calls.by_token.get(token)?;
        calls.by_marker.get(marker).cloned()
    }

    /// Hosts the user approved for the whole of `session`.
    fn approved_for(&self, session: &str, target: &Target) -> bool {
        self.approved
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(session)
            .is_some_and(|set| set.contains(target))
    }

    /// Approves `targets` for the rest of `session` (the user's "for this session").
    pub(crate) fn approve_for_session(&self, session: &str, targets: &[Target]) {
        let mut approved = self.approved.lock().unwrap_or_else(PoisonError::into_inner);
        approved
            .entry(session.to_owned())
            .or_default()
            .extend(targets.iter().cloned());
    }

    /// Keeps `result` for the answer to a question asked with it; the key the question carries.
    pub(crate) fn keep_result(&self, result: rmcp::model::CallToolResult) -> String {
        let key = agentty_core::random::hex(8);
        let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        if kept.len() >= RESULTS_KEPT {
            kept.pop_front();
        }
        kept.push_back((key.clone(), result));
        key
    }

    /// The result kept under `key`, taken.
    pub(crate) fn take_result(&self, key: &str) -> Option<rmcp::model::CallToolResult> {
        let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        let at = kept.iter().position(|(k, _)| k == key)?;
        kept.remove(at).map(|(_, result)| result)
    }
}

impl Target {
    /// `host:port` or `[v6]:port`, as [`Display`](std::fmt::Display) writes it.
    fn parse(text: &str) -> Option<Target> {
        let (host, port) = text.rsplit_once(':')?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        Some(Target {
            host: host.to_owned(),
            port: port.parse().ok()?,
        })
    }
}

/// The hosts of `refused` a 2026-07-28 client's user may still be asked about: not listed,
/// each once.
pub(crate) fn askable(refused: &[Refusal]) -> Vec<Target> {
    let mut targets: Vec<Target> = Vec::new();
    for refusal in refused {
        if refusal.why
            == (Why::NotListed {
                asked: Asked::Later,
            })
            && !targets.contains(&refusal.target)
        {
            targets.push(refusal.target.clone());
        }
    }
    targets
}

/// What a network question carries to its answer: the kept result's key and the hosts.
pub(crate) fn carried(key: &str, targets: &[Target]) -> String {
    let mut text = key.to_owned();
    for target in targets {
        text.push('\n');
        text.push_str(&target.to_string());
    }
    text
}

/// [`carried`] read back.
pub(crate) fn read_carried(text: &str) -> (String, Vec<Target>) {
    let mut lines = text.lines();
    let key = lines.next().unwrap_or_default().to_owned();
    (key, lines.filter_map(Target::parse).collect())
}

impl Egress {
    /// The answer to a "deny" of the hosts a command was refused: its result as it was, and
    /// the user's refusal.
    pub(crate) fn declined(&self, key: &str, targets: &[Target]) -> rmcp::model::CallToolResult {
        let line = crate::network::notice::network_declined_after(targets);
        match self.take_result(key) {
            Some(mut result) => {
                result.content.push(rmcp::model::ContentBlock::text(line));
                result
            }
            None => crate::tools::tool_error(line),
        }
    }
}

/// Starts the network of a confining server in `allowlist` or `ask`: the proxy on this
/// runtime, and the supervisor that confined commands' connects go to; the error says why not.
pub fn start(egress: &Arc<Egress>) -> Result<Arc<agentty_sandbox::Supervisor>, String> {
    // Said at start where it cannot work (a listener above the server's), rather than by every
    // command's connects failing; before the proxy listens for nothing.
    agentty_sandbox::Supervisor::available()?;
    // A server made outside a runtime (a unit test) has no proxy: its commands reach only
    // loopback.
    if tokio::runtime::Handle::try_current().is_ok() {
        egress
            .start_proxy()
            .map_err(|e| format!("the proxy could not listen: {e}"))?;
    }
    agentty_sandbox::Supervisor::start(Arc::clone(egress) as Arc<dyn agentty_sandbox::Judge>)
        .map_err(|e| e.to_string())
}

/// Starts the supervisor of a confining server in `on` or `off`, for confined commands'
/// terminal resizes alone (`agentty_sandbox::Judge::resize`); `None` where it could not make
/// them (`Supervisor::available`: no seccomp user notification, a listener above this
/// process's, no copies of its children's fds): then they are made by the kernel, as the
/// command asks, and `doctor` says so.
pub fn start_for_resizes(egress: &Arc<Egress>) -> Option<Arc<agentty_sandbox::Supervisor>> {
    agentty_sandbox::Supervisor::available()
        .and_then(|()| {
            agentty_sandbox::Supervisor::start(
                Arc::clone(egress) as Arc<dyn agentty_sandbox::Judge>
            )
            .map_err(|e| e.to_string())
        })
        .inspect_err(|e| tracing::warn!("confined commands' resizes are not supervised: {e}"))
        .ok()
}
