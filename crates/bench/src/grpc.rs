//! W1 and W3 over gRPC: the same workloads as `workloads.rs`, sent with the official
//! SDK's generated tonic client (one HTTP/2 connection per worker, as HTTP/1.1 gives
//! each worker one), to fundi's gRPC binding on its HTTP port and to the Rust SDK's
//! gRPC server (`a2a-grpc`, serving the same echo executor in memory).

use a2a_pb::proto::a2a_service_client::A2aServiceClient;
use a2a_pb::proto::{self, part, send_message_response, stream_response};
use anyhow::{Context, bail, ensure};
use tonic::transport::Channel;

use crate::server::Credentials;
use crate::workloads::STREAM_STEPS;

/// A worker's client with the credentials every call carries.
#[derive(Clone)]
pub(crate) struct Client {
    service: A2aServiceClient<Channel>,
    bearer: tonic::metadata::MetadataValue<tonic::metadata::Ascii>,
    user: tonic::metadata::MetadataValue<tonic::metadata::Ascii>,
}

impl Client {
    /// One client per worker, each on a connection of its own, to the servers in turn.
    pub(crate) async fn connect_all(
        urls: &[String],
        workers: usize,
        credentials: &Credentials,
    ) -> anyhow::Result<Vec<Client>> {
        let mut clients = Vec::with_capacity(workers);
        for w in 0..workers {
            let url = &urls[w % urls.len()];
            let channel = Channel::from_shared(url.clone())?
                .tcp_nodelay(true)
                .connect()
                .await
                .with_context(|| format!("gRPC to {url}"))?;
            clients.push(Client {
                service: A2aServiceClient::new(channel),
                bearer: format!("Bearer {}", credentials.token).parse()?,
                user: credentials.user_token.parse()?,
            });
        }
        Ok(clients)
    }

    fn call<T>(&self, message: T) -> tonic::Request<T> {
        let mut call = tonic::Request::new(message);
        let metadata = call.metadata_mut();
        metadata.insert("authorization", self.bearer.clone());
        metadata.insert("x-fundi-user-token", self.user.clone());
        call
    }
}

fn send_request(text: &str, data: Option<prost_types::Struct>) -> proto::SendMessageRequest {
    let mut parts = vec![proto::Part {
        content: Some(part::Content::Text(text.to_owned())),
        ..Default::default()
    }];
    if let Some(data) = data {
        let value = prost_types::Value {
            kind: Some(prost_types::value::Kind::StructValue(data)),
        };
        parts.push(proto::Part {
            content: Some(part::Content::Data(value)),
            ..Default::default()
        });
    }
    proto::SendMessageRequest {
        message: Some(proto::Message {
            message_id: uuid::Uuid::new_v4().to_string(),
            role: proto::Role::User as i32,
            parts,
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn text_of(parts: &[proto::Part]) -> Option<&str> {
    match parts.first()?.content.as_ref()? {
        part::Content::Text(text) => Some(text),
        _ => None,
    }
}

/// W1 over gRPC: a blocking SendMessage to echo; the answer must be the completed task
/// echoing the text.
pub(crate) async fn send_blocking(client: &Client, worker: usize, i: u64) -> anyhow::Result<u64> {
    let text = format!("w{worker}-{i}");
    let mut service = client.service.clone();
    let answer = service
        .send_message(client.call(send_request(&text, None)))
        .await?
        .into_inner();
    let Some(send_message_response::Payload::Task(task)) = answer.payload else {
        bail!("not a task: {answer:?}");
    };
    let state = task.status.as_ref().map(|s| s.state);
    ensure!(
        state == Some(proto::TaskState::Completed as i32),
        "not completed: {task:?}"
    );
    let echoed = task.artifacts.first().and_then(|a| text_of(&a.parts));
    ensure!(echoed == Some(text.as_str()), "wrong echo: {task:?}");
    Ok(1)
}

/// W3 over gRPC: a streaming SendMessage of `STREAM_STEPS` steps read to its end.
pub(crate) async fn stream(
    client: &Client,
    worker: usize,
    i: u64,
    each_step_stored: bool,
) -> anyhow::Result<u64> {
    let text = format!("s{worker}-{i}");
    let number = |n: f64| prost_types::Value {
        kind: Some(prost_types::value::Kind::NumberValue(n)),
    };
    let data = prost_types::Struct {
        fields: [
            ("steps".to_owned(), number(STREAM_STEPS as f64)),
            ("delayMs".to_owned(), number(0.0)),
            (
                "waitEachStep".to_owned(),
                prost_types::Value {
                    kind: Some(prost_types::value::Kind::BoolValue(each_step_stored)),
                },
            ),
        ]
        .into(),
    };
    let mut service = client.service.clone();
    let mut events = service
        .send_streaming_message(client.call(send_request(&text, Some(data))))
        .await?
        .into_inner();
    let mut received = Vec::new();
    while let Some(event) = events.message().await? {
        received.push(event.payload);
    }
    ensure!(
        matches!(
            received.first(),
            Some(Some(stream_response::Payload::Task(_)))
        ),
        "first event is not the task"
    );
    let completed = matches!(
        received.last(),
        Some(Some(stream_response::Payload::StatusUpdate(update)))
            if update.status.as_ref().map(|s| s.state) == Some(proto::TaskState::Completed as i32)
    );
    ensure!(completed, "last event is not the completion");
    ensure!(
        received.len() as u64 >= STREAM_STEPS + 3,
        "only {} events",
        received.len()
    );
    Ok(received.len() as u64)
}
