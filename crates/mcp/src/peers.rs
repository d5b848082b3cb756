//! The tools for peers, the other A2A agents the fundi server knows: list them and what
//! their cards say, read a card, delegate to one (a durable task of the server's own,
//! followed with `fundi_wait_for_task`), a raw A2A call on a peer from a fixed list,
//! push configs on a peer's task, and a report of what is set up and what is missing.

use rmcp::model::{Tool, ToolAnnotations};
use serde_json::{Value, json};

use crate::call::{Answer, Call, said, string};
use crate::described::{reading, tool};
use crate::shape;

/// Lists the peers and their cached cards (read-only, no network).
pub const LIST_AGENTS: &str = "fundi_list_agents";
/// Reads one peer's card now (read-only).
pub const DISCOVER_AGENT: &str = "fundi_discover_agent";
/// Delegates to a peer (write).
pub const SEND_MESSAGE: &str = "fundi_send_message";
/// A raw A2A call on a peer (reads; writes only with writes allowed).
pub const REQUEST: &str = "fundi_request";
/// Sets a push config on a peer's task (write).
pub const SET_PUSH_CONFIG: &str = "fundi_set_push_config";
/// Deletes a push config of a peer's task (write).
pub const DELETE_PUSH_CONFIG: &str = "fundi_delete_push_config";
/// What is set up and what is missing (read-only).
pub const AUTH_STATUS: &str = "fundi_auth_status";

/// The methods `fundi_request` sends without writes allowed.
const READS: [&str; 5] = [
    "GetTask",
    "ListTasks",
    "GetExtendedAgentCard",
    "GetTaskPushNotificationConfig",
    "ListTaskPushNotificationConfigs",
];
/// The methods it sends only with writes allowed.
const WRITES: [&str; 3] = [
    "CancelTask",
    "CreateTaskPushNotificationConfig",
    "DeleteTaskPushNotificationConfig",
];

/// The tools for peers to list.
pub(crate) fn listed(allow_writes: bool) -> Vec<Tool> {
    let mut tools = vec![
        tool(
            AUTH_STATUS,
            "Call this first when something fails or seems missing: whether the fundi \
             server answers, whether your credentials are set and accepted, which peers \
             (other A2A agents) it knows and whether they answer, and whether write tools \
             are on; each missing piece with the step that fixes it.",
            json!({"type": "object", "properties": {}}),
        )
        .annotate(reading("Setup status").open_world(true)),
        tool(
            LIST_AGENTS,
            "List the other A2A agents (peers) this fundi server can delegate to, with what \
             their cached agent cards say (name, skills, how fundi calls them). Contacts no \
             agent; use fundi_discover_agent to read a card now.",
            json!({"type": "object", "properties": {}}),
        )
        .annotate(reading("List peer agents")),
        tool(
            DISCOVER_AGENT,
            "Read one peer's agent card now (revalidated): its name, skills, interfaces, \
             whether it streams and whether its signature verified against the keys the \
             peer's own origin publishes.",
            json!({"type": "object", "required": ["peer"], "properties": {
                "peer": {"type": "string", "description": "The peer's name, from fundi_list_agents."}
            }}),
        )
        .annotate(reading("Discover a peer agent").open_world(true)),
        tool(
            REQUEST,
            request_description(allow_writes),
            json!({"type": "object", "required": ["peer", "method"], "properties": {
                "peer": {"type": "string"},
                "method": {"type": "string", "enum": methods(allow_writes)},
                "params": {"type": "object", "description": "The A2A request's fields, e.g. {\"id\": \"task-id\"}."}
            }}),
        )
        .annotate(match allow_writes {
            true => ToolAnnotations::with_title("Call a peer agent")
                .read_only(false)
                .destructive(true)
                .idempotent(false)
                .open_world(true),
            false => reading("Call a peer agent").open_world(true),
        }),
    ];
    if allow_writes {
        tools.extend([
            tool(
                SEND_MESSAGE,
                "Delegate work to a peer agent: the fundi server sends it the message and \
                 follows the peer's task in a task of its own, durably (a restart neither \
                 loses nor repeats it). Returns at once with that local task's id: follow it \
                 with fundi_wait_for_task and fundi_task_status (the peer's notes, \
                 questions, artifacts and outcome show there). When that task waits for \
                 input (the peer asked a question), call this again with its taskId and \
                 the answer as text: it is sent on to the peer. The same idempotencyKey \
                 returns the same task.",
                json!({"type": "object", "properties": {
                    "peer": {"type": "string", "description": "The peer's name, from fundi_list_agents (not with taskId)."},
                    "taskId": {"type": "string", "description": "The local delegated task whose question this answers."},
                    "text": {"type": "string"},
                    "skill": {"type": "string", "description": "The peer's skill, when it has several."},
                    "data": {"type": "object", "description": "Sent to the peer as a data part."},
                    "idempotencyKey": {"type": "string"}
                }}),
            )
            .annotate(writing("Delegate to a peer agent", false)),
            tool(
                SET_PUSH_CONFIG,
                "Ask a peer to post its task's updates to a webhook (a push notification \
                 config on the peer's task). Set confirm to true.",
                json!({"type": "object", "required": ["peer", "taskId", "url", "confirm"], "properties": {
                    "peer": {"type": "string"},
                    "taskId": {"type": "string", "description": "The peer's task id."},
                    "url": {"type": "string"},
                    "token": {"type": "string", "description": "Sent back with each post, to check it."},
                    "confirm": {"type": "boolean"}
                }}),
            )
            .annotate(writing("Set a peer's push config", false)),
            tool(
                DELETE_PUSH_CONFIG,
                "Delete a push notification config of a peer's task. Set confirm to true.",
                json!({"type": "object", "required": ["peer", "taskId", "configId", "confirm"], "properties": {
                    "peer": {"type": "string"},
                    "taskId": {"type": "string"},
                    "configId": {"type": "string"},
                    "confirm": {"type": "boolean"}
                }}),
            )
            .annotate(writing("Delete a peer's push config", true)),
        ]);
    }
    tools
}

