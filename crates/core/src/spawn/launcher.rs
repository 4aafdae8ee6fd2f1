//! Confined children cloned by a thread that is confined already.
//!
//! A child inherits from the thread that clones it the seccomp filter, the capabilities it
//! dropped and the namespaces it is in, for nothing. Applied by the child itself, each costs the
//! kernel work per spawn, and the filter a lot: it is compiled to machine code at every install,
//! which interrupts every CPU, and released again at every exit. On a 2-vCPU VM (Linux 6.18) a
//! `vfork`+`exec` of `true` that installed a filter in the child took 1406–1949 µs where one
//! cloned by an already filtered thread took 1170–1766 µs and one without a filter 1110–1484 µs
//! (four runs of 1000 each, interleaved; a C program, not kept).
//!
//! So each thread that starts confined commands gets a *launcher* of its own at its first
//! confined spawn: a thread that enters the session's namespaces and applies the shareable part
//! of the confinement (`Confine::apply_shared`) to itself once, and then clones each child it is
//! handed while the asking thread waits, as it waits for its own `vfork` child otherwise. One
//! per asking thread, so spawns from different threads still run side by side; the launcher
//! ends when the thread that asked for it ends.
//!
//! What must stay each command's own is not shared: every child still makes its own Landlock
//! domain (`Confine::apply_own`), because Landlock scopes signals and abstract unix sockets to a
//! domain, and commands sharing one could signal and reach each other (a test holds this:
//! `commands_cannot_signal_or_reach_each_other`). Otherwise the child does what it did: its
//! process group or terminal, its stdio, its workdir, and `exec`, with the same checks. Where a
//! launcher cannot be set up (a thread cannot start, a namespace or the filter refuses), the
//! child applies all of it itself, as before, and reports a failure as before.

use std::cell::RefCell;
use std::io;
use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, Sender, SyncSender, channel, sync_channel};

use super::Confine;
use super::exec::{self, ExecPlan};
use crate::namespace::SessionNamespace;

/// Confinements a thread keeps a launcher for; past this the oldest one is let go (a server
/// has one confinement; only tests make more).
const KEPT_PER_THREAD: usize = 4;

/// A launcher's own stack: it only loops over a channel and clones (each child runs on a stack
/// of its own, `exec.rs`).
const LAUNCHER_STACK_BYTES: usize = 256 * 1024;

/// What a started child is: its pid and pidfd.
type Started = io::Result<(i32, OwnedFd)>;

