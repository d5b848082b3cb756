//! `Slots`: how many runs of each skill may go on at once. A fair semaphore per skill:
//! a task takes a permit to run and gives it back when its run ends or waits for a user.
//! Taking a free slot asks no one (no actor round trip); a task that has to wait queues
//! on the semaphore, first come first served (a free permit goes to the longest waiter
//! before anyone can take it).
//!
//! With several nodes on one store (`Cluster`), the limit holds across them: a run also
//! holds one of the skill's slots in the store, after its permit here (so only the
//! head of this node's queue asks the store). A slot freed here wakes it at once; one
//! freed on another node is found at its next look (`CLUSTER_POLL`). A new task with a
//! free permit takes its store slot in its first commit (`reserve`), and a run gives its
//! store slot back in the commit that ends it (`Slot::shared`, `Slot::given_back`), so
//! that a run that neither queues nor waits costs the store no statement of its own.
//! Better still, the node keeps the slot a run ended with for its next run of the skill
//! for a short while (`kept`), and those two commits touch no slot at all.

mod give_back;
mod kept;
mod shared;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::config::RuntimeConfig;
use crate::model::SkillId;
use crate::store::Cluster;
use kept::KeptSlots;
use shared::SharedSlot;

/// How often the head of a node's queue looks for a slot another node freed.
const CLUSTER_POLL: std::time::Duration = std::time::Duration::from_millis(250);

/// A held slot; dropping it frees it for the next waiting task.
#[derive(Debug)]
pub(crate) struct Slot {
    _permit: OwnedSemaphorePermit,
    shared: Option<SharedSlot>,
}

impl Slot {
    /// The number of the store's slot this one holds, with several nodes.
    pub(crate) fn shared(&self) -> Option<u32> {
        self.shared.as_ref().map(|shared| shared.number)
    }

    /// Whether the node may keep this slot's store slot for its next run once this
    /// run has ended (then the commit that ends the run does not give it back).
    pub(crate) fn keepable(&self) -> bool {
        self.shared.as_ref().is_some_and(SharedSlot::keepable)
    }

    /// Frees the slot, its store slot given back already (by a commit that ended the
    /// run): nothing more is asked of the store.
    pub(crate) fn given_back(mut self) {
        if let Some(shared) = &mut self.shared {
            shared.given_back = true;
        }
    }

    /// Frees the slot, its store slot kept by this node for its next run of the skill
    /// (or given back, if it may no longer be kept).
    pub(crate) fn keep(mut self) {
        if let Some(shared) = &mut self.shared {
            shared.keep();
        }
    }
}

/// A free permit of this node for a new task, and what the task's first commit takes
/// besides it.
pub(crate) enum Reserved {
    /// The slot, whole (one node, or a store slot this node kept: nothing more to
    /// take).
    Slot(Slot),
    /// One of the skill's `limit` slots in the store is still to be taken, by the
    /// task's first commit (`TaskStore::create_with_run_slot`).
    Permit {
        permit: OwnedSemaphorePermit,
        limit: usize,
    },
}

impl Reserved {
    /// How many store slots the task's first commit takes one of, if it takes one.
    pub(crate) fn shared_limit(&self) -> Option<usize> {
        match self {
            Reserved::Slot(_) => None,
            Reserved::Permit { limit, .. } => Some(*limit),
        }
    }
}

pub(crate) struct Slots {
    by_skill: HashMap<SkillId, (Arc<Semaphore>, usize)>,
    /// Tasks queued for a slot, all skills.
    waiting: AtomicUsize,
    /// With other nodes, whose runs count against the same limits: the store's slots
    /// and those this node keeps.
    store: Option<Arc<KeptSlots>>,
}

