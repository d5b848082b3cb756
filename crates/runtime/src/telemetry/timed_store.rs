//! `TimedStore`: the runtime's store, as the builder wraps it once. Each write gets a
//! `store.commit` span and its duration in `fundi.store.commit.duration`; each wait for
//! durability its duration in `fundi.store.settle.duration`. The stores themselves know
//! nothing of telemetry.
//!
//! A commit span's parent is the span a write is made [`under`] (the task's, for its
//! journal's writes), or else the current span. `under` names the parent without
//! entering it: entering a span on every poll of a write asks each layer's filter, and
//! cost a short commit about a twentieth of its instructions.

use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use tracing::Instrument;

use super::metrics;
use crate::model::{TaskEvent, TaskId};
use crate::store::{
    Creation, ListPage, ListQuery, QuarantinedTask, StoreError, TaskRecord, TaskStore,
};

tokio::task_local! {
    /// The parent of the commit spans of the writes made in its scope: an id, since
    /// cloning and dropping a `Span` calls the subscriber too.
    static PARENT: Option<tracing::Id>;
}

/// Runs `write` (a call of the wrapped store) with `parent` as its commit span's parent.
pub(crate) async fn under<F: Future>(parent: &tracing::Span, write: F) -> F::Output {
    PARENT.scope(parent.id(), write).await
}

pub(crate) struct TimedStore {
    inner: Arc<dyn TaskStore>,
}

impl TimedStore {
    pub(crate) fn wrap(inner: Arc<dyn TaskStore>) -> Arc<dyn TaskStore> {
        Arc::new(TimedStore { inner })
    }

    async fn timed_write(
        &self,
        record: &TaskRecord,
        expected_version: u64,
        events: &[TaskEvent],
        settle: bool,
    ) -> Result<(), StoreError> {
        let span = commit_span(record, events, settle);
        let started = Instant::now();
        let work = async {
            self.inner.write(record, expected_version, events).await?;
            if settle {
                self.settle().await?;
            }
            Ok(())
        };
        let result = work.instrument(span).await;
        commit_took(started);
        result
    }
}

/// The `store.commit` span of a commit of `record` and `events`. (Each write builds its
/// span and times itself: a shared future wrapped around every write cost a commit
/// about 150 instructions.)
fn commit_span(record: &TaskRecord, events: &[TaskEvent], settle: bool) -> tracing::Span {
    let parent = PARENT
        .try_with(Option::clone)
        .unwrap_or_else(|_| tracing::Span::current().id());
    tracing::info_span!(
        parent: parent,
        "store.commit",
        task_id = %record.task.id,
        version = record.version,
        seq = events.last().map(|e| e.seq),
        settled = settle,
    )
}

/// Records how long a commit that started at `started` took.
fn commit_took(started: Instant) {
    metrics()
        .commit_duration
        .record(started.elapsed().as_secs_f64(), &[]);
}

#[async_trait]
impl TaskStore for TimedStore {
    async fn write(
        &self,
        record: &TaskRecord,
        expected_version: u64,
        events: &[TaskEvent],
    ) -> Result<(), StoreError> {
        self.timed_write(record, expected_version, events, false)
            .await
    }

    async fn create_with_run_slot(
        &self,
        record: &TaskRecord,
        events: &[TaskEvent],
        limit: usize,
    ) -> Result<Option<u32>, StoreError> {
        let span = commit_span(record, events, false);
        let started = Instant::now();
        let work = self.inner.create_with_run_slot(record, events, limit);
        let result = work.instrument(span).await;
        commit_took(started);
        result
    }

    async fn create_task(
        &self,
        record: &TaskRecord,
        events: &[TaskEvent],
        run_slot: Option<usize>,
        window: Option<std::time::Duration>,
    ) -> Result<Creation, StoreError> {
        let span = commit_span(record, events, false);
        let started = Instant::now();
        let work = self.inner.create_task(record, events, run_slot, window);
        let result = work.instrument(span).await;
        commit_took(started);
        result
    }

    async fn write_giving_back_run_slot(
        &self,
        record: &TaskRecord,
        expected_version: u64,
        events: &[TaskEvent],
        slot: u32,
    ) -> Result<(), StoreError> {
        let span = commit_span(record, events, false);
        let started = Instant::now();
        let work = self
            .inner
            .write_giving_back_run_slot(record, expected_version, events, slot);
        let result = work.instrument(span).await;
        commit_took(started);
        result
    }

    async fn settle(&self) -> Result<(), StoreError> {
        let started = Instant::now();
        let result = self.inner.settle().await;
        metrics()
            .settle_duration
            .record(started.elapsed().as_secs_f64(), &[]);
        result
    }

    async fn commit(
        &self,
        record: &TaskRecord,
        expected_version: u64,
        events: &[TaskEvent],
    ) -> Result<(), StoreError> {
        self.timed_write(record, expected_version, events, true)
            .await
    }

    async fn get(&self, id: &TaskId) -> Result<Option<TaskRecord>, StoreError> {
        self.inner.get(id).await
    }

    async fn created_by(
        &self,
        owner: Option<&str>,
        message_id: &str,
    ) -> Result<Option<(TaskId, chrono::DateTime<chrono::Utc>)>, StoreError> {
        self.inner.created_by(owner, message_id).await
    }

    async fn events(
        &self,
        id: &TaskId,
        after_seq: u64,
        limit: usize,
    ) -> Result<Vec<TaskEvent>, StoreError> {
        self.inner.events(id, after_seq, limit).await
    }

    async fn list(&self, query: &ListQuery) -> Result<ListPage, StoreError> {
        self.inner.list(query).await
    }

    async fn remove_ended_before(
        &self,
        before: chrono::DateTime<chrono::Utc>,
        limit: usize,
    ) -> Result<usize, StoreError> {
        self.inner.remove_ended_before(before, limit).await
    }

    async fn active(&self) -> Result<Vec<TaskRecord>, StoreError> {
        self.inner.active().await
    }

    async fn unfinished_tasks(&self) -> Result<Vec<crate::store::UnfinishedTask>, StoreError> {
        self.inner.unfinished_tasks().await
    }

    async fn quarantined(&self) -> Result<Vec<QuarantinedTask>, StoreError> {
        self.inner.quarantined().await
    }

    async fn set_aside(&self, id: &TaskId, error: &StoreError) -> Result<(), StoreError> {
        self.inner.set_aside(id, error).await
    }

    async fn take_over(&self) -> Result<Vec<TaskRecord>, StoreError> {
        self.inner.take_over().await
    }

    async fn reclaim(&self) -> Result<Vec<TaskRecord>, StoreError> {
        self.inner.reclaim().await
    }

    fn takeover_interval(&self) -> Option<std::time::Duration> {
        self.inner.takeover_interval()
    }

    async fn hand_back(&self) -> Result<(), StoreError> {
        self.inner.hand_back().await
    }

    fn cluster(&self) -> Option<Arc<dyn crate::store::Cluster>> {
        self.inner.cluster()
    }
}
