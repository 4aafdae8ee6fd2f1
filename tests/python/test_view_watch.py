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
