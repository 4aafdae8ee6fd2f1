"""The web view belongs to the caller who logged in (docs/BEHAVIOUR.md §12): a key bound
to alice's token opens nothing of bob's, whatever it names (state, streams, stop, secret
requests); an operator's token sees every caller; the key lives in the page's memory only, so a
command that reads the browser's profile finds nothing that opens the view; `agentty view` logs
in with a one-time code, never a token, in the address."""

import json
import os
import subprocess
import tempfile
import time
import uuid

from private_dirs import private_file
from test_http import BIN, http_server, wait_until
from test_http_callers import session, session_call
from test_view import CHROMIUM, base_of, get, get_stream, log_in, needs_chromium, open_view, pids

ALICE = "alice " + "a" * 8 + uuid.uuid4().hex
BOB = "bob " + "b" * 8 + uuid.uuid4().hex
OPS = "ops " + "c" * 8 + uuid.uuid4().hex + " operator"


def token(line):
    return line.split()[1]


def jobs_of(state):
    """(session key, job id, label) of every job the state shows."""
    return [(s["key"], j["id"], j["label"]) for s in state["sessions"] for j in s["jobs"]]


def test_a_view_key_opens_only_its_callers_sessions_streams_stops_and_secrets():
    tag = f"view-alice-{uuid.uuid4().hex[:8]}"
    tokens = private_file(f"{ALICE}\n{BOB}\n{OPS}\n")
    try:
        with http_server("--token-file", tokens, "--view-control") as (url, _, _):
            base = base_of(url)
            alice = session(url, token(ALICE))
            started = session_call(
                url, alice, "terminal",
                {"command": f"sleep 300 # {tag}", "background": True, "env": {"VIEWTAG": tag}},
            )
            job = started["structuredContent"]["job_id"]
            assert wait_until(lambda: pids(tag))
            # alice's shell waits for a password: a secret request of alice's session.
            shell = session_call(url, alice, "shell_open", {})["structuredContent"]["id"]
            getpass = "python3 -c 'import getpass; getpass.getpass(\"Password: \")'\n"
            session_call(url, alice, "shell_send", {"id": shell, "input": getpass, "timeout_ms": 5000})
            asked = session_call(url, alice, "shell_send", {"id": shell, "secret": "a test password"})
            said = "".join(c.get("text", "") for c in asked["content"])
            request = said.split("/secret/")[1].split()[0].rstrip(".,)\"'") if "/secret/" in said else None

            as_alice = log_in(base, token(ALICE))
            _, _, mine = get_stream(base + "/view/events", as_alice)
            key = next(k for k, i, _ in jobs_of(mine) if i == job)
            assert any(tag in label for _, _, label in jobs_of(mine)), mine
            secrets = mine["secrets"]
            assert secrets and secrets[0]["shell"] == shell, (mine, said)
            request = request or secrets[0]["id"]

            as_bob = log_in(base, token(BOB))
            _, _, theirs = get_stream(base + "/view/events", as_bob)
            assert not any(tag in label for _, _, label in jobs_of(theirs)), theirs
            assert theirs["secrets"] == [], theirs
            # Naming alice's session and job does not open them for bob.
            status, _, _ = get(f"{base}/view/stream?session={key}&id={job}", as_bob)
            assert status == 404, status
            stop = json.dumps({"session": key, "id": job}).encode()
            status, _, said = get(base + "/view/stop", {**as_bob, "Content-Type": "application/json"}, "POST", stop)
            assert status != 200, said
            time.sleep(0.3)
            assert pids(tag), "bob's view stopped alice's job"
            # Nor her secret request: bob can neither see nor answer it.
            assert get(f"{base}/view/secret?id={request}", as_bob)[0] == 401
            answer = json.dumps({"id": request, "secret": "bobs value"}).encode()
            status, _, _ = get(base + "/view/secret", {**as_bob, "Content-Type": "application/json"}, "POST", answer)
            assert status == 401, status
            assert get(f"{base}/view/secret?id={request}", as_alice)[0] == 200

            # An operator's token sees every caller's sessions.
            as_ops = log_in(base, token(OPS))
            _, _, everything = get_stream(base + "/view/events", as_ops)
            assert any(tag in label for _, _, label in jobs_of(everything)), everything
            assert get_stream(f"{base}/view/stream?session={key}&id={job}", as_ops)[0] == 200
            # alice's own key stops it.
            status, _, said = get(base + "/view/stop", {**as_alice, "Content-Type": "application/json"}, "POST", stop)
            assert status == 200, said
            assert wait_until(lambda: not pids(tag))
            session_call(url, alice, "shell_close", {"id": shell})
    finally:
        os.unlink(tokens)


