//! Every check: its id, severity, CWE, penalty and remediation (the table in
//! docs/skills/security-scan.md, checked by a test).

use super::finding::{Finding, Severity};

/// One check.
#[derive(Debug)]
pub struct CheckInfo {
    /// Its id.
    pub id: &'static str,
    /// The severity of a finding.
    pub severity: Severity,
    /// The CWE.
    pub cwe: Option<u32>,
    /// Points off the score.
    pub penalty: i32,
    /// How to fix it.
    pub remediation: &'static str,
}

macro_rules! check {
    ($id:literal, $sev:ident, $cwe:expr, $penalty:literal, $fix:literal) => {
        CheckInfo {
            id: $id,
            severity: Severity::$sev,
            cwe: $cwe,
            penalty: $penalty,
            remediation: $fix,
        }
    };
}

/// Every check fundi's scan makes.
pub static CHECKS: &[CheckInfo] = &[
    check!(
        "tls-untrusted-certificate",
        High,
        Some(295),
        20,
        "Serve a certificate chain issued by a trusted CA (an internal CA can be added to skills.security-scan.extra-ca-files)."
    ),
    check!(
        "tls-expired-certificate",
        High,
        Some(298),
        20,
        "Renew the certificate and automate renewal."
    ),
    check!(
        "tls-wrong-name",
        High,
        Some(297),
        20,
        "Serve a certificate whose subject alternative names include this host."
    ),
    check!(
        "tls-weak-protocol",
        High,
        Some(326),
        20,
        "Enable TLS 1.2 and 1.3; disable SSL 3.0, TLS 1.0 and TLS 1.1."
    ),
    check!(
        "tls-error",
        Medium,
        Some(295),
        10,
        "Fix the TLS configuration so that a standard client can connect."
    ),
    check!(
        "hsts-missing",
        Medium,
        Some(319),
        20,
        "Send Strict-Transport-Security: max-age=63072000; includeSubDomains; preload on HTTPS responses."
    ),
    check!(
        "hsts-invalid",
        Medium,
        Some(319),
        20,
        "Send a valid Strict-Transport-Security header with a numeric max-age."
    ),
    check!(
        "hsts-short-max-age",
        Low,
        Some(319),
        10,
        "Raise Strict-Transport-Security max-age to at least 15552000 (six months)."
    ),
    check!(
        "hsts-no-include-subdomains",
        Info,
        None,
        0,
        "Add includeSubDomains to Strict-Transport-Security once every subdomain serves HTTPS."
    ),
    check!(
        "hsts-not-preloaded",
        Info,
        None,
        0,
        "Add preload to Strict-Transport-Security and submit the domain to hstspreload.org."
    ),
    check!(
        "csp-missing",
        Medium,
        Some(693),
        25,
        "Send a Content-Security-Policy, e.g. default-src 'self'; object-src 'none'; base-uri 'self'; frame-ancestors 'none'."
    ),
    check!(
        "csp-report-only",
        Medium,
        Some(693),
        25,
        "Enforce the policy with Content-Security-Policy; Report-Only alone blocks nothing."
    ),
    check!(
        "csp-unsafe-inline",
        Medium,
        Some(79),
        20,
        "Remove 'unsafe-inline' from script sources; use nonces or hashes."
    ),
    check!(
        "csp-unsafe-eval",
        Medium,
        Some(95),
        10,
        "Remove 'unsafe-eval' from script sources."
    ),
    check!(
        "csp-insecure-source",
        Medium,
        Some(79),
        20,
        "Do not allow *, http:, https: or data: as script sources; list the hosts you load from."
    ),
    check!(
        "csp-no-object-src",
        Low,
        Some(693),
        0,
        "Add object-src 'none' (or default-src 'none')."
    ),
    check!(
        "csp-no-base-uri",
        Low,
        Some(693),
        0,
        "Add base-uri 'self' (or 'none')."
    ),
    check!(
        "csp-no-frame-ancestors",
        Low,
        Some(1021),
        0,
        "Add frame-ancestors 'none' (or 'self') to the CSP; X-Frame-Options is its older, weaker form."
    ),
    check!(
        "x-content-type-options-missing",
        Low,
        Some(693),
        5,
        "Send X-Content-Type-Options: nosniff."
    ),
    check!(
        "clickjacking",
        Medium,
        Some(1021),
        20,
        "Send Content-Security-Policy frame-ancestors 'none' (or 'self'), or X-Frame-Options: DENY."
    ),
    check!(
        "referrer-policy-missing",
        Info,
        Some(200),
        0,
        "Send Referrer-Policy: strict-origin-when-cross-origin (or stricter)."
    ),
    check!(
        "referrer-policy-unsafe",
        Low,
        Some(200),
        5,
        "Do not use unsafe-url or no-referrer-when-downgrade; use strict-origin-when-cross-origin."
    ),
    check!(
        "permissions-policy-missing",
        Info,
        None,
        0,
        "Send a Permissions-Policy that turns off the features the site does not use."
    ),
    check!(
        "cookie-session-no-secure",
        High,
        Some(614),
        40,
        "Set the Secure attribute on session cookies."
    ),
    check!(
        "cookie-no-secure",
        Medium,
        Some(614),
        20,
        "Set the Secure attribute on cookies."
    ),
    check!(
        "cookie-session-no-httponly",
        Medium,
        Some(1004),
        30,
        "Set the HttpOnly attribute on session cookies."
    ),
    check!(
        "cookie-no-samesite",
        Low,
        Some(1275),
        0,
        "Set SameSite=Lax (or Strict) on cookies."
    ),
    check!(
        "cookie-samesite-none-insecure",
        Medium,
        Some(1275),
        20,
        "SameSite=None requires Secure; add it or use Lax."
    ),
    check!(
        "cookie-prefix-violation",
        Medium,
        Some(784),
        20,
        "__Host- cookies need Secure, Path=/ and no Domain; __Secure- cookies need Secure."
    ),
    check!(
        "cors-reflected-origin-with-credentials",
        High,
        Some(942),
        50,
        "Do not echo arbitrary Origins in Access-Control-Allow-Origin when credentials are allowed; check against an allowlist."
    ),
    check!(
        "cors-reflected-origin",
        Medium,
        Some(942),
        20,
        "Check Origin against an allowlist instead of echoing it."
    ),
    check!(
        "cors-wildcard-with-credentials",
        High,
        Some(942),
        50,
        "Never combine Access-Control-Allow-Origin: * with Access-Control-Allow-Credentials: true."
    ),
    check!(
        "cors-null-origin",
        Medium,
        Some(942),
        20,
        "Do not allow the null Origin (sandboxed pages and files send it)."
    ),
    check!(
        "cors-wildcard",
        Info,
        Some(942),
        0,
        "Make sure the resource is meant to be readable by every site."
    ),
    check!(
        "server-version-disclosure",
        Low,
        Some(200),
        5,
        "Remove version numbers from the Server header."
    ),
    check!(
        "x-powered-by-disclosure",
        Low,
        Some(200),
        5,
        "Remove the X-Powered-By header (and X-AspNet-Version)."
    ),
    check!(
        "stack-trace-disclosure",
        Medium,
        Some(209),
        10,
        "Show users a generic error page; log the details instead."
    ),
    check!(
        "no-https",
        Medium,
        Some(319),
        20,
        "Serve the site over HTTPS and redirect HTTP to it."
    ),
    check!(
        "http-not-redirected-to-https",
        Medium,
        Some(319),
        20,
        "Redirect every HTTP request to the same URL over HTTPS (301 or 308)."
    ),
    check!(
        "mixed-content-active",
        High,
        Some(319),
        50,
        "Load scripts, styles and frames over HTTPS only."
    ),
    check!(
        "mixed-content-passive",
        Low,
        Some(319),
        10,
        "Load images and media over HTTPS."
    ),
    check!(
        "sri-missing",
        Low,
        Some(353),
        5,
        "Add integrity (and crossorigin) attributes to scripts loaded from other origins."
    ),
    check!(
        "target-blank-no-noopener",
        Low,
        Some(1022),
        0,
        "Add rel=\"noopener\" to links that open another site in a new window."
    ),
    check!(
        "exposed-git",
        High,
        Some(538),
        20,
        "Do not deploy the .git directory; block /.git/ at the web server."
    ),
    check!(
        "exposed-svn",
        High,
        Some(538),
        20,
        "Do not deploy .svn directories."
    ),
    check!(
        "exposed-env",
        High,
        Some(538),
        20,
        "Do not serve .env files; move secrets out of the web root and rotate them."
    ),
    check!(
        "exposed-ds-store",
        Low,
        Some(538),
        5,
        "Remove .DS_Store files from the web root."
    ),
    check!(
        "exposed-server-status",
        Medium,
        Some(200),
        10,
        "Restrict /server-status to administrators."
    ),
    check!(
        "exposed-backup-file",
        Medium,
        Some(530),
        10,
        "Remove backup and editor files from the web root."
    ),
    check!(
        "exposed-phpinfo",
        Medium,
        Some(200),
        10,
        "Remove phpinfo() pages."
    ),
    check!(
        "directory-listing",
        Medium,
        Some(548),
        10,
        "Turn off directory listings."
    ),
    check!(
        "trace-enabled",
        Low,
        Some(693),
        5,
        "Disable the TRACE method."
    ),
    check!(
        "open-redirect",
        Medium,
        Some(601),
        10,
        "Redirect only to relative paths or an allowlist of hosts."
    ),
];

