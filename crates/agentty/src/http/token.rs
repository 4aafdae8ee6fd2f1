//! The HTTP listener's tokens, and the callers they name.
//!
//! A token file holds one token per line, or `NAME TOKEN` to name its caller, or `NAME TOKEN
//! operator` for an operator, whose web view shows every caller's sessions (off by default: a
//! caller's view shows its own); blank lines and lines starting with `#` are skipped. Each token
//! is a caller: callers without a session (protocol 2026-07-28) are kept apart by the token they
//! send, and a client session belongs to the caller that opened it. The file made at first
//! start holds one token.
//!
//! A token is never printed nor logged (stderr lands in files a confined command can read: a
//! host's MCP log, `nohup.out`, the journal): [`Callers`] shows only names when debug-printed,
//! and the start-up banner names the file and a shell line that reads it ([`Callers::paste`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result, bail};

use agentty_server::Caller;
use agentty_server::view::Viewer;

/// The shortest token accepted: 32 characters (the one made is 64 hex digits, 256 bits).
const MIN_TOKEN_CHARS: usize = 32;

/// The tokens a request's headers offer, in order: `Authorization: Bearer <token>`, then the
/// header `--token-header` names (`<token>`, or `Bearer <token>`), for a router that consumes
/// `Authorization` itself (agent-sandbox's sandbox-router strips it, and another proxy may put
/// its own there).
pub fn offered<'h>(
    headers: &'h hyper::HeaderMap,
    token_header: Option<&hyper::header::HeaderName>,
) -> impl Iterator<Item = &'h [u8]> {
    let authorization = headers
        .get(hyper::header::AUTHORIZATION)
        .and_then(|v| v.as_bytes().strip_prefix(b"Bearer "));
    let named = token_header
        .and_then(|name| headers.get(name))
        .map(|value| {
            let bytes = value.as_bytes();
            bytes.strip_prefix(b"Bearer ").unwrap_or(bytes)
        });
    authorization.into_iter().chain(named)
}

/// Every token the listener accepts, each with its caller and whether it is an operator's.
pub struct Callers {
    tokens: Vec<(String, Caller, bool)>,
    /// The file is one token and nothing else, so `cat` reads it.
    bare: bool,
}

impl std::fmt::Debug for Callers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.tokens.iter().map(|(_, caller, _)| &caller.0))
            .finish()
    }
}

impl Callers {
    /// The caller whose token `given` is. Every token is compared, each in constant time, so the
    /// answer's timing says nothing of which one came closest.
    pub fn find(&self, given: &[u8]) -> Option<&Caller> {
        self.entry(given).map(|(caller, _)| caller)
    }

    /// Who a view logged in with `given` shows sessions to.
    pub fn viewer(&self, given: &[u8]) -> Option<Viewer> {
        self.entry(given).map(|(caller, operator)| {
            if operator {
                Viewer::Operator
            } else {
                Viewer::Caller(caller.clone())
            }
        })
    }

    fn entry(&self, given: &[u8]) -> Option<(&Caller, bool)> {
        self.tokens
            .iter()
            .fold(None, |found, (token, caller, operator)| {
                if same_secret(given, token.as_bytes()) {
                    Some((caller, *operator))
                } else {
                    found
                }
            })
    }

    /// The token of the caller `name`, or the first one's.
    pub fn token_of(&self, name: Option<&str>) -> Option<&str> {
        self.tokens
            .iter()
            .find(|(_, caller, _)| name.is_none_or(|n| *caller.0 == *n))
            .map(|(token, _, _)| token.as_str())
    }

    /// A shell expression that gives the first caller's token, read from `file` when the shell
    /// runs it: for the host's command line the banner prints, which must not hold the token.
    pub fn paste(&self, file: &Path) -> String {
        let file = shell_word(&file.to_string_lossy());
        if self.bare {
            format!("$(cat {file})")
        } else {
            // The token of the first line that is neither blank nor a comment, as `parse` reads
            // it: the line's only word, or its second (`NAME TOKEN`, `NAME TOKEN operator`).
            // No `!`, which an interactive bash would expand even in double quotes.
            format!("$(awk '$1 ~ /^#/ {{ next }} NF {{ print (NF == 1 ? $1 : $2); exit }}' {file})")
        }
    }

