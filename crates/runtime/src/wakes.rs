//! Wake hooks: how a front end that follows tasks without keeping their actors (push
//! delivery) learns that a task it let go of has something to follow again.
//!
//! A watcher (`RuntimeHandle::watch`) lets a task park; once the task has no actor, the
//! watcher stops and waits for a hook instead of holding anything per task. The
//! supervisor calls every hook with the task's id whenever a stored task gets an actor
//! (a message, a cancel, a decision, a subscriber, a free slot or a takeover woke it,
//! or recovery resumed it) and whenever it fails a stored task without one (its actor
//! failed, or its skill is not registered). A new task's first actor calls none (its
//! watchers attach to it), unless it waits for an approver from the start: that one
//! starts as a woken task does, and a hook finds nothing resting for it.
//!
//! Hooks run inside the supervisor's handler: one must return at once (take a lock,
//! spawn a task), never wait.

use std::sync::{Arc, RwLock};

use crate::model::TaskId;

/// Called with the id of a task that has something to follow again (see the module
/// docs).
pub type WakeHook = Arc<dyn Fn(&TaskId) + Send + Sync>;

/// Where a task's live events would come from now (`RuntimeHandle::presence`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Presence {
    /// Its actor on this node.
    Here,
    /// Nowhere: it has no actor here (it parked, or waits to be woken after a
    /// restart, or ended), and no other node holds it. A wake here calls the hooks.
    Resting,
    /// Another node holds it (a store several nodes share), or nobody does yet: its
    /// events are followed through the store, and no hook here hears of its wake.
    Elsewhere,
}

/// The hooks registered with one runtime.
#[derive(Default)]
pub(crate) struct Wakes(RwLock<Vec<WakeHook>>);

impl Wakes {
    pub(crate) fn add(&self, hook: WakeHook) {
        self.0.write().unwrap_or_else(|e| e.into_inner()).push(hook);
    }

    /// Tells every hook that `task_id` has something to follow again.
    pub(crate) fn tell(&self, task_id: &TaskId) {
        for hook in self.0.read().unwrap_or_else(|e| e.into_inner()).iter() {
            hook(task_id);
        }
    }
}
