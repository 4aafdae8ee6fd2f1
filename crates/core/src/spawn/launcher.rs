//! Confined children cloned by threads that are confined already.
//!
//! A child inherits from the thread that clones it the seccomp filter, the capabilities it
//! dropped and the namespaces it is in, for nothing. Applied by the child itself, each costs the
//! kernel work per spawn, and the filter a lot: it is compiled to machine code at every install,
//! which interrupts every CPU, and released again at every exit. On a 2-vCPU VM (Linux 6.18) a
//! `vfork`+`exec` of `true` that installed a filter in the child took 1406–1949 µs where one
//! cloned by an already filtered thread took 1170–1766 µs and one without a filter 1110–1484 µs
//! (four runs of 1000 each, interleaved; a C program, not kept).
//!
//! So each confinement gets a pool of *launchers* per namespace (the session's, or over HTTP each
//! caller's) and per caller (`Confine::caller`: what a launcher's filter has the network
//! supervisor hold for its commands is counted as that caller's), up to two per CPU, started
//! as spawns come in at once: threads that enter the namespaces and apply the shareable part of the confinement (`Confine::apply_shared`) to
//! themselves once, and then clone each child they are handed. (A launcher cannot move to
//! another namespace per spawn: `setns` needs `CAP_SYS_ADMIN`, which the shared part drops.
//! So a spawn with a `/dev/pts` of its own, `terminals.rs`, gets a launcher of its own that
//! mounts it first, made ahead with its mount namespace: `spare.rs`.)
//! A plan goes to the launcher with the fewest plans queued, and it owns all the child uses (its
//! fds included), so the asker does not wait on the clone: an async task awaits the
//! answer and its worker thread runs other tasks meanwhile, where it used to sit blocked until
//! the child had exec'd. The launcher registers the child with the reaper itself; a child
//! nobody waits for any more (the asker was dropped meanwhile) has its process group killed at
//! once, so nothing runs that no one supervises.
//!
//! A launcher is two threads. The one that clones (the *cloner*) makes its fd table its own
//! once it is confined, empty, and is handed each spawn's fds with the plan (`own_table.rs`),
//! so a child copies those and nothing else of the server's: a child that copied the server's
//! table could hold the last reference of another caller's command's pipe, and hang on its
//! lock in its `exec` (a test holds this: `a_file_let_go_while_a_child_is_cloned_never_holds_that_child`).
//! An fd number of the server's means another file there, so the cloner drops nothing the
//! server owns and wakes no task: it passes each plan on, with the child's pid, to the
//! launcher's answering thread (`agentty-launched`), in the server's table, which opens the
//! child's pidfd, lets the plan go and answers. Where the server cannot take a cloner's end
//! (a kernel without `PIDFD_THREAD`, Linux 6.9, or a container's seccomp profile that refuses
//! `pidfd_getfd`: `own_table::supported`), cloners share the server's table as before. A plan
//! no launcher takes (none could be set up, or its fds could not be sent: a full socket, or the
//! user's fds in flight at their limit, which the same user's commands can fill) is cloned
//! apart (`claim.rs`, `own_table::apart`): by a launcher for that spawn alone, a thread that
//! enters the namespaces, takes copies of what the child uses into an empty table, then takes
//! the shared part, its filter's listener taken into the server's table by the asking thread
//! (`Confine::apply_to_cloner`, `Confine::adopt_listener`). A spawn with a `/dev/pts` of its
//! own is cloned by a launcher of its own made ahead (`spare.rs`), the same way.
//!
//! What must stay each command's own is not shared: every child still makes its own Landlock
//! domain (`Confine::apply_own`), because Landlock scopes signals and abstract unix sockets to a
//! domain, and commands sharing one could signal and reach each other (a test holds this:
//! `commands_cannot_signal_or_reach_each_other`). Otherwise the child does what it did: its
//! process group or terminal, its stdio, its workdir, and `exec`, with the same checks. Where no
//! thread can take copies of the server's fds (`own_table::works_apart`), the asking thread
//! clones a child no launcher takes, which applies all of it itself, and reports a failure as
//! before.
//!
//! Unconfined children (`--no-sandbox`, `auto` mode) have a pool too, of launchers with nothing
//! to apply: the clone waits until the child has exec'd, and on the runtime's worker that wait
//! held every other request back (on 2 CPUs with one worker, 16 sessions made 0.84x the calls a
//! second they made with launchers).

