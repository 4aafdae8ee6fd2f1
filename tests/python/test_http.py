"""`agentty serve --http`: the official MCP Python SDK's streamable HTTP client, and plain HTTP
requests for what must be refused (docs/BEHAVIOUR.md §9)."""

import asyncio
import contextlib
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

import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from private_dirs import private_dir, private_file

BIN = os.environ.get("AGENTTY_BIN", "target/debug/agentty")
# The processes `http_server` started, last one last: the process a host starts (the watchdog).
SERVERS = []
INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    },
}


def text(result):
    return "".join(c.text for c in result.content if getattr(c, "type", "") == "text")


def with_env(var, value):
    """Pids of live processes whose environment has var=value."""
    wanted = f"{var}={value}".encode()
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if wanted in f.read().split(b"\0"):
                    with open(f"/proc/{pid}/stat") as s:
                        if s.read().rsplit(")", 1)[1].split()[0] not in "ZX":
                            found.append(int(pid))
        except OSError:
            pass
    return found


def wait_until(predicate, within=20.0):
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


class Log:
    """What a server writes on stderr, drained as it comes (so it never blocks on a full pipe):
    every line counted, the first `KEEP_BYTES` kept."""

    KEEP_BYTES = 1 << 20

    def __init__(self, stream, first):
        self.kept = bytearray(first)
        self.lines = first.count(b"\n")
        self._thread = threading.Thread(target=self._drain, args=(stream,), daemon=True)
        self._thread.start()

    def _drain(self, stream):
        while chunk := stream.read1(1 << 20):
            self.lines += chunk.count(b"\n")
            room = self.KEEP_BYTES - len(self.kept)
            if room > 0:
                self.kept += chunk[:room]

    def text(self):
        return self.kept.decode(errors="replace")


def limit_fds(n):
    """For `preexec_fn`: the child may hold at most `n` file descriptors."""
    import resource

    return lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (n, n))


@contextlib.contextmanager
def http_server(*flags, listen="127.0.0.1:0", env=None, nofile=None):
    """A `serve --http` on `listen` (None: a bare `--http`); yields (url, token, state dir). Its
    stderr is `SERVERS[-1].log` (a `Log`); `env` is added to its environment, `nofile` caps its
    file descriptors."""
    address = [listen] if listen else []
    with tempfile.TemporaryDirectory() as ws, private_dir() as state:
        proc = subprocess.Popen(
            [BIN, "serve", "--http", *address, "--workspace", ws, "--state-dir", state, *flags],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env={**os.environ, **(env or {})},
            preexec_fn=limit_fds(nofile) if nofile else None,
        )
        SERVERS.append(proc)
        try:
            url, first = None, b""
            for line in iter(proc.stderr.readline, b""):
                first += line
                m = re.search(rb"at (http://\S+/mcp)", line)
                if m:
                    url = m.group(1).decode()
                    break
            proc.log = Log(proc.stderr, first)
            assert url, "the server printed no address"
            given = list(flags)[list(flags).index("--token-file") + 1] if "--token-file" in flags else None
            with open(given or os.path.join(state, "token")) as f:
                token = f.read().strip()
            if given is None:
                assert oct(os.stat(os.path.join(state, "token")).st_mode & 0o777) == "0o600"
            yield url, token, state
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()


@contextlib.asynccontextmanager
async def client(url, token):
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    async with http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                yield s


