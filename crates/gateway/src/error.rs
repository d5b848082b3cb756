//! `ApiError`: the one place where errors become JSON-RPC error objects. Runtime errors
//! map to the A2A codes; internal details are logged, never sent.

use axum::http::StatusCode;
use fundi_runtime::RuntimeError;
use serde_json::{Value, json};

use crate::auth::AuthError;
use crate::dialect::Dialect;

/// The JSON-RPC code of every refusal at the HTTP layer (401, 403, 429): A2A assigns
/// none, so this is the implementation-defined server error; `data` names the reason.
pub const REFUSED: i32 = -32000;

/// The realm in `WWW-Authenticate` challenges.
const REALM: &str = "fundi";

/// How a refusal goes out at the HTTP layer, beside its JSON-RPC body.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct HttpRefusal {
    pub(crate) status: StatusCode,
    pub(crate) www_authenticate: Option<String>,
    pub(crate) retry_after_secs: Option<u64>,
}

/// A JSON-RPC error ready to be sent.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    /// The JSON-RPC error code.
    pub code: i32,
    /// A message that names what is wrong.
    pub message: String,
    /// `ErrorInfo.reason` for A2A errors (v1.0 `data`).
    reason: Option<&'static str>,
    /// `ErrorInfo.metadata` (string values only, as the proto's map<string,string>).
    metadata: Vec<(&'static str, String)>,
    /// `BadRequest.fieldViolations` for invalid params: (field, description).
    violation: Option<Box<(String, String)>>,
    /// Set for the few errors that are not HTTP 200 (authentication, authorization,
    /// rate limiting).
    http: Option<Box<HttpRefusal>>,
}

impl ApiError {
    fn new(code: i32, message: impl Into<String>) -> ApiError {
        ApiError {
            code,
            message: message.into(),
            reason: None,
            metadata: Vec::new(),
            violation: None,
            http: None,
        }
    }

    fn refused(
        status: StatusCode,
        reason: &'static str,
        message: impl Into<String>,
        www_authenticate: Option<String>,
    ) -> ApiError {
        ApiError {
            http: Some(Box::new(HttpRefusal {
                status,
                www_authenticate,
                retry_after_secs: None,
            })),
            ..ApiError::a2a(REFUSED, reason, message)
        }
    }

    /// HTTP 401 (or 503 when the signing keys cannot be fetched): the credentials are
    /// missing or not acceptable.
    pub fn unauthenticated(error: &AuthError) -> ApiError {
        match error {
            AuthError::Missing(_) => ApiError::refused(
                StatusCode::UNAUTHORIZED,
                "UNAUTHENTICATED",
                format!("Unauthenticated: {error}"),
                Some(format!("Bearer realm=\"{REALM}\"")),
            ),
            AuthError::Invalid { .. } => ApiError::refused(
                StatusCode::UNAUTHORIZED,
                "UNAUTHENTICATED",
                format!("Unauthenticated: {error}"),
                Some(format!(
                    "Bearer realm=\"{REALM}\", error=\"invalid_token\", error_description=\"{}\"",
                    quoted(&error.to_string())
                )),
            ),
            AuthError::KeysUnavailable(detail) => {
                tracing::warn!(%detail, "cannot check a token: signing keys unavailable");
                ApiError::refused(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "UNAVAILABLE",
                    "Credentials cannot be checked now: the signing keys are unavailable",
                    None,
                )
            }
        }
    }

    /// HTTP 403: authenticated, but this skill needs a scope the caller lacks.
    pub fn insufficient_scope(skill: &str, scope: &str) -> ApiError {
        ApiError::refused(
            StatusCode::FORBIDDEN,
            "PERMISSION_DENIED",
            format!("Forbidden: skill {skill:?} requires the scope {scope:?}"),
            Some(format!(
                "Bearer realm=\"{REALM}\", error=\"insufficient_scope\", scope=\"{}\"",
                quoted(scope)
            )),
        )
        .with("skill", skill)
        .with("requiredScope", scope)
    }

