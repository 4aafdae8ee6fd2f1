"""Secrets the model never sees (docs/BEHAVIOUR.md §4), end to end: a password prompt in a shell,
`shell_send({secret})`, the user typing it on the web view's page in a real headless Chromium, and
then a scan of every reply, the log, the state directory and the shell's buffers: zero hits."""

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import uuid

import pytest

from test_http import BIN, INIT
from test_view import open_view

from private_dirs import private_dir

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
SECRET = "s3cr3t-" + uuid.uuid4().hex[:12]
# A program of its own reads the password (the shell's own `read -s` is refused: its value would
# land in a variable the agent reads). It prints the length and an md5 prefix of the line.
PASSWORD_PROMPT = (
    "python3 -c 'import getpass, hashlib; p = getpass.getpass(\"Password: \"); "
    "print(\"len=%d sum=%s\" % (len(p), hashlib.md5(p.encode()).hexdigest()[:8]))'\n"
)


class Server:
    """`serve --view` over stdio in raw JSON-RPC, every reply kept; its log in a file."""

    def __init__(self, ws, state, log, capabilities=None, modern=False):
        env = dict(os.environ, RUST_LOG="debug")
        self.log = open(log, "w")
        self.proc = subprocess.Popen(
            [BIN, "serve", "--view", "127.0.0.1:0", "--workspace", ws, "--state-dir", state],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
            env=env,
        )
        self.replies = []
        self.next = 0
        deadline = time.monotonic() + 20
        self.view = None
        while self.view is None and time.monotonic() < deadline:
            with open(log) as f:
                m = re.search(r"web view at (http://\S+)/ ", f.read())
            self.view = m and m.group(1)
            time.sleep(0.05)
        assert self.view, "no view address"
        self.meta = None
        if modern:
            self.meta = {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": capabilities or {},
                "io.modelcontextprotocol/clientInfo": {"name": "raw-2026", "version": "1"},
            }
            return
        init = json.loads(json.dumps(INIT))
        init["params"]["capabilities"] = capabilities or {}
        self.rpc(init)
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message):
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()

    def rpc(self, message):
        self.send(message)
        while True:
            line = self.proc.stdout.readline()
            self.replies.append(line)
            reply = json.loads(line)
            if reply.get("id") == message["id"]:
                return reply

    def call(self, tool, arguments, **extra):
        self.next += 1
        params = {"name": tool, "arguments": arguments, **extra}
        if self.meta:
            params["_meta"] = self.meta
        message = {"jsonrpc": "2.0", "id": self.next, "method": "tools/call", "params": params}
        return self.rpc(message)["result"]

    def password_prompt(self, shell):
        """Starts a password prompt in `shell`: it prints the length and an md5 prefix of the line."""
        return self.call("shell_send", {"id": shell, "input": PASSWORD_PROMPT, "timeout_ms": 5000})

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=20)
        self.log.close()


def said(result):
    return "".join(c.get("text", "") for c in result.get("content", []))


def enter_on_page(url, secret, before=None):
    """Opens `url` in Chromium (after `before(page)`), types `secret` and waits for "Entered"."""
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page()
        if before:
            url = before(page) or url
        page.goto(url)
        page.fill("#secret", secret)
        page.click("#enter")
        expect(page.locator("#asked")).to_contain_text("Entered")
        assert page.locator("#secret").input_value() == ""
        browser.close()


