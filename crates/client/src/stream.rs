//! A streaming JSON-RPC call (`SendStreamingMessage`, `SubscribeToTask`): the server's
//! Server-Sent Events, each frame's JSON-RPC `result` yielded as it arrives.

use std::pin::Pin;

use futures::{Stream, StreamExt};
use serde_json::Value;

use crate::ClientError;

/// The results of a streaming call, in the order the server sent them; an error frame
/// ends the stream with its error.
pub type Results = Pin<Box<dyn Stream<Item = Result<Value, ClientError>> + Send>>;

/// One result of a stream with the event id the server gave it (what `Last-Event-ID`
/// resumes after).
#[derive(Debug, Clone)]
pub struct Event {
    /// The SSE `id:` of its frame, when it had one.
    pub id: Option<String>,
    /// The frame's JSON-RPC `result`.
    pub result: Value,
}

/// A stream's results with their event ids.
pub type Events = Pin<Box<dyn Stream<Item = Result<Event, ClientError>> + Send>>;

/// The `data:` payloads of the SSE frames in `body`, each frame's JSON-RPC `result`.
pub(crate) fn results(body: reqwest::Response) -> Results {
    Box::pin(events(body).map(|event| event.map(|event| event.result)))
}

/// The SSE frames of `body`: each frame's JSON-RPC `result`, with its `id:`.
pub(crate) fn events(body: reqwest::Response) -> Events {
    let mut bytes = body.bytes_stream();
    Box::pin(async_stream::stream! {
        let mut buffer = String::new();
        while let Some(chunk) = bytes.next().await {
            let chunk = match chunk {
                Ok(chunk) => chunk,
                Err(error) => {
                    yield Err(ClientError::Unexpected(format!("the stream broke off: {error}")));
                    return;
                }
            };
            buffer.push_str(&String::from_utf8_lossy(&chunk));
            while let Some(end) = buffer.find("\n\n") {
                let frame: String = buffer.drain(..end + 2).collect();
                let id = frame
                    .lines()
                    .find_map(|line| line.strip_prefix("id:"))
                    .map(|id| id.trim().to_owned());
                for data in frame.lines().filter_map(|line| line.strip_prefix("data:")) {
                    let item = result_of(data.trim_start()).map(|result| Event {
                        id: id.clone(),
                        result,
                    });
                    let ended = item.is_err();
                    yield item;
                    if ended {
                        return;
                    }
                }
            }
        }
    })
}

/// One frame's JSON-RPC answer: its `result`, or its `error` as a refusal.
fn result_of(data: &str) -> Result<Value, ClientError> {
    let answer: Value = serde_json::from_str(data).map_err(|e| {
        ClientError::Unexpected(format!("a stream frame is not JSON ({e}): {data}"))
    })?;
    if let Some(error) = answer.get("error") {
        return Err(ClientError::Refused {
            message: error["message"].as_str().unwrap_or("error").to_owned(),
            code: error["code"].as_i64(),
        });
    }
    answer
        .get("result")
        .cloned()
        .ok_or_else(|| ClientError::Unexpected(format!("a stream frame has no result: {data}")))
}
