"""Callers of `serve --http`: each token of the token file is one. Callers without a session
(protocol 2026-07-28) reach their jobs only by unguessable handles and never see another's; a
client session belongs to the caller that opened it; an unnamed handle is stopped after the grace
(docs/BEHAVIOUR.md §9)."""

import itertools
import json
import os
import re
import signal
import socket
import time
import urllib.request
import uuid

from private_dirs import private_dir, private_file
from test_http import INIT, http_server, raw, wait_until, with_env

A = "a" * 8 + uuid.uuid4().hex  # 40 characters
B = "b" * 8 + uuid.uuid4().hex
HANDLE = re.compile(r"^t-[0-9a-f]{24}$")


def token_file(text):
    return private_file(text)


def answer_in(body, request_id):
    """The JSON-RPC message answering `request_id` in a response body (event stream or JSON)."""
    for line in body.splitlines():
        if line.startswith("data:") and line[5:].strip():
            message = json.loads(line[5:])
            if message.get("id") == request_id:
                return message
    message = json.loads(body)
    assert message.get("id") == request_id, body
    return message


def stateless(url, token, tool, arguments):
    """A tools/call of a 2026-07-28 caller (no session): its result, or its JSON-RPC error."""
    call = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {
            "name": tool,
            "arguments": arguments,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "raw-2026", "version": "1"},
            },
        },
    }
    headers = {
        "Authorization": f"Bearer {token}",
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": tool,
    }
    status, _, body = raw(url, call, headers)
    assert status == 200, (status, body)
    message = answer_in(body, 7)
    return message.get("result") or message


def said(result):
    return "".join(c.get("text", "") for c in result.get("content", []))


def session(url, token):
    """A 2025-06-18 client session opened with `token`: its headers."""
    auth = {"Authorization": f"Bearer {token}"}
    status, headers, _ = raw(url, INIT, auth)
    assert status == 200
    sid = {**auth, "Mcp-Session-Id": headers["Mcp-Session-Id"]}
    raw(url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, sid)
    return sid


# JSON-RPC ids of session_call: each call its own, so calls running at once on one session
# (threads) are never two requests with one id.
CALL_IDS = itertools.count(1000)


def session_call(url, sid, tool, arguments):
    call_id = next(CALL_IDS)
    call = {
        "jsonrpc": "2.0",
        "id": call_id,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    }
    status, _, body = raw(url, call, sid)
    assert status == 200, (status, body)
    return answer_in(body, call_id)["result"]


def test_callers_without_a_session_hold_unguessable_handles_nobody_else_can_use():
    tag = f"callers-{uuid.uuid4().hex[:8]}"
    tokens = token_file(f"# two agents\nalice {A}\n{B}\n")
    try:
        with http_server("--token-file", tokens) as (url, _, _):
            started = stateless(
                url, A, "terminal",
                {"command": "sleep 300", "background": True, "env": {"HTTPTAG": tag}},
            )
            job = started["structuredContent"]["job_id"]
            assert HANDLE.match(job), job
            assert "keep this id" in said(started), said(started)
            again = stateless(url, A, "terminal", {"command": "sleep 300", "background": True})
            other = again["structuredContent"]["job_id"]
            assert HANDLE.match(other) and other != job
            assert wait_until(lambda: len(with_env("HTTPTAG", tag)) == 1)

            mine = stateless(url, A, "task_list", {})
            assert job in json.dumps(mine), said(mine)
            # The other caller: nothing listed, and the handle answers as one that never existed.
            theirs = stateless(url, B, "task_list", {})
            assert job not in json.dumps(theirs) and "sleep 300" not in said(theirs)
            never = "t-" + uuid.uuid4().hex[:24]
            for tool in ("task_stop", "task_output", "task_wait"):
                foreign = stateless(url, B, tool, {"id": job})
                unknown = stateless(url, B, tool, {"id": never})
                assert foreign.get("isError") and unknown.get("isError"), tool
                assert said(foreign).replace(job, "ID") == said(unknown).replace(never, "ID")
            # Nor a sequential id: the first job is not `t1` to anyone.
            assert stateless(url, A, "task_stop", {"id": "t1"}).get("isError")
            # A client session with the same token sees none of it either.
            sid = session(url, A)
            listed = session_call(url, sid, "task_list", {})
            assert job not in json.dumps(listed)
            assert session_call(url, sid, "task_stop", {"id": job}).get("isError")
            assert len(with_env("HTTPTAG", tag)) == 1, "a refused stop stopped the job"

            stopped = stateless(url, A, "task_stop", {"id": job})
            assert not stopped.get("isError"), said(stopped)
            assert wait_until(lambda: not with_env("HTTPTAG", tag))
    finally:
        os.unlink(tokens)