@pytest.mark.skipif(
    CHROMIUM is None and not os.environ.get("AGENTTY_REQUIRE_CHROMIUM"),
    reason="Debian's chromium is not installed (.ci/run installs it)",
)
def test_a_password_typed_in_the_view_reaches_the_prompt_and_nothing_else():
    from playwright.sync_api import expect, sync_playwright

    with tempfile.TemporaryDirectory() as ws, private_dir() as state, \
            tempfile.TemporaryDirectory() as logs:
        log = os.path.join(logs, "agentty.log")
        server = Server(ws, state, log)
        try:
            shell = server.call("shell_open", {})["structuredContent"]["id"]
            # At the shell's prompt nothing asks for a password: no secret is taken.
            refused = server.call("shell_send", {"id": shell, "secret": "password"})
            assert refused.get("isError") and "asks for a password" in said(refused), said(refused)
            # The shell's own `read -s` would put the value in a variable the agent reads.
            own = server.call("shell_send", {"id": shell, "input": "read -r -s pw; echo\n",
                                             "timeout_ms": 5000})
            assert own["structuredContent"]["status"] == "awaiting_input", said(own)
            refused = server.call("shell_send", {"id": shell, "secret": "password"})
            assert refused.get("isError") and "the shell itself reads" in said(refused), said(refused)
            server.call("shell_send", {"id": shell, "input": "\n", "timeout_ms": 5000})
            asking = server.password_prompt(shell)
            assert asking["structuredContent"]["status"] == "awaiting_input", said(asking)
            later = server.call("shell_send", {"id": shell, "secret": "test password"})
            assert not later.get("isError"), said(later)
            # The model is told to send the user to the view, not given the request's id.
            assert server.view in said(later), said(later)
            assert not re.search(r"[0-9a-f]{32}", said(later)), said(later)
            with open(os.path.join(state, "token")) as f:
                token = f.read().strip()

            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
                page = browser.new_page()
                open_view(page, server.view, token)
                link = page.locator("a.secret")
                expect(link).to_contain_text("asks for: test password")
                address = server.view + link.get_attribute("href")
                # Without the view's key, the request's calls are refused (its page holds
                # nothing: it asks them).
                import urllib.request
                import urllib.error
                rid = address.rsplit("/", 1)[1]
                for url, data in ((f"{server.view}/view/secret?id={rid}", None),
                                  (f"{server.view}/view/secret", json.dumps({"id": rid, "secret": "x"}).encode())):
                    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
                    try:
                        urllib.request.urlopen(req, timeout=10)
                        raise AssertionError(f"{url} answered without the view's key")
                    except urllib.error.HTTPError as e:
                        assert e.code == 401, (url, e.code)
                link.click()
                expect(page.locator("#asked")).to_contain_text("asks for: test password")
                expect(page.locator("#asker")).to_contain_text("python3")
                # A control character would go on as keystrokes: refused, nothing typed.
                injected = page.evaluate(
                    """async (id) => (await fetch('/view/secret', {method: 'POST',
                         headers: {'Content-Type': 'application/json',
                                   'X-Agentty-View': key},
                         body: JSON.stringify({id, secret: 'x\\recho INJECTED-$((6*7))\\r'})})).status""",
                    rid,
                )
                assert injected == 409, injected
                # Answered in the view's page, which holds its key in memory only.
                page.fill("#secret", SECRET)
                page.click("#enter")
                expect(page.locator("#asked")).to_contain_text("Entered")
                assert page.locator("#secret").input_value() == ""
                browser.close()

            want = hashlib.md5(SECRET.encode()).hexdigest()[:8]
            since = later["structuredContent"]["cursor"]
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                followed = server.call("shell_read", {"id": shell, "since": since})
                if "sum=" in said(followed):
                    break
                time.sleep(0.1)
            assert f"len={len(SECRET)} sum={want}" in said(followed), said(followed)
            assert "INJECTED-42" not in said(followed), "a control character typed a command"
            # One use: the page's request is gone.
            import urllib.request
            import urllib.error
            req = urllib.request.Request(
                server.view + "/view/secret",
                data=json.dumps({"id": address.rsplit("/", 1)[1], "secret": "again"}).encode(),
                headers={"Content-Type": "application/json"},
                method="POST",
            )
            try:
                urllib.request.urlopen(req, timeout=10)
                raise AssertionError("a used request took a second secret")
            except urllib.error.HTTPError as e:
                assert e.code in (401, 404), e.code

            # Everything the shell holds: its whole output, its raw bytes, its screen.
            server.call("shell_read", {"id": shell, "since": 0})
            server.call("shell_read", {"id": shell, "raw": True})
            server.call("shell_read", {"id": shell, "screen": True})
            server.call("shell_close", {"id": shell})
            seen = "".join(server.replies)
            assert "len=" in seen, "the scan saw nothing"
            assert SECRET not in seen, "a reply carries the secret"
        finally:
            server.close()
        with open(log) as f:
            logged = f.read()
        assert "DEBUG" in logged or "INFO" in logged or logged, "no log to scan"
        assert SECRET not in logged, "the log carries the secret"
        for root, _, files in os.walk(state):
            for name in files:
                with open(os.path.join(root, name), "rb") as f:
                    assert SECRET.encode() not in f.read(), f"{name} carries the secret"


