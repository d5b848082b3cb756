//! One delivery worker per config: it follows the task's event log from the config's
//! cursor and POSTs each event, in order, retrying with exponential backoff and jitter.
//! The cursor moves only after a 2xx, so nothing is skipped; a crash between a delivery
//! and the cursor write sends that event again (at least once). When an event keeps
//! failing past the attempt or age limit, the config is parked as a dead letter (later
//! events wait behind it) until an operator replays it.

use fundi_runtime::Access;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;
use fundi_runtime::store::{DeadLetter, PushConfig, PushFormat};
use fundi_runtime::{RuntimeError, TaskEvent};
use futures::StreamExt;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, RETRY_AFTER};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::Shared;
use super::cursor::{Ended, claim, finish, save};
use super::resting::{Rested, Resting, rest_unless_moved_on};
use crate::dialect::Dialect;
use crate::{encode, telemetry};
use fundi_runtime::error_chain;
use tracing::Instrument;

/// Bytes of a webhook's answer that are read (the rest is dropped unread).
const MAX_RESPONSE_BYTES: usize = 16 * 1024;
/// A task whose events cannot be read, or that has an actor here but whose watch ended
/// with nothing new (the runtime shuts down), is looked at again this often at first,
/// backing off to the maximum.
const IDLE_POLL_MIN: Duration = Duration::from_millis(500);
const IDLE_POLL_MAX: Duration = Duration::from_secs(10);

/// The header carrying the event's sequence number, for receivers to drop duplicates.
pub(crate) const SEQ_HEADER: &str = "X-Fundi-Event-Seq";
/// The push token header (A2A v0.3; the v1.0 SDKs still send it).
pub(crate) const TOKEN_HEADER: &str = "X-A2A-Notification-Token";

enum Outcome {
    Delivered,
    Stopped,
    Dead(DeadLetter),
}

/// Runs the worker of `config` until its task has ended and everything is delivered,
/// delivery is given up, the task has no actor here (the delivery then rests in
/// `resting` until the task wakes), or `stop` is cancelled (config deleted or replaced,
/// shutdown). With several nodes on one store, it first takes the config's delivery;
/// another node's delivery is left to it, and one taken from this node stops here.
pub(crate) async fn run(
    shared: Arc<Shared>,
    config: PushConfig,
    stop: CancellationToken,
    resting: &Resting,
) {
    if !claim(&shared, &config).await {
        return;
    }
    let ended = follow(&shared, &config, &stop, resting).await;
    finish(&shared, &config, ended).await;
}

async fn follow(
    shared: &Shared,
    config: &PushConfig,
    stop: &CancellationToken,
    resting: &Resting,
) -> Ended {
    let (task_id, id) = (&config.task_id, config.id.as_str());
    let mut cursor = match shared.store.cursor(task_id, id).await {
        Ok(cursor) => cursor.unwrap_or_default(),
        Err(error) => {
            tracing::error!(%error, task_id = %task_id, config = id, "push cursor unreadable");
            return Ended::Stopped;
        }
    };
    if cursor.finished || cursor.dead.is_some() {
        return Ended::Done;
    }
    // Deliveries join the task's trace (read once: it never changes).
    let task_trace = shared.runtime.traceparent(task_id).await;
    let mut idle = IDLE_POLL_MIN;
    loop {
        let mut events = match shared
            .runtime
            .watch(task_id, cursor.delivered_seq, Access::Any)
            .await
        {
            Ok(events) => events,
            Err(RuntimeError::TaskNotFound(_)) => return Ended::Done,
            Err(error) => {
                tracing::warn!(%error, task_id = %task_id, "push: cannot read the task's events");
                if sleep_or_stop(IDLE_POLL_MAX, stop).await {
                    return Ended::Stopped;
                }
                continue;
            }
        };
        loop {
            let next = tokio::select! {
                () = stop.cancelled() => return Ended::Stopped,
                next = events.next() => next,
            };
            let event = match next {
                Some(Ok(event)) => event,
                Some(Err(_)) | None => break,
            };
            if event.seq <= cursor.delivered_seq {
                continue;
            }
            idle = IDLE_POLL_MIN;
            if event.is_told() {
                match deliver(shared, config, task_trace.as_deref(), &event, stop).await {
                    Outcome::Delivered => {}
                    Outcome::Stopped => return Ended::Stopped,
                    Outcome::Dead(dead) => {
                        tracing::warn!(
                            task_id = %task_id, config = id, seq = dead.seq,
                            error = %dead.last_error, "push delivery given up: dead letter"
                        );
                        cursor.dead = Some(dead);
                        return save(shared, config, &cursor).await;
                    }
                }
            }
            cursor.delivered_seq = event.seq;
            cursor.finished = event.is_terminal();
            let saved = save(shared, config, &cursor).await;
            if cursor.finished || saved == Ended::Stopped {
                return saved;
            }
        }
        // The watch ended without the terminal event: the task has no actor here (it
        // parked, or none may start: a shutdown, a cut-off). The delivery rests, unless
        // the task moved on meanwhile.
        match rest_unless_moved_on(shared, config, &mut cursor, resting).await {
            Rested::GoOn { nothing_new: false } => {}
            Rested::GoOn { nothing_new: true } => {
                if sleep_or_stop(idle, stop).await {
                    return Ended::Stopped;
                }
                idle = (idle * 2).min(IDLE_POLL_MAX);
            }
            Rested::Finished(ended) => return ended,
            Rested::Resting => return Ended::Resting,
            Rested::Replaced => return Ended::Stopped,
        }
    }
}

