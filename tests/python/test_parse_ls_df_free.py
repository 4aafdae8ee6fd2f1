"""Differential test: agentty's `ls -l`, `df` and `free` parsers against jc's, field by field,
on the same real output (each program runs once; both parsers read its stdout).

Deliberate differences (agentty vs jc), each checked as such below:
- ls: only a symlink's line is split at ` -> `, and when the name or target holds one too, where
  the target's length equals the size `ls` prints for a link; jc splits every entry (a file
  named `x -> y` too) at the first ` -> ` and drops anything after a second.
- ls: `-lh` sizes become bytes with the printed text kept (`size_raw`); jc's integer conversion
  keeps the leading digits (`2.4M` -> 2). Compared on the printed text.
- ls: every date becomes RFC 3339 + epoch (the year of recent dates inferred, `raw` kept); jc
  keeps the text and gives an epoch only for ISO styles. Compared on the text, and on jc's
  `epoch_utc` for `--full-time`.
- ls: jc's `flags` is our type letter + `permissions` (+ `+` when `acl`).
- df: sizes in bytes; jc keeps block counts (`1k_blocks`, and `used`/`available` in the same
  blocks). `-H` sizes are powers of 1000 (jc reads `13G` as 13 GiB). `-i`: jc leaves `inodes` a
  string. `--total`'s row is our top-level `total`, not a file system; `-` is absent, not `-`.
- free: values in bytes (jc keeps free's unit, KiB by default); `-h` values are rounded where jc
  truncates (at most 1 byte apart). Row names are lower case (`mem`), jc's `type` is `Mem`.
"""

import json
import os
import socket
import subprocess
import tempfile

import jc
import pytest

BIN = os.environ.get("AGENTTY_BIN", "target/debug/agentty")
ENV = {"LC_ALL": "C", "TZ": "UTC", "PATH": os.environ.get("PATH", "/usr/bin:/bin")}


def run(argv, cwd=None):
    out = subprocess.run(argv, cwd=cwd, env=ENV, capture_output=True, text=True)
    return out.stdout, out.stderr, out.returncode


def agentty(argv, stdout, stderr="", code=0):
    with tempfile.NamedTemporaryFile("w", suffix=".err") as err:
        err.write(stderr)
        err.flush()
        out = subprocess.run(
            [BIN, "parse", "--stderr", err.name, "--exit-code", str(code), "--", *argv],
            input=stdout, capture_output=True, text=True,
        )
    assert out.returncode == 0, f"{argv}: {out.stderr}"
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def tree():
    with tempfile.TemporaryDirectory() as d:
        for name, size in [("empty", 0), ("three", 3), ("big file", 2_500_000), ("ünïcødé", 2), ("x -> y", 1)]:
            with open(os.path.join(d, name), "wb") as f:
                f.truncate(size)
        with open(os.path.join(d, "two\nlines"), "w") as f:
            f.write("x")
        os.chmod(os.path.join(d, "three"), 0o4751)
        os.symlink("three", os.path.join(d, "link"))
        os.symlink("docs", os.path.join(d, "dl -> x"))
        os.mkfifo(os.path.join(d, "pipe"))
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(os.path.join(d, "sock"))
        os.makedirs(os.path.join(d, "docs", "deep"))
        with open(os.path.join(d, "docs", "inner"), "w") as f:
            f.write("12345")
        os.utime(os.path.join(d, "empty"), (1_577_934_245, 1_577_934_245))
        yield d
        sock.close()


TYPE_LETTER = {"file": "-", "directory": "d", "symlink": "l", "char_device": "c", "block_device": "b",
               "fifo": "p", "socket": "s", "door": "D", "unknown": "?"}


