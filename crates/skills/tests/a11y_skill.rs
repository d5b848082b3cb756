//! The a11y-audit skill in a real runtime: inline HTML, HTML files, crawling a site
//! served on 127.0.0.1, refusals, cancel, and issues recorded once.

mod a11y_runs;

use fundi_runtime::Access;
use std::time::{Duration, Instant};

use axum::Router;
use axum::response::{Html, IntoResponse, Redirect};
use axum::routing::get;
use fundi_ops::issues::IssueStore;
use fundi_runtime::{Message, Part, RuntimeHandle, SubmitRequest, Task, TaskId, TaskState};
use fundi_skills::A11yConfig;
use futures::StreamExt;
use serde_json::json;

use a11y_runs::{DEADLINE, Fixture, fixture, fixture_with, html_part, reply, report};

const HOME: &str = r#"<!doctype html><html lang="en"><head><title>Home</title></head><body>
<main><h1>Home</h1><img src="hero.png"><a href="/about">About</a> <a href="/shop#top">Shop</a>
<a href="https://elsewhere.example/">Elsewhere</a> <a href="/data.json">Data</a></main></body></html>"#;
const ABOUT: &str = r#"<!doctype html><html lang="en"><head><title>About</title></head><body>
<main><h1>About</h1><a href="/">Home</a><form aria-label="Contact"><input type="text"></form></main></body></html>"#;
const SHOP: &str = r#"<!doctype html><html lang="en"><head><title>Shop</title></head><body>
<main><h1>Shop</h1><button></button><a href="/about">About</a></main></body></html>"#;

