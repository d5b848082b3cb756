//! What the pages contain: mixed content and Subresource Integrity on HTTPS pages,
//! links that open another site in a new window with a handle on this one, stack
//! traces in error pages.

use std::collections::BTreeSet;

use fundi_runtime::cpu::Budget;
use reqwest::{Method, Url};
use scraper::Selector;

use crate::markup::{self, MarkupLimits};

use crate::security::catalogue::found;
use crate::security::finding::Finding;
use crate::security::http::{Fetcher, Response};

/// Text that only stack traces and framework error pages contain.
const STACK_TRACE_MARKERS: &[&str] = &[
    "Traceback (most recent call last)",
    "Exception in thread \"",
    "\n\tat java.",
    "\tat org.springframework.",
    "at System.Web.",
    "Server Error in '/' Application",
    "Fatal error: Uncaught",
    "PHP Fatal error",
    "Stack trace:\n#0 ",
    "at Object.<anonymous>",
    "    at Module._compile",
    "ActionController::RoutingError",
    "Werkzeug Debugger",
    "django.core.exceptions",
    "panicked at ",
];

/// Checks one page; its HTML is parsed within `MarkupLimits::DEFAULT` and `budget` (a
/// page over them, or a budget that runs out, is not checked for mixed content).
pub(crate) fn check_page(response: &Response, findings: &mut Vec<Finding>, budget: &Budget) {
    if response.is_html() {
        let text = response.text();
        if markup::check(&text, MarkupLimits::DEFAULT).is_err() {
            tracing::info!(url = %response.url, "page too large to check its markup");
        } else if let Ok(html) = markup::parse(&text, budget) {
            if response.url.scheme() == "https" {
                mixed_content_and_sri(response, &html, findings);
            }
            new_window_links(response, &html, findings);
        }
    }
    stack_trace(response, findings);
}

/// Links to another origin opened in a new window (`target=_blank`) without
/// `noopener` or `noreferrer`: the opened page gets `window.opener` in browsers that do
/// not imply `noopener` (reverse tabnabbing).
fn new_window_links(response: &Response, html: &scraper::Html, findings: &mut Vec<Finding>) {
    let Ok(selector) = Selector::parse("a[href][target], area[href][target]") else {
        return;
    };
    let mut seen = BTreeSet::new();
    for element in html.select(&selector) {
        let attrs = element.value();
        if !attrs
            .attr("target")
            .is_some_and(|t| t.eq_ignore_ascii_case("_blank"))
        {
            continue;
        }
        let guarded = attrs.attr("rel").is_some_and(|rel| {
            rel.split_ascii_whitespace()
                .any(|r| r.eq_ignore_ascii_case("noopener") || r.eq_ignore_ascii_case("noreferrer"))
        });
        let Some(link) = attrs.attr("href").and_then(|h| response.url.join(h).ok()) else {
            continue;
        };
        let elsewhere =
            link.origin() != response.url.origin() && matches!(link.scheme(), "http" | "https");
        if !guarded && elsewhere && seen.insert(link.to_string()) {
            findings.push(found(
                "target-blank-no-noopener",
                "a link opens another site in a new window that can reach back to this page",
                element.html(),
                response.url.as_str(),
                link.to_string(),
            ));
        }
    }
}

fn mixed_content_and_sri(response: &Response, html: &scraper::Html, findings: &mut Vec<Finding>) {
    let url = response.url.as_str();
    let page_origin = response.url.origin();
    let mut seen = BTreeSet::new();
    let elements = [
        ("script[src]", "src", true),
        ("link[rel~=stylesheet][href]", "href", true),
        ("iframe[src]", "src", true),
        ("img[src]", "src", false),
        ("audio[src], video[src], source[src]", "src", false),
    ];
    for (selector, attribute, active) in elements {
        let Ok(selector) = Selector::parse(selector) else {
            continue;
        };
        for element in html.select(&selector) {
            let Some(value) = element.value().attr(attribute) else {
                continue;
            };
            let Ok(resource) = response.url.join(value) else {
                continue;
            };
            if resource.scheme() == "http" && seen.insert(resource.to_string()) {
                let id = if active {
                    "mixed-content-active"
                } else {
                    "mixed-content-passive"
                };
                findings.push(found(
                    id,
                    format!(
                        "an HTTPS page loads <{}> over plain HTTP",
                        element.value().name()
                    ),
                    element.html(),
                    url,
                    resource.to_string(),
                ));
            }
            let cross_origin_script = element.value().name() == "script"
                && resource.origin() != page_origin
                && matches!(resource.scheme(), "http" | "https");
            if cross_origin_script && element.value().attr("integrity").is_none() {
                findings.push(found(
                    "sri-missing",
                    "a script from another origin has no integrity attribute",
                    element.html(),
                    url,
                    resource.to_string(),
                ));
            }
        }
    }
}

fn stack_trace(response: &Response, findings: &mut Vec<Finding>) {
    let text = response.text();
    if let Some(marker) = STACK_TRACE_MARKERS.iter().find(|m| text.contains(**m)) {
        let at = text.find(marker).unwrap_or(0);
        let start = text[..at]
            .char_indices()
            .rev()
            .nth(40)
            .map_or(0, |(i, _)| i);
        let excerpt: String = text[start..].chars().take(200).collect();
        findings.push(found(
            "stack-trace-disclosure",
            format!(
                "the response (HTTP {}) shows a stack trace",
                response.status
            ),
            excerpt,
            response.url.as_str(),
            response.url.path(),
        ));
    }
}

/// Asks for a page that does not exist: error pages are where stack traces show.
pub(crate) async fn error_page(fetcher: &Fetcher, base: &Url, findings: &mut Vec<Finding>) {
    let Ok(missing) = base.join(&format!("/fundi-scan-missing-{}", uuid_like())) else {
        return;
    };
    if let Ok(response) = fetcher.request(Method::GET, &missing, &[]).await {
        stack_trace(&response, findings);
    }
}

fn uuid_like() -> String {
    format!("{:x}", rand_u64())
}

fn rand_u64() -> u64 {
    use std::hash::{BuildHasher, RandomState};
    RandomState::new().hash_one(std::time::SystemTime::now())
}
