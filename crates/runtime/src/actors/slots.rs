//! `Slots`: how many runs of each skill may go on at once. A fair semaphore per skill:
//! a task takes a permit to run and gives it back when its run ends or waits for a user.
//! Taking a free slot asks no one (no actor round trip); a task that has to wait queues
//! on the semaphore, first come first served (a free permit goes to the longest waiter
//! before anyone can take it).
//!
//! With several nodes on one store (`Cluster`), the limit holds across them: a run also
//! takes one of the skill's slots in the store, after its permit here (so only the
//! head of this node's queue asks the store). A slot freed here wakes it at once; one
//! freed on another node is found at its next look (`CLUSTER_POLL`). A new task with a
//! free permit takes its store slot in its first commit (`reserve`), and a run gives its
//! store slot back in the commit that ends it (`Slot::shared`, `Slot::given_back`), so
//! that a run that neither queues nor waits costs the store no statement of its own.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};

use crate::config::RuntimeConfig;
use crate::model::SkillId;
use crate::store::{Cluster, Standing};

/// How often the head of a node's queue looks for a slot another node freed.
const CLUSTER_POLL: std::time::Duration = std::time::Duration::from_millis(250);

/// How many times a store slot is given back before giving up (the waits between
/// the attempts doubling from the first to the most: about 40 s in all).
const RELEASE_ATTEMPTS: u32 = 12;
const RELEASE_RETRY_FIRST: std::time::Duration = std::time::Duration::from_millis(50);
const RELEASE_RETRY_MOST: std::time::Duration = std::time::Duration::from_secs(10);

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

    /// Frees the slot, its store slot given back already (by a commit that ended the
    /// run): nothing more is asked of the store.
    pub(crate) fn given_back(mut self) {
        if let Some(shared) = &mut self.shared {
            shared.given_back = true;
        }
    }
}

/// A free permit of this node for a new task, and what the task's first commit takes
/// besides it.
pub(crate) enum Reserved {
    /// The slot, whole (one node: nothing more to take).
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

/// One of a skill's slots in a store several nodes share, given back when dropped
/// (unless a commit gave it back).
struct SharedSlot {
    cluster: Arc<dyn Cluster>,
    skill: SkillId,
    number: u32,
    freed: Arc<Notify>,
    given_back: bool,
}

impl std::fmt::Debug for SharedSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedSlot")
            .field("skill", &self.skill)
            .field("number", &self.number)
            .finish()
    }
}

impl Drop for SharedSlot {
    fn drop(&mut self) {
        if self.given_back {
            self.freed.notify_waiters();
            return;
        }
        // Outside a runtime (the process is ending) the slot runs out with the lease.
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (cluster, skill, number) = (self.cluster.clone(), self.skill.clone(), self.number);
        let freed = self.freed.clone();
        runtime.spawn(async move {
            give_back(cluster.as_ref(), &skill, number).await;
            freed.notify_waiters();
        });
    }
}

/// Gives back a store slot, trying again while the store fails: this node's lease
/// renewal keeps every slot it holds taken, so one it failed to give back would stay
/// taken until the node stops. A node cut off stops trying (it frees all its slots
/// once it holds the database again).
async fn give_back(cluster: &dyn Cluster, skill: &SkillId, number: u32) {
    let mut wait = RELEASE_RETRY_FIRST;
    for attempt in 1..=RELEASE_ATTEMPTS {
        let error = match cluster.release_run_slot(skill, number).await {
            Ok(()) => return,
            Err(error) => error,
        };
        let cut_off = matches!(*cluster.standing().borrow(), Standing::CutOff { .. });
        if cut_off || attempt == RELEASE_ATTEMPTS {
            tracing::warn!(%skill, number, %error, attempt, "a run slot was not given back; it stays taken until this node stops or holds the database again");
            return;
        }
        tracing::debug!(%skill, number, %error, attempt, "a run slot was not given back; trying again");
        tokio::time::sleep(wait).await;
        wait = (wait * 2).min(RELEASE_RETRY_MOST);
    }
}

