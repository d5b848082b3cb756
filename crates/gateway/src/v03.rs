//! The v0.3 dialect: its params become v1.0 params on the way in, and v1.0 results
//! become kind-tagged v0.3 objects on the way out. The runtime only ever sees v1.0.

use serde_json::{Map, Value, json};

use crate::error::ApiError;

/// v0.3 state names by v1.0 name.
const STATES: [(&str, &str); 8] = [
    ("TASK_STATE_SUBMITTED", "submitted"),
    ("TASK_STATE_WORKING", "working"),
    ("TASK_STATE_COMPLETED", "completed"),
    ("TASK_STATE_FAILED", "failed"),
    ("TASK_STATE_CANCELED", "canceled"),
    ("TASK_STATE_INPUT_REQUIRED", "input-required"),
    ("TASK_STATE_REJECTED", "rejected"),
    ("TASK_STATE_AUTH_REQUIRED", "auth-required"),
];

/// `MessageSendParams` to `SendMessageRequest`.
pub(crate) fn send_params(mut params: Value) -> Result<Value, ApiError> {
    if !params.is_object() {
        return Err(ApiError::invalid_params("params", "must be an object"));
    }
    let message = params
        .get_mut("message")
        .map(Value::take)
        .ok_or_else(|| ApiError::invalid_params("message", "is required"))?;
    let mut out = json!({"message": message_in(message)?});
    if let Some(config) = params.get("configuration").filter(|c| c.is_object()) {
        let mut v1 = Map::new();
        if let Some(blocking) = config.get("blocking").and_then(Value::as_bool) {
            v1.insert("returnImmediately".into(), Value::Bool(!blocking));
        }
        for key in [
            "historyLength",
            "acceptedOutputModes",
            "pushNotificationConfig",
        ] {
            if let Some(value) = config.get(key).filter(|v| !v.is_null()) {
                v1.insert(key.into(), value.clone());
            }
        }
        out["configuration"] = Value::Object(v1);
    }
    Ok(out)
}

/// A v0.3 `Message` as v1.0 JSON.
fn message_in(message: Value) -> Result<Value, ApiError> {
    let Value::Object(mut m) = message else {
        return Err(ApiError::invalid_params("message", "must be an object"));
    };
    m.remove("kind");
    let role = match m.remove("role") {
        Some(Value::String(r)) if r == "user" => "ROLE_USER",
        Some(Value::String(r)) if r == "agent" => "ROLE_AGENT",
        Some(other) => {
            return Err(ApiError::invalid_params(
                "message.role",
                format!("must be \"user\" or \"agent\", got {other}"),
            ));
        }
        None => return Err(ApiError::invalid_params("message.role", "is required")),
    };
    m.insert("role".into(), role.into());
    if let Some(Value::Array(parts)) = m.remove("parts") {
        let parts = parts
            .into_iter()
            .enumerate()
            .map(|(i, p)| part_in(i, p))
            .collect::<Result<Vec<_>, _>>()?;
        m.insert("parts".into(), Value::Array(parts));
    }
    Ok(Value::Object(m))
}

fn part_in(index: usize, part: Value) -> Result<Value, ApiError> {
    let field = format!("message.parts[{index}]");
    let Value::Object(mut p) = part else {
        return Err(ApiError::invalid_params(field, "must be an object"));
    };
    let kind = p.remove("kind");
    let mut out = Map::new();
    if let Some(metadata) = p.remove("metadata") {
        out.insert("metadata".into(), metadata);
    }
    match kind.as_ref().and_then(Value::as_str) {
        Some("text") | None if p.contains_key("text") => {
            out.insert("text".into(), p.remove("text").unwrap_or_default());
        }
        Some("data") | None if p.contains_key("data") => {
            out.insert("data".into(), p.remove("data").unwrap_or_default());
        }
        Some("file") | None if p.contains_key("file") => {
            let Some(Value::Object(mut file)) = p.remove("file") else {
                return Err(ApiError::invalid_params(
                    format!("{field}.file"),
                    "must be an object",
                ));
            };
            match (file.remove("bytes"), file.remove("uri")) {
                (Some(bytes), None) => out.insert("raw".into(), bytes),
                (None, Some(uri)) => out.insert("url".into(), uri),
                _ => {
                    return Err(ApiError::invalid_params(
                        format!("{field}.file"),
                        "must have exactly one of bytes, uri",
                    ));
                }
            };
            if let Some(name) = file.remove("name") {
                out.insert("filename".into(), name);
            }
            if let Some(mime) = file.remove("mimeType") {
                out.insert("mediaType".into(), mime);
            }
        }
        other => {
            return Err(ApiError::invalid_params(
                field,
                format!(
                    "a v0.3 part needs kind text, file or data with its member, got kind {}",
                    other.unwrap_or("(none)")
                ),
            ));
        }
    }
    Ok(Value::Object(out))
}

