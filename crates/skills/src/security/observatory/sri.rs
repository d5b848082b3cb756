//! The Subresource Integrity test: scripts from other sites must be loaded over HTTPS
//! with an `integrity` hash; and the registrable domain ("same second-level domain")
//! it judges "other sites" by.

use std::net::IpAddr;

use reqwest::Url;

use super::expectation::{Expectation::*, only_if_worse};
use super::headers::{Mime, mime};
use super::{Input, Verdict, attr};

/// The registrable domain of a host (its public suffix, by the ICANN section of the
/// Public Suffix List, and one label more), as `tldts` gives it; `None` for an IP
/// address or a bare suffix.
pub(crate) fn registrable_domain(host: &str) -> Option<String> {
    let host = host.trim_end_matches('.').to_lowercase();
    if host.trim_matches(['[', ']']).parse::<IpAddr>().is_ok() || host.is_empty() {
        return None;
    }
    // The ICANN suffix: a private entry (github.io) is passed over for the ICANN one
    // beneath it (io), as tldts does by default.
    let mut rest = host.as_str();
    let suffix_len = loop {
        let suffix = psl::suffix(rest.as_bytes())?;
        if suffix.typ() != Some(psl::Type::Private) {
            break suffix.as_bytes().len();
        }
        let text = std::str::from_utf8(suffix.as_bytes()).ok()?;
        rest = text.split_once('.')?.1;
    };
    let head = host.get(..host.len().checked_sub(suffix_len + 1)?)?;
    let label = head.rsplit('.').next()?;
    Some(format!("{label}.{}", &host[host.len() - suffix_len..]))
}

pub(crate) fn test(input: &Input<'_>) -> Verdict {
    let order = [
        SriImplementedAndAllScriptsLoadedSecurely,
        SriImplementedAndExternalScriptsLoadedSecurely,
        SriImplementedButExternalScriptsNotLoadedSecurely,
        SriNotImplementedButExternalScriptsLoadedSecurely,
        SriNotImplementedAndExternalScriptsNotLoadedSecurely,
        SriNotImplementedResponseNotHtml,
    ];
    let result = if mime(&input.auto.response) == Mime::Other {
        SriNotImplementedResponseNotHtml
    } else {
        let Some(page) = input.page else {
            return (HtmlNotParseable, false);
        };
        let site_domain = registrable_domain(&input.retrieval.host);
        let https_page = input.auto.url.scheme() == "https";
        let mut result = None;
        let mut foreign = false;
        for script in &page.scripts {
            let Some(src) = attr(script, "src").filter(|s| !s.is_empty()) else {
                continue;
            };
            let integrity = attr(script, "integrity").is_some_and(|i| !i.is_empty());
            let protocol_relative =
                src.starts_with("//") && src.len() > 2 && !src[2..].starts_with('/');
            let full_url = src.starts_with("http://") || src.starts_with("https://");
            let relative = !protocol_relative && !full_url;
            let same_domain = protocol_relative
                || relative
                || Url::parse(src)
                    .ok()
                    .and_then(|u| u.host_str().map(registrable_domain))
                    == Some(site_domain.clone());
            let secure_origin = relative || (same_domain && !protocol_relative);
            foreign |= !secure_origin;
            let secure_scheme = (full_url && Url::parse(src).is_ok_and(|u| u.scheme() == "https"))
                || (relative && https_page);
            if !secure_origin {
                let found = match (integrity, secure_scheme) {
                    (true, false) => Some(SriImplementedButExternalScriptsNotLoadedSecurely),
                    (false, true) => Some(SriNotImplementedButExternalScriptsLoadedSecurely),
                    (false, false) => Some(SriNotImplementedAndExternalScriptsNotLoadedSecurely),
                    (true, true) => None,
                };
                if let Some(found) = found {
                    result = Some(only_if_worse(found, result, &order));
                }
            } else if integrity && secure_scheme && result.is_none() {
                // Credit even for hashes on the site's own scripts.
                result = Some(SriImplementedAndAllScriptsLoadedSecurely);
            }
        }
        if page.scripts.is_empty() {
            SriNotImplementedButNoScriptsLoaded
        } else {
            result.unwrap_or(if foreign {
                SriImplementedAndExternalScriptsLoadedSecurely
            } else {
                SriNotImplementedButAllScriptsLoadedFromSecureOrigin
            })
        }
    };
    let pass = matches!(
        result,
        SriImplementedAndAllScriptsLoadedSecurely
            | SriImplementedAndExternalScriptsLoadedSecurely
            | SriNotImplementedResponseNotHtml
            | SriNotImplementedButAllScriptsLoadedFromSecureOrigin
            | SriNotImplementedButNoScriptsLoaded
    );
    (result, pass)
}
