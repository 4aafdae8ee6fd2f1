//! macOS backend: a Seatbelt (SBPL) profile confining writes only, run through `sandbox-exec`.
//!
//! The profile is plain text, so it is generated and unit-tested on every platform. It starts from
//! `(allow default)` rather than codex's `(deny default)` because docs/BEHAVIOUR.md §5 confines writes only:
//! reads, exec and network stay as they are. `sandbox-exec` execs the command in place, so the
//! command keeps the pid and process group it was spawned with. The wrapping itself is compiled
//! only on macOS (and in tests) and has NOT been run on a real Mac.

#[cfg(any(target_os = "macos", test))]
use std::ffi::OsString;

use crate::mode::Mode;
use crate::plan::Plan;

/// Path of the `sandbox-exec` binary shipped with macOS.
pub const SANDBOX_EXEC: &str = "/usr/bin/sandbox-exec";

/// macOS names its terminal devices `/dev/ttysNNN` (there is no `/dev/pts`).
const MACOS_TERMINAL_REGEX: &str = r#"(regex #"^/dev/ttys[0-9]+$")"#;

/// Quotes `s` as an SBPL string literal, or `None` if it holds a control character we cannot
/// express reliably; the caller then leaves that path out, which only denies more.
fn sbpl_string(s: &str) -> Option<String> {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => return None,
            c => out.push(c),
        }
    }
    out.push('"');
    Some(out)
}

/// The Seatbelt profile for `plan`. `danger-full-access` yields an allow-everything profile.
pub fn seatbelt_profile(plan: &Plan) -> String {
    let mut out = String::from("(version 1)\n(allow default)\n");
    if plan.mode() == Mode::Auto {
        return out;
    }
    out.push_str("(deny file-write*)\n(allow file-write*\n");
    for w in plan.writable() {
        let Some(path) = w.path.to_str().and_then(sbpl_string) else {
            continue;
        };
        // `subpath` covers a directory and everything below; `literal` one file (a device).
        let kind = if w.path.is_dir() {
            "subpath"
        } else {
            "literal"
        };
        out.push_str(&format!("  ({kind} {path})\n"));
    }
    out.push_str("  ");
    out.push_str(MACOS_TERMINAL_REGEX);
    out.push_str("\n)\n");
    out
}

/// `argv` wrapped as `sandbox-exec -p PROFILE -- argv...`; `argv` unchanged when the plan does
/// not confine. Untested on real macOS.
#[cfg(any(target_os = "macos", test))]
pub fn sandbox_exec_argv(plan: &Plan, argv: &[OsString]) -> Vec<OsString> {
    if !plan.confines() {
        return argv.to_vec();
    }
    let mut out: Vec<OsString> = vec![
        SANDBOX_EXEC.into(),
        "-p".into(),
        seatbelt_profile(plan).into(),
        "--".into(),
    ];
    out.extend(argv.iter().cloned());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::enforcement::Backend;
    use crate::mode::Policy;
    use crate::plan::HostContext;

    fn plan(mode: Mode, roots: Vec<std::path::PathBuf>) -> Plan {
        let mut p = Plan::with_context(&Policy::new(mode, roots), &HostContext::default());
        p.backend = Backend::Seatbelt;
        p
    }

    #[test]
    fn escapes_quotes_and_backslashes() {
        assert_eq!(sbpl_string(r#"/a"b\c"#).unwrap(), r#""/a\"b\\c""#);
        assert_eq!(sbpl_string("/a\nb").unwrap(), r#""/a\nb""#);
        assert_eq!(sbpl_string("/a\u{1}b"), None);
        let base = tempfile::tempdir().unwrap();
        let odd = base.path().join(r#"we"ird\dir"#);
        std::fs::create_dir(&odd).unwrap();
        let profile = seatbelt_profile(&plan(Mode::Default, vec![odd.clone()]));
        let expected = odd
            .canonicalize()
            .unwrap()
            .display()
            .to_string()
            .replace('\\', "\\\\")
            .replace('"', "\\\"");
        assert!(
            profile.contains(&format!("(subpath \"{expected}\")")),
            "{profile}"
        );
    }

    #[test]
    fn all_roots_present_in_default_mode() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let profile =
            seatbelt_profile(&plan(Mode::Default, vec![a.path().into(), b.path().into()]));
        assert!(profile.starts_with("(version 1)\n(allow default)\n(deny file-write*)\n"));
        for root in [a.path(), b.path()] {
            let root = root.canonicalize().unwrap();
            assert!(
                profile.contains(&format!("(subpath \"{}\")", root.display())),
                "{profile}"
            );
        }
        assert!(profile.contains("(literal \"/dev/null\")"));
    }

    #[test]
    fn plan_mode_allows_only_devices() {
        let ws = tempfile::tempdir().unwrap();
        let profile = seatbelt_profile(&plan(Mode::Plan, vec![ws.path().into()]));
        let allows: Vec<&str> = profile
            .lines()
            .filter(|l| l.trim_start().starts_with("(literal") || l.contains("subpath"))
            .collect();
        assert!(allows.contains(&"  (literal \"/dev/null\")"), "{profile}");
        for line in allows {
            assert!(
                line.contains("\"/dev/"),
                "unexpected allow in plan mode: {line}"
            );
        }
        assert!(!profile.contains(&ws.path().display().to_string()));
    }

    #[test]
    fn auto_is_unconfined_and_argv_wrapping() {
        assert_eq!(
            seatbelt_profile(&plan(Mode::Auto, vec![])),
            "(version 1)\n(allow default)\n"
        );
        let argv: Vec<OsString> = vec!["/bin/sh".into(), "-c".into(), "true".into()];
        assert_eq!(sandbox_exec_argv(&plan(Mode::Auto, vec![]), &argv), argv);
        let wrapped = sandbox_exec_argv(&plan(Mode::Plan, vec![]), &argv);
        assert_eq!(wrapped[0], SANDBOX_EXEC);
        assert_eq!(wrapped[1], "-p");
        assert_eq!(wrapped[3], "--");
        assert_eq!(&wrapped[4..], &argv[..]);
    }
}
