//! Transport: TLS certificate and protocol problems (found while fetching), plain HTTP,
//! and whether HTTP redirects to HTTPS.

use reqwest::{Method, Url};

use crate::security::catalogue::found;
use crate::security::finding::Finding;
use crate::security::http::{Fetcher, Response, TlsProblem};

pub(crate) fn tls(problem: Option<TlsProblem>, url: &Url, findings: &mut Vec<Finding>) {
    let Some(problem) = problem else {
        return;
    };
    let host = url.host_str().unwrap_or("").to_owned();
    let (id, title, evidence) = match problem {
        TlsProblem::Untrusted(e) => (
            "tls-untrusted-certificate",
            "the certificate is not issued by a trusted CA",
            e,
        ),
        TlsProblem::Expired(e) => (
            "tls-expired-certificate",
            "the certificate has expired (or is not valid yet)",
            e,
        ),
        TlsProblem::WrongName(e) => (
            "tls-wrong-name",
            "the certificate is not valid for this host name",
            e,
        ),
        TlsProblem::WeakProtocol(e) => (
            "tls-weak-protocol",
            "the server does not offer TLS 1.2 or later",
            e,
        ),
        TlsProblem::Other(e) => ("tls-error", "the TLS handshake failed", e),
    };
    findings.push(found(id, title, evidence, url.as_str(), host));
}

/// A plain-HTTP target must redirect to HTTPS.
pub(crate) fn plain_http(first: &Response, findings: &mut Vec<Finding>) {
    if first.url.scheme() != "http" {
        return;
    }
    let redirects_to_https = (300..400).contains(&first.status)
        && first
            .header("location")
            .and_then(|l| first.url.join(l).ok())
            .is_some_and(|target| target.scheme() == "https");
    if !redirects_to_https {
        findings.push(found(
            "no-https",
            "the site is served over plain HTTP without redirecting to HTTPS",
            format!("GET {} → HTTP {}", first.url, first.status),
            first.url.as_str(),
            first.url.host_str().unwrap_or(""),
        ));
    }
}

/// For an HTTPS target whose HTTP origin may also be scanned: HTTP must redirect to
/// HTTPS. Returns false when the HTTP origin is not allowed (the check is skipped).
pub(crate) async fn http_redirect(
    fetcher: &Fetcher,
    https_url: &Url,
    allowed: impl Fn(&Url) -> bool,
    findings: &mut Vec<Finding>,
) -> bool {
    let mut http = https_url.clone();
    if http.set_scheme("http").is_err() || http.set_port(None).is_err() {
        return false;
    }
    if !allowed(&http) {
        return false;
    }
    let Ok(response) = fetcher.request(Method::GET, &http, &[]).await else {
        // Nothing listens on HTTP: nothing to redirect.
        return true;
    };
    let redirects = (300..400).contains(&response.status)
        && response
            .header("location")
            .and_then(|l| http.join(l).ok())
            .is_some_and(|t| t.scheme() == "https");
    if !redirects {
        findings.push(found(
            "http-not-redirected-to-https",
            "HTTP requests are answered instead of redirected to HTTPS",
            format!("GET {http} → HTTP {}", response.status),
            http.as_str(),
            http.host_str().unwrap_or(""),
        ));
    }
    true
}
