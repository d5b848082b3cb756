//! How a peer's HTTP answers are read (their words, `Retry-After`) and how paths and
//! queries are written.

use std::time::Duration;

use serde_json::Value;

/// A path segment, percent-encoded.
pub(super) fn segment(text: &str) -> String {
    let mut url = reqwest::Url::parse("http://x/").expect("a constant URL");
    url.path_segments_mut()
        .expect("an http URL has segments")
        .push(text);
    url.path().trim_start_matches('/').to_owned()
}

/// The query string of `params`' scalar fields but `skip` (`?pageSize=10&status=...`).
pub(super) fn query(params: &Value, skip: &[&str]) -> String {
    let mut url = reqwest::Url::parse("http://x/").expect("a constant URL");
    {
        let mut pairs = url.query_pairs_mut();
        for (key, value) in params.as_object().into_iter().flatten() {
            if skip.contains(&key.as_str()) {
                continue;
            }
            let text = match value {
                Value::String(text) => text.clone(),
                Value::Number(_) | Value::Bool(_) => value.to_string(),
                _ => continue,
            };
            pairs.append_pair(key, &text);
        }
    }
    match url.query() {
        Some(q) if !q.is_empty() => format!("?{q}"),
        _ => String::new(),
    }
}

/// The words of an error answer: JSON-RPC's or google.rpc.Status's message, or the
/// start of the body.
pub(super) fn said(body: &Value, text: &str) -> String {
    body["error"]["message"]
        .as_str()
        .or_else(|| body["error"].as_str())
        .or_else(|| body["message"].as_str())
        .map(str::to_owned)
        .unwrap_or_else(|| match text.trim().is_empty() {
            true => "no message".to_owned(),
            false => start(text),
        })
}

pub(super) fn start(text: &str) -> String {
    text.chars().take(200).collect()
}

/// `Retry-After` in seconds or as an HTTP date, as a pause from now.
pub(super) fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let value = headers
        .get(reqwest::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let at = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    let pause = at.signed_duration_since(chrono::Utc::now());
    Some(pause.to_std().unwrap_or(Duration::ZERO))
}
