//! The results Observatory's tests can give, with the ids and score modifiers of its
//! published scoring table (`SCORE_TABLE`, algorithm version 6).

/// One result of one test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub(crate) enum Expectation {
    CspImplementedWithNoUnsafeDefaultSrcNone,
    CspImplementedWithNoUnsafe,
    CspImplementedWithUnsafeInlineInStyleSrcOnly,
    CspImplementedWithInsecureSchemeInPassiveContentOnly,
    CspImplementedWithUnsafeEval,
    CspImplementedWithUnsafeInline,
    CspImplementedWithInsecureScheme,
    CspHeaderInvalid,
    CspNotImplemented,
    CspNotImplementedButReportingEnabled,
    CspImplementedButDuplicateDirectives,
    CookiesSecureWithHttponlySessionsAndSamesite,
    CookiesSecureWithHttponlySessions,
    CookiesNotFound,
    CookiesWithoutSecureFlagButProtectedByHsts,
    CookiesSessionWithoutSecureFlagButProtectedByHsts,
    CookiesWithoutSecureFlag,
    CookiesSamesiteFlagInvalid,
    CookiesAnticsrfWithoutSamesiteFlag,
    CookiesSessionWithoutHttponlyFlag,
    CookiesSessionWithoutSecureFlag,
    CorsNotImplemented,
    CorsImplementedWithPublicAccess,
    CorsImplementedWithRestrictedAccess,
    CorsImplementedWithUniversalAccess,
    RedirectionAllRedirectsPreloaded,
    RedirectionToHttps,
    RedirectionNotNeededNoHttp,
    RedirectionOffHostFromHttp,
    RedirectionNotToHttpsOnInitialRedirection,
    RedirectionNotToHttps,
    RedirectionMissing,
    RedirectionInvalidCert,
    ReferrerPolicyPrivate,
    ReferrerPolicyNotImplemented,
    ReferrerPolicyUnsafe,
    ReferrerPolicyHeaderInvalid,
    HstsPreloaded,
    HstsImplementedMaxAgeAtLeastSixMonths,
    HstsImplementedMaxAgeLessThanSixMonths,
    HstsNotImplemented,
    HstsHeaderInvalid,
    HstsNotImplementedNoHttps,
    HstsInvalidCert,
    SriImplementedAndAllScriptsLoadedSecurely,
    SriImplementedAndExternalScriptsLoadedSecurely,
    SriNotImplementedResponseNotHtml,
    SriNotImplementedButNoScriptsLoaded,
    SriNotImplementedButAllScriptsLoadedFromSecureOrigin,
    SriNotImplementedButExternalScriptsLoadedSecurely,
    SriImplementedButExternalScriptsNotLoadedSecurely,
    SriNotImplementedAndExternalScriptsNotLoadedSecurely,
    XContentTypeOptionsNosniff,
    XContentTypeOptionsNotImplemented,
    XContentTypeOptionsHeaderInvalid,
    XFrameOptionsImplementedViaCsp,
    XFrameOptionsSameoriginOrDeny,
    XFrameOptionsAllowFromOrigin,
    XFrameOptionsNotImplemented,
    XFrameOptionsHeaderInvalid,
    CorpHeaderInvalid,
    CorpImplementedWithCrossOrigin,
    CorpImplementedWithSameOrigin,
    CorpImplementedWithSameSite,
    CorpNotImplemented,
    CoepImplementedWithRequireCorp,
    CoepImplementedWithCredentialless,
    CoepImplementedWithUnsafeNone,
    CoepNotImplemented,
    CoepHeaderInvalid,
    CoopImplementedWithSameOrigin,
    CoopImplementedWithSameOriginAllowPopups,
    CoopImplementedWithNoopenerAllowPopups,
    CoopImplementedWithUnsafeNone,
    CoopNotImplemented,
    CoopHeaderInvalid,
    HtmlNotParseable,
}

use Expectation::*;

