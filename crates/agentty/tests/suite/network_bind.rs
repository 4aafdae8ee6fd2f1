//! Binds a confined command asks the server to make (docs/BEHAVIOUR.md §13, `sandbox/src/net/
//! listening.rs`): as root, in `allowlist` and `ask`, the supervisor binds a command's listening
//! sockets itself, as the server (root), in the server's network namespace; a port below 1024
//! only for a command the kernel would let bind it. `bind_probe.py` tries each way: IPv4, IPv6
//! and IPv4-mapped, loopback and any address, ports 80, 443, 22 and a free one below 1024, the
//! proxy's own port (with `SO_REUSEPORT` too), and a socket the server handed back already.
//!
//! Nothing is sent: the probe only binds, on this machine, and closes.

use super::client::*;
use super::network::serve;

/// A port below 1024 nothing on this machine is bound to, IPv4 or IPv6.
fn free_privileged_port() -> u16 {
    (600..1000)
        .rev()
        .find(|&port| {
            std::net::TcpListener::bind(("127.0.0.1", port)).is_ok()
                && std::net::TcpListener::bind(("::1", port)).is_ok()
        })
        .expect("a free port below 1024")
}

/// What `bind_probe.py` prints for a command that may bind a port below 1024 or not (its
/// capabilities' line left out).
fn expected(privileged: bool, free: u16) -> String {
    let mut lines = Vec::new();
    for port in [80, 443, 22] {
        for case in ["v4", "v4-any", "v6", "v6-any", "v6-mapped"] {
            let got = if privileged {
                format!("ok {port}")
            } else {
                "EACCES".into()
            };
            lines.push(format!("{case}-{port} {got}"));
        }
    }
    for case in ["v4-free", "v6-free"] {
        let got = if privileged {
            format!("ok {free}")
        } else {
            "EACCES".into()
        };
        lines.push(format!("{case} {got}"));
    }
    // The proxy's port is the server's: taken, whatever the options.
    for case in [
        "v4-proxy",
        "v4-proxy-reuse",
        "v4-any-proxy-reuse",
        "v6-mapped-proxy-reuse",
    ] {
        lines.push(format!("{case} EADDRINUSE"));
    }
    // A socket handed back bound: the kernel's own bind, which judges the port first.
    lines.push(format!(
        "rebind-80 {}",
        if privileged { "EINVAL" } else { "EACCES" }
    ));
    lines.push(format!(
        "after-connect-80 {}",
        if privileged { "ok 80" } else { "EACCES" }
    ));
    lines.join("\n")
}

/// `got` is what `want` says, line by line; where a bind of port 80, 443 or 22 was to succeed,
/// another service of the machine holding that port (sshd on 22) makes it EADDRINUSE: not
/// refused either.
#[track_caller]
fn assert_same(got: &str, want: &str, what: &str) {
    let held = |line: &str| {
        line.ends_with(" ok 80") || line.ends_with(" ok 443") || line.ends_with(" ok 22")
    };
    let (got_lines, want_lines): (Vec<_>, Vec<_>) = (got.lines().collect(), want.lines().collect());
    let same = got_lines.len() == want_lines.len()
        && got_lines.iter().zip(&want_lines).all(|(g, w)| {
            g == w || (held(w) && w.split(' ').next() == g.strip_suffix(" EADDRINUSE"))
        });
    assert!(same, "{what}:\ngot:\n{got}\nwanted:\n{want}");
}

/// Runs `bind_probe.py` in a session of `setup`, as `wrapper` makes it, with `options`: what it
/// printed, its capabilities' line left out.
async fn probe(setup: &super::network::Setup, wrapper: &str, options: &str, free: u16) -> String {
    let probe = setup.server.workspace().join("bind_probe.py");
    if !probe.exists() {
        std::fs::write(&probe, include_str!("bind_probe.py")).unwrap();
    }
    let (text, s) = setup
        .run(&format!(
            "{wrapper} /usr/bin/python3 bind_probe.py ${{HTTP_PROXY##*:}} {free} {options} 2>&1"
        ))
        .await;
    assert_eq!(s["exit_code"], 0, "{text}");
    s["stdout"]
        .as_str()
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with("caps "))
        .collect::<Vec<_>>()
        .join("\n")
}

