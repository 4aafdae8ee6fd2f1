//! Preparing a command: from a [`SpawnSpec`] to the [`ExecPlan`] its child runs.
//!
//! Everything the child needs is encoded here, before the clone, because the child may not
//! allocate (`exec.rs`): its argv, its environment (the run marker, the server's own variables,
//! the non-interactive defaults, the caller's), the paths `execve` is tried on, its workdir. The
//! parts that are the same for every command (the server's environment, the defaults) are
//! encoded once, not per spawn: on a trivial command that is a measurable share of the call.

use std::borrow::Cow;
use std::ffi::{CStr, CString, OsStr, OsString};
use std::io;
use std::os::fd::{OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::sync::OnceLock;

use super::SpawnSpec;
use super::exec::{ExecPlan, Session};
use super::marker::RUN_MARKER_VAR;

/// Both forms of the non-interactive defaults, from one list: the names and values, and the
/// child's `KEY=VALUE` entries, encoded at compile time.
macro_rules! non_interactive_env {
    ($($key:literal = $value:literal),* $(,)?) => {
        /// Set unless the caller overrides them: a command must never wait for a human who is
        /// not there.
        pub const NON_INTERACTIVE_ENV: &[(&str, &str)] = &[$(($key, $value)),*];

        /// [`NON_INTERACTIVE_ENV`] as the child's `KEY=VALUE` entries, in the same order: a
        /// command that does not override them gets these, with no encoding per spawn.
        const NON_INTERACTIVE_ENTRIES: [&CStr; NON_INTERACTIVE_ENV.len()] =
            [$(c_str_literal(concat!($key, "=", $value, "\0"))),*];
    };
}

non_interactive_env! {
    "PAGER" = "cat",
    "GIT_PAGER" = "cat",
    "MANPAGER" = "cat",
    "GIT_TERMINAL_PROMPT" = "0",
    "GIT_EDITOR" = "true",
    "GCM_INTERACTIVE" = "never",
    "DEBIAN_FRONTEND" = "noninteractive",
    "PIP_NO_INPUT" = "1",
    // Python block-buffers stdout on a pipe: a background dev server's "Serving on port N"
    // stayed unread for as long as it ran, and a traceback came before the prints above it.
    "PYTHONUNBUFFERED" = "1",
}

/// A NUL-terminated literal as a `CStr`; a literal that is not one fails the build.
const fn c_str_literal(literal: &'static str) -> &'static CStr {
    match CStr::from_bytes_with_nul(literal.as_bytes()) {
        Ok(c_str) => c_str,
        Err(_) => panic!("not a NUL-terminated string without an inner NUL"),
    }
}

fn invalid(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("{what} contains a NUL byte"),
    )
}

fn c_string(bytes: Vec<u8>, what: &str) -> io::Result<CString> {
    CString::new(bytes).map_err(|_| invalid(what))
}

/// [`c_string`] of borrowed bytes, copied once into an allocation with room for the NUL.
fn c_string_of(bytes: &[u8], what: &str) -> io::Result<CString> {
    let mut owned = Vec::with_capacity(bytes.len() + 1);
    owned.extend_from_slice(bytes);
    c_string(owned, what)
}

/// One `KEY=VALUE` entry of the server's own environment, encoded once.
struct InheritedVar {
    key: OsString,
    entry: CString,
}

/// The server's own environment, read and encoded once: agentty never changes it after
/// start-up, and re-reading it per spawn (as std does) is a measurable share of a trivial call.
/// Entries with a NUL byte cannot be passed on and are dropped, as std drops them.
fn inherited_env() -> &'static [InheritedVar] {
    static ENV: OnceLock<Vec<InheritedVar>> = OnceLock::new();
    ENV.get_or_init(|| {
        std::env::vars_os()
            .filter_map(|(key, value)| {
                let entry = CString::new(env_entry(&key, &value)).ok()?;
                Some(InheritedVar { key, entry })
            })
            .collect()
    })
}

fn env_entry(key: &OsStr, value: &OsStr) -> Vec<u8> {
    // One byte more for the NUL that `CString::new` appends: no reallocation.
    let mut entry = Vec::with_capacity(key.len() + 1 + value.len() + 1);
    entry.extend_from_slice(key.as_bytes());
    entry.push(b'=');
    entry.extend_from_slice(value.as_bytes());
    entry
}