use std::io;
use std::os::fd::{OwnedFd, RawFd};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender, SyncSender, channel, sync_channel};
use std::sync::{Arc, Mutex, PoisonError};

use tokio::runtime::Handle;

use super::Confine;
use super::exec::{self, ExecPlan};
use super::own_table;
use super::signals;
use crate::namespace::Namespace;
use crate::reaper::{self, ExitWatch};

/// Pools kept, one per confinement, namespace and caller; past this the pool used least
/// recently is let go. A server has one confinement, and over HTTP one pool per caller (a token
/// of the token file, with a namespace of its own where there are namespaces); tests make
/// more. With more callers at work at once, a caller's spawn may start a launcher again.
pub(super) const KEPT_POOLS: usize = 16;

/// At most this many launchers per confinement, however many CPUs there are: each holds a
/// thread and a compiled filter, and a spawn is short.
const MAX_LAUNCHERS: usize = 8;

/// Launchers per CPU, up to [`MAX_LAUNCHERS`]. A launcher is held from the clone until its child
/// has exec'd (`CLONE_VFORK`) and cannot take the next plan meanwhile: with two per CPU, one
/// clones while the other's child sets itself up. On 2 CPUs, 16 sessions making trivial calls
/// made 2017-2030 calls/s with two per CPU against 1945-1963 with one, and 1908-1988 with three
/// (three interleaved runs each of a raw-socket load harness).
const LAUNCHERS_PER_CPU: usize = 2;

/// Plans handed to a pool after a launcher could not be set up before another is tried: a
/// thread refused once (EAGAIN under a fork bomb) may be granted later, and a set-up that always
/// fails costs one thread start per this many plans.
const RETRY_AFTER_PLANS: u32 = 32;

/// A launcher's own stack: it only loops over a channel and clones (each child runs on a stack
/// of its own, `exec.rs`).
pub(super) const LAUNCHER_STACK_BYTES: usize = 256 * 1024;

/// What a start comes to: the child's pid and the watch of its exit, registered with the reaper.
pub(super) type Started = io::Result<(i32, ExitWatch)>;

/// Where a launcher sends what it started.
pub(super) enum Reply {
    /// A thread blocked until the answer comes.
    Wait(SyncSender<Started>),
    /// A task that awaits it.
    Await(tokio::sync::oneshot::Sender<Started>),
}

impl Reply {
    /// A reply to the task that calls this, on its runtime, for the child marked `marker`;
    /// `None` outside a runtime.
    pub(super) fn to_task(marker: &str) -> Option<(Self, Answer)> {
        Handle::try_current().ok()?;
        let (tx, rx) = tokio::sync::oneshot::channel();
        let answer = Answer {
            rx,
            marker: marker.to_owned(),
            taken: false,
        };
        Some((Reply::Await(tx), answer))
    }

    /// Sends `started`; when nobody waits for it any more, the child's whole tree is stopped.
    fn send(self, started: Started, marker: &str) {
        let unclaimed = match self {
            Reply::Wait(tx) => tx.send(started).err().map(|unsent| unsent.0),
            Reply::Await(tx) => tx.send(started).err(),
        };
        if let Some(Ok((pid, watch))) = unclaimed {
            stop_unclaimed(pid, watch, marker);
        }
    }
}

/// What a task awaits a launcher's answer on. Whoever is dropped first stops the child: the
/// launcher when it finds this gone, or this when the answer came but was never taken (the
/// task was dropped between the launcher's send and its next poll).
pub(super) struct Answer {
    rx: tokio::sync::oneshot::Receiver<Started>,
    marker: String,
    taken: bool,
}

impl std::future::Future for Answer {
    type Output = Result<Started, tokio::sync::oneshot::error::RecvError>;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        let polled = std::pin::Pin::new(&mut self.rx).poll(cx);
        if polled.is_ready() {
            self.taken = true;
        }
        polled
    }
}

impl Drop for Answer {
    fn drop(&mut self) {
        if self.taken {
            return;
        }
        // After close the launcher's send fails (and it stops the child itself), or it came
        // first and its child is here.
        self.rx.close();
        if let Ok(Ok((pid, watch))) = self.rx.try_recv() {
            stop_unclaimed(pid, watch, &self.marker);
        }
    }
}

