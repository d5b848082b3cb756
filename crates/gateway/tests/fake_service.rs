//! The gateway's handlers in front of a fake `TaskService`: they decode the request,
//! make the one call it asks for, on behalf of the authenticated caller, and encode the
//! answer or map the error to its JSON-RPC code (an internal one without its detail,
//! which goes to the log); no runtime is involved.

mod common;

use fundi_runtime::Access;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use axum::body::Body;
use axum::http::Request;
use common::{Credentials, message, request};
use fundi_gateway::{AppState, Authenticator, DEFAULT_USER_HEADER, GatewayConfig, app};
use fundi_runtime::model::limits::InvalidField;
use fundi_runtime::{
    ContextId, Following, ListRequest, RuntimeError, SkillCard, StoreError, SubmitRequest, Task,
    TaskId, TaskPage, TaskService, TaskSnapshot, TaskState, Waited,
};
use futures::FutureExt;
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

const TASK: &str = "0193c0de-1234-7000-8000-00000000abcd";

/// Records each call (its name and what it was given) and answers with `task`, or with
/// the error `fail` makes.
#[derive(Clone, Default)]
struct Fake {
    calls: Arc<Mutex<Vec<String>>>,
    fail: Option<MakeError>,
    cards: Vec<SkillCard>,
}

impl Fake {
    fn failing(fail: MakeError) -> Fake {
        Fake {
            fail: Some(fail),
            ..Fake::default()
        }
    }

    fn record(&self, call: String) -> Result<(), RuntimeError> {
        self.calls.lock().unwrap().push(call);
        match self.fail {
            Some(fail) => Err(fail()),
            None => Ok(()),
        }
    }

    fn calls(&self) -> Vec<String> {
        self.calls.lock().unwrap().clone()
    }
}

fn task(state: TaskState) -> Task {
    Task::new(TaskId::from(TASK), ContextId::from("ctx-1"), state)
}

fn snapshot(state: TaskState) -> TaskSnapshot {
    TaskSnapshot {
        task: task(state),
        seq: 3,
    }
}

fn submitted(request: &SubmitRequest) -> String {
    let text = request.message.parts[0].as_text().unwrap_or_default();
    format!("{text} by {:?}", request.owner)
}

#[async_trait]
impl TaskService for Fake {
    fn skills(&self) -> &[SkillCard] {
        &self.cards
    }

    async fn submit(&self, request: SubmitRequest) -> Result<TaskSnapshot, RuntimeError> {
        self.record(format!("submit {}", submitted(&request)))?;
        Ok(snapshot(TaskState::Submitted))
    }

    async fn follow(&self, request: SubmitRequest) -> Result<Following, RuntimeError> {
        self.record(format!("follow {}", submitted(&request)))?;
        Ok(Following {
            accepted: snapshot(TaskState::Working),
            events: Box::pin(futures::stream::empty()),
        })
    }

    async fn wait(
        &self,
        request: SubmitRequest,
        _deadline: std::time::Duration,
    ) -> Result<Waited, RuntimeError> {
        self.record(format!("wait {}", submitted(&request)))?;
        Ok(Waited {
            accepted: snapshot(TaskState::Working),
            outcome: async { Ok(snapshot(TaskState::Completed)) }.boxed(),
        })
    }

    async fn snapshot(
        &self,
        task_id: &TaskId,
        history_length: Option<usize>,
        access: Access<'_>,
    ) -> Result<TaskSnapshot, RuntimeError> {
        self.record(format!("snapshot {task_id} {history_length:?} {access:?}"))?;
        Ok(snapshot(TaskState::Working))
    }

    async fn list(&self, request: ListRequest) -> Result<TaskPage, RuntimeError> {
        let ListRequest {
            page_size, owner, ..
        } = request;
        self.record(format!("list {page_size} {owner:?}"))?;
        Ok(TaskPage {
            tasks: vec![task(TaskState::Completed)],
            skills: vec!["echo".into()],
            next_page_token: None,
            total_size: 1,
        })
    }

    async fn cancel(&self, task_id: &TaskId, access: Access<'_>) -> Result<Task, RuntimeError> {
        self.record(format!("cancel {task_id} {access:?}"))?;
        Ok(task(TaskState::Canceled))
    }

    async fn subscribe(
        &self,
        task_id: &TaskId,
        after_seq: u64,
        access: Access<'_>,
    ) -> Result<fundi_runtime::EventStream, RuntimeError> {
        self.record(format!("subscribe {task_id} {after_seq} {access:?}"))?;
        Ok(Box::pin(futures::stream::empty()))
    }

    async fn traceparent(&self, _task_id: &TaskId) -> Option<String> {
        None
    }
}

/// A gateway in front of `fake`; calls as the user alice.
struct Front {
    router: axum::Router,
    credentials: Credentials,
}

