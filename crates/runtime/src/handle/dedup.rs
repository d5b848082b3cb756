//! Idempotent submission: a new task's first message sent again by the same owner
//! (the same `messageId`, within `runtime.dedup-window-s`) gets the task it created, not
//! a second one. The store answers for messages whose task it holds (across restarts),
//! by refusing the new task's first write (`TaskStore::create_task`); a claim answers
//! for one being created in this process, so that duplicates sent at the same time
//! make exactly one task.

use crate::access::Access;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::watch;

use super::tasks::Tasks;
use crate::error::RuntimeError;
use crate::model::TaskId;
use crate::requests::TaskSnapshot;

/// Who sent which message id.
type Key = (Option<String>, String);

/// The messages whose task this process is creating; each waiter learns the task's id
/// once it can be read (or that its creation failed: the channel closes empty).
#[derive(Default)]
pub(super) struct Claims {
    pending: Mutex<HashMap<Key, watch::Receiver<Option<TaskId>>>>,
}

/// What a submission of a first message found.
pub(super) enum Found {
    /// The task an earlier submission created (boxed: the rare case).
    Existing(Box<TaskSnapshot>),
    /// None: this submission creates the task and tells the others through the claim.
    New(Claim),
}

/// A submission's claim on its message: dropped, it tells the waiting duplicates the
/// task's id (if one was set) and lets go.
pub(super) struct Claim {
    claims: Option<Arc<Claims>>,
    key: Key,
    task: watch::Sender<Option<TaskId>>,
    id: Option<TaskId>,
}

impl Claim {
    /// A claim that claims nothing (deduplication is off).
    fn none() -> Claim {
        Claim {
            claims: None,
            key: (None, String::new()),
            task: watch::channel(None).0,
            id: None,
        }
    }

    /// The task this submission created: told to the duplicates when the claim drops
    /// (once it can be read).
    pub(super) fn created(&mut self, id: &TaskId) {
        self.id = Some(id.clone());
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        let Some(claims) = self.claims.take() else {
            return;
        };
        if let Some(id) = self.id.take() {
            self.task.send_replace(Some(id));
        }
        let mut pending = claims.pending.lock().unwrap_or_else(|p| p.into_inner());
        if pending
            .get(&self.key)
            .is_some_and(|mine| mine.same_channel(&self.task.subscribe()))
        {
            pending.remove(&self.key);
        }
    }
}

impl Claims {
    /// The task an earlier submission of this first message created, or a claim for
    /// this one to create it. Waits while another submission of it is being created.
    /// `window` is `runtime.dedup-window-s`: zero, every first message makes a task.
    pub(super) async fn first_message(
        self: &Arc<Self>,
        tasks: &Tasks,
        window: std::time::Duration,
        owner: Option<&str>,
        message_id: &str,
    ) -> Result<Found, RuntimeError> {
        if window.is_zero() {
            return Ok(Found::New(Claim::none()));
        }
        let mut key: Key = (owner.map(str::to_owned), message_id.to_owned());
        loop {
            let mut theirs = match self.claim(key) {
                // The store refuses the task's creation if a stored task has it.
                Ok(claim) => return Ok(Found::New(claim)),
                Err((back, theirs)) => {
                    key = back;
                    theirs
                }
            };
            // Another submission of it is under way: its task, once it can be read; if
            // its creation failed, claim it again.
            let id = match theirs.wait_for(Option::is_some).await {
                Ok(id) => id.clone(),
                Err(_) => None,
            };
            // Not found: its first commit failed after all; claim it again.
            if let Some(id) = id {
                match snapshot_of(tasks, &id, owner).await {
                    Ok(existing) => return Ok(Found::Existing(Box::new(existing))),
                    Err(RuntimeError::TaskNotFound(_)) => {}
                    Err(error) => return Err(error),
                }
            }
        }
    }

    /// Claims `key` for this submission, or gives it back with the claim of the
    /// submission that has it.
    fn claim(self: &Arc<Self>, key: Key) -> Result<Claim, (Key, watch::Receiver<Option<TaskId>>)> {
        let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(theirs) = pending.get(&key) {
            let theirs = theirs.clone();
            return Err((key, theirs));
        }
        let (task, receiver) = watch::channel(None);
        pending.insert(key.clone(), receiver);
        Ok(Claim {
            claims: Some(self.clone()),
            key,
            task,
            id: None,
        })
    }
}

/// The task as `owner` sees it.
pub(super) async fn snapshot_of(
    tasks: &Tasks,
    id: &TaskId,
    owner: Option<&str>,
) -> Result<TaskSnapshot, RuntimeError> {
    let record = tasks.visible_record(id, Access::of_owner(owner)).await?;
    Ok(TaskSnapshot {
        task: record.task,
        seq: record.last_seq,
    })
}
