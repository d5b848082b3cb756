//! `A2AService`'s methods: each admits the caller from its metadata, transcodes its
//! request into the params the JSON-RPC binding carries, and answers through the same
//! methods and streams.

use std::pin::Pin;

use a2a_pb::proto::{self, a2a_service_server::A2aService};
use axum::http::{HeaderMap, Uri};
use futures::{Stream, StreamExt};
use serde_json::Value;
use tonic::{Request as Call, Response, Status};
use tracing::Instrument;

use super::transcode::{Twin, from_result, to_params};
use crate::admission::{admit, last_event_id};
use crate::auth::Caller;
use crate::dialect::{Dialect, Method};
use crate::encode;
use crate::error::ApiError;
use crate::jsonrpc::Request;
use crate::rest::check_version;
use crate::state::AppState;
use crate::streaming::{Item, open_stream};
use crate::{methods, telemetry};

/// The stream a streaming method answers with.
type Updates = Pin<Box<dyn Stream<Item = Result<proto::StreamResponse, Status>> + Send>>;

/// The metadata key under which each update of a stream carries its event id: the
/// sequence a client resumes after, sent back as `last-event-id` metadata on
/// SubscribeToTask (SSE carries it as the event's `id:`).
pub(crate) const EVENT_ID_KEY: &str = "urn:fundi:event-id";

/// The gRPC service in front of the gateway's state.
pub(crate) struct GrpcBinding {
    state: AppState,
}

impl GrpcBinding {
    pub(crate) fn new(state: AppState) -> GrpcBinding {
        GrpcBinding { state }
    }

    /// Admits the caller of `call` and decodes its params, as the other bindings do
    /// before they look at the operation.
    async fn admit<P: Twin>(
        &self,
        headers: &HeaderMap,
        message: &P,
        method: Method,
    ) -> Result<(Caller, Request), ApiError> {
        let uri = Uri::from_static("/");
        let caller = admit(&self.state, headers, &uri).await?;
        let span = tracing::Span::current();
        span.record("user", crate::clip::clip(&caller.user).as_str());
        span.record("rpc.method", method.name());
        check_version(headers, &uri)?;
        let params = to_params(message)?;
        let request = Request {
            id: Value::Null,
            method,
            dialect: Dialect::V1,
            params,
        };
        Ok((caller, request))
    }

    /// A plain method: its answer, as the protobuf message `R`.
    async fn unary<P: Twin, R: Twin>(
        &self,
        call: Call<P>,
        method: Method,
    ) -> Result<Response<R>, Status> {
        self.plain(call, method, from_result::<R>).await
    }

    /// A plain method whose answer `read` makes from the JSON the other bindings send.
    async fn plain<P: Twin, T>(
        &self,
        call: Call<P>,
        method: Method,
        read: impl FnOnce(&str) -> Result<T, ApiError>,
    ) -> Result<Response<T>, Status> {
        let headers = call.metadata().clone().into_headers();
        let span = telemetry::request_span(&headers, "grpc");
        async {
            let answered = async {
                let (caller, request) = self.admit(&headers, call.get_ref(), method).await?;
                let result = methods::call(&self.state, &caller, request).await?;
                read(result.get())
            }
            .await;
            self.answer(method, answered).map(Response::new)
        }
        .instrument(span)
        .await
    }

    /// A streaming method: the task's updates as `StreamResponse`s; a failure after
    /// the stream opened ends it with its status.
    async fn stream<P: Twin>(
        &self,
        call: Call<P>,
        method: Method,
    ) -> Result<Response<Updates>, Status> {
        let headers = call.metadata().clone().into_headers();
        let span = telemetry::request_span(&headers, "grpc");
        async {
            let opened = async {
                let (caller, request) = self.admit(&headers, call.get_ref(), method).await?;
                let resume = last_event_id(&headers);
                open_stream(&self.state, &caller, request, resume, grpc_update).await
            }
            .await;
            let items = self.answer(method, opened)?;
            let shutdown = self.state.shutdown.clone().cancelled_owned();
            let updates = items.take_until(shutdown);
            Ok(Response::new(Box::pin(updates) as Updates))
        }
        .instrument(span)
        .await
    }

