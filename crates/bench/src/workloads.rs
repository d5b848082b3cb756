//! The workloads: each request is fresh (new messageId) and each answer is checked.

use std::time::Duration;

use anyhow::{Context, bail, ensure};
use chrono::{DateTime, Utc};
use futures::StreamExt;
use serde_json::{Value, json};

/// A fresh user message (new messageId) of `text` and an optional data part, sent with
/// `method`.
pub(crate) fn send_request(method: &str, text: &str, data: Option<Value>) -> Value {
    let mut parts = vec![json!({"text": text})];
    if let Some(data) = data {
        parts.push(json!({"data": data}));
    }
    json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": {"message": {
        "messageId": uuid::Uuid::new_v4().to_string(), "role": "ROLE_USER", "parts": parts}}})
}

pub(crate) async fn post(
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

/// [`post`], its JSON answer.
pub(crate) async fn post_json(
    client: &reqwest::Client,
    url: &str,
    body: &Value,
) -> anyhow::Result<Value> {
    Ok(post(client, url, body).await?.json().await?)
}

/// A SendMessage of `text` (and a data part) that returns at once
/// (`returnImmediately`): the task it created, as accepted.
pub(crate) async fn send_at_once(
    client: &reqwest::Client,
    url: &str,
    text: &str,
    data: Option<Value>,
) -> anyhow::Result<Value> {
    let mut body = send_request("SendMessage", text, data);
    body["params"]["configuration"] = json!({"returnImmediately": true});
    let answer = post_json(client, url, &body).await?;
    let task = &answer["result"]["task"];
    ensure!(task["id"].is_string(), "no task created: {answer}");
    Ok(task.clone())
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
    let answer = post_json(client, url, &body).await?;
    ensure!(answer["result"]["id"] == id, "wrong task: {answer}");
    Ok(1)
}

/// Progress events per W3 stream.
pub(crate) const STREAM_STEPS: u64 = 20;

/// W3: a streamed SendMessage with 20 progress events, read to its end; counts the
/// events; the first must be the task and the last the completion. With
/// `each_step_stored`, echo stores each step before the next instead of posting them.
pub(crate) async fn stream(
    client: &reqwest::Client,
    url: &str,
    worker: usize,
    i: u64,
    each_step_stored: bool,
) -> anyhow::Result<u64> {
    let text = format!("s{worker}-{i}");
    let body = send_request(
        "SendStreamingMessage",
        &text,
        Some(json!({"steps": STREAM_STEPS, "delayMs": 0, "waitEachStep": each_step_stored})),
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

/// W3 fan-out: `subscribers` SSE subscribers spread evenly over `tasks` tasks, each
/// posting 30 progress events (100 ms apart on one task, 300 ms on several). Returns,
/// for every event a subscriber received live (stamped after it subscribed), the time
/// from the event's status timestamp to its arrival.
pub(crate) async fn fan_out(
    client: &reqwest::Client,
    url: &str,
    subscribers: usize,
    tasks: usize,
) -> anyhow::Result<Vec<Duration>> {
    let delay_ms = if tasks > 1 { 300 } else { 100 };
    let created = (0..tasks.max(1)).map(|_| async move {
        let data = json!({"steps": 30, "delayMs": delay_ms});
        let task = send_at_once(client, url, "fan-out", Some(data)).await?;
        anyhow::Ok(task["id"].as_str().context("no task id")?.to_owned())
    });
    let ids: Vec<String> = futures::stream::iter(created)
        .buffer_unordered(64)
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .collect::<anyhow::Result<_>>()?;
    let readers: Vec<_> = (0..subscribers)
        .map(|i| {
            let (client, url, id) = (client.clone(), url.to_owned(), ids[i % ids.len()].clone());
            tokio::spawn(async move { subscriber(&client, &url, &id).await })
        })
        .collect();
    let mut delays = Vec::new();
    let mut completed = 0;
    for reader in readers {
        let (seen, done) = reader.await??;
        delays.extend(seen);
        completed += usize::from(done);
    }
    ensure!(
        completed == subscribers,
        "only {completed} of {subscribers} subscribers saw the end"
    );
    Ok(delays)
}

async fn subscriber(
    client: &reqwest::Client,
    url: &str,
    id: &str,
) -> anyhow::Result<(Vec<Duration>, bool)> {
    let subscribed: DateTime<Utc> = Utc::now();
    let body =
        json!({"jsonrpc": "2.0", "id": 3, "method": "SubscribeToTask", "params": {"id": id}});
    let mut bytes = post(client, url, &body).await?.bytes_stream();
    let mut buffer = String::new();
    let mut delays = Vec::new();
    while let Some(chunk) = bytes.next().await {
        buffer.push_str(&String::from_utf8_lossy(&chunk?));
        while let Some(end) = buffer.find("\n\n") {
            let frame: String = buffer.drain(..end + 2).collect();
            let Some(data) = frame.lines().find_map(|l| l.strip_prefix("data: ")) else {
                continue;
            };
            let arrived = Utc::now();
            let event: Value = serde_json::from_str(data)?;
            let status = &event["result"]["statusUpdate"]["status"];
            let Some(stamp) = status["timestamp"].as_str() else {
                continue;
            };
            let stamp = DateTime::parse_from_rfc3339(stamp)?.with_timezone(&Utc);
            if stamp >= subscribed {
                delays.push((arrived - stamp).to_std().unwrap_or_default());
            }
            if status["state"] == "TASK_STATE_COMPLETED" {
                return Ok((delays, true));
            }
        }
    }
    Ok((delays, false))
}

/// Creates `count` echo tasks that stay unfinished (each waits a minute before its only
/// step), from 64 concurrent clients.
pub(crate) async fn create_unfinished(
    client: &reqwest::Client,
    url: &str,
    count: usize,
) -> anyhow::Result<()> {
    let (client, url) = (client.clone(), url.to_owned());
    crate::load::each(count, 64, move |_| {
        let (client, url) = (client.clone(), url.clone());
        async move {
            let data = json!({"steps": 1, "delayMs": 60000});
            send_at_once(&client, &url, "parked", Some(data)).await?;
            anyhow::Ok(())
        }
    })
    .await?;
    Ok(())
}
