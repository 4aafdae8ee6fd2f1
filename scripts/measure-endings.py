#!/usr/bin/env python3
"""Survivors for each way the server can end: starts a server, runs jobs whose trees include
setsid, double-fork and `env -i` escapees (no run marker left), ends the server one way, and
counts the escapees still alive after waiting up to 10 s for them to go (then kills them).

Usage: scripts/measure-endings.py ENDING [BINARY]   (ENDING: eof term int hup kill killpg
       kill-server term-server kill-gap-SECONDS kill-both; BINARY: target/debug/agentty)
Prints one line: ending, processes before, survivors, the started process's exit status.
"""
import json, subprocess, sys, time, os, shutil, signal, tempfile
BIN = sys.argv[2] if len(sys.argv) > 2 else "target/debug/agentty"
ending = sys.argv[1]
tag = f"3599.{os.getpid()}"
ws = tempfile.mkdtemp()
# The state dir out of /tmp: a confining server refuses one where its commands may write.
os.makedirs(os.path.expanduser("~/.local/state"), exist_ok=True)
st = tempfile.mkdtemp(prefix="agentty-", dir=os.path.expanduser("~/.local/state"))
p = subprocess.Popen([BIN, "serve", "--workspace", ws, "--state-dir", st], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True)
def send(o): p.stdin.write((json.dumps(o)+"\n").encode()); p.stdin.flush()
def recv(): return json.loads(p.stdout.readline())
send({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}); recv()
send({"jsonrpc":"2.0","method":"notifications/initialized"})
cmds = [f"setsid env -i sh -c 'sleep {tag}1 & sleep {tag}2' >/dev/null 2>&1 & sleep {tag}3",
        f"(setsid env -i /bin/sh -c 'trap \"\" TERM; sleep {tag}4' >/dev/null 2>&1 &); exec env -i sleep {tag}5"]
for i,c in enumerate(cmds):
    send({"jsonrpc":"2.0","id":i+1,"method":"tools/call","params":{"name":"terminal","arguments":{"command":c,"background":True}}}); recv()
# a one-shot escapee too
send({"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"terminal","arguments":{"command":f"setsid env -i sleep {tag}6 >/dev/null 2>&1 &"}}}); recv()
def procs():
    out=[]
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                cl=open(f"/proc/{d}/cmdline","rb").read()
                stt=open(f"/proc/{d}/stat").read()
            except Exception: continue
            if tag.encode() in cl and stt.rsplit(")",1)[1].split()[0]!="Z": out.append(int(d))
    return out
time.sleep(1.0)
before=len(procs())
def server_pid():
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                if int(open(f"/proc/{d}/stat").read().rsplit(")",1)[1].split()[1])==p.pid: 
                    if open(f"/proc/{d}/cmdline","rb").read().startswith(BIN.encode()): return int(d)
            except Exception: pass
srv=server_pid()
if ending=="eof": p.stdin.close()
elif ending=="term": p.send_signal(signal.SIGTERM)
elif ending=="int": p.send_signal(signal.SIGINT)
elif ending=="hup": p.send_signal(signal.SIGHUP)
elif ending=="kill": p.kill()
elif ending=="killpg": os.killpg(p.pid, signal.SIGKILL)
elif ending=="kill-server": os.kill(srv, signal.SIGKILL)
elif ending=="term-server": os.kill(srv, signal.SIGTERM)
elif ending=="kill-watchdog-then-server": p.kill(); time.sleep(0.2); os.kill(srv, signal.SIGKILL)
elif ending.startswith("kill-gap-"): p.kill(); time.sleep(float(ending[9:])); os.kill(srv, signal.SIGKILL)
elif ending=="kill-both": os.kill(p.pid, signal.SIGKILL); os.kill(srv, signal.SIGKILL)
elif ending=="segv-server": os.kill(srv, signal.SIGSEGV)
try: p.wait(timeout=20)
except Exception: pass
deadline=time.time()+10
while procs() and time.time()<deadline: time.sleep(0.1)
left=procs()
time.sleep(0.3); srvs=[d for d in os.listdir("/proc") if d.isdigit() and st.encode() in open(f"/proc/{d}/cmdline","rb").read()] if True else []
print(f"{ending:28s} before={before} survivors={len(left)} exit={p.returncode} agentty_left={srvs}")
for pid in left: os.kill(pid, signal.SIGKILL)
shutil.rmtree(st, ignore_errors=True); shutil.rmtree(ws, ignore_errors=True)
