//! The v0.3 HTTP+JSON routes (`/v1/message:send`, `/v1/tasks/{id}`, ..., `/v1/card`) for
//! v0.3 REST clients. v0.3's REST binding speaks the ProtoJSON of the v0.3 proto
//! (package `a2a.v1`): messages carry `content`, parts are `{"data": {"data": ...}}` and
//! `{"file": {"fileWithUri": ...}}`, states `TASK_STATE_CANCELLED`, push configs have a
//! resource `name`. A request becomes the params of the v0.3 JSON-RPC method and is
//! answered by the same code (so its semantics, and its push deliveries, are v0.3's);
//! the answer is turned into that ProtoJSON, field for field: the official v0.3 client
//! parses it strictly, so nothing it does not know is sent.

use serde_json::{Map, Value, json};

use crate::dialect::Method;
use crate::error::ApiError;

/// The path prefix of the v0.3 routes.
pub(crate) const PREFIX: &str = "v1";

/// The v0.3 JSON-RPC params of a v0.3 REST request (`params` as the route built them:
/// `id` / `taskId` from the path, the query, and the body).
pub(crate) fn request(method: Method, params: Value) -> Result<Value, ApiError> {
    let text = |key: &str| params.get(key).cloned().unwrap_or(Value::Null);
    Ok(match method {
        Method::SendMessage | Method::SendStreamingMessage => {
            let message = params
                .get("message")
                .ok_or_else(|| ApiError::invalid_params("message", "is required"))?;
            let mut out = json!({"message": message_in(message)?});
            let config = params.get("configuration").unwrap_or(&Value::Null);
            let mut rpc = Map::new();
            for key in ["acceptedOutputModes", "historyLength"] {
                copy_into(config, &mut rpc, key);
            }
            if let Some(push) = config.get("pushNotification") {
                rpc.insert("pushNotificationConfig".into(), push.clone());
            }
            // Protobuf reads an absent `blocking` as false.
            let blocking = config
                .get("blocking")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            rpc.insert("blocking".into(), blocking.into());
            out["configuration"] = rpc.into();
            copy(&params, &mut out, "metadata");
            out
        }
        Method::GetTask => {
            let mut out = json!({"id": text("id")});
            copy(&params, &mut out, "historyLength");
            out
        }
        Method::CreatePushConfig => {
            let mut config = params
                .get("config")
                .and_then(|c| c.get("pushNotificationConfig"))
                .cloned()
                .unwrap_or_else(|| json!({}));
            if let Some(id) = params.get("configId").filter(|id| id.as_str() != Some("")) {
                config["id"] = id.clone();
            }
            json!({"taskId": text("taskId"), "pushNotificationConfig": config})
        }
        Method::GetPushConfig | Method::DeletePushConfig => {
            json!({"id": text("taskId"), "pushNotificationConfigId": text("id")})
        }
        Method::ListPushConfigs => json!({"id": text("taskId")}),
        Method::GetExtendedAgentCard => json!({}),
        // Cancel, subscribe: the task's id.
        _ => json!({"id": text("id")}),
    })
}

/// A v0.3 JSON-RPC result of `method` as v0.3 ProtoJSON.
pub(crate) fn answer(method: Method, result: Value) -> Value {
    match method {
        Method::SendMessage => payload_out(result),
        Method::GetTask | Method::CancelTask => task_out(&result),
        Method::CreatePushConfig | Method::GetPushConfig => push_config_out(&result),
        Method::ListPushConfigs => {
            let configs: Vec<Value> = list(Some(&result)).iter().map(push_config_out).collect();
            json!({"configs": configs})
        }
        Method::DeletePushConfig => json!({}),
        // The card is v0.3's JSON card, as `/v1/card` serves it.
        _ => result,
    }
}

/// A v0.3 stream item (`kind`-tagged) as a v0.3 ProtoJSON `StreamResponse`.
pub(crate) fn stream_response(item: Value) -> Value {
    match item["kind"].as_str() {
        Some("status-update") => {
            let mut out = Map::new();
            for key in ["taskId", "contextId", "final", "metadata"] {
                copy_into(&item, &mut out, key);
            }
            out.insert("status".into(), status_out(&item["status"]));
            json!({"statusUpdate": out})
        }
        Some("artifact-update") => {
            let mut out = Map::new();
            for key in ["taskId", "contextId", "append", "lastChunk", "metadata"] {
                copy_into(&item, &mut out, key);
            }
            out.insert("artifact".into(), artifact_out(&item["artifact"]));
            json!({"artifactUpdate": out})
        }
        _ => payload_out(item),
    }
}

/// A task or a message as `{"task": ...}` or `{"message": ...}`.
fn payload_out(item: Value) -> Value {
    match item["kind"].as_str() {
        Some("message") => json!({"message": message_out(&item)}),
        _ => json!({"task": task_out(&item)}),
    }
}

