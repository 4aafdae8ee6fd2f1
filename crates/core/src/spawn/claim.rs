//! Handing a prepared command over to be started, and claiming what was started.
//!
//! A plan goes to a launcher of its confinement (`launcher.rs`); where none takes it, or outside a
//! runtime, the calling thread clones the child itself. Either way the child is registered with
//! the reaper before anything can reap it, and a child nobody claims is stopped as soon as it has
//! started: nothing runs that no one supervises.

use std::io;

use super::Confine;
use super::exec::{self, ExecPlan};
use super::{launcher, own_table};
use crate::reaper::{self, ExitWatch};

/// Clones `plan`'s child where no launcher takes the plan, registered with the reaper before
/// anything can reap it: from a thread that enters the namespaces, makes its fd table its own
/// holding only what the child uses and takes the confinement's shared part, as a launcher does
/// (`own_table::apart`), so the child copies none of the server's files and its filter's
/// listener is the supervisor's; where no thread can take copies of them (a container's seccomp
/// profile refusing `pidfd_getfd`), from this thread, the child entering the namespaces and
/// confining itself, copying this thread's table until its exec.
fn launch_here(mut plan: ExecPlan) -> io::Result<(i32, ExitWatch)> {
    let fds = plan.fds_for_whole_child();
    // Not the child's to see, and not to be shared with the cloning thread.
    let ends_to = plan.child_ends_to.take();
    let lent = Lent(&plan);
    let namespace = plan.namespace;
    let apart = own_table::apart(
        &fds,
        own_table::Apart {
            before: || launcher::enter(namespace, false).map_err(exec::namespace_failed),
            confine: || {
                lent.plan()
                    .confine
                    .as_deref()
                    .map_or(Ok(None), Confine::apply_to_cloner)
                    .map_err(exec::sandbox_failed)
            },
            adopt: |listener| {
                plan.confine
                    .as_ref()
                    .is_some_and(|confine| confine.adopt_listener(listener, true))
            },
            clone: || reaper::launched_registered(|| exec::start_confined(lent.plan(), namespace)),
        },
    );
    plan.child_ends_to = ends_to;
    let room = plan.room_for_pidfd.take();
    let started = match apart {
        Some(Ok(pid)) => reaper::watch_launched(pid, room).map(|watch| (pid, watch)),
        // The cloning thread did not look (its table may have no pidfd of the init).
        Some(Err(error)) => Err(exec::failed_in(namespace, error)),
        None => {
            reaper::spawn_registered(|| exec::start(&plan).map(|(pid, pidfd)| (pid, pidfd, pid)))
        }
    };
    plan.let_go_of_child_ends();
    started
}

/// A plan lent to the thread that clones its child apart, while the lending thread waits.
struct Lent<'p>(&'p ExecPlan);

// SAFETY: the thread it is lent to only reads the plan, while the lending thread waits for that
// thread to end (a scoped thread) and touches it not; its one field that is not `Sync`
// (`child_ends_to`, a `Send` box) is taken out first and never reached through it.
unsafe impl Sync for Lent<'_> {}

impl Lent<'_> {
    fn plan(&self) -> &ExecPlan {
        self.0
    }
}

/// What a launcher's answer is when the launcher ended without one (it can only have panicked).
fn launcher_gone() -> io::Error {
    io::Error::other("agentty's launcher thread ended before it started the command")
}

/// Starts `plan`'s child, registered with the reaper, and waits for it. The one place a process
/// is started, with [`launch_async`].
pub(super) fn launch(mut plan: ExecPlan, marker: &str) -> io::Result<(i32, ExitWatch)> {
    if plan.room_for_pidfd.is_none() {
        plan.room_for_pidfd = Some(room_for_pidfd()?);
    }
    let (reply, answer) = launcher::wait_reply();
    match launcher::hand(plan, marker, reply) {
        Ok(()) => answer.recv().map_err(|_| launcher_gone())?,
        Err(returned) => launch_here(returned.0),
    }
}

