//! Task counts per owner and state, so that a listing's `totalSize` needs no scan of the
//! index. Kept in memory (updating shared counters in the store on every state change
//! made every writer contend on the same few keys), saved at a clean close, and rebuilt
//! from the index after an unclean one.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use crate::layout::{count_key, count_keys, read_count};
use crate::live_index::LiveIndex;
use fundi_runtime::store::StoreError;
use fundi_runtime::store::index::IndexEntry;

#[derive(Debug, Default)]
pub(crate) struct Counts(Mutex<HashMap<Vec<u8>, u64>>);

impl Counts {
    fn lock(&self) -> MutexGuard<'_, HashMap<Vec<u8>, u64>> {
        // Plain counters, consistent after any panic: ignore poisoning.
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Tasks of `owner` (`None`: everyone's) in `state` (`None`: any).
    pub(crate) fn get(&self, owner: Option<&str>, state: Option<u8>) -> u64 {
        self.lock()
            .get(&count_key(owner, state))
            .copied()
            .unwrap_or(0)
    }

    /// A task's index entry went from `old` (`None`: a new task) to `new`.
    pub(crate) fn moved(&self, old: Option<&IndexEntry>, new: &IndexEntry) {
        let mut counts = self.lock();
        match old {
            None => {
                for key in count_keys(new.owner.as_deref(), new.state, true) {
                    *counts.entry(key).or_default() += 1;
                }
            }
            Some(old) if old.state != new.state => {
                for key in count_keys(old.owner.as_deref(), old.state, false) {
                    let count = counts.entry(key).or_default();
                    *count = count.saturating_sub(1);
                }
                for key in count_keys(new.owner.as_deref(), new.state, false) {
                    *counts.entry(key).or_default() += 1;
                }
            }
            Some(_) => {}
        }
    }

    /// A task's entry left the index (the task was removed).
    pub(crate) fn removed(&self, entry: &IndexEntry) {
        let mut counts = self.lock();
        for key in count_keys(entry.owner.as_deref(), entry.state, true) {
            let count = counts.entry(key).or_default();
            *count = count.saturating_sub(1);
        }
    }

    /// Counts the entries of the listing index: those in sled (`persisted`) and the
    /// unfinished tasks' in memory. Tallied per owner and state first: a million
    /// entries have a few distinct pairs.
    pub(crate) fn rebuild(
        persisted: impl Iterator<Item = Result<IndexEntry, StoreError>>,
        live: &LiveIndex,
    ) -> Result<Counts, StoreError> {
        let mut tally = live.tally();
        for entry in persisted {
            let entry = entry?;
            *tally.entry((entry.owner, entry.state)).or_default() += 1;
        }
        let mut counts = HashMap::new();
        for ((owner, state), n) in tally {
            for key in count_keys(owner.as_deref(), state, true) {
                *counts.entry(key).or_default() += n;
            }
        }
        Ok(Counts(Mutex::new(counts)))
    }

    /// The counts saved at the last clean close.
    pub(crate) fn load(db: &sled::Db) -> Result<Counts, StoreError> {
        let mut counts = HashMap::new();
        for item in db.scan_prefix(b"N") {
            let (key, value) = item.map_err(StoreError::engine)?;
            counts.insert(key.to_vec(), read_count(&value));
        }
        Ok(Counts(Mutex::new(counts)))
    }

    /// Saves the counts (replacing any saved before).
    pub(crate) fn save(&self, db: &sled::Db) -> Result<(), StoreError> {
        let counts = self.lock().clone();
        for key in db.scan_prefix(b"N").keys() {
            let key = key.map_err(StoreError::engine)?;
            if !counts.contains_key(key.as_ref()) {
                db.remove(key).map_err(StoreError::engine)?;
            }
        }
        for (key, count) in counts {
            db.insert(key, &count.to_be_bytes())
                .map_err(StoreError::engine)?;
        }
        Ok(())
    }
}
