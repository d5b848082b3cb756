//! `fundi watch ID`: an existing task's progress, live, until it ends or waits for
//! someone. A stream that breaks off (the server restarting, a proxy timing out) is
//! opened again with `Last-Event-ID`, so that nothing is shown twice or missed; a server
//! that stays away is given up on, saying so.

use std::time::{Duration, Instant};

use fundi_client::ClientError;
use futures::StreamExt;
use serde_json::{Value, json};

use super::print::{print_stream_item, print_task, short_state};
use super::{ended_well, explained, fundi};
use crate::cli::Endpoint;

/// How long the server may stay away before watching gives up.
const GIVE_UP_AFTER: Duration = Duration::from_secs(60);
/// The longest pause between two tries to reach it.
const MOST_PAUSE: Duration = Duration::from_secs(5);

pub(super) async fn watch(endpoint: Endpoint, id: String) -> anyhow::Result<()> {
    let (client, credentials) = fundi(&endpoint)?;
    let task = client
        .call(
            &credentials,
            "GetTask",
            json!({"id": id, "historyLength": 0}),
        )
        .await
        .map_err(|error| explained(&endpoint, error))?;
    if settled(&task["status"]["state"]) {
        // Nothing more will happen without someone: the task as it stands.
        show(&endpoint, &json!({"task": task}));
        return ended_well(&task["status"]["state"]);
    }
    let mut after: Option<String> = None;
    let mut last = task["status"]["state"].clone();
    let mut away_since: Option<Instant> = None;
    let mut pause = Duration::from_millis(200);
    loop {
        match client.subscribe(&credentials, &id, after.as_deref()).await {
            Ok(mut events) => {
                away_since = None;
                pause = Duration::from_millis(200);
                while let Some(event) = events.next().await {
                    let event = match event {
                        Ok(event) => event,
                        // Broke off mid-stream: resume after the last event shown.
                        Err(ClientError::Unexpected(_)) => break,
                        Err(error) => return Err(explained(&endpoint, error)),
                    };
                    if event.id.is_some() {
                        after = event.id.clone();
                    }
                    let state = state_of(&event.result);
                    if !state.is_null() {
                        last = state.clone();
                    }
                    show(&endpoint, &event.result);
                    if settled(&state) {
                        return ended_well(&state);
                    }
                }
                if settled(&last) {
                    return ended_well(&last);
                }
            }
            Err(ClientError::Unreachable { reason, .. }) => {
                let since = *away_since.get_or_insert_with(Instant::now);
                if since.elapsed() >= GIVE_UP_AFTER {
                    anyhow::bail!(
                        "the server has not answered for {} s ({reason}); task {id} was {} \
                         when last seen: `fundi watch {id}` again once it is back",
                        GIVE_UP_AFTER.as_secs(),
                        short_state(&last)
                    );
                }
            }
            Err(error) => return Err(explained(&endpoint, error)),
        }
        match &after {
            Some(seen) => eprintln!("(the stream broke off after event {seen}; resuming)"),
            None => eprintln!("(the stream broke off; resuming)"),
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(MOST_PAUSE);
    }
}

/// The state an item of the stream tells, if it tells one.
fn state_of(item: &Value) -> Value {
    match item.get("task") {
        Some(task) => task["status"]["state"].clone(),
        None => item["statusUpdate"]["status"]["state"].clone(),
    }
}

/// Whether a task in `state` changes no more without someone: ended, or waiting for
/// input or for authorization.
fn settled(state: &Value) -> bool {
    matches!(
        short_state(state).as_str(),
        "completed" | "failed" | "canceled" | "rejected" | "input-required" | "auth-required"
    )
}

fn show(endpoint: &Endpoint, item: &Value) {
    match (endpoint.json, item.get("task")) {
        (true, _) => println!("{item}"),
        (false, Some(task)) => print_task(task),
        (false, None) => print_stream_item(item),
    }
}
