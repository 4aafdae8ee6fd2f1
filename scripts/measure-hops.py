#!/usr/bin/env python3
"""What one request costs the server, per thread, over stdio and over HTTP (issue 45, item 3).

Usage: scripts/measure-hops.py [BINARY] [--calls N]      (BINARY: target/release/agentty)

For each transport (stdio, HTTP with one keep-alive connection) and each request (`ping`, which
starts no process, and a trivial `terminal({"argv":["true"]})`), it starts `agentty serve`,
warms it up, makes N requests one after another from a blocking client, and prints per request:
wall time seen by the client, and for each of the server's threads that did anything, its
voluntary and involuntary context switches (a voluntary one is a park: the thread waited for
something) and its CPU time, user and system. The server is the watchdog's child; its threads
are read from /proc (CPU time in clock ticks, 10 ms here: `ping` is made 5N times so its few
µs show). Standard library only; changes nothing in the server.

A hop between tasks on the same tokio worker costs no switch; a hop to another thread costs a
wake-up there. Read the HTTP `ping` line against stdio's for what the HTTP layer (hyper, the
gate, rmcp's streamable HTTP session) adds to every request.
"""
import json, os, re, shutil, socket, subprocess, sys, tempfile, threading, time

args = sys.argv[1:]
CALLS = 1000
if "--calls" in args:
    i = args.index("--calls")
    CALLS = int(args[i + 1])
    del args[i : i + 2]
BIN = os.path.abspath(args[0] if args else "target/release/agentty")
WARMUP = 30
INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "hops", "version": "1"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def request(kind, i):
    if kind == "ping":
        return {"jsonrpc": "2.0", "id": i, "method": "ping"}
    return {"jsonrpc": "2.0", "id": i, "method": "tools/call",
            "params": {"name": "terminal", "arguments": {"argv": ["true"]}}}


def answered(kind, body):
    return b'"result"' in body and (kind == "ping" or b'"isError":false' in body)


def threads(pid):
    """Per thread: name, voluntary and involuntary switches, user and system clock ticks."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            status = open(f"/proc/{pid}/task/{tid}/status").read()
            stat = open(f"/proc/{pid}/task/{tid}/stat").read().rsplit(")", 1)[1].split()
            name = open(f"/proc/{pid}/task/{tid}/comm").read().strip()
        except (FileNotFoundError, ProcessLookupError):
            continue
        vol = int(re.search(r"^voluntary_ctxt_switches:\s+(\d+)", status, re.M).group(1))
        invol = int(re.search(r"^nonvoluntary_ctxt_switches:\s+(\d+)", status, re.M).group(1))
        out[tid] = (name, vol, invol, int(stat[11]), int(stat[12]))
    return out


def report(label, before, after, seconds, calls):
    tick_us = 1e6 / os.sysconf("SC_CLK_TCK")
    print(f"{label}: {seconds / calls * 1e6:.0f} µs a request (wall, client's view), {calls} requests")
    total = [0, 0, 0, 0]
    for tid, (name, vol, invol, user, system) in sorted(after.items()):
        b = before.get(tid, (name, 0, 0, 0, 0))
        d = [vol - b[1], invol - b[2], user - b[3], system - b[4]]
        if not any(d):
            continue
        total = [t + x for t, x in zip(total, d)]
        print(f"    {name:16} switches {d[0] / calls:.2f} voluntary, {d[1] / calls:.2f} involuntary; "
              f"CPU {(d[2] + d[3]) * tick_us / calls:.0f} µs (user {d[2] * tick_us / calls:.0f})")
    print(f"    all threads      switches {(total[0] + total[1]) / calls:.2f}; "
          f"CPU {(total[2] + total[3]) * tick_us / calls:.0f} µs (user {total[2] * tick_us / calls:.0f})")


def serving_pid(p):
    kids = open(f"/proc/{p.pid}/task/{p.pid}/children").read().split()
    return int(kids[0]) if kids else p.pid


def dirs():
    ws = tempfile.mkdtemp()
    # The state dir out of /tmp: a confining server refuses one where its commands may write.
    os.makedirs(os.path.expanduser("~/.local/state"), exist_ok=True)
    st = tempfile.mkdtemp(prefix="agentty-", dir=os.path.expanduser("~/.local/state"))
    return ws, st


def over_stdio(kind):
    ws, st = dirs()
    p = subprocess.Popen([BIN, "serve", "--workspace", ws, "--state-dir", st],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)

    def send(obj, reply=True):
        p.stdin.write((json.dumps(obj) + "\n").encode())
        p.stdin.flush()
        return p.stdout.readline() if reply else b""

    try:
        send(INIT)
        send(INITIALIZED, reply=False)
        measure(f"stdio {kind}", kind, serving_pid(p), lambda i: send(request(kind, i)))
    finally:
        p.stdin.close()
        p.wait()
        shutil.rmtree(ws, ignore_errors=True)
        shutil.rmtree(st, ignore_errors=True)


def over_http(kind):
    ws, st = dirs()
    p = subprocess.Popen([BIN, "serve", "--http", "127.0.0.1:0", "--workspace", ws, "--state-dir", st],
                         stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        addr = None
        for line in p.stderr:
            m = re.search(r"http://([^/\s]+)/mcp", line)
            if m:
                addr = m.group(1)
                break
        # Keep draining stderr so the server never blocks on it.
        threading.Thread(target=lambda: [None for _ in p.stderr], daemon=True).start()
        token = open(os.path.join(st, "token")).read().strip()
        host, port = addr.rsplit(":", 1)
        sock = socket.create_connection((host, int(port)))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        reader = sock.makefile("rb")
        head = (f"POST /mcp HTTP/1.1\r\nhost: {addr}\r\nauthorization: Bearer {token}\r\n"
                "content-type: application/json\r\naccept: application/json, text/event-stream\r\n")

        def post(obj):
            body = json.dumps(obj)
            sock.sendall((head + f"content-length: {len(body)}\r\n\r\n" + body).encode())
            headers = {}
            reader.readline()
            while (line := reader.readline()) != b"\r\n":
                name, value = line.decode().split(":", 1)
                headers[name.lower()] = value.strip()
            if "content-length" in headers:
                return headers, reader.read(int(headers["content-length"]))
            data = b""
            while True:
                size = int(reader.readline().strip(), 16)
                data += reader.read(size)
                reader.readline()
                if size == 0:
                    return headers, data

        headers, _ = post(INIT)
        head += f"mcp-session-id: {headers['mcp-session-id']}\r\n"
        post(INITIALIZED)
        measure(f"HTTP {kind}", kind, serving_pid(p), lambda i: post(request(kind, i))[1])
        sock.close()
    finally:
        p.terminate()
        p.wait()
        shutil.rmtree(ws, ignore_errors=True)
        shutil.rmtree(st, ignore_errors=True)


def measure(label, kind, server, call):
    for i in range(WARMUP):
        call(i + 1)
    calls = CALLS * 5 if kind == "ping" else CALLS
    before = threads(server)
    started = time.monotonic()
    for i in range(calls):
        body = call(WARMUP + 1 + i)
        assert answered(kind, body), body[:300]
    seconds = time.monotonic() - started
    report(label, before, threads(server), seconds, calls)


print(f"binary: {BIN}; {CALLS} terminal calls, {CALLS * 5} pings per line; {os.cpu_count()} CPUs; load {os.getloadavg()[0]:.2f}")
for kind in ("ping", "terminal"):
    over_stdio(kind)
    over_http(kind)
