"""The one-time escalation for clients of protocol 2026-07-28 (multi round-trip requests, no
server-to-client request), in raw JSON-RPC over stdio and over HTTP: the question comes back as
`input_required` with a sealed `requestState`; the retry with the user's answer runs that one
call, once (docs/BEHAVIOUR.md §5)."""

import json
import os
import subprocess
import tempfile
import uuid

from test_http import BIN, http_server
from test_http_callers import answer_in, stateless

from private_dirs import private_dir

CAPS = {"elicitation": {"form": {}}}


def meta(caps=CAPS):
    return {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": caps,
        "io.modelcontextprotocol/clientInfo": {"name": "raw-2026", "version": "1"},
    }


class Stdio:
    """A server over stdio spoken to in raw JSON-RPC lines, as a 2026-07-28 client."""

    def __init__(self):
        self.ws = tempfile.TemporaryDirectory()
        self.state = private_dir()
        self.proc = subprocess.Popen(
            [BIN, "serve", "--workspace", self.ws.name, "--state-dir", self.state.name],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self.next = 0

    def call(self, tool, arguments, caps=CAPS, state=None, answer=None):
        self.next += 1
        params = {"name": tool, "arguments": arguments, "_meta": meta(caps)}
        if state is not None:
            params["requestState"] = state
        if answer is not None:
            params["inputResponses"] = {"approve": answer}
        message = {"jsonrpc": "2.0", "id": self.next, "method": "tools/call", "params": params}
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()
        while True:
            reply = json.loads(self.proc.stdout.readline())
            if reply.get("id") == self.next:
                return reply["result"]

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=20)
        self.ws.cleanup()
        self.state.cleanup()


YES = {"action": "accept", "content": {"approve": True}}
NO = {"action": "decline"}


def said(result):
    return "".join(c.get("text", "") for c in result.get("content", []))


def outside():
    """A file outside the workspace and outside what the sandbox lets a command write."""
    return os.path.join(os.path.expanduser("~"), f"agentty-mrtr-{uuid.uuid4().hex[:8]}")


def test_the_question_comes_back_and_the_approved_retry_runs_that_call_once():
    server = Stdio()
    target = outside()
    args = {
        "command": f"echo x > {target}",
        "sandbox_permissions": "require_escalated",
        "justification": "the test writes outside the workspace",
    }
    try:
        asked = server.call("terminal", args)
        assert asked["resultType"] == "input_required", asked
        question = asked["inputRequests"]["approve"]
        assert question["method"] == "elicitation/create"
        assert question["params"]["mode"] == "form"
        assert "approve" in question["params"]["requestedSchema"]["properties"]
        assert f"echo x > {target}" in question["params"]["message"]
        state = asked["requestState"]
        assert not os.path.exists(target), "it ran before the answer"

        # Altered, another command's, declined, garbage, huge: refused, nothing runs.
        flipped = state[:-3] + ("A" if state[-3] != "A" else "B") + state[-2:]
        other = dict(args, command=f"echo y > {target}")
        for refused, why in [
            (server.call("terminal", args, state=flipped, answer=YES), "not valid"),
            (server.call("terminal", other, state=state, answer=YES), "not valid"),
            (server.call("terminal", args, state="garbage", answer=YES), "not valid"),
            (server.call("terminal", args, state="x" * 200_000, answer=YES), "not valid"),
        ]:
            assert refused.get("isError"), refused
            assert why in said(refused), said(refused)
            assert not os.path.exists(target)

        ran = server.call("terminal", args, state=state, answer=YES)
        assert not ran.get("isError"), said(ran)
        assert "resultType" not in ran or ran["resultType"] == "complete"
        assert os.path.exists(target), "the approved call did not run"
        os.unlink(target)
        # The same approval again: used up.
        again = server.call("terminal", args, state=state, answer=YES)
        assert again.get("isError") and "already used" in said(again), said(again)
        assert not os.path.exists(target)

        # Declined: the command does not run, and that state is used up too.
        asked = server.call("terminal", args)
        declined = server.call("terminal", args, state=asked["requestState"], answer=NO)
        assert declined.get("isError") and "declined" in said(declined), said(declined)
        assert not os.path.exists(target)

        # A shell asks the same way.
        shell = {"sandbox_permissions": "require_escalated", "justification": "a shell outside"}
        asked = server.call("shell_open", shell)
        assert asked["resultType"] == "input_required"
        opened = server.call("shell_open", shell, state=asked["requestState"], answer=YES)
        assert not opened.get("isError"), said(opened)
        assert "escalation approved by the user" in said(opened), said(opened)
        sid = opened["structuredContent"]["id"]
        server.call("shell_send", {"id": sid, "input": f"echo x > {target}\n"})
        assert os.path.exists(target), "the approved shell could not write outside"
        os.unlink(target)
        server.call("shell_close", {"id": sid})

        # A client that cannot show a form: today's refusal, no question.
        plain = server.call("terminal", args, caps={})
        assert plain.get("isError") and "no elicitation" in said(plain), plain
    finally:
        if os.path.exists(target):
            os.unlink(target)
        server.close()


