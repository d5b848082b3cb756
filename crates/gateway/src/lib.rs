//! fundi-gateway: the A2A HTTP gateway in front of a fundi runtime.
//!
//! - `GET /.well-known/agent-card.json`: the public agent card, one per protocol version
//!   (`A2A-Version`), and one both versions read when none is named.
//! - `POST /a2a` (and `POST /`): JSON-RPC 2.0, A2A v1.0 and v0.3 methods, the dialect
//!   chosen by the method name; streaming methods answer with SSE.
//! - The HTTP+JSON binding (v1.0): `POST /message:send`, `GET /tasks/{id}`, ... with or
//!   without a `/{tenant}` prefix (`gateway.rest`).
//!
//! - gRPC (`gateway.grpc`): the `lf.a2a.v1.A2AService` of the specification's proto,
//!   over HTTP/2 on the same port (or `gateway.grpc-bind`).
//!
//! - `/console`: the web console for people (`gateway.console`), from `fundi-console`,
//!   merged with [`app_with`].
//!
//! Handlers decode, call the [`fundi_runtime::TaskService`] (a `RuntimeHandle`, or a
//! fake in tests), and encode: the runtime does the work. Only this crate maps errors to wire codes ([`ApiError`]).

mod access;
mod admin;
mod admission;
mod auth;
mod body;
mod card;
mod clip;
mod config;
mod dialect;
mod encode;
mod error;
mod extended_card;
mod grpc;
mod guard;
mod http;
mod inbox;
mod jsonrpc;
mod mcp_gate;
mod mcp_sessions;
mod methods;
mod operator;
mod params;
mod peers;
mod push;
mod rate_limit;
mod reply;
mod rest;
mod setup;
mod state;
mod stream_slots;
mod streaming;
mod telemetry;
#[cfg(feature = "test-util")]
pub mod testing;
mod v03;

/// What front ends beside the A2A bindings (the web console, `fundi-console`) act
/// through: the same steps the admin routes take, each recorded in the audit log as
/// theirs are.
pub mod operations {
    pub use crate::access::desk::AccessDesk;
    pub use crate::access::desk::Approved;
    pub use crate::access::error::AccessError;
    pub use crate::access::steps::{Undecided as UndecidedAccess, approve_as, reject_as};
    pub use crate::admin::approvals::{Deciding, Undecided, decide_as};
    pub use crate::admin::audit::AuditTrail;
    pub use crate::admin::fixes;
    pub use crate::admin::grant_desk::{GrantDesk, Revoked};
    pub use crate::stream_slots::StreamSlot;
}

use std::io;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

pub use access::{FriendsConfig, IssuerConfig};
pub use admission::{admit, last_event_id};
pub use auth::{
    AuthConfig, AuthError, AuthMode, Authenticator, Caller, ConfiguredScopes, DEFAULT_USER_HEADER,
    JwtConfig, StaticClient, StaticTokens,
};
pub use config::{ConsoleOidc, GatewayConfig};
pub use dialect::{Dialect, Method};
pub use error::{ApiError, REFUSED};
pub use http::{app, app_with, grpc_app};
pub use jsonrpc::{EnvelopeError, Request, parse as parse_envelope};
pub use mcp_sessions::McpSessionLimits;
pub use push::{PushService, PushSettings};
pub use reply::{refusal, rest_failure};
pub use setup::SetupError;
pub use state::AppState;

/// How the accept loop treats connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Listening {
    /// A client that does not finish sending a request's headers within this long is
    /// disconnected (slowloris); idle keep-alive connections are closed after it too.
    pub header_read_timeout: Duration,
    /// Most connections open at once: past it, new ones wait in the listen backlog
    /// until one closes, so that the process never runs out of file descriptors.
    pub max_connections: usize,
    /// Also speak HTTP/2 without TLS (h2c, prior knowledge): what gRPC clients speak
    /// when gRPC is served on this port.
    pub http2: bool,
}

impl Listening {
    /// The gateway settings' values (`header-read-timeout-ms`, `max-connections`).
    pub fn from_config(config: &GatewayConfig) -> Listening {
        Listening {
            header_read_timeout: Duration::from_millis(config.header_read_timeout_ms),
            max_connections: config.max_connections,
            http2: config.grpc && config.grpc_bind.is_none(),
        }
    }
}

impl Default for Listening {
    fn default() -> Listening {
        Listening::from_config(&GatewayConfig::default())
    }
}

/// Serves `app` on `listener` until `shutdown` is cancelled, then lets in-flight requests
/// finish (open SSE streams end on the same token). At most `listening.max_connections`
/// are open at once. Accepted connections get TCP_NODELAY: without it, small SSE frames
/// wait for delayed ACKs (about 40 ms each).
pub async fn serve(
    listener: TcpListener,
    app: Router,
    shutdown: CancellationToken,
    listening: Listening,
) -> io::Result<()> {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(listening.header_read_timeout);
    // An HTTP/2 connection outlives its requests; pings close one whose client is gone.
    builder
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(Some(listening.header_read_timeout));
    let http = match listening.http2 {
        true => builder,
        false => builder.http1_only(),
    };
    let graceful = GracefulShutdown::new();
    let slots = Arc::new(Semaphore::new(listening.max_connections.max(1)));
    loop {
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => match slot {
                Ok(slot) => slot,
                Err(_) => break,
            },
            () = shutdown.cancelled() => break,
        };
        let (tcp, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of file descriptors and the like: back off instead of spinning.
                    tracing::warn!(%error, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = shutdown.cancelled() => break,
        };
        if let Err(error) = tcp.set_nodelay(true) {
            tracing::warn!(%error, "could not set TCP_NODELAY");
        }
        let service = TowerToHyperService::new(app.clone());
        let (http, watcher) = (http.clone(), graceful.watcher());
        let (http2, deadline) = (listening.http2, listening.header_read_timeout);
        tokio::spawn(async move {
            // Telling HTTP/1.1 from HTTP/2 waits for the client's first bytes, which
            // the header read timeout does not cover: a client that sends nothing (or
            // half the HTTP/2 preface) is cut off here instead of holding its slot.
            if http2
                && tokio::time::timeout(deadline, version_known(&tcp))
                    .await
                    .is_err()
            {
                drop(slot);
                return;
            }
            let connection = http.serve_connection(TokioIo::new(tcp), service);
            if let Err(error) = watcher.watch(connection.into_owned()).await {
                tracing::debug!(%error, "connection ended with an error");
            }
            drop(slot);
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}

/// The client's preface to HTTP/2 (RFC 9113 section 3.4).
const HTTP2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Returns once the first bytes the client sent tell HTTP/1.1 from HTTP/2 (or it closed
/// or failed): any byte that differs from the HTTP/2 preface, or the whole preface.
async fn version_known(tcp: &tokio::net::TcpStream) -> io::Result<()> {
    let mut seen = [0u8; HTTP2_PREFACE.len()];
    loop {
        tcp.readable().await?;
        let n = tcp.peek(&mut seen).await?;
        if n == 0 || n == seen.len() || seen[..n] != HTTP2_PREFACE[..n] {
            return Ok(());
        }
        // Part of the preface so far: peeking again returns the same bytes at once, so
        // wait a little for the rest.
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
