"""Differential test: agentty's `ps` and `curl -I` parsers against jc's `ps` and `curl_head`,
field by field, on the same real output (each program runs once; both parsers read its stdout).

Deliberate differences (agentty vs jc), each checked as such below:
- ps: `VSZ`/`RSS` are bytes (`vsz_bytes`, `rss_bytes`); jc keeps ps's KiB.
- ps: `TIME` is `cpu_seconds`, a number; jc keeps the text (`0:08`, `00:00:08`).
- ps: `TTY` keeps ps's `?` for "no terminal"; jc turns it into null.
- ps: one name per fact whatever the header: the `-f` `UID` column (a user name) is `user`,
  `CMD`/`COMMAND` is `command` (or `comm` when ps prints the bare name), `STIME`/`START` is
  `start` (plus `started`, a timestamp, when ps printed a time of day). jc keys on the header.
- ps: rows are read by the columns the flags select, so `ps aux | grep x` (no header) parses;
  jc takes the first line as the header. Checked against the unfiltered rows instead.
- curl: headers stay a list of `{name, value}` in order with the name's case and every
  duplicate; jc lower-cases names into keys, keeps only the last value of an ordinary duplicate,
  splits some values on commas, and fails on folded or empty header lines (not sent here).
- curl: `http_version` drops `HTTP/`; `reason` is a string, absent when empty (jc: a list or null).
"""

import http.server
import json
import os
import subprocess
import tempfile
import threading

import jc
import pytest
from jc.parsers.http_headers import MULTI_HEADERS, SPLIT_AND_MULTI_HEADERS

BIN = os.environ.get("AGENTTY_BIN", "target/debug/agentty")
ENV = {"LC_ALL": "C", "TZ": "UTC", "PATH": os.environ.get("PATH", "/usr/bin:/bin")}


def run(argv):
    out = subprocess.run(argv, env=ENV, capture_output=True, text=True)
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


def seconds(text):
    """ps's `[DD-]HH:MM:SS` or `MMM:SS` in seconds."""
    days, _, clock = text.rpartition("-")
    total = int(days or 0) * 86400
    for part in clock.split(":"):
        total = total * 60 + int(part)
    return total


@pytest.fixture(scope="module")
def sleeper():
    child = subprocess.Popen(["sh", "-c", "sleep 60; exit 0", "agentty  ps", "test arg"])
    yield child.pid
    child.kill()
    child.wait()


# ps column in jc's output -> (our field, how ours relates to jc's value)
SAME = lambda ours, theirs: ours == theirs  # noqa: E731
KIB = lambda ours, theirs: ours == theirs * 1024  # noqa: E731
TTY = lambda ours, theirs: ours == (theirs if theirs is not None else "?")  # noqa: E731
TIME = lambda ours, theirs: ours == seconds(theirs)  # noqa: E731
PS_FIELDS = {
    "user": ("user", SAME), "uid": ("user", SAME), "pid": ("pid", SAME), "ppid": ("ppid", SAME),
    "c": ("c", SAME), "cpu_percent": ("cpu_percent", SAME), "mem_percent": ("mem_percent", SAME),
    "vsz": ("vsz_bytes", KIB), "rss": ("rss_bytes", KIB), "tty": ("tty", TTY), "stat": ("stat", SAME),
    "start": ("start", SAME), "stime": ("start", SAME), "time": ("cpu_seconds", TIME),
    "command": ("command", SAME), "cmd": ("command", SAME),
}


@pytest.mark.parametrize("argv", [
    ["ps", "aux"], ["ps", "-ef"], ["ps", "-eo", "pid,ppid,rss,args"], ["ps", "axu"],
])
def test_ps_matches_jc(argv, sleeper):
    stdout, stderr, code = run(argv)
    assert code == 0, stderr
    ours = agentty(argv, stdout)
    assert ours["type"] == "ProcessList"
    mine = ours["data"]["processes"]
    theirs = jc.parse("ps", stdout, quiet=True)
    assert len(mine) == len(theirs) > 3
    compared = set()
    for row, ref in zip(mine, theirs):
        for key, value in ref.items():
            field, same = PS_FIELDS[key]
            assert same(row.get(field), value), f"{argv} {key}: ours {row.get(field)!r}, jc {value!r}"
            compared.add(key)
    assert len(compared) == len(ref), compared
    assert any(row["pid"] == sleeper and row["command"] == "sh -c sleep 60; exit 0 agentty  ps test arg"
               for row in mine)


def test_ps_through_grep_keeps_the_unfiltered_rows(sleeper):
    line = "ps aux | grep '[s]leep 60'"
    stdout, stderr, code = run(["sh", "-c", line])
    assert code == 0, stderr
    ours = agentty([line], stdout)["data"]["processes"]
    assert ours and all("sleep 60" in row["command"] for row in ours)
    full = {row["pid"]: row for row in agentty(["ps", "aux"], run(["ps", "aux"])[0])["data"]["processes"]}
    for row in ours:
        if row["pid"] in full:  # still running when ps ran the second time
            assert row["command"] == full[row["pid"]]["command"]
            assert row["user"] == full[row["pid"]]["user"]


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    ANSWERS = {
        "/old": (301, [("Location", "/new"), ("Content-Length", "0")]),
        "/new": (200, [
            ("Content-Type", "text/html; charset=utf-8"),
            ("Set-Cookie", "a=1; Path=/"),
            ("Set-Cookie", "b=2; HttpOnly"),
            ("Cache-Control", "no-cache, no-store"),
            ("Vary", "Accept, Accept-Encoding"),
            ("X-Request-Id", "abc"),
            ("Content-Length", "12"),
        ]),
    }

    def do_HEAD(self):
        status, headers = self.ANSWERS.get(self.path, (404, [("Content-Length", "0")]))
        self.send_response_only(status)
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def server():
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


@pytest.mark.parametrize("flags", [["-sIL"], ["-sSI"], ["--head", "--location", "--silent"]])
def test_curl_head_matches_jc(flags, server):
    argv = ["curl", *flags, f"{server}/old"]
    stdout, stderr, code = run(argv)
    assert code == 0, stderr
    ours = agentty(argv, stdout)
    assert ours["type"] == "HttpResponseHeader"
    mine = ours["data"]["responses"]
    theirs = jc.parse("curl_head", stdout, raw=True, quiet=True)
    assert len(mine) == len(theirs) == (2 if "-sSI" not in flags else 1)
    for response, ref in zip(mine, theirs):
        assert "HTTP/" + response["http_version"] == ref["_response_version"]
        assert response["status"] == ref["_response_status"]
        assert [response["reason"]] == ref["_response_reason"]
        by_name = {}
        for header in response["headers"]:
            by_name.setdefault(header["name"].lower(), []).append(header["value"])
        assert set(by_name) == {k for k in ref if not k.startswith("_")}
        for name, values in by_name.items():
            if name in SPLIT_AND_MULTI_HEADERS:
                expected = [part.strip() for value in values for part in value.split(",")]
            elif name in MULTI_HEADERS:
                expected = values
            else:
                expected = values[-1]
            assert ref[name] == expected, name
    # What the server sent, duplicates and order included.
    final = mine[-1]
    status, headers = Handler.ANSWERS["/new" if len(mine) == 2 else "/old"]
    sent = [{"name": n, "value": v} for n, v in headers]
    assert final["status"] == status
    assert [h for h in final["headers"] if h["name"] in {n for n, _ in headers}] == sent
