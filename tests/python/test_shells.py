"""The five shell_* tools and terminal(pty) through the official MCP Python SDK.

The SDK validates every structuredContent against the tool's declared outputSchema, so these
tests also check that the schemas tell the truth. The binary comes from $AGENTTY_BIN.
"""

import asyncio
import os
import tempfile
import time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from private_dirs import private_dir

BIN = os.environ.get("AGENTTY_BIN", "target/debug/agentty")


def run(coro_fn, *flags):
    async def scenario():
        with tempfile.TemporaryDirectory() as ws, private_dir() as state:
            params = StdioServerParameters(
                command=BIN,
                args=["serve", "--workspace", ws, "--state-dir", state, *flags],
            )
            async with stdio_client(params) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    return await coro_fn(session, ws)

    return asyncio.run(scenario())


def text(result):
    return "".join(c.text for c in result.content if getattr(c, "type", "") == "text")


async def ok(session, tool, args):
    result = await session.call_tool(tool, args)
    assert result.is_error is False, (tool, args, text(result))
    return result


def test_all_five_tools_round_trip():
    async def body(session, ws):
        os.mkdir(os.path.join(ws, "pkg"))
        opened = await ok(session, "shell_open", {"workdir": "pkg", "cols": 90, "rows": 20})
        sid = opened.structured_content["id"]
        assert sid == "s1" and opened.structured_content["integration"] is True

        sent = await ok(session, "shell_send", {"id": sid, "input": "export GREETING=hi; cd ..\n"})
        assert sent.structured_content["status"] == "done"
        sent = await ok(session, "shell_send", {"id": sid, "input": "echo $GREETING; basename $PWD; false\n"})
        s = sent.structured_content
        assert s["exit_code"] == 1
        assert s["output"] == "hi\n" + os.path.basename(os.path.realpath(ws)) + "\n"

        read = await ok(session, "shell_read", {"id": sid, "since": s["cursor_from"]})
        assert "hi\n" in read.structured_content["text"]
        screen = await ok(session, "shell_read", {"id": sid, "screen": True})
        assert screen.structured_content["screen"]["cols"] == 90

        listed = await ok(session, "shell_list", {})
        assert [e["id"] for e in listed.structured_content["shells"]] == [sid]
        assert listed.structured_content["shells"][0]["state"] == "open"

        closed = await ok(session, "shell_close", {"id": sid})
        assert closed.structured_content["state"] == "closed"
        after = await session.call_tool("shell_send", {"id": sid, "input": "pwd\n"})
        assert after.is_error is True and "was closed" in text(after)

    run(body)


def test_python_repl_and_password_prompt():
    async def body(session, ws):
        await ok(session, "shell_open", {})
        repl = await ok(session, "shell_send", {"id": "s1", "input": "python3 -q\n"})
        assert repl.structured_content["status"] == "awaiting_input"
        answer = await ok(session, "shell_send", {"id": "s1", "input": "print(6 * 7)\n"})
        assert "42" in answer.structured_content["output"]
        done = await ok(session, "shell_send", {"id": "s1", "input": "exit()\n"})
        assert done.structured_content["status"] == "done"

        started = time.monotonic()
        asked = await ok(
            session,
            "shell_send",
            {"id": "s1", "input": "read -s -p 'Password: ' pw; echo ok\n", "timeout_ms": 60000},
        )
        assert time.monotonic() - started < 10
        assert asked.structured_content["prompt"] == "Password:"
        answered = await ok(session, "shell_send", {"id": "s1", "input": "secret\n"})
        assert answered.structured_content["output"].strip().endswith("ok")

    # `read -s -p` is bash; name the shell rather than trust the environment's $SHELL.
    run(body, "--shell", "/bin/bash")


def test_idle_shell_is_reaped_and_terminal_pty():
    async def body(session, ws):
        await ok(session, "shell_open", {})
        await asyncio.sleep(1.5)
        gone = await session.call_tool("shell_send", {"id": "s1", "input": "pwd\n"})
        assert gone.is_error is True
        assert "closed for inactivity" in text(gone)

        tty = await ok(session, "terminal", {"command": "test -t 1 && echo tty", "pty": True})
        assert tty.structured_content["stdout"] == "tty\n"

    run(body, "--shell-idle-ms", "400")


def test_a_read_says_a_program_waits_for_keys():
    """A command that comes to a question after its send returned: a model polling with
    shell_read learns that it waits and at what line (the SDK checks the new field against the
    output schema)."""

    async def body(session, ws):
        await ok(session, "shell_open", {})
        sent = await ok(session, "shell_send", {
            "id": "s1",
            "input": "python3 -c \"import time; time.sleep(1); input('Overwrite config? [y/N] ')\"\n",
            "timeout_ms": 200,
        })
        assert sent.structured_content["status"] == "running"
        read = await ok(session, "shell_read", {"id": "s1"})
        assert read.structured_content["awaiting_input"] is None, text(read)
        deadline = time.monotonic() + 20
        while read.structured_content["awaiting_input"] is None:
            assert time.monotonic() < deadline, text(read)
            await asyncio.sleep(0.05)
            read = await ok(session, "shell_read", {"id": "s1"})
        assert read.structured_content["awaiting_input"] == "Overwrite config? [y/N]"
        assert "[awaiting input: the program waits for keyboard input at" in text(read)
        answered = await ok(session, "shell_send", {"id": "s1", "input": "n\n"})
        assert answered.structured_content["status"] == "done"

    run(body)
