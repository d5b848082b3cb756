//! The A2A v0.3 JSON form of messages, tasks and stream events, both ways: a server
//! reads v0.3 messages as v1.0 and answers v1.0 results as kind-tagged v0.3 objects; a
//! client does the opposite to a v0.3 peer. The runtime itself only ever sees v1.0.

use serde_json::{Map, Value, json};

use super::limits::InvalidField;

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

/// A v0.3 `Message` as v1.0 JSON.
pub fn message_in(message: Value) -> Result<Value, InvalidField> {
    let Value::Object(mut m) = message else {
        return Err(InvalidField::new("message", "must be an object"));
    };
    m.remove("kind");
    let role = match m.remove("role") {
        Some(Value::String(r)) if r == "user" => "ROLE_USER",
        Some(Value::String(r)) if r == "agent" => "ROLE_AGENT",
        Some(other) => {
            return Err(InvalidField::new(
                "message.role",
                format!("must be \"user\" or \"agent\", got {other}"),
            ));
        }
        None => return Err(InvalidField::new("message.role", "is required")),
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

fn part_in(index: usize, part: Value) -> Result<Value, InvalidField> {
    let field = format!("message.parts[{index}]");
    let Value::Object(mut p) = part else {
        return Err(InvalidField::new(field, "must be an object"));
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
                return Err(InvalidField::new(
                    format!("{field}.file"),
                    "must be an object",
                ));
            };
            match (file.remove("bytes"), file.remove("uri")) {
                (Some(bytes), None) => out.insert("raw".into(), bytes),
                (None, Some(uri)) => out.insert("url".into(), uri),
                _ => {
                    return Err(InvalidField::new(
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
            return Err(InvalidField::new(
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
/// A v1.0 `Task` as a v0.3 one.
pub fn task_out(task: Value) -> Value {
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
/// A v1.0 `StreamResponse` as the v0.3 object a stream sends.
pub fn stream_item_out(item: Value) -> Value {
    let Value::Object(mut wrapper) = item else {
        return item;
    };
    if let Some(t) = wrapper.remove("task") {
        return task_out(t);
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

/// A v0.3 `Task` (`kind: task`) as v1.0 JSON.
pub fn task_in(task: Value) -> Result<Value, InvalidField> {
    let Value::Object(mut t) = task else {
        return Err(InvalidField::new("task", "must be an object"));
    };
    t.remove("kind");
    if let Some(status) = t.remove("status") {
        t.insert("status".into(), status_in(status)?);
    }
    if let Some(Value::Array(history)) = t.remove("history") {
        let history = history
            .into_iter()
            .map(message_in)
            .collect::<Result<Vec<_>, _>>()?;
        t.insert("history".into(), Value::Array(history));
    }
    if let Some(Value::Array(artifacts)) = t.remove("artifacts") {
        let artifacts = artifacts
            .into_iter()
            .map(artifact_in)
            .collect::<Result<Vec<_>, _>>()?;
        t.insert("artifacts".into(), Value::Array(artifacts));
    }
    Ok(Value::Object(t))
}

/// A v0.3 result of a send or a stream (a task, a message, a `status-update` or an
/// `artifact-update`) as the v1.0 `StreamResponse` that carries it.
pub fn event_in(item: Value) -> Result<Value, InvalidField> {
    let kind = item
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    match kind.as_str() {
        "task" => Ok(json!({"task": task_in(item)?})),
        "message" => Ok(json!({"message": message_in(item)?})),
        "status-update" => {
            let Value::Object(mut update) = item else {
                unreachable!("a kind was read from it");
            };
            update.remove("kind");
            update.remove("final");
            if let Some(status) = update.remove("status") {
                update.insert("status".into(), status_in(status)?);
            }
            Ok(json!({"statusUpdate": update}))
        }
        "artifact-update" => {
            let Value::Object(mut update) = item else {
                unreachable!("a kind was read from it");
            };
            update.remove("kind");
            if let Some(artifact) = update.remove("artifact") {
                update.insert("artifact".into(), artifact_in(artifact)?);
            }
            Ok(json!({"artifactUpdate": update}))
        }
        other => Err(InvalidField::new(
            "result.kind",
            format!("must be task, message, status-update or artifact-update, got {other:?}"),
        )),
    }
}

fn status_in(status: Value) -> Result<Value, InvalidField> {
    let Value::Object(mut s) = status else {
        return Err(InvalidField::new("status", "must be an object"));
    };
    if let Some(Value::String(state)) = s.get("state") {
        let v1 = STATES
            .iter()
            .find(|(_, v03)| v03 == state)
            .map(|(v1, _)| *v1)
            .ok_or_else(|| {
                InvalidField::new("status.state", format!("is not a v0.3 state: {state:?}"))
            })?;
        s.insert("state".into(), v1.into());
    }
    if let Some(message) = s.remove("message").filter(|m| !m.is_null()) {
        s.insert("message".into(), message_in(message)?);
    }
    Ok(Value::Object(s))
}

fn artifact_in(artifact: Value) -> Result<Value, InvalidField> {
    let Value::Object(mut a) = artifact else {
        return Err(InvalidField::new("artifact", "must be an object"));
    };
    if let Some(Value::Array(parts)) = a.remove("parts") {
        let parts = parts
            .into_iter()
            .enumerate()
            .map(|(i, p)| part_in(i, p))
            .collect::<Result<Vec<_>, _>>()?;
        a.insert("parts".into(), Value::Array(parts));
    }
    Ok(Value::Object(a))
}

/// A v1.0 `Message` as a v0.3 one.
pub fn message_out(message: Value) -> Value {
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
    fn bad_v03_parts_and_roles_are_named() {
        let bad_role = json!({"messageId": "m", "role": "ROLE_USER", "parts": []});
        assert_eq!(message_in(bad_role).unwrap_err().field, "message.role");
        let bad_part = json!({"messageId": "m", "role": "user",
            "parts": [{"kind": "file", "file": {"bytes": "AA==", "uri": "https://x"}}]});
        assert_eq!(
            message_in(bad_part).unwrap_err().field,
            "message.parts[0].file"
        );
    }

    #[test]
    fn v1_results_become_kind_tagged_v03_objects_and_back() {
        let v1 = json!({"id": "t", "contextId": "c",
            "status": {"state": "TASK_STATE_INPUT_REQUIRED", "timestamp": "2026-05-01T10:00:00.000Z",
                       "message": {"messageId": "a", "role": "ROLE_AGENT", "parts": [{"text": "?"}]}},
            "artifacts": [{"artifactId": "x", "parts": [{"data": {"n": 1}}, {"raw": "AA==", "mediaType": "image/png"}]}]});
        let v03 = task_out(v1.clone());
        assert_eq!(v03["kind"], "task");
        assert_eq!(v03["status"]["state"], "input-required");
        assert_eq!(v03["status"]["message"]["role"], "agent");
        assert_eq!(
            v03["status"]["message"]["parts"][0],
            json!({"kind": "text", "text": "?"})
        );
        assert_eq!(
            v03["artifacts"][0]["parts"][0],
            json!({"kind": "data", "data": {"n": 1}})
        );
        assert_eq!(
            v03["artifacts"][0]["parts"][1],
            json!({"kind": "file", "file": {"bytes": "AA==", "mimeType": "image/png"}})
        );
        assert_eq!(task_in(v03.clone()).unwrap(), v1, "and back");
        assert_eq!(event_in(v03).unwrap(), json!({"task": v1}));

        let update = stream_item_out(json!({"statusUpdate": {"taskId": "t", "contextId": "c",
            "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "2026-05-01T10:00:00.000Z"}}}));
        assert_eq!(update["kind"], "status-update");
        assert_eq!(update["final"], true);
        assert_eq!(update["status"]["state"], "completed");
        assert_eq!(
            event_in(update).unwrap()["statusUpdate"]["status"]["state"],
            "TASK_STATE_COMPLETED"
        );
        let working = stream_item_out(json!({"statusUpdate": {"taskId": "t", "contextId": "c",
            "status": {"state": "TASK_STATE_WORKING", "timestamp": "2026-05-01T10:00:00.000Z"}}}));
        assert_eq!(working["final"], false);
        assert!(event_in(json!({"kind": "other"})).is_err());
    }
}