/// Stops a child nobody waits for any more (the asker was dropped while it was cloned): its
/// group is killed before anything else can run unsupervised, then its tree is stopped as an
/// unowned command's is (`tree::stop_unowned`, no grace), which finds what left the group
/// already (a `setsid` in its first instants). The pin the stop takes keeps the leader
/// unreaped once the watch goes.
pub(super) fn stop_unclaimed(pid: i32, watch: ExitWatch, marker: &str) {
    let _ = watch.or_kill::<()>(Err(io::Error::other("nobody waits for this child")));
    crate::tree::stop_unowned(pid, marker, std::time::Duration::ZERO);
    drop(watch);
}

/// A blocking [`Reply`] and the end it is waited on.
pub(super) fn wait_reply() -> (Reply, Receiver<Started>) {
    let (tx, rx) = sync_channel(1);
    (Reply::Wait(tx), rx)
}

/// One child to start, and where to say so.
pub(super) struct Request {
    /// Its number among its launcher's spawns: its fds come with that number.
    pub(super) spawn: u64,
    pub(super) plan: ExecPlan,
    /// Its run marker, to find its tree if nobody claims it.
    pub(super) marker: String,
    pub(super) reply: Reply,
}

/// One launcher: a thread that clones (its *cloner*, with an fd table of its own where the
/// kernel allows: `own_table.rs`) and one that answers for it in the server's table, and how
/// many plans it has not answered yet.
struct Launcher {
    requests: Sender<Request>,
    queued: Arc<AtomicUsize>,
    /// The server's end of the socket pair each spawn's fds go to the cloner on; `None` where
    /// the cloner shares the server's table.
    fds_to: Option<OwnedFd>,
    /// Spawns handed to it so far: the next one's number.
    handed: u64,
}

/// A plan its cloner has cloned (or failed to), on its way to the answering thread: the pid of
/// the child, registered with the reaper, which the answering thread watches.
pub(super) struct Cloned {
    pub(super) request: Request,
    pub(super) started: io::Result<i32>,
    /// What is kept open until the child is reaped (a spare's copy of the mounts), if anything.
    pub(super) keep: Option<OwnedFd>,
}

/// What a launcher's answering thread is sent. (A plan is not boxed: a pooled launcher's every
/// spawn is one, and a hand-over is one spare's once.)
#[allow(clippy::large_enum_variant)]
pub(super) enum ToAnswer {
    /// A file of a cloner's table of its own to take into the server's (a spare's filter's
    /// listener).
    HandOver(own_table::HandOver),
    Cloned(Cloned),
}

/// How a cloner's set-up went.
enum SetUp {
    Failed,
    /// It shares the server's fd table.
    Shared,
    /// Its table is its own; its end of the socket pair is fd `end` of thread `tid`.
    Own {
        tid: libc::pid_t,
        end: RawFd,
    },
}

/// The launchers of one confinement, namespace and caller.
struct Pool {
    /// The confinement's shared key, alive as long as the pool holds it (so it stays unique).
    key: usize,
    /// `None` for unconfined children.
    confine: Option<Arc<dyn Confine>>,
    /// Where its launchers are: in these namespaces (the session's, or a caller's), if any.
    namespace: Option<&'static Namespace>,
    launchers: Vec<Launcher>,
    /// At most this many launchers: [`LAUNCHERS_PER_CPU`] per CPU.
    most: usize,
    /// Plans still to hand to the launchers there are before another is tried, after one could
    /// not be set up.
    retry_in: u32,
}

static POOLS: Mutex<Vec<Pool>> = Mutex::new(Vec::new());

/// The pool's key: the confinement's shared part (`Confine::shared_key`), 0 for unconfined
/// children. The pool holds the first confinement it was made for, which keeps the key's object
/// alive (so it stays unique).
fn key(confine: Option<&Arc<dyn Confine>>) -> usize {
    confine.map_or(0, |confine| confine.shared_key())
}

