//! Push configs on the wire: v1.0's flat `TaskPushNotificationConfig` and v0.3's nested
//! `{taskId, pushNotificationConfig}`, in and out.

use fundi_runtime::TaskId;
use fundi_runtime::store::{PushAuthentication, PushConfig, PushFormat};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::dialect::Dialect;
use crate::error::ApiError;
use crate::params::decode;

/// Longest accepted config id, token and credentials, in bytes.
const MAX_ID_LEN: usize = 256;
const MAX_SECRET_LEN: usize = 4096;
/// Longest accepted webhook URL.
const MAX_URL_LEN: usize = 2048;

/// The fields of a config, whichever dialect they came in.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ConfigFields {
    #[serde(default)]
    pub(crate) id: Option<String>,
    #[serde(default)]
    pub(crate) url: Option<String>,
    #[serde(default)]
    pub(crate) token: Option<String>,
    #[serde(default)]
    pub(crate) authentication: Option<AuthFields>,
}

/// v1.0 `{scheme, credentials}` or v0.3 `{schemes: [...], credentials}`.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct AuthFields {
    #[serde(default)]
    scheme: Option<String>,
    #[serde(default)]
    schemes: Option<Vec<String>>,
    #[serde(default)]
    credentials: Option<String>,
}

/// A decoded request naming a task and (maybe) a config.
#[derive(Debug)]
pub(crate) struct ConfigRef {
    pub(crate) task_id: TaskId,
    pub(crate) id: Option<String>,
}

/// Create: the task and the config fields.
pub(crate) fn create_params(
    params: Value,
    dialect: Dialect,
) -> Result<(TaskId, ConfigFields), ApiError> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct V1 {
        #[serde(alias = "task_id")]
        task_id: String,
        #[serde(flatten)]
        fields: ConfigFields,
    }
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct V03 {
        task_id: String,
        push_notification_config: ConfigFields,
    }
    match dialect {
        Dialect::V1 => {
            let p: V1 = decode(params)?;
            Ok((task(p.task_id, "taskId")?, p.fields))
        }
        Dialect::V03 => {
            let p: V03 = decode(params)?;
            Ok((task(p.task_id, "taskId")?, p.push_notification_config))
        }
    }
}

/// Get and Delete: v1.0 `{taskId, id}`, v0.3 `{id: <task id>, pushNotificationConfigId}`.
pub(crate) fn ref_params(params: Value, dialect: Dialect) -> Result<ConfigRef, ApiError> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct V1 {
        #[serde(alias = "task_id")]
        task_id: String,
        #[serde(default)]
        id: Option<String>,
    }
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct V03 {
        id: String,
        #[serde(default)]
        push_notification_config_id: Option<String>,
    }
    match dialect {
        Dialect::V1 => {
            let p: V1 = decode(params)?;
            Ok(ConfigRef {
                task_id: task(p.task_id, "taskId")?,
                id: p.id.filter(|id| !id.is_empty()),
            })
        }
        Dialect::V03 => {
            let p: V03 = decode(params)?;
            Ok(ConfigRef {
                task_id: task(p.id, "id")?,
                id: p.push_notification_config_id.filter(|id| !id.is_empty()),
            })
        }
    }
}

/// List: v1.0 `{taskId}`, v0.3 `{id: <task id>}`.
pub(crate) fn list_params(params: Value, dialect: Dialect) -> Result<TaskId, ApiError> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct V1 {
        #[serde(alias = "task_id")]
        task_id: String,
    }
    #[derive(Deserialize)]
    struct V03 {
        id: String,
    }
    match dialect {
        Dialect::V1 => task(decode::<V1>(params)?.task_id, "taskId"),
        Dialect::V03 => task(decode::<V03>(params)?.id, "id"),
    }
}

fn task(id: String, field: &str) -> Result<TaskId, ApiError> {
    if id.is_empty() {
        return Err(ApiError::invalid_params(field, "is required"));
    }
    Ok(TaskId::from(id))
}

