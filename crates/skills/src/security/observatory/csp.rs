//! The Content Security Policy test, with Observatory's policy parser: several
//! policies (headers, `<meta http-equiv>`) merged so that a source counts only when
//! every policy allows it, a repeated directive an error (but `report-uri` and
//! `report-to`, which only warn).

use std::collections::{BTreeMap, BTreeSet};

use super::expectation::Expectation::{self, *};
use super::headers::header;
use super::{Input, Verdict};

/// A parsed policy: each directive's sources.
type Policy = BTreeMap<String, BTreeSet<String>>;

/// Sources that allow nearly anything.
const BROAD: &[&str] = &[
    "ftp:",
    "http:",
    "https:",
    "*",
    "http://*",
    "http://*.*",
    "https://*",
    "https://*.*",
];
const UNSAFE_INLINE: &[&str] = &["'unsafe-inline'", "data:"];
const NONCES_HASHES: &[&str] = &["'sha256-", "'sha384-", "'sha512-", "'nonce-"];
/// Directives a `<meta>` policy may not set.
const NOT_IN_META: &[&str] = &["frame-ancestors", "report-uri", "sandbox"];
/// The shortest policy accepted ("img-src" less one).
const SHORTEST_POLICY: usize = 6;

/// Why a policy list could not be read.
#[derive(Debug)]
pub(crate) struct Invalid;

/// The parsed policy, and whether an allowed duplicate (`report-uri`, `report-to`) was
/// seen.
#[derive(Debug, Default)]
pub(crate) struct Parsed {
    pub(crate) policy: Policy,
    pub(crate) duplicates: bool,
}

#[derive(Debug, Clone)]
struct Source {
    source: String,
    index: usize,
    keep: bool,
}

/// Parses a list of policies into one.
pub(crate) fn parse(list: &[String]) -> Result<Parsed, Invalid> {
    let clean: Vec<String> = list
        .iter()
        .map(|p| p.replace(['\r', '\n'], "").trim().to_owned())
        .collect();
    if clean.iter().any(|p| p.len() < SHORTEST_POLICY) {
        return Err(Invalid);
    }
    let mut merged: BTreeMap<String, Vec<Source>> = BTreeMap::new();
    let mut duplicates = false;
    for (index, policy) in clean.iter().enumerate() {
        let mut seen = BTreeSet::new();
        for entry in policy.split(';') {
            let mut words = entry.split_whitespace();
            let Some(directive) = words.next() else {
                continue;
            };
            let directive = directive.to_lowercase();
            if !seen.insert(directive.clone()) {
                if directive == "report-uri" || directive == "report-to" {
                    duplicates = true;
                } else {
                    return Err(Invalid);
                }
            }
            let keep = index == 0;
            let mut values: Vec<Source> = words
                .map(|w| Source {
                    source: w.to_lowercase(),
                    index,
                    keep,
                })
                .collect();
            if values.is_empty() && directive.ends_with("-src") {
                values.push(Source {
                    source: "'none'".into(),
                    index,
                    keep,
                });
            }
            let mut combined = if index == 0 {
                values
            } else {
                let mut earlier = merged.get(&directive).cloned().unwrap_or_default();
                earlier.extend(values);
                earlier
            };
            combined.sort_by(|a, b| a.source.cmp(&b.source));
            for i in 1..combined.len() {
                let (prev, source) = (&combined[i - 1], &combined[i]);
                let mut keep = source.keep;
                // Within a policy, a source that extends the one before adds nothing.
                if source.index == prev.index && source.source.starts_with(&prev.source) {
                    keep = false;
                }
                // Across policies, a source counts when both allow it.
                if source.index != prev.index && path_part_match(&prev.source, &source.source)? {
                    keep = true;
                }
                combined[i].keep = keep;
            }
            let mut kept: Vec<Source> = combined.into_iter().filter(|s| s.keep).collect();
            // Sources of the first of several policies stay only where a later one
            // allows them too.
            if index == 0 && list.len() > 1 {
                kept.iter_mut().for_each(|s| s.keep = false);
            }
            merged.insert(directive, kept);
        }
    }
    let policy = merged
        .into_iter()
        .map(|(directive, sources)| {
            let sources: BTreeSet<String> = if sources.is_empty() {
                ["'none'".to_owned()].into()
            } else {
                sources.into_iter().map(|s| s.source).collect()
            };
            (directive, sources)
        })
        .collect();
    Ok(Parsed { policy, duplicates })
}

