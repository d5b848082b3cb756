//! A store whose run slots several nodes share, for the runtime's tests of shared run
//! slots (`shared_slots.rs`, `kept_slots.rs`): a memory store whose slots of the one
//! skill are held as another node would see them, counting the commits and the
//! statements of their own that take or give back one.

// Each test crate that includes this module uses a part of it.
#![allow(dead_code)]

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use fundi_runtime::store::{Cluster, Holder, Incoming, Standing, StoreError, TaskRecord};
use fundi_runtime::testing::scripted::*;
use fundi_runtime::{
    MemoryStore, Runtime, RuntimeConfig, RuntimeHandle, TaskEvent, TaskEventKind, TaskId, TaskState,
};
use serde_json::Value;
use tokio::sync::{mpsc, watch};

/// The store's slots of the one skill, as another node would see them, and how often
/// the runtime asked for or gave back one on its own.
pub(crate) struct Nodes {
    pub(crate) taken: Mutex<Vec<bool>>,
    pub(crate) claims: AtomicUsize,
    pub(crate) releases: AtomicUsize,
    /// How many of the next releases fail.
    pub(crate) failing_releases: AtomicUsize,
    /// Another node waits for a slot.
    pub(crate) wanted: std::sync::atomic::AtomicBool,
    pub(crate) standing: watch::Sender<Standing>,
    pub(crate) signal: watch::Sender<()>,
}

impl Nodes {
    pub(crate) fn new() -> Arc<Nodes> {
        Arc::new(Nodes {
            taken: Mutex::default(),
            claims: AtomicUsize::new(0),
            releases: AtomicUsize::new(0),
            failing_releases: AtomicUsize::new(0),
            wanted: false.into(),
            standing: watch::channel(Standing::Holding).0,
            signal: watch::channel(()).0,
        })
    }

    /// Takes the first free slot below `limit`.
    pub(crate) fn take(&self, limit: usize) -> Option<u32> {
        let mut taken = self.taken.lock().unwrap();
        let len = taken.len().max(limit);
        taken.resize(len, false);
        let free = taken.iter().take(limit).position(|t| !t)?;
        taken[free] = true;
        Some(free as u32)
    }

    pub(crate) fn free(&self, slot: u32) {
        let mut taken = self.taken.lock().unwrap();
        assert!(taken[slot as usize], "slot {slot} given back twice");
        taken[slot as usize] = false;
    }

    pub(crate) fn taken(&self) -> usize {
        self.taken.lock().unwrap().iter().filter(|t| **t).count()
    }
}

#[async_trait]
impl Cluster for Nodes {
    async fn holder(&self, _id: &TaskId) -> Result<Holder, StoreError> {
        Ok(Holder::Here)
    }

    async fn forward(
        &self,
        _id: &TaskId,
        _request: Value,
        _timeout: std::time::Duration,
    ) -> Result<Value, StoreError> {
        Err(StoreError::database("every task is held here"))
    }

    fn incoming(&self) -> Option<mpsc::Receiver<Incoming>> {
        None
    }

    async fn claim_run_slot(&self, _skill: &str, limit: usize) -> Result<Option<u32>, StoreError> {
        self.claims.fetch_add(1, Ordering::SeqCst);
        Ok(self.take(limit))
    }

    async fn release_run_slot(&self, _skill: &str, slot: u32) -> Result<(), StoreError> {
        self.releases.fetch_add(1, Ordering::SeqCst);
        let failing = self.failing_releases.load(Ordering::SeqCst);
        if failing > 0 {
            self.failing_releases.store(failing - 1, Ordering::SeqCst);
            return Err(StoreError::Unreachable {
                what: "the database did not answer".into(),
                source: None,
            });
        }
        self.free(slot);
        Ok(())
    }

    fn run_slot_wanted_elsewhere(&self, _skill: &str) -> bool {
        self.wanted.load(Ordering::SeqCst)
    }

    async fn watch(&self, _id: &TaskId) -> Result<watch::Receiver<()>, StoreError> {
        Ok(self.signal.subscribe())
    }

