//! What the runtime reports to OpenTelemetry: metrics through the global meter provider
//! (install it before starting the runtime; until then they go nowhere), and W3C trace
//! context kept with each task so that its spans join the trace of the request that
//! created it, even after a restart.

use std::collections::HashMap;
use std::sync::OnceLock;

mod timed_store;

pub(crate) use timed_store::{TimedStore, under};

use opentelemetry::KeyValue;
use opentelemetry::metrics::{Counter, Histogram, ObservableGauge, UpDownCounter};
use tracing_opentelemetry::OpenTelemetrySpanExt;

use crate::model::{TaskId, TaskState};

/// The instrumentation scope of fundi's metrics.
pub const METER_NAME: &str = "fundi";

/// The target of a run's progress and status events (`SkillContext::progress`,
/// `status`...): debug level, so that a console at `info` shows no line per step, while
/// the run's span still carries them as events where this target is let through (the
/// server's default `telemetry.trace-filter` does).
pub const PROGRESS_TARGET: &str = "fundi_runtime::progress";

/// The runtime's instruments. Names are documented in docs/observability.md.
pub(crate) struct Metrics {
    submissions: Counter<u64>,
    active: UpDownCounter<i64>,
    finished: Counter<u64>,
    duration: Histogram<f64>,
    recoveries: Counter<u64>,
    commit_duration: Histogram<f64>,
    settle_duration: Histogram<f64>,
    chaos_events: Counter<u64>,
    failures: Counter<u64>,
    removed: Counter<u64>,
    parked: Counter<u64>,
    forwarded: Histogram<f64>,
}

/// Histogram buckets for store latencies, in seconds.
const STORE_BOUNDARIES: [f64; 11] = [
    0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0,
];

/// The instruments, made on first use from the global meter provider.
pub(crate) fn metrics() -> &'static Metrics {
    static METRICS: OnceLock<Metrics> = OnceLock::new();
    METRICS.get_or_init(|| {
        let meter = opentelemetry::global::meter(METER_NAME);
        Metrics {
            submissions: meter
                .u64_counter("fundi.task.submissions")
                .with_description("New tasks accepted")
                .with_unit("{task}")
                .build(),
            active: meter
                .i64_up_down_counter("fundi.tasks.active")
                .with_description("Tasks not yet ended, by state (recovered ones included)")
                .with_unit("{task}")
                .build(),
            finished: meter
                .u64_counter("fundi.tasks.finished")
                .with_description("Tasks that reached a terminal state, by state")
                .with_unit("{task}")
                .build(),
            duration: meter
                .f64_histogram("fundi.task.duration")
                .with_description("From a task's creation to its terminal state")
                .with_unit("s")
                .with_boundaries(vec![
                    0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0,
                ])
                .build(),
            recoveries: meter
                .u64_counter("fundi.recoveries")
                .with_description("Unfinished tasks found at start, by what recovery did")
                .with_unit("{task}")
                .build(),
            commit_duration: meter
                .f64_histogram("fundi.store.commit.duration")
                .with_description("Store writes of task changes (with the wait for durability, for those that wait)")
                .with_unit("s")
                .with_boundaries(STORE_BOUNDARIES.to_vec())
                .build(),
            settle_duration: meter
                .f64_histogram("fundi.store.settle.duration")
                .with_description("Waits for written task changes to become durable before they are told")
                .with_unit("s")
                .with_boundaries(STORE_BOUNDARIES.to_vec())
                .build(),
            removed: meter
                .u64_counter("fundi.tasks.removed")
                .with_description("Ended tasks removed by retention (store.retention)")
                .with_unit("{task}")
                .build(),
            parked: meter
                .u64_counter("fundi.tasks.parked")
                .with_description("Tasks waiting for a person whose actor stopped until something wakes them (runtime.park-after-ms)")
                .with_unit("{task}")
                .build(),
            chaos_events: meter
                .u64_counter("fundi.chaos.events")
                .with_description("Faults injected on purpose by a chaos skill")
                .with_unit("{event}")
                .build(),
            forwarded: meter
                .f64_histogram("fundi.cluster.forward.duration")
                .with_description("Requests handed to the node holding their task, until its answer, by outcome")
                .with_unit("s")
                .with_boundaries(vec![
                    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
                ])
                .build(),
            failures: meter
                .u64_counter("fundi.failures")
                .with_description("Genuine failures (never injected chaos), by source")
                .with_unit("{event}")
                .build(),
        }
    })
}

