//! Messages to a task whose run works, as its skill's card says: queued for the run
//! (`enqueue`), restarting it (`interrupt`), or refused (`reject`); stored before they
//! are acknowledged, and after a restart handed to the resumed run exactly when it had
//! not taken them.

use fundi_runtime::Access;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use fundi_runtime::store::TaskStore;
use fundi_runtime::testing::scripted::*;
use fundi_runtime::{
    MAX_QUEUED_MESSAGES, MemoryStore, Message, MessagePolicy, Part, Role, Runtime, RuntimeConfig,
    RuntimeError, RuntimeHandle, Skill, SkillCard, SkillContext, SkillError, SkillInput,
    SkillOutput, SubmitRequest, Task, TaskEventKind, TaskId, TaskState,
};
use fundi_store_sled::testing::open_sled;
use serde_json::{Value, json};
use tokio::sync::Semaphore;

/// How a run started, as the skill saw it.
#[derive(Debug, Clone, PartialEq)]
struct Started {
    text: String,
    checkpoint: Option<Value>,
    resumed: bool,
}

/// A skill with a message policy, scripted by its task's first message's data part.
/// Each run saves a checkpoint, then for each of `rounds` (1) waits for a permit of
/// `gate` and takes the messages waiting (`"wait": true`: waits for one first; `"deaf":
/// true`: takes none); then `"ask": true` asks for input. `"stubborn": true` makes it
/// deaf to cancel first. It replies with the run's message and what it took.
#[derive(Clone)]
struct Listener {
    id: &'static str,
    policy: MessagePolicy,
    gate: Arc<Semaphore>,
    started: Arc<Mutex<Vec<Started>>>,
}

impl Listener {
    fn new(id: &'static str, policy: MessagePolicy) -> Listener {
        Listener {
            id,
            policy,
            gate: Arc::new(Semaphore::new(0)),
            started: Arc::default(),
        }
    }

