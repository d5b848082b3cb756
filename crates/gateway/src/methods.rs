//! The non-streaming methods: decode params, call the runtime, encode the result.

use fundi_runtime::Access;
use std::time::Duration;

use fundi_runtime::{
    ListRequest, Message, RuntimeError, SubmitRequest, Task, TaskId, TaskOwner, TaskService,
    TaskSnapshot,
};
use serde_json::{Value, json};

use crate::auth::Caller;
use crate::config::GatewayConfig;
use crate::dialect::{Dialect, Method};
use crate::encode::{self, Encoded};
use crate::error::ApiError;
use crate::jsonrpc::Request;
use crate::params::{
    GetTaskParams, ListTasksParams, SendMessageParams, TaskIdParams, check_tenant, decode,
    history_length, require_objects,
};
use crate::push::{Prepared, PushService};
use crate::state::AppState;
use crate::v03;

/// Default and largest `pageSize` of ListTasks.
const DEFAULT_PAGE_SIZE: i64 = 50;
const MAX_PAGE_SIZE: i64 = 100;

/// Answers a non-streaming request of `caller` with its result, in the request's dialect.
pub(crate) async fn call(
    state: &AppState,
    caller: &Caller,
    request: Request,
) -> Result<Encoded, ApiError> {
    let dialect = request.dialect;
    let params = request.params;
    let timeout = Duration::from_millis(state.config.request_timeout_ms);
    let runtime = &*state.runtime;
    let owner = caller.user.as_str();
    let work = async move {
        check_tenant(&params)?;
        match request.method {
            Method::SendMessage => send_message(state, caller, params, dialect, timeout).await,
            Method::GetTask => get_task(runtime, caller, params, dialect).await,
            Method::ListTasks => {
                list_tasks(runtime, owner, params, state.config.max_list_bytes).await
            }
            Method::CancelTask => cancel_task(runtime, owner, params, dialect).await,
            method @ (Method::CreatePushConfig
            | Method::GetPushConfig
            | Method::ListPushConfigs
            | Method::DeletePushConfig) => match &state.push {
                Some(push) => push
                    .call(caller, method, params, dialect)
                    .await
                    .map(|v| encode::raw(&v)),
                None => Err(ApiError::push_not_supported()),
            },
            Method::GetExtendedAgentCard => {
                crate::extended_card::extended_card(state, caller, dialect)
            }
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

/// A SendMessage's params decoded (v0.3 ones converted) and checked, ready to submit.
pub(crate) struct CheckedSend<'a> {
    /// The submission, on behalf of the caller.
    pub(crate) request: SubmitRequest,
    /// How much history the answer shows.
    pub(crate) history: Option<usize>,
    /// `configuration.returnImmediately` (a blocking send only).
    pub(crate) return_immediately: bool,
    /// A push config given with the message, checked before anything is submitted.
    push: Option<(&'a PushService, Prepared)>,
}

impl<'a> CheckedSend<'a> {
    /// Decodes and checks `params` for `caller`; nothing is submitted yet.
    pub(crate) async fn decode(
        state: &'a AppState,
        caller: &Caller,
        params: Value,
        dialect: Dialect,
    ) -> Result<CheckedSend<'a>, ApiError> {
        let params = match dialect {
            Dialect::V1 => params,
            Dialect::V03 => v03::send_params(params)?,
        };
        require_objects(&params, &["message", "configuration"])?;
        let params: SendMessageParams = decode(params)?;
        check_size(&params.message, &state.config)?;
        let config = params.configuration.unwrap_or_default();
        let history = history_length("configuration.historyLength", config.history_length)?;
        let push = match config.task_push_notification_config {
            None => None,
            Some(fields) => {
                let service = state
                    .push
                    .as_ref()
                    .ok_or_else(ApiError::push_not_supported)?;
                let continued = params.message.task_id.as_ref();
                let prepared = service.prepare(fields, dialect, continued).await?;
                Some((&**service, prepared))
            }
        };
        Ok(CheckedSend {
            request: SubmitRequest::new(params.message)
                .owner(Some(caller.user.clone()))
                .client(Some(caller.client.clone()))
                .grants(caller.grants.clone()),
            history,
            return_immediately: config.return_immediately.unwrap_or(false),
            push,
        })
    }

    /// Splits off the push config, to attach once the message is accepted.
    pub(crate) fn take_push(&mut self) -> PushToAttach<'a> {
        PushToAttach(self.push.take())
    }
}

/// The push config of a send, if it came with one.
pub(crate) struct PushToAttach<'a>(Option<(&'a PushService, Prepared)>);

impl PushToAttach<'_> {
    /// Attaches the config to the accepted task, from the event before the accepted
    /// one: a new task's creation, or the message that continued it.
    pub(crate) async fn attach(self, accepted: &TaskSnapshot) -> Result<(), ApiError> {
        if let Some((service, prepared)) = self.0 {
            let start_after = accepted.seq.saturating_sub(1);
            service
                .attach_prepared(prepared, &accepted.task.id, start_after)
                .await?;
        }
        Ok(())
    }
}

