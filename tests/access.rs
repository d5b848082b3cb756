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

    // ...and the refusal says which scope the routes need, not that admin is a skill.
    let refused: Value = reqwest::Client::new()
        .get(format!("{}/admin/grants", a.url))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let said = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(
        said.contains("the admin routes (/admin/...) need the scope \"fundi:admin\"")
            && !said.contains("skill"),
        "{said}"
    );
    // A token nobody knows is told where tokens come from.
    let unknown = common::rpc_with(
        &a,
        "not-a-token-of-anyone",
        &a.user_token,
        "ListTasks",
        json!({}),
    )
    .await;
    let said = unknown["error"]["message"].as_str().unwrap_or_default();
    assert!(
        said.contains("credentials.json") && said.contains("auth.static"),
        "{said}"
    );

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

/// B (a fundi) asks A for access as its own agent, a person at A approves, B collects
/// the token and delegates to A with it; A's tasks belong to the person who asked.
// Worker threads: the provider's JWK Set is served while the CLI blocks this thread.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fundi_asks_its_peer_for_access_and_delegates_with_what_it_collects() {
    let idp = Idp::start().await;
    let (a_dir, b_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let a = start_a(a_dir.path(), &idp, &[]);
    let b = Server::start(b_dir.path(), &[]);
    let card: Value = reqwest::get(format!("{}/.well-known/agent-card.json", a.url))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let offer = &card["capabilities"]["extensions"][0];
    assert_eq!(offer["uri"], "urn:fundi:access-requests:1", "{card}");
    assert_eq!(offer["params"]["url"], format!("{}/access-requests", a.url));
    assert_eq!(offer["params"]["issuers"], json!([idp.issuer]));

    let added = [
        "peers",
        "add",
        "a",
        "--peer-url",
        &a.url,
        "--allow-private-networks",
    ];
    let (added_ok, said) = cli(&b, &added);
    assert!(added_ok, "{said}");
    let assertion = b_dir.path().join("assertion.jwt");
    std::fs::write(&assertion, idp.sign(&idp.claims("b-operator", &a.url))).unwrap();
    let asking = [
        "access",
        "request",
        "--peer",
        "a",
        "--scopes",
        "fundi:audit",
        "--reason",
        "B audits our shared site",
        "--assertion-file",
        assertion.to_str().unwrap(),
    ];
    let (asked_ok, asked) = cli(&b, &asking);
    assert!(asked_ok, "{asked}");
    let id = asked.split_whitespace().next().unwrap().to_owned();
    let secret = asked.lines().nth(2).unwrap().trim().to_owned();
    assert!(secret.starts_with("fundi_continue_"), "{asked}");

    // A's queue names B's card, signed and verified, and the person B's operator is.
    let (_, listed) = cli(&a, &["access", "list"]);
    assert!(
        listed.contains(&id) && listed.contains("b-operator"),
        "{listed}"
    );
    assert!(
        listed.contains(&format!("{}/.well-known/agent-card.json", b.url)),
        "{listed}"
    );
    assert!(listed.contains("signed card verified"), "{listed}");

    let collecting = [
        "access",
        "collect",
        "--peer",
        "a",
        &id,
        "--continuation",
        &secret,
    ];
    let (pending_ok, pending) = cli(&b, &collecting);
    assert!(pending_ok && pending.contains("still pending"), "{pending}");
    let (approved_ok, approved) = cli(&a, &["access", "approve", &id]);
    assert!(approved_ok, "{approved}");
    let (collected_ok, collected) = cli(&b, &collecting);
    assert!(
        collected_ok && collected.contains("collected"),
        "{collected}"
    );
    let (again_ok, again) = cli(&b, &collecting);
    assert!(!again_ok && again.contains("handed out once"), "{again}");

    // B's delegation reaches A with the collected token, as the person who asked.
    let mut sent = message("through the grant", json!({"peer": "a", "skill": "echo"}));
    sent["metadata"] = json!({"skill": "delegate"});
    let task = common::ok(
        &b,
        "SendMessage",
        json!({"message": sent, "configuration": {"returnImmediately": true}}),
    )
    .await;
    let id = task["task"]["id"].as_str().unwrap();
    let done = common::poll_task(&b, id, |t| {
        common::state(t) != "TASK_STATE_WORKING" && common::state(t) != "TASK_STATE_SUBMITTED"
    })
    .await;
    assert_eq!(common::state(&done), "TASK_STATE_COMPLETED", "{done}");
    let (_, audit) = cli(&a, &["audit"]);
    assert!(
        audit.contains("access.collect") && audit.contains("by acme:b-operator"),
        "{audit}"
    );
    let (_, b_audit) = cli(&b, &["audit"]);
    assert!(
        b_audit.contains("peer.access-request") && b_audit.contains("peer.access-collect"),
        "{b_audit}"
    );
    assert!(!b_audit.contains(&secret), "the secret is never recorded");
}

/// An agent of the test's own on loopback: an unsigned card, and a callback route that
/// keeps what it is told.
async fn agent_with_callback() -> (String, std::sync::Arc<std::sync::Mutex<Vec<Value>>>) {
    let told = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let kept = told.clone();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let card = json!({"name": "Callback agent", "description": "asks for access",
        "supportedInterfaces": [{"url": format!("{base}/a2a"), "protocolBinding": "JSONRPC",
            "protocolVersion": "1.0"}], "version": "1", "capabilities": {}, "skills": []});
    let app = axum::Router::new()
        .route(
            "/.well-known/agent-card.json",
            axum::routing::get(move || {
                let card = card.clone();
                async move { axum::Json(card) }
            }),
        )
        .route(
            "/decided",
            axum::routing::post(move |axum::Json(body): axum::Json<Value>| {
                let kept = kept.clone();
                async move {
                    kept.lock().unwrap().push(body);
                    "ok"
                }
            }),
        );
    tokio::spawn(async move { axum::serve(listener, app).await });
    (base, told)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decision_is_told_to_the_callback_on_the_cards_origin_without_the_token() {
    let idp = Idp::start().await;
    let a_dir = tempfile::tempdir().unwrap();
    let a = start_a(a_dir.path(), &idp, &[]);
    let (agent, told) = agent_with_callback().await;
    let assertion = idp.sign(&idp.claims("agent-d", &a.url));
    let mut body = json!({"card": format!("{agent}/.well-known/agent-card.json"),
        "scopes": ["fundi:audit"], "reason": "callbacks", "assertion": assertion,
        "callback": "https://elsewhere.test/decided"});
    let (status, refused, _) = ask(&a, &body).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{refused}");
    assert!(
        refused["error"].as_str().unwrap().contains("card's origin"),
        "{refused}"
    );
    body["callback"] = json!(format!("{agent}/decided"));
    let (status, asked, _) = ask(&a, &body).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{asked}");
    let id = asked["id"].as_str().unwrap().to_owned();
    let (_, listed) = cli(&a, &["access", "list"]);
    assert!(
        listed.contains("Callback agent") && listed.contains("card not signed"),
        "{listed}"
    );
    let (approved_ok, approved) = cli(&a, &["access", "approve", &id]);
    assert!(approved_ok, "{approved}");
    let deadline = std::time::Instant::now() + common::DEADLINE;
    while told.lock().unwrap().is_empty() {
        assert!(std::time::Instant::now() < deadline, "no callback came");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let said = told.lock().unwrap()[0].clone();
    assert_eq!(
        said,
        json!({"id": id, "status": "approved"}),
        "no token in it"
    );
}
