//! HSTS, redirection, SRI, X-Content-Type-Options, X-Frame-Options, and the score.

use super::*;

#[test]
fn strict_transport_security() {
    let hsts = |v| header_test("strict-transport-security", v, transport::hsts);
    assert_eq!(
        run(&site(&[], ""), transport::hsts),
        (HstsNotImplemented, false)
    );
    assert_eq!(
        hsts("max-age=15552000"),
        (HstsImplementedMaxAgeAtLeastSixMonths, true)
    );
    assert_eq!(
        hsts("max-age=31536000; includeSubDomains; preload"),
        (HstsImplementedMaxAgeAtLeastSixMonths, true)
    );
    assert_eq!(
        hsts("max-age=15551999"),
        (HstsImplementedMaxAgeLessThanSixMonths, false)
    );
    assert_eq!(hsts("includeSubDomains"), (HstsHeaderInvalid, false));
    assert_eq!(
        hsts("max-age=31536000, max-age=31536000"),
        (HstsHeaderInvalid, false)
    );
    // Observatory's comparison lets a max-age that is not a number through.
    assert_eq!(
        hsts("max-age=soon"),
        (HstsImplementedMaxAgeAtLeastSixMonths, true)
    );
    let mut no_https = site(&[], "");
    no_https.https = None;
    assert_eq!(
        run(&no_https, transport::hsts),
        (HstsNotImplementedNoHttps, false)
    );
    let mut bad_cert = site(&[("strict-transport-security", "max-age=31536000")], "");
    bad_cert.https.as_mut().unwrap().verified = false;
    assert_eq!(run(&bad_cert, transport::hsts), (HstsInvalidCert, false));
    let preload = PreloadList::parse(
        "// comment\n{\"entries\": [{\"name\": \"mozilla.org\", \"mode\": \"force-https\", \"include_subdomains\": true}]}",
    )
    .unwrap();
    assert!(preload.covers("www.mozilla.org") && !preload.covers("example.org"));
    assert_eq!(
        run_with(&site(&[], ""), &preload, transport::hsts),
        (HstsPreloaded, true)
    );
    assert_eq!(
        run_with(&site(&[], ""), &preload, transport::redirection),
        (RedirectionAllRedirectsPreloaded, true)
    );
}

fn redirect(route: &[&str]) -> Verdict {
    let mut retrieval = site(&[], "");
    retrieval.http.as_mut().unwrap().route = route.iter().map(|u| Url::parse(u).unwrap()).collect();
    run(&retrieval, transport::redirection)
}

#[test]
fn redirection() {
    assert_eq!(
        redirect(&[
            "http://mozilla.org/",
            "https://mozilla.org/",
            "https://www.mozilla.org/"
        ]),
        (RedirectionToHttps, true)
    );
    assert_eq!(
        redirect(&["http://mozilla.org/"]),
        (RedirectionMissing, false)
    );
    assert_eq!(
        redirect(&["http://mozilla.org/", "http://www.mozilla.org/"]),
        (RedirectionNotToHttps, false)
    );
    assert_eq!(
        redirect(&[
            "http://mozilla.org/",
            "http://www.mozilla.org/",
            "https://www.mozilla.org/"
        ]),
        (RedirectionNotToHttpsOnInitialRedirection, false)
    );
    assert_eq!(
        redirect(&["http://mozilla.org/", "https://www.mozilla.org/"]),
        (RedirectionOffHostFromHttp, false)
    );
    let mut no_http = site(&[], "");
    no_http.http = None;
    assert_eq!(
        run(&no_http, transport::redirection),
        (RedirectionNotNeededNoHttp, true)
    );
    let mut bad_cert = site(&[], "");
    bad_cert.http.as_mut().unwrap().verified = false;
    assert_eq!(
        run(&bad_cert, transport::redirection),
        (RedirectionInvalidCert, false)
    );
}

fn scripts(body: &str) -> Verdict {
    run(&site(&[], body), sri::test)
}

#[test]
fn subresource_integrity() {
    assert_eq!(
        scripts("<p>no scripts</p>"),
        (SriNotImplementedButNoScriptsLoaded, true)
    );
    assert_eq!(
        run(
            &site(&[("content-type", "application/json")], "{}"),
            sri::test
        ),
        (SriNotImplementedResponseNotHtml, true)
    );
    assert_eq!(
        scripts("<script src=\"/a.js\"></script>"),
        (SriNotImplementedButAllScriptsLoadedFromSecureOrigin, true)
    );
    assert_eq!(
        scripts("<script src=\"https://cdn.mozilla.org/a.js\"></script>"),
        (SriNotImplementedButAllScriptsLoadedFromSecureOrigin, true)
    );
    assert_eq!(
        scripts("<script src=\"/a.js\" integrity=\"sha384-x\"></script>"),
        (SriImplementedAndAllScriptsLoadedSecurely, true)
    );
    assert_eq!(
        scripts(
            "<script src=\"https://example.com/a.js\" integrity=\"sha384-x\" crossorigin=\"anonymous\"></script>"
        ),
        (SriImplementedAndExternalScriptsLoadedSecurely, true)
    );
    assert_eq!(
        scripts("<script src=\"https://example.com/a.js\"></script>"),
        (SriNotImplementedButExternalScriptsLoadedSecurely, false)
    );
    assert_eq!(
        scripts("<script src=\"http://example.com/a.js\" integrity=\"sha384-x\"></script>"),
        (SriImplementedButExternalScriptsNotLoadedSecurely, false)
    );
    assert_eq!(
        scripts("<script src=\"//example.com/a.js\"></script>"),
        (SriNotImplementedAndExternalScriptsNotLoadedSecurely, false)
    );
    assert_eq!(
        scripts(
            "<script src=\"http://example.com/a.js\"></script><script src=\"https://example.com/b.js\" integrity=\"sha384-x\"></script>"
        ),
        (SriNotImplementedAndExternalScriptsNotLoadedSecurely, false)
    );
}

