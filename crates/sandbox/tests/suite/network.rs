//! Optional network-off: new IP sockets fail with EACCES; unix sockets still work.

use std::sync::Arc;

use agentty_sandbox::{Mode, Plan, Policy};

use super::common::{Fixture, sh};

fn bash_tcp(p: &Arc<agentty_sandbox::Prepared>, f: &Fixture) -> String {
    // bash's /dev/tcp calls socket(AF_INET); port 1 on loopback is normally closed.
    let out = sh(
        p,
        &f.ws,
        &f.home,
        "exec bash -c 'echo > /dev/tcp/127.0.0.1/1'",
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn network_off_refuses_ip_sockets() {
    let f = Fixture::new();
    let off = Plan::with_context(
        &Policy {
            network: false,
            ..Policy::new(Mode::Default, vec![f.ws.clone()])
        },
        &f.ctx(),
    );
    let off = Arc::new(off.prepare().unwrap());
    assert_eq!(off.enforcement().network_off, Some(true));
    assert!(
        off.enforcement().line().ends_with("; network off"),
        "{}",
        off.enforcement().line()
    );
    let err = bash_tcp(&off, &f);
    assert!(err.contains("Permission denied"), "{err}");

    let on = f.prepared(Mode::Default);
    assert_eq!(on.enforcement().network_off, None);
    let err = bash_tcp(&on, &f);
    assert!(!err.contains("Permission denied"), "{err}");

    // Unix sockets and ordinary syscalls keep working under the filter (the system Python: a
    // version manager's shim would want to write its own state).
    let script = "/usr/bin/python3 -c 'import socket; a, b = socket.socketpair(); a.send(b\"k\"); \
                  s = socket.socket(socket.AF_UNIX); print(b.recv(1).decode())'";
    let out = sh(&off, &f.ws, &f.home, script);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "k",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