    fn started(&self) -> Vec<Started> {
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
async fn start(
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
async fn begin((rt, store): &Node, skill: &Listener, text: &str, data: Value) -> Task {
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
async fn working(store: &dyn TaskStore, id: &TaskId, skill: &Listener, runs: usize) {
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
async fn tell(rt: &RuntimeHandle, id: &TaskId, text: &str) -> Result<Task, RuntimeError> {
    let mut message = Message::user(vec![Part::text(text)]);
    message.task_id = Some(id.clone());
    rt.submit(SubmitRequest::new(message)).await.map(|s| s.task)
}

fn user_texts(task: &Task) -> Vec<String> {
    task.history
        .iter()
        .filter(|m| m.role == Role::User)
        .map(Message::text)
        .collect()
}

/// Every status of the task's log after its creation, in order (`state: text`).
async fn notes(rt: &RuntimeHandle, id: &TaskId) -> Vec<String> {
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enqueued_messages_are_stored_at_once_and_taken_by_the_run_in_order() {
    let skill = Listener::new("queue", MessagePolicy::Enqueue);
    let node = start(&skill, None).await;
    let rt = &node.0;
    let task = begin(&node, &skill, "start", json!(null)).await;

    let acknowledged = tell(rt, &task.id, "one").await.unwrap();
    assert_eq!(acknowledged.status.state, TaskState::Working);
    assert_eq!(
        user_texts(&acknowledged),
        ["start", "one"],
        "in the history at once"
    );
    tell(rt, &task.id, "two").await.unwrap();

    skill.gate.add_permits(1);
    let done = wait_for_state(rt, &task.id, TaskState::Completed).await;
    assert_eq!(status_text(&done), "start + [one, two]");
    assert_eq!(
        skill.started().len(),
        1,
        "the run took them; no run followed"
    );
    let notes = notes(rt, &task.id).await;
    let expected = [
        "working: took one",
        "working: took two",
        "completed: start + [one, two]",
    ];
    assert!(notes.ends_with(&expected.map(String::from)), "{notes:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_messages_are_each_taken_once_in_the_order_they_were_stored() {
    let skill = Listener::new("queue", MessagePolicy::Enqueue);
    let node = start(&skill, None).await;
    let rt = &node.0;
    let task = begin(&node, &skill, "start", json!(null)).await;

    let sends: Vec<_> = (0..24)
        .map(|i| {
            let (rt, id) = (rt.clone(), task.id.clone());
            tokio::spawn(async move { tell(&rt, &id, &format!("m{i}")).await.map(drop) })
        })
        .collect();
    for send in sends {
        send.await.unwrap().unwrap();
    }
    skill.gate.add_permits(1);
    let done = wait_for_state(rt, &task.id, TaskState::Completed).await;
    let stored: Vec<String> = user_texts(&done).into_iter().skip(1).collect();
    assert_eq!(
        stored.len(),
        24,
        "every acknowledged message is in the history"
    );
    let expected = format!("start + [{}]", stored.join(", "));
    assert_eq!(status_text(&done), expected, "taken once each, as stored");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_beyond_the_queues_bound_is_refused_until_the_run_takes_some() {
    let skill = Listener::new("queue", MessagePolicy::Enqueue);
    let node = start(&skill, None).await;
    let rt = &node.0;
    let task = begin(&node, &skill, "start", json!({"rounds": 2})).await;
    for i in 0..MAX_QUEUED_MESSAGES {
        tell(rt, &task.id, &format!("m{i}")).await.unwrap();
    }
    let refused = tell(rt, &task.id, "one too many").await.unwrap_err();
    assert!(
        matches!(refused, RuntimeError::QueueFull { .. }),
        "{refused:?}"
    );
    assert!(
        refused
            .to_string()
            .contains("send more once it has taken some"),
        "{refused}"
    );
    skill.gate.add_permits(1);
    wait_for_note(rt, &task.id, &format!("took m{}", MAX_QUEUED_MESSAGES - 1)).await;
    tell(rt, &task.id, "now").await.unwrap();
    skill.gate.add_permits(1);
    let done = wait_for_state(rt, &task.id, TaskState::Completed).await;
    assert!(
        status_text(&done).ends_with(", now]"),
        "{}",
        status_text(&done)
    );
    assert!(
        !user_texts(&done).contains(&"one too many".to_owned()),
        "nothing stored"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_waiting_for_a_message_wakes_when_one_arrives() {
    let skill = Listener::new("queue", MessagePolicy::Enqueue);
    let node = start(&skill, None).await;
    let rt = &node.0;
    let task = begin(&node, &skill, "start", json!({"wait": true})).await;
    skill.gate.add_permits(1);
    tell(rt, &task.id, "late").await.unwrap();
    let done = wait_for_state(rt, &task.id, TaskState::Completed).await;
    assert_eq!(status_text(&done), "start + [late]");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queued_message_answers_the_runs_next_request_for_input_at_once() {
    let skill = Listener::new("queue", MessagePolicy::Enqueue);
    let node = start(&skill, None).await;
    let rt = &node.0;
    let data = json!({"deaf": true, "ask": true});
    let task = begin(&node, &skill, "start", data).await;
    tell(rt, &task.id, "early").await.unwrap();
    skill.gate.add_permits(1);
    let done = wait_for_state(rt, &task.id, TaskState::Completed).await;
    assert_eq!(status_text(&done), "start + [answer early]");
    let notes = notes(rt, &task.id).await;
    let asked = notes.iter().position(|n| n == "input-required: more?");
    let asked = asked.unwrap_or_else(|| panic!("the prompt is told all the same: {notes:?}"));
    assert_eq!(notes[asked + 1], "working: ", "{notes:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_that_returns_with_messages_waiting_is_followed_by_a_run_for_each() {
    let skill = Listener::new("queue", MessagePolicy::Enqueue);
    let node = start(&skill, None).await;
    let rt = &node.0;
    let task = begin(&node, &skill, "start", json!({"deaf": true})).await;
    tell(rt, &task.id, "a").await.unwrap();
    tell(rt, &task.id, "b").await.unwrap();
    skill.gate.add_permits(3);
    let done = wait_for_state(rt, &task.id, TaskState::Completed).await;
    assert_eq!(status_text(&done), "b + []");
    let runs: Vec<_> = skill
        .started()
        .into_iter()
        .map(|s| (s.text, s.checkpoint, s.resumed))
        .collect();
    assert_eq!(
        runs,
        [
            ("start".into(), None, false),
            ("a".into(), None, false),
            ("b".into(), None, false)
        ],
        "each run starts from its message, without the checkpoint of the run before"
    );
    let notes = notes(rt, &task.id).await;
    let expected = [
        "working: start + []",
        "working: a + []",
        "completed: b + []",
    ];
    assert!(notes.ends_with(&expected.map(String::from)), "{notes:?}");
    let replies: Vec<String> = done
        .history
        .iter()
        .filter(|m| m.role == Role::Agent)
        .map(Message::text)
        .collect();
    assert_eq!(
        replies,
        ["start + []", "a + []", "b + []"],
        "every reply is kept in the history"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_that_interrupts_restarts_the_task_from_it_without_the_old_checkpoint() {
    let skill = Listener::new("restart", MessagePolicy::Interrupt);
    let node = start(&skill, None).await;
    let (rt, store) = (&node.0, &node.1);
    let task = begin(&node, &skill, "first", json!(null)).await;

    let acknowledged = tell(rt, &task.id, "second").await.unwrap();
    assert_eq!(acknowledged.status.state, TaskState::Working);
    let record = store.get(&task.id).await.unwrap().unwrap();
    let old = json!({"run": "first"});
    assert_ne!(
        record.checkpoint,
        Some(old),
        "the old run's checkpoint went with the message"
    );
    working(store.as_ref(), &task.id, &skill, 2).await;
    assert_eq!(
        skill.started()[1],
        Started {
            text: "second".into(),
            checkpoint: None,
            resumed: false
        }
    );
    skill.gate.add_permits(1);
    let done = wait_for_state(rt, &task.id, TaskState::Completed).await;
    assert_eq!(status_text(&done), "second + []");
    assert_eq!(user_texts(&done), ["first", "second"]);
    let notes = notes(rt, &task.id).await;
    assert!(
        notes.contains(
            &"working: interrupted by a new message: the skill starts again from it".into()
        ),
        "{notes:?}"
    );
    assert!(
        !notes.iter().any(|n| n.starts_with("canceled")),
        "{notes:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_to_a_task_waiting_for_a_slot_becomes_the_message_its_run_starts_from() {
    let skill = Listener::new("restart", MessagePolicy::Interrupt);
    let mut config = RuntimeConfig::default();
    config.skill_concurrency = [("restart".into(), 1)].into();
    let rt = Runtime::builder()
        .config(config)
        .skill(skill.clone())
        .start()
        .await
        .unwrap();
    let holder = rt.submit(SubmitRequest::new(message("holder", json!(null))));
    let holder = holder.await.unwrap().task;
    eventually(
        || "the holder did not start".into(),
        || skill.started().len() == 1,
    )
    .await;
    let waiting = rt.submit(SubmitRequest::new(message("first", json!(null))));
    let waiting = waiting.await.unwrap().task;
    tell(&rt, &waiting.id, "second").await.unwrap();

    skill.gate.add_permits(2);
    wait_for_state(&rt, &holder.id, TaskState::Completed).await;
    let done = wait_for_state(&rt, &waiting.id, TaskState::Completed).await;
    assert_eq!(status_text(&done), "second + []");
    let texts: Vec<String> = skill.started().into_iter().map(|s| s.text).collect();
    assert_eq!(
        texts,
        ["holder", "second"],
        "no run started from the first message"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_interrupts_a_run_whose_answer_waits_for_a_slot() {
    let skill = Listener::new("restart", MessagePolicy::Interrupt);
    let mut config = RuntimeConfig::default();
    config.skill_concurrency = [("restart".into(), 1)].into();
    config.cancel_grace_ms = 300;
    let rt = Runtime::builder()
        .config(config)
        .skill(skill.clone())
        .start()
        .await
        .unwrap();
    let asking = message("asking", json!({"ask": true, "rounds": 0}));
    let asking = rt.submit(SubmitRequest::new(asking)).await.unwrap().task;
    wait_for_state(&rt, &asking.id, TaskState::InputRequired).await;
    // The asking task's slot goes to another task; its answer then waits for a slot.
    let holder = rt.submit(SubmitRequest::new(message("holder", json!(null))));
    let holder = holder.await.unwrap().task;
    eventually(
        || "the holder did not start".into(),
        || skill.started().len() == 2,
    )
    .await;
    let answered = tell(&rt, &asking.id, "answer").await.unwrap();
    assert_eq!(answered.status.state, TaskState::Working);
    tell(&rt, &asking.id, "instead").await.unwrap();

    skill.gate.add_permits(1);
    wait_for_state(&rt, &holder.id, TaskState::Completed).await;
    // The new run starts from the message (and, as the task's first message says, asks).
    eventually(
        || format!("runs: {:?}", skill.started()),
        || skill.started().len() == 3,
    )
    .await;
    assert_eq!(skill.started()[2].text, "instead");
    let asked = wait_for_state(&rt, &asking.id, TaskState::InputRequired).await;
    assert_eq!(user_texts(&asked), ["asking", "answer", "instead"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_deaf_to_the_interrupt_is_aborted_after_the_grace_period_and_the_last_message_starts_the_next()
 {
    let skill = Listener::new("restart", MessagePolicy::Interrupt);
    let node = start(&skill, None).await;
    let rt = &node.0;
    let task = begin(&node, &skill, "first", json!({"stubborn": true})).await;
    tell(rt, &task.id, "second").await.unwrap();
    tell(rt, &task.id, "third").await.unwrap();
    eventually(
        || "no run started from the last message".into(),
        || skill.started().last().is_some_and(|s| s.text == "third"),
    )
    .await;
    // The new run is as deaf (its task's first message says so): a cancel ends it.
    let canceled = rt.cancel(&task.id, Access::Any).await.unwrap();
    assert_eq!(canceled.status.state, TaskState::Canceled);
    assert_eq!(user_texts(&canceled), ["first", "second", "third"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_during_an_interrupt_wins_and_messages_then_are_refused() {
    let skill = Listener::new("restart", MessagePolicy::Interrupt);
    let node = start(&skill, None).await;
    let rt = &node.0;
    let task = begin(&node, &skill, "first", json!({"stubborn": true})).await;
    tell(rt, &task.id, "second").await.unwrap();
    let cancel = {
        let (rt, id) = (rt.clone(), task.id.clone());
        tokio::spawn(async move { rt.cancel(&id, Access::Any).await })
    };
    // The cancel waits out the stubborn run's grace period; a message meanwhile is
    // refused, once the cancel has reached the task.
    let refused = loop {
        match tell(rt, &task.id, "third").await {
            Err(error) => break error,
            Ok(_) => assert!(!cancel.is_finished(), "the cancel ended without refusing"),
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    assert!(
        matches!(
            refused,
            RuntimeError::BeingCanceled { .. } | RuntimeError::TaskTerminal { .. }
        ),
        "{refused}"
    );
    let canceled = cancel.await.unwrap().unwrap();
    assert_eq!(canceled.status.state, TaskState::Canceled);
    assert_eq!(skill.started().len(), 1, "no run followed the cancel");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_skill_that_rejects_refuses_a_message_while_it_works_and_stores_nothing() {
    let skill = Listener::new("strict", MessagePolicy::Reject);
    let node = start(&skill, None).await;
    let rt = &node.0;
    let task = begin(&node, &skill, "first", json!(null)).await;
    let refused = tell(rt, &task.id, "second").await.unwrap_err();
    assert!(
        matches!(refused, RuntimeError::NotAcceptingInput { .. }),
        "{refused:?}"
    );
    assert!(
        refused
            .to_string()
            .contains("refuses messages while it works"),
        "{refused}"
    );
    skill.gate.add_permits(1);
    let done = wait_for_state(rt, &task.id, TaskState::Completed).await;
    assert_eq!(user_texts(&done), ["first"]);
}

type Node = (RuntimeHandle, Arc<dyn TaskStore>);

/// Stops `node` as a crash would (its actors, without a word), starts the runtime
/// again on the same sled directory with a fresh skill of the same card, and waits
/// until the task's resumed run has saved its checkpoint; checks how that run started.
async fn restart(
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_restart_the_resumed_run_gets_exactly_the_messages_it_had_not_taken() {
    let dir = tempfile::tempdir().unwrap();
    let skill = Listener::new("listener", MessagePolicy::Enqueue);
    let node = start(&skill, Some(dir.path())).await;
    let rt = &node.0;
    let task = begin(&node, &skill, "start", json!({"rounds": 2})).await;
    tell(rt, &task.id, "a").await.unwrap();
    skill.gate.add_permits(1);
    wait_for_note(rt, &task.id, "took a").await;
    tell(rt, &task.id, "b").await.unwrap();

    let (node, skill) = restart(node, dir.path(), &task.id, "start").await;
    skill.gate.add_permits(2);
    let done = wait_for_state(&node.0, &task.id, TaskState::Completed).await;
    let taken = status_text(&done);
    assert_eq!(taken, "start + [b]", "a was taken before the restart");
    assert_eq!(user_texts(&done), ["start", "a", "b"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_restart_an_interrupted_task_resumes_the_run_its_message_started() {
    let dir = tempfile::tempdir().unwrap();
    let skill = Listener::new("listener", MessagePolicy::Interrupt);
    let node = start(&skill, Some(dir.path())).await;
    let task = begin(&node, &skill, "first", json!(null)).await;
    tell(&node.0, &task.id, "second").await.unwrap();
    working(node.1.as_ref(), &task.id, &skill, 2).await;

    let (node, skill) = restart(node, dir.path(), &task.id, "second").await;
    skill.gate.add_permits(1);
    let done = wait_for_state(&node.0, &task.id, TaskState::Completed).await;
    assert_eq!(status_text(&done), "second + []");
}
