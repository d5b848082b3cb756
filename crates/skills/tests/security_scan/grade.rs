//! The grades: a well-configured site's A+, and the HTTP Observatory's grade by its published method, on single sites and a corpus.

use super::support::*;

#[tokio::test]
async fn a_well_configured_https_site_gets_an_a_plus() {
    let pki = Pki::new();
    let (url, scanner) = well_configured_https_site(&pki, GOOD_PAGE.into()).await;
    let task = scanner.scan(json!({"url": url})).await;
    assert_eq!(task.status.state, TaskState::Completed, "{}", reply(&task));
    let report = report(&task);
    assert_eq!(ids(&task), BTreeSet::new(), "{report}");
    assert_eq!(report["grade"], "A+", "{report}");
    assert!(report["score"].as_i64().unwrap() >= 100);
    let bonuses: Vec<&str> = report["bonuses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["id"].as_str().unwrap())
        .collect();
    assert!(
        bonuses.contains(&"hsts-preloaded") && bonuses.contains(&"csp-strict"),
        "{bonuses:?}"
    );
    assert!(reply(&task).contains("grade A+"), "{}", reply(&task));
}

/// The scan's `observatory` grade, by Observatory's method, on sites served here: a
/// site that redirects HTTP to HTTPS and sets the recommended headers, and a plain HTTP
/// site with some of them, whose HTTPS side is not an allowed origin.
#[tokio::test]
async fn the_observatory_grade_follows_observatorys_method() {
    let pki = Pki::new();
    let https = https_site(
        Site {
            headers: good_headers(),
            body: GOOD_PAGE.into(),
            ..Site::default()
        },
        pki.leaf(&["127.0.0.1"], false),
    )
    .await;
    let http = redirecting_site(&https).await;
    let http_port = reqwest::Url::parse(&http).unwrap().port().unwrap();
    let mut config = SecurityConfig::default();
    config.extra_ca_files = vec![pki.ca_file.path().to_path_buf()];
    let redirected = scanner(&[&https, &http], config).await;
    let task = redirected
        .scan(json!({"url": https, "observatory": {"httpPort": http_port}}))
        .await;
    assert_eq!(task.status.state, TaskState::Completed, "{}", reply(&task));
    let grade = &report(&task)["observatory"];
    let results: BTreeMap<&str, (&str, i64)> = grade["tests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap(),
                (
                    t["result"].as_str().unwrap(),
                    t["scoreModifier"].as_i64().unwrap(),
                ),
            )
        })
        .collect();
    let expected: BTreeMap<&str, (&str, i64)> = [
        (
            "content-security-policy",
            ("csp-implemented-with-no-unsafe", 5),
        ),
        (
            "cookies",
            ("cookies-secure-with-httponly-sessions-and-samesite", 5),
        ),
        ("cross-origin-embedder-policy", ("coep-not-implemented", 0)),
        ("cross-origin-opener-policy", ("coop-not-implemented", 0)),
        ("cross-origin-resource-policy", ("corp-not-implemented", 0)),
        (
            "cross-origin-resource-sharing",
            ("cross-origin-resource-sharing-not-implemented", 0),
        ),
        ("redirection", ("redirection-to-https", 0)),
        ("referrer-policy", ("referrer-policy-private", 5)),
        (
            "strict-transport-security",
            ("hsts-implemented-max-age-at-least-six-months", 0),
        ),
        (
            "subresource-integrity",
            (
                "sri-not-implemented-but-all-scripts-loaded-from-secure-origin",
                0,
            ),
        ),
        (
            "x-content-type-options",
            ("x-content-type-options-nosniff", 0),
        ),
        (
            "x-frame-options",
            ("x-frame-options-implemented-via-csp", 5),
        ),
    ]
    .into();
    assert_eq!(results, expected, "{grade}");
    assert_eq!(
        (grade["score"].as_i64(), grade["grade"].as_str()),
        (Some(120), Some("A+"))
    );
    assert_eq!(
        (grade["testsPassed"].as_u64(), grade["exact"].as_bool()),
        (Some(12), Some(true)),
        "{grade}"
    );
    assert_eq!(report(&task)["risk"]["grade"], report(&task)["grade"]);
    assert!(
        reply(&task).contains("Observatory grade A+ (120)."),
        "{}",
        reply(&task)
    );

    // Plain HTTP, no redirect, a cookie without Secure; CSP, nosniff and DENY set.
    let plain = http_site(Site {
        headers: vec![
            ("content-security-policy", "default-src 'self'".into()),
            ("x-content-type-options", "nosniff".into()),
            ("x-frame-options", "DENY".into()),
            ("set-cookie", "pref=1; SameSite=Lax".into()),
        ],
        body: "<!doctype html><script src=\"/a.js\"></script>".into(),
        ..Site::default()
    })
    .await;
    let plain_scanner = scanner(&[&plain], SecurityConfig::default()).await;
    let task = plain_scanner.scan(json!({"url": plain})).await;
    assert_eq!(task.status.state, TaskState::Completed, "{}", reply(&task));
    let grade = &report(&task)["observatory"];
    // +5 CSP, +5 DENY; -20 cookie, -20 no redirect, -20 no HTTPS: 40 without the
    // extra credit, which only an uncurved 90 earns.
    assert_eq!(
        (grade["score"].as_i64(), grade["grade"].as_str()),
        (Some(40), Some("D+")),
        "{grade}"
    );
    assert_eq!(grade["testsPassed"], 9, "{grade}");
    assert_eq!(grade["exact"], false);
    let not_exact = grade["notExact"].to_string();
    assert!(
        not_exact.contains("https://127.0.0.1/: not an allowed origin"),
        "{not_exact}"
    );
    assert!(
        reply(&task).contains("Observatory grade D+ (40), not exact"),
        "{}",
        reply(&task)
    );

    // Bad input names the field.
    let refused = plain_scanner
        .scan(json!({"url": plain, "observatory": {"httpsPort": 70000}}))
        .await;
    assert_eq!(refused.status.state, TaskState::Rejected);
    assert!(
        reply(&refused).contains("data.observatory.httpsPort must be a port"),
        "{}",
        reply(&refused)
    );
}

