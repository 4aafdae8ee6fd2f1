//! A launcher of one spawn's own, for a spawn with a `/dev/pts` of its own (`terminals.rs`):
//! a pooled launcher cannot mount it, it dropped the capability that takes. [`start_alone`]
//! hands the spawn to the [`Spare`] made ahead for its namespace.
//!
//! A spare is a launcher's two threads (`launcher.rs`): a cloner, and an answering thread in
//! the server's table. Handed its spawn, the cloner mounts the instance (which needs the
//! capability the confinement's shared part drops), then makes its fd table its own holding
//! copies of the child's fds only (`own_table::pulled`: `pidfd_getfd`, which the shared part's
//! filter refuses, so before it), then takes the shared part; the filter's listener, made in
//! that table, is taken into the server's by the answering thread and handed to the network
//! supervisor (`own_table::HandOver`). No fd goes in flight, so the fds in flight the same user's
//! commands can fill (`ETOOMANYREFS`) cannot stop it. Its child then copies those few fds and
//! none of the server's, as a pooled launcher's does (a test holds this:
//! `a_file_let_go_while_a_terminal_spawns_child_is_cloned_never_holds_it_as_root`). Where a
//! thread cannot clone apart (`own_table::works_apart`), a spare's cloner shares the server's
//! table, takes the shared part there and clones.

use std::io;
use std::mem::ManuallyDrop;
use std::os::fd::OwnedFd;
use std::sync::atomic::AtomicUsize;
use std::sync::mpsc::{Sender, SyncSender, channel, sync_channel};
use std::sync::{Arc, Mutex, PoisonError};

use super::exec::{self, ExecPlan};
use super::launcher::{
    self, Cloned, KEPT_POOLS, LAUNCHER_STACK_BYTES, Reply, Request, ToAnswer, same_namespace,
};
use super::{Confine, own_table};
use crate::namespace::Namespace;
use crate::reaper;

/// Starts `request`'s child from a launcher of its own that first makes the plan's devpts
/// instance its `/dev/pts`, in a mount namespace of its own the child is cloned into
/// (`terminals.rs`). Its threads end once it has answered. It is the spare made for the plan's namespace after the last such
/// spawn there, which entered that namespace and a copy of its mounts ahead ([`Spare`]); the
/// first spawn of a namespace makes its own. Either way another spare is made for the next.
/// Where no thread can start, the plan is given back without the instance: its child is cloned
/// in the session's namespace, its terminal then named by no path.
pub(super) fn start_alone(mut request: Request) -> Result<(), Box<(ExecPlan, Reply)>> {
    let Some(devpts) = request.plan.own_devpts.take() else {
        return Err(Box::new((request.plan, request.reply)));
    };
    let namespace = request.plan.namespace;
    let mut handed = (request, devpts);
    if let Some(spare) = Spare::take(namespace) {
        match spare.requests.send(handed) {
            Ok(()) => {
                Spare::keep_one(namespace);
                return Ok(());
            }
            // That thread is gone (it can only have panicked): a new one takes it.
            Err(unsent) => handed = unsent.0,
        }
    }
    let Some(fresh) = Spare::make(namespace) else {
        return Err(Box::new((handed.0.plan, handed.0.reply)));
    };
    // The thread is alive and waits for it: the send cannot fail.
    let _ = fresh.requests.send(handed);
    Spare::keep_one(namespace);
    Ok(())
}

/// A launcher thread for one spawn with a `/dev/pts` of its own, made before that spawn comes:
/// it has entered `namespace` (the session's or a caller's) and a mount namespace of its own,
/// a copy of that one's with its mounts made slaves (`terminals::unshare_mounts`). The copy is
/// most of what such a spawn costs the server (0.55 ms with 200 mounts here, 60 ms with
/// 20 000), and the thread's start the rest, so the spawn finds both done. A namespace's mounts
/// are made once, when it is (`namespace/init.rs`), so a copy made ahead is the one the spawn
/// would make; what the host mounts later reaches it as a slave. Then, handed its request, it
/// attaches the spawn's instance, makes its table its own, takes the confinement's shared part,
/// clones the child and ends, its copy of the mounts kept until the reaper has reaped the child
/// ([`clone_alone`]).
struct Spare {
    namespace: Option<&'static Namespace>,
    requests: SyncSender<(Request, OwnedFd)>,
}

/// Spares kept, one per namespace that had a spawn with a `/dev/pts` of its own, the oldest
/// let go past [`KEPT_POOLS`] (its threads end, and its copy of the mounts with it).
static SPARES: Mutex<Vec<Spare>> = Mutex::new(Vec::new());

impl Spare {
    /// Starts a spare for `namespace`: its cloner, and its answering thread in the server's
    /// table; `None` when a thread cannot start. A set-up that fails is said to the spawn it is
    /// handed.
    fn make(namespace: Option<&'static Namespace>) -> Option<Self> {
        let (requests, incoming) = sync_channel::<(Request, OwnedFd)>(1);
        let (to_answer, answering) = channel::<ToAnswer>();
        // Tried here, in the server's table and unconfined (see `Launcher::new`).
        // Not known yet (no thread or fd to try it with): no spare now.
        let own = own_table::works_apart()?;
        std::thread::Builder::new()
            .name("agentty-launched".into())
            .stack_size(LAUNCHER_STACK_BYTES)
            .spawn(move || launcher::answer_each(&answering, &AtomicUsize::new(1)))
            .ok()?;
        std::thread::Builder::new()
            .name("agentty-launcher".into())
            .stack_size(LAUNCHER_STACK_BYTES)
            .spawn(move || clone_alone(incoming, &to_answer, namespace, own))
            .ok()?;
        Some(Spare {
            namespace,
            requests,
        })
    }

