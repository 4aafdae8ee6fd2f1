//! The start-up text that gives bash or zsh its prompt hooks.
//!
//! Why not the environment: every program a shell runs inherits its environment, so whatever
//! the hooks hold there (the marker's nonce) every program could read and print. What a shell
//! reads from a file stays in the shell's own memory.
//!
//! bash reads it from a sealed memfd at [`SHELL_STARTUP_FD`](crate::pty::channel), which it
//! closes before its first prompt: no file name leads to it (only the shell's own
//! `/proc/<pid>/fd/101` until then, to whoever may read the shell's fds), and nobody can change
//! it (review 35 F4:
//! where the state dir was writable to commands, a job appended to start-up files and made
//! `false` exit 0). zsh finds its `.zshrc` only in a directory (`ZDOTDIR`): it is made under the
//! server's state dir (which confined commands cannot write, or read-only to them where it lies
//! in a writable root and the session has its mount namespace; elsewhere in a writable root the
//! server refuses zsh), 0700 with a random name, the file created exclusively without following
//! a link; both are gone after the first prompt, so nothing a program reads later (the shell's
//! command line, its environ) leads to them.

use std::io::{self, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// `text` in a memfd sealed against every change, read from its start: what bash's bootstrap
/// reads at [`SHELL_STARTUP_FD`](crate::pty::channel).
pub(crate) fn sealed_text(text: &str) -> io::Result<OwnedFd> {
    // `MFD_NOEXEC_SEAL` (Linux 6.3): where `vm.memfd_noexec` is 2, a memfd without it is
    // refused; an older kernel refuses the flag (EINVAL), and then it is made without.
    const MFD_NOEXEC_SEAL: libc::c_uint = 0x8;
    let make = |flags: libc::c_uint| {
        // SAFETY: memfd_create with a constant name.
        unsafe { libc::memfd_create(c"agentty-startup".as_ptr(), flags) }
    };
    let flags = libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING;
    let mut raw = make(flags | MFD_NOEXEC_SEAL);
    if raw < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::EINVAL) {
        raw = make(flags);
    }
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh fd, owned from here on.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    let mut file = std::fs::File::from(fd);
    file.write_all(text.as_bytes())?;
    let seals = libc::F_SEAL_SEAL | libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_WRITE;
    // SAFETY: fcntl and lseek on an fd we own.
    unsafe {
        if libc::fcntl(file.as_raw_fd(), libc::F_ADD_SEALS, seals) != 0
            || libc::lseek(file.as_raw_fd(), 0, libc::SEEK_SET) != 0
        {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(OwnedFd::from(file))
}

/// A private directory holding one start-up file, removed (with the file) on drop.
pub(crate) struct StartupFile {
    dir: PathBuf,
    file: PathBuf,
}

impl StartupFile {
    /// Writes `text` as `name` in a fresh private directory under `root` (made 0700 if missing,
    /// refused when it is not ours alone).
    pub fn write(root: &Path, name: &str, text: &str) -> io::Result<Self> {
        crate::spill::ensure_private_dir(root)?;
        let dir = root.join(format!("shell-{}", crate::random::hex(12)));
        std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
        // From here on the directory is removed on every path out.
        let startup = Self {
            file: dir.join(name),
            dir,
        };
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&startup.file)?;
        file.write_all(text.as_bytes())?;
        Ok(startup)
    }

    pub fn path(&self) -> &Path {
        &self.file
    }
}

impl Drop for StartupFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.file);
        let _ = std::fs::remove_dir(&self.dir);
    }
}
