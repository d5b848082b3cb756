//! Security headers: HSTS, CSP, X-Content-Type-Options, framing, Referrer-Policy,
//! Permissions-Policy, and what Server and X-Powered-By give away.

use std::collections::HashMap;

use crate::security::catalogue::found;
use crate::security::finding::{Bonus, Finding};
use crate::security::http::Response;

/// Six months, the Observatory's minimum HSTS max-age.
const HSTS_MIN: u64 = 15_552_000;
/// One year, for preloading.
const HSTS_PRELOAD: u64 = 31_536_000;

pub(crate) fn check(response: &Response, findings: &mut Vec<Finding>, bonuses: &mut Vec<Bonus>) {
    let url = response.url.as_str();
    if response.url.scheme() == "https" {
        hsts(response, url, findings, bonuses);
    }
    let csp = csp(response, url, findings, bonuses);
    match response.header("x-content-type-options") {
        Some(v) if v.trim().eq_ignore_ascii_case("nosniff") => {}
        other => findings.push(found(
            "x-content-type-options-missing",
            "X-Content-Type-Options: nosniff is not set",
            other.map_or("(absent)".to_owned(), |v| {
                format!("X-Content-Type-Options: {v}")
            }),
            url,
            "x-content-type-options",
        )),
    }
    let xfo_ok = response.header("x-frame-options").is_some_and(|v| {
        matches!(
            v.trim().to_ascii_uppercase().as_str(),
            "DENY" | "SAMEORIGIN"
        )
    });
    let frame_ancestors = csp
        .as_ref()
        .is_some_and(|policy| policy.contains_key("frame-ancestors"));
    if !xfo_ok && !frame_ancestors {
        findings.push(found(
            "clickjacking",
            "the page can be framed by any site (no frame-ancestors, no X-Frame-Options)",
            response.header("x-frame-options").map_or(
                "(no X-Frame-Options, no CSP frame-ancestors)".to_owned(),
                |v| format!("X-Frame-Options: {v}"),
            ),
            url,
            "x-frame-options",
        ));
    }
    referrer_policy(response, url, findings, bonuses);
    if response.header("permissions-policy").is_none() {
        findings.push(found(
            "permissions-policy-missing",
            "no Permissions-Policy",
            "(absent)",
            url,
            "permissions-policy",
        ));
    }
    if let Some(server) = response.header("server")
        && server.chars().any(|c| c.is_ascii_digit())
    {
        findings.push(found(
            "server-version-disclosure",
            "the Server header gives away software versions",
            format!("Server: {server}"),
            url,
            "server",
        ));
    }
    for header in ["x-powered-by", "x-aspnet-version", "x-aspnetmvc-version"] {
        if let Some(value) = response.header(header) {
            findings.push(found(
                "x-powered-by-disclosure",
                format!("{header} gives away the technology in use"),
                format!("{header}: {value}"),
                url,
                header,
            ));
        }
    }
}

fn hsts(response: &Response, url: &str, findings: &mut Vec<Finding>, bonuses: &mut Vec<Bonus>) {
    let Some(value) = response.header("strict-transport-security") else {
        findings.push(found(
            "hsts-missing",
            "Strict-Transport-Security is not set",
            "(absent)",
            url,
            "strict-transport-security",
        ));
        return;
    };
    let evidence = format!("Strict-Transport-Security: {value}");
    let directives: Vec<String> = value
        .split(';')
        .map(|d| d.trim().to_ascii_lowercase())
        .collect();
    let max_age = directives
        .iter()
        .find_map(|d| d.strip_prefix("max-age="))
        .and_then(|v| v.trim_matches('"').parse::<u64>().ok());
    let Some(max_age) = max_age else {
        findings.push(found(
            "hsts-invalid",
            "Strict-Transport-Security has no valid max-age",
            evidence,
            url,
            "strict-transport-security",
        ));
        return;
    };
    let subdomains = directives.iter().any(|d| d == "includesubdomains");
    let preload = directives.iter().any(|d| d == "preload");
    if max_age < HSTS_MIN {
        findings.push(found(
            "hsts-short-max-age",
            format!("HSTS max-age {max_age} is under six months"),
            evidence.clone(),
            url,
            "strict-transport-security",
        ));
    }
    if !subdomains {
        findings.push(found(
            "hsts-no-include-subdomains",
            "HSTS does not cover subdomains",
            evidence.clone(),
            url,
            "strict-transport-security",
        ));
    }
    if !preload {
        findings.push(found(
            "hsts-not-preloaded",
            "HSTS is not marked for preloading",
            evidence,
            url,
            "strict-transport-security",
        ));
    } else if subdomains && max_age >= HSTS_PRELOAD {
        bonuses.push(Bonus {
            id: "hsts-preloaded",
            points: 5,
        });
    }
}

/// Parses one policy: directive name → source list.
pub(crate) fn parse_policy(policy: &str) -> HashMap<String, Vec<String>> {
    let mut directives = HashMap::new();
    for directive in policy.split(';') {
        let mut words = directive.split_whitespace();
        let Some(name) = words.next() else {
            continue;
        };
        // The first occurrence of a directive wins, as in browsers.
        directives
            .entry(name.to_ascii_lowercase())
            .or_insert_with(|| words.map(str::to_ascii_lowercase).collect());
    }
    directives
}

