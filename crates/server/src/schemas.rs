//! The typed results' JSON Schemas as MCP resources (`agentty://schema/<Type>`,
//! docs/BEHAVIOUR.md §8): a host can list them and validate `structuredContent.parsed.data`
//! against the one named in `parsed.schema`. Generated from the Rust types, so they cannot drift
//! from what is returned.

use rmcp::ErrorData;
use rmcp::model::{ListResourcesResult, ReadResourceResult, Resource, ResourceContents};

const MIME_SCHEMA: &str = "application/schema+json";

/// One resource per type, in the order of `agentty_parse::TYPES`.
pub fn list() -> ListResourcesResult {
    let resources = agentty_parse::TYPES
        .iter()
        .map(|t| {
            Resource::new(agentty_parse::schema_uri(t.name), t.name)
                .with_title(format!("{} (JSON Schema)", t.name))
                .with_description(t.description)
                .with_mime_type(MIME_SCHEMA)
        })
        .collect();
    ListResourcesResult::with_all_items(resources)
}

/// The schema at `uri`; an unknown URI is the spec's "resource not found" (-32002).
pub fn read(uri: &str) -> Result<ReadResourceResult, ErrorData> {
    let mut schema = uri
        .strip_prefix("agentty://schema/")
        .and_then(agentty_parse::schema)
        .ok_or_else(|| {
            ErrorData::resource_not_found(
                format!("no resource {uri}; resources/list names the schemas"),
                None,
            )
        })?;
    // Standard JSON Schema 2020-12 only, as for the tools' schemas: schemars' `uint64`-style
    // formats become ranges, so Ajv-based hosts validate without a warning per field.
    if let serde_json::Value::Object(object) = &mut schema {
        crate::tools::catalog::tidy(object);
    }
    let text = serde_json::to_string(&schema)
        .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
    Ok(ReadResourceResult::new(vec![
        ResourceContents::text(text, uri).with_mime_type(MIME_SCHEMA),
    ]))
}