impl Front {
    fn new(fake: Fake) -> Front {
        let credentials = Credentials::generate();
        let auth = Authenticator::from_config(&credentials.auth_config()).unwrap();
        let state = AppState::new(
            fake,
            GatewayConfig::default(),
            auth,
            "http://agent.test:8080",
            CancellationToken::new(),
        );
        Front {
            router: app(state),
            credentials,
        }
    }

    /// A JSON-RPC call: the HTTP status and the response body.
    async fn call(&self, method: &str, params: Value) -> (u16, Value) {
        let request = Request::post("/a2a")
            .header("host", "agent.test:8080")
            .header(
                "authorization",
                format!("Bearer {}", self.credentials.admin_token),
            )
            .header(DEFAULT_USER_HEADER, &self.credentials.alice)
            .header("content-type", "application/json")
            .body(Body::from(request(method, params).to_string()))
            .unwrap();
        let response = self.router.clone().oneshot(request).await.unwrap();
        let status = response.status().as_u16();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        (
            status,
            serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        )
    }
}

#[tokio::test]
async fn each_method_makes_its_one_call_for_the_caller_and_encodes_the_answer() {
    let fake = Fake::default();
    let front = Front::new(fake.clone());
    let alice = "Some(UserId(\"alice\"))";

    let (_, got) = front
        .call("GetTask", json!({"id": TASK, "historyLength": 2}))
        .await;
    assert_eq!(got["result"]["id"], TASK, "{got}");
    assert_eq!(got["result"]["status"]["state"], "TASK_STATE_WORKING");

    let (_, canceled) = front.call("CancelTask", json!({"id": TASK})).await;
    assert_eq!(canceled["result"]["status"]["state"], "TASK_STATE_CANCELED");

    let (_, listed) = front.call("ListTasks", json!({"pageSize": 7})).await;
    assert_eq!(listed["result"]["tasks"][0]["id"], TASK, "{listed}");

    let (_, sent) = front
        .call(
            "SendMessage",
            json!({"message": message("blocking", Value::Null)}),
        )
        .await;
    assert_eq!(
        sent["result"]["task"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );

    let immediately = json!({
        "message": message("at-once", Value::Null),
        "configuration": {"returnImmediately": true},
    });
    let (_, sent) = front.call("SendMessage", immediately).await;
    assert_eq!(
        sent["result"]["task"]["status"]["state"],
        "TASK_STATE_SUBMITTED"
    );

    assert_eq!(
        fake.calls(),
        [
            format!("snapshot {TASK} Some(2) Owner(\"alice\")"),
            format!("cancel {TASK} Owner(\"alice\")"),
            "list 7 User(UserId(\"alice\"))".to_owned(),
            format!("wait blocking by {alice}"),
            format!("submit at-once by {alice}"),
        ]
    );
}

#[tokio::test]
async fn bad_params_never_reach_the_service() {
    let fake = Fake::default();
    let front = Front::new(fake.clone());
    let (_, got) = front.call("GetTask", json!({"id": 7})).await;
    assert_eq!(got["error"]["code"], -32602, "{got}");
    let (_, got) = front
        .call("SendMessage", json!({"message": {"role": "ROLE_USER"}}))
        .await;
    assert_eq!(got["error"]["code"], -32602, "{got}");
    assert!(fake.calls().is_empty(), "{:?}", fake.calls());
}

/// Makes the error a failing fake answers with.
type MakeError = fn() -> RuntimeError;

#[tokio::test]
async fn the_services_errors_map_to_their_wire_codes() {
    let cases: [(MakeError, i64, &str); 5] = [
        (
            || RuntimeError::TaskNotFound(TaskId::from(TASK)),
            -32001,
            TASK,
        ),
        (
            || RuntimeError::NotCancelable {
                id: TaskId::from(TASK),
                state: TaskState::Completed,
            },
            -32002,
            "already TASK_STATE_COMPLETED",
        ),
        (
            || {
                RuntimeError::InvalidField(InvalidField {
                    field: "message.parts[0].data".into(),
                    reason: "nests deeper than 64 levels".into(),
                })
            },
            -32602,
            "nests deeper",
        ),
        (
            || RuntimeError::Unavailable("the runtime is shutting down".into()),
            -32603,
            "Internal error",
        ),
        (
            || RuntimeError::Store(StoreError::damaged("bad bytes")),
            -32603,
            "Internal error",
        ),
    ];
    for (fail, code, text) in cases {
        let front = Front::new(Fake::failing(fail));
        let (status, got) = front.call("CancelTask", json!({"id": TASK})).await;
        assert_eq!(status, 200);
        assert_eq!(got["error"]["code"], code, "{got}");
        let message = got["error"]["message"].as_str().unwrap();
        assert!(message.contains(text), "{message} should say {text:?}");
        // What went wrong inside stays in the server's log.
        assert!(!message.contains("bad bytes") && !message.contains("shutting down"));
    }
}
