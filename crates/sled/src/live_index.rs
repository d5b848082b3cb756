//! The listing entries of unfinished tasks, kept in memory by the sled store.
//!
//! An unfinished task's entry moves at each of its status changes. In sled, each move
//! was a remove and an insert in each of the two listing indexes (`U`, `C`): half of a
//! short task's writes. Every unfinished task is in the active set, whose snapshots name
//! their entries, so the store keeps those entries here instead, rebuilds them when it
//! opens, and writes a task's entry to sled once, when the task reaches a terminal state
//! (after which it never moves). A listing merges the two.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::{Mutex, MutexGuard};

use fundi_runtime::model::{ContextId, TaskId, UserId};
use fundi_runtime::store::StoreError;
use fundi_runtime::store::index::IndexEntry;

/// Whether a task's entry lives in sled (terminal: it never moves again) or here.
pub(crate) fn is_persisted(entry: &IndexEntry) -> bool {
    entry.state().is_some_and(|s| s.is_terminal())
}

/// Entries of unfinished tasks, ordered like sled's `U` and `C` indexes.
#[derive(Debug, Default)]
pub(crate) struct LiveIndex(Mutex<Entries>);

#[derive(Debug, Default)]
struct Entries {
    /// Each task's version (of the commit that wrote its entry) and update time.
    tasks: HashMap<TaskId, (u64, i64)>,
    by_update: BTreeMap<(i64, TaskId), IndexEntry>,
    /// One set for every context: a set per context would cost a whole B-tree node
    /// (about 400 bytes) for each context that has one unfinished task.
    by_context: BTreeSet<(ContextId, i64, TaskId)>,
}

impl Entries {
    fn take(&mut self, id: &TaskId) {
        if let Some((_, ts_ms)) = self.tasks.remove(id)
            && let Some(entry) = self.by_update.remove(&(ts_ms, id.clone()))
        {
            self.by_context
                .remove(&(entry.context_id, ts_ms, entry.task_id));
        }
    }

    /// True when a commit of `version` is older than what is already here (commits of
    /// one task can finish their index updates out of order).
    fn is_stale(&self, id: &TaskId, version: u64) -> bool {
        self.tasks.get(id).is_some_and(|(v, _)| *v >= version)
    }
}

/// How many entries a listing copies out per lock.
const BATCH: usize = 64;

impl LiveIndex {
    fn lock(&self) -> MutexGuard<'_, Entries> {
        // Every update leaves the maps consistent before it can panic: ignore poisoning.
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The task's entry as of the commit of `version`.
    pub(crate) fn put(&self, version: u64, entry: &IndexEntry) {
        let mut entries = self.lock();
        if entries.is_stale(&entry.task_id, version) {
            return;
        }
        entries.take(&entry.task_id);
        let id = entry.task_id.clone();
        entries.tasks.insert(id.clone(), (version, entry.ts_ms));
        entries
            .by_context
            .insert((entry.context_id.clone(), entry.ts_ms, id.clone()));
        entries.by_update.insert((entry.ts_ms, id), entry.clone());
    }

    /// The entries of tasks found at open, each as of the commit of its version: built
    /// in bulk (sorted once, not a tree insert each) when the index is empty.
    pub(crate) fn load(&self, found: impl ExactSizeIterator<Item = (u64, IndexEntry)>) {
        let mut entries = self.lock();
        if !entries.tasks.is_empty() {
            drop(entries);
            found.for_each(|(version, entry)| self.put(version, &entry));
            return;
        }
        let mut tasks = HashMap::with_capacity(found.len());
        let mut by_context = Vec::with_capacity(found.len());
        let mut by_update = Vec::with_capacity(found.len());
        for (version, entry) in found {
            let id = entry.task_id.clone();
            tasks.insert(id.clone(), (version, entry.ts_ms));
            by_context.push((entry.context_id.clone(), entry.ts_ms, id.clone()));
            by_update.push(((entry.ts_ms, id), entry));
        }
        entries.tasks = tasks;
        entries.by_context = by_context.into_iter().collect();
        entries.by_update = by_update.into_iter().collect();
    }

    /// Runs `f` on every entry, under one lock (for a pass at open or recovery, before
    /// the store takes work).
    pub(crate) fn each(&self, f: impl FnMut(&IndexEntry)) {
        self.lock().by_update.values().for_each(f);
    }

    /// How many entries there are per owner and state.
    pub(crate) fn tally(&self) -> HashMap<(Option<UserId>, u8), u64> {
        let mut tally = HashMap::new();
        for entry in self.lock().by_update.values() {
            *tally.entry((entry.owner.clone(), entry.state)).or_default() += 1;
        }
        tally
    }

