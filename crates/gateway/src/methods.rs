//! The non-streaming methods: decode params, call the runtime, encode the result.

use std::time::Duration;

use fundi_runtime::{
    ListRequest, RuntimeError, RuntimeHandle, SubmitRequest, TaskId, TaskSnapshot,
};
use futures::StreamExt;
use serde_json::{Value, json};

use crate::dialect::{Dialect, Method};
use crate::encode;
use crate::error::ApiError;
use crate::jsonrpc::Request;
use crate::params::{
    GetTaskParams, ListTasksParams, SendMessageParams, TaskIdParams, decode, history_length,
};
use crate::state::AppState;
use crate::v03;

/// Default and largest `pageSize` of ListTasks.
const DEFAULT_PAGE_SIZE: i64 = 50;
const MAX_PAGE_SIZE: i64 = 100;

/// Answers a non-streaming request with its result, in the request's dialect.
pub(crate) async fn call(state: &AppState, request: Request) -> Result<Value, ApiError> {
    let dialect = request.dialect;
    let params = request.params;
    let timeout = Duration::from_millis(state.config.request_timeout_ms);
    let runtime = &state.runtime;
    let work = async move {
        match request.method {
            Method::SendMessage => send_message(runtime, params, dialect, timeout).await,
            Method::GetTask => get_task(runtime, params, dialect).await,
            Method::ListTasks => list_tasks(runtime, params).await,
            Method::CancelTask => cancel_task(runtime, params, dialect).await,
            Method::CreatePushConfig
            | Method::GetPushConfig
            | Method::ListPushConfigs
            | Method::DeletePushConfig => Err(ApiError::push_not_supported()),
            Method::GetExtendedAgentCard => Err(ApiError::unsupported(
                "this agent declares no extended agent card (capabilities.extendedAgentCard is false)",
            )),
            Method::SendStreamingMessage | Method::SubscribeToTask => Err(ApiError::internal(
                "streaming method routed as a plain call",
            )),
        }
    };
    // A blocking SendMessage watches its own deadline (it answers with the task as it
    // stands); anything else that overruns is cut off here, a little later.
    tokio::time::timeout(timeout + Duration::from_secs(1), work)
        .await
        .unwrap_or_else(|_| Err(ApiError::timed_out(timeout)))
}

/// Decodes SendMessage params (converting v0.3 ones) and submits the message.
pub(crate) async fn submit(
    runtime: &RuntimeHandle,
    params: Value,
    dialect: Dialect,
) -> Result<(TaskSnapshot, Option<usize>, bool), ApiError> {
    let params = match dialect {
        Dialect::V1 => params,
        Dialect::V03 => v03::send_params(params)?,
    };
    let params: SendMessageParams = decode(params)?;
    let config = params.configuration.unwrap_or_default();
    if config.task_push_notification_config.is_some() {
        return Err(ApiError::push_not_supported());
    }
    let history = history_length("configuration.historyLength", config.history_length)?;
    let accepted = runtime.submit(SubmitRequest::new(params.message)).await?;
    Ok((
        accepted,
        history,
        config.return_immediately.unwrap_or(false),
    ))
}

async fn send_message(
    runtime: &RuntimeHandle,
    params: Value,
    dialect: Dialect,
    timeout: Duration,
) -> Result<Value, ApiError> {
    let (accepted, history, return_immediately) = submit(runtime, params, dialect).await?;
    let id = accepted.task.id.clone();
    if return_immediately {
        return Ok(encode::send_result(
            &accepted.task.with_history_limit(history),
            dialect,
        ));
    }
    // Blocking: wait for a terminal or interrupted state, but never past the deadline
    // (a skill may park a task in working): then answer with the task as it stands.
    let _ = tokio::time::timeout(timeout, settled(runtime, &id, accepted.seq)).await;
    let task = runtime.get(&id, history, None).await?;
    Ok(encode::send_result(&task, dialect))
}

/// Returns once the task reaches a terminal or interrupted state after event `seq`, or
/// once its event stream ends.
async fn settled(runtime: &RuntimeHandle, id: &TaskId, seq: u64) {
    let Ok(mut events) = runtime.subscribe(id, seq, None).await else {
        return;
    };
    while let Some(Ok(event)) = events.next().await {
        if event
            .status()
            .is_some_and(|s| s.state.is_terminal() || s.state.is_interrupted())
        {
            return;
        }
    }
}

async fn get_task(
    runtime: &RuntimeHandle,
    params: Value,
    dialect: Dialect,
) -> Result<Value, ApiError> {
    let params: GetTaskParams = decode(params)?;
    let history = history_length("historyLength", params.history_length)?;
    let task = runtime.get(&TaskId::from(params.id), history, None).await?;
    Ok(encode::task(&task, dialect))
}

async fn cancel_task(
    runtime: &RuntimeHandle,
    params: Value,
    dialect: Dialect,
) -> Result<Value, ApiError> {
    let params: TaskIdParams = decode(params)?;
    let task = runtime.cancel(&TaskId::from(params.id), None).await?;
    Ok(encode::task(&task, dialect))
}

async fn list_tasks(runtime: &RuntimeHandle, params: Value) -> Result<Value, ApiError> {
    let params: ListTasksParams = decode(params)?;
    let page_size = match params.page_size {
        None => DEFAULT_PAGE_SIZE,
        Some(n) if (1..=MAX_PAGE_SIZE).contains(&n) => n,
        Some(n) => {
            return Err(ApiError::invalid_params(
                "pageSize",
                format!("must be between 1 and {MAX_PAGE_SIZE}, got {n}"),
            ));
        }
    };
    let include_artifacts = params.include_artifacts.unwrap_or(false);
    let request = ListRequest {
        context_id: params.context_id.map(Into::into),
        state: params.status,
        updated_after: params.status_timestamp_after,
        owner: None,
        page_size: page_size as usize,
        page_token: params.page_token,
        history_length: history_length("historyLength", params.history_length)?,
        include_artifacts,
    };
    let page = runtime.list(request).await.map_err(|e| match e {
        // The only input the runtime checks here is the token.
        RuntimeError::InvalidInput(text) => ApiError::invalid_params("pageToken", text),
        other => other.into(),
    })?;
    let tasks: Vec<Value> = page
        .tasks
        .iter()
        .map(|t| {
            let mut task = encode::task(t, Dialect::V1);
            // Asked for artifacts: the key is there even when there are none.
            if include_artifacts && task.get("artifacts").is_none() {
                task["artifacts"] = json!([]);
            }
            task
        })
        .collect();
    Ok(json!({
        "pageSize": tasks.len(),
        "tasks": tasks,
        "nextPageToken": page.next_page_token.unwrap_or_default(),
        "totalSize": page.total_size,
    }))
}