def raw(url, body=None, headers=None, method="POST"):
    """(status, headers, body text) of one plain HTTP request."""
    data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method)
    req.add_header("Content-Type", "application/json")
    req.add_header("Accept", "application/json, text/event-stream")
    for k, v in (headers or {}).items():
        req.add_header(k, v)
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            return r.status, r.headers, r.read(65536).decode(errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read().decode(errors="replace")


def raw_session(url, auth):
    """A client session opened with plain requests: the headers that name it (with `auth`)."""
    status, headers, _ = raw(url, INIT, auth)
    assert status == 200
    sid = {**auth, "Mcp-Session-Id": headers["Mcp-Session-Id"]}
    raw(url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, sid)
    return sid


def test_two_sessions_each_see_only_their_own_jobs_and_delete_stops_them():
    tag = f"http-{uuid.uuid4().hex[:8]}"

    async def body(url, token):
        async with client(url, token) as b:
            async with client(url, token) as a:
                r = await a.call_tool("terminal", {"command": "echo hello"})
                assert r.structured_content["stdout"] == "hello\n", text(r)
                r = await a.call_tool(
                    "terminal",
                    {"command": "sleep 300", "background": True, "env": {"HTTPTAG": tag}},
                )
                job = r.structured_content["job_id"]
                opened = await a.call_tool("shell_open", {})
                shell = opened.structured_content["id"]
                sent = await a.call_tool("shell_send", {"id": shell, "input": "echo in-shell\n"})
                assert "in-shell" in text(sent), text(sent)
                assert wait_until(lambda: len(with_env("HTTPTAG", tag)) >= 1)

                listed = await b.call_tool("task_list", {})
                assert job not in json.dumps(listed.structured_content), text(listed)
                assert "sleep 300" not in text(listed)
                foreign = await b.call_tool("task_stop", {"id": job})
                never = await b.call_tool("task_stop", {"id": "t99"})
                assert foreign.is_error and never.is_error
                assert text(foreign).replace(job, "ID") == text(never).replace("t99", "ID")
                shells = await b.call_tool("shell_list", {})
                assert shell not in json.dumps(shells.structured_content)
                assert wait_until(lambda: len(with_env("HTTPTAG", tag)) >= 1)
            # a's context sent DELETE: its job is stopped; b goes on.
            assert wait_until(lambda: not with_env("HTTPTAG", tag)), with_env("HTTPTAG", tag)
            r = await b.call_tool("terminal", {"command": "echo still"})
            assert r.structured_content["stdout"] == "still\n"

    with http_server() as (url, token, _):
        asyncio.run(body(url, token))


def test_what_lacks_the_token_or_comes_from_elsewhere_is_refused_and_runs_nothing():
    marker = f"/tmp/agentty-http-{uuid.uuid4().hex}"
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "terminal", "arguments": {"command": f"touch {marker}"}},
    }
    with http_server() as (url, token, _):
        auth = {"Authorization": f"Bearer {token}"}
        status, headers, _ = raw(url, INIT)
        assert status == 401 and headers.get("WWW-Authenticate") == "Bearer"
        assert raw(url, INIT, {"Authorization": "Bearer " + "0" * 64})[0] == 401
        assert raw(url, INIT, {"Authorization": token})[0] == 401
        assert raw(f"{url}?token={token}", INIT)[0] == 401
        assert raw(url, call)[0] == 401
        assert raw(url, INIT, {**auth, "Origin": "http://evil.example"})[0] == 403
        assert raw(url, INIT, {**auth, "Host": "evil.example"})[0] == 403
        assert raw(url, b"x" * (5 * 1024 * 1024), auth)[0] == 413
        assert raw(url.replace("/mcp", "/other"), INIT, auth)[0] == 404
        assert raw(url, b"{not json", auth)[0] in (400, 415, 422)
        unknown = {**auth, "Mcp-Session-Id": str(uuid.uuid4())}
        assert raw(url, call, unknown)[0] in (400, 404)
        assert raw(url, None, unknown, method="DELETE")[0] == 404
        time.sleep(0.5)
        assert not os.path.exists(marker), "a refused request ran a command"
        # The same call with the token and a session does run.
        sid = raw_session(url, auth)
        status, _, _ = raw(url, call, sid)
        assert status == 200 and os.path.exists(marker)
        os.unlink(marker)


