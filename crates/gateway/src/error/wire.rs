//! How each `ApiError` goes out: its JSON-RPC code and message, the A2A `ErrorInfo`
//! (reason and metadata) and `BadRequest` field violation in `data`, and, for the few
//! that are not HTTP 200, the status and headers. The one place errors meet the wire.

use axum::http::StatusCode;
use serde_json::{Value, json};

use super::{ApiError, REFUSED};
use crate::clip::{DETAIL_CHARS, clip, clip_to};
use crate::dialect::Dialect;

/// The realm in `WWW-Authenticate` challenges.
const REALM: &str = "fundi";

/// How a refusal goes out at the HTTP layer, beside its JSON-RPC body.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct HttpRefusal {
    pub(crate) status: StatusCode,
    pub(crate) www_authenticate: Option<String>,
    pub(crate) retry_after_secs: Option<u64>,
}

/// An error as it goes out.
pub(super) struct Wire {
    pub(super) code: i32,
    pub(super) message: String,
    /// `ErrorInfo.reason` for A2A errors.
    pub(super) reason: Option<&'static str>,
    /// `ErrorInfo.metadata` (string values only, as the proto's map<string,string>).
    pub(super) metadata: Vec<(&'static str, String)>,
    /// `BadRequest.fieldViolations` for invalid params: (field, description).
    pub(super) violation: Option<(String, String)>,
    pub(super) http: Option<HttpRefusal>,
}

impl Wire {
    fn plain(code: i32, message: String) -> Wire {
        Wire {
            code,
            message,
            reason: None,
            metadata: Vec::new(),
            violation: None,
            http: None,
        }
    }

    fn a2a(code: i32, reason: &'static str, message: String) -> Wire {
        Wire {
            reason: Some(reason),
            ..Wire::plain(code, message)
        }
    }

    /// A refusal at the HTTP layer with `status`.
    fn refused(status: StatusCode, reason: &'static str, message: String) -> Wire {
        Wire {
            http: Some(HttpRefusal {
                status,
                www_authenticate: None,
                retry_after_secs: None,
            }),
            ..Wire::a2a(REFUSED, reason, message)
        }
    }

    fn with(mut self, key: &'static str, value: impl Into<String>) -> Wire {
        self.metadata.push((key, value.into()));
        self
    }

