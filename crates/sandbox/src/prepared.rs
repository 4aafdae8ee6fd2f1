//! `Plan::prepare` and the async-signal-safe `Prepared::apply_in_child`.
//!
//! Everything that can allocate or fail slowly (opening paths, building the ruleset, compiling the
//! network filter) happens once in `prepare`, in the parent and before any fork. What the child
//! does is fixed syscalls on data owned by `Prepared`, so one `Prepared` (shared through an `Arc`)
//! serves every spawn of a session: the per-call cost is a few microseconds, and the command keeps
//! its pid and process group because nothing forks or re-execs on its behalf.
//!
//! Where paths are kept from reads (`unreadable.rs`), their rules are a Landlock ruleset of their
//! own, a layer under each command's (writes, scopes): it is part of the shared confinement, which
//! a spawning thread applies once for all its children, because its rules grow with the entries
//! beside the hidden paths (every rule is copied into each domain that applies them: 500 cost a
//! command about 0.23 ms, measured). A command still pays per rule, less: its own domain is made
//! under the launcher's, and the kernel copies the parent domain's rules into it and frees them
//! when it ends (about 0.18 µs a rule, `benches/confine.rs`). Its rules are bound to what existed
//! when it was made, so
//! [`Prepared::reads_now`] makes it again, in the parent, when a directory above a hidden path
//! changed since; a command takes the layer current when it starts ([`Ruleset`]).

#[cfg(target_os = "linux")]
use std::os::fd::{AsRawFd, OwnedFd};
#[cfg(target_os = "linux")]
use std::sync::{Arc, Mutex, PoisonError};

#[cfg(target_os = "linux")]
use crate::enforcement::State;
use crate::enforcement::{Enforcement, NetEnforcement, NetHold};
use crate::error::SandboxError;
use crate::plan::Plan;

/// A plan made ready to apply in children. `Send + Sync`; share it behind an `Arc`.
#[derive(Debug)]
pub struct Prepared {
    enforcement: Enforcement,
    /// Each command's own ruleset: writes, scopes.
    #[cfg(target_os = "linux")]
    ruleset: Option<OwnedFd>,
    /// What `ruleset` was made of, to make it again with a rule more
    /// ([`Prepared::own_with_terminals`]): the writable paths, opened, and whether TCP connects
    /// are refused.
    #[cfg(target_os = "linux")]
    own_made_of: (crate::landlock::Anchors, bool),
    /// The reads' ruleset made by `prepare`, where paths are kept from reads: what
    /// [`Prepared::apply_shared`] applies.
    #[cfg(target_os = "linux")]
    reads: Option<Ruleset>,
    /// How to make the reads' ruleset again, and the latest one.
    #[cfg(target_os = "linux")]
    refresh: Option<Mutex<Refresh>>,
    #[cfg(target_os = "linux")]
    filter: Option<crate::seccomp::Filter>,
    /// Where the listener of a filter that sends `connect` to a supervisor goes (network
    /// `allowlist` and `ask`); without one, such connects fail with ENOSYS.
    #[cfg(target_os = "linux")]
    supervisor: Option<std::sync::Arc<crate::net::Supervisor>>,
    /// The server holds capabilities, so a confined child drops those that reach past the
    /// sandbox (`caps.rs`).
    #[cfg(target_os = "linux")]
    drop_caps: bool,
}

