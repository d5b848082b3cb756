//! `fundi chaos-events TASK`: the faults a chaos run injected, in the order it injected
//! them (kept apart from genuine failures, which are in the task's report and logs).

use serde_json::Value;

use super::{admin_get, show, with_query};
use crate::cli::Endpoint;

/// A page of a task's chaos events.
pub(super) async fn events(
    endpoint: Endpoint,
    task: String,
    after: u64,
    limit: u64,
) -> anyhow::Result<()> {
    let (after_text, limit_text) = (after.to_string(), limit.to_string());
    let query = [
        ("task", task.as_str()),
        ("after", after_text.as_str()),
        ("limit", limit_text.as_str()),
    ];
    let result = admin_get(&endpoint, &with_query("/admin/chaos-events", &query)).await?;
    show(&endpoint, &result, |r| {
        let events = r["events"].as_array().cloned().unwrap_or_default();
        if events.is_empty() {
            println!("no chaos events of task {task} after {after}");
        }
        for event in &events {
            println!("{}", line(event));
        }
        if events.len() as u64 >= limit {
            println!("(more: fundi chaos-events {task} --after {})", r["next"]);
        }
    })
}

/// `3 2026-12-02T12:00:00Z fault: latency downstream on connection 7 {"delayMs":200}`.
fn line(event: &Value) -> String {
    let direction = event["direction"]
        .as_str()
        .map(|d| format!(" {d}"))
        .unwrap_or_default();
    let on = match event["connection"].as_u64() {
        Some(connection) => format!(" on connection {connection}"),
        None => " on the proxy".to_owned(),
    };
    let detail = match &event["detail"] {
        Value::Null => String::new(),
        Value::Object(map) if map.is_empty() => String::new(),
        detail => format!(" {detail}"),
    };
    format!(
        "{} {} {}: {}{direction}{on}{detail}",
        event["seq"],
        event["at"].as_str().unwrap_or(""),
        event["phase"].as_str().unwrap_or(""),
        event["fault"].as_str().unwrap_or(""),
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn an_event_is_one_line() {
        let event = json!({"seq": 3, "at": "2026-12-02T12:00:00Z", "phase": "fault",
                           "connection": 7, "fault": "latency", "direction": "downstream",
                           "detail": {"delayMs": 200}});
        assert_eq!(
            super::line(&event),
            "3 2026-12-02T12:00:00Z fault: latency downstream on connection 7 {\"delayMs\":200}"
        );
        let proxy = json!({"seq": 1, "at": "t", "phase": "outage", "fault": "down",
                           "detail": {}});
        assert_eq!(super::line(&proxy), "1 t outage: down on the proxy");
    }
}
