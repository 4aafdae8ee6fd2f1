//! `shell_send({id, secret})`: the model names what a password prompt asks for; the user types
//! it on the web view's page; it is entered with echo off (see `crate::secrets`).

use std::sync::Arc;

use agentty_core::pty::Shell;
use rmcp::RoleServer;
use rmcp::model::{CallToolResult, ElicitationAction};
use rmcp::service::{ElicitationMode, RequestContext};

use super::notice as say;
use crate::secrets::SECRET_WAIT;
use crate::server::Agentty;

use super::*;

/// How asking for a secret went.
pub(super) enum SecretAsk {
    /// The user entered it (URL-mode elicitation): the send goes on to wait for what follows,
    /// from this output cursor.
    Entered(String, u64),
    /// The client cannot open a page for the user: the model passes this address on.
    Later(String),
}

impl Agentty {
    /// Asks the user for `what` for shell `id`. The error is the refusal text.
    pub(super) async fn ask_secret(
        &self,
        id: &str,
        shell: &Arc<Shell>,
        what: &str,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<SecretAsk, String> {
        let what = what.trim();
        if what.is_empty() || what.chars().count() > 100 {
            return Err(say::SECRET_WHAT.into());
        }
        let modern = ctx
            .protocol_version()
            .is_some_and(|v| v >= rmcp::model::ProtocolVersion::V_2026_07_28);
        let slot = ctx.extensions.get::<crate::escalation::mrtr::Slot>();
        // A 2026-07-28 client's retry after the user was asked to open the page.
        if let Some(opened) = slot.and_then(crate::escalation::mrtr::Slot::opened) {
            let (request, accepted) = opened?;
            if !accepted {
                return Err(say::SECRET_DECLINED.into());
            }
            let (entered, from) = self
                .secrets()
                .entered(&request)
                .ok_or_else(|| say::SECRET_NOT_ENTERED.to_owned())?;
            return wait_entered(&entered, from, what, id, ctx).await;
        }
        if !shell.asks_password() {
            return Err(say::SECRET_NOT_ASKED.into());
        }
        if shell.reads_itself() {
            return Err(say::SECRET_SHELL_ITSELF.into());
        }
        let Some(view) = self.view_url() else {
            return Err(say::SECRET_NO_VIEW.into());
        };
        let from = shell.output_total();
        let slot = slot.filter(|s| s.can_open());
        let url_mode = slot.is_some()
            || (!modern
                && ctx
                    .peer
                    .supported_elicitation_modes()
                    .contains(&ElicitationMode::Url));
        // Where the model is told of the request, the page takes the view's key too: the
        // model (or a command it runs) knows the id.
        let Some((request, entered)) = self.secrets().ask(
            shell,
            id,
            what,
            !url_mode,
            self.session.caller.get().cloned(),
        ) else {
            return Err(say::SECRETS_FULL.into());
        };
        let address = format!("{view}/secret/{request}");
        if let Some(slot) = slot {
            slot.ask_to_open(say::secret_question(what, id), &address, &request);
            return Err(say::SECRET_ASKED.into());
        }
        let Ok(url) = url::Url::parse(&address)
            .map_err(drop)
            .and_then(|u| if url_mode { Ok(u) } else { Err(()) })
        else {
            return Ok(SecretAsk::Later(format!("{view}/")));
        };
        match ctx
            .peer
            .elicit_url(say::secret_question(what, id), url, request)
            .await
        {
            Ok(ElicitationAction::Accept) => {}
            Ok(_) => return Err(say::SECRET_DECLINED.into()),
            Err(_) => return Err(say::SECRET_NOT_ASKED_URL.into()),
        }
        wait_entered(&entered, from, what, id, ctx).await
    }

    /// The reply when the user will type the secret later, on the page at `address`.
    pub(super) fn secret_later(
        &self,
        id: &str,
        shell: &Arc<Shell>,
        what: &str,
        address: &str,
    ) -> CallToolResult {
        let cursor = shell.output_total();
        success(
            say::secret_later(what, id, address),
            &ShellSendResult {
                id: id.to_owned(),
                status: SendState::AwaitingInput,
                exit_code: None,
                prompt: None,
                output: String::new(),
                dropped_bytes: 0,
                cursor_from: cursor,
                cursor,
                elapsed_ms: 0,
                error_code: None,
                sandbox_denied: None,
                earlier_exit_codes: Vec::new(),
                untyped_bytes: 0,
                running: None,
            },
        )
    }
}

/// Waits (at most [`SECRET_WAIT`]) for the user to enter the secret on the page.
async fn wait_entered(
    entered: &crate::secrets::Entered,
    from: u64,
    what: &str,
    id: &str,
    ctx: &RequestContext<RoleServer>,
) -> Result<SecretAsk, String> {
    tokio::select! {
        done = entered.wait(SECRET_WAIT) => if done {
            Ok(SecretAsk::Entered(say::secret_entered(what, id), from))
        } else {
            Err(say::SECRET_NOT_ENTERED.into())
        },
        () = ctx.ct.cancelled() => Err(say::SEND_CANCELLED.into()),
    }
}