    fn challenge(mut self, challenge: String) -> Wire {
        if let Some(http) = &mut self.http {
            http.www_authenticate = Some(challenge);
        }
        self
    }
}

impl Wire {
    /// How `error` goes out.
    pub(super) fn of(error: &ApiError) -> Wire {
        match error {
            ApiError::Parse(detail) => {
                Wire::plain(-32700, format!("Invalid JSON payload: {detail}"))
            }
            ApiError::InvalidRequest(detail) => Wire::plain(
                -32600,
                format!("Request payload validation error: {detail}"),
            ),
            ApiError::MalformedHttp(detail) => Wire {
                http: Some(HttpRefusal {
                    status: StatusCode::BAD_REQUEST,
                    www_authenticate: None,
                    retry_after_secs: None,
                }),
                ..Wire::plain(
                    -32600,
                    format!("Request payload validation error: {detail}"),
                )
            },
            ApiError::BodyTooLarge { limit } => Wire {
                http: Some(HttpRefusal {
                    status: StatusCode::PAYLOAD_TOO_LARGE,
                    www_authenticate: None,
                    retry_after_secs: None,
                }),
                ..Wire::plain(
                    -32600,
                    format!(
                        "Request payload validation error: the request body is larger than \
                         {limit} bytes (gateway.max-body-bytes)"
                    ),
                )
            },
            ApiError::BodyTimedOut { limit_ms } => Wire {
                http: Some(HttpRefusal {
                    status: StatusCode::REQUEST_TIMEOUT,
                    www_authenticate: None,
                    retry_after_secs: None,
                }),
                ..Wire::plain(
                    -32600,
                    format!(
                        "Request payload validation error: the request body was not received \
                         within {limit_ms} ms (gateway.body-read-timeout-ms)"
                    ),
                )
            },
            ApiError::BodiesBusy => {
                let mut wire = Wire::refused(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "UNAVAILABLE",
                    "Unavailable: the server holds as many request bodies as it may \
                     (gateway.max-buffered-body-bytes); retry after 1 s"
                        .into(),
                );
                if let Some(http) = &mut wire.http {
                    http.retry_after_secs = Some(1);
                }
                wire
            }
            ApiError::CutOff => {
                let mut wire = Wire::refused(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "UNAVAILABLE",
                    "Unavailable: this node has lost the database and takes no work until it \
                     holds it again; retry after 1 s, or send the request to another node"
                        .into(),
                );
                if let Some(http) = &mut wire.http {
                    http.retry_after_secs = Some(1);
                }
                wire
            }
            ApiError::MethodNotFound(method) => {
                Wire::plain(-32601, format!("Method not found: {}", clip(method)))
            }
            ApiError::NoRoute { request, rest } => {
                let rest = match rest {
                    true => {
                        "; the HTTP+JSON binding at POST /message:send, POST /message:stream, \
                         GET /tasks, GET /tasks/{id}, POST /tasks/{id}:cancel, \
                         POST /tasks/{id}:subscribe and /tasks/{id}/pushNotificationConfigs"
                    }
                    false => "; the HTTP+JSON binding is off here (gateway.rest)",
                };
                Wire::plain(
                    -32601,
                    format!(
                        "No route: {}. This server's A2A endpoints are JSON-RPC at POST /a2a \
                         (or POST /){rest}; the agent card is at \
                         /.well-known/agent-card.json (docs/a2a.md)",
                        clip(request)
                    ),
                )
            }
            ApiError::InvalidParams { field, detail } => {
                let (field, detail) = (clip(field), clip_to(detail, DETAIL_CHARS));
                let message = match field.is_empty() {
                    true => format!("Invalid parameters: {detail}"),
                    false => format!("Invalid parameters: {field}: {detail}"),
                };
                Wire {
                    violation: Some((field, detail)),
                    ..Wire::plain(-32602, message)
                }
            }
            ApiError::Internal => Wire::plain(-32603, "Internal error".into()),
            ApiError::NotFound(detail) => {
                Wire::plain(-32602, format!("Not found: {}", clip(detail)))
            }
            ApiError::Conflict(detail) => {
                Wire::plain(-32602, format!("Not possible now: {}", clip(detail)))
            }
            ApiError::Denied(detail) => {
                Wire::plain(-32602, format!("Not allowed: {}", clip(detail)))
            }
            ApiError::Unavailable => Wire::plain(
                -32603,
                "Internal error: the server cannot answer now; try again later".into(),
            ),
            ApiError::TimedOut(limit) => Wire::plain(
                -32603,
                format!(
                    "Internal error: the request took longer than {} ms",
                    limit.as_millis()
                ),
            ),
            ApiError::TaskNotFound { task_id } => Wire::a2a(
                -32001,
                "TASK_NOT_FOUND",
                format!("Task not found: {}", clip(task_id)),
            )
            .with("taskId", clip(task_id)),
            ApiError::PushConfigNotFound { task_id, config_id } => Wire::a2a(
                -32001,
                "TASK_NOT_FOUND",
                format!(
                    "Task not found: task {} has no push notification config {:?}",
                    clip(task_id),
                    clip(config_id)
                ),
            )
            .with("taskId", clip(task_id))
            .with("configId", clip(config_id)),
            ApiError::TaskNotCancelable { task_id, state } => Wire::a2a(
                -32002,
                "TASK_NOT_CANCELABLE",
                format!(
                    "Task cannot be canceled: task {} is already {state}",
                    clip(task_id)
                ),
            )
            .with("taskId", clip(task_id))
            .with("state", *state),
            ApiError::PushNotSupported => Wire::a2a(
                -32003,
                "PUSH_NOTIFICATION_NOT_SUPPORTED",
                "Push Notification is not supported by this agent".into(),
            ),
            ApiError::ExtendedCardNotConfigured => Wire::a2a(
                -32007,
                "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
                "Extended agent card not configured: this agent serves none \
                 (gateway.extended-card is false)"
                    .into(),
            ),
            ApiError::Unsupported { detail, task_id } => {
                let wire = Wire::a2a(
                    -32004,
                    "UNSUPPORTED_OPERATION",
                    format!(
                        "This operation is not supported: {}",
                        clip_to(detail, DETAIL_CHARS)
                    ),
                );
                match task_id {
                    Some(id) => wire.with("taskId", clip(id)),
                    None => wire,
                }
            }
            ApiError::VersionNotSupported {
                requested,
                supported,
            } => Wire::a2a(
                -32009,
                "VERSION_NOT_SUPPORTED",
                format!(
                    "A2A version {} is not supported (supported: {})",
                    clip(requested),
                    supported.replace(',', ", ")
                ),
            )
            .with("requestedVersion", clip(requested))
            .with("supportedVersions", *supported),
            ApiError::Unauthenticated { detail, invalid } => {
                let wire = Wire::refused(
                    StatusCode::UNAUTHORIZED,
                    "UNAUTHENTICATED",
                    format!("Unauthenticated: {detail}"),
                );
                wire.challenge(match invalid {
                    false => format!("Bearer realm=\"{REALM}\""),
                    true => format!(
                        "Bearer realm=\"{REALM}\", error=\"invalid_token\", \
                         error_description=\"{}\"",
                        quoted(detail)
                    ),
                })
            }
            ApiError::KeysUnavailable => Wire::refused(
                StatusCode::SERVICE_UNAVAILABLE,
                "UNAVAILABLE",
                "Credentials cannot be checked now: the signing keys are unavailable".into(),
            ),
            ApiError::InsufficientScope { skill, scope } => Wire::refused(
                StatusCode::FORBIDDEN,
                "PERMISSION_DENIED",
                format!("Forbidden: skill {skill:?} requires the scope {scope:?}"),
            )
            .challenge(format!(
                "Bearer realm=\"{REALM}\", error=\"insufficient_scope\", scope=\"{}\"",
                quoted(scope)
            ))
            .with("skill", skill)
            .with("requiredScope", scope),
            ApiError::RoleScope { routes, scope } => {
                let also = match scope.as_str() {
                    fundi_runtime::ADMIN_SCOPE => String::new(),
                    _ => format!(" (or {:?})", fundi_runtime::ADMIN_SCOPE),
                };
                Wire::refused(
                    StatusCode::FORBIDDEN,
                    "PERMISSION_DENIED",
                    format!("Forbidden: {routes} need the scope {scope:?}{also}"),
                )
                .challenge(format!(
                    "Bearer realm=\"{REALM}\", error=\"insufficient_scope\", scope=\"{}\"",
                    quoted(scope)
                ))
                .with("requiredScope", scope)
            }
            ApiError::ForbiddenRequest(detail) => Wire::refused(
                StatusCode::FORBIDDEN,
                "PERMISSION_DENIED",
                format!("Forbidden: {detail}"),
            ),
            ApiError::TooManyOpen {
                what,
                limit,
                setting,
            } => {
                let mut wire = Wire::refused(
                    StatusCode::TOO_MANY_REQUESTS,
                    "RESOURCE_EXHAUSTED",
                    format!("Too many open: {what} are at the limit of {limit} ({setting})"),
                );
                if let Some(http) = &mut wire.http {
                    http.retry_after_secs = Some(1);
                }
                wire.with("limit", limit.to_string())
            }
            ApiError::McpSessionNotFound => Wire::refused(
                StatusCode::NOT_FOUND,
                "NOT_FOUND",
                "Session not found: no open MCP session of yours has that Mcp-Session-Id \
                 (initialize a new one)"
                    .into(),
            ),
            ApiError::RateLimited { retry_after_secs } => {
                let mut wire = Wire::refused(
                    StatusCode::TOO_MANY_REQUESTS,
                    "RATE_LIMITED",
                    format!("Too many requests: retry after {retry_after_secs} s"),
                );
                if let Some(http) = &mut wire.http {
                    http.retry_after_secs = Some(*retry_after_secs);
                }
                wire
            }
        }
    }

