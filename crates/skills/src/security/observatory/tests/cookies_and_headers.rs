//! Cookies, CORS, the cross-origin policies and Referrer-Policy.

use super::*;

fn with_cookies(cookies: &[&str], hsts: bool) -> Verdict {
    let mut headers: Vec<(&str, &str)> = cookies.iter().map(|c| ("set-cookie", *c)).collect();
    if hsts {
        headers.push(("strict-transport-security", "max-age=31536000"));
    }
    run(&site(&headers, ""), cookies::test)
}

#[test]
fn cookies() {
    assert_eq!(with_cookies(&[], false), (CookiesNotFound, true));
    assert_eq!(
        with_cookies(
            &[
                "SESSIONID=a; Secure; HttpOnly; SameSite=Lax",
                "b=c; Secure; SameSite=Strict"
            ],
            false
        ),
        (CookiesSecureWithHttponlySessionsAndSamesite, true)
    );
    assert_eq!(
        with_cookies(&["SESSIONID=a; Secure; HttpOnly", "b=c; Secure"], false),
        (CookiesSecureWithHttponlySessions, true)
    );
    assert_eq!(
        with_cookies(&["b=c"], false),
        (CookiesWithoutSecureFlag, false)
    );
    assert_eq!(
        with_cookies(&["b=c"], true),
        (CookiesWithoutSecureFlagButProtectedByHsts, false)
    );
    assert_eq!(
        with_cookies(&["SESSIONID=a; HttpOnly"], true),
        (CookiesSessionWithoutSecureFlagButProtectedByHsts, false)
    );
    assert_eq!(
        with_cookies(&["SESSIONID=a; HttpOnly"], false),
        (CookiesSessionWithoutSecureFlag, false)
    );
    assert_eq!(
        with_cookies(&["SESSIONID=a; Secure"], false),
        (CookiesSessionWithoutHttponlyFlag, false)
    );
    assert_eq!(
        with_cookies(&["csrftoken=a; Secure"], false),
        (CookiesAnticsrfWithoutSamesiteFlag, false)
    );
    assert_eq!(
        with_cookies(&["b=c; Secure; SameSite=Whatever"], false),
        (CookiesSamesiteFlagInvalid, false)
    );
    assert_eq!(
        with_cookies(&["b=c; SameSite=None"], true),
        (CookiesSamesiteFlagInvalid, false)
    );
    // The worst finding wins, whatever the order.
    assert_eq!(
        with_cookies(&["SESSIONID=a; Secure", "login=b; HttpOnly"], false),
        (CookiesSessionWithoutSecureFlag, false)
    );
    // A cookie the jar refuses (another site's Domain, a broken prefix) is not counted;
    // a later one replaces an earlier one of the same name, domain and path.
    assert_eq!(
        with_cookies(&["b=c; Domain=example.com"], false),
        (CookiesNotFound, true)
    );
    assert_eq!(
        with_cookies(&["__Host-b=c; Secure; Path=/x"], false),
        (CookiesNotFound, true)
    );
    assert_eq!(
        with_cookies(&["b=c", "b=d; Secure; SameSite=Lax"], false),
        (CookiesSecureWithHttponlySessionsAndSamesite, true)
    );
    assert_eq!(
        with_cookies(&["heroku-session-affinity=x"], false),
        (CookiesNotFound, true)
    );
}

fn with_cors(headers: &[(&str, &str)]) -> Verdict {
    let mut retrieval = site(&[], "");
    retrieval.cors = Some(response("https://mozilla.org/", headers, ""));
    run(&retrieval, headers::cors)
}

