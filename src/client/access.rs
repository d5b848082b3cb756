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
        AccessCommand::Request {
            endpoint,
            peer,
            scopes,
            reason,
            assertion_file,
        } => {
            let assertion = read_assertion(&assertion_file)?;
            let body = json!({"scopes": scopes, "reason": reason, "assertion": assertion});
            let path = format!("/admin/peers/{peer}/access-requests");
            let result = admin_post(&endpoint, &path, Some(&body)).await?;
            show(&endpoint, &result, |r| {
                let id = r["request"]["id"].as_str().unwrap_or_default();
                println!("{id} asked of peer {peer}: pending until a person there decides");
                println!("continuation secret (shown once):");
                println!(
                    "{}",
                    r["request"]["continuation"].as_str().unwrap_or_default()
                );
                println!(
                    "once approved: fundi access collect --peer {peer} {id} --continuation <secret>"
                );
            })
        }
        AccessCommand::Collect {
            endpoint,
            peer,
            id,
            continuation,
        } => {
            let path = format!("/admin/peers/{peer}/access-requests/{id}/collect");
            let body = json!({"continuation": continuation});
            let result = admin_post(&endpoint, &path, Some(&body)).await?;
            show(&endpoint, &result, |r| match r["status"].as_str() {
                Some("collected") => println!(
                    "{id}: collected; peer {peer} is now called with the token granted for {}",
                    scopes_of(&r["scopes"])
                ),
                _ => println!("{id}: still pending at peer {peer}; collect again once approved"),
            })
        }
    }
}

/// The assertion in `path` (`-`: standard input), trimmed.
fn read_assertion(path: &std::path::Path) -> anyhow::Result<String> {
    use anyhow::Context;
    let text = match path.as_os_str() == "-" {
        true => std::io::read_to_string(std::io::stdin())
            .context("reading the assertion from standard input")?,
        false => std::fs::read_to_string(path)
            .with_context(|| format!("reading the assertion from {}", path.display()))?,
    };
    let assertion = text.trim().to_owned();
    anyhow::ensure!(
        !assertion.is_empty(),
        "the assertion file {} is empty",
        path.display()
    );
    Ok(assertion)
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