impl Plan {
    /// Builds the kernel objects for this plan. Call once, before forking; an error here means the
    /// sandbox failed to start (error 2009) and the command must not run.
    pub fn prepare(&self) -> Result<Prepared, SandboxError> {
        let mut enforcement = self.enforcement();
        #[cfg(target_os = "linux")]
        {
            let confining = self.enabled && self.mode != crate::Mode::Auto;
            let filtered = confining && self.network.filtered();
            let (ruleset, anchors, reads, refresh) = match enforcement.state {
                State::Enforced { .. } | State::Partial { .. } => {
                    let anchors = crate::landlock::Anchors::open(&self.writable)?;
                    let ruleset = crate::landlock::build_ruleset(&anchors, filtered, None)?;
                    if ruleset.is_none() {
                        enforcement.state = State::NotEnforced {
                            why: crate::enforcement::NotEnforcedWhy::KernelLacksLandlock,
                        };
                    }
                    let mut reads = None;
                    let mut refresh = None;
                    if ruleset.is_some() && !self.unreadable.is_empty() {
                        crate::deputy::keep(&self.unreadable);
                        let (fd, stamp) =
                            crate::landlock::build_reads(&self.writable, &self.unreadable)?;
                        if let Some(fd) = fd {
                            let layer = Ruleset(Arc::new(fd));
                            refresh = Some(Mutex::new(Refresh {
                                writable: self.writable.clone(),
                                unreadable: self.unreadable.clone(),
                                own: View {
                                    current: layer.clone(),
                                    stamp,
                                },
                                others: Vec::new(),
                            }));
                            reads = Some(layer);
                        }
                    }
                    (ruleset, anchors, reads, refresh)
                }
                _ => (None, crate::landlock::Anchors::default(), None, None),
            };
            // The seccomp filter (see `seccomp.rs`) goes with any confinement, Landlock or not;
            // `sandbox.terminal = false` and `auto` both mean "do not confine this command".
            use crate::seccomp::NetFilter;
            let network = match self.network {
                crate::Network::On => NetFilter::Open,
                crate::Network::Off => NetFilter::Off,
                crate::Network::Allowlist | crate::Network::Ask => NetFilter::Supervised,
            };
            // The command's own TCP connects are refused by its Landlock domain.
            let own_tcp_refused = ruleset.is_some()
                && crate::landlock::kernel_abi().is_some_and(|abi| abi >= crate::landlock::ABI_TCP);
            let filter = confining
                .then(|| {
                    crate::seccomp::Filter::new(crate::seccomp::FilterSpec {
                        network,
                        unix_off: self.mode == crate::Mode::Plan,
                        own_tcp_refused,
                        unix_checked: network == NetFilter::Supervised && !self.loopback,
                        resizes_supervised: false,
                    })
                })
                .flatten();
            enforcement.network = match (confining, self.network) {
                (false, _) | (true, crate::Network::On) => NetEnforcement::Open,
                (true, crate::Network::Off) => NetEnforcement::Off {
                    installed: filter.is_some(),
                },
                (true, mode) => NetEnforcement::Filtered {
                    mode,
                    held: if filter.is_none() {
                        NetHold::Nothing
                    } else if own_tcp_refused {
                        NetHold::Full
                    } else {
                        NetHold::SupervisorOnly
                    },
                    loopback: self.loopback,
                    namespace: false,
                },
            };
            Ok(Prepared {
                enforcement,
                ruleset,
                own_made_of: (anchors, filtered),
                reads,
                refresh,
                filter,
                supervisor: None,
                drop_caps: confining && crate::caps::held(),
            })
        }
        #[cfg(not(target_os = "linux"))]
        {
            if self.enabled && self.mode != crate::Mode::Auto {
                enforcement.network = match self.network {
                    crate::Network::On => NetEnforcement::Open,
                    crate::Network::Off => NetEnforcement::Off { installed: false },
                    mode => NetEnforcement::Filtered {
                        mode,
                        held: NetHold::Nothing,
                        loopback: self.loopback,
                        namespace: false,
                    },
                };
            }
            Ok(Prepared { enforcement })
        }
    }
}

/// A command's own Landlock rules made for it alone ([`Prepared::own_with_terminals`]).
#[cfg(target_os = "linux")]
#[derive(Debug)]
pub struct OwnRules(OwnedFd);

#[cfg(target_os = "linux")]
impl OwnRules {
    /// [`Prepared::apply_own`] with these rules. Async-signal-safe.
    pub fn apply(&self) -> std::io::Result<()> {
        crate::landlock::restrict_self(self.0.as_raw_fd())
    }

    /// The fd [`Self::apply`] uses: the ruleset.
    pub fn fd(&self) -> std::os::fd::RawFd {
        self.0.as_raw_fd()
    }
}

impl Prepared {
    /// Sends the connections (network `allowlist` and `ask`) and the terminal resizes of the
    /// commands this confines to `supervisor` (`seccomp.rs`): launchers hand it their filter's
    /// listener ([`Self::apply_to_launcher_with`]).
    #[cfg(target_os = "linux")]
    pub fn supervised_by(mut self, supervisor: std::sync::Arc<crate::net::Supervisor>) -> Self {
        // Every variant assembles (`seccomp.rs`'s tests); were one not to, the filter stays.
        if let Some(filter) = self
            .filter
            .as_ref()
            .and_then(crate::seccomp::Filter::with_resizes_supervised)
        {
            self.filter = Some(filter);
        }
        self.supervisor = Some(supervisor);
        self
    }

