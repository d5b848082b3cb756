//! a11y-audit's browser mode against axe-core on the scripted corpus: 24 pages whose
//! content or styles come from their scripts (tools/axe-corpus/scripted.mjs), served on
//! 127.0.0.1 and audited through the skill in Debian's Chromium, compared node by node
//! (`data-k`) with axe-core's verdicts recorded by `tools/axe-corpus/record.mjs`. The
//! per-rule agreement is the second table in docs/skills/a11y-audit.md, which this test
//! checks (`FUNDI_WRITE_AGREEMENT=1` writes it), and every rule's F1 is at least 0.95.

mod corpus;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::Path;
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse};
use axum::routing::get;
use fundi_ops::issues::MemoryIssueStore;
use fundi_runtime::{Access, Message, Part, Runtime, SubmitRequest, TaskState};
use fundi_skills::{A11yAuditSkill, A11yConfig, AuditMode};
use serde_json::{Value, json};

use corpus::{Nodes, check_docs, compare, key, root, table};

const BEGIN: &str =
    "<!-- axe-corpus browser agreement: written by crates/skills/tests/a11y_browser_corpus.rs -->";
const END: &str = "<!-- end of axe-corpus browser agreement -->";

const DEADLINE: Duration = Duration::from_secs(120);

/// Serves the corpus's pages; anything else (their images) is not found.
async fn serve(pages: std::path::PathBuf) -> String {
    let router = Router::new().route(
        "/{name}",
        get(move |Path(name): Path<String>| {
            let pages = pages.clone();
            async move {
                let file = pages.join(&name);
                match name.ends_with(".html") && !name.contains("..") {
                    true => match std::fs::read_to_string(file) {
                        Ok(html) => Html(html).into_response(),
                        Err(_) => StatusCode::NOT_FOUND.into_response(),
                    },
                    false => StatusCode::NOT_FOUND.into_response(),
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await });
    url
}

/// Each page's nodes by rule, as the skill's report gives them.
fn nodes_of(page: &Value) -> Nodes {
    let of = |kind: &str| -> BTreeMap<String, BTreeSet<u64>> {
        page[kind]
            .as_array()
            .unwrap()
            .iter()
            .map(|rule| {
                let nodes = rule["nodes"].as_array().unwrap();
                let keys = nodes.iter().filter_map(|n| key(n["html"].as_str()?));
                (rule["id"].as_str().unwrap().to_owned(), keys.collect())
            })
            .collect()
    };
    [of("violations"), of("incomplete")]
}

#[tokio::test]
async fn browser_mode_agrees_with_axe_core_on_pages_made_by_scripts() {
    let fixtures = root().join("tests/fixtures/axe-corpus/scripted");
    let verdicts: Value =
        serde_json::from_str(&std::fs::read_to_string(fixtures.join("verdicts.json")).unwrap())
            .unwrap();
    let base = serve(fixtures.join("pages")).await;
    let mut config = A11yConfig::default();
    config.allowed_origins = vec![base.clone()];
    config.default_mode = AuditMode::Browser;
    let skill = A11yAuditSkill::new(config, Arc::new(MemoryIssueStore::new())).unwrap();
    let runtime = Runtime::builder().skill(skill).start().await.unwrap();
    let names: Vec<String> = verdicts["pages"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    let mut tasks = Vec::new();
    for name in &names {
        let data = Part::data(json!({"url": format!("{base}/{name}")}));
        let request = SubmitRequest::new(Message::user(vec![data]));
        tasks.push(runtime.submit(request).await.unwrap().task.id);
    }
    let deadline = Instant::now() + DEADLINE;
    let mut audited: BTreeMap<String, Nodes> = BTreeMap::new();
    for (name, id) in names.iter().zip(&tasks) {
        let task = loop {
            let task = runtime.get(id, None, Access::Any).await.unwrap();
            if task.status.state.is_terminal() {
                break task;
            }
            assert!(Instant::now() < deadline, "{name} was never audited");
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        assert_eq!(task.status.state, TaskState::Completed, "{name}: {task:?}");
        let report = task.artifacts[0].parts[0].as_data().unwrap();
        audited.insert(name.clone(), nodes_of(&report["pages"][0]));
    }
    let (per_rule, disagreements) = compare(&verdicts, |name| audited[name].clone());
    for (rule, (violations, _)) in &per_rule {
        let any = violations.tp + violations.fp + violations.fn_ > 0;
        assert!(
            !any || violations.f1() >= 0.95,
            "{rule}: F1 {:.2} ({disagreements:#?})",
            violations.f1()
        );
    }
    let written = table(&per_rule, verdicts["axeCore"].as_str().unwrap());
    check_docs(BEGIN, END, &written, &disagreements);
}
