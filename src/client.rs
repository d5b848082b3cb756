//! A small JSON-RPC (A2A v1.0) client for driving a server by hand.

use anyhow::{Context, bail};
use futures::StreamExt;
use serde_json::{Value, json};

use crate::cli::{ClientCommand, Endpoint, MessageArgs};
use crate::credentials;

pub(crate) async fn run(command: ClientCommand) -> anyhow::Result<()> {
    match command {
        ClientCommand::Send {
            endpoint,
            message,
            no_wait,
        } => {
            let params = json!({
                "message": message_json(&message)?,
                "configuration": {"returnImmediately": no_wait},
            });
            let result = call(&endpoint, "SendMessage", params).await?;
            show(&endpoint, &result, |r| print_task(&r["task"]))
        }
        ClientCommand::Stream { endpoint, message } => {
            stream(&endpoint, json!({"message": message_json(&message)?})).await
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
            let mut url = reqwest::Url::parse(&format!(
                "{}/admin/issues",
                endpoint.url.trim_end_matches('/')
            ))
            .context("--url")?;
            if let Some(source) = &source {
                url.query_pairs_mut().append_pair("source", source);
            }
            if let Some(status) = &status {
                url.query_pairs_mut().append_pair("status", status);
            }
            let result = admin(authed(&endpoint, reqwest::Method::GET, url.as_str())?).await?;
            show(&endpoint, &result, print_issues)
        }
        ClientCommand::DeadLetters { endpoint } => {
            let url = format!(
                "{}/admin/push/dead-letters",
                endpoint.url.trim_end_matches('/')
            );
            let result = admin(authed(&endpoint, reqwest::Method::GET, &url)?).await?;
            show(&endpoint, &result, print_dead_letters)
        }
        ClientCommand::Replay {
            endpoint,
            task,
            config,
        } => {
            let url = format!("{}/admin/push/replay", endpoint.url.trim_end_matches('/'));
            let request = authed(&endpoint, reqwest::Method::POST, &url)?
                .json(&json!({"taskId": task, "configId": config}));
            admin(request).await?;
            println!("replaying push config {config} of task {task}");
            Ok(())
        }
    }
}

fn rpc_url(endpoint: &Endpoint) -> String {
    format!("{}/a2a", endpoint.url.trim_end_matches('/'))
}

