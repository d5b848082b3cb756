//! Requests for access (docs/trust.md): an agent holding no credential of fundi's asks
//! for scopes with proof of the person behind it (`public.rs`), a person approves,
//! narrows or rejects it (`people.rs`), and approval vends a grant whose token the
//! requester collects once. Nothing here ever gives fundi access to the requester.

mod assertion;
mod callback;
pub(crate) mod config;
pub(crate) mod desk;
pub(crate) mod error;
pub(crate) mod people;
mod public;
pub(crate) mod steps;

use std::sync::Arc;

use axum::Router;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use opentelemetry::KeyValue;

pub use config::{FriendsConfig, IssuerConfig};

use crate::admin::admin_error;
use crate::state::AppState;
use desk::AccessDesk;
use error::AccessError;

/// The routes of requests for access: the requester's and the approvers'.
pub(crate) fn routes() -> Router<AppState> {
    Router::new()
        .merge(public::routes())
        .merge(people::routes())
}

/// The access desk; 404 where requests for access are not served.
pub(crate) struct AccessDeskOf(pub(crate) Arc<AccessDesk>);

impl FromRequestParts<AppState> for AccessDeskOf {
    type Rejection = Response;

    async fn from_request_parts(_: &mut Parts, state: &AppState) -> Result<Self, Response> {
        state
            .operators
            .access
            .clone()
            .map(AccessDeskOf)
            .ok_or_else(|| {
                admin_error(
                    axum::http::StatusCode::NOT_FOUND,
                    "requests for access are not served here (no [friends.issuers] are configured)",
                )
            })
    }
}

/// The answer to a refused request, counted by why.
fn counted(refused: AccessError) -> Response {
    refusals().add(1, &[KeyValue::new("reason", refused.label())]);
    refused.into_response()
}

fn refusals() -> &'static opentelemetry::metrics::Counter<u64> {
    static REFUSED: std::sync::OnceLock<opentelemetry::metrics::Counter<u64>> =
        std::sync::OnceLock::new();
    REFUSED.get_or_init(|| {
        opentelemetry::global::meter(fundi_runtime::telemetry::METER_NAME)
            .u64_counter("fundi.access_requests.refused")
            .with_description("Requests for access and collections refused, by reason")
            .with_unit("{request}")
            .build()
    })
}