impl Metrics {
    /// Exports the counters a dashboard reads as zero from the start, rather than as
    /// absent until their first event: genuine failures and recoveries, by each of their
    /// labels.
    pub(crate) fn announce(&self) {
        for source in ["skill", "panic", "runtime", "restart"] {
            self.failures.add(0, &[KeyValue::new("source", source)]);
        }
        for outcome in ["resumed", "failed", "waiting", "quarantined"] {
            self.recoveries.add(0, &[KeyValue::new("outcome", outcome)]);
        }
        self.parked.add(0, &[]);
    }

    /// A task at rest gave up its actor.
    pub(crate) fn parked(&self) {
        self.parked.add(1, &[]);
    }

    pub(crate) fn submitted(&self, skill: &str) {
        let skill = KeyValue::new("skill", skill.to_owned());
        self.submissions.add(1, std::slice::from_ref(&skill));
        self.active
            .add(1, &[skill, state_label(TaskState::Submitted)]);
    }

    /// `tasks` unfinished tasks of `skill` in `state`, counted afresh (at recovery).
    pub(crate) fn found(&self, skill: &str, state: TaskState, tasks: usize) {
        let skill = KeyValue::new("skill", skill.to_owned());
        let tasks = i64::try_from(tasks).unwrap_or(i64::MAX);
        self.active.add(tasks, &[skill, state_label(state)]);
    }

    /// A task moved from `from` to `to` (a task counted afresh at recovery: `found`).
    pub(crate) fn state_changed(
        &self,
        skill: &str,
        task_id: &TaskId,
        from: TaskState,
        to: TaskState,
    ) {
        if from == to {
            return;
        }
        let skill = KeyValue::new("skill", skill.to_owned());
        self.active.add(-1, &[skill.clone(), state_label(from)]);
        if to.is_terminal() {
            self.finished.add(1, &[skill.clone(), state_label(to)]);
            if let Some(age) = age_seconds(task_id) {
                let outcome = KeyValue::new("outcome", short_state(to));
                self.duration.record(age, &[skill, outcome]);
            }
        } else {
            self.active.add(1, &[skill, state_label(to)]);
        }
    }

    pub(crate) fn recovered(&self, outcome: &'static str) {
        self.recovered_n(outcome, 1);
    }

    pub(crate) fn recovered_n(&self, outcome: &'static str, tasks: usize) {
        if tasks > 0 {
            self.recoveries
                .add(tasks as u64, &[KeyValue::new("outcome", outcome)]);
        }
    }

    /// A genuine failure: `source` is `skill`, `panic`, `runtime` or `restart`.
    pub(crate) fn failure(&self, source: &'static str) {
        self.failures.add(1, &[KeyValue::new("source", source)]);
    }

    /// A request handed to another node: how it came back (`answered`, `refused`,
    /// `unanswered`, `error`) and how long it took.
    pub(crate) fn forwarded(&self, outcome: &'static str, seconds: f64) {
        self.forwarded
            .record(seconds, &[KeyValue::new("outcome", outcome)]);
    }

    pub(crate) fn removed(&self, tasks: usize) {
        self.removed.add(tasks as u64, &[]);
    }

    pub(crate) fn chaos_event(&self, skill: &str, fault: &str) {
        self.chaos_events.add(
            1,
            &[
                KeyValue::new("skill", skill.to_owned()),
                KeyValue::new("fault", fault.to_owned()),
            ],
        );
    }
}

/// `completed`, `input_required`...: the state without its `TASK_STATE_` prefix.
fn short_state(state: TaskState) -> String {
    state
        .wire_name()
        .trim_start_matches("TASK_STATE_")
        .to_ascii_lowercase()
}

fn state_label(state: TaskState) -> KeyValue {
    KeyValue::new("state", short_state(state))
}

/// The gauges read from the supervisor's counts and the skills' slots (kept alive by
/// the runtime).
pub(crate) struct LiveGauges {
    _live: ObservableGauge<i64>,
    _waiting: ObservableGauge<i64>,
    _cpu_busy: ObservableGauge<i64>,
}