/// One child to start. The plan lives in the asking thread's frame, which waits for the
/// answer, so it outlives every use the launcher makes of it.
struct Request(*const ExecPlan<'static>);

// SAFETY: the pointer is only read by the launcher while the asking thread is blocked on the
// answer (see `Launcher::start`); `ExecPlan` holds plain data and `Sync` references.
unsafe impl Send for Request {}

/// A thread confined by one confinement, and the channels to it.
struct Launcher {
    requests: Sender<Request>,
    answers: Receiver<Started>,
    /// It is in the session's namespaces (there was one when it started).
    in_namespace: bool,
    /// Keeps the confinement alive, so the key it is found by stays unique.
    _confine: Arc<dyn Confine>,
}

/// This thread's launchers, by the address of the confinement each applies. `None`: one
/// could not be set up, and this thread's children confine themselves.
type Kept = Vec<(usize, Option<Launcher>)>;

thread_local! {
    static LAUNCHERS: RefCell<Kept> = const { RefCell::new(Vec::new()) };
}

fn key(confine: &Arc<dyn Confine>) -> usize {
    Arc::as_ptr(confine).cast::<()>() as usize
}

/// Starts `plan`'s child from this thread's launcher for `confine`, made at the first call.
/// `None`: there is no launcher to use, and the caller clones the child itself.
pub(super) fn start(plan: &ExecPlan<'_>, confine: &Arc<dyn Confine>) -> Option<Started> {
    LAUNCHERS
        .try_with(|kept| {
            let mut kept = kept.try_borrow_mut().ok()?;
            let key = key(confine);
            let index = match kept.iter().position(|(k, _)| *k == key) {
                Some(index) => index,
                None => {
                    if kept.len() >= KEPT_PER_THREAD {
                        kept.remove(0);
                    }
                    // The session's namespace is the one static one, where the plan has one.
                    let namespace = plan.namespace.and(crate::namespace::get());
                    kept.push((key, Launcher::new(confine, namespace)));
                    kept.len() - 1
                }
            };
            let launcher = kept[index].1.as_ref()?;
            if launcher.in_namespace != plan.namespace.is_some() {
                // The session's namespace started after this launcher did (tests only): the
                // child enters it itself.
                return None;
            }
            let started = launcher.start(plan);
            if started.is_none() {
                // The launcher is gone (it can only have panicked): the next call makes another.
                kept.remove(index);
            }
            started
        })
        .ok()
        .flatten()
}

impl Launcher {
    /// Starts a launcher confined by `confine` (in `namespace`, if any); `None` when it could
    /// not be started or set up.
    fn new(
        confine: &Arc<dyn Confine>,
        namespace: Option<&'static SessionNamespace>,
    ) -> Option<Self> {
        let (requests, incoming) = channel::<Request>();
        let (answer, answers) = sync_channel::<Started>(1);
        let (ready_tx, ready) = sync_channel::<bool>(1);
        let applied = Arc::clone(confine);
        std::thread::Builder::new()
            .name("agentty-launcher".into())
            .stack_size(LAUNCHER_STACK_BYTES)
            .spawn(move || {
                let ready_now = set_up(&*applied, namespace).is_ok();
                let _ = ready_tx.send(ready_now);
                if ready_now {
                    serve(&incoming, &answer, namespace);
                }
            })
            .ok()?;
        ready.recv().ok()?.then(|| Launcher {
            requests,
            answers,
            in_namespace: namespace.is_some(),
            _confine: Arc::clone(confine),
        })
    }

    /// Has the launcher start `plan`'s child and waits for it; `None` if the launcher is gone.
    fn start(&self, plan: &ExecPlan<'_>) -> Option<Started> {
        let erased = std::ptr::from_ref(plan).cast::<ExecPlan<'static>>();
        self.requests.send(Request(erased)).ok()?;
        // Until this returns, the launcher may read `plan`: it must not return early.
        self.answers.recv().ok()
    }
}

/// The launcher thread's own set-up, once: no signal is ever handled on it (so none can run on
/// a child's stack, and its children start with every signal blocked until they reset them);
/// its children go to the session's namespaces; then the shared part of the confinement, for
/// good. (Each child still makes its own Landlock domain: `Confine::apply_own`.)
fn set_up(confine: &dyn Confine, namespace: Option<&SessionNamespace>) -> io::Result<()> {
    exec::block_all_signals()?;
    if let Some(namespace) = namespace {
        // SAFETY: plain system calls on this thread's own attributes. unshare(CLONE_FS) gives
        // the thread a cwd and root of its own, which a mount namespace may only be entered
        // without; the two setns then move this thread (its cwd to the namespace's root) and
        // where its children are numbered.
        unsafe {
            crate::namespace::check(libc::unshare(libc::CLONE_FS))?;
            crate::namespace::check(libc::setns(namespace.init_fd(), libc::CLONE_NEWNS))?;
            crate::namespace::check(libc::setns(namespace.init_fd(), libc::CLONE_NEWPID))?;
        }
    }
    confine.apply_shared()
}

/// Starts each child asked for until the asking thread lets go of its launcher.
fn serve(
    incoming: &Receiver<Request>,
    answer: &SyncSender<Started>,
    namespace: Option<&SessionNamespace>,
) {
    for Request(plan) in incoming {
        // SAFETY: the asking thread keeps the plan alive until it has our answer.
        let plan = unsafe { &*plan };
        let started = exec::start_confined(plan, namespace);
        if answer.send(started).is_err() {
            return;
        }
    }
}