/// As root, the supervisor binds for a command only what the kernel would let the command bind
/// itself: root's commands keep `CAP_NET_BIND_SERVICE` and bind port 80; one that dropped it,
/// one run as nobody, and nobody in a user namespace of its own (every capability there, none
/// in the server's) are refused a port below 1024 (EACCES), in `allowlist` and in `ask`. The
/// proxy's port stays the proxy's.
#[tokio::test]
async fn net_a_command_binds_a_port_below_1024_only_as_the_kernel_would_as_root() {
    let free = free_privileged_port();
    let nobody = "setpriv --reuid=65534 --regid=65534 --clear-groups --";
    for flags in [&["--network", "allowlist"][..], &[][..]] {
        let setup = serve(Who::Root, flags, &[]).await;
        for (who, wrapper, options, privileged) in [
            ("root", "", "", true),
            ("root without the capability", "", "--drop-bind-cap", false),
            ("nobody", nobody, "", false),
            ("nobody in a user namespace", nobody, "--userns", false),
        ] {
            let got = probe(&setup, wrapper, options, free).await;
            assert_same(
                &got,
                &expected(privileged, free),
                &format!("{flags:?}: {who}"),
            );
        }
    }
}

/// An unprivileged server has no session namespace: a command's bind is the kernel's, as
/// nobody, and the same words come back.
#[tokio::test]
async fn net_a_command_binds_a_port_below_1024_only_as_the_kernel_would_as_nobody() {
    let free = free_privileged_port();
    let setup = serve(Who::Nobody, &["--network", "allowlist"], &[]).await;
    let got = probe(&setup, "", "", free).await;
    assert_same(&got, &expected(false, free), "nobody's server");
}

/// A confined command's listeners are on the loopback only (an attacker's pass: a command
/// listened on every address, and a host the user never allowed connected in and took what it
/// served). `listen_probe.py` binds the wildcard of each family and listens on unbound sockets,
/// on a thread other than its main one (whose calls were once left to the kernel: its connects
/// were refused, its binds on every address), and connects to its own listener from there. A
/// test host in a network namespace then connects in to this machine's own addresses on those
/// ports and is refused; this machine's loopback is answered.
async fn listeners_are_on_the_loopback_only(who: Who) {
    let host = super::network::NetnsHost::new();
    let setup = serve(who, &["--network", "allowlist"], &[]).await;
    let workspace = setup.server.workspace().to_path_buf();
    std::fs::write(
        workspace.join("listen_probe.py"),
        include_str!("listen_probe.py"),
    )
    .unwrap();
    let ran = setup
        .server
        .terminal(serde_json::json!({"command": "/usr/bin/python3 listen_probe.py 2>&1"}));
    let checks = async {
        let until = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while !workspace.join("ready").exists() {
            assert!(
                std::time::Instant::now() < until,
                "the probe never got ready"
            );
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        let ports = std::fs::read_to_string(workspace.join("ports")).unwrap();
        assert!(ports.contains("thread-connect ok"), "{ports}");
        let mut checked = 0;
        for line in ports.lines().filter(|l| l.split(' ').count() == 3) {
            let [name, ip, port] = line.split(' ').collect::<Vec<_>>()[..] else {
                panic!("{line}");
            };
            let ip: std::net::IpAddr = ip.parse().unwrap();
            let port: u16 = port.parse().unwrap();
            // A dual-stack socket's wildcard is IPv4's loopback (`::ffff:127.0.0.1`), an
            // IPv6-only one's `::1`.
            let want_v4 = !name.starts_with("v6only");
            assert!(
                ip.to_canonical().is_loopback() && ip.to_canonical().is_ipv4() == want_v4,
                "{name} is bound to {ip}: {ports}"
            );
            let near = if ip.is_ipv4() {
                host.near.0
            } else {
                host.near.1
            };
            assert!(
                !host.connects_in((near, port).into()),
                "{name}: the test host connected in to {near}:{port}"
            );
            assert!(
                std::net::TcpStream::connect((ip, port)).is_ok(),
                "{name}: this machine's loopback is not answered at {ip}:{port}"
            );
            checked += 1;
        }
        assert_eq!(checked, 7, "{ports}");
        std::fs::write(workspace.join("done"), "").unwrap();
    };
    let ((text, s), ()) = tokio::join!(ran, checks);
    assert_eq!(s["exit_code"], 0, "{text}");
}

#[tokio::test]
async fn net_a_commands_listeners_are_on_the_loopback_only_as_root() {
    listeners_are_on_the_loopback_only(Who::Root).await;
}

#[tokio::test]
async fn net_a_commands_listeners_are_on_the_loopback_only_as_nobody() {
    listeners_are_on_the_loopback_only(Who::Nobody).await;
}