fn writing(title: &str, destructive: bool) -> ToolAnnotations {
    ToolAnnotations::with_title(title)
        .read_only(false)
        .destructive(destructive)
        .idempotent(false)
        .open_world(true)
}

fn methods(allow_writes: bool) -> Vec<&'static str> {
    let mut methods = READS.to_vec();
    if allow_writes {
        methods.extend(WRITES);
    }
    methods
}

fn request_description(allow_writes: bool) -> &'static str {
    match allow_writes {
        true => {
            "Send one A2A call to a peer and get its raw result: GetTask, ListTasks, \
                 GetExtendedAgentCard, the push config reads, and (writes are on) \
                 CancelTask and the push config writes. To send work, use \
                 fundi_send_message, which keeps it durable."
        }
        false => {
            "Send one read-only A2A call to a peer and get its raw result: GetTask, \
                  ListTasks, GetExtendedAgentCard, GetTaskPushNotificationConfig, \
                  ListTaskPushNotificationConfigs."
        }
    }
}

/// Whether `name` is a peer tool that changes anything.
pub(crate) fn writes(name: &str) -> bool {
    [SEND_MESSAGE, SET_PUSH_CONFIG, DELETE_PUSH_CONFIG].contains(&name)
}

/// Runs the peer tool `name`, or `None` when it is not one.
pub(crate) async fn run(call: &Call<'_>, name: &str, arguments: &Value) -> Option<Answer> {
    Some(match name {
        LIST_AGENTS => list_agents(call).await,
        DISCOVER_AGENT => discover(call, arguments).await,
        SEND_MESSAGE => send(call, arguments).await,
        REQUEST => request(call, arguments).await,
        SET_PUSH_CONFIG => set_push(call, arguments).await,
        DELETE_PUSH_CONFIG => delete_push(call, arguments).await,
        AUTH_STATUS => crate::setup::status(call).await,
        _ => return None,
    })
}

async fn list_agents(call: &Call<'_>) -> Answer {
    let listed = call
        .fundi
        .get(call.credentials, "/peers")
        .await
        .map_err(said)?;
    let peers = listed["peers"].as_array().cloned().unwrap_or_default();
    let mut text = format!("{} peer(s):", peers.len());
    for peer in &peers {
        let name = peer["name"].as_str().unwrap_or_default();
        match peer.get("card") {
            Some(card) => text.push_str(&format!("\n- {name}: {}", card_line(card))),
            None => text.push_str(&format!(
                "\n- {name}: card not read yet (fundi_discover_agent)"
            )),
        }
    }
    Ok((text, listed))
}

fn card_line(card: &Value) -> String {
    let skills: Vec<&str> = card["skills"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s["id"].as_str())
        .collect();
    format!(
        "{} (skills: {}; {})",
        card["name"].as_str().unwrap_or("?"),
        skills.join(", "),
        match card["endpoint"]["protocolBinding"].as_str() {
            Some(binding) => format!("called over {binding}"),
            None => "no interface fundi speaks".to_owned(),
        }
    )
}

