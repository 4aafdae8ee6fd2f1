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
  if (job.state === "refused by the sandbox" && job.exit_code !== null && job.exit_code !== undefined) {
    return "refused by the sandbox, exited " + job.exit_code;
  }
  if (job.state === "signalled") return "killed by " + job.signal;
  if (job.kind === "shell" && job.state === "running") return "open";
  return job.state;
}

function findJob(state, session, id) {
  for (const s of state.sessions) {
    if (s.key !== session) continue;
    for (const j of s.jobs) if (j.id === id) return [s, j];
    for (const c of callsOf(s)) if (c.id === id) return [s, c];
  }
  return [null, null];
}

// ---- Foreground calls: running now, then the session's history (newest first). ----

/** A session's calls as items of the list: running ones first, then those that ended. */
function callsOf(s) {
  const calls = s.calls || {running: [], done: []};
  const running = calls.running.map((c) => ({...c, kind: "call", state: "running"}));
  const done = calls.done.map((c) => ({...c, kind: "call"})).reverse();
  return running.concat(done);
}

/** How long: "850 ms", "12 s", "3 min"… */
function took(ms) {
  return ms < 1000 ? ms + " ms" : age(ms);
}

/** A call's button in the list. */
function callButton(s, c) {
  const button = el("button", "job call " + statusClass(c));
  button.dataset.session = s.key;
  button.dataset.id = c.id;
  button.title = "started " + new Date(c.started * 1000).toLocaleTimeString();
  if (selected && selected.session === s.key && selected.id === c.id) button.classList.add("selected");
  button.append(el("span", "id", c.id + " "));
  const when = c.state === "running" ? ageSpan(c.age_ms) : el("span", "", took(c.took_ms));
  const st = el("span", "state", "call, " + stateText(c) + ", ");
  st.append(when);
  button.append(st);
  button.append(textSpan("label", c.label));
  button.addEventListener("click", (event) => openItem(s.key, c.id, "call", event));
  return button;
}

/** An age that keeps counting between two states (a running call's elapsed time). */
function ageSpan(ms) {
  const span = el("span", "age", age(ms));
  span.dataset.ms = String(ms);
  span.dataset.at = String(Date.now());
  return span;
}

setInterval(() => {
  for (const span of document.querySelectorAll(".age[data-ms]")) {
    span.textContent = age(Number(span.dataset.ms) + Date.now() - Number(span.dataset.at));
  }
}, 1000);

/** The full output of a call that ended, while its file exists: fetched with the key, offered
 * as a download (a plain link could not send the key). */
async function downloadSpill(session, id) {
  const query = "?session=" + encodeURIComponent(session) + "&id=" + encodeURIComponent(id);
  const answer = await call("/view/spill" + query);
  if (!answer.ok) { $("actions-said").textContent = await answer.text(); return; }
  const url = URL.createObjectURL(await answer.blob());
  const link = el("a");
  link.href = url;
  link.download = id + "-output.txt";
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60000);
}

function renderList(state) {
  const nav = $("sessions");
  // Keyboard focus survives the redraw: the same item is focused again.
  const focused = document.activeElement && nav.contains(document.activeElement) ? document.activeElement.dataset : null;
  const focus = focused && focused.id ? {session: focused.session, id: focused.id} : null;
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
  const busy = state.sessions.filter((s) => !isEmptySession(s));
  const idle = state.sessions.filter(isEmptySession);
  if (busy.length === 0) nav.append(el("div", "empty", "No session has run a command yet."));
  for (const s of busy) nav.append(sessionBox(s));
  if (idle.length > 0) nav.append(idleSessions(idle));
  if (focus) {
    const again = nav.querySelector(`button.job[data-session="${CSS.escape(focus.session)}"][data-id="${CSS.escape(focus.id)}"]`);
    if (again) again.focus();
  }
}

// ---- At a glance: sessions named by caller and client, what each agent does, statuses. ----

/** A session with no call, job or shell (an initialize and nothing else). */
function isEmptySession(s) {
  const calls = s.calls || {ran: 0};
  return s.jobs.length === 0 && calls.ran === 0;
}

/** The sessions without work, folded into one line. */
function idleSessions(idle) {
  const fold = el("details", "idle-sessions");
  fold.append(el("summary", "", idle.length + (idle.length === 1 ? " session" : " sessions") + " without work"));
  for (const s of idle) fold.append(el("div", "session-agent", sessionName(s) + " · " + sessionWhen(s)));
  return fold;
}

