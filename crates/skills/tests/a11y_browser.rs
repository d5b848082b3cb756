//! a11y-audit's browser mode in a real runtime, with Debian's Chromium (installed by
//! `.ci/run`): pages whose content scripts make, a site on 127.0.0.1 whose links and
//! content come from scripts, requests off the allowed origins refused and counted, a
//! page whose script never ends, cancel, and a missing browser named clearly.

mod a11y_runs;

use fundi_runtime::Access;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::response::Html;
use axum::routing::get;
use fundi_ops::issues::{IssueStore, MemoryIssueStore};
use fundi_runtime::{Message, Part, SubmitRequest, Task, TaskState};
use fundi_skills::{A11yAuditSkill, A11yConfig, AuditMode};
use serde_json::{Value, json};

use a11y_runs::{Fixture, fixture_with, reply, report};

/// A page whose one image only its script adds: empty to a parser, failing
/// `image-alt` in a browser.
const SCRIPTED: &str = r#"<!doctype html><html lang="en"><head><title>Gallery</title></head>
<body><main id="app"><h1>Gallery</h1></main>
<script>document.getElementById('app').insertAdjacentHTML('beforeend', '<img src="/cat.png">');</script>
</body></html>"#;

/// A client-rendered site: the list comes from `/items.json`, the link to the next
/// page from the script, and it also asks for a script off the allowed origins.
const HOME: &str = r#"<!doctype html><html lang="en"><head><title>Shop</title>
<script src="http://tracker.example/t.js"></script></head>
<body><main><h1>Shop</h1><ul id="items"></ul><nav id="nav"></nav></main>
<script>
fetch('/items.json').then((r) => r.json()).then((items) => {
  document.getElementById('items').innerHTML =
    items.map((i) => '<li><button>' + '</button>' + i + '</li>').join('');
  document.getElementById('nav').innerHTML = '<a href="/about">About</a>';
});
if ('serviceWorker' in navigator) {
  navigator.serviceWorker.register('/sw.js').then(() => { document.title += ' (offline)'; });
} else {
  document.title += ' (online only)';
}
</script></body></html>"#;
const ABOUT: &str = r#"<!doctype html><html lang="en"><head><title>About</title></head>
<body><main><h1>About</h1><p>Made by people.</p></main></body></html>"#;
/// A page that asks for more every 100 ms, for ever, each answer taking 250 ms: one of
/// its requests is always under way.
const POLLS: &str = r#"<!doctype html><html lang="en"><head><title>Live</title></head>
<body><main><h1>Live</h1><p id="n">0</p></main>
<script>setInterval(() => fetch('/slow.json').then((r) => r.json())
  .then((items) => { document.getElementById('n').textContent = items.length; }), 100);</script>
</body></html>"#;
/// A page whose script never ends.
const SPINS: &str = r#"<!doctype html><html lang="en"><head><title>Spins</title></head>
<body><script>while (true) {}</script></body></html>"#;

async fn site() -> String {
    let router = Router::new()
        .route("/", get(|| async { Html(HOME) }))
        .route("/about", get(|| async { Html(ABOUT) }))
        .route("/spins", get(|| async { Html(SPINS) }))
        .route("/polls", get(|| async { Html(POLLS) }))
        .route(
            "/slow.json",
            get(|| async {
                // A slow server, not a wait of the test's.
                tokio::time::sleep(Duration::from_millis(250)).await;
                axum::Json(json!(["tea"]))
            }),
        )
        .route(
            "/sw.js",
            get(|| async {
                (
                    [("content-type", "text/javascript")],
                    "self.onfetch = () => {};",
                )
            }),
        )
        .route(
            "/items.json",
            get(|| async { axum::Json(json!(["tea", "cake"])) }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await });
    url
}

fn browser_config(origins: Vec<String>) -> A11yConfig {
    let mut config = A11yConfig::default();
    config.allowed_origins = origins;
    config.default_mode = AuditMode::Browser;
    config.page_time_limit_ms = 15_000;
    config
}

async fn fixture(config: A11yConfig) -> Fixture {
    fixture_with(config, fundi_runtime::RuntimeConfig::default()).await
}

