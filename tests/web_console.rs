//! The web console through the real binary. In a real browser (Debian's Chromium,
//! headless, driven by playwright-core from npm; `.ci/run` installs Chromium): signing
//! in by a one-time link, a task's progress appearing live, refusal of another user's
//! task, the accessibility report and the heal diff as people read them, approving a
//! gated task with the keyboard alone, a form from another origin refused, signing
//! out. Over HTTP: the Origin, CSRF and Host checks, and every page passing fundi's own
//! accessibility audit. Chromium is found at /usr/bin/chromium or `FUNDI_CHROMIUM`;
//! missing, the test fails and says how to install it.

mod common;
#[path = "web_console/support.rs"]
mod support;

use common::*;
use fundi_skills::testing::{TestRepo, serve_dir};
use serde_json::{Value, json};
use support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_in_a_real_browser() {
    let chromium = chromium();
    let script = browser_script();
    // A site in a git repository, so that an audit records an issue and heal proposes
    // a fix of it.
    let repo = TestRepo::new(&[(
        "public/index.html",
        "<!doctype html>\n<html>\n<head><title>Home</title></head>\n<body><main><h1>Home</h1></main></body>\n</html>\n",
    )]);
    let site = serve_dir(repo.work.join("public")).await;
    let heal_env = [
        (
            "FUNDI__SKILLS__A11Y_AUDIT__ALLOWED_ORIGINS",
            format!("[\"{}\"]", site.trim_end_matches('/')),
        ),
        (
            "FUNDI__SKILLS__HEAL_ISSUE__WORKSPACES",
            format!("[\"{}\"]", repo.workspace.display()),
        ),
        (
            "FUNDI__SKILLS__HEAL_ISSUE__LOOP",
            format!(
                "[{{source = \"a11y-audit\", site = \"{site}\", repository = \"{}\", root = \"public\"}}]",
                repo.work.display()
            ),
        ),
    ];
    let server = start(repo.temp.path(), &heal_env);

    // Alice's echo asks her for input once approved; Bob's waits for an approver.
    let live = echo_as(
        &server,
        ALICE,
        json!({"askInput": true, "steps": 5, "delayMs": 100}),
        "demo",
    )
    .await;
    let approve = format!("/admin/approvals/{live}/approve");
    let approved = admin_as(&server, ALICE, reqwest::Method::POST, &approve).await;
    assert!(approved.get("task").is_some(), "{approved}");
    poll_as(&server, ALICE, &live, |t| {
        state(t) == "TASK_STATE_INPUT_REQUIRED"
    })
    .await;
    let bobs = echo_as(&server, BOB, json!({"steps": 1}), "release check").await;
    // Alice audits the site: an issue, then the loop's heal with its diff.
    let mut audit = message("audit", json!({"url": format!("{site}index.html")}));
    audit["metadata"] = json!({"skill": "a11y-audit"});
    let audit = rpc_as(&server, ALICE, "SendMessage", json!({"message": audit})).await;
    let audit = audit["task"]["id"].as_str().unwrap().to_owned();
    poll_as(&server, ALICE, &audit, |t| {
        state(t) == "TASK_STATE_COMPLETED"
    })
    .await;
    let heal = heal_task(&server).await;
    poll_as(&server, ALICE, &heal, |t| {
        state(t) == "TASK_STATE_INPUT_REQUIRED"
    })
    .await;

    // Every page passes fundi's own accessibility audit (read while Bob's task waits).
    let session = sign_in(&server, ALICE).await;
    for path in [
        "/console/tasks".to_owned(),
        format!("/console/tasks/{live}"),
        format!("/console/tasks/{audit}"),
        format!("/console/tasks/{heal}"),
        "/console/approvals".to_owned(),
        "/console/issues".to_owned(),
        "/console/dead-letters".to_owned(),
        "/console/schedules".to_owned(),
        "/console/grants".to_owned(),
    ] {
        assert_accessible(&page(&server, &session.cookie, &path).await, &path);
    }

    // The list filters by skill.
    let audits = page(&server, &session.cookie, "/console/tasks?skill=a11y-audit").await;
    assert!(
        audits.contains(&audit) && !audits.contains(&live),
        "{audits}"
    );
    let echoes = page(&server, &session.cookie, "/console/tasks?skill=echo").await;
    assert!(
        echoes.contains(&live) && !echoes.contains(&audit),
        "{echoes}"
    );
    let unknown = plain_client()
        .get(format!("{}/console/tasks?skill=nope", server.url))
        .header("cookie", &session.cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status(), 400);
    assert!(
        unknown
            .text()
            .await
            .unwrap()
            .contains("there is no skill &quot;nope&quot;")
    );

    let given = json!({
        "url": server.url,
        "link": link_for(&server, ALICE),
        "chromium": chromium,
        "token": OPS,
        "userHeader": USER_HEADER,
        "userToken": ALICE,
        "live": live,
        "bobs": bobs,
        "audit": audit,
        "heal": heal,
        "foreign": foreign_site(&server.url).await,
        "screenshots": std::env::var("FUNDI_CONSOLE_SCREENSHOTS").ok(),
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
        std::fs::read_to_string(&server.stderr).unwrap_or_default()
    );

    // What the browser did, seen through the API: Bob's task ran, approved by Alice
    // through the console; the audit log says so.
    poll_as(&server, BOB, &bobs, |t| state(t) == "TASK_STATE_COMPLETED").await;
    let log = admin_as(&server, ALICE, reqwest::Method::GET, "/admin/audit").await;
    let decided = log["records"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["action"] == "approval.approve" && r["target"] == bobs.as_str())
        .unwrap_or_else(|| panic!("no approval of {bobs} recorded: {log}"));
    assert_eq!(decided["user"], "alice", "{decided}");
    assert_eq!(decided["detail"]["through"], "console", "{decided}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_changes_need_this_origin_and_the_session_token() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path(), &[]);
    let task = echo_as(&server, ALICE, json!({"steps": 1}), "checks").await;
    let session = sign_in(&server, ALICE).await;
    let cancel = format!("/console/tasks/{task}/cancel");
    let own = server.url.as_str();

    let (status, page) = post_form(&server, &cancel, &session.cookie, None, &session.csrf).await;
    assert_eq!(status, 403, "no Origin: {page}");
    assert!(page.contains("no Origin header"), "{page}");
    let (status, page) = post_form(
        &server,
        &cancel,
        &session.cookie,
        Some("http://evil.example"),
        &session.csrf,
    )
    .await;
    assert_eq!(status, 403, "a foreign Origin: {page}");
    assert!(page.contains("not from this console"), "{page}");
    let (status, page) = post_form(&server, &cancel, &session.cookie, Some(own), "0123").await;
    assert_eq!(status, 403, "a wrong token: {page}");
    assert!(page.contains("CSRF token"), "{page}");
    let still = get_as(&server, ALICE, &task).await;
    assert_eq!(state(&still), "TASK_STATE_SUBMITTED", "{still}");

    // Bob's session cannot cancel Alice's task, even with everything right.
    let bob = sign_in(&server, BOB).await;
    let (status, page) = post_form(&server, &cancel, &bob.cookie, Some(own), &bob.csrf).await;
    assert_eq!(status, 404, "{page}");
    // Alice's can.
    let (status, page) =
        post_form(&server, &cancel, &session.cookie, Some(own), &session.csrf).await;
    assert_eq!(status, 303, "{page}");
    let canceled = get_as(&server, ALICE, &task).await;
    assert_eq!(state(&canceled), "TASK_STATE_CANCELED", "{canceled}");

    // A page asked for under a foreign host name (DNS rebinding) is refused; so is one
    // without a session, and the operators' pages for a user without fundi:admin.
    let rebound = plain_client()
        .get(format!("{}/console/tasks", server.url))
        .header("host", "evil.example")
        .header("cookie", &session.cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(rebound.status(), 403);
    let anonymous = plain_client()
        .get(format!("{}/console/tasks", server.url))
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status(), 401);
    assert!(anonymous.text().await.unwrap().contains("fundi console"));

    // Signing out ends the session's open streams.
    let mut counts = plain_client()
        .get(format!("{}/console/tasks/counts", server.url))
        .header("cookie", &session.cookie)
        .send()
        .await
        .unwrap();
    let first = counts.chunk().await.unwrap().expect("the first counts");
    assert!(String::from_utf8_lossy(&first).contains("event: counts"));
    let sign_out = "/console/sign-out";
    let (status, page) =
        post_form(&server, sign_out, &session.cookie, Some(own), &session.csrf).await;
    assert_eq!(status, 200, "{page}");
    let ended = tokio::time::timeout(DEADLINE, async {
        while counts.chunk().await.unwrap().is_some() {}
    })
    .await;
    assert!(ended.is_ok(), "the counts stream outlived the session");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operators_pages_need_the_admin_scope_and_the_console_can_be_off() {
    let dir = tempfile::tempdir().unwrap();
    let users = [
        (
            "FUNDI__AUTH__STATIC__CLIENTS__CI__TOKEN",
            "ci-token-0123456789abcdef".to_owned(),
        ),
        ("FUNDI__AUTH__STATIC__CLIENTS__CI__SCOPES", "[]".to_owned()),
    ];
    let server = start(dir.path(), &users);
    let links = format!("{}/console/sign-in-links", server.url);
    let answer = call_with(
        reqwest::Method::POST,
        &links,
        "ci-token-0123456789abcdef",
        BOB,
    )
    .await;
    let cookie = open_link(answer["url"].as_str().unwrap()).await;
    let tasks = page(&server, &cookie, "/console/tasks").await;
    assert!(
        !tasks.contains("/console/grants"),
        "operators' links shown to a user"
    );
    for path in [
        "/console/issues",
        "/console/grants",
        "/console/schedules",
        "/console/dead-letters",
        "/console/approvals",
    ] {
        let refused = plain_client()
            .get(format!("{}{path}", server.url))
            .header("cookie", &cookie)
            .send()
            .await
            .unwrap();
        assert_eq!(refused.status(), 403, "{path}");
    }
    drop(server);

    let dir = tempfile::tempdir().unwrap();
    let mut off = users.to_vec();
    off.push(("FUNDI__GATEWAY__CONSOLE", "false".to_owned()));
    let server = start(dir.path(), &off);
    // What is left answers as the HTTP+JSON binding does: no link, and `/console/tasks`
    // read as ListTasks of a tenant "console", which is refused (fundi serves none).
    let no_link = plain_client()
        .post(format!("{}/console/sign-in-links", server.url))
        .bearer_auth("ci-token-0123456789abcdef")
        .header(USER_HEADER, BOB)
        .send()
        .await
        .unwrap();
    assert_eq!(no_link.status(), 404, "{:?}", no_link.text().await);
    let listed = plain_client()
        .get(format!("{}/console/tasks", server.url))
        .bearer_auth("ci-token-0123456789abcdef")
        .header(USER_HEADER, BOB)
        .send()
        .await
        .unwrap();
    assert_eq!(listed.status(), 400);
    assert_eq!(listed.headers()["content-type"], "application/a2a+json");
    let listed: Value = listed.json().await.unwrap();
    let field = &listed["error"]["details"][1]["fieldViolations"][0]["field"];
    assert_eq!(field, "tenant", "{listed}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_start_prints_a_sign_in_link_for_the_local_user() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let line = server.printed("fundi console: ");
    let link = line
        .split_whitespace()
        .nth(2)
        .expect("a link on the line")
        .to_owned();
    assert!(
        link.starts_with(&format!("{}/console/sign-in?token=", server.url)),
        "{line}"
    );
    let cookie = open_link(&link).await;
    let tasks = page(&server, &cookie, "/console/tasks").await;
    assert!(
        tasks.contains("Signed in as <strong>local</strong>"),
        "{tasks}"
    );
    assert!(
        tasks.contains("/console/grants"),
        "the local user is an operator"
    );
}

/// The security scan's and the chaos run's reports, as the skills write them, read as
/// a grade with its findings and as charts, and pass fundi's own accessibility audit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scan_reads_as_a_grade_and_a_chaos_run_as_charts() {
    let upstream = {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let app = axum::Router::new().route("/", axum::routing::get(|| async { "ok" }));
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        format!("http://{address}")
    };
    let dir = tempfile::tempdir().unwrap();
    let allowed = format!("[\"{upstream}\"]");
    let env = [
        (
            "FUNDI__SKILLS__CHAOS_RUN__ALLOWED_TARGETS",
            allowed.as_str(),
        ),
        (
            "FUNDI__SKILLS__SECURITY_SCAN__ALLOWED_ORIGINS",
            allowed.as_str(),
        ),
    ];
    let server = Server::start(dir.path(), &env);
    let (made, link) = cli(&server, &["console"]);
    assert!(made, "{link}");
    let cookie = open_link(link.lines().next().unwrap().trim()).await;

    let mut scan = message("scan", json!({"url": format!("{upstream}/")}));
    scan["metadata"] = json!({"skill": "security-scan"});
    let scan = ok(&server, "SendMessage", json!({"message": scan})).await;
    let scan = scan["task"]["id"].as_str().unwrap().to_owned();
    poll_task(&server, &scan, |t| state(t) == "TASK_STATE_COMPLETED").await;
    let path = format!("/console/tasks/{scan}");
    let html = page(&server, &cookie, &path).await;
    assert!(
        html.contains("class=\"grade\"") && html.contains("How to fix it"),
        "{html}"
    );
    // Findings come worst first, each with what was seen and how to fix it.
    let medium = html.find("<code>csp-missing</code>").expect("csp-missing");
    let low = html
        .find("<code>x-content-type-options-missing</code>")
        .expect("nosniff");
    assert!(medium < low, "{html}");
    assert!(
        html.contains("Send X-Content-Type-Options: nosniff."),
        "{html}"
    );
    assert_accessible(&html, &path);

    let plan = json!({"target": upstream, "plan": [
        {"name": "calm", "durationMs": 600},
        {"name": "slow", "durationMs": 600, "faults": [{"type": "latency", "attributes": {"latency": 30}}]}],
        "probe": {"kind": "http", "path": "/", "ratePerSecond": 20, "timeoutMs": 2000}});
    let mut run = message("chaos", plan);
    run["metadata"] = json!({"skill": "chaos-run"});
    let run = ok(&server, "SendMessage", json!({"message": run})).await;
    let run = run["task"]["id"].as_str().unwrap().to_owned();
    let (approved, out) = cli(&server, &["approve", &run]);
    assert!(approved, "{out}");
    poll_task(&server, &run, |t| state(t) == "TASK_STATE_COMPLETED").await;
    let path = format!("/console/tasks/{run}");
    let html = page(&server, &cookie, &path).await;
    for drawn in [
        "<title id=\"latency-title\">Probe latency per phase</title>",
        "<title id=\"success-title\">Probe success rate per phase</title>",
        "<th scope=\"row\">calm</th>",
        "<th scope=\"row\">slow</th>",
        "class=\"bar p99\"",
    ] {
        assert!(html.contains(drawn), "{drawn} in {html}");
    }
    assert!(
        !html.contains("no probe"),
        "both phases were probed: {html}"
    );
    assert_accessible(&html, &path);
}