/// Hands `plan` to a launcher of its confinement (or of unconfined children), which answers on
/// `reply`; a plan with a `/dev/pts` of its own to a launcher of its own
/// (`spare.rs` `start_alone`).
/// Given back when there is none (no launcher could be set up): the caller clones the child
/// itself.
pub(super) fn hand(
    plan: ExecPlan,
    marker: &str,
    reply: Reply,
) -> Result<(), Box<(ExecPlan, Reply)>> {
    // The reaper thread starts here if it has not yet, never on a launcher: a thread started
    // there would inherit the launcher's filter and namespaces. (Its error is the spawn's:
    // `spawn_registered` asks again.)
    let _ = reaper::init();
    #[cfg(target_os = "linux")]
    if plan.own_devpts.is_some() {
        return super::spare::start_alone(Request {
            spawn: 0,
            plan,
            marker: marker.to_owned(),
            reply,
        });
    }
    let confine = plan.confine.clone();
    let key = key(confine.as_ref());
    let caller = confine.as_ref().and_then(|confine| confine.caller());
    let mut pools = POOLS.lock().unwrap_or_else(PoisonError::into_inner);
    let found = pools.iter().position(|pool| {
        pool.key == key
            && same_namespace(pool.namespace, plan.namespace)
            && pool.confine.as_ref().and_then(|c| c.caller()) == caller
    });
    match found {
        // The most recently used last, so the first is the one to let go.
        Some(index) => {
            let pool = pools.remove(index);
            pools.push(pool);
        }
        None => {
            if pools.len() >= KEPT_POOLS {
                pools.remove(0);
            }
            pools.push(Pool::new(confine, plan.namespace));
        }
    }
    let index = pools.len() - 1;
    pools[index].send(Request {
        spawn: 0,
        plan,
        marker: marker.to_owned(),
        reply,
    })
}

impl Pool {
    fn new(confine: Option<Arc<dyn Confine>>, namespace: Option<&'static Namespace>) -> Self {
        let most = std::thread::available_parallelism()
            .map_or(1, usize::from)
            .saturating_mul(LAUNCHERS_PER_CPU)
            .min(MAX_LAUNCHERS);
        Pool {
            key: key(confine.as_ref()),
            confine,
            namespace,
            launchers: Vec::with_capacity(most),
            most,
            retry_in: 0,
        }
    }

    /// Sends `request` to the launcher with the fewest plans queued, starting another one first
    /// when every launcher is busy and there may be more.
    fn send(&mut self, mut request: Request) -> Result<(), Box<(ExecPlan, Reply)>> {
        self.retry_in = self.retry_in.saturating_sub(1);
        loop {
            let idlest = (0..self.launchers.len())
                .min_by_key(|&i| self.launchers[i].queued.load(Ordering::Relaxed));
            let busy = idlest.is_none_or(|i| self.launchers[i].queued.load(Ordering::Relaxed) > 0);
            let chosen = if busy && self.launchers.len() < self.most && self.retry_in == 0 {
                // A new launcher's set-up (the filter's compile) is waited for: off the
                // worker's other tasks.
                let confine = self.confine.as_ref();
                match crate::blocking::section(|| Launcher::new(confine, self.namespace)) {
                    Some(launcher) => {
                        self.launchers.push(launcher);
                        Some(self.launchers.len() - 1)
                    }
                    None => {
                        // Those there are take the next plans (with none, each spawn clones its
                        // child itself), then another is tried.
                        self.retry_in = RETRY_AFTER_PLANS;
                        idlest
                    }
                }
            } else {
                idlest
            };
            let Some(chosen) = chosen else {
                return Err(Box::new((request.plan, request.reply)));
            };
            let launcher = &mut self.launchers[chosen];
            request.spawn = launcher.handed;
            launcher.handed += 1;
            if let Some(to) = &launcher.fds_to
                && own_table::send(to, request.spawn, &request.plan.fds_for_child()).is_err()
            {
                // Its cloner cannot be handed the child's fds (a full socket, or the user's
                // fds in flight at their limit): cloned by the caller, as with no launcher.
                return Err(Box::new((request.plan, request.reply)));
            }
            launcher.queued.fetch_add(1, Ordering::Relaxed);
            match launcher.requests.send(request) {
                Ok(()) => return Ok(()),
                Err(unsent) => {
                    // That launcher is gone (it can only have panicked): another takes it.
                    request = unsent.0;
                    self.launchers.remove(chosen);
                }
            }
        }
    }
}