    /// HTTP 403 for a request refused before authentication (Host, Origin).
    pub fn forbidden_request(detail: impl std::fmt::Display) -> ApiError {
        ApiError::refused(
            StatusCode::FORBIDDEN,
            "PERMISSION_DENIED",
            format!("Forbidden: {detail}"),
            None,
        )
    }

    /// HTTP 400 for a request whose framing or headers are malformed (a body that is
    /// not valid chunked encoding, two `Host` headers).
    pub fn malformed_http(detail: impl std::fmt::Display) -> ApiError {
        ApiError {
            http: Some(Box::new(HttpRefusal {
                status: StatusCode::BAD_REQUEST,
                www_authenticate: None,
                retry_after_secs: None,
            })),
            ..ApiError::invalid_request(detail)
        }
    }

    /// HTTP 429 with `Retry-After`: this user sent too many requests.
    pub fn rate_limited(retry_after_secs: u64) -> ApiError {
        let mut error = ApiError::refused(
            StatusCode::TOO_MANY_REQUESTS,
            "RATE_LIMITED",
            format!("Too many requests: retry after {retry_after_secs} s"),
            None,
        );
        if let Some(http) = &mut error.http {
            http.retry_after_secs = Some(retry_after_secs);
        }
        error
    }

    /// How this error goes out at the HTTP layer, when it is not HTTP 200.
    pub(crate) fn http_refusal(&self) -> Option<&HttpRefusal> {
        self.http.as_deref()
    }

    fn a2a(code: i32, reason: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            reason: Some(reason),
            ..ApiError::new(code, message)
        }
    }

    fn with(mut self, key: &'static str, value: impl Into<String>) -> ApiError {
        self.metadata.push((key, value.into()));
        self
    }

    /// -32700: the body is not JSON.
    pub fn parse_error(detail: impl std::fmt::Display) -> ApiError {
        ApiError::new(-32700, format!("Invalid JSON payload: {detail}"))
    }

    /// -32600: not a valid JSON-RPC 2.0 request.
    pub fn invalid_request(detail: impl std::fmt::Display) -> ApiError {
        ApiError::new(
            -32600,
            format!("Request payload validation error: {detail}"),
        )
    }

    /// -32601: no such method (in the dialect asked for).
    pub fn method_not_found(method: &str) -> ApiError {
        ApiError::new(-32601, format!("Method not found: {method}"))
    }

    /// -32602: the params are wrong; `field` names where.
    pub fn invalid_params(field: impl Into<String>, detail: impl Into<String>) -> ApiError {
        let (field, detail) = (field.into(), detail.into());
        let message = if field.is_empty() {
            format!("Invalid parameters: {detail}")
        } else {
            format!("Invalid parameters: {field}: {detail}")
        };
        ApiError {
            violation: Some(Box::new((field, detail))),
            ..ApiError::new(-32602, message)
        }
    }

    /// -32603: something broke inside; the details are logged, not sent.
    pub fn internal(detail: impl std::fmt::Display) -> ApiError {
        tracing::error!(%detail, "internal error answering a request");
        ApiError::new(-32603, "Internal error")
    }

    /// -32603 for a call that took longer than the configured request timeout.
    pub fn timed_out(limit: std::time::Duration) -> ApiError {
        ApiError::new(
            -32603,
            format!(
                "Internal error: the request took longer than {} ms",
                limit.as_millis()
            ),
        )
    }

    /// -32001.
    pub fn task_not_found(id: &str) -> ApiError {
        ApiError::a2a(-32001, "TASK_NOT_FOUND", format!("Task not found: {id}")).with("taskId", id)
    }

    /// -32001 for a push config that does not exist (A2A maps it to TaskNotFound).
    pub fn push_config_not_found(task_id: &str, id: &str) -> ApiError {
        ApiError::a2a(
            -32001,
            "TASK_NOT_FOUND",
            format!("Task not found: task {task_id} has no push notification config {id:?}"),
        )
        .with("taskId", task_id)
        .with("configId", id)
    }

    /// The same error with `prefix` before the field it names (for params decoded from
    /// a nested object).
    pub(crate) fn prefixed(self, prefix: &str) -> ApiError {
        match self.violation.as_deref() {
            Some((field, detail)) if self.code == -32602 => {
                let field = format!("{prefix}{field}");
                ApiError::invalid_params(field.trim_end_matches('.'), detail.clone())
            }
            _ => self,
        }
    }

    /// -32003.
    pub fn push_not_supported() -> ApiError {
        ApiError::a2a(
            -32003,
            "PUSH_NOTIFICATION_NOT_SUPPORTED",
            "Push Notification is not supported by this agent",
        )
    }

    /// -32004.
    pub fn unsupported(detail: impl std::fmt::Display) -> ApiError {
        ApiError::a2a(
            -32004,
            "UNSUPPORTED_OPERATION",
            format!("This operation is not supported: {detail}"),
        )
    }

    /// -32009.
    pub fn version_not_supported(requested: &str) -> ApiError {
        ApiError::a2a(
            -32009,
            "VERSION_NOT_SUPPORTED",
            format!("A2A version {requested} is not supported (supported: 0.3, 1.0)"),
        )
        .with("requestedVersion", requested)
        .with("supportedVersions", "0.3,1.0")
    }

    /// The error object, in the request's dialect: v1.0 carries `data` as an array of
    /// google.rpc details; v0.3 `data` is free-form, so a small object (or nothing).
    pub fn to_json(&self, dialect: Dialect) -> Value {
        let mut error = json!({"code": self.code, "message": self.message});
        let data = match dialect {
            Dialect::V1 => self.v1_data(),
            Dialect::V03 => self.v03_data(),
        };
        if let Some(data) = data {
            error["data"] = data;
        }
        error
    }

    fn v1_data(&self) -> Option<Value> {
        let mut details = Vec::new();
        if let Some(reason) = self.reason {
            let metadata: serde_json::Map<String, Value> = self
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
        if let Some((field, description)) = self.violation.as_deref() {
            details.push(json!({
                "@type": "type.googleapis.com/google.rpc.BadRequest",
                "fieldViolations": [{"field": field, "description": description}],
            }));
        }
        (!details.is_empty()).then_some(Value::Array(details))
    }

    fn v03_data(&self) -> Option<Value> {
        let reason = self.reason?;
        let mut data = json!({"reason": reason});
        for (k, v) in &self.metadata {
            data[*k] = Value::String(v.clone());
        }
        Some(data)
    }
}