/// True if `stop` fired first.
async fn sleep_or_stop(delay: Duration, stop: &CancellationToken) -> bool {
    tokio::select! {
        () = stop.cancelled() => true,
        () = tokio::time::sleep(delay) => false,
    }
}

/// Delivers one event, retrying until it is accepted or given up.
async fn deliver(
    shared: &Shared,
    config: &PushConfig,
    task_trace: Option<&str>,
    event: &TaskEvent,
    stop: &CancellationToken,
) -> Outcome {
    let settings = &shared.settings;
    let metrics = telemetry::metrics();
    let first = Instant::now();
    let first_failure = Utc::now();
    let mut attempts = 0u32;
    loop {
        attempts += 1;
        let span = fundi_runtime::context_span!(
            task_trace.is_some(),
            "push.delivery",
            otel.kind = "client",
            task_id = %config.task_id,
            config = %config.id,
            seq = event.seq,
            attempt = attempts,
            outcome = tracing::field::Empty,
        );
        fundi_runtime::telemetry::set_parent(&span, task_trace);
        let attempt = async {
            match body(shared, config, event).await {
                Ok(body) => post(shared, config, event.seq, body).await,
                Err(why) => Err(Failure {
                    why,
                    retry_after: None,
                }),
            }
        };
        let result = attempt.instrument(span.clone()).await;
        metrics.push_attempt(result.is_ok());
        span.record(
            "outcome",
            if result.is_ok() {
                "delivered"
            } else {
                "failed"
            },
        );
        let failure = match result {
            Ok(()) => return Outcome::Delivered,
            Err(failure) => failure,
        };
        tracing::debug!(task_id = %config.task_id, config = %config.id, seq = event.seq,
                        attempt = attempts, error = %failure.why, "push attempt failed");
        let too_old = first.elapsed() >= Duration::from_secs(settings.max_age_secs);
        if attempts >= settings.max_attempts || too_old {
            metrics.push_dead_letter();
            return Outcome::Dead(DeadLetter {
                seq: event.seq,
                attempts,
                last_error: failure.why,
                first_failure,
                dead_at: Utc::now(),
            });
        }
        let delay = backoff(
            attempts,
            Duration::from_millis(settings.initial_backoff_ms),
            Duration::from_millis(settings.max_backoff_ms),
        );
        let delay = failure.retry_after.map_or(delay, |after| {
            after
                .max(delay)
                .min(Duration::from_millis(settings.max_backoff_ms))
        });
        if sleep_or_stop(delay, stop).await {
            return Outcome::Stopped;
        }
    }
}

/// Exponential backoff with jitter: a random wait between half and all of
/// `initial * 2^(attempt-1)`, capped at `max`.
pub(crate) fn backoff(attempt: u32, initial: Duration, max: Duration) -> Duration {
    let exponential = initial.saturating_mul(1u32 << attempt.saturating_sub(1).min(20));
    let ceiling = exponential.min(max);
    let half = ceiling / 2;
    half + half.mul_f64(rand::random::<f64>())
}

