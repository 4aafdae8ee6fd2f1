"""Every call live in the web view, coloured for whoever opens it whenever, every refusal of
the guard in its history, and the keys a shell needs in the user's hand (docs/BEHAVIOUR.md §12).
In Debian's Chromium, driven by Playwright (nothing downloads a browser)."""

import os
import re

from test_http import http_server
from test_view import Agent, base_of, needs_chromium, open_view
from test_view_watch import browser_page, in_background

RED = "rgb(255, 123, 114)"
GREEN = "rgb(126, 231, 135)"


@needs_chromium
def test_a_call_on_a_terminal_shows_its_output_while_it_runs():
    from playwright.sync_api import expect, sync_playwright

    with http_server() as (url, token, state):
        agent = Agent(url, token)
        gate = os.path.join(state, "go-pty")
        try:
            with sync_playwright() as p:
                browser, page, errors = browser_page(p)
                open_view(page, base_of(url), token)
                # The colour comes in a write after the line began: that open line is the
                # copy's once, not again at the end.
                command = (
                    "printf 'pty-started '; sleep 0.3; printf '\\033[32mgreen\\033[0m\\n'; "
                    f"while [ ! -e {gate} ]; do sleep 0.05; done; echo pty-finished"
                )
                result = in_background(
                    agent.call, "terminal", {"command": command, "pty": True, "timeout_ms": 60000}
                )
                item = page.locator("button.job.call", has_text="pty-started")
                expect(item).to_contain_text("running", timeout=20000)
                item.click()
                output = page.locator("#output")
                # Live, while the command still waits at its gate, and coloured.
                expect(output).to_contain_text("pty-started", timeout=20000)
                expect(output.locator("span", has_text="green")).to_have_css("color", GREEN)
                expect(item).to_contain_text("running")
                open(gate, "w").close()
                said = result()
                assert "pty-finished" in said.text, said.text
                expect(item).to_contain_text("exited 0", timeout=20000)
                expect(output).to_contain_text("pty-finished", timeout=20000)
                page.wait_for_timeout(500)  # what the copy's close adds, streamed after the end
                text = output.text_content()
                assert text.count("pty-started") == 1, text
                assert errors == [], errors
                browser.close()
        finally:
            agent.close()


@needs_chromium
def test_a_viewer_who_opens_a_job_or_a_call_late_sees_its_colours():
    from playwright.sync_api import expect, sync_playwright

    with http_server() as (url, token, state):
        agent = Agent(url, token)
        gate = os.path.join(state, "go-late")
        try:
            # Nobody watches while these print: a job that ended, plain lines first; a call
            # still running.
            job = agent.call(
                "terminal",
                {
                    "command": "echo plain-before; printf 'half '; "
                    "printf '\\033[31mred-late\\033[0m\\n'; echo plain-after",
                    "background": True,
                },
            ).structured_content["job_id"]
            agent.call("task_wait", {"id": job, "timeout_ms": 20000})
            # A job that prints plain text, and colours only once a viewer watches it.
            switch_gate = os.path.join(state, "go-switch")
            switch = agent.call(
                "terminal",
                {
                    "command": f"echo switch-plain; while [ ! -e {switch_gate} ]; do sleep 0.05; done; "
                    "printf '\\033[32mswitch-green\\033[0m\\n'",
                    "background": True,
                },
            ).structured_content["job_id"]
            call = (
                "printf '\\033[32mgreen-call\\033[0m\\n'; "
                f"while [ ! -e {gate} ]; do sleep 0.05; done"
            )
            # (The last: one call at a time on this session.)
            result = in_background(agent.call, "terminal", {"command": call})
            with sync_playwright() as p:
                browser, page, errors = browser_page(p)
                open_view(page, base_of(url), token)
                output = page.locator("#output")

                page.locator(f"button.job[data-id='{job}']").click()
                expect(output).to_contain_text("plain-after", timeout=20000)
                expect(output.locator("span", has_text="red-late")).to_have_css("color", RED)
                assert output.text_content().startswith("plain-before\nhalf red-late\nplain-after")

                item = page.locator("button.job.call", has_text="green-call")
                expect(item).to_contain_text("running", timeout=20000)
                item.click()
                expect(output.locator("span", has_text="green-call")).to_have_css(
                    "color", GREEN, timeout=20000
                )
                assert "opened after" not in output.text_content()
                open(gate, "w").close()
                result()

                page.locator(f"button.job[data-id='{switch}']").click()
                expect(output).to_contain_text("switch-plain", timeout=20000)
                open(switch_gate, "w").close()
                expect(output.locator("span", has_text="switch-green")).to_have_css(
                    "color", GREEN, timeout=20000
                )
                assert output.text_content().startswith("switch-plain\n")
                assert errors == [], errors
                browser.close()
        finally:
            agent.close()


