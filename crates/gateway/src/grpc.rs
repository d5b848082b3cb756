//! The gRPC binding (A2A v1.0 §10): the `A2AService` of the specification's proto,
//! through tonic and the official `a2a-pb` types. Each call becomes the operation and
//! params the JSON-RPC binding would carry (`transcode`) and goes through the same
//! admission, decoding, runtime calls and encoding; only the framing differs: protobuf
//! messages, errors as `google.rpc.Status` (`error/grpc.rs`), server streams of
//! `StreamResponse`. Served on the HTTP port over HTTP/2 (h2c, or TLS at a proxy) at
//! the service's own paths, or on a port of its own (`gateway.grpc-bind`).

mod service;
mod transcode;

use a2a_pb::proto::a2a_service_server::A2aServiceServer;
use axum::Router;
use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::middleware::Next;
use axum::response::Response;
use tonic::server::NamedService;

use crate::config::GatewayConfig;
use crate::state::AppState;
use service::GrpcBinding;

/// The routes of the gRPC service, for the gateway's router.
pub(crate) fn routes(state: &AppState) -> Router<AppState> {
    let limit = state.config.max_body_bytes;
    let service = A2aServiceServer::new(GrpcBinding::new(state.clone()))
        .max_decoding_message_size(limit)
        .max_encoding_message_size(usize::MAX);
    let path = format!("/{}/{{*method}}", A2aServiceServer::<GrpcBinding>::NAME);
    Router::new()
        .route_service(&path, service)
        .layer(axum::middleware::from_fn(authority_as_host))
}

/// A gRPC call (`content-type: application/grpc...`) that no route took (another
/// service, or gRPC not served on this port) is answered in gRPC's own terms,
/// `UNIMPLEMENTED` naming why, rather than with the HTTP 404 of the other bindings,
/// which a gRPC client cannot read. Asked by the router's fallbacks only, so that no
/// other request pays for the check.
pub(crate) fn unserved(
    config: &GatewayConfig,
    headers: &HeaderMap,
    path: &str,
) -> Option<Response> {
    let is_grpc = headers
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/grpc"));
    if !is_grpc {
        return None;
    }
    let service = A2aServiceServer::<GrpcBinding>::NAME;
    let why = if !config.grpc {
        "gRPC is not served (gateway.grpc is false)".to_owned()
    } else if config.grpc_bind.is_some() {
        "gRPC is served on a port of its own (gateway.grpc-bind), not this one".to_owned()
    } else {
        format!("{path} is not a method of a service here; fundi serves {service}")
    };
    Some(tonic::Status::unimplemented(why).into_http::<axum::body::Body>())
}

/// HTTP/2 carries the host as the `:authority` of the target, not a `Host` header: the
/// gateway's host check reads it from there.
async fn authority_as_host(mut request: Request, next: Next) -> Response {
    if !request.headers().contains_key(header::HOST)
        && let Some(value) = request
            .uri()
            .authority()
            .and_then(|a| HeaderValue::from_str(a.as_str()).ok())
    {
        request.headers_mut().insert(header::HOST, value);
    }
    next.run(request).await
}