    /// Counts the outcome of `method` and turns a failure into its status.
    fn answer<T>(&self, method: Method, answered: Result<T, ApiError>) -> Result<T, Status> {
        let outcome = match &answered {
            Ok(_) => "ok",
            Err(error) if error.http_refusal().is_some() => "refused",
            Err(_) => "error",
        };
        telemetry::metrics().request(method.name(), outcome);
        answered.map_err(|error| error.to_grpc_status())
    }
}

/// One item of a stream as gRPC sends it.
fn grpc_update(item: Item) -> Result<proto::StreamResponse, Status> {
    match item {
        Item::Update(seq, update) => {
            let json = encode::update_result(&update, Dialect::V1);
            let mut response: proto::StreamResponse =
                from_result(json.get()).map_err(|e| e.to_grpc_status())?;
            tag_event_id(&mut response, seq);
            Ok(response)
        }
        Item::Failed(error) => Err(error.to_grpc_status()),
    }
}

/// Puts the event's sequence in the metadata of a status or artifact update (a task
/// snapshot keeps its own metadata: a client that saw only the task resumes by
/// subscribing again, which starts with the task as it stands).
fn tag_event_id(response: &mut proto::StreamResponse, seq: u64) {
    use proto::stream_response::Payload;
    let metadata = match &mut response.payload {
        Some(Payload::StatusUpdate(update)) => &mut update.metadata,
        Some(Payload::ArtifactUpdate(update)) => &mut update.metadata,
        _ => return,
    };
    let value = prost_types::Value {
        kind: Some(prost_types::value::Kind::StringValue(seq.to_string())),
    };
    metadata
        .get_or_insert_with(Default::default)
        .fields
        .insert(EVENT_ID_KEY.to_owned(), value);
}

#[tonic::async_trait]
impl A2aService for GrpcBinding {
    async fn send_message(
        &self,
        call: Call<proto::SendMessageRequest>,
    ) -> Result<Response<proto::SendMessageResponse>, Status> {
        self.unary(call, Method::SendMessage).await
    }

    type SendStreamingMessageStream = Updates;

    async fn send_streaming_message(
        &self,
        call: Call<proto::SendMessageRequest>,
    ) -> Result<Response<Updates>, Status> {
        self.stream(call, Method::SendStreamingMessage).await
    }

    async fn get_task(
        &self,
        call: Call<proto::GetTaskRequest>,
    ) -> Result<Response<proto::Task>, Status> {
        self.unary(call, Method::GetTask).await
    }

    async fn list_tasks(
        &self,
        call: Call<proto::ListTasksRequest>,
    ) -> Result<Response<proto::ListTasksResponse>, Status> {
        self.unary(call, Method::ListTasks).await
    }

    async fn cancel_task(
        &self,
        call: Call<proto::CancelTaskRequest>,
    ) -> Result<Response<proto::Task>, Status> {
        self.unary(call, Method::CancelTask).await
    }

    type SubscribeToTaskStream = Updates;

    async fn subscribe_to_task(
        &self,
        call: Call<proto::SubscribeToTaskRequest>,
    ) -> Result<Response<Updates>, Status> {
        self.stream(call, Method::SubscribeToTask).await
    }

    async fn create_task_push_notification_config(
        &self,
        call: Call<proto::TaskPushNotificationConfig>,
    ) -> Result<Response<proto::TaskPushNotificationConfig>, Status> {
        self.unary(call, Method::CreatePushConfig).await
    }

    async fn get_task_push_notification_config(
        &self,
        call: Call<proto::GetTaskPushNotificationConfigRequest>,
    ) -> Result<Response<proto::TaskPushNotificationConfig>, Status> {
        self.unary(call, Method::GetPushConfig).await
    }

    async fn list_task_push_notification_configs(
        &self,
        call: Call<proto::ListTaskPushNotificationConfigsRequest>,
    ) -> Result<Response<proto::ListTaskPushNotificationConfigsResponse>, Status> {
        self.unary(call, Method::ListPushConfigs).await
    }

    async fn get_extended_agent_card(
        &self,
        call: Call<proto::GetExtendedAgentCardRequest>,
    ) -> Result<Response<proto::AgentCard>, Status> {
        self.unary(call, Method::GetExtendedAgentCard).await
    }

    async fn delete_task_push_notification_config(
        &self,
        call: Call<proto::DeleteTaskPushNotificationConfigRequest>,
    ) -> Result<Response<()>, Status> {
        // `google.protobuf.Empty`: nothing of the answer is read.
        self.plain(call, Method::DeletePushConfig, |_| Ok(())).await
    }
}