impl Launcher {
    /// Starts a launcher confined by `confine`, if any (in `namespace`, if any); `None` when it
    /// could not be started or set up.
    fn new(
        confine: Option<&Arc<dyn Confine>>,
        namespace: Option<&'static Namespace>,
    ) -> Option<Self> {
        let (requests, incoming) = channel::<Request>();
        let (to_answer, answering) = channel::<ToAnswer>();
        let (ready_tx, ready) = sync_channel::<SetUp>(1);
        let (taken_tx, taken) = sync_channel::<bool>(1);
        let queued = Arc::new(AtomicUsize::new(0));
        let applied = confine.cloned();
        // Tried here, in the server's table and unconfined: tried on the launcher, its filter
        // refuses what the try does, and the answer is kept for good (review 30).
        // Not known yet (no thread or fd to try it with): no launcher now.
        let own = own_table::supported()?;
        std::thread::Builder::new()
            .name("agentty-launcher".into())
            .stack_size(LAUNCHER_STACK_BYTES)
            .spawn(move || {
                let set = set_up(applied.as_deref(), namespace);
                // Let go of in the server's table, as everything the server owns must be.
                drop(applied);
                if set.is_err() {
                    let _ = ready_tx.send(SetUp::Failed);
                    return;
                }
                let table = if own {
                    let Ok((table, end)) = own_table::Table::make() else {
                        let _ = ready_tx.send(SetUp::Failed);
                        return;
                    };
                    // SAFETY: gettid has no preconditions.
                    let tid = unsafe { libc::gettid() };
                    let _ = ready_tx.send(SetUp::Own { tid, end });
                    let was_taken = taken.recv().unwrap_or(false);
                    // SAFETY: the other end, in this thread's own table: the server has its
                    // copy (or none, and this thread ends).
                    unsafe { libc::close(end) };
                    if !was_taken {
                        return;
                    }
                    Some(table)
                } else {
                    let _ = ready_tx.send(SetUp::Shared);
                    None
                };
                clone_each(incoming, &to_answer, table, namespace);
            })
            .ok()?;
        let fds_to = match ready.recv().ok()? {
            SetUp::Failed => return None,
            SetUp::Shared => None,
            SetUp::Own { tid, end } => {
                let end = own_table::take_end(tid, end);
                let _ = taken_tx.send(end.is_ok());
                Some(end.ok()?)
            }
        };
        let answered = Arc::clone(&queued);
        std::thread::Builder::new()
            .name("agentty-launched".into())
            .stack_size(LAUNCHER_STACK_BYTES)
            .spawn(move || answer_each(&answering, &answered))
            .ok()?;
        Some(Launcher {
            requests,
            queued,
            fds_to,
            handed: 0,
        })
    }
}

/// The launcher thread's own set-up, once: no signal is ever handled on it (so none can run on
/// a child's stack, and its children start with every signal blocked until they reset them),
/// but its children's exits are let through to be dropped (`signals::ALL_BUT_CHILD_EXITS`);
/// its children go to its namespaces (the session's or a caller's); then the shared part of
/// the confinement, for good. (Each child still makes its own Landlock domain:
/// `Confine::apply_own`.)
fn set_up(confine: Option<&dyn Confine>, namespace: Option<&Namespace>) -> io::Result<()> {
    enter(namespace, false)?;
    confine.map_or(Ok(()), Confine::apply_to_launcher)
}

/// The launcher thread's signals blocked, and the thread in `namespace`; with `own_fs`, or
/// to enter a namespace, with a cwd and root of its own.
pub(super) fn enter(namespace: Option<&Namespace>, own_fs: bool) -> io::Result<()> {
    signals::block_signals(signals::ALL_BUT_CHILD_EXITS)?;
    if namespace.is_some() || own_fs {
        // SAFETY: unshare(CLONE_FS) gives the thread a cwd and root of its own, which a mount
        // namespace may only be entered (or made) without.
        crate::namespace::check(unsafe { libc::unshare(libc::CLONE_FS) })?;
    }
    if let Some(namespace) = namespace {
        // SAFETY: plain system calls on this thread's own attributes. The two setns move this
        // thread (its cwd to the namespace's root, and into the session's network namespace
        // where there is one) and where its children are numbered.
        unsafe {
            crate::namespace::check(libc::setns(namespace.init_fd(), namespace.entered()))?;
            crate::namespace::check(libc::setns(namespace.init_fd(), libc::CLONE_NEWPID))?;
        }
    }
    Ok(())
}

/// Whether two launchers' namespaces are the same (both none, or one namespace).
pub(super) fn same_namespace(a: Option<&Namespace>, b: Option<&Namespace>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => std::ptr::eq(a, b),
        (a, b) => a.is_none() && b.is_none(),
    }
}