/// A finding of check `id`.
pub(crate) fn found(
    id: &'static str,
    title: impl Into<String>,
    evidence: impl Into<String>,
    url: &str,
    target: impl Into<String>,
) -> Finding {
    let info = CHECKS.iter().find(|c| c.id == id);
    // Every check is in the catalogue (tests run with debug assertions).
    debug_assert!(info.is_some(), "check {id} is not in the catalogue");
    Finding {
        id,
        title: title.into(),
        severity: info.map_or(Severity::Info, |c| c.severity),
        cwe: info.and_then(|c| c.cwe),
        evidence: shorten(printable(evidence.into())),
        remediation: info.map_or("", |c| c.remediation),
        url: url.to_owned(),
        target: target.into(),
        penalty: info.map_or(0, |c| c.penalty),
    }
}

/// Evidence as text a report can hold and a person can read: a response's control
/// characters (a binary file's NULs, say) written as escapes, lines and tabs kept.
fn printable(text: String) -> String {
    if !text
        .chars()
        .any(|c| c.is_control() && !matches!(c, '\n' | '\t' | '\r'))
    {
        return text;
    }
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' | '\t' | '\r' => out.push(c),
            c if c.is_control() => out.extend(c.escape_default()),
            c => out.push(c),
        }
    }
    out
}

fn shorten(text: String) -> String {
    if text.len() <= 300 {
        return text;
    }
    let mut end = 300;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}
