"""Background jobs and the task_* tools, driven by the official MCP Python SDK.

The SDK validates every structuredContent against the tool's declared outputSchema, so these
tests also prove the schemas of the four tools and of terminal's background replies.
"""

import asyncio
import contextlib
import os
import tempfile

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from private_dirs import private_dir

BIN = os.environ.get("AGENTTY_BIN", "target/debug/agentty")


def text(result):
    return "".join(c.text for c in result.content if getattr(c, "type", "") == "text")


@contextlib.asynccontextmanager
async def session():
    with tempfile.TemporaryDirectory() as ws, private_dir() as state:
        params = StdioServerParameters(
            command=BIN, args=["serve", "--workspace", ws, "--state-dir", state]
        )
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                yield s


def run(coro):
    return asyncio.run(coro)


async def start_bg(s, command):
    r = await s.call_tool("terminal", {"command": command, "background": True})
    assert r.is_error is False, text(r)
    assert r.structured_content["status"] == "background"
    return r.structured_content["job_id"]


def test_tools_are_annotated():
    async def body():
        async with session() as s:
            tools = {t.name: t for t in (await s.list_tools()).tools}
            for name in ["task_list", "task_output", "task_wait"]:
                assert tools[name].annotations.read_only_hint is True, name
                assert tools[name].output_schema is not None, name
            stop = tools["task_stop"].annotations
            assert stop.destructive_hint is True and stop.open_world_hint is False
            assert stop.read_only_hint is False

    run(body())


def test_background_list_output_wait_stop():
    async def body():
        async with session() as s:
            t1 = await start_bg(s, "for i in $(seq 1 2000); do echo row $i; done")
            t2 = await start_bg(s, "echo waiting; sleep 300")
            assert (t1, t2) == ("t1", "t2")

            w = await s.call_tool("task_wait", {"id": t1, "timeout_ms": 20000})
            assert w.structured_content["ended"] is True
            assert w.structured_content["job"]["exit_code"] == 0

            # Cursor reads rebuild the stream exactly.
            expected = "".join(f"row {i}\n" for i in range(1, 2001))
            got, cursor = "", 0
            while True:
                r = await s.call_tool("task_output", {"id": t1, "since": cursor})
                o = r.structured_content
                assert o["from"] == cursor
                if not o["text"]:
                    break
                got += o["text"]
                cursor = o["next"]
            assert got == expected

            # Newest part without a cursor.
            r = await s.call_tool("task_output", {"id": t1})
            assert r.structured_content["text"].endswith("row 2000\n")

            # A short wait leaves the job running.
            w = await s.call_tool("task_wait", {"id": t2, "timeout_ms": 200})
            assert w.structured_content["ended"] is False
            assert w.structured_content["job"]["state"] == "running"

            listing = await s.call_tool("task_list", {})
            states = {j["id"]: j["state"] for j in listing.structured_content["jobs"]}
            assert states == {"t1": "exited", "t2": "running"}
            assert "t2 [command] running" in text(listing)

            stop = await s.call_tool("task_stop", {"id": t2})
            assert stop.structured_content["job"]["state"] == "stopped"

    run(body())


def test_wait_returns_when_the_request_is_cancelled():
    async def body():
        async with session() as s:
            t = await start_bg(s, "sleep 300")
            wait = asyncio.ensure_future(s.call_tool("task_wait", {"id": t, "timeout_ms": 60000}))
            await asyncio.sleep(0.3)
            wait.cancel()  # the SDK sends notifications/cancelled
            with contextlib.suppress(asyncio.CancelledError):
                await wait
            # The server is responsive and the job still runs.
            r = await asyncio.wait_for(s.call_tool("task_list", {}), 5)
            assert r.structured_content["jobs"][0]["state"] == "running"

    run(body())


def test_on_timeout_background_keeps_all_output():
    async def body():
        async with session() as s:
            r = await s.call_tool(
                "terminal",
                {
                    "command": "echo early; sleep 1; echo late",
                    "timeout_ms": 300,
                    "on_timeout": "background",
                },
            )
            assert r.structured_content["status"] == "background"
            t = r.structured_content["job_id"]
            assert "early" in text(r)
            await s.call_tool("task_wait", {"id": t, "timeout_ms": 20000})
            o = await s.call_tool("task_output", {"id": t, "since": 0})
            assert o.structured_content["text"] == "early\nlate\n"

    run(body())


def test_bad_input_and_foreign_ids():
    async def body():
        async with session() as a, session() as b:
            await start_bg(a, "sleep 300")
            cases = [
                ("task_output", {"id": "bogus"}, "is not a job id"),
                ("task_output", {"id": "t9"}, "no job t9 in this session"),
                ("task_output", {"id": "t1", "since": -3}, "cannot be negative"),
                ("task_output", {"id": "t1", "since": 99999}, "past the end"),
                ("task_wait", {"id": "s01"}, "is not a job id"),
                ("task_stop", {"id": "t2"}, "no job t2 in this session"),
                ("task_stop", {}, "invalid arguments"),
            ]
            for tool, args, expected in cases:
                r = await a.call_tool(tool, args)
                assert r.is_error is True, (tool, args)
                assert expected in text(r), (tool, args, text(r))
            # Another session's t1 looks exactly like a job that does not exist.
            for tool in ["task_output", "task_wait", "task_stop"]:
                foreign = await b.call_tool(tool, {"id": "t1"})
                missing = await a.call_tool(tool, {"id": "t5"})
                assert foreign.is_error is True
                assert text(foreign) == text(missing).replace("t5", "t1")
            r = await a.call_tool("task_list", {})
            assert r.structured_content["jobs"][0]["state"] == "running"

    run(body())
