//! The web console through the real binary. In a real browser (Debian's Chromium,
//! headless, driven by playwright-core from npm; `.ci/run` installs Chromium): signing
//! in by a one-time link, a task's progress appearing live, refusal of another user's
//! task, the accessibility report and the heal diff as people read them, approving a
//! gated task with the keyboard alone, a form from another origin refused, signing
//! out. Over HTTP: the Origin, CSRF and Host checks, and every page passing fundi's own
//! accessibility audit. Chromium is found at /usr/bin/chromium or `FUNDI_CHROMIUM`;
//! missing, the test fails and says how to install it.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use fundi_runtime::cpu::Budget;
use fundi_skills::a11y::Limits;
use fundi_skills::testing::{TestRepo, serve_dir};
use serde_json::{Value, json};

const OPS: &str = "ops-token-0123456789abcdef";
const ALICE: &str = "alice-token-0123456789";
const BOB: &str = "bob-token-0123456789abc";
const USER_HEADER: &str = "X-Fundi-User-Token";

/// Alice and Bob through an operators' client; echo's tasks wait for an approver.
fn env() -> Vec<(&'static str, String)> {
    vec![
        ("FUNDI__AUTH__STATIC__CLIENTS__OPS__TOKEN", OPS.into()),
        (
            "FUNDI__AUTH__STATIC__CLIENTS__OPS__SCOPES",
            "[\"fundi:admin\"]".into(),
        ),
        ("FUNDI__AUTH__STATIC__USERS__ALICE", ALICE.into()),
        ("FUNDI__AUTH__STATIC__USERS__BOB", BOB.into()),
        ("FUNDI__RUNTIME__APPROVALS__ECHO", "required".into()),
    ]
}