/// A small site on 127.0.0.1: three linked pages, a JSON document, a redirect off the
/// allowed origin, a page bigger than the limit, and a page that never answers.
async fn site() -> String {
    let router = Router::new()
        .route("/", get(|| async { Html(HOME) }))
        .route("/about", get(|| async { Html(ABOUT) }))
        .route("/shop", get(|| async { Html(SHOP) }))
        .route(
            "/data.json",
            get(|| async { axum::Json(json!({"not": "html"})) }),
        )
        .route(
            "/away",
            get(|| async { Redirect::temporary("http://127.0.0.2:9/") }),
        )
        .route(
            "/huge",
            get(|| async { Html(format!("<p>{}</p>", "x".repeat(300_000))) }),
        )
        .route(
            "/hang",
            get(|| async {
                std::future::pending::<()>().await;
                "never".into_response()
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await });
    url
}

#[tokio::test]
async fn inline_html_is_audited_and_its_issues_recorded_once() {
    let fx = fixture(Vec::new()).await;
    let task = fx.run(vec![html_part(HOME)]).await;
    assert_eq!(task.status.state, TaskState::Completed, "{}", reply(&task));
    let report = report(&task);
    let page = &report["pages"][0];
    assert_eq!(page["url"], "inline:inline");
    assert_eq!(page["title"], "Home");
    let image = page["violations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["id"] == "image-alt")
        .expect("image-alt violation");
    assert_eq!(image["impact"], "critical");
    assert_eq!(image["nodes"][0]["target"], "html > body > main > img");
    assert!(report["summary"]["passes"].as_u64().unwrap() > 0);
    let text = reply(&task);
    assert!(
        text.starts_with("Audited 1 page of inline:inline: "),
        "{text}"
    );
    assert!(text.contains("image-alt (1)"), "{text}");

    let first = fx.issues.issues(Some("a11y-audit")).await.unwrap();
    assert_eq!(
        first.len(),
        report["summary"]["violations"].as_u64().unwrap() as usize
    );
    assert_eq!(report["issues"]["new"], json!(first.len()));
    // The same page again: the same issues, seen twice, none added.
    let again = fx.run(vec![html_part(HOME)]).await;
    assert_eq!(report_of_issues(&again), (0, first.len() as u64));
    let second = fx.issues.issues(Some("a11y-audit")).await.unwrap();
    assert_eq!(second.len(), first.len());
    assert!(second.iter().all(|i| i.occurrences == 2));
}

fn report_of_issues(task: &Task) -> (u64, u64) {
    let report = report(task);
    (
        report["issues"]["new"].as_u64().unwrap(),
        report["issues"]["updated"].as_u64().unwrap(),
    )
}

#[tokio::test]
async fn an_html_file_in_another_charset_is_decoded() {
    let fx = fixture(Vec::new()).await;
    let mut bytes = b"<html lang=fr><head><meta charset=windows-1252><title>Caf".to_vec();
    bytes.push(0xe9);
    bytes.extend_from_slice(b"</title></head><body><main><h1>Menu</h1></main></body></html>");
    let mut part = Part::raw(bytes);
    part.filename = Some("menu.html".into());
    let task = fx.run(vec![part]).await;
    assert_eq!(task.status.state, TaskState::Completed, "{}", reply(&task));
    assert_eq!(report(&task)["pages"][0]["title"], "Café");
    assert_eq!(report(&task)["pages"][0]["url"], "inline:menu.html");
}

#[tokio::test]
async fn a_site_is_crawled_on_its_origin_up_to_max_pages_with_progress_per_page() {
    let base = site().await;
    let fx = fixture(vec![base.clone()]).await;
    let task = fx
        .run(vec![Part::data(
            json!({"url": format!("{base}/"), "maxPages": 10}),
        )])
        .await;
    assert_eq!(task.status.state, TaskState::Completed, "{}", reply(&task));
    let crawled = report(&task);
    let urls: Vec<&str> = crawled["pages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["url"].as_str().unwrap())
        .collect();
    assert_eq!(
        urls,
        [
            format!("{base}/"),
            format!("{base}/about"),
            format!("{base}/shop")
        ],
        "same-origin HTML pages, each once, fragments dropped"
    );
    // The JSON link is reported as not HTML; the other origin is never fetched.
    let errors = crawled["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0]["error"]
            .as_str()
            .unwrap()
            .contains("is not an HTML page")
    );
    let progress: Vec<String> = progress_notes(&fx.runtime, &task.id).await;
    assert_eq!(
        progress.len(),
        4,
        "one progress event per page: {progress:?}"
    );
    assert!(
        progress[0].starts_with(&format!("audited {base}/: ")),
        "{progress:?}"
    );
    let by_rule = &crawled["summary"]["byRule"];
    assert_eq!(by_rule["image-alt"], 1);
    assert_eq!(by_rule["label"], 1);
    assert_eq!(by_rule["button-name"], 1);

    // maxPages bounds the crawl.
    let one = fx
        .run(vec![Part::data(
            json!({"url": format!("{base}/"), "maxPages": 1}),
        )])
        .await;
    assert_eq!(report(&one)["pages"].as_array().unwrap().len(), 1);
}

async fn progress_notes(runtime: &RuntimeHandle, id: &TaskId) -> Vec<String> {
    let mut events = runtime.subscribe(id, 0, Access::Any).await.unwrap();
    let mut notes = Vec::new();
    while let Some(Ok(event)) = events.next().await {
        if let Some(status) = event.status()
            && let Some(message) = &status.message
            && message
                .metadata
                .as_ref()
                .is_some_and(|m| m.contains_key("progress"))
        {
            notes.push(message.text());
        }
    }
    notes
}

#[tokio::test]
async fn urls_off_the_allowed_origins_and_bad_input_are_refused_clearly() {
    let base = site().await;
    let fx = fixture(vec![base.clone()]).await;
    for (parts, expected) in [
        (
            vec![Part::data(json!({"url": "http://169.254.169.254/latest"}))],
            "is not an allowed origin for a11y-audit",
        ),
        (
            vec![Part::data(json!({"url": "not a url"}))],
            "is not a URL",
        ),
        (
            vec![Part::text("audit my site please")],
            "a11y-audit needs HTML to audit",
        ),
    ] {
        let task = fx.run(parts).await;
        assert_eq!(task.status.state, TaskState::Rejected, "{expected}");
        assert!(reply(&task).contains(expected), "{}", reply(&task));
    }
    // Data against the skill's input schema is refused at submission, naming the field:
    // no task is made.
    let bad = Message::user(vec![Part::data(
        json!({"url": format!("{base}/"), "maxPages": 0}),
    )]);
    let refused = fx
        .runtime
        .submit(SubmitRequest::new(bad))
        .await
        .unwrap_err();
    assert!(refused.to_string().contains("data.maxPages"), "{refused}");
    // A redirect off the allowed origins is not followed; a page over the size limit
    // is refused: with nothing audited, the task fails saying why.
    for (path, expected) in [
        ("/away", "is not on an allowed origin"),
        ("/huge", "larger than 100000 bytes"),
    ] {
        let task = fx
            .run(vec![Part::data(json!({"url": format!("{base}{path}")}))])
            .await;
        assert_eq!(task.status.state, TaskState::Failed, "{path}");
        assert!(reply(&task).contains(expected), "{path}: {}", reply(&task));
    }
    // Too deep for the limits: the inline page is rejected with the limit named.
    let deep = format!("{}x{}", "<div>".repeat(600), "</div>".repeat(600));
    let task = fx.run(vec![html_part(&deep)]).await;
    assert_eq!(task.status.state, TaskState::Rejected);
    assert!(reply(&task).contains("max-depth"), "{}", reply(&task));
}

#[tokio::test]
async fn cancel_stops_a_crawl_promptly() {
    let base = site().await;
    let fx = fixture(vec![base.clone()]).await;
    let id = fx
        .submit(vec![Part::data(json!({"url": format!("{base}/hang")}))])
        .await;
    // Wait until the run is under way (the fetch hangs), then cancel.
    fx.working(&id).await;
    let canceled = fx.runtime.cancel(&id, Access::Any).await.unwrap();
    assert_eq!(canceled.status.state, TaskState::Canceled);
    // The skill stopped by itself, well within the grace period (not aborted).
    assert_eq!(reply(&canceled), "canceled by request");
}

/// A page whose style matching is hundreds of millions of selector matches.
fn costly_page() -> String {
    format!(
        "<html lang=en><title>t</title><style>{}</style><main>{}</main></html>",
        "i{color:red}".repeat(8_000),
        "<i>x</i>".repeat(40_000)
    )
}

/// One CPU worker, and no page time limit to speak of: only the budget and cancel stop
/// the work.
async fn one_worker(cpu_budget_ms: u64) -> Fixture {
    let mut config = A11yConfig::default();
    config.max_page_bytes = 1 << 20;
    config.page_time_limit_ms = 3_600_000;
    let mut runtime = fundi_runtime::RuntimeConfig::default();
    runtime.cpu_workers = 1;
    runtime.cpu_budget_ms = cpu_budget_ms;
    fixture_with(config, runtime).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_costly_page_fails_its_task_once_the_run_spends_its_cpu_budget() {
    let fx = one_worker(300).await;
    let task = fx.run(vec![html_part(&costly_page())]).await;
    assert_eq!(task.status.state, TaskState::Failed, "{}", reply(&task));
    assert!(
        reply(&task).contains("CPU budget of 300 ms"),
        "{}",
        reply(&task)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_frees_the_cpu_worker_of_a_costly_page() {
    let fx = one_worker(3_600_000).await;
    let costly = fx.submit(vec![html_part(&costly_page())]).await;
    let busy = |n: usize| {
        let runtime = fx.runtime.clone();
        async move {
            let deadline = Instant::now() + DEADLINE;
            while runtime.cpu_busy() != n {
                assert!(Instant::now() < deadline, "never {n} busy CPU workers");
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
    };
    busy(1).await;
    let canceled = fx.runtime.cancel(&costly, Access::Any).await.unwrap();
    assert_eq!(canceled.status.state, TaskState::Canceled);
    // The skill stopped at once, not at the end of the grace period.
    assert_eq!(reply(&canceled), "canceled by request");
    // The work itself stops (left running, it would hold the worker for minutes).
    busy(0).await;
    let small = fx.run(vec![html_part(HOME)]).await;
    assert_eq!(
        small.status.state,
        TaskState::Completed,
        "{}",
        reply(&small)
    );
}