def test_a_quick_reply_comes_whole_and_a_long_one_streams():
    def call(n, arguments):
        return {"jsonrpc": "2.0", "id": n, "method": "tools/call",
                "params": {"name": "terminal", "arguments": arguments}}

    with http_server() as (url, token, _):
        auth = {"Authorization": f"Bearer {token}"}
        sid = raw_session(url, auth)
        # Done within the hold (20 ms): the head waited for it, and the reply is one body of
        # known length. A trivial call is that quick, but not every one on a loaded CI machine
        # (the caller's first also makes its namespace): of ten, one must come whole, and each
        # must be whole or streamed, never both.
        whole = 0
        for n in range(2, 12):
            status, headers, body = raw(url, call(n, {"argv": ["true"]}), sid)
            assert status == 200 and '"exit_code":0' in body, body
            assert headers["Content-Type"].startswith("text/event-stream"), headers
            if "Content-Length" in headers:
                assert headers["Content-Length"] == str(len(body.encode())), headers
                assert "Transfer-Encoding" not in headers, headers
                whole += 1
            else:
                assert headers.get("Transfer-Encoding") == "chunked", headers
        assert whole >= 1, "no quick reply came whole"
        # Longer than the hold: the head goes first and the events stream, as before.
        status, headers, body = raw(url, call(3, {"command": "sleep 0.5; echo done"}), sid)
        assert status == 200 and "done" in body and '"exit_code":0' in body, body
        assert headers.get("Transfer-Encoding") == "chunked" and "Content-Length" not in headers


def test_a_client_that_vanished_loses_its_jobs_after_the_grace():
    tag = f"http-grace-{uuid.uuid4().hex[:8]}"
    # 5 s: the job must be seen running before the grace ends, even on a loaded machine.
    with http_server("--session-grace", "5") as (url, token, _):
        auth = {"Authorization": f"Bearer {token}"}
        sid = raw_session(url, auth)
        call = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {
                "name": "terminal",
                "arguments": {"command": "sleep 300", "background": True, "env": {"HTTPTAG": tag}},
            },
        }
        assert raw(url, call, sid)[0] == 200
        # Polled, not read once: a clean-clone CI run once found no such process right after
        # the call (a process in the middle of `exec` shows no environment for a moment).
        assert wait_until(lambda: with_env("HTTPTAG", tag), within=4), "the job did not start"
        # No request, no DELETE: the session ends after the grace, and its job with it.
        assert wait_until(lambda: not with_env("HTTPTAG", tag), within=30)


