//! Requests for access decided in the web console, in a real browser (Debian's
//! Chromium, driven by playwright-core; see tests/web_console.rs): the page passes
//! fundi's own accessibility audit, shows who asks and which agent, and its Approve
//! (narrowed) and Reject forms are the same steps as the CLI's: the requester then
//! collects only the narrowed scopes, or reads the reason it was refused.

#[path = "access/support.rs"]
mod access;
mod common;
#[path = "access/idp.rs"]
mod idp;
#[path = "web_console/support.rs"]
mod support;

use common::Server;
use idp::Idp;
use reqwest::StatusCode;
use serde_json::{Value, json};
use support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_for_access_are_decided_in_the_console() {
    let chromium = chromium();
    let script = browser_script_named("access.mjs");
    let idp = Idp::start().await;
    let (a_dir, b_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let b = Server::start(b_dir.path(), &[]);
    let listed: Vec<(&'static str, String)> = idp
        .env("acme")
        .into_iter()
        .map(|(k, v)| (&*Box::leak(k.into_boxed_str()), v))
        .collect();
    let a = start(a_dir.path(), &listed);

    let mut asked = Vec::new();
    for scopes in [vec!["fundi:audit", "fundi:security"], vec!["fundi:audit"]] {
        let assertion = idp.sign(&idp.claims("agent-b", &a.url));
        let (status, body, _) = access::ask(&a, &access::request_of(&b, &scopes, &assertion)).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{body}");
        asked.push((
            body["id"].as_str().unwrap().to_owned(),
            body["continuation"].as_str().unwrap().to_owned(),
        ));
    }
    let session = sign_in(&a, ALICE).await;
    let path = "/console/access-requests";
    let listing = page(&a, &session.cookie, path).await;
    assert_accessible(&listing, path);
    assert!(
        listing.contains(&asked[0].0) && listing.contains(&asked[1].0),
        "{listing}"
    );

    let given = json!({
        "link": link_for(&a, ALICE),
        "chromium": chromium,
        "approve": asked[0].0,
        "reject": asked[1].0,
        "card": format!("{}/.well-known/agent-card.json", b.url),
    });
    let output = tokio::process::Command::new("node")
        .arg(&script)
        .env("FUNDI_CONSOLE_TEST", given.to_string())
        .output()
        .await
        .expect("running node");
    let stdout = String::from_utf8_lossy(&output.stdout);
    println!("{stdout}");
    assert!(
        output.status.success() && stdout.contains(" passed, 0 failed"),
        "the browser checks failed:\n{stdout}\n{}\nserver log:\n{}",
        String::from_utf8_lossy(&output.stderr),
        std::fs::read_to_string(&a.stderr).unwrap_or_default()
    );

    // What the browser decided, seen by the requester and in the audit log.
    let (status, collected) = access::collect(&a, &asked[0].0, &asked[0].1).await;
    assert_eq!(status, StatusCode::OK, "{collected}");
    assert_eq!(collected["scopes"], json!(["fundi:audit"]), "{collected}");
    assert!(
        collected["expiresAt"].is_string(),
        "the grant expires: {collected}"
    );
    let (status, refused) = access::collect(&a, &asked[1].0, &asked[1].1).await;
    assert_eq!(status, StatusCode::GONE, "{refused}");
    assert!(
        refused["error"]
            .as_str()
            .unwrap()
            .contains("we do not know this agent"),
        "{refused}"
    );
    let log = admin_as(&a, ALICE, reqwest::Method::GET, "/admin/audit").await;
    let through_console = |action: &str, target: &str| {
        log["records"].as_array().unwrap().iter().any(|r: &Value| {
            r["action"] == action
                && r["target"] == target
                && r["user"] == "alice"
                && r["detail"]["through"] == "console"
        })
    };
    assert!(through_console("access.approve", &asked[0].0), "{log}");
    assert!(through_console("access.reject", &asked[1].0), "{log}");
}
