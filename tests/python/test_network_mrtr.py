"""Network `ask` for clients of protocol 2026-07-28 (no server-to-client request), in raw
JSON-RPC over stdio (docs/BEHAVIOUR.md §13): a command refused a host not on the allowlist
answers `input_required` with the question and a sealed `requestState`; the retry runs the call
again with the host allowed once or for the session, or, denied, answers with the first result.
A shell's command is not asked about (its line is not typed again): it gets `allowlist`.

The host is this machine itself (its own address, which is not loopback and not listed): a
listener of the test there counts the connections that got through."""

import http.server
import socket
import subprocess
import threading

from test_mrtr import Stdio, said

CAPS = {"elicitation": {"form": {}}}


def own_address():
    out = subprocess.run(["hostname", "-I"], capture_output=True, text=True).stdout.split()
    for word in out:
        try:
            socket.inet_pton(socket.AF_INET, word)
        except OSError:
            continue
        if not word.startswith("127."):
            return word
    raise AssertionError("this machine has no IPv4 address but loopback")


class Counted(http.server.BaseHTTPRequestHandler):
    seen = 0

    def do_GET(self):
        Counted.seen += 1
        body = b"host-service"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def answer(decision):
    return {"action": "accept", "content": {"decision": decision}}


def test_a_2026_client_is_asked_with_the_result_and_its_retry_runs_once_for_the_session_or_not():
    httpd = http.server.ThreadingHTTPServer(("0.0.0.0", 0), Counted)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    target = f"{own_address()}:{httpd.server_address[1]}"
    args = {"command": f"curl -sS --max-time 20 http://{target}/ 2>&1 | tail -n 1"}
    server = Stdio()
    try:
        # The command ran, was refused, and the question comes back instead of its result.
        asked = server.call("terminal", args, caps=CAPS)
        assert asked.get("resultType") == "input_required", asked
        question = asked["inputRequests"]["approve"]["params"]
        assert target in question["message"], question
        assert question["requestedSchema"]["properties"]["decision"]["enum"] == ["once", "session", "deny"]
        assert Counted.seen == 0

        # Once: the retry runs the call again with the host allowed.
        ran = server.call("terminal", args, caps=CAPS, state=asked["requestState"], answer=answer("once"))
        assert "host-service" in said(ran), said(ran)
        assert ran["structuredContent"].get("error_code") is None, said(ran)
        assert Counted.seen == 1
        # ... for that run only: the next call is asked again.
        asked = server.call("terminal", args, caps=CAPS)
        assert asked.get("resultType") == "input_required", asked

        # Deny: the first run's result, with the user's refusal; nothing runs again.
        denied = server.call("terminal", args, caps=CAPS, state=asked["requestState"], answer=answer("deny"))
        text = said(denied)
        assert "[error 2010]" in text and "the user declined" in text, text
        assert "agentty refused" in text, "the first run's output is kept: " + text
        assert Counted.seen == 1
        # A declined form is a deny too.
        asked = server.call("terminal", args, caps=CAPS)
        declined = server.call("terminal", args, caps=CAPS, state=asked["requestState"], answer={"action": "decline"})
        assert "the user declined" in said(declined), said(declined)
        assert Counted.seen == 1

        # Session: this run and every later one pass without a question.
        asked = server.call("terminal", args, caps=CAPS)
        ran = server.call("terminal", args, caps=CAPS, state=asked["requestState"], answer=answer("session"))
        assert "host-service" in said(ran), said(ran)
        again = server.call("terminal", args, caps=CAPS)
        assert again.get("resultType") != "input_required", again
        assert "host-service" in said(again), said(again)
        assert Counted.seen == 3
    finally:
        server.close()
        httpd.shutdown()


def test_a_2026_client_that_cannot_ask_gets_the_refusal_with_the_way_to_allow_it():
    server = Stdio()
    try:
        result = server.call("terminal", {"command": "curl -sS https://unlisted.invalid/ 2>&1 | tail -n 1"}, caps={})
        assert result.get("resultType") != "input_required", result
        text = said(result)
        assert result["structuredContent"]["error_code"] == 2010, text
        assert "unlisted.invalid:443" in text and "cannot ask the user" in text, text
        assert 'allow_net = ["unlisted.invalid:443"]' in text, text
    finally:
        server.close()


def test_a_2026_clients_shell_is_allowlist_and_takes_the_sessions_approvals():
    """A shell's command cannot be asked about with its result (a typed line is not run again):
    for this client its shell is `allowlist`, says so, and reports the refusal (2010); a host
    the user approved for the session through a `terminal` call is reached from the shell too."""
    httpd = http.server.ThreadingHTTPServer(("0.0.0.0", 0), Counted)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    target = f"{own_address()}:{httpd.server_address[1]}"
    fetch = f"curl -sS --max-time 20 http://{target}/ 2>&1 | tail -n 1"
    Counted.seen = 0
    server = Stdio()
    try:
        opened = server.call("shell_open", {}, caps=CAPS)
        line = opened["structuredContent"]["sandbox"]
        assert "; network allowlist (this client cannot ask the user):" in line, line
        shell = opened["structuredContent"]["id"]
        sent = server.call("shell_send", {"id": shell, "input": fetch + "\n"}, caps=CAPS)
        assert sent.get("resultType") != "input_required", sent
        text = said(sent)
        assert sent["structuredContent"]["error_code"] == 2010, text
        assert target in text and "cannot ask the user" in text, text
        assert Counted.seen == 0

        # Approved for the session through a terminal call: the shell reaches it too.
        asked = server.call("terminal", {"command": fetch}, caps=CAPS)
        assert asked.get("resultType") == "input_required", asked
        ran = server.call("terminal", {"command": fetch}, caps=CAPS, state=asked["requestState"], answer=answer("session"))
        assert "host-service" in said(ran), said(ran)
        sent = server.call("shell_send", {"id": shell, "input": fetch + "\n"}, caps=CAPS)
        assert "host-service" in said(sent), said(sent)
        assert sent["structuredContent"].get("error_code") is None, said(sent)
        assert Counted.seen == 2
    finally:
        server.close()
        httpd.shutdown()


def test_a_2026_clients_background_job_is_allowlist_and_says_so():
    """A background job outlives its call's result, which is the only place this client can be
    asked: its connections to hosts not listed are refused without a question, and the start
    result's `[sandbox]` line says this client cannot ask the user."""
    httpd = http.server.ThreadingHTTPServer(("0.0.0.0", 0), Counted)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    target = f"{own_address()}:{httpd.server_address[1]}"
    Counted.seen = 0
    server = Stdio()
    try:
        fetch = f"curl -sS --max-time 20 http://{target}/ 2>&1 | tail -n 1"
        started = server.call("terminal", {"command": fetch, "background": True}, caps=CAPS)
        assert started.get("resultType") != "input_required", started
        line = started["structuredContent"]["sandbox"]
        assert "; network allowlist (this client cannot ask the user):" in line, line
        job = started["structuredContent"]["job_id"]
        ended = server.call("task_wait", {"id": job, "timeout_ms": 30000}, caps=CAPS)
        assert ended.get("resultType") != "input_required", ended
        text = said(ended)
        assert target in text and "error 2010" in text, text
        assert Counted.seen == 0
    finally:
        server.close()
        httpd.shutdown()
