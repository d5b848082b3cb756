//! The v0.3 dialect on the server's side: a v0.3 send's params become v1.0 params on the
//! way in; results go out through `fundi_runtime::model::v03`. The runtime only ever
//! sees v1.0.

pub(crate) mod rest;

use fundi_runtime::model::v03::message_in;
pub(crate) use fundi_runtime::model::v03::{stream_item_out as stream_item, task_out as task};
use serde_json::{Map, Value, json};

use crate::error::ApiError;

/// `MessageSendParams` to `SendMessageRequest`.
pub(crate) fn send_params(mut params: Value) -> Result<Value, ApiError> {
    if !params.is_object() {
        return Err(ApiError::invalid_params("params", "must be an object"));
    }
    let message = params
        .get_mut("message")
        .map(Value::take)
        .ok_or_else(|| ApiError::invalid_params("message", "is required"))?;
    let message = message_in(message).map_err(|e| ApiError::invalid_params(e.field, e.reason))?;
    let mut out = json!({"message": message});
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
}
