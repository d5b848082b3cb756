//! Telling a requester that its request was decided: a POST of `{"id", "status"}` to the
//! callback it named (on its card's origin, through the special-purpose address filter
//! unless `friends.allow-private-networks`). It carries no token: the requester
//! collects that with its continuation secret. A callback that fails is logged; the
//! requester's polling still finds the decision.

use std::sync::Arc;

use chrono::Utc;
use fundi_ops::access::AccessRequest;
use serde_json::json;

use super::desk::AccessDesk;

/// Sends `request`'s decision to its callback, if it named one, in the background.
pub(super) fn notify(desk: &Arc<AccessDesk>, request: &AccessRequest) {
    let Some(url) = request.callback.clone() else {
        return;
    };
    let client = desk.callbacks.clone();
    let body = json!({"id": request.id, "status": request.standing(Utc::now()).as_str()});
    tokio::spawn(async move {
        match client.post(&url).json(&body).send().await {
            Ok(response) if response.status().is_success() => {}
            Ok(response) => {
                tracing::warn!(%url, status = %response.status(), "an access request's callback refused")
            }
            Err(error) => tracing::warn!(%url, %error, "an access request's callback failed"),
        }
    });
}
