//! Signing in to the web console through an OpenID Connect identity provider: a test
//! provider on 127.0.0.1:0 (discovery, authorization, token and key endpoints, an
//! Ed25519 key made for this run) that checks the PKCE verifier against the challenge;
//! a real gateway serving the console; a real HTTP client following the browser's redirects by hand.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::{Form, Query, State};
use axum::response::{IntoResponse, Redirect};
use axum::routing::{get, post};
use base64::Engine as _;
use fundi_console::Console as Pages;
use fundi_gateway::testing::SigningKey;
use fundi_gateway::{AppState, AuthConfig, Authenticator, GatewayConfig, app_with};
use fundi_ops::sessions::{MemorySessionStore, SessionStore};
use fundi_runtime::testing::scripted::Scripted;
use fundi_runtime::{Message, Part, Runtime, RuntimeHandle, SubmitRequest};
use serde_json::json;
use sha2::Digest;
use tokio_util::sync::CancellationToken;

const CLIENT_ID: &str = "fundi-console";
const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::URL_SAFE_NO_PAD;

/// What the provider was asked to remember between authorization and token.
struct Asked {
    nonce: String,
    challenge: String,
    redirect_uri: String,
}

/// The test identity provider.
struct Provider {
    issuer: String,
    key: SigningKey,
    codes: Mutex<HashMap<String, Asked>>,
    /// Token requests whose verifier matched their challenge.
    verified: AtomicUsize,
    /// Sign the ID token with a nonce that was not asked for.
    wrong_nonce: AtomicBool,
}

impl Provider {
    async fn start() -> Arc<Provider> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let issuer = format!("http://{}", listener.local_addr().unwrap());
        let provider = Arc::new(Provider {
            issuer,
            key: SigningKey::generate("console-1"),
            codes: Mutex::default(),
            verified: AtomicUsize::new(0),
            wrong_nonce: AtomicBool::new(false),
        });
        let router = Router::new()
            .route("/.well-known/openid-configuration", get(discovery))
            .route(
                "/jwks",
                get(|State(p): State<Arc<Provider>>| async move {
                    axum::Json(json!({"keys": [p.key.jwk]}))
                }),
            )
            .route("/authorize", get(authorize))
            .route("/token", post(token))
            .with_state(provider.clone());
        tokio::spawn(async move { axum::serve(listener, router).await });
        provider
    }
}

