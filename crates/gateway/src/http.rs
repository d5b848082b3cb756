//! Routes and the HTTP side of the handlers.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use tracing::Instrument;

use crate::admission::{admit, last_event_id, read_body, requested_version};
use crate::card::Cards;
use crate::config::GatewayConfig;
use crate::dialect::{Dialect, is_supported_version};
use crate::error::ApiError;
use crate::guard::check_single_host;
use crate::jsonrpc::{self, failure, success};
use crate::reply::{self, refusal};
use crate::state::{AppState, Jwks};
use crate::{
    access, admin, body, grpc, inbox, mcp_gate, methods, peers, rest, streaming, telemetry,
};

/// The gateway's router: the agent cards (public), health, the JSON-RPC endpoint at
/// `/a2a` and `/` (the official SDKs' default path), the operators' admin routes, and
/// (`gateway.rest`) the HTTP+JSON binding's routes on whatever path is left.
pub fn app(state: AppState) -> Router {
    app_with(state, Router::new())
}

/// The gateway's router with `pages` beside its routes (the web console's), behind the
/// same guards: a request with two `Host` headers is refused, and request bodies share
/// the same budget and read deadline.
pub fn app_with(state: AppState, pages: Router) -> Router {
    telemetry::metrics().announce();
    let router = Router::new()
        .route("/.well-known/agent-card.json", get(agent_card))
        .route("/.well-known/agent.json", get(agent_card))
        .route(crate::card::JWKS_PATH, get(jwks))
        .route("/health", get(health))
        .route("/a2a", post(rpc))
        .route("/", post(rpc))
        .merge(admin::routes())
        .merge(access::routes())
        .merge(inbox::routes())
        .merge(peers::routes());
    // gRPC on this port, unless it has one of its own: its paths are the service's
    // (`/lf.a2a.v1.A2AService/...`), which no other route has.
    let router = match state.config.grpc && state.config.grpc_bind.is_none() {
        true => router.merge(grpc::routes(&state)),
        false => router,
    };
    let router = match state.operators.mcp.clone() {
        Some(mcp) => {
            let gate = axum::middleware::from_fn_with_state(state.clone(), mcp_gate::mcp_gate);
            router.nest_service("/mcp", mcp.service.layer(gate))
        }
        None => router,
    };
    // The HTTP+JSON binding's paths (`/message:send`, `/{tenant}/tasks/{id}:cancel`)
    // are split by hand (`rest::route`): axum matches no `{id}:verb` segment.
    let router = match state.config.rest {
        true => router.fallback(rest::handle),
        false => router.fallback(no_route),
    };
    let bodies = state.bodies.clone();
    router
        .with_state(state)
        .merge(pages)
        .layer(body::GuardBodiesLayer(bodies))
        .layer(axum::middleware::from_fn(single_host))
}

/// The router of `gateway.grpc-bind`: the gRPC service alone, behind the same guards.
pub fn grpc_app(state: AppState) -> Router {
    telemetry::metrics().announce();
    grpc::routes(&state)
        .layer(body::GuardBodiesLayer(state.bodies.clone()))
        .layer(axum::middleware::from_fn(single_host))
        .with_state(state)
}

/// Every route refuses a request with two `Host` headers (RFC 9112: 400), which
/// different readers could take for different hosts.
async fn single_host(request: axum::extract::Request, next: axum::middleware::Next) -> Response {
    match check_single_host(request.headers()) {
        Ok(()) => next.run(request).await,
        Err(error) => refusal(&Value::Null, &error, Dialect::V1),
    }
}

/// The public keys that sign the agent card (404 while the card is not signed).
async fn jwks(
    State(Jwks(jwks)): State<Jwks>,
    State(config): State<Arc<GatewayConfig>>,
) -> Response {
    let Some(jwks) = jwks else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let cache = format!("public, max-age={}", config.card_max_age_secs);
    (
        [
            (header::CONTENT_TYPE, "application/jwk-set+json".to_owned()),
            (header::CACHE_CONTROL, cache),
            (header::ACCESS_CONTROL_ALLOW_ORIGIN, "*".to_owned()),
        ],
        jwks.as_str().to_owned(),
    )
        .into_response()
}

/// Any path that is no route, when the HTTP+JSON binding is off: a 404 that names the
/// A2A endpoints there are.
async fn no_route(
    State(config): State<Arc<GatewayConfig>>,
    method: axum::http::Method,
    headers: HeaderMap,
    uri: Uri,
) -> Response {
    if let Some(unserved) = grpc::unserved(&config, &headers, uri.path()) {
        return unserved;
    }
    reply::rest_failure(&ApiError::no_route(
        &format!("{method} {}", uri.path()),
        false,
    ))
}

/// `ok`, or 503 while this node is cut off from the database (a load balancer stops
/// sending to it).
async fn health(State(runtime): State<Arc<dyn fundi_runtime::TaskService>>) -> Response {
    match runtime.is_cut_off() {
        false => axum::Json(json!({"status": "ok"})).into_response(),
        true => reply::rest_failure(&ApiError::CutOff),
    }
}