    /// Says that the commands this confines run in a network namespace of the session's own
    /// (where the network is filtered): the caller put them there (`agentty-core`'s
    /// `namespace`), and the supervisor makes their listening sockets (`net/listening.rs`).
    pub fn in_network_namespace(mut self) -> Self {
        if let NetEnforcement::Filtered { namespace, .. } = &mut self.enforcement.network {
            *namespace = true;
        }
        self
    }

    /// What this prepared sandbox enforces; `enforcement().line()` is the result line.
    pub fn enforcement(&self) -> Enforcement {
        self.enforcement
    }

    /// Confines the calling process. Meant for the child between fork and exec: only raw syscalls
    /// on data prepared before the fork, no allocation, no lock. A no-op when nothing is confined.
    /// The same as [`Self::apply_own`] then [`Self::apply_shared`].
    pub fn apply_in_child(&self) -> std::io::Result<()> {
        self.apply_own()?;
        self.apply_shared()
    }

    /// The part of the sandbox that must be each command's own: its Landlock domain. Landlock
    /// scopes signals and abstract unix sockets to a domain, so two commands that shared one
    /// could signal and reach each other; each makes its own, beside every other.
    /// Async-signal-safe, as [`Self::apply_in_child`].
    pub fn apply_own(&self) -> std::io::Result<()> {
        #[cfg(target_os = "linux")]
        if let Some(fd) = &self.ruleset {
            crate::landlock::restrict_self(fd.as_raw_fd())?;
        }
        Ok(())
    }

    /// The fd [`Self::apply_own`] uses, if any: the command's own ruleset.
    pub fn own_fd(&self) -> Option<std::os::fd::RawFd> {
        #[cfg(target_os = "linux")]
        if let Some(fd) = &self.ruleset {
            return Some(fd.as_raw_fd());
        }
        None
    }

    /// The command's own part ([`Self::apply_own`]) for a command whose `/dev/pts` is a devpts
    /// instance of its own, rooted at `terminals` (`agentty-core`'s `spawn/terminals.rs`):
    /// the same rules made again, and one more there (Landlock binds rules to inodes, and
    /// the instance is not the one the plan's `/dev/pts` rule was made on). `None` where no
    /// Landlock domain is made.
    #[cfg(target_os = "linux")]
    pub fn own_with_terminals(
        &self,
        terminals: std::os::fd::BorrowedFd<'_>,
    ) -> Result<Option<OwnRules>, SandboxError> {
        if self.ruleset.is_none() {
            return Ok(None);
        }
        let (anchors, refuse_tcp) = &self.own_made_of;
        let fd = crate::landlock::build_ruleset(anchors, *refuse_tcp, Some(terminals))?;
        Ok(fd.map(OwnRules))
    }

    /// The part of the sandbox that may be shared, applied to the calling thread (and so to
    /// every process it starts after): the reads' ruleset made by `prepare` (where paths are
    /// kept from reads), the seccomp filter and the capabilities dropped. A spawning thread may
    /// take it once for all its children (the filter's compile, and the reads' rules, are the
    /// costly steps of a confined spawn); `no_new_privs` comes with it. Async-signal-safe.
    ///
    /// A filter that sends calls to a supervisor is installed here without a listener (such a
    /// child's connects and resizes fail with ENOSYS); a launcher hands its listener to the
    /// supervisor with [`Self::apply_to_launcher_with`].
    pub fn apply_shared(&self) -> std::io::Result<()> {
        #[cfg(target_os = "linux")]
        {
            self.apply_shared_with(self.reads.as_ref())
        }
        #[cfg(not(target_os = "linux"))]
        {
            Ok(())
        }
    }

    /// The fd [`Self::apply_shared`] uses, if any: the reads' ruleset made by `prepare`.
    pub fn shared_fd(&self) -> Option<std::os::fd::RawFd> {
        #[cfg(target_os = "linux")]
        {
            self.reads.as_ref().and_then(Ruleset::fd)
        }
        #[cfg(not(target_os = "linux"))]
        {
            None
        }
    }

