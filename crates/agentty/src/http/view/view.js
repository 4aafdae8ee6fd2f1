// agentty's web view. Everything a job prints is put on the page as text (textContent), never
// as HTML. Read-only unless the server runs with --view-control.
//
// The view's key (from a login with a token, or a one-time code `agentty view` put in the
// address) is kept in this page's memory only and sent in a header: not in the browser's storage
// (a profile's files are readable by any command), never in an address (browsers keep those in
// their history) nor in a cookie (browsers send those to every port of the host). So a reload
// logs in again, and the event streams are read with fetch, which can send a header, not with
// EventSource, which cannot.
"use strict";

let key = null;

const MAX_TEXT = 256 * 1024;
let selected = null; // {session, id, kind}
let stream = null; // the AbortController of the selected job's stream
let control = false;
let lastState = null;
const dismissed = new Set(); // the warnings the person dismissed, by time, session, path, what
const WARNINGS_SHOWN = 5;
const REFUSALS_SHOWN = 5;

const $ = (id) => document.getElementById(id);

function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined) node.textContent = text;
  return node;
}

function age(ms) {
  const s = Math.floor(ms / 1000);
  if (s < 60) return s + " s";
  if (s < 3600) return Math.floor(s / 60) + " min";
  return Math.floor(s / 3600) + " h " + Math.floor((s % 3600) / 60) + " min";
}

function size(bytes) {
  if (bytes < 1024) return bytes + " B";
  if (bytes < 1024 * 1024) return (bytes / 1024).toFixed(1) + " KiB";
  return (bytes / 1024 / 1024).toFixed(1) + " MiB";
}

function stateText(job) {
  if (job.state === "exited") return "exited " + job.exit_code;
  if (job.state === "signalled") return "killed by " + job.signal;
  if (job.kind === "shell" && job.state === "running") return "open";
  return job.state;
}

function findJob(state, session, id) {
  for (const s of state.sessions) {
    if (s.key !== session) continue;
    for (const j of s.jobs) if (j.id === id) return [s, j];
  }
  return [null, null];
}

function renderList(state) {
  const nav = $("sessions");
  nav.replaceChildren();
  for (const secret of state.secrets || []) {
    const box = el("div", "session asking");
    box.append(el("div", "session-head", "asks for a secret"));
    const link = el("a", "secret", secret.shell + " asks for: " + secret.what + " (read by " + secret.asker + ")");
    link.href = "/secret/" + encodeURIComponent(secret.id);
    // Answered here, where the page's key is: the secret's own page would need a login of its own.
    link.addEventListener("click", (event) => { event.preventDefault(); openSecret(secret); });
    box.append(link);
    nav.append(box);
  }
  if (state.sessions.length === 0) nav.append(el("div", "empty", "No session has started a job yet."));
  for (const s of state.sessions) {
    const box = el("div", "session");
    const started = new Date(s.started * 1000).toLocaleTimeString();
    const who = [s.caller, s.client, s.transport, "since " + started].filter(Boolean).join(" · ");
    box.append(el("div", "session-head", who));
    if (s.agent) box.append(el("div", "session-agent", s.agent));
    if (s.jobs.length === 0) box.append(el("div", "empty", "no jobs or shells"));
    for (const j of s.jobs) {
      const button = el("button", "job");
      button.dataset.session = s.key;
      button.dataset.id = j.id;
      if (selected && selected.session === s.key && selected.id === j.id) button.classList.add("selected");
      button.append(el("span", "id", j.id + " "));
      const st = el("span", "state", j.kind + ", " + stateText(j) + ", " + age(j.age_ms));
      if (j.state === "running") st.classList.add("running");
      button.append(st);
      button.append(el("span", "label", j.label));
      button.addEventListener("click", () => select(s.key, j.id, j.kind));
      box.append(button);
    }
    // The connections its commands were refused, newest first (the server's log has them all).
    const refused = (s.network || []).filter((n) => n.decision === "refused").reverse();
    if (refused.length > 0) {
      const list = el("ul", "network-refused");
      list.append(el("li", "network-head", "network refused:"));
      for (const n of refused.slice(0, REFUSALS_SHOWN)) {
        const what = n.port ? n.host + ":" + n.port : "a socket";
        list.append(el("li", "", what + " (" + n.rule + ", " + new Date(n.time * 1000).toLocaleTimeString() + ")"));
      }
      box.append(list);
    }
    nav.append(box);
  }
}

