//! The transport tests: HTTP Strict Transport Security and the redirection from HTTP to
//! HTTPS.

use super::expectation::Expectation::*;
use super::headers::{first_chars, header};
use super::{Input, Verdict};

/// Six months, as Observatory counts them (15552000 s: many sites use it for 15768000).
const SIX_MONTHS: f64 = 15_552_000.0;

/// JavaScript's `parseInt(text, 10)`: the leading integer, NaN (`None`) without digits.
fn parse_int(text: &str) -> Option<f64> {
    let text = text.trim_start();
    let (sign, digits) = match text.as_bytes().first() {
        Some(b'-') => (-1.0, &text[1..]),
        Some(b'+') => (1.0, &text[1..]),
        _ => (1.0, text),
    };
    let end = digits
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(digits.len());
    digits[..end].parse::<f64>().ok().map(|n| sign * n)
}

pub(crate) fn hsts(input: &Input<'_>) -> Verdict {
    let https = input.retrieval.https.as_ref();
    let mut result = match https {
        None => HstsNotImplementedNoHttps,
        Some(session) if !session.verified => HstsInvalidCert,
        Some(session) => match header(&session.response, "strict-transport-security") {
            None => HstsNotImplemented,
            Some(value) => {
                let data = first_chars(&value, 1024);
                if data.contains(',') {
                    // Set more than once.
                    HstsHeaderInvalid
                } else {
                    // `Some(None)`: max-age given but not a number, which Observatory's
                    // comparison lets through as long enough.
                    let mut max_age: Option<Option<f64>> = None;
                    for parameter in data.split(';') {
                        let parameter = parameter.trim().to_lowercase();
                        if let Some(value) = parameter.strip_prefix("max-age=") {
                            max_age = Some(parse_int(first_chars(value, 120)));
                        }
                    }
                    match max_age {
                        None => HstsHeaderInvalid,
                        Some(Some(age)) if age < SIX_MONTHS => {
                            HstsImplementedMaxAgeLessThanSixMonths
                        }
                        Some(_) => HstsImplementedMaxAgeAtLeastSixMonths,
                    }
                }
            }
        },
    };
    if https.is_some() && input.preload.covers(&input.retrieval.host) {
        result = HstsPreloaded;
    }
    (
        result,
        matches!(
            result,
            HstsImplementedMaxAgeAtLeastSixMonths | HstsPreloaded
        ),
    )
}

pub(crate) fn redirection(input: &Input<'_>) -> Verdict {
    let result = match &input.retrieval.http {
        None => RedirectionNotNeededNoHttp,
        Some(session) if !session.verified => RedirectionInvalidCert,
        Some(session) => {
            let route = &session.route;
            let scheme = |i: usize| route.get(i).map(|url| url.scheme());
            let host = |i: usize| route.get(i).and_then(|url| url.host_str());
            if route
                .iter()
                .all(|url| input.preload.covers(url.host_str().unwrap_or_default()))
            {
                RedirectionAllRedirectsPreloaded
            } else if route.len() == 1 {
                RedirectionMissing
            } else if route.last().map(|url| url.scheme()) != Some("https") {
                RedirectionNotToHttps
            } else if scheme(1) == Some("http") {
                RedirectionNotToHttpsOnInitialRedirection
            } else if scheme(0) == Some("http") && scheme(1) == Some("https") && host(0) != host(1)
            {
                RedirectionOffHostFromHttp
            } else {
                RedirectionToHttps
            }
        }
    };
    (
        result,
        matches!(
            result,
            RedirectionNotNeededNoHttp | RedirectionAllRedirectsPreloaded | RedirectionToHttps
        ),
    )
}
