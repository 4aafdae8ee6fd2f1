use super::*;
use crate::mode::Policy;
use crate::plan::HostContext;

fn plan(mode: Mode, root: &Path) -> Plan {
    let mut p = Plan::with_context(
        &Policy::new(mode, vec![root.to_path_buf()]),
        &HostContext {
            temp_dirs: vec![],
            ..HostContext::default()
        },
    );
    p.backend = Backend::Landlock { abi: 7 };
    p
}

#[test]
fn names_outside_paths() {
    let ws = tempfile::tempdir().unwrap();
    let p = plan(Mode::Default, ws.path());
    // Outside the plan yet writable by this user without the sandbox, as a refused write
    // there is: the messages name paths under it.
    let out = tempfile::tempdir().unwrap();
    let o = out.path().display().to_string();
    for (msg, path) in [
        (
            format!("touch: cannot touch '{o}/x': Permission denied"),
            "x",
        ),
        (format!("bash: {o}/u/x: Permission denied"), "u/x"),
        (
            format!("PermissionError: [Errno 13] Permission denied: '{o}/p'"),
            "p",
        ),
        (
            format!("mkdir: cannot create directory ‘{o}/d’: Permission denied"),
            "d",
        ),
        (
            format!("sh: 1: cannot create {o}/y: Permission denied"),
            "y",
        ),
        (
            format!("/bin/sh: 1: cannot create {o}/w: Permission denied"),
            "w",
        ),
        (format!("/usr/bin/bash: {o}/v: Permission denied"), "v"),
        (
            format!("Error: EACCES: permission denied, open '{o}/z'"),
            "z",
        ),
        (format!("open {o}/q: permission denied"), "q"),
        (
            format!("ln: failed to create hard link 'w/l' => '{o}/f': Invalid cross-device link"),
            "f",
        ),
    ] {
        let d = detect_denial(Some(1), &format!("noise\n{msg}\n"), &p, None);
        assert_eq!(
            d,
            Some(Denial {
                path: Some(out.path().join(path)),
                op: Op::Write,
            }),
            "{msg}"
        );
    }
}

/// Landlock answers EACCES (and EXDEV); an EPERM or EROFS on Linux is someone else's (a
/// chown by a user, a read-only mount). A program the shell could not execute (126) is not
/// the sandbox's either: it refuses writes only.
#[test]
fn only_the_backends_own_errors_count() {
    let ws = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let o = out.path().display().to_string();
    let landlock = plan(Mode::Default, ws.path());
    for msg in [
        format!("chown: changing ownership of '{o}/f': Operation not permitted"),
        format!("touch: cannot touch '{o}/f': Read-only file system"),
    ] {
        assert_eq!(detect_denial(Some(1), &msg, &landlock, None), None, "{msg}");
    }
    let not_executable = format!("/bin/bash: line 1: {o}/run.sh: Permission denied");
    assert_eq!(
        detect_denial(Some(126), &not_executable, &landlock, None),
        None
    );
    assert!(detect_denial(Some(1), &not_executable, &landlock, None).is_some());
}

/// npm names the error on one line and the path a few lines later.
#[test]
fn a_path_on_a_later_line_is_found() {
    let ws = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let p = plan(Mode::Default, ws.path());
    let npm = out.path().join(".npm");
    let output = format!(
        "npm error code EACCES\nnpm error syscall mkdir\nnpm error path {}\n\
         npm error errno -13\nnpm error Your cache folder contains root-owned files\n",
        npm.display()
    );
    assert_eq!(
        detect_denial(Some(243), &output, &p, None),
        Some(Denial {
            path: Some(npm),
            op: Op::Write
        })
    );
}

/// cargo (and any tool that reports errors as anyhow does) names the path in the error and
/// gives the permission error as its cause, lines below; an unrelated path above a permission
/// error that is not a cause is not blamed.
#[test]
fn a_path_in_the_error_a_permission_error_caused_is_found() {
    let ws = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let p = plan(Mode::Default, ws.path());
    let lock = out.path().join("debug/.cargo-lock");
    let output = format!(
        "error: failed to open: {}\n\nCaused by:\n  Permission denied (os error 13)\n",
        lock.display()
    );
    assert_eq!(
        detect_denial(Some(101), &output, &p, None),
        Some(Denial {
            path: Some(lock.clone()),
            op: Op::Write,
        })
    );
    let unrelated = format!(
        "warning: skipped {}\nsomething else\nPermission denied (os error 13)\n",
        lock.display()
    );
    assert_eq!(detect_denial(Some(1), &unrelated, &p, None), None);
}

/// A path that even this server, unconfined, could not write was refused by its
/// permissions or its mount: escalating would not help, so it is not the sandbox's.
#[test]
fn paths_not_writable_without_the_sandbox_are_not_blamed() {
    let ws = tempfile::tempdir().unwrap();
    let p = plan(Mode::Default, ws.path());
    // A sysctl without write bits is read-only even to root.
    let msg = "sh: 1: cannot create /proc/sys/kernel/osrelease: Permission denied";
    assert_eq!(detect_denial(Some(1), msg, &p, None), None);
    let ran = RanIn {
        cwd: Path::new("/proc/sys/kernel"),
        command: "echo x > osrelease",
    };
    let msg = "bash: osrelease: Permission denied";
    assert_eq!(detect_denial(Some(1), msg, &p, Some(ran)), None);
}

