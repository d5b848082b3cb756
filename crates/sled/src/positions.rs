//! Where each unfinished task's log ends, as the sled store last wrote or read it.
//!
//! A commit must know the version and last event of its task's last commit. Those of a
//! task whose last commits are written after its snapshot (its tail, see `store`)
//! are in the tail's last value, and finding that value takes a reverse scan that costs
//! sled a copy of a whole tree node: more than the rest of such a commit. So the store
//! remembers each unfinished task's position here (from its first commit, or from the
//! open that loaded it), and reads sled only for a task it has no position for.
//!
//! Writers of one task take turns (`Turns`), and a position is set by the writer whose
//! turn it is, after the write that made it so (and forgotten if a write fails), so it
//! is exact for the next writer. Readers do not take turns: a reader that finds a
//! position trusts it only if it names the snapshot the reader read as the task's last
//! commit (`Position::is_snapshot`); a position never moves back, so a snapshot it
//! names as last was last when it was set.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use fundi_runtime::model::TaskId;

use crate::rest::Rest;

/// Where a task's log ends: the version and last event seq of its last commit, and of
/// its snapshot; whether that snapshot is in the current layout, and how the task is
/// indexed as at rest, if it is (see `resting`: its next commit removes that key
/// first).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Position {
    pub(crate) version: u64,
    pub(crate) last_seq: u64,
    pub(crate) snapshot_version: u64,
    pub(crate) snapshot_seq: u64,
    pub(crate) snapshot_current: bool,
    pub(crate) rest: Option<Rest>,
}

impl Position {
    /// A task whose snapshot (of `version`, last event `last_seq`; `current`: in the
    /// current layout) is its last commit.
    pub(crate) fn at_snapshot(version: u64, last_seq: u64, current: bool) -> Position {
        Position {
            version,
            last_seq,
            snapshot_version: version,
            snapshot_seq: last_seq,
            snapshot_current: current,
            rest: None,
        }
    }

    /// How many commits the snapshot is behind.
    pub(crate) fn since_snapshot(&self) -> u64 {
        self.version.saturating_sub(self.snapshot_version)
    }

    /// Whether the snapshot whose last event is `seq` is the task's last commit.
    pub(crate) fn is_snapshot(&self, seq: u64) -> bool {
        self.snapshot_seq == seq && self.last_seq == seq
    }
}

/// Turns of the writers of one task: a few locks, each shared by the tasks whose ids
/// hash to it (a commit holds one for a few sled operations).
#[derive(Debug)]
pub(crate) struct Turns(Box<[Mutex<()>]>);

impl Default for Turns {
    fn default() -> Turns {
        Turns((0..64).map(|_| Mutex::new(())).collect())
    }
}

impl Turns {
    /// Waits for the task's turn; it lasts until the guard is dropped.
    pub(crate) fn turn(&self, id: &TaskId) -> MutexGuard<'_, ()> {
        // Task ids end in random bits (UUIDv7, or the client's own): any hash spreads
        // them.
        let hash = id.as_str().bytes().fold(0usize, |h, b| {
            h.wrapping_mul(31).wrapping_add(usize::from(b))
        });
        let lock = &self.0[hash % self.0.len()];
        // A writer that panicked left no half-held state here: ignore poisoning.
        lock.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The positions of the unfinished tasks written or read since the store opened.
#[derive(Debug, Default)]
pub(crate) struct Positions(Mutex<HashMap<TaskId, Position>>);

impl Positions {
    fn lock(&self) -> MutexGuard<'_, HashMap<TaskId, Position>> {
        // Every update is one map operation: ignore poisoning.
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn get(&self, id: &TaskId) -> Option<Position> {
        self.lock().get(id).copied()
    }

    /// The task's log reached `at` (ignored if an older position than the one known:
    /// commits of one task can finish out of order).
    pub(crate) fn reached(&self, id: &TaskId, at: Position) {
        let mut positions = self.lock();
        match positions.get_mut(id) {
            Some(known) if known.version >= at.version => {}
            Some(known) => *known = at,
            None => {
                positions.insert(id.clone(), at);
            }
        }
    }

    /// The task's commit of `version` is indexed as resting so (see `resting`).
    pub(crate) fn mark_indexed(&self, id: &TaskId, version: u64, rest: Rest) {
        if let Some(known) = self.lock().get_mut(id).filter(|at| at.version == version) {
            known.rest = Some(rest);
        }
    }

    /// The positions of tasks found at open, none of them known yet.
    pub(crate) fn load(&self, found: impl ExactSizeIterator<Item = (TaskId, Position)>) {
        let mut positions = self.lock();
        positions.reserve(found.len());
        for (id, at) in found {
            positions.entry(id).or_insert(at);
        }
    }

    /// Forgets the task: it is terminal, or a commit of it lost a race (its position is
    /// read from sled again).
    pub(crate) fn forget(&self, id: &TaskId) {
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
            rest: None,
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
