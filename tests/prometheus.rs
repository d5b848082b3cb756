//! The project's monitoring config proven on a real Prometheus (Debian's `prometheus`,
//! which `.ci/run` installs where missing) scraping a real `fundi serve` with the
//! project's own scrape config: a new server's counters read zero, not "no data"; and
//! after some work (tasks of several skills, a push delivery, a genuine failure, a chaos
//! run, a restart with a task to recover, an open stream) every query of the Grafana
//! dashboard (config/dashboards/fundi.json) returns data; the panels for several nodes
//! do on a node of a cluster that lost the database and got it back, and handed a
//! request to another node.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use serde_json::{Value, json};

/// Debian's Prometheus, or `FUNDI_PROMETHEUS`.
fn prometheus_binary() -> PathBuf {
    let path = std::env::var_os("FUNDI_PROMETHEUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/prometheus"));
    assert!(
        path.exists(),
        "no Prometheus at {}: install Debian's (apt-get install prometheus; .ci/run does) or \
         set FUNDI_PROMETHEUS",
        path.display()
    );
    path
}

/// A Prometheus scraping `target` every second with the project's scrape config.
struct Prometheus {
    child: Child,
    url: String,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn start_prometheus(dir: &Path, target: &str) -> Prometheus {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let project = std::fs::read_to_string(root.join("config/monitoring/prometheus.yml")).unwrap();
    let config = project
        .replace("127.0.0.1:8080", target)
        .replace("scrape_interval: 15s", "scrape_interval: 1s");
    assert!(
        config.contains(target) && config.contains("scrape_interval: 1s"),
        "the project's scrape config changed shape: {project}"
    );
    let file = dir.join("prometheus.yml");
    std::fs::write(&file, config).unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(prometheus_binary())
        .arg(format!("--config.file={}", file.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("tsdb").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("prometheus.log")).unwrap())
        .spawn()
        .expect("start prometheus");
    let prometheus = Prometheus {
        child,
        url: format!("http://127.0.0.1:{port}"),
    };
    let deadline = Instant::now() + DEADLINE;
    loop {
        let ready = reqwest::get(format!("{}/-/ready", prometheus.url)).await;
        if ready.is_ok_and(|r| r.status().is_success()) {
            return prometheus;
        }
        assert!(
            Instant::now() < deadline,
            "prometheus did not get ready: {}",
            std::fs::read_to_string(dir.join("prometheus.log")).unwrap_or_default()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

impl Prometheus {
    /// The result of `query` once it has one (within a minute): its series.
    async fn data(&self, query: &str) -> Vec<Value> {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let answer: Value = reqwest::Client::new()
                .get(format!("{}/api/v1/query", self.url))
                .query(&[("query", query)])
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            assert_eq!(answer["status"], "success", "{query}: {answer}");
            let series = answer["data"]["result"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            if !series.is_empty() {
                return series;
            }
            assert!(Instant::now() < deadline, "no data for {query}");
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
}

/// The dashboard's panels for several nodes on one schema say so in their description.
const CLUSTER_ONLY: &str = "Several nodes on one PostgreSQL schema";

/// Every PromQL expression of the Grafana dashboard, its rate interval filled in: of the
/// panels for several nodes (`cluster`), or of the others.
fn dashboard_queries(cluster: bool) -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("config/dashboards/fundi.json")).unwrap();
    let dashboard: Value = serde_json::from_str(&text).unwrap();
    let mut queries = Vec::new();
    for panel in dashboard["panels"].as_array().unwrap() {
        let only_cluster = panel["description"]
            .as_str()
            .is_some_and(|d| d.starts_with(CLUSTER_ONLY));
        if only_cluster != cluster {
            continue;
        }
        for target in panel["targets"].as_array().into_iter().flatten() {
            if let Some(expr) = target["expr"].as_str() {
                let title = panel["title"].as_str().unwrap_or("?").to_owned();
                queries.push((title, expr.replace("$__rate_interval", "1m")));
            }
        }
    }
    assert!(queries.len() >= 5, "the dashboard's queries: {queries:?}");
    queries
}

fn env() -> Vec<(&'static str, &'static str)> {
    vec![
        ("FUNDI__PUSH__ALLOWED_HOSTS", "[\"127.0.0.1\"]"),
        ("FUNDI__RUNTIME__APPROVALS__CHAOS_RUN", "none"),
        ("FUNDI__SKILLS__DELEGATE__GIVE_UP_AFTER_S", "1"),
        ("FUNDI__PEERS__GONE__URL", "http://127.0.0.1:9/"),
        ("FUNDI__PEERS__GONE__ALLOW_PRIVATE_NETWORKS", "true"),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_reads_a_real_fundi_through_a_real_prometheus() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &env());
    let target = server.url.trim_start_matches("http://").to_owned();
    let prometheus = start_prometheus(dir.path(), &target).await;

    // A new server: what a newcomer looked for reads zero, not "no data".
    for metric in [
        "fundi_failures_total",
        "fundi_push_attempts_total",
        "fundi_push_dead_letters_total",
        "fundi_push_resting",
        "fundi_recoveries_total",
        "fundi_sse_subscribers",
    ] {
        let series = prometheus.data(&format!("sum({metric})")).await;
        assert_eq!(series[0]["value"][1], "0", "{metric}: {series:?}");
    }

    // A task left working, recovered by a restart at the same address.
    let long = json!({"message": message("long", json!({"steps": 200, "delayMs": 100})),
                      "configuration": {"returnImmediately": true}});
    let long = ok(&server, "SendMessage", long).await;
    let long = long["task"]["id"].as_str().unwrap().to_owned();
    assert!(server.terminate().success());
    // Now that its address is known, fundi itself is the chaos run's allowed target.
    let allowed = format!("[\"{target}\"]");
    let mut restarted = env();
    restarted.push((
        "FUNDI__SKILLS__CHAOS_RUN__ALLOWED_TARGETS",
        allowed.as_str(),
    ));
    let server = Server::start_bound(dir.path(), &target, &restarted);

    // Work of several skills, a push delivery, a genuine failure, a chaos run.
    let (hook, hits) = webhook(Duration::ZERO).await;
    let pushed = json!({"message": message("pushed", json!({"steps": 2})),
                        "configuration": {"taskPushNotificationConfig": {"url": hook, "id": "hook"}}});
    ok(&server, "SendMessage", pushed).await;
    let mut failing = message("to nobody", json!({"peer": "gone", "skill": "echo"}));
    failing["metadata"] = json!({"skill": "delegate"});
    let failing = ok(
        &server,
        "SendMessage",
        json!({"message": failing, "configuration": {"returnImmediately": true}}),
    )
    .await;
    let failing = failing["task"]["id"].as_str().unwrap().to_owned();
    let mut chaos = message(
        "drill",
        json!({"target": target, "plan": [
        {"name": "slow", "durationMs": 1000, "faults": [{"type": "latency", "attributes": {"latency": 50}}]}],
        "probe": {"kind": "http", "path": "/health", "ratePerSecond": 10}}),
    );
    chaos["metadata"] = json!({"skill": "chaos-run"});
    let chaos = ok(
        &server,
        "SendMessage",
        json!({"message": chaos, "configuration": {"returnImmediately": true}}),
    )
    .await;
    let chaos = chaos["task"]["id"].as_str().unwrap().to_owned();
    poll_task(&server, &failing, |t| state(t) == "TASK_STATE_FAILED").await;
    poll_task(&server, &chaos, |t| state(t) == "TASK_STATE_COMPLETED").await;
    let deadline = Instant::now() + DEADLINE;
    while hits.lock().unwrap().is_empty() {
        assert!(Instant::now() < deadline, "no push delivery");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // A stream open while Prometheus reads.
    let stream = server
        .post()
        .header("A2A-Version", "1.0")
        .json(&request("SubscribeToTask", json!({"id": long})))
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 200);

    for (title, query) in dashboard_queries(false) {
        let series = prometheus.data(&query).await;
        assert!(!series.is_empty(), "{title}: {query}");
    }
    let recovered = prometheus
        .data("sum(fundi_recoveries_total{outcome=\"resumed\"})")
        .await;
    assert_eq!(recovered[0]["value"][1], "1", "{recovered:?}");
    let failed = prometheus
        .data("sum(fundi_failures_total{source=\"skill\"}) > 0")
        .await;
    assert!(!failed.is_empty());
    drop(stream);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cluster_panels_read_a_node_that_lost_the_database_and_forwarded_a_request() {
    use fundi_postgres::testing::{drop_schemas, fresh_schema, test_url};
    let schema = fresh_schema();
    let mut url = reqwest::Url::parse(&test_url()).unwrap();
    let database = format!(
        "{}:{}",
        url.host_str().unwrap_or("127.0.0.1"),
        url.port().unwrap_or(5432)
    );
    let phases = json!([{"name": "clean", "durationMs": 1000},
                        {"name": "down", "durationMs": 1000, "faults": [{"type": "down"}]}]);
    let proxy = fundi_skills::chaos::FaultProxy::start(&database, phases)
        .await
        .unwrap();
    let direct = url.to_string();
    url.set_port(Some(proxy.address().port())).unwrap();
    url.set_host(Some("127.0.0.1")).unwrap();
    let proxied = url.to_string();
    let node = |dir: &Path, id: &'static str, database: &str| {
        let database = database.to_owned();
        let env = [
            ("FUNDI__STORE__KIND", "postgres"),
            ("FUNDI__STORE__POSTGRES__URL", database.as_str()),
            ("FUNDI__STORE__POSTGRES__SCHEMA", schema.as_str()),
            ("FUNDI__STORE__POSTGRES__NODE_ID", id),
            ("FUNDI__STORE__POSTGRES__LEASE_TIME", "2s"),
            (
                "FUNDI__AUTH__STATIC__CLIENTS__AGENT__TOKEN",
                "prom-agent-token-0123456789",
            ),
            (
                "FUNDI__AUTH__STATIC__USERS__ALICE",
                "prom-alice-token-0123456789",
            ),
        ];
        let mut server = Server::start(dir, &env);
        server.token = "prom-agent-token-0123456789".into();
        server.user_token = "prom-alice-token-0123456789".into();
        server
    };
    let (one, two) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let watched = node(one.path(), "n1", &proxied);
    let other = node(two.path(), "n2", &direct);
    let target = watched.url.trim_start_matches("http://").to_owned();
    let prometheus = start_prometheus(one.path(), &target).await;

    // A cancel sent to the watched node for a task the other one runs: handed over.
    let long = json!({"message": message("long", json!({"steps": 500, "delayMs": 50})),
                      "configuration": {"returnImmediately": true}});
    let long = ok(&other, "SendMessage", long).await;
    let long = long["task"]["id"].as_str().unwrap().to_owned();
    let canceled = ok(&watched, "CancelTask", json!({"id": long})).await;
    assert_eq!(state(&canceled), "TASK_STATE_CANCELED");

    // The watched node's database link goes down until it cuts itself off, then back.
    let health = |server: &Server| reqwest::get(format!("{}/health", server.url));
    proxy.enter("down").unwrap();
    let deadline = Instant::now() + DEADLINE;
    while health(&watched).await.map(|r| r.status()).ok()
        != Some(reqwest::StatusCode::SERVICE_UNAVAILABLE)
    {
        assert!(Instant::now() < deadline, "the node never cut itself off");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    proxy.enter("clean").unwrap();
    while health(&watched).await.map(|r| r.status()).ok() != Some(reqwest::StatusCode::OK) {
        assert!(
            Instant::now() < deadline,
            "the node never held the database again"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    for (title, query) in dashboard_queries(true) {
        let series = prometheus.data(&query).await;
        assert!(!series.is_empty(), "{title}: {query}");
    }
    let cut = prometheus.data("sum(fundi_node_cut_offs_total) > 0").await;
    assert!(!cut.is_empty());
    drop((watched, other, prometheus));
    proxy.shutdown().await;
    drop_schemas(&[schema]).await;
}
