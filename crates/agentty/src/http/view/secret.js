// agentty's secret page: the user types what a program in the agent's shell asks for. It is
// sent once to agentty, which types it with echo off; nothing here keeps it.
"use strict";

const id = location.pathname.split("/").pop();
const $ = (name) => document.getElementById(name);

async function look() {
  const answer = await fetch("/view/secret?id=" + encodeURIComponent(id));
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
    headers: {"Content-Type": "application/json"},
    body: JSON.stringify({id, secret}),
  });
  $("form").hidden = true;
  $("status").textContent = answer.ok ? "entered" : "not entered";
  $("asked").textContent = answer.ok
    ? "Entered. You can close this page."
    : "Not entered: " + (await answer.text());
});

look();