    /// [`Self::apply_shared`] with the reads' ruleset `reads` (one [`Self::reads_now`] gave).
    pub fn apply_shared_with(&self, reads: Option<&Ruleset>) -> std::io::Result<()> {
        #[cfg(target_os = "linux")]
        {
            if let Some(reads) = reads {
                reads.apply()?;
            }
            if let Some(filter) = &self.filter {
                filter.install_unlistened()?;
            }
            if self.drop_caps {
                crate::caps::drop_in_child()?;
            }
        }
        #[cfg(not(target_os = "linux"))]
        let _ = reads;
        Ok(())
    }

    /// [`Self::apply_shared_with`] for a thread that clones commands (not a child between clone
    /// and exec: this may allocate and lock): the filter's listener, if any, goes to the
    /// supervisor, which then answers the connects of every command the thread starts, all of
    /// them `caller`'s (`None`: the session's), whose share the files it holds for them count
    /// against.
    pub fn apply_to_launcher_with(
        &self,
        reads: Option<&Ruleset>,
        caller: Option<&str>,
    ) -> std::io::Result<()> {
        if let Some(listener) = self.apply_to_cloner_with(reads)?
            && !self.adopt_listener(listener, caller, false)
        {
            return Err(std::io::Error::other(crate::notice::LISTENERS_FULL));
        }
        Ok(())
    }

    /// [`Self::apply_to_launcher_with`] for a thread whose fd table is not the server's (the
    /// supervisor could not read a listener made there): the filter's listener, if any, is
    /// given back, for a thread in the server's table to take a copy of and hand to the
    /// supervisor ([`Self::adopt_listener`]). It must be: a listener let go of leaves the
    /// filter's supervised calls failing (ENOSYS) and a command free to install a listener of
    /// its own, so a thread that cannot hand it over clones nothing.
    pub fn apply_to_cloner_with(
        &self,
        reads: Option<&Ruleset>,
    ) -> std::io::Result<Option<std::os::fd::OwnedFd>> {
        #[cfg(target_os = "linux")]
        {
            if let Some(reads) = reads {
                reads.apply()?;
            }
            // A listener only where there is a supervisor to answer it; with none, the filter
            // has no listener (never one dropped: see `Filter::install_unlistened`).
            let listener = match (&self.filter, &self.supervisor) {
                (Some(filter), Some(_)) => filter.install()?,
                (Some(filter), None) => {
                    filter.install_unlistened()?;
                    None
                }
                (None, _) => None,
            };
            if self.drop_caps {
                crate::caps::drop_in_child()?;
            }
            Ok(listener)
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = reads;
            Ok(None)
        }
    }

    /// Hands a listener [`Self::apply_to_cloner_with`] gave (its copy in the server's table) to
    /// the supervisor, for the commands of `caller` (`None`: the session's). `per_spawn`: the
    /// filter is one spawn's alone (a spawn no launcher took), so its listener counts against
    /// the most the supervisor keeps for one caller (a launcher's, or a terminal spawn's, are
    /// bounded by the launchers and terminals there are). False when it was not taken (no
    /// supervisor, or that bound reached): the thread that installed the filter must then clone
    /// nothing.
    pub fn adopt_listener(
        &self,
        listener: std::os::fd::OwnedFd,
        caller: Option<&str>,
        per_spawn: bool,
    ) -> bool {
        #[cfg(target_os = "linux")]
        if let Some(supervisor) = &self.supervisor {
            return supervisor.adopt(listener, crate::net::owner(caller), per_spawn);
        }
        let _ = (listener, caller, per_spawn);
        false
    }

    /// [`Self::apply_to_launcher_with`] with the reads' ruleset made by `prepare`, for the
    /// session's commands.
    pub fn apply_to_launcher(&self) -> std::io::Result<()> {
        #[cfg(target_os = "linux")]
        {
            self.apply_to_launcher_with(self.reads.as_ref(), None)
        }
        #[cfg(not(target_os = "linux"))]
        {
            Ok(())
        }
    }

