//! The runtime's metrics through an in-memory OpenTelemetry exporter: tasks by outcome,
//! and injected chaos counted apart from genuine failures.

use fundi_runtime::testing::scripted::*;
use fundi_runtime::{Runtime, TaskState};
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
use serde_json::json;

/// The sum of a u64 counter's points whose attributes include `with`.
fn counter(exporter: &InMemoryMetricExporter, name: &str, with: (&str, &str)) -> u64 {
    let batches = exporter.get_finished_metrics().unwrap();
    let Some(last) = batches.last() else {
        return 0;
    };
    let mut total = 0;
    for scope in last.scope_metrics() {
        for metric in scope.metrics().filter(|m| m.name() == name) {
            if let AggregatedMetrics::U64(MetricData::Sum(sum)) = metric.data() {
                for point in sum.data_points() {
                    if point
                        .attributes()
                        .any(|kv| kv.key.as_str() == with.0 && kv.value.as_str() == with.1)
                    {
                        total += point.value();
                    }
                }
            }
        }
    }
    total
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chaos_events_and_genuine_failures_are_counted_apart() {
    // The only test in this binary: it owns the global meter provider.
    let exporter = InMemoryMetricExporter::default();
    let provider = SdkMeterProvider::builder()
        .with_reader(PeriodicReader::builder(exporter.clone()).build())
        .build();
    opentelemetry::global::set_meter_provider(provider.clone());

    let rt = Runtime::builder()
        .skill(Scripted::new("chaotic", false))
        .start()
        .await
        .unwrap();
    let survived = submit(&rt, "survives", json!({"chaos": ["latency", "reset"]})).await;
    let broke = submit(
        &rt,
        "breaks",
        json!({"chaos": ["latency"], "fail": "real bug"}),
    )
    .await;
    let panicked = submit(&rt, "panics", json!({"panic": "boom"})).await;
    wait_for_state(&rt, &survived.id, TaskState::Completed).await;
    wait_for_state(&rt, &broke.id, TaskState::Failed).await;
    wait_for_state(&rt, &panicked.id, TaskState::Failed).await;
    provider.force_flush().unwrap();

    assert_eq!(
        counter(&exporter, "fundi.chaos.events", ("fault", "latency")),
        2
    );
    assert_eq!(
        counter(&exporter, "fundi.chaos.events", ("fault", "reset")),
        1
    );
    assert_eq!(counter(&exporter, "fundi.failures", ("source", "skill")), 1);
    assert_eq!(counter(&exporter, "fundi.failures", ("source", "panic")), 1);
    assert_eq!(
        counter(&exporter, "fundi.task.submissions", ("skill", "chaotic")),
        3
    );
    assert_eq!(
        counter(&exporter, "fundi.tasks.finished", ("state", "failed")),
        2
    );
    assert_eq!(
        counter(&exporter, "fundi.tasks.finished", ("state", "completed")),
        1
    );
}