def test_planted_code_warnings_show_to_the_caller_whose_session_was_at_work():
    tokens = private_file(f"{ALICE}\n{BOB}\n{OPS}\n")
    plant = "git init -q && printf '#!/bin/sh\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit"
    try:
        with http_server("--token-file", tokens) as (url, _, _):
            base = base_of(url)
            alice, bob = session(url, token(ALICE)), session(url, token(BOB))
            session_call(url, bob, "terminal", {"command": "true"})
            said = session_call(url, alice, "terminal", {"command": plant})
            text = "".join(c.get("text", "") for c in said["content"])
            assert "pre-commit" in text, text

            def warnings(who):
                _, _, state = get_stream(base + "/view/events", log_in(base, token(who)))
                keys = {s["key"] for s in state["sessions"]}
                return keys, [w for w in state["warnings"] if w["path"].endswith("pre-commit")]

            keys, mine = warnings(ALICE)
            assert mine and all(w["session"] in keys for w in mine), (keys, mine)
            bobs_keys, theirs = warnings(BOB)
            assert theirs == [], theirs
            # An operator sees it, named by alice's session.
            _, everyone = warnings(OPS)
            assert [w["session"] for w in everyone] == [w["session"] for w in mine], everyone
            assert not any(k in w["session"] for w in everyone for k in bobs_keys), everyone
    finally:
        os.unlink(tokens)


def test_a_login_code_works_once_and_a_token_never_makes_one_without_being_a_token():
    tokens = private_file(f"{ALICE}\n{BOB}\n")
    try:
        with http_server("--token-file", tokens) as (url, _, _):
            base = base_of(url)
            made = subprocess.run(
                [BIN, "view", "--print", "--url", base, "--token-file", tokens, "--caller", "bob"],
                capture_output=True, text=True, timeout=20,
            )
            assert made.returncode == 0, made.stderr
            address = made.stdout.strip()
            assert address.startswith(base + "/#code="), address
            assert token(BOB) not in address and token(ALICE) not in address
            code = address.split("#code=")[1]
            login = lambda what: get(  # noqa: E731
                base + "/view/login", {"Content-Type": "application/json"}, "POST",
                json.dumps(what).encode(),
            )
            status, _, said = login({"code": code})
            assert status == 200, said
            assert login({"code": code})[0] == 401, "a code works once"
            # Only a token of the file makes a code.
            assert get(base + "/view/code", {"Authorization": "Bearer " + "0" * 64}, "POST", b"")[0] == 401
            assert get(base + "/view/code", {}, "POST", b"")[0] == 401
            unknown = subprocess.run(
                [BIN, "view", "--print", "--url", base, "--token-file", tokens, "--caller", "carol"],
                capture_output=True, text=True, timeout=20,
            )
            assert unknown.returncode != 0 and "carol" in unknown.stderr
    finally:
        os.unlink(tokens)