def test_a_session_belongs_to_the_caller_that_opened_it():
    marker = f"/tmp/agentty-callers-{uuid.uuid4().hex}"
    tokens = token_file(f"{A}\n{B}\n")
    try:
        with http_server("--token-file", tokens) as (url, _, _):
            sid = session(url, A)
            as_b = {**sid, "Authorization": f"Bearer {B}"}
            call = {
                "jsonrpc": "2.0",
                "id": 4,
                "method": "tools/call",
                "params": {"name": "terminal", "arguments": {"command": f"touch {marker}"}},
            }
            assert raw(url, call, as_b)[0] == 404
            assert raw(url, None, as_b, method="DELETE")[0] == 404
            time.sleep(0.3)
            assert not os.path.exists(marker), "another caller's request ran in the session"
            # The session is still its opener's.
            result = session_call(url, sid, "terminal", {"command": f"touch {marker}"})
            assert not result.get("isError") and os.path.exists(marker)
            assert raw(url, None, sid, method="DELETE")[0] == 204
    finally:
        os.unlink(tokens)
        if os.path.exists(marker):
            os.unlink(marker)


def test_a_handle_no_request_names_is_stopped_after_the_grace():
    idle, used = (f"callers-{w}-{uuid.uuid4().hex[:8]}" for w in ("idle", "used"))
    tokens = token_file(f"{A}\n")
    try:
        with http_server("--token-file", tokens, "--session-grace", "1") as (url, _, _):
            start = lambda tag: stateless(  # noqa: E731
                url, A, "terminal",
                {"command": "sleep 300", "background": True, "env": {"HTTPTAG": tag}},
            )["structuredContent"]["job_id"]
            start(idle)
            kept = start(used)
            assert wait_until(lambda: with_env("HTTPTAG", idle) and with_env("HTTPTAG", used))
            # The caller keeps making requests, naming only one of its two jobs.
            deadline = time.monotonic() + 30
            while with_env("HTTPTAG", idle) and time.monotonic() < deadline:
                assert not stateless(url, A, "task_output", {"id": kept}).get("isError")
                time.sleep(0.2)
            assert not with_env("HTTPTAG", idle), "an unnamed handle outlived the grace"
            assert with_env("HTTPTAG", used), "a handle still named was stopped"
            assert not stateless(url, A, "task_stop", {"id": kept}).get("isError")
            assert wait_until(lambda: not with_env("HTTPTAG", used))
            # Listing names every job listed: a caller that only lists keeps its jobs.
            listed = f"callers-listed-{uuid.uuid4().hex[:8]}"
            start(listed)
            until = time.monotonic() + 2.5
            while time.monotonic() < until:
                assert not stateless(url, A, "task_list", {}).get("isError")
                time.sleep(0.2)
            assert with_env("HTTPTAG", listed), "a listed handle was stopped"
    finally:
        os.unlink(tokens)


def test_a_confined_command_cannot_read_the_token():
    if os.geteuid() != 0:
        import pytest

        pytest.skip("covering the token needs CAP_SYS_ADMIN (the session's mount namespace)")
    # The state dir's token, made at start.
    with http_server() as (url, token, state):
        sid = session(url, token)
        read = session_call(url, sid, "terminal", {"command": f"cat {state}/token; echo END"})
        out = read["structuredContent"]["stdout"]
        assert out.endswith("END\n") and token not in out, out
    # A given token file reached through a symlink (as a Kubernetes secret is).
    tokens = token_file(f"{A}\n")
    link = tokens + ".link"
    os.symlink(tokens, link)
    try:
        with http_server("--token-file", link) as (url, _, _):
            sid = session(url, A)
            for path in (link, tokens):
                read = session_call(url, sid, "terminal", {"command": f"cat {path}; echo END"})
                out = read["structuredContent"]["stdout"]
                assert out.endswith("END\n") and A not in out, (path, out)
            # Not hidden from the server itself: a new request with the token still works.
            assert session(url, A)
    finally:
        os.unlink(link)
        os.unlink(tokens)


