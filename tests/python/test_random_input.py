"""Random arguments of every type to all ten tools, through the official MCP Python SDK.

The server must answer every call (a result or a tool error with words in it), never crash or
hang, and still run a command afterwards. The seeds are fixed, so a failure reproduces.
"""

import asyncio
import os
import random
import tempfile

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from private_dirs import private_dir

BIN = os.environ.get("AGENTTY_BIN", "target/debug/agentty")
CALLS = 300

TOOLS = [
    "terminal", "task_list", "task_output", "task_wait", "task_stop",
    "shell_open", "shell_send", "shell_read", "shell_list", "shell_close",
]
KEYS = [
    "command", "argv", "workdir", "env", "stdin", "timeout_ms", "background", "pty",
    "on_timeout", "sandbox_permissions", "justification", "id", "since", "input",
    "wait_for", "cols", "rows", "screen", "raw",
]
STRINGS = [
    "", "t1", "s1", "t0", "s01", "t99999999999999999999", "../..", "/", "\u0000", "x" * 200_000,
    "\ufffd\udcff".encode("utf-8", "surrogatepass").decode("utf-8", "replace"), "echo hi", "[",
    "(?", "\x03", "\n", "true", "cat", "exit 3", "sleep 0.1",
]
NUMBERS = [0, -1, 1, 2**31, -(2**63), 2**64, 1.5, 1e308]


def value(rng, depth=0):
    kind = rng.randrange(7)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice([True, False])
    if kind == 2:
        return rng.choice(NUMBERS)
    if kind == 3 and depth < 2:
        return [value(rng, depth + 1) for _ in range(rng.randrange(4))]
    if kind == 4 and depth < 2:
        keys = KEYS + ["A", "PATH", "LD_PRELOAD"]
        return {rng.choice(keys): value(rng, depth + 1) for _ in range(rng.randrange(4))}
    return rng.choice(STRINGS)


def arguments(rng):
    args = {rng.choice(KEYS): value(rng) for _ in range(rng.randrange(5))}
    timeout = args.get("timeout_ms")
    if isinstance(timeout, (int, float)) and not isinstance(timeout, bool) and timeout > 2000:
        args["timeout_ms"] = 1000  # keep the run short; huge values are covered elsewhere
    return args


def run_seed(seed):
    async def scenario():
        rng = random.Random(seed)
        with tempfile.TemporaryDirectory() as ws, private_dir() as state:
            params = StdioServerParameters(
                command=BIN,
                args=["serve", "--workspace", ws, "--state-dir", state, "--shell-idle-ms", "5000"],
            )
            async with stdio_client(params) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    answered = 0
                    for _ in range(CALLS):
                        tool = rng.choice(TOOLS)
                        args = arguments(rng)
                        result = await asyncio.wait_for(session.call_tool(tool, args), 30)
                        if result.is_error:
                            said = "".join(getattr(c, "text", "") for c in result.content)
                            assert said.strip(), (tool, args)
                        else:
                            answered += 1
                    assert answered > 0, "no call was valid: the generator tests nothing"
                    alive = await session.call_tool("terminal", {"argv": ["echo", "alive"]})
                    assert alive.is_error is False
                    assert alive.structured_content["stdout"] == "alive\n"

    asyncio.run(scenario())


def test_random_arguments_never_crash_or_hang_the_server():
    for seed in (7, 11):
        run_seed(seed)