fn task_out(task: &Value) -> Value {
    let mut out = Map::new();
    for key in ["id", "contextId", "metadata"] {
        copy_into(task, &mut out, key);
    }
    out.insert("status".into(), status_out(&task["status"]));
    for (key, convert) in [
        ("artifacts", artifact_out as fn(&Value) -> Value),
        ("history", message_out),
    ] {
        let items: Vec<Value> = list(task.get(key)).iter().map(convert).collect();
        if !items.is_empty() {
            out.insert(key.into(), items.into());
        }
    }
    Value::Object(out)
}

fn status_out(status: &Value) -> Value {
    let state = match status["state"].as_str().unwrap_or_default() {
        "submitted" => "TASK_STATE_SUBMITTED",
        "working" => "TASK_STATE_WORKING",
        "input-required" => "TASK_STATE_INPUT_REQUIRED",
        "auth-required" => "TASK_STATE_AUTH_REQUIRED",
        "completed" => "TASK_STATE_COMPLETED",
        "canceled" => "TASK_STATE_CANCELLED",
        "failed" => "TASK_STATE_FAILED",
        "rejected" => "TASK_STATE_REJECTED",
        _ => "TASK_STATE_UNSPECIFIED",
    };
    let mut out = json!({"state": state});
    if let Some(message) = status.get("message").filter(|m| m.is_object()) {
        out["message"] = message_out(message);
    }
    copy(status, &mut out, "timestamp");
    out
}

fn message_out(message: &Value) -> Value {
    let mut out = Map::new();
    for key in ["messageId", "contextId", "taskId", "metadata", "extensions"] {
        copy_into(message, &mut out, key);
    }
    let role = match message["role"].as_str() {
        Some("agent") => "ROLE_AGENT",
        Some("user") => "ROLE_USER",
        _ => "ROLE_UNSPECIFIED",
    };
    out.insert("role".into(), role.into());
    let parts: Vec<Value> = list(message.get("parts")).iter().map(part_out).collect();
    out.insert("content".into(), parts.into());
    Value::Object(out)
}

fn artifact_out(artifact: &Value) -> Value {
    let mut out = Map::new();
    for key in [
        "artifactId",
        "name",
        "description",
        "metadata",
        "extensions",
    ] {
        copy_into(artifact, &mut out, key);
    }
    let parts: Vec<Value> = list(artifact.get("parts")).iter().map(part_out).collect();
    out.insert("parts".into(), parts.into());
    Value::Object(out)
}

fn part_out(part: &Value) -> Value {
    let mut out = Map::new();
    copy_into(part, &mut out, "metadata");
    match part["kind"].as_str() {
        Some("text") => copy_into(part, &mut out, "text"),
        Some("data") => {
            out.insert("data".into(), json!({"data": part["data"]}));
        }
        _ => {
            let file = &part["file"];
            let mut proto = Map::new();
            for (from, to) in [
                ("uri", "fileWithUri"),
                ("bytes", "fileWithBytes"),
                ("mimeType", "mimeType"),
                ("name", "name"),
            ] {
                if let Some(value) = file.get(from) {
                    proto.insert(to.into(), value.clone());
                }
            }
            out.insert("file".into(), proto.into());
        }
    }
    Value::Object(out)
}

/// `{taskId, pushNotificationConfig}` as the resource `{name, pushNotificationConfig}`.
fn push_config_out(config: &Value) -> Value {
    let task = config["taskId"].as_str().unwrap_or_default();
    let inner = &config["pushNotificationConfig"];
    let id = inner["id"].as_str().unwrap_or_default();
    json!({
        "name": format!("tasks/{task}/pushNotificationConfigs/{id}"),
        "pushNotificationConfig": inner,
    })
}

fn message_in(message: &Value) -> Result<Value, ApiError> {
    let mut out = json!({"kind": "message"});
    for key in ["messageId", "contextId", "taskId", "metadata", "extensions"] {
        copy(message, &mut out, key);
    }
    let role = match message["role"].as_str() {
        Some("ROLE_USER") | Some("user") => "user",
        Some("ROLE_AGENT") | Some("agent") => "agent",
        _ => {
            return Err(ApiError::invalid_params(
                "message.role",
                "must be ROLE_USER",
            ));
        }
    };
    out["role"] = role.into();
    let parts = match message.get("content") {
        Some(Value::Array(parts)) => parts.iter().map(part_in).collect::<Result<Vec<_>, _>>()?,
        None => Vec::new(),
        Some(_) => {
            return Err(ApiError::invalid_params(
                "message.content",
                "must be an array",
            ));
        }
    };
    out["parts"] = parts.into();
    Ok(out)
}