    fn standing(&self) -> watch::Receiver<Standing> {
        self.standing.subscribe()
    }

    async fn check_held(&self, _id: &TaskId) -> Result<(), StoreError> {
        Ok(())
    }
}

/// A memory store that shares its slots with `Nodes`, counting the commits that take
/// or give back one.
pub(crate) struct SharedStore {
    pub(crate) inner: MemoryStore,
    pub(crate) nodes: Arc<Nodes>,
    pub(crate) created_with_slot: AtomicUsize,
    pub(crate) gave_back: AtomicUsize,
}

fundi_runtime::store_with_own_writes!(SharedStore, inner, {
    async fn write(
        &self,
        record: &TaskRecord,
        expected_version: u64,
        events: &[TaskEvent],
    ) -> Result<(), StoreError> {
        self.inner.write(record, expected_version, events).await
    }

    async fn create_with_run_slot(
        &self,
        record: &TaskRecord,
        events: &[TaskEvent],
        limit: usize,
    ) -> Result<Option<u32>, StoreError> {
        self.created_with_slot.fetch_add(1, Ordering::SeqCst);
        let Some(slot) = self.nodes.take(limit) else {
            return Ok(None);
        };
        self.inner.write(record, 0, events).await?;
        Ok(Some(slot))
    }

    async fn write_giving_back_run_slot(
        &self,
        record: &TaskRecord,
        expected_version: u64,
        events: &[TaskEvent],
        slot: u32,
    ) -> Result<(), StoreError> {
        self.inner.write(record, expected_version, events).await?;
        self.gave_back.fetch_add(1, Ordering::SeqCst);
        self.nodes.free(slot);
        Ok(())
    }

    fn cluster(&self) -> Option<Arc<dyn Cluster>> {
        Some(self.nodes.clone())
    }
});

/// A node whose runs each give their slot back as they end.
pub(crate) async fn node(limit: usize) -> (RuntimeHandle, Arc<SharedStore>, Scripted) {
    node_holding(limit, 0).await
}

/// A node that keeps a store slot for its next runs for up to `hold_ms`.
pub(crate) async fn node_holding(
    limit: usize,
    hold_ms: u64,
) -> (RuntimeHandle, Arc<SharedStore>, Scripted) {
    let store = Arc::new(SharedStore {
        inner: MemoryStore::new(),
        nodes: Nodes::new(),
        created_with_slot: AtomicUsize::new(0),
        gave_back: AtomicUsize::new(0),
    });
    let skill = Scripted::new("s", false);
    let runtime = Runtime::builder()
        .shared_store(store.clone())
        .config({
            let mut config = RuntimeConfig::default();
            config.max_concurrent_runs = limit;
            config.hold_run_slots_ms = hold_ms;
            config
        })
        .skill(skill.clone())
        .start()
        .await
        .unwrap();
    (runtime, store, skill)
}

/// One run took its store slot in its first commit and gave it back in its last, and
/// asked the store nothing of its own.
pub(crate) fn slot_taken_and_given_back_only_with_commits(store: &SharedStore) {
    assert_eq!(store.created_with_slot.load(Ordering::SeqCst), 1);
    assert_eq!(store.gave_back.load(Ordering::SeqCst), 1);
    let nodes = &store.nodes;
    assert_eq!(nodes.claims.load(Ordering::SeqCst), 0, "asked on its own");
    assert_eq!(
        nodes.releases.load(Ordering::SeqCst),
        0,
        "gave back on its own"
    );
    assert_eq!(nodes.taken(), 0);
}

/// The states the task's events put it in, in order.
pub(crate) async fn states(runtime: &RuntimeHandle, id: &TaskId) -> Vec<TaskState> {
    let events = collect_events(runtime, id, 0).await;
    let states = events.iter().filter_map(|event| match &event.kind {
        TaskEventKind::Created(task) => Some(task.status.state),
        TaskEventKind::Status(status) => Some(status.state),
        _ => None,
    });
    states.collect()
}