/// A corpus of sites, each with the score Observatory's method gives it, worked out by
/// hand beside it. The base is `good_headers()`: CSP without unsafe sources (+5), the
/// __Host- cookie (+5), a private Referrer-Policy (+5), frame-ancestors (+5), HSTS,
/// nosniff and the redirect to HTTPS (0): 120.
#[tokio::test]
async fn a_corpus_of_sites_gets_observatorys_scores() {
    let pki = Pki::new();
    let good = good_headers;
    let cases: Vec<(&str, Site, i64, &str)> = vec![
        (
            "every cross-origin policy: +10 each on top of 120",
            Site {
                headers: [
                    good(),
                    vec![
                        ("cross-origin-opener-policy", "same-origin".into()),
                        (
                            "cross-origin-embedder-policy",
                            "require-corp; report-to=\"e\"".into(),
                        ),
                        ("cross-origin-resource-policy", "same-origin".into()),
                    ],
                ]
                .concat(),
                body: GOOD_PAGE.into(),
                ..Site::default()
            },
            150,
            "A+",
        ),
        (
            "'unsafe-inline' scripts (-20) and so no frame-ancestors (-20): 60, no extra credit",
            Site {
                headers: with(
                    good(),
                    "content-security-policy",
                    Some("default-src 'self' 'unsafe-inline'"),
                ),
                body: GOOD_PAGE.into(),
                ..Site::default()
            },
            60,
            "C+",
        ),
        (
            "CORS echoing any origin with credentials: -50",
            Site {
                headers: good(),
                body: GOOD_PAGE.into(),
                reflect_origin: true,
                credentials: true,
                ..Site::default()
            },
            50,
            "C",
        ),
        (
            "HSTS for five minutes: -10, 90 uncurved, so the +20 counts",
            Site {
                headers: with(good(), "strict-transport-security", Some("max-age=300")),
                body: GOOD_PAGE.into(),
                ..Site::default()
            },
            110,
            "A+",
        ),
        (
            "a session cookie without HttpOnly: -30 (and no SameSite bonus)",
            Site {
                headers: with(good(), "set-cookie", Some("sessionid=1; Secure; Path=/")),
                body: GOOD_PAGE.into(),
                ..Site::default()
            },
            70,
            "B",
        ),
        (
            "another site's script over plain HTTP without integrity: -50",
            Site {
                headers: good(),
                body: "<!doctype html><script src=\"http://cdn.example.net/x.js\"></script>".into(),
                ..Site::default()
            },
            50,
            "C",
        ),
        (
            "another site's script over HTTPS with integrity: +5 more",
            Site {
                headers: good(),
                body: "<!doctype html><script src=\"https://cdn.example.net/x.js\" \
                       integrity=\"sha384-abc\" crossorigin=\"anonymous\"></script>"
                    .into(),
                ..Site::default()
            },
            125,
            "A+",
        ),
        (
            "Referrer-Policy unsafe-url: -5, 95 uncurved, +15 still counts",
            Site {
                headers: with(good(), "referrer-policy", Some("unsafe-url")),
                body: GOOD_PAGE.into(),
                ..Site::default()
            },
            110,
            "A+",
        ),
        (
            "a CSP in a meta tag (+5) and XFO DENY (+5) instead of headers",
            Site {
                headers: [
                    with(good(), "content-security-policy", None),
                    vec![("x-frame-options", "DENY".into())],
                ]
                .concat(),
                body: "<!doctype html><head><meta http-equiv=\"Content-Security-Policy\" \
                       content=\"default-src 'self'\"></head><body>ok</body>"
                    .into(),
                ..Site::default()
            },
            120,
            "A+",
        ),
        (
            "nothing but the redirect: CSP -25, HSTS -20, XFO -20, nosniff -5",
            Site {
                body: "<p>hello</p>".into(),
                ..Site::default()
            },
            30,
            "D",
        ),
    ];
    for (what, site, score, grade) in cases {
        let outcome = observatory_of(&pki, site).await;
        assert_eq!(
            (
                outcome["score"].as_i64(),
                outcome["grade"].as_str(),
                outcome["exact"].as_bool()
            ),
            (Some(score), Some(grade), Some(true)),
            "{what}: {outcome}"
        );
    }
}
