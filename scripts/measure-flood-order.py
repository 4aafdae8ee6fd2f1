#!/usr/bin/env python3
"""Flood-then-error runs: how often the model's text lacks the error line a failed command wrote
last, or shows it before output the command wrote earlier (issue 40, item 2).

Runs each command RUNS times on the pipe path (`terminal`), the PTY path (`terminal`, `pty: true`)
and as a background job (`terminal`, `background: true`, then `task_wait`), against one server
started over stdio. With `--busy N`, N busy loops share the cores for the whole measurement.

Usage: scripts/measure-flood-order.py [--runs 200] [--busy 0] [BINARY]   (default target/debug/agentty)
Prints one line per command and path: runs, missing the error, error not last.
"""
import argparse, json, os, subprocess, sys, tempfile

COMMANDS = {
    # The shell loop: 3000 stdout lines, then the error on stderr, exit 1.
    "loop-3000": "for i in $(seq 1 3000); do echo warn-$i; done; echo FATAL >&2; exit 1",
    # A cargo-build-like flood of 200 000 lines, then the compiler's error on stderr.
    "build-200k": "seq -f 'warning: unused variable x%g' 200000; "
                  "echo 'error[E0425]: cannot find value' >&2; exit 1",
}
ERRORS = {"loop-3000": "FATAL", "build-200k": "error[E0425]: cannot find value"}
# Lines of the flood: the error must come after the last of them that the text shows.
FLOOD_MARK = {"loop-3000": "warn-", "build-200k": "warning: unused variable"}


class Server:
    def __init__(self, binary):
        self.ws = tempfile.mkdtemp()
        home = os.path.expanduser("~/.local/state")
        os.makedirs(home, exist_ok=True)
        state = tempfile.mkdtemp(prefix="agentty-flood-", dir=home)
        self.p = subprocess.Popen(
            [binary, "serve", "--workspace", self.ws, "--state-dir", state],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        )
        self.next_id = 0
        self.call_raw("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                     "clientInfo": {"name": "flood", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message):
        self.p.stdin.write((json.dumps(message) + "\n").encode())
        self.p.stdin.flush()

    def call_raw(self, method, params):
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        while True:
            reply = json.loads(self.p.stdout.readline())
            if reply.get("id") == self.next_id:
                return reply

    def tool(self, name, arguments):
        reply = self.call_raw("tools/call", {"name": name, "arguments": arguments})
        result = reply["result"]
        return "".join(c.get("text", "") for c in result["content"]), result.get("structuredContent")

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=30)


def text_of(server, path, command):
    if path == "pipe":
        return server.tool("terminal", {"command": command})[0]
    if path == "pty":
        return server.tool("terminal", {"command": command, "pty": True})[0]
    text, data = server.tool("terminal", {"command": command, "background": True})
    job = data["job_id"]
    return server.tool("task_wait", {"id": job, "timeout_ms": 60000})[0]


def judge(name, text):
    """(missing, out_of_order) for one result."""
    error = ERRORS[name]
    if error not in text:
        return True, False
    at = text.rfind(error)
    return False, text.rfind(FLOOD_MARK[name], at) != -1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--busy", type=int, default=0)
    ap.add_argument("binary", nargs="?", default="target/debug/agentty")
    args = ap.parse_args()
    busy = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(args.busy)]
    server = Server(args.binary)
    try:
        for name, command in COMMANDS.items():
            for path in ("pipe", "pty", "job"):
                missing = disordered = 0
                for _ in range(args.runs):
                    m, d = judge(name, text_of(server, path, command))
                    missing += m
                    disordered += d
                print(f"{name:11} {path:4} busy={args.busy} runs={args.runs} "
                      f"missing={missing} error-not-last={disordered}", flush=True)
    finally:
        server.close()
        for b in busy:
            b.kill()


if __name__ == "__main__":
    sys.exit(main())
