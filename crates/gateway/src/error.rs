//! `ApiError`: every way the gateway refuses or fails a request, as an enum. Runtime
//! errors become variants here (`From<RuntimeError>`); how each variant goes out (its
//! JSON-RPC code, message and data, and its HTTP status where it is not 200) is decided
//! in one place, `error/wire.rs` (HTTP+JSON's statuses in `error/rest.rs`, gRPC's
//! in `error/grpc.rs`, both from it). Internal details are logged, never sent.

mod grpc;
mod rest;
mod wire;

pub(crate) use rest::method_not_allowed_json;
pub(crate) use wire::HttpRefusal;

use std::time::Duration;

use axum::http::StatusCode;
use fundi_runtime::RuntimeError;
use serde_json::Value;

use crate::auth::AuthError;
use crate::dialect::Dialect;
use wire::Wire;

/// The JSON-RPC code of every refusal at the HTTP layer (401, 403, 429): A2A assigns
/// none, so this is the implementation-defined server error; `data` names the reason.
pub const REFUSED: i32 = -32000;

/// Why a request was refused or failed.
#[derive(Debug, Clone, PartialEq)]
pub enum ApiError {
    /// -32700: the body is not JSON.
    Parse(String),
    /// -32600: not a valid JSON-RPC 2.0 request.
    InvalidRequest(String),
    /// -32600 with HTTP 400: the request's framing or headers are malformed (a body
    /// that is not valid chunked encoding, two `Host` headers).
    MalformedHttp(String),
    /// -32600 with HTTP 413: the body is larger than the gateway accepts.
    BodyTooLarge {
        /// The limit, in bytes (`gateway.max-body-bytes`).
        limit: usize,
    },
    /// -32600 with HTTP 408: the body was not received within the read timeout.
    BodyTimedOut {
        /// The timeout, in ms (`gateway.body-read-timeout-ms`).
        limit_ms: u64,
    },
    /// HTTP 503 with `Retry-After`: the bodies being read hold the whole budget
    /// (`gateway.max-buffered-body-bytes`).
    BodiesBusy,
    /// -32601: no such method (in the dialect asked for).
    MethodNotFound(String),
    /// HTTP 404: no route at this method and path; the answer names the A2A endpoints.
    NoRoute {
        /// The method and path asked for.
        request: String,
        /// Whether the HTTP+JSON binding is served.
        rest: bool,
    },
    /// -32602: the params are wrong; `field` names where (empty: the params as a whole).
    InvalidParams {
        /// A path into the params: `message.parts[0].data`.
        field: String,
        /// What is wrong with it.
        detail: String,
    },
    /// -32603: something broke inside (the detail was logged when this was made).
    Internal,
    /// -32603: the call took longer than the configured request timeout.
    TimedOut(Duration),
    /// -32001.
    TaskNotFound {
        /// The task asked for.
        task_id: String,
    },
    /// -32001 for a push config that does not exist (A2A maps it to TaskNotFound).
    PushConfigNotFound {
        /// The task.
        task_id: String,
        /// The config asked for.
        config_id: String,
    },
    /// -32002: the task has ended.
    TaskNotCancelable {
        /// The task.
        task_id: String,
        /// Its terminal state, as the wire names it.
        state: &'static str,
    },
    /// -32003.
    PushNotSupported,
    /// -32007: the extended agent card is turned off (`gateway.extended-card`).
    ExtendedCardNotConfigured,
    /// -32004.
    Unsupported {
        /// What is not supported, and why.
        detail: String,
        /// The task concerned, if any.
        task_id: Option<String>,
    },
    /// -32009.
    VersionNotSupported {
        /// The version the caller asked for.
        requested: String,
        /// The versions the interface speaks, comma-separated.
        supported: &'static str,
    },
    /// HTTP 401: the credentials are missing or not acceptable.
    Unauthenticated {
        /// What is wrong with them.
        detail: String,
        /// Whether credentials were given (and refused), rather than missing.
        invalid: bool,
    },
    /// HTTP 503: credentials cannot be checked now (the signing keys are unavailable).
    KeysUnavailable,
    /// HTTP 403: authenticated, but this skill needs a scope the caller lacks.
    InsufficientScope {
        /// The skill asked for.
        skill: String,
        /// The scope it requires.
        scope: String,
    },
    /// HTTP 403: authenticated, but these routes need a scope the caller lacks.
    RoleScope {
        /// The routes, in words ("the admin routes (/admin/...)").
        routes: String,
        /// The scope they need.
        scope: String,
    },
    /// HTTP 403 for a request refused before authentication (Host, Origin).
    ForbiddenRequest(String),
    /// -32602, HTTP 404: something an operator named does not exist (a schedule).
    NotFound(String),
    /// -32602, HTTP 409: the thing is not in a state that allows the change (a task
    /// that waits for no approver).
    Conflict(String),
    /// -32602, HTTP 403: this caller may not make this change (an approver deciding on
    /// a task of their own).
    Denied(String),
    /// -32603, HTTP 503: the runtime is stopping or a part of it did not answer; trying
    /// again later may succeed (what it said is logged, not sent).
    Unavailable,
    /// HTTP 503 with `Retry-After`: this node is cut off from the database (a store
    /// several nodes share) and answers nothing until it holds it again.
    CutOff,
    /// HTTP 429 with `Retry-After`: the caller holds as many of something as it may
    /// (event streams, MCP sessions).
    TooManyOpen {
        /// What: "event streams of this user", ...
        what: &'static str,
        /// The limit.
        limit: usize,
        /// The setting that sets it.
        setting: &'static str,
    },
    /// HTTP 404: no MCP session with that id for this caller (another's, closed, idle
    /// too long, or never opened).
    McpSessionNotFound,
    /// HTTP 429 with `Retry-After`: this user sent too many requests.
    RateLimited {
        /// When to try again.
        retry_after_secs: u64,
    },
}

