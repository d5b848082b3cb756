//! A small JSON-RPC (A2A v1.0) client for driving a server by hand.

use anyhow::{Context, bail};
use futures::StreamExt;
use serde_json::{Value, json};

mod access;
mod approvals;
mod chaos;
mod grants;
mod peers;
mod print;
mod schedules;
mod watch;

use print::{
    print_dead_letters, print_issues, print_list, print_stream_item, print_task, short_state,
};

use fundi_client::{Client, ClientError, Credentials};

use crate::cli::{ClientCommand, Endpoint, MessageArgs};
use crate::credentials;

pub(crate) async fn run(command: ClientCommand) -> anyhow::Result<()> {
    match command {
        ClientCommand::Send {
            endpoint,
            message,
            no_wait,
        } => send(endpoint, message, no_wait).await,
        ClientCommand::Stream { endpoint, message } => {
            let last = stream(&endpoint, json!({"message": message_json(&message)?})).await?;
            ended_well(&last)
        }
        ClientCommand::Get {
            endpoint,
            id,
            history,
        } => {
            let mut params = json!({"id": id});
            if let Some(n) = history {
                params["historyLength"] = json!(n);
            }
            let result = call(&endpoint, "GetTask", params).await?;
            show(&endpoint, &result, print_task)
        }
        ClientCommand::Watch { endpoint, id } => watch::watch(endpoint, id).await,
        ClientCommand::Cancel { endpoint, id } => {
            let result = call(&endpoint, "CancelTask", json!({"id": id})).await?;
            show(&endpoint, &result, print_task)
        }
        ClientCommand::List {
            endpoint,
            context,
            state,
            page_size,
            page_token,
        } => {
            let mut params = json!({"pageSize": page_size});
            if let Some(context) = context {
                params["contextId"] = json!(context);
            }
            if let Some(state) = state {
                params["status"] = json!(state_name(&state));
            }
            if let Some(token) = page_token {
                params["pageToken"] = json!(token);
            }
            let result = call(&endpoint, "ListTasks", params).await?;
            show(&endpoint, &result, print_list)
        }
        ClientCommand::Issues {
            endpoint,
            source,
            status,
        } => {
            let mut query = Vec::new();
            if let Some(source) = &source {
                query.push(("source", source.as_str()));
            }
            if let Some(status) = &status {
                query.push(("status", status.as_str()));
            }
            let result = admin_get(&endpoint, &with_query("/admin/issues", &query)).await?;
            show(&endpoint, &result, print_issues)
        }
        ClientCommand::Schedules { action } => schedules::run(action).await,
        ClientCommand::Grants { action } => grants::run(action).await,
        ClientCommand::Access { action } => access::run(action).await,
        ClientCommand::Console { endpoint } => {
            let result = admin_post(&endpoint, "/console/sign-in-links", None).await?;
            show(&endpoint, &result, |r| {
                println!("{}", r["url"].as_str().unwrap_or_default());
                eprintln!(
                    "(signs in {} once, until {})",
                    r["user"].as_str().unwrap_or_default(),
                    r["expiresAt"].as_str().unwrap_or_default()
                );
            })
        }
        ClientCommand::Approvals { endpoint } => approvals::list(endpoint).await,
        ClientCommand::Approve { endpoint, id, data } => {
            approvals::approve(endpoint, id, data).await
        }
        ClientCommand::Reject {
            endpoint,
            id,
            reason,
        } => approvals::reject(endpoint, id, reason).await,
        ClientCommand::Audit {
            endpoint,
            after,
            limit,
        } => grants::audit(endpoint, after, limit).await,
        ClientCommand::ChaosEvents {
            endpoint,
            task,
            after,
            limit,
        } => chaos::events(endpoint, task, after, limit).await,
        ClientCommand::Peers { action, endpoint } => peers::run(action, endpoint).await,
        ClientCommand::DeadLetters { endpoint } => {
            let result = admin_get(&endpoint, "/admin/push/dead-letters").await?;
            show(&endpoint, &result, print_dead_letters)
        }
        ClientCommand::Replay {
            endpoint,
            task,
            config,
        } => {
            let body = json!({"taskId": task, "configId": config});
            admin_post(&endpoint, "/admin/push/replay", Some(&body)).await?;
            println!("replaying push config {config} of task {task}");
            Ok(())
        }
    }
}

/// The server's base URL: `--url` as given, or the JSON-RPC address the agent card
/// advertises (ending in `/a2a`).
fn base(endpoint: &Endpoint) -> &str {
    let url = endpoint.url.trim_end_matches('/');
    url.strip_suffix("/a2a").unwrap_or(url)
}