def test_a_state_from_an_earlier_run_does_not_open():
    target = outside()
    args = {
        "command": f"echo x > {target}",
        "sandbox_permissions": "require_escalated",
        "justification": "the test writes outside the workspace",
    }
    first = Stdio()
    try:
        state = first.call("terminal", args)["requestState"]
    finally:
        first.close()
    second = Stdio()
    try:
        refused = second.call("terminal", args, state=state, answer=YES)
        assert refused.get("isError") and "earlier run" in said(refused), said(refused)
        assert not os.path.exists(target)
    finally:
        second.close()


def test_over_http_nothing_is_escalated_and_no_question_is_sent():
    target = outside()
    with http_server() as (url, token, _):
        result = stateless(
            url,
            token,
            "terminal",
            {
                "command": f"echo x > {target}",
                "sandbox_permissions": "require_escalated",
                "justification": "the test writes outside the workspace",
            },
        )
        assert result.get("resultType") != "input_required", result
        assert result.get("isError") and "not offered over HTTP" in said(result), result
        assert not os.path.exists(target)


def test_the_tool_list_promises_the_question_only_to_a_client_that_can_ask():
    def described(tools):
        by_name = {t["name"]: t for t in tools}
        return [
            by_name[name]["inputSchema"]["properties"]["sandbox_permissions"]["description"]
            for name in ("terminal", "shell_open")
        ]

    server = Stdio()
    try:
        for caps, can in ((CAPS, True), ({}, False)):
            server.next += 1
            message = {"jsonrpc": "2.0", "id": server.next, "method": "tools/list", "params": {"_meta": meta(caps)}}
            server.proc.stdin.write(json.dumps(message) + "\n")
            server.proc.stdin.flush()
            reply = json.loads(server.proc.stdout.readline())
            for text in described(reply["result"]["tools"]):
                assert ("asks the user" in text) == can, (caps, text)
                assert ("refused here" in text) != can, (caps, text)
    finally:
        server.close()
    with http_server() as (url, token, _):
        from test_http import raw

        headers = {
            "Authorization": f"Bearer {token}",
            "MCP-Protocol-Version": "2026-07-28",
            "Mcp-Method": "tools/list",
        }
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta(CAPS)}}
        _, _, text = raw(url, body, headers)
        data = answer_in(text, 1)
        for described_text in described(data["result"]["tools"]):
            assert "refused here" in described_text, "HTTP promised a question"


def test_the_official_python_sdk_drives_the_question_and_its_retry_itself():
    """mcp's high-level Client (auto mode: server/discover, then 2026-07-28) answers
    `input_required` through its elicitation callback and retries on its own."""
    import asyncio

    import mcp.types as types
    from mcp import Client, StdioServerParameters

    target = outside()
    asked = []

    def answering(approve):
        async def callback(context, params):
            asked.append(params.message)
            if approve:
                return types.ElicitResult(action="accept", content={"approve": True})
            return types.ElicitResult(action="decline")

        return callback

    args = {
        "command": f"echo x > {target}",
        "sandbox_permissions": "require_escalated",
        "justification": "the test writes outside the workspace",
    }

    async def body(ws, state):
        params = StdioServerParameters(command=BIN, args=["serve", "--workspace", ws, "--state-dir", state])
        async with Client(params, elicitation_callback=answering(False)) as client:
            assert client.protocol_version == "2026-07-28", client.protocol_version
            declined = await client.call_tool("terminal", args)
            assert declined.is_error and "declined" in declined.content[0].text
            assert not os.path.exists(target)
        async with Client(params, elicitation_callback=answering(True)) as client:
            ran = await client.call_tool("terminal", args)
            assert not ran.is_error, ran.content[0].text
            assert os.path.exists(target), "the approved call did not run"

    try:
        with tempfile.TemporaryDirectory() as ws, private_dir() as state:
            asyncio.run(body(ws, state))
        assert len(asked) == 2 and f"echo x > {target}" in asked[1], asked
    finally:
        if os.path.exists(target):
            os.unlink(target)