async fn discover(call: &Call<'_>, arguments: &Value) -> Answer {
    let peer = string(arguments, "peer")?;
    let path = format!("/peers/{}/discover", shape::segment(peer));
    let found = call
        .fundi
        .post(call.credentials, &path, None)
        .await
        .map_err(said)?;
    let card = &found["card"];
    let text = format!(
        "{peer}: {}\nstreaming: {}; card signed: {}; signature verified: {}",
        card_line(card),
        card["streaming"],
        card["signed"],
        card["signatureVerified"]
    );
    Ok((text, found))
}

async fn send(call: &Call<'_>, arguments: &Value) -> Answer {
    if let Some(task) = arguments["taskId"].as_str().filter(|t| !t.is_empty()) {
        return answer(call, task, arguments).await;
    }
    let peer = string(arguments, "peer")
        .map_err(|_| "give the peer to delegate to (or the taskId of a question to answer)")?;
    let text = arguments["text"].as_str();
    let data = arguments.get("data").filter(|d| !d.is_null());
    if text.is_none() && data.is_none() {
        return Err("give the peer something to do: text, or data, or both".into());
    }
    let mut delegation = json!({"peer": peer});
    if let Some(skill) = arguments["skill"].as_str() {
        delegation["skill"] = json!(skill);
    }
    if let Some(data) = data {
        delegation["data"] = data.clone();
    }
    let mut parts = Vec::new();
    if let Some(text) = text {
        parts.push(json!({"text": text}));
    }
    parts.push(json!({"data": delegation}));
    let message = json!({"parts": parts, "metadata": {"skill": "delegate"}});
    let (text, data) = call.send_now(message, arguments).await?;
    Ok((
        format!("{text}\ndelegated to {peer}: follow this task with fundi_wait_for_task"),
        data,
    ))
}

/// The answer to a delegated task's question, sent to that local task.
async fn answer(call: &Call<'_>, task: &str, arguments: &Value) -> Answer {
    let text = string(arguments, "text").map_err(|_| "give the answer as text")?;
    let message = json!({"taskId": task, "parts": [{"text": text}]});
    let (text, data) = call.send_now(message, arguments).await?;
    Ok((format!("{text}\nthe answer goes on to the peer"), data))
}

async fn request(call: &Call<'_>, arguments: &Value) -> Answer {
    let peer = string(arguments, "peer")?;
    let method = string(arguments, "method")?;
    let allowed = methods(call.settings().allow_writes);
    if !allowed.contains(&method) {
        let why = match WRITES.contains(&method) {
            true => {
                "it changes the peer's state, and writes are not allowed (fundi mcp --allow-writes)"
            }
            false => "it is not one fundi_request sends",
        };
        return Err(format!(
            "{method:?} was not sent: {why}; it sends {}",
            allowed.join(", ")
        ));
    }
    let params = arguments
        .get("params")
        .cloned()
        .unwrap_or_else(|| json!({}));
    peer_call(call, peer, method, params).await
}

async fn peer_call(call: &Call<'_>, peer: &str, method: &str, params: Value) -> Answer {
    let path = format!("/peers/{}/call", shape::segment(peer));
    let body = json!({"method": method, "params": params});
    let answer = call
        .fundi
        .post(call.credentials, &path, Some(&body))
        .await
        .map_err(said)?;
    let result = answer["result"].clone();
    let text = serde_json::to_string_pretty(&result).unwrap_or_default();
    Ok((text, result))
}

async fn set_push(call: &Call<'_>, arguments: &Value) -> Answer {
    let peer = string(arguments, "peer")?;
    let task = string(arguments, "taskId")?;
    let url = string(arguments, "url")?;
    confirmed(arguments, "set a push config")?;
    let mut params = json!({"taskId": task, "url": url});
    if let Some(token) = arguments["token"].as_str() {
        params["token"] = json!(token);
    }
    peer_call(call, peer, "CreateTaskPushNotificationConfig", params).await
}

async fn delete_push(call: &Call<'_>, arguments: &Value) -> Answer {
    let peer = string(arguments, "peer")?;
    let task = string(arguments, "taskId")?;
    let config = string(arguments, "configId")?;
    confirmed(arguments, "delete the push config")?;
    let params = json!({"taskId": task, "id": config});
    peer_call(call, peer, "DeleteTaskPushNotificationConfig", params).await
}

fn confirmed(arguments: &Value, what: &str) -> Result<(), String> {
    match arguments["confirm"] == json!(true) {
        true => Ok(()),
        false => Err(format!("not done: set confirm to true to {what}")),
    }
}