function sessionName(s) {
  return (s.caller || "local") + " · " + (s.client || "unknown client");
}

function sessionWhen(s) {
  return [s.transport, "since " + new Date(s.started * 1000).toLocaleTimeString()].filter(Boolean).join(" · ");
}

/** One session: its name, what it did and does, then its calls, jobs and shells. */
function sessionBox(s) {
  const box = el("section", "session");
  box.setAttribute("aria-label", sessionName(s));
  box.append(el("div", "session-name", sessionName(s)));
  box.append(el("div", "session-head", sessionWhen(s)));
  if (s.agent) box.append(el("div", "session-agent", s.agent));
  box.append(agentRow(s));
  const calls = callsOf(s);
  for (const c of calls.filter((c) => c.state === "running")) box.append(callButton(s, c));
  for (const j of s.jobs) box.append(jobButton(s, j));
  for (const c of calls.filter((c) => c.state !== "running")) box.append(callButton(s, c));
  const refused = networkRefused(s);
  if (refused) box.append(refused);
  return box;
}

/** The connections a session's commands were refused, newest first (the server's log has them
 * all); null when none. */
function networkRefused(s) {
  const refused = (s.network || []).filter((n) => n.decision === "refused").reverse();
  if (refused.length === 0) return null;
  const list = el("ul", "network-refused");
  list.append(el("li", "network-head", "network refused:"));
  for (const n of refused.slice(0, REFUSALS_SHOWN)) {
    const what = n.port ? n.host + ":" + n.port : n.host.startsWith("unix:") ? n.host : "a socket";
    list.append(el("li", "", what + " (" + n.rule + ", " + new Date(n.time * 1000).toLocaleTimeString() + ")"));
  }
  return list;
}

/** "12 calls · 2 failed · now: cargo build": how busy an agent is and how it fares. */
function agentRow(s) {
  const calls = s.calls || {ran: 0, failed: 0, running: []};
  // Background commands count as calls too (those still in the job table).
  const commands = s.jobs.filter((j) => j.kind === "command");
  const ran = calls.ran + commands.length;
  const failed = calls.failed + commands.filter((j) => statusClass(j) === "st-failed").length;
  const row = el("div", "agent-row");
  row.append(el("span", "", ran + (ran === 1 ? " call" : " calls")));
  row.append(" · ");
  row.append(el("span", failed > 0 ? "st-failed" : "", failed + " failed"));
  const now = calls.running.map((c) => c.label)
    .concat(s.jobs.filter((j) => j.state === "running" && j.kind === "command").map((j) => j.label));
  row.append(" · ");
  row.append(el("span", now.length > 0 ? "st-running now" : "now", now.length > 0 ? "now: " + now.join(", ") : "idle"));
  return row;
}

/** The colour class of a status. */
function statusClass(item) {
  switch (item.state) {
    case "running": return "st-running";
    case "exited": return item.exit_code === 0 ? "st-ok" : "st-failed";
    case "moved to the background": return "st-ok";
    case "stopped by the user": return "st-user";
    case "awaiting input": return "st-input";
    case "blocked by the guard": return "st-blocked";
    case "refused by the sandbox": return "st-refused";
    case "stopped": case "cancelled": case "closed (idle)": return "st-neutral";
    default: return "st-failed";
  }
}

/** A shell is named by what runs in it and where. */
function shellLabel(j) {
  if (!j.runs || !j.runs.program) return j.label;
  const where = j.runs.cwd ? " in " + j.runs.cwd : "";
  return (j.runs.at_prompt ? "at its prompt (" + j.runs.program + ")" : j.runs.program) + where;
}

