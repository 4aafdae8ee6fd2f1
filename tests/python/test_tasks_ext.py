"""The tasks extension (io.modelcontextprotocol/tasks) for clients of 2026-07-28 that declare
it, in raw JSON-RPC over stdio and over HTTP: a command gone to the background is a task that is
the job of the job table; tasks/get polls it to its result in `terminal`'s shape; tasks/cancel
stops its tree; ids are unguessable and another caller's answer as unknown (docs/BEHAVIOUR.md
§3)."""

import json
import os
import re
import time
import uuid

from private_dirs import private_file
from test_http import http_server, raw, wait_until, with_env
from test_http_callers import answer_in
from test_mrtr import Stdio, said

TASKS = {"extensions": {"io.modelcontextprotocol/tasks": {}}}


def meta(caps):
    return {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": caps,
        "io.modelcontextprotocol/clientInfo": {"name": "raw-tasks", "version": "1"},
    }


def request(server, method, params, caps=TASKS):
    server.next += 1
    message = {
        "jsonrpc": "2.0",
        "id": server.next,
        "method": method,
        "params": {**params, "_meta": meta(caps)},
    }
    server.proc.stdin.write(json.dumps(message) + "\n")
    server.proc.stdin.flush()
    while True:
        reply = json.loads(server.proc.stdout.readline())
        if reply.get("id") == server.next:
            return reply


def poll(server, task_id, until=("completed", "cancelled", "failed")):
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        got = request(server, "tasks/get", {"taskId": task_id})["result"]
        if got["status"] in until:
            return got
        time.sleep(0.1)
    raise AssertionError(f"task {task_id} still {got['status']}")


def test_a_background_command_is_a_task_polled_to_its_result_or_cancelled():
    tag = f"tasks-{uuid.uuid4().hex[:8]}"
    server = Stdio()
    try:
        made = request(
            server,
            "tools/call",
            {"name": "terminal", "arguments": {"command": "echo first; sleep 0.5; echo done; exit 3", "background": True}},
        )["result"]
        assert made["resultType"] == "task", made
        task = made["taskId"]
        assert re.fullmatch(r"[0-9a-f]{32}", task), task
        assert made["status"] == "working"
        job = re.search(r"job (t\d+)", made["statusMessage"]).group(1)
        # The same job for the task_* tools.
        listed = request(server, "tools/call", {"name": "task_list", "arguments": {}})["result"]
        assert job in said(listed)
        done = poll(server, task)
        assert done["status"] == "completed", done
        result = done["result"]
        assert result["structuredContent"]["exit_code"] == 3
        assert result["structuredContent"]["status"] == "failed"
        assert result["isError"] is True
        assert "first\ndone\n" in result["structuredContent"]["stdout"]
        assert "[exit 3" in said(result) and "[sandbox]" in said(result)

        # A timeout handed over to the background is a task too.
        timed = request(
            server,
            "tools/call",
            {"name": "terminal", "arguments": {"command": "sleep 0.6; echo late", "timeout_ms": 200, "on_timeout": "background"}},
        )["result"]
        assert timed["resultType"] == "task", timed
        late = poll(server, timed["taskId"])
        assert "late" in late["result"]["structuredContent"]["stdout"]

        # Cancelled: the whole tree stops.
        running = request(
            server,
            "tools/call",
            {"name": "terminal", "arguments": {"command": "(setsid sleep 300 &); sleep 300", "background": True, "env": {"TASKTAG": tag}}},
        )["result"]
        assert wait_until(lambda: len(with_env("TASKTAG", tag)) >= 2)
        working = request(server, "tasks/get", {"taskId": running["taskId"]})["result"]
        assert working["status"] == "working"
        assert "result" in request(server, "tasks/cancel", {"taskId": running["taskId"]})
        assert wait_until(lambda: not with_env("TASKTAG", tag)), with_env("TASKTAG", tag)
        assert poll(server, running["taskId"])["status"] == "cancelled"

        # An id that was never made, and a malformed one: the same error, nothing else.
        for unknown in (uuid.uuid4().hex, "t1", ""):
            answer = request(server, "tasks/get", {"taskId": unknown})
            assert answer["error"]["code"] == -32602, answer
            answer = request(server, "tasks/cancel", {"taskId": unknown})
            assert "error" in answer, answer

        # Without the extension: today's answer, a job id.
        plain = request(
            server,
            "tools/call",
            {"name": "terminal", "arguments": {"command": "true", "background": True}},
            caps={},
        )["result"]
        assert plain.get("resultType", "complete") == "complete", plain
        assert plain["structuredContent"]["status"] == "background"
    finally:
        server.close()


def test_over_http_a_task_answers_only_its_caller():
    tag = f"tasks-http-{uuid.uuid4().hex[:8]}"
    a, b = "a" * 8 + uuid.uuid4().hex, "b" * 8 + uuid.uuid4().hex
    tokens = private_file(f"{a}\n{b}\n")

    def call(token, method, params, name=None):
        headers = {
            "Authorization": f"Bearer {token}",
            "MCP-Protocol-Version": "2026-07-28",
            "Mcp-Method": method,
        }
        if name:
            headers["Mcp-Name"] = name
        body = {"jsonrpc": "2.0", "id": 9, "method": method, "params": {**params, "_meta": meta(TASKS)}}
        status, _, text = raw(url, body, headers)
        assert status in (200, 400), (status, text)
        return answer_in(text, 9)

    try:
        with http_server("--token-file", tokens) as (url, _, _):
            made = call(
                a,
                "tools/call",
                {"name": "terminal", "arguments": {"command": "sleep 300", "background": True, "env": {"TASKTAG": tag}}},
                name="terminal",
            )["result"]
            task = made["taskId"]
            assert wait_until(lambda: with_env("TASKTAG", tag))
            assert call(a, "tasks/get", {"taskId": task}, name=task)["result"]["status"] == "working"
            theirs = call(b, "tasks/get", {"taskId": task}, name=task)
            other = uuid.uuid4().hex
            never = call(b, "tasks/get", {"taskId": other}, name=other)
            assert theirs["error"]["code"] == never["error"]["code"] == -32602, (theirs, never)
            assert theirs["error"]["message"].replace(task, "ID") == never["error"]["message"].replace(other, "ID")
            assert "error" in call(b, "tasks/cancel", {"taskId": task}, name=task)
            assert with_env("TASKTAG", tag), "another caller's cancel stopped the job"
            assert "result" in call(a, "tasks/cancel", {"taskId": task}, name=task)
            assert wait_until(lambda: not with_env("TASKTAG", tag))
    finally:
        os.unlink(tokens)
