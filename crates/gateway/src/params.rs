//! v1.0 `params` of each method, decoded with the path of whatever is wrong.
//! Field names are lowerCamelCase with snake_case accepted (ProtoJSON); unknown fields
//! are ignored; `null` means absent.

use chrono::{DateTime, Utc};
use fundi_runtime::model::limits::MAX_ID_LEN;
use fundi_runtime::model::timestamp;
use fundi_runtime::{Message, TaskState};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};
use serde_json::{Value, json};

use crate::error::ApiError;

/// Decodes params (absent params are an empty object), naming the failing field.
pub(crate) fn decode<T: DeserializeOwned>(params: Value) -> Result<T, ApiError> {
    let params = match params {
        Value::Null => json!({}),
        params @ Value::Object(_) => params,
        _ => return Err(ApiError::invalid_params("params", "must be an object")),
    };
    serde_path_to_error::deserialize(params).map_err(|e| {
        let path = e.path().to_string();
        let field = if path == "." { String::new() } else { path };
        ApiError::invalid_params(field, e.inner().to_string())
    })
}

/// Refuses a request that names a tenant: fundi serves none (its card's interfaces name
/// none, so a client of the specification sends none), and a caller that asks for one
/// expects a separation fundi does not make.
pub(crate) fn check_tenant(params: &Value) -> Result<(), ApiError> {
    match params.get("tenant") {
        None | Some(Value::Null) => Ok(()),
        Some(Value::String(tenant)) if tenant.is_empty() => Ok(()),
        Some(Value::String(tenant)) => Err(ApiError::invalid_params(
            "tenant",
            format!(
                "tenant {:?} is not served here: this agent serves no tenants (its card's \
                 interfaces name none), so send none",
                crate::clip::clip(tenant)
            ),
        )),
        Some(_) => Err(ApiError::invalid_params("tenant", "must be a string")),
    }
}

/// Refuses a member of `params` that is present but not an object: serde would read an
/// array as a struct's fields in order (`"configuration": []` as an empty configuration).
pub(crate) fn require_objects(params: &Value, members: &[&str]) -> Result<(), ApiError> {
    for member in members {
        match params.get(member) {
            None | Some(Value::Null | Value::Object(_)) => {}
            Some(other) => {
                let kind = match other {
                    Value::Array(_) => "an array",
                    Value::String(_) => "a string",
                    Value::Number(_) => "a number",
                    _ => "a boolean",
                };
                return Err(ApiError::invalid_params(
                    *member,
                    format!("must be an object, got {kind}"),
                ));
            }
        }
    }
    Ok(())
}

/// `SendMessageRequest`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SendMessageParams {
    pub(crate) message: Message,
    #[serde(default)]
    pub(crate) configuration: Option<SendConfiguration>,
}

/// `SendMessageConfiguration`.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SendConfiguration {
    #[serde(default, alias = "task_push_notification_config")]
    #[serde(alias = "pushNotificationConfig", alias = "push_notification_config")]
    pub(crate) task_push_notification_config: Option<Value>,
    #[serde(default, alias = "history_length")]
    pub(crate) history_length: Option<i64>,
    #[serde(default, alias = "return_immediately")]
    pub(crate) return_immediately: Option<bool>,
}

/// `GetTaskRequest`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct GetTaskParams {
    #[serde(deserialize_with = "task_id")]
    pub(crate) id: String,
    #[serde(default, alias = "history_length")]
    pub(crate) history_length: Option<i64>,
}

/// `CancelTaskRequest` and `SubscribeToTaskRequest`.
#[derive(Debug, Deserialize)]
pub(crate) struct TaskIdParams {
    #[serde(deserialize_with = "task_id")]
    pub(crate) id: String,
}

/// A task id as a client names it: at most [`MAX_ID_LEN`] bytes, so that a refusal
/// never echoes more (a longer one names no task fundi made).
fn task_id<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    let id = String::deserialize(deserializer)?;
    match id.len() > MAX_ID_LEN {
        true => Err(serde::de::Error::custom(format!(
            "is {} bytes; at most {MAX_ID_LEN} are accepted",
            id.len()
        ))),
        false => Ok(id),
    }
}

/// `ListTasksRequest`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ListTasksParams {
    #[serde(default, alias = "context_id")]
    pub(crate) context_id: Option<String>,
    #[serde(default, deserialize_with = "state_filter")]
    pub(crate) status: Option<TaskState>,
    #[serde(default, alias = "page_size")]
    pub(crate) page_size: Option<i64>,
    #[serde(default, alias = "page_token")]
    pub(crate) page_token: Option<String>,
    #[serde(default, alias = "history_length")]
    pub(crate) history_length: Option<i64>,
    #[serde(
        default,
        alias = "status_timestamp_after",
        deserialize_with = "opt_timestamp"
    )]
    pub(crate) status_timestamp_after: Option<DateTime<Utc>>,
    #[serde(default, alias = "include_artifacts")]
    pub(crate) include_artifacts: Option<bool>,
}

/// `TASK_STATE_UNSPECIFIED` (or 0) means "no filter"; other names and numbers filter.
fn state_filter<'de, D: Deserializer<'de>>(d: D) -> Result<Option<TaskState>, D::Error> {
    match Option::<Value>::deserialize(d)? {
        None => Ok(None),
        Some(Value::String(s)) if s == "TASK_STATE_UNSPECIFIED" => Ok(None),
        Some(Value::Number(n)) if n.as_u64() == Some(0) => Ok(None),
        Some(other) => TaskState::deserialize(other)
            .map(Some)
            .map_err(serde::de::Error::custom),
    }
}

fn opt_timestamp<'de, D: Deserializer<'de>>(d: D) -> Result<Option<DateTime<Utc>>, D::Error> {
    match Option::<String>::deserialize(d)? {
        None => Ok(None),
        Some(s) => timestamp::parse(&s)
            .map(Some)
            .map_err(serde::de::Error::custom),
    }
}

/// A `historyLength`: absent is "no limit", negative is an error.
pub(crate) fn history_length(field: &str, value: Option<i64>) -> Result<Option<usize>, ApiError> {
    match value {
        None => Ok(None),
        Some(n) if n >= 0 => Ok(Some(usize::try_from(n).unwrap_or(usize::MAX))),
        Some(n) => Err(ApiError::invalid_params(
            field,
            format!("must be zero or more, got {n}"),
        )),
    }
}
