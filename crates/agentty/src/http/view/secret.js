// agentty's secret page: the user types what a program in the agent's shell asks for. It is
// sent once to agentty, which types it with echo off; nothing here keeps it.
"use strict";

const id = location.pathname.split("/").pop();
const $ = (name) => document.getElementById(name);
// A request the model knows of needs a view key of its session's caller: the page logs in here,
// and keeps the key in its memory only.
const key = {"X-Agentty-View": ""};

$("login").addEventListener("submit", async (event) => {
  event.preventDefault();
  const field = $("token");
  const answer = await fetch("/view/login", {
    method: "POST",
    headers: {"Content-Type": "application/json"},
    body: JSON.stringify({token: field.value.trim()}),
    cache: "no-store",
  });
  field.value = "";
  if (!answer.ok) {
    $("asked").textContent = "Not a token of this server.";
    return;
  }
  key["X-Agentty-View"] = (await answer.json()).key;
  $("login").hidden = true;
  look();
});

async function look() {
  const answer = await fetch("/view/secret?id=" + encodeURIComponent(id), {headers: key, cache: "no-store"});
  if (answer.status === 401) {
    $("asked").textContent = "Enter a token of the agent's caller (from the token file) to answer this request.";
    $("login").hidden = false;
    $("token").focus();
    return;
  }
  if (!answer.ok) {
    $("asked").textContent = "This request was answered already, or it expired.";
    return;
  }
  const asked = await answer.json();
  $("asked").textContent = "Shell " + asked.shell + " asks for: " + asked.what;
  $("asker").textContent = "The program that reads it: " + asked.asker;
  $("form").hidden = false;
  $("secret").focus();
}

$("form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const field = $("secret");
  const secret = field.value;
  field.value = "";
  $("enter").disabled = true;
  const answer = await fetch("/view/secret", {
    method: "POST",
    headers: {...key, "Content-Type": "application/json"},
    body: JSON.stringify({id, secret}),
    cache: "no-store",
  });
  $("form").hidden = true;
  $("status").textContent = answer.ok ? "entered" : "not entered";
  $("asked").textContent = answer.ok
    ? "Entered. You can close this page."
    : "Not entered: " + (await answer.text());
});

look();
