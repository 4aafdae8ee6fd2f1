"""Differential test: agentty's `git log` parser against jc's `git_log`, field by field, on the
same real output of a repository made for the test (jc has no `git status` parser; that one is
checked against git's own machine formats in crates/parse/tests/suite/git.rs).

Deliberate differences (agentty vs jc), each checked as such below:
- Decorations: jc leaves them in `commit` ("abc… (HEAD -> main, tag: v1)"); agentty gives the
  bare `hash` and a `refs` list.
- Merges: jc's `merge` is the `Merge:` line as text; agentty's `parents` is a list.
- Dates: agentty's `epoch` is exact (the printed offset applied); jc's `epoch` is naive (the
  wall-clock time read in the local zone, UTC here) and `epoch_utc` is given only for +0000.
  With `--date=iso` jc keeps the text and no epoch; compared on the text.
- Message: jc gives one `message` with every line stripped of leading spaces; agentty gives git's
  `%s` (first paragraph joined by spaces) as `subject` and `%b` as `body`, indentation kept.
- `--name-status`: jc drops the file lines; agentty lists them (checked against git in Rust).
- `--oneline`: jc reads one-line logs only with full hashes (`--pretty=oneline`) and returns
  nothing for abbreviated ones; compared with `--pretty=oneline`.
"""

import calendar
import datetime
import json
import os
import subprocess
import tempfile

import jc
import pytest

BIN = os.environ.get("AGENTTY_BIN", "target/debug/agentty")
ENV = {
    "LC_ALL": "C",
    "TZ": "UTC",
    "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_PAGER": "cat",
}


def git(repo, *args, date="2026-03-04T05:06:07+0000"):
    env = dict(ENV, GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=date)
    out = subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True)
    assert out.returncode == 0, f"git {args}: {out.stderr}"
    return out.stdout


def agentty(argv, stdout):
    out = subprocess.run([BIN, "parse", "--exit-code", "0", "--", *argv],
                         input=stdout, capture_output=True, text=True)
    assert out.returncode == 0, f"{argv}: {out.stderr}"
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def repo():
    with tempfile.TemporaryDirectory() as d:
        git(d, "init", "-q", "-b", "main")
        git(d, "config", "user.name", "Zoë Ünïcode")
        git(d, "config", "user.email", "zoe@example.com")
        commits = [
            ("a.txt", "2026-01-02T03:04:05+0100", "First commit\n\nBody line one\nBody line two"),
            ("b.txt", "2026-01-03T10:00:00-0700", "Second\nwraps on two lines\n\n  indented body\n\nlast"),
            ("c.txt", "2026-01-04T11:00:00+0530", "(wip) third"),
        ]
        for name, date, message in commits:
            with open(os.path.join(d, name), "w") as f:
                f.write(name)
            git(d, "add", name)
            git(d, "commit", "-q", "-m", message, date=date)
        git(d, "checkout", "-q", "-b", "side", "HEAD~1")
        with open(os.path.join(d, "side.txt"), "w") as f:
            f.write("s")
        git(d, "add", "side.txt")
        git(d, "commit", "-q", "-m", "Side", date="2026-01-05T12:00:00+0000")
        git(d, "checkout", "-q", "main")
        git(d, "merge", "-q", "--no-ff", "side", "-m", "Merge side\n\nWith a body.", date="2026-01-06T13:00:00-0300")
        git(d, "tag", "v1.0")
        yield d


def naive_epoch(rfc3339):
    """The printed wall-clock time read as UTC, as jc's naive epoch does under TZ=UTC."""
    return calendar.timegm(datetime.datetime.fromisoformat(rfc3339).replace(tzinfo=None).timetuple())


def message_parts(message):
    """jc's message as git's %s and %b, lines stripped as jc strips them."""
    subject, _, body = message.partition("\n\n")
    return " ".join(subject.split("\n")), body.strip("\n")


@pytest.mark.parametrize("args", [
    ["log"], ["log", "--decorate"], ["log", "-n", "3"], ["log", "--date=iso"], ["log", "--name-status"],
])
def test_log_matches_jc(repo, args):
    text = git(repo, *args)
    ours = agentty(["git", *args], text)
    assert ours["type"] == "GitLog"
    theirs = jc.parse("git_log", text, quiet=True)
    commits = ours["data"]["commits"]
    assert len(commits) == len(theirs) == (3 if "-n" in args else 5)
    for c, j in zip(commits, theirs):
        hash_, _, decorations = j["commit"].partition(" ")
        assert c["hash"] == hash_
        assert decorations == ("(" + ", ".join(c["refs"]) + ")" if c.get("refs") else "")
        assert (c["author"], c["author_email"]) == (j["author"], j["author_email"])
        assert " ".join(c.get("parents", [])) == j.get("merge", "")
        if "--date=iso" in args:
            at = datetime.datetime.fromisoformat(c["date"]["rfc3339"])
            assert at.strftime("%Y-%m-%d %H:%M:%S %z") == j["date"]
        else:
            assert naive_epoch(c["date"]["rfc3339"]) == j["epoch"]
            if j["epoch_utc"] is not None:
                assert c["date"]["epoch"] == j["epoch_utc"]
        subject, body = message_parts(j["message"])
        assert c["subject"] == subject
        assert "\n".join(line.strip() for line in c.get("body", "").split("\n")) == body
    if "--decorate" in args:
        assert commits[0]["refs"] == ["HEAD -> main", "tag: v1.0"]


def test_oneline_matches_jc(repo):
    args = ["log", "--pretty=oneline", "--no-decorate"]
    text = git(repo, *args)
    ours = agentty(["git", *args], text)["data"]["commits"]
    theirs = jc.parse("git_log", text, quiet=True)
    assert len(ours) == len(theirs) == 5
    for c, j in zip(ours, theirs):
        assert (c["hash"], c["subject"]) == (j["commit"], j["message"])
    # With `--no-decorate`, "(wip) third" stays the subject.
    assert "(wip) third" in [c["subject"] for c in ours]


def test_dates_are_exact(repo):
    """Beyond jc: each epoch equals git's own %at."""
    text = git(repo, "log")
    truth = git(repo, "log", "--format=%at").split()
    ours = agentty(["git", "log"], text)["data"]["commits"]
    assert [str(c["date"]["epoch"]) for c in ours] == truth
