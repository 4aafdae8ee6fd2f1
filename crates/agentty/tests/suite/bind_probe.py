# Tries binds a confined command might use to make the server bind for it; one line each:
# "<case> ok <port>" or "<case> <ERRNO NAME>", after a line with its effective capabilities.
# Arguments: the proxy's port, a privileged port nothing is bound to, and `--drop-bind-cap`
# (CAP_NET_BIND_SERVICE out of its effective set) or `--userns` (a user namespace of its own
# first). Run by network_bind.rs inside a session.
import errno
import select
import socket
import sys

proxy, free = int(sys.argv[1]), int(sys.argv[2])
options = sys.argv[3:]
if options:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
if "--drop-bind-cap" in options:
    # CAP_NET_BIND_SERVICE out of this thread's effective set (capget, capset: version 3).
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)
    data = (ctypes.c_uint32 * 6)()
    libc.capget(header, data)
    data[0] &= ~(1 << 10)
    if libc.capset(header, data) != 0:
        print("capset", errno.errorcode[ctypes.get_errno()])
if "--userns" in options:
    # A user namespace of its own: every capability in it (what /proc/self/status shows), none
    # where the server's network namespace belongs.
    if libc.unshare(0x10000000) != 0:
        print("unshare", errno.errorcode[ctypes.get_errno()])
caps = [l for l in open("/proc/self/status") if l.startswith("CapEff")]
print("caps", caps[0].split()[1])
V4, V6 = socket.AF_INET, socket.AF_INET6


def said(case, act):
    try:
        print(case, "ok", act())
    except OSError as e:
        print(case, errno.errorcode.get(e.errno, e.errno))
    sys.stdout.flush()


def bind(family, host, port, reuse=False, before=None):
    s = socket.socket(family, socket.SOCK_STREAM)
    if reuse:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    if before:
        before(s)
    s.bind((host, port))
    port = s.getsockname()[1]
    s.close()
    return port


def bound_first(s):
    # The socket the server hands back for a bind to port 0: bound in its namespace.
    s.bind(("127.0.0.1", 0))


def failed_connect_first(s):
    # A non-blocking connect the server makes (to a loopback port nobody listens on) hands back
    # its socket; once the connect fails the kernel unbinds it.
    s.setblocking(False)
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()
    try:
        s.connect(("127.0.0.1", port))
    except BlockingIOError:
        select.select([], [s], [], 10)
    except OSError:
        pass
    s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
    s.setblocking(True)


for port in (80, 443, 22):
    said(f"v4-{port}", lambda: bind(V4, "127.0.0.1", port))
    said(f"v4-any-{port}", lambda: bind(V4, "0.0.0.0", port))
    said(f"v6-{port}", lambda: bind(V6, "::1", port))
    said(f"v6-any-{port}", lambda: bind(V6, "::", port))
    said(f"v6-mapped-{port}", lambda: bind(V6, "::ffff:127.0.0.1", port))
said("v4-free", lambda: bind(V4, "127.0.0.1", free))
said("v6-free", lambda: bind(V6, "::1", free))
said("v4-proxy", lambda: bind(V4, "127.0.0.1", proxy))
said("v4-proxy-reuse", lambda: bind(V4, "127.0.0.1", proxy, reuse=True))
said("v4-any-proxy-reuse", lambda: bind(V4, "0.0.0.0", proxy, reuse=True))
said("v6-mapped-proxy-reuse", lambda: bind(V6, "::ffff:127.0.0.1", proxy, reuse=True))
said("rebind-80", lambda: bind(V4, "127.0.0.1", 80, before=bound_first))
said("after-connect-80", lambda: bind(V4, "127.0.0.1", 80, before=failed_connect_first))
