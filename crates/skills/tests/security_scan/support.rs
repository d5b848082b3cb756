//! What the security-scan tests share: test sites over HTTP and HTTPS (with a CA made
//! at test time), a scanner allowed to reach them, and readers of its report.

pub(crate) use std::collections::{BTreeMap, BTreeSet};
pub(crate) use std::net::SocketAddr;
pub(crate) use std::sync::Arc;
pub(crate) use std::time::{Duration, Instant};

pub(crate) use axum::Router;
pub(crate) use axum::body::Body;
pub(crate) use axum::http::{HeaderMap, HeaderValue, Method, StatusCode};
pub(crate) use axum::response::Response;
pub(crate) use axum::routing::any;
pub(crate) use fundi_runtime::Access;
pub(crate) use fundi_runtime::{
    MemoryStore, Message, Part, Runtime, RuntimeHandle, SubmitRequest, Task, TaskState,
};
pub(crate) use fundi_skills::security::catalogue::CHECKS;
pub(crate) use fundi_skills::{SecurityConfig, SecurityScanSkill};
pub(crate) use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
pub(crate) use serde_json::{Value, json};

pub(crate) const DEADLINE: Duration = Duration::from_secs(60);

/// What one test site answers: headers and a body for every path, plus the extras.
#[derive(Clone, Default)]
pub(crate) struct Site {
    pub(crate) headers: Vec<(&'static str, String)>,
    pub(crate) body: String,
    /// CORS: echo the request's Origin (and allow credentials).
    pub(crate) reflect_origin: bool,
    pub(crate) credentials: bool,
    /// Error pages show a stack trace.
    pub(crate) trace_on_404: bool,
    /// Active findings: serve .git/HEAD, .env, a listing, TRACE, an open redirect.
    pub(crate) leaky: bool,
    /// Answer 200 with the same page for every path (a soft 404).
    pub(crate) soft_404: bool,
}

pub(crate) fn respond(
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

pub(crate) fn router(site: Site) -> Router {
    Router::new().fallback(any(
        move |method: Method, uri: axum::http::Uri, headers: HeaderMap| {
            let site = site.clone();
            async move { respond(&site, &method, uri.path(), uri.query(), &headers) }
        },
    ))
}

pub(crate) async fn http_site(site: Site) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let app = router(site);
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

/// A CA made for this test run, and leaf certificates it signs.
pub(crate) struct Pki {
    pub(crate) ca: CertifiedIssuer<'static, KeyPair>,
    pub(crate) ca_file: tempfile::NamedTempFile,
}

impl Pki {
    pub(crate) fn new() -> Pki {
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
    pub(crate) fn leaf(&self, names: &[&str], expired: bool) -> (Vec<u8>, Vec<u8>) {
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
    pub(crate) fn self_signed(names: &[&str]) -> (Vec<u8>, Vec<u8>) {
        let key = KeyPair::generate().unwrap();
        let params =
            CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
                .unwrap();
        let cert = params.self_signed(&key).unwrap();
        (cert.der().to_vec(), key.serialize_der())
    }
}

pub(crate) async fn https_site(site: Site, cert: (Vec<u8>, Vec<u8>)) -> String {
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

pub(crate) struct Scanner {
    pub(crate) runtime: RuntimeHandle,
}

pub(crate) async fn scanner(origins: &[&str], config: SecurityConfig) -> Scanner {
    let store = Arc::new(MemoryStore::new());
    let skill = SecurityScanSkill::new(
        {
            let mut security_config = config;
            security_config.allowed_origins = origins.iter().map(|o| o.to_string()).collect();
            security_config
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
    pub(crate) async fn scan(&self, data: Value) -> Task {
        let id = self
            .runtime
            .submit(SubmitRequest::new(Message::user(vec![Part::data(data)])))
            .await
            .unwrap()
            .task
            .id;
        let deadline = Instant::now() + DEADLINE;
        loop {
            let task = self.runtime.get(&id, None, Access::Any).await.unwrap();
            if task.status.state.is_terminal() {
                return task;
            }
            assert!(Instant::now() < deadline, "scan never ended");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

pub(crate) fn report(task: &Task) -> Value {
    task.artifacts
        .first()
        .and_then(|a| a.parts[0].as_data().cloned())
        .unwrap_or_else(|| panic!("no report: {:?}", task.status))
}

pub(crate) fn ids(task: &Task) -> BTreeSet<String> {
    report(task)["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_str().unwrap().to_owned())
        .collect()
}

pub(crate) fn reply(task: &Task) -> String {
    task.status
        .message
        .as_ref()
        .map(|m| m.text())
        .unwrap_or_default()
}

pub(crate) fn good_headers() -> Vec<(&'static str, String)> {
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

pub(crate) fn with(
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

pub(crate) const GOOD_PAGE: &str =
    "<!doctype html><html><head><script src=\"/app.js\"></script></head><body>ok</body></html>";

/// An HTTPS site with every recommended header serving `body`, and a scanner allowed
/// to reach it that trusts `pki`'s CA.
pub(crate) async fn well_configured_https_site(pki: &Pki, body: String) -> (String, Scanner) {
    let site = Site {
        headers: good_headers(),
        body,
        ..Site::default()
    };
    let url = https_site(site, pki.leaf(&["127.0.0.1"], false)).await;
    let mut config = SecurityConfig::default();
    config.extra_ca_files = vec![pki.ca_file.path().to_path_buf()];
    let scanner = scanner(&[&url], config).await;
    (url, scanner)
}

/// (what the site does, the check expected, or absent when `expect` is false).
pub(crate) struct Case {
    pub(crate) name: &'static str,
    pub(crate) site: Site,
    pub(crate) check: &'static str,
    pub(crate) expect: bool,
}

pub(crate) fn header_case(
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

/// A site that answers every request with a redirect to the same path on `to`.
pub(crate) async fn redirecting_site(to: &str) -> String {
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

pub(crate) async fn scanner_with_budget(url: &str, requests: usize) -> Scanner {
    scanner(&[url], {
        let mut security_config = SecurityConfig::default();
        security_config.max_active_requests = requests;
        security_config.active_requests_per_second = 100;
        security_config
    })
    .await
}

/// Serves `site` over HTTPS with HTTP redirecting to it, scans it with the HTTP port
/// given, and returns the scan's Observatory grade.
pub(crate) async fn observatory_of(pki: &Pki, site: Site) -> Value {
    let https = https_site(site, pki.leaf(&["127.0.0.1"], false)).await;
    let http = redirecting_site(&https).await;
    let http_port = reqwest::Url::parse(&http).unwrap().port().unwrap();
    let mut config = SecurityConfig::default();
    config.extra_ca_files = vec![pki.ca_file.path().to_path_buf()];
    let scanner = scanner(&[&https, &http], config).await;
    let task = scanner
        .scan(json!({"url": https, "observatory": {"httpPort": http_port}}))
        .await;
    assert_eq!(task.status.state, TaskState::Completed, "{}", reply(&task));
    report(&task)["observatory"].clone()
}
