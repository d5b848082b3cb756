//! Store slots a node keeps between its runs (`runtime.hold-run-slots-ms`).
//!
//! With several nodes, a run takes one of its skill's slots in the store in its first
//! commit and gives it back in its last: two row updates in the database per run. A
//! node that keeps the slot a run ended with, and hands it to its next run of the
//! skill, writes neither. It keeps a slot for at most the hold time from when the
//! store gave it (a run that still has it then gives it back in its last commit, as
//! without keeping), and gives back one that no run has taken for a tenth of the hold
//! time (a statement of its own). While another node waits for a slot of the skill
//! (`Cluster::run_slot_wanted_elsewhere`), it keeps none: the other node finds one free
//! as often as if every run gave its slot back.
//!
//! Any change of the node's standing (a cut-off, or the database held again) drops the
//! kept slots without giving them back, and no slot the node took before it is kept
//! after it: a node that holds the database again has let go of all its slots there.
//! Every look at the kept slots sees the change first, under their lock. A node that
//! stops lets go of its kept slots with all the others it holds (`TaskStore::hand_back`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::{Notify, watch};

use super::give_back::give_back;
use crate::model::SkillId;
use crate::store::{Cluster, Standing};

/// When, and in which of the node's standings, the store gave a slot to this node.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Taken {
    at: Instant,
    standing: u64,
}

/// A node's way to the store's run slots: the cluster, the slots it keeps between
/// runs, and a signal that one was given back or kept.
pub(crate) struct KeptSlots {
    pub(super) cluster: Arc<dyn Cluster>,
    /// A slot was given back to the store or kept here.
    pub(super) freed: Arc<Notify>,
    hold_for: Duration,
    /// How long a kept slot waits for a run before it is given back.
    idle: Duration,
    inner: Mutex<Inner>,
}

struct Inner {
    standing: watch::Receiver<Standing>,
    /// Counts the changes of standing seen.
    changes: u64,
    by_skill: HashMap<SkillId, Vec<Kept>>,
    /// A task gives back the slots no run took in time, while any are kept.
    sweeping: bool,
}

struct Kept {
    number: u32,
    taken: Taken,
    since: Instant,
}

impl Inner {
    /// Sees a change of standing, if there was one: the kept slots are dropped.
    fn refresh(&mut self) {
        if self.standing.has_changed().unwrap_or(true) {
            self.standing.borrow_and_update();
            self.changes += 1;
            self.by_skill.clear();
        }
    }
}

impl KeptSlots {
    /// Keeps slots for at most `hold_for` from when the store gave them (zero: none is
    /// kept, every run gives its slot back in its last commit).
    pub(crate) fn new(cluster: Arc<dyn Cluster>, hold_for: Duration) -> KeptSlots {
        let standing = cluster.standing();
        KeptSlots {
            cluster,
            freed: Arc::default(),
            hold_for,
            idle: hold_for / 10,
            inner: Mutex::new(Inner {
                standing,
                changes: 0,
                by_skill: HashMap::new(),
                sweeping: false,
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.refresh();
        inner
    }

    /// A slot the store gives this node now.
    pub(crate) fn taken_now(&self) -> Taken {
        Taken {
            at: Instant::now(),
            standing: self.lock().changes,
        }
    }

    /// Whether a slot of `skill` taken at `taken` may still be kept: held for less
    /// than the hold time, and no other node waits for one of the skill's slots (its
    /// standing is checked again when it is kept).
    pub(crate) fn keepable(&self, skill: &str, taken: &Taken) -> bool {
        taken.at.elapsed() < self.hold_for && !self.cluster.run_slot_wanted_elsewhere(skill)
    }

    /// Keeps slot `number` of `skill` for the node's next run; `false` when it may not
    /// be kept (held long enough, or taken before the standing changed).
    pub(crate) fn keep(self: &Arc<Self>, skill: &SkillId, number: u32, taken: Taken) -> bool {
        let mut inner = self.lock();
        if taken.standing != inner.changes || !self.keepable(skill, &taken) {
            return false;
        }
        let kept = Kept {
            number,
            taken,
            since: Instant::now(),
        };
        inner.by_skill.entry(skill.clone()).or_default().push(kept);
        if !std::mem::replace(&mut inner.sweeping, true) {
            tokio::spawn(self.clone().sweep());
        }
        drop(inner);
        self.freed.notify_waiters();
        true
    }

    /// A kept slot of `skill` for a run, the one kept last, with when it was taken.
    pub(crate) fn hand_out(&self, skill: &str) -> Option<(u32, Taken)> {
        let mut inner = self.lock();
        let kept = inner.by_skill.get_mut(skill)?;
        let fresh = kept.iter().rposition(|k| self.keepable(skill, &k.taken))?;
        let kept = kept.swap_remove(fresh);
        Some((kept.number, kept.taken))
    }

    /// Gives back the kept slots that waited `idle` or were held `hold_for`, until none
    /// is kept.
    async fn sweep(self: Arc<Self>) {
        loop {
            tokio::time::sleep(self.idle / 2).await;
            let (due, sweeping) = {
                let mut inner = self.lock();
                let mut due = Vec::new();
                for (skill, kept) in &mut inner.by_skill {
                    kept.retain(|k| {
                        let keep = k.since.elapsed() < self.idle && self.keepable(skill, &k.taken);
                        if !keep {
                            due.push((skill.clone(), k.number));
                        }
                        keep
                    });
                }
                inner.by_skill.retain(|_, kept| !kept.is_empty());
                if inner.by_skill.is_empty() {
                    inner.sweeping = false;
                }
                (due, inner.sweeping)
            };
            for (skill, number) in due {
                give_back(self.cluster.as_ref(), &skill, number).await;
                self.freed.notify_waiters();
            }
            if !sweeping {
                return;
            }
        }
    }
}
