//! An a11y-audit skill in a real runtime (memory store), its findings in a memory issue
//! store, and the reads its tests share.
#![allow(dead_code, unreachable_pub)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use fundi_ops::issues::MemoryIssueStore;
use fundi_runtime::{
    Access, MemoryStore, Message, Part, Runtime, RuntimeHandle, SubmitRequest, Task, TaskId,
    TaskState,
};
use fundi_skills::{A11yAuditSkill, A11yConfig};
use serde_json::Value;

/// Longest a test waits for a task to end.
pub const DEADLINE: Duration = Duration::from_secs(60);

pub struct Fixture {
    pub runtime: RuntimeHandle,
    pub issues: Arc<MemoryIssueStore>,
}

pub async fn fixture(origins: Vec<String>) -> Fixture {
    let mut config = A11yConfig::default();
    config.allowed_origins = origins;
    config.max_page_bytes = 100_000;
    fixture_with(config, fundi_runtime::RuntimeConfig::default()).await
}

pub async fn fixture_with(config: A11yConfig, runtime: fundi_runtime::RuntimeConfig) -> Fixture {
    let store = Arc::new(MemoryStore::new());
    let issues = Arc::new(MemoryIssueStore::new());
    let skill = A11yAuditSkill::new(config, issues.clone()).unwrap();
    let runtime = Runtime::builder()
        .shared_store(store.clone())
        .skill(skill)
        .config({
            let mut runtime_config = runtime;
            runtime_config.cancel_grace_ms = 5_000;
            runtime_config
        })
        .start()
        .await
        .unwrap();
    Fixture { runtime, issues }
}

impl Fixture {
    pub async fn submit(&self, parts: Vec<Part>) -> TaskId {
        self.runtime
            .submit(SubmitRequest::new(Message::user(parts)))
            .await
            .unwrap()
            .task
            .id
    }

    /// The task once `done` holds of it (within [`DEADLINE`]).
    pub async fn until(&self, id: &TaskId, done: impl Fn(&Task) -> bool) -> Task {
        let deadline = Instant::now() + DEADLINE;
        loop {
            let task = self.runtime.get(id, None, Access::Any).await.unwrap();
            if done(&task) {
                return task;
            }
            assert!(Instant::now() < deadline, "task never got there: {task:?}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The task once it ended.
    pub async fn finish(&self, id: &TaskId) -> Task {
        self.until(id, |task| task.status.state.is_terminal()).await
    }

    /// The task once its run is under way.
    pub async fn working(&self, id: &TaskId) -> Task {
        self.until(id, |task| task.status.state == TaskState::Working)
            .await
    }

    pub async fn run(&self, parts: Vec<Part>) -> Task {
        let id = self.submit(parts).await;
        self.finish(&id).await
    }
}

pub fn report(task: &Task) -> Value {
    task.artifacts[0].parts[0].as_data().unwrap().clone()
}

pub fn reply(task: &Task) -> String {
    task.status
        .message
        .as_ref()
        .map(|m| m.text())
        .unwrap_or_default()
}

pub fn html_part(html: &str) -> Part {
    Part::text(html).with_media_type("text/html")
}
