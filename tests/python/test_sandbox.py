"""One-time escalation end to end with the official MCP Python SDK's elicitation callback.

Approve: the one call runs unconfined, the next is confined again. Decline: refused. A client
without elicitation: refused. The kernel (Landlock) enforces the confinement being lifted.
"""

import asyncio
import os
import tempfile

import mcp.types as types
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from private_dirs import private_dir

BIN = os.environ.get("AGENTTY_BIN", "target/debug/agentty")


def run(body, elicitation_callback=None):
    async def scenario():
        with tempfile.TemporaryDirectory() as ws, private_dir() as state:
            params = StdioServerParameters(
                command=BIN, args=["serve", "--workspace", ws, "--state-dir", state]
            )
            async with stdio_client(params) as (read, write):
                async with ClientSession(
                    read, write, elicitation_callback=elicitation_callback
                ) as session:
                    await session.initialize()
                    return await body(session)

    return asyncio.run(scenario())


def outside(name):
    return os.path.join(os.path.expanduser("~"), f"agentty-escalate-{name}-{os.getpid()}")


def escalated_write(path):
    return {
        "command": f"echo x > {path}",
        "sandbox_permissions": "require_escalated",
        "justification": "the test writes outside the workspace",
    }


def approving():
    """An elicitation callback that approves every question, and the list of questions asked."""
    asked = []

    async def approve(context, params):
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"approve": True})

    return asked, approve


def text(result):
    return "".join(c.text for c in result.content if getattr(c, "type", "") == "text")


def test_approve_runs_once_unconfined_then_confined_again():
    asked, approve = approving()

    path = outside("approve")

    async def body(session):
        # A refused write tells the model how to retry, and the way depends on the tool.
        refused = await session.call_tool("terminal", {"command": f"echo x > {path}"})
        assert refused.structured_content["error_code"] == 2008, text(refused)
        assert 'retry with sandbox_permissions: "require_escalated"' in text(refused)
        opened = await session.call_tool("shell_open", {})
        shell = opened.structured_content["id"]
        refused = await session.call_tool("shell_send", {"id": shell, "input": f"echo x > {path}\n"})
        assert refused.structured_content["error_code"] == 2008, text(refused)
        assert "in a new shell_open, with sandbox_permissions" in text(refused), text(refused)
        await session.call_tool("shell_close", {"id": shell})
        assert not os.path.exists(path)
        first = await session.call_tool("terminal", escalated_write(path))
        assert first.structured_content["status"] == "success", text(first)
        assert "escalation approved" in first.structured_content["sandbox"]
        assert os.path.exists(path)
        os.remove(path)
        second = await session.call_tool("terminal", {"command": f"echo x > {path}"})
        assert second.structured_content["status"] == "failed"
        assert "enforced" in second.structured_content["sandbox"]
        assert not os.path.exists(path)

    try:
        run(body, approve)
    finally:
        if os.path.exists(path):
            os.remove(path)
    assert len(asked) == 1 and "always" not in asked[0].lower()


def test_decline_refuses():
    async def decline(context, params):
        return types.ElicitResult(action="decline")

    path = outside("decline")

    async def body(session):
        result = await session.call_tool("terminal", escalated_write(path))
        assert result.is_error is True
        assert "declined" in text(result)

    run(body, decline)
    assert not os.path.exists(path)


def test_client_without_elicitation_is_refused():
    path = outside("none")

    async def body(session):
        result = await session.call_tool("terminal", escalated_write(path))
        assert result.is_error is True
        assert "cannot ask the user" in text(result), text(result)
        # So a refused write does not suggest an escalation that would be refused too.
        refused = await session.call_tool("terminal", {"command": f"echo x > {path}"})
        assert refused.structured_content["error_code"] == 2008, text(refused)
        assert "cannot ask the user to lift the sandbox" in text(refused), text(refused)
        assert "require_escalated" not in text(refused), text(refused)

    run(body)
    assert not os.path.exists(path)


def test_arguments_are_checked_before_the_user_is_asked():
    """A call that cannot run as asked is refused before any approval form is shown."""
    asked, approve = approving()

    async def body(session):
        results = []
        for extra in (
            {"pty": True, "background": True},
            {"pty": True, "on_timeout": "background"},
            {"timeout_ms": 0},
            {"workdir": "/nonexistent-dir"},
            {"env": {"A=B": "x"}},
        ):
            args = {**escalated_write(outside("never")), **extra}
            results.append(await session.call_tool("terminal", args))
        return results

    results = run(body, elicitation_callback=approve)
    for result in results:
        assert result.is_error, text(result)
    assert "cannot be combined with `background`" in text(results[0])
    assert "cannot be combined with `background`" in text(results[1])
    assert asked == [], asked
    assert not os.path.exists(outside("never"))


def test_a_background_job_over_the_cap_is_refused_before_the_user_is_asked():
    asked, approve = approving()

    async def body(session):
        for _ in range(8):
            r = await session.call_tool("terminal", {"command": "sleep 60", "background": True})
            assert not r.is_error, text(r)
        args = {**escalated_write(outside("never-bg")), "background": True}
        return await session.call_tool("terminal", args)

    result = run(body, elicitation_callback=approve)
    assert result.is_error, text(result)
    assert asked == [], asked
    assert not os.path.exists(outside("never-bg"))


def test_a_shell_over_the_cap_is_refused_before_the_user_is_asked():
    asked, approve = approving()

    async def body(session):
        for _ in range(4):
            r = await session.call_tool("shell_open", {})
            assert not r.is_error, text(r)
        return await session.call_tool(
            "shell_open",
            {"sandbox_permissions": "require_escalated", "justification": "the test asks"},
        )

    result = run(body, elicitation_callback=approve)
    assert result.is_error, text(result)
    assert asked == [], asked
