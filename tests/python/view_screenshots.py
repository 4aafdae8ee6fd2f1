"""Takes the README's pictures of the web view: a busy server with three agents (three
callers, each with its client), at 1280 and 420 px, saved as docs/view.png and
docs/view-phone.png. Run from the repository's root:

    AGENTTY_BIN=target/debug/agentty target/py-venv/bin/python tests/python/view_screenshots.py
"""

import copy
import os
import sys
import threading
import time
import uuid

sys.path.insert(0, os.path.dirname(__file__))

from playwright.sync_api import expect, sync_playwright  # noqa: E402

import test_http  # noqa: E402
from private_dirs import private_file  # noqa: E402
from test_http import http_server, raw  # noqa: E402
from test_http_callers import session_call  # noqa: E402
from test_view import CHROMIUM, base_of, open_view  # noqa: E402

CALLERS = {"alice": "claude-code", "bob": "codex", "carol": "gemini-cli"}


def agent(url, token, client):
    init = copy.deepcopy(test_http.INIT)
    init["params"]["clientInfo"] = {"name": client, "version": "1"}
    auth = {"Authorization": f"Bearer {token}"}
    status, headers, _ = raw(url, init, auth)
    assert status == 200
    sid = {**auth, "Mcp-Session-Id": headers["Mcp-Session-Id"]}
    raw(url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, sid)
    return lambda tool, args: session_call(url, sid, tool, args)


def main():
    tokens = {name: name[0] * 8 + uuid.uuid4().hex for name in CALLERS}
    lines = [f"{name} {token}" for name, token in tokens.items()]
    ops = "o" * 8 + uuid.uuid4().hex
    token_file = private_file("\n".join(lines + [f"ops {ops} operator"]) + "\n")
    docs = os.path.join(os.path.dirname(__file__), "..", "..", "docs")
    with http_server("--token-file", token_file) as (url, _, state):
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1280, "height": 760})
            open_view(page, base_of(url), ops)
            alice, bob, carol = (agent(url, tokens[n], c) for n, c in CALLERS.items())
            # alice: tests in the background, coloured, one failing; a few calls before.
            alice("terminal", {"command": "git init -q . && echo '# demo' > README.md && ls"})
            alice("terminal", {"command": "grep -rn TODO src"})
            tests = (
                "for t in parse_args spawn_tree ring_buffer spill_file guard_rules; do "
                "sleep 0.2; printf '\\033[1mtest\\033[0m %s ... \\033[32mok\\033[0m\\n' $t; done; "
                "printf '\\033[1mtest\\033[0m sandbox_probe ... \\033[1;31mFAILED\\033[0m\\n'; "
                "printf '\\nfailures:\\n  \\033[31massertion failed: landlock ABI >= 4\\033[0m\\n'; exit 101"
            )
            job = alice("terminal", {"command": tests, "background": True})["structuredContent"]["job_id"]
            alice("task_wait", {"id": job, "timeout_ms": 10000})
            alice("terminal", {"command": "sleep 600 # npm run dev", "background": True})
            # bob: a build running now in the foreground, a refused call, a passing one.
            bob("terminal", {"command": "rm -rf /"})
            bob("terminal", {"command": "python3 -c 'print(sum(range(10**6)))'"})
            build = (
                "for i in $(seq 1 400); do printf '\\033[32m   Compiling\\033[0m crate-%03d v0.1.0\\n' $i; "
                "sleep 0.1; done"
            )

            def building():
                try:
                    bob("terminal", {"command": build, "timeout_ms": 120000})
                except Exception:  # noqa: BLE001 (the server ends under it when the pictures are taken)
                    pass

            threading.Thread(target=building, daemon=True).start()
            # carol: a shell running top, in a directory of its own.
            carol("terminal", {"command": "mkdir -p web && echo ready"})
            shell = carol("shell_open", {"workdir": "web"})["structuredContent"]["id"]
            carol("shell_send", {"id": shell, "input": "top -d 1\n", "timeout_ms": 1500})
            page.locator("button.job.call", has_text="Compiling").click()
            expect(page.locator("#output")).to_contain_text("Compiling", timeout=20000)
            page.locator(f"button.job[data-id='{job}']").click()
            expect(page.locator("#output")).to_contain_text("assertion failed", timeout=20000)
            time.sleep(1)
            page.screenshot(path=os.path.join(docs, "view.png"))
            page.set_viewport_size({"width": 420, "height": 860})
            page.get_by_role("button", name="All sessions").click()
            time.sleep(1)
            page.screenshot(path=os.path.join(docs, "view-phone.png"))
            browser.close()
        carol("shell_close", {"id": shell})


if __name__ == "__main__":
    main()
