"""agentty in a cluster (docs/BEHAVIOUR.md §14): the probes, the drain after SIGTERM, /metrics read
by the Prometheus client's own parser, a client through a router that behaves as agent-sandbox's
sandbox-router does, and a restart that brings a session back with its jobs reported as lost."""

import asyncio
import contextlib
import http.client
import json
import os
import re
import signal
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from prometheus_client.parser import text_string_to_metric_families

from private_dirs import private_dir, private_file
from test_http import BIN, INIT, Log, raw, text, wait_until, with_env
from test_http_callers import answer_in, said, session, stateless

A = "a" * 8 + uuid.uuid4().hex  # 40 characters
B = "b" * 8 + uuid.uuid4().hex


@contextlib.contextmanager
def server(state, workspace, *flags):
    """`serve --http` on a free loopback port with this state dir and workspace; yields the
    process (its stderr drained into `.log`) and the MCP URL. SIGTERM at exit, if it still runs."""
    proc = subprocess.Popen(
        [BIN, "serve", "--http", "127.0.0.1:0", "--workspace", workspace, "--state-dir", state,
         *flags],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        url, first = None, b""
        for line in iter(proc.stderr.readline, b""):
            first += line
            m = re.search(rb"at (http://\S+/mcp)", line)
            if m:
                url = m.group(1).decode()
                break
        proc.log = Log(proc.stderr, first)
        assert url, first.decode(errors="replace")
        yield proc, url
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


CALLS = iter(range(100, 1 << 30))


def session_call(url, sid, tool, arguments):
    """A tools/call in the client session `sid`, with a request id of its own (calls in flight
    at once must not share one): its result."""
    n = next(CALLS)
    call = {"jsonrpc": "2.0", "id": n, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments}}
    status, _, body = raw(url, call, sid)
    assert status == 200, (status, body)
    return answer_in(body, n)["result"]


def get(url, headers=None, method="GET"):
    """(status, body) of a plain request."""
    req = urllib.request.Request(url, method=method)
    for k, v in (headers or {}).items():
        req.add_header(k, v)
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def base(url):
    return url[: -len("/mcp")]


def in_thread(fn, *args):
    """Runs fn(*args) on a thread; returns a function that joins it and gives its result."""
    out = {}

    def run():
        try:
            out["value"] = fn(*args)
        except BaseException as e:  # noqa: BLE001 - handed to the test's thread
            out["error"] = e

    thread = threading.Thread(target=run, daemon=True)
    thread.start()

    def join(timeout=60):
        thread.join(timeout)
        assert not thread.is_alive(), "the call did not answer"
        if "error" in out:
            raise out["error"]
        return out["value"]

    return join


def test_probes_and_the_drain_after_sigterm():
    tag = f"drain-{uuid.uuid4().hex[:8]}"
    grace = 15
    with tempfile.TemporaryDirectory() as ws, private_dir() as state:
        with server(state, ws, "--drain-grace", str(grace)) as (proc, url):
            root = base(url)
            # No token, and any Host: a kubelet names the pod's IP.
            for path in ("/livez", "/readyz"):
                assert get(root + path) == (200, "ok\n")
                assert get(root + path, {"Host": "10.1.2.3:8888"}) == (200, "ok\n")
            assert get(root + "/readyz", method="POST")[0] == 405

            token = open(os.path.join(state, "token")).read().strip()
            sid = session(url, token)
            started = session_call(
                url, sid, "terminal",
                {"command": "sleep 300", "background": True, "env": {"DRAINTAG": tag}},
            )
            job = started["structuredContent"]["job_id"]
            assert wait_until(lambda: len(with_env("DRAINTAG", tag)) == 1)
            # A call in flight that ends within the grace, and one that waits for the job.
            working = in_thread(
                session_call, url, sid, "terminal", {"command": "sleep 3; echo finished"})
            waiting = in_thread(
                session_call, url, sid, "task_wait", {"id": job, "timeout_ms": 120000})
            time.sleep(0.5)

            proc.send_signal(signal.SIGTERM)
            signalled = time.monotonic()
            assert wait_until(lambda: get(root + "/readyz")[0] == 503, within=2)
            status, body = get(root + "/readyz")
            assert status == 503 and body.startswith("draining"), body
            assert get(root + "/livez") == (200, "ok\n")
            auth = {"Authorization": f"Bearer {token}"}
            status, _, body = raw(url, INIT, auth)
            assert status == 503 and "shutting down" in body, (status, body)
            refused = session_call(url, sid, "terminal", {"command": "echo new"})
            assert refused.get("isError") and "shutting down" in said(refused), refused

            answered = working()
            assert not answered.get("isError"), said(answered)
            assert answered["structuredContent"]["stdout"] == "finished\n", said(answered)
            waited = waiting()
            assert "stopped: the server was shut down" in said(waited), said(waited)
            assert waited["structuredContent"]["job"]["state"] == "stopped", waited

            assert proc.wait(timeout=grace) == 0, proc.log.text()
            assert time.monotonic() - signalled < grace, "the drain took the whole grace"
            assert not with_env("DRAINTAG", tag), "the job outlived the server"
            assert "stopped job" in proc.log.text() and "the server was shut down" in proc.log.text()