/// The child's environment as `KEY=VALUE` entries: the run marker, then inherited, then the
/// non-interactive defaults, then the caller's variables; a later entry replaces an earlier one
/// of the same name. Also returns the child's `PATH`, where its program is looked
/// up.
fn child_env(spec: &SpawnSpec) -> io::Result<(Vec<Cow<'static, CStr>>, Option<&OsStr>)> {
    // (name, value, the default's index in `NON_INTERACTIVE_ENV` while it is not overridden)
    let mut set: Vec<(&OsStr, &OsStr, Option<usize>)> =
        Vec::with_capacity(NON_INTERACTIVE_ENV.len() + 8);
    let overrides = NON_INTERACTIVE_ENV
        .iter()
        .enumerate()
        .map(|(i, (k, v))| (OsStr::new(*k), OsStr::new(*v), Some(i)))
        .chain(
            spec.env
                .iter()
                .map(|(k, v)| (k.as_os_str(), v.as_os_str(), None)),
        )
        .chain(std::iter::once((
            OsStr::new(RUN_MARKER_VAR),
            OsStr::new(spec.marker.as_str()),
            None,
        )));
    for (key, value, default) in overrides {
        if key.is_empty() || key.as_bytes().contains(&b'=') {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("invalid environment variable name {key:?}"),
            ));
        }
        match set.iter_mut().find(|(k, ..)| *k == key) {
            Some(entry) => *entry = (key, value, default),
            None => set.push((key, value, default)),
        }
    }
    let inherited = inherited_env();
    let path = set
        .iter()
        .find(|(k, ..)| *k == OsStr::new("PATH"))
        .map(|(_, v, _)| *v)
        .or_else(|| {
            let var = inherited.iter().find(|var| var.key == "PATH")?;
            let value = var.entry.to_bytes().get(var.key.len() + 1..)?;
            Some(OsStr::from_bytes(value))
        });
    let mut env: Vec<Cow<'static, CStr>> = Vec::with_capacity(inherited.len() + set.len());
    env.extend(
        inherited
            .iter()
            .filter(|var| !set.iter().any(|(k, ..)| *k == var.key))
            .map(|var| Cow::Borrowed(var.entry.as_c_str())),
    );
    for (key, value, default) in set {
        let entry = match default {
            Some(i) => Cow::Borrowed(NON_INTERACTIVE_ENTRIES[i]),
            None => Cow::Owned(c_string(env_entry(key, value), "an environment variable")?),
        };
        // The run marker goes first: a reader that catches only the start of the environment
        // (the process in the middle of `exec`) still finds it.
        if key == OsStr::new(RUN_MARKER_VAR) {
            env.insert(0, entry);
        } else {
            env.push(entry);
        }
    }
    Ok((env, path))
}

/// Where `execve` is tried: the program itself when it names a path, else each directory of
/// the child's `PATH` in order (an empty entry is the workdir), as `execvp` searches.
fn exec_candidates(program: &OsStr, path: Option<&OsStr>) -> io::Result<Vec<CString>> {
    let bytes = program.as_bytes();
    if bytes.is_empty() {
        return Ok(Vec::new());
    }
    if bytes.contains(&b'/') {
        return Ok(vec![c_string_of(bytes, "the program")?]);
    }
    let path = path.map_or(&b"/bin:/usr/bin"[..], OsStr::as_bytes);
    path.split(|&b| b == b':')
        .map(|dir| {
            let dir = if dir.is_empty() { &b"."[..] } else { dir };
            let mut full = Vec::with_capacity(dir.len() + 1 + bytes.len() + 1);
            full.extend_from_slice(dir);
            full.push(b'/');
            full.extend_from_slice(bytes);
            c_string(full, "PATH")
        })
        .collect()
}

/// The plan for `spec` with `stdio` as fds 0-2; `keep_open` are the fds behind them that the
/// plan owns until the clone is done.
pub(super) fn plan(
    spec: &SpawnSpec,
    stdio: [RawFd; 3],
    keep_open: Vec<OwnedFd>,
    session: Session,
) -> io::Result<ExecPlan> {
    let (env, path) = child_env(spec)?;
    let candidates = exec_candidates(&spec.program, path)?;
    if candidates.is_empty() {
        return Err(io::Error::from_raw_os_error(libc::ENOENT));
    }
    let mut argv = Vec::with_capacity(spec.args.len() + 1);
    argv.push(c_string_of(spec.program.as_bytes(), "the program")?);
    for arg in &spec.args {
        argv.push(c_string_of(arg.as_bytes(), "an argument")?);
    }
    let passed_at = |i: usize| spec.pass_fds[i].at;
    if spec.pass_fds.len() > super::PASSED_FDS_MAX
        || (0..spec.pass_fds.len())
            .any(|i| passed_at(i) < 3 || (0..i).any(|j| passed_at(j) == passed_at(i)))
    {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "fds passed to the child must be at most two, each at its own number of 3 or more",
        ));
    }
    let namespace = match spec.confine {
        Some(_) => crate::namespace::of(spec.caller.as_deref())?,
        None => None,
    };
    if namespace.is_none() {
        // Outside the session's namespace only tracking stops this run's escapees; the next
        // start trusts its marker only if it is written down (see `crate::runs`).
        crate::runs::note(&spec.marker);
    }
    Ok(ExecPlan {
        argv,
        env,
        candidates,
        cwd: c_string_of(spec.cwd.as_os_str().as_bytes(), "the workdir")?,
        stdio,
        keep_open,
        child_ends_to: None,
        passed: spec.pass_fds.clone(),
        session,
        confine: spec.confine.clone(),
        // Confined commands only: unconfined ones keep the host's `ps` and `kill`. Over HTTP,
        // each caller's are in a namespace of the caller's own.
        namespace,
        own_devpts: None,
        room_for_pidfd: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_encoded_defaults_are_the_defaults() {
        let encoded: Vec<Vec<u8>> = NON_INTERACTIVE_ENTRIES
            .iter()
            .map(|entry| entry.to_bytes().to_vec())
            .collect();
        let defaults: Vec<Vec<u8>> = NON_INTERACTIVE_ENV
            .iter()
            .map(|(k, v)| env_entry(OsStr::new(k), OsStr::new(v)))
            .collect();
        assert_eq!(encoded, defaults);
    }
}