#[test]
fn cors() {
    assert_eq!(with_cors(&[]), (CorsNotImplemented, true));
    assert_eq!(
        with_cors(&[("access-control-allow-origin", "*")]),
        (CorsImplementedWithPublicAccess, true)
    );
    assert_eq!(
        with_cors(&[("access-control-allow-origin", "https://mozilla.org")]),
        (CorsImplementedWithRestrictedAccess, true)
    );
    assert_eq!(
        with_cors(&[
            ("access-control-allow-origin", CORS_ORIGIN),
            ("access-control-allow-credentials", "true")
        ]),
        (CorsImplementedWithUniversalAccess, false)
    );
}

#[test]
fn cross_origin_policies() {
    let coop = |v| header_test("cross-origin-opener-policy", v, headers::coop);
    assert_eq!(
        run(&site(&[], ""), headers::coop),
        (CoopNotImplemented, true)
    );
    assert_eq!(coop("same-origin"), (CoopImplementedWithSameOrigin, true));
    assert_eq!(
        coop("same-origin; report-to=\"x\""),
        (CoopImplementedWithSameOrigin, true)
    );
    assert_eq!(
        coop("same-origin-allow-popups"),
        (CoopImplementedWithSameOriginAllowPopups, true)
    );
    assert_eq!(
        coop("noopener-allow-popups"),
        (CoopImplementedWithNoopenerAllowPopups, true)
    );
    assert_eq!(coop("unsafe-none"), (CoopImplementedWithUnsafeNone, true));
    assert_eq!(coop("\"same-origin\""), (CoopHeaderInvalid, false));
    assert_eq!(coop("same-origin, same-origin"), (CoopHeaderInvalid, false));
    assert_eq!(coop("bogus"), (CoopHeaderInvalid, false));
    let coep = |v| header_test("cross-origin-embedder-policy", v, headers::coep);
    assert_eq!(
        run(&site(&[], ""), headers::coep),
        (CoepNotImplemented, true)
    );
    assert_eq!(coep("require-corp"), (CoepImplementedWithRequireCorp, true));
    assert_eq!(
        coep("credentialless"),
        (CoepImplementedWithCredentialless, true)
    );
    assert_eq!(coep("unsafe-none"), (CoepImplementedWithUnsafeNone, true));
    assert_eq!(coep("require corp"), (CoepHeaderInvalid, false));
    let corp = |v| header_test("cross-origin-resource-policy", v, headers::corp);
    assert_eq!(
        run(&site(&[], ""), headers::corp),
        (CorpNotImplemented, true)
    );
    assert_eq!(corp("same-site"), (CorpImplementedWithSameSite, true));
    assert_eq!(corp(" Same-Origin "), (CorpImplementedWithSameOrigin, true));
    assert_eq!(corp("cross-origin"), (CorpImplementedWithCrossOrigin, true));
    assert_eq!(corp("whatever"), (CorpHeaderInvalid, false));
}

#[test]
fn referrer_policy() {
    let referrer = |v| header_test("referrer-policy", v, headers::referrer);
    assert_eq!(
        run(&site(&[], ""), headers::referrer),
        (ReferrerPolicyNotImplemented, true)
    );
    for good in [
        "no-referrer",
        "same-origin",
        "strict-origin",
        "STRICT-ORIGIN-WHEN-CROSS-ORIGIN",
        "origin, strict-origin",
    ] {
        assert_eq!(referrer(good), (ReferrerPolicyPrivate, true), "{good}");
    }
    for bad in [
        "origin",
        "origin-when-cross-origin",
        "unsafe-url",
        "no-referrer-when-downgrade",
        "no-referrer, unsafe-url",
    ] {
        assert_eq!(referrer(bad), (ReferrerPolicyUnsafe, false), "{bad}");
    }
    assert_eq!(referrer("whimsy"), (ReferrerPolicyHeaderInvalid, false));
    // The page's <meta name=referrer> comes last, so it wins.
    let meta = site(
        &[("referrer-policy", "unsafe-url")],
        "<meta name=\"referrer\" content=\"no-referrer\">",
    );
    assert_eq!(run(&meta, headers::referrer), (ReferrerPolicyPrivate, true));
}
