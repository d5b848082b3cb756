//! The auth gate end to end: a real gateway on 127.0.0.1:0 in `jwt` mode, a JWKS served by
//! a test identity provider on 127.0.0.1:0 with Ed25519 keys generated here, and a real
//! HTTP client. Every refused request is checked to have changed nothing in the store.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::routing::get;
use base64::Engine as _;
use fundi_gateway::{AppState, AuthConfig, AuthMode, Authenticator, GatewayConfig, JwtConfig, app};
use fundi_ops::grants::MemoryGrantStore;
use fundi_runtime::store::ListQuery;
use fundi_runtime::{MemoryStore, Runtime, RuntimeConfig, RuntimeHandle, TaskStore};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

use common::{DEADLINE, Scoped, Steps, message, parse_sse, request};
use fundi_gateway::testing::SigningKey;

const ISSUER: &str = "https://idp.test/";
const MACHINE_AUDIENCE: &str = "fundi";
const USER_AUDIENCE: &str = "fundi-users";

fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

fn machine_claims(scope: &str) -> Value {
    json!({"iss": ISSUER, "aud": MACHINE_AUDIENCE, "sub": "client-app", "exp": now() + 300,
           "scope": scope})
}

fn user_claims(subject: &str) -> Value {
    json!({"iss": ISSUER, "aud": USER_AUDIENCE, "sub": subject, "exp": now() + 300})
}

/// The identity provider: serves a JWKS that tests may change, and counts fetches.
struct Idp {
    jwks_url: String,
    keys: Arc<Mutex<Vec<Value>>>,
    fetches: Arc<AtomicUsize>,
}

