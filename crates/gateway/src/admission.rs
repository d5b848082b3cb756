//! What every authenticated request goes through before its operation is looked at,
//! on every binding: Host and Origin, a node that has the database, both credentials, the caller's rate limit, the
//! requested protocol version, and a body read within the size limit.

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Uri};

use crate::auth::Caller;
use crate::body::BodyCutOff;
use crate::dialect::normalize_version;
use crate::error::ApiError;
use crate::state::AppState;

/// The checks every authenticated route makes, in order: Host and Origin, a node that
/// has the database (one cut off from it answers nothing, so that clients and load
/// balancers turn to another node), both credentials, the caller's rate limit.
pub async fn admit(state: &AppState, headers: &HeaderMap, uri: &Uri) -> Result<Caller, ApiError> {
    state.guard.check(headers, uri)?;
    if state.runtime.is_cut_off() {
        return Err(ApiError::CutOff);
    }
    let caller = state
        .auth
        .authenticate(headers)
        .await
        .map_err(|e| ApiError::unauthenticated(&e))?;
    state
        .rate_limit
        .check(&caller.user)
        .map_err(ApiError::rate_limited)?;
    Ok(caller)
}

/// The body, read up to `limit` bytes: larger is `BodyTooLarge` (HTTP 413), one cut off
/// by its deadline or the shared budget is HTTP 408 or 503 (`body.rs`), a body that
/// cannot be read (bad chunked encoding, a connection closed early) is HTTP 400.
pub(crate) async fn read_body(body: Body, limit: usize) -> Result<Bytes, ApiError> {
    axum::body::to_bytes(body, limit).await.map_err(|error| {
        if let Some(cut) = find_cause::<BodyCutOff>(&error) {
            return ApiError::from(*cut);
        }
        match find_cause::<http_body_util::LengthLimitError>(&error) {
            Some(_) => ApiError::BodyTooLarge { limit },
            None => {
                ApiError::malformed_http(format!("the request body could not be read: {error}"))
            }
        }
    })
}

/// The first error of type `E` in `error`'s chain of causes.
fn find_cause<E: std::error::Error + 'static>(error: &axum::Error) -> Option<&E> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(error) = source {
        if let Some(found) = error.downcast_ref::<E>() {
            return Some(found);
        }
        source = error.source();
    }
    None
}

/// `A2A-Version` from the header, or else the query parameter (any case), normalized.
pub(crate) fn requested_version(headers: &HeaderMap, uri: &Uri) -> Option<String> {
    if let Some(value) = headers.get("a2a-version").and_then(|v| v.to_str().ok()) {
        return Some(normalize_version(value));
    }
    form_urlencoded::parse(uri.query()?.as_bytes())
        .find(|(key, _)| key.eq_ignore_ascii_case("A2A-Version"))
        .map(|(_, value)| normalize_version(&value))
}

/// The `Last-Event-ID` a reconnecting SSE client sends: the sequence it saw last.
pub fn last_event_id(headers: &HeaderMap) -> Option<u64> {
    headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse().ok())
}