def test_delete_answers_once_the_sessions_calls_jobs_and_shells_are_stopped():
    """DELETE of a session stops what it runs before it answers: a call still in flight (rmcp
    alone would let it run on for its drain time after the answer), a background job and a
    shell's command, each with a setsid escapee; and the job's spill directory is gone. Two
    DELETEs at once both answer only then, and a request rmcp answers without the session it
    names (per-request `_meta`) does not make the DELETE miss the session."""
    tag = f"http-delete-{uuid.uuid4().hex[:8]}"
    with http_server() as (url, token, state):
        auth = {"Authorization": f"Bearer {token}"}
        sid = raw_session(url, auth)

        def call(n, name, arguments, headers=sid, meta=None):
            params = {"name": name, "arguments": arguments}
            if meta:
                params["_meta"] = meta
            body = {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": params}
            return raw(url, body, headers)

        tree = "setsid sleep 301 >/dev/null 2>&1 & sleep 302"
        env = {"HTTPTAG": tag}
        # Over the job's 256 KB ring first: its output spills to the session's directory.
        flood = "head -c 400000 /dev/zero | tr '\\0' x; echo; " + tree
        assert call(2, "terminal", {"command": flood, "background": True, "env": env})[0] == 200
        status, _, opened = call(3, "shell_open", {"env": env})
        assert status == 200, opened
        shell = re.search(r'"id":"(s\d+)"', opened).group(1)
        assert call(4, "shell_send", {"id": shell, "input": tree + " &\n"})[0] == 200
        in_flight = {}
        waiting = threading.Thread(
            target=lambda: in_flight.update(
                answer=call(5, "terminal", {"command": tree, "timeout_ms": 60000, "env": env})
            )
        )
        waiting.start()
        # Answered without the session although it names it: the session stays the one a
        # DELETE of its id ends.
        meta = {"io.modelcontextprotocol/protocolVersion": "2025-06-18",
                "io.modelcontextprotocol/clientCapabilities": {}}
        status, _, answer = call(6, "terminal", {"command": "echo aside"},
                                 {**sid, "MCP-Protocol-Version": "2025-06-18"}, meta)
        assert status == 200 and "aside" in answer, answer
        # Two processes each: the call, the job and the shell's command (the shell has the tag
        # too); polled, since a process in the middle of `exec` shows no environment.
        assert wait_until(lambda: len(with_env("HTTPTAG", tag)) >= 7), with_env("HTTPTAG", tag)
        spill = os.path.join(state, "spill")
        assert wait_until(lambda: os.path.isdir(spill) and os.listdir(spill)), "nothing spilled"
        answers = []

        def delete():
            status, _, _ = raw(url, None, sid, method="DELETE")
            # Looked at the moment the answer came: nothing waited for.
            answers.append((status, with_env("HTTPTAG", tag)))

        deletes = [threading.Thread(target=delete) for _ in range(2)]
        for d in deletes:
            d.start()
        for d in deletes:
            d.join(timeout=30)
        assert len(answers) == 2
        assert any(status == 204 for status, _ in answers), answers
        for status, left in answers:
            assert status in (204, 404) and left == [], answers
        waiting.join(timeout=20)
        status, _, answer = in_flight["answer"]
        assert status == 200 and "the process tree was stopped" in answer, answer
        # The session's directory is gone; the server's and its caller's (made for their read
        # rules, docs/BEHAVIOUR.md §5) stay, empty, while the server runs.
        left = [os.path.join(d, e) for d in os.listdir(spill)
                for e in os.listdir(os.path.join(spill, d))]
        assert left == [], left


def test_the_session_cap_refuses_the_next_one_with_a_reason():
    async def body(url, token):
        auth = {"Authorization": f"Bearer {token}"}
        async with client(url, token):
            status, _, said = raw(url, INIT, auth)
            assert status == 503, said
            assert "--max-sessions" in said
        # The first one ended (DELETE): there is room again.
        assert wait_until(lambda: raw(url, INIT, auth)[0] == 200)

    with http_server("--max-sessions", "1") as (url, token, _):
        asyncio.run(body(url, token))


def test_sigkill_of_the_server_with_three_sessions_leaves_nothing():
    tag = f"http-kill-{uuid.uuid4().hex[:8]}"

    async def body(url, token, kill):
        async with contextlib.AsyncExitStack() as stack:
            for _ in range(3):
                s = await stack.enter_async_context(client(url, token))
                env = {"HTTPTAG": tag}
                command = "(setsid sleep 300 >/dev/null 2>&1 &); sleep 300"
                await s.call_tool(
                    "terminal", {"command": command, "background": True, "env": env}
                )
                await s.call_tool("shell_open", {"env": env})
            # Per session: a job, its setsid escapee, a shell.
            assert wait_until(lambda: len(with_env("HTTPTAG", tag)) >= 9), with_env("HTTPTAG", tag)
            kill()
            assert wait_until(lambda: not with_env("HTTPTAG", tag)), with_env("HTTPTAG", tag)

    with http_server() as (url, token, state):
        watchdog = SERVERS[-1]
        asyncio.run(body(url, token, lambda: os.kill(watchdog.pid, signal.SIGKILL)))


def test_a_given_token_file_may_be_a_symlink_but_must_be_private():
    with private_dir() as secrets:
        # As Kubernetes mounts a secret: the file is a symlink into a data directory.
        os.mkdir(os.path.join(secrets, "..data"))
        real = os.path.join(secrets, "..data", "token")
        with open(real, "w") as f:
            f.write(uuid.uuid4().hex + uuid.uuid4().hex + "\n")
        os.chmod(real, 0o400)
        link = os.path.join(secrets, "token")
        os.symlink(os.path.join("..data", "token"), link)
        with http_server("--token-file", link) as (url, token, state):
            assert raw(url, INIT, {"Authorization": f"Bearer {token}"})[0] == 200
            assert not os.path.exists(os.path.join(state, "token"))
        os.chmod(real, 0o644)
        with tempfile.TemporaryDirectory() as ws:
            done = subprocess.run(
                [BIN, "serve", "--http", "127.0.0.1:0", "--workspace", ws, "--token-file", link],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=20,
            )
        assert done.returncode != 0
        assert "not a private file" in done.stderr, done.stderr


def test_progress_cancellation_and_hand_over_work_over_http():
    tag = f"http-cancel-{uuid.uuid4().hex[:8]}"

    async def body(url, token):
        async with client(url, token) as s:
            seen = []

            async def on_progress(progress, total, message):
                seen.append(message)

            r = await s.call_tool(
                "terminal",
                {"command": "echo tick1; sleep 2.2"},
                progress_callback=on_progress,
            )
            assert r.structured_content["status"] == "success"
            assert seen and all(m.endswith("tick1") for m in seen), seen

            # Cancelling the request (the SDK sends notifications/cancelled) stops the tree.
            call = asyncio.ensure_future(
                s.call_tool("terminal", {"command": "sleep 300", "env": {"HTTPTAG": tag}})
            )
            assert await asyncio.to_thread(wait_until, lambda: bool(with_env("HTTPTAG", tag)))
            call.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await call
            assert await asyncio.to_thread(wait_until, lambda: not with_env("HTTPTAG", tag))

            # A command that reaches its timeout moves to the background, output kept.
            r = await s.call_tool(
                "terminal",
                {
                    "command": "echo early; sleep 1; echo late",
                    "timeout_ms": 300,
                    "on_timeout": "background",
                },
            )
            job = r.structured_content["job_id"]
            w = await s.call_tool("task_wait", {"id": job, "timeout_ms": 10000})
            out = await s.call_tool("task_output", {"id": job, "since": 0})
            assert "early" in text(out) and "late" in text(out), text(w) + text(out)

    with http_server() as (url, token, _):
        asyncio.run(body(url, token))


def test_no_escalation_over_http_since_a_confined_command_could_approve_its_own():
    """The attack: a confined command reads the token (the host's config that holds it, or the
    token file where it cannot be covered without CAP_SYS_ADMIN), connects to the endpoint, opens a session that claims elicitation and approves its
    own request to run unconfined. So nothing is escalated over HTTP: the question is never asked
    and the command does not run."""
    import mcp.types as types

    target = os.path.join(os.path.expanduser("~"), f"agentty-http-escalate-{uuid.uuid4().hex[:8]}")
    asked = []

    async def approve(context, params):
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"approve": True})

    args = {
        "command": f"echo x > {target}",
        "sandbox_permissions": "require_escalated",
        "justification": "the test writes outside the workspace",
    }

    async def body(url, token, state):
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        async with http:
            async with streamable_http_client(url, http_client=http) as (read, write):
                async with ClientSession(read, write, elicitation_callback=approve) as s:
                    await s.initialize()
                    refused = await s.call_tool("terminal", args)
                    assert refused.is_error, text(refused)
                    assert "not offered over HTTP" in text(refused), text(refused)
                    shell = await s.call_tool("shell_open", {k: v for k, v in args.items() if k != "command"})
                    assert shell.is_error and "not offered over HTTP" in text(shell), text(shell)

    try:
        with http_server() as (url, token, state):
            asyncio.run(body(url, token, state))
        assert asked == [], asked
        assert not os.path.exists(target)
    finally:
        if os.path.exists(target):
            os.unlink(target)


