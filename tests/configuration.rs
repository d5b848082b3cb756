//! `fundi serve` configuration as an operator meets it: env overrides per field, bad
//! values refused with the field named, loopback-only by default.

mod common;

use common::*;
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn environment_variables_override_single_fields() {
    let dir = tempfile::tempdir().unwrap();
    let env = [
        ("FUNDI__SKILLS__ECHO__STEPS", "3"),
        ("FUNDI__GATEWAY__NAME", "env-named"),
    ];
    let server = Server::start(dir.path(), &env);
    let card = agent_card(&server).await;
    assert_eq!(card["name"], "env-named");
    // The rest of the gateway section still comes from the file.
    assert_eq!(
        card["description"].as_str().unwrap().split(':').next(),
        Some("A2A runtime for long-running agent skills")
    );

    // echo now reports 3 steps by default.
    let response = server
        .post()
        .json(&request(
            "SendStreamingMessage",
            json!({"message": message("x", Value::Null)}),
        ))
        .send()
        .await
        .unwrap();
    let events = read_sse(response).await;
    let progress = events
        .iter()
        .filter(|(_, e)| {
            e["result"]["statusUpdate"]["status"]["message"]["metadata"]["progress"].is_number()
        })
        .count();
    assert_eq!(progress, 3);
}

#[test]
fn bad_configuration_is_refused_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let (status, stderr) = start_failing(
        dir.path(),
        &["--bind", "127.0.0.1:0"],
        &[("FUNDI__STORE__DURABILITY", "eventually")],
    );
    assert!(!status.success());
    assert!(
        stderr.to_lowercase().contains("store.durability"),
        "{stderr}"
    );

    let (status, stderr) = start_failing(
        dir.path(),
        &["--bind", "127.0.0.1:0"],
        &[("FUNDI__RUNTIME__MAX_CONCURRENT_RUNS", "0")],
    );
    assert!(!status.success());
    assert!(stderr.contains("runtime.max-concurrent-runs"), "{stderr}");
}

#[test]
fn a_non_loopback_address_is_refused_by_default() {
    let dir = tempfile::tempdir().unwrap();
    let (status, stderr) = start_failing(dir.path(), &["--bind", "0.0.0.0:0"], &[]);
    assert!(!status.success());
    assert!(stderr.contains("not a loopback address"), "{stderr}");
    // Static tokens, even configured ones, are for local use only.
    let env = [(
        "FUNDI__AUTH__STATIC__USERS__ALICE",
        "0123456789abcdef-alice",
    )];
    let (status, stderr) = start_failing(dir.path(), &["--bind", "0.0.0.0:0"], &env);
    assert!(!status.success());
    assert!(stderr.contains("auth.mode = \"jwt\""), "{stderr}");
    // jwt mode must say where its keys are.
    let env = [("FUNDI__AUTH__MODE", "jwt")];
    let (status, stderr) = start_failing(dir.path(), &["--bind", "127.0.0.1:0"], &env);
    assert!(!status.success());
    assert!(
        stderr.contains("auth.machine: set jwks-url or public-key-file"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn static_tokens_from_the_environment_admit_their_users_only() {
    let dir = tempfile::tempdir().unwrap();
    let (client, alice) = ("ci-token-0123456789", "alice-token-0123456789");
    let env = [
        ("FUNDI__AUTH__STATIC__CLIENTS__CI__TOKEN", client),
        (
            "FUNDI__AUTH__STATIC__CLIENTS__CI__SCOPES",
            "[\"fundi:admin\"]",
        ),
        ("FUNDI__AUTH__STATIC__USERS__ALICE", alice),
    ];
    let mut server = Server::start(dir.path(), &env);
    assert!(
        !server.credentials.exists(),
        "no local credentials are made when tokens are configured"
    );
    server.token = client.into();
    server.user_token = alice.into();
    let listed = ok(&server, "ListTasks", json!({})).await;
    assert_eq!(listed["totalSize"], json!(0));
    server.user_token = "someone-else-0123456789".into();
    let refused = server
        .post()
        .json(&request("ListTasks", json!({})))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 401);
}