/// `text` with the wire's state names (`TASK_STATE_INPUT_REQUIRED`) spelled as the
/// client prints states (`input-required`).
fn spelled_short(text: &str) -> String {
    const WIRE: &str = "TASK_STATE_";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(WIRE) {
        out.push_str(&rest[..at]);
        let name = &rest[at + WIRE.len()..];
        let end = name
            .find(|c: char| !(c.is_ascii_uppercase() || c == '_'))
            .unwrap_or(name.len());
        out.push_str(&name[..end].to_lowercase().replace('_', "-"));
        rest = &name[end..];
    }
    out.push_str(rest);
    out
}

/// A task that ended failed, rejected or canceled makes the command fail (scripts rely
/// on the exit status); one that completed, waits for input, or still runs does not.
/// `fundi send`: waits for the task to end or ask for someone, except for a message to
/// a task whose run is working, which the run takes in its time: that returns once the
/// message is stored. A wait that ends with the task still working says so.
async fn send(endpoint: Endpoint, message: MessageArgs, no_wait: bool) -> anyhow::Result<()> {
    let mut queued = false;
    if let (Some(task), false) = (&message.task, no_wait) {
        let current = call(
            &endpoint,
            "GetTask",
            json!({"id": task, "historyLength": 0}),
        )
        .await?;
        let state = short_state(&current["status"]["state"]);
        queued = matches!(state.as_str(), "working" | "submitted");
    }
    let params = json!({
        "message": message_json(&message)?,
        "configuration": {"returnImmediately": no_wait || queued},
    });
    let result = call(&endpoint, "SendMessage", params).await?;
    show(&endpoint, &result, |r| print_task(&r["task"]))?;
    let task = &result["task"];
    let id = task["id"].as_str().unwrap_or("?");
    let state = short_state(&task["status"]["state"]);
    let settled = !matches!(state.as_str(), "working" | "submitted");
    match (no_wait, queued, settled) {
        (false, true, false) => {
            eprintln!(
                "(the message is stored for the task's run, which takes it while it works: \
                 `fundi watch {id}` follows it)"
            );
            Ok(())
        }
        (false, false, false) => bail!(
            "the task is still {state} after the server's wait: `fundi watch {id}` follows \
             it, `fundi get {id}` shows it"
        ),
        _ => ended_well(&task["status"]["state"]),
    }
}

fn ended_well(state: &Value) -> anyhow::Result<()> {
    let state = short_state(state);
    match state.as_str() {
        "failed" | "rejected" | "canceled" => bail!("the task ended {state}"),
        _ => Ok(()),
    }
}

fn message_json(args: &MessageArgs) -> anyhow::Result<Value> {
    let mut parts = vec![json!({"text": args.text})];
    let data = match &args.data {
        Some(data) => Some(serde_json::from_str::<Value>(data).context("--data must be JSON")?),
        None => None,
    };
    if let Some(peer) = &args.peer {
        // A delegation: the peer, its skill and its data travel in the data part.
        let mut delegation = json!({"peer": peer});
        if let Some(skill) = &args.skill {
            delegation["skill"] = json!(skill);
        }
        if let Some(data) = data {
            delegation["data"] = data;
        }
        parts.push(json!({"data": delegation, "mediaType": "application/json"}));
    } else if let Some(data) = data {
        parts.push(json!({"data": data, "mediaType": "application/json"}));
    }
    if let Some(path) = &args.html {
        use base64::Engine as _;
        let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
        let filename = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "page.html".into());
        parts.push(json!({
            "raw": base64::engine::general_purpose::STANDARD.encode(bytes),
            "mediaType": "text/html",
            "filename": filename,
        }));
    }
    let mut message = json!({
        "messageId": format!("cli-{}-{}", std::process::id(), nanos_since_epoch()),
        "role": "ROLE_USER",
        "parts": parts,
    });
    let skill = match &args.peer {
        Some(_) => Some("delegate"),
        None => args.skill.as_deref(),
    };
    if let Some(skill) = skill {
        message["metadata"] = json!({"skill": skill});
    }
    if let Some(task) = &args.task {
        message["taskId"] = json!(task);
    }
    if let Some(context) = &args.context {
        message["contextId"] = json!(context);
    }
    Ok(message)
}

/// Nanoseconds since the epoch: enough to make CLI message ids unique.
fn nanos_since_epoch() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default()
}

fn state_name(state: &str) -> String {
    if state.starts_with("TASK_STATE_") {
        state.to_owned()
    } else {
        format!("TASK_STATE_{}", state.replace('-', "_").to_uppercase())
    }
}

