//! The threads that keep commands' pipes ([`super::pipe_thread`]), kept idle for the next
//! command: a call does not pay for a thread's start and end.
//!
//! A command goes to an idle thread if there is one, else to a new thread. A thread that is
//! done goes back to the idle ones (at most [`IDLE_MAX`]) and ends after [`IDLE_FOR`] without
//! work. A thread stuck on a pipe's lock is simply not idle: it is not waited for.

use std::io;
use std::sync::Mutex;
use std::sync::mpsc;
use std::time::Duration;

/// Work for a thread: keeping one command's pipes.
pub(crate) type Work = Box<dyn FnOnce() + Send>;

/// Idle threads kept at most: enough for the commands of a busy moment.
const IDLE_MAX: usize = 32;

/// How long a thread stays idle before it ends.
const IDLE_FOR: Duration = Duration::from_secs(60);

/// The thread's stack: it polls, reads and writes, and never recurses.
const STACK_BYTES: usize = 128 * 1024;

/// An idle thread: the number it is known by, and where its next work goes.
struct Idle {
    number: u64,
    work: mpsc::Sender<Work>,
}

struct Idles {
    threads: Vec<Idle>,
    numbered: u64,
}

static IDLE: Mutex<Idles> = Mutex::new(Idles {
    threads: Vec::new(),
    numbered: 0,
});

fn idle_threads() -> std::sync::MutexGuard<'static, Idles> {
    IDLE.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A thread set aside for one command's work, which comes later ([`Reserved::run`]): taken
/// from the idle ones, or started now (on the calling thread, whose rights it inherits: never
/// on a launcher, which may be in a namespace where no thread can start).
pub(crate) struct Reserved {
    work: Option<mpsc::Sender<Work>>,
}

/// Sets a thread aside: an idle one, or a new one.
pub(crate) fn reserve() -> io::Result<Reserved> {
    if let Some(idle) = idle_threads().threads.pop() {
        return Ok(Reserved {
            work: Some(idle.work),
        });
    }
    let (tx, rx) = mpsc::channel::<Work>();
    std::thread::Builder::new()
        .name("agentty-pipes".into())
        .stack_size(STACK_BYTES)
        .spawn(move || {
            if let Ok(work) = rx.recv() {
                serve(work);
            }
        })?;
    Ok(Reserved { work: Some(tx) })
}

impl Reserved {
    /// Runs `work` on the thread set aside. It cannot be gone while set aside; if it were, the
    /// work is kept from running here (the caller may be a launcher, where a close of the
    /// command's pipes could wait for as long as the command likes): leaked, and logged.
    pub(crate) fn run(mut self, work: Work) {
        let Some(to) = self.work.take() else { return };
        if let Err(mpsc::SendError(work)) = to.send(work) {
            tracing::error!("a pipe thread set aside was gone; its command's pipes are leaked");
            std::mem::forget(work);
        }
    }
}

impl Drop for Reserved {
    /// Never given work: the thread goes back to the idle ones (or ends).
    fn drop(&mut self) {
        if let Some(to) = self.work.take() {
            let _ = to.send(Box::new(|| {}));
        }
    }
}

#[cfg(test)]
fn run(work: Work) -> io::Result<()> {
    reserve()?.run(work);
    Ok(())
}

/// Does `work`, then waits idle for more.
fn serve(mut work: Work) {
    let (tx, rx) = mpsc::channel();
    loop {
        work();
        let number = {
            let mut idle = idle_threads();
            if idle.threads.len() >= IDLE_MAX {
                return;
            }
            idle.numbered += 1;
            let number = idle.numbered;
            idle.threads.push(Idle {
                number,
                work: tx.clone(),
            });
            number
        };
        work = match rx.recv_timeout(IDLE_FOR) {
            Ok(next) => next,
            Err(_) => {
                let mut idle = idle_threads();
                if let Some(at) = idle.threads.iter().position(|t| t.number == number) {
                    idle.threads.swap_remove(at);
                    return;
                }
                drop(idle);
                // Taken off the list by a command whose work is on its way.
                match rx.recv() {
                    Ok(next) => next,
                    Err(_) => return,
                }
            }
        };
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::time::Duration;

    /// The thread `work` ran on, once it has.
    fn ran_on(hold: Option<mpsc::Receiver<()>>) -> mpsc::Receiver<std::thread::ThreadId> {
        let (tx, rx) = mpsc::channel();
        super::run(Box::new(move || {
            tx.send(std::thread::current().id()).unwrap();
            if let Some(hold) = hold {
                let _ = hold.recv();
            }
        }))
        .unwrap();
        rx
    }

    #[test]
    fn a_done_thread_takes_the_next_work_and_a_stuck_one_is_not_waited_for() {
        let wait = Duration::from_secs(10);
        let first = ran_on(None).recv_timeout(wait).unwrap();
        // Back among the idle ones once its work returned.
        std::thread::sleep(Duration::from_millis(50));
        let second = ran_on(None).recv_timeout(wait).unwrap();
        assert_eq!(first, second, "the idle thread was not used again");
        std::thread::sleep(Duration::from_millis(50));
        let (release, held) = mpsc::channel();
        let stuck = ran_on(Some(held)).recv_timeout(wait).unwrap();
        let other = ran_on(None)
            .recv_timeout(wait)
            .expect("work waited for a stuck thread");
        assert_ne!(stuck, other);
        release.send(()).unwrap();
    }
}
