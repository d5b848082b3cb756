//! How the client prints what the server answers: tasks, pages of tasks, stream
//! items, issues and dead letters, as short lines for a person.

use serde_json::Value;

pub(super) fn print_issues(result: &Value) {
    let issues = result["issues"].as_array().cloned().unwrap_or_default();
    if issues.is_empty() {
        println!("no issues");
    }
    for issue in issues {
        // The whole id: it is what `heal-issue` takes.
        let heal = match issue["heal"]["taskId"].as_str() {
            Some(task) if issue["heal"]["state"].is_null() => format!("; heal {task}: gone"),
            Some(task) => format!("; heal {task}: {}", short_state(&issue["heal"]["state"])),
            None => String::new(),
        };
        println!(
            "{} [{} {}] {} {}: {} ({}, seen {} times{heal})",
            issue["fingerprint"].as_str().unwrap_or(""),
            issue["source"].as_str().unwrap_or(""),
            issue["severity"].as_str().unwrap_or(""),
            issue["location"].as_str().unwrap_or(""),
            issue["target"].as_str().unwrap_or(""),
            issue["title"].as_str().unwrap_or(""),
            issue["status"].as_str().unwrap_or(""),
            issue["occurrences"],
        );
    }
}

pub(super) fn print_dead_letters(result: &Value) {
    let letters = result["deadLetters"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if letters.is_empty() {
        println!("no dead letters");
    }
    for letter in letters {
        println!(
            "task {} config {} -> {}: stuck at event {} after {} attempts: {}",
            letter["taskId"].as_str().unwrap_or(""),
            letter["configId"].as_str().unwrap_or(""),
            letter["url"].as_str().unwrap_or(""),
            letter["seq"],
            letter["attempts"],
            letter["lastError"].as_str().unwrap_or(""),
        );
    }
}

fn text_of(message: &Value) -> String {
    message["parts"]
        .as_array()
        .map(|parts| {
            parts
                .iter()
                .filter_map(|p| {
                    p["text"]
                        .as_str()
                        .map(str::to_owned)
                        .or_else(|| p.get("data").map(data_text))
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default()
}

/// A data part as text: indented on a terminal (a report reads better), on one line
/// otherwise (for `grep`).
fn data_text(data: &Value) -> String {
    use std::io::IsTerminal;
    match std::io::stdout().is_terminal() {
        true => serde_json::to_string_pretty(data).unwrap_or_default(),
        false => data.to_string(),
    }
}

pub(super) fn short_state(state: &Value) -> String {
    state
        .as_str()
        .unwrap_or("?")
        .trim_start_matches("TASK_STATE_")
        .to_lowercase()
        .replace('_', "-")
}

pub(super) fn print_task(task: &Value) {
    println!(
        "task {} (context {}): {}",
        task["id"].as_str().unwrap_or("?"),
        task["contextId"].as_str().unwrap_or("?"),
        short_state(&task["status"]["state"])
    );
    let id = task["id"].as_str().unwrap_or("?");
    if let Some(message) = task["status"].get("message") {
        println!("  {}", summarised(&text_of(message), id));
    }
    for artifact in task["artifacts"].as_array().into_iter().flatten() {
        let name = artifact["name"]
            .as_str()
            .or(artifact["artifactId"].as_str())
            .unwrap_or("?");
        println!("  artifact {name}: {}", summarised(&text_of(artifact), id));
    }
}

/// Most lines of an artifact printed in a task's summary.
const MOST_LINES: usize = 40;
/// Most characters of an artifact printed in a task's summary.
const MOST_CHARS: usize = 4000;

/// `text` whole when it is short; else its start, saying how much is left out and how
/// to get it whole.
fn summarised(text: &str, task: &str) -> String {
    let lines = text.lines().count();
    let chars = text.chars().count();
    if lines <= MOST_LINES && chars <= MOST_CHARS {
        return text.to_owned();
    }
    let mut shown: String = text.lines().take(MOST_LINES).collect::<Vec<_>>().join("\n");
    if let Some((cut, _)) = shown.char_indices().nth(MOST_CHARS) {
        shown.truncate(cut);
    }
    let left = chars.saturating_sub(shown.chars().count());
    format!(
        "{shown}\n  ... ({left} more characters of {lines} line(s): `fundi get {task} --json` \
         shows it whole)"
    )
}

pub(super) fn print_list(page: &Value) {
    for task in page["tasks"].as_array().into_iter().flatten() {
        println!(
            "{}  {:<15} {}",
            task["id"].as_str().unwrap_or("?"),
            short_state(&task["status"]["state"]),
            task["status"]["timestamp"].as_str().unwrap_or("")
        );
    }
    println!("{} of {} tasks", page["pageSize"], page["totalSize"]);
    if let Some(token) = page["nextPageToken"].as_str().filter(|t| !t.is_empty()) {
        println!("next page: --page-token {token}");
    }
}

pub(super) fn print_stream_item(item: &Value) {
    if let Some(task) = item.get("task") {
        print_task(task);
    } else if let Some(update) = item.get("statusUpdate") {
        let status = &update["status"];
        let note = status.get("message").map(text_of).unwrap_or_default();
        let progress = status["message"]["metadata"]["progress"]
            .as_f64()
            .map(|p| format!(" ({:.0}%)", p * 100.0))
            .unwrap_or_default();
        println!("{}{progress}: {note}", short_state(&status["state"]));
    } else if let Some(update) = item.get("artifactUpdate") {
        let artifact = &update["artifact"];
        let name = artifact["name"]
            .as_str()
            .or(artifact["artifactId"].as_str())
            .unwrap_or("?");
        println!("artifact {name}: {}", text_of(artifact));
    } else if let Some(message) = item.get("message") {
        println!("message: {}", text_of(message));
    }
}