/// Parses policies from `<meta>` tags, leaving out what only headers may set.
fn parse_meta(list: &[String]) -> Result<Parsed, Invalid> {
    let mut parsed = parse(list)?;
    for directive in NOT_IN_META {
        parsed.policy.remove(*directive);
    }
    Ok(parsed)
}

/// Whether source `b` lies within source `a`, path piece by path piece.
fn path_part_match(a: &str, b: &str) -> Result<bool, Invalid> {
    if a.is_empty() || (a == "/" && b.is_empty()) {
        return Ok(true);
    }
    let exact = !a.ends_with('/');
    let mut pieces_a: Vec<&str> = a.split('/').collect();
    let pieces_b: Vec<&str> = b.split('/').collect();
    if pieces_a.len() > pieces_b.len() || (exact && pieces_a.len() != pieces_b.len()) {
        return Ok(false);
    }
    if !exact {
        pieces_a.pop();
    }
    for (piece_a, piece_b) in pieces_a.iter().zip(&pieces_b) {
        if decode_uri_component(piece_a)? != decode_uri_component(piece_b)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// JavaScript's `decodeURIComponent`: a malformed escape is an error.
fn decode_uri_component(text: &str) -> Result<String, Invalid> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3).ok_or(Invalid)?;
            out.push(u8::from_str_radix(hex, 16).map_err(|_| Invalid)?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| Invalid)
}

/// The CSP test's verdict, and whether its parsed policy sets `frame-ancestors` (which
/// the X-Frame-Options test reads).
pub(crate) struct CspOutcome {
    pub(crate) verdict: Verdict,
    pub(crate) frame_ancestors_set: bool,
}

fn outcome(result: Expectation) -> CspOutcome {
    CspOutcome {
        verdict: (result, false),
        frame_ancestors_set: false,
    }
}

/// Policies from header values: a comma separates policies.
fn split_policies(values: &[String]) -> Vec<String> {
    values
        .iter()
        .flat_map(|v| v.split(',').map(|p| p.trim().to_owned()))
        .collect()
}

fn has_nonce_or_hash(sources: &BTreeSet<String>) -> bool {
    sources
        .iter()
        .any(|s| NONCES_HASHES.iter().any(|n| s.starts_with(n)))
}

/// Which stored directive a fetch directive falls back to, if any.
fn effective<'a>(policy: &Policy, directive: &'a str) -> Option<&'a str> {
    if policy.contains_key(directive) {
        Some(directive)
    } else if policy.contains_key("default-src") {
        Some("default-src")
    } else {
        None
    }
}

/// The stored set `key` names, or `own` (a directive neither set nor defaulted).
fn slot<'a>(
    policy: &'a mut Policy,
    key: Option<&str>,
    own: &'a mut BTreeSet<String>,
) -> &'a mut BTreeSet<String> {
    match key {
        Some(k) => policy.entry(k.to_owned()).or_default(),
        None => own,
    }
}

