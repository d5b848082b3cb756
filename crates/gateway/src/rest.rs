//! The HTTP+JSON (REST) binding (A2A v1.0, spec §11): `POST /message:send`,
//! `GET /tasks/{id}`, `POST /tasks/{id}:cancel` and the rest, with or without a leading
//! `/{tenant}`. Each request becomes the operation and `params` the JSON-RPC binding
//! would carry and goes through the same admission, decoding, runtime calls and
//! encoding; only the framing differs: bare results with `application/a2a+json`, errors
//! as HTTP statuses with a `google.rpc.Status`, streams of bare `StreamResponse`s.

mod params;
mod route;

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, Method as Http, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use tracing::Instrument;

use crate::admission::{admit, last_event_id, read_body, requested_version};
use crate::dialect::Dialect;
use crate::error::{ApiError, method_not_allowed_json};
use crate::jsonrpc::Request;
use crate::reply::{A2A_JSON, rest_failure};
use crate::state::AppState;
use crate::streaming::{self, Framing};
use crate::v03::rest as v03_rest;
use crate::{methods, telemetry};
use route::{Miss, route};

/// The one protocol version this binding speaks.
const VERSION: &str = "1.0";

/// Answers any request the router has no other route for: an HTTP+JSON operation, or
/// a 404 / 405 in the binding's error shape.
pub(crate) async fn handle(
    State(state): State<AppState>,
    method: Http,
    headers: HeaderMap,
    uri: Uri,
    body: Body,
) -> Response {
    if let Some(unserved) = crate::grpc::unserved(&state.config, &headers, uri.path()) {
        return unserved;
    }
    let span = telemetry::request_span(&headers, "http");
    serve(state, method, headers, uri, body)
        .instrument(span)
        .await
}

async fn serve(state: AppState, http: Http, headers: HeaderMap, uri: Uri, body: Body) -> Response {
    let metrics = telemetry::metrics();
    // Where nothing lives, say so before asking for credentials: a 404 tells nothing.
    let found = match route(&http, uri.path()) {
        Ok(found) => found,
        Err(Miss::NotFound) => {
            return rest_failure(&ApiError::no_route(&format!("{http} {}", uri.path()), true));
        }
        Err(Miss::MethodNotAllowed(allowed)) => return method_not_allowed(&http, &uri, allowed),
    };
    let name = found.method.name();
    let caller = match admit(&state, &headers, &uri).await {
        Ok(caller) => caller,
        Err(error) => {
            metrics.request(name, "refused");
            return rest_failure(&error);
        }
    };
    tracing::Span::current().record("user", crate::clip::clip(&caller.user).as_str());
    tracing::Span::current().record("rpc.method", name);
    let bytes = match read_body(body, state.config.max_body_bytes).await {
        Ok(bytes) => bytes,
        Err(error) => {
            metrics.request(name, "refused");
            return rest_failure(&error);
        }
    };
    let version = match found.v03 {
        true => check_version_of(&headers, &uri, "0.3"),
        false => check_version(&headers, &uri),
    };
    let prepared = version
        .and_then(|()| check_content_type(&headers, &bytes))
        .and_then(|()| params::params(&found, uri.query(), &bytes))
        .and_then(|params| match found.v03 {
            true => v03_rest::request(found.method, params),
            false => Ok(params),
        });
    let params = match prepared {
        Ok(params) => params,
        Err(error) => {
            metrics.request(name, "error");
            return rest_failure(&error);
        }
    };
    // A v0.3 route is answered by the v0.3 JSON-RPC method, its answer turned into
    // v0.3's REST form here (`v03/rest.rs`).
    let dialect = match found.v03 {
        true => Dialect::V03,
        false => Dialect::V1,
    };
    let request = Request {
        id: Value::Null,
        method: found.method,
        dialect,
        params,
    };
    if found.method.is_streaming() {
        let resume = last_event_id(&headers);
        let framing = match found.v03 {
            true => Framing::RestV03,
            false => Framing::Rest,
        };
        return streaming::respond(state, caller, request, resume, None, framing).await;
    }
    match methods::call(&state, &caller, request).await {
        Ok(result) => {
            metrics.request(name, "ok");
            let body = match found.v03 {
                true => serde_json::from_str(result.get())
                    .map(|answer| v03_rest::answer(found.method, answer).to_string())
                    .unwrap_or_else(|_| result.get().to_owned()),
                false => result.get().to_owned(),
            };
            ([(header::CONTENT_TYPE, A2A_JSON)], body).into_response()
        }
        Err(error) => {
            let outcome = match error.http_refusal() {
                Some(_) => "refused",
                None => "error",
            };
            metrics.request(name, outcome);
            rest_failure(&error)
        }
    }
}

/// The binding speaks v1.0; a request that names another version is refused (none
/// named is v1.0: this binding's routes exist in no other version).
pub(crate) fn check_version(headers: &HeaderMap, uri: &Uri) -> Result<(), ApiError> {
    check_version_of(headers, uri, VERSION)
}

/// A request that names a version other than `spoken` is refused (none named is it).
fn check_version_of(headers: &HeaderMap, uri: &Uri, spoken: &'static str) -> Result<(), ApiError> {
    match requested_version(headers, uri) {
        Some(version) if !version.is_empty() && version != spoken => {
            Err(ApiError::version_not_supported_by(&version, spoken))
        }
        _ => Ok(()),
    }
}

/// A body, when there is one, is JSON: `application/a2a+json` (the binding's own),
/// `application/json`, or any other `+json` type; no `Content-Type` is taken as JSON.
fn check_content_type(headers: &HeaderMap, body: &[u8]) -> Result<(), ApiError> {
    if body.is_empty() {
        return Ok(());
    }
    let Some(value) = headers.get(header::CONTENT_TYPE) else {
        return Ok(());
    };
    let essence = value
        .to_str()
        .unwrap_or_default()
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    if essence == "application/json" || essence.ends_with("+json") {
        return Ok(());
    }
    Err(ApiError::invalid_request(format!(
        "the body must be JSON ({A2A_JSON} or application/json), not {essence:?}"
    )))
}

fn method_not_allowed(http: &Http, uri: &Uri, allowed: &[Http]) -> Response {
    let allow = allowed
        .iter()
        .map(Http::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    let detail = format!("{http} {} (it takes {allow})", uri.path());
    let mut response = (
        StatusCode::METHOD_NOT_ALLOWED,
        [(header::CONTENT_TYPE, A2A_JSON)],
        method_not_allowed_json(&detail).to_string(),
    )
        .into_response();
    if let Ok(allow) = HeaderValue::from_str(&allow) {
        response.headers_mut().insert(header::ALLOW, allow);
    }
    response
}