def test_the_config_files_http_section_sets_the_defaults_of_a_bare_http_flag():
    with tempfile.TemporaryDirectory() as configs:
        config = os.path.join(configs, "config.toml")
        with open(config, "w") as f:
            f.write('[http]\nlisten = "127.0.0.1:0"\nmax_sessions = 1\n')
        with http_server("--config", config, listen=None) as (url, token, _):
            assert not url.endswith(":7337/mcp"), url
            auth = {"Authorization": f"Bearer {token}"}
            assert raw(url, INIT, auth)[0] == 200
            status, _, said = raw(url, INIT, auth)
            assert status == 503 and "--max-sessions" in said, said


def test_the_banner_names_the_token_file_and_no_log_line_holds_a_token_or_the_view_key():
    """stderr lands in files (a host's MCP log, nohup.out, the journal) that a confined command
    can read: the banner says where the token is and how to paste it, never what it is; nor does
    any log line at any level, through a session, a tool call, a refusal and the view."""

    def pasted(line):
        """What the banner's `--header "Authorization: Bearer …"` gives when a shell reads it."""
        m = re.search(r'--header "Authorization: Bearer (.*)"$', line)
        assert m, line
        return subprocess.run(
            ["sh", "-c", f'printf %s "{m.group(1)}"'], capture_output=True, text=True, check=True
        ).stdout

    def exercise(url, token):
        auth = {"Authorization": f"Bearer {token}"}
        sid = raw_session(url, auth)
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "terminal", "arguments": {"argv": ["true"]}}}
        assert raw(url, call, sid)[0] == 200
        assert raw(url, INIT, {"Authorization": f"Bearer {token[:-1]}x"})[0] == 401
        root = url.removesuffix("/mcp")
        status, _, body = raw(f"{root}/view/login", {"token": token})
        assert status == 200, body
        key = json.loads(body)["key"]
        assert raw(f"{root}/view/stream?session=x&id=y", None, {"X-Agentty-View": key},
                   method="GET")[0] in (400, 404)
        assert raw(url, None, sid, method="DELETE")[0] == 204
        return key

    trace = {"RUST_LOG": "trace"}
    with http_server(env=trace) as (url, token, state):
        key = exercise(url, token)
        time.sleep(0.3)
        log = SERVERS[-1].log.text()
        assert token not in log and key not in log
        file = os.path.join(state, "token")
        assert file in log, log
        paste = next(line for line in log.splitlines() if "claude mcp add" in line)
        assert pasted(paste) == token, paste

    # A file of callers: the paste line picks the first caller's token, comments skipped.
    first, second = "f" * 8 + uuid.uuid4().hex, "s" * 8 + uuid.uuid4().hex
    tokens = private_file(f"# agents\n\n  alice {first}\n{second}\n")
    with http_server("--token-file", tokens, env=trace) as (url, _, _):
        key = exercise(url, first)
        exercise(url, second)
        time.sleep(0.3)
        log = SERVERS[-1].log.text()
        assert first not in log and second not in log and key not in log
        assert tokens in log, log
        paste = next(line for line in log.splitlines() if "claude mcp add" in line)
        assert pasted(paste) == first, paste