fn violated(page: &Value) -> Vec<String> {
    page["violations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|rule| rule["id"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn inline_html_is_audited_after_its_scripts_ran_and_only_in_the_browser() {
    let fx = fixture(browser_config(Vec::new())).await;
    let html = || Part::text(SCRIPTED).with_media_type("text/html");
    let rendered = fx.run(vec![html()]).await;
    assert_eq!(
        rendered.status.state,
        TaskState::Completed,
        "{}",
        reply(&rendered)
    );
    let report = report(&rendered);
    assert_eq!(report["mode"], "browser");
    assert!(
        report["tool"]["ruleIds"]
            .as_str()
            .unwrap()
            .starts_with("axe-core 4.")
    );
    let page = &report["pages"][0];
    assert_eq!(page["url"], "inline:inline");
    assert!(violated(page).contains(&"image-alt".to_owned()), "{page}");
    // The image was asked for (and the browser's favicon), on no allowed origin:
    // refused and counted.
    let refused = report["blocked"]["not an allowed origin"].as_u64();
    assert!(refused.is_some_and(|n| n >= 1), "{report}");
    // Its issue is recorded with axe-core's rule id.
    let recorded = fx.issues.issues(Some("a11y-audit")).await.unwrap();
    assert!(recorded.iter().any(|i| i.finding.rule == "image-alt"));

    // The same page read as served has no image at all.
    let as_served = fx
        .run(vec![html(), Part::data(json!({"mode": "static"}))])
        .await;
    let report = completed(&as_served);
    assert_eq!(report["mode"], "static");
    assert!(!violated(&report["pages"][0]).contains(&"image-alt".to_owned()));
}

fn completed(task: &Task) -> Value {
    assert_eq!(task.status.state, TaskState::Completed, "{}", reply(task));
    report(task)
}

#[tokio::test]
async fn a_client_rendered_site_is_crawled_through_its_rendered_links() {
    let base = site().await;
    let fx = fixture(browser_config(vec![base.clone()])).await;
    let task = fx
        .run(vec![Part::data(
            json!({"url": format!("{base}/"), "maxPages": 3}),
        )])
        .await;
    let report = completed(&task);
    let pages = report["pages"].as_array().unwrap();
    let urls: Vec<&str> = pages.iter().map(|p| p["url"].as_str().unwrap()).collect();
    // The link to /about exists only once the script ran.
    assert_eq!(
        urls,
        [format!("{base}/"), format!("{base}/about")],
        "{report}"
    );
    // The buttons came from /items.json, fetched through fundi: empty, so unnamed.
    let home = &pages[0];
    let unnamed = home["violations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|rule| rule["id"] == "button-name")
        .unwrap_or_else(|| panic!("no button-name: {home}"));
    assert_eq!(unnamed["nodes"].as_array().unwrap().len(), 2);
    // The tracker's script is on no allowed origin: never fetched.
    assert!(report["blocked"]["not an allowed origin"].as_u64().unwrap() >= 1);
    // A service worker would serve the page from outside fundi: the page has none.
    assert_eq!(home["title"], "Shop (online only)", "{home}");
}

#[tokio::test]
async fn a_page_whose_script_never_ends_is_stopped_by_the_page_limit() {
    let base = site().await;
    let mut config = browser_config(vec![base.clone()]);
    config.page_time_limit_ms = 2_000;
    let fx = fixture(config).await;
    let task = fx
        .run(vec![Part::data(json!({"url": format!("{base}/spins")}))])
        .await;
    assert_eq!(task.status.state, TaskState::Failed);
    assert!(
        reply(&task).contains("page-time-limit-ms"),
        "{}",
        reply(&task)
    );
    // The browser goes on serving other runs.
    let next = fx
        .run(vec![Part::data(json!({"url": format!("{base}/about")}))])
        .await;
    assert_eq!(next.status.state, TaskState::Completed, "{}", reply(&next));
}

#[tokio::test]
async fn a_page_whose_requests_never_stop_is_audited_as_it_stands() {
    let base = site().await;
    let fx = fixture(browser_config(vec![base.clone()])).await;
    let task = fx
        .run(vec![Part::data(json!({"url": format!("{base}/polls")}))])
        .await;
    let report = completed(&task);
    assert_eq!(report["pages"][0]["title"], "Live", "{report}");
}

#[tokio::test]
async fn cancel_ends_a_run_whose_page_is_still_loading() {
    let base = site().await;
    let mut config = browser_config(vec![base.clone()]);
    config.page_time_limit_ms = 600_000;
    let fx = fixture(config).await;
    let id = fx
        .submit(vec![Part::data(json!({"url": format!("{base}/spins")}))])
        .await;
    fx.working(&id).await;
    let canceled = fx.runtime.cancel(&id, Access::Any).await.unwrap();
    assert_eq!(canceled.status.state, TaskState::Canceled);
    // The run stopped by itself, not aborted at the end of the grace period.
    assert_eq!(reply(&canceled), "canceled by request");
}

#[tokio::test]
async fn a_missing_browser_is_named_with_the_setting_to_change() {
    // Browser mode by default: the skill is not made, and the error says why.
    let mut config = browser_config(Vec::new());
    config.chromium = Some("/nonexistent/chromium".into());
    let refused =
        A11yAuditSkill::new(config.clone(), Arc::new(MemoryIssueStore::new())).unwrap_err();
    assert!(refused.contains("default-mode"), "{refused}");
    assert!(refused.contains("skills.a11y-audit.chromium"), "{refused}");
    // Static by default, a message that asks for the browser fails, naming the setting.
    config.default_mode = AuditMode::Static;
    let fx = fixture(config).await;
    let task = fx
        .run(vec![
            Part::text(SCRIPTED).with_media_type("text/html"),
            Part::data(json!({"mode": "browser"})),
        ])
        .await;
    assert_eq!(task.status.state, TaskState::Failed);
    let said = reply(&task);
    assert!(said.contains("skills.a11y-audit.chromium"), "{said}");
    assert!(said.contains("/nonexistent/chromium"), "{said}");
}

#[tokio::test]
async fn a_mode_other_than_static_or_browser_is_refused() {
    let fx = fixture(browser_config(Vec::new())).await;
    let message = Message::user(vec![
        Part::text(SCRIPTED).with_media_type("text/html"),
        Part::data(json!({"mode": "dom"})),
    ]);
    let refused = fx
        .runtime
        .submit(SubmitRequest::new(message))
        .await
        .unwrap_err();
    assert!(refused.to_string().contains("data.mode"), "{refused}");
}

#[test]
fn the_shipped_axe_core_is_the_version_the_corpus_tool_pins() {
    let package: Value =
        serde_json::from_str(include_str!("../../../tools/axe-corpus/package.json")).unwrap();
    assert_eq!(
        package["dependencies"]["axe-core"],
        fundi_skills::a11y::axe_version()
    );
}
