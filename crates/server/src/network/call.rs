//! A call's (or a shell's) registration with the network policy: the proxy variables with its
//! own credentials, the refusals it met, and its end (docs/BEHAVIOUR.md §13).

use std::ffi::OsString;
use std::sync::Arc;

use super::{CallNet, Egress, Met, Refusal, Unreached};

/// Keeps a background job's (or a shell's) registration while it runs: its connections are
/// attributed, logged and shown in the web view until it ends. A command job's refusals and
/// hosts not reached stay with the job for its reports ([`met_by_job`]).
pub(crate) fn keep_while_running(job: &Arc<agentty_core::jobs::Job>, net: Option<NetCall>) {
    let (Some(net), Ok(runtime)) = (net, tokio::runtime::Handle::try_current()) else {
        return;
    };
    // A command job's report says what it met once ended; a shell's sends say it as they go.
    if job.kind == agentty_core::jobs::JobKind::Command {
        job.attach(Arc::clone(&net.net.met) as Arc<dyn std::any::Any + Send + Sync>);
    }
    let job = Arc::clone(job);
    runtime.spawn(async move {
        job.ended().await;
        drop(net);
    });
}

/// A call registered with [`Egress`]; it is let go when dropped.
pub(crate) struct NetCall {
    pub(super) egress: Arc<Egress>,
    pub(super) net: Arc<CallNet>,
}

impl NetCall {
    /// The variables that point the call's commands at the proxy, with the call's own
    /// credentials: the usual proxy variables (curl, pip, npm, cargo, go, git over HTTP),
    /// `NO_PROXY` for loopback, and git's ssh through `agentty proxy-connect` where the server's
    /// environment does not set it already.
    pub(crate) fn env(&self) -> Vec<(OsString, OsString)> {
        let Some(at) = self.egress.proxy.get() else {
            return Vec::new();
        };
        let url = format!("http://agentty:{}@{at}", self.net.token);
        let mut env: Vec<(OsString, OsString)> = [
            "HTTP_PROXY",
            "HTTPS_PROXY",
            "http_proxy",
            "https_proxy",
            "ALL_PROXY",
            "all_proxy",
            "AGENTTY_PROXY",
        ]
        .iter()
        .map(|name| (OsString::from(name), OsString::from(&url)))
        .collect();
        for name in ["NO_PROXY", "no_proxy"] {
            env.push((name.into(), "localhost,127.0.0.1,::1".into()));
        }
        // A path a shell reads as one word, or none: ssh runs the ProxyCommand with a shell.
        let helper = self
            .egress
            .helper
            .as_ref()
            .map(|h| h.display().to_string())
            .filter(|h| {
                h.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"/._+-".contains(&b))
            });
        if let Some(helper) = helper {
            let unset = |name: &str| std::env::var_os(name).is_none();
            if unset("GIT_SSH_COMMAND") && unset("GIT_SSH") {
                env.push((
                    "GIT_SSH_COMMAND".into(),
                    format!("ssh -o ProxyCommand='{helper} proxy-connect %h %p'").into(),
                ));
            }
        }
        env
    }

    /// The refusals met so far, emptied.
    pub(crate) fn take_refusals(&self) -> Vec<Refusal> {
        self.net.take_refusals()
    }

    /// The allowed hosts the proxy could not reach so far, emptied.
    pub(crate) fn take_unreached(&self) -> Vec<super::Unreached> {
        self.net.take_unreached()
    }

    /// Whether a question about these refusals may go back with the result (a 2026-07-28
    /// client in `ask` mode).
    pub(crate) fn may_ask_later(&self) -> bool {
        self.net.ask_later
    }
}

impl Drop for NetCall {
    fn drop(&mut self) {
        self.egress.revoke(&self.net.marker);
    }
}

/// What a background command job's commands met: the connections refused and the allowed
/// hosts not reached (none for a job without a network filter).
pub(crate) fn met_by_job(job: &agentty_core::jobs::Job) -> (Vec<Refusal>, Vec<Unreached>) {
    job.attached::<Met>().map(Met::both).unwrap_or_default()
}
