//! The scanner's HTTP: bounded requests (time, body bytes, header size by hyper), no
//! automatic redirects, every request logged. A TLS certificate problem is recorded as a
//! finding and the scan goes on without verification, so that the rest can be checked.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use reqwest::header::HeaderMap;
use reqwest::{Method, Url};
use serde::Serialize;

use super::config::SecurityConfig;

/// A response, with at most `max-body-bytes` of its body.
#[derive(Debug, Clone)]
pub(crate) struct Response {
    pub(crate) url: Url,
    pub(crate) status: u16,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Vec<u8>,
}

impl Response {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    pub(crate) fn headers_all(&self, name: &str) -> Vec<String> {
        self.headers
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok().map(str::to_owned))
            .collect()
    }

    pub(crate) fn is_html(&self) -> bool {
        self.header("content-type")
            .is_some_and(|t| t.contains("text/html") || t.contains("application/xhtml+xml"))
    }

    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// What went wrong with the TLS certificate or protocol.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum TlsProblem {
    Untrusted(String),
    Expired(String),
    WrongName(String),
    WeakProtocol(String),
    Other(String),
}

/// One request made, for the report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Logged {
    pub(crate) method: String,
    pub(crate) url: String,
    pub(crate) outcome: String,
}

pub(crate) struct Fetcher {
    verifying: reqwest::Client,
    lenient: reqwest::Client,
    /// After a certificate problem, requests go on without verification.
    lenient_now: AtomicBool,
    tls_problem: Mutex<Option<TlsProblem>>,
    max_body: usize,
    log: Mutex<Vec<Logged>>,
}

impl Fetcher {
    /// Reads the extra CA files (once, when the skill is made).
    pub(crate) fn load_roots(config: &SecurityConfig) -> Result<Vec<reqwest::Certificate>, String> {
        let mut roots = Vec::new();
        for path in &config.extra_ca_files {
            let failed = |e: &dyn std::fmt::Display| {
                format!(
                    "skills.security-scan.extra-ca-files: {}: {e}",
                    path.display()
                )
            };
            let pem = std::fs::read(path).map_err(|e| failed(&e))?;
            roots.extend(reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| failed(&e))?);
        }
        Ok(roots)
    }

    /// A fetcher for one scan (its request log and TLS state are the scan's).
    pub(crate) fn new(
        config: &SecurityConfig,
        roots: &[reqwest::Certificate],
    ) -> Result<Fetcher, String> {
        let build = |verify: bool| -> Result<reqwest::Client, String> {
            let mut builder = reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .timeout(Duration::from_millis(config.request_timeout_ms))
                .connect_timeout(Duration::from_millis(config.request_timeout_ms))
                .no_proxy()
                .user_agent(concat!("fundi-security-scan/", env!("CARGO_PKG_VERSION")));
            builder = fundi_ops::resolver::guarded(builder, config.allow_private_networks);
            for root in roots {
                builder = builder.add_root_certificate(root.clone());
            }
            if !verify {
                builder = builder.danger_accept_invalid_certs(true);
            }
            builder
                .build()
                .map_err(|e| format!("security-scan: HTTP client: {e}"))
        };
        Ok(Fetcher {
            verifying: build(true)?,
            lenient: build(false)?,
            lenient_now: AtomicBool::new(false),
            tls_problem: Mutex::new(None),
            max_body: config.max_body_bytes,
            log: Mutex::new(Vec::new()),
        })
    }

    pub(crate) fn tls_problem(&self) -> Option<TlsProblem> {
        self.tls_problem
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub(crate) fn log(&self) -> Vec<Logged> {
        self.log.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn record(&self, method: &Method, url: &Url, outcome: String) {
        tracing::info!(%method, %url, %outcome, "security-scan request");
        self.log
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Logged {
                method: method.to_string(),
                url: url.to_string(),
                outcome,
            });
    }

    /// One request; the error says what happened (timeout, refused, too-large head...).
    pub(crate) async fn request(
        &self,
        method: Method,
        url: &Url,
        headers: &[(&str, &str)],
    ) -> Result<Response, String> {
        let result = self.send(method.clone(), url, headers).await;
        let result = match result {
            Err(error) if url.scheme() == "https" && !self.lenient_now.load(Ordering::Acquire) => {
                match classify(&error) {
                    Some(problem) => {
                        self.tls_problem
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .get_or_insert(problem);
                        self.lenient_now.store(true, Ordering::Release);
                        self.send(method.clone(), url, headers).await
                    }
                    None => Err(error),
                }
            }
            other => other,
        };
        match result {
            Ok(response) => {
                self.record(&method, url, format!("HTTP {}", response.status));
                Ok(response)
            }
            Err(error) => {
                let text = fundi_runtime::error_chain(&error);
                self.record(&method, url, format!("error: {text}"));
                Err(text)
            }
        }
    }

    async fn send(
        &self,
        method: Method,
        url: &Url,
        headers: &[(&str, &str)],
    ) -> Result<Response, reqwest::Error> {
        let client = if self.lenient_now.load(Ordering::Acquire) {
            &self.lenient
        } else {
            &self.verifying
        };
        let mut request = client.request(method, url.clone());
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let mut response = request.send().await?;
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let mut body = Vec::new();
        // Up to the cap; a body that is endless, huge or slow is cut off, not waited for.
        while body.len() < self.max_body {
            match response.chunk().await {
                Ok(Some(chunk)) => {
                    let room = self.max_body - body.len();
                    body.extend_from_slice(&chunk[..chunk.len().min(room)]);
                }
                Ok(None) | Err(_) => break,
            }
        }
        Ok(Response {
            url: url.clone(),
            status,
            headers,
            body,
        })
    }
}

/// The rustls error somewhere inside `error` (io::Errors hide what they wrap from
/// `source()`, and hyper nests them).
fn find_rustls<'a>(error: &'a (dyn std::error::Error + 'static)) -> Option<&'a rustls::Error> {
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(error);
    let mut steps = 0;
    while let Some(e) = current {
        if let Some(tls) = e.downcast_ref::<rustls::Error>() {
            return Some(tls);
        }
        steps += 1;
        if steps > 32 {
            return None;
        }
        current = match e
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
        {
            Some(inner) => Some(inner as &(dyn std::error::Error + 'static)),
            None => e.source(),
        };
    }
    None
}

/// A TLS certificate or protocol problem inside a request error, if that is what it is.
pub(crate) fn classify(error: &reqwest::Error) -> Option<TlsProblem> {
    let tls = find_rustls(error)?;
    let text = tls.to_string();
    Some(match tls {
        rustls::Error::InvalidCertificate(cert) => {
            let kind = format!("{cert:?}");
            if kind.starts_with("Expired") || kind.starts_with("NotValidYet") {
                TlsProblem::Expired(text)
            } else if kind.starts_with("NotValidForName") {
                TlsProblem::WrongName(text)
            } else if kind.starts_with("UnknownIssuer")
                || kind.starts_with("BadSignature")
                || kind.starts_with("UnhandledCriticalExtension")
                || kind.starts_with("InvalidPurpose")
            {
                TlsProblem::Untrusted(text)
            } else {
                TlsProblem::Other(text)
            }
        }
        rustls::Error::PeerIncompatible(_) => TlsProblem::WeakProtocol(text),
        rustls::Error::AlertReceived(alert) if format!("{alert:?}") == "ProtocolVersion" => {
            TlsProblem::WeakProtocol(text)
        }
        _ => TlsProblem::Other(text),
    })
}
