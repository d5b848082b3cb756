//! Nothing is told before it is durable. A task's changes are written without waiting
//! for the disk, and every way the runtime tells of them (event streams, reads, submit,
//! cancel, a skill's `settle`) settles first. A store that records what each settle
//! covered checks it: a change counts as durable only once a settle that began after it
//! was written has finished.

use fundi_runtime::Access;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use fundi_runtime::store::TaskRecord;
use fundi_runtime::store_with_own_writes;
use fundi_runtime::testing::scripted::*;
use fundi_runtime::{
    ListRequest, MemoryStore, Runtime, RuntimeHandle, Skill, SkillCard, SkillContext, SkillError,
    SkillInput, SkillOutput, StoreError, SubmitRequest, TaskEvent, TaskId, TaskStore,
};
use futures::StreamExt;
use serde_json::json;

/// A memory store that tracks, per task, the last event written and the last one a
/// finished settle covers. Like the sled store, a settle covers the writes being
/// applied when it is called (a reader may already see them).
#[derive(Default)]
struct Watched {
    inner: MemoryStore,
    /// Writes being applied.
    applying: AtomicUsize,
    /// Written since the last settle began.
    pending: Mutex<HashMap<TaskId, u64>>,
    durable: Mutex<HashMap<TaskId, u64>>,
}

impl Watched {
    fn durable_seq(&self, id: &TaskId) -> u64 {
        self.durable.lock().unwrap().get(id).copied().unwrap_or(0)
    }
}

store_with_own_writes!(Watched, inner, {
    async fn write(
        &self,
        record: &TaskRecord,
        expected_version: u64,
        events: &[TaskEvent],
    ) -> Result<(), StoreError> {
        self.applying.fetch_add(1, Ordering::SeqCst);
        let written = self.inner.write(record, expected_version, events).await;
        if written.is_ok() {
            let mut pending = self.pending.lock().unwrap();
            let seq = pending.entry(record.id().clone()).or_default();
            *seq = (*seq).max(record.last_seq);
        }
        self.applying.fetch_sub(1, Ordering::SeqCst);
        written
    }

    async fn settle(&self) -> Result<(), StoreError> {
        let mut covered = HashMap::new();
        loop {
            let busy = self.applying.load(Ordering::SeqCst);
            covered.extend(std::mem::take(&mut *self.pending.lock().unwrap()));
            if busy == 0 {
                break;
            }
            tokio::task::yield_now().await;
        }
        // The "disk" takes a while: writes made meanwhile wait for the next settle.
        for _ in 0..3 {
            tokio::task::yield_now().await;
        }
        let mut durable = self.durable.lock().unwrap();
        for (id, seq) in covered {
            let known = durable.entry(id).or_default();
            *known = (*known).max(seq);
        }
        Ok(())
    }
});

/// Reports a step, settles, and checks that the step is durable by then.
#[derive(Clone)]
struct SettlingSkill {
    store: Arc<Watched>,
}

#[async_trait]
impl Skill for SettlingSkill {
    fn card(&self) -> SkillCard {
        SkillCard::new("settling", "settles before acting on the outside world")
            .name("settling")
            .input_modes(["text/plain"])
            .output_modes(["text/plain"])
    }

    async fn run(&self, _input: SkillInput, ctx: SkillContext) -> Result<SkillOutput, SkillError> {
        ctx.status("step done").await?;
        ctx.settle().await?;
        // created (1), working (2), the note (3)
        let durable = self.store.durable_seq(ctx.task_id());
        Ok(SkillOutput::text(format!("durable through {durable}")))
    }
}

async fn start() -> (RuntimeHandle, Arc<Watched>) {
    let store = Arc::new(Watched::default());
    let rt = Runtime::builder()
        .shared_store(store.clone())
        .skill(Scripted::new("scripted", false))
        .skill(SettlingSkill {
            store: store.clone(),
        })
        .start()
        .await
        .unwrap();
    (rt, store)
}