/// Checks the CSP and returns the enforced policy (the first one), if any.
fn csp(
    response: &Response,
    url: &str,
    findings: &mut Vec<Finding>,
    bonuses: &mut Vec<Bonus>,
) -> Option<HashMap<String, Vec<String>>> {
    let enforced = response.headers_all("content-security-policy");
    let Some(raw) = enforced.first() else {
        let report_only = response.header("content-security-policy-report-only");
        findings.push(match report_only {
            Some(policy) => found(
                "csp-report-only",
                "the Content-Security-Policy is report-only: it blocks nothing",
                format!("Content-Security-Policy-Report-Only: {policy}"),
                url,
                "content-security-policy",
            ),
            None => found(
                "csp-missing",
                "no Content-Security-Policy",
                "(absent)",
                url,
                "content-security-policy",
            ),
        });
        return None;
    };
    let policy = parse_policy(raw);
    let evidence = format!("Content-Security-Policy: {raw}");
    let default = policy.get("default-src");
    let scripts = policy.get("script-src").or(default);
    let none = |list: Option<&Vec<String>>| list.is_some_and(|l| l.iter().any(|s| s == "'none'"));
    let mut clean = true;
    match scripts {
        None => {
            clean = false;
            findings.push(found(
                "csp-unsafe-inline",
                "the CSP sets neither script-src nor default-src, so inline scripts run",
                evidence.clone(),
                url,
                "content-security-policy",
            ));
        }
        Some(sources) => {
            let nonce_or_hash = sources.iter().any(|s| {
                s.starts_with("'nonce-")
                    || s.starts_with("'sha256-")
                    || s.starts_with("'sha384-")
                    || s.starts_with("'sha512-")
                    || s == "'strict-dynamic'"
            });
            if sources.iter().any(|s| s == "'unsafe-inline'") && !nonce_or_hash {
                clean = false;
                findings.push(found(
                    "csp-unsafe-inline",
                    "the CSP allows inline scripts ('unsafe-inline' without nonces or hashes)",
                    evidence.clone(),
                    url,
                    "content-security-policy",
                ));
            }
            if sources.iter().any(|s| s == "'unsafe-eval'") {
                clean = false;
                findings.push(found(
                    "csp-unsafe-eval",
                    "the CSP allows eval() ('unsafe-eval')",
                    evidence.clone(),
                    url,
                    "content-security-policy",
                ));
            }
            let insecure: Vec<&String> = sources
                .iter()
                .filter(|s| {
                    matches!(s.as_str(), "*" | "http:" | "https:" | "data:")
                        || s.starts_with("http://")
                })
                .collect();
            if !insecure.is_empty() {
                clean = false;
                findings.push(found(
                    "csp-insecure-source",
                    format!(
                        "the CSP lets scripts load from anywhere: {}",
                        insecure
                            .iter()
                            .map(|s| s.as_str())
                            .collect::<Vec<_>>()
                            .join(" ")
                    ),
                    evidence.clone(),
                    url,
                    "content-security-policy",
                ));
            }
        }
    }
    if !policy.contains_key("object-src") && !none(default) {
        clean = false;
        findings.push(found(
            "csp-no-object-src",
            "the CSP does not restrict plugins (object-src)",
            evidence.clone(),
            url,
            "content-security-policy",
        ));
    }
    if !policy.contains_key("base-uri") {
        findings.push(found(
            "csp-no-base-uri",
            "the CSP does not restrict <base> (base-uri)",
            evidence.clone(),
            url,
            "content-security-policy",
        ));
    }
    if !policy.contains_key("frame-ancestors") {
        findings.push(found(
            "csp-no-frame-ancestors",
            "the CSP does not say who may frame the page (frame-ancestors)",
            evidence,
            url,
            "content-security-policy",
        ));
    }
    let strict_default = default.is_some_and(|d| d.iter().all(|s| s == "'none'" || s == "'self'"));
    if clean && strict_default {
        bonuses.push(Bonus {
            id: "csp-strict",
            points: 5,
        });
    }
    Some(policy)
}

fn referrer_policy(
    response: &Response,
    url: &str,
    findings: &mut Vec<Finding>,
    bonuses: &mut Vec<Bonus>,
) {
    let Some(value) = response.header("referrer-policy") else {
        findings.push(found(
            "referrer-policy-missing",
            "no Referrer-Policy (browsers default to strict-origin-when-cross-origin)",
            "(absent)",
            url,
            "referrer-policy",
        ));
        return;
    };
    // The last recognised token wins.
    let last = value
        .split(',')
        .map(|t| t.trim().to_ascii_lowercase())
        .rfind(|t| !t.is_empty())
        .unwrap_or_default();
    match last.as_str() {
        "unsafe-url" | "no-referrer-when-downgrade" => findings.push(found(
            "referrer-policy-unsafe",
            format!("Referrer-Policy {last} sends full URLs to other sites"),
            format!("Referrer-Policy: {value}"),
            url,
            "referrer-policy",
        )),
        "no-referrer" | "same-origin" | "strict-origin" | "strict-origin-when-cross-origin" => {
            bonuses.push(Bonus {
                id: "referrer-policy-private",
                points: 5,
            });
        }
        _ => {}
    }
}
