//! security-scan against local test servers on 127.0.0.1 (HTTP, and HTTPS with a CA and
//! certificates made at test time): each check with a known-bad and a known-good case,
//! TLS problems as findings, active checks within their budget, hostile targets.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::Response;
use axum::routing::any;
use fundi_runtime::{
    MemoryStore, Message, Part, Runtime, RuntimeHandle, SubmitRequest, Task, TaskState,
};
use fundi_skills::security::catalogue::CHECKS;
use fundi_skills::{SecurityConfig, SecurityScanSkill};
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
use serde_json::{Value, json};

const DEADLINE: Duration = Duration::from_secs(60);

/// What one test site answers: headers and a body for every path, plus the extras.
#[derive(Clone, Default)]
struct Site {
    headers: Vec<(&'static str, String)>,
    body: String,
    /// CORS: echo the request's Origin (and allow credentials).
    reflect_origin: bool,
    credentials: bool,
    /// Error pages show a stack trace.
    trace_on_404: bool,
    /// Active findings: serve .git/HEAD, .env, a listing, TRACE, an open redirect.
    leaky: bool,
    /// Answer 200 with the same page for every path (a soft 404).
    soft_404: bool,
}

fn respond(
    site: &Site,
    method: &Method,
    path: &str,
    query: Option<&str>,
    request: &HeaderMap,
) -> Response {
    let mut builder = Response::builder().status(StatusCode::OK);
    let text = |status: StatusCode, body: String| {
        Response::builder()
            .status(status)
            .header("content-type", "text/plain")
            .body(Body::from(body))
            .unwrap()
    };
    if site.leaky {
        match (method.as_str(), path) {
            ("GET", "/.git/HEAD") => return text(StatusCode::OK, "ref: refs/heads/main\n".into()),
            ("GET", "/.DS_Store") => {
                return Response::builder()
                    .body(Body::from(&b"\x00\x00\x00\x01Bud1\x00\x00"[..]))
                    .unwrap();
            }
            ("GET", "/.svn/entries") => return text(StatusCode::OK, "12\n\ndir\n0\n".into()),
            ("GET", "/server-status") => {
                return text(StatusCode::OK, "<h1>Apache Server Status for x</h1>".into());
            }
            ("GET", "/phpinfo.php") => {
                return text(StatusCode::OK, "<title>phpinfo()</title>".into());
            }
            ("GET", "/backup.zip") => {
                return Response::builder()
                    .body(Body::from(&b"PK\x03\x04rest"[..]))
                    .unwrap();
            }
            ("GET", "/.env") => {
                return text(StatusCode::OK, "DB_PASSWORD=hunter2\nAPI_KEY=abc\n".into());
            }
            ("GET", "/files/") => {
                return Response::builder()
                    .header("content-type", "text/html")
                    .body(Body::from("<html><head><title>Index of /files/</title></head><body><h1>Index of /files/</h1></body></html>"))
                    .unwrap();
            }
            ("TRACE", _) => {
                return text(
                    StatusCode::OK,
                    format!("TRACE {path} HTTP/1.1\r\nhost: x\r\n"),
                );
            }
            _ => {}
        }
        if let Some(query) = query
            && let Some(target) = query.strip_prefix("next=")
        {
            let target = target.replace("%3A", ":").replace("%2F", "/");
            return Response::builder()
                .status(StatusCode::FOUND)
                .header("location", target)
                .body(Body::empty())
                .unwrap();
        }
    }
    let known = path == "/" || path.starts_with("/files/");
    if !known && !site.soft_404 {
        let body = if site.trace_on_404 {
            "Traceback (most recent call last):\n  File \"app.py\", line 3, in <module>\nKeyError: 'x'".into()
        } else {
            "not found".into()
        };
        return text(StatusCode::NOT_FOUND, body);
    }
    builder = builder.header("content-type", "text/html");
    for (name, value) in &site.headers {
        builder = builder.header(*name, value.as_str());
    }
    if let Some(origin) = request.get("origin").and_then(|o| o.to_str().ok())
        && site.reflect_origin
    {
        builder = builder.header("access-control-allow-origin", origin);
        if site.credentials {
            builder = builder.header("access-control-allow-credentials", "true");
        }
    }
    builder.body(Body::from(site.body.clone())).unwrap()
}

fn router(site: Site) -> Router {
    Router::new().fallback(any(
        move |method: Method, uri: axum::http::Uri, headers: HeaderMap| {
            let site = site.clone();
            async move { respond(&site, &method, uri.path(), uri.query(), &headers) }
        },
    ))
}

async fn http_site(site: Site) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let app = router(site);
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

/// A CA made for this test run, and leaf certificates it signs.
struct Pki {
    ca: CertifiedIssuer<'static, KeyPair>,
    ca_file: tempfile::NamedTempFile,
}

impl Pki {
    fn new() -> Pki {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "fundi test CA");
        let ca = CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap();
        let ca_file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(ca_file.path(), ca.pem()).unwrap();
        Pki { ca, ca_file }
    }

