// agentty's secret page: the user types what a program in the agent's shell asks for. It is
// sent once to agentty, which types it with echo off; nothing here keeps it.
"use strict";

const id = location.pathname.split("/").pop();
const $ = (name) => document.getElementById(name);
// The view's key, where this browser logged in to the view: a request the model knows of needs it.
const key = {"X-Agentty-View": localStorage.getItem("agentty-view-key") || ""};

async function look() {
  const answer = await fetch("/view/secret?id=" + encodeURIComponent(id), {headers: key, cache: "no-store"});
  if (answer.status === 401) {
    $("asked").textContent = "Open the view in this browser and enter the token first, then this page again.";
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
