//! Moving a task's listing entry as it commits: in memory while the task is unfinished
//! (`LiveIndex`), under its two keys in sled once it is terminal, with the counts.

use super::TaskTable;
use crate::layout::{context_key, updated_key};
use crate::live_index::is_persisted;
use fundi_runtime::model::TaskId;
use fundi_runtime::store::StoreError;
use fundi_runtime::store::index::IndexEntry;

impl TaskTable {
    /// Moves the task's listing entry from `old` (`None`: a new task) to `entry`
    /// (`entry_bytes` as JSON), written by the commit of `version`, and its counts with
    /// it: in memory while the task is unfinished, in sled once it is terminal.
    pub(crate) fn reindex(
        &self,
        id: &TaskId,
        version: u64,
        old: Option<&IndexEntry>,
        entry: &IndexEntry,
        entry_bytes: &[u8],
    ) -> Result<(), StoreError> {
        self.move_entry(id, version, old, entry, entry_bytes)?;
        self.counts.moved(old, entry);
        Ok(())
    }

    /// `reindex` without the counts (repair rebuilds them once it is done).
    /// Idempotent, so repair can run it again for a commit a crash interrupted;
    /// `entry_bytes` is read only for an entry kept in sled (a terminal task's).
    pub(crate) fn move_entry(
        &self,
        id: &TaskId,
        version: u64,
        old: Option<&IndexEntry>,
        entry: &IndexEntry,
        entry_bytes: &[u8],
    ) -> Result<(), StoreError> {
        if old == Some(entry) {
            return Ok(());
        }
        debug_assert!(old.is_none_or(|o| &o.task_id == id));
        let mut written = Vec::new();
        if is_persisted(entry) {
            for key in [updated_key(entry), context_key(entry)] {
                self.before_write()?;
                self.db
                    .insert(&key, entry_bytes)
                    .map_err(StoreError::engine)?;
                written.push(key);
            }
            self.live.remove(version, id);
        } else {
            self.live.put(version, entry);
        }
        // A terminal task's entry never moves in the runtime; a store does not rely on it.
        if let Some(old) = old.filter(|old| is_persisted(old)) {
            for stale in [updated_key(old), context_key(old)] {
                if !written.contains(&stale) {
                    self.before_write()?;
                    self.db.remove(stale).map_err(StoreError::engine)?;
                }
            }
        }
        Ok(())
    }
}
