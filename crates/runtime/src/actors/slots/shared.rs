//! One of a skill's slots in a store several nodes share, as a run holds it: given back
//! when dropped, unless a commit gave it back or the node keeps it for its next run
//! (`kept`).

use std::sync::Arc;

use super::give_back::give_back;
use super::kept::{KeptSlots, Taken};
use crate::model::SkillId;

pub(super) struct SharedSlot {
    pub(super) store: Arc<KeptSlots>,
    pub(super) skill: SkillId,
    pub(super) number: u32,
    /// When and in which standing the store gave it to this node.
    pub(super) taken: Taken,
    /// Given back by a commit, or kept: nothing to give back on drop.
    pub(super) given_back: bool,
}

impl std::fmt::Debug for SharedSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedSlot")
            .field("skill", &self.skill)
            .field("number", &self.number)
            .finish()
    }
}

impl SharedSlot {
    /// Store slot `number` of `skill`, held by this node since `taken`.
    pub(super) fn new(
        store: &Arc<KeptSlots>,
        skill: SkillId,
        number: u32,
        taken: Taken,
    ) -> SharedSlot {
        SharedSlot {
            store: store.clone(),
            skill,
            number,
            taken,
            given_back: false,
        }
    }

    /// Whether the node may keep this slot for its next run (see `kept`).
    pub(super) fn keepable(&self) -> bool {
        self.store.keepable(&self.skill, &self.taken)
    }

    /// Keeps the slot for the node's next run of the skill, if the store still lets
    /// the node keep it; otherwise it is given back when dropped.
    pub(super) fn keep(&mut self) {
        self.given_back = self.store.keep(&self.skill, self.number, self.taken);
    }
}

impl Drop for SharedSlot {
    fn drop(&mut self) {
        if self.given_back {
            self.store.freed.notify_waiters();
            return;
        }
        // Outside a runtime (the process is ending) the slot runs out with the lease.
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (store, skill, number) = (self.store.clone(), self.skill.clone(), self.number);
        runtime.spawn(async move {
            give_back(store.cluster.as_ref(), &skill, number).await;
            store.freed.notify_waiters();
        });
    }
}
