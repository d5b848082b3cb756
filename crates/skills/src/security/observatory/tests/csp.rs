//! The Content Security Policy test and its parser.

use super::*;

fn csp(input: &Input<'_>) -> Verdict {
    crate::security::observatory::csp::test(input).verdict
}

fn csp_of(policy: &str) -> Verdict {
    run(&site(&[("content-security-policy", policy)], ""), csp)
}

fn all(cases: &[&str], of: fn(&str) -> Verdict, expected: Expectation, pass: bool) {
    for case in cases {
        assert_eq!(of(case), (expected, pass), "{case:?}");
    }
}

#[test]
fn csp_invalid_missing_and_report_only() {
    assert_eq!(run(&site(&[], ""), csp), (CspNotImplemented, false));
    all(
        &[
            "  ",
            "default-src 'none'; default-src 'none'",
            "default-src 'none'; img-src 'self'; default-src 'none'",
            "default-src 'none'; script-src 'strict-dynamic'",
            "defa",
        ],
        csp_of,
        CspHeaderInvalid,
        false,
    );
    let report_only = site(
        &[("content-security-policy-report-only", "default-src 'none'")],
        "",
    );
    assert_eq!(
        run(&report_only, csp),
        (CspNotImplementedButReportingEnabled, false)
    );
}

#[test]
fn csp_unsafe_and_insecure_sources() {
    all(
        &[
            "default-src 'none'; script-src https://*",
            "default-src 'none'; script-src 'unsafe-inline'",
        ],
        csp_of,
        CspImplementedWithUnsafeInline,
        false,
    );
    all(
        &[
            "default-src http://mozilla.org",
            "default-src 'none'; script-src http://mozilla.org",
            "default-src 'none'; script-src ftp://mozilla.org",
        ],
        csp_of,
        CspImplementedWithInsecureScheme,
        false,
    );
    all(
        &[
            "default-src 'none'; img-src http://mozilla.org",
            "default-src 'self'; img-src ftp:",
            "default-src 'self'; img-src http:",
            "default-src 'none'; img-src https:; media-src http://mozilla.org",
            "default-src 'none'; img-src http: https:; script-src 'self'; style-src 'self'",
            "default-src 'none'; img-src 'none'; media-src http:; script-src 'self'; style-src 'self'",
            "default-src 'none'; img-src 'none'; media-src http:; script-src 'self'; style-src 'unsafe-inline'",
        ],
        csp_of,
        CspImplementedWithInsecureSchemeInPassiveContentOnly,
        true,
    );
    all(
        &[
            "script-src 'unsafe-inline'",
            "script-src data:",
            "script-src http:",
            "script-src ftp:",
            "default-src 'unsafe-inline'",
            "default-src 'UNSAFE-INLINE'",
            "upgrade-insecure-requests",
            "script-src 'none'",
            "script-src https:",
            "script-src https://mozilla.org https:",
            "default-src https://mozilla.org https:",
            "default-src 'none'; script-src *",
            "default-src *; script-src *; object-src 'none'",
            "default-src 'none'; script-src 'none'; object-src *",
            "default-src 'none'; script-src 'unsafe-inline' 'unsafe-eval'",
            "default-src 'none'; script-src 'unsafe-inline' http:",
            "object-src https:; script-src 'none'",
        ],
        csp_of,
        CspImplementedWithUnsafeInline,
        false,
    );
    assert_eq!(
        csp_of("default-src 'none'; script-src 'unsafe-eval'"),
        (CspImplementedWithUnsafeEval, false)
    );
}

#[test]
fn csp_safe_policies() {
    all(
        &[
            "object-src 'none'; script-src 'none'; style-src 'unsafe-inline'",
            "default-src 'none'; script-src https://mozilla.org; style-src 'unsafe-inline'",
            "default-src 'unsafe-inline'; script-src https://mozilla.org",
            "default-src 'none';;; ;;;style-src 'self' 'unsafe-inline'",
            "default-src 'none'; style-src data:",
            "default-src 'none'; style-src *",
            "default-src 'none'; style-src https:",
            "default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-hqBEA/HXB3aJU2FgOnYN8rkAgEVgyfi3Vs1j2/XMPBB=' 'unsafe-inline'",
        ],
        csp_of,
        CspImplementedWithUnsafeInlineInStyleSrcOnly,
        true,
    );
    all(
        &[
            "default-src https://mozilla.org",
            "default-src https://mozilla.org;;; ;;;script-src 'none'",
            "object-src 'none'; script-src https://mozilla.org; style-src https://mozilla.org; upgrade-insecure-requests;",
            "object-src 'none'; script-src 'strict-dynamic' 'nonce-abc' 'unsafe-inline'; style-src 'none'",
            "object-src 'none'; style-src 'self';script-src 'sha256-hqBEA/HXB3aJU2FgOnYN8rkAgEVgyfi3Vs1j2/XMPBA='",
            "object-src 'none'; script-src 'unsafe-inline' 'nonce-abc123' 'unsafe-inline'; style-src 'none'",
            "default-src https://mozilla.org; style-src 'unsafe-inline' 'nonce-abc123' 'unsafe-inline'",
        ],
        csp_of,
        CspImplementedWithNoUnsafe,
        true,
    );
    all(
        &[
            "default-src 'none'",
            "default-src 'none'; script-src 'strict-dynamic' 'nonce-abc123'",
            "default-src 'none'; script-src 'strict-dynamic' 'sha256-abc123' https://*",
            "default-src 'none'; script-src 'strict-dynamic' 'sha256-abc123' 'unsafe-inline'",
        ],
        csp_of,
        CspImplementedWithNoUnsafeDefaultSrcNone,
        true,
    );
    assert_eq!(
        csp_of("default-src 'none'; report-uri /a; report-uri /b"),
        (CspImplementedButDuplicateDirectives, true)
    );
}

#[test]
fn csp_policies_intersect_and_meta_tags_count_without_header_only_directives() {
    let three = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline', \
                 default-src 'none'; style-src 'self', \
                 default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'";
    let parsed = crate::security::observatory::csp::parse(
        &[three.split(", ").collect::<Vec<_>>().join(",")]
            .iter()
            .flat_map(|p| p.split(',').map(str::to_owned))
            .collect::<Vec<_>>(),
    )
    .unwrap();
    let flat: Vec<(String, Vec<String>)> = parsed
        .policy
        .into_iter()
        .map(|(d, s)| (d, s.into_iter().collect()))
        .collect();
    assert_eq!(
        flat,
        [
            ("default-src".to_owned(), vec!["'none'".to_owned()]),
            ("script-src".to_owned(), vec!["'self'".to_owned()]),
            ("style-src".to_owned(), vec!["'self'".to_owned()]),
        ]
    );
    assert_eq!(
        csp_of(three),
        (CspImplementedWithNoUnsafeDefaultSrcNone, true)
    );
    // frame-ancestors alone in a meta tag is no policy at all.
    let meta = |policy: &str| {
        format!(
            "<html><head><meta http-equiv=\"Content-Security-Policy\" content=\"{policy}\"></head></html>"
        )
    };
    assert_eq!(
        run(&site(&[], &meta("frame-ancestors 'none'")), csp),
        (CspNotImplemented, false)
    );
    assert_eq!(
        run(&site(&[], &meta("default-src 'none'")), csp),
        (CspImplementedWithNoUnsafeDefaultSrcNone, true)
    );
    // Not read from a page that is not HTML.
    let json = site(
        &[("content-type", "application/json")],
        &meta("default-src 'none'"),
    );
    assert_eq!(run(&json, csp), (CspNotImplemented, false));
}
