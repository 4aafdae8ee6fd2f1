# Run by network_bind.rs inside a session: on a thread other than the main one (a program's
# other threads make their calls too), binds the wildcard of each family, listens on an unbound
# socket of each family, and connects to a listener of its own on the loopback. Writes the ports
# to `ports` ("v4-any P", ...), and its connect's outcome, then `ready`; holds the sockets until
# the test writes `done` (at most 30 s).
import os
import socket
import threading
import time

lines, held = [], []


def work():
    for name, family, address in (("v4-any", socket.AF_INET, "0.0.0.0"), ("v6-any", socket.AF_INET6, "::")):
        s = socket.socket(family)
        s.bind((address, 0))
        s.listen(8)
        held.append(s)
        lines.append(f"{name} {s.getsockname()[0]} {s.getsockname()[1]}")
        u = socket.socket(family)
        u.listen(8)
        held.append(u)
        lines.append(f"{name}-unbound {u.getsockname()[0]} {u.getsockname()[1]}")
    try:
        port = held[0].getsockname()[1]
        held.append(socket.create_connection(("127.0.0.1", port), timeout=5))
        lines.append("thread-connect ok")
    except OSError as e:
        lines.append(f"thread-connect {e}")


t = threading.Thread(target=work)
t.start()
t.join()
with open("ports", "w") as f:
    f.write("\n".join(lines) + "\n")
open("ready", "w").close()
until = time.time() + 30
while not os.path.exists("done") and time.time() < until:
    time.sleep(0.05)