pub(crate) fn live_gauges(
    live: impl Fn() -> usize + Send + Sync + 'static,
    waiting: impl Fn() -> usize + Send + Sync + 'static,
    cpu_busy: impl Fn() -> usize + Send + Sync + 'static,
) -> LiveGauges {
    let meter = opentelemetry::global::meter(METER_NAME);
    LiveGauges {
        _live: meter
            .i64_observable_gauge("fundi.task_actors.live")
            .with_description("Tasks with a live actor (running, queued or waiting for input)")
            .with_unit("{task}")
            .with_callback(move |gauge| gauge.observe(live() as i64, &[]))
            .build(),
        _waiting: meter
            .i64_observable_gauge("fundi.tasks.waiting_for_slot")
            .with_description("Tasks queued for a concurrency slot of their skill")
            .with_unit("{task}")
            .with_callback(move |gauge| gauge.observe(waiting() as i64, &[]))
            .build(),
        _cpu_busy: meter
            .i64_observable_gauge("fundi.cpu.busy")
            .with_description("Workers of the CPU pool busy with skills' CPU-heavy work")
            .with_unit("{worker}")
            .with_callback(move |gauge| gauge.observe(cpu_busy() as i64, &[]))
            .build(),
    }
}

/// Seconds since the task was created, read from its id (a UUIDv7 carries its creation
/// time), so that it holds across restarts too.
fn age_seconds(task_id: &TaskId) -> Option<f64> {
    let uuid = uuid::Uuid::parse_str(task_id.as_str()).ok()?;
    let (secs, nanos) = uuid.get_timestamp()?.to_unix();
    let created = chrono::DateTime::from_timestamp(secs as i64, nanos)?;
    let age = chrono::Utc::now().signed_duration_since(created);
    Some(age.num_milliseconds().max(0) as f64 / 1000.0)
}

/// How the target of an untraced span ends (see [`context_span!`](crate::context_span)).
pub const UNTRACED_TARGET_SUFFIX: &str = "::untraced";

/// A span that carries trace context (a request, a task, a webhook delivery), at info
/// level: `context_span!(traced, "name", fields...)`. When `traced` is false (there is
/// no trace to carry on: the caller sent no `traceparent`, the task stored none), its
/// target is the module's path followed by [`UNTRACED_TARGET_SUFFIX`], so that a
/// subscriber that exports nothing can leave it out of OpenTelemetry: it would only
/// start a trace that nobody records (`fundi serve` does so; an exporting one keeps it).
#[macro_export]
macro_rules! context_span {
    ($traced:expr, $name:literal $(, $($fields:tt)*)?) => {
        if $traced {
            ::tracing::info_span!($name $(, $($fields)*)?)
        } else {
            // The literal is `UNTRACED_TARGET_SUFFIX` (`concat!` takes no constant);
            // were they to differ, `without_a_collector_an_untraced_request_starts_no_trace`
            // fails.
            ::tracing::info_span!(
                target: concat!(module_path!(), "::untraced"),
                $name
                $(, $($fields)*)?
            )
        }
    };
}

/// The W3C `traceparent` of the current span, if OpenTelemetry tracing is installed.
pub(crate) fn current_traceparent() -> Option<String> {
    traceparent_of(&tracing::Span::current())
}

/// The W3C `traceparent` of `span`, if it has an OpenTelemetry context.
pub fn traceparent_of(span: &tracing::Span) -> Option<String> {
    let context = span.context();
    let mut carrier: HashMap<String, String> = HashMap::new();
    opentelemetry::global::get_text_map_propagator(|propagator| {
        propagator.inject_context(&context, &mut carrier);
    });
    carrier.remove("traceparent")
}

/// Makes `span` a child of the span `traceparent` names (no-op for `None`, or when
/// OpenTelemetry tracing is not installed).
pub fn set_parent(span: &tracing::Span, traceparent: Option<&str>) {
    let Some(traceparent) = traceparent else {
        return;
    };
    let mut carrier: HashMap<String, String> = HashMap::new();
    carrier.insert("traceparent".into(), traceparent.to_owned());
    let context =
        opentelemetry::global::get_text_map_propagator(|propagator| propagator.extract(&carrier));
    let _ = span.set_parent(context);
}
