//! A peer's Server-Sent Events, each frame read as a stream event.

use std::pin::Pin;

use futures::{Stream, StreamExt};
use serde_json::Value;

use crate::error::PeerError;
use crate::remote::RemoteEvent;

/// The events of a subscription, in the order the peer sent them; an error ends it.
pub(crate) type Events = Pin<Box<dyn Stream<Item = Result<RemoteEvent, PeerError>> + Send>>;

/// How a stream's frames carry their events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Frames {
    /// JSON-RPC envelopes of v1.0 `StreamResponse`s.
    Enveloped,
    /// JSON-RPC envelopes of v0.3 kind-tagged objects.
    EnvelopedV03,
    /// The events themselves (HTTP+JSON).
    Bare,
}

/// The events of `response`, its frames read as `frames` says.
pub(crate) fn events(response: reqwest::Response, peer: String, frames: Frames) -> Events {
    let mut bytes = response.bytes_stream();
    Box::pin(async_stream::stream! {
        let mut buffer = String::new();
        while let Some(chunk) = bytes.next().await {
            let chunk = match chunk {
                Ok(chunk) => chunk,
                Err(error) => {
                    yield Err(PeerError::Unreachable {
                        peer: peer.clone(),
                        reason: format!("the stream broke off: {}", fundi_runtime::error_chain(&error)),
                    });
                    return;
                }
            };
            buffer.push_str(&String::from_utf8_lossy(&chunk).replace("\r\n", "\n"));
            while let Some(end) = buffer.find("\n\n") {
                let frame: String = buffer.drain(..end + 2).collect();
                let data: Vec<&str> = frame
                    .lines()
                    .filter_map(|line| line.strip_prefix("data:"))
                    .map(str::trim_start)
                    .collect();
                if data.is_empty() {
                    continue;
                }
                let event = event_of(&data.join("\n"), &peer, frames);
                let ended = event.is_err();
                yield event;
                if ended {
                    return;
                }
            }
        }
    })
}

fn event_of(data: &str, peer: &str, frames: Frames) -> Result<RemoteEvent, PeerError> {
    let unexpected = |reason: String| PeerError::Unexpected {
        peer: peer.to_owned(),
        reason,
    };
    let frame: Value = serde_json::from_str(data)
        .map_err(|e| unexpected(format!("a stream frame is not JSON ({e})")))?;
    if let Some(error) = frame.get("error") {
        return Err(PeerError::Refused {
            peer: peer.to_owned(),
            message: error["message"].as_str().unwrap_or("an error").to_owned(),
            code: error["code"].as_i64(),
        });
    }
    let event = match frames {
        Frames::Bare => frame,
        _ => frame
            .get("result")
            .cloned()
            .ok_or_else(|| unexpected("a stream frame without a result".into()))?,
    };
    let event = match frames {
        Frames::EnvelopedV03 => super::v03::event(event).map_err(unexpected)?,
        _ => event,
    };
    RemoteEvent::parse(&event).map_err(unexpected)
}
