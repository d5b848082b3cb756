//! The streaming methods as SSE, for both bindings: one `data:` line per event holding
//! a whole JSON-RPC response with the request's id (JSON-RPC) or the bare
//! `StreamResponse` (HTTP+JSON), `id:` the task's event sequence. The first event is
//! the task; the stream ends after a terminal state or input-required (auth-required
//! keeps it open), on shutdown, or after an error event.

use fundi_runtime::Access;
use std::convert::Infallible;
use std::time::Duration;

use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use fundi_runtime::{EventStream, Following, TaskId, TaskState, TaskUpdate};
use futures::stream::{self, BoxStream, StreamExt};
use serde_json::Value;

use crate::auth::Caller;
use crate::dialect::{Dialect, Method};
use crate::encode;
use crate::error::ApiError;
use crate::jsonrpc::{Request, failure, success};
use crate::methods;
use crate::params::{TaskIdParams, decode};
use crate::reply;
use crate::state::AppState;
use crate::stream_slots::StreamSlot;

/// How a stream's events are written.
#[derive(Debug, Clone)]
pub(crate) enum Framing {
    /// Each event a JSON-RPC response with the request's id, in the request's dialect;
    /// a failure to open the stream is an error event.
    JsonRpc,
    /// Each event a bare v1.0 `StreamResponse`; a failure to open the stream is an HTTP
    /// error, a failure after it opened an `error` event with a `google.rpc.Status`.
    Rest,
    /// As `Rest`, each event in the v0.3 proto's form (the `/v1/...` routes).
    RestV03,
}

/// What an opened stream starts with and continues from, and the slots it holds.
struct Opened {
    first: Option<(u64, TaskUpdate)>,
    events: EventStream,
    slots: Vec<StreamSlot>,
}

/// Answers a streaming request. On JSON-RPC, every failure after a valid envelope (an
/// unknown task, a bad param, an unsupported version) is one SSE error event, then the
/// end; on HTTP+JSON it is the error's HTTP status.
pub(crate) async fn respond(
    state: AppState,
    caller: Caller,
    request: Request,
    last_event_id: Option<u64>,
    refused: Option<ApiError>,
    framing: Framing,
) -> Response {
    let frame = Frame {
        id: request.id.clone(),
        dialect: request.dialect,
        framing,
    };
    let method = request.method.name();
    let opened = match refused {
        Some(error) => Err(error),
        None => {
            let frame = frame.clone();
            let write = move |item| frame.item(item);
            open_stream(&state, &caller, request, last_event_id, write).await
        }
    };
    let metrics = crate::telemetry::metrics();
    let events: BoxStream<'static, Event> = match opened {
        // Authorization failures are HTTP statuses, not stream events.
        Err(error) if error.http_refusal().is_some() => {
            metrics.request(method, "refused");
            return match frame.framing {
                Framing::JsonRpc => reply::refusal(&frame.id, &error, frame.dialect),
                Framing::Rest | Framing::RestV03 => reply::rest_failure(&error),
            };
        }
        Err(error) => {
            metrics.request(method, "error");
            if let Framing::Rest | Framing::RestV03 = frame.framing {
                return reply::rest_failure(&error);
            }
            stream::once(async move { frame.error(&error) }).boxed()
        }
        Ok(events) => {
            metrics.request(method, "ok");
            events
        }
    };
    let keep_alive = KeepAlive::new()
        .interval(Duration::from_millis(state.config.sse_keep_alive_ms))
        .text("keep-alive");
    let events = events
        .take_until(state.shutdown.clone().cancelled_owned())
        .map(Ok::<_, Infallible>);
    let mut response = Sse::new(events).keep_alive(keep_alive).into_response();
    let headers = response.headers_mut();
    headers.insert("cache-control", "no-cache".parse().expect("static header"));
    headers.insert("x-accel-buffering", "no".parse().expect("static header"));
    response
}

/// Opens a stream for `caller` (both bindings over HTTP and gRPC): its slots are taken,
/// and it yields each item (the task's updates, each with its sequence, until one ends
/// the stream, or the error that ends it) as `write` frames it. Framed inside the
/// stream, so that an update is written where it is made, not moved through another.
pub(crate) async fn open_stream<T: Send + 'static>(
    state: &AppState,
    caller: &Caller,
    request: Request,
    last_event_id: Option<u64>,
    write: impl FnMut(Item) -> T + Send + 'static,
) -> Result<BoxStream<'static, T>, ApiError> {
    crate::params::check_tenant(&request.params)?;
    let slot = state.streams.for_user(&caller.user)?;
    let mut opened = open(state, caller, request, last_event_id).await?;
    opened.slots.push(slot);
    Ok(items(opened, write))
}

