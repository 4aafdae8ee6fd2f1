//! The signal masks and dispositions around a `vfork`-style clone.
//!
//! Both sides of the clone need them: the caller blocks signals across it (`exec.rs`), the clone
//! itself blocks every one where the kernel cannot reset the child's handlers (`vfork.rs`), a
//! launcher blocks all but child exits for good (`launcher.rs`), and the child resets its
//! dispositions and unblocks before `exec`. Kept in a module of their own so those files share
//! them without importing each other. Everything here is a raw system call on values prepared
//! beforehand: safe in the child, which shares the server's memory.

use std::io;

/// The kernel's signal mask: one bit per signal, 64 signals on Linux.
pub(super) type KernelSigset = u64;

/// SIGCHLD's bit in a [`KernelSigset`].
const SIGCHLD_BIT: KernelSigset = 1 << (libc::SIGCHLD - 1);

/// Every signal but SIGCHLD: what a launcher blocks for good, and a clone whose child has its
/// handlers reset by the kernel (`vfork.rs`) blocks around it.
///
/// A child's exit signal goes to the thread that cloned it. Blocked there, the kernel queues it
/// for the process and wakes another thread of the server to take it: a wake-up and a context
/// switch per command, for a signal nobody handles (under 16 sessions, half the exits came
/// while their launcher was cloning the next child). Unblocked, at its default (ignored), the
/// kernel drops it where it is sent. Where the clone cannot reset the child's handlers, the
/// clone blocks it too (`vfork::clone_vfork`), so none reaches a child before its own reset.
///
/// This holds while nothing in the server handles SIGCHLD. Were a handler ever installed
/// (`tokio::process`, `signal(SignalKind::child())`), it would run on launchers, in the
/// session's namespaces under the shared filter, at every exit: block SIGCHLD here again then.
pub(super) const ALL_BUT_CHILD_EXITS: KernelSigset = !SIGCHLD_BIT;

/// Blocks every signal on this thread, the C library's internal ones included (which
/// `pthread_sigmask` would leave out), and returns the previous mask.
pub(super) fn block_all_signals() -> io::Result<KernelSigset> {
    block_signals(!0)
}

/// Sets this thread's mask to `mask` (the C library's internal signals included), and returns
/// the previous one.
pub(super) fn block_signals(mask: KernelSigset) -> io::Result<KernelSigset> {
    let mut old: KernelSigset = 0;
    // SAFETY: rt_sigprocmask reads and writes one kernel sigset each, of the size given.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_rt_sigprocmask,
            libc::SIG_SETMASK,
            &raw const mask,
            &raw mut old,
            size_of::<KernelSigset>(),
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(old)
}

/// Sets this thread's signal mask to `mask`. A raw system call: safe in the child.
pub(super) fn set_signal_mask(mask: KernelSigset) {
    // SAFETY: rt_sigprocmask reads one kernel sigset of the size given; no old mask wanted.
    unsafe {
        libc::syscall(
            libc::SYS_rt_sigprocmask,
            libc::SIG_SETMASK,
            &raw const mask,
            std::ptr::null_mut::<KernelSigset>(),
            size_of::<KernelSigset>(),
        );
    }
}

/// Every signal the server handles goes back to its default, and so does SIGPIPE (Rust
/// ignores it; a pipeline's `yes | head` relies on it). Other ignored signals stay ignored,
/// as `posix_spawn` leaves them. `handlers_cleared`: the clone did the first part already
/// (`vfork.rs`).
///
/// # Safety
/// Child only (see `exec::child_main`).
pub(super) unsafe fn reset_signal_dispositions(handlers_cleared: bool) {
    // SAFETY: sigaction with a null new action only reads; with a zeroed action (SIG_DFL) it
    // resets. Signals the C library reserves refuse the change, which is fine.
    unsafe {
        let mut default: libc::sigaction = std::mem::zeroed();
        default.sa_sigaction = libc::SIG_DFL;
        if handlers_cleared {
            libc::sigaction(libc::SIGPIPE, &raw const default, std::ptr::null_mut());
            return;
        }
        for sig in 1..libc::SIGRTMAX() + 1 {
            if sig == libc::SIGKILL || sig == libc::SIGSTOP {
                continue;
            }
            let mut current: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(sig, std::ptr::null(), &raw mut current) != 0 {
                continue;
            }
            let handled =
                current.sa_sigaction != libc::SIG_DFL && current.sa_sigaction != libc::SIG_IGN;
            if handled || sig == libc::SIGPIPE {
                libc::sigaction(sig, &raw const default, std::ptr::null_mut());
            }
        }
    }
}
