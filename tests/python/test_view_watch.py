"""The web view shows what agents do (docs/BEHAVIOUR.md §12): foreground calls live and in a
history, colours and statuses, any screen width, the keyboard alone. In Debian's Chromium,
driven by Playwright (nothing downloads a browser)."""

import os
import threading

from test_http import http_server
from test_view import CHROMIUM, Agent, base_of, log_in, get, needs_chromium, open_view


def browser_page(p, width=1280, height=800):
    browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
    page = browser.new_page(viewport={"width": width, "height": height}, accept_downloads=True)
    errors = []
    page.on("console", lambda m: m.type == "error" and errors.append(m.text))
    page.on("pageerror", lambda e: errors.append(str(e)))
    return browser, page, errors


def in_background(fn, *args):
    """Runs fn(*args) on a thread; join() gives its result."""
    out = {}
    thread = threading.Thread(target=lambda: out.setdefault("r", fn(*args)), daemon=True)
    thread.start()

    def join():
        thread.join(60)
        assert not thread.is_alive(), "the call did not end"
        return out["r"]

    return join


@needs_chromium
def test_a_foreground_call_shows_while_it_runs_and_stays_in_the_history():
    from playwright.sync_api import expect, sync_playwright

    with http_server() as (url, token, state):
        agent = Agent(url, token)
        gate = os.path.join(state, "go-call")
        try:
            with sync_playwright() as p:
                browser, page, errors = browser_page(p)
                open_view(page, base_of(url), token)
                command = (
                    f"echo call-started; while [ ! -e {gate} ]; do sleep 0.05; done; "
                    "echo call-finished; exit 3"
                )
                result = in_background(agent.call, "terminal", {"command": command})
                item = page.locator("button.job.call", has_text="call-started")
                expect(item).to_contain_text("running", timeout=20000)
                item.click()
                output = page.locator("#output")
                # Its live output, and its elapsed time counting.
                expect(output).to_contain_text("call-started", timeout=20000)
                expect(page.locator("#facts")).to_contain_text("running for")
                first = page.locator("#facts .age").text_content()
                page.wait_for_timeout(2200)
                assert page.locator("#facts .age").text_content() != first, "the elapsed time stands still"
                open(gate, "w").close()
                said = result()
                assert said.structured_content["exit_code"] == 3, said.text
                # In the history: how it ended, how long it took, the text the model got.
                expect(item).to_contain_text("exited 3", timeout=20000)
                expect(page.locator("#facts")).to_contain_text("exited 3", timeout=20000)
                expect(page.locator("#facts")).to_contain_text("took")
                expect(output).to_contain_text("call-finished")
                expect(output).to_contain_text("[exit 3 · ")

                # An output longer than the result: its full text, while the file exists.
                agent.call("terminal", {"command": "seq 1 40000"})
                long = page.locator("button.job.call", has_text="seq 1 40000")
                expect(long).to_contain_text("exited 0", timeout=20000)
                long.click()
                with page.expect_download() as download:
                    page.get_by_role("button", name="Full output").click()
                with open(download.value.path()) as f:
                    full = f.read()
                assert full.startswith("1\n2\n") and full.endswith("\n40000\n"), full[-40:]
                assert errors == [], errors
                browser.close()
        finally:
            agent.close()


def test_the_calls_history_is_scoped_and_its_full_output_needs_the_key():
    with http_server() as (url, token, _):
        base = base_of(url)
        agent = Agent(url, token)
        try:
            agent.call("terminal", {"command": "seq 1 40000"})
            agent.call("terminal", {"command": "rm -rf /"})
            view = log_in(base, token)
            from test_view import get_stream

            _, _, events = get_stream(base + "/view/events", view)
            [session] = [s for s in events["sessions"] if s["calls"]["ran"]]
            calls = session["calls"]
            assert calls["ran"] == 2 and calls["failed"] == 1, calls
            seq, rm = calls["done"]
            assert seq["state"] == "exited" and seq["exit_code"] == 0 and seq["spill"], seq
            assert rm["state"] == "blocked by the guard" and rm["failed"], rm
            spill = f"{base}/view/spill?session={session['key']}&id={seq['id']}"
            assert get(spill)[0] == 401
            status, _, text = get(spill, view)
            assert status == 200 and text.startswith("1\n2\n3\n"), (status, text[:40])
            assert get(f"{base}/view/spill?session={session['key']}&id={rm['id']}", view)[0] == 404
        finally:
            agent.close()


