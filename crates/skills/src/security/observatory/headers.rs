//! The header tests: X-Content-Type-Options, X-Frame-Options, Referrer-Policy, the
//! cross-origin policies (CORP, COOP, COEP) and CORS; and reading headers as
//! Observatory's HTTP client hands them over.

use super::expectation::Expectation::{self, *};
use super::{Input, Page, Verdict, attr, csp};
use crate::security::http::Response;

/// Headers whose repeats Node's HTTP client drops (it keeps the first); every other
/// repeated header but `Set-Cookie` reaches Observatory joined with ", ".
const FIRST_ONLY: &[&str] = &[
    "age",
    "authorization",
    "content-length",
    "content-type",
    "etag",
    "expires",
    "from",
    "host",
    "if-modified-since",
    "if-unmodified-since",
    "last-modified",
    "location",
    "max-forwards",
    "proxy-authorization",
    "referer",
    "retry-after",
    "server",
    "user-agent",
];

/// A header's value as Observatory reads it (repeats joined, or the first kept).
pub(crate) fn header(response: &Response, name: &str) -> Option<String> {
    let values = response.headers_all(name);
    if values.is_empty() {
        None
    } else if FIRST_ONLY.contains(&name) {
        values.into_iter().next()
    } else {
        Some(values.join(", "))
    }
}

/// A JavaScript `slice(0, n)` of a string: the first `n` UTF-16 units, near enough (the
/// cut is made at a character boundary).
pub(crate) fn first_chars(text: &str, n: usize) -> &str {
    match text.char_indices().nth(n) {
        Some((at, _)) => &text[..at],
        None => text,
    }
}

/// What a response says it is, as Observatory reads it: the first Content-Type, up to
/// its `;`, exactly as sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mime {
    Html,
    Other,
    Missing,
}

pub(crate) fn mime(response: &Response) -> Mime {
    let value = header(response, "content-type").unwrap_or_default();
    match value.split(';').next().unwrap_or_default() {
        "" => Mime::Missing,
        "text/html" | "application/xhtml+xml" => Mime::Html,
        _ => Mime::Other,
    }
}

/// Policies a page states in `<meta>` tags: `http-equiv="Content-Security-Policy"` and
/// `name="referrer"`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Equiv {
    pub(crate) csp: Vec<String>,
    pub(crate) referrer: Option<String>,
}

impl Equiv {
    /// Read only when the response says it is HTML and has a body.
    pub(crate) fn of(response: &Response, page: Option<&Page>) -> Equiv {
        let mut equiv = Equiv::default();
        let is_html = mime(response) == Mime::Html;
        let (true, false, Some(page)) = (is_html, response.body.is_empty(), page) else {
            return equiv;
        };
        for meta in &page.metas {
            match (attr(meta, "http-equiv"), attr(meta, "content")) {
                (Some(name), Some(content)) => {
                    if !content.is_empty()
                        && name.trim().eq_ignore_ascii_case("content-security-policy")
                    {
                        equiv.csp.push(content.to_owned());
                    }
                }
                _ => {
                    let named_referrer = attr(meta, "name")
                        .is_some_and(|n| n.trim().eq_ignore_ascii_case("referrer"));
                    if let Some(content) = attr(meta, "content").filter(|c| !c.is_empty())
                        && named_referrer
                    {
                        equiv.referrer = Some(content.to_owned());
                    }
                }
            }
        }
        equiv
    }
}

pub(crate) fn xcto(input: &Input<'_>) -> Verdict {
    let result = match header(&input.auto.response, "x-content-type-options") {
        Some(value)
            if first_chars(&value, 256)
                .trim()
                .eq_ignore_ascii_case("nosniff") =>
        {
            XContentTypeOptionsNosniff
        }
        Some(_) => XContentTypeOptionsHeaderInvalid,
        None => XContentTypeOptionsNotImplemented,
    };
    (result, result == XContentTypeOptionsNosniff)
}

pub(crate) fn xfo(input: &Input<'_>) -> Verdict {
    let mut result = match header(&input.auto.response, "x-frame-options") {
        Some(value) => {
            let xfo = first_chars(&value, 1024).trim().to_lowercase();
            if xfo == "deny" || xfo == "sameorigin" {
                XFrameOptionsSameoriginOrDeny
            } else if xfo.starts_with("allow-from") {
                XFrameOptionsAllowFromOrigin
            } else {
                XFrameOptionsHeaderInvalid
            }
        }
        None => XFrameOptionsNotImplemented,
    };
    if csp::test(input).frame_ancestors_set {
        result = XFrameOptionsImplementedViaCsp;
    }
    let pass = matches!(
        result,
        XFrameOptionsAllowFromOrigin
            | XFrameOptionsSameoriginOrDeny
            | XFrameOptionsImplementedViaCsp
    );
    (result, pass)
}

