//! A skill whose behaviour each message scripts, and the waits tests make on a runtime
//! (each with a deadline, never a sleep).

use crate::access::Access;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::{
    Message, Part, RuntimeHandle, Skill, SkillCard, SkillContext, SkillError, SkillInput,
    SkillOutput, SubmitRequest, Task, TaskEvent, TaskId, TaskState,
};
use async_trait::async_trait;
use futures::StreamExt;
use serde_json::{Value, json};
use tokio::sync::Semaphore;

/// Longest a test waits for something to happen before failing.
pub const DEADLINE: Duration = Duration::from_secs(20);

/// A skill whose behaviour the message's data part scripts:
/// `{"chaos": [fault, ...]}` (report injected faults first), `{"panic": text}`, `{"fail": text}`, `{"reject": text}`, `{"gate": true}` (wait for a
/// permit of `gate`, honouring cancel), `{"ignoreCancel": true}` (sleep, deaf to cancel),
/// `{"ask": true}` (request input), `{"steps": n}` (n progress notes),
/// `{"checkpoint": true}` (save a checkpoint before the gate; report a resumed one).
#[derive(Clone)]
pub struct Scripted {
    /// The skill's id.
    pub id: &'static str,
    /// Whether the skill says it resumes from a checkpoint.
    pub resumable: bool,
    /// The permits `{"gate": true}` runs wait for.
    pub gate: Arc<Semaphore>,
    /// The text of each run's message, in the order the runs started.
    pub started: Arc<Mutex<Vec<String>>>,
}

impl Scripted {
    /// A skill `id`, with a closed gate.
    pub fn new(id: &'static str, resumable: bool) -> Scripted {
        Scripted {
            id,
            resumable,
            gate: Arc::new(Semaphore::new(0)),
            started: Arc::new(Mutex::new(Vec::new())),
        }
    }

    /// What `started` holds now.
    pub fn started(&self) -> Vec<String> {
        self.started.lock().unwrap().clone()
    }
}

#[async_trait]
impl Skill for Scripted {
    fn card(&self) -> SkillCard {
        SkillCard::new(self.id, "scripted test skill")
            .name(self.id)
            .tags(["test"])
            .input_modes(["text/plain"])
            .output_modes(["text/plain"])
            .resumable_if(self.resumable)
    }

    async fn run(&self, input: SkillInput, ctx: SkillContext) -> Result<SkillOutput, SkillError> {
        let first = input
            .history
            .first()
            .cloned()
            .unwrap_or(input.message.clone());
        let data = first.data().cloned().unwrap_or(Value::Null);
        let text = first.text();
        self.started.lock().unwrap().push(text.clone());
        let field = |k: &str| data.get(k).cloned().unwrap_or(Value::Null);

        if let Some(faults) = field("chaos").as_array() {
            for fault in faults {
                ctx.chaos_event(fault.as_str().unwrap_or("?"), "injected by the test");
            }
        }
        if let Some(msg) = field("panic").as_str() {
            panic!("{msg}");
        }
        if let Some(msg) = field("fail").as_str() {
            return Err(SkillError::Failed(msg.into()));
        }
        if let Some(msg) = field("reject").as_str() {
            return Err(SkillError::Rejected(msg.into()));
        }
        if let Some(cp) = &input.checkpoint {
            return Ok(SkillOutput::text(format!("resumed from {cp}")));
        }
        if field("checkpoint") == json!(true) {
            ctx.checkpoint(json!({"at": "gate", "text": text})).await?;
            ctx.status("checkpointed").await?;
        }
        if field("gate") == json!(true) {
            tokio::select! {
                () = ctx.cancelled() => return Err(SkillError::Canceled),
                permit = self.gate.acquire() => permit.expect("gate closed").forget(),
            }
        }
        if field("ignoreCancel") == json!(true) {
            tokio::time::sleep(Duration::from_secs(3600)).await;
        }
        let mut reply = text.clone();
        if field("ask") == json!(true) {
            reply = if input.resumed {
                // Woken after a restart by the answer itself.
                input.message.text()
            } else {
                ctx.request_input("more?").await?.text()
            };
        }
        for i in 0..field("steps").as_u64().unwrap_or(0) {
            ctx.status(format!("step {i}")).await?;
        }
        Ok(SkillOutput::text(format!("done: {reply}")))
    }
}

/// A user message with this text and data part.
pub fn message(text: &str, data: Value) -> Message {
    let mut parts = vec![Part::text(text)];
    if !data.is_null() {
        parts.push(Part::data(data));
    }
    Message::user(parts)
}

