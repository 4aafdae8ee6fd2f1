//! What a confined command must not reach besides files: other terminals (TIOCSTI), processes
//! outside its own tree (signals, abstract unix sockets), daemons' unix sockets in plan mode,
//! and extended attributes and inode flags (which Landlock does not cover). Each test is the
//! attack itself, checked by its effect; tools that copy attributes must keep working.

use std::io::Read;
use std::path::Path;
use std::process::Command;

use agentty_sandbox::Mode;

use super::common::{Fixture, ok, refused, setup, sh};

/// The system Python, not a version-manager shim that wants to write its own state.
fn python() -> &'static str {
    if Path::new("/usr/bin/python3").exists() {
        "/usr/bin/python3"
    } else {
        "python3"
    }
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn tiocsti_cannot_type_into_another_terminal() {
    let f = Fixture::new();
    let (master, slave) = agentty_testkit::open_terminal();
    // Keep the slave open here, as another session's shell would.
    let _held = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&slave)
        .unwrap();
    for mode in [Mode::Default, Mode::Plan] {
        let p = f.prepared(mode);
        let script = format!(
            "{} -c 'import fcntl, termios; fd = open(\"{slave}\", \"rb+\", buffering=0); \
             [fcntl.ioctl(fd, termios.TIOCSTI, c) for c in b\"id\\n\"]'",
            python()
        );
        let err = refused(&sh(&p, &f.ws, &f.home, &script));
        assert!(err.contains("Operation not permitted"), "{mode:?}: {err}");
        // Nothing was typed: the line discipline would echo it to the master.
        let mut buf = [0u8; 64];
        let mut reader = std::fs::File::from(master.try_clone().unwrap());
        let n = reader.read(&mut buf).unwrap_or(0);
        assert_eq!(&buf[..n], b"", "{mode:?}: typed into the terminal");
    }
    // Nor can it swap a terminal's line discipline (which ends the read a program waits in),
    // its own terminal's included.
    for mode in [Mode::Default, Mode::Plan] {
        let p = f.prepared(mode);
        let script = format!(
            "{} -c 'import fcntl, pty, struct, termios; m, s = pty.openpty(); \
             fcntl.ioctl(s, termios.TIOCSETD, struct.pack(\"i\", 0))'",
            python()
        );
        let err = refused(&sh(&p, &f.ws, &f.home, &script));
        assert!(err.contains("Operation not permitted"), "{mode:?}: {err}");
    }
    // Its own terminal keeps working (`tty`, `stty`, `script`).
    let p = f.prepared(Mode::Default);
    ok(&sh(
        &p,
        &f.ws,
        &f.home,
        "script -qec 'tty && stty size' /dev/null",
    ));
    drop(master);
}

#[test]
fn signals_reach_only_the_commands_own_tree() {
    let f = Fixture::new();
    let mut outside = Command::new("sleep").arg("100").spawn().unwrap();
    let pid = outside.id();
    for mode in [Mode::Default, Mode::Plan] {
        let p = f.prepared(mode);
        let err = refused(&sh(&p, &f.ws, &f.home, &format!("kill -KILL {pid}")));
        assert!(err.contains("Operation not permitted"), "{mode:?}: {err}");
        assert!(
            outside.try_wait().unwrap().is_none(),
            "{mode:?}: the signal got through"
        );
    }
    // Within its own tree, job control works.
    let p = f.prepared(Mode::Default);
    ok(&sh(
        &p,
        &f.ws,
        &f.home,
        "sleep 100 & kill $! && wait $!; [ $? -eq 143 ]",
    ));
    outside.kill().unwrap();
    outside.wait().unwrap();
}

#[test]
fn abstract_unix_sockets_outside_the_tree_cannot_be_reached() {
    use std::os::linux::net::SocketAddrExt;
    let f = Fixture::new();
    let name = format!("agentty-test-{}", std::process::id());
    let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    let listener = std::os::unix::net::UnixListener::bind_addr(&addr).unwrap();
    listener.set_nonblocking(true).unwrap();
    let p = f.prepared(Mode::Default);
    let script = format!(
        "{} -c 'import socket; s = socket.socket(socket.AF_UNIX); s.connect(\"\\0{name}\")'",
        python()
    );
    let err = refused(&sh(&p, &f.ws, &f.home, &script));
    assert!(err.contains("Operation not permitted"), "{err}");
    assert!(listener.accept().is_err(), "a connection got through");
}

/// In plan mode no new unix socket at all: a daemon (tmux, docker, D-Bus) would act for the
/// command. `socketpair` still works. In default mode pathname sockets stay reachable (Landlock
/// cannot refuse them before ABI 9): the README and `doctor` say so.
#[test]
fn plan_mode_cannot_reach_a_daemon_socket() {
    let f = Fixture::new();
    let path = f.outside.join("daemon.sock");
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    listener.set_nonblocking(true).unwrap();
    let connect = format!(
        "{} -c 'import socket; s = socket.socket(socket.AF_UNIX); s.connect(\"{}\")'",
        python(),
        path.display()
    );
    let plan = f.prepared(Mode::Plan);
    let err = refused(&sh(&plan, &f.ws, &f.home, &connect));
    assert!(err.contains("Permission denied"), "{err}");
    assert!(listener.accept().is_err(), "a connection got through");
    let pair = format!(
        "{} -c 'import socket; a, b = socket.socketpair(); a.send(b\"k\"); print(b.recv(1).decode())'",
        python()
    );
    let out = sh(&plan, &f.ws, &f.home, &pair);
    ok(&out);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "k");
}

