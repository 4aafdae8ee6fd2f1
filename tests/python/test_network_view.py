"""Network refusals over HTTP and in the web view (docs/BEHAVIOUR.md §13): over HTTP nothing is
asked (`ask` behaves as `allowlist`), the refusal is error 2010, and the view's state lists the
session's recent decisions, which the page shows."""

from test_http import http_server
from test_view import CHROMIUM, Agent, base_of, get_stream, log_in, needs_chromium, open_view


def test_over_http_an_unlisted_host_is_refused_without_a_question_and_the_view_lists_it():
    with http_server() as (url, token, _):
        agent = Agent(url, token)
        try:
            said = agent.call("terminal", {"command": "curl -sS https://unlisted.invalid/x 2>&1 | tail -n 1"})
            assert said.structured_content["error_code"] == 2010, said.text
            assert "unlisted.invalid:443" in said.text and "cannot ask the user" in said.text, said.text
            _, _, state = get_stream(base_of(url) + "/view/events", log_in(base_of(url), token))
            [session] = [s for s in state["sessions"] if s["network"]]
            [seen] = session["network"]
            assert seen["host"] == "unlisted.invalid" and seen["port"] == 443, seen
            assert seen["decision"] == "refused", seen
            assert "not on the allowlist" in seen["rule"], seen
            assert isinstance(seen["time"], int), seen
        finally:
            agent.close()


@needs_chromium
def test_the_page_shows_a_sessions_refused_connections():
    from playwright.sync_api import expect, sync_playwright

    with http_server() as (url, token, _):
        agent = Agent(url, token)
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
                page = browser.new_page(viewport={"width": 390, "height": 844})
                open_view(page, base_of(url), token)
                agent.call("terminal", {"command": "curl -sS https://refused.invalid/ ; true", "background": True})
                refused = page.locator(".network-refused")
                expect(refused).to_contain_text("refused.invalid:443", timeout=20000)
                expect(refused).to_contain_text("not on the allowlist")
                width = page.evaluate("document.documentElement.scrollWidth")
                assert width <= 390, width
                browser.close()
        finally:
            agent.close()
