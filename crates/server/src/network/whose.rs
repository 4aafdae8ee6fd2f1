//! Whose a connection or a process is, over HTTP among several callers (docs/BEHAVIOUR.md
//! §13): the call a process belongs to by its run marker (its own, else its nearest marked
//! parent's), believed within its caller's PID namespaces; and the supervisor's notes of who
//! each connection to the proxy was made for, which the proxy takes to decide whether a
//! request's credentials are the connecting command's own.

use std::net::SocketAddr;
use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant};

use super::{CallNet, Egress};

/// Connections to the proxy whose maker is kept until the proxy has read their request (or
/// failed to: a note never outlives its connection). Past it the oldest note goes, and over
/// HTTP that connection's credentials are refused (`Egress::may_use`): a caller holding this
/// many connections open unread (each for up to the proxy's 30 s wait) can make another's
/// fail, never make one pass.
const PEERS_KEPT: usize = 4096;
/// How long a note of who a proxy connection is for is kept at most: past the supervisor's
/// wait for a connection to be made (60 s) and the proxy's for its request (30 s), a note
/// left is of a connection the proxy never read (its accept loop stalled), whose port another
/// connection may get later.
const PEER_NOTE_KEPT: Duration = Duration::from_secs(120);
/// How many parents of a process with no run marker are looked at for one.
const MARKER_PARENTS_MAX: usize = 16;
/// How much of each one's environment is looked at: the marker is first in what agentty starts,
/// and a process that moved it further (a shell exporting its variables in its own order) is
/// passed for its parent. The look runs on the supervisor's thread for every connect, which all
/// sessions share: whole environments (up to 4 MiB each, 16 deep) let one command slow every
/// other's connects.
const MARKER_ENVIRON_BYTES: usize = 16 << 10;

/// Who a connection to the proxy was made for, as the supervisor told it.
pub(super) struct ProxyPeer {
    /// The PID namespaces the process it was made for runs within, its own first (empty where
    /// there are none to tell).
    pub(super) pid_namespaces: Vec<(u64, u64)>,
    /// That process's call (by its run marker, believed as [`Egress::by_pid`] says).
    pub(super) call: Option<Arc<CallNet>>,
}

impl Egress {
    /// The call a process belongs to, by the run marker in its environment: believed where the
    /// process runs within the PID namespace of that call's caller (in it, or in one a command
    /// of that caller made below it), or where either is unknown (no namespaces: an
    /// unprivileged server). A marker is text another caller's command could have copied.
    pub(super) fn by_pid(&self, pid: u32) -> Option<Arc<CallNet>> {
        self.by_pid_within(
            pid,
            &agentty_core::namespace::pid_namespaces_of_process(pid),
        )
    }

    /// [`Self::by_pid`] for a process within `namespaces` (its PID namespaces, its own first).
    fn by_pid_within(&self, pid: u32, namespaces: &[(u64, u64)]) -> Option<Arc<CallNet>> {
        let call = self.by_marker_of(pid)?;
        let callers = agentty_core::namespace::pid_namespace_of(call.caller.as_deref());
        match callers {
            Some(callers) if !namespaces.is_empty() && !namespaces.contains(&callers) => None,
            _ => Some(call),
        }
    }

    /// The call named by the run marker in process `pid`'s environment or, for a process with
    /// none (a tool that starts its children with an environment of its own: `env -i`, tox),
    /// in its nearest parent's that has one: a process cannot choose its parent, and an orphan
    /// goes to the session's init, which has none.
    fn by_marker_of(&self, pid: u32) -> Option<Arc<CallNet>> {
        let mut at = pid;
        for _ in 0..MARKER_PARENTS_MAX {
            if let Some(marker) =
                agentty_core::sweep::run_marker_near_start(at, MARKER_ENVIRON_BYTES)
            {
                return self.call_of(&marker);
            }
            at = agentty_core::parent_of(at).filter(|&parent| parent > 1)?;
        }
        None
    }

    /// The supervisor connected process `pid` to the proxy from `from`: who that is, kept until
    /// the proxy has read the request (or failed to), whatever it was.
    pub(super) fn note_peer(&self, pid: u32, from: SocketAddr) {
        let pid_namespaces = agentty_core::namespace::pid_namespaces_of_process(pid);
        let peer = ProxyPeer {
            call: self.by_pid_within(pid, &pid_namespaces),
            pid_namespaces,
        };
        let mut peers = self.peers.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        while peers.len() >= PEERS_KEPT
            || peers
                .front()
                .is_some_and(|(.., at)| now.duration_since(*at) > PEER_NOTE_KEPT)
        {
            peers.pop_front();
        }
        peers.push_back((from, peer, now));
    }

    /// Who the proxy's connection from `from` was made for, taken; `None` for one the supervisor
    /// did not make (a process of this machine outside the sandbox).
    pub(super) fn peer_from(&self, from: SocketAddr) -> Option<ProxyPeer> {
        let from = SocketAddr::new(from.ip().to_canonical(), from.port());
        let mut peers = self.peers.lock().unwrap_or_else(PoisonError::into_inner);
        let at = peers.iter().rposition(|(at, ..)| *at == from)?;
        peers
            .remove(at)
            .filter(|(.., noted)| noted.elapsed() <= PEER_NOTE_KEPT)
            .map(|(_, peer, _)| peer)
    }

    /// Whether the process a proxy connection was made for (`None`: a connection the supervisor
    /// did not make) may use `call`'s credentials: only one of the same caller (over stdio, the
    /// one; over HTTP, the same token of the token file), told by the PID namespace it runs
    /// within where there are namespaces, else by its run marker. Over HTTP, where several
    /// callers share the proxy, what cannot be told is refused: a connection the supervisor
    /// did not make (every command of an HTTP caller is confined, so each of theirs is made by
    /// it; another is the proxy's own, chained through itself), and one of a process with no run
    /// marker where there are no namespaces.
    pub(super) fn may_use(&self, peer: Option<&ProxyPeer>, call: &CallNet) -> bool {
        let one_caller = call.caller.is_none();
        let Some(peer) = peer else {
            return one_caller;
        };
        if peer
            .call
            .as_ref()
            .is_some_and(|theirs| theirs.caller != call.caller)
        {
            return false;
        }
        let callers = agentty_core::namespace::pid_namespace_of(call.caller.as_deref());
        match callers {
            Some(callers) if !peer.pid_namespaces.is_empty() => {
                peer.pid_namespaces.contains(&callers)
            }
            _ => peer.call.is_some() || one_caller,
        }
    }
}