    /// The task's entry, if it is unfinished.
    pub(crate) fn entry(&self, id: &TaskId) -> Option<IndexEntry> {
        let entries = self.lock();
        let (_, ts_ms) = entries.tasks.get(id)?;
        entries.by_update.get(&(*ts_ms, id.clone())).cloned()
    }

    /// The task's commit of `version` made it terminal (its entry is now in sled).
    pub(crate) fn remove(&self, version: u64, id: &TaskId) {
        let mut entries = self.lock();
        if !entries.is_stale(id, version) {
            entries.take(id);
        }
    }

    /// Every entry, newest update first, copied out a batch at a time (never a lock held
    /// between batches). Like a sled scan, not a snapshot: a task that moves meanwhile may
    /// be missed or seen twice.
    pub(crate) fn newest_first(
        &self,
        context: Option<&ContextId>,
    ) -> impl Iterator<Item = Result<IndexEntry, StoreError>> + '_ {
        let context = context.cloned();
        let mut below: Option<(i64, TaskId)> = None;
        let mut buffer = VecDeque::new();
        let mut done = false;
        std::iter::from_fn(move || {
            if buffer.is_empty() && !done {
                let entries = self.lock();
                let batch = match &context {
                    None => {
                        let keys = match below.take() {
                            Some(key) => entries.by_update.range(..key),
                            None => entries.by_update.range(..),
                        };
                        keys.rev().take(BATCH).map(|(_, e)| e.clone()).collect()
                    }
                    Some(context) => {
                        let first = (context.clone(), i64::MIN, TaskId::from(""));
                        let end = match below.take() {
                            Some((ts, id)) => (context.clone(), ts, id),
                            // The least key of any later context: `context` then "\0".
                            None => {
                                let next = format!("{}\0", context.as_str());
                                (ContextId::from(next), i64::MIN, TaskId::from(""))
                            }
                        };
                        entries
                            .by_context
                            .range(first..end)
                            .rev()
                            .take(BATCH)
                            .filter_map(|(_, ts, id)| entries.by_update.get(&(*ts, id.clone())))
                            .cloned()
                            .collect::<Vec<_>>()
                    }
                };
                done = batch.len() < BATCH;
                if let Some(last) = batch.last() {
                    below = Some((last.ts_ms, last.task_id.clone()));
                }
                buffer.extend(batch);
            }
            buffer.pop_front().map(Ok)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(id: &str, ts_ms: i64) -> IndexEntry {
        IndexEntry {
            ts_ms,
            task_id: TaskId::from(id),
            context_id: ContextId::from("c"),
            state: fundi_runtime::model::TaskState::Working.number(),
            owner: None,
            skill: None,
        }
    }

    fn listed(index: &LiveIndex) -> Vec<(String, i64)> {
        let context = ContextId::from("c");
        let all: Vec<_> = index
            .newest_first(None)
            .map(|e| e.map(|e| (e.task_id.to_string(), e.ts_ms)).unwrap())
            .collect();
        let in_context: Vec<_> = index
            .newest_first(Some(&context))
            .map(|e| e.map(|e| (e.task_id.to_string(), e.ts_ms)).unwrap())
            .collect();
        assert_eq!(all, in_context);
        all
    }

    /// Index updates of one task's commits can finish out of order: the newest wins.
    #[test]
    fn an_older_commit_never_overwrites_a_newer_one() {
        let index = LiveIndex::default();
        index.put(2, &entry("t", 20));
        index.put(1, &entry("t", 10));
        assert_eq!(listed(&index), [("t".to_string(), 20)]);
        index.remove(2, &TaskId::from("t"));
        assert_eq!(listed(&index), [("t".to_string(), 20)]);
        index.put(3, &entry("t", 30));
        index.put(4, &entry("u", 5));
        assert_eq!(listed(&index), [("t".into(), 30), ("u".into(), 5)]);
        index.remove(4, &TaskId::from("t"));
        assert_eq!(listed(&index), [("u".to_string(), 5)]);
        assert_eq!(index.lock().by_context.len(), 1);
    }

    /// Entries found at open are built in bulk into an empty index, and put one by one
    /// into one that has entries already: either way each is listed once, newest first.
    #[test]
    fn loaded_entries_are_listed_like_put_ones() {
        let index = LiveIndex::default();
        index.load([(1, entry("a", 10)), (1, entry("b", 30))].into_iter());
        index.load([(2, entry("a", 20)), (1, entry("c", 5))].into_iter());
        let expected = [("b".into(), 30), ("a".into(), 20), ("c".into(), 5)];
        assert_eq!(listed(&index), expected);
        assert_eq!(index.lock().by_context.len(), 3);
        let tally: u64 = index.tally().values().sum();
        assert_eq!(tally, 3);
    }
}