fn message_json(args: &MessageArgs) -> anyhow::Result<Value> {
    let mut parts = vec![json!({"text": args.text})];
    if let Some(data) = &args.data {
        let data: Value = serde_json::from_str(data).context("--data must be JSON")?;
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
    if let Some(skill) = &args.skill {
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

fn request(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
}

/// A POST to the JSON-RPC endpoint with both credentials: the ones given, or else the
/// ones in the credentials file a local server wrote.
fn post(endpoint: &Endpoint) -> anyhow::Result<reqwest::RequestBuilder> {
    authed(endpoint, reqwest::Method::POST, &rpc_url(endpoint))
}

fn authed(
    endpoint: &Endpoint,
    method: reqwest::Method,
    url: &str,
) -> anyhow::Result<reqwest::RequestBuilder> {
    let (token, user_token, user_header) = match (&endpoint.token, &endpoint.user_token) {
        (Some(token), Some(user)) => (token.clone(), user.clone(), endpoint.user_header.clone()),
        _ => {
            let file = credentials::read(&endpoint.credentials).context(
                "no credentials: pass --token and --user-token (or FUNDI_TOKEN and \
                 FUNDI_USER_TOKEN), or --credentials with the file a local server wrote",
            )?;
            (
                endpoint.token.clone().unwrap_or(file.token),
                endpoint.user_token.clone().unwrap_or(file.user_token),
                file.user_header,
            )
        }
    };
    Ok(reqwest::Client::new()
        .request(method, url)
        .bearer_auth(token)
        .header(user_header, user_token)
        .header("A2A-Version", "1.0"))
}

async fn call(endpoint: &Endpoint, method: &str, params: Value) -> anyhow::Result<Value> {
    let response = post(endpoint)?
        .json(&request(method, params))
        .send()
        .await
        .with_context(|| format!("reaching {}", endpoint.url))?;
    let body: Value = response.json().await.context("reading the answer")?;
    result_of(body)
}

/// An admin request: its JSON answer, or the error it names.
async fn admin(request: reqwest::RequestBuilder) -> anyhow::Result<Value> {
    let response = request.send().await.context("reaching the server")?;
    let status = response.status();
    let body: Value = response
        .json()
        .await
        .with_context(|| format!("reading the answer (HTTP {status})"))?;
    if status.is_success() {
        return Ok(body);
    }
    let message = body["error"]["message"]
        .as_str()
        .or_else(|| body["error"].as_str())
        .unwrap_or("error");
    bail!("{message} (HTTP {status})")
}

fn print_issues(result: &Value) {
    let issues = result["issues"].as_array().cloned().unwrap_or_default();
    if issues.is_empty() {
        println!("no issues");
    }
    for issue in issues {
        println!(
            "{} [{} {}] {} {}: {} ({}, seen {} times)",
            issue["fingerprint"]
                .as_str()
                .unwrap_or("")
                .get(..12)
                .unwrap_or(""),
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

fn print_dead_letters(result: &Value) {
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

fn result_of(body: Value) -> anyhow::Result<Value> {
    if let Some(error) = body.get("error") {
        bail!(
            "{} (code {})",
            error["message"].as_str().unwrap_or("error"),
            error["code"]
        );
    }
    body.get("result")
        .cloned()
        .context("the answer has no result")
}

fn show(endpoint: &Endpoint, result: &Value, summary: impl Fn(&Value)) -> anyhow::Result<()> {
    if endpoint.json {
        println!("{}", serde_json::to_string_pretty(result)?);
    } else {
        summary(result);
    }
    Ok(())
}

async fn stream(endpoint: &Endpoint, params: Value) -> anyhow::Result<()> {
    let response = post(endpoint)?
        .header("Accept", "text/event-stream")
        .json(&request("SendStreamingMessage", params))
        .send()
        .await
        .with_context(|| format!("reaching {}", endpoint.url))?;
    let is_stream = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    if !is_stream {
        // A refusal (401, 403, 429) is a plain JSON-RPC error.
        let status = response.status();
        let body: Value = response
            .json()
            .await
            .with_context(|| format!("reading the answer (HTTP {status})"))?;
        result_of(body)?;
        bail!("the server answered HTTP {status} without a stream");
    }
    let mut bytes = response.bytes_stream();
    let mut buffer = String::new();
    while let Some(chunk) = bytes.next().await {
        buffer.push_str(&String::from_utf8_lossy(
            &chunk.context("reading the stream")?,
        ));
        while let Some(end) = buffer.find("\n\n") {
            let frame: String = buffer.drain(..end + 2).collect();
            for line in frame.lines() {
                if let Some(data) = line.strip_prefix("data: ") {
                    let result = result_of(serde_json::from_str(data)?)?;
                    if endpoint.json {
                        println!("{result}");
                    } else {
                        print_stream_item(&result);
                    }
                }
            }
        }
    }
    Ok(())
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
                        .or_else(|| p.get("data").map(Value::to_string))
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default()
}

fn short_state(state: &Value) -> String {
    state
        .as_str()
        .unwrap_or("?")
        .trim_start_matches("TASK_STATE_")
        .to_lowercase()
        .replace('_', "-")
}

fn print_task(task: &Value) {
    println!(
        "task {} (context {}): {}",
        task["id"].as_str().unwrap_or("?"),
        task["contextId"].as_str().unwrap_or("?"),
        short_state(&task["status"]["state"])
    );
    if let Some(message) = task["status"].get("message") {
        println!("  {}", text_of(message));
    }
    for artifact in task["artifacts"].as_array().into_iter().flatten() {
        let name = artifact["name"]
            .as_str()
            .or(artifact["artifactId"].as_str())
            .unwrap_or("?");
        println!("  artifact {name}: {}", text_of(artifact));
    }
}

fn print_list(page: &Value) {
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

fn print_stream_item(item: &Value) {
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
