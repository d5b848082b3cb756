//! `Listener`, a skill scripted by its task's first message that takes messages while
//! it works as its card's policy says, and the helpers of the tests of messages to a
//! working task (`while_working.rs`, `while_working_interrupts.rs`).

// Each test crate that includes this module uses a part of it.
#![allow(dead_code)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use fundi_runtime::store::TaskStore;
use fundi_runtime::testing::scripted::*;
use fundi_runtime::{
    MemoryStore, Message, MessagePolicy, Part, Role, Runtime, RuntimeConfig, RuntimeError,
    RuntimeHandle, Skill, SkillCard, SkillContext, SkillError, SkillInput, SkillOutput,
    SubmitRequest, Task, TaskEventKind, TaskId,
};
use fundi_store_sled::testing::open_sled;
use serde_json::{Value, json};
use tokio::sync::Semaphore;

/// How a run started, as the skill saw it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Started {
    pub(crate) text: String,
    pub(crate) checkpoint: Option<Value>,
    pub(crate) resumed: bool,
}

/// A skill with a message policy, scripted by its task's first message's data part.
/// Each run saves a checkpoint, then for each of `rounds` (1) waits for a permit of
/// `gate` and takes the messages waiting (`"wait": true`: waits for one first; `"deaf":
/// true`: takes none); then `"ask": true` asks for input. `"stubborn": true` makes it
/// deaf to cancel first. It replies with the run's message and what it took.
#[derive(Clone)]
pub(crate) struct Listener {
    pub(crate) id: &'static str,
    pub(crate) policy: MessagePolicy,
    pub(crate) gate: Arc<Semaphore>,
    pub(crate) started: Arc<Mutex<Vec<Started>>>,
}

impl Listener {
    pub(crate) fn new(id: &'static str, policy: MessagePolicy) -> Listener {
        Listener {
            id,
            policy,
            gate: Arc::new(Semaphore::new(0)),
            started: Arc::default(),
        }
    }

    pub(crate) fn started(&self) -> Vec<Started> {
        self.started.lock().unwrap().clone()
    }
}

#[async_trait]
impl Skill for Listener {
    fn card(&self) -> SkillCard {
        SkillCard::new(self.id, "listens while it works")
            .resumable()
            .while_working(self.policy)
    }

    async fn run(&self, input: SkillInput, ctx: SkillContext) -> Result<SkillOutput, SkillError> {
        self.started.lock().unwrap().push(Started {
            text: input.message.text(),
            checkpoint: input.checkpoint.clone(),
            resumed: input.resumed,
        });
        let first = input.history.iter().find(|m| m.role == Role::User).unwrap();
        let data = first.data().cloned().unwrap_or(Value::Null);
        let flag = |key: &str| data[key] == json!(true);
        ctx.checkpoint(json!({"run": input.message.text()})).await?;
        if flag("stubborn") {
            tokio::time::sleep(Duration::from_secs(3600)).await;
        }
        let mut took = Vec::new();
        for _ in 0..data["rounds"].as_u64().unwrap_or(1) {
            tokio::select! {
                () = ctx.cancelled() => return Err(SkillError::Canceled),
                permit = self.gate.acquire() => permit.unwrap().forget(),
            }
            if flag("deaf") {
                continue;
            }
            if flag("wait") {
                let message = ctx.next_message().await?;
                ctx.status(format!("took {}", message.text())).await?;
                took.push(message.text());
            }
            while let Some(message) = ctx.try_next_message().await? {
                ctx.status(format!("took {}", message.text())).await?;
                took.push(message.text());
            }
        }
        if flag("ask") {
            took.push(format!(
                "answer {}",
                ctx.request_input("more?").await?.text()
            ));
        }
        let reply = format!("{} + [{}]", input.message.text(), took.join(", "));
        Ok(SkillOutput::text(reply))
    }
}

/// A runtime with this skill, on a sled store in `dir` or in memory, and its store.
pub(crate) async fn start(
    skill: &Listener,
    dir: Option<&std::path::Path>,
) -> (RuntimeHandle, Arc<dyn TaskStore>) {
    let mut config = RuntimeConfig::default();
    config.cancel_grace_ms = 300;
    let store: Arc<dyn TaskStore> = match dir {
        Some(dir) => Arc::new(open_sled(dir).await),
        None => Arc::new(MemoryStore::new()),
    };
    let rt = Runtime::builder()
        .config(config)
        .shared_store(store.clone())
        .skill(skill.clone())
        .start()
        .await
        .unwrap();
    (rt, store)
}

/// Starts a task and waits until its run has saved its checkpoint (the task works).
pub(crate) async fn begin((rt, store): &Node, skill: &Listener, text: &str, data: Value) -> Task {
    let runs = skill.started().len();
    let task = rt
        .submit(SubmitRequest::new(message(text, data)))
        .await
        .unwrap()
        .task;
    working(store.as_ref(), &task.id, skill, runs + 1).await;
    task
}

/// Waits until the skill has started `runs` runs and the task's last one has saved its
/// checkpoint.
pub(crate) async fn working(store: &dyn TaskStore, id: &TaskId, skill: &Listener, runs: usize) {
    eventually(
        || format!("run {runs} of task {id} did not start"),
        || skill.started().len() >= runs,
    )
    .await;
    let expected = json!({"run": skill.started()[runs - 1].text});
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        let record = store.get(id).await.unwrap().unwrap();
        if record.checkpoint.as_ref() == Some(&expected) {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "run {runs} of {id} did not checkpoint"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Sends `text` to the task; the task as acknowledged.
pub(crate) async fn tell(
    rt: &RuntimeHandle,
    id: &TaskId,
    text: &str,
) -> Result<Task, RuntimeError> {
    let mut message = Message::user(vec![Part::text(text)]);
    message.task_id = Some(id.clone());
    rt.submit(SubmitRequest::new(message)).await.map(|s| s.task)
}

pub(crate) fn user_texts(task: &Task) -> Vec<String> {
    task.history
        .iter()
        .filter(|m| m.role == Role::User)
        .map(Message::text)
        .collect()
}

/// Every status of the task's log after its creation, in order (`state: text`).
pub(crate) async fn notes(rt: &RuntimeHandle, id: &TaskId) -> Vec<String> {
    collect_events(rt, id, 0)
        .await
        .iter()
        .filter_map(|e| match &e.kind {
            TaskEventKind::Status(s) => Some(format!(
                "{}: {}",
                s.state
                    .to_string()
                    .trim_start_matches("TASK_STATE_")
                    .to_lowercase()
                    .replace('_', "-"),
                s.message.as_ref().map(Message::text).unwrap_or_default()
            )),
            _ => None,
        })
        .collect()
}

pub(crate) type Node = (RuntimeHandle, Arc<dyn TaskStore>);

/// Stops `node` as a crash would (its actors, without a word), starts the runtime
/// again on the same sled directory with a fresh skill of the same card, and waits
/// until the task's resumed run has saved its checkpoint; checks how that run started.
pub(crate) async fn restart(
    node: Node,
    dir: &std::path::Path,
    task: &TaskId,
    resumed_from: &str,
) -> (Node, Listener) {
    node.0.shutdown(Duration::ZERO).await;
    let skill = Listener::new("listener", node.0.skills()[0].while_working);
    drop(node);
    let node = start(&skill, Some(dir)).await;
    working(node.1.as_ref(), task, &skill, 1).await;
    let expected = Started {
        text: resumed_from.into(),
        checkpoint: Some(json!({"run": resumed_from})),
        resumed: true,
    };
    assert_eq!(skill.started()[0], expected, "the resumed run");
    (node, skill)
}
