//! Network egress of a persistent shell's commands through the real binary (docs/BEHAVIOUR.md
//! §13, §4): a shell gets the proxy and credentials of its own, each `shell_send` reports the
//! connections refused during it (error 2010), and a closed shell's credentials are refused.
//!
//! Packets go only to this machine: a listener of the test on loopback, one on this machine's
//! own address on a test pair (which the refused attempt must leave untouched), and the proxy.

use std::time::Duration;

use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};

use super::client::*;
use super::network::{
    Listener, NetnsHost, assert_refused, line_of, serve, serve_answering, url_host,
};

/// In a shell, as `who`, in the default mode (`ask`, nobody to ask: the list alone).
async fn a_shell_gets_the_network_policy(who: Who) {
    let service = Listener::on("127.0.0.1".parse().unwrap());
    let outside = Listener::on("0.0.0.0".parse().unwrap());
    let pair = NetnsHost::new();
    let setup = serve(who, &[], &[]).await;
    let id = setup.server.open_shell().await;

    // The shell's commands are pointed at the proxy with credentials of the shell's, and a
    // `curl` through it reaches a server on loopback by name.
    let (text, s) = setup
        .server
        .shell_send(
            &id,
            &format!(
                "echo \"$HTTPS_PROXY\" > cred; case $HTTPS_PROXY in http://agentty:*) echo \
                 proxied;; esac; curl -sS --noproxy '' --max-time 5 http://localhost:{}/\n",
                service.at.port()
            ),
        )
        .await;
    assert_eq!(s["exit_code"], 0, "{text}");
    assert!(text.contains("proxied\n"), "no proxy in the shell: {text}");
    assert!(text.contains("host-service"), "{text}");
    assert!(s["error_code"].is_null(), "{text}");
    let through_proxy = format!(
        "network: allowed localhost:{} (loopback)",
        service.at.port()
    );
    let allowed = logged(&setup.log, &[&through_proxy], Duration::from_secs(5)).await;
    assert!(
        allowed.is_some(),
        "the proxy did not carry it: {}",
        setup.log.lock().unwrap()
    );

    // A direct connection to this machine's own (not loopback) address is refused, and this
    // send's result says so whatever `| tail` made of the exit code.
    let (v4, _) = pair.near;
    let port = outside.at.port();
    let (text, s) = setup
        .server
        .shell_send(
            &id,
            &format!(
                "curl -sS --noproxy '*' --max-time 5 http://{}:{port}/ 2>&1 | tail -n 2\n",
                url_host(v4)
            ),
        )
        .await;
    assert_eq!(s["exit_code"], 0, "{text}");
    assert_eq!(s["error_code"], 2010, "{text}");
    let line = text
        .lines()
        .find(|l| l.starts_with("[error 2010] network:"))
        .unwrap_or_else(|| panic!("no 2010 line: {text}"));
    assert!(line.contains(&format!("{v4}:{port}")), "{line}");
    assert!(line.contains("a direct connection"), "{line}");
    assert_eq!(outside.seen(), 0, "the refused connection arrived");
    // The next command's result does not repeat it.
    let (text, s) = setup.server.shell_send(&id, "true\n").await;
    assert!(s["error_code"].is_null(), "{text}");

    // Closed, the shell's credentials are refused like an ended call's.
    let r = setup.server.call("shell_close", json!({ "id": id })).await;
    assert_eq!(r.is_error, Some(false), "{}", text_of(&r));
    let (text, s) = setup
        .run(&format!(
            "curl -sS --noproxy '' -o /dev/null -w '%{{http_code}}\\n' -x \"$(cat cred)\" \
             http://localhost:{}/",
            service.at.port()
        ))
        .await;
    assert_eq!(s["exit_code"], 0, "{text}");
    assert!(
        text.starts_with("407\n"),
        "a closed shell's credentials: {text}"
    );
}

#[tokio::test]
async fn net_a_shell_gets_the_proxy_and_its_refusals_as_root() {
    a_shell_gets_the_network_policy(Who::Root).await;
}

#[tokio::test]
async fn net_a_shell_gets_the_proxy_and_its_refusals_as_nobody() {
    a_shell_gets_the_network_policy(Who::Nobody).await;
}

/// In `ask` over stdio, a host not listed met by a shell's command is asked of the user while
/// it waits, naming the line typed: once is that command only, a deny is 2010 in the send.
#[tokio::test]
async fn net_a_shell_asks_the_user_over_stdio() {
    let pair = NetnsHost::new();
    let v4 = pair.near.0;
    let service = Listener::on("0.0.0.0".parse().unwrap());
    let target = format!("{v4}:{}", service.at.port());
    let workspace = tempfile::tempdir().unwrap();
    let state = agentty_testkit::state_dir();
    let (client, service_client) = serve_answering(workspace.path(), state.path()).await;
    let call = |name: &'static str, args: Value| {
        let service_client = &service_client;
        async move {
            let Value::Object(args) = args else {
                unreachable!()
            };
            let result = service_client
                .call_tool(CallToolRequestParams::new(name).with_arguments(args))
                .await
                .unwrap();
            (text_of(&result), result.structured_content.unwrap())
        }
    };
    let (text, s) = call("shell_open", json!({})).await;
    let id = s["id"].as_str().unwrap().to_owned();
    let sandbox = line_of(&text, "[sandbox]");
    assert!(
        sandbox.contains("; network ask: listed hosts and loopback; the user is asked for others"),
        "{sandbox}"
    );
    let fetch = format!("curl -sS --max-time 20 http://{target}/ 2>&1 | tail -n 1\n");
    let send = |input: String| call("shell_send", json!({ "id": id, "input": input }));

    // Once: asked, naming the command typed; the next command is asked again.
    let (text, s) = send(fetch.clone()).await;
    assert!(text.contains("host-service"), "{text}");
    assert!(s["error_code"].is_null(), "{text}");
    {
        let asked = client.asked.lock().unwrap();
        assert_eq!(asked.len(), 1, "{text}");
        assert!(asked[0].contains(&target), "{asked:?}");
        assert!(
            asked[0].contains("curl -sS"),
            "the command is named: {asked:?}"
        );
    }
    let (text, _) = send(fetch.clone()).await;
    assert!(text.contains("host-service"), "{text}");
    assert_eq!(client.asked.lock().unwrap().len(), 2, "once is one command");

    // Deny: refused, 2010 in this send's result, through `| tail`.
    *client.answer.lock().unwrap() = "deny";
    let (text, s) = send(fetch.clone()).await;
    assert_refused(&text, &s, &target, "the user declined it");
    assert_eq!(client.asked.lock().unwrap().len(), 3);
    assert_eq!(service.seen(), 2, "the denied connection reached the host");
    service_client.cancel().await.unwrap();
}
