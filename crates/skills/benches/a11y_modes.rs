//! Pages per second of a11y-audit in both modes, through the skill in a runtime, on the
//! scripted corpus's 24 pages served on 127.0.0.1: static mode (the HTML as served,
//! fundi's rules) as the baseline, browser mode (headless Chromium, scripts run,
//! axe-core) measured in the same run. Needs Chromium (Debian's `chromium` on PATH).
//!
//! `cargo bench -p fundi-skills --bench a11y_modes [-- --rounds N]` (default N = 3).

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::Path;
use axum::response::{Html, IntoResponse};
use axum::routing::get;
use fundi_ops::issues::MemoryIssueStore;
use fundi_runtime::{Access, Message, Part, Runtime, RuntimeHandle, SubmitRequest};
use fundi_skills::{A11yAuditSkill, A11yConfig};
use serde_json::json;

async fn serve() -> (String, Vec<String>) {
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/axe-corpus/scripted/pages");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".html"))
        .collect();
    names.sort();
    let router = Router::new().route(
        "/{name}",
        get(move |Path(name): Path<String>| {
            let file = dir.join(name.replace("..", ""));
            async move {
                match std::fs::read_to_string(file) {
                    Ok(html) => Html(html).into_response(),
                    Err(_) => axum::http::StatusCode::NOT_FOUND.into_response(),
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await });
    (base, names)
}

/// Audits every page once in `mode`, all submitted at once; pages per second.
async fn round(runtime: &RuntimeHandle, base: &str, names: &[String], mode: &str) -> f64 {
    let started = Instant::now();
    let mut ids = Vec::new();
    for name in names {
        let data = Part::data(json!({"url": format!("{base}/{name}"), "mode": mode}));
        let request = SubmitRequest::new(Message::user(vec![data]));
        ids.push(runtime.submit(request).await.unwrap().task.id);
    }
    for id in &ids {
        loop {
            let task = runtime.get(id, Some(0), Access::Any).await.unwrap();
            if task.status.state.is_terminal() {
                assert!(!task.artifacts.is_empty(), "{mode}: {task:?}");
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
    names.len() as f64 / started.elapsed().as_secs_f64()
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

#[tokio::main]
async fn main() {
    let rounds: usize = std::env::args()
        .skip_while(|a| a != "--rounds")
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(3);
    let (base, names) = serve().await;
    let mut config = A11yConfig::default();
    config.allowed_origins = vec![base.clone()];
    let skill = A11yAuditSkill::new(config, Arc::new(MemoryIssueStore::new())).unwrap();
    let runtime = Runtime::builder().skill(skill).start().await.unwrap();
    // The browser starts on the first run: not counted.
    round(&runtime, &base, &names[..1], "browser").await;
    let (mut static_rates, mut browser_rates) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        static_rates.push(round(&runtime, &base, &names, "static").await);
        browser_rates.push(round(&runtime, &base, &names, "browser").await);
    }
    let (fast, rendered) = (median(static_rates), median(browser_rates));
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "{} pages, {cpus} CPUs, median of {rounds} rounds",
        names.len()
    );
    println!("| mode | pages/s | ratio to static |");
    println!("|---|---|---|");
    println!("| static (baseline) | {fast:.1} | 1.00 |");
    println!("| browser | {rendered:.1} | {:.3} |", rendered / fast);
}
