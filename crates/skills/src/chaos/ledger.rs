//! What a chaos run saw, kept in two books that never mix: chaos events (faults injected
//! on purpose: counted per phase, written to the chaos-event log in batches, counted in
//! `fundi.chaos.events` and marked on the run's span) and genuine errors of the proxy or
//! the target (observability events: a warning on the run's span and the report's
//! `errors`, never a chaos event).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use chrono::Utc;
use fundi_ops::chaos::{ChaosEvent, ChaosLog};
use fundi_runtime::{SkillContext, TaskId};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::AbortOnDropHandle;

use super::fault::Direction;

/// Events written to the log in one append, at most.
const BATCH: usize = 256;
/// Distinct genuine errors kept word for word (the rest are counted by kind).
const SAMPLES: usize = 20;

/// The run's two books.
pub(crate) struct Ledger {
    /// The run's context; `None` for a drill's proxy (`drill::FaultProxy`), which
    /// belongs to no run.
    ctx: Option<SkillContext>,
    phases: Vec<String>,
    max_events: usize,
    to_log: mpsc::UnboundedSender<ChaosEvent>,
    books: Mutex<Books>,
}

#[derive(Default)]
struct Books {
    /// Chaos events per phase, by fault type.
    chaos: Vec<BTreeMap<&'static str, u64>>,
    sent_to_log: usize,
    not_logged: u64,
    /// Genuine errors by kind, and the first few as they were.
    genuine: BTreeMap<&'static str, u64>,
    samples: Vec<Value>,
}

/// What the ledger's books hold at the end of a run.
pub(crate) struct Totals {
    /// Chaos events per phase, by fault type.
    pub(crate) chaos: Vec<BTreeMap<&'static str, u64>>,
    /// Chaos events written to the log, and those past `max-events` only counted.
    pub(crate) logged: usize,
    pub(crate) not_logged: u64,
    /// Genuine errors by kind, and samples.
    pub(crate) genuine: BTreeMap<&'static str, u64>,
    pub(crate) samples: Vec<Value>,
}

/// Writes the ledger's chaos events to the log until finished.
pub(crate) struct LogWriter {
    finish: CancellationToken,
    task: AbortOnDropHandle<Result<(), String>>,
}

impl Ledger {
    /// A ledger for a run of `phases`, writing to `log` under `task`.
    pub(crate) fn start(
        ctx: Option<SkillContext>,
        log: Arc<dyn ChaosLog>,
        task: TaskId,
        phases: Vec<String>,
        max_events: usize,
    ) -> (Arc<Ledger>, LogWriter) {
        let (to_log, from_ledger) = mpsc::unbounded_channel();
        let finish = CancellationToken::new();
        let task =
            AbortOnDropHandle::new(tokio::spawn(write(log, task, from_ledger, finish.clone())));
        let books = Books {
            chaos: vec![BTreeMap::new(); phases.len()],
            ..Books::default()
        };
        let ledger = Ledger {
            ctx,
            phases,
            max_events,
            to_log,
            books: Mutex::new(books),
        };
        (Arc::new(ledger), LogWriter { finish, task })
    }

    /// A fault injected on purpose in phase `phase`.
    pub(crate) fn chaos(
        &self,
        phase: usize,
        connection: Option<u64>,
        fault: &'static str,
        direction: Option<Direction>,
        detail: Value,
    ) {
        let name = self.phases.get(phase).cloned().unwrap_or_default();
        let logged = {
            let mut books = self.books.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(counts) = books.chaos.get_mut(phase) {
                *counts.entry(fault).or_default() += 1;
            }
            match books.sent_to_log < self.max_events {
                true => {
                    books.sent_to_log += 1;
                    true
                }
                false => {
                    books.not_logged += 1;
                    false
                }
            }
        };
        let described = json!({"phase": name, "connection": connection,
                               "direction": direction.map(Direction::as_str), "detail": detail});
        if let Some(ctx) = &self.ctx {
            ctx.chaos_event(fault, &described.to_string());
        }
        if logged {
            let event = ChaosEvent {
                at: Utc::now(),
                phase: name,
                connection,
                fault: fault.to_owned(),
                direction: direction.map(|d| d.as_str().to_owned()),
                detail,
            };
            // The writer is gone only once the run is ending.
            let _ = self.to_log.send(event);
        }
    }

    /// A genuine error of the proxy or the target (never injected).
    pub(crate) fn genuine(&self, kind: &'static str, connection: Option<u64>, error: String) {
        let span = self.ctx.as_ref().map(SkillContext::span).cloned();
        tracing::warn!(parent: span.unwrap_or_else(tracing::Span::current), kind, connection, %error, "chaos-run: genuine error");
        let mut books = self.books.lock().unwrap_or_else(|p| p.into_inner());
        *books.genuine.entry(kind).or_default() += 1;
        if books.samples.len() < SAMPLES
            && !books.samples.iter().any(|s| s["error"] == error.as_str())
        {
            books
                .samples
                .push(json!({"kind": kind, "connection": connection,
                                      "error": error, "at": Utc::now()}));
        }
    }

    /// Chaos events so far in `phase`.
    pub(crate) fn chaos_in(&self, phase: usize) -> u64 {
        let books = self.books.lock().unwrap_or_else(|p| p.into_inner());
        books.chaos.get(phase).map_or(0, |c| c.values().sum())
    }

    /// The books as they stand.
    pub(crate) fn totals(&self) -> Totals {
        let books = self.books.lock().unwrap_or_else(|p| p.into_inner());
        Totals {
            chaos: books.chaos.clone(),
            logged: books.sent_to_log,
            not_logged: books.not_logged,
            genuine: books.genuine.clone(),
            samples: books.samples.clone(),
        }
    }
}

impl LogWriter {
    /// Writes what is still queued, then stops; the error says why the log could not be
    /// written.
    pub(crate) async fn finish(self) -> Result<(), String> {
        self.finish.cancel();
        self.task
            .await
            .map_err(|e| format!("the chaos-event writer failed: {e}"))?
    }
}

async fn write(
    log: Arc<dyn ChaosLog>,
    task: TaskId,
    mut events: mpsc::UnboundedReceiver<ChaosEvent>,
    finish: CancellationToken,
) -> Result<(), String> {
    let mut batch = Vec::with_capacity(BATCH);
    loop {
        let finishing = tokio::select! {
            biased;
            n = events.recv_many(&mut batch, BATCH) => n == 0,
            () = finish.cancelled() => true,
        };
        if finishing {
            while let Ok(event) = events.try_recv() {
                batch.push(event);
            }
        }
        if !batch.is_empty() {
            log.append(&task, std::mem::take(&mut batch))
                .await
                .map_err(|e| format!("writing the chaos-event log: {e}"))?;
        }
        if finishing {
            return Ok(());
        }
    }
}