/** A job's or shell's button in the list. */
function jobButton(s, j) {
  const button = el("button", "job " + statusClass(j));
  button.dataset.session = s.key;
  button.dataset.id = j.id;
  if (selected && selected.session === s.key && selected.id === j.id) button.classList.add("selected");
  button.title = "started " + new Date(Date.now() - j.age_ms).toLocaleTimeString();
  button.append(el("span", "id", j.id + " "));
  button.append(el("span", "state", j.kind + ", " + stateText(j) + ", " + age(j.age_ms)));
  button.append(textSpan("label", j.kind === "shell" ? shellLabel(j) : j.label));
  button.addEventListener("click", (event) => openItem(s.key, j.id, j.kind, event));
  return button;
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
  $("keys-form").hidden = true;
  if (!j) { facts.textContent = "ended with its session"; return; }
  $("title").replaceChildren(...shownText(j.id + "  " + j.label));
  if (j.kind === "call") { renderCallFacts(s, j); return; }
  facts.replaceChildren(el("span", statusClass(j), stateText(j)), " · " + [j.kind, "pid " + j.pid, "age " + age(j.age_ms),
    size(j.bytes) + " of output", sessionName(s), j.sandbox].join(" · "));
  if (j.kind === "shell") $("title").replaceChildren(...shownText(j.id + "  " + shellLabel(j)));
  if (control && j.state === "running") {
    const button = el("button", "", j.kind === "shell" ? "Close this shell" : "Stop this job");
    button.addEventListener("click", () => stop(s.key, j.id));
    actions.append(button);
  }
  if (control && j.kind === "shell" && j.state === "running") renderKeyboard(s, j);
}

// ---- The user's hand on a shell's keyboard (--view-control): take, type, Ctrl+C, give back. ----

async function keyboard(session, id, action, keys) {
  const answer = await call("/view/keyboard", {
    method: "POST",
    headers: {"Content-Type": "application/json"},
    body: JSON.stringify({session, id, action, keys}),
  });
  $("actions-said").textContent = answer.ok ? "" : "Not done: " + (await answer.text());
}

/** The keyboard's controls under a shell's facts; the line field keeps what is being typed
 * across the state's redraws. */
function renderKeyboard(s, j) {
  const actions = $("actions");
  if (!j.user_has_keyboard) {
    const take = el("button", "take", "Take the keyboard");
    take.addEventListener("click", () => keyboard(s.key, j.id, "take"));
    actions.append(take);
    $("keys-form").hidden = true;
    return;
  }
  const form = $("keys-form");
  form.hidden = false;
  form.dataset.session = s.key;
  form.dataset.id = j.id;
  const give = el("button", "take", "Give it back");
  give.addEventListener("click", () => keyboard(s.key, j.id, "give"));
  actions.append(give);
}

// The keys a shell needs besides lines, as a terminal sends them.
const KEYS = {
  Tab: "\t", Up: "\u001b[A", Down: "\u001b[B", Right: "\u001b[C", Left: "\u001b[D", Esc: "\u001b",
  "Ctrl+C": "\u0003", "Ctrl+D": "\u0004", "Ctrl+Z": "\u001a", Enter: "\n",
};

/** Types what is in the line field, then `key` (Enter alone with an empty field). */
function typeKey(key) {
  const form = $("keys-form");
  const field = $("keys");
  keyboard(form.dataset.session, form.dataset.id, "type", field.value + key);
  field.value = "";
}

$("keys-form").addEventListener("submit", (event) => {
  event.preventDefault();
  typeKey(KEYS.Enter);
});
for (const button of document.querySelectorAll("#key-row [data-key]")) {
  button.addEventListener("click", () => typeKey(KEYS[button.dataset.key]));
}
// In the line field the up and down arrows go to the shell (its history); Tab still moves on.
$("keys").addEventListener("keydown", (event) => {
  const key = {ArrowUp: "Up", ArrowDown: "Down"}[event.key];
  if (!key || event.altKey || event.ctrlKey || event.metaKey || event.shiftKey) return;
  event.preventDefault();
  typeKey(KEYS[key]);
});

