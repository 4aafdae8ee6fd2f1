//! The network modes for real (docs/BEHAVIOUR.md §13). `off`: new IP sockets fail with EACCES;
//! unix sockets still work. `allowlist`/`ask` (the kernel's half): only plain TCP sockets, every
//! TCP connection made by the supervisor for what the judge allows, the command's own TCP
//! connects refused by Landlock. Packets go only to this machine: listeners of the test, on
//! loopback and on this machine's own addresses.

use std::io::Read as _;
use std::net::{IpAddr, SocketAddr, TcpListener};
use std::os::unix::process::CommandExt as _;
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};

use agentty_sandbox::{
    Judge, Mode, NetEnforcement, NetHold, Network, Plan, Policy, Prepared, Supervisor, Verdict,
};

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
            network: Network::Off,
            ..Policy::new(Mode::Default, vec![f.ws.clone()])
        },
        &f.ctx(),
    );
    let off = Arc::new(off.prepare().unwrap());
    assert_eq!(
        off.enforcement().network,
        NetEnforcement::Off { installed: true }
    );
    assert!(
        off.enforcement().line().ends_with("; network off"),
        "{}",
        off.enforcement().line()
    );
    let err = bash_tcp(&off, &f);
    assert!(err.contains("Permission denied"), "{err}");

    let on = f.prepared(Mode::Default);
    assert_eq!(on.enforcement().network, NetEnforcement::Open);
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

/// A judge that allows what is in `allowed` and records every question (pid, address).
#[derive(Default)]
struct ListJudge {
    allowed: Mutex<Vec<SocketAddr>>,
    asked: Mutex<Vec<(u32, SocketAddr)>>,
    /// Sockets refused: (family, type without flags, protocol).
    sockets: Mutex<Vec<(i32, i32, i32)>>,
}

impl Judge for ListJudge {
    fn judge(&self, pid: u32, to: SocketAddr) -> Verdict {
        self.asked.lock().unwrap().push((pid, to));
        if self.allowed.lock().unwrap().contains(&to) {
            Verdict::Connect
        } else {
            Verdict::Refuse
        }
    }

    fn refused_socket(&self, _pid: u32, family: i32, kind: i32, protocol: i32) {
        self.sockets
            .lock()
            .unwrap()
            .push((family, kind & 0xf, protocol));
    }
}

/// A prepared `allowlist` sandbox whose connects go to a supervisor asking `judge`.
fn supervised(f: &Fixture, judge: &Arc<ListJudge>) -> Arc<Prepared> {
    let plan = Plan::with_context(
        &Policy {
            network: Network::Allowlist,
            ..Policy::new(Mode::Default, vec![f.ws.clone()])
        },
        &f.ctx(),
    );
    let supervisor = Supervisor::start(Arc::clone(judge) as Arc<dyn Judge>).unwrap();
    Arc::new(plan.prepare().unwrap().supervised_by(supervisor))
}

