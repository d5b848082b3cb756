//! Set-Cookie attributes: Secure, HttpOnly on session-like cookies, SameSite, and the
//! __Host- / __Secure- prefix rules.

use crate::security::catalogue::found;
use crate::security::finding::Finding;
use crate::security::http::Response;

/// Cookie names that look like sessions or credentials.
fn session_like(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    [
        "sess", "sid", "auth", "token", "jwt", "login", "csrf", "xsrf", "remember",
    ]
    .iter()
    .any(|marker| name.contains(marker))
}

pub(crate) fn check(response: &Response, findings: &mut Vec<Finding>) {
    let url = response.url.as_str();
    for raw in response.headers_all("set-cookie") {
        let mut parts = raw.split(';');
        let Some((name, _)) = parts.next().and_then(|p| p.split_once('=')) else {
            continue;
        };
        let name = name.trim().to_owned();
        let attributes: Vec<(String, String)> = parts
            .map(|a| {
                let (key, value) = a.split_once('=').unwrap_or((a, ""));
                (key.trim().to_ascii_lowercase(), value.trim().to_owned())
            })
            .collect();
        let has = |key: &str| attributes.iter().any(|(k, _)| k == key);
        let value_of = |key: &str| {
            attributes
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.to_ascii_lowercase())
        };
        let evidence = format!("Set-Cookie: {raw}");
        let session = session_like(&name);
        if !has("secure") {
            let (id, title) = if session {
                (
                    "cookie-session-no-secure",
                    "a session cookie is sent without Secure",
                )
            } else {
                ("cookie-no-secure", "a cookie is sent without Secure")
            };
            findings.push(found(
                id,
                format!("{title}: {name}"),
                evidence.clone(),
                url,
                &name,
            ));
        }
        if session && !has("httponly") {
            findings.push(found(
                "cookie-session-no-httponly",
                format!("session cookie {name} is readable by scripts (no HttpOnly)"),
                evidence.clone(),
                url,
                &name,
            ));
        }
        match value_of("samesite").as_deref() {
            None => findings.push(found(
                "cookie-no-samesite",
                format!("cookie {name} has no SameSite attribute"),
                evidence.clone(),
                url,
                &name,
            )),
            Some("none") if !has("secure") => findings.push(found(
                "cookie-samesite-none-insecure",
                format!("cookie {name} is SameSite=None without Secure"),
                evidence.clone(),
                url,
                &name,
            )),
            _ => {}
        }
        let host_prefix_ok =
            has("secure") && !has("domain") && value_of("path").as_deref() == Some("/");
        let prefix_problem = if name.starts_with("__Host-") && !host_prefix_ok {
            Some("__Host- cookies need Secure, Path=/ and no Domain")
        } else if name.starts_with("__Secure-") && !has("secure") {
            Some("__Secure- cookies need Secure")
        } else {
            None
        };
        if let Some(problem) = prefix_problem {
            findings.push(found(
                "cookie-prefix-violation",
                format!("cookie {name} breaks its prefix rule: {problem}"),
                evidence,
                url,
                &name,
            ));
        }
    }
}