    /// `of`, with a reason for JSON-RPC's own errors too: the bindings without
    /// JSON-RPC codes (HTTP+JSON, gRPC) name them by reason.
    pub(super) fn with_reason(error: &ApiError) -> Wire {
        let mut wire = Wire::of(error);
        if wire.reason.is_none() {
            wire.reason = match wire.code {
                -32700 | -32600 => Some("INVALID_REQUEST"),
                -32601 => Some("METHOD_NOT_FOUND"),
                -32602 => Some("INVALID_PARAMS"),
                -32603 => Some("INTERNAL_ERROR"),
                _ => None,
            };
        }
        wire
    }

    /// The JSON-RPC error object, in the request's dialect: v1.0 carries `data` as an
    /// array of google.rpc details; v0.3 `data` is free-form, so a small object (or
    /// nothing).
    pub(super) fn to_json(&self, dialect: Dialect) -> Value {
        let mut error = json!({"code": self.code, "message": self.message});
        let data = match dialect {
            Dialect::V1 => v1_data(self),
            Dialect::V03 => v03_data(self),
        };
        if let Some(data) = data {
            error["data"] = data;
        }
        error
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let wire = Wire::of(self);
        write!(f, "{} ({})", wire.message, wire.code)
    }
}

impl std::error::Error for ApiError {}

pub(super) fn v1_data(wire: &Wire) -> Option<Value> {
    let mut details = Vec::new();
    if let Some(reason) = wire.reason {
        let metadata: serde_json::Map<String, Value> = wire
            .metadata
            .iter()
            .map(|(k, v)| ((*k).to_owned(), Value::String(v.clone())))
            .collect();
        details.push(json!({
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": reason,
            "domain": "a2a-protocol.org",
            "metadata": metadata,
        }));
    }
    if let Some((field, description)) = &wire.violation {
        details.push(json!({
            "@type": "type.googleapis.com/google.rpc.BadRequest",
            "fieldViolations": [{"field": field, "description": description}],
        }));
    }
    (!details.is_empty()).then_some(Value::Array(details))
}

fn v03_data(wire: &Wire) -> Option<Value> {
    let reason = wire.reason?;
    let mut data = json!({"reason": reason});
    for (k, v) in &wire.metadata {
        data[*k] = Value::String(v.clone());
    }
    Some(data)
}

/// Text fit for a quoted-string in a header: no quotes, backslashes or control bytes.
fn quoted(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '"' | '\\' => '\'',
            c if c.is_control() || !c.is_ascii() => ' ',
            c => c,
        })
        .collect()
}
