//! Each check fires on a bad site and not on a good one, and each is documented.

use super::support::*;

#[tokio::test]
async fn every_check_fires_on_a_bad_site_and_not_on_a_good_one() {
    let pki = Pki::new();
    let body = |html: &str| format!("<!doctype html><html><body>{html}</body></html>");
    let cases = vec![
        header_case(
            "no HSTS",
            "strict-transport-security",
            None,
            "hsts-missing",
            true,
        ),
        header_case(
            "HSTS",
            "strict-transport-security",
            Some("max-age=63072000; includeSubDomains; preload"),
            "hsts-missing",
            false,
        ),
        header_case(
            "short HSTS",
            "strict-transport-security",
            Some("max-age=600"),
            "hsts-short-max-age",
            true,
        ),
        header_case(
            "bad HSTS",
            "strict-transport-security",
            Some("max-age=soon"),
            "hsts-invalid",
            true,
        ),
        header_case(
            "HSTS without subdomains",
            "strict-transport-security",
            Some("max-age=63072000; preload"),
            "hsts-no-include-subdomains",
            true,
        ),
        header_case(
            "HSTS not preloaded",
            "strict-transport-security",
            Some("max-age=63072000; includeSubDomains"),
            "hsts-not-preloaded",
            true,
        ),
        header_case(
            "no CSP",
            "content-security-policy",
            None,
            "csp-missing",
            true,
        ),
        Case {
            name: "report-only CSP",
            site: Site {
                headers: with(
                    with(good_headers(), "content-security-policy", None),
                    "content-security-policy-report-only",
                    Some("default-src 'self'"),
                ),
                body: GOOD_PAGE.into(),
                ..Site::default()
            },
            check: "csp-report-only",
            expect: true,
        },
        header_case(
            "unsafe-inline",
            "content-security-policy",
            Some(
                "script-src 'self' 'unsafe-inline'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'",
            ),
            "csp-unsafe-inline",
            true,
        ),
        header_case(
            "unsafe-inline with a nonce",
            "content-security-policy",
            Some(
                "script-src 'nonce-abc' 'unsafe-inline'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'",
            ),
            "csp-unsafe-inline",
            false,
        ),
        header_case(
            "unsafe-eval",
            "content-security-policy",
            Some("script-src 'self' 'unsafe-eval'; object-src 'none'"),
            "csp-unsafe-eval",
            true,
        ),
        header_case(
            "wildcard scripts",
            "content-security-policy",
            Some("script-src *; object-src 'none'"),
            "csp-insecure-source",
            true,
        ),
        header_case(
            "http: scripts",
            "content-security-policy",
            Some("script-src 'self' http:; object-src 'none'"),
            "csp-insecure-source",
            true,
        ),
        header_case(
            "no object-src",
            "content-security-policy",
            Some("script-src 'self'; frame-ancestors 'none'"),
            "csp-no-object-src",
            true,
        ),
        header_case(
            "no base-uri",
            "content-security-policy",
            Some("default-src 'self'; frame-ancestors 'none'"),
            "csp-no-base-uri",
            true,
        ),
        header_case(
            "no frame-ancestors",
            "content-security-policy",
            Some("default-src 'self'; object-src 'none'; base-uri 'self'"),
            "csp-no-frame-ancestors",
            true,
        ),
        header_case(
            "no nosniff",
            "x-content-type-options",
            None,
            "x-content-type-options-missing",
            true,
        ),
        Case {
            name: "frameable",
            site: Site {
                headers: with(
                    good_headers(),
                    "content-security-policy",
                    Some("default-src 'self'; object-src 'none'; base-uri 'self'"),
                ),
                body: GOOD_PAGE.into(),
                ..Site::default()
            },
            check: "clickjacking",
            expect: true,
        },
        Case {
            name: "X-Frame-Options DENY",
            site: Site {
                headers: with(
                    with(
                        good_headers(),
                        "content-security-policy",
                        Some("default-src 'self'; object-src 'none'; base-uri 'self'"),
                    ),
                    "x-frame-options",
                    Some("DENY"),
                ),
                body: GOOD_PAGE.into(),
                ..Site::default()
            },
            check: "clickjacking",
            expect: false,
        },
        header_case(
            "no Referrer-Policy",
            "referrer-policy",
            None,
            "referrer-policy-missing",
            true,
        ),
        header_case(
            "unsafe Referrer-Policy",
            "referrer-policy",
            Some("unsafe-url"),
            "referrer-policy-unsafe",
            true,
        ),
        header_case(
            "no Permissions-Policy",
            "permissions-policy",
            None,
            "permissions-policy-missing",
            true,
        ),
        header_case(
            "session cookie, no flags",
            "set-cookie",
            Some("sessionid=1"),
            "cookie-session-no-secure",
            true,
        ),
        header_case(
            "session cookie readable",
            "set-cookie",
            Some("sessionid=1; Secure; SameSite=Lax"),
            "cookie-session-no-httponly",
            true,
        ),
        header_case(
            "cookie without Secure",
            "set-cookie",
            Some("theme=dark; SameSite=Lax"),
            "cookie-no-secure",
            true,
        ),
        header_case(
            "cookie without SameSite",
            "set-cookie",
            Some("theme=dark; Secure"),
            "cookie-no-samesite",
            true,
        ),
        header_case(
            "SameSite=None without Secure",
            "set-cookie",
            Some("theme=dark; SameSite=None"),
            "cookie-samesite-none-insecure",
            true,
        ),
        header_case(
            "__Host- with a path",
            "set-cookie",
            Some("__Host-x=1; Secure; Path=/app; SameSite=Lax"),
            "cookie-prefix-violation",
            true,
        ),
        header_case(
            "__Host- done right",
            "set-cookie",
            Some("__Host-x=1; Secure; Path=/; SameSite=Lax"),
            "cookie-prefix-violation",
            false,
        ),
        Case {
            name: "reflected origin with credentials",
            site: Site {
                headers: good_headers(),
                body: GOOD_PAGE.into(),
                reflect_origin: true,
                credentials: true,
                ..Site::default()
            },
            check: "cors-reflected-origin-with-credentials",
            expect: true,
        },
        Case {
            name: "reflected origin",
            site: Site {
                headers: good_headers(),
                body: GOOD_PAGE.into(),
                reflect_origin: true,
                ..Site::default()
            },
            check: "cors-reflected-origin",
            expect: true,
        },
        Case {
            name: "null origin allowed",
            site: Site {
                headers: good_headers(),
                body: GOOD_PAGE.into(),
                reflect_origin: true,
                ..Site::default()
            },
            check: "cors-null-origin",
            expect: true,
        },
        header_case(
            "CORS wildcard",
            "access-control-allow-origin",
            Some("*"),
            "cors-wildcard",
            true,
        ),
        Case {
            name: "CORS wildcard with credentials",
            site: Site {
                headers: with(
                    with(good_headers(), "access-control-allow-origin", Some("*")),
                    "access-control-allow-credentials",
                    Some("true"),
                ),
                body: GOOD_PAGE.into(),
                ..Site::default()
            },
            check: "cors-wildcard-with-credentials",
            expect: true,
        },
        header_case(
            "CORS allowlist",
            "access-control-allow-origin",
            Some("https://partner.example"),
            "cors-reflected-origin",
            false,
        ),
        header_case(
            "server version",
            "server",
            Some("Apache/2.4.1 (Unix)"),
            "server-version-disclosure",
            true,
        ),
        header_case(
            "server name only",
            "server",
            Some("nginx"),
            "server-version-disclosure",
            false,
        ),
        header_case(
            "X-Powered-By",
            "x-powered-by",
            Some("PHP/8.1.2"),
            "x-powered-by-disclosure",
            true,
        ),
        Case {
            name: "stack trace on 404",
            site: Site {
                headers: good_headers(),
                body: GOOD_PAGE.into(),
                trace_on_404: true,
                ..Site::default()
            },
            check: "stack-trace-disclosure",
            expect: true,
        },
        Case {
            name: "active mixed content",
            site: Site {
                headers: good_headers(),
                body: body(
                    "<script src=\"http://cdn.example/a.js\" integrity=\"sha384-x\"></script>",
                ),
                ..Site::default()
            },
            check: "mixed-content-active",
            expect: true,
        },
        Case {
            name: "passive mixed content",
            site: Site {
                headers: good_headers(),
                body: body("<img src=\"http://cdn.example/a.png\" alt=\"\">"),
                ..Site::default()
            },
            check: "mixed-content-passive",
            expect: true,
        },
        Case {
            name: "cross-origin script without SRI",
            site: Site {
                headers: good_headers(),
                body: body("<script src=\"https://cdn.example/a.js\"></script>"),
                ..Site::default()
            },
            check: "sri-missing",
            expect: true,
        },
        Case {
            name: "cross-origin script with SRI",
            site: Site {
                headers: good_headers(),
                body: body(
                    "<script src=\"https://cdn.example/a.js\" integrity=\"sha384-abc\" crossorigin></script>",
                ),
                ..Site::default()
            },
            check: "sri-missing",
            expect: false,
        },
        Case {
            name: "a link to another site in a new window",
            site: Site {
                headers: good_headers(),
                body: body("<a href=\"https://elsewhere.example/\" target=\"_blank\">x</a>"),
                ..Site::default()
            },
            check: "target-blank-no-noopener",
            expect: true,
        },
        Case {
            name: "a guarded link, and one to the same site",
            site: Site {
                headers: good_headers(),
                body: body(
                    "<a href=\"https://elsewhere.example/\" target=\"_blank\" rel=\"noreferrer\">x</a>\
                     <a href=\"/about\" target=\"_blank\">y</a>",
                ),
                ..Site::default()
            },
            check: "target-blank-no-noopener",
            expect: false,
        },
    ];
    let mut wrong = Vec::new();
    for case in cases {
        let url = https_site(case.site, pki.leaf(&["127.0.0.1"], false)).await;
        let scanner = scanner(&[&url], {
            let mut security_config = SecurityConfig::default();
            security_config.extra_ca_files = vec![pki.ca_file.path().to_path_buf()];
            security_config
        })
        .await;
        let task = scanner.scan(json!({"url": url})).await;
        if task.status.state != TaskState::Completed {
            wrong.push(format!("{}: {}", case.name, reply(&task)));
            continue;
        }
        let found = ids(&task);
        if found.contains(case.check) != case.expect {
            wrong.push(format!(
                "{}: {} {} in {found:?}",
                case.name,
                case.check,
                if case.expect { "missing" } else { "unexpected" }
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn every_check_is_documented() {
    let docs = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/skills/security-scan.md"),
    )
    .unwrap();
    let missing: Vec<&str> = CHECKS
        .iter()
        .map(|c| c.id)
        .filter(|id| !docs.contains(&format!("| `{id}` |")))
        .collect();
    assert!(missing.is_empty(), "undocumented checks: {missing:?}");
    // And every documented check exists, with the documented severity and penalty.
    for row in docs.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let id = cells[1].trim_matches('`');
        let check = CHECKS
            .iter()
            .find(|c| c.id == id)
            .unwrap_or_else(|| panic!("{id} is documented but not in the catalogue"));
        assert_eq!(cells[2], check.severity.as_str(), "{id}");
        let penalty = if check.penalty == 0 {
            "0".to_owned()
        } else {
            format!("-{}", check.penalty)
        };
        assert_eq!(cells[4], penalty, "{id}");
    }
}
