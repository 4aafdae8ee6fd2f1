//! Writes that must be refused, checked by exit status AND by the file system afterwards.

use std::path::Path;

use agentty_sandbox::{Mode, Plan, Policy, detect_denial};

use super::common::{Fixture, refused, setup, sh};

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap()
}

#[test]
fn write_outside_workspace_is_refused() {
    let f = Fixture::new();
    let p = f.prepared(Mode::Default);
    let target = f.outside.join("new.txt");
    let err = refused(&sh(
        &p,
        &f.ws,
        &f.home,
        &format!("echo x > '{}'", target.display()),
    ));
    assert!(!target.exists());
    assert!(err.contains("Permission denied"), "{err}");
    let plan = f.plan(Mode::Default, vec![f.ws.clone()]);
    let denial = detect_denial(Some(1), &err, &plan, None).unwrap();
    assert_eq!(denial.path.as_deref(), Some(target.as_path()));
    for script in [
        "mkdir '{o}/d'",
        "rm -f '{o}/keep'",
        "truncate -s 0 '{o}/keep'",
        "echo y >> '{o}/keep'",
    ] {
        setup(&f.outside, "printf keep > keep");
        refused(&sh(
            &p,
            &f.ws,
            &f.home,
            &script.replace("{o}", &f.outside.display().to_string()),
        ));
        assert_eq!(read(&f.outside.join("keep")), "keep", "{script}");
        assert!(!f.outside.join("d").exists());
    }
}

#[test]
fn symlink_pointing_out_is_refused() {
    let f = Fixture::new();
    setup(&f.outside, "printf orig > file");
    std::os::unix::fs::symlink(&f.outside, f.ws.join("dirlink")).unwrap();
    std::os::unix::fs::symlink(f.outside.join("file"), f.ws.join("filelink")).unwrap();
    let p = f.prepared(Mode::Default);
    refused(&sh(&p, &f.ws, &f.home, "echo x > dirlink/new"));
    refused(&sh(&p, &f.ws, &f.home, "echo x >> filelink"));
    refused(&sh(&p, &f.ws, &f.home, "echo x > filelink"));
    assert!(!f.outside.join("new").exists());
    assert_eq!(read(&f.outside.join("file")), "orig");
}

#[test]
fn hard_link_to_outside_file_is_refused() {
    let f = Fixture::new();
    setup(&f.outside, "printf orig > file");
    let p = f.prepared(Mode::Default);
    let err = refused(&sh(
        &p,
        &f.ws,
        &f.home,
        &format!("ln '{}/file' hl", f.outside.display()),
    ));
    assert!(!f.ws.join("hl").exists(), "{err}");
    assert_eq!(read(&f.outside.join("file")), "orig");
}

#[test]
fn rename_of_outside_file_into_workspace_is_refused() {
    let f = Fixture::new();
    setup(&f.outside, "printf orig > file");
    let p = f.prepared(Mode::Default);
    // mv falls back to copy + unlink across the REFER boundary; the copy may land (reads are
    // allowed) but the outside file must stay where it was.
    refused(&sh(
        &p,
        &f.ws,
        &f.home,
        &format!("mv '{}/file' moved", f.outside.display()),
    ));
    assert_eq!(read(&f.outside.join("file")), "orig");
}

#[test]
fn proc_self_root_path_is_refused() {
    let f = Fixture::new();
    let p = f.prepared(Mode::Default);
    let target = format!("/proc/self/root{}/via-proc", f.outside.display());
    refused(&sh(&p, &f.ws, &f.home, &format!("echo x > '{target}'")));
    assert!(!f.outside.join("via-proc").exists());
}

/// A tool's home is not a cache: what it holds runs outside the sandbox later (`~/.cargo/env` is
/// sourced by shell rc files, `~/.cargo/bin` leads `PATH`). Only its cache folders are writable.
#[test]
fn tool_homes_that_hold_startup_code_are_refused() {
    let f = Fixture::new();
    let p = f.prepared(Mode::Default);
    std::fs::create_dir_all(f.home.join(".cargo/bin")).unwrap();
    std::fs::write(f.home.join(".cargo/env"), "# rc\n").unwrap();
    refused(&sh(
        &p,
        &f.ws,
        &f.home,
        "echo 'evil' >> \"$HOME/.cargo/env\"",
    ));
    refused(&sh(
        &p,
        &f.ws,
        &f.home,
        "echo 'evil' > \"$HOME/.cargo/bin/git\"",
    ));
    refused(&sh(
        &p,
        &f.ws,
        &f.home,
        "echo 'evil' > \"$HOME/.cargo/config.toml\"",
    ));
    assert_eq!(read(&f.home.join(".cargo/env")), "# rc\n");
    assert!(!f.home.join(".cargo/bin/git").exists());
    super::common::ok(&sh(
        &p,
        &f.ws,
        &f.home,
        "echo crate > \"$HOME/.cargo/registry/x\"",
    ));
}