fn start(dir: &Path, extra: &[(&'static str, String)]) -> Server {
    let mut all = env();
    all.extend(extra.iter().cloned());
    let pairs: Vec<(&str, &str)> = all.iter().map(|(k, v)| (*k, v.as_str())).collect();
    Server::start(dir, &pairs)
}

async fn rpc_as(server: &Server, user: &str, method: &str, params: Value) -> Value {
    let answer: Value = reqwest::Client::new()
        .post(server.rpc_url())
        .bearer_auth(OPS)
        .header(USER_HEADER, user)
        .header("A2A-Version", "1.0")
        .json(&request(method, params))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(answer.get("error").is_none(), "{method}: {answer}");
    answer["result"].clone()
}

async fn get_as(server: &Server, user: &str, id: &str) -> Value {
    rpc_as(server, user, "GetTask", json!({"id": id})).await
}

async fn poll_as(server: &Server, user: &str, id: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = std::time::Instant::now() + DEADLINE;
    loop {
        let task = get_as(server, user, id).await;
        if done(&task) {
            return task;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "task {id} stayed {task}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// Starts an echo task as `user`: it waits for an approver (echo is gated here).
async fn echo_as(server: &Server, user: &str, data: Value, reason: &str) -> String {
    let mut message = message("echo this", data);
    message["metadata"] = json!({"skill": "echo", "reason": reason});
    let answer = rpc_as(server, user, "SendMessage", json!({"message": message})).await;
    answer["task"]["id"].as_str().unwrap().to_owned()
}

/// A sign-in link for `user`, from `fundi console`.
fn link_for(server: &Server, user: &str) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_fundi"))
        .arg("console")
        .env("FUNDI_URL", &server.url)
        .env("FUNDI_TOKEN", OPS)
        .env("FUNDI_USER_TOKEN", user)
        .output()
        .expect("run fundi console");
    let stdout = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    assert!(
        output.status.success(),
        "{stdout} {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.starts_with(&format!("{}/console/sign-in?token=", server.url)),
        "{stdout}"
    );
    stdout
}

/// A signed-in HTTP session: its cookie header and its CSRF token.
struct Session {
    cookie: String,
    csrf: String,
}

fn plain_client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

async fn sign_in(server: &Server, user: &str) -> Session {
    let link = link_for(server, user);
    let opened = plain_client().get(&link).send().await.unwrap();
    assert_eq!(opened.status(), 303);
    let set = opened.headers()["set-cookie"].to_str().unwrap().to_owned();
    let cookie = set.split(';').next().unwrap().to_owned();
    let page = page(server, &cookie, "/console/tasks").await;
    let csrf = page
        .split("name=\"csrf\" value=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("a CSRF token on the page")
        .to_owned();
    Session { cookie, csrf }
}

async fn page(server: &Server, cookie: &str, path: &str) -> String {
    let response = plain_client()
        .get(format!("{}{path}", server.url))
        .header("cookie", cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200, "{path}");
    response.text().await.unwrap()
}

/// fundi's own accessibility audit of a console page: no violation.
fn assert_accessible(html: &str, path: &str) {
    let limits = Limits {
        max_bytes: 8 << 20,
        max_elements: 100_000,
        max_depth: 256,
        max_attributes: 256,
    };
    let (report, _) = fundi_skills::a11y::audit::audit(html, path, limits, &Budget::unlimited())
        .unwrap_or_else(|e| panic!("auditing {path}: {e:?}"));
    let found: Vec<String> = report
        .violations
        .iter()
        .map(|rule| {
            format!(
                "{} {:?}",
                rule.id,
                rule.nodes.iter().map(|n| &n.html).collect::<Vec<_>>()
            )
        })
        .collect();
    assert!(
        found.is_empty(),
        "{path} has accessibility violations: {found:#?}"
    );
}

fn chromium() -> PathBuf {
    let path = std::env::var_os("FUNDI_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    assert!(
        path.exists(),
        "no Chromium at {}: install Debian's (apt-get install chromium; .ci/run does) or set \
         FUNDI_CHROMIUM",
        path.display()
    );
    path
}

/// playwright-core, pinned by tests/web_console/package-lock.json, installed once per
/// target directory beside the script (ES modules find packages from their folder).
fn browser_script() -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/web_console");
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("web-console-npm");
    let lock = std::fs::read_to_string(source.join("package-lock.json")).expect("lock");
    let stamp = dir.join("installed-package-lock.json");
    if std::fs::read_to_string(&stamp).ok().as_deref() != Some(lock.as_str()) {
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        for file in ["package.json", "package-lock.json"] {
            std::fs::copy(source.join(file), dir.join(file)).unwrap();
        }
        let installed = Command::new("npm")
            .args(["ci", "--ignore-scripts", "--no-audit", "--no-fund"])
            .current_dir(&dir)
            .output()
            .expect("npm");
        assert!(
            installed.status.success(),
            "npm ci: {}",
            String::from_utf8_lossy(&installed.stderr)
        );
        std::fs::write(&stamp, lock).unwrap();
    }
    let script = dir.join("browser.mjs");
    std::fs::copy(source.join("browser.mjs"), &script).unwrap();
    script
}

/// A page of another origin (another port of loopback: the same site, so a strict
/// cookie still goes along) with a form that posts to the console's sign-out.
async fn foreign_site(console: &str) -> String {
    let html = format!(
        "<!doctype html><html lang=\"en\"><head><title>elsewhere</title></head><body>\
         <form method=\"post\" action=\"{console}/console/sign-out\">\
         <label for=\"csrf\">token</label><input id=\"csrf\" name=\"csrf\">\
         <button type=\"submit\">go</button></form></body></html>"
    );
    let app = axum::Router::new().route(
        "/",
        axum::routing::get(move || async move { axum::response::Html(html) }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{address}/")
}

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
    let approved: Value = plain_client()
        .post(format!("{}/admin/approvals/{live}/approve", server.url))
        .bearer_auth(OPS)
        .header(USER_HEADER, ALICE)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
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
    let log: Value = plain_client()
        .get(format!("{}/admin/audit", server.url))
        .bearer_auth(OPS)
        .header(USER_HEADER, ALICE)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let decided = log["records"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["action"] == "approval.approve" && r["target"] == bobs.as_str())
        .unwrap_or_else(|| panic!("no approval of {bobs} recorded: {log}"));
    assert_eq!(decided["user"], "alice", "{decided}");
    assert_eq!(decided["detail"]["through"], "console", "{decided}");
}

/// The heal task the loop made for the audit's issue.
async fn heal_task(server: &Server) -> String {
    let deadline = std::time::Instant::now() + DEADLINE;
    loop {
        let issues: Value = plain_client()
            .get(format!("{}/admin/issues", server.url))
            .bearer_auth(OPS)
            .header(USER_HEADER, ALICE)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let held = issues["issues"]
            .as_array()
            .into_iter()
            .flatten()
            .find_map(|i| i["heal"]["taskId"].as_str());
        if let Some(task) = held {
            return task.to_owned();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no heal task: {issues}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// A console form posted over HTTP with this cookie, Origin and token: its status and
/// page.
async fn post_form(
    server: &Server,
    path: &str,
    cookie: &str,
    origin: Option<&str>,
    csrf: &str,
) -> (u16, String) {
    let mut request = plain_client()
        .post(format!("{}{path}", server.url))
        .header("cookie", cookie)
        .form(&[("csrf", csrf)]);
    if let Some(origin) = origin {
        request = request.header("origin", origin);
    }
    let response = request.send().await.unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
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
    let answer: Value = plain_client()
        .post(format!("{}/console/sign-in-links", server.url))
        .bearer_auth("ci-token-0123456789abcdef")
        .header(USER_HEADER, BOB)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let link = answer["url"].as_str().unwrap();
    let opened = plain_client().get(link).send().await.unwrap();
    let cookie = opened.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
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
    // read as ListTasks of a tenant "console".
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
    assert_eq!(listed.headers()["content-type"], "application/a2a+json");
    let listed: Value = listed.json().await.unwrap();
    assert!(listed.get("tasks").is_some(), "{listed}");
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
    let opened = plain_client().get(&link).send().await.unwrap();
    assert_eq!(opened.status(), 303);
    let cookie = opened.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
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
