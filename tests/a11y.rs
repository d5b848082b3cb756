//! a11y-audit through the real server: scope `fundi:audit` enforced at the gateway, a
//! report back over JSON-RPC, issues recorded once across runs.

mod common;

use common::*;
use serde_json::{Value, json};

const PAGE: &str = "<!doctype html><html lang=\"en\"><head><title>Shop</title></head>\
<body><main><h1>Shop</h1><img src=\"hero.png\"><button></button></main></body></html>";

/// A request to audit `PAGE`, a new message each time (one sent again is a retry).
fn audit_request() -> Value {
    static SENT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = SENT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    json!({"message": {"messageId": format!("a11y-{n}"), "role": "ROLE_USER",
                       "metadata": {"skill": "a11y-audit"},
                       "parts": [{"text": PAGE, "mediaType": "text/html", "filename": "shop.html"}]}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_audit_needs_the_audit_scope_and_returns_an_axe_style_report() {
    let dir = tempfile::tempdir().unwrap();
    let (auditor, reader, user) = (
        "auditor-token-0123456789",
        "security-token-0123456789",
        "alice-token-0123456789",
    );
    let env = [
        ("FUNDI__AUTH__STATIC__CLIENTS__AUDITOR__TOKEN", auditor),
        (
            "FUNDI__AUTH__STATIC__CLIENTS__AUDITOR__SCOPES",
            "[\"fundi:audit\"]",
        ),
        ("FUNDI__AUTH__STATIC__CLIENTS__SCANNER__TOKEN", reader),
        (
            "FUNDI__AUTH__STATIC__CLIENTS__SCANNER__SCOPES",
            "[\"fundi:security\"]",
        ),
        (
            "FUNDI__AUTH__STATIC__CLIENTS__OPS__TOKEN",
            "operator-token-0123456789",
        ),
        (
            "FUNDI__AUTH__STATIC__CLIENTS__OPS__SCOPES",
            "[\"fundi:admin\"]",
        ),
        ("FUNDI__AUTH__STATIC__USERS__ALICE", user),
    ];
    let mut server = Server::start(dir.path(), &env);
    server.user_token = user.into();

    // Without the scope: 403, and no task.
    server.token = reader.into();
    let refused = server
        .post()
        .json(&request("SendMessage", audit_request()))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 403);
    let challenge = refused.headers()["www-authenticate"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(challenge.contains("scope=\"fundi:audit\""), "{challenge}");
    assert_eq!(
        ok(&server, "ListTasks", json!({})).await["totalSize"],
        json!(0)
    );

    // With it: a completed task with the report and a summary.
    server.token = auditor.into();
    let task = ok(&server, "SendMessage", audit_request()).await["task"].clone();
    assert_eq!(state(&task), "TASK_STATE_COMPLETED", "{task}");
    let report = &task["artifacts"][0]["parts"][0]["data"];
    assert_eq!(
        task["artifacts"][0]["parts"][0]["mediaType"],
        "application/json"
    );
    let ids: Vec<&str> = report["pages"][0]["violations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["id"].as_str().unwrap())
        .collect();
    assert!(
        ids.contains(&"image-alt") && ids.contains(&"button-name"),
        "{ids:?}"
    );
    assert_eq!(report["pages"][0]["url"], "inline:shop.html");
    let summary = task["status"]["message"]["parts"][0]["text"]
        .as_str()
        .unwrap();
    assert!(
        summary.starts_with("Audited 1 page of inline:shop.html"),
        "{summary}"
    );
    let new = report["issues"]["new"].as_u64().unwrap();
    assert!(new >= 2);

    // The same page again: nothing new.
    let again = ok(&server, "SendMessage", audit_request()).await["task"].clone();
    let report = &again["artifacts"][0]["parts"][0]["data"];
    assert_eq!(report["issues"], json!({"new": 0, "updated": new}));

    // Operators list the recorded issues (scope fundi:admin), from the API and the CLI.
    let listed: Value = reqwest::Client::new()
        .get(format!(
            "{}/admin/issues?source=a11y-audit&status=open",
            server.url
        ))
        .bearer_auth("operator-token-0123456789")
        .header("X-Fundi-User-Token", user)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let issues = listed["issues"].as_array().unwrap();
    assert_eq!(issues.len() as u64, new, "{listed}");
    assert!(
        issues.iter().all(|i| i["occurrences"] == json!(2)),
        "{listed}"
    );
    let refused = reqwest::Client::new()
        .get(format!("{}/admin/issues", server.url))
        .bearer_auth(auditor)
        .header("X-Fundi-User-Token", user)
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 403, "only admins list issues");
    let cli = std::process::Command::new(env!("CARGO_BIN_EXE_fundi"))
        .args(["issues", "--source", "a11y-audit"])
        .env("FUNDI_URL", &server.url)
        .env("FUNDI_TOKEN", "operator-token-0123456789")
        .env("FUNDI_USER_TOKEN", user)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&cli.stdout);
    assert!(
        cli.status.success(),
        "{}",
        String::from_utf8_lossy(&cli.stderr)
    );
    assert!(
        out.contains("[a11y-audit critical] inline:shop.html"),
        "{out}"
    );
    assert!(out.contains("Images must have alternative text"), "{out}");

    // The card says what the skill needs.
    let card = agent_card(&server).await;
    let skill = card_skill(&card, "a11y-audit").clone();
    assert_eq!(
        skill["securityRequirements"][0]["schemes"]["bearer"]["list"],
        json!(["fundi:audit"])
    );
    let scan = card["skills"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == "security-scan")
        .expect("security-scan on the card")
        .clone();
    assert_eq!(
        scan["securityRequirements"][0]["schemes"]["bearer"]["list"],
        json!(["fundi:security"])
    );
    // The auditor cannot start a security scan.
    let scan_request = json!({"message": {"messageId": "scan-1", "role": "ROLE_USER",
        "metadata": {"skill": "security-scan"},
        "parts": [{"data": {"url": "https://example.com/"}}]}});
    let refused = server
        .post()
        .json(&request("SendMessage", scan_request))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 403);
}

/// A page of `size` bytes: valid HTML around one long paragraph.
fn page_of(size: usize) -> String {
    let (head, tail) = (
        "<!doctype html><html lang=\"en\"><head><title>big</title></head><body><p>",
        "</p></body></html>",
    );
    let filler = "a \"quoted\" word\n".repeat(size / 16 + 1);
    let mut page = format!("{head}{filler}");
    page.truncate(size - tail.len());
    page + tail
}

/// The gateway lets through a page as large as the audit takes inline, as text and in
/// base64, whatever its own limits say; one byte more is refused naming the setting.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_inline_page_at_the_audits_limit_gets_through_the_gateway() {
    use base64::Engine as _;
    let dir = tempfile::tempdir().unwrap();
    let limit = 2 * 1024 * 1024;
    let env = [
        ("FUNDI__SKILLS__A11Y_AUDIT__MAX_PAGE_BYTES", "2097152"),
        ("FUNDI__GATEWAY__MAX_BODY_BYTES", "1048576"),
        ("FUNDI__GATEWAY__MAX_TEXT_BYTES", "262144"),
    ];
    let server = Server::start(dir.path(), &env);
    let audit = |part: Value| {
        json!({"message": {"messageId": format!("big-{}", part.to_string().len()),
                           "role": "ROLE_USER", "metadata": {"skill": "a11y-audit"},
                           "parts": [part]}})
    };
    let at_limit = page_of(limit);
    assert_eq!(at_limit.len(), limit);
    let text = json!({"text": at_limit, "mediaType": "text/html", "filename": "big.html"});
    let encoded = base64::engine::general_purpose::STANDARD.encode(&at_limit);
    let raw = json!({"raw": encoded, "mediaType": "text/html", "filename": "big.html"});
    for part in [text, raw] {
        let done = ok(&server, "SendMessage", audit(part)).await["task"].clone();
        assert_eq!(state(&done), "TASK_STATE_COMPLETED", "{}", done["status"]);
    }
    // One byte more: as text, the gateway's refusal; in base64, the audit's (the body
    // still fits); each names the setting.
    let over = page_of(limit + 1);
    let text = json!({"text": over, "mediaType": "text/html", "filename": "o.html"});
    let refused = rpc(&server, "SendMessage", audit(text)).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("gateway.max-text-bytes"), "{message}");
    let encoded = base64::engine::general_purpose::STANDARD.encode(&over);
    let raw = json!({"raw": encoded, "mediaType": "text/html", "filename": "o.html"});
    let refused = ok(&server, "SendMessage", audit(raw)).await["task"].clone();
    let why = refused["status"]["message"]["parts"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(
        why.contains("skills.a11y-audit.max-page-bytes"),
        "{refused}"
    );
}