@needs_chromium
def test_colours_statuses_names_and_addresses_at_a_glance():
    from playwright.sync_api import expect, sync_playwright

    outside = os.path.join(os.path.expanduser("~"), f"agentty-view-refused-{os.getpid()}")
    with http_server("--view-control") as (url, token, state):
        agent = Agent(url, token)
        idle = Agent(url, token)  # an initialize and nothing else
        try:
            with sync_playwright() as p:
                browser, page, errors = browser_page(p)
                base = base_of(url)
                open_view(page, base, token)
                # Colours kept, everything else shown as text, never markup.
                evil = '<img src=x onerror="document.title=`pwned`">'
                script = (
                    "printf '\\033[1;31mFAIL\\033[0m one\\n\\033[32mPASS\\033[0m two\\n'; "
                    "printf '\\033]0;osc-title-x\\007\\033[2J\\033[38;5;208morange\\033[0m\\n'; "
                    f"printf '%s\\n' '{evil}'; "
                    "printf '%s\\n' " + "x" * 300 + "; exit 2"
                )
                job = agent.call("terminal", {"command": script, "background": True})
                job = job.structured_content["job_id"]
                button = page.locator(f"button.job[data-id='{job}']")
                expect(button).to_contain_text("exited 2", timeout=20000)
                assert "st-failed" in button.get_attribute("class")
                button.click()
                output = page.locator("#output")
                expect(output).to_contain_text("PASS two", timeout=20000)
                fail = output.locator("span", has_text="FAIL")
                expect(fail).to_have_css("color", "rgb(255, 123, 114)")
                expect(fail).to_have_css("font-weight", "700")
                expect(output.locator("span", has_text="PASS")).to_have_css("color", "rgb(126, 231, 135)")
                expect(output.locator("span", has_text="orange")).to_have_css("color", "rgb(255, 135, 0)")
                shown = output.text_content()
                assert evil in shown and "\x1b" not in shown and "osc-title-x" not in shown, repr(shown)
                assert output.locator("img").count() == 0 and page.title() != "pwned"
                # A long line wraps: the output scrolls down, never sideways.
                assert page.evaluate("(o) => o.scrollWidth <= o.clientWidth", output.element_handle())

                # Every status, coloured.
                ok = agent.call("terminal", {"command": "true"})
                blocked = agent.call("terminal", {"command": "rm -rf /"})
                assert blocked.structured_content is None or "guard" in blocked.text or "rm-root" in blocked.text
                refused = agent.call("terminal", {"command": f"echo x > {outside}"})
                assert refused.structured_content["error_code"] == 2008, refused.text
                waits = agent.call("terminal", {"command": "read -p 'name? ' x", "pty": True, "timeout_ms": 20000})
                assert "name?" in waits.text, waits.text
                sleeper = agent.call("terminal", {"command": "sleep 300", "background": True})
                sleeper = sleeper.structured_content["job_id"]
                expected = {
                    "true": ("exited 0", "st-ok"),
                    "rm -rf /": ("blocked by the guard", "st-blocked"),
                    f"echo x > {outside}": ("refused by the sandbox", "st-refused"),
                    "read -p 'name? ' x": ("awaiting input", "st-input"),
                }
                for label, (said, cls) in expected.items():
                    item = page.locator("button.job.call").filter(has=page.locator(".label", has_text=label))
                    expect(item).to_contain_text(said, timeout=20000)
                    assert cls in item.get_attribute("class"), (label, item.get_attribute("class"))
                running = page.locator(f"button.job[data-id='{sleeper}']")
                expect(running).to_contain_text("running", timeout=20000)
                assert "st-running" in running.get_attribute("class")
                # The agent's row: calls run, failed, what runs now.
                row = page.locator(".session", has=running).locator(".agent-row")
                expect(row).to_contain_text("6 calls")
                expect(row).to_contain_text("3 failed")
                expect(row).to_contain_text("now: sleep 300")
                # Stopped by the user: so marked, and the header still says live.
                running.click()
                page.get_by_role("button", name="Stop this job").click()
                expect(running).to_contain_text("stopped by the user", timeout=20000)
                assert "st-user" in running.get_attribute("class")
                expect(page.locator("#status")).to_have_text("live")
                # Named by caller and client; the idle session folded away.
                session = page.locator(".session", has=running)
                expect(session.locator(".session-name")).to_contain_text(" · ")
                expect(page.locator(".idle-sessions summary")).to_have_text("1 session without work")
                assert page.locator(".session", has=page.locator(".empty")).count() == 0
                # A shell by what runs in it and where.
                shell = agent.call("shell_open", {}).structured_content["id"]
                shell_button = page.locator(f"button.job[data-id='{shell}']")
                expect(shell_button).to_contain_text("at its prompt", timeout=20000)
                workspace = agent.call("terminal", {"command": "pwd"}).text.splitlines()[0]
                expect(shell_button).to_contain_text(" in " + workspace)
                agent.call("shell_send", {"id": shell, "input": "sleep 30\n", "timeout_ms": 500})
                expect(shell_button).to_contain_text("sleep 30 in " + workspace, timeout=20000)
                # Its own address: a reload (which logs in again) opens it.
                shell_button.click()
                expect(page).to_have_url(f"{base}/#s=" + shell_button.get_attribute("data-session") + f"&id={shell}")
                page.reload()
                page.fill("#token", token)
                page.click("#open")
                expect(page.locator("#title")).to_contain_text(shell, timeout=20000)
                expect(page.locator(f"button.job.selected[data-id='{shell}']")).to_be_visible()
                assert errors == [], errors
                browser.close()
            agent.call("shell_close", {"id": shell})
        finally:
            agent.close()
            idle.close()
            if os.path.exists(outside):
                os.remove(outside)


