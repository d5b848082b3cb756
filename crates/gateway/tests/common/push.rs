//! Push notifications' test rig: webhook receivers on 127.0.0.1 that record every
//! request, and a gateway with a push service in front of a real runtime.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use fundi_gateway::{AppState, Authenticator, GatewayConfig, PushService, PushSettings, app};
use fundi_runtime::store::{ListQuery, PushStore};
use fundi_runtime::{
    MemoryStore, Runtime, RuntimeConfig, RuntimeHandle, Skill, SkillCard, SkillContext, SkillError,
    SkillInput, SkillOutput, TaskEventKind, TaskId, TaskStore,
};
use futures::FutureExt;
use serde_json::{Value, json};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::{Credentials, DEADLINE, Steps, message, request};

/// How a receiver answers.
#[derive(Clone)]
pub enum Mode {
    Ok,
    Status(u16),
    /// Never answers.
    Hang,
    /// 307 to this URL.
    Redirect(String),
    /// 200 with a body that never ends.
    Endless,
}

/// One request a receiver got.
#[derive(Clone, Debug)]
pub struct Hit {
    pub headers: HeaderMap,
    pub body: Value,
    pub seq: u64,
}

/// A webhook receiver on 127.0.0.1 that records every request.
#[derive(Clone)]
pub struct Receiver {
    pub url: String,
    pub hits: Arc<Mutex<Vec<Hit>>>,
    pub mode: Arc<Mutex<Mode>>,
    pub arrived: Arc<Notify>,
}

impl Receiver {
    pub async fn start(mode: Mode) -> Receiver {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        Receiver::on(listener, mode)
    }

    pub fn on(listener: tokio::net::TcpListener, mode: Mode) -> Receiver {
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        let receiver = Receiver {
            url,
            hits: Arc::default(),
            mode: Arc::new(Mutex::new(mode)),
            arrived: Arc::new(Notify::new()),
        };
        let router = Router::new().route(
            "/hook",
            post({
                let receiver = receiver.clone();
                move |headers: HeaderMap, body: String| {
                    let receiver = receiver.clone();
                    async move { receiver.record(headers, body).await }
                }
            }),
        );
        tokio::spawn(async move { axum::serve(listener, router).await });
        receiver
    }

    pub async fn record(&self, headers: HeaderMap, body: String) -> Response {
        let seq = headers
            .get("x-fundi-event-seq")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let hit = Hit {
            headers,
            body: serde_json::from_str(&body).unwrap_or(Value::Null),
            seq,
        };
        self.hits.lock().unwrap().push(hit);
        self.arrived.notify_waiters();
        let mode = self.mode.lock().unwrap().clone();
        match mode {
            Mode::Ok => StatusCode::OK.into_response(),
            Mode::Status(code) => StatusCode::from_u16(code).unwrap().into_response(),
            Mode::Hang => {
                std::future::pending::<()>().await;
                unreachable!()
            }
            Mode::Redirect(to) => {
                (StatusCode::TEMPORARY_REDIRECT, [("location", to)]).into_response()
            }
            Mode::Endless => {
                let chunks = futures::stream::repeat_with(|| {
                    Ok::<_, std::io::Error>(axum::body::Bytes::from(vec![b'x'; 8192]))
                });
                Response::new(Body::from_stream(chunks))
            }
        }
    }

    pub fn set(&self, mode: Mode) {
        *self.mode.lock().unwrap() = mode;
    }

    pub fn hits(&self) -> Vec<Hit> {
        self.hits.lock().unwrap().clone()
    }

    /// Waits until `done` holds for the hits so far.
    pub async fn wait_until(&self, what: &str, done: impl Fn(&[Hit]) -> bool) -> Vec<Hit> {
        let deadline = Instant::now() + DEADLINE;
        loop {
            let arrived = self.arrived.notified();
            let hits = self.hits();
            if done(&hits) {
                return hits;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "{what}: never happened; hits: {hits:?}");
            let _ = tokio::time::timeout(left.min(Duration::from_millis(200)), arrived).await;
        }
    }
}

