//! Errors meaning "the sandbox failed to start" (error 2009 upstream): the command never ran.
//!
//! A refused write inside a running command is not an error of this crate; that is a `Denial`
//! recognised afterwards from the command's output (error 2008). The wording is in `notice.rs`.

use std::path::PathBuf;

use crate::notice;

#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The kernel offers Landlock but building the ruleset failed.
    #[cfg(target_os = "linux")]
    #[error("{}", notice::ruleset_failed(.0))]
    Ruleset(#[from] landlock::RulesetError),
    /// A writable path exists but could not be opened to anchor a rule.
    #[error("{}", notice::open_path_failed(path, source))]
    OpenPath {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A directory above a path kept from reads could not be listed, so its other entries
    /// cannot be granted (see `unreadable.rs`).
    #[error("{}", notice::list_hidden_failed(path, source))]
    ListHidden {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

#[cfg(test)]
mod tests {
    #[test]
    fn says_the_sandbox_failed_to_start() {
        let e = super::SandboxError::OpenPath {
            path: "/w".into(),
            source: std::io::Error::from_raw_os_error(libc::EACCES),
        };
        let text = e.to_string();
        assert!(text.starts_with("the sandbox failed to start: could not open writable path /w"));
    }
}
