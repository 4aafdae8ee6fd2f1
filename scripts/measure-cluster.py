#!/usr/bin/env python3
"""The numbers README's "Run it in a cluster" gives, measured on this machine:

    scripts/measure-cluster.py BINARY [SESSIONS]

- time to ready: from starting `agentty serve --http` to the first 200 of /readyz (polled every
  2 ms), median of 5 starts;
- the server's RSS idle (after the first /readyz), and per idle client session: SESSIONS sessions
  opened (initialize, initialized, one `task_list` so each has its state), RSS again, divided;
- the drain: SIGTERM to exit with nothing running.

The server is the watchdog's child: its RSS is read from /proc. Standard library only."""

import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

BIN = sys.argv[1] if len(sys.argv) > 1 else "target/release/agentty"
SESSIONS = int(sys.argv[2]) if len(sys.argv) > 2 else 256
STATE_ROOT = os.path.join(os.path.expanduser("~"), ".local", "state", "agentty-measure")


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def server_pid(watchdog):
    """The server: the watchdog's one agentty child."""
    for _ in range(500):
        try:
            with open(f"/proc/{watchdog}/task/{watchdog}/children") as f:
                for pid in f.read().split():
                    with open(f"/proc/{pid}/comm") as c:
                        if c.read().strip() == "agentty":
                            return int(pid)
        except OSError:
            pass
        time.sleep(0.01)
    raise SystemExit("no server process")


def post(url, body, headers):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST")
    req.add_header("Content-Type", "application/json")
    req.add_header("Accept", "application/json, text/event-stream")
    for k, v in headers.items():
        req.add_header(k, v)
    with urllib.request.urlopen(req, timeout=30) as r:
        return r.headers, r.read()


def start(state, ws, *flags):
    began = time.monotonic()
    proc = subprocess.Popen(
        [BIN, "serve", "--http", "127.0.0.1:0", "--workspace", ws, "--state-dir", state, *flags],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = None
    for line in iter(proc.stderr.readline, b""):
        m = re.search(rb"at (http://\S+)/mcp", line)
        if m:
            url = m.group(1).decode()
            break
    assert url, "no address"
    while True:
        try:
            with urllib.request.urlopen(url + "/readyz", timeout=5) as r:
                if r.status == 200:
                    break
        except (urllib.error.URLError, ConnectionError):
            pass
        time.sleep(0.002)
    ready = time.monotonic() - began
    return proc, url, ready


def stop(proc):
    began = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    code = proc.wait(timeout=60)
    return code, time.monotonic() - began


def main():
    os.makedirs(STATE_ROOT, mode=0o700, exist_ok=True)
    readies = []
    with tempfile.TemporaryDirectory() as ws:
        for _ in range(5):
            with tempfile.TemporaryDirectory(dir=STATE_ROOT) as state:
                proc, url, ready = start(state, ws)
                readies.append(ready)
                stop(proc)
        with tempfile.TemporaryDirectory(dir=STATE_ROOT) as state:
            proc, url, _ = start(state, ws, "--max-sessions", str(SESSIONS))
            server = server_pid(proc.pid)
            time.sleep(0.5)
            idle = rss_kib(server)
            token = open(os.path.join(state, "token")).read().strip()
            auth = {"Authorization": f"Bearer {token}"}
            init = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                    "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                               "clientInfo": {"name": "measure", "version": "1"}}}
            for _ in range(SESSIONS):
                headers, _ = post(url + "/mcp", init, auth)
                sid = {**auth, "Mcp-Session-Id": headers["Mcp-Session-Id"]}
                post(url + "/mcp", {"jsonrpc": "2.0", "method": "notifications/initialized"}, sid)
                post(url + "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                    "params": {"name": "task_list", "arguments": {}}}, sid)
            time.sleep(0.5)
            full = rss_kib(server)
            code, took = stop(proc)
    median = statistics.median(readies) * 1000
    print(f"time to ready (start to first /readyz 200): median {median:.0f} ms "
          f"(min {min(readies)*1000:.0f}, max {max(readies)*1000:.0f}, 5 starts)")
    print(f"server RSS idle: {idle/1024:.1f} MiB")
    print(f"server RSS with {SESSIONS} idle sessions: {full/1024:.1f} MiB "
          f"({(full-idle)/SESSIONS:.0f} KiB per session)")
    print(f"SIGTERM to exit with {SESSIONS} idle sessions: {took*1000:.0f} ms, exit {code}")


if __name__ == "__main__":
    main()
