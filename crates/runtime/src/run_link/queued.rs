//! The messages queued for a run (`MessagePolicy::Enqueue`), as its context sees them
//! without asking the actor: how many wait, and a wake-up when one arrives. The messages
//! themselves are in the task's record; the run takes them through its actor, which
//! stores that it did.

use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::Notify;

/// Shared by a task's actor (which keeps the count) and its run's contexts.
#[derive(Default)]
pub(crate) struct QueuedMessages {
    waiting: AtomicUsize,
    arrived: Notify,
}

impl QueuedMessages {
    /// How many queued messages the run has not taken, as of the task's last commit.
    pub(crate) fn waiting(&self) -> usize {
        self.waiting.load(Ordering::Acquire)
    }

    /// The actor's count after a commit; a count that grew wakes a run waiting for a
    /// message (or the next one to wait: the wake-up is kept until then).
    pub(crate) fn set(&self, waiting: usize) {
        let before = self.waiting.swap(waiting, Ordering::AcqRel);
        if waiting > before {
            self.arrived.notify_one();
        }
    }

    /// Resolves once a message has arrived since the last wake-up was taken.
    pub(crate) async fn arrived(&self) {
        self.arrived.notified().await;
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn a_message_that_arrives_before_the_wait_still_wakes_it() {
        let inbox = QueuedMessages::default();
        assert_eq!(inbox.waiting(), 0);
        inbox.set(1);
        assert_eq!(inbox.waiting(), 1);
        tokio::time::timeout(Duration::from_secs(5), inbox.arrived())
            .await
            .expect("the wake-up was kept for the next wait");
        // Taking a message (the count falls) wakes nobody.
        inbox.set(0);
        let woken = tokio::time::timeout(Duration::from_millis(50), inbox.arrived()).await;
        assert!(woken.is_err(), "a falling count woke a waiter");
    }
}
