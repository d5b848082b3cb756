//! `SlotWait`: a task actor's wait for a concurrency slot of its skill, cast to the
//! actor as `Start` once it has one.

use std::sync::Arc;

use ractor::ActorRef;
use tokio::task::AbortHandle;

use super::slots::Slots;
use super::task_msg::TaskMsg;
use crate::model::SkillId;

/// The skill's slots, and the wait for one under way, if any.
pub(super) struct SlotWait {
    slots: Arc<Slots>,
    wait: Option<AbortHandle>,
}

impl SlotWait {
    pub(super) fn new(slots: Arc<Slots>) -> SlotWait {
        SlotWait { slots, wait: None }
    }

    /// Asks for a slot: `Start` comes once the task has one, at once if one is free.
    pub(super) fn want(&mut self, myself: &ActorRef<TaskMsg>, skill: &SkillId) {
        if let Some(slot) = self.slots.try_take(skill) {
            let _ = myself.cast(TaskMsg::Start(slot));
            return;
        }
        let (slots, skill, me) = (self.slots.clone(), skill.clone(), myself.clone());
        let wait = tokio::spawn(async move {
            if let Some(slot) = slots.take(&skill).await {
                // Gone meanwhile: the slot is dropped with the message, and freed.
                let _ = me.cast(TaskMsg::Start(slot));
            }
        });
        if let Some(stale) = self.wait.replace(wait.abort_handle()) {
            stale.abort();
        }
    }

    /// Whether a wait is under way.
    #[inline]
    pub(super) fn is_waiting(&self) -> bool {
        self.wait.is_some()
    }

    /// Stops the wait, if one is under way: the task has its slot, or wants none now.
    #[inline]
    pub(super) fn stop(&mut self) {
        if let Some(wait) = self.wait.take() {
            wait.abort();
        }
    }
}
