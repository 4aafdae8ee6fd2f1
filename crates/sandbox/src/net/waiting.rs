//! Connects a command waits for, in the kernel, while the supervisor's thread goes on: a TCP
//! connection being made for a socket that blocks (polled until it is writable, or
//! [`CONNECT_WAIT`] passed), and a unix connect to a listener whose backlog is full (tried again,
//! from [`BACKLOG_RETRY_FIRST`] to [`BACKLOG_RETRY_MAX`] apart, until there is room, or the
//! socket's send timeout passed, as the kernel's own connect waits).
//!
//! The supervisor's one thread serves every session's commands, and each wait holds one of the
//! server's fds (a TCP connection's socket; a unix connect's path, an abstract name's none, and
//! a socket only while it is tried): at most [`WAITERS_MAX`] of each kind wait at once, and at
//! most [`WAITERS_PER_OWNER`] of one caller's commands (`closer::Owner`: the session's over
//! stdio, each caller's over HTTP, whatever number of filters its launchers have), so one
//! caller can neither take every place nor run the server out of fds; and however many callers
//! take them, each has [`WAITERS_FLOOR_PER_OWNER`] of its own. Past that, one fails at once
//! with EAGAIN, as a non-blocking socket's would. A `multiprocessing` pool of 48 workers
//! that reach a manager at once (its backlog is 16) has about 31 waiting.

