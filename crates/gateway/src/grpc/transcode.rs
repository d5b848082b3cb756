//! Protobuf messages to and from the ProtoJSON the other bindings speak. The official
//! `a2a-pb` crate has each A2A message twice, as plain prost types (what tonic's
//! service sends and receives) and as ProtoJSON-capable twins (serde through pbjson);
//! both have the same wire form, so a message crosses by being encoded as one and
//! decoded as the other.

use a2a_pb::{proto, protojson};
use prost::Message;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::ApiError;

/// A protobuf message with its ProtoJSON twin.
pub(crate) trait Twin: Message + Default + Sized {
    type Json: Message + Default + Serialize + DeserializeOwned;
}

macro_rules! twins {
    ($($name:ident),* $(,)?) => {
        $(impl Twin for proto::$name {
            type Json = protojson::$name;
        })*
    };
}

twins!(
    SendMessageRequest,
    SendMessageResponse,
    GetTaskRequest,
    Task,
    ListTasksRequest,
    ListTasksResponse,
    CancelTaskRequest,
    SubscribeToTaskRequest,
    StreamResponse,
    TaskPushNotificationConfig,
    GetTaskPushNotificationConfigRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse,
    DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest,
    AgentCard,
);

/// A client's request as the params the JSON-RPC binding would carry. A message that
/// has no ProtoJSON form (a timestamp out of range, a number JSON cannot hold) is the
/// caller's bad params.
pub(crate) fn to_params<P: Twin>(message: &P) -> Result<Value, ApiError> {
    let twin = P::Json::decode(message.encode_to_vec().as_slice())
        .map_err(|e| ApiError::invalid_params("", format!("the request cannot be read: {e}")))?;
    let mut params = serde_json::to_value(twin)
        .map_err(|e| ApiError::invalid_params("", format!("the request has no JSON form: {e}")))?;
    whole_numbers_as_integers(&mut params);
    Ok(params)
}

/// Protobuf's `Struct` holds every number as a double, which ProtoJSON writes as `2.0`;
/// JSON-RPC clients send `2`. A whole number a double holds exactly is written as an
/// integer, so that a skill reading `{"steps": 2}` reads the same from either binding.
fn whole_numbers_as_integers(value: &mut Value) {
    /// Beyond 2^53 a double no longer holds every integer.
    const EXACT: f64 = 9_007_199_254_740_992.0;
    match value {
        Value::Number(n) => {
            if let Some(f) = n.as_f64().filter(|_| n.is_f64())
                && f.fract() == 0.0
                && f.abs() <= EXACT
            {
                #[expect(clippy::cast_possible_truncation, reason = "whole and within 2^53")]
                let whole = f as i64;
                *n = whole.into();
            }
        }
        Value::Array(items) => items.iter_mut().for_each(whole_numbers_as_integers),
        Value::Object(object) => object.values_mut().for_each(whole_numbers_as_integers),
        _ => {}
    }
}

/// An answer the other bindings would send as `json`, as its protobuf message. What
/// fundi itself wrote always fits the proto; a failure here is fundi's own bug.
pub(crate) fn from_result<P: Twin>(json: &str) -> Result<P, ApiError> {
    let twin: P::Json = serde_json::from_str(json)
        .map_err(|e| ApiError::internal(format_args!("an answer does not fit the proto: {e}")))?;
    P::decode(twin.encode_to_vec().as_slice()).map_err(|e| {
        ApiError::internal(format_args!("an answer does not decode as its proto: {e}"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_request_becomes_the_params_json_rpc_carries() {
        let request = proto::GetTaskRequest {
            id: "t-1".into(),
            history_length: Some(2),
            ..Default::default()
        };
        assert_eq!(
            to_params(&request).unwrap(),
            json!({"id": "t-1", "historyLength": 2})
        );
    }

    #[test]
    fn whole_numbers_in_data_stay_integers() {
        let request: proto::SendMessageRequest = from_result(
            &json!({"message": {"messageId": "m", "role": "ROLE_USER",
                                "parts": [{"data": {"steps": 2, "ratio": 0.5, "big": 1e300}}]}})
            .to_string(),
        )
        .unwrap();
        let params = to_params(&request).unwrap();
        let data = &params["message"]["parts"][0]["data"];
        assert!(data["steps"].is_i64(), "{data}");
        assert_eq!(data["steps"], 2);
        assert_eq!(data["ratio"], 0.5);
        assert!(data["big"].is_f64());
    }

    #[test]
    fn an_answer_comes_back_field_for_field() {
        let json = json!({"task": {
            "id": "t-1",
            "contextId": "c-1",
            "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "2026-01-02T03:04:05.678Z"},
            "artifacts": [{"artifactId": "a", "parts": [{"text": "hi"}, {"data": {"n": 1}}]}],
            "metadata": {"k": "v"},
        }});
        let answer: proto::SendMessageResponse = from_result(&json.to_string()).unwrap();
        let Some(proto::send_message_response::Payload::Task(task)) = &answer.payload else {
            panic!("not a task: {answer:?}");
        };
        assert_eq!(
            task.status.as_ref().unwrap().state,
            proto::TaskState::Completed as i32
        );
        assert_eq!(task.artifacts[0].parts.len(), 2);
        let mut back = to_params(&answer).unwrap();
        // The same instant, though pbjson writes UTC as +00:00.
        let instant =
            |v: &Value| chrono::DateTime::parse_from_rfc3339(v.as_str().unwrap()).unwrap();
        let (mut json, timestamp) = (json.clone(), "/task/status/timestamp");
        assert_eq!(
            instant(back.pointer(timestamp).unwrap()),
            instant(json.pointer(timestamp).unwrap())
        );
        back["task"]["status"]["timestamp"].take();
        json["task"]["status"]["timestamp"].take();
        assert_eq!(back, json);
    }

    #[test]
    fn what_is_not_the_proto_is_an_internal_error() {
        let error = from_result::<proto::Task>(r#"{"status": {"state": "NOT_A_STATE"}}"#);
        assert!(matches!(error, Err(ApiError::Internal)), "{error:?}");
    }
}