pub(crate) fn test(input: &Input<'_>) -> CspOutcome {
    let response = &input.auto.response;
    let http = split_policies(
        &header(response, "content-security-policy")
            .into_iter()
            .collect::<Vec<_>>(),
    );
    let meta = split_policies(&input.equiv.csp);
    let mut all = http.clone();
    all.extend(meta.iter().cloned());
    let Ok(Parsed {
        mut policy,
        duplicates,
    }) = parse(&all)
    else {
        return outcome(CspHeaderInvalid);
    };
    let header_only = parse(&http).map(|p| p.policy).unwrap_or_default();
    let meta_only = parse_meta(&meta).map(|p| p.policy).unwrap_or_default();
    if header_only.len() + meta_only.len() == 0 {
        let report_only =
            header(response, "content-security-policy-report-only").is_some_and(|v| !v.is_empty());
        return outcome(if report_only {
            CspNotImplementedButReportingEnabled
        } else {
            CspNotImplemented
        });
    }
    let star = || -> BTreeSet<String> { ["*".to_owned()].into() };
    let object_src = effective(&policy, "object-src")
        .map(|k| policy[k].clone())
        .unwrap_or_else(star);

    // script-src and style-src may share one stored set (default-src): a change to one
    // is a change to the other, as in Observatory.
    let script_key = effective(&policy, "script-src");
    let style_key = effective(&policy, "style-src");
    let mut own_script = star();
    let mut own_style = star();
    for (key, own) in [(script_key, &mut own_script), (style_key, &mut own_style)] {
        let set = slot(&mut policy, key, own);
        if has_nonce_or_hash(set) {
            set.remove("'unsafe-inline'");
        }
    }
    let mut result: Option<Expectation> = None;
    let script = slot(&mut policy, script_key, &mut own_script);
    if has_nonce_or_hash(script) && script.contains("'strict-dynamic'") {
        script.retain(|s| {
            !(BROAD.iter().any(|b| s.starts_with(b)) || s == "'self'" || s == "'unsafe-inline'")
        });
    } else if script.contains("'strict-dynamic'") {
        result = Some(CspHeaderInvalid);
    }
    let script_src = script_key.map_or(own_script, |k| policy[k].clone());
    let style_src = style_key.map_or(own_style, |k| policy[k].clone());

    let passive = ["img-src", "media-src"];
    let mut active: Vec<&String> = policy
        .iter()
        .filter(|(d, _)| !passive.contains(&d.as_str()) && d.as_str() != "script-src")
        .flat_map(|(_, s)| s.iter())
        .collect();
    active.extend(script_src.iter());
    let passive_sources: Vec<&String> = passive
        .iter()
        .flat_map(|d| effective(&policy, d).map(|k| &policy[k]))
        .flat_map(|s| s.iter())
        .collect();
    let https = input.auto.url.scheme() == "https";
    let insecure = |s: &&String| s.starts_with("http:") || s.starts_with("ftp:");
    let broad_or_inline =
        |s: &String| BROAD.contains(&s.as_str()) || UNSAFE_INLINE.contains(&s.as_str());

    let mut first = |e: Expectation| {
        result.get_or_insert(e);
    };
    if script_src.iter().any(broad_or_inline)
        || object_src.iter().any(|s| BROAD.contains(&s.as_str()))
    {
        first(CspImplementedWithUnsafeInline);
    }
    if https && active.iter().any(insecure) {
        first(CspImplementedWithInsecureScheme);
    }
    if script_src.contains("'unsafe-eval'") || style_src.contains("'unsafe-eval'") {
        first(CspImplementedWithUnsafeEval);
    }
    if https && passive_sources.iter().any(insecure) {
        first(CspImplementedWithInsecureSchemeInPassiveContentOnly);
    }
    if style_src.iter().any(broad_or_inline) {
        first(CspImplementedWithUnsafeInlineInStyleSrcOnly);
    }
    let default_none = policy
        .get("default-src")
        .is_some_and(|d| d.len() == 1 && d.contains("'none'"));
    first(if default_none {
        CspImplementedWithNoUnsafeDefaultSrcNone
    } else {
        CspImplementedWithNoUnsafe
    });
    let mut result = result.unwrap_or(CspImplementedWithNoUnsafe);
    let pass = matches!(
        result,
        CspImplementedWithNoUnsafe
            | CspImplementedWithNoUnsafeDefaultSrcNone
            | CspImplementedWithUnsafeInlineInStyleSrcOnly
            | CspImplementedWithInsecureSchemeInPassiveContentOnly
    );
    if pass && duplicates {
        result = CspImplementedButDuplicateDirectives;
    }
    CspOutcome {
        verdict: (result, pass),
        frame_ancestors_set: policy.contains_key("frame-ancestors"),
    }
}
