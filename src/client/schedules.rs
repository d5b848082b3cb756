//! `fundi schedules`: the admin routes of scheduled runs.

use anyhow::Context;
use serde_json::{Value, json};

use super::{admin_delete, admin_get, admin_post, show};
use crate::cli::ScheduleCommand;

pub(super) async fn run(command: ScheduleCommand) -> anyhow::Result<()> {
    match command {
        ScheduleCommand::Create {
            endpoint,
            skill,
            cron,
            time_zone,
            data,
            text,
        } => {
            let mut body = json!({"skill": skill, "cron": cron});
            if let Some(zone) = time_zone {
                body["timeZone"] = json!(zone);
            }
            if let Some(data) = data {
                let data: Value = serde_json::from_str(&data).context("--data is not JSON")?;
                body["data"] = data;
            }
            if let Some(text) = text {
                body["text"] = json!(text);
            }
            let schedule = admin_post(&endpoint, &path(""), Some(&body)).await?;
            show(&endpoint, &schedule, print_schedule)
        }
        ScheduleCommand::List { endpoint } => {
            let result = admin_get(&endpoint, &path("")).await?;
            show(&endpoint, &result, |r| {
                let schedules = r["schedules"].as_array().cloned().unwrap_or_default();
                if schedules.is_empty() {
                    println!("no schedules");
                }
                schedules.iter().for_each(print_schedule);
            })
        }
        ScheduleCommand::Show { endpoint, id } => {
            let schedule = admin_get(&endpoint, &path(&format!("/{id}"))).await?;
            show(&endpoint, &schedule, print_schedule)
        }
        ScheduleCommand::Pause { endpoint, id } => {
            let rest = format!("/{id}/pause");
            let schedule = admin_post(&endpoint, &path(&rest), None).await?;
            show(&endpoint, &schedule, print_schedule)
        }
        ScheduleCommand::Resume { endpoint, id } => {
            let rest = format!("/{id}/resume");
            let schedule = admin_post(&endpoint, &path(&rest), None).await?;
            show(&endpoint, &schedule, print_schedule)
        }
        ScheduleCommand::Delete { endpoint, id } => {
            let result = admin_delete(&endpoint, &path(&format!("/{id}"))).await?;
            show(&endpoint, &result, |_| println!("deleted schedule {id}"))
        }
    }
}

fn path(rest: &str) -> String {
    format!("/admin/schedules{rest}")
}

/// `sch-… security-scan "0 3 * * *" (UTC), next 2026-12-03T03:00:00Z; fired 4; last: task …`
fn print_schedule(schedule: &Value) {
    let text = |field: &str| schedule[field].as_str().unwrap_or("").to_owned();
    let state = match schedule["paused"].as_bool() {
        Some(true) => "paused".to_owned(),
        _ => format!("next {}", text("nextFire")),
    };
    let last = &schedule["last"];
    let last = match (last["taskId"].as_str(), last["error"].as_str()) {
        (Some(task), _) => format!("; last: task {task}"),
        (None, Some(error)) => format!("; last firing made no task: {error}"),
        _ => String::new(),
    };
    let skipped = match schedule["skipped"].as_u64() {
        Some(0) | None => String::new(),
        Some(n) => format!(", {n} missed while down"),
    };
    println!(
        "{} {} {:?} ({}), {state}; fired {}{skipped}{last}",
        text("id"),
        text("skill"),
        text("cron"),
        text("zone"),
        schedule["fired"],
    );
}