/// The cloner's loop: clones each child handed over until the pool lets go of this launcher,
/// and passes the plan on to the answering thread with what came of it. Nothing the server owns
/// is ever dropped here (the plans, those still queued when a panic unwinds): with a table of
/// its own (`table`), its fds are not this table's (see `own_table.rs`).
fn clone_each(
    incoming: Receiver<Request>,
    to_answer: &Sender<ToAnswer>,
    mut table: Option<own_table::Table>,
    namespace: Option<&Namespace>,
) {
    let incoming = std::mem::ManuallyDrop::new(incoming);
    while let Ok(request) = incoming.recv() {
        let request = std::mem::ManuallyDrop::new(request);
        let started = clone_one(&request, table.as_mut(), namespace);
        pass_on(
            to_answer,
            Cloned {
                request: std::mem::ManuallyDrop::into_inner(request),
                started,
                keep: None,
            },
        );
    }
    // Let go of once nothing is queued (the pool let go of this launcher, and every plan was
    // passed on).
    drop(std::mem::ManuallyDrop::into_inner(incoming));
}

/// Clones `request`'s child, registered with the reaper (`reaper::launched_registered`: the
/// answering thread watches it). With a table of its own (`table`), the spawn's fds are taken
/// in first and let go after. A panic is said as the spawn's failure, and whatever it left in
/// the table goes; nothing of the request is dropped here.
fn clone_one(
    request: &Request,
    mut table: Option<&mut own_table::Table>,
    namespace: Option<&Namespace>,
) -> io::Result<i32> {
    let cloned = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let start =
            || reaper::launched_registered(|| exec::start_confined(&request.plan, namespace));
        match &mut table {
            None => start(),
            Some(table) => table.receive(request.spawn).and_then(|placed| {
                let started = start();
                // Before the answer: until it is sent, the server's copies of the child's
                // ends are held, so this close is never the last of a pipe whose lock the
                // child may hold.
                placed.close();
                started
            }),
        }
    }));
    cloned.unwrap_or_else(|_| {
        if let Some(table) = &table {
            table.sweep();
        }
        Err(io::Error::other(exec::LAUNCHER_FAILED))
    })
}

/// Sends `cloned` to the answering thread; where that thread is gone (it can only have
/// panicked), it is kept, not let go here.
pub(super) fn pass_on(to_answer: &Sender<ToAnswer>, cloned: Cloned) {
    if let Err(unsent) = to_answer.send(ToAnswer::Cloned(cloned)) {
        std::mem::forget(unsent);
    }
}

/// The answering thread's loop, in the server's table: each cloned child's exit watched, the
/// plan's copies of its ends let go, and the answer sent (a child nobody waits for any more is
/// stopped); `queued` counts down by one for each.
pub(super) fn answer_each(answering: &Receiver<ToAnswer>, queued: &AtomicUsize) {
    for message in answering {
        match message {
            ToAnswer::HandOver(hand_over) => hand_over.hand(),
            ToAnswer::Cloned(mut cloned) => {
                let keep = cloned.keep.take();
                let (reply, started, marker) = answer(cloned);
                let child = started.as_ref().ok().map(|(pid, _)| *pid);
                queued.fetch_sub(1, Ordering::Relaxed);
                reply.send(started, &marker);
                // The copy of the mounts outlives the child, and is let go by the reaper: its
                // last holder tears it down (every mount let go, and an expedited RCU grace
                // period that interrupts every CPU), which the child, as the last, would do
                // at its exit before the exit is told.
                if let (Some(pid), Some(keep)) = (child, keep) {
                    reaper::keep_until_reaped(pid, keep);
                }
            }
        }
    }
}

/// What to answer for `cloned`, and where: its exit watched, and the plan let go of.
fn answer(cloned: Cloned) -> (Reply, Started, String) {
    let Cloned {
        request, started, ..
    } = cloned;
    let Request {
        mut plan,
        marker,
        reply,
        ..
    } = request;
    let started = match started {
        Ok(pid) => {
            reaper::watch_launched(pid, plan.room_for_pidfd.take()).map(|watch| (pid, watch))
        }
        // The cloner could not look (its table has no pidfd of the init).
        Err(error) => Err(exec::failed_in(plan.namespace, error)),
    };
    // The child has its own copies of its fds now (it has exec'd, or failed): the server's
    // go, so the read ends see EOF when the child's close.
    plan.let_go_of_child_ends();
    drop(plan);
    (reply, started, marker)
}
