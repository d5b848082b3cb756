//! Checks made before credentials are read: the `Host` header (DNS rebinding: a page on
//! an attacker's domain that resolves to this address) and the browser `Origin`.

use std::collections::HashSet;

use axum::http::{HeaderMap, Uri, header};

use crate::config::GatewayConfig;
use crate::error::ApiError;

/// Host names every gateway accepts: a rebinding attack always brings a foreign name.
const LOOPBACK_NAMES: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

#[derive(Debug)]
pub(crate) struct RequestGuard {
    any_host: bool,
    hosts: HashSet<String>,
    origins: HashSet<String>,
}

impl RequestGuard {
    pub(crate) fn new(config: &GatewayConfig, public_url: &str) -> RequestGuard {
        let mut hosts: HashSet<String> = LOOPBACK_NAMES.iter().map(|h| (*h).to_owned()).collect();
        hosts.extend(config.allowed_hosts.iter().map(|h| h.to_ascii_lowercase()));
        if let Some(host) = url_host(public_url) {
            hosts.insert(host);
        }
        RequestGuard {
            any_host: config.allowed_hosts.iter().any(|h| h == "*"),
            hosts,
            origins: config
                .allowed_origins
                .iter()
                .map(|o| o.trim_end_matches('/').to_ascii_lowercase())
                .collect(),
        }
    }

    /// Checks the request's host (its `Host` header, and the authority of an
    /// absolute-form target, which RFC 9112 says takes precedence) and its origin.
    pub(crate) fn check(&self, headers: &HeaderMap, uri: &Uri) -> Result<(), ApiError> {
        self.check_host(headers, uri)?;
        if let Some(origin) = headers.get(header::ORIGIN) {
            let origin = origin.to_str().unwrap_or("").trim_end_matches('/');
            if !self.origins.contains(&origin.to_ascii_lowercase()) {
                return Err(ApiError::forbidden_request(format!(
                    "origin {origin:?} is not allowed (gateway.allowed-origins)"
                )));
            }
        }
        Ok(())
    }

    /// Checks the request's host only (the web console checks origins its own way:
    /// its forms come from its own pages).
    pub(crate) fn check_host(&self, headers: &HeaderMap, uri: &Uri) -> Result<(), ApiError> {
        check_single_host(headers)?;
        if !self.any_host {
            let host = headers
                .get(header::HOST)
                .and_then(|v| v.to_str().ok())
                .ok_or_else(|| ApiError::forbidden_request("the Host header is missing"))?;
            let target = uri.authority().map(|a| a.as_str());
            for name in [Some(host), target].into_iter().flatten().map(host_name) {
                if !self.hosts.contains(&name) {
                    return Err(ApiError::forbidden_request(format!(
                        "host {name:?} is not served here (gateway.allowed-hosts)"
                    )));
                }
            }
        }
        Ok(())
    }
}

/// Refuses a request with more than one `Host` header (RFC 9112 section 3.2: 400).
pub(crate) fn check_single_host(headers: &HeaderMap) -> Result<(), ApiError> {
    match headers.get_all(header::HOST).iter().nth(1) {
        Some(_) => Err(ApiError::malformed_http(
            "the request has more than one Host header",
        )),
        None => Ok(()),
    }
}

/// The name part of a `Host` value, lowercased: `[::1]:80` → `::1`, `a.b:80` → `a.b`.
fn host_name(host: &str) -> String {
    let host = host.trim();
    let name = if let Some(rest) = host.strip_prefix('[') {
        rest.split(']').next().unwrap_or("")
    } else {
        match host.rsplit_once(':') {
            Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
            _ => host,
        }
    };
    name.trim_end_matches('.').to_ascii_lowercase()
}

/// The host name of an http(s) URL.
fn url_host(url: &str) -> Option<String> {
    let rest = url.split_once("://")?.1;
    let authority = rest.split(['/', '?', '#']).next()?;
    let authority = authority.rsplit('@').next()?;
    Some(host_name(authority)).filter(|h| !h.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_names_lose_their_port_and_brackets() {
        assert_eq!(host_name("LocalHost:8080"), "localhost");
        assert_eq!(host_name("[::1]:80"), "::1");
        assert_eq!(host_name("example.com."), "example.com");
        assert_eq!(host_name("example.com"), "example.com");
        assert_eq!(
            url_host("https://user@Agent.example.com:8443/a2a").as_deref(),
            Some("agent.example.com")
        );
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.insert(*k, v.parse().unwrap());
        }
        map
    }

    fn check(guard: &RequestGuard, pairs: &[(&'static str, &str)]) -> Result<(), ApiError> {
        guard.check(&headers(pairs), &Uri::from_static("/a2a"))
    }

    #[test]
    fn an_absolute_target_and_a_second_host_are_checked() {
        let guard = RequestGuard::new(&GatewayConfig::default(), "http://127.0.0.1:8080");
        let host = headers(&[("host", "localhost")]);
        let foreign = Uri::from_static("http://evil.example/a2a");
        let error = guard.check(&host, &foreign).unwrap_err();
        assert!(
            error.message().contains("evil.example"),
            "{}",
            error.message()
        );
        let local = Uri::from_static("http://127.0.0.1:8080/a2a");
        assert!(guard.check(&host, &local).is_ok());
        let mut two = host.clone();
        two.append("host", "localhost".parse().unwrap());
        let error = guard.check(&two, &local).unwrap_err();
        assert_eq!(error.code(), -32600);
        assert!(error.message().contains("more than one Host"));
    }

    #[test]
    fn foreign_hosts_and_origins_are_refused() {
        let config = GatewayConfig {
            allowed_origins: vec!["https://app.example.com".into()],
            ..GatewayConfig::default()
        };
        let guard = RequestGuard::new(&config, "https://agent.example.com");
        assert!(check(&guard, &[("host", "127.0.0.1:9")]).is_ok());
        assert!(check(&guard, &[("host", "agent.example.com")]).is_ok());
        assert!(check(&guard, &[("host", "evil.example:9")]).is_err());
        assert!(check(&guard, &[]).is_err());
        let allowed = [("host", "localhost"), ("origin", "https://app.example.com")];
        assert!(check(&guard, &allowed).is_ok());
        let foreign = [("host", "localhost"), ("origin", "https://evil.example")];
        assert!(check(&guard, &foreign).is_err());
        assert!(check(&guard, &[("host", "localhost"), ("origin", "null")]).is_err());
    }
}