#[test]
fn home_directory_is_refused() {
    let f = Fixture::new();
    let p = f.prepared(Mode::Default);
    refused(&sh(&p, &f.ws, &f.home, "echo x > \"$HOME/.bashrc\""));
    assert!(!f.home.join(".bashrc").exists());
}

#[test]
fn real_home_is_refused_with_the_real_environment() {
    // Not a silent pass without HOME: the test is about the real home directory.
    let home = std::env::var_os("HOME")
        .map(std::path::PathBuf::from)
        .expect("this test needs HOME set");
    let ws = tempfile::tempdir().unwrap();
    let plan = Plan::new(&Policy::new(
        Mode::Default,
        vec![ws.path().canonicalize().unwrap()],
    ));
    let p = std::sync::Arc::new(plan.prepare().unwrap());
    let target = home.join(format!("agentty-escape-{}", std::process::id()));
    let out = sh(
        &p,
        ws.path(),
        &home,
        &format!("echo x > '{}'", target.display()),
    );
    let created = target.exists();
    let _ = std::fs::remove_file(&target);
    refused(&out);
    assert!(!created);
    // ...while the real /tmp is writable in workspace-write.
    let tmp_file = format!("/tmp/agentty-sandbox-ok-{}", std::process::id());
    super::common::ok(&sh(
        &p,
        ws.path(),
        &home,
        &format!("echo x > {tmp_file} && rm {tmp_file}"),
    ));
}

#[test]
fn plan_mode_refuses_everything_but_devices() {
    let f = Fixture::new();
    let p = f.prepared(Mode::Plan);
    for dir in [&f.ws, &f.tmp, &f.home.join(".cargo/registry")] {
        let target = dir.join("x");
        let err = refused(&sh(
            &p,
            &f.ws,
            &f.home,
            &format!("echo x > '{}'", target.display()),
        ));
        assert!(!target.exists(), "{err}");
    }
    let err = refused(&sh(&p, &f.ws, &f.home, "mkdir sub"));
    assert!(!f.ws.join("sub").exists());
    // Read-only mode can blame even a relative path: nothing but devices is writable.
    let plan = f.plan(Mode::Plan, vec![f.ws.clone()]);
    let denial = detect_denial(Some(1), &err, &plan, None).unwrap();
    assert_eq!(denial.path.as_deref(), Some(Path::new("sub")), "{err}");
    assert!(
        denial
            .notice(Mode::Plan)
            .contains("read-only mode writes nowhere")
    );
    super::common::ok(&sh(
        &p,
        &f.ws,
        &f.home,
        "echo x > /dev/null && echo visible",
    ));
}

/// As root, a device node made in the workspace would reach any device past every path rule
/// (here /dev/null's and /dev/kmsg's numbers; a disk's the same way): never granted, in any mode.
#[test]
fn device_nodes_cannot_be_made_anywhere() {
    // Run as root (as CI does) this tests the sandbox; without CAP_MKNOD the kernel refuses
    // first, and the promise (no device node) holds all the same.
    let f = Fixture::new();
    for mode in [Mode::Default, Mode::Plan] {
        let p = f.prepared(mode);
        for (name, kind, major, minor) in [
            ("null", "c", 1, 3),
            ("kmsg", "c", 1, 11),
            ("loop", "b", 7, 0),
        ] {
            let node = f.ws.join(name);
            let err = refused(&sh(
                &p,
                &f.ws,
                &f.home,
                &format!("mknod '{}' {kind} {major} {minor}", node.display()),
            ));
            assert!(
                std::fs::symlink_metadata(&node).is_err(),
                "{mode:?} made {name}: {err}"
            );
        }
    }
    // Fifos and sockets are not devices: build tools make them, and they stay allowed.
    let p = f.prepared(Mode::Default);
    super::common::ok(&sh(&p, &f.ws, &f.home, "mkfifo fifo && rm fifo"));
}