impl ApiError {
    /// HTTP 401 (or 503 when the signing keys cannot be fetched).
    pub fn unauthenticated(error: &AuthError) -> ApiError {
        match error {
            AuthError::Missing(_) => ApiError::Unauthenticated {
                detail: error.to_string(),
                invalid: false,
            },
            AuthError::Invalid { .. } => ApiError::Unauthenticated {
                detail: error.to_string(),
                invalid: true,
            },
            AuthError::KeysUnavailable(detail) => {
                tracing::warn!(%detail, "cannot check a token: signing keys unavailable");
                ApiError::KeysUnavailable
            }
            AuthError::GrantsUnavailable(detail) => {
                tracing::error!(%detail, "cannot check a grant token: the store failed");
                ApiError::internal("the grants cannot be read")
            }
        }
    }

    /// HTTP 403: this skill needs a scope the caller lacks.
    pub fn insufficient_scope(skill: &str, scope: &str) -> ApiError {
        ApiError::InsufficientScope {
            skill: skill.to_owned(),
            scope: scope.to_owned(),
        }
    }

    /// HTTP 403: the `routes` need `scope`, which the caller lacks.
    pub fn role_scope(routes: &str, scope: &str) -> ApiError {
        ApiError::RoleScope {
            routes: routes.to_owned(),
            scope: scope.to_owned(),
        }
    }

    /// HTTP 403 for a request refused before authentication (Host, Origin).
    pub fn forbidden_request(detail: impl std::fmt::Display) -> ApiError {
        ApiError::ForbiddenRequest(detail.to_string())
    }

    /// HTTP 400 for a request whose framing or headers are malformed.
    pub fn malformed_http(detail: impl std::fmt::Display) -> ApiError {
        ApiError::MalformedHttp(detail.to_string())
    }

    /// HTTP 429 with `Retry-After`.
    pub fn rate_limited(retry_after_secs: u64) -> ApiError {
        ApiError::RateLimited { retry_after_secs }
    }

