//! Every request a page in the browser makes, served by fundi: the browser is paused
//! on each one (the DevTools protocol's `Fetch` domain), and fundi fetches it with the
//! same client as static mode (allowed origins, the special-purpose address filter, no
//! redirects followed on its own) and hands the browser the answer, or refuses it.
//! Chromium itself reaches no network (its proxy is an address that answers nothing),
//! so what is not served here is not reached at all: WebSockets included.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use chromiumoxide::Page;
use chromiumoxide::cdp::browser_protocol::fetch::{
    EventRequestPaused, FailRequestParams, FulfillRequestParams, HeaderEntry,
};
use chromiumoxide::cdp::browser_protocol::network::ErrorReason;
use futures::StreamExt;
use reqwest::Url;
use tokio::sync::watch;

use crate::origins::Origins;

/// The address an inline page is served at in the browser: a name no resolver answers
/// (`.invalid`, RFC 2606), served by fundi alone.
pub(super) const INLINE_ORIGIN: &str = "https://inline.fundi.invalid";

/// The requests of a run's pages: those under way now, and those refused.
#[derive(Debug)]
pub(super) struct Traffic {
    /// Requests refused, by why (`not an allowed origin`, `service worker`, ...).
    refused: Mutex<BTreeMap<String, usize>>,
    /// Requests being answered now; a page settles when it stays at none.
    in_flight: watch::Sender<usize>,
}

impl Default for Traffic {
    fn default() -> Traffic {
        Traffic {
            refused: Mutex::default(),
            in_flight: watch::Sender::new(0),
        }
    }
}

impl Traffic {
    fn refuse(&self, why: &str) {
        let mut refused = self.refused.lock().unwrap_or_else(|p| p.into_inner());
        *refused.entry(why.to_owned()).or_default() += 1;
    }

    /// The refusals so far, by why, for the report.
    pub(super) fn refused(&self) -> BTreeMap<String, usize> {
        self.refused
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Follows the count of requests under way.
    pub(super) fn in_flight(&self) -> watch::Receiver<usize> {
        self.in_flight.subscribe()
    }
}

/// How the requests of a run are served.
#[derive(Clone)]
pub(super) struct Gate {
    pub(super) client: reqwest::Client,
    pub(super) origins: Origins,
    /// Largest answer handed to the browser, in bytes.
    pub(super) max_bytes: usize,
    /// The inline page, served at [`INLINE_ORIGIN`], when the run audits one.
    pub(super) inline: Option<Arc<String>>,
    pub(super) traffic: Arc<Traffic>,
}

/// Serves `page`'s paused requests until the page goes.
pub(super) async fn serve(page: Page, gate: Gate) {
    let Ok(mut paused) = page.event_listener::<EventRequestPaused>().await else {
        return;
    };
    while let Some(event) = paused.next().await {
        let (page, gate) = (page.clone(), gate.clone());
        // Counted before the answer is under way, so that the page is never seen quiet
        // between a request and its fetch.
        gate.traffic.in_flight.send_modify(|n| *n += 1);
        tokio::spawn(async move {
            let answer = gate.answer(&event).await;
            let sent = match answer {
                Ok(fulfilled) => page.execute(fulfilled).await.map(drop),
                Err((why, reason)) => {
                    gate.traffic.refuse(why);
                    let refused = FailRequestParams::new(event.request_id.clone(), reason);
                    page.execute(refused).await.map(drop)
                }
            };
            if let Err(error) = sent {
                tracing::debug!(%error, "a paused request could not be answered");
            }
            gate.traffic.in_flight.send_modify(|n| *n -= 1);
        });
    }
}

type Refusal = (&'static str, ErrorReason);

impl Gate {
    async fn answer(&self, event: &EventRequestPaused) -> Result<FulfillRequestParams, Refusal> {
        let request = &event.request;
        let url = Url::parse(&request.url).map_err(|_| ("not a URL", ErrorReason::Failed))?;
        // A service worker would serve the page's later requests from outside this gate.
        if header(&request.headers, "service-worker").is_some() {
            return Err(("service worker", ErrorReason::BlockedByClient));
        }
        if let Some(html) = &self.inline
            && url.origin().ascii_serialization() == INLINE_ORIGIN
        {
            let kind = HeaderEntry::new("content-type", "text/html; charset=utf-8");
            return match url.path() {
                "/" => Ok(fulfilled(event, 200, vec![kind], html.as_bytes())),
                _ => Err(("not an allowed origin", ErrorReason::BlockedByClient)),
            };
        }
        if !matches!(url.scheme(), "http" | "https") || !self.origins.allows(&url) {
            return Err(("not an allowed origin", ErrorReason::BlockedByClient));
        }
        let method = reqwest::Method::from_bytes(request.method.as_bytes())
            .map_err(|_| ("not an HTTP method", ErrorReason::Failed))?;
        let mut outgoing = self.client.request(method, url.clone());
        for name in ["accept", "content-type", "accept-language"] {
            if let Some(value) = header(&request.headers, name) {
                outgoing = outgoing.header(name, value);
            }
        }
        if let Some(entries) = &request.post_data_entries {
            let mut body = Vec::new();
            for entry in entries {
                if let Some(bytes) = &entry.bytes {
                    let chunk = base64::engine::general_purpose::STANDARD
                        .decode(AsRef::<str>::as_ref(bytes))
                        .map_err(|_| ("unreadable request body", ErrorReason::Failed))?;
                    body.extend_from_slice(&chunk);
                }
            }
            outgoing = outgoing.body(body);
        }
        let mut response = outgoing.send().await.map_err(|_| {
            (
                "unreachable or a special-purpose address",
                ErrorReason::AddressUnreachable,
            )
        })?;
        let status = response.status().as_u16();
        let headers: Vec<HeaderEntry> = response
            .headers()
            .iter()
            .filter(|(name, _)| !HOP_BY_HOP.contains(&name.as_str()))
            .filter_map(|(name, value)| Some(HeaderEntry::new(name.as_str(), value.to_str().ok()?)))
            .collect();
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|_| ("the answer broke off", ErrorReason::ConnectionClosed))?
        {
            if body.len() + chunk.len() > self.max_bytes {
                return Err(("larger than max-page-bytes", ErrorReason::BlockedByResponse));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(fulfilled(event, status.into(), headers, &body))
    }
}

/// Headers of one connection, not of the answer handed over.
const HOP_BY_HOP: [&str; 6] = [
    "connection",
    "keep-alive",
    "transfer-encoding",
    "te",
    "upgrade",
    "content-length",
];

/// The browser's answer to a paused request.
fn fulfilled(
    event: &EventRequestPaused,
    status: i64,
    headers: Vec<HeaderEntry>,
    body: &[u8],
) -> FulfillRequestParams {
    let mut answer = FulfillRequestParams::new(event.request_id.clone(), status);
    answer.response_headers = Some(headers);
    answer.body = Some(
        base64::engine::general_purpose::STANDARD
            .encode(body)
            .into(),
    );
    answer
}

/// A request header's value, whatever its case.
fn header<'a>(
    headers: &'a chromiumoxide::cdp::browser_protocol::network::Headers,
    name: &str,
) -> Option<&'a str> {
    headers
        .inner()
        .as_object()?
        .iter()
        .find(|(key, _)| key.eq_ignore_ascii_case(name))
        .and_then(|(_, value)| value.as_str())
}