/// [`launch`] for a task: a launcher's clone does not hold up the calling worker thread.
/// Outside a runtime it is [`launch`].
pub(super) async fn launch_async(plan: ExecPlan, marker: &str) -> io::Result<(i32, ExitWatch)> {
    hand(plan, marker).claim().await
}

/// Hands `plan` to a launcher (or, where none takes it or outside a runtime, clones it here).
fn hand(mut plan: ExecPlan, marker: &str) -> Claim {
    let claimed = match room_for_pidfd() {
        Err(e) => Claimed::Started(Err(e)),
        Ok(room) => {
            plan.room_for_pidfd = Some(room);
            hand_with_room(plan, marker)
        }
    };
    Claim {
        claimed: Some(claimed),
        marker: marker.to_owned(),
    }
}

/// A slot of the server's fd table for the child's pidfd ([`ExecPlan::room_for_pidfd`]): a copy
/// of `/dev/null`. Where none is left, the spawn fails here, before anything runs.
fn room_for_pidfd() -> io::Result<std::os::fd::OwnedFd> {
    own_table::dup_from(std::os::fd::AsRawFd::as_raw_fd(super::dev_null()?), 0)
}

/// [`hand`], the plan's room for its pidfd taken.
fn hand_with_room(plan: ExecPlan, marker: &str) -> Claimed {
    match launcher::Reply::to_task(marker) {
        None => Claimed::Started(launch(plan, marker)),
        Some((reply, answer)) => match launcher::hand(plan, marker, reply) {
            Ok(()) => Claimed::Answer(answer),
            // A launcher's work here (a filter compiled, perhaps for every spawn while a
            // caller fills the fds in flight): off the worker's other tasks.
            Err(returned) => Claimed::Started(crate::blocking::section(|| launch_here(returned.0))),
        },
    }
}

/// A command handed to a launcher: its pid and exit watch, once claimed. Dropped unclaimed, the
/// child is stopped as soon as it has started (nobody would supervise it).
///
/// Until [`Claim::claim`] is awaited nothing waits for the launcher's answer, so sending it wakes
/// no one: a caller that has something else to wait for first (the command's output) spares the
/// worker thread that wake-up.
pub struct Claim {
    /// Taken by [`Claim::claim`].
    claimed: Option<Claimed>,
    /// The run marker, to find the tree of a child nobody claimed.
    marker: String,
}

enum Claimed {
    /// A launcher's answer, still to come or come.
    Answer(launcher::Answer),
    /// Cloned here, at the hand-over.
    Started(io::Result<(i32, ExitWatch)>),
}

impl Claim {
    /// The child's pid and exit watch, or why it was not started (nothing ran).
    pub async fn claim(mut self) -> io::Result<(i32, ExitWatch)> {
        match self.claimed.take() {
            Some(Claimed::Answer(answer)) => answer.await.map_err(|_| launcher_gone())?,
            Some(Claimed::Started(started)) => started,
            None => Err(io::Error::other("already claimed")),
        }
    }
}

impl Drop for Claim {
    /// A child cloned here and never claimed is stopped as a launcher's would be (an
    /// [`launcher::Answer`] dropped unclaimed stops its own).
    fn drop(&mut self) {
        if let Some(Claimed::Started(Ok((pid, watch)))) = self.claimed.take() {
            launcher::stop_unclaimed(pid, watch, &self.marker);
        }
    }
}

/// A command ready to be handed over ([`Ready::hand`]): nothing has started yet.
pub struct Ready {
    pub(super) plan: ExecPlan,
    pub(super) marker: String,
}

impl Ready {
    /// Hands the command to a launcher: from here on it may run.
    pub fn hand(self) -> Claim {
        hand(self.plan, &self.marker)
    }

    /// [`Ready::hand`] and wait for the launcher's answer, on this thread.
    pub fn start(self) -> io::Result<(i32, ExitWatch)> {
        launch(self.plan, &self.marker)
    }

    /// Once the child has its own copies, the plan's copies of its ends go to `to` (see
    /// [`ExecPlan::let_go_of_child_ends`]).
    pub fn child_ends_to(&mut self, to: super::ChildEnds) {
        self.plan.child_ends_to = Some(to);
    }
}