    /// The spare kept for `namespace`, taken out.
    fn take(namespace: Option<&'static Namespace>) -> Option<Self> {
        let mut spares = SPARES.lock().unwrap_or_else(PoisonError::into_inner);
        let index = spares
            .iter()
            .position(|spare| same_namespace(spare.namespace, namespace))?;
        Some(spares.remove(index))
    }

    /// Makes a spare for the next spawn of `namespace` and keeps it (none if no thread can
    /// start: that spawn then makes its own).
    fn keep_one(namespace: Option<&'static Namespace>) {
        let Some(spare) = Self::make(namespace) else {
            return;
        };
        let mut spares = SPARES.lock().unwrap_or_else(PoisonError::into_inner);
        if spares.len() >= KEPT_POOLS {
            spares.remove(0);
        }
        spares.push(spare);
    }
}

/// This thread's mount namespace, opened through the host's `proc`; `None` where it cannot be.
fn own_mount_namespace(proc: std::fs::File) -> Option<OwnedFd> {
    use nix::fcntl::{OFlag, openat};
    use nix::sys::stat::Mode;
    openat(
        &proc,
        "thread-self/ns/mnt",
        OFlag::O_RDONLY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .ok()
}

/// A spare's cloner: enters `namespace` and a mount namespace of its own ahead, then, handed its
/// spawn, mounts the spawn's instance, clones the child ([`clone_own_table`] where it can, `own`;
/// else as a launcher sharing the server's table) and passes it on to the answering thread with
/// the copy of the mounts, which is kept until the child is reaped.
fn clone_alone(
    incoming: std::sync::mpsc::Receiver<(Request, OwnedFd)>,
    to_answer: &Sender<ToAnswer>,
    namespace: Option<&Namespace>,
    own: bool,
) {
    // The host's /proc, which names this thread in any mount namespace.
    let proc = std::fs::File::open("/proc");
    let ready = set_up_alone(namespace);
    let mounts = proc
        .ok()
        .filter(|_| ready.is_ok())
        .and_then(own_mount_namespace);
    let Ok((request, devpts)) = incoming.recv() else {
        return;
    };
    // Let go of in the server's table, as everything the server owns must be: one spawn only
    // comes (the spare is taken out before it is sent).
    drop(incoming);
    let attached = ready.and_then(|()| super::terminals::attach(&devpts));
    drop(devpts);
    // From here this thread's table may be its own: nothing of the server's is let go here.
    let request = ManuallyDrop::new(request);
    let mounts = ManuallyDrop::new(mounts);
    // Whatever comes of it is passed on: a panic too, so the spawn is answered.
    let started = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        attached.and_then(|()| match own {
            true => clone_own_table(&request, to_answer, namespace),
            false => request
                .plan
                .confine
                .as_deref()
                .map_or(Ok(()), Confine::apply_to_launcher)
                .and_then(|()| {
                    reaper::launched_registered(|| exec::start_confined(&request.plan, namespace))
                }),
        })
    }))
    .unwrap_or_else(|_| Err(io::Error::other(exec::LAUNCHER_FAILED)));
    launcher::pass_on(
        to_answer,
        Cloned {
            request: ManuallyDrop::into_inner(request),
            started,
            keep: ManuallyDrop::into_inner(mounts),
        },
    );
}

/// Clones `request`'s child from an fd table of this thread's own holding only what the child
/// uses, copies of the server's taken at their numbers (`own_table::pulled`) before the
/// confinement's shared part, whose filter refuses the copies; the filter's listener, made in
/// that table, is taken into the server's by the answering thread and handed to the supervisor
/// (`own_table::HandOver`) before anything is cloned. No fd goes in flight: the same user's
/// commands, filling the fds in flight the kernel allows, cannot keep a terminal spawn from
/// starting (review 32). The child copies none of the server's files.
fn clone_own_table(
    request: &Request,
    to_answer: &Sender<ToAnswer>,
    namespace: Option<&Namespace>,
) -> io::Result<i32> {
    let plan = &request.plan;
    let fds = plan.fds_for_whole_child();
    let placed = own_table::pulled(&fds)?;
    let confined = plan
        .confine
        .as_deref()
        .map_or(Ok(None), Confine::apply_to_cloner)
        .map_err(exec::sandbox_failed)
        .and_then(|listener| match (listener, &plan.confine) {
            (Some(listener), Some(confine)) => own_table::hand_listener(listener, |tid, fd| {
                let confine = Arc::clone(confine);
                let (done, taken) = sync_channel(1);
                let hand_over = own_table::HandOver {
                    tid,
                    fd,
                    // A terminal spawn's: bounded by the terminals there may be.
                    to: Box::new(move |copy| confine.adopt_listener(copy, false)),
                    done,
                };
                match to_answer.send(ToAnswer::HandOver(hand_over)) {
                    Ok(()) => taken.recv().unwrap_or(false),
                    Err(unsent) => {
                        // Its confinement is the server's to let go of.
                        std::mem::forget(unsent);
                        false
                    }
                }
            }),
            (listener, _) => {
                drop(listener);
                Ok(())
            }
        });
    let started = confined
        .and_then(|()| reaper::launched_registered(|| exec::start_confined(plan, namespace)));
    placed.close();
    started
}

/// A spare's set-up ([`Spare`]), before its spawn comes: a launcher's signals and namespaces,
/// then a mount namespace of its own. The confinement's part comes with the spawn.
fn set_up_alone(namespace: Option<&Namespace>) -> io::Result<()> {
    launcher::enter(namespace, true)?;
    super::terminals::unshare_mounts()
}
