//! The `vfork`-style clone itself: `CLONE_VM | CLONE_VFORK | CLONE_PIDFD` on a stack of ours.
//!
//! Where the kernel can (`clone3` with `CLONE_CLEAR_SIGHAND`, Linux 5.5), the clone also resets
//! every signal the server handles to its default in the child, as one step of the clone: no
//! handler of the server can then run in the child, which shares its memory. Without it the
//! child must do that itself, one `sigaction` read per signal (62 system calls, ~17 us here,
//! per command). `clone3` with a stack of our own has no C library wrapper: the child returns
//! from the system call on that stack, so it must not return into any Rust frame. A few lines
//! of assembly call the entry function there and exit. x86_64 only for now; elsewhere, and where
//! `clone3` is refused (kernels before 5.5; container seccomp profiles that answer ENOSYS),
//! `clone(2)` is used, once found refused for the life of the process.

use std::io;
use std::sync::atomic::AtomicBool;
#[cfg(any(test, all(target_os = "linux", target_arch = "x86_64")))]
use std::sync::atomic::Ordering;

/// The child's entry point: never returns in practice (it execs or exits).
pub(super) type Entry = extern "C" fn(*mut libc::c_void) -> libc::c_int;

/// A started child: its pid and the raw pidfd.
pub(super) struct Cloned {
    pub pid: libc::pid_t,
    pub pidfd: libc::c_int,
}

/// `clone3` was refused once: use `clone` from then on.
static CLONE3_REFUSED: AtomicBool = AtomicBool::new(false);

/// Clones a `vfork`-style child that runs `entry(arg)` on the stack ending at `stack_top`
/// (16-byte aligned, `stack_bytes` long). The calling thread is suspended until the child has
/// exec'd or exited. Before each attempt `*handlers_cleared` says whether that clone resets the
/// handled signals itself, for the child to read (it shares this memory).
///
/// # Safety
/// As `clone(2)` with `CLONE_VM | CLONE_VFORK`: `entry` must only make async-signal-safe calls
/// on memory the suspended caller keeps alive, with every signal blocked by the caller but
/// SIGCHLD at most (blocked here too before a clone that keeps the handlers), and the stack
/// must be the caller's to lend.
pub(super) unsafe fn clone_vfork(
    entry: Entry,
    arg: *mut libc::c_void,
    stack_top: *mut u8,
    stack_bytes: usize,
    handlers_cleared: *mut bool,
) -> io::Result<Cloned> {
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    if !CLONE3_REFUSED.load(Ordering::Relaxed) {
        // SAFETY: as this function's contract; `handlers_cleared` is the caller's to write.
        unsafe { handlers_cleared.write(true) };
        // SAFETY: as this function's contract.
        match unsafe { clone3_clearing_handlers(entry, arg, stack_top, stack_bytes) } {
            Ok(cloned) => return Ok(cloned),
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::ENOSYS | libc::EINVAL | libc::EPERM)
                ) =>
            {
                CLONE3_REFUSED.store(true, Ordering::Relaxed);
            }
            Err(e) => return Err(e),
        }
    }
    let _ = (&CLONE3_REFUSED, stack_bytes);
    // The child keeps the server's handlers until it resets them: it must start with every
    // signal blocked, SIGCHLD too (the caller restores its own mask after the clone).
    super::signals::block_all_signals()?;
    // SAFETY: as above.
    unsafe { handlers_cleared.write(false) };
    let mut pidfd: libc::c_int = -1;
    let flags = libc::CLONE_VM | libc::CLONE_VFORK | libc::CLONE_PIDFD | libc::SIGCHLD;
    // SAFETY: as this function's contract. With CLONE_PIDFD the kernel writes the pidfd to the
    // parent-tid slot.
    let pid = unsafe {
        libc::clone(
            entry,
            stack_top.cast(),
            flags,
            arg,
            &raw mut pidfd,
            std::ptr::null_mut::<libc::c_void>(),
            std::ptr::null_mut::<libc::pid_t>(),
        )
    };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(Cloned { pid, pidfd })
}

