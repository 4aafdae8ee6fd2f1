//! The directories inside the state dir that a server's confined commands may read, though the
//! state dir is kept from their reads (docs/BEHAVIOUR.md §5): where its sessions spill, and where
//! its shells' start-up files are written. Over stdio, the server's own; over HTTP, each
//! caller's own (`<server>.c<n>`, beside the server's), so that a caller's commands read their
//! own sessions' spill files and never another caller's.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

/// This server's directories, and its callers' as they come.
pub(crate) struct OwnDirs {
    spill_root: PathBuf,
    shells_root: PathBuf,
    /// This process's session name.
    server: String,
    /// The callers seen so far, numbered by their place here.
    callers: Mutex<Vec<Arc<str>>>,
}

/// One reader's directories.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Dirs {
    /// Where its sessions' spill directories are made.
    pub(crate) spill: PathBuf,
    /// Where its shells write their start-up files.
    pub(crate) startup: PathBuf,
}

impl Dirs {
    pub(crate) fn both(&self) -> [PathBuf; 2] {
        [self.spill.clone(), self.startup.clone()]
    }
}

impl OwnDirs {
    pub(crate) fn new(spill_root: &Path, shells_root: &Path, server: &str) -> Self {
        OwnDirs {
            spill_root: spill_root.to_path_buf(),
            shells_root: shells_root.to_path_buf(),
            server: server.to_owned(),
            callers: Mutex::new(Vec::new()),
        }
    }

    fn named(&self, name: &str) -> Dirs {
        Dirs {
            spill: self.spill_root.join(name),
            startup: self.shells_root.join(name),
        }
    }

    /// The directories of `caller` (`None`: the server's own, made at start). A caller's are
    /// made (0700) the first time it is seen, so a read rule can be bound to them before its
    /// first command; one that cannot be made is said, and nothing there is readable then.
    pub(crate) fn of(&self, caller: Option<&str>) -> Dirs {
        let Some(caller) = caller else {
            return self.named(&self.server);
        };
        let mut callers = self.callers.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(n) = callers.iter().position(|c| **c == *caller) {
            return self.named(&format!("{}.c{}", self.server, n + 1));
        }
        callers.push(caller.into());
        let dirs = self.named(&format!("{}.c{}", self.server, callers.len()));
        for dir in dirs.both() {
            if let Err(e) = agentty_core::ensure_private_dir(&dir) {
                tracing::warn!(
                    "cannot make {}: {e}; this caller's confined commands will not read what \
                     is written there",
                    dir.display()
                );
            }
        }
        dirs
    }

    /// Every directory made for this server, its callers' too: removed once empty when the
    /// server ends.
    pub(crate) fn all(&self) -> Vec<PathBuf> {
        let callers = self
            .callers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len();
        std::iter::once(self.server.clone())
            .chain((1..=callers).map(|n| format!("{}.c{n}", self.server)))
            .flat_map(|name| self.named(&name).both())
            .collect()
    }
}
