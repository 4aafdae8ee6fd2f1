//! The network policy's decisions (docs/BEHAVIOUR.md §13): the supervisor's question about a
//! direct connection or a refused socket, judged here, and each decision noted once: a line of
//! the log, the metrics' count, an entry for the web view, a refusal for the call's result.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::PoisonError;

use super::{
    CallNet, Egress, RECENT_PER_SESSION, RECENT_SESSIONS, Refusal, Seen, Target, Unreach,
    Unreached, Why, notice,
};

impl Egress {
    /// One decision: a line of the log, an entry for the web view, and a refusal for the
    /// call's result.
    pub(super) fn note(
        &self,
        call: Option<&CallNet>,
        target: &Target,
        decision: Result<String, Why>,
    ) {
        let (session, call_id) = call.map_or(("unknown", "-"), |c| (&*c.session, &*c.call));
        let (allowed, rule) = match &decision {
            Ok(rule) => (true, rule.clone()),
            Err(why) => (false, crate::network::notice::network_why_short(why)),
        };
        let what = match &decision {
            Err(Why::Socket { what }) => (*what).to_owned(),
            _ => target.to_string(),
        };
        if allowed {
            tracing::info!("network: allowed {what} ({rule}); session {session} call {call_id}");
        } else {
            tracing::warn!("network: refused {what} ({rule}); session {session} call {call_id}");
            crate::metrics::METRICS.network_refused();
        }
        let time = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let seen = Seen {
            time,
            target: target.clone(),
            allowed,
            rule,
        };
        {
            let mut recent = self.recent.lock().unwrap_or_else(PoisonError::into_inner);
            let index = match recent.iter().position(|(s, _)| s == session) {
                Some(i) => i,
                None => {
                    if recent.len() >= RECENT_SESSIONS {
                        recent.pop_front();
                    }
                    recent.push_back((session.to_owned(), VecDeque::new()));
                    recent.len() - 1
                }
            };
            let list = &mut recent[index].1;
            if list.len() >= RECENT_PER_SESSION {
                list.pop_front();
            }
            list.push_back(seen);
        }
        if let (Some(call), Err(why)) = (call, decision) {
            call.note_refusal(Refusal {
                target: target.clone(),
                why,
            });
        }
    }

    /// An allowed host the proxy could not reach: a line of the log, and a note for the
    /// call's result (the sandbox did not refuse it; allowing it again would change nothing).
    pub(super) fn note_unreached(&self, call: &CallNet, target: &Target, why: Unreach) {
        tracing::info!(
            "network: not reached {target} ({}); session {} call {}",
            notice::unreach_words(why),
            call.session,
            call.call
        );
        call.note_unreached(Unreached {
            target: target.clone(),
            why,
        });
    }

    /// The decisions seen in `session`, oldest first (the web view).
    pub fn recent(&self, session: &str) -> Vec<Seen> {
        self.recent
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .find(|(s, _)| s == session)
            .map(|(_, list)| list.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// The judgement of a direct connection (the supervisor's question).
    pub(super) fn judge_direct(&self, pid: u32, to: SocketAddr) -> agentty_sandbox::Verdict {
        use agentty_sandbox::Verdict;
        if self.proxy.get() == Some(&to) {
            return Verdict::Connect;
        }
        let call = self.by_pid(pid);
        let target = Target {
            host: to.ip().to_string(),
            port: to.port(),
        };
        let decision = if super::address::reaches_loopback(to.ip()) {
            if !self.loopback {
                Err(Why::LoopbackClosed)
            } else if to.port() == 53 {
                Err(Why::LocalDns)
            } else {
                Ok("loopback".to_owned())
            }
        } else if let Some(rule) = self.list.address_rule(to.ip(), to.port()) {
            Ok(rule.named())
        } else {
            Err(Why::Direct)
        };
        let verdict = if decision.is_ok() {
            Verdict::Connect
        } else {
            Verdict::Refuse
        };
        self.note(call.as_deref(), &target, decision);
        verdict
    }
}

impl agentty_sandbox::Judge for Egress {
    fn judge(&self, pid: u32, to: SocketAddr) -> agentty_sandbox::Verdict {
        self.judge_direct(pid, to)
    }

    /// Refused while a secret is typed into that terminal (a shell's `type_secret`).
    fn resize(
        &self,
        terminal: std::os::fd::BorrowedFd<'_>,
        size: &libc::winsize,
    ) -> std::io::Result<()> {
        agentty_core::pty::typed_into::resize_unless_typed_into(terminal, size)
    }

    fn unix_checked(&self) -> bool {
        !self.loopback
    }

    /// With loopback closed, a unix socket is reached when a confined command listens on it (a
    /// test suite's own server, Python's `multiprocessing`); the machine's services (docker,
    /// D-Bus, ssh-agent) are not.
    fn judge_unix(&self, pid: u32, named: &str, commands: bool) -> agentty_sandbox::Verdict {
        let call = self.by_pid(pid);
        let target = Target {
            host: format!("unix:{named}"),
            port: 0,
        };
        let decision = if commands {
            Ok(notice::UNIX_OWN.to_owned())
        } else {
            Err(Why::UnixService)
        };
        self.note(call.as_deref(), &target, decision);
        if commands {
            agentty_sandbox::Verdict::Connect
        } else {
            agentty_sandbox::Verdict::Refuse
        }
    }

    fn connected(&self, pid: u32, from: SocketAddr, to: SocketAddr) {
        if self.proxy.get() == Some(&to) {
            self.note_peer(pid, from);
        }
    }

    fn refused_socket(&self, pid: u32, family: i32, kind: i32, protocol: i32) {
        use notice as words;
        let what = match (family, kind & 0xf) {
            // `ping` without privileges: a datagram socket of ICMP, not UDP.
            (libc::AF_INET, libc::SOCK_DGRAM) if protocol == libc::IPPROTO_ICMP => {
                words::SOCKET_ICMP
            }
            (libc::AF_INET6, libc::SOCK_DGRAM) if protocol == libc::IPPROTO_ICMPV6 => {
                words::SOCKET_ICMPV6
            }
            (libc::AF_INET | libc::AF_INET6, libc::SOCK_DGRAM) => words::SOCKET_UDP,
            (libc::AF_INET | libc::AF_INET6, libc::SOCK_RAW) => words::SOCKET_RAW,
            (libc::AF_INET | libc::AF_INET6, _) => words::SOCKET_OTHER_IP,
            (libc::AF_PACKET, _) => words::SOCKET_PACKET,
            // Loopback closed: a unix datagram socket would send to any daemon's socket.
            (libc::AF_UNIX, libc::SOCK_DGRAM) if !self.loopback => {
                let call = self.by_pid(pid);
                let target = Target {
                    host: words::UNIX_DATAGRAM.to_owned(),
                    port: 0,
                };
                self.note(call.as_deref(), &target, Err(Why::UnixService));
                return;
            }
            // Unix sockets in plan mode are not the network's business.
            (libc::AF_UNIX, _) => return,
            _ => words::SOCKET_OTHER_FAMILY,
        };
        let call = self.by_pid(pid);
        let target = Target {
            host: "-".to_owned(),
            port: 0,
        };
        self.note(call.as_deref(), &target, Err(Why::Socket { what }));
    }
}
