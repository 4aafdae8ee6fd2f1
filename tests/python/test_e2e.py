"""End-to-end tests with the official MCP Python SDK: an independent client implementation.

The agentty binary is taken from $AGENTTY_BIN (scripts/test builds it and sets it).
"""

import asyncio
import os
import tempfile

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from private_dirs import private_dir

BIN = os.environ.get("AGENTTY_BIN", "target/debug/agentty")


def run(coro_fn):
    """Runs one async scenario against a fresh server in a fresh workspace."""

    async def scenario():
        with tempfile.TemporaryDirectory() as ws, private_dir() as state:
            params = StdioServerParameters(
                command=BIN, args=["serve", "--workspace", ws, "--state-dir", state]
            )
            async with stdio_client(params) as (read, write):
                async with ClientSession(read, write) as session:
                    init = await session.initialize()
                    return await coro_fn(session, init, ws)

    return asyncio.run(scenario())


def text(result):
    return "".join(c.text for c in result.content if getattr(c, "type", "") == "text")


def test_initialize_and_tool_listing():
    async def body(session, init, ws):
        assert init.server_info.name == "agentty"
        tools = (await session.list_tools()).tools
        terminal = next(t for t in tools if t.name == "terminal")
        assert terminal.annotations.destructive_hint is True
        assert terminal.annotations.open_world_hint is True
        assert terminal.annotations.read_only_hint is False
        assert "exit_code" in terminal.output_schema["properties"]

    run(body)


def test_terminal_structured_result_validates_against_output_schema():
    async def body(session, init, ws):
        # The SDK validates structuredContent against the declared outputSchema.
        result = await session.call_tool("terminal", {"command": "echo hi; echo oops >&2; exit 2"})
        assert result.is_error is False
        s = result.structured_content
        assert s["status"] == "failed" and s["exit_code"] == 2
        assert s["stdout"] == "hi\n" and s["stderr"] == "oops\n"
        assert "[exit 2" in text(result)

    run(body)


def test_bad_input_is_a_tool_error_and_the_server_stays_up():
    async def body(session, init, ws):
        for args, expected in [
            ({}, "exactly one of"),
            ({"command": "ls", "timeout_ms": -5}, "invalid arguments"),
            ({"command": "ls", "workdir": "missing"}, "does not exist"),
            ({"command": "a\x00b"}, "NUL byte"),
        ]:
            result = await session.call_tool("terminal", args)
            assert result.is_error is True, args
            assert expected in text(result), (args, text(result))
        ok = await session.call_tool("terminal", {"argv": ["echo", "alive"]})
        assert ok.structured_content["stdout"] == "alive\n"

    run(body)


def test_progress_callback_receives_latest_line():
    async def body(session, init, ws):
        seen = []

        async def on_progress(progress, total, message):
            seen.append(message)

        # Three lines at once, then quiet: every report must carry the last one.
        result = await session.call_tool(
            "terminal",
            {"command": "echo tick1; echo tick2; echo tick3; sleep 2.2"},
            progress_callback=on_progress,
        )
        assert result.structured_content["status"] == "success"
        assert seen and all(m.endswith("tick3") for m in seen), seen

    run(body)


def test_large_output_is_bounded_and_spilled():
    async def body(session, init, ws):
        result = await session.call_tool("terminal", {"command": "seq 1 300000"})
        s = result.structured_content
        assert s["truncated"] is True
        assert len(text(result)) < 16 * 1024
        # The head and, above all, the tail reach the model (a failed build's error is last).
        lines = text(result).splitlines()
        assert "1" in lines[:5] and "300000" in lines, lines[-5:]
        with open(s["spill_path"]) as f:
            assert sum(1 for _ in f) == 300000
        assert oct(os.stat(s["spill_path"]).st_mode & 0o777) == "0o600"

    run(body)


def sleepers(arg):
    """Live processes with `arg` among their arguments."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if arg.encode() in f.read().split(b"\0"):
                    found.append(int(pid))
        except OSError:
            pass
    return found


def test_timeout_kills_tree():
    arg = f"100.{os.getpid()}"
    async def body(session, init, ws):
        result = await session.call_tool(
            "terminal",
            {"command": f"sleep {arg} & setsid sleep {arg} & sleep {arg}", "timeout_ms": 300},
        )
        assert result.structured_content["status"] == "timeout"
        # The whole tree, the setsid escapee included, is gone when the call returns.
        left = sleepers(arg)
        for pid in left:
            os.kill(pid, 9)
        assert left == [], left

    run(body)