/** The banner of possibly planted code: what a command left that runs outside the sandbox
 * later (a git hook, an rc file…), newest first, until the person dismisses it. */
function renderWarnings(state) {
  const banner = $("warnings");
  const warningId = (w) => [w.time, w.session, w.path, w.what].join("\n");
  const fresh = (state.warnings || []).filter((w) => !dismissed.has(warningId(w))).reverse();
  banner.hidden = fresh.length === 0;
  banner.replaceChildren();
  if (fresh.length === 0) return;
  banner.append(el("div", "warnings-head",
    "Possibly planted code: it runs outside the sandbox later. Check it before you run git or open a shell here."));
  const list = el("ul");
  for (const w of fresh.slice(0, WARNINGS_SHOWN)) {
    const item = el("li");
    item.append(el("code", "", w.path), document.createTextNode(": " + w.what + " (" +
      new Date(w.time * 1000).toLocaleTimeString() + ", session " + w.session + ")"));
    list.append(item);
  }
  if (fresh.length > WARNINGS_SHOWN) list.append(el("li", "", (fresh.length - WARNINGS_SHOWN) + " more in the server's log"));
  banner.append(list);
  const dismiss = el("button", "", "Dismiss");
  dismiss.addEventListener("click", () => {
    for (const w of fresh) dismissed.add(warningId(w));
    renderWarnings(state);
  });
  banner.append(dismiss);
}

function renderFacts(state) {
  if (!selected) return;
  const [s, j] = findJob(state, selected.session, selected.id);
  const facts = $("facts");
  const actions = $("actions");
  actions.replaceChildren();
  if (!j) { facts.textContent = "ended with its session"; return; }
  $("title").textContent = j.id + "  " + j.label;
  facts.textContent = [j.kind, stateText(j), "pid " + j.pid, "age " + age(j.age_ms),
    size(j.bytes) + " of output", s.client, j.sandbox].join(" · ");
  if (control && j.state === "running") {
    const button = el("button", "", j.kind === "shell" ? "Close this shell" : "Stop this job");
    button.addEventListener("click", () => stop(s.key, j.id));
    actions.append(button);
  }
}

/** fetch with the view's key; a refusal of the key brings the login back. */
async function call(url, options = {}) {
  const headers = {...(options.headers || {}), "X-Agentty-View": key || ""};
  const answer = await fetch(url, {...options, headers, cache: "no-store"});
  if (answer.status === 401) logIn("Enter the token again (the server restarted, or it changed).");
  return answer;
}

/** Reads the server-sent events at `url`, calling handlers[type](data) for each. */
async function readEvents(url, handlers, signal) {
  const answer = await call(url, {signal});
  if (!answer.ok || !answer.body) throw new Error("answered " + answer.status);
  if (handlers.open) handlers.open();
  const reader = answer.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const {value, done} = await reader.read();
    if (done) return;
    buffer += value;
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const frame = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let type = "message";
      const data = [];
      for (const line of frame.split("\n")) {
        if (line.startsWith("event:")) type = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
      }
      if (data.length > 0 && handlers[type]) handlers[type](data.join("\n"));
    }
  }
}

async function stop(session, id) {
  const answer = await call("/view/stop", {
    method: "POST",
    headers: {"Content-Type": "application/json"},
    body: JSON.stringify({session, id}),
  });
  $("status").textContent = answer.ok ? "stopped " + id : "not stopped: " + (await answer.text());
}

function trimOutput(pre) {
  const text = pre.textContent;
  if (text.length > MAX_TEXT) pre.textContent = text.slice(text.length - MAX_TEXT);
}

function drawScreen(pre, screen) {
  const frag = document.createDocumentFragment();
  screen.lines.forEach((runs, row) => {
    let col = 0;
    for (const [text, fg, bg, flags] of runs) {
      const span = el("span", flags.split("").join(" "), text);
      let [f, b] = [fg, bg];
      if (flags.includes("r")) [f, b] = [bg || "#0d0f12", fg || "#d8dee9"];
      if (f) span.style.color = f;
      if (b) span.style.backgroundColor = b;
      if (row === screen.cursor[0] && col <= screen.cursor[1] && screen.cursor[1] < col + text.length) {
        span.classList.add("cursor");
      }
      col += text.length;
      frag.append(span);
    }
    frag.append("\n");
  });
  pre.replaceChildren(frag);
}

