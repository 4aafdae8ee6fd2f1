//! Work that holds its thread (a full `/proc` scan, a clone that waits for the child's `exec`
//! under a table lock), run from async code without holding up the other tasks.
//!
//! The server answers requests on few workers (one on 2 CPUs), so a task that blocks its
//! worker blocks every session. [`section`] hands the worker's other tasks to another thread
//! first (`block_in_place`) on a multi-thread runtime; on a current-thread runtime (tests) or
//! outside one it just runs the work.

use tokio::runtime::{Handle, RuntimeFlavor};

/// Runs `work`, which may block its thread for a while, without holding up the runtime's
/// other tasks where the runtime can move them.
pub fn section<R>(work: impl FnOnce() -> R) -> R {
    match Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(work)
        }
        _ => work(),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::{Duration, Instant};

    /// On a runtime of one worker, other tasks run while a section blocks its thread: the
    /// section sees a ticking task move on before it returns.
    #[test]
    fn other_tasks_run_while_a_section_blocks() {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let ticks = Arc::new(AtomicU64::new(0));
        let ticker = ticks.clone();
        let moved_on = runtime.block_on(async move {
            tokio::spawn(async move {
                loop {
                    ticker.fetch_add(1, Ordering::Relaxed);
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
            });
            tokio::spawn(async move {
                // Let the ticker start, then block this worker until it has ticked again.
                tokio::time::sleep(Duration::from_millis(20)).await;
                super::section(|| {
                    let before = ticks.load(Ordering::Relaxed);
                    let started = Instant::now();
                    while started.elapsed() < Duration::from_secs(10) {
                        if ticks.load(Ordering::Relaxed) > before + 2 {
                            return true;
                        }
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    false
                })
            })
            .await
            .unwrap()
        });
        assert!(
            moved_on,
            "the other task did not run while the section blocked"
        );
        runtime.shutdown_background();
    }
}
