//! Open event streams, counted per user and per task: a stream holds a slot of each
//! while it lives, so that one caller cannot hold the server's connections and memory
//! by opening streams without end.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use crate::error::ApiError;

/// The open streams, by user and by task.
#[derive(Debug)]
pub(crate) struct StreamSlots {
    per_user: usize,
    per_task: usize,
    open: Mutex<Open>,
}

#[derive(Debug, Default)]
struct Open {
    users: HashMap<String, usize>,
    tasks: HashMap<String, usize>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    User,
    Task,
}

/// One stream's hold on a user's or a task's slots, given back when dropped.
#[derive(Debug)]
pub struct StreamSlot {
    slots: Arc<StreamSlots>,
    kind: Kind,
    key: String,
}

impl StreamSlots {
    pub(crate) fn new(per_user: usize, per_task: usize) -> StreamSlots {
        StreamSlots {
            per_user,
            per_task,
            open: Mutex::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Open> {
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A slot of `user`'s, or 429 when the user holds `max-streams-per-user`.
    pub(crate) fn for_user(self: &Arc<Self>, user: &str) -> Result<StreamSlot, ApiError> {
        self.take(Kind::User, user)
    }

    /// A slot of `task`'s, or 429 when `max-streams-per-task` are open on it.
    pub(crate) fn for_task(self: &Arc<Self>, task: &str) -> Result<StreamSlot, ApiError> {
        self.take(Kind::Task, task)
    }

    fn take(self: &Arc<Self>, kind: Kind, key: &str) -> Result<StreamSlot, ApiError> {
        let mut open = self.lock();
        let (counts, limit, what, setting) = match kind {
            Kind::User => (
                &mut open.users,
                self.per_user,
                "event streams of this user",
                "gateway.max-streams-per-user",
            ),
            Kind::Task => (
                &mut open.tasks,
                self.per_task,
                "event streams of this task",
                "gateway.max-streams-per-task",
            ),
        };
        let held = counts.entry(key.to_owned()).or_default();
        if *held >= limit {
            return Err(ApiError::TooManyOpen {
                what,
                limit,
                setting,
            });
        }
        *held += 1;
        Ok(StreamSlot {
            slots: self.clone(),
            kind,
            key: key.to_owned(),
        })
    }

    #[cfg(test)]
    fn held(&self) -> (usize, usize) {
        let open = self.lock();
        (open.users.values().sum(), open.tasks.values().sum())
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        let mut open = self.slots.lock();
        let counts = match self.kind {
            Kind::User => &mut open.users,
            Kind::Task => &mut open.tasks,
        };
        if let Some(held) = counts.get_mut(&self.key) {
            *held = held.saturating_sub(1);
            if *held == 0 {
                counts.remove(&self.key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_bounded_per_user_and_per_task_and_given_back() {
        let slots = Arc::new(StreamSlots::new(2, 1));
        let a = slots.for_user("alice").unwrap();
        let _b = slots.for_user("alice").unwrap();
        let refused = slots.for_user("alice").unwrap_err();
        assert_eq!(refused.http_refusal().unwrap().status.as_u16(), 429);
        assert!(refused.message().contains("gateway.max-streams-per-user"));
        assert!(slots.for_user("bob").is_ok(), "another user is not counted");
        let t = slots.for_task("t1").unwrap();
        assert!(slots.for_task("t1").is_err());
        drop(a);
        drop(t);
        assert!(slots.for_user("alice").is_ok());
        assert!(slots.for_task("t1").is_ok());
        assert_eq!(slots.held(), (1, 0), "only the held one is left");
    }
}