/// Submits [`message`] of `text` and `data` as a new task, and returns the task.
pub async fn submit(handle: &RuntimeHandle, text: &str, data: Value) -> Task {
    handle
        .submit(SubmitRequest::new(message(text, data)))
        .await
        .expect("submit")
        .task
}

/// Polls `done` until it holds; fails the test with `what` once the deadline passes.
pub async fn eventually(what: impl Fn() -> String, mut done: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + DEADLINE;
    while !done() {
        assert!(tokio::time::Instant::now() < deadline, "{}", what());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Reads the task's events until one puts it in `state` (or the deadline passes).
pub async fn wait_for_state(handle: &RuntimeHandle, id: &TaskId, state: TaskState) -> Task {
    let watch = async {
        let mut events = handle
            .subscribe(id, 0, Access::Any)
            .await
            .expect("subscribe");
        while let Some(event) = events.next().await {
            let event = event.expect("event");
            if event.status().is_some_and(|s| s.state == state) {
                return;
            }
        }
    };
    tokio::time::timeout(DEADLINE, watch)
        .await
        .unwrap_or_else(|_| panic!("task {id} did not reach {state} in time"));
    handle.get(id, None, Access::Any).await.expect("get")
}

/// Reads the task's events until a status note with this text arrives.
pub async fn wait_for_note(handle: &RuntimeHandle, id: &TaskId, text: &str) {
    let watch = async {
        let mut events = handle
            .subscribe(id, 0, Access::Any)
            .await
            .expect("subscribe");
        while let Some(event) = events.next().await {
            let note = event
                .expect("event")
                .status()
                .and_then(|s| s.message.clone());
            if note.is_some_and(|m| m.text() == text) {
                return;
            }
        }
        panic!("task {id} ended without the note {text:?}");
    };
    tokio::time::timeout(DEADLINE, watch)
        .await
        .unwrap_or_else(|_| panic!("task {id} did not post {text:?} in time"));
}

/// Every event of a task from `after`, until its stream ends.
pub async fn collect_events(handle: &RuntimeHandle, id: &TaskId, after: u64) -> Vec<TaskEvent> {
    let events = handle
        .subscribe(id, after, Access::Any)
        .await
        .expect("subscribe");
    tokio::time::timeout(
        DEADLINE,
        events.map(|e| e.expect("event")).collect::<Vec<_>>(),
    )
    .await
    .expect("stream did not end in time")
}

/// The text of the task's status message (empty without one).
pub fn status_text(task: &Task) -> String {
    task.status
        .message
        .as_ref()
        .map(Message::text)
        .unwrap_or_default()
}

/// `impl TaskStore for $store` that hands every read to `self.$inner` and takes its
/// writes (and settle, if given) from the block: a test store that watches or refuses
/// writes without repeating the reads. With `own_get: { ... }` first, the read of a
/// task (`get`) is the block's too: a store whose reads fail. The macro writes the
/// whole impl, so that `async_trait` sees every method.
#[macro_export]
macro_rules! store_with_own_writes {
    ($store:ty, $inner:ident, own_get: { $($get:tt)* }, { $($writes:tt)* }) => {
        #[async_trait::async_trait]
        impl $crate::store::TaskStore for $store {
            $($writes)*

            $($get)*

            async fn created_by(
                &self,
                owner: Option<&str>,
                message_id: &str,
            ) -> Result<
                Option<($crate::TaskId, chrono::DateTime<chrono::Utc>)>,
                $crate::store::StoreError,
            > {
                self.$inner.created_by(owner, message_id).await
            }

            async fn events(
                &self,
                id: &$crate::TaskId,
                after_seq: u64,
                limit: usize,
            ) -> Result<Vec<$crate::TaskEvent>, $crate::store::StoreError> {
                self.$inner.events(id, after_seq, limit).await
            }

            async fn list(
                &self,
                query: &$crate::store::ListQuery,
            ) -> Result<$crate::store::ListPage, $crate::store::StoreError> {
                self.$inner.list(query).await
            }

            async fn remove_ended_before(
                &self,
                before: chrono::DateTime<chrono::Utc>,
                limit: usize,
            ) -> Result<usize, $crate::store::StoreError> {
                self.$inner.remove_ended_before(before, limit).await
            }

            async fn active(
                &self,
            ) -> Result<Vec<$crate::store::TaskRecord>, $crate::store::StoreError>
            {
                self.$inner.active().await
            }
        }
    };
    ($store:ty, $inner:ident, { $($writes:tt)* }) => {
        $crate::store_with_own_writes!($store, $inner, own_get: {
            async fn get(
                &self,
                id: &$crate::TaskId,
            ) -> Result<Option<$crate::store::TaskRecord>, $crate::store::StoreError>
            {
                self.$inner.get(id).await
            }
        }, { $($writes)* });
    };
}