def test_callers_commands_share_the_sessions_network_namespace_and_listen_on_this_machine():
    """As root, in network `ask` (the default), every caller's confined commands, with a session
    or without, run in the session's network namespace: not this machine's, nothing but `lo`
    (docs/BEHAVIOUR.md §13). A dev server one of them starts still listens on this machine: the
    test reaches it with a plain connect, as the user's browser would."""
    if os.geteuid() != 0:
        import pytest

        pytest.skip("a network namespace needs CAP_SYS_ADMIN")
    look = "readlink /proc/self/ns/net; cut -d: -f1 /proc/net/dev | tail -n +3 | tr -d ' '"
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with http_server("--token-file", token_file(f"{A}\n{B}\n")) as (url, _, _):
        sid = session(url, A)
        seen = [
            session_call(url, sid, "terminal", {"command": look})["structuredContent"]["stdout"],
            stateless(url, B, "terminal", {"command": look})["structuredContent"]["stdout"],
        ]
        for out in seen:
            lines = out.split()
            assert lines[0].startswith("net:[") and lines[1:] == ["lo"], out
            assert lines[0] != os.readlink("/proc/self/ns/net"), out
        assert seen[0].split()[0] == seen[1].split()[0], seen
        started = session_call(
            url,
            sid,
            "terminal",
            {
                "command": f"python3 -m http.server {port} --bind 127.0.0.1",
                "background": True,
            },
        )
        assert "background" in json.dumps(started), started
        deadline = time.monotonic() + 20
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as page:
                    assert page.status == 200
                    break
            except OSError:
                assert time.monotonic() < deadline, "the dev server is not reachable here"
                time.sleep(0.1)


def signalled(out, word):
    """Whether `look` below printed `word PID` for a process (its own command line, printed too,
    holds the words)."""
    return any(re.fullmatch(rf"{word} \d+", line) for line in out.splitlines())


def test_a_callers_commands_cannot_see_or_signal_another_callers_processes():
    """Measured: bob's `ps -eo pid,args` listed alice's `python3 -c … --token=alice-secret`. Each
    caller's confined commands now run in a PID namespace of its own (CAP_SYS_ADMIN): another
    caller's `ps`, `/proc/*/cmdline`, `/proc/*/environ` and `kill` do not reach them, through a
    client session or without one, while alice still sees her own."""
    if os.geteuid() != 0:
        import pytest

        pytest.skip("a PID namespace per caller needs CAP_SYS_ADMIN")
    argv_secret = f"alice-secret-{uuid.uuid4().hex}"
    env_secret = f"alice-env-{uuid.uuid4().hex}"
    tokens = token_file(f"alice {A}\nbob {B}\n")
    look = (
        "ps -eo pid,args; cat /proc/[0-9]*/cmdline | tr '\\0' ' '; echo; "
        "cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' ' '; echo; "
        # The pattern is put together by the shell: the command's own argv must not hold it.
        "s=alice-sec; for p in /proc/[0-9]*; do grep -qa ${s}ret- $p/cmdline 2>/dev/null && "
        "{ kill -0 ${p#/proc/} && echo SIGNALLED ${p#/proc/} || echo REFUSED ${p#/proc/}; }; "
        "done; echo END"
    )
    try:
        with http_server("--token-file", tokens) as (url, _, _):
            alice = session(url, A)
            started = session_call(
                url, alice, "terminal",
                {
                    "command": f"python3 -c 'import time; time.sleep(300)' --token={argv_secret}",
                    "background": True,
                    "env": {"ALICE_SECRET": env_secret},
                },
            )
            assert not started.get("isError"), said(started)
            assert wait_until(lambda: with_env("ALICE_SECRET", env_secret))
            # Alice's own commands see it (another command's environment is not readable even
            # to them: each confined command is a Landlock domain of its own, which scopes ptrace
            # access, and signals).
            own = session_call(url, alice, "terminal", {"command": look})
            out = own["structuredContent"]["stdout"]
            assert argv_secret in out and not signalled(out, "SIGNALLED"), out
            bob_session = session(url, B)
            as_bob = [
                session_call(url, bob_session, "terminal", {"command": look}),
                stateless(url, B, "terminal", {"command": look}),
            ]
            for seen in as_bob:
                out = seen["structuredContent"]["stdout"]
                assert out.endswith("END\n"), out
                assert argv_secret not in out, f"bob's command saw alice's argv:\n{out}"
                assert env_secret not in out, f"bob's command saw alice's environment:\n{out}"
                assert not signalled(out, "SIGNALLED") and not signalled(out, "REFUSED"), out
            assert with_env("ALICE_SECRET", env_secret), "alice's command was stopped"
    finally:
        os.unlink(tokens)