use std::os::fd::{AsRawFd, RawFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::closer::ClosedElsewhere;
use super::notify;
use super::supervisor::{Judge, Listener, Step, hand_over, set_blocking, socket_error};
use super::unix::Unix;

/// How long a command whose socket blocks waits for a connection the supervisor makes (a
/// listed address that does not answer): about the kernel's own SYN retries.
const CONNECT_WAIT: Duration = Duration::from_secs(60);

/// How soon a unix connect to a full backlog is tried again: the listener's `accept` makes room
/// without a sign the supervisor could poll for. Each later try waits twice as long, up to
/// [`BACKLOG_RETRY_MAX`].
const BACKLOG_RETRY_FIRST: Duration = Duration::from_millis(5);

/// The longest between two tries of a unix connect to a full backlog.
const BACKLOG_RETRY_MAX: Duration = Duration::from_millis(80);

/// Connects of one kind (a TCP connection being made, a unix connect waiting for room in a
/// backlog) that wait at once, at most.
const WAITERS_MAX: usize = 256;

/// Connects of one kind of one caller's commands that wait at once, at most.
const WAITERS_PER_OWNER: usize = 64;

/// Connects of one kind of one caller's commands that may wait past [`WAITERS_MAX`]: however
/// many other callers' commands wait, each caller's may, this many at once. The places stay
/// bounded by the callers the server has (the token file's names, and the session's): at most
/// `WAITERS_MAX + WAITERS_FLOOR_PER_OWNER × callers` of each kind.
const WAITERS_FLOOR_PER_OWNER: usize = 8;

/// A connect a command waits for.
pub(super) struct Pending {
    listener: Arc<Listener>,
    id: u64,
    /// When the command is told the connect failed (`None`: it waits for ever).
    deadline: Option<Instant>,
    on: Awaiting,
}

enum Awaiting {
    /// A TCP connection being made, for the command's fd `target_fd`.
    Connection {
        socket: ClosedElsewhere,
        target_fd: i32,
        cloexec: bool,
    },
    /// A unix listener's full backlog, tried again at `next`, then `after` later.
    Backlog {
        unix: Box<Unix>,
        next: Instant,
        after: Duration,
    },
}

impl Pending {
    /// A TCP connection in progress on `socket`, for the command's `target_fd`.
    pub(super) fn connecting(
        listener: &Arc<Listener>,
        id: u64,
        socket: ClosedElsewhere,
        target_fd: i32,
        cloexec: bool,
    ) -> Self {
        Self {
            listener: Arc::clone(listener),
            id,
            deadline: Some(Instant::now() + CONNECT_WAIT),
            on: Awaiting::Connection {
                socket,
                target_fd,
                cloexec,
            },
        }
    }

    /// A unix connect that found its listener's backlog full; `timeout` is the command's
    /// socket's send timeout.
    pub(super) fn backlogged(
        listener: &Arc<Listener>,
        id: u64,
        timeout: Option<Duration>,
        unix: Box<Unix>,
    ) -> Self {
        let now = Instant::now();
        Self {
            listener: Arc::clone(listener),
            id,
            deadline: timeout.map(|timeout| now + timeout),
            on: Awaiting::Backlog {
                unix,
                next: now + BACKLOG_RETRY_FIRST,
                after: BACKLOG_RETRY_FIRST,
            },
        }
    }

    /// Whether it waits for room in a unix listener's backlog.
    fn waits_for_backlog(&self) -> bool {
        matches!(self.on, Awaiting::Backlog { .. })
    }

    /// Adds `new` to `waiting` if there is a place for it ([`WAITERS_MAX`],
    /// [`WAITERS_PER_OWNER`], [`WAITERS_FLOOR_PER_OWNER`]), once the places of connects no longer asked for are let go (a
    /// signal ended them, and the kernel asks again: the new one must not find its own old place
    /// taken). If not, the command is answered EAGAIN (and a connection being made for it is let
    /// go).
    pub(super) fn admit(new: Self, waiting: &mut Vec<Self>) {
        if new.has_place(waiting) {
            waiting.push(new);
            return;
        }
        waiting.retain(|other| notify::id_valid(other.listener(), other.id));
        if new.has_place(waiting) {
            waiting.push(new);
        } else {
            let _ = notify::answer(new.listener(), new.id, 0, libc::EAGAIN);
        }
    }

    fn has_place(&self, others: &[Self]) -> bool {
        let kind = self.waits_for_backlog();
        let (mut all, mut its) = (0, 0);
        for other in others
            .iter()
            .filter(|other| other.waits_for_backlog() == kind)
        {
            all += 1;
            its += usize::from(Arc::ptr_eq(&other.listener.owner, &self.listener.owner));
        }
        its < WAITERS_FLOOR_PER_OWNER || (its < WAITERS_PER_OWNER && all < WAITERS_MAX)
    }

    fn listener(&self) -> RawFd {
        self.listener.as_raw_fd()
    }

    /// The fd to poll for writing, if it waits for one.
    pub(super) fn polled(&self) -> Option<RawFd> {
        match &self.on {
            Awaiting::Connection { socket, .. } => Some(socket.as_raw_fd()),
            Awaiting::Backlog { .. } => None,
        }
    }

    /// When it must be looked at again without a poll event.
    pub(super) fn wake_at(&self) -> Option<Instant> {
        let next = match &self.on {
            Awaiting::Connection { .. } => None,
            Awaiting::Backlog { next, .. } => Some(*next),
        };
        match (next, self.deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Looked at `now` (`ready`: its polled fd is writable or failed): answered, or still
    /// waiting.
    pub(super) fn step(self, judge: &dyn Judge, ready: bool, now: Instant) -> Option<Self> {
        let listener = self.listener();
        let late = self.deadline.is_some_and(|deadline| now >= deadline);
        match self.on {
            Awaiting::Connection {
                socket,
                target_fd,
                cloexec,
            } => {
                if ready {
                    match socket_error(&socket) {
                        0 => {
                            set_blocking(&socket);
                            hand_over(listener, self.id, &socket, target_fd, cloexec, 0);
                        }
                        errno => {
                            let _ = notify::answer(listener, self.id, 0, errno);
                        }
                    }
                    None
                } else if late {
                    let _ = notify::answer(listener, self.id, 0, libc::ETIMEDOUT);
                    None
                } else {
                    Some(Self {
                        on: Awaiting::Connection {
                            socket,
                            target_fd,
                            cloexec,
                        },
                        ..self
                    })
                }
            }
            Awaiting::Backlog { unix, next, after } => {
                if now < next && !late {
                    return Some(Self {
                        on: Awaiting::Backlog { unix, next, after },
                        ..self
                    });
                }
                // Interrupted (a signal: the kernel asks again) or killed: nothing to answer.
                if !notify::id_valid(listener, self.id) {
                    return None;
                }
                match unix.again(judge, listener, self.id) {
                    Ok(step) => {
                        answer(listener, self.id, step);
                        None
                    }
                    Err(_) if late => {
                        let _ = notify::answer(listener, self.id, 0, libc::EAGAIN);
                        None
                    }
                    Err(unix) => {
                        let after = (after * 2).min(BACKLOG_RETRY_MAX);
                        Some(Self {
                            on: Awaiting::Backlog {
                                unix,
                                next: now + after,
                                after,
                            },
                            ..self
                        })
                    }
                }
            }
        }
    }
}

/// Answers notification `id` as `step` says; a step that waits is not answered here.
pub(super) fn answer(listener: RawFd, id: u64, step: Step) -> Option<Pending> {
    match step {
        Step::CarryOn => {
            let _ = notify::carry_on(listener, id);
        }
        Step::Fail(errno) => {
            let _ = notify::answer(listener, id, 0, errno);
        }
        Step::Succeed => {
            let _ = notify::answer(listener, id, 0, 0);
        }
        Step::Done => {}
        Step::Wait(pending) => return Some(*pending),
    }
    None
}