impl Slots {
    /// Slots for these skills, as many as the configuration allows each.
    pub(crate) fn new<'a>(
        config: &RuntimeConfig,
        skills: impl IntoIterator<Item = &'a SkillId>,
        cluster: Option<Arc<dyn Cluster>>,
    ) -> Slots {
        let by_skill = skills
            .into_iter()
            .map(|skill| {
                let limit = config.concurrency_of(skill).min(Semaphore::MAX_PERMITS);
                (skill.clone(), (Arc::new(Semaphore::new(limit)), limit))
            })
            .collect();
        let hold_for = config.hold_run_slots();
        Slots {
            by_skill,
            waiting: AtomicUsize::new(0),
            store: cluster.map(|cluster| Arc::new(KeptSlots::new(cluster, hold_for))),
        }
    }

    fn semaphore(&self, skill: &str) -> Option<(Arc<Semaphore>, usize)> {
        self.by_skill.get(skill).cloned()
    }

    /// A free slot of `skill` now, if there is one and nobody waits for it, asking no
    /// one (with several nodes, never: the store must be asked, see `try_claim`). `None`
    /// also for a skill that is not registered (its tasks never run).
    pub(crate) fn try_take(&self, skill: &str) -> Option<Slot> {
        if self.store.is_some() {
            return None;
        }
        let (semaphore, _) = self.semaphore(skill)?;
        let permit = semaphore.try_acquire_owned().ok()?;
        Some(Slot {
            _permit: permit,
            shared: None,
        })
    }

    /// A free slot of `skill` for a new task, if there is one and nobody waits for it:
    /// whole with one node; with several, the permit here with a store slot this node
    /// kept, or with the store's slot to be taken by the task's first commit (then
    /// `slot_of`). `None` also for a skill that is not registered.
    pub(crate) fn reserve(&self, skill: &SkillId) -> Option<Reserved> {
        let Some(store) = &self.store else {
            return self.try_take(skill).map(Reserved::Slot);
        };
        let (semaphore, limit) = self.semaphore(skill)?;
        let permit = semaphore.try_acquire_owned().ok()?;
        if let Some((number, taken)) = store.hand_out(skill) {
            return Some(Reserved::Slot(Slot {
                _permit: permit,
                shared: Some(SharedSlot::new(store, skill.clone(), number, taken)),
            }));
        }
        Some(Reserved::Permit { permit, limit })
    }

    /// The slot `reserved` (from `reserve`) makes once the task's first commit is
    /// written: the whole one, or the permit with the store slot the commit `taken`
    /// (`None`, none was free: the permit is freed, and the task queues).
    pub(crate) fn slot_of(
        &self,
        reserved: Reserved,
        skill: &SkillId,
        taken: Option<u32>,
    ) -> Option<Slot> {
        match reserved {
            Reserved::Slot(slot) => Some(slot),
            Reserved::Permit { permit, .. } => {
                // No store slot taken: the permit is dropped here, freed.
                let (store, number) = (self.store.as_ref()?, taken?);
                let shared = SharedSlot::new(store, skill.clone(), number, store.taken_now());
                Some(Slot {
                    _permit: permit,
                    shared: Some(shared),
                })
            }
        }
    }

    /// Waits for a slot of `skill`, behind the tasks already waiting. `None` for a
    /// skill that is not registered.
    pub(crate) async fn take(&self, skill: &str) -> Option<Slot> {
        let (semaphore, limit) = self.semaphore(skill)?;
        self.waiting.fetch_add(1, Ordering::Relaxed);
        // Counted out however the wait ends (taken, or the waiter dropped).
        let _queued = Queued(&self.waiting);
        let permit = semaphore.acquire_owned().await.ok()?;
        let shared = match &self.store {
            None => None,
            Some(store) => loop {
                // Listening before asking: a slot freed or kept meanwhile is not missed.
                let freed = store.freed.notified();
                tokio::pin!(freed);
                freed.as_mut().enable();
                if let Some((number, taken)) = store.hand_out(skill) {
                    break Some(SharedSlot::new(store, skill.into(), number, taken));
                }
                if let Some(shared) = self.claim(store, skill, limit).await {
                    break Some(shared);
                }
                let _ = tokio::time::timeout(CLUSTER_POLL, freed).await;
            },
        };
        Some(Slot {
            _permit: permit,
            shared,
        })
    }

    /// One of the skill's slots in the store, if one is free.
    async fn claim(&self, store: &Arc<KeptSlots>, skill: &str, limit: usize) -> Option<SharedSlot> {
        match store.cluster.claim_run_slot(skill, limit).await {
            Ok(Some(number)) => {
                let taken = store.taken_now();
                Some(SharedSlot::new(store, skill.into(), number, taken))
            }
            Ok(None) => None,
            Err(error) => {
                tracing::warn!(%skill, %error, "could not ask the store for a run slot; asking again");
                None
            }
        }
    }

    /// Tasks queued for a slot now.
    pub(crate) fn waiting(&self) -> usize {
        self.waiting.load(Ordering::Relaxed)
    }

    /// Counts `n` tasks queued for a slot elsewhere, before they ask for one (recovery's
    /// resumes, asking in turn): each is counted as waiting until it asks
    /// (`Backlog::asking`) or the backlog is dropped.
    pub(crate) fn backlog(self: &Arc<Slots>, n: usize) -> Backlog {
        self.waiting.fetch_add(n, Ordering::Relaxed);
        Backlog {
            slots: self.clone(),
            left: n,
        }
    }
}

/// Tasks counted as waiting for a slot before they ask for one (`Slots::backlog`).
pub(crate) struct Backlog {
    slots: Arc<Slots>,
    left: usize,
}

impl Backlog {
    /// One of the tasks asks for its slot now (`Slots::take` counts it from here).
    pub(crate) fn asking(&mut self) {
        if self.left > 0 {
            self.left -= 1;
            self.slots.waiting.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

impl Drop for Backlog {
    fn drop(&mut self) {
        self.slots.waiting.fetch_sub(self.left, Ordering::Relaxed);
    }
}

struct Queued<'a>(&'a AtomicUsize);

impl Drop for Queued<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests;