def test_a_callers_namespace_whose_init_was_killed_is_made_again():
    """Killing a caller's init (root, from outside) ends that caller's commands with it, and
    only those; its next command gets a new namespace, still apart from the other caller's."""
    if os.geteuid() != 0:
        import pytest

        pytest.skip("a PID namespace per caller needs CAP_SYS_ADMIN")
    tags = {who: f"callers-ns-{who}-{uuid.uuid4().hex[:8]}" for who in ("alice", "bob")}
    tokens = token_file(f"alice {A}\nbob {B}\n")

    def namespace_of(pid):
        return os.readlink(f"/proc/{pid}/ns/pid")

    def init_of(pid):
        """The host pid of the init of `pid`'s PID namespace (pid 1 there)."""
        for other in os.listdir("/proc"):
            try:
                if other.isdigit() and namespace_of(other) == namespace_of(pid):
                    with open(f"/proc/{other}/status") as f:
                        nspid = [l for l in f if l.startswith("NSpid:")][0].split()
                    if nspid[-1] == "1":
                        return int(other)
            except OSError:
                pass
        return None

    try:
        with http_server("--token-file", tokens) as (url, _, _):
            for who, token in (("alice", A), ("bob", B)):
                started = stateless(
                    url, token, "terminal",
                    {"command": "sleep 300", "background": True, "env": {"HTTPTAG": tags[who]}},
                )
                assert not started.get("isError"), said(started)
            # The pids as first seen: a second look may miss a process in the middle of its
            # exec (its environ unreadable for that instant).
            found = {}

            def both_seen():
                for w in ("alice", "bob"):
                    found[w] = found.get(w) or with_env("HTTPTAG", tags[w])
                return all(found.values())

            assert wait_until(both_seen)
            alice_job, bob_job = found["alice"][0], found["bob"][0]
            assert namespace_of(alice_job) != namespace_of(bob_job)
            init = init_of(alice_job)
            assert init, "alice's job is not pid 1's of a namespace of its own"
            os.kill(init, signal.SIGKILL)
            assert wait_until(lambda: not with_env("HTTPTAG", tags["alice"]))
            assert with_env("HTTPTAG", tags["bob"]) == [bob_job], "bob's job died with alice's init"
            seen = stateless(url, A, "terminal", {"command": "ps -eo args; echo END"})
            out = seen["structuredContent"]["stdout"]
            assert out.endswith("END\n") and "sleep 300" not in out, out
    finally:
        os.unlink(tokens)


def test_a_client_that_never_finishes_its_headers_is_dropped():
    """Slowloris: a connection that sends part of its headers and stops is closed within a few
    seconds, since it has shown no token."""
    import socket

    with http_server() as (url, _, _):
        host, port = url.split("//")[1].split("/")[0].rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=60) as conn:
            conn.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            started = time.monotonic()
            got = conn.recv(4096)
            while got and b"\r\n\r\n" not in got:
                got += conn.recv(4096)
            waited = time.monotonic() - started
            assert waited < 10, f"the half-sent request was held open {waited:.1f} s"
            assert got == b"" or got.startswith(b"HTTP/1.1 408"), got[:80]