/// A v1.0 `Task` as a v0.3 task.
pub(crate) fn task(task: Value) -> Value {
    let Value::Object(mut t) = task else {
        return task;
    };
    t.insert("kind".into(), "task".into());
    if let Some(status) = t.remove("status") {
        t.insert("status".into(), status_out(status));
    }
    if let Some(Value::Array(history)) = t.remove("history") {
        t.insert(
            "history".into(),
            Value::Array(history.into_iter().map(message_out).collect()),
        );
    }
    if let Some(Value::Array(artifacts)) = t.remove("artifacts") {
        t.insert(
            "artifacts".into(),
            Value::Array(artifacts.into_iter().map(artifact_out).collect()),
        );
    }
    Value::Object(t)
}

/// A v1.0 `StreamResponse` as the v0.3 stream item.
pub(crate) fn stream_item(item: Value) -> Value {
    let Value::Object(mut wrapper) = item else {
        return item;
    };
    if let Some(t) = wrapper.remove("task") {
        return task(t);
    }
    if let Some(m) = wrapper.remove("message") {
        return message_out(m);
    }
    if let Some(Value::Object(mut update)) = wrapper.remove("statusUpdate") {
        let state = update
            .get("status")
            .and_then(|s| s.get("state"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        // v0.3 clients end their stream on `final`: terminal states and input-required.
        let last = matches!(
            state.as_str(),
            "TASK_STATE_COMPLETED"
                | "TASK_STATE_FAILED"
                | "TASK_STATE_CANCELED"
                | "TASK_STATE_REJECTED"
                | "TASK_STATE_INPUT_REQUIRED"
        );
        if let Some(status) = update.remove("status") {
            update.insert("status".into(), status_out(status));
        }
        update.insert("kind".into(), "status-update".into());
        update.insert("final".into(), Value::Bool(last));
        return Value::Object(update);
    }
    if let Some(Value::Object(mut update)) = wrapper.remove("artifactUpdate") {
        if let Some(artifact) = update.remove("artifact") {
            update.insert("artifact".into(), artifact_out(artifact));
        }
        update.insert("kind".into(), "artifact-update".into());
        return Value::Object(update);
    }
    Value::Object(wrapper)
}

fn status_out(status: Value) -> Value {
    let Value::Object(mut s) = status else {
        return status;
    };
    if let Some(Value::String(state)) = s.get("state") {
        let v03 = STATES
            .iter()
            .find(|(v1, _)| v1 == state)
            .map_or("unknown", |(_, v03)| v03);
        s.insert("state".into(), v03.into());
    }
    if let Some(message) = s.remove("message") {
        s.insert("message".into(), message_out(message));
    }
    Value::Object(s)
}

fn message_out(message: Value) -> Value {
    let Value::Object(mut m) = message else {
        return message;
    };
    m.insert("kind".into(), "message".into());
    let role = match m.get("role").and_then(Value::as_str) {
        Some("ROLE_AGENT") => "agent",
        _ => "user",
    };
    m.insert("role".into(), role.into());
    if let Some(Value::Array(parts)) = m.remove("parts") {
        m.insert("parts".into(), parts_out(parts));
    }
    Value::Object(m)
}

fn artifact_out(artifact: Value) -> Value {
    let Value::Object(mut a) = artifact else {
        return artifact;
    };
    if let Some(Value::Array(parts)) = a.remove("parts") {
        a.insert("parts".into(), parts_out(parts));
    }
    Value::Object(a)
}

fn parts_out(parts: Vec<Value>) -> Value {
    Value::Array(parts.into_iter().map(part_out).collect())
}

fn part_out(part: Value) -> Value {
    let Value::Object(mut p) = part else {
        return part;
    };
    let mut out = Map::new();
    if let Some(metadata) = p.remove("metadata") {
        out.insert("metadata".into(), metadata);
    }
    let filename = p.remove("filename");
    let media_type = p.remove("mediaType");
    if let Some(text) = p.remove("text") {
        out.insert("kind".into(), "text".into());
        out.insert("text".into(), text);
    } else if let Some(data) = p.remove("data") {
        out.insert("kind".into(), "data".into());
        // v0.3 data parts hold objects only.
        let data = if data.is_object() {
            data
        } else {
            json!({"value": data})
        };
        out.insert("data".into(), data);
    } else {
        let mut file = Map::new();
        if let Some(raw) = p.remove("raw") {
            file.insert("bytes".into(), raw);
        } else if let Some(url) = p.remove("url") {
            file.insert("uri".into(), url);
        }
        if let Some(name) = filename {
            file.insert("name".into(), name);
        }
        if let Some(mime) = media_type {
            file.insert("mimeType".into(), mime);
        }
        out.insert("kind".into(), "file".into());
        out.insert("file".into(), Value::Object(file));
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_v03_send_becomes_v1_params() {
        let params = json!({
            "message": {"kind": "message", "messageId": "m-1", "role": "user",
                "parts": [{"kind": "text", "text": "Summarise this"},
                          {"kind": "file", "file": {"uri": "https://x.example/a.pdf",
                             "mimeType": "application/pdf", "name": "a.pdf"}},
                          {"kind": "data", "data": {"steps": 2}}]},
            "configuration": {"blocking": false, "acceptedOutputModes": ["text/plain"]}});
        let v1 = send_params(params).unwrap();
        assert_eq!(
            v1,
            json!({
                "message": {"messageId": "m-1", "role": "ROLE_USER",
                    "parts": [{"text": "Summarise this"},
                              {"url": "https://x.example/a.pdf", "mediaType": "application/pdf",
                               "filename": "a.pdf"},
                              {"data": {"steps": 2}}]},
                "configuration": {"returnImmediately": true, "acceptedOutputModes": ["text/plain"]}})
        );
    }

    #[test]
    fn bad_v03_parts_and_roles_are_named() {
        let bad_role = json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": []}});
        assert!(
            send_params(bad_role)
                .unwrap_err()
                .message()
                .contains("message.role")
        );
        let bad_part = json!({"message": {"messageId": "m", "role": "user",
            "parts": [{"kind": "file", "file": {"bytes": "AA==", "uri": "https://x"}}]}});
        let err = send_params(bad_part).unwrap_err();
        assert!(
            err.message().contains("message.parts[0].file"),
            "{}",
            err.message()
        );
    }

    #[test]
    fn v1_results_become_kind_tagged_v03_objects() {
        let v1 = json!({"id": "t", "contextId": "c",
            "status": {"state": "TASK_STATE_INPUT_REQUIRED", "timestamp": "2026-05-01T10:00:00.000Z",
                       "message": {"messageId": "a", "role": "ROLE_AGENT", "parts": [{"text": "?"}]}},
            "artifacts": [{"artifactId": "x", "parts": [{"data": [1, 2]}, {"raw": "AA==", "mediaType": "image/png"}]}]});
        let v03 = task(v1);
        assert_eq!(v03["kind"], "task");
        assert_eq!(v03["status"]["state"], "input-required");
        assert_eq!(v03["status"]["message"]["role"], "agent");
        assert_eq!(
            v03["status"]["message"]["parts"][0],
            json!({"kind": "text", "text": "?"})
        );
        assert_eq!(
            v03["artifacts"][0]["parts"][0],
            json!({"kind": "data", "data": {"value": [1, 2]}})
        );
        assert_eq!(
            v03["artifacts"][0]["parts"][1],
            json!({"kind": "file", "file": {"bytes": "AA==", "mimeType": "image/png"}})
        );

        let update = stream_item(json!({"statusUpdate": {"taskId": "t", "contextId": "c",
            "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "2026-05-01T10:00:00.000Z"}}}));
        assert_eq!(update["kind"], "status-update");
        assert_eq!(update["final"], true);
        assert_eq!(update["status"]["state"], "completed");
        let working = stream_item(json!({"statusUpdate": {"taskId": "t", "contextId": "c",
            "status": {"state": "TASK_STATE_WORKING", "timestamp": "2026-05-01T10:00:00.000Z"}}}));
        assert_eq!(working["final"], false);
    }
}