# A visible text that wraps must have a box that holds 30 characters of its font (a short word
# alone in a small box, like a heading, is not squeezed); returns offenders.
NARROW_TEXT = """() => {
  const bad = [];
  const canvas = document.createElement("canvas").getContext("2d");
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node; (node = walker.nextNode());) {
    if (!node.textContent.trim()) continue;
    let box = node.parentElement;
    if (!box.getClientRects().length) continue;
    while (box && getComputedStyle(box).display.startsWith("inline")) box = box.parentElement;
    const style = getComputedStyle(box);
    canvas.font = style.fontSize + " " + style.fontFamily;
    const room = box.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    const needed = 30 * canvas.measureText("n").width;
    const range = document.createRange();
    range.selectNodeContents(node);
    const lines = new Set([...range.getClientRects()].map((r) => Math.round(r.top))).size;
    if (lines > 1 && room + 1 < needed) bad.push([box.tagName + "#" + box.id + "." + box.className, node.textContent.slice(0, 40), room, needed]);
  }
  return bad;
}"""

# WCAG AA: every visible text (but a program's own colours) against its background, >= 4.5:1.
LOW_CONTRAST = """() => {
  const parse = (c) => (c.match(/[\\d.]+/g) || []).map(Number);
  const lum = ([r, g, b]) => {
    const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
  };
  const background = (el) => {
    for (; el; el = el.parentElement) {
      const c = parse(getComputedStyle(el).backgroundColor);
      if (c.length === 3 || (c.length === 4 && c[3] > 0.5)) return c.slice(0, 3);
    }
    return [255, 255, 255];
  };
  const bad = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node; (node = walker.nextNode());) {
    const el = node.parentElement;
    if (!node.textContent.trim() || !el.getClientRects().length) continue;
    if (el.closest("#output") && el.style.color) continue;
    const fg = lum(parse(getComputedStyle(el).color).slice(0, 3));
    const bg = lum(background(el));
    const ratio = (Math.max(fg, bg) + 0.05) / (Math.min(fg, bg) + 0.05);
    if (ratio < 4.5) bad.push([el.tagName + "." + el.className, node.textContent.slice(0, 30), ratio.toFixed(2)]);
  }
  return bad;
}"""


def busy(agent, state):
    """A session with a bit of everything: calls that passed, failed and were blocked, a job,
    a shell."""
    agent.call("terminal", {"command": "echo a fairly long command line to see how it wraps on a phone screen"})
    agent.call("terminal", {"command": "ls /nonexistent-dir"})
    agent.call("terminal", {"command": "rm -rf /"})
    job = agent.call("terminal", {"command": "sleep 300", "background": True}).structured_content["job_id"]
    shell = agent.call("shell_open", {}).structured_content["id"]
    return job, shell


