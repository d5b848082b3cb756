//! A gateway in front of a real runtime (in-memory store) with a test skill, driven
//! through `tower::ServiceExt::oneshot`.
#![allow(dead_code, unreachable_pub)]

pub mod push;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use axum::Router;
use axum::body::Body;
use axum::http::{Request, Response};
use fundi_gateway::{
    AppState, AuthConfig, Authenticator, DEFAULT_USER_HEADER, GatewayConfig, StaticClient, app,
};
use fundi_runtime::{
    Artifact, MemoryStore, Part, Runtime, RuntimeConfig, RuntimeHandle, Skill, SkillCard,
    SkillContext, SkillError, SkillInput, SkillOutput, TaskStore,
};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

/// Longest a test waits for anything.
pub const DEADLINE: Duration = Duration::from_secs(20);

/// Echoes its text; data `{"steps": n}` posts n progress notes and streams the artifact
/// in two chunks; `{"hold": true}` waits until canceled; `{"ask": true}` asks for input.
pub struct Steps;

#[async_trait]
impl Skill for Steps {
    fn card(&self) -> SkillCard {
        SkillCard::new("steps", "test skill")
            .name("Steps")
            .tags(["test"])
            .examples(["hello"])
            .input_modes(["text/plain"])
            .output_modes(["text/plain"])
            .resumable()
    }

    async fn run(&self, input: SkillInput, ctx: SkillContext) -> Result<SkillOutput, SkillError> {
        let first = input
            .history
            .first()
            .cloned()
            .unwrap_or(input.message.clone());
        let data = first.data().cloned().unwrap_or(Value::Null);
        let mut text = first.text();
        if data["hold"] == json!(true) {
            ctx.cancelled().await;
            return Err(SkillError::Canceled);
        }
        if data["ask"] == json!(true) {
            text = ctx.request_input("what now?").await?.text();
        }
        for i in 0..data["steps"].as_u64().unwrap_or(0) {
            ctx.progress(0.5, format!("step {i}")).await?;
        }
        if data["steps"].is_u64() {
            ctx.artifact_chunk(
                Artifact::new("out", "out", vec![Part::text("a")]),
                false,
                false,
            )
            .await?;
            ctx.artifact_chunk(
                Artifact::new("out", "out", vec![Part::text("b")]),
                true,
                true,
            )
            .await?;
        }
        Ok(SkillOutput::text(format!("done: {text}")))
    }
}

/// Static credentials made for one gateway: a client with `fundi:admin`, a client with
/// `fundi:audit` only, and the users alice and bob. Random, so nothing secret is in the
/// repository.
#[derive(Clone)]
pub struct Credentials {
    pub admin_token: String,
    pub audit_token: String,
    pub alice: String,
    pub bob: String,
}

impl Credentials {
    pub fn generate() -> Credentials {
        let token = || format!("{:032x}", rand::random::<u128>());
        Credentials {
            admin_token: token(),
            audit_token: token(),
            alice: token(),
            bob: token(),
        }
    }

    pub fn auth_config(&self) -> AuthConfig {
        let mut auth = AuthConfig::default();
        let clients = &mut auth.static_tokens.clients;
        clients.insert(
            "admin".into(),
            StaticClient {
                token: self.admin_token.clone(),
                scopes: vec!["fundi:admin".into()],
            },
        );
        clients.insert(
            "auditor".into(),
            StaticClient {
                token: self.audit_token.clone(),
                scopes: vec!["fundi:audit".into()],
            },
        );
        auth.static_tokens
            .users
            .insert("alice".into(), self.alice.clone());
        auth.static_tokens
            .users
            .insert("bob".into(), self.bob.clone());
        auth
    }
}

/// A skill that needs a scope and answers at once (or asks for input first when the
/// text is "ask"); registered as `audit` (scope `fundi:audit`) and `chaos` (scope
/// `fundi:chaos`).
pub struct Scoped(pub &'static str, pub &'static str);

