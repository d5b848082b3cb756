//! Grants and the audit log through the real binary: an operator vends a client
//! credential with `fundi grants create` (its token printed once), the client uses it
//! beside the user's token, the operator narrows and revokes it (the next request is
//! refused; a stream already open and its task go on), an expiring grant stops
//! admitting, and `fundi audit` shows every step in order, across a restart.

mod common;

use std::process::Command;
use std::time::Instant;

use common::*;
use serde_json::{Value, json};

const OPERATOR: &str = "operator-token-0123456789";
const ALICE: &str = "alice-token-0123456789";

fn env() -> Vec<(&'static str, &'static str)> {
    vec![
        ("FUNDI__AUTH__STATIC__CLIENTS__OPS__TOKEN", OPERATOR),
        (
            "FUNDI__AUTH__STATIC__CLIENTS__OPS__SCOPES",
            "[\"fundi:admin\"]",
        ),
        ("FUNDI__AUTH__STATIC__USERS__ALICE", ALICE),
    ]
}

/// Runs the CLI as the operator.
fn fundi(server: &Server, args: &[&str]) -> (bool, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_fundi"))
        .args(args)
        .env("FUNDI_URL", &server.url)
        .env("FUNDI_TOKEN", OPERATOR)
        .env("FUNDI_USER_TOKEN", ALICE)
        .output()
        .expect("run fundi");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// `fundi grants create ...`: the grant's id and its token.
fn vend(server: &Server, client: &str, scopes: &str, expires: &str) -> (String, String) {
    let args = [
        "grants",
        "create",
        "--client",
        client,
        "--scopes",
        scopes,
        "--expires",
        expires,
    ];
    let (ok, out, err) = fundi(server, &args);
    assert!(ok, "{err}");
    assert!(out.contains(&format!("client {client}: {scopes}")), "{out}");
    assert!(out.contains("shown once"), "{out}");
    let id = out.split_whitespace().next().unwrap().to_owned();
    let token = out.lines().last().unwrap().trim().to_owned();
    assert!(token.starts_with("fundi_grant_"), "{out}");
    (id, token)
}

/// The JSON-RPC answer to a call made with `token` for alice.
async fn call_with(server: &Server, token: &str, method: &str, params: Value) -> (u16, Value) {
    let response = reqwest::Client::new()
        .post(server.rpc_url())
        .bearer_auth(token)
        .header("X-Fundi-User-Token", ALICE)
        .json(&request(method, params))
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

fn audit_of(skill: &str) -> Value {
    json!({"message": {"messageId": format!("m-{}", uuid_like()), "role": "ROLE_USER",
                       "metadata": {"skill": skill},
                       "parts": [{"text": "<!doctype html><html lang=\"en\"><head><title>t</title></head><body><main><h1>t</h1></main></body></html>",
                                  "mediaType": "text/html"}]}})
}

fn uuid_like() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

/// The actions of the audit log, in order, as `fundi audit --json` gives them.
fn audit_actions(server: &Server) -> Vec<(String, String, String)> {
    let (ok, out, err) = fundi(server, &["audit", "--json"]);
    assert!(ok, "{err}");
    let log: Value = serde_json::from_str(&out).unwrap();
    log["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let field = |name: &str| r[name].as_str().unwrap_or("").to_owned();
            (
                field("action"),
                field("target"),
                format!("{}/{}", field("user"), field("client")),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operators_vend_narrow_and_revoke_grants_and_the_audit_log_keeps_every_step() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &env());

    // A grant admits its client with its scopes, beside the user's own token.
    let (auditor, auditor_token) = vend(&server, "ci-audit", "fundi:audit", "30d");
    let (status, done) = call_with(
        &server,
        &auditor_token,
        "SendMessage",
        audit_of("a11y-audit"),
    )
    .await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(
        state(&done["result"]["task"]),
        "TASK_STATE_COMPLETED",
        "{done}"
    );
    let (status, refused) = call_with(
        &server,
        &auditor_token,
        "SendMessage",
        audit_of("security-scan"),
    )
    .await;
    assert_eq!(status, 403, "{refused}");
    let (status, _) = reqwest::Client::new()
        .get(format!("{}/admin/grants", server.url))
        .bearer_auth(&auditor_token)
        .header("X-Fundi-User-Token", ALICE)
        .send()
        .await
        .map(|r| (r.status().as_u16(), ()))
        .unwrap();
    assert_eq!(status, 403, "a grant reveals nothing of the grants");

    // Listed without tokens or their digests.
    let (ok, out, _) = fundi(&server, &["grants", "list", "--json"]);
    assert!(ok);
    assert!(
        out.contains(&auditor) && !out.contains(&auditor_token),
        "{out}"
    );
    assert!(!out.contains("tokenDigest"), "{out}");

    // Narrowed: only within what it holds, and effective at the next request.
    let (both, both_token) = vend(&server, "ci-both", "fundi:audit,fundi:security", "30d");
    let (ok, _, err) = fundi(
        &server,
        &["grants", "narrow", &auditor, "--scopes", "fundi:security"],
    );
    assert!(
        !ok && err.contains("can only be narrowed") && err.contains("HTTP 400"),
        "{err}"
    );
    let (ok, out, err) = fundi(
        &server,
        &["grants", "narrow", &both, "--scopes", "fundi:security"],
    );
    assert!(ok, "{err}");
    assert!(out.contains("client ci-both: fundi:security;"), "{out}");
    let (status, _) = call_with(&server, &both_token, "SendMessage", audit_of("a11y-audit")).await;
    assert_eq!(status, 403, "narrowed away");

    // Revoked while a stream of its client is open: the next request is refused; the
    // open stream and its task go on to the end.
    let params = json!({"message": message("slow", json!({"steps": 20, "delayMs": 100}))});
    let stream = reqwest::Client::new()
        .post(server.rpc_url())
        .bearer_auth(&auditor_token)
        .header("X-Fundi-User-Token", ALICE)
        .json(&request("SendStreamingMessage", params))
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 200);
    let (ok, out, err) = fundi(&server, &["grants", "revoke", &auditor]);
    assert!(ok && out.contains("revoked "), "{out}{err}");
    let (status, body) = call_with(&server, &auditor_token, "ListTasks", json!({})).await;
    assert_eq!(status, 401, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("revoked"),
        "{body}"
    );
    let events = read_sse(stream).await;
    let last = &events.last().expect("events").1;
    assert_eq!(
        last["result"]["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED",
        "the open stream ran to its end: {last}"
    );

    // An expiring grant stops admitting once its time is up.
    let (_, brief_token) = vend(&server, "ci-brief", "fundi:audit", "1s");
    let deadline = Instant::now() + DEADLINE;
    loop {
        let (status, body) = call_with(&server, &brief_token, "ListTasks", json!({})).await;
        if status == 401 {
            assert!(
                body["error"]["message"]
                    .as_str()
                    .unwrap()
                    .contains("expired"),
                "{body}"
            );
            break;
        }
        assert!(Instant::now() < deadline, "the grant never expired");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }

    // The audit log has every step, in order, with who did it and through which client;
    // grants, revocations and the log survive a restart.
    let expected = [
        (
            "grant.create".to_owned(),
            auditor.clone(),
            "alice/ops".to_owned(),
        ),
        (
            "grant.create".to_owned(),
            both.clone(),
            "alice/ops".to_owned(),
        ),
        (
            "grant.narrow".to_owned(),
            both.clone(),
            "alice/ops".to_owned(),
        ),
        (
            "grant.revoke".to_owned(),
            auditor.clone(),
            "alice/ops".to_owned(),
        ),
    ];
    let actions = audit_actions(&server);
    assert_eq!(actions[..4], expected[..], "{actions:?}");
    assert_eq!(actions.len(), 5, "the brief grant's creation: {actions:?}");
    assert!(server.terminate().success());

    let server = Server::start(dir.path(), &env());
    assert_eq!(audit_actions(&server)[..4], expected[..]);
    let (status, _) = call_with(&server, &auditor_token, "ListTasks", json!({})).await;
    assert_eq!(status, 401, "still revoked");
    let (status, body) = call_with(&server, &both_token, "ListTasks", json!({})).await;
    assert_eq!(status, 200, "still admitted: {body}");
    let (ok, out, _) = fundi(&server, &["audit", "--after", "0", "--limit", "2"]);
    assert!(
        ok && out.contains("grant.create") && out.contains("(more: fundi audit --after"),
        "{out}"
    );
}
