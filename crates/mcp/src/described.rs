//! How a tool is described to MCP: its name, words and input schema, and the
//! annotations of one that only reads.

use std::sync::Arc;

use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde_json::Value;

/// Annotations of a tool that only reads fundi's state.
pub(crate) fn reading(title: &str) -> ToolAnnotations {
    ToolAnnotations::with_title(title)
        .read_only(true)
        .idempotent(true)
        .open_world(false)
}

/// A tool named `name`, described in `description`, taking input of `schema`.
pub(crate) fn tool(name: &'static str, description: &'static str, schema: Value) -> Tool {
    let schema: JsonObject = match schema {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    };
    Tool::new(name, description, Arc::new(schema))
}
