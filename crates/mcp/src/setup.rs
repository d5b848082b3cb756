//! `fundi_auth_status`: the setup steps as data. Whether the server answers, whether
//! the credentials are set and accepted, which peers it knows and whether each answers,
//! and whether write tools are on; each missing piece with the step that fixes it.

use serde_json::{Value, json};

use crate::call::{Answer, Call, said};
use crate::shape;

pub(crate) async fn status(call: &Call<'_>) -> Answer {
    let mut lines = Vec::new();
    let mut data = json!({});
    match call.fundi.card().await {
        Ok(card) => {
            lines.push(format!(
                "server: answers ({})",
                card["name"].as_str().unwrap_or("an A2A agent")
            ));
            data["server"] = json!({"reachable": true});
        }
        Err(error) => {
            let error = said(error);
            lines.push(format!(
                "server: does not answer ({error}). Start it (`cargo run --release -- serve`), \
                 or point FUNDI_URL (--url) at the server to use."
            ));
            data["server"] = json!({"reachable": false, "error": error});
            return Ok((lines.join("\n"), data));
        }
    }
    match call.rpc("ListTasks", json!({"pageSize": 1})).await {
        Ok(_) => {
            lines.push("credentials: set and accepted".into());
            data["credentials"] = json!({"accepted": true});
        }
        Err(error) => {
            lines.push(format!(
                "credentials: refused ({error}). Set FUNDI_TOKEN and FUNDI_USER_TOKEN, or \
                 --credentials with the file the server wrote (data/credentials.json)."
            ));
            data["credentials"] = json!({"accepted": false, "error": error});
        }
    }
    let (peer_lines, peers) = peers(call).await;
    lines.extend(peer_lines);
    data["peers"] = peers;
    let writes = call.settings().allow_writes;
    lines.push(match writes {
        true => "writes: on (the tools that start, answer and cancel tasks are listed)".into(),
        false => "writes: off; to start or cancel tasks, restart the MCP server with \
                  `fundi mcp --allow-writes` (or mcp.allow-writes on the server)"
            .into(),
    });
    data["writes"] = json!(writes);
    Ok((lines.join("\n"), data))
}

/// The peers, each read now to tell whether it answers.
async fn peers(call: &Call<'_>) -> (Vec<String>, Value) {
    let listed = match call.fundi.get(call.credentials, "/peers").await {
        Ok(listed) => listed,
        Err(error) => {
            let error = said(error);
            let step = match error.contains("404") {
                true => {
                    "none are configured: an operator adds [peers.<name>] to the server's config"
                }
                false => "not readable with these credentials (they need scope fundi:delegate)",
            };
            return (
                vec![format!("peers: {step} ({error})")],
                json!({"error": error}),
            );
        }
    };
    let mut lines = Vec::new();
    let mut rows = Vec::new();
    for peer in listed["peers"].as_array().into_iter().flatten() {
        let name = peer["name"].as_str().unwrap_or_default();
        let path = format!("/peers/{}/discover", shape::segment(name));
        match call.fundi.post(call.credentials, &path, None).await {
            Ok(found) => {
                lines.push(format!(
                    "peer {name}: answers ({})",
                    found["card"]["name"].as_str().unwrap_or("?")
                ));
                rows.push(json!({"name": name, "reachable": true}));
            }
            Err(error) => {
                let error = said(error);
                lines.push(format!("peer {name}: does not answer: {error}"));
                rows.push(json!({"name": name, "reachable": false, "error": error}));
            }
        }
    }
    if rows.is_empty() {
        lines.push("peers: none configured".into());
    }
    (lines, json!(rows))
}
