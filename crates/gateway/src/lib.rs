//! fundi-gateway: the A2A HTTP gateway in front of a fundi runtime.
//!
//! - `GET /.well-known/agent-card.json`: the public agent card (v1.0, with v0.3 fields).
//! - `POST /a2a` (and `POST /`): JSON-RPC 2.0, A2A v1.0 and v0.3 methods, the dialect
//!   chosen by the method name; streaming methods answer with SSE.
//!
//! Handlers decode, call the [`fundi_runtime::RuntimeHandle`], and encode: the runtime
//! does the work. Only this crate maps errors to wire codes ([`ApiError`]).

mod card;
mod config;
mod dialect;
mod encode;
mod error;
mod http;
mod jsonrpc;
mod methods;
mod params;
mod state;
mod streaming;
mod v03;

use std::io;

use axum::Router;
use axum::serve::ListenerExt;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

pub use config::GatewayConfig;
pub use dialect::{Dialect, Method};
pub use error::ApiError;
pub use http::app;
pub use jsonrpc::{EnvelopeError, Request, parse as parse_envelope};
pub use state::AppState;

/// Serves `app` on `listener` until `shutdown` is cancelled, then finishes in-flight
/// requests (open SSE streams end on the same token). Accepted connections get
/// TCP_NODELAY: without it, small SSE frames wait for delayed ACKs (about 40 ms each).
pub async fn serve(
    listener: TcpListener,
    app: Router,
    shutdown: CancellationToken,
) -> io::Result<()> {
    let listener = listener.tap_io(|tcp| {
        if let Err(error) = tcp.set_nodelay(true) {
            tracing::warn!(%error, "could not set TCP_NODELAY");
        }
    });
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown.cancelled_owned())
        .await
}
