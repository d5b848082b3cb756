//! Requests for access between two real `fundi serve` processes, with an identity
//! provider of the test's own (its JWK Set on loopback): B's agent asks A for access
//! with an assertion; pending, it is refused everywhere; a person approves it on A
//! narrowed (`fundi access approve`); B's agent collects its token once; its work flows
//! within the narrowed scopes and nothing else; revoking stops it at once; A gained no
//! access to B, and the holder learns nothing of other grants, requests or peers.

mod common;
#[path = "access/idp.rs"]
mod idp;
#[path = "access/support.rs"]
mod support;

use common::{Server, cli, message};
use idp::Idp;
use reqwest::StatusCode;
use serde_json::{Value, json};
use support::{ask, call_as, collect, get_as, request_of, start_a};

#[tokio::test]
async fn an_agent_asks_a_person_approves_narrowed_and_its_token_is_collected_once() {
    let idp = Idp::start().await;
    let (a_dir, b_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let b = Server::start(b_dir.path(), &[]);
    let a = start_a(a_dir.path(), &idp, &[]);

    let assertion = idp.sign(&idp.claims("agent-b", &a.url));
    let (status, asked, _) = ask(
        &a,
        &request_of(&b, &["fundi:audit", "fundi:security"], &assertion),
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{asked}");
    let id = asked["id"].as_str().unwrap().to_owned();
    let secret = asked["continuation"].as_str().unwrap().to_owned();
    assert_eq!(asked["status"], "pending");
    assert_eq!(
        asked["collect"],
        format!("{}/access-requests/{id}/collect", a.url)
    );

    // Pending grants nothing: the secret is no credential, and collecting waits.
    let (status, _) = call_as(&a, &secret, "ListTasks", json!({})).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, body) = collect(&a, &id, &secret).await;
    assert_eq!(
        (status, &body["status"]),
        (StatusCode::ACCEPTED, &json!("pending")),
        "{body}"
    );
    let (status, _) = collect(&a, &id, "fundi_continue_wrong").await;
    assert_eq!(
        status,
        StatusCode::NOT_FOUND,
        "a wrong secret learns nothing"
    );

    // The person's queue shows who, which agent (its signed card verified), why, what.
    let (listed_ok, listed) = cli(&a, &["access", "list"]);
    assert!(listed_ok, "{listed}");
    assert!(
        listed.contains(&id) && listed.contains("agent-b"),
        "{listed}"
    );
    assert!(listed.contains("signed card verified"), "{listed}");
    assert!(
        listed.contains("fundi:audit,fundi:security") && listed.contains("nightly audits"),
        "{listed}"
    );

    // Approval narrowed: the grant is the request's scopes cut to the narrowing.
    let (approved_ok, approved) = cli(&a, &["access", "approve", &id, "--scopes", "fundi:audit"]);
    assert!(approved_ok, "{approved}");
    assert!(approved.contains("approved for fundi:audit"), "{approved}");
    assert!(
        approved.contains("not granted: fundi:security"),
        "{approved}"
    );
    let (again_ok, again) = cli(&a, &["access", "reject", &id]);
    assert!(
        !again_ok && again.contains("not pending"),
        "decided once: {again}"
    );

    // Collected once.
    let (status, collected) = collect(&a, &id, &secret).await;
    assert_eq!(status, StatusCode::OK, "{collected}");
    let token = collected["token"].as_str().unwrap().to_owned();
    assert!(token.starts_with("fundi_grant_"), "{collected}");
    assert_eq!(collected["scopes"], json!(["fundi:audit"]));
    assert_eq!(collected["user"], "acme:agent-b");
    let (status, second) = collect(&a, &id, &secret).await;
    assert_eq!(status, StatusCode::GONE, "{second}");
    assert!(
        second["error"]
            .as_str()
            .unwrap()
            .contains("handed out once"),
        "{second}"
    );

    // Work flows, as the person behind the agent, with no user token of A's.
    let (status, sent) = call_as(
        &a,
        &token,
        "SendMessage",
        json!({"message": message("hello", Value::Null)}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{sent}");
    assert_eq!(
        sent["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{sent}"
    );
    // ...within the narrowed scopes only.
    let mut scan = message("scan", json!({"url": "https://example.com"}));
    scan["metadata"] = json!({"skill": "security-scan"});
    let (_, refused) = call_as(&a, &token, "SendMessage", json!({"message": scan})).await;
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("fundi:security"),
        "{refused}"
    );
    // The holder learns nothing of other grants, requests or peers.
    for path in ["/admin/access-requests", "/admin/grants", "/admin/peers"] {
        assert_eq!(
            get_as(&a, &token, path).await,
            StatusCode::FORBIDDEN,
            "{path}"
        );
    }

    // The other direction is unaffected: A holds nothing of B's, and B knows no A.
    assert_eq!(
        get_as(&b, &token, "/a2a").await,
        StatusCode::METHOD_NOT_ALLOWED
    );
    let (status, _) = call_as(&b, &token, "ListTasks", json!({})).await;
    assert_eq!(
        status,
        StatusCode::UNAUTHORIZED,
        "A's grant is nothing to B"
    );
    let peers: Value = a.get("/peers").send().await.unwrap().json().await.unwrap();
    assert_eq!(
        peers["peers"],
        json!([]),
        "A gained no peer by approving: {peers}"
    );

    // Revoked: the next call is refused.
    let grant = collected["grant"].as_str().unwrap();
    let (revoked_ok, revoked) = cli(&a, &["grants", "revoke", grant]);
    assert!(revoked_ok, "{revoked}");
    let (status, _) = call_as(&a, &token, "ListTasks", json!({})).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    // Every step is in the audit log.
    let (_, audit) = cli(&a, &["audit"]);
    for action in [
        "access.request",
        "access.approve",
        "access.collect",
        "grant.revoke",
    ] {
        assert!(audit.contains(action), "{action} missing: {audit}");
    }
    assert!(audit.contains("by acme:agent-b"), "{audit}");
}