    pub fn len(&self) -> usize {
        self.tokens.len()
    }
}

/// `text` as one word of a POSIX shell: as it is when that is safe, else in single quotes.
fn shell_word(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+:@%,=".contains(&b));
    if plain {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

/// Equal in time that does not depend on where the first difference is.
pub fn same_secret(given: &[u8], expected: &[u8]) -> bool {
    if given.len() != expected.len() {
        return false;
    }
    let diff = given
        .iter()
        .zip(expected)
        .fold(0u8, |acc, (a, b)| acc | std::hint::black_box(a ^ b));
    diff == 0
}

/// The tokens of a token file's text.
pub fn parse(text: &str) -> Result<Callers> {
    let mut callers: Vec<(String, Caller, bool)> = Vec::new();
    let lines = text
        .lines()
        .map(str::trim)
        .enumerate()
        .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'));
    for (index, line) in lines {
        let n = index + 1;
        let words: Vec<&str> = line.split_whitespace().collect();
        let (name, token, operator) = match words[..] {
            [token] => (format!("caller{}", callers.len() + 1), token, false),
            [name, token] => (name.to_owned(), token, false),
            [name, token, "operator"] => (name.to_owned(), token, true),
            _ => bail!("line {n}: a line is TOKEN, NAME TOKEN or NAME TOKEN operator"),
        };
        let name_ok = name.len() <= 64
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
        if !name_ok {
            bail!("line {n}: a caller's name is at most 64 letters, digits, `.`, `_` or `-`");
        }
        if token.chars().count() < MIN_TOKEN_CHARS {
            bail!("line {n}: the token is shorter than {MIN_TOKEN_CHARS} characters");
        }
        if callers.iter().any(|(t, c, _)| t == token || *c.0 == *name) {
            bail!("line {n}: a token and a name may appear only once");
        }
        callers.push((token.to_owned(), Caller(Arc::from(name)), operator));
    }
    if callers.is_empty() {
        bail!("it holds no token");
    }
    let bare = matches!(&callers[..], [(token, _, _)] if text.trim() == token);
    Ok(Callers {
        tokens: callers,
        bare,
    })
}

/// The tokens. `given` (`--token-file`) must exist and be private; it may be a symlink (a
/// Kubernetes secret is one). Otherwise `default` (`<state dir>/token`) is read if it is there
/// and private, or made (256 random bits) and written there, 0600, created exclusively, no
/// symlink followed. Returns them, their file, and whether it is new.
pub fn load_or_make(given: Option<&Path>, default: &Path) -> Result<(Callers, PathBuf, bool)> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    if let Some(file) = given {
        let callers = read_private(file, 0)
            .with_context(|| format!("cannot use the token file {}", file.display()))?;
        return Ok((callers, file.to_owned(), false));
    }
    let file = default;
    if let Some(dir) = file.parent() {
        super::private_dir(dir)?;
    }
    match read_private(file, libc::O_NOFOLLOW) {
        Ok(callers) => Ok((callers, file.to_owned(), false)),
        Err(e)
            if e.downcast_ref::<std::io::Error>()
                .is_some_and(|e| e.kind() == std::io::ErrorKind::NotFound) =>
        {
            let token = agentty_core::random::hex(32);
            let mut created = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW)
                .open(file)
                .with_context(|| format!("cannot create the token file {}", file.display()))?;
            created.write_all(format!("{token}\n").as_bytes())?;
            Ok((parse(&token)?, file.to_owned(), true))
        }
        Err(e) => Err(e.context(format!("cannot use the token file {}", file.display()))),
    }
}