/// The bearer token, the user token and its header: from the flags or environment,
/// field by field, else from the credentials file a local server wrote.
fn credentials_of(endpoint: &Endpoint) -> anyhow::Result<Credentials> {
    Ok(match (&endpoint.token, &endpoint.user_token) {
        (Some(token), Some(user)) => {
            Credentials::new(token, user).in_header(endpoint.user_header.as_str())
        }
        _ => {
            let file = credentials::read(&endpoint.credentials).context(
                "no credentials: pass --token and --user-token (or FUNDI_TOKEN and \
                 FUNDI_USER_TOKEN), or --credentials with the file a local server wrote",
            )?;
            Credentials::new(
                endpoint.token.clone().unwrap_or(file.token),
                endpoint.user_token.clone().unwrap_or(file.user_token),
            )
            .in_header(file.user_header)
        }
    })
}

/// The server `endpoint` names, and the credentials to call it with.
fn fundi(endpoint: &Endpoint) -> anyhow::Result<(Client, Credentials)> {
    let credentials = credentials_of(endpoint)?;
    let hint = "pass --token and --user-token (or FUNDI_TOKEN and FUNDI_USER_TOKEN), or \
                --credentials with the file the server wrote";
    Ok((Client::new(base(endpoint), hint), credentials))
}

/// A JSON-RPC call's result, through fundi-client (which tries a busy server again).
async fn call(endpoint: &Endpoint, method: &str, params: Value) -> anyhow::Result<Value> {
    let (client, credentials) = fundi(endpoint)?;
    client
        .call(&credentials, method, params)
        .await
        .map_err(|error| explained(endpoint, error))
}

/// `path` with `query`'s pairs, encoded.
fn with_query(path: &str, query: &[(&str, &str)]) -> String {
    if query.is_empty() {
        return path.to_owned();
    }
    let mut url = reqwest::Url::parse("http://fundi").expect("a fixed, valid URL");
    url.query_pairs_mut().extend_pairs(query);
    format!("{path}?{}", url.query().unwrap_or_default())
}

/// GET one of fundi's own routes (`path`, with its query), through fundi-client.
async fn admin_get(endpoint: &Endpoint, path: &str) -> anyhow::Result<Value> {
    let (client, credentials) = fundi(endpoint)?;
    client
        .get(&credentials, path)
        .await
        .map_err(|error| explained(endpoint, error))
}

/// DELETE one of fundi's own routes, through fundi-client.
async fn admin_delete(endpoint: &Endpoint, path: &str) -> anyhow::Result<Value> {
    let (client, credentials) = fundi(endpoint)?;
    client
        .delete(&credentials, path)
        .await
        .map_err(|error| explained(endpoint, error))
}

/// POST `body` (none: an empty body) to one of fundi's own routes, through fundi-client.
async fn admin_post(
    endpoint: &Endpoint,
    path: &str,
    body: Option<&Value>,
) -> anyhow::Result<Value> {
    let (client, credentials) = fundi(endpoint)?;
    client
        .post(&credentials, path, body)
        .await
        .map_err(|error| explained(endpoint, error))
}

/// A client error as the CLI says it: a JSON-RPC error with its code and the states
/// spelled as the CLI prints them, a server that is not there with where to look.
fn explained(endpoint: &Endpoint, error: ClientError) -> anyhow::Error {
    match error {
        ClientError::Refused {
            message,
            code: Some(code),
        } => anyhow::anyhow!("{} (code {code})", spelled_short(&message)),
        ClientError::Unreachable {
            answered: false, ..
        } => anyhow::anyhow!(
            "could not connect to {}: is `fundi serve` running there? (--url or FUNDI_URL \
             names another server)",
            base(endpoint)
        ),
        other => anyhow::Error::new(other),
    }
}

fn show(endpoint: &Endpoint, result: &Value, summary: impl Fn(&Value)) -> anyhow::Result<()> {
    if endpoint.json {
        println!("{}", serde_json::to_string_pretty(result)?);
    } else {
        summary(result);
    }
    Ok(())
}

/// Prints the stream's items, through fundi-client; the last state it told.
async fn stream(endpoint: &Endpoint, params: Value) -> anyhow::Result<Value> {
    let (client, credentials) = fundi(endpoint)?;
    let mut results = client
        .stream_call(&credentials, "SendStreamingMessage", params)
        .await
        .map_err(|error| explained(endpoint, error))?;
    let mut last = Value::Null;
    while let Some(result) = results.next().await {
        let result = result.map_err(|error| explained(endpoint, error))?;
        let state = match result.get("task") {
            Some(task) => &task["status"]["state"],
            None => &result["statusUpdate"]["status"]["state"],
        };
        if !state.is_null() {
            last = state.clone();
        }
        if endpoint.json {
            println!("{result}");
        } else {
            print_stream_item(&result);
        }
    }
    Ok(last)
}
