"""`terminal` with `parse: true` through the official MCP Python SDK (docs/BEHAVIOUR.md §8).

Real commands run in the server's sandbox; the typed facts are compared with ground truth taken
here (os.stat, the job the test started), and the data is validated against the schema the
server publishes as a resource.
"""

import asyncio
import json
import os
import tempfile

import jsonschema
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from private_dirs import private_dir

BIN = os.environ.get("AGENTTY_BIN", "target/debug/agentty")


def run(coro_fn):
    async def scenario():
        with tempfile.TemporaryDirectory() as ws, private_dir() as state:
            params = StdioServerParameters(
                command=BIN, args=["serve", "--workspace", ws, "--state-dir", state]
            )
            async with stdio_client(params) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    return await coro_fn(session, ws)

    return asyncio.run(scenario())


def text(result):
    return "".join(c.text for c in result.content if getattr(c, "type", "") == "text")


async def schema_of(session, type_name):
    read = await session.read_resource(f"agentty://schema/{type_name}")
    return json.loads(read.contents[0].text)


def test_ls_becomes_a_directory_listing_with_the_facts_of_stat():
    async def body(session, ws):
        os.mkdir(os.path.join(ws, "sub dir"))
        with open(os.path.join(ws, "a.txt"), "wb") as f:
            f.write(b"x" * 1234)
        os.symlink("a.txt", os.path.join(ws, "link"))
        result = await session.call_tool("terminal", {"command": "ls -la", "parse": True})
        assert result.is_error is False, text(result)
        parsed = result.structured_content["parsed"]
        assert parsed["type"] == "DirectoryListing"
        assert parsed["schema"] == "agentty://schema/DirectoryListing"
        jsonschema.validate(parsed["data"], await schema_of(session, "DirectoryListing"))
        entries = {e["name"]: e for e in parsed["data"]["entries"]}
        for name in ["a.txt", "sub dir", "link"]:
            st = os.lstat(os.path.join(ws, name))
            assert entries[name]["size_bytes"] == st.st_size, name
        assert entries["link"]["target"] == "a.txt"
        # The model reads the typed line under the status line, not the raw listing as well.
        lines = text(result).splitlines()
        assert lines[0].startswith("[exit 0"), lines
        assert lines[1].startswith("DirectoryListing {"), lines
        # The same facts, with the records as a table (the values every record shares under
        # "same") and times as their RFC 3339 text.
        typed = json.loads(lines[1][len("DirectoryListing "):])
        table = typed["entries"]
        rows = [dict(table.get("same", {}), **dict(zip(table["columns"], r))) for r in table["rows"]]
        data = parsed["data"]["entries"]
        assert [r["name"] for r in rows] == [e["name"] for e in data]
        for row, entry in zip(rows, data):
            assert row["modified"] == entry["modified"]["rfc3339"], (row, entry)
            assert row["permissions"] == entry["permissions"], (row, entry)
            for key in ["size_bytes", "owner", "group", "links", "type", "target"]:
                assert row.get(key) == entry.get(key), (key, row, entry)
        # `mode` says what `permissions` does: only programs get it, in structuredContent.
        assert "mode" not in table["columns"] and "mode" not in table.get("same", {})
        assert all("mode" in e for e in data)
        assert "-rw" not in text(result)

    run(body)


def test_ps_piped_through_grep_keeps_its_columns_without_the_header():
    async def body(session, ws):
        job = await session.call_tool(
            "terminal", {"command": "exec sleep 321", "background": True}
        )
        pid = job.structured_content["pid"]
        try:
            result = await session.call_tool(
                "terminal", {"command": "ps aux | grep '[s]leep 321'", "parse": True}
            )
            parsed = result.structured_content["parsed"]
            assert parsed["type"] == "ProcessList", text(result)
            jsonschema.validate(parsed["data"], await schema_of(session, "ProcessList"))
            procs = parsed["data"]["processes"]
            assert len(procs) == 1, procs
            assert procs[0]["command"] == "sleep 321"
            # The job's pid as the server sees it; ps inside the sandbox may see another
            # pid namespace, so only the command and the numeric columns are compared here.
            assert isinstance(procs[0]["pid"], int) and pid
        finally:
            await session.call_tool("task_stop", {"id": job.structured_content["job_id"]})

    run(body)


