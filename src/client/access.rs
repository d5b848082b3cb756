//! `fundi access`: the approvers' routes of requests for access.

use serde_json::{Value, json};

use super::{admin_get, admin_post, show};
use crate::cli::AccessCommand;

pub(super) async fn run(command: AccessCommand) -> anyhow::Result<()> {
    match command {
        AccessCommand::List { endpoint, status } => {
            let path = match status.as_str() {
                "all" => "/admin/access-requests".to_owned(),
                status => format!("/admin/access-requests?status={status}"),
            };
            let result = admin_get(&endpoint, &path).await?;
            show(&endpoint, &result, |r| {
                let requests = r["requests"].as_array().cloned().unwrap_or_default();
                if requests.is_empty() {
                    println!("no requests for access ({status})");
                }
                requests.iter().for_each(print_request);
            })
        }
        AccessCommand::Approve {
            endpoint,
            id,
            scopes,
            expires,
        } => {
            let mut body = json!({});
            if let Some(scopes) = scopes {
                body["scopes"] = json!(scopes);
            }
            if let Some(expires) = expires {
                body["expires"] = json!(expires);
            }
            let path = format!("/admin/access-requests/{id}/approve");
            let result = admin_post(&endpoint, &path, Some(&body)).await?;
            show(&endpoint, &result, |r| {
                print_request(r);
                let withheld = scopes_of(&r["withheld"]);
                if !withheld.is_empty() {
                    println!("  not granted: {withheld}");
                }
                println!("  the requester collects its token with its continuation secret");
            })
        }
        AccessCommand::Reject {
            endpoint,
            id,
            reason,
        } => {
            let path = format!("/admin/access-requests/{id}/reject");
            let result = admin_post(&endpoint, &path, Some(&json!({"reason": reason}))).await?;
            show(&endpoint, &result, print_request)
        }
    }
}

/// A request in a few lines: who, which agent, what and why, and where it stands.
fn print_request(request: &Value) {
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    let card = &request["card"];
    let signed = match card["signatureVerified"].as_bool() {
        Some(true) => "signed card verified".to_owned(),
        _ => match card["unreadable"].as_str() {
            Some(why) => format!("card unreadable: {why}"),
            None => "card not signed".to_owned(),
        },
    };
    println!(
        "{} {}: {} ({}) for agent {} at {} [{signed}]",
        text(&request["id"]),
        text(&request["status"]),
        text(&request["requester"]["subject"]),
        text(&request["requester"]["issuer"]),
        card["name"].as_str().unwrap_or("(unnamed)"),
        text(&card["url"]),
    );
    println!(
        "  asks for {}: {}",
        scopes_of(&request["scopes"]),
        text(&request["reason"])
    );
    if let Some(decision) = request.get("decision") {
        let verb = match decision["approved"].as_bool() {
            Some(true) => format!("approved for {}", scopes_of(&decision["scopes"])),
            _ => "rejected".to_owned(),
        };
        println!(
            "  {verb} by {} at {}",
            text(&decision["by"]),
            text(&decision["at"])
        );
    }
}

fn scopes_of(list: &Value) -> String {
    let scopes: Vec<&str> = list
        .as_array()
        .map(|s| s.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    scopes.join(",")
}
