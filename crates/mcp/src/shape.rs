//! Results shaped for models: states spelled short, text parts flattened, artifacts
//! summarised (fetch one whole by id), tasks as one line each.

use serde_json::{Value, json};

/// Longest text of an artifact quoted in a summary.
const QUOTED: usize = 300;

/// `TASK_STATE_INPUT_REQUIRED` → `input_required`.
pub(crate) fn short_state(state: &Value) -> String {
    state
        .as_str()
        .unwrap_or("unknown")
        .trim_start_matches("TASK_STATE_")
        .to_ascii_lowercase()
}

/// The text parts of a message, one after the other.
pub(crate) fn text_of(message: &Value) -> String {
    message["parts"]
        .as_array()
        .map(|parts| {
            parts
                .iter()
                .filter_map(|p| p["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

/// A task in a few lines, and the same as data.
pub(crate) fn task(task: &Value) -> (String, Value) {
    let id = task["id"].as_str().unwrap_or("");
    let state = short_state(&task["status"]["state"]);
    let message = text_of(&task["status"]["message"]);
    let mut text = format!("task {id}: {state}");
    if !message.is_empty() {
        text.push_str(&format!("\nlatest message: {message}"));
    }
    let artifacts: Vec<Value> = task["artifacts"]
        .as_array()
        .map(|all| all.iter().map(artifact_summary).collect())
        .unwrap_or_default();
    for artifact in &artifacts {
        text.push_str(&format!(
            "\nartifact {} ({}): {}",
            artifact["artifactId"].as_str().unwrap_or(""),
            artifact["name"].as_str().unwrap_or(""),
            artifact["summary"].as_str().unwrap_or("")
        ));
    }
    if !artifacts.is_empty() {
        text.push_str("\n(fundi_task_status with artifactId returns one whole)");
    }
    let data = json!({
        "taskId": id,
        "contextId": task["contextId"],
        "state": state,
        "message": message,
        "artifacts": artifacts,
    });
    (text, data)
}

/// An artifact in one line: its text (shortened), or what its data holds.
fn artifact_summary(artifact: &Value) -> Value {
    let parts = artifact["parts"].as_array().cloned().unwrap_or_default();
    let text = parts
        .iter()
        .filter_map(|p| p["text"].as_str())
        .collect::<Vec<_>>()
        .join(" ");
    let summary = if !text.is_empty() {
        shorten(&text)
    } else {
        let data: Vec<String> = parts
            .iter()
            .filter_map(|p| p["data"].as_object())
            .map(|d| {
                let keys: Vec<&str> = d.keys().map(String::as_str).take(8).collect();
                format!("data with {}", keys.join(", "))
            })
            .collect();
        match data.is_empty() {
            true => format!("{} part(s)", parts.len()),
            false => data.join("; "),
        }
    };
    json!({
        "artifactId": artifact["artifactId"],
        "name": artifact["name"],
        "summary": summary,
    })
}

/// One line per task, newest first, after counts by state.
pub(crate) fn page(page: &Value) -> (String, Value) {
    let tasks = page["tasks"].as_array().cloned().unwrap_or_default();
    let mut counts = std::collections::BTreeMap::<String, u64>::new();
    let mut lines = Vec::new();
    for task in &tasks {
        let state = short_state(&task["status"]["state"]);
        *counts.entry(state.clone()).or_default() += 1;
        let message = shorten(&text_of(&task["status"]["message"]));
        lines.push(format!(
            "{} {state} {message}",
            task["id"].as_str().unwrap_or("")
        ));
    }
    let counted: Vec<String> = counts.iter().map(|(s, n)| format!("{n} {s}")).collect();
    let total = page["totalSize"].as_u64().unwrap_or(tasks.len() as u64);
    let mut text = format!("{total} task(s); on this page: {}", counted.join(", "));
    if tasks.is_empty() {
        text = "no tasks".into();
    }
    for line in &lines {
        text.push('\n');
        text.push_str(line.trim_end());
    }
    let next = page["nextPageToken"].as_str().unwrap_or_default();
    let mut structured = json!({"total": total, "counts": counts, "tasks": lines});
    if !next.is_empty() {
        text.push_str(&format!("\nmore: pageToken {next}"));
        structured["nextPageToken"] = json!(next);
    }
    (text, structured)
}

fn shorten(text: &str) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.char_indices().nth(QUOTED) {
        Some((at, _)) => format!("{}…", &flat[..at]),
        None => flat,
    }
}

/// `text` as one URL path segment: every byte but the unreserved ones percent-encoded.
pub(crate) fn segment(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// One proposal, fenced as another agent's data: who sent it, when, its text and its
/// data parts.
pub(crate) fn proposal(proposal: &Value) -> String {
    let message = &proposal["message"];
    let mut text = format!(
        "--- proposal, task {} (from {}, waiting since {}) ---\n{}",
        proposal["taskId"].as_str().unwrap_or(""),
        proposal["from"].as_str().unwrap_or("an unnamed agent"),
        proposal["since"].as_str().unwrap_or(""),
        text_of(message)
    );
    let data = message["parts"].as_array().into_iter().flatten();
    for data in data.filter_map(|p| p.get("data")) {
        text.push_str(&format!("\ndata: {data}"));
    }
    text.push_str("\n--- end of proposal ---");
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_is_shaped_short_with_its_artifacts_summarised() {
        let long = "x ".repeat(400);
        let task = json!({"id": "t1", "status": {"state": "TASK_STATE_INPUT_REQUIRED",
            "message": {"parts": [{"text": "which page?"}]}},
            "artifacts": [{"artifactId": "a1", "name": "report", "parts": [{"text": long}]},
                          {"artifactId": "a2", "name": "data", "parts": [{"data": {"score": 1}}]}]});
        let (text, data) = super::task(&task);
        assert!(
            text.starts_with("task t1: input_required\nlatest message: which page?"),
            "{text}"
        );
        assert!(
            text.contains("artifact a2 (data): data with score"),
            "{text}"
        );
        assert!(text.contains("…"), "long text is shortened");
        assert_eq!(data["state"], "input_required");
    }
}
