//! Observatory's own test cases (its `test/*.test.js`), one group per test, on a
//! retrieval like its `emptyRequests()`: https://mozilla.org/, reached from
//! http://mozilla.org/ through https://mozilla.org/ to https://www.mozilla.org/.

mod cookies_and_headers;
mod csp;
mod transport_and_score;

pub(super) use reqwest::Url;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

pub(super) use super::expectation::Expectation::{self, *};
use super::headers::Equiv;
pub(super) use super::*;

pub(super) fn response(url: &str, headers: &[(&str, &str)], body: &str) -> Response {
    let mut map = HeaderMap::new();
    map.append("content-type", HeaderValue::from_static("text/html"));
    for (name, value) in headers {
        if name.eq_ignore_ascii_case("content-type") {
            map.remove("content-type");
        }
        map.append(
            HeaderName::from_bytes(name.as_bytes()).unwrap(),
            HeaderValue::from_str(value).unwrap(),
        );
    }
    Response {
        url: Url::parse(url).unwrap(),
        status: 200,
        headers: map,
        body: body.as_bytes().to_vec(),
    }
}

pub(super) fn session(start: &str, route: &[&str], response: Response) -> Session {
    let set_cookies = response
        .headers_all("set-cookie")
        .into_iter()
        .map(|c| (response.url.clone(), c))
        .collect();
    Session {
        url: Url::parse(start).unwrap(),
        route: route.iter().map(|u| Url::parse(u).unwrap()).collect(),
        response,
        verified: true,
        set_cookies,
    }
}

/// A site answering with `headers` and `body` over both schemes.
pub(super) fn site(headers: &[(&str, &str)], body: &str) -> Retrieval {
    let https = response("https://mozilla.org/", headers, body);
    Retrieval {
        host: "mozilla.org".into(),
        http: Some(session(
            "http://mozilla.org/",
            &[
                "http://mozilla.org/",
                "https://mozilla.org/",
                "https://www.mozilla.org/",
            ],
            https.clone(),
        )),
        https: Some(session(
            "https://mozilla.org/",
            &["https://mozilla.org/", "https://www.mozilla.org/"],
            https,
        )),
        cors: Some(response("https://mozilla.org/", &[], "")),
    }
}

/// Runs `test` on `retrieval`, with its page parsed.
pub(super) fn run(retrieval: &Retrieval, test: fn(&Input<'_>) -> Verdict) -> Verdict {
    run_with(retrieval, &PreloadList::default(), test)
}

pub(super) fn run_with(
    retrieval: &Retrieval,
    preload: &PreloadList,
    test: fn(&Input<'_>) -> Verdict,
) -> Verdict {
    let auto = retrieval.auto().unwrap();
    let html = scraper::Html::parse_document(&auto.response.text());
    let page = Page::parse(&html);
    let input = Input {
        retrieval,
        auto,
        page: Some(&page),
        equiv: Equiv::of(&auto.response, Some(&page)),
        preload,
    };
    test(&input)
}

/// A site answering with one header, through one test.
pub(super) fn header_test(name: &str, value: &str, test: fn(&Input<'_>) -> Verdict) -> Verdict {
    run(&site(&[(name, value)], ""), test)
}
