//! The workloads: each request is fresh (new messageId) and each answer is checked.

use anyhow::{Context, bail, ensure};
use serde_json::{Value, json};

fn send_request(method: &str, text: &str, data: Option<Value>) -> Value {
    let mut parts = vec![json!({"text": text})];
    if let Some(data) = data {
        parts.push(json!({"data": data}));
    }
    json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": {"message": {
        "messageId": uuid::Uuid::new_v4().to_string(), "role": "ROLE_USER", "parts": parts}}})
}

async fn post(
    client: &reqwest::Client,
    url: &str,
    body: &Value,
) -> anyhow::Result<reqwest::Response> {
    let response = client
        .post(format!("{url}/a2a"))
        .header("A2A-Version", "1.0")
        .json(body)
        .send()
        .await?;
    ensure!(response.status() == 200, "HTTP {}", response.status());
    Ok(response)
}

/// W1: a blocking SendMessage to echo; the answer must be the completed task echoing
/// the text.
pub(crate) async fn send_blocking(
    client: &reqwest::Client,
    url: &str,
    worker: usize,
    i: u64,
) -> anyhow::Result<u64> {
    let text = format!("w{worker}-{i}");
    let answer: Value = post(client, url, &send_request("SendMessage", &text, None))
        .await?
        .json()
        .await?;
    let task = &answer["result"]["task"];
    ensure!(
        task["status"]["state"] == "TASK_STATE_COMPLETED",
        "not completed: {answer}"
    );
    ensure!(
        task["artifacts"][0]["parts"][0]["text"] == text.as_str(),
        "wrong echo: {answer}"
    );
    Ok(1)
}

/// Creates a task to read in W2.
pub(crate) async fn create_task(client: &reqwest::Client, url: &str) -> anyhow::Result<String> {
    let answer: Value = post(client, url, &send_request("SendMessage", "read me", None))
        .await?
        .json()
        .await?;
    answer["result"]["task"]["id"]
        .as_str()
        .map(str::to_owned)
        .context("no task id")
}

/// W2: GetTask of an existing task.
pub(crate) async fn get_task(client: &reqwest::Client, url: &str, id: &str) -> anyhow::Result<u64> {
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": "GetTask", "params": {"id": id}});
    let answer: Value = post(client, url, &body).await?.json().await?;
    ensure!(answer["result"]["id"] == id, "wrong task: {answer}");
    Ok(1)
}

/// Progress events per W3 stream.
pub(crate) const STREAM_STEPS: u64 = 20;

/// W3: a streamed SendMessage with 20 progress events, read to its end; counts the
/// events; the first must be the task and the last the completion.
pub(crate) async fn stream(
    client: &reqwest::Client,
    url: &str,
    worker: usize,
    i: u64,
) -> anyhow::Result<u64> {
    let text = format!("s{worker}-{i}");
    let body = send_request(
        "SendStreamingMessage",
        &text,
        Some(json!({"steps": STREAM_STEPS, "delayMs": 0})),
    );
    let sse = post(client, url, &body).await?.text().await?;
    let events: Vec<Value> = sse
        .split("\n\n")
        .filter_map(|frame| frame.lines().find_map(|l| l.strip_prefix("data: ")))
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()?;
    let (Some(first), Some(last)) = (events.first(), events.last()) else {
        bail!("empty stream");
    };
    ensure!(
        first["result"]["task"].is_object(),
        "first event is not the task: {first}"
    );
    ensure!(
        last["result"]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED",
        "last event is not the completion: {last}"
    );
    // task, working, 20 progress notes, the artifact, completed.
    ensure!(
        events.len() as u64 >= STREAM_STEPS + 3,
        "only {} events",
        events.len()
    );
    Ok(events.len() as u64)
}