/// The body for an event: a v1.0 StreamResponse, or the v0.3 task as it stands.
async fn body(shared: &Shared, config: &PushConfig, event: &TaskEvent) -> Result<Value, String> {
    match config.format {
        PushFormat::StreamResponse => event
            .to_update()
            .map(|update| encode::update_value(&update, Dialect::V1))
            .ok_or_else(|| format!("event {} is not told to webhooks", event.seq)),
        PushFormat::V03Task => shared
            .runtime
            .get(&config.task_id, None, Access::Any)
            .await
            .map(|task| encode::task(&task, Dialect::V03))
            .map_err(|e| format!("reading the task: {e}")),
    }
}

struct Failure {
    why: String,
    retry_after: Option<Duration>,
}

async fn post(shared: &Shared, config: &PushConfig, seq: u64, body: Value) -> Result<(), Failure> {
    let fail = |why: String| Failure {
        why,
        retry_after: None,
    };
    let url = reqwest::Url::parse(&config.url).map_err(|e| fail(e.to_string()))?;
    // Names are checked by the resolver at connect time; literal addresses here.
    shared.policy.check_literal(&url).map_err(fail)?;
    let mut request = shared
        .client
        .post(url)
        .timeout(Duration::from_millis(shared.settings.timeout_ms))
        .header(CONTENT_TYPE, "application/json")
        .header(SEQ_HEADER, seq.to_string())
        // Sent onward: the delivery span's context when tracing is installed.
        .header(
            "traceparent",
            fundi_runtime::telemetry::traceparent_of(&tracing::Span::current())
                .unwrap_or_else(|| traceparent(&config.task_id)),
        );
    if let Some(token) = &config.token {
        request = request.header(TOKEN_HEADER, token);
    }
    if let Some(auth) = &config.authentication
        && !auth.credentials.is_empty()
    {
        request = request.header(
            AUTHORIZATION,
            format!("{} {}", auth.scheme, auth.credentials),
        );
    }
    let mut response = request
        .body(body.to_string())
        .send()
        .await
        .map_err(|e| fail(error_chain(&e)))?;
    let status = response.status();
    let retry_after = response
        .headers()
        .get(RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(Duration::from_secs);
    // Read a little of the answer (so the connection can be reused), never all of it.
    let mut read = 0;
    while read < MAX_RESPONSE_BYTES {
        match response.chunk().await {
            Ok(Some(chunk)) => read += chunk.len(),
            _ => break,
        }
    }
    if status.is_success() {
        Ok(())
    } else {
        Err(Failure {
            why: format!("the webhook answered HTTP {status}"),
            retry_after,
        })
    }
}

/// W3C trace context for a delivery when OpenTelemetry tracing is not installed: the
/// task's id is the trace id (a UUID is 128 bits) and each delivery a new span id.
fn traceparent(task_id: &fundi_runtime::TaskId) -> String {
    let trace = match uuid::Uuid::parse_str(task_id.as_str()) {
        Ok(uuid) => uuid.simple().to_string(),
        Err(_) => format!("{:032x}", fnv(task_id.as_str().as_bytes())),
    };
    let span = loop {
        let span: u64 = rand::random();
        if span != 0 {
            break span;
        }
    };
    format!("00-{trace}-{span:016x}-01")
}

fn fnv(bytes: &[u8]) -> u128 {
    bytes
        .iter()
        .fold(0x6c62272e07bb014262b821756295c58d, |hash: u128, byte| {
            (hash ^ u128::from(*byte)).wrapping_mul(0x0000000001000000000000000000013B)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_within_jitter_and_stops_at_the_cap() {
        let (initial, max) = (Duration::from_millis(100), Duration::from_secs(2));
        for attempt in 1..10 {
            let ceiling = (initial * (1 << (attempt - 1))).min(max);
            let delay = backoff(attempt, initial, max);
            assert!(
                delay >= ceiling / 2 && delay <= ceiling,
                "{attempt}: {delay:?}"
            );
        }
        assert!(backoff(64, initial, max) <= max);
    }

    #[test]
    fn traceparent_carries_the_task_uuid_as_trace_id() {
        let id = fundi_runtime::TaskId::from("0193c0de-1234-7000-8000-00000000abcd");
        let header = traceparent(&id);
        let parts: Vec<&str> = header.split('-').collect();
        assert_eq!(parts[0], "00");
        assert_eq!(parts[1], "0193c0de12347000800000000000abcd");
        assert_eq!(parts[2].len(), 16);
        assert_eq!(parts[3], "01");
    }
}
