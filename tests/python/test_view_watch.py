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