def test_each_caller_has_its_share_of_the_session_cap():
    """One caller cannot take every session: with two callers and --max-sessions 4, each may
    hold 2; the refusal names the caller's own cap, and never another caller."""
    tokens = token_file(f"alice {A}\nbob {B}\n")
    alice, bob = ({"Authorization": f"Bearer {t}"} for t in (A, B))
    try:
        with http_server("--token-file", tokens, "--max-sessions", "4") as (url, _, _):
            opened = [raw(url, INIT, bob) for _ in range(3)]
            assert [status for status, _, _ in opened] == [200, 200, 503], opened
            said = opened[2][2]
            error = json.loads(said)["error"]
            assert "bob" in error["message"] and "2" in error["message"], said
            assert "--max-sessions-per-caller" in error["message"], said
            assert "alice" not in said, said
            # Alice still gets in, twice; then her own cap, worded with her name.
            assert raw(url, INIT, alice)[0] == 200
            assert raw(url, INIT, alice)[0] == 200
            status, _, said = raw(url, INIT, alice)
            assert status == 503 and "alice" in said and "bob" not in said, said
            # A session bob ends gives him room again.
            sid = {**bob, "Mcp-Session-Id": opened[0][1]["Mcp-Session-Id"]}
            assert raw(url, None, sid, method="DELETE")[0] == 204
            assert raw(url, INIT, bob)[0] == 200
        # Given outright, the share is what the flag says.
        flags = ("--token-file", tokens, "--max-sessions", "4", "--max-sessions-per-caller", "1")
        with http_server(*flags) as (url, _, _):
            assert [raw(url, INIT, bob)[0] for _ in range(2)] == [200, 503]
            assert raw(url, INIT, alice)[0] == 200
    finally:
        os.unlink(tokens)


def test_one_callers_secret_requests_never_hold_off_another_callers():
    """Review 36, M1: one shell asking for a secret 16 times filled the server's table of
    requests, and every other caller's secret entry was refused for 5 minutes. A shell now has
    one request at a time (a new one replaces it), and a caller at most 4."""
    full = "requests for a secret from this caller's shells already wait"
    tokens = token_file(f"alice {A}\nbob {B}\n")
    try:
        with http_server("--token-file", tokens) as (url, _, _):
            def waiting_prompt(sid):
                shell = session_call(url, sid, "shell_open", {})["structuredContent"]["id"]
                session_call(url, sid, "shell_send", {
                    "id": shell, "timeout_ms": 3000,
                    "input": "python3 -c 'import getpass; getpass.getpass(\"pw: \")'\n"})
                return shell

            def ask(sid, shell):
                return said(session_call(url, sid, "shell_send", {"id": shell, "secret": "a pw"}))

            alice = [session(url, A), session(url, A)]
            first = waiting_prompt(alice[0])
            for _ in range(16):
                asked = ask(alice[0], first)
                assert full not in asked, asked
            shells = [(sid, waiting_prompt(sid)) for sid in (alice[0], alice[0], alice[0], alice[1])]
            answers = [ask(sid, shell) for sid, shell in shells]
            assert [full in a for a in answers] == [False, False, False, True], answers
            assert "4 requests" in answers[3], answers[3]
            # A request of a shell that ended waits for nothing: it no longer counts.
            session_call(url, shells[0][0], "shell_close", {"id": shells[0][1]})
            again = ask(*shells[3])
            assert full not in again, again
            # Requests of shells closed at once do not pile up for anyone: more than a table
            # shared by all callers held (64) once filled that way (review 38).
            for sid, shell in [(alice[0], first), *shells[1:]]:
                session_call(url, sid, "shell_close", {"id": shell})
            for _ in range(66):
                shell = waiting_prompt(alice[1])
                asked = ask(alice[1], shell)
                assert full not in asked, asked
                session_call(url, alice[1], "shell_close", {"id": shell})
            bob = session(url, B)
            asked = ask(bob, waiting_prompt(bob))
            assert full not in asked and "web view" in asked, asked
    finally:
        os.unlink(tokens)


def kernel_keeps_pid_max_per_namespace():
    major, minor = (int(x) for x in re.match(r"(\d+)\.(\d+)", os.uname().release).groups())
    return (major, minor) >= (6, 14)


