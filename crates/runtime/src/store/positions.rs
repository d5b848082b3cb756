//! Where each unfinished task's log ends, as the sled store last wrote or read it.
//!
//! A commit must know the version and last event of its task's last commit. Those of a
//! task whose last commits are written after its snapshot (its tail, see `sled_store`)
//! are in the tail's last value, and finding that value takes a reverse scan that costs
//! sled a copy of a whole tree node: more than the rest of such a commit. So the store
//! remembers each unfinished task's position here, and reads sled only for a task it
//! has not written since it opened.
//!
//! A position here is never ahead of the store: it is set from what sled holds, after
//! the write that made it so, and never moved back. It may be behind, for a moment,
//! while another writer of the same task commits; a commit from a stale position then
//! finds the slot of its first event taken, and fails as a conflict (the runtime has
//! one writer per task, so this never happens there).

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use crate::model::TaskId;

/// Where a task's log ends: the version and last event seq of its last commit, and of
/// its snapshot; whether that snapshot is in the current layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Position {
    pub(super) version: u64,
    pub(super) last_seq: u64,
    pub(super) snapshot_version: u64,
    pub(super) snapshot_seq: u64,
    pub(super) snapshot_current: bool,
}

impl Position {
    /// How many commits the snapshot is behind.
    pub(super) fn since_snapshot(&self) -> u64 {
        self.version.saturating_sub(self.snapshot_version)
    }

    /// Whether the snapshot whose last event is `seq` is the task's last commit.
    pub(super) fn is_snapshot(&self, seq: u64) -> bool {
        self.snapshot_seq == seq && self.last_seq == seq
    }
}

/// The positions of the unfinished tasks written or read since the store opened.
#[derive(Debug, Default)]
pub(super) struct Positions(Mutex<HashMap<TaskId, Position>>);

impl Positions {
    fn lock(&self) -> MutexGuard<'_, HashMap<TaskId, Position>> {
        // Every update is one map operation: ignore poisoning.
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn get(&self, id: &TaskId) -> Option<Position> {
        self.lock().get(id).copied()
    }

    /// The task's log reached `at` (ignored if an older position than the one known:
    /// commits of one task can finish out of order).
    pub(super) fn reached(&self, id: &TaskId, at: Position) {
        let mut positions = self.lock();
        match positions.get_mut(id) {
            Some(known) if known.version >= at.version => {}
            Some(known) => *known = at,
            None => {
                positions.insert(id.clone(), at);
            }
        }
    }

    /// Forgets the task: it is terminal, or a commit of it lost a race (its position is
    /// read from sled again).
    pub(super) fn forget(&self, id: &TaskId) {
        self.lock().remove(id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(version: u64) -> Position {
        Position {
            version,
            last_seq: version * 2,
            snapshot_version: 1,
            snapshot_seq: 2,
            snapshot_current: true,
        }
    }

    #[test]
    fn a_position_never_moves_back() {
        let positions = Positions::default();
        let id = TaskId::from("t");
        positions.reached(&id, at(3));
        positions.reached(&id, at(2));
        assert_eq!(positions.get(&id), Some(at(3)));
        positions.reached(&id, at(4));
        assert_eq!(positions.get(&id), Some(at(4)));
        positions.forget(&id);
        assert_eq!(positions.get(&id), None);
    }
}
