//! The reference fundi's throughput goals name, measured in the same run instead of quoted: the
//! official A2A Rust SDK's server (`a2a-server-lf`, from a2aproject/a2a-rs) with its
//! in-memory task store, running an executor that answers as fundi's `echo` skill does
//! (the task, working, a progress status per step, the echo artifact, completed with
//! the echo as its message), so that the bench's checks of every answer hold for both.
//! It runs in its own process (`--serve-baseline rust-sdk`), like fundi and the other
//! baselines.

use std::sync::Arc;
use std::time::Duration;

use a2a::{
    A2AError, AgentCapabilities, Artifact, Message, Part, Role, StreamResponse, Task,
    TaskArtifactUpdateEvent, TaskState, TaskStatus, TaskStatusUpdateEvent,
};
use a2a_server::{AgentExecutor, DefaultRequestHandler, ExecutorContext, InMemoryTaskStore};
use futures::stream::BoxStream;
use serde_json::Value;

/// What a message's data part asks of the echo (`{"steps": N, "delayMs": M}`, as
/// fundi's `echo` reads it; absent fields are 0).
fn plan(message: &Message) -> Result<(u64, Duration), A2AError> {
    let data = message.parts.iter().find_map(|part| match &part.content {
        a2a::PartContent::Data(value) => Some(value),
        _ => None,
    });
    let number = |key: &str| match data.and_then(|d| d.get(key)) {
        None | Some(Value::Null) => Ok(0),
        // The SDK hands a data part over as protobuf does: every number a double.
        Some(value) => value
            .as_f64()
            .filter(|n| *n >= 0.0 && n.fract() == 0.0)
            .map(|n| n as u64)
            .ok_or_else(|| {
                A2AError::invalid_params(format!(
                    "echo: data part field {key:?} must be a whole number, got {value}"
                ))
            }),
    };
    Ok((number("steps")?, Duration::from_millis(number("delayMs")?)))
}

fn status(state: TaskState, message: Option<Message>) -> TaskStatus {
    TaskStatus {
        state,
        message,
        timestamp: Some(chrono::Utc::now()),
    }
}

fn agent_text(text: &str) -> Message {
    Message::new(Role::Agent, vec![Part::text(text)])
}

/// fundi's `echo` skill, as an SDK executor.
struct Echo;

impl AgentExecutor for Echo {
    fn execute(
        &self,
        ctx: ExecutorContext,
    ) -> BoxStream<'static, Result<StreamResponse, A2AError>> {
        Box::pin(async_stream::try_stream! {
            let (task_id, context_id) = ctx.task_info();
            let message = ctx
                .message
                .ok_or_else(|| A2AError::invalid_params("echo: no message"))?;
            let (steps, delay) = plan(&message)?;
            let text = message.text().unwrap_or_default().to_owned();
            let update = |state, message| {
                StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
                    task_id: task_id.clone(),
                    context_id: context_id.clone(),
                    status: status(state, message),
                    metadata: None,
                })
            };
            yield StreamResponse::Task(Task {
                id: task_id.clone(),
                context_id: context_id.clone(),
                status: status(TaskState::Submitted, None),
                artifacts: None,
                history: Some(vec![message]),
                metadata: None,
            });
            yield update(TaskState::Working, None);
            for step in 1..=steps {
                if !delay.is_zero() {
                    tokio::time::sleep(delay).await;
                }
                let progress = agent_text(&format!("step {step} of {steps}"));
                yield update(TaskState::Working, Some(progress));
            }
            yield StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
                task_id: task_id.clone(),
                context_id: context_id.clone(),
                artifact: Artifact {
                    artifact_id: "echo".into(),
                    name: Some("echo".into()),
                    description: None,
                    parts: vec![Part::text(text.as_str())],
                    metadata: None,
                    extensions: None,
                },
                append: None,
                last_chunk: Some(true),
                metadata: None,
            });
            yield update(TaskState::Completed, Some(agent_text(&text)));
        })
    }

    fn cancel(&self, ctx: ExecutorContext) -> BoxStream<'static, Result<StreamResponse, A2AError>> {
        let (task_id, context_id) = ctx.task_info();
        Box::pin(futures::stream::once(async move {
            Ok(StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
                task_id,
                context_id,
                status: status(TaskState::Canceled, None),
                metadata: None,
            }))
        }))
    }
}

/// The SDK's request handler: the echo executor and its in-memory task store.
fn handler() -> DefaultRequestHandler {
    DefaultRequestHandler::new(Echo, InMemoryTaskStore::new()).with_capabilities(
        AgentCapabilities {
            streaming: Some(true),
            ..AgentCapabilities::default()
        },
    )
}

/// The SDK's JSON-RPC router at `/a2a` (where the bench posts).
pub(crate) fn router() -> axum::Router {
    axum::Router::new().nest(
        "/a2a",
        a2a_server::jsonrpc::jsonrpc_router(Arc::new(handler())),
    )
}

/// The SDK's gRPC service (its `a2a-grpc` binding) over the same handler.
pub(crate) fn grpc_service()
-> a2a_pb::proto::a2a_service_server::A2aServiceServer<a2a_grpc::GrpcHandler<DefaultRequestHandler>>
{
    a2a_pb::proto::a2a_service_server::A2aServiceServer::new(a2a_grpc::GrpcHandler::new(Arc::new(
        handler(),
    )))
}
