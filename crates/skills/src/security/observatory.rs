//! The HTTP Observatory's score and grade, computed by its published method (algorithm
//! version 6): the same twelve tests on the same retrieval, the same score modifiers,
//! extra credit only from an uncurved 90, the same grade bands. What fundi itself thinks
//! of a site is its own grade (`risk`); this one is the number users already know.
//!
//! The analysis is pure: [`analyze`] takes what [`retrieve`] fetched.

mod cookies;
mod csp;
mod expectation;
pub(crate) mod headers;
mod preload;
mod retrieve;
mod sri;
mod transport;

use reqwest::Url;
use serde::Serialize;

use super::finding::grade;
use super::http::Response;

pub(crate) use expectation::Expectation;
pub(crate) use preload::PreloadList;
pub(crate) use retrieve::{Ports, Retrieved, retrieve};

/// The Origin header of the CORS preflight (Observatory's default `corsOrigin`).
pub(crate) const CORS_ORIGIN: &str = "https://http-observatory.security.mozilla.org";

/// One client session: a GET of the start URL, following redirects by itself.
#[derive(Debug, Clone)]
pub(crate) struct Session {
    /// Where the session started.
    pub(crate) url: Url,
    /// The URL of every response of the chain, the first included.
    pub(crate) route: Vec<Url>,
    /// The last response of the chain.
    pub(crate) response: Response,
    /// Whether every certificate on the way was valid (else the chain was fetched again
    /// without verification).
    pub(crate) verified: bool,
    /// The `Set-Cookie` values the session's cookie jar was offered, each with the URL
    /// that set it.
    pub(crate) set_cookies: Vec<(Url, String)>,
}

/// What Observatory's retriever gathers about a site.
#[derive(Debug, Clone)]
pub(crate) struct Retrieval {
    /// The site's host name.
    pub(crate) host: String,
    pub(crate) http: Option<Session>,
    pub(crate) https: Option<Session>,
    /// The answer to the CORS preflight (an OPTIONS with `Origin: CORS_ORIGIN`).
    pub(crate) cors: Option<Response>,
}

impl Retrieval {
    /// The session the tests read: HTTPS when it answered, else HTTP.
    pub(crate) fn auto(&self) -> Option<&Session> {
        self.https.as_ref().or(self.http.as_ref())
    }
}

/// One test's outcome.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TestOutcome {
    pub(crate) name: &'static str,
    pub(crate) result: &'static str,
    pub(crate) pass: bool,
    pub(crate) score_modifier: i32,
}

/// The whole grade.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Outcome {
    pub(crate) algorithm_version: u32,
    pub(crate) score: i32,
    pub(crate) grade: &'static str,
    pub(crate) tests_passed: usize,
    pub(crate) tests_failed: usize,
    pub(crate) status_code: u16,
    pub(crate) tests: Vec<TestOutcome>,
}

/// Why no grade could be given (Observatory's scan errors).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum NoGrade {
    #[error("The site seems to be down.")]
    Down,
    #[error("Site did respond with an unexpected HTTP status code {0}.")]
    Status(u16),
}

/// A test's result and whether it passed.
pub(crate) type Verdict = (Expectation, bool);

/// The parsed page, when the site's answer is HTML: the `<meta>` and `<script>`
/// attributes the tests read. `None` when it could not be parsed.
#[derive(Debug, Clone, Default)]
pub(crate) struct Page {
    pub(crate) metas: Vec<Vec<(String, String)>>,
    pub(crate) scripts: Vec<Vec<(String, String)>>,
}

impl Page {
    /// The `<meta>` and `<script>` tags of `html`, with their attributes (names in
    /// lower case, entities decoded), in document order.
    pub(crate) fn parse(html: &scraper::Html) -> Page {
        let collect = |tag: &str| -> Vec<Vec<(String, String)>> {
            let Ok(selector) = scraper::Selector::parse(tag) else {
                return Vec::new();
            };
            html.select(&selector)
                .map(|e| {
                    e.value()
                        .attrs()
                        .map(|(k, v)| (k.to_ascii_lowercase(), v.to_owned()))
                        .collect()
                })
                .collect()
        };
        Page {
            metas: collect("meta"),
            scripts: collect("script"),
        }
    }
}

/// An attribute of a collected tag.
pub(crate) fn attr<'a>(tag: &'a [(String, String)], name: &str) -> Option<&'a str> {
    tag.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
}

/// Everything the tests read, gathered once.
pub(crate) struct Input<'a> {
    pub(crate) retrieval: &'a Retrieval,
    pub(crate) auto: &'a Session,
    /// `None` when the page is HTML but could not be parsed.
    pub(crate) page: Option<&'a Page>,
    /// `<meta http-equiv>` CSP values and the `<meta name=referrer>` policy.
    pub(crate) equiv: headers::Equiv,
    pub(crate) preload: &'a PreloadList,
}

/// Scores `retrieval` as Observatory does; `page` is the auto response's parsed HTML
/// (`None` when it is HTML and could not be parsed).
pub(crate) fn analyze(
    retrieval: &Retrieval,
    page: Option<&Page>,
    preload: &PreloadList,
) -> Result<Outcome, NoGrade> {
    let auto = retrieval.auto().ok_or(NoGrade::Down)?;
    let status = auto.response.status;
    if !(200..400).contains(&status) && status != 401 && status != 403 {
        return Err(NoGrade::Status(status));
    }
    let equiv = headers::Equiv::of(&auto.response, page);
    let input = Input {
        retrieval,
        auto,
        page,
        equiv,
        preload,
    };
    let verdicts: [(&'static str, Verdict); 12] = [
        ("content-security-policy", csp::test(&input).verdict),
        ("cookies", cookies::test(&input)),
        ("cross-origin-embedder-policy", headers::coep(&input)),
        ("cross-origin-opener-policy", headers::coop(&input)),
        ("cross-origin-resource-sharing", headers::cors(&input)),
        ("redirection", transport::redirection(&input)),
        ("referrer-policy", headers::referrer(&input)),
        ("strict-transport-security", transport::hsts(&input)),
        ("subresource-integrity", sri::test(&input)),
        ("x-content-type-options", headers::xcto(&input)),
        ("x-frame-options", headers::xfo(&input)),
        ("cross-origin-resource-policy", headers::corp(&input)),
    ];
    Ok(score(status, &verdicts))
}

/// The score: 100 plus every modifier, extra credit (positive modifiers) counting only
/// when the score with the penalties alone is at least 90; bands of 5.
fn score(status: u16, verdicts: &[(&'static str, Verdict)]) -> Outcome {
    let mut with_extra_credit = 100;
    let mut uncurved = 100;
    let mut passed = 0;
    let tests: Vec<TestOutcome> = verdicts
        .iter()
        .map(|(name, (result, pass))| {
            let modifier = result.modifier();
            with_extra_credit += modifier;
            if modifier < 0 {
                uncurved += modifier;
            }
            passed += usize::from(*pass);
            TestOutcome {
                name,
                result: result.id(),
                pass: *pass,
                score_modifier: modifier,
            }
        })
        .collect();
    let score = if uncurved >= 90 {
        with_extra_credit
    } else {
        uncurved
    }
    .max(0);
    Outcome {
        algorithm_version: 6,
        score,
        grade: grade(score),
        tests_passed: passed,
        tests_failed: verdicts.len() - passed,
        status_code: status,
        tests,
    }
}

#[cfg(test)]
mod tests;