#[test]
fn xattrs_and_inode_flags_outside_cannot_be_changed() {
    let f = Fixture::new();
    setup(&f.outside, "printf keep > file");
    let file = f.outside.join("file");
    for mode in [Mode::Default, Mode::Plan] {
        let p = f.prepared(mode);
        for (name, value) in [("user.planted", "1"), ("security.capability", "x")] {
            let script = format!(
                "{} -c 'import os; os.setxattr(\"{}\", \"{name}\", b\"{value}\")'",
                python(),
                file.display()
            );
            let err = refused(&sh(&p, &f.ws, &f.home, &script));
            assert!(
                err.contains("Operation not supported"),
                "{mode:?} {name}: {err}"
            );
        }
        let err = refused(&sh(
            &p,
            &f.ws,
            &f.home,
            &format!("chattr +i '{}'", file.display()),
        ));
        assert!(
            err.contains("Operation not supported"),
            "{mode:?} chattr: {err}"
        );
    }
    let mut names = Vec::new();
    // SAFETY: listxattr with a null buffer only returns the size needed.
    let path = std::ffi::CString::new(file.as_os_str().as_encoded_bytes()).unwrap();
    let size = unsafe { libc::listxattr(path.as_ptr(), std::ptr::null_mut(), 0) };
    names.resize(size.max(0) as usize, 0u8);
    assert_eq!(
        size,
        0,
        "xattrs were set: {:?}",
        String::from_utf8_lossy(&names)
    );
    // Not immutable: the owner can still change it.
    std::fs::write(&file, "changed").unwrap();
}

/// `cp -a`, `tar --xattrs` and `mv` of files that carry xattrs still work (they skip what the
/// file system "does not support").
#[test]
fn copying_tools_still_work_with_xattrs_refused() {
    let f = Fixture::new();
    setup(&f.ws, "printf data > src");
    let src = f.ws.join("src");
    // SAFETY: setxattr reads a NUL-terminated path and name and `len` bytes of value.
    let path = std::ffi::CString::new(src.as_os_str().as_encoded_bytes()).unwrap();
    let rc = unsafe {
        libc::setxattr(
            path.as_ptr(),
            c"user.kept".as_ptr(),
            b"1".as_ptr().cast(),
            1,
            0,
        )
    };
    assert_eq!(rc, 0, "{}", std::io::Error::last_os_error());
    let p = f.prepared(Mode::Default);
    for script in [
        "cp -a src a && cmp src a",
        "cp --preserve=all src b && cmp src b",
        "mkdir t && tar --xattrs -cf t.tar src && tar --xattrs -xf t.tar -C t && cmp src t/src",
        "mkdir -p m && cp src m/x && mv m/x m2 && cmp src m2",
    ] {
        let out = sh(&p, &f.ws, &f.home, script);
        ok(&out);
        assert!(!stderr(&out).contains("rror"), "{script}: {}", stderr(&out));
    }
}

/// A confined command gets no userfaultfd that handles faults of the kernel: the server reads a
/// command's memory (a connect's address) on the thread that answers every caller, and a read
/// of a page such a userfaultfd holds would wait for as long as the command liked. One that
/// handles faults of user mode only (what a program needs for its own pages) still works.
#[test]
fn no_userfaultfd_holds_the_kernels_reads() {
    let f = Fixture::new();
    // `/dev/userfaultfd` opened here (root may), inherited by the command, which asks it for a
    // userfaultfd (`USERFAULTFD_IOC_NEW`); -1 where the kernel has no such device.
    // SAFETY: open of a constant path; the fd is closed below.
    let device = unsafe { libc::open(c"/dev/userfaultfd".as_ptr(), libc::O_RDWR) };
    let script = format!(
        "{} -c '
import ctypes, errno, fcntl, os
libc = ctypes.CDLL(None, use_errno=True)
kernel = libc.syscall({nr}, os.O_CLOEXEC)
print(\"kernel\", kernel, ctypes.get_errno())
user = libc.syscall({nr}, os.O_CLOEXEC | 1)
print(\"user\", user >= 0, ctypes.get_errno())
if {device} >= 0:
    try:
        fcntl.ioctl({device}, 0xAA00, os.O_CLOEXEC)
        print(\"device made one\")
    except OSError as e:
        print(\"device\", errno.errorcode[e.errno])
'",
        python(),
        nr = libc::SYS_userfaultfd
    );
    for mode in [Mode::Default, Mode::Plan] {
        let p = f.prepared(mode);
        let out = sh(&p, &f.ws, &f.home, &script);
        ok(&out);
        let said = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            said.contains(&format!("kernel -1 {}", libc::EPERM)),
            "{mode:?}: {said}"
        );
        assert!(said.contains("user True"), "{mode:?}: {said}");
        assert!(
            device < 0 || said.contains("device EPERM"),
            "{mode:?}: {said}"
        );
    }
    if device >= 0 {
        // SAFETY: the fd opened above, closed once.
        unsafe { libc::close(device) };
    }
}