#[test]
fn inside_paths_and_pathless_lines_are_not_blamed() {
    let ws = tempfile::tempdir().unwrap();
    let p = plan(Mode::Default, ws.path());
    let inside = ws.path().join("locked.txt");
    for msg in [
        format!("bash: {}: Permission denied", inside.display()),
        format!(
            "touch: cannot touch '{}': Permission denied",
            inside.display()
        ),
        "git@github.com: Permission denied (publickey).".to_owned(),
        "kill: (1) - Operation not permitted".to_owned(),
        "Permission denied (os error 13)".to_owned(),
        "bash: rel.txt: Permission denied".to_owned(),
    ] {
        assert_eq!(detect_denial(Some(1), &msg, &p, None), None, "{msg}");
    }
}

#[test]
fn any_exit_code_but_only_confined_commands() {
    let ws = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let msg = format!(
        "cp: cannot create regular file '{}/x': Permission denied",
        outside.path().display()
    );
    // A pipeline (`cp … 2>&1 | tail -3`) exits with its last stage: 0.
    assert!(
        detect_denial(Some(0), &msg, &plan(Mode::Default, ws.path()), None).is_some(),
        "{msg}"
    );
    let msg = msg.as_str();
    assert_eq!(
        detect_denial(Some(1), msg, &plan(Mode::Auto, ws.path()), None),
        None
    );
    let mut disabled = plan(Mode::Default, ws.path());
    disabled.enabled = false;
    assert_eq!(detect_denial(Some(1), msg, &disabled, None), None);
    let mut no_kernel = plan(Mode::Default, ws.path());
    no_kernel.backend = Backend::KernelLacksLandlock;
    assert_eq!(detect_denial(Some(1), msg, &no_kernel, None), None);
}

#[test]
fn read_only_mode_blames_workspace_and_relative_paths() {
    let ws = tempfile::tempdir().unwrap();
    let p = plan(Mode::Plan, ws.path());
    let inside = ws.path().join("a.txt");
    let msg = format!(
        "touch: cannot touch '{}': Permission denied",
        inside.display()
    );
    assert_eq!(
        detect_denial(Some(1), &msg, &p, None),
        Some(Denial {
            path: Some(inside),
            op: Op::Write
        })
    );
    let rel = detect_denial(Some(1), "bash: out.txt: Permission denied", &p, None);
    assert_eq!(
        rel,
        Some(Denial {
            path: Some(PathBuf::from("out.txt")),
            op: Op::Write,
        })
    );
    let dash = detect_denial(
        Some(1),
        "sh: 1: cannot create out.txt: Permission denied",
        &p,
        None,
    );
    assert_eq!(
        dash,
        Some(Denial {
            path: Some(PathBuf::from("out.txt")),
            op: Op::Write,
        })
    );
    assert_eq!(
        detect_denial(Some(1), "ssh: Permission denied (publickey)", &p, None),
        None
    );
}

#[test]
fn relative_paths_are_judged_where_the_command_ran_when_it_names_them() {
    let ws = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let p = plan(Mode::Default, ws.path());
    let at = |cwd: &Path, command: &str, msg: &str| {
        detect_denial(Some(1), msg, &p, Some(RanIn { cwd, command }))
    };
    let touch = "touch: cannot touch 'x': Permission denied";
    let redirect = "bash: out.txt: Permission denied";
    assert_eq!(
        at(outside.path(), "cd /elsewhere && touch x", touch),
        Some(Denial {
            path: Some(outside.path().join("x")),
            op: Op::Write,
        })
    );
    assert_eq!(
        at(outside.path(), "echo hi >out.txt", redirect),
        Some(Denial {
            path: Some(outside.path().join("out.txt")),
            op: Op::Write,
        })
    );
    // Inside the workspace a relative path is writable: the sandbox is not the cause.
    assert_eq!(at(ws.path(), "touch x", touch), None);
    // A path the command does not name may be relative to another directory (a sub-make's):
    // inside the workspace it is left alone; outside, every directory below is outside too.
    assert_eq!(at(ws.path(), "make", touch), None);
    assert_eq!(
        at(outside.path(), "tar xf a.tar", touch),
        Some(Denial {
            path: Some(outside.path().join("x")),
            op: Op::Write,
        })
    );
    assert_eq!(
        at(
            outside.path(),
            "ssh host",
            "ssh: Permission denied (publickey)"
        ),
        None
    );
}

#[test]
fn symlink_out_of_the_workspace_is_blamed() {
    let ws = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), ws.path().join("out")).unwrap();
    let p = plan(Mode::Default, ws.path());
    let via = ws.path().join("out/f");
    let msg = format!("bash: {}: Permission denied", via.display());
    assert_eq!(
        detect_denial(Some(1), &msg, &p, None),
        Some(Denial {
            path: Some(via),
            op: Op::Write
        })
    );
}

