//! No extra fork: the sandboxed command is the process `spawn` returned, in the group it set.

use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

use agentty_sandbox::Mode;

use super::common::{Fixture, confine};

#[test]
fn same_pid_and_process_group() {
    let f = Fixture::new();
    let p = f.prepared(Mode::Default);
    let mut cmd = Command::new("/bin/cat");
    cmd.arg("/proc/self/stat")
        .stdout(Stdio::piped())
        .process_group(0);
    confine(&mut cmd, &p);
    let child = cmd.spawn().unwrap();
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    let stat = String::from_utf8_lossy(&out.stdout).into_owned();
    // Fields after "(comm)": state ppid pgrp ...
    let (head, tail) = stat.rsplit_once(") ").unwrap();
    let fields: Vec<&str> = tail.split_whitespace().collect();
    assert_eq!(head.split(' ').next().unwrap(), pid.to_string(), "{stat}");
    assert_eq!(
        fields[1],
        std::process::id().to_string(),
        "parent is us: {stat}"
    );
    assert_eq!(fields[2], pid.to_string(), "own process group: {stat}");
}

#[test]
fn setsid_in_pre_exec_before_applying() {
    let f = Fixture::new();
    let p = f.prepared(Mode::Plan);
    let mut cmd = Command::new("/bin/cat");
    cmd.arg("/proc/self/stat").stdout(Stdio::piped());
    let p2 = std::sync::Arc::clone(&p);
    // SAFETY: setsid and apply_in_child are raw syscalls.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            p2.apply_in_child()
        })
    };
    let child = cmd.spawn().unwrap();
    let pid = child.id().to_string();
    let out = child.wait_with_output().unwrap();
    let stat = String::from_utf8_lossy(&out.stdout).into_owned();
    let fields: Vec<&str> = stat
        .rsplit_once(") ")
        .unwrap()
        .1
        .split_whitespace()
        .collect();
    assert_eq!(
        (fields[2], fields[3]),
        (pid.as_str(), pid.as_str()),
        "pgrp and sid: {stat}"
    );
}
