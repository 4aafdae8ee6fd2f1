// agentty's web view. Everything a job prints is put on the page as text (textContent), never
// as HTML. Read-only unless the server runs with --view-control.
"use strict";

const MAX_TEXT = 256 * 1024;
let selected = null; // {session, id, kind}
let stream = null;
let control = false;
let lastState = null;

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
    box.append(link);
    nav.append(box);
  }
  if (state.sessions.length === 0) nav.append(el("div", "empty", "No session has started a job yet."));
  for (const s of state.sessions) {
    const box = el("div", "session");
    const started = new Date(s.started * 1000).toLocaleTimeString();
    box.append(el("div", "session-head", s.client + " · " + s.transport + " · since " + started));
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
    nav.append(box);
  }
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

async function stop(session, id) {
  const answer = await fetch("/view/stop", {
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

function select(session, id, kind) {
  selected = {session, id, kind};
  if (stream) stream.close();
  const pre = $("output");
  pre.replaceChildren();
  delete pre.dataset.snapshots;
  pre.className = kind === "shell" ? "screen" : "";
  if (lastState) { renderList(lastState); renderFacts(lastState); }
  const query = "?session=" + encodeURIComponent(session) + "&id=" + encodeURIComponent(id);
  stream = new EventSource("/view/stream" + query);
  stream.addEventListener("snapshot", (e) => {
    // Counted, so a test can tell output streamed live from output fetched again.
    pre.dataset.snapshots = String(Number(pre.dataset.snapshots || 0) + 1);
    pre.textContent = JSON.parse(e.data).text;
    pre.scrollTop = pre.scrollHeight;
  });
  stream.addEventListener("append", (e) => {
    const atBottom = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
    pre.append(JSON.parse(e.data).text);
    trimOutput(pre);
    if (atBottom) pre.scrollTop = pre.scrollHeight;
  });
  stream.addEventListener("screen", (e) => drawScreen(pre, JSON.parse(e.data)));
  stream.addEventListener("end", () => { stream.close(); });
}

function connect() {
  const events = new EventSource("/view/events");
  events.addEventListener("open", () => { $("status").textContent = "live"; });
  events.addEventListener("error", () => { $("status").textContent = "reconnecting…"; });
  events.addEventListener("state", (e) => {
    const state = JSON.parse(e.data);
    lastState = state;
    control = state.control;
    renderList(state);
    renderFacts(state);
  });
}

connect();