    /// [`Self::apply_to_cloner_with`] with the reads' ruleset made by `prepare`, for the
    /// session's commands.
    pub fn apply_to_cloner(&self) -> std::io::Result<Option<std::os::fd::OwnedFd>> {
        #[cfg(target_os = "linux")]
        {
            self.apply_to_cloner_with(self.reads.as_ref())
        }
        #[cfg(not(target_os = "linux"))]
        {
            Ok(None)
        }
    }

    /// The reads' ruleset for a command starting now (`None` where nothing is kept from reads):
    /// the latest one made, or, when a directory above a hidden path changed since, one made
    /// now. Making it again may fail (a directory that can no longer be listed): the latest one
    /// is kept, still hiding what it hid, and the error is given beside it.
    pub fn reads_now(&self) -> RulesetNow {
        self.reads_now_in(None, None)
    }

    /// [`Self::reads_now`] for a command that runs in another mount namespace than the plan's
    /// (`Unreadable::seen_from`), whose root this process sees at `seen_from`
    /// (`/proc/<pid>/root` of a process in it), and that may read `readable` inside the hidden
    /// paths instead of the plan's exceptions (an HTTP caller's own directories); `None` for
    /// the plan's. Rules bind to inodes, and a namespace with a `/proc` of its own (an HTTP
    /// caller's PID namespace) has other ones there: each such view gets a ruleset of its own,
    /// kept for the next command. Where that one cannot be made, the plan's is given (it hides
    /// the same paths, and may refuse more) with the error.
    pub fn reads_now_in(
        &self,
        seen_from: Option<&std::path::Path>,
        readable: Option<&[std::path::PathBuf]>,
    ) -> RulesetNow {
        #[cfg(target_os = "linux")]
        if let Some(refresh) = &self.refresh {
            let mut refresh = refresh.lock().unwrap_or_else(PoisonError::into_inner);
            let (ruleset, failed) = refresh.now(seen_from, readable);
            return RulesetNow {
                ruleset: Some(ruleset),
                failed,
            };
        }
        #[cfg(not(target_os = "linux"))]
        let _ = (seen_from, readable);
        RulesetNow {
            #[cfg(target_os = "linux")]
            ruleset: None,
            failed: None,
        }
    }
}