#[async_trait]
impl Skill for Scoped {
    fn card(&self) -> SkillCard {
        SkillCard::new(self.0, format!("test skill needing {}", self.1))
            .name(self.0)
            .tags(["test"])
            .input_modes(Vec::<String>::new())
            .output_modes(Vec::<String>::new())
            .scope(self.1)
    }

    async fn run(&self, input: SkillInput, ctx: SkillContext) -> Result<SkillOutput, SkillError> {
        let mut text = input.message.text();
        if text == "ask" {
            text = ctx.request_input("which target?").await?.text();
        }
        Ok(SkillOutput::text(format!("{}: {text}", self.0)))
    }
}

pub struct Gateway {
    pub router: Router,
    pub runtime: RuntimeHandle,
    pub shutdown: CancellationToken,
    pub credentials: Credentials,
    /// The (bearer, user) tokens this handle sends.
    pub identity: (String, String),
}

pub async fn gateway() -> Gateway {
    gateway_with(GatewayConfig::default()).await
}

pub async fn gateway_with(config: GatewayConfig) -> Gateway {
    gateway_on(Arc::new(MemoryStore::new()), config).await
}

/// A gateway whose runtime keeps its tasks in `store`.
pub async fn gateway_on(store: Arc<dyn TaskStore>, config: GatewayConfig) -> Gateway {
    let runtime = Runtime::builder()
        .shared_store(store)
        .skill(Steps)
        .skill(Scoped("audit", "fundi:audit"))
        .skill(Scoped("chaos", "fundi:chaos"))
        .config({
            let mut runtime_config = RuntimeConfig::default();
            runtime_config.default_skill = Some("steps".into());
            runtime_config.cancel_grace_ms = 200;
            runtime_config
        })
        .start()
        .await
        .unwrap();
    let shutdown = CancellationToken::new();
    let credentials = Credentials::generate();
    let auth = Authenticator::from_config(&credentials.auth_config()).unwrap();
    let state = AppState::new(
        runtime.clone(),
        config,
        auth,
        "http://agent.test:8080",
        shutdown.clone(),
    );
    Gateway {
        router: app(state),
        runtime,
        shutdown,
        identity: (credentials.admin_token.clone(), credentials.alice.clone()),
        credentials,
    }
}

impl Gateway {
    /// The same gateway, calling with other tokens.
    pub fn as_identity(&self, bearer: &str, user: &str) -> Gateway {
        Gateway {
            router: self.router.clone(),
            runtime: self.runtime.clone(),
            shutdown: self.shutdown.clone(),
            credentials: self.credentials.clone(),
            identity: (bearer.to_owned(), user.to_owned()),
        }
    }

    /// A POST to `uri` with this handle's Host and credentials.
    pub fn post(&self, uri: &str) -> axum::http::request::Builder {
        Request::post(uri)
            .header("host", "agent.test:8080")
            .header("authorization", format!("Bearer {}", self.identity.0))
            .header(DEFAULT_USER_HEADER, &self.identity.1)
    }

    /// Sends a raw request.
    pub async fn send(&self, request: Request<Body>) -> Response<Body> {
        self.router.clone().oneshot(request).await.unwrap()
    }

    /// POSTs a raw body to /a2a; returns the HTTP status and the JSON body.
    pub async fn post_raw(&self, body: impl Into<Body>) -> (u16, Value) {
        let request = self
            .post("/a2a")
            .header("content-type", "application/json")
            .body(body.into())
            .unwrap();
        let response = self.send(request).await;
        let status = response.status().as_u16();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        (
            status,
            serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        )
    }

    /// A JSON-RPC call; asserts HTTP 200 and returns the response object.
    pub async fn call(&self, method: &str, params: Value) -> Value {
        let (status, body) = self.post_raw(request(method, params).to_string()).await;
        assert_eq!(status, 200, "{body}");
        body
    }

    /// A call that must succeed: its result.
    pub async fn ok(&self, method: &str, params: Value) -> Value {
        let body = self.call(method, params).await;
        body.get("result")
            .cloned()
            .unwrap_or_else(|| panic!("{method} failed: {body}"))
    }

    /// A call that must fail: its error object.
    pub async fn err(&self, method: &str, params: Value) -> Value {
        let body = self.call(method, params).await;
        body.get("error")
            .cloned()
            .unwrap_or_else(|| panic!("{method} should have failed: {body}"))
    }