TOOLS = {"terminal", "task_list", "task_output", "task_wait", "task_stop", "shell_open",
         "shell_send", "shell_read", "shell_list", "shell_close", "other"}
LABELS = {
    "tool": TOOLS,
    "outcome": {"ok", "error", "invalid", "input_required", "task"},
    "transport": {"stdio", "http", "sessionless"},
    "kind": {"command", "shell"},
    "op": {"write", "read"},
}


def scrape(url, token):
    status, body = get(base(url) + "/metrics", {"Authorization": f"Bearer {token}"})
    assert status == 200, body
    families = {f.name: f for f in text_string_to_metric_families(body)}
    return body, families


def value(families, family, sample, **labels):
    for s in families[family].samples:
        if s.name == sample and all(s.labels.get(k) == v for k, v in labels.items()):
            return s.value
    raise AssertionError(f"no {sample} {labels}")


def test_metrics_are_prometheus_text_with_bounded_labels_that_move_when_calls_run():
    tag = f"metrics-{uuid.uuid4().hex[:8]}"
    with tempfile.TemporaryDirectory() as ws, private_dir() as state:
        with server(state, ws) as (proc, url):
            token = open(os.path.join(state, "token")).read().strip()
            assert get(base(url) + "/metrics")[0] == 401
            bad_host = {"Authorization": f"Bearer {token}", "Host": "evil.example"}
            assert get(base(url) + "/metrics", bad_host)[0] == 403

            _, before = scrape(url, token)
            kinds = {
                "agentty_sessions": "gauge",
                "agentty_sessions_opened": "counter",
                "agentty_tool_calls": "counter",
                "agentty_tool_call_duration_seconds": "histogram",
                "agentty_tool_calls_in_flight": "gauge",
                "agentty_jobs_running": "gauge",
                "agentty_spawn_failures": "counter",
                "agentty_guard_blocks": "counter",
                "agentty_sandbox_refusals": "counter",
                "agentty_network_refusals": "counter",
                "agentty_view_viewers": "gauge",
                "agentty_ready": "gauge",
                "process_resident_memory_bytes": "gauge",
            }
            for name, kind in kinds.items():
                assert before[name].type == kind, (name, before[name].type)
            ok = lambda fams: value(fams, "agentty_tool_calls", "agentty_tool_calls_total",  # noqa: E731
                                    tool="terminal", outcome="ok")
            count = lambda fams: value(fams, "agentty_tool_call_duration_seconds",  # noqa: E731
                                       "agentty_tool_call_duration_seconds_count", tool="terminal")

            sid = session(url, token)
            done = session_call(url, sid, "terminal", {"command": "echo hi"})
            assert not done.get("isError")
            blocked = session_call(url, sid, "terminal", {"command": "rm -rf /"})
            assert blocked.get("isError")
            session_call(url, sid, "terminal",
                         {"command": f"sleep 300 # {tag}", "background": True,
                          "env": {"METRICSTAG": tag}})
            session_call(url, sid, "task_list", {})
            body, after = scrape(url, token)

            assert ok(after) == ok(before) + 2, (ok(before), ok(after))
            assert count(after) == count(before) + 3
            assert value(after, "agentty_tool_calls", "agentty_tool_calls_total",
                         tool="terminal", outcome="error") >= 1
            assert value(after, "agentty_tool_calls", "agentty_tool_calls_total",
                         tool="task_list", outcome="ok") == 1
            blocks = [s for s in after["agentty_guard_blocks"].samples]
            assert sum(s.value for s in blocks) >= 1 and all(
                re.fullmatch(r"[a-z0-9-]+", s.labels["rule"]) for s in blocks), blocks
            assert value(after, "agentty_jobs_running", "agentty_jobs_running", kind="command") == 1
            assert value(after, "agentty_sessions", "agentty_sessions", transport="http") == 1
            assert value(after, "agentty_sessions_opened", "agentty_sessions_opened_total",
                         transport="http") == 1
            assert value(after, "agentty_ready", "agentty_ready") == 1
            assert value(after, "process_resident_memory_bytes",
                         "process_resident_memory_bytes") > 1 << 20
            buckets = [s for s in after["agentty_tool_call_duration_seconds"].samples
                       if s.name.endswith("_bucket") and s.labels["tool"] == "terminal"]
            assert [s.value for s in buckets] == sorted(s.value for s in buckets)
            assert buckets[-1].labels["le"] == "+Inf" and buckets[-1].value == count(after)

            # Bounded labels: only these names, each from its closed set.
            for family in after.values():
                for s in family.samples:
                    for label, v in s.labels.items():
                        if label == "le":
                            assert v == "+Inf" or float(v) > 0
                        elif label == "rule":
                            assert re.fullmatch(r"[a-z0-9-]+", v), v
                        else:
                            assert v in LABELS[label], (s.name, label, v)
            for secret in (token, tag, "sleep", "echo hi", sid["Mcp-Session-Id"], ws):
                assert secret not in body, secret

            # A refusal of the network policy counts (a UDP socket: refused before anything
            # is sent).
            refusals = lambda fams: value(fams, "agentty_network_refusals",  # noqa: E731
                                          "agentty_network_refusals_total")
            udp = session_call(url, sid, "terminal", {
                "command": "python3 -c 'import socket; socket.socket(socket.AF_INET, "
                           "socket.SOCK_DGRAM)'"})
            assert "2010" in said(udp), said(udp)
            _, later = scrape(url, token)
            assert refusals(later) == refusals(after) + 1, (refusals(after), refusals(later))


