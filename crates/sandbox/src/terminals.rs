//! Terminals of the session's own: the server's `/dev/pts` is a fresh devpts instance.
//!
//! Landlock cannot make `/dev/pts` writable for a command's own terminals only: it checks the
//! slave `openpty` gets (through `TIOCGPTPEER` too), so `script`, `tmux` and Python's `pty` need
//! the whole directory, and with it every other terminal of the user, whose screens a command
//! could then write to or whose keystrokes it could read. So the server, once at start-up and
//! while it has one thread, enters a mount namespace of its own and mounts a new devpts
//! instance over `/dev/pts`. Every process it starts inherits that namespace: the terminals of
//! the session (its `pty` commands and shells, and whatever they open) live there, `/dev/ptmx`
//! opens the devpts mounted beside it, and the user's other terminals are not reachable by any
//! path. The Landlock rule on `/dev/pts`, opened after the mount, is the new instance's root.
//! Per-command instances were tried first: Landlock does not check the directory a mount
//! covers, so a rule made before the mount never reaches the new instance.
//!
//! It needs `CAP_SYS_ADMIN` (agentty running as root, as in most containers). A user namespace
//! would give it to anyone, but it shows every file and process of another user as `nobody`
//! (only one's own id can be mapped), which misleads `ls -l`, `ps` and `id`; so without the
//! capability the session's terminals share the user's devpts and `doctor` says so. (A shell's
//! and a `pty` command's own terminal is still had then, from a helper in a user namespace:
//! `agentty-core`'s `spawn/terminal_maker.rs`.)

use std::ffi::CStr;
use std::io;
use std::sync::OnceLock;

const PTS: &CStr = c"/dev/pts";
const DEVPTS: &CStr = c"devpts";
/// `ptmxmode` lets the `/dev/pts/ptmx` node of the new instance be opened too; `mode` is the
/// usual one for a new terminal.
const OPTIONS: &CStr = c"newinstance,ptmxmode=0666,mode=0620";

fn check(rc: libc::c_int) -> io::Result<()> {
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Puts the calling thread in a mount namespace of its own whose `/dev/pts` is a new, empty
/// devpts instance; threads and processes it starts afterwards inherit it.
fn isolate() -> io::Result<()> {
    // SAFETY: plain system calls on constant, NUL-terminated strings.
    unsafe {
        check(libc::unshare(libc::CLONE_NEWNS))?;
        // The copy of the host's devpts mount becomes private first, so the mount on top of it
        // cannot propagate back to the host's namespace.
        check(libc::mount(
            std::ptr::null(),
            PTS.as_ptr(),
            std::ptr::null(),
            libc::MS_PRIVATE,
            std::ptr::null(),
        ))?;
        check(libc::mount(
            DEVPTS.as_ptr(),
            PTS.as_ptr(),
            DEVPTS.as_ptr(),
            libc::MS_NOSUID | libc::MS_NOEXEC,
            OPTIONS.as_ptr().cast(),
        ))
    }
}

fn why(e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::EPERM) => "needs CAP_SYS_ADMIN".to_owned(),
        _ => e.to_string(),
    }
}

/// Gives this process terminals of its own (see the module comment). Call once, before any
/// other thread exists: a mount namespace belongs to the thread that enters it and to what that
/// thread starts afterwards. `Err` says why not; the process then keeps the host's terminals.
pub fn isolate_process() -> Result<(), String> {
    let result = isolate().map_err(|e| why(&e));
    let _ = PROCESS.set(result.clone());
    result
}

static PROCESS: OnceLock<Result<(), String>> = OnceLock::new();

/// Whether this process's commands have terminals of their own: what [`isolate_process`] did,
/// or, where it was not called (`doctor`), whether it would work here, tried on a short-lived
/// thread whose namespace ends with it.
pub fn available() -> Result<(), String> {
    if let Some(done) = PROCESS.get() {
        return done.clone();
    }
    static TRIED: OnceLock<Result<(), String>> = OnceLock::new();
    TRIED
        .get_or_init(|| {
            std::thread::Builder::new()
                .name("agentty-terminals-check".into())
                .spawn(isolate)
                .map_err(|e| e.to_string())?
                .join()
                .map_err(|_| "the check panicked".to_owned())?
                .map_err(|e| why(&e))
        })
        .clone()
}