/// The tokens in `file` (`agentty view` reads them), refused unless it is private as
/// [`load_or_make`] wants it.
pub fn read(file: &Path) -> Result<Callers> {
    read_private(file, 0).with_context(|| format!("cannot use the token file {}", file.display()))
}

/// The tokens in `file`: a regular file of this user's that nobody else may read or write
/// (0600 or 0400).
fn read_private(file: &Path, flags: libc::c_int) -> Result<Callers> {
    use std::io::Read;
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags)
        .open(file)?;
    let meta = opened.metadata()?;
    // SAFETY: getuid has no preconditions.
    let me = unsafe { libc::getuid() };
    if !meta.is_file() || meta.uid() != me || meta.mode() & 0o077 != 0 {
        bail!("not a private file of this user (mode 0600 or 0400): remove it or fix it");
    }
    // Confined commands may not read the file by its path (docs/BEHAVIOUR.md §5); another name
    // of the same file, elsewhere, they could.
    if meta.nlink() > 1 {
        bail!(
            "it has {} names (hard links), and a confined command could read it by another: \
             remove the others (`find / -xdev -samefile FILE` lists them)",
            meta.nlink()
        );
    }
    let mut text = String::new();
    opened
        .take(1024 * 1024)
        .read_to_string(&mut text)
        .context("it is not UTF-8 text")?;
    parse(&text)
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "0123456789abcdef0123456789abcdef";
    const B: &str = "fedcba9876543210fedcba9876543210";

    #[test]
    fn each_token_is_a_caller_named_or_numbered() {
        let callers = parse(&format!("# agents\n{A}\n\n  reviewer {B}  \n")).unwrap();
        assert_eq!(callers.len(), 2);
        assert_eq!(&*callers.find(A.as_bytes()).unwrap().0, "caller1");
        assert_eq!(&*callers.find(B.as_bytes()).unwrap().0, "reviewer");
        assert!(callers.find(&A.as_bytes()[1..]).is_none());
        assert!(callers.find(b"").is_none());
        assert_eq!(
            callers.viewer(B.as_bytes()),
            Some(Viewer::Caller(Caller(Arc::from("reviewer"))))
        );
        let with_operator = parse(&format!("lead {A} operator\n{B}\n")).unwrap();
        assert_eq!(with_operator.viewer(A.as_bytes()), Some(Viewer::Operator));
        assert!(matches!(
            with_operator.viewer(B.as_bytes()),
            Some(Viewer::Caller(_))
        ));
    }

    #[test]
    fn no_token_is_shown_only_where_to_read_it() {
        let file = Path::new("/state/agentty/token");
        let bare = parse(&format!("{A}\n")).unwrap();
        assert_eq!(bare.paste(file), "$(cat /state/agentty/token)");
        let named = parse(&format!("# agents\nalice {A}\n{B}\n")).unwrap();
        assert_eq!(
            named.paste(Path::new("/my secrets/it's")),
            r"$(awk '$1 ~ /^#/ { next } NF { print (NF == 1 ? $1 : $2); exit }' '/my secrets/it'\''s')"
        );
        let shown = format!("{bare:?} {named:?}");
        assert!(!shown.contains(A) && !shown.contains(B), "{shown}");
        assert!(shown.contains("alice"), "{shown}");
    }

    #[test]
    fn a_bad_file_says_which_line_and_why() {
        for (text, why) in [
            ("", "holds no token"),
            ("# only a comment\n", "holds no token"),
            ("short\n", "line 1: the token is shorter"),
            (
                &format!("a b {A}\n"),
                "line 1: a line is TOKEN, NAME TOKEN or NAME TOKEN operator",
            ),
            (&format!("{A}\n{A}\n"), "line 2: a token and a name"),
            (&format!("x {A}\nx {B}\n"), "line 2: a token and a name"),
            (&format!("bad/name {A}\n"), "line 1: a caller's name"),
        ] {
            let e = parse(text).unwrap_err().to_string();
            assert!(e.contains(why), "{text:?}: {e}");
        }
    }
}