def test_view_prints_the_address_when_no_browser_opens_it():
    """`agentty view` with a browser opener that fails (`xdg-open` exits 3 where it finds no
    browser) says so and prints the address, whose code still logs in; it said it had opened
    the view and printed nothing."""
    tokens = private_file(f"{ALICE}\n")
    try:
        with http_server("--token-file", tokens) as (url, _, state):
            base = base_of(url)
            view = lambda browser: subprocess.run(  # noqa: E731
                [BIN, "view", "--url", base, "--state-dir", state, "--token-file", tokens],
                capture_output=True, text=True, timeout=20,
                env={**os.environ, "BROWSER": browser},
            )
            failed = view("/bin/false")
            assert failed.returncode == 0, failed.stderr
            assert "could not open a browser (/bin/false: exit status: 1)" in failed.stderr, (
                failed.stderr)
            address = failed.stdout.strip()
            assert address.startswith(base + "/#code="), (failed.stdout, failed.stderr)
            status, _, said = get(
                base + "/view/login", {"Content-Type": "application/json"}, "POST",
                json.dumps({"code": address.split("#code=")[1]}).encode(),
            )
            assert status == 200, said
            opened = view("/bin/true")
            assert opened.returncode == 0, opened.stderr
            assert opened.stdout == "" and "opened the view" in opened.stderr, (
                opened.stdout, opened.stderr)
            # Where no view answers, it says where one is served and how to name it.
            nobody = subprocess.run(
                [BIN, "view", "--print", "--url", f"http://127.0.0.1:{free_port()}",
                 "--token-file", tokens],
                capture_output=True, text=True, timeout=20,
            )
            assert nobody.returncode != 0 and "--url http://ADDR" in nobody.stderr, nobody.stderr
    finally:
        os.unlink(tokens)


def test_view_hands_the_browser_a_private_page_never_the_login_code():
    """Review 36, H2: the login code was an argument of the browser (and of `xdg-open`), which
    every process of the user can read in `/proc/PID/cmdline`, another caller's confined
    commands too where the server runs without PID namespaces: one logged in with it first. The
    browser is now handed a page of the state dir (which confined commands cannot read) that
    leads to the address; its arguments hold no code."""
    tokens = private_file(f"{ALICE}\n")
    try:
        with http_server("--token-file", tokens) as (url, _, state), \
                tempfile.TemporaryDirectory() as seen:
            base = base_of(url)
            browser = os.path.join(seen, "browser")
            with open(browser, "w") as f:
                f.write(f'#!/bin/sh\nprintf "%s\\n" "$@" > {seen}/argv\n'
                        f'cat "${{1#file://}}" > {seen}/page\n')
            os.chmod(browser, 0o755)
            opened = subprocess.run(
                [BIN, "view", "--url", base, "--state-dir", state, "--token-file", tokens],
                capture_output=True, text=True, timeout=20,
                env={**os.environ, "BROWSER": browser},
            )
            assert opened.returncode == 0, opened.stderr
            with open(os.path.join(seen, "argv")) as f:
                argv = f.read()
            assert "code=" not in argv, argv
            page = argv.strip().removeprefix("file://")
            assert page.startswith(os.path.join(state, "view-logins") + "/"), argv
            assert oct(os.stat(page).st_mode & 0o777) == "0o600"
            with open(os.path.join(seen, "page")) as f:
                html = f.read()
            code = html.split("#code=")[1].split('"')[0]
            assert f'content="0;url={base}/#code={code}"' in html, html
            status, _, said = get(
                base + "/view/login", {"Content-Type": "application/json"}, "POST",
                json.dumps({"code": code}).encode(),
            )
            assert status == 200, said
            # Without --state-dir, the state dir `serve` takes from the config file.
            config = os.path.join(seen, "config")
            os.makedirs(os.path.join(config, "agentty"))
            with open(os.path.join(config, "agentty", "config.toml"), "w") as f:
                f.write(f'state_dir = "{state}"\n')
            opened = subprocess.run(
                [BIN, "view", "--url", base, "--token-file", tokens],
                capture_output=True, text=True, timeout=20,
                env={**os.environ, "BROWSER": browser, "XDG_CONFIG_HOME": config},
            )
            assert opened.returncode == 0, opened.stderr
            with open(os.path.join(seen, "argv")) as f:
                argv = f.read()
            assert argv.strip().removeprefix("file://").startswith(
                os.path.join(state, "view-logins") + "/"), argv
    finally:
        os.unlink(tokens)


