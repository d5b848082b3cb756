//! Peers for operators: `GET /admin/peers` lists every peer (the config file's and those
//! added at run time, never their tokens), `POST /admin/peers` adds one for good
//! (`{"name", "url", "token"?, "userToken"?, "allowPrivateNetworks"?,
//! "requireSignedCard"?, "interfaceHosts"?}`; the same name again replaces it), and
//! `DELETE /admin/peers/{name}` removes one added at run time. A peer of the config
//! file is changed only there (409). Each change is in the audit log, without tokens.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get};
use fundi_peers::{PeerConfig, PeerError};
use serde::Deserialize;
use serde_json::json;

use super::audit::AuditTrail;
use super::{admin_error, parse};
use crate::operator::{Admin, Operator, Peers};
use crate::state::AppState;

pub(super) fn routes() -> Router<AppState> {
    Router::new()
        .route("/admin/peers", get(list).post(add))
        .route("/admin/peers/{name}", delete(remove))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct NewPeer {
    name: String,
    url: String,
    #[serde(default)]
    token: Option<String>,
    #[serde(default)]
    user_token: Option<String>,
    #[serde(default)]
    allow_private_networks: bool,
    #[serde(default)]
    require_signed_card: bool,
    #[serde(default)]
    interface_hosts: Vec<String>,
}

async fn list(_operator: Operator<Admin>, Peers(peers): Peers) -> Response {
    axum::Json(json!({"peers": peers.listing().await})).into_response()
}

async fn add(
    State(audit): State<AuditTrail>,
    Operator(caller, _): Operator<Admin>,
    Peers(peers): Peers,
    body: Bytes,
) -> Response {
    let expected = "{\"name\": \"b\", \"url\": \"https://b.example\", \"token\"?: \"...\", \
                    \"userToken\"?: \"...\", \"allowPrivateNetworks\"?: false, \
                    \"requireSignedCard\"?: false, \"interfaceHosts\"?: []}";
    let new: NewPeer = match parse(&body, expected) {
        Ok(new) => new,
        Err(refused) => return refused,
    };
    let mut config = PeerConfig::default();
    config.url = new.url;
    config.token = new.token;
    config.user_token = new.user_token;
    config.allow_private_networks = new.allow_private_networks;
    config.require_signed_card = new.require_signed_card;
    config.interface_hosts = new.interface_hosts;
    match peers.add_peer(&new.name, config, &caller.user).await {
        Ok(added) => {
            let detail =
                json!({"url": added.url, "allowPrivateNetworks": added.allow_private_networks});
            if let Err(failed) = audit.record(&caller, "peer.add", &added.name, detail).await {
                return failed;
            }
            (StatusCode::CREATED, axum::Json(json!({"peer": added}))).into_response()
        }
        Err(failed) => refusal(&failed),
    }
}

async fn remove(
    State(audit): State<AuditTrail>,
    Operator(caller, _): Operator<Admin>,
    Peers(peers): Peers,
    Path(name): Path<String>,
) -> Response {
    match peers.remove_peer(&name).await {
        Ok(true) => {
            if let Err(failed) = audit.record(&caller, "peer.remove", &name, json!({})).await {
                return failed;
            }
            StatusCode::NO_CONTENT.into_response()
        }
        Ok(false) => admin_error(
            StatusCode::NOT_FOUND,
            &format!("no peer named {name:?} was added at run time"),
        ),
        Err(failed) => refusal(&failed),
    }
}

fn refusal(failed: &PeerError) -> Response {
    let status = match failed {
        PeerError::Invalid(_) => StatusCode::BAD_REQUEST,
        PeerError::Configured(_) => StatusCode::CONFLICT,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    };
    admin_error(status, &failed.to_string())
}
