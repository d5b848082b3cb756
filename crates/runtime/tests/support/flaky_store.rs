//! `FlakyStore`: the memory store, made to fail a task's reads or refuse its cancels
//! on demand, for the runtime's tests of what a task does when its store fails it.

// Each test crate that includes this module uses a part of it.
#![allow(dead_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use fundi_runtime::store::TaskRecord;
use fundi_runtime::{MemoryStore, StoreError, TaskEvent, TaskId, TaskState};

/// The memory store, whose reads of a task fail while `failing` holds (it counts them),
/// and which refuses to store a cancel while `refusing_cancels` holds.
pub(crate) struct FlakyStore {
    pub(crate) store: MemoryStore,
    pub(crate) failing: AtomicBool,
    pub(crate) failed: AtomicUsize,
    pub(crate) refusing_cancels: AtomicBool,
}

impl FlakyStore {
    pub(crate) fn new() -> Arc<FlakyStore> {
        Arc::new(FlakyStore {
            store: MemoryStore::new(),
            failing: AtomicBool::new(false),
            failed: AtomicUsize::new(0),
            refusing_cancels: AtomicBool::new(false),
        })
    }
}

fundi_runtime::store_with_own_writes!(FlakyStore, store, own_get: {
    async fn get(&self, id: &TaskId) -> Result<Option<TaskRecord>, StoreError> {
        if self.failing.load(Ordering::SeqCst) {
            self.failed.fetch_add(1, Ordering::SeqCst);
            let down = std::io::Error::other("the disk is gone");
            return Err(StoreError::io("reading a task", down));
        }
        self.store.get(id).await
    }
}, {
    async fn write(
        &self,
        record: &TaskRecord,
        expected_version: u64,
        events: &[TaskEvent],
    ) -> Result<(), StoreError> {
        let canceled = record.task.status.state == TaskState::Canceled;
        if canceled && self.refusing_cancels.load(Ordering::SeqCst) {
            let full = std::io::Error::other("the disk is full");
            return Err(StoreError::io("writing a task", full));
        }
        self.store.write(record, expected_version, events).await
    }
});