/// One item of an open stream.
#[expect(
    clippy::large_enum_variant,
    reason = "items pass one at a time; boxing the update would cost an allocation per event"
)]
pub(crate) enum Item {
    /// An update, with its sequence in the task's events.
    Update(u64, TaskUpdate),
    /// What ended the stream early (a store failing, a task that went away).
    Failed(ApiError),
}

async fn open(
    state: &AppState,
    caller: &Caller,
    request: Request,
    last_event_id: Option<u64>,
) -> Result<Opened, ApiError> {
    let runtime = &*state.runtime;
    let access = Access::Owner(caller.user.as_str());
    match request.method {
        Method::SendStreamingMessage => {
            // A stream follows the task whatever `returnImmediately` says.
            let mut send =
                methods::CheckedSend::decode(state, caller, request.params, request.dialect)
                    .await?;
            let push = send.take_push();
            let Following { accepted, events } = runtime.follow(send.request).await?;
            push.attach(&accepted).await?;
            let slot = state.streams.for_task(accepted.task.id.as_str())?;
            let task = accepted.task.with_history_limit(send.history);
            Ok(Opened {
                first: Some((accepted.seq, TaskUpdate::Task(task))),
                events,
                slots: vec![slot],
            })
        }
        Method::SubscribeToTask => {
            let params: TaskIdParams = decode(request.params)?;
            let id = TaskId::from(params.id);
            if let Some(after) = last_event_id {
                // A reconnect: everything after the last event the client saw, even up
                // to the terminal one it may have missed.
                let events = runtime.subscribe(&id, after, access).await?;
                let slot = state.streams.for_task(id.as_str())?;
                return Ok(Opened {
                    first: None,
                    events,
                    slots: vec![slot],
                });
            }
            let snapshot = runtime.snapshot(&id, None, access).await?;
            let now = snapshot.task.status.state;
            if now.is_terminal() {
                return Err(ApiError::unsupported(format!(
                    "task {id} is already {now}; only tasks that are not terminal can be subscribed to"
                )));
            }
            let events = runtime.subscribe(&id, snapshot.seq, access).await?;
            let slot = state.streams.for_task(id.as_str())?;
            Ok(Opened {
                first: Some((snapshot.seq, TaskUpdate::Task(snapshot.task))),
                events,
                slots: vec![slot],
            })
        }
        _ => Err(ApiError::internal("plain method routed as a stream")),
    }
}

/// Whether the stream ends after a task in this state.
fn ends_stream(state: TaskState) -> bool {
    state.is_terminal() || state == TaskState::InputRequired
}

fn items<T: Send + 'static>(
    opened: Opened,
    mut write: impl FnMut(Item) -> T + Send + 'static,
) -> BoxStream<'static, T> {
    let Opened {
        first,
        mut events,
        slots,
    } = opened;
    async_stream::stream! {
        // Counted while the stream lives (dropped with it, whatever ends it), and so
        // are its slots.
        let _open = crate::telemetry::metrics().sse_open();
        let _slots = slots;
        if let Some((seq, update)) = first {
            let done = matches!(&update, TaskUpdate::Task(t) if ends_stream(t.status.state));
            yield write(Item::Update(seq, update));
            if done {
                return;
            }
        }
        while let Some(event) = events.next().await {
            let event = match event {
                Ok(event) => event,
                Err(error) => {
                    yield write(Item::Failed(ApiError::from(error)));
                    return;
                }
            };
            // A message joining the history is part of the log, but not a stream item.
            let Some(update) = event.is_told().then(|| event.to_update()).flatten() else {
                continue;
            };
            let done = event.status().is_some_and(|s| ends_stream(s.state));
            yield write(Item::Update(event.seq, update));
            if done {
                return;
            }
        }
    }
    .boxed()
}

/// How this stream writes its events.
#[derive(Clone)]
struct Frame {
    /// The JSON-RPC request's id (JSON-RPC only).
    id: Value,
    dialect: Dialect,
    framing: Framing,
}

impl Frame {
    fn item(&self, item: Item) -> Event {
        match item {
            Item::Update(seq, update) => self.data(seq, &update),
            Item::Failed(error) => self.error(&error),
        }
    }

    fn data(&self, seq: u64, update: &TaskUpdate) -> Event {
        let result = encode::update_result(update, self.dialect);
        let body = match self.framing {
            Framing::JsonRpc => success(&self.id, &result),
            Framing::Rest => result.get().to_owned(),
            Framing::RestV03 => serde_json::from_str(result.get())
                .map(|item| crate::v03::rest::stream_response(item).to_string())
                .unwrap_or_else(|_| result.get().to_owned()),
        };
        Event::default().data(body).id(seq.to_string())
    }

    fn error(&self, error: &ApiError) -> Event {
        let body = match self.framing {
            Framing::JsonRpc => failure(&self.id, error, self.dialect),
            Framing::Rest | Framing::RestV03 => error.to_rest_json(),
        };
        Event::default().event("error").data(body.to_string())
    }
}
