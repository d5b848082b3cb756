//! What the web console's tests share: a server with Alice and Bob, API calls as
//! either, signed-in HTTP sessions, fundi's own accessibility audit of a page, and the
//! browser script with playwright-core and Chromium.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use fundi_runtime::cpu::Budget;
use fundi_skills::a11y::Limits;
use serde_json::{Value, json};

use crate::common::*;

pub(crate) const OPS: &str = "ops-token-0123456789abcdef";
pub(crate) const ALICE: &str = "alice-token-0123456789";
pub(crate) const BOB: &str = "bob-token-0123456789abc";
pub(crate) const USER_HEADER: &str = "X-Fundi-User-Token";

/// Alice and Bob through an operators' client; echo's tasks wait for an approver.
pub(crate) fn env() -> Vec<(&'static str, String)> {
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

pub(crate) fn start(dir: &Path, extra: &[(&'static str, String)]) -> Server {
    let mut all = env();
    all.extend(extra.iter().cloned());
    let pairs: Vec<(&str, &str)> = all.iter().map(|(k, v)| (*k, v.as_str())).collect();
    Server::start(dir, &pairs)
}

pub(crate) async fn rpc_as(server: &Server, user: &str, method: &str, params: Value) -> Value {
    let answer = rpc_with(server, OPS, user, method, params).await;
    assert!(answer.get("error").is_none(), "{method}: {answer}");
    answer["result"].clone()
}

pub(crate) async fn get_as(server: &Server, user: &str, id: &str) -> Value {
    rpc_as(server, user, "GetTask", json!({"id": id})).await
}

pub(crate) async fn poll_as(
    server: &Server,
    user: &str,
    id: &str,
    done: impl Fn(&Value) -> bool,
) -> Value {
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
pub(crate) async fn echo_as(server: &Server, user: &str, data: Value, reason: &str) -> String {
    let mut message = message("echo this", data);
    message["metadata"] = json!({"skill": "echo", "reason": reason});
    let answer = rpc_as(server, user, "SendMessage", json!({"message": message})).await;
    answer["task"]["id"].as_str().unwrap().to_owned()
}

/// A sign-in link for `user`, from `fundi console`.
pub(crate) fn link_for(server: &Server, user: &str) -> String {
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
pub(crate) struct Session {
    pub(crate) cookie: String,
    pub(crate) csrf: String,
}

pub(crate) fn plain_client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// What opening a sign-in link shows: the page asking to continue, the cookie it set,
/// and its form's confirmation token and CSRF token.
pub(crate) struct Confirmation {
    pub(crate) page: String,
    pub(crate) cookie: String,
    pub(crate) token: String,
    pub(crate) csrf: String,
}

/// The value of the hidden input `name` on `page`.
pub(crate) fn hidden(page: &str, name: &str) -> String {
    page.split(&format!("name=\"{name}\" value=\""))
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| panic!("no {name} on the page: {page}"))
        .to_owned()
}

/// Opens a sign-in link: the page that asks to continue.
pub(crate) async fn confirmation(link: &str) -> Confirmation {
    let opened = plain_client().get(link).send().await.unwrap();
    assert_eq!(opened.status(), 200, "{link}");
    let set = opened.headers()["set-cookie"].to_str().unwrap();
    let cookie = set.split(';').next().unwrap().to_owned();
    let page = opened.text().await.unwrap();
    Confirmation {
        token: hidden(&page, "token"),
        csrf: hidden(&page, "csrf"),
        page,
        cookie,
    }
}

/// Continues a sign-in from `origin` with `cookie`: the answer.
pub(crate) async fn confirm(
    base: &str,
    origin: &str,
    cookie: &str,
    token: &str,
    csrf: &str,
) -> reqwest::Response {
    plain_client()
        .post(format!("{base}/console/sign-in"))
        .header("origin", origin)
        .header("cookie", cookie)
        .form(&[("token", token), ("csrf", csrf)])
        .send()
        .await
        .unwrap()
}

/// Opens a sign-in link and continues as the page asks: the session cookie, as a
/// `Cookie` header's value.
pub(crate) async fn open_link(link: &str) -> String {
    let base = link.split("/console/").next().unwrap().to_owned();
    let shown = confirmation(link).await;
    let signed_in = confirm(&base, &base, &shown.cookie, &shown.token, &shown.csrf).await;
    assert_eq!(signed_in.status(), 303, "{link}");
    let session = signed_in
        .headers()
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap())
        .find(|v| v.starts_with("fundi_console="))
        .expect("a session cookie");
    session.split(';').next().unwrap().to_owned()
}

pub(crate) async fn sign_in(server: &Server, user: &str) -> Session {
    let cookie = open_link(&link_for(server, user)).await;
    let page = page(server, &cookie, "/console/tasks").await;
    let csrf = page
        .split("name=\"csrf\" value=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("a CSRF token on the page")
        .to_owned();
    Session { cookie, csrf }
}

pub(crate) async fn page(server: &Server, cookie: &str, path: &str) -> String {
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
pub(crate) fn assert_accessible(html: &str, path: &str) {
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

pub(crate) fn chromium() -> PathBuf {
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
pub(crate) fn browser_script() -> PathBuf {
    browser_script_named("browser.mjs")
}

/// The browser script `name` of tests/web_console, beside playwright-core (installed as
/// for [`browser_script`]).
pub(crate) fn browser_script_named(name: &str) -> PathBuf {
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
    let script = dir.join(name);
    std::fs::copy(source.join(name), &script).unwrap();
    script
}

/// A page of another origin (another port of loopback: the same site, so a strict
/// cookie still goes along) with a form that posts to the console's sign-out.
pub(crate) async fn foreign_site(console: &str) -> String {
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

/// An operators' route (`/admin/...`) called as `user` through the operators' client.
pub(crate) async fn admin_as(
    server: &Server,
    user: &str,
    method: reqwest::Method,
    path: &str,
) -> Value {
    call_with(method, &format!("{}{path}", server.url), OPS, user).await
}

/// The heal task the loop made for the audit's issue.
pub(crate) async fn heal_task(server: &Server) -> String {
    let deadline = std::time::Instant::now() + DEADLINE;
    loop {
        let issues = admin_as(server, ALICE, reqwest::Method::GET, "/admin/issues").await;
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
pub(crate) async fn post_form(
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