def process_tree_cpu_seconds(root):
    """User and system CPU time of `root` and every process under it, in seconds."""
    tick = os.sysconf("SC_CLK_TCK")
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
            for task in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{task}/children") as f:
                    todo.extend(int(c) for c in f.read().split())
        except OSError:
            pass
    return total / tick


def half_requests(url, n):
    """`n` connections (opened at once) that each sent part of a request's headers and then
    nothing; those the kernel did not complete within 2 s are left out."""
    import select
    import socket

    host, port = url.split("//")[1].split("/")[0].rsplit(":", 1)
    pending = []
    for _ in range(n):
        s = socket.socket()
        s.setblocking(False)
        s.connect_ex((host, int(port)))
        pending.append(s)
    opened, deadline = [], time.monotonic() + 2
    while pending and time.monotonic() < deadline:
        _, writable, _ = select.select([], pending, [], 0.1)
        for s in writable:
            pending.remove(s)
            if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0:
                s.setblocking(True)
                s.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
                opened.append(s)
            else:
                s.close()
    for s in pending:
        s.close()
    return opened


def still_open(sock):
    """Whether the server has not closed `sock` (what it sent meanwhile is read and dropped)."""
    sock.setblocking(False)
    try:
        while True:
            if sock.recv(65536) == b"":
                return False
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        sock.setblocking(True)


def event_stream(url, sid):
    """A session's standalone event stream (`GET /mcp`), opened on a socket of its own."""
    import socket

    host, port = url.split("//")[1].split("/")[0].rsplit(":", 1)
    s = socket.create_connection((host, int(port)), timeout=5)
    head = "".join(f"{k}: {v}\r\n" for k, v in sid.items())
    s.sendall(f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n{head}\r\n"
              .encode())
    got = b""
    while b"\r\n\r\n" not in got:
        got += s.recv(4096)
    assert got.startswith(b"HTTP/1.1 200"), got[:200]
    return s


def real_call(url, token):
    """initialize, then `terminal` `true` in that session: the seconds it took."""
    started = time.monotonic()
    sid = raw_session(url, {"Authorization": f"Bearer {token}"})
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "terminal", "arguments": {"argv": ["true"]}}}
    status, _, body = raw(url, call, sid)
    assert status == 200 and '"exit_code":0' in body, (status, body)
    return time.monotonic() - started


FDS = 256