    /// A streaming call read to its end: the response headers' content type and the
    /// `(id, data)` of every event.
    pub async fn stream(
        &self,
        method: &str,
        params: Value,
        last_event_id: Option<u64>,
    ) -> (String, Vec<(Option<u64>, Value)>) {
        let mut request = self.post("/a2a").header("content-type", "application/json");
        if let Some(id) = last_event_id {
            request = request.header("last-event-id", id.to_string());
        }
        let response = self
            .send(
                request
                    .body(Body::from(self::request(method, params).to_string()))
                    .unwrap(),
            )
            .await;
        assert_eq!(response.status(), 200);
        let content_type = response.headers()["content-type"]
            .to_str()
            .unwrap()
            .to_owned();
        let bytes = tokio::time::timeout(DEADLINE, response.into_body().collect())
            .await
            .expect("the stream did not end")
            .unwrap()
            .to_bytes();
        (content_type, parse_sse(&String::from_utf8_lossy(&bytes)))
    }
}

pub fn request(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 42, "method": method, "params": params})
}

pub fn message(text: &str, data: Value) -> Value {
    let mut parts = vec![json!({"text": text})];
    if !data.is_null() {
        parts.push(json!({"data": data}));
    }
    // Each message its own id: one sent again is a retry, answered with its task.
    static SENT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = SENT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    json!({"messageId": format!("m-{text}-{n}"), "role": "ROLE_USER", "parts": parts})
}

/// SSE text to `(id, data)` pairs; every `data:` line must be one JSON document.
pub fn parse_sse(text: &str) -> Vec<(Option<u64>, Value)> {
    text.split("\n\n")
        .filter_map(|frame| {
            let mut id = None;
            let mut data = None;
            for line in frame.lines() {
                if let Some(v) = line.strip_prefix("id: ") {
                    id = Some(v.parse().expect("numeric id"));
                } else if let Some(v) = line.strip_prefix("data: ") {
                    assert!(data.is_none(), "one data line per event: {frame}");
                    data = Some(serde_json::from_str(v).expect("data is one JSON document"));
                }
            }
            data.map(|d| (id, d))
        })
        .collect()
}

/// The value with ids and times that differ between two runs of one scenario blanked;
/// an error message names its task, so the text from "task " on is left out.
pub fn comparable(value: &Value) -> Value {
    match value {
        Value::Object(object) => Value::Object(
            object
                .iter()
                .map(|(key, value)| {
                    let blank = matches!(
                        key.as_str(),
                        "id" | "taskId" | "contextId" | "messageId" | "timestamp"
                    );
                    let value = match blank {
                        true if value.is_string() => json!("_"),
                        _ => comparable(value),
                    };
                    (key.clone(), value)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(comparable).collect()),
        Value::String(text) => Value::String(text.split("task ").next().unwrap().to_owned()),
        other => other.clone(),
    }
}

/// A gateway's router served on `127.0.0.1:0` (HTTP/1.1 and HTTP/2 without TLS, as
/// `fundi serve` serves it with gRPC on): its address.
pub async fn serve_on_loopback(gw: &Gateway) -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(fundi_gateway::serve(
        listener,
        gw.router.clone(),
        gw.shutdown.clone(),
        fundi_gateway::Listening {
            http2: true,
            ..Default::default()
        },
    ));
    address
}

/// `message` as a gRPC call with `gw`'s two credentials in its metadata.
pub fn grpc_call<T>(gw: &Gateway, message: T) -> tonic::Request<T> {
    let mut call = tonic::Request::new(message);
    let metadata = call.metadata_mut();
    let bearer = format!("Bearer {}", gw.identity.0);
    metadata.insert("authorization", bearer.parse().unwrap());
    let user_header = DEFAULT_USER_HEADER.to_ascii_lowercase();
    metadata.insert(
        tonic::metadata::MetadataKey::from_bytes(user_header.as_bytes()).unwrap(),
        gw.identity.1.parse().unwrap(),
    );
    call
}