@needs_chromium
def test_at_420_and_360_px_the_list_is_a_picker_with_room_to_read_and_no_sideways_scroll():
    from playwright.sync_api import expect, sync_playwright

    with http_server() as (url, token, state):
        agent = Agent(url, token)
        try:
            with sync_playwright() as p:
                browser, page, errors = browser_page(p, 420, 800)
                page_width = lambda: page.evaluate("document.documentElement.scrollWidth")
                page.goto(base_of(url) + "/")
                assert page.evaluate(NARROW_TEXT) == [], "the login form"
                open_view(page, base_of(url), token)
                job, shell = busy(agent, state)
                item = page.locator(f"button.job[data-id='{job}']")
                expect(item).to_be_visible(timeout=20000)
                expect(page.locator(f"button.job[data-id='{shell}']")).to_be_visible(timeout=20000)
                for width in (420, 360):
                    page.set_viewport_size({"width": width, "height": 800})
                    # The list alone, as wide as the screen; the output hidden.
                    expect(page.locator("#detail")).to_be_hidden()
                    assert page.evaluate(NARROW_TEXT) == [], width
                    assert page_width() <= width, (width, page_width())
                    # Picked: the output alone, with a way back.
                    page.locator("button.job.call", has_text="ls /nonexistent-dir").click()
                    expect(page.locator("#sessions")).to_be_hidden()
                    expect(page.locator("#output")).to_contain_text("No such file", timeout=20000)
                    assert page.evaluate(NARROW_TEXT) == [], width
                    assert page_width() <= width, (width, page_width())
                    page.get_by_role("button", name="All sessions").click()
                    expect(page.locator("#sessions")).to_be_visible()
                # Wide: both side by side, no back button.
                page.set_viewport_size({"width": 1280, "height": 800})
                item.click()
                expect(page.locator("#sessions")).to_be_visible()
                expect(page.locator("#back")).to_be_hidden()
                assert errors == [], errors
                browser.close()
            agent.call("shell_close", {"id": shell})
        finally:
            agent.close()


@needs_chromium
def test_keyboard_alone_moves_through_the_list_opens_and_comes_back_and_text_passes_aa():
    from playwright.sync_api import expect, sync_playwright

    with http_server() as (url, token, state):
        agent = Agent(url, token)
        try:
            with sync_playwright() as p:
                for width in (1280, 420):
                    browser, page, errors = browser_page(p, width, 800)
                    page.goto(base_of(url) + "/")
                    # Log in by keyboard: the token field has the focus.
                    page.keyboard.type(token)
                    page.keyboard.press("Enter")
                    expect(page.locator("#status")).to_have_text("live", timeout=20000)
                    if width == 1280:
                        job, shell = busy(agent, state)
                    items = page.locator("#sessions button.job")
                    expect(items).to_have_count(5, timeout=20000)
                    # Tab into the list, arrows through it, Enter opens.
                    for _ in range(10):
                        page.keyboard.press("Tab")
                        if page.evaluate("document.activeElement.matches('#sessions button.job')"):
                            break
                    focused = lambda: page.evaluate("document.activeElement.dataset.id || document.activeElement.id")
                    first = focused()
                    assert first, "Tab never reached the list"
                    page.keyboard.press("ArrowDown")
                    second = focused()
                    assert second != first
                    page.keyboard.press("ArrowUp")
                    assert focused() == first
                    page.keyboard.press("End")
                    last = focused()
                    page.keyboard.press("Enter")
                    expect(page.locator("#title")).to_contain_text(last, timeout=20000)
                    assert focused() == "output", "the output did not take the focus"
                    if width == 420:
                        expect(page.locator("#sessions")).to_be_hidden()
                    page.keyboard.press("Escape")
                    expect(page.locator("#sessions")).to_be_visible()
                    assert focused() == last, "back, the focus is not on the item that was open"
                    # WCAG AA contrast, list and output both on screen.
                    page.keyboard.press("Enter")
                    expect(page.locator("#output")).not_to_be_empty(timeout=20000)
                    if width == 420:
                        assert page.evaluate(LOW_CONTRAST) == [], width
                        page.keyboard.press("Escape")
                    assert page.evaluate(LOW_CONTRAST) == [], width
                    # The check itself sees a low contrast.
                    page.evaluate("document.querySelector('.agent-row').style.color = '#3a3f4a'")
                    assert page.evaluate(LOW_CONTRAST) != []
                    assert errors == [], errors
                    browser.close()
            agent.call("shell_close", {"id": shell})
        finally:
            agent.close()