@pytest.mark.parametrize("cap", [[], ["--max-connections", "1000"]], ids=["default-cap", "cap-past-fds"])
def test_a_flood_of_half_requests_past_the_fd_limit_neither_spins_nor_floods_the_log(cap):
    """More connections than the server has file descriptors, each holding half a request: the
    accept loop must not spin (CPU), must not write a line per failed accept (the log), and a
    real caller still gets in quickly; an authenticated event stream is not cut. With the
    default cap (half the descriptors) the descriptors never run out; with a cap past them,
    they do, and the server copes all the same."""
    with http_server(*cap, nofile=FDS) as (url, token, _):
        server = SERVERS[-1]
        auth = {"Authorization": f"Bearer {token}"}
        stream = event_stream(url, raw_session(url, auth))
        real_call(url, token)
        lines = server.log.lines
        flood = half_requests(url, FDS + 150)
        print(f"\nflood: {len(flood)} connections open")
        assert len(flood) > FDS
        try:
            cpu = process_tree_cpu_seconds(server.pid)
            window = time.monotonic()
            result = {}
            caller = threading.Thread(
                target=lambda: result.update(took=real_call(url, token)), daemon=True
            )
            caller.start()
            caller.join(timeout=15)
            time.sleep(max(0.0, 3.0 - (time.monotonic() - window)))
            cpu = process_tree_cpu_seconds(server.pid) - cpu
            window = time.monotonic() - window
            flood_lines = server.log.lines - lines
            print(f"\nflood: {flood_lines} log lines, {cpu:.2f} s CPU over {window:.1f} s, "
                  f"a real call took {result.get('took', float('inf')):.2f} s")
            assert "took" in result, "no real call got through during the flood"
            assert result["took"] < 5, result
            assert flood_lines <= 5, server.log.text()[-2000:]
            assert cpu < 0.25 * window, f"{cpu:.2f} s of CPU in {window:.1f} s"
            # Past the short wait for a token, the authenticated stream is still there.
            time.sleep(max(0.0, 6.0 - window))
            assert still_open(stream), "the authenticated event stream was cut"
        finally:
            for s in flood:
                s.close()
        assert real_call(url, token) < 5
        assert server.log.lines - lines <= 6, server.log.text()[-2000:]
        print(server.log.text().splitlines()[-1])
        stream.close()


def proven_connections(url, token, n):
    """`n` kept-alive connections, each proven by one `GET /metrics` with `token`: each with the
    status it was answered (None: no answer within 3 s, the connection waiting for room)."""
    import socket

    host, port = url.split("//")[1].split("/")[0].rsplit(":", 1)
    held = []
    for _ in range(n):
        s = socket.create_connection((host, int(port)), timeout=3)
        s.sendall(f"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n\r\n"
                  .encode())
        try:
            got = s.recv(4096)
            status = int(got.split(b" ", 2)[1]) if got.startswith(b"HTTP/1.1 ") else None
        except OSError:
            status = None
        held.append((s, status))
    return held


def test_one_caller_holding_connections_leaves_every_other_caller_its_share():
    """Review 36, H1: a caller with a valid token proves as many connections as it likes and
    holds them (a view's event streams never end). Past its share of the places it is refused,
    so another caller still gets in."""
    alice, bob = "a" * 8 + uuid.uuid4().hex, "b" * 8 + uuid.uuid4().hex
    tokens = private_file(f"alice {alice}\nbob {bob}\n")
    with http_server("--token-file", tokens, "--max-connections", "24") as (url, _, _):
        # 24 places, three provers (two callers and the operator's view): a share of 8 each.
        held = proven_connections(url, alice, 24)
        try:
            statuses = [status for _, status in held]
            assert statuses[:8] == [200] * 8, statuses
            assert statuses[8:] == [503] * 16, statuses
            refused = held[8][0]
            assert not still_open(refused), "a refused connection stays open"
            result = {}
            caller = threading.Thread(
                target=lambda: result.update(took=real_call(url, bob)), daemon=True
            )
            caller.start()
            caller.join(timeout=15)
            assert "took" in result, "bob got no answer while alice held her connections"
            assert result["took"] < 5, result
        finally:
            for s, _ in held:
                s.close()
        # Her places come back as her connections close (once the server has seen them close).
        def one_more_is_hers():
            [(sock, status)] = proven_connections(url, alice, 1)
            sock.close()
            return status == 200

        assert wait_until(one_more_is_hers), "her places did not come back"