/// Runs `python3 -c script` as a launcher would start it: from a thread that took the shared
/// part of the sandbox (and handed its listener to the supervisor), the command applying its
/// own Landlock domain.
fn launched_python(p: &Arc<Prepared>, f: &Fixture, script: &str) -> Output {
    let (p, ws, home, script) = (
        Arc::clone(p),
        f.ws.clone(),
        f.home.clone(),
        script.to_owned(),
    );
    std::thread::spawn(move || {
        p.apply_to_launcher().unwrap();
        let mut cmd = Command::new("/usr/bin/python3");
        cmd.args(["-c", &script])
            .current_dir(&ws)
            .env("HOME", &home)
            .stdin(Stdio::null());
        let own = Arc::clone(&p);
        // SAFETY: apply_own makes only raw syscalls on data prepared before the fork.
        unsafe { cmd.pre_exec(move || own.apply_own()) };
        cmd.output().unwrap()
    })
    .join()
    .unwrap()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A script that connects a TCP socket to `to` and prints `connected` and what the peer sent,
/// or the error.
fn connect_script(to: SocketAddr, options: &str) -> String {
    let family = if to.is_ipv4() { "AF_INET" } else { "AF_INET6" };
    format!(
        "import socket, os\n\
         s = socket.socket(socket.{family}, socket.SOCK_STREAM)\n\
         {options}\n\
         try:\n    s.connect(({ip:?}, {port}))\n    print('connected', s.recv(16).decode(), os.getpid())\n\
         except OSError as e:\n    print('refused', e.errno, os.getpid())\n",
        ip = to.ip().to_string(),
        port = to.port()
    )
}

/// A listener on `ip` that greets each connection with `hi`; joined, whether any came.
fn greeter(ip: IpAddr) -> (SocketAddr, Greeter) {
    let listener = TcpListener::bind((ip, 0)).unwrap();
    let at = listener.local_addr().unwrap();
    listener.set_nonblocking(true).unwrap();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stopped = Arc::clone(&stop);
    let thread = std::thread::spawn(move || {
        let mut seen = false;
        loop {
            // After the stop, one last look: a connection the kernel completed meanwhile waits
            // in the backlog.
            let last = stopped.load(std::sync::atomic::Ordering::SeqCst);
            while let Ok((mut s, _)) = listener.accept() {
                use std::io::Write as _;
                seen = true;
                let _ = s.set_nonblocking(false);
                let _ = s.write_all(b"hi");
                let _ = s.set_read_timeout(Some(std::time::Duration::from_millis(100)));
                let _ = s.read_to_end(&mut Vec::new());
            }
            if last {
                return seen;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    });
    (at, Greeter { stop, thread })
}

struct Greeter {
    stop: Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<bool>,
}

impl Greeter {
    /// Whether a connection came (call after the command ended).
    fn join(self) -> bool {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        self.thread.join().unwrap()
    }
}

/// An address of this machine that is not loopback (its own eth address), if it has one.
fn own_address() -> Option<IpAddr> {
    let out = Command::new("hostname").arg("-I").output().ok()?;
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .filter_map(|w| w.parse::<IpAddr>().ok())
        .find(|ip| ip.is_ipv4() && !ip.is_loopback())
}

#[test]
fn net_only_plain_tcp_sockets_are_made() {
    let f = Fixture::new();
    let judge = Arc::new(ListJudge::default());
    let p = supervised(&f, &judge);
    assert!(matches!(
        p.enforcement().network,
        NetEnforcement::Filtered {
            held: NetHold::Full,
            ..
        }
    ));
    let script = "import socket\n\
        def make(*a):\n    \
            try:\n        socket.socket(*a).close(); return 'ok'\n    \
            except OSError as e:\n        return str(e.errno)\n\
        print(' '.join([\n\
          make(socket.AF_INET, socket.SOCK_STREAM),\n\
          make(socket.AF_INET6, socket.SOCK_STREAM | socket.SOCK_NONBLOCK, socket.IPPROTO_TCP),\n\
          make(socket.AF_UNIX, socket.SOCK_STREAM),\n\
          make(socket.AF_INET, socket.SOCK_DGRAM),\n\
          make(socket.AF_INET6, socket.SOCK_DGRAM),\n\
          make(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP),\n\
          make(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP),\n\
          make(socket.AF_INET, socket.SOCK_STREAM, 262),\n\
          make(socket.AF_INET, socket.SOCK_STREAM, 132),\n\
          make(socket.AF_PACKET, socket.SOCK_RAW),\n\
          make(40, socket.SOCK_STREAM),\n\
        ]))\n";
    let out = launched_python(&p, &f, script);
    // TCP (v4, v6) and unix; not UDP, ICMP, raw, MPTCP (262), SCTP (132), packet, vsock (40).
    assert_eq!(
        stdout(&out).trim(),
        "ok ok ok 13 13 13 13 13 13 13 13",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The supervisor was told of each refusal (to tell the model).
    let told = judge.sockets.lock().unwrap().clone();
    assert!(
        told.contains(&(libc::AF_INET, libc::SOCK_DGRAM, 0)),
        "{told:?}"
    );
    assert!(
        told.contains(&(libc::AF_PACKET, libc::SOCK_RAW, 0)),
        "{told:?}"
    );
    assert_eq!(told.len(), 8, "{told:?}");
}

#[test]
fn net_the_supervisor_makes_allowed_connections_and_refuses_the_rest() {
    let f = Fixture::new();
    let judge = Arc::new(ListJudge::default());
    let p = supervised(&f, &judge);
    let (allowed, allowed_seen) = greeter("127.0.0.1".parse().unwrap());
    let (other, other_seen) = greeter("127.0.0.1".parse().unwrap());
    judge.allowed.lock().unwrap().push(allowed);

    let out = launched_python(&p, &f, &connect_script(allowed, ""));
    let said = stdout(&out);
    assert!(
        said.starts_with("connected hi "),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(allowed_seen.join());
    // The judge was asked about the command itself (the pid it printed).
    let pid: u32 = said.split_whitespace().last().unwrap().parse().unwrap();
    assert!(judge.asked.lock().unwrap().contains(&(pid, allowed)));

    let out = launched_python(&p, &f, &connect_script(other, ""));
    assert!(stdout(&out).starts_with("refused 13 "), "{}", stdout(&out));
    assert!(
        !other_seen.join(),
        "a refused connection reached its listener"
    );
}

#[test]
fn net_a_non_blocking_socket_gets_einprogress_then_its_connection() {
    let f = Fixture::new();
    let judge = Arc::new(ListJudge::default());
    let p = supervised(&f, &judge);
    let (allowed, seen) = greeter("::1".parse().unwrap());
    judge.allowed.lock().unwrap().push(allowed);
    let script = format!(
        "import socket, select, fcntl, os\n\
         s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)\n\
         s.setblocking(False)\n\
         print(s.connect_ex(('::1', {port})))\n\
         print(fcntl.fcntl(s.fileno(), fcntl.F_GETFL) & os.O_NONBLOCK != 0)\n\
         select.select([], [s], [], 5)\n\
         print(s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR))\n\
         s.setblocking(True)\n\
         print(s.recv(2).decode())\n",
        port = allowed.port()
    );
    let out = launched_python(&p, &f, &script);
    let said: Vec<String> = stdout(&out).lines().map(str::to_owned).collect();
    // 115: EINPROGRESS, or 0 if loopback was quicker than the answer.
    assert!(
        said.len() == 4 && (said[0] == "115" || said[0] == "0"),
        "{said:?} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Still non-blocking: the socket put in its place kept the flag.
    assert_eq!(said[1..], ["True", "0", "hi"]);
    assert!(seen.join());
}

#[test]
fn net_an_ipv4_address_on_an_ipv6_socket_is_judged_as_ipv4() {
    let f = Fixture::new();
    let judge = Arc::new(ListJudge::default());
    let p = supervised(&f, &judge);
    let (allowed, seen) = greeter("127.0.0.1".parse().unwrap());
    judge.allowed.lock().unwrap().push(allowed);
    let script = format!(
        "import socket\n\
         s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)\n\
         s.connect(('::ffff:127.0.0.1', {port}))\n\
         print(s.recv(2).decode(), s.getpeername()[0])\n",
        port = allowed.port()
    );
    let out = launched_python(&p, &f, &script);
    assert_eq!(
        stdout(&out).trim(),
        "hi ::ffff:127.0.0.1",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(seen.join());
}

#[test]
fn net_this_machines_own_address_is_refused_before_any_packet() {
    let Some(own) = own_address() else {
        eprintln!("no non-loopback address on this machine: nothing to test");
        return;
    };
    let f = Fixture::new();
    let judge = Arc::new(ListJudge::default());
    let p = supervised(&f, &judge);
    let (at, seen) = greeter(own);
    let out = launched_python(&p, &f, &connect_script(at, ""));
    assert!(stdout(&out).starts_with("refused 13 "), "{}", stdout(&out));
    assert!(!seen.join(), "the refused connection reached the listener");
    assert!(judge.asked.lock().unwrap().iter().any(|(_, to)| *to == at));
}

#[test]
fn net_tcp_fast_open_is_refused() {
    // TCP Fast Open connects from `sendto`, without `connect`: the filter refuses it itself (the
    // command is run here without its Landlock domain, which refuses it too).
    let f = Fixture::new();
    let judge = Arc::new(ListJudge::default());
    let p = supervised(&f, &judge);
    let (at, seen) = greeter("127.0.0.1".parse().unwrap());
    let script = format!(
        "import socket\n\
         s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)\n\
         try:\n    s.sendto(b'x', socket.MSG_FASTOPEN, ('127.0.0.1', {port})); print('sent')\n\
         except OSError as e:\n    print('refused', e.errno)\n",
        port = at.port()
    );
    let p = Arc::clone(&p);
    let out = std::thread::spawn(move || {
        p.apply_to_launcher().unwrap();
        Command::new("/usr/bin/python3")
            .args(["-c", &script])
            .stdin(Stdio::null())
            .output()
            .unwrap()
    })
    .join()
    .unwrap();
    assert_eq!(
        stdout(&out).trim(),
        "refused 13",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!seen.join());
}

#[test]
fn net_landlock_alone_refuses_the_commands_own_tcp_connects() {
    // Without the seccomp filter (its supervisor could not be bypassed to show this), the
    // command's Landlock domain of an `allowlist` plan refuses a TCP connect by itself.
    let f = Fixture::new();
    let judge = Arc::new(ListJudge::default());
    let p = supervised(&f, &judge);
    let (at, seen) = greeter("127.0.0.1".parse().unwrap());
    let mut cmd = Command::new("/usr/bin/python3");
    cmd.args(["-c", &connect_script(at, "")])
        .stdin(Stdio::null());
    let own = Arc::clone(&p);
    // SAFETY: apply_own makes only raw syscalls on data prepared before the fork.
    unsafe { cmd.pre_exec(move || own.apply_own()) };
    let out = cmd.output().unwrap();
    assert!(stdout(&out).starts_with("refused 13 "), "{}", stdout(&out));
    assert!(!seen.join());
    assert!(
        judge.asked.lock().unwrap().is_empty(),
        "no filter: the supervisor was not asked"
    );
}

/// A `connect` given a unix address's full length (110: glibc's nscd lookups) goes straight to
/// the kernel, never to the supervisor, where Landlock refuses the command's own TCP connects:
/// an IP address given that length is refused by Landlock, so it reaches nothing. Seen with the
/// supervisor's listener dropped (`apply_in_child`), where a call sent to it fails with ENOSYS:
/// the unix connect gets the kernel's ENOENT, the IP address with 110 Landlock's EACCES, with
/// its own lengths (16, 128) or another (64) ENOSYS. Below Landlock ABI 4 every one is sent.
#[test]
fn net_connects_with_a_unix_address_length_skip_the_supervisor() {
    let f = Fixture::new();
    let judge = Arc::new(ListJudge::default());
    let p = supervised(&f, &judge);
    let (to, seen) = greeter("127.0.0.1".parse().unwrap());
    judge.allowed.lock().unwrap().push(to);
    let script = format!(
        "import ctypes, socket, struct\n\
         libc = ctypes.CDLL(None, use_errno=True)\n\
         def conn(family, blob, length):\n    \
             s = socket.socket(family, socket.SOCK_STREAM)\n    \
             buf = ctypes.create_string_buffer(blob.ljust(128, b'\\0'), 128)\n    \
             rc = libc.connect(s.fileno(), buf, length)\n    \
             e = ctypes.get_errno() if rc else 0\n    \
             s.close()\n    \
             return str(e)\n\
         unix = struct.pack('=H', socket.AF_UNIX) + b'/nonexistent/agentty-test.sock'\n\
         inet = struct.pack('=H', socket.AF_INET) + struct.pack('!H', {port}) + socket.inet_aton('127.0.0.1')\n\
         print(conn(socket.AF_UNIX, unix, 110), conn(socket.AF_INET, inet, 16), \
               conn(socket.AF_INET, inet, 110), conn(socket.AF_INET, inet, 64), \
               conn(socket.AF_INET, inet, 128))\n",
        port = to.port()
    );
    let mut cmd = Command::new("/usr/bin/python3");
    cmd.args(["-c", &script])
        .current_dir(&f.ws)
        .env("HOME", &f.home)
        .stdin(Stdio::null());
    super::common::confine(&mut cmd, &p);
    let out = cmd.output().unwrap();
    let landlock_tcp = matches!(
        p.enforcement().network,
        NetEnforcement::Filtered {
            held: NetHold::Full,
            ..
        }
    );
    let expected = if landlock_tcp {
        "2 38 13 38 38"
    } else {
        "38 38 38 38 38"
    };
    assert_eq!(
        stdout(&out).trim(),
        expected,
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !seen.join(),
        "a connect the supervisor never judged got through"
    );
}

/// A command confined without the supervisor's listener (`apply_in_child`: a child that cannot
/// hand it over) installs a filter with a listener of its own (the kernel allows one once no
/// filter above has a live listener), which gets the calls first (the newest filter wins a tie)
/// and lets them carry on: a terminal resize and a UDP socket. They still fail (ENOSYS), as
/// without its filter: the calls meant for the supervisor are an errno in that case, which
/// outranks any notification.
#[test]
fn net_a_listener_of_the_commands_own_gets_nothing_past_the_filter() {
    let f = Fixture::new();
    let judge = Arc::new(ListJudge::default());
    let p = supervised(&f, &judge);
    let script = r#"
import ctypes, fcntl, os, platform, socket, struct, termios, threading
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
arm = platform.machine() == "aarch64"
SYS_seccomp, SYS_ioctl, SYS_socket = (277, 29, 198) if arm else (317, 16, 41)
def op(code, jt, jf, k):
    return struct.pack("=HBBI", code, jt, jf, k)
prog = b"".join([
    op(0x20, 0, 0, 0),                          # A = nr
    op(0x15, 3, 0, SYS_socket),                 # socket: notify
    op(0x15, 0, 3, SYS_ioctl),                  # not ioctl: allow
    op(0x20, 0, 0, 24),                         # A = request
    op(0x15, 0, 1, termios.TIOCSWINSZ),         # TIOCSWINSZ: notify
    op(0x06, 0, 0, 0x7FC00000),                 # SECCOMP_RET_USER_NOTIF
    op(0x06, 0, 0, 0x7FFF0000),                 # SECCOMP_RET_ALLOW
])
buf = ctypes.create_string_buffer(prog)
fprog = struct.pack("=HxxxxxxQ", len(prog) // 8, ctypes.addressof(buf))
fprog_buf = ctypes.create_string_buffer(fprog)
libc.prctl(38, 1, 0, 0, 0)
listener = libc.syscall(SYS_seccomp, 1, 8, fprog_buf)
if listener < 0:
    print("no listener", ctypes.get_errno())
    raise SystemExit
def carry_on():
    while True:
        notif = ctypes.create_string_buffer(80)
        if libc.ioctl(listener, ctypes.c_ulong(0xC0502100), notif) != 0:
            continue
        nid = struct.unpack_from("=Q", notif.raw)[0]
        resp = ctypes.create_string_buffer(struct.pack("=QqiI", nid, 0, 0, 1))
        libc.ioctl(listener, ctypes.c_ulong(0xC0182101), resp)
threading.Thread(target=carry_on, daemon=True).start()
master, slave = os.openpty()
try:
    fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", 12, 34, 0, 0))
    resized = "resized"
except OSError as e:
    resized = "resize %d" % e.errno
try:
    socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp = "udp made"
except OSError as e:
    udp = "udp %d" % e.errno
print(resized, udp)
"#;
    let mut cmd = Command::new("/usr/bin/python3");
    cmd.args(["-c", script])
        .current_dir(&f.ws)
        .env("HOME", &f.home)
        .stdin(Stdio::null());
    super::common::confine(&mut cmd, &p);
    let out = cmd.output().unwrap();
    assert_eq!(
        stdout(&out).trim(),
        "resize 38 udp 38",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