/// Refuses a message with more parts, or a longer text, than the gateway accepts.
fn check_size(message: &Message, config: &GatewayConfig) -> Result<(), ApiError> {
    let limit = config.max_parts_per_message;
    if message.parts.len() > limit {
        return Err(ApiError::invalid_params(
            "message.parts",
            format!(
                "has {} parts; at most {limit} are accepted",
                message.parts.len()
            ),
        ));
    }
    let limit = config.max_text_bytes;
    for (i, part) in message.parts.iter().enumerate() {
        if let Some(text) = part.as_text()
            && text.len() > limit
        {
            return Err(ApiError::invalid_params(
                format!("message.parts[{i}].text"),
                format!(
                    "is {} bytes; at most {limit} are accepted (gateway.max-text-bytes)",
                    text.len()
                ),
            ));
        }
    }
    Ok(())
}

async fn send_message(
    state: &AppState,
    caller: &Caller,
    params: Value,
    dialect: Dialect,
    timeout: Duration,
) -> Result<Encoded, ApiError> {
    let runtime = &*state.runtime;
    let mut send = CheckedSend::decode(state, caller, params, dialect).await?;
    let (push, history) = (send.take_push(), send.history);
    if send.return_immediately {
        let accepted = runtime.submit(send.request).await?;
        push.attach(&accepted).await?;
        let task = accepted.task.with_history_limit(history);
        return Ok(encode::send_result(&task, dialect));
    }
    // Blocking: the task once it is at rest (ended, or waiting for someone), or as it
    // stands at the deadline (a skill may keep a task working for long).
    let waited = runtime.wait(send.request, timeout).await?;
    // Push deliveries settle before they send: attached to the task as accepted.
    push.attach(&waited.accepted).await?;
    let task = waited.outcome.await?.task.with_history_limit(history);
    Ok(encode::send_result(&task, dialect))
}

/// The caller's task, or another user's that the caller may answer (and so read).
async fn get_task(
    runtime: &dyn TaskService,
    caller: &Caller,
    params: Value,
    dialect: Dialect,
) -> Result<Encoded, ApiError> {
    let params: GetTaskParams = decode(params)?;
    let history = history_length("historyLength", params.history_length)?;
    let id = TaskId::from(params.id);
    let task = runtime
        .get_as(
            &id,
            history,
            Access::Owner(caller.user.as_str()),
            &caller.grants,
        )
        .await?;
    Ok(encode::task_result(&task, dialect))
}

async fn cancel_task(
    runtime: &dyn TaskService,
    owner: &str,
    params: Value,
    dialect: Dialect,
) -> Result<Encoded, ApiError> {
    let params: TaskIdParams = decode(params)?;
    let task = runtime
        .cancel(&TaskId::from(params.id), Access::Owner(owner))
        .await?;
    Ok(encode::task_result(&task, dialect))
}

/// A page of the caller's tasks, ended early (with a next-page token) before the task
/// that would take it past `max_bytes`.
async fn list_tasks(
    runtime: &dyn TaskService,
    owner: &str,
    params: Value,
    max_bytes: usize,
) -> Result<Encoded, ApiError> {
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
    let request = ListRequest::new(TaskOwner::user(owner))
        .context(params.context_id.map(Into::into))
        .state(params.status)
        .updated_after(params.status_timestamp_after)
        .page_size(page_size as usize)
        .page_token(params.page_token)
        .history_length(history_length("historyLength", params.history_length)?)
        .with_artifacts(include_artifacts)
        .max_bytes(Some(max_bytes));
    let page = runtime.list(request).await.map_err(|e| match e {
        // The only input the runtime checks here is the token.
        RuntimeError::InvalidInput(text) => ApiError::invalid_params("pageToken", text),
        other => other.into(),
    })?;
    Ok(encode::raw(&ListPage {
        page_size: page.tasks.len(),
        tasks: PageTasks {
            tasks: &page.tasks,
            include_artifacts,
        },
        next_page_token: page.next_page_token.unwrap_or_default(),
        total_size: page.total_size,
    }))
}

/// A `ListTasksResponse`.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct ListPage<'a> {
    tasks: PageTasks<'a>,
    page_size: usize,
    next_page_token: String,
    total_size: usize,
}

/// A page's tasks, each encoded as it is written: never a tree of every task at once.
struct PageTasks<'a> {
    tasks: &'a [Task],
    include_artifacts: bool,
}

impl serde::Serialize for PageTasks<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.tasks.iter().map(|task| {
            let mut task = encode::task(task, Dialect::V1);
            // Asked for artifacts: the key is there even when there are none.
            if self.include_artifacts && task.get("artifacts").is_none() {
                task["artifacts"] = json!([]);
            }
            task
        }))
    }
}
