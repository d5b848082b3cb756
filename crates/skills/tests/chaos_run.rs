//! chaos-run on loopback: an axum upstream (or a raw TCP one), clients through the
//! proxy, and the faults measured against what was configured, within stated
//! tolerances (at least the configured delay; at most a generous margin above it, for a
//! busy machine); toxicity drawn per connection; probes, the report and SLO breaches;
//! cancel closing everything; bad plans refused before anything listens.

use fundi_runtime::Access;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::Query;
use axum::routing::get;
use fundi_ops::chaos::{ChaosLog, MemoryChaosLog};
use fundi_ops::issues::{IssueStore, MemoryIssueStore};
use fundi_runtime::{
    Grants, ListRequest, MemoryStore, Message, Part, PartContent, Runtime, RuntimeConfig,
    RuntimeError, RuntimeHandle, SubmitRequest, Task, TaskId, TaskState,
};
use fundi_skills::{ChaosConfig, ChaosRunSkill};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const DEADLINE: Duration = Duration::from_secs(30);
/// How far above a configured delay a measurement may be on a busy machine.
const SLACK: Duration = Duration::from_millis(1500);

/// An HTTP upstream: `/` answers "ok", `/big?n=N` N bytes.
async fn http_upstream() -> SocketAddr {
    #[derive(serde::Deserialize)]
    struct Size {
        n: usize,
    }
    let app = Router::new()
        .route("/", get(|| async { ([("x-upstream", "yes")], "ok") }))
        .route(
            "/big",
            get(|Query(size): Query<Size>| async move { vec![b'x'; size.n] }),
        );
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    addr
}

/// A TCP upstream that sends `bytes` on every connection, then closes it.
async fn sending_upstream(bytes: usize) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let _ = stream.write_all(&vec![b'x'; bytes]).await;
                let _ = stream.shutdown().await;
            });
        }
    });
    addr
}

/// A TCP upstream that holds each connection open and echoes what it reads.
async fn echo_upstream() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buffer = [0; 64];
                while let Ok(n @ 1..) = stream.read(&mut buffer).await {
                    let _ = stream.write_all(&buffer[..n]).await;
                }
            });
        }
    });
    addr
}

struct Harness {
    runtime: RuntimeHandle,
    log: Arc<MemoryChaosLog>,
    issues: Arc<MemoryIssueStore>,
}

async fn harness(targets: &[String]) -> Harness {
    let log = Arc::new(MemoryChaosLog::new());
    let issues = Arc::new(MemoryIssueStore::new());
    let mut config = ChaosConfig::default();
    config.allowed_targets = targets.to_vec();
    config.max_duration_s = 60;
    let skill = ChaosRunSkill::new(config, issues.clone(), log.clone()).unwrap();
    let mut runtime_config = RuntimeConfig::default();
    runtime_config.approvals = Default::default();
    let runtime = Runtime::builder()
        .shared_store(Arc::new(MemoryStore::new()))
        .config(runtime_config)
        .skill(skill)
        .start()
        .await
        .unwrap();
    Harness {
        runtime,
        log,
        issues,
    }
}

fn request(data: Value) -> SubmitRequest {
    SubmitRequest::new(Message::user(vec![Part::data(data)]))
}

/// One phase of `ms` with `faults`.
fn one_phase(target: &str, ms: u64, faults: Value) -> Value {
    json!({"target": target, "seed": 7,
           "plan": [{"name": "fault", "durationMs": ms, "faults": faults}]})
}

impl Harness {
    async fn start(&self, data: Value) -> TaskId {
        self.runtime.submit(request(data)).await.unwrap().task.id
    }