async fn discovery(State(p): State<Arc<Provider>>) -> impl IntoResponse {
    axum::Json(json!({
        "issuer": p.issuer,
        "authorization_endpoint": format!("{}/authorize", p.issuer),
        "token_endpoint": format!("{}/token", p.issuer),
        "jwks_uri": format!("{}/jwks", p.issuer),
        "response_types_supported": ["code"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["EdDSA"],
    }))
}

/// Carol is signed in already: the provider answers at once with a code.
async fn authorize(
    State(p): State<Arc<Provider>>,
    Query(query): Query<HashMap<String, String>>,
) -> impl IntoResponse {
    let get = |key: &str| query.get(key).cloned().unwrap_or_default();
    assert_eq!(get("response_type"), "code");
    assert_eq!(get("client_id"), CLIENT_ID);
    assert_eq!(get("code_challenge_method"), "S256", "PKCE with SHA-256");
    assert!(get("scope").split(' ').any(|s| s == "openid"), "{query:?}");
    let code = format!("code-{}", rand::random::<u64>());
    let asked = Asked {
        nonce: get("nonce"),
        challenge: get("code_challenge"),
        redirect_uri: get("redirect_uri"),
    };
    let back = format!("{}?code={code}&state={}", asked.redirect_uri, get("state"));
    p.codes.lock().unwrap().insert(code, asked);
    Redirect::to(&back)
}

async fn token(
    State(p): State<Arc<Provider>>,
    Form(form): Form<HashMap<String, String>>,
) -> axum::response::Response {
    let refuse = |why: &str| {
        (
            axum::http::StatusCode::BAD_REQUEST,
            axum::Json(json!({"error": "invalid_grant", "error_description": why})),
        )
            .into_response()
    };
    let Some(asked) = form
        .get("code")
        .and_then(|c| p.codes.lock().unwrap().remove(c))
    else {
        return refuse("unknown code");
    };
    let verifier = form.get("code_verifier").cloned().unwrap_or_default();
    if B64.encode(sha2::Sha256::digest(verifier.as_bytes())) != asked.challenge {
        return refuse("the PKCE verifier does not match the challenge");
    }
    if form.get("redirect_uri") != Some(&asked.redirect_uri) {
        return refuse("another redirect_uri");
    }
    p.verified.fetch_add(1, Ordering::SeqCst);
    let nonce = match p.wrong_nonce.load(Ordering::SeqCst) {
        true => "not-the-one-asked".to_owned(),
        false => asked.nonce,
    };
    let now = chrono::Utc::now().timestamp();
    let claims = json!({"iss": p.issuer, "sub": "carol", "aud": CLIENT_ID, "iat": now, "exp": now + 300,
                        "nonce": nonce, "scope": "fundi:approve"});
    let id_token = p.key.sign(&claims);
    axum::Json(json!({"access_token": "opaque", "token_type": "Bearer", "expires_in": 300, "id_token": id_token})).into_response()
}

struct Console {
    url: String,
    runtime: RuntimeHandle,
    shutdown: CancellationToken,
}

impl Drop for Console {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

async fn console(provider: &Provider) -> Console {
    console_sharing(provider, Arc::new(MemorySessionStore::new()), None).await
}

/// A console keeping its sessions (and sign-ins under way) in `sessions`, reached at
/// `public_url` (the nodes of a cluster share one) or else at its own address.
async fn console_sharing(
    provider: &Provider,
    sessions: Arc<dyn SessionStore>,
    public_url: Option<&str>,
) -> Console {
    let runtime = Runtime::builder()
        .skill(Scripted::new("steps", false))
        .start()
        .await
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let mut config = GatewayConfig::default();
    config.console_oidc = Some(fundi_gateway::ConsoleOidc {
        issuer: provider.issuer.clone(),
        client_id: CLIENT_ID.into(),
        ..Default::default()
    });
    let shutdown = CancellationToken::new();
    let auth = Authenticator::from_config(&AuthConfig::default()).unwrap();
    let public = public_url.map_or_else(|| url.clone(), str::to_owned);
    let state = AppState::new(runtime.clone(), config, auth, &public, shutdown.clone());
    let pages = Pages::new(state.clone()).with_sessions(sessions).router();
    tokio::spawn(fundi_gateway::serve(
        listener,
        app_with(state, pages),
        shutdown.clone(),
        fundi_gateway::Listening {
            header_read_timeout: Duration::from_secs(30),
            ..Default::default()
        },
    ));
    Console {
        url,
        runtime,
        shutdown,
    }
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .build()
        .unwrap()
}

fn location(response: &reqwest::Response) -> String {
    assert_eq!(response.status(), 303, "{response:?}");
    response.headers()["location"].to_str().unwrap().to_owned()
}

/// Follows the browser's way from the console to the provider and back: the callback
/// address and the provider's redirect to it.
async fn to_callback(console: &Console) -> String {
    let start = client()
        .get(format!("{}/console/sign-in/provider", console.url))
        .send()
        .await
        .unwrap();
    let at_provider = location(&start);
    let back = client().get(&at_provider).send().await.unwrap();
    assert!(back.status().is_redirection(), "{back:?}");
    back.headers()["location"].to_str().unwrap().to_owned()
}

#[tokio::test]
async fn a_person_signs_in_through_the_provider_with_pkce_and_sees_their_own_tasks() {
    let provider = Provider::start().await;
    let console = console(&provider).await;
    let mut carols = SubmitRequest::new(Message::user(vec![Part::text("carol's")]));
    carols.owner = Some("carol".into());
    let carols = console.runtime.submit(carols).await.unwrap().task.id;

    let refused = client()
        .get(format!("{}/console/tasks", console.url))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 401);
    assert!(
        refused
            .text()
            .await
            .unwrap()
            .contains("href=\"/console/sign-in/provider\"")
    );

    let callback = to_callback(&console).await;
    assert!(
        callback.starts_with(&format!("{}/console/sign-in/callback?code=", console.url)),
        "{callback}"
    );
    let signed_in = client().get(&callback).send().await.unwrap();
    assert_eq!(signed_in.status(), 200);
    assert_eq!(
        provider.verified.load(Ordering::SeqCst),
        1,
        "the provider checked the PKCE verifier"
    );
    let cookie = signed_in.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    let cookie = cookie.split(';').next().unwrap().to_owned();
    // The page goes on to the tasks itself (a strict cookie is not sent on a redirect
    // that began at the provider's site).
    assert!(
        signed_in
            .text()
            .await
            .unwrap()
            .contains("url=/console/tasks")
    );

    let tasks = client()
        .get(format!("{}/console/tasks", console.url))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(tasks.status(), 200);
    let tasks = tasks.text().await.unwrap();
    assert!(
        tasks.contains("Signed in as <strong>carol</strong>"),
        "{tasks}"
    );
    assert!(
        tasks.contains(carols.as_str()),
        "carol sees her task: {tasks}"
    );
    // The token's scope makes her an approver, not an operator.
    assert!(
        tasks.contains("/console/approvals") && !tasks.contains("/console/grants"),
        "{tasks}"
    );

    // The callback works once.
    let again = client().get(&callback).send().await.unwrap();
    assert_eq!(again.status(), 401);
}

#[tokio::test]
async fn a_callback_not_started_here_or_with_another_nonce_opens_no_session() {
    let provider = Provider::start().await;
    let console = console(&provider).await;

    let forged = client()
        .get(format!(
            "{}/console/sign-in/callback?code=code-1&state=made-up",
            console.url
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(forged.status(), 401);
    assert!(forged.headers().get("set-cookie").is_none());

    provider.wrong_nonce.store(true, Ordering::SeqCst);
    let callback = to_callback(&console).await;
    let refused = client().get(&callback).send().await.unwrap();
    assert_eq!(refused.status(), 502);
    assert!(refused.headers().get("set-cookie").is_none());
    let page = refused.text().await.unwrap();
    assert!(page.contains("ID token was refused"), "{page}");

    let declined = client()
        .get(format!(
            "{}/console/sign-in/callback?error=access_denied&error_description=no+thanks&state=x",
            console.url
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(declined.status(), 401);
    assert!(
        declined
            .text()
            .await
            .unwrap()
            .contains("access_denied: no thanks")
    );
}

#[tokio::test]
async fn a_sign_in_started_on_one_node_finishes_on_another_that_shares_the_sessions() {
    let provider = Provider::start().await;
    let shared: Arc<dyn SessionStore> = Arc::new(MemorySessionStore::new());
    let a = console_sharing(&provider, shared.clone(), None).await;
    let b = console_sharing(&provider, shared, Some(&a.url)).await;

    let callback = to_callback(&a).await.replace(&a.url, &b.url);
    let signed_in = client().get(&callback).send().await.unwrap();
    assert_eq!(signed_in.status(), 200, "the sign-in finishes on b");
    let cookie = signed_in.headers()["set-cookie"].to_str().unwrap();
    let cookie = cookie.split(';').next().unwrap().to_owned();
    let tasks = client()
        .get(format!("{}/console/tasks", a.url))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(tasks.status(), 200, "and the session is known to a");

    // A node with sessions of its own knows neither.
    let c = console_sharing(&provider, Arc::new(MemorySessionStore::new()), Some(&a.url)).await;
    let callback = to_callback(&a).await.replace(&a.url, &c.url);
    assert_eq!(client().get(&callback).send().await.unwrap().status(), 401);
}
