//! The console's stylesheet and script, built into the binary: no CDN, no build step.

use axum::extract::Path;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

const STYLESHEET: &str = include_str!("../assets/console.css");
const SCRIPT: &str = include_str!("../assets/console.js");

pub(super) async fn serve(Path(name): Path<String>) -> Response {
    let (body, kind) = match name.as_str() {
        "console.css" => (STYLESHEET, "text/css; charset=utf-8"),
        "console.js" => (SCRIPT, "text/javascript; charset=utf-8"),
        _ => return StatusCode::NOT_FOUND.into_response(),
    };
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
    // The assets change only with the binary.
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("private, max-age=300"),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}
