//! Calls to a peer whose card offers only A2A v0.3 (JSON-RPC): v0.3 method names, the
//! message sent in its kind-tagged v0.3 form, and every answer read back as v1.0
//! (`fundi_runtime::model::v03`), so that delegation itself only sees v1.0.

use fundi_runtime::Message;
use fundi_runtime::model::v03;
use serde_json::{Value, json};

/// The v0.3 name of a v1.0 method.
pub(crate) fn method(v1: &str) -> &str {
    match v1 {
        "SendMessage" => "message/send",
        "GetTask" => "tasks/get",
        "CancelTask" => "tasks/cancel",
        "SubscribeToTask" => "tasks/resubscribe",
        "GetExtendedAgentCard" => "agent/getAuthenticatedExtendedCard",
        "CreateTaskPushNotificationConfig" => "tasks/pushNotificationConfig/set",
        "GetTaskPushNotificationConfig" => "tasks/pushNotificationConfig/get",
        "ListTaskPushNotificationConfigs" => "tasks/pushNotificationConfig/list",
        "DeleteTaskPushNotificationConfig" => "tasks/pushNotificationConfig/delete",
        other => other,
    }
}

/// `message/send`'s params: the message in v0.3 form, answered at once.
pub(crate) fn send_params(message: &Message) -> Value {
    let mut message = v03::message_out(json!(message));
    message["kind"] = json!("message");
    json!({"message": message, "configuration": {"blocking": false}})
}

/// A v0.3 result (a task, a message, an update) as the v1.0 `StreamResponse` carrying
/// it; the error says what is not v0.3.
pub(crate) fn event(result: Value) -> Result<Value, String> {
    v03::event_in(result).map_err(|e| format!("a v0.3 answer that cannot be read: {e}"))
}

/// A v0.3 task as v1.0.
pub(crate) fn task(result: Value) -> Result<Value, String> {
    v03::task_in(result).map_err(|e| format!("a v0.3 task that cannot be read: {e}"))
}

#[cfg(test)]
mod tests {
    use fundi_runtime::Part;

    use super::*;

    #[test]
    fn a_message_goes_out_kind_tagged_and_a_task_comes_back_as_v1() {
        let mut message = Message::user(vec![Part::text("hi"), Part::data(json!({"n": 1}))]);
        message.message_id = "m-1".into();
        let params = send_params(&message);
        assert_eq!(params["message"]["kind"], "message");
        assert_eq!(params["message"]["role"], "user");
        assert_eq!(
            params["message"]["parts"][0],
            json!({"kind": "text", "text": "hi"})
        );
        assert_eq!(params["configuration"]["blocking"], false);
        let task = json!({"kind": "task", "id": "t", "contextId": "c",
            "status": {"state": "input-required", "message": {"kind": "message",
                "messageId": "a", "role": "agent", "parts": [{"kind": "text", "text": "?"}]}}});
        let v1 = event(task).unwrap();
        assert_eq!(v1["task"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
        assert_eq!(v1["task"]["status"]["message"]["role"], "ROLE_AGENT");
        assert_eq!(method("SubscribeToTask"), "tasks/resubscribe");
    }
}