# Forks sleepers until it may not (or N of them), then says how many and why it stopped.
FORKER = """
import os, sys, time
n, why = 0, "none"
try:
    for _ in range(int(sys.argv[1])):
        if os.fork() == 0:
            time.sleep(int(sys.argv[2]))
            os._exit(0)
        n += 1
except OSError as e:
    why = e.errno
    print("error:", e, flush=True)
print("started", n, "stopped", why, flush=True)
time.sleep(int(sys.argv[2]))
"""


def test_one_callers_fork_loop_is_bounded_and_leaves_other_callers_their_processes():
    """Review 36 M4: one caller's fork loop could take every process the machine had left, and
    every caller's spawns failed. As root on Linux 6.14+, each caller's PID namespace has a
    pid_max (`--max-processes` plus the 300 numbers a wrap skips): alice's loop of 1200 stops
    between 512 and 812 with EAGAIN, while bob still starts 300 processes of his own at once."""
    import pytest

    if os.geteuid() != 0:
        pytest.skip("a PID namespace per caller needs CAP_SYS_ADMIN")
    if not kernel_keeps_pid_max_per_namespace():
        pytest.skip("the kernel keeps pid_max per PID namespace from Linux 6.14")
    tokens = token_file(f"alice {A}\nbob {B}\n")
    try:
        with http_server("--token-file", tokens, "--max-processes", "512") as (url, _, _):
            alice = session(url, A)
            loop = session_call(
                url, alice, "terminal",
                {"argv": ["python3", "-c", FORKER, "1200", "60"], "background": True},
            )
            job = loop["structuredContent"]["job_id"]
            seen = {}

            def alice_stopped():
                out = session_call(url, alice, "task_output", {"id": job, "since": 0})
                seen["text"] = said(out)
                return "started" in seen["text"]

            assert wait_until(alice_stopped, 60), seen
            m = re.search(r"started (\d+) stopped (\S+)", seen["text"])
            assert m and m.group(2) == "11", seen["text"]
            assert 512 <= int(m.group(1)) < 812, seen["text"]
            bob = session(url, B)
            his = session_call(
                url, bob, "terminal", {"argv": ["python3", "-c", FORKER, "300", "1"]}
            )
            assert "started 300 stopped none" in said(his), said(his)
            session_call(url, alice, "task_stop", {"id": job})
    finally:
        os.unlink(tokens)


def test_over_stdio_the_sessions_processes_are_bounded_too():
    """Over stdio the one caller's commands run in the session's PID namespace: its pid_max is
    `--max-processes` (root, Linux 6.14+), and the bound says so in `doctor`."""
    import asyncio
    import subprocess
    import tempfile

    import pytest
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    from test_e2e import BIN, text

    if os.geteuid() != 0:
        pytest.skip("a PID namespace needs CAP_SYS_ADMIN")
    if not kernel_keeps_pid_max_per_namespace():
        pytest.skip("the kernel keeps pid_max per PID namespace from Linux 6.14")

    async def scenario():
        with tempfile.TemporaryDirectory() as ws, private_dir() as state:
            args = ["serve", "--workspace", ws, "--state-dir", state, "--max-processes", "600"]
            params = StdioServerParameters(command=BIN, args=args)
            async with stdio_client(params) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    result = await session.call_tool(
                        "terminal", {"argv": ["python3", "-c", FORKER, "1200", "1"]}
                    )
                    # Told once a session; an ordinary call says nothing of it.
                    again = await session.call_tool(
                        "terminal", {"argv": ["python3", "-c", FORKER, "1200", "1"]}
                    )
                    ordinary = await session.call_tool("terminal", {"command": "echo fine"})
                    return text(result), text(again), text(ordinary)

    out, again, ordinary = asyncio.run(scenario())
    note = "[note] the output shows a process or thread that could not be started (EAGAIN)"
    assert note in out and "at most 600 processes and threads" in out, out
    assert "--max-processes" in out, out
    assert "stopped 11" in again and note not in again, again
    assert note not in ordinary, ordinary
    m = re.search(r"started (\d+) stopped (\S+)", out)
    assert m and m.group(2) == "11" and 600 <= int(m.group(1)) < 900, out
    doctor = subprocess.run(
        [BIN, "doctor", "--max-processes", "600"], capture_output=True, text=True, timeout=60
    )
    assert "at most 600 per caller at once" in doctor.stdout, doctor.stdout
