"""Every typed result validates against the schema agentty publishes for its type.

The inputs are the parsers' fixtures (real outputs of real programs, crates/parse/tests/fixtures),
parsed by the binary (`agentty parse`, the same code as `terminal` with `parse: true`); the schema
is the one `resources/read` serves (`agentty parse --schema TYPE` prints the same document).
A schema that says a field is required while the parser leaves it out, or the reverse, fails here.
"""

import json
import os
import pathlib
import subprocess

import jsonschema
import pytest

BIN = os.environ.get("AGENTTY_BIN", "target/debug/agentty")
FIXTURES = pathlib.Path(__file__).resolve().parents[2] / "crates/parse/tests/fixtures"


def fixtures():
    return sorted(FIXTURES.glob("*/*.cmd"))


def schema(type_name, cache={}):
    if type_name not in cache:
        out = subprocess.run([BIN, "parse", "--schema", type_name], capture_output=True, check=True)
        cache[type_name] = json.loads(out.stdout)
    return cache[type_name]


def test_there_are_fixtures_of_every_type():
    types = set()
    for cmd in fixtures():
        parsed = parse(cmd)
        if parsed:
            types.add(parsed["type"])
    listed = subprocess.run([BIN, "parse", "--schema", "list"], capture_output=True, check=True, text=True)
    names = {line.split(":")[0] for line in listed.stdout.splitlines()}
    assert types == names


def parse(cmd):
    argv = cmd.read_text().split()
    args = [BIN, "parse"]
    err = cmd.with_suffix(".err")
    if err.exists():
        args += ["--stderr", str(err)]
    exit_file = cmd.with_suffix(".exit")
    args += ["--exit-code", exit_file.read_text().strip() if exit_file.exists() else "0"]
    out = subprocess.run(
        args + ["--"] + argv, stdin=open(cmd.with_suffix(".out"), "rb"), capture_output=True
    )
    assert out.returncode == 0, (cmd, out.stderr)
    return json.loads(out.stdout)


@pytest.mark.parametrize("cmd", fixtures(), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_fixture_validates_against_its_schema(cmd):
    parsed = parse(cmd)
    assert parsed["schema"] == f"agentty://schema/{parsed['type']}"
    jsonschema.Draft202012Validator(schema(parsed["type"])).validate(parsed["data"])