def test_every_refusal_of_the_guard_is_in_the_calls_history():
    """The command, code in its `env` or `stdin`, code in a shell's `env`, a line typed into a
    shell: each refusal shows as "blocked by the guard", with what the model was told."""
    from test_view import get_stream, log_in

    with http_server() as (url, token, _):
        agent = Agent(url, token)
        try:
            shell = agent.call("shell_open", {}).structured_content["id"]
            tries = [
                ("terminal", {"command": "rm -rf /"}, "rm -rf /"),
                ("terminal", {"command": "true", "env": {"PROMPT_COMMAND": "rm -rf /"}}, "true"),
                ("terminal", {"argv": ["bash"], "stdin": "rm -rf /\n"}, "bash"),
                ("shell_open", {"env": {"BASH_FUNC_x%%": "() { rm -rf /; }"}}, "shell_open"),
                ("shell_send", {"id": shell, "input": "rm -rf /\n"}, f"{shell}: rm -rf /"),
            ]
            for tool, args, _ in tries:
                said = agent.call(tool, args)
                assert "rm -rf" in said.text or "guard" in said.text.lower(), (tool, args, said.text)
            _, _, events = get_stream(base_of(url) + "/view/events", log_in(base_of(url), token))
            [session] = [s for s in events["sessions"] if s["calls"]["ran"]]
            done = session["calls"]["done"]
            assert [c["label"] for c in done] == [label for _, _, label in tries], done
            assert all(c["state"] == "blocked by the guard" and c["failed"] for c in done), done
            assert session["calls"]["failed"] == len(tries), session["calls"]
            agent.call("shell_close", {"id": shell})
        finally:
            agent.close()


@needs_chromium
def test_the_user_at_a_shell_has_tab_arrows_enter_alone_and_ctrl_d_z_and_a_recalled_line_is_not_left_to_the_agent():
    from playwright.sync_api import expect, sync_playwright

    with http_server("--view-control") as (url, token, _):
        agent = Agent(url, token)
        try:
            agent.call("terminal", {"command": "touch zq-unique-file"})
            shell = agent.call("shell_open", {}).structured_content["id"]
            with sync_playwright() as p:
                browser, page, errors = browser_page(p)
                open_view(page, base_of(url), token)
                page.locator(f"button.job[data-id='{shell}']").click()
                page.get_by_role("button", name="Take the keyboard").click()
                expect(page.get_by_role("button", name="Give it back")).to_be_visible(timeout=20000)
                output = page.locator("#output")
                field = page.locator("#keys")

                # Tab completes a file name, then Enter runs the line.
                field.fill("ls zq-un")
                page.get_by_role("button", name="Tab").click()
                expect(output).to_contain_text("ls zq-unique-file", timeout=20000)
                field.press("Enter")
                expect(output).to_contain_text(re.compile(r"zq-unique-file\s*\n.*zq-unique-file"), timeout=20000)

                # The up arrow in the field recalls the last line; Enter alone runs it again.
                field.fill("echo first-$((1+1))")
                field.press("Enter")
                expect(output).to_contain_text("first-2", timeout=20000)
                field.press("ArrowUp")
                page.wait_for_timeout(500)
                field.press("Enter")
                expect(output).to_contain_text(re.compile(r"first-2[\s\S]*first-2"), timeout=20000)

                # Ctrl+D ends a program's input; Ctrl+Z stops a job.
                field.fill("cat > from-the-page")
                field.press("Enter")
                field.fill("typed-into-cat")
                field.press("Enter")
                page.get_by_role("button", name="Ctrl+D").click()
                field.fill("sleep 300")
                field.press("Enter")
                page.wait_for_timeout(500)
                page.get_by_role("button", name="Ctrl+Z").click()
                expect(output).to_contain_text(re.compile(r"Stopped\s+sleep 300"), timeout=20000)
                field.fill("kill -9 %1")
                field.press("Enter")

                # A line recalled by the arrow and left there is cleared when handed back: the
                # agent's Enter runs nothing the guard did not read.
                field.fill("echo recalled-$((2+3))")
                field.press("Enter")
                expect(output).to_contain_text("recalled-5", timeout=20000)
                page.get_by_role("button", name="Up arrow").click()
                expect(output).to_contain_text(re.compile(r"[#$] echo recalled-\$\(\(2\+3\)\)\s*$"), timeout=20000)
                page.get_by_role("button", name="Give it back").click()
                expect(page.get_by_role("button", name="Take the keyboard")).to_be_visible(timeout=20000)
                assert errors == [], errors
                browser.close()
            told = agent.call("shell_send", {"id": shell, "input": "\n"})
            assert "recalled-5" not in told.structured_content["output"], told.structured_content
            cat = agent.call("shell_send", {"id": shell, "input": "cat from-the-page\n"})
            assert "typed-into-cat" in cat.text and cat.structured_content["status"] == "done", cat.text
            agent.call("shell_close", {"id": shell})
        finally:
            agent.close()