def grep_tree(root, needle):
    """The files under `root` whose bytes hold `needle`."""
    found = []
    for dirpath, _, files in os.walk(root):
        for name in files:
            path = os.path.join(dirpath, name)
            try:
                with open(path, "rb") as f:
                    if needle in f.read():
                        found.append(path)
            except OSError:
                pass
    return found


@needs_chromium
def test_the_view_key_is_in_the_pages_memory_only_and_no_profile_file_opens_the_view():
    """A confined command grepped the key out of Chromium's `Local Storage/leveldb` and read the
    view's events with it. Now nothing a command can read from the profile opens the view."""
    from playwright.sync_api import sync_playwright

    tokens = private_file(f"{ALICE}\n")
    try:
        with http_server("--token-file", tokens) as (url, _, _), tempfile.TemporaryDirectory() as profile:
            base = base_of(url)
            keys = []
            with sync_playwright() as p:
                context = p.chromium.launch_persistent_context(
                    profile, executable_path=CHROMIUM, args=["--no-sandbox"], headless=True,
                )
                page = context.new_page()
                page.on("request", lambda r: keys.append(r.headers.get("x-agentty-view")))
                open_view(page, base, token(ALICE))
                assert page.evaluate("localStorage.length + sessionStorage.length") == 0
                # A reload logs in again: nothing was kept.
                page.reload()
                page.wait_for_selector("#login:not([hidden])")
                # `agentty view`'s address logs in at once, and the code leaves the address.
                made = subprocess.run(
                    [BIN, "view", "--print", "--url", base, "--token-file", tokens],
                    capture_output=True, text=True, timeout=20,
                )
                fresh = context.new_page()
                fresh.on("request", lambda r: keys.append(r.headers.get("x-agentty-view")))
                fresh.goto(made.stdout.strip())
                fresh.wait_for_selector("text=live")
                assert "code=" not in fresh.url, fresh.url
                context.close()
            key = next(k for k in keys if k)
            assert grep_tree(profile, key.encode()) == [], "the key is in the browser's profile"
            assert grep_tree(profile, token(ALICE).encode()) == [], "the token is in the profile"
    finally:
        os.unlink(tokens)


@needs_chromium
def test_a_secrets_own_page_asks_for_its_callers_token():
    """The page a model passes on (`/secret/<id>`) logs in by itself, in memory, and only the
    token of the asking session's caller opens the request."""
    from playwright.sync_api import expect, sync_playwright

    tokens = private_file(f"{ALICE}\n{BOB}\n")
    try:
        with http_server("--token-file", tokens) as (url, _, _):
            base = base_of(url)
            alice = session(url, token(ALICE))
            shell = session_call(url, alice, "shell_open", {})["structuredContent"]["id"]
            getpass = "python3 -c 'import getpass; getpass.getpass(\"Password: \")'\n"
            session_call(url, alice, "shell_send", {"id": shell, "input": getpass, "timeout_ms": 5000})
            session_call(url, alice, "shell_send", {"id": shell, "secret": "a test password"})
            _, _, mine = get_stream(base + "/view/events", log_in(base, token(ALICE)))
            request = mine["secrets"][0]["id"]
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
                page = browser.new_page()
                page.goto(f"{base}/secret/{request}")
                page.wait_for_selector("#login:not([hidden])")
                # bob's token logs in, and still does not open alice's request.
                page.fill("#token", token(BOB))
                page.click("#login button")
                page.wait_for_selector("#login:not([hidden])")
                expect(page.locator("#form")).to_be_hidden()
                page.fill("#token", token(ALICE))
                page.click("#login button")
                expect(page.locator("#asked")).to_contain_text("asks for: a test password")
                expect(page.locator("#form")).to_be_visible()
                assert page.evaluate("localStorage.length + sessionStorage.length") == 0
                browser.close()
            session_call(url, alice, "shell_close", {"id": shell})
    finally:
        os.unlink(tokens)


