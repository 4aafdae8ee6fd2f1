#!/usr/bin/env python3
"""Measures how a session stays bounded: fds and RSS of a server after 400 background jobs whose
output spilled and after 2000 shell open/close cycles, and what task_list keeps.

Usage: scripts/measure-bounds.py target/debug/agentty   (raw JSON-RPC over stdio; prints figures)
"""
import json, os, shutil, subprocess, sys, tempfile, time
ws = tempfile.mkdtemp()
# The state dir out of /tmp: a confining server refuses one where its commands may write.
os.makedirs(os.path.expanduser("~/.local/state"), exist_ok=True)
st = tempfile.mkdtemp(prefix="agentty-", dir=os.path.expanduser("~/.local/state"))
p = subprocess.Popen([sys.argv[1], "serve", "--workspace", ws, "--state-dir", st], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
n = 0
def serving_pid():
    """The server proper: the child of the process started here (which stays as its watchdog)."""
    kids = open(f"/proc/{p.pid}/task/{p.pid}/children").read().split()
    return int(kids[0]) if kids else p.pid
def call(method, params, notify=False):
    global n
    n += 1
    msg = {"jsonrpc": "2.0", "method": method, "params": params}
    if not notify: msg["id"] = n
    p.stdin.write((json.dumps(msg) + "\n").encode()); p.stdin.flush()
    if notify: return None
    while True:
        r = json.loads(p.stdout.readline())
        if r.get("id") == n: return r
def tool(name, args): return call("tools/call", {"name": name, "arguments": args})
call("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "m", "version": "0"}})
call("notifications/initialized", {}, notify=True)
def stats():
    pid = serving_pid()
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    rss = [l for l in open(f"/proc/{pid}/status") if l.startswith("VmRSS")][0].split()[1]
    return fds, int(rss)
print("start fds, RSS kB:", stats())
for i in range(400):
    r = tool("terminal", {"command": "seq 1 60000", "background": True})
    jid = r["result"]["structuredContent"]["job_id"]
    tool("task_wait", {"id": jid, "timeout_ms": 60000})
print("after 400 spilled background jobs fds, RSS kB:", stats())
for i in range(2000):
    r = tool("shell_open", {})
    sid = r["result"]["structuredContent"]["id"]
    tool("shell_close", {"id": sid})
print("after 2000 shell cycles fds, RSS kB:", stats())
r = tool("task_list", {})
print("task_list lines:", len(r["result"]["content"][0]["text"].splitlines()), "forgotten:", r["result"]["structuredContent"]["forgotten"])
p.stdin.close(); p.wait(timeout=60)
shutil.rmtree(st, ignore_errors=True); shutil.rmtree(ws, ignore_errors=True)