    /// A leaf for `names`, valid until `not_after` (None: the default, far ahead).
    fn leaf(&self, names: &[&str], expired: bool) -> (Vec<u8>, Vec<u8>) {
        let mut params =
            CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
                .unwrap();
        if expired {
            params.not_before = rcgen::date_time_ymd(2019, 1, 1);
            params.not_after = rcgen::date_time_ymd(2020, 1, 1);
        }
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.ca).unwrap();
        (cert.der().to_vec(), key.serialize_der())
    }

    /// A certificate nobody trusts.
    fn self_signed(names: &[&str]) -> (Vec<u8>, Vec<u8>) {
        let key = KeyPair::generate().unwrap();
        let params =
            CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
                .unwrap();
        let cert = params.self_signed(&key).unwrap();
        (cert.der().to_vec(), key.serialize_der())
    }
}

async fn https_site(site: Site, cert: (Vec<u8>, Vec<u8>)) -> String {
    use tokio_rustls::rustls;
    let (cert, key) = cert;
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(
        vec![rustls::pki_types::CertificateDer::from(cert)],
        rustls::pki_types::PrivateKeyDer::try_from(key).unwrap(),
    )
    .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr: SocketAddr = listener.local_addr().unwrap();
    let app = router(site);
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                continue;
            };
            let (acceptor, app) = (acceptor.clone(), app.clone());
            tokio::spawn(async move {
                if let Ok(tls) = acceptor.accept(tcp).await {
                    let service = hyper_util::service::TowerToHyperService::new(app);
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                        .await;
                }
            });
        }
    });
    format!("https://{addr}")
}

struct Scanner {
    runtime: RuntimeHandle,
}

async fn scanner(origins: &[&str], config: SecurityConfig) -> Scanner {
    let store = Arc::new(MemoryStore::new());
    let skill = SecurityScanSkill::new(
        SecurityConfig {
            allowed_origins: origins.iter().map(|o| o.to_string()).collect(),
            ..config
        },
        Arc::new(fundi_ops::issues::MemoryIssueStore::new()),
    )
    .unwrap();
    let runtime = Runtime::builder()
        .shared_store(store)
        .skill(skill)
        .start()
        .await
        .unwrap();
    Scanner { runtime }
}