class StdioAgent:
    """`agentty serve --view ADDR` beside stdio, as a host starts it for one agent."""

    def __init__(self, view, state, ws):
        import re
        import threading

        self.proc = subprocess.Popen(
            [BIN, "serve", "--view", view, "--workspace", ws, "--state-dir", state],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        self.said = ""
        for line in self.proc.stderr:
            self.said += line
            if re.search(r"web view at (http://\S+)/", line):
                break
        threading.Thread(target=lambda: self.proc.stderr.read(), daemon=True).start()
        from test_http import INIT

        self.rpc(INIT)
        self.rpc({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def rpc(self, message):
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()
        if "id" in message:
            return json.loads(self.proc.stdout.readline())

    def call(self, name, arguments):
        answer = self.rpc({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                           "params": {"name": name, "arguments": arguments}})
        return answer["result"]

    def end(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=20)


def free_port():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_every_agent_of_the_user_shows_on_one_view_and_another_takes_the_port_when_it_ends():
    """Two hosts each start `serve --view` on the same address: the second said the view was
    "not running" to its model and could not be watched. Now both agents' jobs show on the one
    page (each labelled), the second's job streams through it, its secret page is served there,
    and when the first ends the second serves the page."""
    from private_dirs import private_dir

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    tags = [f"view-agent-{i}-{uuid.uuid4().hex[:6]}" for i in (1, 2)]
    with private_dir() as state, tempfile.TemporaryDirectory() as ws1, tempfile.TemporaryDirectory() as ws2:
        first = StdioAgent(f"127.0.0.1:{port}", state, ws1)
        second = StdioAgent(f"127.0.0.1:{port}", state, ws2)
        try:
            assert "served by another agentty" in second.said, second.said
            jobs = []
            for agent, tag in zip((first, second), tags):
                started = agent.call("terminal", {"command": f"echo {tag}; sleep 300", "background": True,
                                                  "env": {"VIEWTAG": tag}})
                jobs.append(started["structuredContent"]["job_id"])
            with open(os.path.join(state, "token")) as f:
                token_value = f.read().strip()
            view = log_in(base, token_value)
            _, _, events = get_stream(base + "/view/events", view)
            shown = {j["label"]: s for s in events["sessions"] for j in s["jobs"]}
            for tag, ws in zip(tags, (ws1, ws2)):
                [session] = [s for label, s in shown.items() if tag in label]
                assert ws in session["agent"], session
            # The second agent's job streams through the page's server.
            [second_key] = [s["key"] for label, s in shown.items() if tags[1] in label]
            # (The job's first line may not have been written yet on a loaded machine.)
            deadline = time.monotonic() + 15
            while True:
                _, _, snapshot = get_stream(f"{base}/view/stream?session={second_key}&id={jobs[1]}", view)
                if tags[1] in snapshot["text"] or time.monotonic() > deadline:
                    break
                time.sleep(0.1)
            assert tags[1] in snapshot["text"], snapshot
            # Its model is told the page's address for a secret, and the page has the request.
            shell = second.call("shell_open", {})["structuredContent"]["id"]
            getpass = "python3 -c 'import getpass; getpass.getpass(\"Password: \")'\n"
            second.call("shell_send", {"id": shell, "input": getpass, "timeout_ms": 5000})
            asked = second.call("shell_send", {"id": shell, "secret": "a test password"})
            said = "".join(c.get("text", "") for c in asked["content"])
            assert base in said and "not running" not in said, said
            _, _, events = get_stream(base + "/view/events", view)
            [request] = events["secrets"]
            assert get(f"{base}/view/secret?id={request['id']}", view)[0] == 200
            second.call("shell_close", {"id": shell})
            # The first ends: the second takes the address over.
            first.end()
            def serves():
                try:
                    return get(base + "/")[0] == 200
                except OSError:
                    return False

            time.sleep(0.5)
            assert wait_until(serves, within=15)
            view = log_in(base, token_value)
            _, _, events = get_stream(base + "/view/events", view)
            labels = [j["label"] for s in events["sessions"] for j in s["jobs"]]
            assert any(tags[1] in label for label in labels), labels
            assert not any(tags[0] in label for label in labels), labels
        finally:
            for agent in (first, second):
                if agent.proc.poll() is None:
                    agent.end()
