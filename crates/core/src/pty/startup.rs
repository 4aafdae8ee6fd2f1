//! The start-up file that gives bash or zsh its prompt hooks, written into a private directory
//! and removed once the shell has read it.
//!
//! Why a file and not the environment: every program a shell runs inherits its environment, so
//! whatever the hooks hold there (the marker's nonce) every program could read and print. What a
//! shell reads from a file stays in the shell's own memory. The directory is made under the
//! server's state dir (which confined commands cannot write), 0700 with a random name, the file
//! created exclusively without following a link; both are gone after the first prompt, so
//! nothing a program reads later (the shell's command line, its environ) leads to them.

use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

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