    /// -32700.
    pub fn parse_error(detail: impl std::fmt::Display) -> ApiError {
        ApiError::Parse(detail.to_string())
    }

    /// -32600.
    pub fn invalid_request(detail: impl std::fmt::Display) -> ApiError {
        ApiError::InvalidRequest(detail.to_string())
    }

    /// -32601.
    pub fn method_not_found(method: &str) -> ApiError {
        ApiError::MethodNotFound(method.to_owned())
    }

    /// HTTP 404 for `request` ("POST /nothing"), naming the A2A endpoints there are.
    pub fn no_route(request: &str, rest: bool) -> ApiError {
        ApiError::NoRoute {
            request: request.to_owned(),
            rest,
        }
    }

    /// -32602: the params are wrong; `field` names where.
    pub fn invalid_params(field: impl Into<String>, detail: impl Into<String>) -> ApiError {
        ApiError::InvalidParams {
            field: field.into(),
            detail: detail.into(),
        }
    }

    /// -32603: something broke inside; `detail` is logged, not sent.
    pub fn internal(detail: impl std::fmt::Display) -> ApiError {
        tracing::error!(%detail, "internal error answering a request");
        ApiError::Internal
    }

    /// -32603 for a call that took longer than the configured request timeout.
    pub fn timed_out(limit: Duration) -> ApiError {
        ApiError::TimedOut(limit)
    }

    /// -32001.
    pub fn task_not_found(id: &str) -> ApiError {
        ApiError::TaskNotFound {
            task_id: id.to_owned(),
        }
    }

    /// -32001 for a push config that does not exist.
    pub fn push_config_not_found(task_id: &str, id: &str) -> ApiError {
        ApiError::PushConfigNotFound {
            task_id: task_id.to_owned(),
            config_id: id.to_owned(),
        }
    }

    /// -32003.
    pub fn push_not_supported() -> ApiError {
        ApiError::PushNotSupported
    }

    /// -32004.
    pub fn unsupported(detail: impl std::fmt::Display) -> ApiError {
        ApiError::Unsupported {
            detail: detail.to_string(),
            task_id: None,
        }
    }

    /// -32009.
    pub fn version_not_supported(requested: &str) -> ApiError {
        ApiError::version_not_supported_by(requested, "0.3,1.0")
    }

    /// -32009 from an interface that speaks only `supported` (comma-separated).
    pub(crate) fn version_not_supported_by(requested: &str, supported: &'static str) -> ApiError {
        ApiError::VersionNotSupported {
            requested: requested.to_owned(),
            supported,
        }
    }

    /// The same error with `prefix` before the field it names (for params decoded from
    /// a nested object).
    pub(crate) fn prefixed(self, prefix: &str) -> ApiError {
        match self {
            ApiError::InvalidParams { field, detail } => {
                let field = format!("{prefix}{field}");
                ApiError::invalid_params(field.trim_end_matches('.'), detail)
            }
            other => other,
        }
    }

    /// The JSON-RPC error code.
    pub fn code(&self) -> i32 {
        Wire::of(self).code
    }

    /// The message sent: it names what is wrong.
    pub fn message(&self) -> String {
        Wire::of(self).message
    }

    /// How this error goes out at the HTTP layer, when it is not HTTP 200.
    pub(crate) fn http_refusal(&self) -> Option<HttpRefusal> {
        Wire::of(self).http
    }

    /// The JSON-RPC error object, in the request's dialect (`wire`).
    pub fn to_json(&self, dialect: Dialect) -> Value {
        Wire::of(self).to_json(dialect)
    }

    /// The HTTP status on the HTTP+JSON binding and its `google.rpc.Code` name
    /// (`rest`).
    pub fn rest_status(&self) -> (StatusCode, &'static str) {
        rest::status(self)
    }

    /// The `{"error": google.rpc.Status}` body on the HTTP+JSON binding (`rest`).
    pub(crate) fn to_rest_json(&self) -> Value {
        rest::body(self)
    }

