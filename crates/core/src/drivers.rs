//! The thread that drives long-lived output: background jobs and shells.
//!
//! A job that floods (`yes`, a chatty dev server) is drained at full speed and every byte is
//! cleaned, and a shell's bytes also go through the terminal emulator: that is CPU work without
//! end. On the runtime that answers requests it queued every call behind it (with 8 `yes` jobs
//! and 2 `yes` shells, a trivial call took a median of 169 ms against 2.4 ms for a raw spawn at
//! the same moment). So those drivers run here, on one thread of their own: the request runtime
//! stays free, the kernel shares the CPUs between the two threads, and a flood can take at most
//! one core of the server.
//!
//! A shell's terminal is registered with this thread's own reactor ([`registering`]), so the
//! kernel wakes this thread itself when a prompt comes; a job's pipes are read on a thread of
//! their own, which passes each chunk on (`engine/pipe_thread.rs`). Each driver
//! yields after every read ([`fair`]), so one flood cannot hold the others (or a quiet shell's
//! prompt) back.

use std::future::Future;
use std::sync::OnceLock;

use tokio::runtime::{Builder, Handle};
use tokio::task::JoinHandle;

/// Starts `driver` on the drivers' thread (created on first use); on the caller's runtime if
/// that thread could not be started.
pub fn spawn<F>(driver: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    match handle() {
        Some(handle) => handle.spawn(driver),
        None => tokio::spawn(driver),
    }
}

/// [`spawn`] that may be called anywhere, a `Drop` included: on the drivers' thread, else on the
/// caller's runtime; `None` (nothing spawned) when there is neither.
pub fn try_spawn<F>(driver: F) -> Option<JoinHandle<F::Output>>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    match handle() {
        Some(handle) => Some(handle.spawn(driver)),
        None => Handle::try_current().ok().map(|h| h.spawn(driver)),
    }
}

/// Runs `make` with the drivers' runtime as the current one, so that what it registers with a
/// reactor (a terminal, a pipe) is watched by the drivers' thread itself: the kernel wakes that
/// thread when output comes, not a request worker that would then wake it (a hop less per
/// chunk). On the caller's runtime if the drivers' thread could not be started. Inside, the
/// current runtime is the drivers' single thread: `blocking::section` runs in place there, so
/// nothing slow should happen in `make`.
pub fn registering<T>(make: impl FnOnce() -> T) -> T {
    match handle() {
        Some(handle) => {
            let _entered = handle.enter();
            make()
        }
        None => make(),
    }
}

/// Lets the other drivers run: call after each read and ingest.
pub async fn fair() {
    tokio::task::yield_now().await;
}

fn handle() -> Option<&'static Handle> {
    static HANDLE: OnceLock<Option<Handle>> = OnceLock::new();
    HANDLE
        .get_or_init(|| {
            let started = start();
            if let Err(e) = &started {
                tracing::warn!(
                    "cannot start the drivers' thread ({e}); jobs share the request runtime"
                );
            }
            started.ok()
        })
        .as_ref()
}

fn start() -> std::io::Result<Handle> {
    let runtime = Builder::new_current_thread().enable_all().build()?;
    let handle = runtime.handle().clone();
    std::thread::Builder::new()
        .name("agentty-drivers".into())
        .spawn(move || runtime.block_on(std::future::pending::<()>()))?;
    Ok(handle)
}
