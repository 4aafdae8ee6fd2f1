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
