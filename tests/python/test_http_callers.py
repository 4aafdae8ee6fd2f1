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

from private_dirs import private_file
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
