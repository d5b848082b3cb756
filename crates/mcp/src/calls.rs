//! What each tool does: a few A2A calls, and the answer shaped for a model. `Err` is a
//! message for the model (a refusal, a bad argument, fundi unreachable), never a panic.

use serde_json::{Value, json};

use crate::call::{Answer, Call, said, string};
use crate::{shape, tools, wait};

/// Runs the tool `name` with `arguments`.
pub(crate) async fn run(call: &Call<'_>, name: &str, arguments: &Value) -> Answer {
    if let Some(answer) = crate::peers::run(call, name, arguments).await {
        return answer;
    }
    match name {
        tools::LIST_SKILLS => list_skills(call).await,
        tools::SUBMIT => submit(call, arguments).await,
        tools::STATUS => status(call, arguments).await,
        tools::WAIT => wait::wait(call, arguments).await,
        tools::CANCEL => cancel(call, arguments).await,
        tools::LIST_TASKS => list_tasks(call, arguments).await,
        tools::RESPOND => respond(call, arguments).await,
        other => Err(format!("no tool {other:?}")),
    }
}

async fn list_skills(call: &Call<'_>) -> Answer {
    let card = call.fundi.card().await.map_err(said)?;
    let skills = card["skills"].as_array().cloned().unwrap_or_default();
    // The input schemas travel in a card extension: `AgentSkill` has no field for one.
    let schemas = card["capabilities"]["extensions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|e| e["uri"] == INPUT_SCHEMAS)
        .map(|e| e["params"].clone())
        .unwrap_or(Value::Null);
    let mut text = format!("{} skill(s):", skills.len());
    let mut rows = Vec::new();
    for skill in &skills {
        let id = skill["id"].as_str().unwrap_or("");
        let description = for_tools(skill["description"].as_str().unwrap_or(""), id);
        text.push_str(&format!("\n- {id}: {description}"));
        let mut row = json!({"id": id, "name": skill["name"], "description": description});
        if let Some(schema) = schemas.get(id) {
            text.push_str(&format!("\n  data (JSON Schema): {schema}"));
            row["inputSchema"] = schema.clone();
        }
        rows.push(row);
    }
    Ok((text, json!({"skills": rows})))
}

/// The card extension with the skills' input schemas (fundi-gateway's card).
const INPUT_SCHEMAS: &str = "urn:fundi:skill-input-schemas:1";

/// A skill's card description as a tool's caller acts on it: the card tells A2A clients
/// to pick the skill with message metadata; here it is the `skill` argument.
fn for_tools(description: &str, id: &str) -> String {
    let a2a = format!("Pick it with the message metadata {{\"skill\": \"{id}\"}}.");
    let tools = format!("Start it with fundi_submit_test, skill \"{id}\" (its input as data).");
    description.replace(&a2a, &tools)
}

async fn submit(call: &Call<'_>, arguments: &Value) -> Answer {
    let skill = string(arguments, "skill")?;
    let text = arguments["text"].as_str();
    let data = arguments.get("data").filter(|d| !d.is_null());
    if text.is_none() && data.is_none() {
        return Err("give the skill's input as data, or text, or both".into());
    }
    let mut parts = Vec::new();
    if let Some(text) = text {
        parts.push(json!({"text": text}));
    }
    if let Some(data) = data {
        parts.push(json!({"data": data}));
    }
    let message = json!({"parts": parts, "metadata": {"skill": skill}});
    let (text, data) = call.send_now(message, arguments).await?;
    Ok((
        format!("{text}\nfollow it with fundi_wait_for_task or fundi_task_status"),
        data,
    ))
}

async fn status(call: &Call<'_>, arguments: &Value) -> Answer {
    let id = string(arguments, "taskId")?;
    let task = call
        .rpc("GetTask", json!({"id": id, "historyLength": 0}))
        .await?;
    if let Some(wanted) = arguments["artifactId"].as_str() {
        let artifacts = task["artifacts"].as_array().cloned().unwrap_or_default();
        let artifact = artifacts
            .iter()
            .find(|a| a["artifactId"] == wanted)
            .ok_or_else(|| format!("task {id} has no artifact {wanted:?}"))?;
        let text = shape::text_of(artifact);
        let whole = match text.is_empty() {
            true => serde_json::to_string_pretty(&artifact["parts"]).unwrap_or_default(),
            false => text,
        };
        return Ok((whole, artifact.clone()));
    }
    Ok(shape::task(&task))
}

async fn cancel(call: &Call<'_>, arguments: &Value) -> Answer {
    let id = string(arguments, "taskId")?;
    if arguments["confirm"] != json!(true) {
        return Err(format!(
            "not canceled: set confirm to true to cancel task {id} (its work stops)"
        ));
    }
    let task = call.rpc("CancelTask", json!({"id": id})).await?;
    Ok(shape::task(&task))
}

async fn list_tasks(call: &Call<'_>, arguments: &Value) -> Answer {
    let mut params = json!({"pageSize": arguments["pageSize"].as_u64().unwrap_or(20).clamp(1, 100),
                            "historyLength": 0});
    if let Some(state) = arguments["state"].as_str() {
        let wire = format!(
            "TASK_STATE_{}",
            state.trim().replace('-', "_").to_ascii_uppercase()
        );
        params["status"] = json!(wire);
    }
    if let Some(token) = arguments["pageToken"].as_str().filter(|t| !t.is_empty()) {
        params["pageToken"] = json!(token);
    }
    let page = call.rpc("ListTasks", params).await?;
    Ok(shape::page(&page))
}

async fn respond(call: &Call<'_>, arguments: &Value) -> Answer {
    let id = string(arguments, "taskId")?;
    let action = string(arguments, "action")?;
    let mut body = json!({"action": action});
    for field in ["text", "data"] {
        if let Some(value) = arguments.get(field).filter(|v| !v.is_null()) {
            body[field] = value.clone();
        }
    }
    let path = format!("/inbox/{id}/respond");
    call.fundi
        .post(call.credentials, &path, Some(&body))
        .await
        .map_err(said)?;
    Ok((
        format!("answered task {id} ({action})"),
        json!({"taskId": id, "action": action}),
    ))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_card_description_is_told_as_the_tool_argument_that_picks_the_skill() {
        let card = "Echoes. Pick it with the message metadata {\"skill\": \"echo\"}. Queued.";
        let told = super::for_tools(card, "echo");
        assert_eq!(
            told,
            "Echoes. Start it with fundi_submit_test, skill \"echo\" (its input as data). Queued."
        );
    }
}