/// The distinct sequence numbers received, in order of first arrival.
pub fn seqs(hits: &[Hit]) -> Vec<u64> {
    let mut seen = Vec::new();
    for hit in hits {
        if !seen.contains(&hit.seq) {
            seen.push(hit.seq);
        }
    }
    seen
}

pub fn got_terminal(hits: &[Hit]) -> bool {
    hits.iter().any(|h| {
        h.body["statusUpdate"]["status"]["state"]
            .as_str()
            .is_some_and(|s| {
                [
                    "TASK_STATE_COMPLETED",
                    "TASK_STATE_FAILED",
                    "TASK_STATE_CANCELED",
                ]
                .contains(&s)
            })
    })
}

/// Records, for each task it runs, whether the task was stored when the run began
/// (its first poll, before any `.await`).
pub struct Peek {
    pub store: Arc<MemoryStore>,
    pub stored_at_start: Arc<Mutex<HashMap<TaskId, bool>>>,
}

#[async_trait::async_trait]
impl Skill for Peek {
    fn card(&self) -> SkillCard {
        SkillCard::new(
            "peek",
            "test skill: notes whether its task is stored when it starts",
        )
        .name("Peek")
        .tags(["test"])
        .input_modes(["text/plain"])
        .output_modes(["text/plain"])
    }

    async fn run(&self, _input: SkillInput, ctx: SkillContext) -> Result<SkillOutput, SkillError> {
        let read = self.store.get(ctx.task_id()).now_or_never();
        let stored = matches!(read, Some(Ok(Some(_))));
        let mut seen = self.stored_at_start.lock().unwrap();
        seen.insert(ctx.task_id().clone(), stored);
        Ok(SkillOutput::text("peeked"))
    }
}

pub struct Fixture {
    pub url: String,
    pub store: Arc<MemoryStore>,
    pub stored_at_start: Arc<Mutex<HashMap<TaskId, bool>>>,
    pub credentials: Credentials,
    pub http: reqwest::Client,
    pub shutdown: CancellationToken,
    pub runtime: RuntimeHandle,
    pub push: Arc<PushService>,
}

impl Drop for Fixture {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// Settings for tests: loopback allowed, short waits.
pub fn settings() -> PushSettings {
    PushSettings {
        allowed_hosts: vec!["127.0.0.1".into()],
        initial_backoff_ms: 20,
        max_backoff_ms: 100,
        max_attempts: 1000,
        timeout_ms: 5_000,
        ..PushSettings::default()
    }
}

pub async fn fixture(settings: PushSettings) -> Fixture {
    let park_after_ms = RuntimeConfig::default().park_after_ms;
    fixture_on(Arc::new(MemoryStore::new()), settings, park_after_ms).await
}

/// A fixture on `store` (one a fixture before it used, for a restart), whose tasks
/// park after `park_after_ms` with nothing happening.
pub async fn fixture_on(
    store: Arc<MemoryStore>,
    settings: PushSettings,
    park_after_ms: u64,
) -> Fixture {
    let push_store = store.clone();
    fixture_with_push_store(store, push_store, settings, park_after_ms).await
}

/// `fixture_on`, its push service keeping its configs and cursors in `push_store`.
pub async fn fixture_with_push_store(
    store: Arc<MemoryStore>,
    push_store: Arc<dyn PushStore>,
    settings: PushSettings,
    park_after_ms: u64,
) -> Fixture {
    let stored_at_start = Arc::new(Mutex::new(HashMap::new()));
    let peek = Peek {
        store: store.clone(),
        stored_at_start: stored_at_start.clone(),
    };
    let runtime = Runtime::builder()
        .shared_store(store.clone())
        .skill(Steps)
        .skill(peek)
        .config({
            let mut runtime_config = RuntimeConfig::default();
            runtime_config.cancel_grace_ms = 200;
            runtime_config.default_skill = Some("steps".into());
            runtime_config.park_after_ms = park_after_ms;
            runtime_config
        })
        .start()
        .await
        .unwrap();
    let credentials = Credentials::generate();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let shutdown = CancellationToken::new();
    let push = Arc::new(
        PushService::new(runtime.clone(), push_store, settings, shutdown.clone()).unwrap(),
    );
    push.resume();
    let state = AppState::new(
        runtime.clone(),
        GatewayConfig::default(),
        Authenticator::from_config(&credentials.auth_config()).unwrap(),
        &url,
        shutdown.clone(),
    )
    .with_push(push.clone());
    tokio::spawn(fundi_gateway::serve(
        listener,
        app(state),
        shutdown.clone(),
        fundi_gateway::Listening {
            header_read_timeout: Duration::from_secs(10),
            ..Default::default()
        },
    ));
    Fixture {
        url,
        store,
        stored_at_start,
        credentials,
        http: reqwest::Client::builder().no_proxy().build().unwrap(),
        shutdown,
        runtime,
        push,
    }
}

impl Fixture {
    pub async fn call_as(&self, bearer: &str, user: &str, method: &str, params: Value) -> Value {
        let response = self
            .http
            .post(format!("{}/a2a", self.url))
            .bearer_auth(bearer)
            .header("X-Fundi-User-Token", user)
            .timeout(DEADLINE)
            .json(&request(method, params))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        response.json().await.unwrap()
    }

