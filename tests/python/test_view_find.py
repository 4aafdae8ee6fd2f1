"""Reading an output in the web view (docs/BEHAVIOUR.md §12): find in it, and follow its end or
stay where the reader is. In Debian's Chromium, driven by Playwright."""

import os

from test_http import http_server
from test_view import Agent, base_of, needs_chromium, open_view
from test_view_watch import NARROW_TEXT, browser_page

# The matches highlighted, the current one's text, and whether it is inside the output's box.
FOUND = """() => {
  const all = CSS.highlights.get("find");
  const current = [...(CSS.highlights.get("find-current") || [])];
  const pre = document.getElementById("output").getBoundingClientRect();
  const box = current.length ? current[0].getBoundingClientRect() : null;
  return {
    all: all ? all.size : 0,
    current: current.map((r) => r.toString()),
    seen: !!box && box.top >= pre.top && box.bottom <= pre.bottom,
  };
}"""


@needs_chromium
def test_find_in_the_output_highlights_counts_and_steps_at_420_px_and_never_makes_markup():
    from playwright.sync_api import expect, sync_playwright

    with http_server() as (url, token, state):
        agent = Agent(url, token)
        gate = os.path.join(state, "more-needles")
        evil = '<img src=x onerror="document.title=`pwned`">'
        # 12 needles among 400 lines, one of them across two colours; then two more, later.
        script = (
            "for i in $(seq 1 400); do if [ $((i % 40)) -eq 0 ]; then echo \"line $i needle\"; "
            "else echo \"line $i\"; fi; done; "
            "printf 'coloured \\033[31mNee\\033[32mDLE\\033[0m here\\n'; "
            "echo 'and needleneedle twice'; "
            f"printf '%s\\n' '{evil}'; "
            f"while [ ! -e {gate} ]; do sleep 0.05; done; echo 'late needle'; echo 'last needle'"
        )
        try:
            with sync_playwright() as p:
                browser, page, errors = browser_page(p, 420, 800)
                open_view(page, base_of(url), token)
                job = agent.call("terminal", {"command": script, "background": True})
                job = job.structured_content["job_id"]
                page.locator(f"button.job[data-id='{job}']").click()
                output = page.locator("#output")
                expect(output).to_contain_text("onerror", timeout=20000)
                count = page.locator("#find-count")
                find = page.locator("#find")
                expect(find).to_be_visible()

                find.fill("needle")
                expect(count).to_have_text("1 of 13")
                found = page.evaluate(FOUND)
                assert found["all"] == 13 and found["current"] == ["needle"] and found["seen"], found
                find.press("Enter")
                expect(count).to_have_text("2 of 13")
                find.press("Shift+Enter")
                expect(count).to_have_text("1 of 13")
                find.press("Shift+Enter")  # round the start, to the last
                expect(count).to_have_text("13 of 13")
                for _ in range(2):
                    find.press("Shift+Enter")
                expect(count).to_have_text("11 of 13")
                # The match across two colours is one match, in view.
                found = page.evaluate(FOUND)
                assert found["current"] == ["NeeDLE"] and found["seen"], found
                page.locator("#find-next").click()
                expect(count).to_have_text("12 of 13")

                # New output is searched as it arrives; the current match stays the current one.
                open(gate, "w").close()
                expect(output).to_contain_text("last needle", timeout=20000)
                expect(count).to_have_text("12 of 15")
                assert page.evaluate(FOUND)["all"] == 15

                # The planted tag is found as text, never made markup.
                find.fill("<img src=x")
                expect(count).to_have_text("1 of 1")
                assert page.evaluate(FOUND)["current"] == ["<img src=x"]
                assert output.locator("img").count() == 0 and page.title() != "pwned"
                assert evil in output.text_content()
                find.fill("no such text")
                expect(count).to_have_text("no match")
                assert page.evaluate(FOUND)["all"] == 0
                # Escape empties the box, the output is as it was.
                find.fill("needle")
                expect(count).to_have_text("1 of 15")
                find.press("Escape")
                expect(find).to_have_value("")
                expect(count).to_have_text("")
                assert page.evaluate(FOUND)["all"] == 0
                expect(page.locator("#detail")).to_be_visible()

                # At 420 px: room to read, no sideways scroll.
                assert page.evaluate(NARROW_TEXT) == []
                assert page.evaluate("document.documentElement.scrollWidth") <= 420
                assert errors == [], errors
                browser.close()
        finally:
            agent.close()


def scroll(page):
    return page.evaluate("(() => { const o = document.getElementById('output'); "
                         "return {top: o.scrollTop, height: o.scrollHeight, room: o.clientHeight}; })()")


def settled(page):
    """The output's scroll once the wheel's smooth scroll has come to rest."""
    last = scroll(page)
    for _ in range(50):
        page.wait_for_timeout(200)
        now = scroll(page)
        if now["top"] == last["top"]:
            return now
        last = now
    raise AssertionError(f"the output keeps scrolling: {last}")


def at_bottom(s):
    return s["top"] + s["room"] >= s["height"] - 4


@needs_chromium
def test_the_output_follows_its_end_until_the_reader_scrolls_up_and_follows_again_on_demand():
    from playwright.sync_api import expect, sync_playwright

    with http_server() as (url, token, _):
        agent = Agent(url, token)
        try:
            with sync_playwright() as p:
                browser, page, errors = browser_page(p)
                open_view(page, base_of(url), token)
                script = "seq 1 300; i=0; while :; do i=$((i+1)); echo tick $i; sleep 0.05; done"
                job = agent.call("terminal", {"command": script, "background": True})
                job = job.structured_content["job_id"]
                page.locator(f"button.job[data-id='{job}']").click()
                output = page.locator("#output")
                follow = page.locator("#follow")
                expect(output).to_contain_text("tick 20", timeout=20000)
                # Following: at the end while lines arrive.
                expect(follow).to_have_attribute("aria-pressed", "true")
                page.wait_for_timeout(500)
                assert at_bottom(scroll(page)), scroll(page)

                # The reader scrolls up: it stays put while lines arrive, and the page says so.
                output.hover()
                page.mouse.wheel(0, -600)
                expect(follow).to_have_attribute("aria-pressed", "false")
                expect(follow).to_contain_text("Paused")
                before = settled(page)
                assert not at_bottom(before), before
                page.wait_for_timeout(1500)
                after = scroll(page)
                assert after["height"] > before["height"], "no line arrived"
                assert after["top"] == before["top"], (before, after)

                # Follow again, by the button: at the end, and it stays there.
                follow.click()
                expect(follow).to_have_attribute("aria-pressed", "true")
                page.wait_for_timeout(800)
                assert at_bottom(scroll(page)), scroll(page)

                # Or by scrolling back to the end with the wheel. When a line arrives between
                # the wheel and its scroll, the scroll lands on the end it aimed at, which the
                # line moved: that is the end too. (About 1 wheel in 4 meets a line so: ten go.)
                for _ in range(10):
                    output.hover()
                    page.mouse.wheel(0, -600)
                    expect(follow).to_have_attribute("aria-pressed", "false")
                    settled(page)
                    page.mouse.wheel(0, 100000)
                    expect(follow).to_have_attribute("aria-pressed", "true", timeout=2000)
                page.wait_for_timeout(800)
                assert at_bottom(scroll(page)), scroll(page)
                assert errors == [], errors
                browser.close()
            agent.call("task_stop", {"id": job})
        finally:
            agent.close()