fn request(skill: &str, data: serde_json::Value) -> SubmitRequest {
    let mut request = SubmitRequest::new(message("go", data));
    request.skill = Some(skill.into());
    request
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_yield_only_durable_events() {
    let (rt, store) = start().await;
    for round in 0..40 {
        // Half subscribe after submitting; half follow from the submission, with the
        // stream attached to the actor as it starts.
        let follow = round % 2 == 1;
        let submission = request("scripted", json!({"steps": 30}));
        let (accepted, mut events) = match follow {
            true => {
                let following = rt.submit(submission).follow().await.unwrap();
                (following.accepted, following.events)
            }
            false => {
                let accepted = rt.submit(submission).await.unwrap();
                let events = rt
                    .subscribe(&accepted.task.id, 1, Access::Any)
                    .await
                    .unwrap();
                (accepted, events)
            }
        };
        let id = accepted.task.id.clone();
        assert_eq!(accepted.seq, 1);
        assert!(
            store.durable_seq(&id) >= 1,
            "submit returned before durable"
        );
        let mut seen = 0;
        while let Some(event) = events.next().await {
            let event = event.unwrap();
            assert!(
                store.durable_seq(&id) >= event.seq,
                "event {} told before durable (durable through {})",
                event.seq,
                store.durable_seq(&id)
            );
            seen += 1;
            assert_eq!(event.seq, seen + 1, "an event missed or repeated");
            if event.is_terminal() {
                break;
            }
        }
        assert!(seen >= 31, "{seen} events");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_return_only_durable_state() {
    let (rt, store) = start().await;
    let accepted = rt
        .submit(request("scripted", json!({"steps": 200})))
        .await
        .unwrap();
    let id = accepted.task.id.clone();
    let deadline = std::time::Instant::now() + DEADLINE;
    loop {
        let snapshot = rt.snapshot(&id, None, Access::Any).await.unwrap();
        assert!(
            store.durable_seq(&id) >= snapshot.seq,
            "read before durable"
        );
        let page = rt
            .list(ListRequest::new(fundi_runtime::TaskOwner::Any).page_size(10))
            .await
            .unwrap();
        let listed = &page.tasks[0];
        let stored = store.inner.get(&id).await.unwrap().unwrap();
        if listed.status == stored.task.status {
            assert!(store.durable_seq(&id) >= stored.last_seq);
        }
        if snapshot.task.status.state.is_terminal() {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "task did not finish");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writers_do_not_wait_for_the_disk_and_a_skill_can() {
    let (rt, store) = start().await;
    // A submission whose caller tells only the outcome (a blocking send) does not
    // settle: its task is written, and durable only once the outcome is told.
    let waiting = rt
        .submit(request("scripted", json!({"gate": true})))
        .wait()
        .await
        .unwrap();
    let accepted = waiting.accepted().clone();
    stored(&store, &accepted.task.id).await;
    assert_eq!(store.durable_seq(&accepted.task.id), 0);
    rt.cancel(&accepted.task.id, Access::Any).await.unwrap();
    let canceled = store.inner.get(&accepted.task.id).await.unwrap().unwrap();
    assert!(
        store.durable_seq(&accepted.task.id) >= canceled.last_seq,
        "cancel answered before durable"
    );

    // Only the skill settles here (nobody reads through the runtime), so what it finds
    // durable after its settle is down to the settle.
    let settling = request("settling", json!(null));
    let waiting = rt.submit(settling).wait().await.unwrap();
    let id = waiting.accepted().task.id.clone();
    let deadline = std::time::Instant::now() + DEADLINE;
    let done = loop {
        let record = store.inner.get(&id).await.unwrap();
        if let Some(record) = record.filter(|r| r.state().is_terminal()) {
            break record.task;
        }
        assert!(std::time::Instant::now() < deadline, "task did not finish");
        tokio::task::yield_now().await;
    };
    let reply = status_text(&done);
    let durable: u64 = reply
        .strip_prefix("durable through ")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("unexpected reply {reply:?}"));
    assert!(
        durable >= 3,
        "settle returned before the step was durable: {reply}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiting_for_an_outcome_returns_it_durable_and_as_stored() {
    let (rt, store) = start().await;
    let waiting = rt
        .submit(request("scripted", json!({"steps": 30})))
        .wait()
        .await
        .unwrap();
    let id = waiting.accepted().task.id.clone();
    // The submission itself does not wait for the disk.
    assert_eq!(store.durable_seq(&id), 0);
    let outcome = waiting.outcome(DEADLINE).await.unwrap();
    assert_eq!(
        outcome.task.status.state,
        fundi_runtime::TaskState::Completed
    );
    // created, working, 30 notes, completed (with the reply)
    assert_eq!(outcome.seq, 33);
    assert!(
        store.durable_seq(&id) >= outcome.seq,
        "outcome returned before durable"
    );
    // The actor's answer is the task it stored.
    let stored = store.inner.get(&id).await.unwrap().unwrap();
    assert_eq!(outcome.task, stored.task);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_whose_deadline_passes_first_returns_the_task_as_it_stands_durable() {
    let (rt, store) = start().await;
    // The run waits at a gate nobody opens: the task stays working.
    let waiting = rt
        .submit(request("scripted", json!({"gate": true})))
        .wait()
        .await
        .unwrap();
    let id = waiting.accepted().task.id.clone();
    let outcome = waiting.outcome(std::time::Duration::from_millis(50));
    let outcome = tokio::time::timeout(DEADLINE, outcome)
        .await
        .expect("the wait ended at its deadline")
        .unwrap();
    assert_eq!(outcome.task.id, id);
    assert_eq!(outcome.task.status.state, fundi_runtime::TaskState::Working);
    assert!(
        store.durable_seq(&id) >= outcome.seq,
        "outcome returned before durable"
    );
    let stored = store.inner.get(&id).await.unwrap().unwrap();
    assert_eq!(outcome.task, stored.task);
}

/// Waits until the store has the task.
async fn stored(store: &Watched, id: &TaskId) {
    let deadline = std::time::Instant::now() + DEADLINE;
    while store.inner.get(id).await.unwrap().is_none() {
        assert!(
            std::time::Instant::now() < deadline,
            "task {id} was never stored"
        );
        tokio::task::yield_now().await;
    }
}
