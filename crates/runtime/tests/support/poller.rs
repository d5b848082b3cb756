//! `Poller`, a resumable skill whose run looks at something outside until it is ready
//! and waits idle between looks (`SkillContext::idle`), and the helpers of the tests of
//! idle runs (`idle_parking.rs`, `idle_wakes.rs`).

// Each test crate that includes this module uses a part of it.
#![allow(dead_code)]

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use fundi_runtime::testing::scripted::*;
use fundi_runtime::{
    Presence, Runtime, RuntimeConfig, RuntimeHandle, Skill, SkillCard, SkillContext, SkillError,
    SkillInput, SkillOutput, SubmitRequest, TaskId,
};
use fundi_store_sled::testing::open_sled;
use serde_json::{Value, json};

/// Looks at something outside (`ready`) until it is ready, idle `wait` between looks,
/// counting its looks in its checkpoint.
#[derive(Clone)]
pub(crate) struct Poller {
    pub(crate) id: &'static str,
    pub(crate) resumable: bool,
    pub(crate) wait: Duration,
    pub(crate) ready: Arc<AtomicBool>,
    pub(crate) runs: Arc<AtomicUsize>,
    /// The looks counted so far (kept in the checkpoint across runs).
    pub(crate) looks: Arc<AtomicUsize>,
    /// The cancels the skill heard: (task, checkpoint) from `canceled_at_rest`, or
    /// (task, null) from a run.
    pub(crate) let_go: Arc<Mutex<Vec<(TaskId, Value)>>>,
}

impl Poller {
    pub(crate) fn new(id: &'static str, resumable: bool, wait: Duration) -> Poller {
        Poller {
            id,
            resumable,
            wait,
            ready: Arc::default(),
            runs: Arc::default(),
            looks: Arc::default(),
            let_go: Arc::default(),
        }
    }

    pub(crate) fn runs(&self) -> usize {
        self.runs.load(Ordering::SeqCst)
    }

    pub(crate) fn looks(&self) -> usize {
        self.looks.load(Ordering::SeqCst)
    }
}

impl Poller {
    async fn look_until_ready(
        &self,
        input: &SkillInput,
        ctx: &SkillContext,
    ) -> Result<SkillOutput, SkillError> {
        let mut looks = input
            .checkpoint
            .as_ref()
            .and_then(|c| c["looks"].as_u64())
            .unwrap_or(0);
        if input.message.text() == "ask" && input.checkpoint.is_none() {
            ctx.checkpoint(json!({ "looks": looks })).await?;
            ctx.request_input("anything?").await?;
        }
        loop {
            looks += 1;
            self.looks.store(looks as usize, Ordering::SeqCst);
            if self.ready.load(Ordering::SeqCst) {
                return Ok(SkillOutput::text("ready"));
            }
            ctx.checkpoint(json!({ "looks": looks })).await?;
            ctx.idle(self.wait).await?;
        }
    }
}

#[async_trait]
impl Skill for Poller {
    fn card(&self) -> SkillCard {
        SkillCard::new(self.id, "looks at something outside until it is ready")
            .resumable_if(self.resumable)
    }

    async fn run(&self, input: SkillInput, ctx: SkillContext) -> Result<SkillOutput, SkillError> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        let outcome = self.look_until_ready(&input, &ctx).await;
        if let Err(SkillError::Canceled) = &outcome {
            let heard = (ctx.task_id().clone(), Value::Null);
            self.let_go.lock().unwrap().push(heard);
        }
        outcome
    }

    async fn canceled_at_rest(&self, task_id: &TaskId, checkpoint: Value) {
        self.let_go
            .lock()
            .unwrap()
            .push((task_id.clone(), checkpoint));
    }
}

pub(crate) async fn start(
    park_after_ms: u64,
    poller: &Poller,
    dir: Option<&std::path::Path>,
) -> RuntimeHandle {
    let mut config = RuntimeConfig::default();
    config.park_after_ms = park_after_ms;
    let builder = Runtime::builder().config(config).skill(poller.clone());
    let builder = match dir {
        Some(dir) => builder.store(open_sled(dir).await),
        None => builder,
    };
    builder.start().await.unwrap()
}

pub(crate) async fn poll(rt: &RuntimeHandle, poller: &Poller) -> TaskId {
    submit_to(rt, poller, "watch it").await
}

pub(crate) async fn submit_to(rt: &RuntimeHandle, poller: &Poller, text: &str) -> TaskId {
    let request = SubmitRequest::new(message(text, Value::Null)).skill(Some(poller.id.into()));
    rt.submit(request).await.unwrap().task.id
}

pub(crate) async fn parked(rt: &RuntimeHandle, id: &TaskId) {
    eventually(
        || format!("{} tasks have an actor", rt.live_tasks()),
        || rt.live_tasks() == 0,
    )
    .await;
    assert_eq!(rt.presence(id).await, Presence::Resting);
}

pub(crate) async fn runs_reach(poller: &Poller, runs: usize) {
    eventually(
        || format!("{} runs started, not {runs}", poller.runs()),
        || poller.runs() >= runs,
    )
    .await;
}