/** The form for a secret request, in the detail pane: typed once, sent once, kept nowhere. */
function openSecret(secret) {
  selected = null;
  if (stream) stream.abort();
  $("title").textContent = "A secret for " + secret.shell;
  $("facts").textContent = "";
  $("actions").replaceChildren();
  const pre = $("output");
  pre.className = "";
  const asked = el("p", "", "Shell " + secret.shell + " asks for: " + secret.what);
  asked.id = "asked";
  const asker = el("p", "hint", "The program that reads it: " + secret.asker);
  asker.id = "asker";
  const form = el("form");
  const field = el("input");
  field.id = "secret";
  field.type = "password";
  field.autocomplete = "off";
  field.setAttribute("aria-label", "secret");
  const enter = el("button", "", "Enter");
  enter.id = "enter";
  enter.type = "submit";
  form.append(field, enter);
  const hint = el("p", "hint", "agentty types it into the agent's terminal with echo off, shows it to "
    + "the agent nowhere and keeps it nowhere. Enter it only if the program named above is the one "
    + "you expect (sudo, ssh, git…), not a shell of the agent's.");
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const value = field.value;
    field.value = "";
    enter.disabled = true;
    const answer = await call("/view/secret", {
      method: "POST",
      headers: {"Content-Type": "application/json"},
      body: JSON.stringify({id: secret.id, secret: value}),
    });
    form.hidden = true;
    asked.textContent = answer.ok ? "Entered." : "Not entered: " + (await answer.text());
  });
  pre.replaceChildren(asked, form, asker, hint);
  field.focus();
}

function select(session, id, kind) {
  selected = {session, id, kind};
  if (stream) stream.abort();
  const pre = $("output");
  pre.replaceChildren();
  delete pre.dataset.snapshots;
  pre.className = kind === "shell" ? "screen" : "";
  if (lastState) { renderWarnings(lastState); renderList(lastState); renderFacts(lastState); }
  const query = "?session=" + encodeURIComponent(session) + "&id=" + encodeURIComponent(id);
  const controller = new AbortController();
  stream = controller;
  readEvents("/view/stream" + query, {
    snapshot: (data) => {
      // Counted, so a test can tell output streamed live from output fetched again.
      pre.dataset.snapshots = String(Number(pre.dataset.snapshots || 0) + 1);
      pre.textContent = JSON.parse(data).text;
      pre.scrollTop = pre.scrollHeight;
    },
    append: (data) => {
      const atBottom = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
      pre.append(JSON.parse(data).text);
      trimOutput(pre);
      if (atBottom) pre.scrollTop = pre.scrollHeight;
    },
    screen: (data) => drawScreen(pre, JSON.parse(data)),
    end: () => controller.abort(),
  }, controller.signal).catch(() => {});
}

/** The state stream, read again after a pause whenever it breaks, while logged in. */
async function connect() {
  while (key) {
    try {
      await readEvents("/view/events", {
        open: () => { $("status").textContent = "live"; },
        state: (data) => {
          const state = JSON.parse(data);
          lastState = state;
          control = state.control;
          renderWarnings(state);
          renderList(state);
          renderFacts(state);
        },
      });
    } catch {
      // broken, or refused: the loop's condition says which
    }
    if (!key) return;
    $("status").textContent = "reconnecting…";
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

function logIn(said) {
  key = null;
  if (stream) stream.abort();
  $("view").hidden = true;
  $("login").hidden = false;
  $("status").textContent = "not logged in";
  $("login-said").textContent = said || "";
  $("token").focus();
}

/** Logs in with `what` ({token} or {code}); true when the view opened. */
async function logInWith(what) {
  const answer = await fetch("/view/login", {
    method: "POST",
    headers: {"Content-Type": "application/json"},
    body: JSON.stringify(what),
    cache: "no-store",
  });
  if (!answer.ok) {
    $("login-said").textContent = answer.status === 401
      ? (what.code ? "This login code was used or expired: run agentty view again, or enter a token." : "Not a token of this server.")
      : await answer.text();
    return false;
  }
  key = (await answer.json()).key;
  $("login").hidden = true;
  $("view").hidden = false;
  connect();
  return true;
}

$("login").addEventListener("submit", async (event) => {
  event.preventDefault();
  const field = $("token");
  const token = field.value.trim();
  field.value = "";
  await logInWith({token});
});

// `agentty view` opens the page at /#code=…: a one-time code, taken out of the address at once.
const code = new URLSearchParams(location.hash.slice(1)).get("code");
if (code) history.replaceState(null, "", location.pathname);
logIn();
if (code) logInWith({code});
