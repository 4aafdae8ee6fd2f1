//! The MCP handler: what agentty answers to `initialize`, `tools/list`, `tools/call`,
//! `resources/*` and `tasks/*` (docs/BEHAVIOUR.md §1, §9, §11). A call is routed to its
//! session, given its escalation slot (2026-07-28 clients), run by the tool router, and its
//! result turned into a task or completed with what the person watching did.

use rmcp::model::{
    ContentBlock, Implementation, InitializeRequestParams, InitializeResult, ServerCapabilities,
    ServerConfig,
};
use rmcp::service::{ElicitationMode, RequestContext};
use rmcp::{ErrorData, RoleServer, ServerHandler, tool_handler};

use std::sync::atomic::Ordering;

use crate::server::Agentty;

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Agentty {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tasks()
                .enable_resources()
                .build(),
        )
        .with_server_info(
            Implementation::new("agentty", env!("CARGO_PKG_VERSION"))
                .with_title("agentty: a real terminal for AI agents"),
        )
        .with_instructions(crate::tools::notice::SERVER_INSTRUCTIONS)
    }

    async fn on_initialized(&self, context: rmcp::service::NotificationContext<RoleServer>) {
        // Known by its HTTP id from here on: a DELETE that comes before the first tool call
        // finds it.
        if let Some(parts) = context.extensions.get::<http::request::Parts>() {
            self.note_http_id(parts);
        }
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        context.peer.set_peer_info(request.clone());
        self.session.initialized.store(true, Ordering::Relaxed);
        if let Some(caller) = context
            .extensions
            .get::<http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<crate::session::Caller>())
        {
            let _ = self.session.caller.set(caller.clone());
        }
        let transport = if context.extensions.get::<http::request::Parts>().is_some() {
            "http"
        } else {
            "stdio"
        };
        self.session
            .describe(|| request.client_info.name.clone(), transport);
        // A client session rmcp brought back after a restart (the gate saw its id kept).
        let resuming = context
            .extensions
            .get::<http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<crate::session::kept::Resuming>());
        match resuming {
            Some(resuming) => self.resume(&resuming.0),
            None => crate::metrics::METRICS.session_opened(if transport == "http" {
                crate::metrics::Transport::Http
            } else {
                crate::metrics::Transport::Stdio
            }),
        }
        // What `peer.elicit` checks before asking, remembered for the advice of error 2008.
        // Not over HTTP: nothing is escalated there (see `escalation::over_http`).
        let form = !crate::escalation::over_http(&context)
            && context
                .peer
                .supported_elicitation_modes()
                .contains(&ElicitationMode::Form);
        self.state().client_can_ask.store(form, Ordering::Relaxed);
        self.negotiate_initialize(&request)
    }

    async fn list_resources(
        &self,
        _request: Option<rmcp::model::PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourcesResult, ErrorData> {
        Ok(crate::schemas::list())
    }

    async fn read_resource(
        &self,
        request: rmcp::model::ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ReadResourceResponse, ErrorData> {
        crate::schemas::read(&request.uri).map(Into::into)
    }

    async fn get_task(
        &self,
        request: rmcp::model::GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetTaskResult, ErrorData> {
        let (this, _) = self.route(&context);
        this.get_task_state(&request.task_id)
    }

    async fn cancel_task(
        &self,
        request: rmcp::model::CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let (this, _) = self.route(&context);
        this.cancel_task_by_id(&request.task_id).await
    }

    async fn call_tool(
        &self,
        request: rmcp::model::CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CallToolResponse, ErrorData> {
        let began = std::time::Instant::now();
        let tool = request.name.clone();
        // Listed while it runs: the drain after SIGTERM waits for it, then cancels it.
        let _in_flight = self.inner.calls.enter_as(&context.ct, tool == "task_wait");
        let starts = matches!(tool.as_ref(), "terminal" | "shell_open");
        let mut response = if starts && self.draining() {
            Ok(rmcp::model::CallToolResponse::Complete(
                crate::tools::tool_error(crate::tools::notice::DRAINING.to_owned()),
            ))
        } else {
            self.answer_call(request, context).await
        };
        if self.stopping()
            && let Ok(rmcp::model::CallToolResponse::Complete(result)) = &mut response
        {
            result
                .content
                .push(ContentBlock::text(crate::tools::notice::SHUT_DOWN));
        }
        crate::metrics::METRICS.call(
            crate::tools::catalog::tool_index(&tool),
            outcome(&response),
            began.elapsed(),
        );
        response
    }

    async fn list_tools(
        &self,
        _request: Option<rmcp::model::PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListToolsResult, ErrorData> {
        // As rmcp's generated handler answers, with the catalog instead of the router's list.
        let cache_hints = context
            .protocol_version()
            .is_some_and(|v| v >= rmcp::model::ProtocolVersion::V_2026_07_28);
        // Only a client that can show the user a form is told that escalation asks.
        let capabilities = context
            .meta
            .client_capabilities()
            .or_else(|| context.peer.peer_info().map(|i| i.capabilities.clone()));
        let can_ask = !crate::escalation::over_http(&context)
            && capabilities
                .and_then(|c| c.elicitation)
                .is_some_and(|e| e.form.is_some() || e.url.is_none());
        let tools = if can_ask {
            &self.tools
        } else {
            &self.tools_no_escalation
        };
        Ok(rmcp::model::ListToolsResult {
            result_type: Some(rmcp::model::ResultType::COMPLETE),
            tools: tools.as_ref().clone(),
            meta: None,
            next_cursor: None,
            ttl_ms: cache_hints.then_some(0),
            // It depends on the client's capabilities.
            cache_scope: cache_hints.then_some(rmcp::model::CacheScope::Private),
        })
    }
}

impl Agentty {
    /// A tool call, routed to its session and answered (see the module doc).
    async fn answer_call(
        &self,
        request: rmcp::model::CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CallToolResponse, ErrorData> {
        let (this, sessionless) = self.route(&context);
        // A client session's call over HTTP is listed while it runs: ending the session
        // (`DELETE /mcp`) cancels it.
        let http_parts = context.extensions.get::<http::request::Parts>();
        let _flight = match (http_parts, &sessionless) {
            (Some(parts), None) => {
                this.note_http_id(parts);
                Some(this.session.in_flight.enter(&context.ct))
            }
            _ => None,
        };
        match &sessionless {
            Some(caller) => this
                .session
                .describe(|| caller.0.to_string(), "http, no session"),
            None => this.session.describe(
                || {
                    request
                        .meta
                        .as_ref()
                        .and_then(rmcp::model::RequestMetaObject::client_info)
                        .map_or_else(|| "unknown client".to_owned(), |i| i.name)
                },
                "stdio",
            ),
        }
        // A client of 2026-07-28 (no server-to-client requests): an escalation is asked by
        // answering `input_required`, and its retry is checked before the tool runs.
        let modern = context
            .protocol_version()
            .is_some_and(|v| v >= rmcp::model::ProtocolVersion::V_2026_07_28);
        let tasks_declared = context
            .client_capabilities()
            .is_some_and(|caps| caps.supports_tasks());
        let mut context = context;
        let slot = modern.then(|| {
            crate::escalation::mrtr::Slot::for_call(
                this.inner.sealer.clone(),
                &this.session.name,
                &request,
                &context.meta,
            )
        });
        if let Some(slot) = &slot {
            context.extensions.insert(slot.clone());
        }
        // `terminal` and `shell_send` look for planted code themselves, and say it among their
        // notes; every other tool's result gets what a look finds now, or found since (a job
        // that ended, the look between calls).
        let looks_itself = matches!(request.name.as_ref(), "terminal" | "shell_send");
        let call = rmcp::handler::server::tool::ToolCallContext::new(&*this, request, context);
        let mut response = this.tool_router.call(call).await;
        if let Some(question) = slot
            .as_ref()
            .and_then(crate::escalation::mrtr::Slot::take_question)
        {
            return Ok(rmcp::model::CallToolResponse::InputRequired(question));
        }
        // A command gone to the background is a task for a client of the tasks extension.
        if tasks_declared
            && let Ok(rmcp::model::CallToolResponse::Complete(result)) = &response
            && let Some(task) = this.as_task(result)
        {
            return Ok(rmcp::model::CallToolResponse::Task(task));
        }
        // What the person watching did since the last result (web view, `--view-control`).
        if let Ok(rmcp::model::CallToolResponse::Complete(result)) = &mut response {
            let notes = this.session.take_user_notes();
            if !notes.is_empty() {
                result.content.push(ContentBlock::text(notes.join("\n")));
            }
            if !looks_itself && let Some(warning) = this.planted_warning() {
                result.content.push(ContentBlock::text(warning));
            }
        }
        response
    }
}

/// How a call ended, as `/metrics` counts it.
fn outcome(response: &Result<rmcp::model::CallToolResponse, ErrorData>) -> crate::metrics::Outcome {
    use crate::metrics::Outcome;
    use rmcp::model::CallToolResponse;
    match response {
        Ok(CallToolResponse::Complete(result)) if result.is_error == Some(true) => Outcome::Error,
        Ok(CallToolResponse::Complete(_)) => Outcome::Ok,
        Ok(CallToolResponse::InputRequired(_)) => Outcome::InputRequired,
        Ok(CallToolResponse::Task(_)) => Outcome::Task,
        Ok(_) => Outcome::Ok,
        Err(_) => Outcome::Invalid,
    }
}