# What agent-sandbox's sandbox-router does to a request (sandbox_router.py, _proxy_headers and
# _resolve_target): its own bearer token is checked and consumed, Host, Authorization, the
# hop-by-hop headers and its routing headers are dropped, and the request goes to
# <X-Sandbox-ID>.<X-Sandbox-Namespace>.svc.cluster.local:<X-Sandbox-Port>, that name as its Host.
ROUTER_TOKEN = "router-" + uuid.uuid4().hex
HOP_BY_HOP = {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te",
              "trailers", "transfer-encoding", "upgrade"}
ROUTING = {"x-sandbox-id", "x-sandbox-namespace", "x-sandbox-port", "x-sandbox-pod-ip",
           "x-sandbox-timeout"}


class Router(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    upstream = 0  # the pod's port on this machine (the class is made per test)

    def log_message(self, *args):
        pass

    def do_GET(self):
        self.forward()

    def do_POST(self):
        self.forward()

    def do_DELETE(self):
        self.forward()

    def forward(self):
        if self.headers.get("Authorization") != f"Bearer {ROUTER_TOKEN}":
            self.send_response(401)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        sandbox = self.headers.get("X-Sandbox-ID", "")
        namespace = self.headers.get("X-Sandbox-Namespace", "default")
        port = self.headers.get("X-Sandbox-Port", "8888")
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        dropped = {"host", "authorization"} | HOP_BY_HOP | ROUTING
        upstream = http.client.HTTPConnection("127.0.0.1", self.upstream, timeout=120)
        upstream.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
        upstream.putheader("Host", f"{sandbox}.{namespace}.svc.cluster.local:{port}")
        for k, v in self.headers.items():
            if k.lower() not in dropped:
                upstream.putheader(k, v)
        upstream.putheader("X-Forwarded-For", self.client_address[0])
        upstream.endheaders(body)
        response = upstream.getresponse()
        self.send_response_only(response.status)
        for k, v in response.getheaders():
            if k.lower() not in HOP_BY_HOP | {"content-length"}:
                self.send_header(k, v)
        if response.status in (204, 304) or self.command == "HEAD":
            self.send_header("Content-Length", "0")
            self.end_headers()
            upstream.close()
            return
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        while chunk := response.read1(65536):
            self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()
        upstream.close()


@contextlib.contextmanager
def router(upstream_url):
    handler = type("PodRouter", (Router,), {"upstream": int(upstream_url.rsplit(":", 1)[1].split("/")[0])})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_an_mcp_client_through_a_router_that_strips_authorization_and_host():
    tag = f"router-{uuid.uuid4().hex[:8]}"
    with tempfile.TemporaryDirectory() as ws, private_dir() as state:
        with server(state, ws, "--token-header", "X-Agentty-Token",
                    "--allow-host", "*.agents.svc.cluster.local") as (proc, url):
            token = open(os.path.join(state, "token")).read().strip()
            with router(url) as front:
                routing = {"Authorization": f"Bearer {ROUTER_TOKEN}", "X-Sandbox-ID": "sb-1",
                           "X-Sandbox-Namespace": "agents", "X-Sandbox-Port": "8888"}
                # The router consumed Authorization: the token must come in the named header.
                assert raw(front + "/mcp", INIT, routing)[0] == 401
                assert raw(front + "/mcp", INIT, {**routing, "X-Agentty-Token": "0" * 64})[0] == 401
                # A namespace the wildcard does not cover is another Host.
                other = {**routing, "X-Sandbox-Namespace": "other", "X-Agentty-Token": token}
                assert raw(front + "/mcp", INIT, other)[0] == 403
                # The probes pass through it too, whatever the Host.
                assert get(front + "/readyz", routing) == (200, "ok\n")

                async def body():
                    headers = {**routing, "X-Agentty-Token": token}
                    http = create_mcp_http_client(headers=headers)
                    async with http:
                        async with streamable_http_client(front + "/mcp", http_client=http) as (
                            read, write,
                        ):
                            async with ClientSession(read, write) as s:
                                await s.initialize()
                                r = await s.call_tool("terminal", {"command": "echo through"})
                                assert r.structured_content["stdout"] == "through\n", text(r)
                                r = await s.call_tool(
                                    "terminal",
                                    {"command": "sleep 300", "background": True,
                                     "env": {"ROUTERTAG": tag}},
                                )
                                job = r.structured_content["job_id"]
                                listed = await s.call_tool("task_list", {})
                                assert job in text(listed), text(listed)
                                assert wait_until(lambda: len(with_env("ROUTERTAG", tag)) == 1)
                    # The client's DELETE went through the router: the session's job is gone.
                    assert wait_until(lambda: not with_env("ROUTERTAG", tag))

                asyncio.run(body())


def test_a_restart_brings_the_session_back_and_says_which_jobs_were_lost():
    tokens = private_file(f"alice {A}\nbob {B}\n")
    secret = "SECRET" + uuid.uuid4().hex[:8]
    tag = f"restart-{uuid.uuid4().hex[:8]}"
    with tempfile.TemporaryDirectory() as ws, private_dir() as state:
        flags = ("--token-file", tokens)
        with server(state, ws, *flags) as (proc, url):
            sid = session(url, A)
            running = session_call(url, sid, "terminal", {
                "command": f"sleep 300 || echo --token={secret}", "background": True,
                "env": {"RESTARTTAG": tag, "API_KEY": secret}})
            assert running["structuredContent"]["job_id"] == "t1", said(running)
            ended = session_call(url, sid, "terminal", {"command": "echo done", "background": True})
            assert ended["structuredContent"]["job_id"] == "t2"
            session_call(url, sid, "task_wait", {"id": "t2"})
            opened = session_call(url, sid, "shell_open", {})
            assert opened["structuredContent"]["id"] == "s1", said(opened)
            handle = stateless(url, B, "terminal", {"command": "sleep 300", "background": True,
                                                   "env": {"RESTARTTAG": tag}})
            handle = handle["structuredContent"]["job_id"]
            assert wait_until(lambda: len(with_env("RESTARTTAG", tag)) >= 3)
            # Killed, no drain: what ran is lost.
            proc.kill()
            proc.wait()
            assert wait_until(lambda: not with_env("RESTARTTAG", tag))

        kept = os.path.join(state, "kept")
        for name in os.listdir(kept):
            path = os.path.join(kept, name)
            assert oct(os.stat(path).st_mode & 0o777) == "0o600", name
            content = open(path).read()
            for never in (secret, A, B, tag):
                assert never not in content, (name, never)

        with server(state, ws, *flags) as (proc, url):
            listed = session_call(url, sid, "task_list", {})
            words = said(listed)
            assert re.search(r"t1 \[command\] lost at the restart of \S+Z · sleep …", words), words
            assert "t2 [command] exited 0, before the restart" in words, words
            assert "s1 [shell] lost at the restart of" in words, words
            assert len(re.findall(r"^[ts]\d+ \[\w+\] .*restart", words, re.M)) == 3, words
            output = session_call(url, sid, "task_output", {"id": "t1"})
            assert output.get("isError"), output
            assert re.match(r"t1 was lost when the server restarted at \S+Z: `sleep …` was running",
                            said(output)), said(output)
            sent = session_call(url, sid, "shell_send", {"id": "s1", "input": "pwd\n"})
            assert sent.get("isError") and said(sent).startswith("s1 was lost"), said(sent)
            again = session_call(url, sid, "terminal", {"command": "sleep 300", "background": True,
                                                        "env": {"RESTARTTAG": tag}})
            assert again["structuredContent"]["job_id"] == "t3", said(again)
            # Another caller naming the session: as a session that does not exist.
            foreign = {**sid, "Authorization": f"Bearer {B}"}
            call = {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                    "params": {"name": "task_list", "arguments": {}}}
            assert raw(url, call, foreign)[0] == 404
            # The caller without a session: its handle is lost, not unknown.
            lost = stateless(url, B, "task_output", {"id": handle})
            assert lost.get("isError") and said(lost).startswith(f"{handle} was lost"), lost
            unknown = stateless(url, B, "task_output", {"id": "t-" + "0" * 24})
            assert "no job" in said(unknown), unknown
            # Drained this time: what ran was stopped, and says so after the next start.
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=30) == 0

        with server(state, ws, *flags) as (proc, url):
            words = said(session_call(url, sid, "task_list", {}))
            assert re.search(r"t3 \[command\] stopped: the server was shut down at \S+Z", words), words
            assert "t1 [command] lost at the restart of" in words, words
            stopped = session_call(url, sid, "task_output", {"id": "t3"})
            assert said(stopped).startswith("t3 was stopped when the server was shut down"), stopped
            # Its DELETE forgets it: the file goes.
            status, _, _ = raw(url, None, sid, method="DELETE")
            assert status in (200, 202, 204), status
            assert not os.path.exists(os.path.join(kept, f"session-{sid['Mcp-Session-Id']}"))


def test_sessions_brought_back_after_restarts_count_against_the_session_caps():
    """Review 36, M3: a session brought back after a restart was not counted, so a caller
    opened one per restart, brought them all back, and held the whole cap: another caller's
    `initialize` got 503. Brought back, a session counts as one opened does."""
    tokens = private_file(f"alice {A}\nbob {B}\n")
    call = {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": {"name": "task_list", "arguments": {}}}
    with tempfile.TemporaryDirectory() as ws, private_dir() as state:
        # Two places, two callers: a share of one each.
        flags = ("--token-file", tokens, "--max-sessions", "2")
        sessions = []
        for _ in range(2):
            with server(state, ws, *flags) as (proc, url):
                sessions.append(session(url, A))
                session_call(url, sessions[-1], "task_list", {})
                proc.kill()
                proc.wait()
        with server(state, ws, *flags) as (proc, url):
            assert raw(url, call, sessions[0])[0] == 200
            status, _, said_back = raw(url, call, sessions[1])
            assert status == 503, (status, said_back)
            assert "share" in said_back or "sessions are live" in said_back, said_back
            status, _, body = raw(url, INIT, {"Authorization": f"Bearer {B}"})
            assert status == 200, (status, body)
    os.unlink(tokens)