@pytest.mark.skipif(
    CHROMIUM is None and not os.environ.get("AGENTTY_REQUIRE_CHROMIUM"),
    reason="Debian's chromium is not installed (.ci/run installs it)",
)
def test_a_client_with_url_elicitation_opens_the_page_and_the_send_returns_what_followed():
    with tempfile.TemporaryDirectory() as ws, private_dir() as state, \
            tempfile.TemporaryDirectory() as logs:
        server = Server(ws, state, os.path.join(logs, "agentty.log"), {"elicitation": {"url": {}}})
        try:
            shell = server.call("shell_open", {})["structuredContent"]["id"]
            server.password_prompt(shell)
            server.next += 1
            call_id = server.next
            server.send({"jsonrpc": "2.0", "id": call_id, "method": "tools/call",
                         "params": {"name": "shell_send",
                                    "arguments": {"id": shell, "secret": "test password", "timeout_ms": 5000}}})
            asked = json.loads(server.proc.stdout.readline())
            server.replies.append(json.dumps(asked))
            assert asked["method"] == "elicitation/create", asked
            assert asked["params"]["mode"] == "url"
            url = asked["params"]["url"]
            assert url.startswith(server.view + "/secret/")
            enter_on_page(url, SECRET)
            server.send({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept"}})
            while True:
                line = server.proc.stdout.readline()
                server.replies.append(line)
                reply = json.loads(line)
                if reply.get("id") == call_id:
                    break
            text = said(reply["result"])
            assert "test password entered by the user" in text, text
            assert f"len={len(SECRET)}" in text, text
            assert SECRET not in "".join(server.replies)
            server.call("shell_close", {"id": shell})
        finally:
            server.close()


@pytest.mark.skipif(
    CHROMIUM is None and not os.environ.get("AGENTTY_REQUIRE_CHROMIUM"),
    reason="Debian's chromium is not installed (.ci/run installs it)",
)
def test_a_2026_client_gets_the_page_as_input_required_and_its_retry_returns_what_followed():
    with tempfile.TemporaryDirectory() as ws, private_dir() as state, \
            tempfile.TemporaryDirectory() as logs:
        server = Server(ws, state, os.path.join(logs, "agentty.log"),
                        {"elicitation": {"url": {}}}, modern=True)
        try:
            shell = server.call("shell_open", {})["structuredContent"]["id"]
            server.password_prompt(shell)
            args = {"id": shell, "secret": "test password", "timeout_ms": 5000}
            asked = server.call("shell_send", args)
            assert asked["resultType"] == "input_required", asked
            question = asked["inputRequests"]["approve"]["params"]
            assert question["mode"] == "url" and question["url"].startswith(server.view + "/secret/")
            enter_on_page(question["url"], SECRET)
            done = server.call("shell_send", args, requestState=asked["requestState"],
                               inputResponses={"approve": {"action": "accept"}})
            assert "test password entered by the user" in said(done), done
            assert f"len={len(SECRET)}" in said(done), said(done)
            again = server.call("shell_send", args, requestState=asked["requestState"],
                                inputResponses={"approve": {"action": "accept"}})
            assert again.get("isError") and "already used" in said(again), said(again)
            assert SECRET not in "".join(server.replies)
            server.call("shell_close", {"id": shell})
        finally:
            server.close()