impl From<RuntimeError> for ApiError {
    fn from(error: RuntimeError) -> ApiError {
        match error {
            RuntimeError::TaskNotFound(id) => ApiError::task_not_found(id.as_str()),
            RuntimeError::NotCancelable { id, state } => ApiError::a2a(
                -32002,
                "TASK_NOT_CANCELABLE",
                format!(
                    "Task cannot be canceled: task {id} is already {}",
                    state.wire_name()
                ),
            )
            .with("taskId", id.as_str())
            .with("state", state.wire_name()),
            RuntimeError::TaskTerminal { id, state } => ApiError::unsupported(format!(
                "task {id} is {} and accepts no more messages; start a new task in its context",
                state.wire_name()
            ))
            .with("taskId", id.as_str()),
            RuntimeError::NotAcceptingInput { id, state } => ApiError::unsupported(format!(
                "task {id} is {}; it accepts a message only when input-required or auth-required",
                state.wire_name()
            ))
            .with("taskId", id.as_str()),
            e @ RuntimeError::ContextMismatch { .. } => {
                ApiError::invalid_params("message.contextId", e.to_string())
            }
            e @ (RuntimeError::UnknownSkill(_) | RuntimeError::NoSkillSelected { .. }) => {
                ApiError::invalid_params("message.metadata.skill", e.to_string())
            }
            RuntimeError::Forbidden { skill, scope } => {
                ApiError::insufficient_scope(&skill, &scope)
            }
            RuntimeError::InvalidInput(text) => ApiError::invalid_params("", text),
            RuntimeError::InvalidField(invalid) => {
                ApiError::invalid_params(invalid.field, invalid.reason)
            }
            RuntimeError::Unavailable(text) => ApiError::internal(text),
            RuntimeError::Store(e) => ApiError::internal(e),
            e @ RuntimeError::Worker(_) => ApiError::internal(e),
        }
    }
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