async fn idp(keys: Vec<Value>) -> Idp {
    let keys = Arc::new(Mutex::new(keys));
    let fetches = Arc::new(AtomicUsize::new(0));
    let router = Router::new().route(
        "/jwks.json",
        get({
            let (keys, fetches) = (keys.clone(), fetches.clone());
            move || {
                fetches.fetch_add(1, Ordering::SeqCst);
                let body = json!({"keys": keys.lock().unwrap().clone()});
                async move { axum::Json(body) }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await });
    Idp {
        jwks_url: format!("http://{addr}/jwks.json"),
        keys,
        fetches,
    }
}

/// A gateway in jwt mode in front of a runtime with an inspectable store.
struct Fixture {
    url: String,
    store: Arc<MemoryStore>,
    runtime: RuntimeHandle,
    idp: Idp,
    machine: SigningKey,
    user: SigningKey,
    http: reqwest::Client,
    shutdown: CancellationToken,
}

impl Drop for Fixture {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

async fn fixture(config: GatewayConfig, min_refresh_ms: u64) -> Fixture {
    let machine = SigningKey::generate("machine-1");
    let user = SigningKey::generate("user-1");
    let idp = idp(vec![machine.jwk.clone(), user.jwk.clone()]).await;
    let jwt = |audience: &str| {
        let mut jwt_config = JwtConfig::default();
        jwt_config.jwks_url = Some(idp.jwks_url.clone());
        jwt_config.issuer = Some(ISSUER.into());
        jwt_config.audience = Some(audience.into());
        jwt_config.jwks_min_refresh_ms = min_refresh_ms;
        jwt_config
    };
    let mut auth = AuthConfig::default();
    auth.mode = AuthMode::Jwt;
    auth.machine = jwt(MACHINE_AUDIENCE);
    auth.user = jwt(USER_AUDIENCE);
    let store = Arc::new(MemoryStore::new());
    let runtime = Runtime::builder()
        .shared_store(store.clone())
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
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let shutdown = CancellationToken::new();
    let header_timeout = Duration::from_millis(config.header_read_timeout_ms);
    let grants = Arc::new(MemoryGrantStore::new());
    let state = AppState::new(
        runtime.clone(),
        config,
        Authenticator::from_config(&auth)
            .unwrap()
            .with_grants(grants.clone()),
        &url,
        shutdown.clone(),
    )
    .with_grants(grants);
    tokio::spawn(fundi_gateway::serve(
        listener,
        app(state),
        shutdown.clone(),
        fundi_gateway::Listening {
            header_read_timeout: header_timeout,
            ..Default::default()
        },
    ));
    Fixture {
        url,
        store,
        runtime,
        idp,
        machine,
        user,
        http: reqwest::Client::builder().no_proxy().build().unwrap(),
        shutdown,
    }
}

/// What a request carries: the bearer token and the user token, each optional.
#[derive(Clone, Default)]
struct Creds {
    bearer: Option<String>,
    user: Option<String>,
}

impl Fixture {
    fn creds(&self, scope: &str, subject: &str) -> Creds {
        Creds {
            bearer: Some(self.machine.sign(&machine_claims(scope))),
            user: Some(self.user.sign(&user_claims(subject))),
        }
    }

    async fn post(&self, creds: &Creds, body: &Value) -> reqwest::Response {
        self.post_with(creds, body, &[]).await
    }

    async fn post_with(
        &self,
        creds: &Creds,
        body: &Value,
        headers: &[(&str, &str)],
    ) -> reqwest::Response {
        let mut request = self
            .http
            .post(format!("{}/a2a", self.url))
            .timeout(DEADLINE)
            .json(body);
        if let Some(bearer) = &creds.bearer {
            request = request.bearer_auth(bearer);
        }
        if let Some(user) = &creds.user {
            request = request.header("X-Fundi-User-Token", user);
        }
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request.send().await.unwrap()
    }

    /// A call that must be answered HTTP 200: the JSON-RPC response.
    async fn call(&self, creds: &Creds, method: &str, params: Value) -> Value {
        let response = self.post(creds, &request(method, params)).await;
        assert_eq!(response.status(), 200);
        response.json().await.unwrap()
    }

    /// Starts a task for `creds` that runs until canceled; returns its id.
    async fn hold(&self, creds: &Creds) -> String {
        let held = self
            .call(
                creds,
                "SendMessage",
                json!({"message": message("h", json!({"hold": true})),
                       "configuration": {"returnImmediately": true}}),
            )
            .await;
        held["result"]["task"]["id"].as_str().unwrap().to_owned()
    }

    /// Everything stored, in a form that changes whenever anything is written.
    async fn stored(&self) -> Vec<String> {
        let query = ListQuery {
            limit: 10_000,
            ..ListQuery::default()
        };
        let page = self.store.list(&query).await.unwrap();
        let mut all: Vec<String> = page
            .records
            .iter()
            .map(|r| serde_json::to_string(r).unwrap())
            .collect();
        all.sort();
        all
    }
}

/// A v1.0 and a v0.3 request of every method, with params that would do something.
fn every_method(task_id: &str) -> Vec<Value> {
    let send = json!({"message": message("hi", Value::Null)});
    let follow = json!({"message": {"messageId": "f1", "role": "ROLE_USER", "taskId": task_id,
                                    "parts": [{"text": "more"}]}});
    let push = json!({"taskId": task_id, "id": "cfg", "url": "https://hooks.example.com/x"});
    vec![
        request("SendMessage", send.clone()),
        request("SendMessage", follow),
        request("SendStreamingMessage", send),
        request("GetTask", json!({"id": task_id})),
        request("ListTasks", json!({})),
        request("CancelTask", json!({"id": task_id})),
        request("SubscribeToTask", json!({"id": task_id})),
        request("CreateTaskPushNotificationConfig", push),
        request(
            "GetTaskPushNotificationConfig",
            json!({"taskId": task_id, "id": "cfg"}),
        ),
        request(
            "ListTaskPushNotificationConfigs",
            json!({"taskId": task_id}),
        ),
        request(
            "DeleteTaskPushNotificationConfig",
            json!({"taskId": task_id, "id": "cfg"}),
        ),
        request("GetExtendedAgentCard", json!({})),
        request(
            "message/send",
            json!({"message": {"kind": "message", "messageId": "v03", "role": "user",
                               "parts": [{"kind": "text", "text": "hi"}]}}),
        ),
        request("tasks/get", json!({"id": task_id})),
        request("tasks/cancel", json!({"id": task_id})),
    ]
}

#[tokio::test]
async fn bad_credentials_get_401_on_every_method_and_change_nothing() {
    let fx = fixture(GatewayConfig::default(), 0).await;
    let good = fx.creds("fundi:admin", "alice");
    let task_id = fx.hold(&good).await;
    let before = fx.stored().await;

    let stranger = SigningKey::generate("machine-1");
    let user_token = good.user.clone();
    let bearer = good.bearer.clone();
    let mut expired = machine_claims("fundi:admin");
    expired["exp"] = json!(now() - 120);
    let mut expired_user = user_claims("alice");
    expired_user["exp"] = json!(now() - 120);
    let mut wrong_issuer = machine_claims("fundi:admin");
    wrong_issuer["iss"] = json!("https://evil.test/");
    let mut wrong_audience = machine_claims("fundi:admin");
    wrong_audience["aud"] = json!("someone-else");
    let mut no_subject = machine_claims("fundi:admin");
    no_subject.as_object_mut().unwrap().remove("sub");
    let cases: Vec<(&str, Creds)> = vec![
        ("no credentials", Creds::default()),
        (
            "bearer only",
            Creds {
                bearer: bearer.clone(),
                user: None,
            },
        ),
        (
            "user token only",
            Creds {
                bearer: None,
                user: user_token.clone(),
            },
        ),
        (
            "expired bearer",
            Creds {
                bearer: Some(fx.machine.sign(&expired)),
                user: user_token.clone(),
            },
        ),
        (
            "expired user token",
            Creds {
                bearer: bearer.clone(),
                user: Some(fx.user.sign(&expired_user)),
            },
        ),
        (
            "forged bearer",
            Creds {
                bearer: Some(stranger.sign(&machine_claims("fundi:admin"))),
                user: user_token.clone(),
            },
        ),
        (
            "forged user token",
            Creds {
                bearer: bearer.clone(),
                user: Some(stranger.sign_as("user-1", &user_claims("alice"))),
            },
        ),
        (
            "wrong issuer",
            Creds {
                bearer: Some(fx.machine.sign(&wrong_issuer)),
                user: user_token.clone(),
            },
        ),
        (
            "wrong audience",
            Creds {
                bearer: Some(fx.machine.sign(&wrong_audience)),
                user: user_token.clone(),
            },
        ),
        // A user token is not a machine token: its audience is the users'.
        (
            "user token as bearer",
            Creds {
                bearer: user_token.clone(),
                user: user_token.clone(),
            },
        ),
        (
            "no subject",
            Creds {
                bearer: Some(fx.machine.sign(&no_subject)),
                user: user_token.clone(),
            },
        ),
        (
            "not a JWT",
            Creds {
                bearer: Some("opaque-token".into()),
                user: user_token.clone(),
            },
        ),
    ];
    for (case, creds) in &cases {
        for body in every_method(&task_id) {
            let response = fx.post(creds, &body).await;
            let method = body["method"].as_str().unwrap();
            assert_eq!(response.status(), 401, "{case}: {method}");
            let challenge = response.headers()["www-authenticate"]
                .to_str()
                .unwrap()
                .to_owned();
            assert!(
                challenge.starts_with("Bearer realm=\"fundi\""),
                "{case}: {challenge}"
            );
            let body: Value = response.json().await.unwrap();
            assert_eq!(body["id"], json!(42), "{case}: {method}: {body}");
            assert_eq!(body["error"]["code"], json!(-32000), "{case}: {body}");
            let text = body["error"]["message"].as_str().unwrap();
            assert!(text.starts_with("Unauthenticated: "), "{case}: {text}");
        }
    }
    assert_eq!(
        fx.stored().await,
        before,
        "a refused request changed the store"
    );
}

#[tokio::test]
async fn refusals_say_which_credential_is_wrong_and_why() {
    let fx = fixture(GatewayConfig::default(), 0).await;
    let good = fx.creds("fundi:admin", "alice");
    let mut expired = user_claims("alice");
    expired["exp"] = json!(now() - 120);
    let cases = [
        (
            Creds {
                bearer: None,
                user: good.user.clone(),
            },
            "missing the bearer token",
        ),
        (
            Creds {
                bearer: good.bearer.clone(),
                user: None,
            },
            "missing the user token (X-Fundi-User-Token)",
        ),
        (
            Creds {
                bearer: good.bearer.clone(),
                user: Some(fx.user.sign(&expired)),
            },
            "the user token (X-Fundi-User-Token) is invalid: the token has expired",
        ),
    ];
    for (creds, expected) in cases {
        let response = fx.post(&creds, &request("ListTasks", json!({}))).await;
        assert_eq!(response.status(), 401);
        let challenge = response.headers()["www-authenticate"]
            .to_str()
            .unwrap()
            .to_owned();
        let body: Value = response.json().await.unwrap();
        let text = body["error"]["message"].as_str().unwrap();
        assert!(text.contains(expected), "{text}");
        assert_eq!(body["error"]["data"][0]["reason"], "UNAUTHENTICATED");
        if expected.contains("invalid") {
            assert!(challenge.contains("error=\"invalid_token\""), "{challenge}");
        }
    }
}

#[tokio::test]
async fn a_skill_needs_its_scope_before_any_task_is_created() {
    let fx = fixture(GatewayConfig::default(), 0).await;
    let auditor = fx.creds("fundi:audit", "alice");
    let before = fx.stored().await;
    for method in ["SendMessage", "SendStreamingMessage"] {
        let body = request(
            method,
            json!({"message": {"messageId": format!("c-{method}"), "role": "ROLE_USER",
                               "parts": [{"text": "go"}], "metadata": {"skill": "chaos"}}}),
        );
        let response = fx.post(&auditor, &body).await;
        assert_eq!(response.status(), 403, "{method}");
        let challenge = response.headers()["www-authenticate"]
            .to_str()
            .unwrap()
            .to_owned();
        assert!(
            challenge.contains("error=\"insufficient_scope\""),
            "{challenge}"
        );
        assert!(challenge.contains("scope=\"fundi:chaos\""), "{challenge}");
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["error"]["code"], json!(-32000), "{body}");
        assert_eq!(body["error"]["data"][0]["reason"], "PERMISSION_DENIED");
        assert_eq!(
            body["error"]["data"][0]["metadata"]["requiredScope"],
            "fundi:chaos"
        );
    }
    assert_eq!(
        fx.stored().await,
        before,
        "a refused request stored something"
    );

    // The audit scope runs the audit skill, and fundi:admin runs anything.
    let audit = json!({"message": {"messageId": "a1", "role": "ROLE_USER",
                                   "parts": [{"text": "page"}], "metadata": {"skill": "audit"}}});
    let done = fx.call(&auditor, "SendMessage", audit).await;
    assert_eq!(
        done["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{done}"
    );
    let admin = fx.creds("fundi:admin", "alice");
    let chaos = json!({"message": {"messageId": "c2", "role": "ROLE_USER",
                                   "parts": [{"text": "go"}], "metadata": {"skill": "chaos"}}});
    let done = fx.call(&admin, "SendMessage", chaos).await;
    assert_eq!(
        done["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{done}"
    );

    // Scopes on a user token narrow the client's: an admin client acting for a user
    // whose token holds only fundi:audit cannot start chaos.
    let mut narrowed = user_claims("alice");
    narrowed["scope"] = json!("fundi:audit");
    let narrowed = Creds {
        bearer: admin.bearer.clone(),
        user: Some(fx.user.sign(&narrowed)),
    };
    let before = fx.stored().await;
    let chaos = json!({"message": {"messageId": "c3", "role": "ROLE_USER",
                                   "parts": [{"text": "go"}], "metadata": {"skill": "chaos"}}});
    let response = fx.post(&narrowed, &request("SendMessage", chaos)).await;
    assert_eq!(response.status(), 403);
    assert_eq!(fx.stored().await, before);
}

#[tokio::test]
async fn a_grant_admits_its_client_beside_jwts_until_it_is_revoked() {
    let fx = fixture(GatewayConfig::default(), 0).await;
    let operator = fx.creds("fundi:admin", "ops");
    let admin = |method: reqwest::Method, path: &str| {
        fx.http
            .request(method, format!("{}/admin/grants{path}", fx.url))
            .bearer_auth(operator.bearer.as_deref().unwrap())
            .header("X-Fundi-User-Token", operator.user.as_deref().unwrap())
    };
    let vended = admin(reqwest::Method::POST, "")
        .json(&json!({"client": "ci-bot", "scopes": ["fundi:audit"], "expires": "1h"}))
        .send()
        .await
        .unwrap();
    assert_eq!(vended.status(), 201);
    let vended: Value = vended.json().await.unwrap();
    let token = vended["token"].as_str().unwrap().to_owned();
    let id = vended["grant"]["id"].as_str().unwrap().to_owned();
    assert!(token.starts_with("fundi_grant_"), "{vended}");

    // The grant token stands in for the machine JWT; the user still signs in with theirs.
    let granted = Creds {
        bearer: Some(token.clone()),
        user: fx.creds("", "alice").user,
    };
    let audit = json!({"message": {"messageId": "g1", "role": "ROLE_USER",
                                   "parts": [{"text": "page"}], "metadata": {"skill": "audit"}}});
    let done = fx.call(&granted, "SendMessage", audit).await;
    assert_eq!(
        done["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{done}"
    );
    let chaos = json!({"message": {"messageId": "g2", "role": "ROLE_USER",
                                   "parts": [{"text": "go"}], "metadata": {"skill": "chaos"}}});
    let response = fx.post(&granted, &request("SendMessage", chaos)).await;
    assert_eq!(response.status(), 403, "the grant holds fundi:audit only");
    let without_user = Creds {
        bearer: Some(token.clone()),
        user: None,
    };
    let response = fx
        .post(&without_user, &request("ListTasks", json!({})))
        .await;
    assert_eq!(
        response.status(),
        401,
        "a grant does not stand in for the user"
    );

    let revoked = admin(reqwest::Method::POST, &format!("/{id}/revoke"))
        .send()
        .await
        .unwrap();
    assert_eq!(revoked.status(), 200);
    let response = fx.post(&granted, &request("ListTasks", json!({}))).await;
    assert_eq!(response.status(), 401);
    let body: Value = response.json().await.unwrap();
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("revoked"), "{body}");
    let forged = Creds {
        bearer: Some(format!("{token}x")),
        user: granted.user.clone(),
    };
    let response = fx.post(&forged, &request("ListTasks", json!({}))).await;
    assert_eq!(response.status(), 401);
}

#[tokio::test]
async fn a_follow_up_needs_the_scope_of_the_tasks_skill() {
    let fx = fixture(GatewayConfig::default(), 0).await;
    let admin = fx.creds("fundi:admin", "alice");
    let ask = json!({"message": {"messageId": "q", "role": "ROLE_USER",
                                 "parts": [{"text": "ask"}], "metadata": {"skill": "chaos"}}});
    let asked = fx.call(&admin, "SendMessage", ask).await;
    assert_eq!(
        asked["result"]["task"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{asked}"
    );
    let id = asked["result"]["task"]["id"].as_str().unwrap().to_owned();
    let before = fx.stored().await;
    // The same user through a client holding only the audit scope.
    let auditor = fx.creds("fundi:audit", "alice");
    let follow = json!({"message": {"messageId": "f", "role": "ROLE_USER", "taskId": id,
                                    "parts": [{"text": "prod"}]}});
    let response = fx
        .post(&auditor, &request("SendMessage", follow.clone()))
        .await;
    assert_eq!(response.status(), 403);
    assert_eq!(
        fx.stored().await,
        before,
        "the refused follow-up reached the task"
    );
    let answered = fx.call(&admin, "SendMessage", follow).await;
    assert_eq!(
        answered["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{answered}"
    );
}

#[tokio::test]
async fn users_see_only_their_own_tasks() {
    let fx = fixture(GatewayConfig::default(), 0).await;
    let alice = fx.creds("fundi:admin", "alice");
    let bob = fx.creds("fundi:admin", "bob");
    let id = fx.hold(&alice).await;
    let before = fx.stored().await;

    // Bob gets exactly what he would get for a task that does not exist.
    let missing = "0193c0de-0000-7000-8000-000000000000";
    for (method, params) in [
        ("GetTask", json!({"id": id})),
        ("CancelTask", json!({"id": id})),
        ("tasks/get", json!({"id": id})),
        (
            "SendMessage",
            json!({"message": {"messageId": "b", "role": "ROLE_USER",
                                           "taskId": id, "parts": [{"text": "x"}]}}),
        ),
    ] {
        let theirs = fx.call(&bob, method, params.clone()).await;
        let text = params.to_string().replace(&id, missing);
        let nowhere = fx
            .call(&bob, method, serde_json::from_str(&text).unwrap())
            .await;
        assert_eq!(theirs["error"]["code"], json!(-32001), "{method}: {theirs}");
        let theirs = theirs.to_string().replace(&id, missing);
        assert_eq!(theirs, nowhere.to_string(), "{method} leaks existence");
    }
    let response = fx
        .post(&bob, &request("SubscribeToTask", json!({"id": id})))
        .await;
    assert_eq!(response.status(), 200);
    let events = parse_sse(&response.text().await.unwrap());
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].1["error"]["code"], json!(-32001), "{:?}", events);
    assert_eq!(fx.stored().await, before, "bob changed alice's task");

    let listed = fx.call(&bob, "ListTasks", json!({})).await;
    assert_eq!(listed["result"]["totalSize"], json!(0), "{listed}");
    let listed = fx.call(&alice, "ListTasks", json!({})).await;
    assert_eq!(listed["result"]["totalSize"], json!(1), "{listed}");
    assert_eq!(listed["result"]["tasks"][0]["id"], json!(id));
    // Alice still reaches and cancels it.
    let canceled = fx.call(&alice, "CancelTask", json!({"id": id})).await;
    assert!(canceled.get("result").is_some(), "{canceled}");
    fx.runtime.shutdown(Duration::from_secs(1)).await;
}

#[tokio::test]
async fn a_new_key_id_refreshes_the_jwks() {
    let fx = fixture(GatewayConfig::default(), 0).await;
    let alice = fx.creds("fundi:admin", "alice");
    assert!(
        fx.call(&alice, "ListTasks", json!({}))
            .await
            .get("result")
            .is_some()
    );
    let rotated = SigningKey::generate("machine-2");
    let creds = Creds {
        bearer: Some(rotated.sign(&machine_claims("fundi:admin"))),
        user: alice.user.clone(),
    };
    let response = fx.post(&creds, &request("ListTasks", json!({}))).await;
    assert_eq!(response.status(), 401, "a key the JWKS does not publish");
    fx.idp.keys.lock().unwrap().push(rotated.jwk.clone());
    let fetched = fx.idp.fetches.load(Ordering::SeqCst);
    let listed = fx.call(&creds, "ListTasks", json!({})).await;
    assert!(listed.get("result").is_some(), "{listed}");
    assert_eq!(fx.idp.fetches.load(Ordering::SeqCst), fetched + 1);
}

#[tokio::test]
async fn unknown_key_ids_cannot_hammer_the_key_server() {
    let fx = fixture(GatewayConfig::default(), 3_600_000).await;
    let alice = fx.creds("fundi:admin", "alice");
    assert!(
        fx.call(&alice, "ListTasks", json!({}))
            .await
            .get("result")
            .is_some()
    );
    let fetched = fx.idp.fetches.load(Ordering::SeqCst);
    assert_eq!(fetched, 1);
    let stranger = SigningKey::generate("x");
    for i in 0..20 {
        let creds = Creds {
            bearer: Some(stranger.sign_as(&format!("kid-{i}"), &machine_claims("fundi:admin"))),
            user: alice.user.clone(),
        };
        let response = fx.post(&creds, &request("ListTasks", json!({}))).await;
        assert_eq!(response.status(), 401);
    }
    assert_eq!(fx.idp.fetches.load(Ordering::SeqCst), fetched);
}

#[tokio::test]
async fn foreign_hosts_and_origins_are_refused_before_authentication() {
    let fx = fixture(
        {
            let mut gateway_config = GatewayConfig::default();
            gateway_config.allowed_origins = vec!["https://app.example.com".into()];
            gateway_config
        },
        0,
    )
    .await;
    let alice = fx.creds("fundi:admin", "alice");
    let before = fx.stored().await;
    let send = request("SendMessage", json!({"message": message("x", Value::Null)}));
    for headers in [
        vec![("host", "evil.example")],
        vec![("host", "evil.example:8080")],
        vec![("origin", "https://evil.example")],
        vec![("origin", "null")],
    ] {
        let response = fx.post_with(&alice, &send, &headers).await;
        assert_eq!(response.status(), 403, "{headers:?}");
        let body: Value = response.json().await.unwrap();
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .starts_with("Forbidden: "),
            "{body}"
        );
    }
    assert_eq!(fx.stored().await, before);
    let response = fx
        .post_with(&alice, &send, &[("origin", "https://app.example.com")])
        .await;
    assert_eq!(response.status(), 200);
    assert_eq!(fx.stored().await.len(), 1);
}

#[tokio::test]
async fn oversize_bodies_and_messages_are_refused_and_create_nothing() {
    let fx = fixture(
        {
            let mut gateway_config = GatewayConfig::default();
            gateway_config.max_body_bytes = 64 * 1024;
            gateway_config.max_parts_per_message = 3;
            gateway_config.max_text_bytes = 1000;
            gateway_config
        },
        0,
    )
    .await;
    let alice = fx.creds("fundi:admin", "alice");
    let big = "x".repeat(70 * 1024);
    let response = fx
        .post(
            &alice,
            &request(
                "SendMessage",
                json!({"message": message(&big, Value::Null)}),
            ),
        )
        .await;
    assert_eq!(response.status(), 413);

    let long = "y".repeat(1001);
    let body = fx
        .call(
            &alice,
            "SendMessage",
            json!({"message": message(&long, Value::Null)}),
        )
        .await;
    assert_eq!(body["error"]["code"], json!(-32602), "{body}");
    let text = body["error"]["message"].as_str().unwrap();
    assert!(
        text.contains("message.parts[0].text") && text.contains("1001 bytes"),
        "{text}"
    );

    let parts: Vec<Value> = (0..4).map(|i| json!({"text": format!("p{i}")})).collect();
    let many = json!({"messageId": "many", "role": "ROLE_USER", "parts": parts});
    let body = fx
        .call(&alice, "SendMessage", json!({"message": many}))
        .await;
    assert_eq!(body["error"]["code"], json!(-32602), "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("message.parts"),
        "{body}"
    );
    assert!(fx.stored().await.is_empty());
}

#[tokio::test]
async fn each_user_is_rate_limited_on_their_own() {
    let fx = fixture(
        {
            let mut gateway_config = GatewayConfig::default();
            gateway_config.rate_limit_per_minute = 1;
            gateway_config.rate_limit_burst = 2;
            gateway_config
        },
        0,
    )
    .await;
    let alice = fx.creds("fundi:admin", "alice");
    let list = request("ListTasks", json!({}));
    for _ in 0..2 {
        assert_eq!(fx.post(&alice, &list).await.status(), 200);
    }
    let limited = fx.post(&alice, &list).await;
    assert_eq!(limited.status(), 429);
    let retry: u64 = limited.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=60).contains(&retry), "Retry-After {retry}");
    let body: Value = limited.json().await.unwrap();
    assert_eq!(body["error"]["data"][0]["reason"], "RATE_LIMITED", "{body}");
    let bob = fx.creds("fundi:admin", "bob");
    assert_eq!(fx.post(&bob, &list).await.status(), 200);
}

#[tokio::test]
async fn a_client_that_never_finishes_its_headers_is_disconnected() {
    let fx = fixture(
        {
            let mut gateway_config = GatewayConfig::default();
            gateway_config.header_read_timeout_ms = 200;
            gateway_config
        },
        0,
    )
    .await;
    let addr = fx.url.trim_start_matches("http://");
    // Half a request head; nothing; half the HTTP/2 preface (serving gRPC, the server
    // tells HTTP/1.1 from HTTP/2 by the first bytes, and waits for them as long only).
    let sent: [&[u8]; 3] = [
        b"POST /a2a HTTP/1.1\r\nHost: localhost\r\n",
        b"",
        b"PRI * HTTP/2.0\r\n",
    ];
    for sent in sent {
        let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        tcp.write_all(sent).await.unwrap();
        // The server must close the connection (answering 408 at most) on its own.
        let mut buffer = Vec::new();
        let read = tokio::time::timeout(DEADLINE, tcp.read_to_end(&mut buffer)).await;
        let sent = String::from_utf8_lossy(sent);
        assert!(
            read.is_ok(),
            "after {sent:?} the connection was still open {DEADLINE:?} later"
        );
        let text = String::from_utf8_lossy(&buffer);
        assert!(
            text.is_empty() || text.starts_with("HTTP/1.1 408"),
            "{text}"
        );
    }
}

/// A PEM SubjectPublicKeyInfo for an Ed25519 public key (RFC 8410): a fixed prefix,
/// then the key.
fn ed25519_public_pem(jwk: &Value) -> String {
    let x = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(jwk["x"].as_str().unwrap())
        .unwrap();
    let mut der = vec![
        0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00,
    ];
    der.extend_from_slice(&x);
    let body = base64::engine::general_purpose::STANDARD.encode(der);
    format!("-----BEGIN PUBLIC KEY-----\n{body}\n-----END PUBLIC KEY-----\n")
}

#[tokio::test]
async fn a_configured_public_key_verifies_tokens_without_a_jwks() {
    let machine = SigningKey::generate("m");
    let user = SigningKey::generate("u");
    let dir = tempfile::tempdir().unwrap();
    let machine_pem = dir.path().join("machine.pem");
    let user_pem = dir.path().join("user.pem");
    std::fs::write(&machine_pem, ed25519_public_pem(&machine.jwk)).unwrap();
    std::fs::write(&user_pem, ed25519_public_pem(&user.jwk)).unwrap();
    let jwt = |file: &std::path::Path, audience: &str| {
        let mut jwt_config = JwtConfig::default();
        jwt_config.public_key_file = Some(file.to_path_buf());
        jwt_config.issuer = Some(ISSUER.into());
        jwt_config.audience = Some(audience.into());
        jwt_config
    };
    let auth = Authenticator::from_config(&{
        let mut auth_config = AuthConfig::default();
        auth_config.mode = AuthMode::Jwt;
        auth_config.machine = jwt(&machine_pem, MACHINE_AUDIENCE);
        auth_config.user = jwt(&user_pem, USER_AUDIENCE);
        auth_config
    })
    .unwrap();
    let headers = |bearer: &str, user_token: &str| {
        let mut headers = axum::http::HeaderMap::new();
        headers.insert("authorization", format!("Bearer {bearer}").parse().unwrap());
        headers.insert("x-fundi-user-token", user_token.parse().unwrap());
        headers
    };
    let caller = auth
        .authenticate(&headers(
            &machine.sign(&machine_claims("fundi:audit")),
            &user.sign(&user_claims("carol")),
        ))
        .await
        .unwrap();
    assert_eq!(caller.user, "carol");
    assert_eq!(caller.client, "client-app");
    // A token signed by the user's key is not a machine token.
    let swapped = auth
        .authenticate(&headers(
            &user.sign(&machine_claims("fundi:audit")),
            &user.sign(&user_claims("carol")),
        ))
        .await;
    assert!(swapped.is_err());
    // A missing key file is refused at start, naming the setting.
    let err = Authenticator::from_config(&{
        let mut auth_config = AuthConfig::default();
        auth_config.mode = AuthMode::Jwt;
        auth_config.machine = jwt(&dir.path().join("nope.pem"), MACHINE_AUDIENCE);
        auth_config.user = jwt(&user_pem, USER_AUDIENCE);
        auth_config
    })
    .unwrap_err()
    .to_string();
    assert!(err.contains("auth.machine.public-key-file"), "{err}");
}