    /// Waits for the proxy's address artifact.
    async fn proxy(&self, id: &TaskId) -> SocketAddr {
        let deadline = Instant::now() + DEADLINE;
        loop {
            let task = self.runtime.get(id, None, Access::Any).await.unwrap();
            if let Some(artifact) = task
                .artifacts
                .iter()
                .find(|a| a.artifact_id == "chaos-proxy")
            {
                let data = data_of(&artifact.parts[0]);
                return data["listen"].as_str().unwrap().parse().unwrap();
            }
            assert!(!task.status.state.is_terminal(), "ended first: {task:?}");
            assert!(Instant::now() < deadline, "no proxy address");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    async fn finish(&self, id: &TaskId) -> Task {
        let deadline = Instant::now() + DEADLINE;
        loop {
            let task = self.runtime.get(id, None, Access::Any).await.unwrap();
            if task.status.state.is_terminal() {
                return task;
            }
            assert!(Instant::now() < deadline, "run never ended");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    async fn events(&self, id: &TaskId) -> Vec<fundi_ops::chaos::ChaosRecord> {
        self.log.read(id, 0, 100_000).await.unwrap()
    }
}

fn report(task: &Task) -> Value {
    let artifact = task
        .artifacts
        .iter()
        .find(|a| a.artifact_id == "chaos-report")
        .unwrap_or_else(|| panic!("no report: {task:?}"));
    data_of(&artifact.parts[0]).clone()
}

fn data_of(part: &Part) -> &Value {
    match &part.content {
        PartContent::Data(data) => data,
        other => panic!("not data: {other:?}"),
    }
}

/// A client that opens a new connection per request.
fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap()
}

async fn timed_get(url: &str) -> (Duration, reqwest::StatusCode, Vec<u8>) {
    let started = Instant::now();
    let response = client().get(url).send().await.unwrap();
    let status = response.status();
    let body = response.bytes().await.unwrap().to_vec();
    (started.elapsed(), status, body)
}

/// Reads until the end (or an error): the bytes, how many reads, and how it ended.
async fn drain(stream: &mut TcpStream) -> (Vec<u8>, usize, std::io::Result<()>) {
    let mut all = Vec::new();
    let mut reads = 0;
    let mut buffer = vec![0; 65536];
    loop {
        match tokio::time::timeout(DEADLINE, stream.read(&mut buffer)).await {
            Err(_) => panic!("the connection never ended"),
            Ok(Ok(0)) => return (all, reads, Ok(())),
            Ok(Ok(n)) => {
                reads += 1;
                all.extend_from_slice(&buffer[..n]);
            }
            Ok(Err(error)) => return (all, reads, Err(error)),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn latency_delays_each_response_and_is_logged_as_a_chaos_event() {
    let upstream = http_upstream().await;
    let target = upstream.to_string();
    let h = harness(std::slice::from_ref(&target)).await;
    let fault = json!([{"type": "latency", "attributes": {"latency": 300, "jitter": 50}}]);
    let id = h.start(one_phase(&target, 30_000, fault)).await;
    let proxy = h.proxy(&id).await;
    let (direct, _, _) = timed_get(&format!("http://{upstream}/")).await;
    for _ in 0..3 {
        let (took, status, body) = timed_get(&format!("http://{proxy}/")).await;
        assert_eq!((status.as_u16(), body.as_slice()), (200, &b"ok"[..]));
        assert!(
            took >= Duration::from_millis(250),
            "{took:?} (latency 300 ± 50)"
        );
        assert!(
            took < Duration::from_millis(350) + SLACK,
            "{took:?}; direct {direct:?}"
        );
    }
    let canceled = h.runtime.cancel(&id, Access::Any).await.unwrap();
    assert_eq!(canceled.status.state, TaskState::Canceled);
    let events = h.events(&id).await;
    assert_eq!(events.len(), 3, "one per connection: {events:?}");
    let connections: Vec<u64> = events.iter().filter_map(|e| e.event.connection).collect();
    assert_eq!(connections, [1, 2, 3]);
    for record in &events {
        assert_eq!(record.event.fault, "latency");
        assert_eq!(record.event.phase, "fault");
        assert_eq!(record.event.direction.as_deref(), Some("downstream"));
        let delay = record.event.detail["delayMs"].as_u64().unwrap();
        assert!((250..=350).contains(&delay), "{delay}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bandwidth_paces_a_download_to_the_rate() {
    let upstream = http_upstream().await;
    let target = upstream.to_string();
    let h = harness(std::slice::from_ref(&target)).await;
    let fault = json!([{"type": "bandwidth", "attributes": {"rate": 100}}]);
    let id = h.start(one_phase(&target, 30_000, fault)).await;
    let proxy = h.proxy(&id).await;
    // 100 KB at 100 KB/s: a second, and no less than 0.9 s (pieces of a tenth of a
    // second's worth, each after its pause).
    let (took, status, body) = timed_get(&format!("http://{proxy}/big?n=100000")).await;
    assert_eq!((status.as_u16(), body.len()), (200, 100_000));
    assert!(took >= Duration::from_millis(900), "{took:?}");
    assert!(took < Duration::from_secs(1) + SLACK, "{took:?}");
    h.runtime.cancel(&id, Access::Any).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reset_peer_resets_and_a_toxicity_of_half_affects_about_half_the_connections() {
    let upstream = http_upstream().await;
    let target = upstream.to_string();
    let h = harness(std::slice::from_ref(&target)).await;
    let fault = json!([{"type": "reset_peer", "stream": "upstream", "toxicity": 0.5,
                        "attributes": {"timeout": 0}}]);
    let id = h.start(one_phase(&target, 30_000, fault)).await;
    let proxy = h.proxy(&id).await;
    let (mut reset, mut answered) = (0, 0);
    for _ in 0..100 {
        let mut stream = TcpStream::connect(proxy).await.unwrap();
        stream
            .write_all(b"GET / HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
            .await
            .unwrap();
        match drain(&mut stream).await {
            (_, _, Err(error)) if error.kind() == std::io::ErrorKind::ConnectionReset => reset += 1,
            (bytes, _, Ok(())) if bytes.starts_with(b"HTTP/1.1 200") => answered += 1,
            other => panic!("neither reset nor answered: {other:?}"),
        }
    }
    assert_eq!(reset + answered, 100);
    assert!(
        (30..=70).contains(&reset),
        "{reset} of 100 reset at toxicity 0.5"
    );
    h.runtime.cancel(&id, Access::Any).await.unwrap();
    let events = h.events(&id).await;
    assert_eq!(events.len(), reset, "one chaos event per reset connection");
    assert!(
        events
            .iter()
            .all(|e| e.event.fault == "reset_peer"
                && e.event.direction.as_deref() == Some("upstream"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slicer_cuts_data_into_pieces_with_pauses_between() {
    let upstream = sending_upstream(10_000).await;
    let target = upstream.to_string();
    let h = harness(std::slice::from_ref(&target)).await;
    let fault = json!([{"type": "slicer",
        "attributes": {"average_size": 1000, "size_variation": 200, "delay": 20000}}]);
    let id = h.start(one_phase(&target, 30_000, fault)).await;
    let proxy = h.proxy(&id).await;
    let started = Instant::now();
    let mut stream = TcpStream::connect(proxy).await.unwrap();
    let (bytes, reads, ended) = drain(&mut stream).await;
    let took = started.elapsed();
    assert!(ended.is_ok(), "{ended:?}");
    assert_eq!(bytes.len(), 10_000, "nothing lost");
    // At least ceil(10000 / 1200) = 9 slices, 20 ms apart.
    assert!(took >= Duration::from_millis(8 * 20), "{took:?}");
    assert!(reads >= 5, "{reads} reads: the data came in pieces");
    h.runtime.cancel(&id, Access::Any).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limit_data_closes_the_connection_after_its_bytes() {
    let upstream = sending_upstream(10_000).await;
    let target = upstream.to_string();
    let h = harness(std::slice::from_ref(&target)).await;
    let fault = json!([{"type": "limit_data", "attributes": {"bytes": 1000}}]);
    let id = h.start(one_phase(&target, 30_000, fault)).await;
    let proxy = h.proxy(&id).await;
    for _ in 0..2 {
        let mut stream = TcpStream::connect(proxy).await.unwrap();
        let (bytes, _, _) = drain(&mut stream).await;
        assert_eq!(bytes.len(), 1000);
    }
    h.runtime.cancel(&id, Access::Any).await.unwrap();
    assert_eq!(h.events(&id).await.len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeout_holds_the_data_then_closes_and_slow_close_delays_the_close() {
    let echo = echo_upstream().await.to_string();
    let upstream = sending_upstream(1000).await;
    let target = upstream.to_string();
    let h = harness(&[target.clone(), echo.clone()]).await;

    // What the client sends is held, and the connection is closed after the timeout.
    let fault = json!([{"type": "timeout", "stream": "upstream", "attributes": {"timeout": 400}}]);
    let id = h.start(one_phase(&echo, 30_000, fault)).await;
    let proxy = h.proxy(&id).await;
    let started = Instant::now();
    let mut stream = TcpStream::connect(proxy).await.unwrap();
    stream.write_all(b"ping").await.unwrap();
    let (bytes, _, _) = drain(&mut stream).await;
    let took = started.elapsed();
    assert!(bytes.is_empty(), "no data passes a timeout");
    assert!(took >= Duration::from_millis(400), "{took:?}");
    assert!(took < Duration::from_millis(400) + SLACK, "{took:?}");
    h.runtime.cancel(&id, Access::Any).await.unwrap();

    let fault = json!([{"type": "slow_close", "attributes": {"delay": 400}}]);
    let id = h.start(one_phase(&target, 30_000, fault)).await;
    let proxy = h.proxy(&id).await;
    let started = Instant::now();
    let mut stream = TcpStream::connect(proxy).await.unwrap();
    let (bytes, _, ended) = drain(&mut stream).await;
    let took = started.elapsed();
    assert_eq!(
        (bytes.len(), ended.is_ok()),
        (1000, true),
        "the data, then the close"
    );
    assert!(took >= Duration::from_millis(400), "{took:?}");
    h.runtime.cancel(&id, Access::Any).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn down_refuses_connections_for_its_phase_and_the_proxy_comes_back() {
    let upstream = http_upstream().await;
    let target = upstream.to_string();
    let h = harness(std::slice::from_ref(&target)).await;
    let plan = json!({"target": target, "plan": [
        {"name": "outage", "durationMs": 1500, "faults": [{"type": "down"}]},
        {"name": "recovery", "durationMs": 30000}]});
    let id = h.start(plan).await;
    let proxy = h.proxy(&id).await;
    let poll = |want_refused: bool| async move {
        let deadline = Instant::now() + DEADLINE;
        loop {
            let refused = match TcpStream::connect(proxy).await {
                Err(error) => error.kind() == std::io::ErrorKind::ConnectionRefused,
                Ok(_) => false,
            };
            if refused == want_refused {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "refused never became {want_refused}"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    poll(true).await;
    poll(false).await;
    let (_, status, _) = timed_get(&format!("http://{proxy}/")).await;
    assert_eq!(status.as_u16(), 200, "direct traffic again");
    h.runtime.cancel(&id, Access::Any).await.unwrap();
    // The plan starts down: the listener is closed before its address is published,
    // so the one chaos event is the proxy's.
    let events = h.events(&id).await;
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0].event.fault, "down");
    assert_eq!(
        events[0].event.connection, None,
        "a fault of the whole proxy"
    );
    assert_eq!(events[0].event.phase, "outage");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_target_gets_injected_errors_and_delayed_responses() {
    let upstream = http_upstream().await;
    let target = format!("http://{upstream}");
    let h = harness(std::slice::from_ref(&target)).await;

    let id = h.start(one_phase(&target, 30_000, json!([]))).await;
    let proxy = h.proxy(&id).await;
    let response = client()
        .get(format!("http://{proxy}/"))
        .send()
        .await
        .unwrap();
    assert_eq!(
        response.headers()["x-upstream"],
        "yes",
        "forwarded as it is"
    );
    assert_eq!(response.text().await.unwrap(), "ok");
    h.runtime.cancel(&id, Access::Any).await.unwrap();

    let fault = json!([{"type": "http_error", "attributes": {"status": 503}}]);
    let id = h.start(one_phase(&target, 30_000, fault)).await;
    let proxy = h.proxy(&id).await;
    let (_, status, body) = timed_get(&format!("http://{proxy}/big?n=10")).await;
    assert_eq!(status.as_u16(), 503);
    assert!(String::from_utf8_lossy(&body).contains("injected"));
    h.runtime.cancel(&id, Access::Any).await.unwrap();
    let events = h.events(&id).await;
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].event.detail["status"], 503);
    assert_eq!(events[0].event.detail["path"], "/big?n=10");

    let faults = json!([{"type": "header_delay", "attributes": {"delay": 300}},
                        {"type": "body_delay", "attributes": {"delay": 300}}]);
    let id = h.start(one_phase(&target, 30_000, faults)).await;
    let proxy = h.proxy(&id).await;
    let (took, status, body) = timed_get(&format!("http://{proxy}/")).await;
    assert_eq!((status.as_u16(), body.as_slice()), (200, &b"ok"[..]));
    assert!(took >= Duration::from_millis(600), "{took:?}");
    assert!(took < Duration::from_millis(600) + SLACK, "{took:?}");
    h.runtime.cancel(&id, Access::Any).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn probes_are_reported_per_phase_and_slo_breaches_become_issues_once() {
    let upstream = http_upstream().await;
    let target = format!("http://{upstream}");
    let h = harness(std::slice::from_ref(&target)).await;
    let plan = json!({"target": target, "seed": 1,
        "plan": [{"name": "baseline", "durationMs": 1500},
                 {"name": "errors", "durationMs": 1500, "faults": [{"type": "http_error"}]}],
        "probe": {"ratePerSecond": 20}, "slo": {"successRate": 0.9, "p99Ms": 5000}});
    let mut reports = Vec::new();
    for _ in 0..2 {
        let id = h.start(plan.clone()).await;
        let task = h.finish(&id).await;
        assert_eq!(task.status.state, TaskState::Completed, "{task:?}");
        let summary = task.status.message.as_ref().unwrap().text();
        assert!(summary.contains("verdict fail"), "{summary}");
        assert!(summary.contains("SLO breach: success rate"), "{summary}");
        let report = report(&task);
        let logged = h.events(&id).await.len() as u64;
        assert_eq!(report["chaosEvents"]["total"], logged, "{report}");
        reports.push(report);
    }
    let report = &reports[0];
    assert_eq!(report["verdict"], "fail");
    let (baseline, errors) = (&report["phases"][0], &report["phases"][1]);
    assert_eq!(baseline["verdict"], "pass", "{baseline}");
    assert_eq!(baseline["probe"]["successRate"], 1.0, "{baseline}");
    assert!(
        baseline["probe"]["sent"].as_u64().unwrap() >= 10,
        "{baseline}"
    );
    assert_eq!(baseline["chaosEvents"]["total"], 0);
    assert_eq!(errors["verdict"], "fail", "{errors}");
    let sent = errors["probe"]["sent"].as_u64().unwrap();
    assert!(sent >= 10, "{errors}");
    assert_eq!(
        errors["probe"]["errors"]["status 503"], sent,
        "every probe got the 503"
    );
    // A baseline probe that reached the proxy once the errors had begun met one too,
    // and is counted apart (straddled), in neither phase's figures.
    let straddled = baseline["probe"]["straddled"].as_u64().unwrap();
    let injected = errors["chaosEvents"]["byFault"]["http_error"]
        .as_u64()
        .unwrap();
    assert!((sent..=sent + straddled).contains(&injected), "{report}");
    assert_eq!(report["issues"], json!({"new": 1, "updated": 0}));
    assert_eq!(
        reports[1]["issues"],
        json!({"new": 0, "updated": 1}),
        "deduplicated"
    );
    let issues = h.issues.issues(Some("chaos-run")).await.unwrap();
    assert_eq!(issues.len(), 1);
    assert_eq!(issues[0].finding.rule, "slo-success-rate");
    let title = &issues[0].finding.title;
    assert!(title.contains("phase errors"), "{title}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_closes_the_listener_and_every_connection_before_it_returns() {
    let upstream = echo_upstream().await;
    let target = upstream.to_string();
    let h = harness(std::slice::from_ref(&target)).await;
    let id = h.start(one_phase(&target, 30_000, json!([]))).await;
    let proxy = h.proxy(&id).await;
    let mut open = TcpStream::connect(proxy).await.unwrap();
    open.write_all(b"ping").await.unwrap();
    let mut echoed = [0; 4];
    open.read_exact(&mut echoed).await.unwrap();
    assert_eq!(&echoed, b"ping");

    let started = Instant::now();
    let canceled = h.runtime.cancel(&id, Access::Any).await.unwrap();
    let took = started.elapsed();
    assert_eq!(canceled.status.state, TaskState::Canceled);
    // By the time the cancel has answered, nothing of the proxy is left.
    let refused = TcpStream::connect(proxy).await.unwrap_err();
    assert_eq!(refused.kind(), std::io::ErrorKind::ConnectionRefused);
    let mut rest = [0; 4];
    match open.read(&mut rest).await {
        Ok(0) | Err(_) => {}
        Ok(n) => panic!("the proxied connection is still open ({n} bytes)"),
    }
    eprintln!("cancel to closed proxy: {took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_plans_and_missing_scopes_are_refused_before_anything_listens() {
    // The address every refused plan asks to listen on is taken: a run that got as far
    // as listening would fail with "address in use", not with its plan's error.
    let taken = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let listen = taken.local_addr().unwrap().to_string();
    let h = harness(&["127.0.0.1:9".to_owned()]).await;
    for (data, says) in [
        (
            json!({"target": "127.0.0.1:22", "plan": [{"durationMs": 1000}]}),
            "not an allowed target",
        ),
        (
            json!({"target": "127.0.0.1:9", "plan": [{"durationMs": 61000}]}),
            "skills.chaos-run.max-duration-s",
        ),
        (
            json!({"target": "127.0.0.1:9", "plan": [{"durationMs": 1000,
                   "faults": [{"type": "latency", "attributes": {"latency": "slow"}}]}]}),
            "data.plan[0].faults[0].attributes.latency",
        ),
        (
            json!({"target": "127.0.0.1:9", "plan": [{"durationMs": 1000}],
                   "listen": "0.0.0.0:0"}),
            "allow-non-loopback-listen",
        ),
    ] {
        let mut data = data;
        if data.get("listen").is_none() {
            data["listen"] = json!(listen);
        }
        match h.runtime.submit(request(data.clone())).await {
            Err(RuntimeError::InvalidInput(error)) => {
                assert!(error.contains(says), "{data}: {error}")
            }
            other => panic!("{data}: {other:?}"),
        }
    }
    let mut unscoped = request(json!({"target": "127.0.0.1:9", "plan": [{"durationMs": 1000}]}));
    unscoped.grants = Grants::scopes(["fundi:audit"]);
    match h.runtime.submit(unscoped).await {
        Err(RuntimeError::Forbidden { scope, .. }) => assert_eq!(scope, "fundi:chaos"),
        other => panic!("{other:?}"),
    }
    let listed = h
        .runtime
        .list(ListRequest::new(fundi_runtime::TaskOwner::Any).page_size(10))
        .await
        .unwrap();
    assert!(
        listed.tasks.is_empty(),
        "no task was made: {:?}",
        listed.tasks
    );

    // A good plan does get as far as listening, where the address is taken.
    let id = h
        .start(json!({"target": "127.0.0.1:9", "listen": listen,
                      "plan": [{"durationMs": 1000}]}))
        .await;
    let task = h.finish(&id).await;
    assert_eq!(task.status.state, TaskState::Failed);
    let why = task.status.message.unwrap().text();
    assert!(
        why.contains("could not listen on") && why.contains(&listen),
        "{why}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_target_that_is_down_for_real_is_a_genuine_error_never_a_chaos_event() {
    let gone = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let target = gone.local_addr().unwrap().to_string();
    drop(gone);
    let h = harness(std::slice::from_ref(&target)).await;
    let plan = json!({"target": target, "plan": [{"name": "calm", "durationMs": 1000}],
                      "probe": {"kind": "http", "ratePerSecond": 10}});
    let id = h.start(plan).await;
    let task = h.finish(&id).await;
    assert_eq!(task.status.state, TaskState::Completed, "{task:?}");
    let report = report(&task);
    assert!(
        report["genuineErrors"]["byKind"]["target"]
            .as_u64()
            .unwrap()
            >= 1,
        "{report}"
    );
    assert_eq!(report["chaosEvents"]["total"], 0, "{report}");
    let probe = &report["phases"][0]["probe"];
    assert_eq!(probe["succeeded"], 0, "{probe}");
    assert!(h.events(&id).await.is_empty());
}

#[test]
fn an_approver_may_narrow_a_plan_but_not_widen_it() {
    use fundi_runtime::Skill;
    let mut config = ChaosConfig::default();
    config.allowed_targets = vec!["127.0.0.1:9".into(), "127.0.0.1:10".into()];
    let skill = ChaosRunSkill::new(
        config,
        Arc::new(MemoryIssueStore::new()),
        Arc::new(MemoryChaosLog::new()),
    )
    .unwrap();
    let latency = json!({"type": "latency", "toxicity": 0.5, "attributes": {"latency": 100}});
    let asked = json!({"target": "127.0.0.1:9", "probe": {"ratePerSecond": 10},
        "plan": [{"name": "base", "durationMs": 5000},
                 {"name": "slow", "durationMs": 10000, "faults": [latency]}]});
    let original = Message::user(vec![Part::data(asked)]);
    let narrower = json!({"target": "127.0.0.1:9", "probe": {"ratePerSecond": 2},
        "plan": [{"name": "slow", "durationMs": 3000, "faults": [
            {"type": "latency", "toxicity": 0.1, "attributes": {"latency": 100}}]}]});
    assert_eq!(skill.narrow(&original, &narrower), Ok(()));
    for (wider, says) in [
        (
            json!({"target": "127.0.0.1:10", "plan": [{"name": "base", "durationMs": 100}]}),
            "target",
        ),
        (
            json!({"target": "127.0.0.1:9", "plan": [{"name": "base", "durationMs": 6000}]}),
            "longer",
        ),
        (
            json!({"target": "127.0.0.1:9", "plan": [{"name": "other", "durationMs": 100}]}),
            "not in the plan",
        ),
        (
            json!({"target": "127.0.0.1:9", "plan": [{"name": "slow", "durationMs": 100,
                   "faults": [{"type": "latency", "attributes": {"latency": 100}}]}]}),
            "toxicity no higher",
        ),
        (
            json!({"target": "127.0.0.1:9", "plan": [{"name": "slow", "durationMs": 100,
                   "faults": [{"type": "latency", "toxicity": 0.5, "attributes": {"latency": 900}}]}]}),
            "not one asked for",
        ),
        (
            json!({"target": "127.0.0.1:9", "probe": {"ratePerSecond": 20},
                   "plan": [{"name": "base", "durationMs": 100}]}),
            "probe",
        ),
    ] {
        let error = skill.narrow(&original, &wider).unwrap_err();
        assert!(error.reason().contains(says), "{wider}: {error}");
    }
}