    /// The gRPC status (`grpc`).
    pub(crate) fn to_grpc_status(&self) -> tonic::Status {
        grpc::status(self)
    }
}

impl From<RuntimeError> for ApiError {
    fn from(error: RuntimeError) -> ApiError {
        match error {
            RuntimeError::TaskNotFound(id) => ApiError::task_not_found(id.as_str()),
            RuntimeError::NotCancelable { id, state } => ApiError::TaskNotCancelable {
                task_id: id.to_string(),
                state: state.wire_name(),
            },
            RuntimeError::TaskTerminal { id, state } => ApiError::Unsupported {
                detail: format!(
                    "task {id} is {} and accepts no more messages; start a new task in its \
                     context",
                    state.wire_name()
                ),
                task_id: Some(id.to_string()),
            },
            RuntimeError::NotAcceptingInput { id, state } => ApiError::Unsupported {
                detail: format!(
                    "task {id} is {} and its skill refuses messages while it works; send one \
                     when the task is input-required or auth-required",
                    state.wire_name()
                ),
                task_id: Some(id.to_string()),
            },
            RuntimeError::QueueFull { id, waiting } => ApiError::Unsupported {
                detail: format!(
                    "task {id} has {waiting} messages waiting for its run already; send more \
                     once it has taken some"
                ),
                task_id: Some(id.to_string()),
            },
            RuntimeError::AwaitingApproval { id } => ApiError::Unsupported {
                detail: format!(
                    "task {id} waits for an approver and accepts no messages until it is \
                     approved"
                ),
                task_id: Some(id.to_string()),
            },
            e @ RuntimeError::NotAwaitingApproval { .. } => ApiError::Conflict(e.to_string()),
            e @ RuntimeError::ApproverIsRequester { .. } => ApiError::Denied(e.to_string()),
            RuntimeError::BeingCanceled { id } => ApiError::Unsupported {
                detail: format!("task {id} is being canceled and accepts no more messages"),
                task_id: Some(id.to_string()),
            },
            e @ RuntimeError::ContextMismatch { .. } => {
                ApiError::invalid_params("message.contextId", e.to_string())
            }
            e @ (RuntimeError::UnknownSkill { .. } | RuntimeError::NoSkillSelected { .. }) => {
                ApiError::invalid_params("message.metadata.skill", e.to_string())
            }
            RuntimeError::Forbidden { skill, scope } => {
                ApiError::insufficient_scope(&skill, &scope)
            }
            RuntimeError::InvalidInput(text) => ApiError::invalid_params("", text),
            e @ RuntimeError::ScheduleNotFound(_) => ApiError::NotFound(e.to_string()),
            RuntimeError::InvalidField(invalid) => {
                ApiError::invalid_params(invalid.field, invalid.reason)
            }
            RuntimeError::Unavailable(text) => {
                tracing::warn!(detail = %text, "the runtime could not answer a request now");
                ApiError::Unavailable
            }
            e @ RuntimeError::Invariant { .. } => {
                ApiError::internal(fundi_runtime::error_chain(&e))
            }
            // The node running the task did not answer in time: the caller may send again.
            RuntimeError::Store(fundi_runtime::StoreError::Unanswered { waited, .. }) => {
                ApiError::timed_out(waited)
            }
            RuntimeError::Store(fundi_runtime::StoreError::CutOff) => ApiError::CutOff,
            // The database did not answer now (restarting, slow): the caller may retry.
            RuntimeError::Store(error @ fundi_runtime::StoreError::Unreachable { .. }) => {
                tracing::warn!(error = %fundi_runtime::error_chain(&error), "the database did not answer a request");
                ApiError::Unavailable
            }
            e @ (RuntimeError::Store(_) | RuntimeError::Worker(_)) => ApiError::internal(e),
        }
    }
}

#[cfg(test)]
mod tests;
