//! Paths kept from reads (`unreadable.rs`): refused by the kernel, every other read still works,
//! and an entry made later beside a hidden path is readable from the next ruleset on.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::Arc;

use agentty_sandbox::{HiddenWhy, Mode, Prepared, Unreadable, detect_denial};

use super::common::{Fixture, ok, refused, setup, sh};

/// The fixture's home with a secret directory, a dotfile and a link to the secret; the plan of
/// `mode` hiding the secret.
fn hiding(f: &Fixture, mode: Mode) -> (agentty_sandbox::Plan, Arc<Prepared>) {
    setup(
        &f.home,
        "mkdir -p .ssh && printf key > .ssh/id && printf '[user]' > .gitconfig && \
         ln -sfn .ssh link",
    );
    let mut unreadable = Unreadable::default();
    unreadable.hide(f.home.join(".ssh"), HiddenWhy::Configured);
    let plan = f.plan(mode, vec![f.ws.clone()]).hide(unreadable);
    let prepared = Arc::new(plan.prepare().unwrap());
    (plan, prepared)
}

#[test]
fn a_hidden_path_cannot_be_read_by_any_route_and_the_rest_can() {
    let f = Fixture::new();
    for mode in [Mode::Default, Mode::Plan] {
        let (plan, p) = hiding(&f, mode);
        let home = f.home.display();
        for attack in [
            format!("cat {home}/.ssh/id"),
            format!("cat {home}/link/id"),
            format!("cd {home}/.ssh && cat id"),
            format!("cp {home}/.ssh/id {}/copy", f.ws.display()),
            format!("/bin/sh {home}/.ssh/id"),
            format!("python3 -c 'open(\"{home}/.ssh/id\").read()'"),
        ] {
            let err = refused(&sh(&p, &f.ws, &f.home, &attack));
            assert!(err.contains("ermission denied"), "{mode:?} {attack}: {err}");
            let denial = detect_denial(Some(1), &err, &plan, None);
            if !attack.starts_with("cd ") {
                assert_eq!(
                    denial.map(|d| d.op),
                    Some(agentty_sandbox::Op::Hidden(HiddenWhy::Configured)),
                    "{mode:?} {attack}: {err}"
                );
            }
        }
        // A hard link cannot take it out either: the link would gain the right to read.
        if mode == Mode::Default {
            let err = refused(&sh(
                &p,
                &f.ws,
                &f.home,
                &format!("ln {home}/.ssh/id {}/l", f.ws.display()),
            ));
            assert!(err.contains("cross-device"), "{err}");
        }
        // Names stay listable; everything else reads as before.
        let out = sh(
            &p,
            &f.ws,
            &f.home,
            &format!(
                "ls {home}/.ssh && cat {home}/.gitconfig && head -c 4 /etc/passwd >/dev/null && \
                 cat /proc/self/status >/dev/null && ls / >/dev/null && \
                 python3 -c 'import json, sqlite3' && echo read-ok"
            ),
        );
        ok(&out);
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(said.contains("id\n") && said.contains("[user]"), "{said}");
    }
    // Writes and reads back in the workspace and a temp dir.
    let (_, p) = hiding(&f, Mode::Default);
    ok(&sh(
        &p,
        &f.ws,
        &f.home,
        &format!(
            "echo a > made && cat made && mkdir -p d/e && echo b > d/e/f && cat d/e/f && \
             echo c > {t}/t && cat {t}/t",
            t = f.tmp.display()
        ),
    ));
}

/// Runs `script` under the reads' ruleset `prepared` gives for a command starting now.
fn sh_now(prepared: &Arc<Prepared>, cwd: &Path, script: &str) -> Output {
    let now = prepared.reads_now();
    assert!(now.failed.is_none(), "{:?}", now.failed);
    let reads = now.ruleset().cloned().unwrap();
    let p = Arc::clone(prepared);
    let mut cmd = Command::new("/bin/sh");
    cmd.args(["-c", script])
        .current_dir(cwd)
        .stdin(Stdio::null());
    // SAFETY: apply_own and apply_shared_with make only raw syscalls on data prepared before
    // the fork.
    unsafe {
        cmd.pre_exec(move || {
            p.apply_own()
                .and_then(|()| p.apply_shared_with(Some(&reads)))
        })
    };
    cmd.output().unwrap()
}

#[test]
fn an_entry_made_beside_a_hidden_path_later_is_readable_by_the_next_command() {
    let f = Fixture::new();
    let (_, p) = hiding(&f, Mode::Default);
    // Made after the ruleset, by someone unconfined: no rule was bound to it.
    setup(
        &f.home,
        "printf later > .npmrc && printf new > .gitconfig.new && mv .gitconfig.new .gitconfig",
    );
    let home = f.home.display();
    let script = format!("cat {home}/.npmrc {home}/.gitconfig");
    refused(&sh(&p, &f.ws, &f.home, &script));
    let out = sh_now(&p, &f.ws, &script);
    ok(&out);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "laternew");
    // Still hidden in the ruleset made again.
    refused(&sh_now(&p, &f.ws, &format!("cat {home}/.ssh/id")));
}

/// The read rules are made one descriptor at a time: a home of many more entries than the
/// descriptors the process may still open is hidden all the same (a server started with a low
/// file limit, or a home of thousands of dotfiles, used to fail to start its sandbox with
/// "Too many open files"). Run alone (nextest: a process per test), so the limit is this test's.
#[test]
fn a_home_of_more_entries_than_free_descriptors_is_hidden_all_the_same() {
    const ENTRIES: usize = 300;
    let f = Fixture::new();
    for i in 0..ENTRIES {
        std::fs::write(f.home.join(format!(".dotfile-{i}")), "x").unwrap();
    }
    setup(&f.home, "mkdir -p .ssh && printf key > .ssh/id");
    let mut unreadable = Unreadable::default();
    unreadable.hide(f.home.join(".ssh"), HiddenWhy::Configured);
    let plan = f.plan(Mode::Default, vec![f.ws.clone()]).hide(unreadable);
    let open_now = std::fs::read_dir("/proc/self/fd").unwrap().count() as u64;
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit write and read only `limit`.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &raw mut limit), 0);
        let low = libc::rlimit {
            rlim_cur: open_now + 32,
            rlim_max: limit.rlim_max,
        };
        assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &raw const low), 0);
    }
    let prepared = plan.prepare();
    // SAFETY: as above; the limit goes back before anything else runs.
    unsafe { assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &raw const limit), 0) };
    let p = Arc::new(prepared.unwrap());
    let home = f.home.display();
    refused(&sh(&p, &f.ws, &f.home, &format!("cat {home}/.ssh/id")));
    ok(&sh(
        &p,
        &f.ws,
        &f.home,
        &format!("cat {home}/.dotfile-0 {home}/.dotfile-{}", ENTRIES - 1),
    ));
}
