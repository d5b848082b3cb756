//! What Observatory's retriever fetches: the site's start page over HTTP and over HTTPS,
//! each a session following up to ten redirects with a cookie jar; the CORS preflight.
//! Nothing leaves the allowed origins: what the allow list kept fundi from fetching is
//! said, and the grade is then marked as not exact.

use reqwest::{Method, Url};

use super::{CORS_ORIGIN, Retrieval, Session};
use crate::security::http::{Fetcher, Logged, Response};

/// Redirects a session follows (Observatory's `MAX_REDIRECTS`).
const MAX_REDIRECTS: usize = 10;
const REDIRECT_STATUSES: &[u16] = &[301, 302, 303, 307, 308];
const ACCEPT: &str = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";

/// Where the two sessions start: the entry URL for its own scheme, and the other
/// scheme on its default port unless a port is given (Observatory's `httpPort` and
/// `httpsPort` options).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Ports {
    pub(crate) http: Option<u16>,
    pub(crate) https: Option<u16>,
}

/// What was fetched, what could not be and why, and the requests made.
pub(crate) struct Retrieved {
    pub(crate) retrieval: Retrieval,
    pub(crate) not_fetched: Vec<String>,
    pub(crate) requests: Vec<Logged>,
}

fn start_url(entry: &Url, scheme: &str, port: Option<u16>) -> Option<Url> {
    let mut url = entry.clone();
    if entry.scheme() != scheme {
        url.set_scheme(scheme).ok()?;
        url.set_port(port).ok()?;
    }
    url.set_fragment(None);
    Some(url)
}

/// Follows redirects from `url`, within `allowed`; every response on the way.
async fn follow(
    fetcher: &Fetcher,
    method: Method,
    url: &Url,
    headers: &[(&str, &str)],
    allowed: &(dyn Fn(&Url) -> bool + Sync),
    not_fetched: &mut Vec<String>,
) -> Option<Vec<Response>> {
    let mut chain: Vec<Response> = Vec::new();
    let mut current = url.clone();
    loop {
        if !allowed(&current) {
            not_fetched.push(format!("{current}: not an allowed origin"));
            return (!chain.is_empty()).then_some(chain);
        }
        let response = fetcher
            .request(method.clone(), &current, headers)
            .await
            .ok()?;
        let next = (REDIRECT_STATUSES.contains(&response.status) && chain.len() < MAX_REDIRECTS)
            .then(|| {
                response
                    .header("location")
                    .and_then(|l| current.join(l).ok())
            })
            .flatten();
        chain.push(response);
        match next {
            Some(next) => current = next,
            None => return Some(chain),
        }
    }
}

/// One session; `None` when its start cannot be reached (or may not be).
async fn session(
    fetcher: &Fetcher,
    url: Url,
    allowed: &(dyn Fn(&Url) -> bool + Sync),
    not_fetched: &mut Vec<String>,
) -> Option<Session> {
    let mut chain = follow(
        fetcher,
        Method::GET,
        &url,
        &[("accept", ACCEPT)],
        allowed,
        not_fetched,
    )
    .await?;
    let set_cookies = chain
        .iter()
        .flat_map(|r| {
            r.headers_all("set-cookie")
                .into_iter()
                .map(|c| (r.url.clone(), c))
        })
        .collect();
    let route = chain.iter().map(|r| r.url.clone()).collect();
    let response = chain.pop()?;
    Some(Session {
        url,
        route,
        response,
        verified: fetcher.tls_problem().is_none(),
        set_cookies,
    })
}

/// Fetches what Observatory's retriever fetches for the site `entry` is on.
pub(crate) async fn retrieve(
    make_fetcher: &(dyn Fn() -> Result<Fetcher, String> + Sync),
    entry: &Url,
    ports: Ports,
    allowed: &(dyn Fn(&Url) -> bool + Sync),
) -> Result<Retrieved, String> {
    let (http_fetcher, https_fetcher) = (make_fetcher()?, make_fetcher()?);
    let mut not_fetched = Vec::new();
    let mut https_not_fetched = Vec::new();
    let http_url = start_url(entry, "http", ports.http);
    let https_url = start_url(entry, "https", ports.https);
    let (http, https) = tokio::join!(
        async {
            match http_url {
                Some(url) => session(&http_fetcher, url, allowed, &mut not_fetched).await,
                None => None,
            }
        },
        async {
            match https_url {
                Some(url) => session(&https_fetcher, url, allowed, &mut https_not_fetched).await,
                None => None,
            }
        }
    );
    not_fetched.extend(https_not_fetched);
    let mut retrieval = Retrieval {
        host: entry.host_str().unwrap_or_default().to_lowercase(),
        http,
        https,
        cors: None,
    };
    let auto_is_https = retrieval.https.is_some();
    let fetcher = if auto_is_https {
        &https_fetcher
    } else {
        &http_fetcher
    };
    let auto = if auto_is_https {
        retrieval.https.as_mut()
    } else {
        retrieval.http.as_mut()
    };
    if let Some(auto) = auto {
        // Observatory's jar sees robots.txt (and its route grows by it) only in a session
        // that went on without certificate checks; elsewhere the fetch changes nothing.
        if !auto.verified
            && let Ok(robots) = auto.url.join("/robots.txt")
            && let Some(chain) = follow(
                fetcher,
                Method::GET,
                &robots,
                &[("accept", "text/plain,*/*;q=0.8")],
                allowed,
                &mut not_fetched,
            )
            .await
        {
            for response in &chain {
                auto.set_cookies.extend(
                    response
                        .headers_all("set-cookie")
                        .into_iter()
                        .map(|c| (response.url.clone(), c)),
                );
                auto.route.push(response.url.clone());
            }
        }
        let cors_url = auto.route.last().unwrap_or(&auto.url).clone();
        let preflight = [
            ("access-control-request-method", "GET"),
            ("origin", CORS_ORIGIN),
        ];
        retrieval.cors = follow(
            fetcher,
            Method::OPTIONS,
            &cors_url,
            &preflight,
            allowed,
            &mut not_fetched,
        )
        .await
        .and_then(|mut chain| chain.pop());
    }
    let mut requests = http_fetcher.log();
    requests.extend(https_fetcher.log());
    Ok(Retrieved {
        retrieval,
        not_fetched,
        requests,
    })
}
