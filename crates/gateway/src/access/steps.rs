//! A person's decision as one step, whichever page or route it comes from: decided,
//! recorded in the audit log, and told to the requester's callback.

use std::sync::Arc;

use axum::response::Response;
use chrono::Utc;
use fundi_ops::access::AccessRequest;
use serde_json::json;

use super::desk::AccessDesk;
use super::desk::Approved;
use super::error::AccessError;
use crate::admin::audit::AuditTrail;
use crate::admin::grant_desk::expiry;
use crate::auth::Caller;

/// Why a decision step did not complete.
pub enum Undecided {
    /// It was refused (or failed) before anything changed.
    Refused(AccessError),
    /// It was made, but the audit log could not be written: the answer to give.
    NotRecorded(Response),
}

impl From<AccessError> for Undecided {
    fn from(error: AccessError) -> Undecided {
        Undecided::Refused(error)
    }
}

/// `caller` approves request `id`, narrowed to `scopes` when given, the grant lasting
/// `expires` ("30d") when given.
pub async fn approve_as(
    audit: &AuditTrail,
    desk: &Arc<AccessDesk>,
    caller: &Caller,
    id: &str,
    scopes: Option<Vec<String>>,
    expires: Option<&str>,
    through: &str,
) -> Result<Approved, Undecided> {
    let lasts = expires
        .map(|text| expiry(Utc::now(), text))
        .transpose()
        .map_err(AccessError::Malformed)?;
    let approved = desk
        .approve(id, &caller.user, &caller.grants, scopes, lasts)
        .await?;
    let detail = json!({
        "grant": approved.grant.id,
        "scopes": approved.grant.scopes,
        "withheld": approved.withheld,
        "actsAs": approved.grant.acts_as,
        "expiresAt": approved.grant.expires_at,
        "through": through,
    });
    audit
        .record(caller, "access.approve", id, detail)
        .await
        .map_err(Undecided::NotRecorded)?;
    super::callback::notify(desk, &approved.request);
    Ok(approved)
}

/// `caller` rejects request `id`, telling the requester `reason` when given.
pub async fn reject_as(
    audit: &AuditTrail,
    desk: &Arc<AccessDesk>,
    caller: &Caller,
    id: &str,
    reason: Option<String>,
    through: &str,
) -> Result<AccessRequest, Undecided> {
    let reason = reason.filter(|r| !r.trim().is_empty());
    let rejected = desk.reject(id, &caller.user, reason.clone()).await?;
    let detail = json!({"reason": reason, "through": through});
    audit
        .record(caller, "access.reject", id, detail)
        .await
        .map_err(Undecided::NotRecorded)?;
    super::callback::notify(desk, &rejected);
    Ok(rejected)
}
