//! `fundi approvals`, `fundi approve`, `fundi reject`: the approvers' routes.

use anyhow::Context;
use serde_json::{Value, json};

use super::print::print_task;
use super::{admin_get, admin_post, show};
use crate::cli::Endpoint;

pub(super) async fn list(endpoint: Endpoint) -> anyhow::Result<()> {
    let result = admin_get(&endpoint, "/admin/approvals").await?;
    show(&endpoint, &result, |r| {
        let approvals = r["approvals"].as_array().cloned().unwrap_or_default();
        if approvals.is_empty() {
            println!("no tasks wait for an approver");
        }
        for approval in &approvals {
            println!(
                "{} {}",
                approval["taskId"].as_str().unwrap_or(""),
                approval["summary"].as_str().unwrap_or("")
            );
            if approval["kind"] == "fix" {
                let proposal = &approval["input"];
                println!(
                    "  fix on branch {} (+{} -{}): `fundi get {}` shows its diff; approve \
                     pushes the branch, reject deletes it",
                    proposal["branch"].as_str().unwrap_or("?"),
                    proposal["linesAdded"],
                    proposal["linesRemoved"],
                    approval["taskId"].as_str().unwrap_or("")
                );
            } else if let Some(input) = approval.get("input").filter(|i| !i.is_null()) {
                println!("  input: {input}");
            }
        }
    })
}

pub(super) async fn approve(
    endpoint: Endpoint,
    id: String,
    data: Option<String>,
) -> anyhow::Result<()> {
    let body = match data {
        Some(data) => {
            let data: Value = serde_json::from_str(&data).context("--data is not JSON")?;
            json!({"data": data})
        }
        None => json!({}),
    };
    decide(&endpoint, &id, "approve", body).await
}

pub(super) async fn reject(endpoint: Endpoint, id: String, reason: String) -> anyhow::Result<()> {
    decide(&endpoint, &id, "reject", json!({"reason": reason})).await
}

async fn decide(endpoint: &Endpoint, id: &str, verb: &str, body: Value) -> anyhow::Result<()> {
    let path = format!("/admin/approvals/{id}/{verb}");
    let result = admin_post(endpoint, &path, Some(&body)).await?;
    show(endpoint, &result, |r| print_task(&r["task"]))
}