impl Expectation {
    /// Observatory's id for the result, as its reports and API name it.
    pub(crate) fn id(self) -> &'static str {
        self.entry().0
    }

    /// What the result adds to (or takes from) the score of 100.
    pub(crate) fn modifier(self) -> i32 {
        self.entry().1
    }

    fn entry(self) -> (&'static str, i32) {
        match self {
            CspImplementedWithNoUnsafeDefaultSrcNone => {
                ("csp-implemented-with-no-unsafe-default-src-none", 10)
            }
            CspImplementedWithNoUnsafe => ("csp-implemented-with-no-unsafe", 5),
            CspImplementedWithUnsafeInlineInStyleSrcOnly => {
                ("csp-implemented-with-unsafe-inline-in-style-src-only", 0)
            }
            CspImplementedWithInsecureSchemeInPassiveContentOnly => (
                "csp-implemented-with-insecure-scheme-in-passive-content-only",
                -10,
            ),
            CspImplementedWithUnsafeEval => ("csp-implemented-with-unsafe-eval", -10),
            CspImplementedWithUnsafeInline => ("csp-implemented-with-unsafe-inline", -20),
            CspImplementedWithInsecureScheme => ("csp-implemented-with-insecure-scheme", -20),
            CspHeaderInvalid => ("csp-header-invalid", -25),
            CspNotImplemented => ("csp-not-implemented", -25),
            CspNotImplementedButReportingEnabled => {
                ("csp-not-implemented-but-reporting-enabled", -25)
            }
            CspImplementedButDuplicateDirectives => ("csp-implemented-but-duplicate-directives", 0),
            CookiesSecureWithHttponlySessionsAndSamesite => {
                ("cookies-secure-with-httponly-sessions-and-samesite", 5)
            }
            CookiesSecureWithHttponlySessions => ("cookies-secure-with-httponly-sessions", 0),
            CookiesNotFound => ("cookies-not-found", 0),
            CookiesWithoutSecureFlagButProtectedByHsts => {
                ("cookies-without-secure-flag-but-protected-by-hsts", -5)
            }
            CookiesSessionWithoutSecureFlagButProtectedByHsts => (
                "cookies-session-without-secure-flag-but-protected-by-hsts",
                -10,
            ),
            CookiesWithoutSecureFlag => ("cookies-without-secure-flag", -20),
            CookiesSamesiteFlagInvalid => ("cookies-samesite-flag-invalid", -20),
            CookiesAnticsrfWithoutSamesiteFlag => ("cookies-anticsrf-without-samesite-flag", -20),
            CookiesSessionWithoutHttponlyFlag => ("cookies-session-without-httponly-flag", -30),
            CookiesSessionWithoutSecureFlag => ("cookies-session-without-secure-flag", -40),
            CorsNotImplemented => ("cross-origin-resource-sharing-not-implemented", 0),
            CorsImplementedWithPublicAccess => (
                "cross-origin-resource-sharing-implemented-with-public-access",
                0,
            ),
            CorsImplementedWithRestrictedAccess => (
                "cross-origin-resource-sharing-implemented-with-restricted-access",
                0,
            ),
            CorsImplementedWithUniversalAccess => (
                "cross-origin-resource-sharing-implemented-with-universal-access",
                -50,
            ),
            RedirectionAllRedirectsPreloaded => ("redirection-all-redirects-preloaded", 0),
            RedirectionToHttps => ("redirection-to-https", 0),
            RedirectionNotNeededNoHttp => ("redirection-not-needed-no-http", 0),
            RedirectionOffHostFromHttp => ("redirection-off-host-from-http", -5),
            RedirectionNotToHttpsOnInitialRedirection => {
                ("redirection-not-to-https-on-initial-redirection", -10)
            }
            RedirectionNotToHttps => ("redirection-not-to-https", -20),
            RedirectionMissing => ("redirection-missing", -20),
            RedirectionInvalidCert => ("redirection-invalid-cert", -20),
            ReferrerPolicyPrivate => ("referrer-policy-private", 5),
            ReferrerPolicyNotImplemented => ("referrer-policy-not-implemented", 0),
            ReferrerPolicyUnsafe => ("referrer-policy-unsafe", -5),
            ReferrerPolicyHeaderInvalid => ("referrer-policy-header-invalid", -5),
            HstsPreloaded => ("hsts-preloaded", 5),
            HstsImplementedMaxAgeAtLeastSixMonths => {
                ("hsts-implemented-max-age-at-least-six-months", 0)
            }
            HstsImplementedMaxAgeLessThanSixMonths => {
                ("hsts-implemented-max-age-less-than-six-months", -10)
            }
            HstsNotImplemented => ("hsts-not-implemented", -20),
            HstsHeaderInvalid => ("hsts-header-invalid", -20),
            HstsNotImplementedNoHttps => ("hsts-not-implemented-no-https", -20),
            HstsInvalidCert => ("hsts-invalid-cert", -20),
            SriImplementedAndAllScriptsLoadedSecurely => {
                ("sri-implemented-and-all-scripts-loaded-securely", 5)
            }
            SriImplementedAndExternalScriptsLoadedSecurely => {
                ("sri-implemented-and-external-scripts-loaded-securely", 5)
            }
            SriNotImplementedResponseNotHtml => ("sri-not-implemented-response-not-html", 0),
            SriNotImplementedButNoScriptsLoaded => ("sri-not-implemented-but-no-scripts-loaded", 0),
            SriNotImplementedButAllScriptsLoadedFromSecureOrigin => (
                "sri-not-implemented-but-all-scripts-loaded-from-secure-origin",
                0,
            ),
            SriNotImplementedButExternalScriptsLoadedSecurely => (
                "sri-not-implemented-but-external-scripts-loaded-securely",
                -5,
            ),
            SriImplementedButExternalScriptsNotLoadedSecurely => (
                "sri-implemented-but-external-scripts-not-loaded-securely",
                -20,
            ),
            SriNotImplementedAndExternalScriptsNotLoadedSecurely => (
                "sri-not-implemented-and-external-scripts-not-loaded-securely",
                -50,
            ),
            XContentTypeOptionsNosniff => ("x-content-type-options-nosniff", 0),
            XContentTypeOptionsNotImplemented => ("x-content-type-options-not-implemented", -5),
            XContentTypeOptionsHeaderInvalid => ("x-content-type-options-header-invalid", -5),
            XFrameOptionsImplementedViaCsp => ("x-frame-options-implemented-via-csp", 5),
            XFrameOptionsSameoriginOrDeny => ("x-frame-options-sameorigin-or-deny", 5),
            XFrameOptionsAllowFromOrigin => ("x-frame-options-allow-from-origin", 0),
            XFrameOptionsNotImplemented => ("x-frame-options-not-implemented", -20),
            XFrameOptionsHeaderInvalid => ("x-frame-options-header-invalid", -20),
            CorpHeaderInvalid => ("corp-header-invalid", -5),
            CorpImplementedWithCrossOrigin => ("corp-implemented-with-cross-origin", 0),
            CorpImplementedWithSameOrigin => ("corp-implemented-with-same-origin", 10),
            CorpImplementedWithSameSite => ("corp-implemented-with-same-site", 10),
            CorpNotImplemented => ("corp-not-implemented", 0),
            CoepImplementedWithRequireCorp => ("coep-implemented-with-require-corp", 10),
            CoepImplementedWithCredentialless => ("coep-implemented-with-credentialless", 10),
            CoepImplementedWithUnsafeNone => ("coep-implemented-with-unsafe-none", 0),
            CoepNotImplemented => ("coep-not-implemented", 0),
            CoepHeaderInvalid => ("coep-header-invalid", -5),
            CoopImplementedWithSameOrigin => ("coop-implemented-with-same-origin", 10),
            CoopImplementedWithSameOriginAllowPopups => {
                ("coop-implemented-with-same-origin-allow-popups", 10)
            }
            CoopImplementedWithNoopenerAllowPopups => {
                ("coop-implemented-with-noopener-allow-popups", 10)
            }
            CoopImplementedWithUnsafeNone => ("coop-implemented-with-unsafe-none", 0),
            CoopNotImplemented => ("coop-not-implemented", 0),
            CoopHeaderInvalid => ("coop-header-invalid", -5),
            HtmlNotParseable => ("html-not-parseable", -20),
        }
    }
}

/// The worse of `new` and `old`, by `order` (best first): Observatory's `onlyIfWorse`.
pub(crate) fn only_if_worse(
    new: Expectation,
    old: Option<Expectation>,
    order: &[Expectation],
) -> Expectation {
    let rank = |e: Expectation| order.iter().position(|o| *o == e);
    match old {
        Some(old) if rank(new) <= rank(old) => old,
        _ => new,
    }
}