/// A Landlock ruleset made ready, shared by the threads and commands that apply it.
#[derive(Debug, Clone)]
pub struct Ruleset(#[cfg(target_os = "linux")] Arc<OwnedFd>);

impl Ruleset {
    /// Confines the calling thread with this ruleset (a Landlock layer of its own).
    /// Async-signal-safe: two system calls on a prepared fd, no allocation, no lock.
    pub fn apply(&self) -> std::io::Result<()> {
        #[cfg(target_os = "linux")]
        crate::landlock::restrict_self(self.0.as_raw_fd())?;
        Ok(())
    }

    /// The fd [`Self::apply`] uses.
    pub fn fd(&self) -> Option<std::os::fd::RawFd> {
        #[cfg(target_os = "linux")]
        {
            Some(self.0.as_raw_fd())
        }
        #[cfg(not(target_os = "linux"))]
        {
            None
        }
    }

    /// Which ruleset this is: the same for every clone, another for one made again (while this
    /// one lives).
    pub fn key(&self) -> usize {
        #[cfg(target_os = "linux")]
        {
            Arc::as_ptr(&self.0) as usize
        }
        #[cfg(not(target_os = "linux"))]
        {
            std::ptr::from_ref(self) as usize
        }
    }
}

/// What [`Prepared::reads_now`] gives: the reads' ruleset to apply, and why it could not be made
/// again when it could not.
#[derive(Debug)]
pub struct RulesetNow {
    #[cfg(target_os = "linux")]
    ruleset: Option<Ruleset>,
    pub failed: Option<SandboxError>,
}

impl RulesetNow {
    /// The ruleset to apply, if any.
    pub fn ruleset(&self) -> Option<&Ruleset> {
        #[cfg(target_os = "linux")]
        {
            self.ruleset.as_ref()
        }
        #[cfg(not(target_os = "linux"))]
        {
            None
        }
    }
}

/// Other views kept (`reads_now_in`), past which the one used least recently goes: one per HTTP
/// caller, and one more each time a caller's namespace was made again.
#[cfg(target_os = "linux")]
const KEPT_VIEWS: usize = 32;

/// How the reads' ruleset is made again (`reads_now`), and the latest one of each view.
#[cfg(target_os = "linux")]
#[derive(Debug)]
struct Refresh {
    writable: Vec<crate::plan::Writable>,
    /// What is hidden, seen from the plan's namespace.
    unreadable: crate::unreadable::Unreadable,
    /// The plan's view.
    own: View,
    /// Other views (another namespace's root, other exceptions), by what makes them other; the
    /// one used last is last.
    others: Vec<(ViewKey, View)>,
}

/// What sets a view apart from the plan's: where the commands' root is seen, and what they may
/// read inside the hidden paths.
#[cfg(target_os = "linux")]
type ViewKey = (Option<std::path::PathBuf>, Option<Vec<std::path::PathBuf>>);

/// The latest reads' ruleset made from one view of the files, and the stamp it was made with.
#[cfg(target_os = "linux")]
#[derive(Debug)]
struct View {
    current: Ruleset,
    stamp: crate::unreadable::Stamp,
}

#[cfg(target_os = "linux")]
impl View {
    /// The ruleset made from `unreadable`'s view now, with its stamp (no ruleset where the
    /// kernel made none).
    fn make(
        writable: &[crate::plan::Writable],
        unreadable: &crate::unreadable::Unreadable,
    ) -> Result<(Option<Ruleset>, crate::unreadable::Stamp), SandboxError> {
        let (fd, stamp) = crate::landlock::build_reads(writable, unreadable)?;
        Ok((fd.map(|fd| Ruleset(Arc::new(fd))), stamp))
    }

    /// Makes the ruleset again if a directory changed since; on failure the latest is kept,
    /// and not tried again until the directories change once more.
    fn refresh(
        &mut self,
        writable: &[crate::plan::Writable],
        unreadable: &crate::unreadable::Unreadable,
    ) -> Option<SandboxError> {
        if self.stamp.is_current() {
            return None;
        }
        match View::make(writable, unreadable) {
            Ok((ruleset, stamp)) => {
                if let Some(ruleset) = ruleset {
                    self.current = ruleset;
                }
                self.stamp = stamp;
                None
            }
            Err(e) => {
                self.stamp = self.stamp.retaken();
                Some(e)
            }
        }
    }
}

#[cfg(target_os = "linux")]
impl Refresh {
    /// The ruleset for a command seen from `seen_from` that may read `readable` in the hidden
    /// paths (`None`s: the plan's view), made again where its directories changed, made now for
    /// a view not seen before.
    fn now(
        &mut self,
        seen_from: Option<&std::path::Path>,
        readable: Option<&[std::path::PathBuf]>,
    ) -> (Ruleset, Option<SandboxError>) {
        let seen_from = seen_from.filter(|r| Some(*r) != self.unreadable.seen_from.as_deref());
        let readable = readable.filter(|r| *r != self.unreadable.readable.as_slice());
        if seen_from.is_none() && readable.is_none() {
            let failed = self.own.refresh(&self.writable, &self.unreadable);
            return (self.own.current.clone(), failed);
        }
        let key: ViewKey = (seen_from.map(Into::into), readable.map(<[_]>::to_vec));
        let unreadable = crate::unreadable::Unreadable {
            seen_from: key.0.clone().or_else(|| self.unreadable.seen_from.clone()),
            readable: key
                .1
                .clone()
                .unwrap_or_else(|| self.unreadable.readable.clone()),
            hidden: self.unreadable.hidden.clone(),
        };
        if let Some(at) = self.others.iter().position(|(k, _)| *k == key) {
            let mut entry = self.others.remove(at);
            let failed = entry.1.refresh(&self.writable, &unreadable);
            let ruleset = entry.1.current.clone();
            self.others.push(entry);
            return (ruleset, failed);
        }
        match View::make(&self.writable, &unreadable) {
            Ok((Some(current), stamp)) => {
                if self.others.len() >= KEPT_VIEWS {
                    self.others.remove(0);
                }
                let view = View {
                    current: current.clone(),
                    stamp,
                };
                self.others.push((key, view));
                (current, None)
            }
            // Never no rules: the plan's still hides every path.
            Ok((None, _)) => (self.own.current.clone(), None),
            Err(e) => (self.own.current.clone(), Some(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn prepared_is_send_and_sync() {
        fn shareable<T: Send + Sync>() {}
        shareable::<super::Prepared>();
    }
}
