"""The web view (docs/BEHAVIOUR.md §12) in a real headless Chromium (Debian's, driven by
Playwright; nothing downloads a browser), and its refusals with plain HTTP requests."""

import asyncio
import json
import os
import re
import shutil
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid

import pytest

from test_http import client, http_server, raw, text, wait_until
from test_http_callers import session, session_call

from private_dirs import private_dir

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None and not os.environ.get("AGENTTY_REQUIRE_CHROMIUM"),
    reason="Debian's chromium is not installed (.ci/run installs it)",
)


def base_of(url):
    return url[: -len("/mcp")]


def get(url, headers=None, method="GET", body=None):
    """(status, headers, text) without following redirects."""

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None

    opener = urllib.request.build_opener(NoRedirect)
    req = urllib.request.Request(url, method=method, data=body)
    for k, v in (headers or {}).items():
        req.add_header(k, v)
    try:
        with opener.open(req, timeout=10) as r:
            return r.status, r.headers, r.read(4096).decode(errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read(4096).decode(errors="replace")


def log_in(base, token):
    """The header that carries the view's key, from a login with `token`."""
    status, headers, said = get(
        f"{base}/view/login", {"Content-Type": "application/json"}, "POST",
        json.dumps({"token": token}).encode(),
    )
    assert status == 200, (status, said)
    assert "Set-Cookie" not in headers, "the view sets no cookie (a browser sends it to every port)"
    key = json.loads(said)["key"]
    assert key != token, "the key must not be the token"
    return {"X-Agentty-View": key}


def open_view(page, base, token):
    """Opens the view in `page` and logs in with `token` through its form."""
    page.goto(f"{base}/")
    page.fill("#token", token)
    page.click("#open")
    page.wait_for_selector("text=live")
    assert token not in page.url, "the token is in the address"
    assert page.context.cookies() == [], "the view set a cookie"


class Agent:
    """An MCP client session over HTTP in plain requests, so the browser and the agent act at
    the same time from one thread."""

    def __init__(self, url, token):
        self.url = url
        self.sid = session(url, token)

    def call(self, tool, args):
        return Result(session_call(self.url, self.sid, tool, args))

    def close(self):
        raw(self.url, None, self.sid, method="DELETE")


class Result:
    def __init__(self, result):
        self.structured_content = result.get("structuredContent")
        self.text = "".join(c.get("text", "") for c in result.get("content", []))


@needs_chromium
def test_the_page_shows_output_live_a_shells_screen_and_never_runs_what_a_job_prints():
    from playwright.sync_api import expect, sync_playwright

    shot = os.path.join(os.environ.get("AGENTTY_ARTIFACTS", "target"), "view-screenshot.png")
    with tempfile.TemporaryDirectory() as gates, http_server() as (url, token, _):
        go = os.path.join(gates, "go")
        agent = Agent(url, token)
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
                page = browser.new_page(viewport={"width": 1280, "height": 800})
                console_errors = []
                page.on("console", lambda m: m.type == "error" and console_errors.append(m.text))
                open_view(page, base_of(url), token)

                # tick-1 is printed, then the job waits at a gate: the page must show tick-1
                # while tick-5 has not been printed yet, then tick-5 once it is.
                ticks = (
                    "echo tick-1; while [ ! -e " + go + " ]; do sleep 0.05; done; "
                    "for i in $(seq 2 5); do echo tick-$i; sleep 0.3; done"
                )
                job = agent.call("terminal", {"command": ticks, "background": True})
                job = job.structured_content["job_id"]
                page.click(f"button.job[data-id='{job}']")
                output = page.locator("#output")
                expect(output).to_contain_text("tick-1", timeout=20000)
                out = agent.call("task_output", {"id": job, "since": 0})
                assert "tick-5" not in out.text, "tick-5 was printed before the page showed tick-1"
                open(go, "w").close()
                expect(output).to_contain_text("tick-5", timeout=20000)
                # Streamed as it was printed, not fetched again.
                expect(output).to_have_attribute("data-snapshots", "1")

                # A shell running top: its rendered screen, header included.
                shell = agent.call("shell_open", {}).structured_content["id"]
                agent.call("shell_send", {"id": shell, "input": "top\n", "timeout_ms": 1500})
                page.wait_for_selector(f"button.job[data-id='{shell}']")
                page.click(f"button.job[data-id='{shell}']")
                expect(output).to_contain_text(re.compile(r"load average|Tasks:"), timeout=20000)
                page.screenshot(path=shot)

                # What a job prints is text, never markup.
                evil = '<img src=x onerror="document.title=\'pwned\'"><script>document.title="pwned"</script>'
                # (It ends at once: an ended job stays on the page with its output.)
                printed = agent.call(
                    "terminal", {"argv": ["printf", "%s\\n", evil], "background": True}
                )
                printed = printed.structured_content["job_id"]
                page.wait_for_selector(f"button.job[data-id='{printed}']")
                page.click(f"button.job[data-id='{printed}']")
                expect(output).to_contain_text("onerror=", timeout=20000)
                time.sleep(0.5)
                assert page.title() != "pwned"
                assert page.locator("#output img").count() == 0
                assert page.locator("#output script").count() == 0
                assert evil in page.locator("#output").text_content()
                # Nothing the page loaded failed (the browser's own icon request included).
                assert console_errors == [], console_errors
                browser.close()
            agent.call("shell_close", {"id": shell})
        finally:
            agent.close()


def test_the_view_refuses_without_the_key_from_elsewhere_and_stops_only_with_control():
    with http_server() as (url, token, _):
        base = base_of(url)
        # The page, its script and its style hold nothing; what they show needs the key.
        status, headers, page = get(base + "/")
        assert status == 200 and "default-src 'none'" in headers["Content-Security-Policy"]
        assert "<script src=\"/view.js\"" in page
        for path in ("/view/events", "/view/stream?session=x&id=t1"):
            assert get(base + path)[0] == 401, path
            assert get(base + path, {"X-Agentty-View": "0" * 64})[0] == 401, path
        # A token in an address stays in the browser's history: refused, and no login.
        status, _, said = get(f"{base}/?token={token}")
        assert status == 400 and "history" in said, (status, said)
        # A login is JSON only (a form of another site cannot post it without asking).
        form = get(f"{base}/view/login", {"Content-Type": "application/x-www-form-urlencoded"},
                   "POST", f"token={token}".encode())
        assert form[0] == 415, form
        wrong = get(f"{base}/view/login", {"Content-Type": "application/json"}, "POST",
                    json.dumps({"token": "0" * 64}).encode())
        assert wrong[0] == 401, wrong
        view = log_in(base, token)
        # The key as a cookie (what another port of this host would be sent) lets nothing in.
        assert get(base + "/view/events", {"Cookie": "agentty_view=" + view["X-Agentty-View"]})[0] == 401
        # Another page's request: refused, key or not, the stream's handshake included.
        for path in ("/", "/view/events", "/view/login"):
            status, _, _ = get(base + path, {**view, "Origin": "http://evil.example"})
            assert status == 403, path
        assert get(base + "/", {**view, "Host": "evil.example"})[0] == 403
        # Read-only: a stop is refused and nothing stops.
        tag = f"view-{uuid.uuid4().hex[:8]}"

        async def body():
            async with client(url, token) as s:
                r = await s.call_tool(
                    "terminal", {"command": "sleep 300", "background": True, "env": {"VIEWTAG": tag}}
                )
                job = r.structured_content["job_id"]
                status, _, events = get_stream(base + "/view/events", view)
                key = next(
                    sess["key"] for sess in events["sessions"] for j in sess["jobs"] if j["id"] == job
                )
                stop = json.dumps({"session": key, "id": job}).encode()
                status, _, said = get(base + "/view/stop", {**view, "Content-Type": "application/json"}, "POST", stop)
                assert status == 403 and "--view-control" in said
                assert pids(tag), "a refused stop stopped the job"
                await s.call_tool("task_stop", {"id": job})

        asyncio.run(body())


def test_with_control_the_view_stops_a_job_and_the_model_is_told():
    tag = f"view-ctl-{uuid.uuid4().hex[:8]}"
    with http_server("--view-control") as (url, token, _):
        base = base_of(url)
        view = log_in(base, token)

        async def body():
            async with client(url, token) as s:
                r = await s.call_tool(
                    "terminal", {"command": "sleep 300", "background": True, "env": {"VIEWTAG": tag}}
                )
                job = r.structured_content["job_id"]
                assert wait_until(lambda: pids(tag))
                _, _, events = get_stream(base + "/view/events", view)
                assert events["control"] is True
                key = next(
                    sess["key"] for sess in events["sessions"] for j in sess["jobs"] if j["id"] == job
                )
                stop = json.dumps({"session": key, "id": job}).encode()
                # From another page: refused even with the key.
                headers = {**view, "Content-Type": "application/json"}
                foreign = {**headers, "Origin": "http://evil.example"}
                assert get(base + "/view/stop", foreign, "POST", stop)[0] == 403
                assert pids(tag)
                status, _, said = get(base + "/view/stop", headers, "POST", stop)
                assert status == 200, said
                assert wait_until(lambda: not pids(tag))
                nxt = await s.call_tool("terminal", {"command": "true"})
                assert f"the user stopped {job} from the web view" in text(nxt), text(nxt)
                again = await s.call_tool("terminal", {"command": "true"})
                assert "web view" not in text(again), "the note is told once"
                # Another page cannot take a shell's keyboard either, key or not.
                opened = await s.call_tool("shell_open", {})
                shell = opened.structured_content["id"]
                _, _, events = get_stream(base + "/view/events", view)
                key = next(
                    sess["key"] for sess in events["sessions"] for j in sess["jobs"] if j["id"] == shell
                )
                for action in ({"action": "take"}, {"action": "type", "keys": "echo planted\n"}):
                    asked = json.dumps({"session": key, "id": shell, **action}).encode()
                    status, _, said = get(base + "/view/keyboard", foreign, "POST", asked)
                    assert status == 403, (action, status, said)
                sent = await s.call_tool("shell_send", {"id": shell, "input": "echo mine-$((2+3))\n"})
                assert "mine-5" in text(sent) and "planted" not in text(sent), text(sent)
                await s.call_tool("shell_close", {"id": shell})

        asyncio.run(body())


@needs_chromium
def test_planted_code_shows_as_a_banner_at_phone_and_desktop_width_until_dismissed():
    from playwright.sync_api import expect, sync_playwright

    plant = "git init -q && printf '#!/bin/sh\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit"
    with http_server() as (url, token, _):
        agent = Agent(url, token)
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
                page = browser.new_page(viewport={"width": 390, "height": 844})
                open_view(page, base_of(url), token)
                banner = page.locator("#warnings")
                expect(banner).to_be_hidden()
                said = agent.call("terminal", {"command": plant})
                assert "pre-commit" in said.text, said.text
                expect(banner).to_be_visible(timeout=20000)
                expect(banner).to_contain_text(".git/hooks/pre-commit")
                expect(banner).to_contain_text("outside the sandbox")
                # At phone width it fits: no sideways scroll of the page.
                width = page.evaluate("document.documentElement.scrollWidth")
                assert width <= 390, width
                page.set_viewport_size({"width": 1280, "height": 800})
                expect(banner).to_be_visible()
                banner.get_by_role("button", name="Dismiss").click()
                expect(banner).to_be_hidden()
                # A later state does not bring the dismissed warning back; a new one shows.
                agent.call("terminal", {"command": "true", "background": True})
                page.wait_for_timeout(1500)
                expect(banner).to_be_hidden()
                agent.call("terminal", {"command": "printf '#!/bin/sh\\n' > .git/hooks/pre-push && chmod +x .git/hooks/pre-push"})
                expect(banner).to_contain_text("pre-push", timeout=20000)
                expect(banner).not_to_contain_text("pre-commit")
                browser.close()
        finally:
            agent.close()


@needs_chromium
def test_a_shells_few_lines_show_in_its_pane_at_phone_and_desktop_width():
    """A shell's screen has its few lines at the top of 40 rows; the pane follows its end, and
    showed only the blank rows below them (an empty pane at phone width)."""
    from playwright.sync_api import expect, sync_playwright

    visible = """(text) => {
        const pre = document.querySelector('#output');
        const walker = document.createTreeWalker(pre, NodeFilter.SHOW_TEXT);
        for (let node = walker.nextNode(); node; node = walker.nextNode()) {
            const at = node.textContent.indexOf(text);
            if (at < 0) continue;
            const range = document.createRange();
            range.setStart(node, at);
            range.setEnd(node, at + text.length);
            const line = range.getBoundingClientRect(), box = pre.getBoundingClientRect();
            return line.top >= box.top && line.bottom <= box.bottom;
        }
        return null;
    }"""
    with http_server() as (url, token, _):
        agent = Agent(url, token)
        try:
            shell = agent.call("shell_open", {}).structured_content["id"]
            said = agent.call("shell_send", {"id": shell, "input": "echo seen-$((6*7))\n"})
            assert "seen-42" in said.text, said.text
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
                for width, height in [(390, 844), (1280, 800)]:
                    page = browser.new_page(viewport={"width": width, "height": height})
                    open_view(page, base_of(url), token)
                    page.click(f"button.job[data-id='{shell}']")
                    output = page.locator("#output")
                    expect(output).to_contain_text("seen-42", timeout=20000)
                    page.wait_for_timeout(300)
                    assert page.evaluate(visible, "seen-42") is True, (
                        width, page.evaluate("[...document.querySelectorAll('#output')].map("
                                             "p => [p.scrollTop, p.scrollHeight, p.clientHeight])"))
                    page.close()
                browser.close()
            agent.call("shell_close", {"id": shell})
        finally:
            agent.close()


CONTRAST_OF = """(text) => {
    const lum = (c) => {
        const [r, g, b] = c.match(/[0-9.]+/g).slice(0, 3).map(Number).map((v) => {
            v /= 255;
            return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
        });
        return 0.2126 * r + 0.7152 * g + 0.0722 * b;
    };
    const pre = document.querySelector('#output');
    const walker = document.createTreeWalker(pre, NodeFilter.SHOW_TEXT);
    const found = [];
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        if (!node.textContent.includes(text)) continue;
        const fg = getComputedStyle(node.parentElement).color;
        let bg = 'rgba(0, 0, 0, 0)';
        for (let at = node.parentElement; at; at = at.parentElement) {
            bg = getComputedStyle(at).backgroundColor;
            if (bg !== 'rgba(0, 0, 0, 0)' && bg !== 'transparent') break;
        }
        const [a, b] = [lum(fg), lum(bg)];
        found.push({fg, bg, ratio: (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05)});
    }
    return found;
}"""

# Text a program colours as the page's background (truecolour), black on black, a near-black
# grey; a colour that stays; a right-to-left override and a tag character (invisible, read by
# models).
HIDING_PRINTF = (
    "printf 'plain-ok\\n"
    "\\033[38;2;13;15;18mhidden-truecolour\\033[0m\\n"
    "\\033[30;40mhidden-black-on-black\\033[0m\\n"
    "\\033[38;5;232mhidden-grey232\\033[0m\\n"
    "\\033[31mvisible-red\\033[0m\\n"
    "rlo-\\342\\200\\256txet\\n"
    "tag-\\363\\240\\201\\201x\\n"
    "\\033[2;38;5;238mhidden-dim-grey\\033[0m\\n"
    "filler-\\343\\205\\244x\\n"
    "heart-\\342\\235\\244\\357\\270\\217-ok\\n'"
)


def assert_nothing_hidden(page, where):
    # Every place the text shows (a shell's screen has the command line too) can be seen.
    for hidden in ["hidden-truecolour", "hidden-black-on-black", "hidden-grey232",
                   "hidden-dim-grey"]:
        seen = page.evaluate(CONTRAST_OF, hidden)
        assert seen and min(s["ratio"] for s in seen) >= 2, (where, hidden, seen)
    red = page.evaluate(CONTRAST_OF, "visible-red")
    # Red stays red (the job's palette and the shell screen's differ).
    reds = [[int(v) for v in re.findall(r"\d+", s["fg"])[:3]] for s in red]
    assert any(r > 150 and g < 130 and b < 130 for r, g, b in reds), (where, red)
    shown = page.locator("#output").text_content()
    assert "rlo-<U+202E>txet" in shown, (where, shown)
    assert "tag-<U+E0041>x" in shown, (where, shown)
    assert "filler-<U+3164>x" in shown, (where, shown)
    # An emoji's own selector is part of it, not hiding anything.
    assert "heart-\u2764\ufe0f-ok" in shown, (where, shown)


@needs_chromium
def test_text_hidden_by_its_colours_or_reordered_is_shown_to_the_person_watching():
    """Review 35 F10: a program could colour text as its background, or reorder it with bidi
    controls, so that the person watching did not see what the model reads. In a job's output
    and in a shell's screen, such text is drawn in a colour that stands out, and characters
    that reorder or hide text are shown as their code points; other colours stay."""
    from playwright.sync_api import expect, sync_playwright

    with http_server() as (url, token, _):
        agent = Agent(url, token)
        try:
            job = agent.call("terminal", {"command": HIDING_PRINTF, "background": True})
            job = job.structured_content["job_id"]
            shell = agent.call("shell_open", {}).structured_content["id"]
            said = agent.call("shell_send", {"id": shell, "input": HIDING_PRINTF + "\n"})
            assert "visible-red" in said.text, said.text
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
                page = browser.new_page(viewport={"width": 1280, "height": 800})
                open_view(page, base_of(url), token)
                output = page.locator("#output")
                for pane in [job, shell]:
                    page.click(f"button.job[data-id='{pane}']")
                    expect(output).to_contain_text("visible-red", timeout=20000)
                    assert_nothing_hidden(page, pane)
                # An emoji with 40 variation selectors keeps them all, shown (review 40 M3).
                selectors = agent.call(
                    "terminal",
                    {"command": "printf 'emoji-\\360\\237\\230\\200'; "
                                "for i in $(seq 40); do printf '\\357\\270\\217'; done; echo",
                     "background": True},
                ).structured_content["job_id"]
                page.click(f"button.job[data-id='{selectors}']")
                expect(output).to_contain_text("emoji-", timeout=20000)
                page.wait_for_timeout(300)
                assert output.text_content().count("<U+FE0F>") == 40, output.text_content()
                # A flood of zero-width spaces keeps the page within its bound (review 40 M2:
                # each counted 1 when added and 8 when trimmed, so the page grew for good).
                flood = agent.call(
                    "terminal",
                    {"command": "for i in $(seq 20); do head -c 5000 /dev/zero | "
                                "sed 's/\\x00/\\xe2\\x80\\x8b/g'; echo; sleep 0.05; done; "
                                "echo flood-done",
                     "background": True},
                ).structured_content["job_id"]
                page.click(f"button.job[data-id='{flood}']")
                expect(output).to_contain_text("flood-done", timeout=60000)
                page.wait_for_timeout(500)
                length = len(output.text_content())
                assert length <= 300 * 1024, length
                browser.close()
            agent.call("shell_close", {"id": shell})
        finally:
            agent.close()


def test_a_flood_of_combining_marks_reaches_the_page_capped():
    """A character with 30 000 combining marks held a viewer's page for seconds per update: the
    page gets at most 8 on one character."""
    with http_server() as (url, token, _):
        base = base_of(url)
        view = log_in(base, token)

        async def body():
            async with client(url, token) as s:
                flood = "print('a' + '\\u0301' * 30000 + 'b')"
                r = await s.call_tool(
                    "terminal", {"argv": ["python3", "-c", flood], "background": True}
                )
                job = r.structured_content["job_id"]
                await s.call_tool("task_wait", {"id": job, "timeout_ms": 20000})
                _, _, events = get_stream(base + "/view/events", view)
                key = next(
                    sess["key"] for sess in events["sessions"] for j in sess["jobs"] if j["id"] == job
                )
                _, _, snapshot = get_stream(f"{base}/view/stream?session={key}&id={job}", view)
                shown = snapshot["text"]
                assert shown.startswith("a" + "\u0301" * 8 + "b"), repr(shown[:40])
                # A command line full of marks is the job's label in the state.
                r = await s.call_tool(
                    "terminal", {"command": "true # a" + "\u0301" * 20000, "background": True}
                )
                labelled = r.structured_content["job_id"]
                _, _, events = get_stream(base + "/view/events", view)
                label = next(
                    j["label"] for sess in events["sessions"] for j in sess["jobs"] if j["id"] == labelled
                )
                assert "a" + "\u0301" * 8 in label and "\u0301" * 9 not in label, repr(label[:40])

        asyncio.run(body())


def get_stream(url, headers):
    """The first `state` event of an event stream."""
    req = urllib.request.Request(url)
    for k, v in headers.items():
        req.add_header(k, v)
    with urllib.request.urlopen(req, timeout=10) as r:
        for raw in r:
            line = raw.decode().strip()
            if line.startswith("data:"):
                return r.status, r.headers, json.loads(line[5:])
    raise AssertionError("no event")


def pids(tag):
    from test_http import with_env

    return with_env("VIEWTAG", tag)


def test_beside_stdio_the_view_shows_the_stdio_session_and_serves_no_mcp():
    import re
    import subprocess

    from test_http import BIN, INIT

    with tempfile.TemporaryDirectory() as ws, private_dir() as state:
        proc = subprocess.Popen(
            [BIN, "serve", "--view", "127.0.0.1:0", "--workspace", ws, "--state-dir", state],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            base = None
            for line in proc.stderr:
                m = re.search(r"web view at (http://\S+)/ ", line)
                if m:
                    base = m.group(1)
                    break
            assert base, "no view address printed"
            threading.Thread(target=lambda: proc.stderr.read(), daemon=True).start()

            def rpc(message):
                proc.stdin.write(json.dumps(message) + "\n")
                proc.stdin.flush()
                if "id" in message:
                    return json.loads(proc.stdout.readline())

            rpc(INIT)
            rpc({"jsonrpc": "2.0", "method": "notifications/initialized"})
            started = rpc(
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "tools/call",
                    "params": {"name": "terminal", "arguments": {"command": "sleep 300", "background": True}},
                }
            )
            job = started["result"]["structuredContent"]["job_id"]
            with open(os.path.join(state, "token")) as f:
                token = f.read().strip()
            view = log_in(base, token)
            _, _, events = get_stream(base + "/view/events", view)
            [stdio] = events["sessions"]
            assert stdio["transport"] == "stdio" and stdio["client"] == "raw", stdio
            assert [j["id"] for j in stdio["jobs"]] == [job]
            assert events["control"] is False
            auth = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
            assert get(base + "/mcp", auth, "POST", json.dumps(INIT).encode())[0] == 404
        finally:
            proc.stdin.close()
            proc.wait(timeout=20)
