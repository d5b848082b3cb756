//! The two wire dialects: A2A v1.0 (ProtoJSON) and v0.3 (kind-tagged JSON).

/// Which protocol version a request speaks; its response speaks the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// A2A v1.0: PascalCase methods, ProtoJSON shapes.
    V1,
    /// A2A v0.3: slash-named methods, `kind`-tagged shapes.
    V03,
}

/// What a method does, independent of its dialect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// SendMessage / message/send.
    SendMessage,
    /// SendStreamingMessage / message/stream.
    SendStreamingMessage,
    /// GetTask / tasks/get.
    GetTask,
    /// ListTasks (v1.0 only).
    ListTasks,
    /// CancelTask / tasks/cancel.
    CancelTask,
    /// SubscribeToTask / tasks/resubscribe.
    SubscribeToTask,
    /// Create/set push config.
    CreatePushConfig,
    /// Get push config.
    GetPushConfig,
    /// List push configs.
    ListPushConfigs,
    /// Delete push config.
    DeletePushConfig,
    /// GetExtendedAgentCard / agent/getAuthenticatedExtendedCard.
    GetExtendedAgentCard,
}

impl Method {
    /// The method and dialect a JSON-RPC method name stands for.
    pub fn parse(name: &str) -> Option<(Method, Dialect)> {
        use Dialect::{V1, V03};
        use Method::*;
        Some(match name {
            "SendMessage" => (SendMessage, V1),
            "SendStreamingMessage" => (SendStreamingMessage, V1),
            "GetTask" => (GetTask, V1),
            "ListTasks" => (ListTasks, V1),
            "CancelTask" => (CancelTask, V1),
            "SubscribeToTask" => (SubscribeToTask, V1),
            "CreateTaskPushNotificationConfig" => (CreatePushConfig, V1),
            "GetTaskPushNotificationConfig" => (GetPushConfig, V1),
            "ListTaskPushNotificationConfigs" => (ListPushConfigs, V1),
            "DeleteTaskPushNotificationConfig" => (DeletePushConfig, V1),
            "GetExtendedAgentCard" => (GetExtendedAgentCard, V1),
            "message/send" => (SendMessage, V03),
            "message/stream" => (SendStreamingMessage, V03),
            "tasks/get" => (GetTask, V03),
            "tasks/cancel" => (CancelTask, V03),
            "tasks/resubscribe" => (SubscribeToTask, V03),
            "tasks/pushNotificationConfig/set" => (CreatePushConfig, V03),
            "tasks/pushNotificationConfig/get" => (GetPushConfig, V03),
            "tasks/pushNotificationConfig/list" => (ListPushConfigs, V03),
            "tasks/pushNotificationConfig/delete" => (DeletePushConfig, V03),
            "agent/getAuthenticatedExtendedCard" => (GetExtendedAgentCard, V03),
            _ => return None,
        })
    }

    /// The v1.0 name (metrics and spans name methods the same in both dialects).
    pub fn name(self) -> &'static str {
        match self {
            Method::SendMessage => "SendMessage",
            Method::SendStreamingMessage => "SendStreamingMessage",
            Method::GetTask => "GetTask",
            Method::ListTasks => "ListTasks",
            Method::CancelTask => "CancelTask",
            Method::SubscribeToTask => "SubscribeToTask",
            Method::CreatePushConfig => "CreateTaskPushNotificationConfig",
            Method::GetPushConfig => "GetTaskPushNotificationConfig",
            Method::ListPushConfigs => "ListTaskPushNotificationConfigs",
            Method::DeletePushConfig => "DeleteTaskPushNotificationConfig",
            Method::GetExtendedAgentCard => "GetExtendedAgentCard",
        }
    }

    /// Whether the method answers with an SSE stream.
    pub fn is_streaming(self) -> bool {
        matches!(self, Method::SendStreamingMessage | Method::SubscribeToTask)
    }
}

/// Normalizes an `A2A-Version` value to `Major.Minor` (`"1.0.1"` is `"1.0"`).
pub(crate) fn normalize_version(raw: &str) -> String {
    let raw = raw.trim();
    let mut parts = raw.split('.');
    match (parts.next(), parts.next()) {
        (Some(major), Some(minor)) => format!("{major}.{minor}"),
        _ => raw.to_owned(),
    }
}

/// Whether this server speaks the (normalized) version.
pub(crate) fn is_supported_version(version: &str) -> bool {
    matches!(version, "1.0" | "0.3")
}
