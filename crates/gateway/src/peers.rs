//! The peers this server delegates to (scope `fundi:delegate`, or `fundi:admin`):
//! `GET /peers` lists them with what their cached cards say (nothing is fetched);
//! `POST /peers/{name}/discover` reads one peer's card now (revalidated with
//! `If-None-Match`) and answers it. Tokens are never shown.

use axum::Router;
use axum::extract::Path;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use fundi_peers::PeerError;
use serde_json::json;

use crate::admin::admin_error as error;
use crate::operator::{Delegator, Operator, Peers};
use crate::state::AppState;

pub(crate) fn routes() -> Router<AppState> {
    Router::new()
        .route("/peers", get(list))
        .route("/peers/{name}/discover", post(discover))
}

async fn list(_delegator: Operator<Delegator>, Peers(peers): Peers) -> Response {
    axum::Json(json!({"peers": peers.list()})).into_response()
}

async fn discover(
    _delegator: Operator<Delegator>,
    Peers(peers): Peers,
    Path(name): Path<String>,
) -> Response {
    match peers.discover(&name).await {
        Ok(card) => axum::Json(json!({"name": name, "card": *card})).into_response(),
        Err(failed) => {
            let status = match &failed {
                PeerError::Unknown { .. } => StatusCode::NOT_FOUND,
                _ => StatusCode::BAD_GATEWAY,
            };
            error(status, &failed.to_string())
        }
    }
}
