//! The proxy's HTTP side, for an http(s):// target: each request that comes through a
//! connection's pumps is forwarded to the target, unless an HTTP fault of the phase
//! (drawn per request, by its toxicity) answers it with an error, or delays the
//! response's head or body. A target that does not answer gets a 502, a genuine error.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::header::{HeaderMap, HeaderName};
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::json;
use tokio::io::DuplexStream;

use super::fault::FaultKind;
use super::link::Link;
use super::target::Target;

type Body = UnsyncBoxBody<Bytes, std::io::Error>;

/// Headers of one hop, never forwarded (RFC 9110, 7.6.1).
const HOP_BY_HOP: [&str; 8] = [
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

/// Serves HTTP/1.1 on `io` (the connection's far end of its pumps) until it closes.
pub(crate) async fn serve(io: DuplexStream, link: Arc<Link>) {
    let service = service_fn(move |request| {
        let link = link.clone();
        async move { Ok::<_, Infallible>(answer(request, &link).await) }
    });
    let connection =
        hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(io), service);
    // Ends when the client or the pumps close; its errors are the client's.
    let _ = connection.await;
}

async fn answer(request: Request<Incoming>, link: &Link) -> Response<Body> {
    let stage = link.stage();
    let faults = &link.shared.phases[stage.index].faults;
    let path = request
        .uri()
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_owned();
    let (mut head_delay, mut body_delay) = (0, 0);
    for fault in faults.iter().filter(|f| f.kind.is_http()) {
        if link.draw() >= fault.toxicity {
            continue;
        }
        let detail = match fault.kind {
            FaultKind::HttpError { status } => json!({"status": status, "path": path}),
            FaultKind::HeaderDelay { delay } | FaultKind::BodyDelay { delay } => {
                json!({"delayMs": delay, "path": path})
            }
            _ => continue,
        };
        link.chaos(stage.index, fault, None, detail);
        match fault.kind {
            FaultKind::HttpError { status } => return injected(status),
            FaultKind::HeaderDelay { delay } => head_delay += delay,
            FaultKind::BodyDelay { delay } => body_delay += delay,
            _ => {}
        }
    }
    let response = match forward(request, link, &path).await {
        Ok(response) => response,
        Err(error) => {
            link.shared
                .ledger
                .genuine("target", Some(link.id), error.clone());
            return plain(
                StatusCode::BAD_GATEWAY,
                format!("fundi chaos-run: {error}\n"),
            );
        }
    };
    if head_delay > 0 {
        tokio::time::sleep(Duration::from_millis(head_delay)).await;
    }
    let mut builder = Response::builder().status(response.status().as_u16());
    if let Some(headers) = builder.headers_mut() {
        copy_headers(response.headers(), headers);
    }
    let delay = Duration::from_millis(body_delay);
    let body = futures::stream::once(async move {
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        Ok::<_, std::io::Error>(Bytes::new())
    })
    .chain(response.bytes_stream().map_err(std::io::Error::other))
    .filter(|chunk| std::future::ready(!matches!(chunk, Ok(b) if b.is_empty())))
    .map_ok(Frame::data);
    builder
        .body(BodyExt::boxed_unsync(StreamBody::new(body)))
        .unwrap_or_else(|_| {
            plain(
                StatusCode::BAD_GATEWAY,
                "fundi chaos-run: bad response\n".into(),
            )
        })
}

async fn forward(
    request: Request<Incoming>,
    link: &Link,
    path: &str,
) -> Result<reqwest::Response, String> {
    let Target::Http(origin) = &link.shared.target else {
        return Err("not an HTTP target".into());
    };
    let Some(client) = &link.shared.http else {
        return Err("no HTTP client".into());
    };
    let url = origin
        .join(path)
        .map_err(|e| format!("{path:?} is not a path: {e}"))?;
    let (parts, body) = request.into_parts();
    let method = reqwest::Method::from_bytes(parts.method.as_str().as_bytes())
        .map_err(|e| format!("method {}: {e}", parts.method))?;
    let mut headers = reqwest::header::HeaderMap::new();
    copy_headers(&parts.headers, &mut headers);
    headers.remove("host");
    let body = reqwest::Body::wrap_stream(body.into_data_stream());
    client
        .request(method, url.clone())
        .headers(headers)
        .body(body)
        .send()
        .await
        .map_err(|e| format!("{url} did not answer: {}", fundi_runtime::error_chain(&e)))
}

fn copy_headers(from: &HeaderMap, to: &mut HeaderMap) {
    for (name, value) in from {
        if !HOP_BY_HOP.contains(&name.as_str()) {
            to.append(HeaderName::from(name), value.clone());
        }
    }
}

fn injected(status: u16) -> Response<Body> {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::SERVICE_UNAVAILABLE);
    plain(status, format!("fundi chaos-run injected this {status}\n"))
}

fn plain(status: StatusCode, text: String) -> Response<Body> {
    let mut response = Response::new(BodyExt::boxed_unsync(
        Full::new(Bytes::from(text)).map_err(|never| match never {}),
    ));
    *response.status_mut() = status;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}