pub(crate) struct Slots {
    by_skill: HashMap<SkillId, (Arc<Semaphore>, usize)>,
    /// Tasks queued for a slot, all skills.
    waiting: AtomicUsize,
    /// The other nodes, whose runs count against the same limits.
    cluster: Option<Arc<dyn Cluster>>,
    /// A shared slot was given back by this node.
    freed: Arc<Notify>,
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
        Slots {
            by_skill,
            waiting: AtomicUsize::new(0),
            cluster,
            freed: Arc::default(),
        }
    }

    fn semaphore(&self, skill: &str) -> Option<(Arc<Semaphore>, usize)> {
        self.by_skill.get(skill).cloned()
    }

    /// A free slot of `skill` now, if there is one and nobody waits for it, asking no
    /// one (with several nodes, never: the store must be asked, see `try_claim`). `None`
    /// also for a skill that is not registered (its tasks never run).
    pub(crate) fn try_take(&self, skill: &str) -> Option<Slot> {
        if self.cluster.is_some() {
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
    /// whole with one node; with several, the permit here, the store's slot to be taken
    /// by the task's first commit (then `slot_of`). `None` also for a skill that is
    /// not registered.
    pub(crate) fn reserve(&self, skill: &str) -> Option<Reserved> {
        if self.cluster.is_none() {
            return self.try_take(skill).map(Reserved::Slot);
        }
        let (semaphore, limit) = self.semaphore(skill)?;
        let permit = semaphore.try_acquire_owned().ok()?;
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
                let (cluster, number) = (self.cluster.clone()?, taken?);
                Some(Slot {
                    _permit: permit,
                    shared: Some(self.shared(cluster, skill.clone(), number)),
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
        let shared = match &self.cluster {
            None => None,
            Some(cluster) => loop {
                // Listening before asking: a slot freed meanwhile is not missed.
                let freed = self.freed.notified();
                tokio::pin!(freed);
                freed.as_mut().enable();
                if let Some(shared) = self.claim(cluster, skill, limit).await {
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
    async fn claim(
        &self,
        cluster: &Arc<dyn Cluster>,
        skill: &str,
        limit: usize,
    ) -> Option<SharedSlot> {
        match cluster.claim_run_slot(skill, limit).await {
            Ok(Some(number)) => Some(self.shared(cluster.clone(), skill.into(), number)),
            Ok(None) => None,
            Err(error) => {
                tracing::warn!(%skill, %error, "could not ask the store for a run slot; asking again");
                None
            }
        }
    }

    /// Store slot `number` of `skill`, taken by this node.
    fn shared(&self, cluster: Arc<dyn Cluster>, skill: SkillId, number: u32) -> SharedSlot {
        SharedSlot {
            cluster,
            skill,
            number,
            freed: self.freed.clone(),
            given_back: false,
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
mod tests {
    use super::*;

    fn slots(limit: usize) -> Arc<Slots> {
        let config = RuntimeConfig {
            max_concurrent_runs: limit,
            ..RuntimeConfig::default()
        };
        Arc::new(Slots::new(&config, [&SkillId::from("s")], None))
    }

    #[tokio::test]
    async fn slots_are_limited_and_waiters_served_in_order() {
        let slots = slots(1);
        let held = slots.try_take("s").expect("a free slot");
        assert!(slots.try_take("s").is_none());
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        for n in 0..3 {
            let (waiter, tx) = (slots.clone(), tx.clone());
            tokio::spawn(async move {
                let slot = waiter.take("s").await.unwrap();
                tx.send(n).unwrap();
                drop(slot);
            });
            // Queue them in a known order (a waiter that never queues fails the test
            // rather than hanging it).
            let queued = async {
                while slots.waiting() < n + 1 {
                    tokio::task::yield_now().await;
                }
            };
            tokio::time::timeout(std::time::Duration::from_secs(10), queued)
                .await
                .unwrap_or_else(|_| panic!("waiter {n} never queued for the slot"));
        }
        // A free slot goes to the longest waiter, not to whoever asks now.
        drop(held);
        assert!(
            slots.try_take("s").is_none(),
            "a late caller took the freed slot"
        );
        let mut order = Vec::new();
        for _ in 0..3 {
            let next = tokio::time::timeout(std::time::Duration::from_secs(10), rx.recv());
            order.push(next.await.expect("a waiter never got the slot").unwrap());
        }
        assert_eq!(order, [0, 1, 2]);
        assert_eq!(slots.waiting(), 0);
    }

    #[test]
    fn a_backlog_counts_as_waiting_until_each_asks_or_it_is_dropped() {
        let slots = slots(1);
        let mut backlog = slots.backlog(3);
        assert_eq!(slots.waiting(), 3);
        backlog.asking();
        assert_eq!(slots.waiting(), 2);
        drop(backlog);
        assert_eq!(slots.waiting(), 0);
    }

    #[test]
    fn an_unregistered_skill_has_no_slot() {
        assert!(slots(1).try_take("nope").is_none());
    }
}