/// The agent card of the version the client names (`A2A-Version`, header or query):
/// `1.0` or `0.3`; none named gets the card both versions read (`card.rs`), except on
/// the older path, whose readers predate v1.0.
async fn agent_card(
    State(cards): State<Arc<Cards>>,
    State(config): State<Arc<GatewayConfig>>,
    headers: HeaderMap,
    uri: Uri,
) -> Response {
    let older_path = uri.path() == "/.well-known/agent.json";
    let card = match requested_version(&headers, &uri).as_deref() {
        None | Some("") if older_path => &cards.v03,
        None | Some("") => &cards.unversioned,
        Some("1.0") => &cards.v1,
        Some("0.3") => &cards.v03,
        Some(other) => return reply::rest_failure(&ApiError::version_not_supported(other)),
    };
    let max_age = format!("public, max-age={}", config.card_max_age_secs);
    let cache = [
        (header::CACHE_CONTROL, max_age),
        (header::ETAG, card.etag.clone()),
        // Caches keep one card per version asked for.
        (header::VARY, "A2A-Version".to_owned()),
    ];
    let fresh = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|tags| {
            tags.split(',')
                .any(|t| t.trim() == card.etag || t.trim() == "*")
        });
    if fresh {
        return (StatusCode::NOT_MODIFIED, cache).into_response();
    }
    let mut response = (cache, card.json.clone()).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    response
}

async fn rpc(State(state): State<AppState>, headers: HeaderMap, uri: Uri, body: Body) -> Response {
    let span = telemetry::request_span(&headers, "jsonrpc");
    handle_rpc(state, headers, uri, body).instrument(span).await
}

async fn handle_rpc(state: AppState, headers: HeaderMap, uri: Uri, body: Body) -> Response {
    let limit = state.config.max_body_bytes;
    let metrics = telemetry::metrics();
    // Refusals come before the body is looked at (beyond echoing its id).
    let caller = match admit(&state, &headers, &uri).await {
        Ok(caller) => caller,
        Err(error) => {
            metrics.request("unknown", "refused");
            return refuse(&error, &headers, body).await;
        }
    };
    tracing::Span::current().record("user", crate::clip::clip(&caller.user).as_str());
    let bytes: Bytes = match read_body(body, limit).await {
        Ok(bytes) => bytes,
        Err(error) => {
            metrics.request("unknown", "refused");
            return refusal(&Value::Null, &error, Dialect::V1);
        }
    };
    let request = match jsonrpc::parse(&bytes) {
        Ok(request) => request,
        Err(e) => {
            metrics.request("unknown", "error");
            return json(failure(&e.id, &e.error, Dialect::V1));
        }
    };
    let method = request.method.name();
    tracing::Span::current().record("rpc.method", method);
    let refused = requested_version(&headers, &uri)
        .filter(|v| !v.is_empty() && !is_supported_version(v))
        .map(|v| ApiError::version_not_supported(&v));
    if request.method.is_streaming() {
        return streaming::respond(
            state,
            caller,
            request,
            last_event_id(&headers),
            refused,
            streaming::Framing::JsonRpc,
        )
        .await;
    }
    let (id, dialect) = (request.id.clone(), request.dialect);
    let outcome = match refused {
        Some(error) => Err(error),
        None => methods::call(&state, &caller, request).await,
    };
    match outcome {
        Ok(result) => {
            metrics.request(method, "ok");
            let body = success(&id, &result);
            ([(header::CONTENT_TYPE, "application/json")], body).into_response()
        }
        Err(error) if error.http_refusal().is_some() => {
            metrics.request(method, "refused");
            refusal(&id, &error, dialect)
        }
        Err(error) => {
            metrics.request(method, "error");
            json(failure(&id, &error, dialect))
        }
    }
}

/// The most of a refused request's body read to echo its id: a refusal costs a caller
/// without credentials no more memory than this.
const REFUSED_BODY_READ: usize = 16 * 1024;

/// How long a refused request's small body may take to arrive.
const REFUSED_BODY_WAIT: Duration = Duration::from_secs(1);

/// A refusal made before the request was decoded. A small body (at most
/// [`REFUSED_BODY_READ`] bytes, arriving within [`REFUSED_BODY_WAIT`]) is read to echo
/// the request's id; a larger or slower one is not read at all, and the id is `null`.
async fn refuse(error: &ApiError, headers: &HeaderMap, body: Body) -> Response {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    let small = declared.is_none_or(|n| n <= REFUSED_BODY_READ);
    let read = async {
        match small {
            true => axum::body::to_bytes(body, REFUSED_BODY_READ).await.ok(),
            false => None,
        }
    };
    let (id, dialect) = match tokio::time::timeout(REFUSED_BODY_WAIT, read).await {
        Ok(Some(bytes)) => match jsonrpc::parse(&bytes) {
            Ok(request) => (request.id, request.dialect),
            Err(e) => (e.id, Dialect::V1),
        },
        _ => (Value::Null, Dialect::V1),
    };
    refusal(&id, error, dialect)
}

/// JSON-RPC answers are HTTP 200 whatever they say (A2A-DIGEST §6.1).
fn json(body: Value) -> Response {
    axum::Json(body).into_response()
}