/// `CLONE_CLEAR_SIGHAND` (linux/sched.h); libc's constant has the wrong type.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
const CLONE_CLEAR_SIGHAND: u64 = 0x1_0000_0000;

/// `clone3` of a `vfork`-style child whose handled signals the kernel resets to default.
///
/// # Safety
/// As [`clone_vfork`].
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
unsafe fn clone3_clearing_handlers(
    entry: Entry,
    arg: *mut libc::c_void,
    stack_top: *mut u8,
    stack_bytes: usize,
) -> io::Result<Cloned> {
    let mut pidfd: libc::c_int = -1;
    let flags =
        (libc::CLONE_VM | libc::CLONE_VFORK | libc::CLONE_PIDFD) as u64 | CLONE_CLEAR_SIGHAND;
    // SAFETY: clone_args is plain integers; all zero is "unset" for every field.
    let mut args: libc::clone_args = unsafe { std::mem::zeroed() };
    args.flags = flags;
    args.pidfd = (&raw mut pidfd) as u64;
    args.exit_signal = libc::SIGCHLD as u64;
    // The kernel starts the child with its stack pointer at `stack + stack_size`.
    args.stack = stack_top.wrapping_sub(stack_bytes) as u64;
    args.stack_size = stack_bytes as u64;
    let returned: isize;
    // SAFETY: the child (rax == 0) runs on its own stack from here: it calls `entry(arg)` with
    // the stack 16-byte aligned at the call, as the ABI wants, then exits with what `entry`
    // returned; it never leaves this block. The parent falls through with the pid or -errno.
    // Registers are the parent's in both (clone copies them), so r12/r13 carry entry and arg.
    unsafe {
        std::arch::asm!(
            "syscall",
            "test rax, rax",
            "jnz 2f",
            "xor ebp, ebp",
            "mov rdi, r13",
            "call r12",
            "mov edi, eax",
            "mov eax, {exit}",
            "syscall",
            "ud2",
            "2:",
            exit = const libc::SYS_exit,
            inlateout("rax") libc::SYS_clone3 as isize => returned,
            in("rdi") &raw mut args,
            in("rsi") size_of::<libc::clone_args>(),
            in("r12") entry,
            in("r13") arg,
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack),
        );
    }
    if returned < 0 {
        return Err(io::Error::from_raw_os_error(-returned as i32));
    }
    Ok(Cloned {
        pid: returned as libc::pid_t,
        pidfd,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the child saw, written into the parent's memory (CLONE_VM).
    struct Seen {
        handlers_cleared: bool,
        /// Apply the exec path's reset first, as `child_main` does.
        reset: bool,
        usr1: libc::sighandler_t,
        usr2: libc::sighandler_t,
    }

    extern "C" fn on_usr1(_: libc::c_int) {}

    /// The tests below switch `CLONE3_REFUSED`, which is process-wide.
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

    fn disposition(sig: libc::c_int) -> libc::sighandler_t {
        // SAFETY: sigaction with a null new action only reads into `current`.
        unsafe {
            let mut current: libc::sigaction = std::mem::zeroed();
            libc::sigaction(sig, std::ptr::null(), &raw mut current);
            current.sa_sigaction
        }
    }

    extern "C" fn look(arg: *mut libc::c_void) -> libc::c_int {
        // SAFETY: `arg` is the parent's `Seen`, alive while it is suspended (CLONE_VFORK).
        unsafe {
            let seen = &mut *arg.cast::<Seen>();
            if seen.reset {
                super::super::signals::reset_signal_dispositions(seen.handlers_cleared);
            }
            seen.usr1 = disposition(libc::SIGUSR1);
            seen.usr2 = disposition(libc::SIGUSR2);
            libc::_exit(0)
        }
    }

    /// Clones `look` with SIGUSR1 handled and SIGUSR2 ignored in this process (as they were
    /// again after).
    fn clone_and_look(reset: bool) -> Seen {
        // SAFETY: installs a handler that does nothing, and an ignore, keeping what was there
        // to put back below.
        let (old_usr1, old_usr2) = unsafe {
            let mut handled: libc::sigaction = std::mem::zeroed();
            handled.sa_sigaction = on_usr1 as *const () as libc::sighandler_t;
            let mut ignored: libc::sigaction = std::mem::zeroed();
            ignored.sa_sigaction = libc::SIG_IGN;
            let (mut old_usr1, mut old_usr2): (libc::sigaction, libc::sigaction) =
                (std::mem::zeroed(), std::mem::zeroed());
            assert_eq!(
                libc::sigaction(libc::SIGUSR1, &raw const handled, &raw mut old_usr1),
                0
            );
            assert_eq!(
                libc::sigaction(libc::SIGUSR2, &raw const ignored, &raw mut old_usr2),
                0
            );
            (old_usr1, old_usr2)
        };
        let mut seen = Seen {
            handlers_cleared: false,
            reset,
            usr1: 0,
            usr2: 0,
        };
        let mut stack = vec![0u8; 64 * 1024];
        let top = stack.as_mut_ptr_range().end;
        let aligned = top.wrapping_sub(top as usize % 16);
        let bytes = aligned as usize - stack.as_ptr() as usize;
        let cleared = &raw mut seen.handlers_cleared;
        // SAFETY: `look` makes only system calls on `seen`, which outlives the child; no signal
        // is sent to it, so none needs blocking here.
        let cloned =
            unsafe { clone_vfork(look, (&raw mut seen).cast(), aligned, bytes, cleared) }.unwrap();
        let mut status = 0;
        // SAFETY: waits for our own child; closes the pidfd the clone made.
        unsafe {
            assert_eq!(libc::waitpid(cloned.pid, &raw mut status, 0), cloned.pid);
            libc::close(cloned.pidfd);
        }
        // SAFETY: puts back the dispositions read above.
        unsafe {
            libc::sigaction(libc::SIGUSR1, &raw const old_usr1, std::ptr::null_mut());
            libc::sigaction(libc::SIGUSR2, &raw const old_usr2, std::ptr::null_mut());
        }
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
        seen
    }

    /// Whether this kernel (and any seccomp profile around us) offers clone3: with no
    /// arguments it answers EINVAL where it does, ENOSYS where it does not.
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    fn clone3_offered() -> bool {
        // SAFETY: a size of 0 is refused before the kernel reads anything.
        let rc = unsafe { libc::syscall(libc::SYS_clone3, std::ptr::null::<libc::c_void>(), 0) };
        !(rc == -1 && io::Error::last_os_error().raw_os_error() == Some(libc::ENOSYS))
    }

    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    #[test]
    fn the_clone_itself_resets_handled_signals_and_keeps_ignored_ones() {
        let _one = ONE_AT_A_TIME.lock();
        let seen = clone_and_look(false);
        if !clone3_offered() {
            eprintln!("clone3 is refused here: spawns take clone(2) and the child's own reset");
            assert!(!seen.handlers_cleared && CLONE3_REFUSED.load(Ordering::Relaxed));
            return;
        }
        assert!(
            seen.handlers_cleared,
            "clone3 with CLONE_CLEAR_SIGHAND was not used"
        );
        assert_eq!(
            seen.usr1,
            libc::SIG_DFL,
            "the server's handler is live in the child"
        );
        assert_eq!(seen.usr2, libc::SIG_IGN);
    }

    #[test]
    fn without_clone3_the_child_resets_handled_signals_itself() {
        let _one = ONE_AT_A_TIME.lock();
        CLONE3_REFUSED.store(true, Ordering::Relaxed);
        let unreset = clone_and_look(false);
        let reset = clone_and_look(true);
        CLONE3_REFUSED.store(false, Ordering::Relaxed);
        assert!(!unreset.handlers_cleared && !reset.handlers_cleared);
        assert_ne!(unreset.usr1, libc::SIG_DFL, "clone(2) keeps the handler");
        assert_eq!(reset.usr1, libc::SIG_DFL);
        assert_eq!(reset.usr2, libc::SIG_IGN);
    }
}