/// A config from its fields, checked for shape (the URL's address is checked apart).
/// Without an id, the config gets the task's id (the SDKs' convention: one default
/// config per task).
pub(crate) fn build(
    task_id: &TaskId,
    fields: ConfigFields,
    dialect: Dialect,
    prefix: &str,
) -> Result<PushConfig, ApiError> {
    let field = |name: &str| format!("{prefix}{name}");
    let url = fields
        .url
        .filter(|u| !u.is_empty())
        .ok_or_else(|| ApiError::invalid_params(field("url"), "is required"))?;
    if url.len() > MAX_URL_LEN {
        return Err(ApiError::invalid_params(
            field("url"),
            format!("is longer than {MAX_URL_LEN} bytes"),
        ));
    }
    let id = fields
        .id
        .filter(|id| !id.is_empty())
        .unwrap_or_else(|| task_id.to_string());
    if id.len() > MAX_ID_LEN || id.chars().any(char::is_control) {
        return Err(ApiError::invalid_params(
            field("id"),
            format!("must be at most {MAX_ID_LEN} bytes without control characters"),
        ));
    }
    let token = fields.token.filter(|t| !t.is_empty());
    if let Some(token) = &token
        && (token.len() > MAX_SECRET_LEN || !header_safe(token))
    {
        return Err(ApiError::invalid_params(
            field("token"),
            "must be printable ASCII of at most 4096 bytes",
        ));
    }
    let authentication = match fields.authentication {
        None => None,
        Some(auth) => {
            let scheme = auth
                .scheme
                .or_else(|| auth.schemes.and_then(|s| s.into_iter().next()))
                .filter(|s| !s.is_empty())
                .ok_or_else(|| {
                    ApiError::invalid_params(field("authentication.scheme"), "is required")
                })?;
            let credentials = auth.credentials.unwrap_or_default();
            if !scheme
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-._~+".contains(&b))
                || credentials.len() > MAX_SECRET_LEN
                || !header_safe(&credentials)
            {
                return Err(ApiError::invalid_params(
                    field("authentication"),
                    "scheme must be an HTTP auth scheme name and credentials printable ASCII",
                ));
            }
            // Scheme names are case-insensitive; send the usual spelling.
            let scheme = if scheme.eq_ignore_ascii_case("bearer") {
                "Bearer".to_owned()
            } else {
                scheme
            };
            Some(PushAuthentication {
                scheme,
                credentials,
            })
        }
    };
    Ok(PushConfig {
        task_id: task_id.clone(),
        id,
        url,
        token,
        authentication,
        format: match dialect {
            Dialect::V1 => PushFormat::StreamResponse,
            Dialect::V03 => PushFormat::V03Task,
        },
        created_at: chrono::Utc::now(),
    })
}

fn header_safe(text: &str) -> bool {
    text.bytes().all(|b| (0x20..0x7f).contains(&b))
}

/// A config as the dialect shows it.
pub(crate) fn encode(config: &PushConfig, dialect: Dialect) -> Value {
    match dialect {
        Dialect::V1 => {
            let mut out = json!({"id": config.id, "taskId": config.task_id, "url": config.url});
            if let Some(token) = &config.token {
                out["token"] = json!(token);
            }
            if let Some(auth) = &config.authentication {
                out["authentication"] =
                    json!({"scheme": auth.scheme, "credentials": auth.credentials});
            }
            out
        }
        Dialect::V03 => {
            let mut inner = json!({"id": config.id, "url": config.url});
            if let Some(token) = &config.token {
                inner["token"] = json!(token);
            }
            if let Some(auth) = &config.authentication {
                inner["authentication"] =
                    json!({"schemes": [auth.scheme], "credentials": auth.credentials});
            }
            json!({"taskId": config.task_id, "pushNotificationConfig": inner})
        }
    }
}