#[test]
fn registrable_domains_follow_the_icann_section() {
    assert_eq!(
        sri::registrable_domain("www.mozilla.org").as_deref(),
        Some("mozilla.org")
    );
    assert_eq!(
        sri::registrable_domain("a.b.example.co.uk").as_deref(),
        Some("example.co.uk")
    );
    assert_eq!(
        sri::registrable_domain("foo.github.io").as_deref(),
        Some("github.io")
    );
    assert_eq!(sri::registrable_domain("127.0.0.1"), None);
    assert_eq!(sri::registrable_domain("localhost"), None);
    assert_eq!(sri::registrable_domain("org"), None);
}

#[test]
fn content_type_options_and_frame_options() {
    let xcto = |v| header_test("x-content-type-options", v, headers::xcto);
    assert_eq!(
        run(&site(&[], ""), headers::xcto),
        (XContentTypeOptionsNotImplemented, false)
    );
    assert_eq!(xcto(" NoSniff "), (XContentTypeOptionsNosniff, true));
    assert_eq!(
        xcto("nosniff, nosniff"),
        (XContentTypeOptionsHeaderInvalid, false)
    );
    let xfo = |v| header_test("x-frame-options", v, headers::xfo);
    assert_eq!(
        run(&site(&[], ""), headers::xfo),
        (XFrameOptionsNotImplemented, false)
    );
    assert_eq!(xfo("DENY"), (XFrameOptionsSameoriginOrDeny, true));
    assert_eq!(xfo("sameorigin"), (XFrameOptionsSameoriginOrDeny, true));
    assert_eq!(
        xfo("allow-from https://mozilla.org"),
        (XFrameOptionsAllowFromOrigin, true)
    );
    assert_eq!(xfo("whimsy"), (XFrameOptionsHeaderInvalid, false));
    let via_csp = site(
        &[
            ("x-frame-options", "whimsy"),
            (
                "content-security-policy",
                "default-src 'none'; frame-ancestors 'none'",
            ),
        ],
        "",
    );
    assert_eq!(
        run(&via_csp, headers::xfo),
        (XFrameOptionsImplementedViaCsp, true)
    );
}

#[test]
fn the_score_counts_extra_credit_only_from_an_uncurved_90() {
    assert_eq!(
        [
            0, 4, 5, 24, 25, 44, 45, 59, 60, 64, 65, 80, 84, 85, 89, 90, 99, 100, 135
        ]
        .map(grade),
        [
            "F", "F", "F", "F", "D-", "D+", "C-", "C", "C+", "C+", "B-", "B+", "B+", "A-", "A-",
            "A", "A", "A+", "A+"
        ]
    );
    let bare = analyze(
        &site(&[], ""),
        Some(&Page::default()),
        &PreloadList::default(),
    )
    .unwrap();
    // csp -25, hsts -20, xfo -20, xcto -5: 70 off, no extra credit.
    assert_eq!((bare.score, bare.grade), (30, "D"));
    // An HTML page that could not be parsed costs SRI's 20 more.
    let unparsed = analyze(&site(&[], ""), None, &PreloadList::default()).unwrap();
    assert_eq!((unparsed.score, unparsed.grade), (10, "F"));
    assert_eq!(bare.tests.len(), 12);
    let good = site(
        &[
            (
                "content-security-policy",
                "default-src 'none'; frame-ancestors 'none'",
            ),
            ("strict-transport-security", "max-age=63072000"),
            ("x-content-type-options", "nosniff"),
            ("referrer-policy", "no-referrer"),
            ("cross-origin-opener-policy", "same-origin"),
        ],
        "<p>hello</p>",
    );
    let html = scraper::Html::parse_document("<p>hello</p>");
    let page = Page::parse(&html);
    let outcome = analyze(&good, Some(&page), &PreloadList::default()).unwrap();
    // csp +10, xfo via csp +5, referrer +5, coop +10.
    assert_eq!(
        (outcome.score, outcome.grade, outcome.tests_passed),
        (130, "A+", 12)
    );
    // Without HSTS (-20) the score is 80 before extra credit, so the +15 of CSP,
    // frame-ancestors and Referrer-Policy does not count.
    let no_hsts = site(
        &[
            (
                "content-security-policy",
                "default-src 'none'; frame-ancestors 'none'",
            ),
            ("x-content-type-options", "nosniff"),
            ("referrer-policy", "no-referrer"),
        ],
        "<p>hello</p>",
    );
    let outcome = analyze(&no_hsts, Some(&page), &PreloadList::default()).unwrap();
    assert_eq!((outcome.score, outcome.grade), (80, "B+"));
    let mut down = site(&[], "");
    down.http = None;
    down.https = None;
    assert_eq!(
        analyze(&down, None, &PreloadList::default()),
        Err(NoGrade::Down)
    );
    let mut broken = site(&[], "");
    broken.https.as_mut().unwrap().response.status = 500;
    assert_eq!(
        analyze(&broken, None, &PreloadList::default()),
        Err(NoGrade::Status(500))
    );
}