fn part_in(part: &Value) -> Result<Value, ApiError> {
    let mut out = Map::new();
    copy_into(part, &mut out, "metadata");
    if let Some(text) = part.get("text") {
        out.insert("kind".into(), "text".into());
        out.insert("text".into(), text.clone());
    } else if let Some(data) = part.get("data") {
        out.insert("kind".into(), "data".into());
        out.insert(
            "data".into(),
            data.get("data").cloned().unwrap_or_else(|| json!({})),
        );
    } else if let Some(file) = part.get("file") {
        let mut rpc = Map::new();
        for (from, to) in [
            ("fileWithUri", "uri"),
            ("fileWithBytes", "bytes"),
            ("mimeType", "mimeType"),
            ("name", "name"),
        ] {
            if let Some(value) = file.get(from) {
                rpc.insert(to.into(), value.clone());
            }
        }
        out.insert("kind".into(), "file".into());
        out.insert("file".into(), rpc.into());
    } else {
        return Err(ApiError::invalid_params(
            "message.content",
            "a v0.3 part holds text, file or data",
        ));
    }
    Ok(Value::Object(out))
}

fn list(value: Option<&Value>) -> Vec<Value> {
    value.and_then(Value::as_array).cloned().unwrap_or_default()
}

fn copy(from: &Value, to: &mut Value, key: &str) {
    if let (Some(value), Some(to)) = (from.get(key), to.as_object_mut()) {
        to.insert(key.to_owned(), value.clone());
    }
}

fn copy_into(from: &Value, to: &mut Map<String, Value>, key: &str) {
    if let Some(value) = from.get(key) {
        to.insert(key.to_owned(), value.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_v03_rest_send_becomes_the_v03_json_rpc_params() {
        let body = json!({
            "message": {"messageId": "m", "role": "ROLE_USER", "content": [
                {"text": "hi"}, {"data": {"data": {"steps": 2}}},
                {"file": {"fileWithUri": "https://x/y", "mimeType": "text/plain", "name": "y"}},
            ]},
            "configuration": {"historyLength": 1,
                              "pushNotification": {"url": "https://h", "token": "t"}},
        });
        let rpc = request(Method::SendMessage, body).unwrap();
        assert_eq!(
            rpc["message"]["parts"],
            json!([{"kind": "text", "text": "hi"}, {"kind": "data", "data": {"steps": 2}},
                   {"kind": "file", "file": {"uri": "https://x/y", "mimeType": "text/plain", "name": "y"}}])
        );
        assert_eq!(rpc["message"]["role"], "user");
        assert_eq!(
            rpc["configuration"],
            json!({"historyLength": 1, "blocking": false,
                   "pushNotificationConfig": {"url": "https://h", "token": "t"}})
        );
        let bad = request(Method::SendMessage, json!({"message": {"content": []}}));
        assert!(bad.is_err());
    }

    #[test]
    fn a_v03_task_goes_out_as_v03_proto_json() {
        let task = json!({"kind": "task", "id": "t", "contextId": "c",
            "status": {"state": "canceled", "timestamp": "2026-01-01T00:00:00.000Z",
                       "message": {"kind": "message", "messageId": "a", "role": "agent",
                                   "parts": [{"kind": "text", "text": "x"}]}},
            "artifacts": [{"artifactId": "o", "parts": [
                {"kind": "data", "data": {"n": 1}},
                {"kind": "file", "file": {"bytes": "AA==", "mimeType": "a/b"}}]}]});
        let out = answer(Method::SendMessage, task);
        assert_eq!(out["task"]["status"]["state"], "TASK_STATE_CANCELLED");
        assert_eq!(
            out["task"]["status"]["message"],
            json!({"messageId": "a", "role": "ROLE_AGENT", "content": [{"text": "x"}]})
        );
        assert_eq!(
            out["task"]["artifacts"][0]["parts"],
            json!([{"data": {"data": {"n": 1}}},
                   {"file": {"fileWithBytes": "AA==", "mimeType": "a/b"}}])
        );
    }

    #[test]
    fn stream_items_and_push_configs_take_the_proto_shapes() {
        let update = json!({"kind": "status-update", "taskId": "t", "contextId": "c",
                            "final": true, "status": {"state": "input-required"}});
        assert_eq!(
            stream_response(update),
            json!({"statusUpdate": {"taskId": "t", "contextId": "c", "final": true,
                                    "status": {"state": "TASK_STATE_INPUT_REQUIRED"}}})
        );
        let config =
            json!({"taskId": "t", "pushNotificationConfig": {"id": "c", "url": "https://h"}});
        assert_eq!(
            answer(Method::GetPushConfig, config),
            json!({"name": "tasks/t/pushNotificationConfigs/c",
                   "pushNotificationConfig": {"id": "c", "url": "https://h"}})
        );
        let created = request(
            Method::CreatePushConfig,
            json!({"taskId": "t", "parent": "tasks/t", "configId": "c",
                   "config": {"pushNotificationConfig": {"url": "https://h"}}}),
        )
        .unwrap();
        assert_eq!(
            created,
            json!({"taskId": "t", "pushNotificationConfig": {"url": "https://h", "id": "c"}})
        );
        assert_eq!(
            request(Method::GetPushConfig, json!({"taskId": "t", "id": "c"})).unwrap(),
            json!({"id": "t", "pushNotificationConfigId": "c"})
        );
    }
}