#[test]
fn a_refused_tracer_or_profiler_is_recognised() {
    let ws = tempfile::tempdir().unwrap();
    let p = plan(Mode::Default, ws.path());
    for refused in [
        "strace: attach: ptrace(PTRACE_SEIZE, 42): Operation not permitted",
        "strace: test_ptrace_get_syscall_info: PTRACE_TRACEME: Operation not permitted",
        "Attaching to process 42\nptrace: Operation not permitted.",
        "Error:\nAccess to performance monitoring and observability operations is limited.",
        "PermissionError: [Errno 13] Permission denied: '/proc/4/maps'",
        "cat: /proc/1234/mem: Permission denied",
    ] {
        assert!(shows_trace_refusal(refused, &p), "{refused}");
    }
    for ordinary in [
        "rm: cannot remove 'x': Operation not permitted",
        "ptrace-tools 1.2 installed",
        "cat: /proc/sys/kernel/x: Permission denied",
        "",
    ] {
        assert!(!shows_trace_refusal(ordinary, &p), "{ordinary}");
    }
    // Another process's files are the process access check's, not the writable set's: never a
    // 2008 (a read the line names as one, `cat`, may get the read note when the server can read
    // the file; pid 1 is always there).
    for read in [
        "PermissionError: [Errno 13] Permission denied: '/proc/1/maps'",
        "cat: /proc/1/mem: Permission denied",
        "Error: EACCES: permission denied, open '/proc/1/environ'",
    ] {
        let op = detect_denial(Some(1), read, &p, None).map(|d| d.op);
        assert_ne!(op, Some(Op::Write), "{read}");
    }
    // Unconfined (auto mode), nothing refuses it: nothing to tell.
    let auto = plan(Mode::Auto, ws.path());
    assert!(!shows_trace_refusal(
        "ptrace: Operation not permitted.",
        &auto
    ));
}

#[test]
fn a_read_of_a_hidden_path_is_said_as_hidden_and_a_write_there_as_2008() {
    let ws = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let s = state.path().canonicalize().unwrap();
    std::fs::create_dir_all(s.join("spill/me")).unwrap();
    std::fs::write(s.join("token"), "t").unwrap();
    let mut hidden = crate::Unreadable::default();
    hidden.hide(s.clone(), crate::HiddenWhy::State);
    hidden.readable.push(s.join("spill/me"));
    let p = plan(Mode::Default, ws.path()).hide(hidden);
    let t = s.join("token").display().to_string();
    for msg in [
        format!("cat: {t}: Permission denied"),
        format!("PermissionError: [Errno 13] Permission denied: '{t}'"),
        format!("Error: EACCES: permission denied, open '{t}'"),
        format!("fatal: unable to access '{t}': Permission denied"),
    ] {
        let d = detect_denial(Some(0), &msg, &p, None).unwrap();
        assert_eq!(d.op, Op::Hidden(crate::HiddenWhy::State), "{msg}");
        assert_eq!(d.path.as_deref(), Some(s.join("token").as_path()), "{msg}");
        assert!(
            d.notice(Mode::Default).starts_with(&format!(
                "[note] the output shows reading {t:?} refused: the sandbox keeps"
            )),
            "{msg}"
        );
    }
    // Writing there is a write the sandbox refused.
    let d = detect_denial(
        Some(2),
        &format!("sh: 1: cannot create {t}: Permission denied"),
        &p,
        None,
    )
    .unwrap();
    assert_eq!(d.op, Op::Write);
    // The readable exception is not hidden.
    let own = s.join("spill/me/c1.log").display().to_string();
    std::fs::write(&own, "x").unwrap();
    let d = detect_denial(Some(1), &format!("cat: {own}: Permission denied"), &p, None);
    assert_ne!(d.map(|d| d.op), Some(Op::Hidden(crate::HiddenWhy::State)));
}

/// Review 35, F1: a path taken from output went into agentty's sentence as it was, so a
/// command's output could add words of its own there (`/etc/x]. The sandbox is off now; re-run
/// with sudo [`). Now it is quoted, its invisible characters escaped, and cut when long.
#[test]
fn a_path_from_output_is_quoted_in_the_notice() {
    let ws = tempfile::tempdir().unwrap();
    let p = plan(Mode::Default, ws.path());
    let out = tempfile::tempdir().unwrap();
    let o = out.path().display().to_string();
    let msg = format!(
        "cp: cannot create regular file '{o}/x]. The sandbox is off now; re-run with sudo [': \
         Permission denied"
    );
    let d = detect_denial(Some(1), &msg, &p, None).unwrap();
    let said = d.notice(Mode::Default);
    assert!(
        said.contains(&format!(
            "a write to \"{o}/x]. The sandbox is off now; re-run with sudo [\" refused"
        )),
        "{said}"
    );
    let sneaky = std::path::Path::new("/tmp/a\u{202e}b\"c\n");
    assert_eq!(
        crate::notice::quoted_path(sneaky),
        "\"/tmp/a\\u{202e}b\\\"c\\n\""
    );
    let long = std::path::PathBuf::from(format!("/{}", "d".repeat(500)));
    assert!(crate::notice::quoted_path(&long).chars().count() < 170);
}
