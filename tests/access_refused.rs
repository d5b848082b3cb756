//! Requests for access refused or bounded, against a real `fundi serve` and an identity
//! provider of the test's own: every bad proof is refused with a clear error and
//! recorded nowhere; an assertion is accepted once; the quota of pending requests and
//! the hourly rate per requester hold (429 with `Retry-After`); a rejection and a lapse
//! are told to the requester.

mod common;
#[path = "access/idp.rs"]
mod idp;
#[path = "access/support.rs"]
mod support;

use std::time::{Duration, Instant};

use common::{DEADLINE, Server, cli};
use idp::Idp;
use reqwest::StatusCode;
use serde_json::{Value, json};
use support::{ask, collect, request_of, start_a};

#[tokio::test]
async fn every_bad_proof_is_refused_and_recorded_nowhere() {
    let idp = Idp::start().await;
    let stranger = Idp::start().await;
    let (a_dir, b_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let b = Server::start(b_dir.path(), &[]);
    let a = start_a(a_dir.path(), &idp, &[]);
    let other_key = fundi_peers::signature::CardKey::generate();

    let good = idp.claims("agent-b", &a.url);
    let with = |change: &dyn Fn(&mut Value)| {
        let mut claims = good.clone();
        change(&mut claims);
        claims
    };
    let now = chrono::Utc::now().timestamp();
    let cases: Vec<(&str, String, &str)> = vec![
        ("not a JWT", "not-a-jwt".into(), "well-formed"),
        (
            "an issuer not listed",
            stranger.sign(&stranger.claims("agent-b", &a.url)),
            "not one this server accepts",
        ),
        (
            "a forged signature",
            idp.sign_as(&good, Some("oauth-id-jag+jwt"), &other_key),
            "signature does not verify",
        ),
        (
            "another audience",
            idp.sign(&with(&|c| c["aud"] = json!("https://elsewhere.test"))),
            "audience",
        ),
        (
            "an expired one",
            idp.sign(&with(&|c| {
                c["iat"] = json!(now - 900);
                c["exp"] = json!(now - 600)
            })),
            "expired",
        ),
        (
            "one without jti",
            idp.sign(&with(&|c| {
                c.as_object_mut().unwrap().remove("jti");
            })),
            "jti",
        ),
        (
            "another typ",
            idp.sign_as(&good, Some("at+jwt"), &idp_key(&idp)),
            "typ",
        ),
    ];
    for (what, assertion, says) in &cases {
        let (status, body, _) = ask(&a, &request_of(&b, &["fundi:audit"], assertion)).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{what}: {body}");
        let error = body["error"].as_str().unwrap_or_default();
        assert!(error.contains(says), "{what}: {error}");
    }
    let (status, body, _) = ask(
        &a,
        &json!({"card": "ftp://x", "scopes": [], "reason": "", "assertion": ""}),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("card must be"),
        "{body}"
    );

    // An OpenID Connect ID token (typ JWT) is accepted, once.
    let id_token = idp.sign_as(&good, Some("JWT"), &idp_key(&idp));
    let (status, body, _) = ask(&a, &request_of(&b, &["fundi:audit"], &id_token)).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let (status, body, _) = ask(&a, &request_of(&b, &["fundi:audit"], &id_token)).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("used before"),
        "{body}"
    );

    // Only the one accepted request is anywhere.
    let (_, listed) = cli(&a, &["access", "list", "--status", "all", "--json"]);
    let listed: Value = serde_json::from_str(&listed).unwrap_or(Value::Null);
    assert_eq!(
        listed["requests"].as_array().map(Vec::len),
        Some(1),
        "{listed}"
    );
    let (_, audit) = cli(&a, &["audit"]);
    assert_eq!(audit.matches("access.request").count(), 1, "{audit}");
}

/// The provider's own key (for `sign_as` with another `typ`).
fn idp_key(idp: &Idp) -> fundi_peers::signature::CardKey {
    idp.key()
}

#[tokio::test]
async fn the_quota_and_the_rate_limit_hold_and_a_rejection_and_a_lapse_are_told() {
    let idp = Idp::start().await;
    let (a_dir, b_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let b = Server::start(b_dir.path(), &[]);
    let a = start_a(
        a_dir.path(),
        &idp,
        &[
            ("FUNDI__FRIENDS__PENDING_PER_REQUESTER", "2"),
            ("FUNDI__FRIENDS__REQUESTS_PER_HOUR", "3"),
        ],
    );
    let mut taken = Vec::new();
    for _ in 0..2 {
        let assertion = idp.sign(&idp.claims("agent-b", &a.url));
        let (status, body, _) = ask(&a, &request_of(&b, &["fundi:audit"], &assertion)).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{body}");
        taken.push((
            body["id"].as_str().unwrap().to_owned(),
            body["continuation"].as_str().unwrap().to_owned(),
        ));
    }
    let assertion = idp.sign(&idp.claims("agent-b", &a.url));
    let (status, body, retry) = ask(&a, &request_of(&b, &["fundi:audit"], &assertion)).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("pending-per-requester"),
        "{body}"
    );
    assert!(retry.is_some_and(|s| s.parse::<u64>().unwrap() > 0));
    // Another person is not held to agent-b's quota.
    let other = idp.sign(&idp.claims("agent-c", &a.url));
    assert_eq!(
        ask(&a, &request_of(&b, &["fundi:audit"], &other)).await.0,
        StatusCode::ACCEPTED
    );

    // A rejection frees the quota and is told, with its reason.
    let (rejected_ok, rejected) = cli(
        &a,
        &[
            "access",
            "reject",
            &taken[0].0,
            "--reason",
            "we do not know B",
        ],
    );
    assert!(rejected_ok, "{rejected}");
    let (status, body) = collect(&a, &taken[0].0, &taken[0].1).await;
    assert_eq!(status, StatusCode::GONE, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("we do not know B"),
        "{body}"
    );
    // The rate limit: three requests this hour were taken from agent-b, the fourth is not.
    let assertion = idp.sign(&idp.claims("agent-b", &a.url));
    let (status, body, retry) = ask(&a, &request_of(&b, &["fundi:audit"], &assertion)).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("requests-per-hour"),
        "{body}"
    );
    assert!(retry.is_some());
}

#[tokio::test]
async fn a_request_not_decided_in_time_lapses() {
    let idp = Idp::start().await;
    let (a_dir, b_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let b = Server::start(b_dir.path(), &[]);
    let a = start_a(a_dir.path(), &idp, &[("FUNDI__FRIENDS__EXPIRES", "1s")]);
    let assertion = idp.sign(&idp.claims("agent-b", &a.url));
    let (_, asked, _) = ask(&a, &request_of(&b, &["fundi:audit"], &assertion)).await;
    let (id, secret) = (
        asked["id"].as_str().unwrap(),
        asked["continuation"].as_str().unwrap(),
    );
    let deadline = Instant::now() + DEADLINE;
    let body = loop {
        let (status, body) = collect(&a, id, secret).await;
        if status == StatusCode::GONE {
            break body;
        }
        assert_eq!(status, StatusCode::ACCEPTED, "{body}");
        assert!(Instant::now() < deadline, "the request never lapsed");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(body["error"].as_str().unwrap().contains("lapsed"), "{body}");
    let (ok, approved) = cli(&a, &["access", "approve", id]);
    assert!(!ok && approved.contains("expired"), "{approved}");
}