impl Scanner {
    async fn scan(&self, data: Value) -> Task {
        let id = self
            .runtime
            .submit(SubmitRequest::new(Message::user(vec![Part::data(data)])))
            .await
            .unwrap()
            .task
            .id;
        let deadline = Instant::now() + DEADLINE;
        loop {
            let task = self.runtime.get(&id, None, None).await.unwrap();
            if task.status.state.is_terminal() {
                return task;
            }
            assert!(Instant::now() < deadline, "scan never ended");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

fn report(task: &Task) -> Value {
    task.artifacts
        .first()
        .and_then(|a| a.parts[0].as_data().cloned())
        .unwrap_or_else(|| panic!("no report: {:?}", task.status))
}

fn ids(task: &Task) -> BTreeSet<String> {
    report(task)["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_str().unwrap().to_owned())
        .collect()
}

fn reply(task: &Task) -> String {
    task.status
        .message
        .as_ref()
        .map(|m| m.text())
        .unwrap_or_default()
}

fn good_headers() -> Vec<(&'static str, String)> {
    vec![
        (
            "strict-transport-security",
            "max-age=63072000; includeSubDomains; preload".into(),
        ),
        (
            "content-security-policy",
            "default-src 'self'; object-src 'none'; base-uri 'self'; frame-ancestors 'none'".into(),
        ),
        ("x-content-type-options", "nosniff".into()),
        ("referrer-policy", "strict-origin-when-cross-origin".into()),
        ("permissions-policy", "camera=(), microphone=()".into()),
        (
            "set-cookie",
            "__Host-sid=abc; Secure; HttpOnly; SameSite=Lax; Path=/".into(),
        ),
    ]
}

fn with(
    mut headers: Vec<(&'static str, String)>,
    name: &'static str,
    value: Option<&str>,
) -> Vec<(&'static str, String)> {
    headers.retain(|(n, _)| *n != name);
    if let Some(value) = value {
        headers.push((name, value.to_owned()));
    }
    headers
}

const GOOD_PAGE: &str =
    "<!doctype html><html><head><script src=\"/app.js\"></script></head><body>ok</body></html>";

/// An HTTPS site with every recommended header serving `body`, and a scanner allowed
/// to reach it that trusts `pki`'s CA.
async fn well_configured_https_site(pki: &Pki, body: String) -> (String, Scanner) {
    let site = Site {
        headers: good_headers(),
        body,
        ..Site::default()
    };
    let url = https_site(site, pki.leaf(&["127.0.0.1"], false)).await;
    let config = SecurityConfig {
        extra_ca_files: vec![pki.ca_file.path().to_path_buf()],
        ..SecurityConfig::default()
    };
    let scanner = scanner(&[&url], config).await;
    (url, scanner)
}

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

/// (what the site does, the check expected, or absent when `expect` is false).
struct Case {
    name: &'static str,
    site: Site,
    check: &'static str,
    expect: bool,
}

fn header_case(
    name: &'static str,
    header: &'static str,
    value: Option<&str>,
    check: &'static str,
    expect: bool,
) -> Case {
    Case {
        name,
        site: Site {
            headers: with(good_headers(), header, value),
            body: GOOD_PAGE.into(),
            ..Site::default()
        },
        check,
        expect,
    }
}

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
        let scanner = scanner(
            &[&url],
            SecurityConfig {
                extra_ca_files: vec![pki.ca_file.path().to_path_buf()],
                ..SecurityConfig::default()
            },
        )
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

#[tokio::test]
async fn tls_problems_are_findings_and_the_scan_goes_on() {
    let pki = Pki::new();
    let bad_headers = with(good_headers(), "x-content-type-options", None);
    let site = Site {
        headers: bad_headers,
        body: GOOD_PAGE.into(),
        ..Site::default()
    };
    for (cert, check) in [
        (
            Pki::self_signed(&["127.0.0.1"]),
            "tls-untrusted-certificate",
        ),
        (pki.leaf(&["other.test"], false), "tls-wrong-name"),
        (pki.leaf(&["127.0.0.1"], true), "tls-expired-certificate"),
    ] {
        let url = https_site(site.clone(), cert).await;
        let scanner = scanner(
            &[&url],
            SecurityConfig {
                extra_ca_files: vec![pki.ca_file.path().to_path_buf()],
                ..SecurityConfig::default()
            },
        )
        .await;
        let task = scanner.scan(json!({"url": url})).await;
        assert_eq!(
            task.status.state,
            TaskState::Completed,
            "{check}: {}",
            reply(&task)
        );
        let found = ids(&task);
        assert!(found.contains(check), "{check} missing: {found:?}");
        // The header checks still ran over the unverified connection.
        assert!(
            found.contains("x-content-type-options-missing"),
            "{check}: {found:?}"
        );
        let finding = report(&task)["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["id"] == check)
            .unwrap()
            .clone();
        assert_eq!(finding["severity"], "high");
    }
}

#[tokio::test]
async fn plain_http_must_redirect_to_https() {
    let plain = http_site(Site {
        headers: good_headers(),
        body: GOOD_PAGE.into(),
        ..Site::default()
    })
    .await;
    let scanner_plain = scanner(&[&plain], SecurityConfig::default()).await;
    let task = scanner_plain.scan(json!({"url": plain})).await;
    assert!(ids(&task).contains("no-https"), "{:?}", ids(&task));
    assert!(
        !ids(&task).contains("hsts-missing"),
        "HSTS means nothing over HTTP"
    );

    let redirecting_site = {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let app = Router::new().fallback(any(|| async {
            Response::builder()
                .status(StatusCode::MOVED_PERMANENTLY)
                .header("location", HeaderValue::from_static("https://127.0.0.1/"))
                .body(Body::empty())
                .unwrap()
        }));
        tokio::spawn(async move { axum::serve(listener, app).await });
        url
    };
    let scanner_redirect = scanner(&[&redirecting_site], SecurityConfig::default()).await;
    let task = scanner_redirect
        .scan(json!({"url": redirecting_site}))
        .await;
    assert!(!ids(&task).contains("no-https"), "{:?}", ids(&task));
    let errors = report(&task)["errors"].to_string();
    assert!(errors.contains("outside the allowed origins"), "{errors}");
}

#[tokio::test]
async fn active_checks_only_when_asked_within_their_budget() {
    let leaky = http_site(Site {
        headers: good_headers(),
        body: GOOD_PAGE.into(),
        leaky: true,
        ..Site::default()
    })
    .await;
    let leaky_scanner = scanner(
        &[&leaky],
        SecurityConfig {
            active_requests_per_second: 100,
            ..SecurityConfig::default()
        },
    )
    .await;
    let passive = leaky_scanner.scan(json!({"url": leaky})).await;
    let active_ids = [
        "exposed-git",
        "exposed-env",
        "exposed-svn",
        "exposed-ds-store",
        "exposed-server-status",
        "exposed-phpinfo",
        "exposed-backup-file",
        "directory-listing",
        "trace-enabled",
        "open-redirect",
    ];
    assert!(
        active_ids.iter().all(|id| !ids(&passive).contains(*id)),
        "{:?}",
        ids(&passive)
    );

    let task = leaky_scanner
        .scan(json!({"url": leaky, "paths": ["/", "/files/report.pdf"], "active": true}))
        .await;
    let found = ids(&task);
    for id in active_ids {
        assert!(found.contains(id), "{id} missing: {found:?}");
    }
    let requests = report(&task)["requests"].as_array().unwrap().len();
    assert!(requests > 10, "every request is logged: {requests}");
    // A binary file's bytes go into the evidence escaped (no store keeps a NUL).
    let ds_store = report(&task)["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "exposed-ds-store")
        .cloned()
        .unwrap();
    let evidence = ds_store["evidence"].as_str().unwrap();
    assert!(
        evidence.starts_with("\\u{0}\\u{0}\\u{0}\\u{1}Bud1"),
        "{evidence}"
    );

    // A site that answers 200 to everything is not reported for what it does not have.
    let soft = http_site(Site {
        headers: good_headers(),
        body: GOOD_PAGE.into(),
        soft_404: true,
        ..Site::default()
    })
    .await;
    let soft_scanner = scanner(
        &[&soft],
        SecurityConfig {
            active_requests_per_second: 100,
            ..SecurityConfig::default()
        },
    )
    .await;
    let task = soft_scanner
        .scan(json!({"url": soft, "active": true}))
        .await;
    assert!(
        active_ids.iter().all(|id| !ids(&task).contains(*id)),
        "{:?}",
        ids(&task)
    );

    // The budget bounds the active requests.
    let budgeted = scanner_with_budget(&leaky, 3).await;
    let task = budgeted.scan(json!({"url": leaky, "active": true})).await;
    assert_eq!(report(&task)["activeRequestsLeft"], json!(0));
    let active_requests = report(&task)["requests"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| {
            let url = r["url"].as_str().unwrap();
            url.contains("/.git/") || url.contains("/.env") || url.contains("/.svn")
        })
        .count();
    assert!(active_requests <= 3, "{active_requests}");
}

/// A site that answers every request with a redirect to the same path on `to`.
async fn redirecting_site(to: &str) -> String {
    let to = to.to_owned();
    let app = Router::new().fallback(any(move |uri: axum::http::Uri| {
        let target = format!("{to}{}", uri.path_and_query().map_or("/", |p| p.as_str()));
        async move {
            Response::builder()
                .status(StatusCode::MOVED_PERMANENTLY)
                .header("location", target)
                .body(Body::empty())
                .unwrap()
        }
    }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

#[tokio::test]
async fn probes_go_to_the_origin_the_scan_landed_on() {
    let site = http_site(Site {
        headers: good_headers(),
        body: GOOD_PAGE.into(),
        leaky: true,
        trace_on_404: true,
        ..Site::default()
    })
    .await;
    let entry = redirecting_site(&site).await;
    let both = scanner(
        &[&entry, &site],
        SecurityConfig {
            active_requests_per_second: 100,
            ..SecurityConfig::default()
        },
    )
    .await;
    let task = both.scan(json!({"url": entry, "active": true})).await;
    let found = ids(&task);
    for id in [
        "exposed-env",
        "exposed-git",
        "open-redirect",
        "stack-trace-disclosure",
    ] {
        assert!(found.contains(id), "{id} missing: {found:?}");
    }
    let probed = report(&task)["probed"].clone();
    assert_eq!(
        probed,
        json!([format!("{site}/")]),
        "only the landed origin serves"
    );
}

async fn scanner_with_budget(url: &str, requests: usize) -> Scanner {
    scanner(
        &[url],
        SecurityConfig {
            max_active_requests: requests,
            active_requests_per_second: 100,
            ..SecurityConfig::default()
        },
    )
    .await
}

#[tokio::test]
async fn targets_off_the_allowlist_and_bad_input_are_refused() {
    let scanner = scanner(&["https://allowed.example"], SecurityConfig::default()).await;
    for (data, expected) in [
        (
            json!({"url": "http://169.254.169.254/"}),
            "is not an allowed target",
        ),
        (
            json!({"url": "https://allowed.example/", "paths": ["https://elsewhere.example/"]}),
            "leaves https://allowed.example",
        ),
        (
            json!({"url": "https://allowed.example/", "paths": "/"}),
            "data.paths must be a list",
        ),
        (
            json!({"url": "https://allowed.example/", "active": "yes"}),
            "data.active must be true or false",
        ),
        (json!({"target": "x"}), "security-scan needs a target"),
    ] {
        let task = scanner.scan(data).await;
        assert_eq!(task.status.state, TaskState::Rejected, "{expected}");
        assert!(reply(&task).contains(expected), "{}", reply(&task));
    }
}

#[tokio::test]
async fn hostile_targets_stay_bounded() {
    // Huge headers, an endless body, a redirect loop, a target that never answers.
    let huge = {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let app = Router::new().fallback(any(|| async {
            let mut response = Response::builder().status(StatusCode::OK);
            for i in 0..300 {
                response = response.header(format!("x-pad-{i}"), "v".repeat(1000));
            }
            response.body(Body::empty()).unwrap()
        }));
        tokio::spawn(async move { axum::serve(listener, app).await });
        url
    };
    let endless = {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let app = Router::new().fallback(any(|| async {
            let chunks = futures::stream::repeat_with(|| {
                Ok::<_, std::io::Error>(axum::body::Bytes::from(vec![b'a'; 64 * 1024]))
            });
            Response::builder()
                .header("content-type", "text/html")
                .body(Body::from_stream(chunks))
                .unwrap()
        }));
        tokio::spawn(async move { axum::serve(listener, app).await });
        url
    };
    let looping = {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let app = Router::new().fallback(any(|uri: axum::http::Uri| async move {
            let next = if uri.path() == "/a" { "/b" } else { "/a" };
            Response::builder()
                .status(StatusCode::FOUND)
                .header("location", next)
                .body(Body::empty())
                .unwrap()
        }));
        tokio::spawn(async move { axum::serve(listener, app).await });
        url
    };
    let silent = {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let app = Router::new().fallback(any(|| async {
            std::future::pending::<()>().await;
            "never"
        }));
        tokio::spawn(async move { axum::serve(listener, app).await });
        url
    };
    let config = SecurityConfig {
        request_timeout_ms: 500,
        max_body_bytes: 256 * 1024,
        ..SecurityConfig::default()
    };
    let all = [
        huge.as_str(),
        endless.as_str(),
        looping.as_str(),
        silent.as_str(),
    ];
    let scanner = scanner(&all, config).await;

    let task = scanner.scan(json!({"url": huge})).await;
    assert_eq!(task.status.state, TaskState::Failed, "{}", reply(&task));
    assert!(reply(&task).contains("could not reach"), "{}", reply(&task));

    let task = scanner.scan(json!({"url": endless})).await;
    assert_eq!(task.status.state, TaskState::Completed, "{}", reply(&task));

    let task = scanner.scan(json!({"url": format!("{looping}/a")})).await;
    assert_eq!(task.status.state, TaskState::Completed, "{}", reply(&task));
    assert!(
        report(&task)["errors"]
            .to_string()
            .contains("redirects more than 5 times")
    );

    let task = scanner.scan(json!({"url": silent})).await;
    assert_eq!(task.status.state, TaskState::Failed, "{}", reply(&task));
    assert!(reply(&task).contains("could not reach"), "{}", reply(&task));
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

#[tokio::test]
async fn a_page_built_to_cost_the_parser_is_refused_unparsed_and_the_scan_goes_on() {
    let pki = Pki::new();
    // 100,000 unclosed <div>: nesting html5ever takes minutes over; mixed content after.
    let body = format!(
        "{}<script src=\"http://cdn.example/x.js\"></script>",
        "<div>".repeat(100_000)
    );
    let (url, scanner) = well_configured_https_site(&pki, body).await;
    let task = scanner.scan(json!({"url": url})).await;
    assert_eq!(task.status.state, TaskState::Completed, "{}", reply(&task));
    // Not parsed, so not checked for mixed content; the other checks ran.
    assert!(
        !ids(&task).contains("mixed-content-active"),
        "{:?}",
        ids(&task)
    );
    assert!(report(&task)["grade"].is_string(), "{}", report(&task));
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
    let config = SecurityConfig {
        extra_ca_files: vec![pki.ca_file.path().to_path_buf()],
        ..SecurityConfig::default()
    };
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

/// Serves `site` over HTTPS with HTTP redirecting to it, scans it with the HTTP port
/// given, and returns the scan's Observatory grade.
async fn observatory_of(pki: &Pki, site: Site) -> Value {
    let https = https_site(site, pki.leaf(&["127.0.0.1"], false)).await;
    let http = redirecting_site(&https).await;
    let http_port = reqwest::Url::parse(&http).unwrap().port().unwrap();
    let config = SecurityConfig {
        extra_ca_files: vec![pki.ca_file.path().to_path_buf()],
        ..SecurityConfig::default()
    };
    let scanner = scanner(&[&https, &http], config).await;
    let task = scanner
        .scan(json!({"url": https, "observatory": {"httpPort": http_port}}))
        .await;
    assert_eq!(task.status.state, TaskState::Completed, "{}", reply(&task));
    report(&task)["observatory"].clone()
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
