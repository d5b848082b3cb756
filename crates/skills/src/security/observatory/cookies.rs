//! The cookies test, over the cookies a jar kept during the session (as tough-cookie,
//! Observatory's jar, keeps them: one per domain, path and name, the last set winning;
//! refused when their Domain does not cover the host or is a public suffix, or when a
//! `__Secure-` or `__Host-` name breaks its prefix's rules).

use std::net::IpAddr;

use reqwest::Url;

use super::expectation::{Expectation::*, only_if_worse};
use super::{Input, Verdict, sri::registrable_domain, transport};

/// A cookie as the jar keeps it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Cookie {
    pub(crate) name: String,
    pub(crate) domain: String,
    pub(crate) path: String,
    pub(crate) secure: bool,
    pub(crate) http_only: bool,
    /// `strict`, `lax` or `none`; `None` when absent or not one of those.
    pub(crate) same_site: Option<String>,
}

/// Cookies Observatory never counts (a load balancer's, which sites cannot flag).
const IGNORED: &[&str] = &["heroku-session-affinity"];
/// Top-level names tough-cookie lets a Domain attribute end in.
const SPECIAL_USE: &[&str] = &["local", "example", "invalid", "localhost", "test"];

/// Parses one `Set-Cookie` value sent by `url`, as the jar would store it.
pub(crate) fn parse(url: &Url, text: &str) -> Option<Cookie> {
    let host = url.host_str()?.trim_matches(['[', ']']).to_lowercase();
    let mut parts = text.split(';');
    let (name, _) = parts.next()?.trim().split_once('=')?;
    let name = name.trim();
    if name.is_empty() || text.chars().any(|c| c.is_control() && c != '\t') {
        return None;
    }
    let mut cookie = Cookie {
        name: name.to_owned(),
        domain: host.clone(),
        path: String::new(),
        secure: false,
        http_only: false,
        same_site: None,
    };
    let mut domain_attr = None;
    for attribute in parts {
        let (key, value) = attribute.split_once('=').unwrap_or((attribute, ""));
        let value = value.trim();
        match key.trim().to_lowercase().as_str() {
            "domain" => {
                let domain = value.trim_start_matches('.').to_lowercase();
                if !domain.is_empty() {
                    domain_attr = Some(domain);
                }
            }
            "path" => {
                cookie.path = if value.starts_with('/') {
                    value.to_owned()
                } else {
                    String::new()
                }
            }
            "secure" => cookie.secure = true,
            "httponly" => cookie.http_only = true,
            "samesite" => {
                let value = value.to_lowercase();
                cookie.same_site = ["strict", "lax", "none"]
                    .contains(&value.as_str())
                    .then_some(value);
            }
            _ => {}
        }
    }
    let host_only = domain_attr.is_none();
    if let Some(domain) = domain_attr {
        let ipv6 = domain.parse::<IpAddr>().is_ok_and(|ip| ip.is_ipv6());
        let special = domain
            .rsplit('.')
            .next()
            .is_some_and(|tld| SPECIAL_USE.contains(&tld));
        if registrable_domain(&domain).is_none() && !ipv6 && !special {
            return None;
        }
        let covers = host == domain
            || (host.ends_with(&format!(".{domain}")) && host.parse::<IpAddr>().is_err());
        if !covers {
            return None;
        }
        cookie.domain = domain;
    }
    if cookie.path.is_empty() {
        cookie.path = default_path(url);
    }
    if cookie.name.starts_with("__Secure-") && !cookie.secure {
        return None;
    }
    if cookie.name.starts_with("__Host-") && !(cookie.secure && host_only && cookie.path == "/") {
        return None;
    }
    Some(cookie)
}

/// RFC 6265's default path: the request path up to its last `/`.
fn default_path(url: &Url) -> String {
    let path = url.path();
    match path.rfind('/') {
        Some(0) | None => "/".into(),
        Some(at) => path[..at].into(),
    }
}

/// The jar after every `Set-Cookie` of the session, in order.
pub(crate) fn jar(set_cookies: &[(Url, String)]) -> Vec<Cookie> {
    let mut jar: Vec<Cookie> = Vec::new();
    for (url, text) in set_cookies {
        let Some(cookie) = parse(url, text) else {
            continue;
        };
        match jar
            .iter_mut()
            .find(|c| c.name == cookie.name && c.domain == cookie.domain && c.path == cookie.path)
        {
            Some(stored) => *stored = cookie,
            None => jar.push(cookie),
        }
    }
    jar.retain(|c| !IGNORED.contains(&c.name.as_str()));
    jar
}

/// A raw `Set-Cookie` whose SameSite is empty or not Strict, Lax or None.
fn invalid_same_site(text: &str) -> bool {
    text.trim().split(';').any(|part| {
        let mut pieces = part.trim().split('=');
        let key = pieces.next().unwrap_or_default();
        let value = pieces.next();
        key.trim().eq_ignore_ascii_case("samesite")
            && value.is_none_or(|v| {
                let v = v.trim().to_lowercase();
                v.is_empty() || !["lax", "strict", "none"].contains(&v.as_str())
            })
    })
}

pub(crate) fn test(input: &Input<'_>) -> Verdict {
    let order = [
        CookiesWithoutSecureFlagButProtectedByHsts,
        CookiesWithoutSecureFlag,
        CookiesSessionWithoutSecureFlagButProtectedByHsts,
        CookiesSamesiteFlagInvalid,
        CookiesAnticsrfWithoutSamesiteFlag,
        CookiesSessionWithoutHttponlyFlag,
        CookiesSessionWithoutSecureFlag,
    ];
    let hsts = transport::hsts(input).1;
    let mut result = None;
    let worse = |e, result: &mut Option<_>| *result = Some(only_if_worse(e, *result, &order));
    for raw in input.auto.response.headers_all("set-cookie") {
        if invalid_same_site(&raw) {
            worse(CookiesSamesiteFlagInvalid, &mut result);
        }
    }
    let cookies = jar(&input.auto.set_cookies);
    if cookies.is_empty() {
        return (CookiesNotFound, true);
    }
    let mut missing_same_site = false;
    for cookie in &cookies {
        let name = cookie.name.to_lowercase();
        let session = name.contains("login") || name.contains("sess");
        let anti_csrf = name.contains("csrf");
        if !cookie.secure && cookie.same_site.as_deref() == Some("none") {
            worse(CookiesSamesiteFlagInvalid, &mut result);
        }
        if !cookie.secure {
            worse(
                if hsts {
                    CookiesWithoutSecureFlagButProtectedByHsts
                } else {
                    CookiesWithoutSecureFlag
                },
                &mut result,
            );
        }
        if anti_csrf && cookie.same_site.is_none() {
            worse(CookiesAnticsrfWithoutSamesiteFlag, &mut result);
        }
        if session && !cookie.secure {
            worse(
                if hsts {
                    CookiesSessionWithoutSecureFlagButProtectedByHsts
                } else {
                    CookiesSessionWithoutSecureFlag
                },
                &mut result,
            );
        }
        if session && !cookie.http_only {
            worse(CookiesSessionWithoutHttponlyFlag, &mut result);
        }
        missing_same_site |= cookie.same_site.is_none();
    }
    let result = result.unwrap_or(if missing_same_site {
        CookiesSecureWithHttponlySessions
    } else {
        CookiesSecureWithHttponlySessionsAndSamesite
    });
    let pass = matches!(
        result,
        CookiesSecureWithHttponlySessions | CookiesSecureWithHttponlySessionsAndSamesite
    );
    (result, pass)
}