    /// A call by alice through the admin client.
    pub async fn call(&self, method: &str, params: Value) -> Value {
        let c = &self.credentials;
        self.call_as(&c.admin_token, &c.alice, method, params).await
    }

    pub async fn ok(&self, method: &str, params: Value) -> Value {
        let body = self.call(method, params).await;
        body.get("result")
            .cloned()
            .unwrap_or_else(|| panic!("{method} failed: {body}"))
    }

    /// Starts a task (alice's) that runs until canceled; returns its id.
    pub async fn hold(&self) -> String {
        let held = self
            .ok(
                "SendMessage",
                json!({"message": message("h", json!({"hold": true})),
                       "configuration": {"returnImmediately": true}}),
            )
            .await;
        held["task"]["id"].as_str().unwrap().to_owned()
    }

    /// The dead letters, once there is at least one (or the deadline passes).
    pub async fn dead_letters(&self) -> Value {
        let deadline = Instant::now() + DEADLINE;
        loop {
            let (status, body) = self
                .admin(reqwest::Method::GET, "/admin/push/dead-letters", None)
                .await;
            assert_eq!(status, 200, "{body}");
            if !body["deadLetters"].as_array().unwrap().is_empty() {
                return body["deadLetters"].clone();
            }
            assert!(Instant::now() < deadline, "no dead letter appeared");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Starts a task with a push config to `url`; returns the task.
    pub async fn send_with_push(&self, data: Value, config: Value, blocking: bool) -> Value {
        let result = self
            .ok(
                "SendMessage",
                json!({"message": message("push", data),
                       "configuration": {"taskPushNotificationConfig": config,
                                         "returnImmediately": !blocking}}),
            )
            .await;
        result["task"].clone()
    }

    /// The sequence numbers of a task's events that are delivered (all but messages).
    pub async fn deliverable(&self, task_id: &str) -> Vec<u64> {
        self.store
            .events(&TaskId::from(task_id), 0, 10_000)
            .await
            .unwrap()
            .iter()
            .filter(|e| !matches!(e.kind, TaskEventKind::Message(_)))
            .map(|e| e.seq)
            .collect()
    }

    pub async fn admin(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        self.admin_as(&self.credentials.admin_token.clone(), method, path, body)
            .await
    }

    pub async fn admin_as(
        &self,
        bearer: &str,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        let mut request = self
            .http
            .request(method, format!("{}{path}", self.url))
            .bearer_auth(bearer)
            .header("X-Fundi-User-Token", &self.credentials.alice);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    pub async fn task_count(&self) -> usize {
        let query = ListQuery {
            limit: 1000,
            ..ListQuery::default()
        };
        self.store.list(&query).await.unwrap().total
    }
}