@pytest.mark.parametrize("argv", [
    ["ls", "-la"], ["ls", "-l", "--full-time"], ["ls", "-lR"], ["ls", "-ln"], ["ls", "-lh"],
    ["ls", "-l", "--time-style=long-iso"], ["ls", "-l", "three", "docs", "/dev/null"],
])
def test_ls_matches_jc(tree, argv):
    stdout, stderr, code = run(argv, cwd=tree)
    ours = agentty(argv, stdout, stderr, code)["data"]["entries"]
    theirs = jc.parse("ls", stdout, quiet=True)
    raw = jc.parse("ls", stdout, quiet=True, raw=True)
    assert len(ours) == len(theirs) == len(raw)
    for o, j, r in zip(ours, theirs, raw):
        full = o["name"] + (" -> " + o["target"] if "target" in o else "")
        if " -> " in o["name"] or " -> " in o.get("target", ""):
            # Deliberate: jc splits any entry (a regular file too) at the first arrow, and
            # drops what follows a second; we split symlinks only, where the size says.
            parts = full.split(" -> ")
            assert (j["filename"], j.get("link_to")) == (parts[0], parts[1])
            assert o["name"] in ("dl -> x", "x -> y"), o
            assert o.get("target") == ("docs" if o["type"] == "symlink" else None), o
        else:
            assert o["name"] == j["filename"]
            assert o.get("target") == j.get("link_to")
        flags = TYPE_LETTER[o["type"]] + o["permissions"] + ("+" if o.get("acl") else "")
        assert flags == j["flags"]
        assert (o["links"], o["owner"], o["group"]) == (j["links"], j["owner"], j["group"])
        assert o.get("directory") == j.get("parent")
        if "device" in o:
            assert (o["device"]["major"], o["device"]["minor"]) == (j["major_number"], j["minor_number"])
        elif "-lh" in argv:
            assert o.get("size_raw", str(o["size_bytes"])) == r["size"]
        else:
            assert o["size_bytes"] == j["size"]
        when = o["modified"]
        if "raw" in when:
            assert " ".join(when["raw"].split()) == j["date"]
        else:
            assert when["epoch"] == j["epoch_utc"]


def blocks_unit(key):
    return {"1k_blocks": 1024, "1b_blocks": 1, "1024_blocks": 1024}[key]


@pytest.mark.parametrize("argv", [
    ["df"], ["df", "-B1"], ["df", "-T"], ["df", "-P"], ["df", "-h"], ["df", "-H"], ["df", "-i"],
    ["df", "-hT", "--total"], ["df", "-a"],
])
def test_df_matches_jc(argv):
    stdout, stderr, code = run(argv)
    data = agentty(argv, stdout, stderr, code)["data"]
    theirs = jc.parse("df", stdout, quiet=True)
    ours = data["filesystems"] + ([data["total"]] if "total" in data else [])
    assert len(ours) == len(theirs)
    for o, j in zip(ours, theirs):
        assert (o["filesystem"], o["mounted_on"]) == (j["filesystem"], j["mounted_on"])
        assert o.get("type", "-" if "type" in j else None) == j.get("type")
        if "-i" in argv:
            assert o["inodes"] == int(j["inodes"])
            assert (o["inodes_used"], o["inodes_free"]) == (j["iused"], j["ifree"])
            assert o.get("inodes_use_percent") == (None if j["iuse%"] == "-" else int(j["iuse%"].rstrip("%")))
            continue
        assert o.get("use_percent") == j.get("use_percent", j.get("capacity_percent"))
        blocks = [k for k in j if k.endswith("_blocks")]
        if blocks:
            unit = blocks_unit(blocks[0])
            assert o["size_bytes"] == j[blocks[0]] * unit
            assert (o["used_bytes"], o["available_bytes"]) == (j["used"] * unit, j["available"] * unit)
        elif "-H" in argv:
            # Deliberate: powers of 1000; jc reads the same text with powers of 1024.
            for key, raw in [("size_bytes", "size_raw"), ("used_bytes", "used_raw")]:
                if raw in o:
                    assert o[key] < j[key.removesuffix("_bytes")], (o, j)
        else:
            for key in ["size", "used", "available"]:
                assert abs(o[f"{key}_bytes"] - j[key]) <= 1, (key, o, j)


FREE_UNIT = {"free": 1024, "-b": 1, "-w": 1024, "-t": 1024, "-m": 1 << 20, "-h": None}


@pytest.mark.parametrize("argv", [
    ["free"], ["free", "-b"], ["free", "-w"], ["free", "-t"], ["free", "-m"], ["free", "-h"], ["free", "-h", "--si"],
])
def test_free_matches_jc(argv):
    stdout, stderr, code = run(argv)
    ours = agentty(argv, stdout, stderr, code)["data"]["rows"]
    theirs = jc.parse("free", stdout, quiet=True)
    unit = FREE_UNIT[argv[1] if len(argv) > 1 else "free"]
    assert len(ours) == len(theirs)
    for o, j in zip(ours, theirs):
        assert o["name"] == j["type"].lower()
        keys = [k for k in j if k != "type"]
        assert sorted(k for k in o if k.endswith("_bytes")) == sorted(f"{k}_bytes" for k in keys)
        for key in keys:
            if unit is None:
                assert abs(o[f"{key}_bytes"] - j[key]) <= 1, (key, o, j)
            else:
                assert o[f"{key}_bytes"] == j[key] * unit, (key, o, j)