pub(crate) fn referrer(input: &Input<'_>) -> Verdict {
    const GOOD: &[&str] = &[
        "no-referrer",
        "same-origin",
        "strict-origin",
        "strict-origin-when-cross-origin",
    ];
    const BAD: &[&str] = &[
        "origin",
        "origin-when-cross-origin",
        "unsafe-url",
        "no-referrer-when-downgrade",
    ];
    let mut stated: Vec<String> = header(&input.auto.response, "referrer-policy")
        .into_iter()
        .collect();
    stated.extend(input.equiv.referrer.clone());
    if stated.is_empty() {
        return (ReferrerPolicyNotImplemented, true);
    }
    // The last valid policy named wins (the meta tag's, when there is one).
    let joined = stated.join(", ");
    let policy = joined
        .split(',')
        .map(|p| p.trim().to_lowercase())
        .rfind(|p| GOOD.contains(&p.as_str()) || BAD.contains(&p.as_str()))
        .unwrap_or_default();
    let result = if GOOD.contains(&policy.as_str()) {
        ReferrerPolicyPrivate
    } else if BAD.contains(&policy.as_str()) {
        ReferrerPolicyUnsafe
    } else {
        ReferrerPolicyHeaderInvalid
    };
    (result, result == ReferrerPolicyPrivate)
}

pub(crate) fn corp(input: &Input<'_>) -> Verdict {
    let result = match header(&input.auto.response, "cross-origin-resource-policy")
        .filter(|v| !v.is_empty())
        .map(|v| first_chars(&v, 256).trim().to_lowercase())
        .as_deref()
    {
        None | Some("") => CorpNotImplemented,
        Some("same-site") => CorpImplementedWithSameSite,
        Some("same-origin") => CorpImplementedWithSameOrigin,
        Some("cross-origin") => CorpImplementedWithCrossOrigin,
        Some(_) => CorpHeaderInvalid,
    };
    (result, result != CorpHeaderInvalid)
}

/// The bare item of a structured-field item (RFC 8941) when it is a token: how the HTML
/// standard reads COOP and COEP (a value that does not parse is ignored as a whole).
fn token(value: &str) -> Option<String> {
    let item = sfv::Parser::new(value).parse::<sfv::Item>().ok()?;
    match item.bare_item {
        sfv::BareItem::Token(token) => Some(token.as_str().to_owned()),
        _ => None,
    }
}

/// A policy header read as a structured-field token and looked up in `known`; absent
/// is `missing`, anything else `invalid` (the only result that fails).
fn token_policy(
    input: &Input<'_>,
    name: &str,
    known: &[(&str, Expectation)],
    missing: Expectation,
    invalid: Expectation,
) -> Verdict {
    let result = match header(&input.auto.response, name).filter(|v| !v.is_empty()) {
        None => missing,
        Some(value) => {
            let policy = token(first_chars(&value, 1024).trim());
            known
                .iter()
                .find(|(token, _)| policy.as_deref() == Some(*token))
                .map_or(invalid, |(_, result)| *result)
        }
    };
    (result, result != invalid)
}

pub(crate) fn coop(input: &Input<'_>) -> Verdict {
    let known = [
        ("same-origin", CoopImplementedWithSameOrigin),
        (
            "same-origin-allow-popups",
            CoopImplementedWithSameOriginAllowPopups,
        ),
        (
            "noopener-allow-popups",
            CoopImplementedWithNoopenerAllowPopups,
        ),
        ("unsafe-none", CoopImplementedWithUnsafeNone),
    ];
    token_policy(
        input,
        "cross-origin-opener-policy",
        &known,
        CoopNotImplemented,
        CoopHeaderInvalid,
    )
}

pub(crate) fn coep(input: &Input<'_>) -> Verdict {
    let known = [
        ("require-corp", CoepImplementedWithRequireCorp),
        ("credentialless", CoepImplementedWithCredentialless),
        ("unsafe-none", CoepImplementedWithUnsafeNone),
    ];
    token_policy(
        input,
        "cross-origin-embedder-policy",
        &known,
        CoepNotImplemented,
        CoepHeaderInvalid,
    )
}

pub(crate) fn cors(input: &Input<'_>) -> Verdict {
    let Some(preflight) = &input.retrieval.cors else {
        return (CorsNotImplemented, true);
    };
    let Some(acao) = header(preflight, "access-control-allow-origin").filter(|v| !v.is_empty())
    else {
        return (CorsNotImplemented, true);
    };
    let credentials = header(preflight, "access-control-allow-credentials")
        .is_some_and(|c| c.trim().eq_ignore_ascii_case("true"));
    let result = if first_chars(&acao, 256).trim().to_lowercase() == "*" {
        CorsImplementedWithPublicAccess
    } else if acao == super::CORS_ORIGIN && credentials {
        // The site echoes any origin, credentials included.
        CorsImplementedWithUniversalAccess
    } else {
        CorsImplementedWithRestrictedAccess
    };
    (result, result != CorsImplementedWithUniversalAccess)
}
