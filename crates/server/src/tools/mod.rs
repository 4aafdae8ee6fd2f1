//! The tool table's shared parts: how every tool takes its arguments (parsed with errors that
//! name the field, checked against the bounds and guards all tools share) and answers (a tool
//! error the model can read, or a result with `structuredContent`), the catalog hosts receive,
//! and the wording of both. The tools themselves live in their family's folder: `terminal/`,
//! `tasks/`, `shells/`.

use std::sync::Arc;

use rmcp::handler::server::tool::schema_for_input;
use rmcp::model::{CallToolResult, ContentBlock, JsonObject};
use rmcp::schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;

pub(crate) mod args;
pub(crate) mod catalog;
pub(crate) mod entry;
pub(crate) mod notice;
pub(crate) mod timing;

/// Input schema for a tool whose handler parses its arguments itself (so that a bad argument is
/// a tool error the model can read, not a protocol error).
pub(crate) fn input_schema<T: JsonSchema + 'static>() -> Arc<JsonObject> {
    schema_for_input::<T>().unwrap_or_else(|e| {
        tracing::error!("input schema: {e}");
        Arc::new(JsonObject::new())
    })
}

/// A tool's arguments, or the error result naming the field that does not fit (see `args`).
#[expect(
    clippy::result_large_err,
    reason = "the error is the tool's answer itself, made once on a failed call"
)]
pub(crate) fn parse_args<T: DeserializeOwned>(args: JsonObject) -> Result<T, CallToolResult> {
    args::parse(args)
}

/// A refusal or failure the model reads (`isError`).
pub(crate) fn tool_error(text: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(text)])
}

/// A result: the model's text, and `structured` as `structuredContent`.
pub(crate) fn reply<T: Serialize>(text: String, structured: &T) -> CallToolResult {
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    result.structured_content = serde_json::to_value(structured).ok();
    result
}
