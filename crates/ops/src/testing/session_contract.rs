//! The contract every console `SessionStore` keeps: a link, or a sign-in under way, is
//! taken once and not after it expires; a session reads back until it expires or is
//! removed.

use chrono::{Duration, Utc};

use crate::sessions::{ConsolePerson, ConsoleSession, PendingSignIn, SessionStore};

/// Checks `store` (empty) against the contract; `name` labels failures.
pub async fn check_session_store(name: &str, store: &dyn SessionStore) {
    let alice = ConsolePerson {
        user: "alice".into(),
        client: "cli".into(),
        scopes: Some(vec!["fundi:approve".into()]),
    };
    let now = Utc::now();
    let later = now + Duration::minutes(10);

    store.put_link("link-1", &alice, later).await.unwrap();
    let taken = store.take_link("link-1", now).await.unwrap();
    assert_eq!(taken.as_ref(), Some(&alice), "{name}: a link opens once");
    assert_eq!(
        store.take_link("link-1", now).await.unwrap(),
        None,
        "{name}: and only once"
    );
    store.put_link("link-2", &alice, later).await.unwrap();
    let too_late = store
        .take_link("link-2", later + Duration::seconds(1))
        .await
        .unwrap();
    assert_eq!(too_late, None, "{name}: an expired link opens nothing");
    assert_eq!(
        store.take_link("no-such", now).await.unwrap(),
        None,
        "{name}"
    );

    let pending = PendingSignIn {
        verifier: "verifier-1".into(),
        nonce: "nonce-1".into(),
    };
    store.put_pending("state-1", &pending, later).await.unwrap();
    assert_eq!(
        store.take_link("state-1", now).await.unwrap(),
        None,
        "{name}: no link"
    );
    let taken = store.take_pending("state-1", now).await.unwrap();
    assert_eq!(
        taken.as_ref(),
        Some(&pending),
        "{name}: a sign-in is taken once"
    );
    assert_eq!(
        store.take_pending("state-1", now).await.unwrap(),
        None,
        "{name}"
    );
    store.put_pending("state-2", &pending, later).await.unwrap();
    let too_late = store.take_pending("state-2", later).await.unwrap();
    assert_eq!(too_late, None, "{name}: an expired sign-in is not taken");

    let session = ConsoleSession {
        person: ConsolePerson {
            scopes: None,
            ..alice.clone()
        },
        csrf: "csrf-1".into(),
        expires_at: later,
    };
    store.put_session("session-1", &session).await.unwrap();
    assert_eq!(
        store.session("session-1", now).await.unwrap().as_ref(),
        Some(&session),
        "{name}: a session reads back whole"
    );
    assert_eq!(
        store.session("session-1", later).await.unwrap(),
        None,
        "{name}: not once it has expired"
    );
    assert_eq!(
        store.session("link-1", now).await.unwrap(),
        None,
        "{name}: a link is no session"
    );
    store.remove_session("session-1").await.unwrap();
    assert_eq!(
        store.session("session-1", now).await.unwrap(),
        None,
        "{name}: removed"
    );
    store.remove_session("session-1").await.unwrap();
}
