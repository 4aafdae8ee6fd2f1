# Run by network_bind.rs inside a session: on a thread other than the main one (a program's
# other threads make their calls too), binds the wildcard of each family (IPv6 dual-stack and
# IPv6-only), listens on an unbound socket of each, and connects to a listener of its own on
# the loopback; and listens on a thread with an fd table of its own. Writes the ports to
# `ports` ("v4-any P", ...), and its connect's outcome, then `ready`; holds the sockets
# until the test writes `done` (at most 30 s).
import ctypes
import os
import socket
import threading
import time

lines, held = [], []


def work():
    for name, family, address, v6only in (
        ("v4-any", socket.AF_INET, "0.0.0.0", None),
        ("v6-any", socket.AF_INET6, "::", 0),
        ("v6only-any", socket.AF_INET6, "::", 1),
    ):
        s = socket.socket(family)
        if v6only is not None:
            s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, v6only)
        s.bind((address, 0))
        s.listen(8)
        held.append(s)
        lines.append(f"{name} {s.getsockname()[0]} {s.getsockname()[1]}")
        u = socket.socket(family)
        if v6only is not None:
            u.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, v6only)
        u.listen(8)
        held.append(u)
        lines.append(f"{name}-unbound {u.getsockname()[0]} {u.getsockname()[1]}")
    try:
        port = held[0].getsockname()[1]
        held.append(socket.create_connection(("127.0.0.1", port), timeout=5))
        lines.append("thread-connect ok")
    except OSError as e:
        lines.append(f"thread-connect {e}")


def own_table():
    # A thread with an fd table of its own (an attacker's second pass): its fd 100 a TCP
    # socket, the process's fd 100 a pipe; its listen must not pass for the pipe's.
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(0x400) != 0:  # CLONE_FILES
        lines.append(f"own-table unshare errno {ctypes.get_errno()}")
        return listed.set()
    s = socket.socket(socket.AF_INET)
    os.dup2(s.fileno(), 100)
    if libc.listen(100, 8) != 0:
        lines.append(f"own-table listen errno {ctypes.get_errno()}")
        return listed.set()
    t = socket.socket(fileno=os.dup(100))
    lines.append(f"own-table {t.getsockname()[0]} {t.getsockname()[1]}")
    listed.set()
    # Its fds close when it ends: it holds them until the test is done.
    until = time.time() + 30
    while not os.path.exists("done") and time.time() < until:
        time.sleep(0.05)


pipe = os.pipe()
os.dup2(pipe[0], 100)
listed = threading.Event()
t = threading.Thread(target=work)
t.start()
t.join()
threading.Thread(target=own_table, daemon=True).start()
listed.wait(10)
with open("ports", "w") as f:
    f.write("\n".join(lines) + "\n")
open("ready", "w").close()
until = time.time() + 30
while not os.path.exists("done") and time.time() < until:
    time.sleep(0.05)