/** A call's facts: how it ended (or how long it runs), and its full output while kept. */
function renderCallFacts(s, c) {
  const facts = $("facts");
  facts.replaceChildren();
  const when = new Date(c.started * 1000).toLocaleTimeString();
  if (c.state === "running") {
    facts.append(el("span", "st-running", "running"), " for ", ageSpan(c.age_ms), " · call since " + when + " · " + sessionName(s));
  } else {
    facts.append(el("span", statusClass(c), stateText(c)), " · " + ["took " + took(c.took_ms), "call at " + when, sessionName(s)].join(" · ")
      + " · below: the text the model got");
  }
  if (c.spill) {
    const button = el("button", "spill", "Full output");
    button.addEventListener("click", () => downloadSpill(s.key, c.id));
    $("actions").append(button);
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
  // Said beside the button: the header says only whether the page is live.
  $("actions-said").textContent = answer.ok ? "Stopped " + id + "." : "Not stopped: " + (await answer.text());
}

// ---- Colours: SGR sequences in a command's output become styled spans. ----
// The server keeps only SGR (`ESC [ digits ; : m`) in the view's copy of an output and drops
// every other escape; here each sequence only sets classes or a colour computed from its
// numbers, and all text goes in with textContent. Anything else is shown as text.

const ANSI_16 = ["#8b949e", "#ff7b72", "#7ee787", "#e3b341", "#79c0ff", "#d2a8ff", "#56d4dd", "#c9d1d9",
  "#a0a8b4", "#ffa198", "#aff5b4", "#f8e3a1", "#a5d6ff", "#e2c5ff", "#b3f0ff", "#ffffff"];

/** An xterm 256-colour index as #rrggbb. */
function colour256(n) {
  if (n < 16) return ANSI_16[n];
  if (n >= 232) { const v = 8 + (n - 232) * 10; return rgb(v, v, v); }
  const k = n - 16;
  const step = (x) => (x === 0 ? 0 : 55 + x * 40);
  return rgb(step(Math.floor(k / 36)), step(Math.floor(k / 6) % 6), step(k % 6));
}

function rgb(r, g, b) {
  const hex = (v) => Math.max(0, Math.min(255, v | 0)).toString(16).padStart(2, "0");
  return "#" + hex(r) + hex(g) + hex(b);
}

// What a program prints must not be hidden from the person watching while the model reads it
// (review 35 F10): text coloured (nearly) as its background is drawn in a colour that can be
// seen there, and characters that reorder or hide text (bidi controls, zero-width and tag
// characters) are shown as their code points.

const PAGE_FG = "#d8dee9";
const PAGE_BG = "#0d0f12";
/** Below this contrast ratio (WCAG's, 1 to 21) text counts as hidden on its background. */
const MIN_CONTRAST = 2;

/** The relative luminance of "#rrggbb", or null for anything else. */
function luminance(colour) {
  const m = /^#([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/i.exec(colour);
  if (!m) return null;
  const lin = (h) => { const c = parseInt(h, 16) / 255; return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; };
  return 0.2126 * lin(m[1]) + 0.7152 * lin(m[2]) + 0.0722 * lin(m[3]);
}

/** The colour to draw text in, given its own `fg` and `bg` (null: the page's) and whether it is
 * `dim` (drawn at 60% opacity, so nearer its background): `fg`, unless it would be hard to see
 * on that background; then the page's text colour or its background's, whichever stands out
 * there. */
function legible(fg, bg, dim) {
  let f = luminance(fg || PAGE_FG);
  const b = luminance(bg || PAGE_BG);
  if (f === null || b === null) return fg;
  if (dim) f = 0.6 * f + 0.4 * b;
  const ratio = (x, y) => (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05);
  if (ratio(f, b) >= MIN_CONTRAST) return fg;
  return ratio(luminance(PAGE_FG), b) >= ratio(luminance(PAGE_BG), b) ? PAGE_FG : PAGE_BG;
}

// As the server's `looks_blank` (pty/shell/reader.rs): soft hyphen, grapheme joiner, Arabic letter
// mark, Hangul fillers, Khmer vowels, Mongolian selectors, zero-widths and bidi controls, word
// joiners and invisible operators, braille blank, variation selectors, BOM, interlinear and
// shorthand format controls, musical symbol formats, tags and their selectors.
const HIDING = /[\u00AD\u034F\u061C\u115F\u1160\u17B4\u17B5\u180B-\u180F\u200B-\u200F\u202A-\u202E\u2060-\u206F\u2800\u3164\uFE00-\uFE0F\uFEFF\uFFA0\uFFF0-\uFFF8\u{1BCA0}-\u{1BCA3}\u{1D173}-\u{1D17A}\u{E0000}-\u{E0FFF}]/u;

/** Whether `c` is drawn as itself and is not plain ASCII: what an emoji's selector or joiner
 * follows. */
function drawnNonAscii(c) {
  return c !== undefined && c.codePointAt(0) > 0x7f && !HIDING.test(c) && !/\s/u.test(c);
}

/** `text` as nodes, each character of HIDING shown as <U+XXXX> in a span of its own, but for
 * what emoji are made of: one text or emoji selector (U+FE0E, U+FE0F) after a drawn character,
 * and one zero-width joiner between two. A run of them, or one anywhere else, is shown. */
function shownText(text) {
  if (!HIDING.test(text)) return [text];
  const chars = Array.from(text);
  const nodes = [];
  let plain = "";
  chars.forEach((c, i) => {
    const [before, after] = [chars[i - 1], chars[i + 1]];
    const emoji = ((c === "\uFE0E" || c === "\uFE0F") && drawnNonAscii(before) && !HIDING.test(after ?? ""))
      || (c === "\u200D" && drawnNonAscii(before) && drawnNonAscii(after));
    if (!HIDING.test(c) || emoji) { plain += c; return; }
    if (plain) { nodes.push(plain); plain = ""; }
    const code = c.codePointAt(0).toString(16).toUpperCase().padStart(4, "0");
    nodes.push(el("span", "hidden-char", `<U+${code}>`));
  });
  if (plain) nodes.push(plain);
  return nodes;
}

/** A span of `text` (its hiding characters shown) with classes `cls`. */
function textSpan(cls, text) {
  const span = el("span", cls);
  span.append(...shownText(text));
  return span;
}

/** Applies one SGR parameter list ("1;31", "38;5;208", "38:2::1:2:3") to `style`. */
function applySgr(style, params) {
  const list = params === "" ? [[0]] : params.split(";").map((p) => p.split(":").map((x) => Number(x) || 0));
  for (let i = 0; i < list.length; i++) {
    const [code, ...sub] = list[i];
    if (code === 0) { style.fg = null; style.bg = null; style.bold = false; style.dim = false; style.italic = false; style.underline = false; }
    else if (code === 1) style.bold = true;
    else if (code === 2) style.dim = true;
    else if (code === 3) style.italic = true;
    else if (code === 4) style.underline = true;
    else if (code === 22) { style.bold = false; style.dim = false; }
    else if (code === 23) style.italic = false;
    else if (code === 24) style.underline = false;
    else if (code >= 30 && code <= 37) style.fg = ANSI_16[code - 30];
    else if (code >= 90 && code <= 97) style.fg = ANSI_16[code - 90 + 8];
    else if (code === 39) style.fg = null;
    else if (code >= 40 && code <= 47) style.bg = ANSI_16[code - 40];
    else if (code >= 100 && code <= 107) style.bg = ANSI_16[code - 100 + 8];
    else if (code === 49) style.bg = null;
    else if (code === 38 || code === 48) {
      let colour = null;
      if (sub.length > 0) {
        // 38:5:n, 38:2:r:g:b or 38:2:space:r:g:b
        if (sub[0] === 5) colour = colour256(sub[1] || 0);
        else if (sub[0] === 2) { const c = sub.slice(-3); colour = rgb(c[0], c[1], c[2]); }
      } else {
        // 38;5;n or 38;2;r;g;b
        const next = list.slice(i + 1).map((p) => p[0]);
        if (next[0] === 5) { colour = colour256(next[1] || 0); i += 2; }
        else if (next[0] === 2) { colour = rgb(next[1], next[2], next[3]); i += 4; }
      }
      if (code === 38) style.fg = colour; else style.bg = colour;
    }
  }
}

/** Appends `text` (with SGR sequences) to `pre` as styled spans; the style carries over. */
function appendAnsi(pre, text) {
  const style = pre.sgr || (pre.sgr = {fg: null, bg: null, bold: false, dim: false, italic: false, underline: false});
  const frag = document.createDocumentFragment();
  const sgr = /\x1b\[([0-9;:]*)m/g;
  let at = 0;
  // What the page shows of it (its hiding characters as code points), as trimOutput counts.
  let added = 0;
  const put = (piece) => {
    if (piece === "") return;
    const plain = !style.fg && !style.bg && !style.bold && !style.dim && !style.italic && !style.underline;
    if (plain) {
      for (const node of shownText(piece)) { frag.append(node); added += node.length ?? node.textContent.length; }
      return;
    }
    const cls = [style.bold && "b", style.dim && "d", style.italic && "i", style.underline && "u"].filter(Boolean).join(" ");
    const span = textSpan(cls, piece);
    added += span.textContent.length;
    const fg = legible(style.fg, style.bg, style.dim);
    if (fg) span.style.color = fg;
    if (style.bg) span.style.backgroundColor = style.bg;
    frag.append(span);
  };
  for (let m; (m = sgr.exec(text)) !== null;) {
    put(text.slice(at, m.index));
    applySgr(style, m[1]);
    at = m.index + m[0].length;
  }
  put(text.slice(at));
  pre.append(frag);
  pre.shown = (pre.shown || 0) + added;
  outputChanged();
}

/** Clears `pre` for a new output. */
function resetOutput(pre) {
  endsPassed = [];
  pre.replaceChildren();
  pre.sgr = null;
  pre.shown = 0;
}

function trimOutput(pre) {
  // Whole pieces from the top, so no span is cut and the colours stay right.
  while (pre.shown > MAX_TEXT && pre.firstChild && pre.childNodes.length > 1) {
    pre.shown -= pre.firstChild.textContent.length;
    pre.firstChild.remove();
  }
}

/** A screen row with nothing on it: only spaces, on the default background, not reversed. */
function blankRow(runs) {
  return runs.every(([text, , bg, flags]) => !bg && !flags.includes("r") && text.trim() === "");
}

function drawScreen(pre, screen) {
  const frag = document.createDocumentFragment();
  // The rows below the last written one (and the cursor's) are left out: a shell's few lines
  // sit at the top of its screen, and the pane follows its end.
  let last = screen.lines.length - 1;
  while (last > screen.cursor[0] && blankRow(screen.lines[last])) last--;
  screen.lines.slice(0, last + 1).forEach((runs, row) => {
    let col = 0;
    for (const [text, fg, bg, flags] of runs) {
      const span = textSpan(flags.split("").join(" "), text);
      let [f, b] = [fg, bg];
      if (flags.includes("r")) [f, b] = [bg || PAGE_BG, fg || PAGE_FG];
      f = legible(f, b, flags.includes("d"));
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
  outputChanged();
}

// ---- Follow or stay: the output follows its end until the reader scrolls up. ----

let follow = true;

function atEnd(pre) {
  return pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
}

/** Follows the end (true) or stays where the reader is (false), and says which. */
function setFollow(on) {
  follow = on;
  const button = $("follow");
  button.setAttribute("aria-pressed", String(on));
  button.textContent = on ? "Following new output" : "Paused: scrolled up. Follow new output";
  button.classList.toggle("paused", !on);
}

/** After new text: at the end when following; else the text read stays in place, even when
 * the oldest text is dropped above it. */
function keepPlace(pre, heightBefore) {
  if (follow) pre.scrollTop = pre.scrollHeight;
  else if (heightBefore !== undefined && pre.scrollHeight < heightBefore) pre.scrollTop -= heightBefore - pre.scrollHeight;
}

// Where the end was each time text arrived while paused, for a second: a smooth scroll down
// (the wheel, End) aims at the end as it was when it began, and its last step lands there
// after new lines have moved the end further down. Reaching an end so passed is reaching the
// end.
const PASSED_END_MS = 1000;
let endsPassed = [];
let lastTop = 0;

/** Text is about to arrive while paused: the end it moves. */
function noteEnd(pre) {
  const now = performance.now();
  endsPassed = endsPassed.filter(([at]) => now - at < PASSED_END_MS);
  endsPassed.push([now, pre.scrollHeight - pre.clientHeight]);
}

/** Whether a scroll down reached the end, or an end text passed a moment ago. */
function reachedEnd(pre, down) {
  if (atEnd(pre)) return true;
  const now = performance.now();
  return down && endsPassed.some(([at, top]) => now - at < PASSED_END_MS && pre.scrollTop >= top - 4);
}

// Scrolling up pauses; scrolling down to the end follows again (as does End in the output).
$("output").addEventListener("scroll", () => {
  const pre = $("output");
  const down = pre.scrollTop > lastTop;
  lastTop = pre.scrollTop;
  const end = reachedEnd(pre, down);
  if (end === follow) return;
  setFollow(end);
  if (end) {
    endsPassed = [];
    keepPlace(pre);
  }
});
$("follow").addEventListener("click", () => {
  setFollow(!follow);
  if (follow) keepPlace($("output"));
});

// ---- Find in the output: ranges over its text, highlighted, never markup. ----
// The matches are Range objects shown with the CSS Custom Highlight API: the output's nodes
// stay as they are (text only), and new output is searched again as it arrives.

const found = {query: "", ranges: [], at: -1, pending: false};
const MAX_FOUND = 10000; // matches counted; past that the count says "10000+"

/** The output's text nodes and where each starts in their joined text. */
function textNodes(pre) {
  const nodes = [];
  let text = "";
  const walker = document.createTreeWalker(pre, NodeFilter.SHOW_TEXT);
  for (let node; (node = walker.nextNode());) {
    nodes.push([node, text.length]);
    text += node.data;
  }
  return [nodes, text];
}

/** The Range of text[start, end) over `nodes` (a match may cross a colour's span). */
function rangeOf(nodes, start, end) {
  const range = document.createRange();
  const place = (offset, setter) => {
    let lo = 0;
    let hi = nodes.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (nodes[mid][1] <= offset) lo = mid; else hi = mid - 1;
    }
    const [node, from] = nodes[lo];
    setter(node, Math.min(offset - from, node.data.length));
  };
  place(start, (n, o) => range.setStart(n, o));
  place(end, (n, o) => range.setEnd(n, o));
  return range;
}

/** Searches the output again (case-insensitive), keeping the current match where it can. */
function findAgain(move) {
  const pre = $("output");
  const query = $("find").value;
  const before = found.ranges[found.at];
  const beforeText = before ? [before.startContainer, before.startOffset] : null;
  found.query = query;
  found.ranges = [];
  if (query !== "" && pre.firstChild) {
    const [nodes, text] = textNodes(pre);
    const hay = text.toLowerCase();
    const needle = query.toLowerCase();
    for (let at = hay.indexOf(needle); at >= 0 && found.ranges.length < MAX_FOUND; at = hay.indexOf(needle, at + needle.length)) {
      found.ranges.push(rangeOf(nodes, at, at + needle.length));
    }
  }
  let at = -1;
  if (beforeText) {
    at = found.ranges.findIndex((r) => r.startContainer === beforeText[0] && r.startOffset === beforeText[1]);
  }
  if (at < 0 && found.ranges.length > 0) at = move ? 0 : Math.min(Math.max(found.at, 0), found.ranges.length - 1);
  found.at = at;
  showFound(move);
}

/** Paints the matches and the count; `move` brings the current match into view. */
function showFound(move) {
  if (typeof Highlight === "function" && CSS.highlights) {
    CSS.highlights.set("find", new Highlight(...found.ranges));
    CSS.highlights.set("find-current", new Highlight(...(found.at >= 0 ? [found.ranges[found.at]] : [])));
  }
  const count = $("find-count");
  if (found.query === "") count.textContent = "";
  else if (found.ranges.length === 0) count.textContent = "no match";
  else count.textContent = (found.at + 1) + " of " + found.ranges.length + (found.ranges.length >= MAX_FOUND ? "+" : "");
  if (move && found.at >= 0) {
    const pre = $("output");
    const box = found.ranges[found.at].getBoundingClientRect();
    const frame = pre.getBoundingClientRect();
    if (box.top < frame.top || box.bottom > frame.bottom) {
      pre.scrollTop += box.top - frame.top - pre.clientHeight / 2;
    }
    if (box.left < frame.left || box.right > frame.right) {
      pre.scrollLeft += box.left - frame.left - pre.clientWidth / 2;
    }
  }
}

/** Next (1) or previous (-1) match, round the end. */
function findStep(by) {
  if (found.query !== $("find").value) findAgain(false);
  if (found.ranges.length === 0) return;
  found.at = (found.at + by + found.ranges.length) % found.ranges.length;
  showFound(true);
}

/** After the output changed: searched again once per frame at most. */
function outputChanged() {
  if (found.query === "" || found.pending) return;
  found.pending = true;
  requestAnimationFrame(() => { found.pending = false; findAgain(false); });
}

$("find").addEventListener("input", () => { found.at = -1; findAgain(true); });
$("find-form").addEventListener("submit", (event) => { event.preventDefault(); findStep(1); });
$("find").addEventListener("keydown", (event) => {
  if (event.key === "Enter" && event.shiftKey) { event.preventDefault(); findStep(-1); }
  // Escape empties the box first; in an empty box it comes back to the list, as elsewhere.
  if (event.key === "Escape" && $("find").value !== "") {
    event.preventDefault();
    event.stopPropagation();
    $("find").value = "";
    findAgain(false);
  }
});
$("find-prev").addEventListener("click", () => findStep(-1));

/** The form for a secret request, in the detail pane: typed once, sent once, kept nowhere. */
function openSecret(secret) {
  selected = null;
  showPane("detail");
  if (stream) stream.abort();
  $("title").textContent = "A secret for " + secret.shell;
  $("facts").textContent = "";
  $("actions").replaceChildren();
  $("tools").hidden = true;
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

// ---- Addresses: every call, job and shell has its own (#s=SESSION&id=ID); a reload opens it. ----

/** What the address asks to open, until the state that holds it arrives. */
let wanted = (() => {
  const hash = new URLSearchParams(location.hash.slice(1));
  return hash.get("s") && hash.get("id") ? {session: hash.get("s"), id: hash.get("id")} : null;
})();

/** Opens what the address names once the state holds it. */
function openWanted(state) {
  if (!wanted) return;
  const [s, item] = findJob(state, wanted.session, wanted.id);
  if (!item) return;
  wanted = null;
  select(s.key, item.id, item.kind);
}

function setAddress(session, id) {
  const hash = "#s=" + encodeURIComponent(session) + "&id=" + encodeURIComponent(id);
  if (location.hash !== hash) history.replaceState(null, "", location.pathname + hash);
}

// ---- Any screen, by keyboard: list and output side by side, or one at a time when narrow. ----

/** Shows the list or the output (on a narrow screen only one shows at a time). */
function showPane(pane) {
  $("view").dataset.pane = pane;
}

/** Back to the list, focus on the item that was open. */
function back() {
  showPane("list");
  const open = selected && document.querySelector(
    `button.job[data-session="${CSS.escape(selected.session)}"][data-id="${CSS.escape(selected.id)}"]`);
  const first = document.querySelector("#sessions button.job");
  (open || first || $("sessions")).focus();
}

$("back").addEventListener("click", back);

// Up and down (and Home, End) move between the list's items; Enter or Space opens one (the
// output then has the focus); Escape comes back to the list.
$("sessions").addEventListener("keydown", (event) => {
  const items = [...document.querySelectorAll("#sessions button.job")];
  const at = items.indexOf(document.activeElement);
  const to = {ArrowDown: at + 1, ArrowUp: at - 1, Home: 0, End: items.length - 1}[event.key];
  if (to === undefined || items.length === 0) return;
  event.preventDefault();
  items[Math.max(0, Math.min(items.length - 1, to))].focus();
});
$("detail").addEventListener("keydown", (event) => {
  if (event.key === "Escape") { event.preventDefault(); back(); }
});

/** Opens an item from the list; from the keyboard, the output takes the focus. */
function openItem(session, id, kind, event) {
  select(session, id, kind);
  if (event && event.detail === 0) $("output").focus();
}

function select(session, id, kind) {
  selected = {session, id, kind};
  showPane("detail");
  setAddress(session, id);
  $("actions-said").textContent = "";
  if (stream) stream.abort();
  const pre = $("output");
  resetOutput(pre);
  delete pre.dataset.snapshots;
  $("tools").hidden = false;
  found.at = -1;
  setFollow(true);
  pre.className = kind === "shell" ? "screen" : "";
  if (lastState) { renderWarnings(lastState); renderList(lastState); renderFacts(lastState); }
  const query = "?session=" + encodeURIComponent(session) + "&id=" + encodeURIComponent(id);
  const [, item] = lastState ? findJob(lastState, session, id) : [null, null];
  let ended = !item || item.kind !== "call" || item.state !== "running";
  const controller = new AbortController();
  stream = controller;
  readEvents("/view/stream" + query, {
    snapshot: (data) => {
      // Counted, so a test can tell output streamed live from output fetched again.
      pre.dataset.snapshots = String(Number(pre.dataset.snapshots || 0) + 1);
      resetOutput(pre);
      appendAnsi(pre, JSON.parse(data).text);
      trimOutput(pre);
      keepPlace(pre);
    },
    append: (data) => {
      if (!follow) noteEnd(pre);
      appendAnsi(pre, JSON.parse(data).text);
      const height = pre.scrollHeight;
      trimOutput(pre);
      keepPlace(pre, height);
    },
    screen: (data) => { drawScreen(pre, JSON.parse(data)); keepPlace(pre); },
    end: () => {
      controller.abort();
      // A call that ended: what the model got replaces its live output.
      if (kind === "call" && selected && selected.id === id && !ended) {
        ended = true;
        setTimeout(() => { if (selected && selected.id === id) select(session, id, kind); }, 600);
      }
    },
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
          openWanted(state);
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
