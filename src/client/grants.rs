//! `fundi grants` and `fundi audit`: the admin routes of grants and the audit log.

use serde_json::{Value, json};

use super::{admin_get, admin_post, show};
use crate::cli::{Endpoint, GrantCommand};

pub(super) async fn run(command: GrantCommand) -> anyhow::Result<()> {
    match command {
        GrantCommand::Create {
            endpoint,
            client,
            scopes,
            expires,
        } => {
            let mut body = json!({"client": client, "scopes": scopes});
            if let Some(expires) = expires {
                body["expires"] = json!(expires);
            }
            let created = admin_post(&endpoint, &path(""), Some(&body)).await?;
            show(&endpoint, &created, |c| {
                print_grant(&c["grant"]);
                println!("token (shown once; fundi keeps only its digest):");
                println!("{}", c["token"].as_str().unwrap_or(""));
            })
        }
        GrantCommand::List { endpoint } => {
            let result = admin_get(&endpoint, &path("")).await?;
            show(&endpoint, &result, |r| {
                let grants = r["grants"].as_array().cloned().unwrap_or_default();
                if grants.is_empty() {
                    println!("no grants");
                }
                grants.iter().for_each(print_grant);
            })
        }
        GrantCommand::Narrow {
            endpoint,
            id,
            scopes,
        } => {
            let rest = format!("/{id}/narrow");
            let grant =
                admin_post(&endpoint, &path(&rest), Some(&json!({"scopes": scopes}))).await?;
            show(&endpoint, &grant, print_grant)
        }
        GrantCommand::Revoke { endpoint, id } => {
            let rest = format!("/{id}/revoke");
            let grant = admin_post(&endpoint, &path(&rest), None).await?;
            show(&endpoint, &grant, print_grant)
        }
    }
}

/// `fundi audit`: a page of the audit log.
pub(super) async fn audit(endpoint: Endpoint, after: u64, limit: u64) -> anyhow::Result<()> {
    let path = format!("/admin/audit?after={after}&limit={limit}");
    let result = admin_get(&endpoint, &path).await?;
    show(&endpoint, &result, |r| {
        let records = r["records"].as_array().cloned().unwrap_or_default();
        if records.is_empty() {
            println!("no audit records after {after}");
        }
        for record in &records {
            let detail = match &record["detail"] {
                Value::Null => String::new(),
                detail => format!(" {detail}"),
            };
            println!(
                "{} {} {} by {} via {}: {}{detail}",
                record["seq"],
                record["at"].as_str().unwrap_or(""),
                record["action"].as_str().unwrap_or(""),
                record["user"].as_str().unwrap_or(""),
                record["client"].as_str().unwrap_or(""),
                record["target"].as_str().unwrap_or(""),
            );
        }
        if records.len() as u64 >= limit {
            println!("(more: fundi audit --after {})", r["next"]);
        }
    })
}

fn path(rest: &str) -> String {
    format!("/admin/grants{rest}")
}

/// `gr-… client ci: fundi:audit; expires 2027-01-01T00:00:00Z` (or `revoked …`).
fn print_grant(grant: &Value) {
    let scopes: Vec<&str> = grant["scopes"]
        .as_array()
        .map(|s| s.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let standing = match (grant["revokedAt"].as_str(), grant["expiresAt"].as_str()) {
        (Some(at), _) => format!("revoked {at}"),
        (None, Some(at)) => format!("expires {at}"),
        (None, None) => "does not expire".into(),
    };
    println!(
        "{} client {}: {}; {standing} (made by {})",
        grant["id"].as_str().unwrap_or(""),
        grant["client"].as_str().unwrap_or(""),
        scopes.join(","),
        grant["createdBy"].as_str().unwrap_or(""),
    );
}
