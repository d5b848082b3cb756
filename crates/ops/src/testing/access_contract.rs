//! The contract every store of requests for access keeps.

use chrono::{Duration, Utc};

use crate::access::{AccessRequest, AccessRequestStore, Decision, Requester, RequesterCard};
use crate::grants::token_digest;

/// A pending request of `idp:alice` for `fundi:audit`, its assertion's `jti` `jti`.
pub fn request(id: &str, jti: &str) -> AccessRequest {
    let now = Utc::now();
    AccessRequest {
        id: id.into(),
        version: 1,
        requester: Requester {
            provider: "idp".into(),
            issuer: "https://idp.test".into(),
            subject: "alice".into(),
            assertion_id: jti.into(),
        },
        card: RequesterCard {
            url: "https://agent.test/.well-known/agent-card.json".into(),
            name: Some("Agent \u{e9}".into()),
            signature_verified: true,
            unreadable: None,
        },
        callback: None,
        scopes: vec!["fundi:audit".into()],
        reason: "nightly audits \u{1f600}".into(),
        created_at: now,
        expires_at: now + Duration::days(7),
        secret_digest: token_digest("fundi_continue_x"),
        decision: None,
        collected_at: None,
    }
}

/// Requests read back whole; an assertion is stored once; a change applies only to the
/// version it was made from.
pub async fn check_access_request_store(name: &str, store: &dyn AccessRequestStore) {
    let first = request("ar-1", "j-1");
    assert!(store.insert(&first).await.unwrap(), "{name}");
    let replayed = request("ar-2", "j-1");
    assert!(
        !store.insert(&replayed).await.unwrap(),
        "{name}: the same assertion twice"
    );
    assert_eq!(store.get("ar-2").await.unwrap(), None, "{name}");
    let mut other_issuer = request("ar-3", "j-1");
    other_issuer.requester.issuer = "https://other.test".into();
    assert!(store.insert(&other_issuer).await.unwrap(), "{name}");
    assert_eq!(
        store.get("ar-1").await.unwrap().as_ref(),
        Some(&first),
        "{name}"
    );

    let mut approved = first.clone();
    approved.version = 2;
    approved.decision = Some(Decision {
        approved: true,
        by: "ann".into(),
        at: Utc::now(),
        scopes: vec!["fundi:audit".into()],
        grant: Some("gr-1".into()),
        reason: None,
    });
    assert!(store.replace(&first, &approved).await.unwrap(), "{name}");
    let mut rejected = first.clone();
    rejected.version = 2;
    assert!(
        !store.replace(&first, &rejected).await.unwrap(),
        "{name}: a change made from an old version"
    );
    assert_eq!(
        store.get("ar-1").await.unwrap().as_ref(),
        Some(&approved),
        "{name}"
    );
    assert!(
        !store
            .replace(&request("ar-9", "j-9"), &request("ar-9", "j-9"))
            .await
            .unwrap(),
        "{name}: no such request"
    );
    let ids: Vec<String> = store
        .list()
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(ids, ["ar-1", "ar-3"], "{name}");
}