def test_unknown_commands_are_text_with_one_note():
    async def body(session, ws):
        result = await session.call_tool("terminal", {"command": "echo hi", "parse": True})
        assert result.is_error is False
        assert "parsed" not in result.structured_content
        out = text(result)
        assert out.startswith("hi\n")
        notes = [l for l in out.splitlines() if l.startswith("[note] not parsed")]
        assert len(notes) == 1 and "`echo`" in notes[0], out
        for command, why in [
            ("ls -l > listing.txt", "redirected"),
            ("ls -l; ps aux", "one pipeline"),
            ("ls -l | awk '{print $5}'", "awk"),
        ]:
            result = await session.call_tool("terminal", {"command": command, "parse": True})
            assert "parsed" not in result.structured_content, command
            assert why in text(result), (command, text(result))

    run(body)


def test_a_result_over_the_budget_keeps_whole_records_and_says_how_many_are_left_out():
    async def body(session, ws):
        big = os.path.join(ws, "big")
        os.mkdir(big)
        for i in range(3000):
            open(os.path.join(big, f"file-with-a-long-name-{i:05}.txt"), "w").close()
        result = await session.call_tool(
            "terminal", {"command": "ls -l big", "parse": True}
        )
        parsed = result.structured_content["parsed"]
        kept = len(parsed["data"]["entries"])
        assert 0 < kept < 3000 and parsed["omitted"] == 3000 - kept
        assert len(text(result).encode()) < 52 * 1024
        assert f"{3000 - kept} of 3000 entries left out" in text(result)
        jsonschema.validate(parsed["data"], await schema_of(session, "DirectoryListing"))

    run(body)


def test_schemas_are_resources_and_parse_refuses_background():
    async def body(session, ws):
        listed = (await session.list_resources()).resources
        uris = {str(r.uri) for r in listed}
        for name in [
            "DirectoryListing", "ProcessList", "HttpResponseHeader", "GitStatus", "GitLog",
            "DiskUsage", "MemoryUsage", "Diagnostics", "TestReport",
        ]:
            assert f"agentty://schema/{name}" in uris
            schema = await schema_of(session, name)
            assert schema["$id"] == f"agentty://schema/{name}"
            jsonschema.Draft202012Validator.check_schema(schema)
        result = await session.call_tool(
            "terminal", {"command": "ls -l", "parse": True, "background": True}
        )
        assert result.is_error is True and "`parse`" in text(result)

    run(body)


def test_a_failing_cargo_build_becomes_diagnostics():
    async def body(session, ws):
        os.makedirs(os.path.join(ws, "src"))
        with open(os.path.join(ws, "Cargo.toml"), "w") as f:
            # `[workspace]`: a stray Cargo.toml above the temp dir must not adopt this one.
            f.write('[package]\nname = "demo"\nversion = "0.1.0"\nedition = "2021"\n[workspace]\n')
        with open(os.path.join(ws, "src", "main.rs"), "w") as f:
            f.write('fn main() {\n    let x: u32 = "no";\n}\n')
        result = await session.call_tool(
            "terminal",
            {"command": "cargo build --offline 2>&1 | tail -40", "parse": True, "timeout_ms": 300000},
        )
        parsed = result.structured_content.get("parsed")
        assert parsed and parsed["type"] == "Diagnostics", text(result)
        errors = [d for d in parsed["data"]["diagnostics"] if d["severity"] == "error"]
        assert errors[0]["code"] == "E0308"
        assert errors[0]["file"] == "src/main.rs" and errors[0]["line"] == 2
        jsonschema.validate(parsed["data"], await schema_of(session, "Diagnostics"))

    run(body)