@needs_chromium
def test_with_control_the_user_takes_a_shells_keyboard_and_the_agent_is_told():
    from playwright.sync_api import expect, sync_playwright

    import test_http

    with http_server("--view-control") as (url, token, state):
        agent = Agent(url, token)
        try:
            shell = agent.call("shell_open", {}).structured_content["id"]
            with sync_playwright() as p:
                browser, page, errors = browser_page(p)
                open_view(page, base_of(url), token)
                page.locator(f"button.job[data-id='{shell}']").click()
                page.get_by_role("button", name="Take the keyboard").click()
                expect(page.get_by_role("button", name="Give it back")).to_be_visible(timeout=20000)
                # While the user holds it, the agent types nothing.
                refused = agent.call("shell_send", {"id": shell, "input": "echo agent-typed\n"})
                assert "the user has taken" in refused.text, refused.text
                page.fill("#keys", "echo hi-from-$((40+2))")
                page.keyboard.press("Enter")
                expect(page.locator("#output")).to_contain_text("hi-from-42", timeout=20000)
                page.get_by_role("button", name="Ctrl+C").click()
                page.get_by_role("button", name="Give it back").click()
                expect(page.get_by_role("button", name="Take the keyboard")).to_be_visible(timeout=20000)
                assert errors == [], errors
                browser.close()
            # The agent's next result says what the user did and what the screen shows.
            told = agent.call("shell_read", {"id": shell})
            assert f"the user typed 1 line into {shell}" in told.text, told.text
            assert "echo hi-from-$((40+2))" in told.text and "hi-from-42" in told.text, told.text
            assert "agent-typed" not in told.text
            # The shell is the agent's again, its prompt accounting intact.
            again = agent.call("shell_send", {"id": shell, "input": "echo back-$((1+1))\n"})
            assert "back-2" in again.text and again.structured_content["status"] == "done", again.text
            # Every keystroke is in the server's log, with the caller's name.
            log = test_http.SERVERS[-1].log.text()
            [typed] = [line for line in log.splitlines() if "hi-from-$((40+2))" in line]
            assert "typed into the shell from the web view" in typed and "caller=" in typed, typed
            agent.call("shell_close", {"id": shell})
        finally:
            agent.close()


def test_keys_the_user_types_at_a_password_prompt_reach_neither_the_model_nor_the_log():
    """Review 36, M5: a password typed through the view's keyboard at an echo-off prompt went
    into the model's next result ("the user typed ... (\"hunter2\\n\")") and the INFO log. Now
    the model and the log get its length only, and an echo of it is masked."""
    import json

    import test_http
    from test_view import get_stream

    secret = "hunter2-" + os.urandom(6).hex()
    with http_server("--view-control") as (url, token, _):
        agent = Agent(url, token)
        try:
            shell = agent.call("shell_open", {}).structured_content["id"]
            asked = agent.call("shell_send", {
                "id": shell, "timeout_ms": 3000,
                "input": "python3 -c 'import getpass; p = getpass.getpass(\"Password: \"); "
                         "print(\"echo:\", p)'\n",
            })
            assert asked.structured_content["status"] == "awaiting_input", asked.text
            base = base_of(url)
            view = log_in(base, token)
            _, _, events = get_stream(base + "/view/events", view)
            key = next(s["key"] for s in events["sessions"] for j in s["jobs"] if j["id"] == shell)
            headers = {**view, "Content-Type": "application/json"}

            def type_by_hand(keys):
                """The user takes the shell's keyboard in the view, types `keys`, gives it back."""
                for action in ({"action": "take"}, {"action": "type", "keys": keys},
                               {"action": "give"}):
                    body = json.dumps({"session": key, "id": shell, **action}).encode()
                    status, _, said = get(base + "/view/keyboard", headers, "POST", body)
                    assert status == 200, (action, status, said)

            type_by_hand(secret + "\n")
            told = agent.call("shell_read", {"id": shell})
            assert secret not in told.text, told.text
            assert f"[{len(secret)} keys at a password prompt, not shown]" in told.text, told.text
            assert "echo:" in told.text, told.text
            log = test_http.SERVERS[-1].log.text()
            assert secret not in log, log[-2000:]
            assert "typed at a password prompt from the web view" in log, log[-2000:]
            # A program that reads a token key by key in raw mode turns no echo off: the words
            # of its prompt tell (review 37 #9).
            token = "ghp_" + os.urandom(8).hex()
            raw_reader = (
                "python3 -c 'import sys, tty; tty.setraw(0); "
                "sys.stdout.write(\"? Paste your authentication token: \"); sys.stdout.flush(); "
                "s = \"\"\n"
                "while not s.endswith(chr(10)): s += sys.stdin.read(1)\n"
                "print(\"got\", len(s))'\n"
            )
            agent.call("shell_send", {"id": shell, "timeout_ms": 1500, "input": raw_reader})
            type_by_hand(token + "\n")
            told = agent.call("shell_read", {"id": shell})
            assert token not in told.text, told.text
            assert f"[{len(token)} keys at a password prompt, not shown]" in told.text, told.text
            assert token not in test_http.SERVERS[-1].log.text()
            agent.call("shell_close", {"id": shell})
        finally:
            agent.close()
