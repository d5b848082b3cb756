//! `Fanout`: a task actor's live events, handed to each subscriber through its own
//! bounded queue. A subscriber that falls a whole queue behind is let go (its queue
//! closes after what it holds) and catches up from the store; it never slows the task
//! or the other subscribers.
//!
//! Not a `tokio::sync::broadcast` channel: that allocates and zeroes its whole buffer
//! when it is made, 1,024 slots for every subscribed task, which cost a blocking send
//! (one subscriber, three events) more than everything else the actor does. A queue
//! here grows a block of slots at a time, as events arrive.
//!
//! A watcher (`Fanout::watch`) receives the same events, but does not count as someone
//! listening: a task watched only (by its push delivery) may still park, and its
//! watchers' queues close as its actor stops.

use std::sync::Arc;

use tokio::sync::mpsc::{self, error::TrySendError};

use crate::model::TaskEvent;

/// What a subscriber receives: the task's live events, in order, until the queue closes
/// (the actor stopped, or let the subscriber go for falling behind).
pub(crate) type LiveEvents = mpsc::Receiver<Arc<TaskEvent>>;

/// A subscriber's end, made before its task's actor starts and adopted by it (see
/// [`Fanout::adopt`]).
pub(crate) type Follower = mpsc::Sender<Arc<TaskEvent>>;

/// A queue for a subscriber that the actor adopts as it starts, so that the subscriber
/// receives every event the actor publishes.
pub(crate) fn follower(capacity: usize) -> (Follower, LiveEvents) {
    mpsc::channel(capacity.max(1))
}

pub(crate) struct Fanout {
    subscribers: Vec<Follower>,
    /// Receivers of the same events that keep nobody listening (see the module docs).
    watchers: Vec<Follower>,
    /// Events a subscriber may have waiting before it is let go.
    capacity: usize,
}

impl Fanout {
    pub(crate) fn new(capacity: usize) -> Fanout {
        Fanout {
            subscribers: Vec::new(),
            watchers: Vec::new(),
            capacity: capacity.max(1),
        }
    }

    /// A new subscriber, which receives the events published from now on.
    pub(crate) fn subscribe(&mut self) -> LiveEvents {
        let (sender, receiver) = follower(self.capacity);
        self.adopt(sender);
        receiver
    }

    /// A new watcher, which receives the events published from now on, as a subscriber
    /// does, without counting as one (`is_empty`).
    pub(crate) fn watch(&mut self) -> LiveEvents {
        let (sender, receiver) = follower(self.capacity);
        self.watchers.push(sender);
        receiver
    }

    /// Takes on a subscriber whose queue was made beforehand.
    pub(crate) fn adopt(&mut self, follower: Follower) {
        self.subscribers.push(follower);
    }

    /// Hands `event` to every subscriber; lets go of those that are gone or full.
    pub(crate) fn publish(&mut self, event: TaskEvent) {
        if self.subscribers.is_empty() && self.watchers.is_empty() {
            return;
        }
        let event = Arc::new(event);
        hand_over(&mut self.subscribers, &event);
        hand_over(&mut self.watchers, &event);
    }

    /// Lets go of subscribers and watchers that dropped their receiver.
    pub(crate) fn prune(&mut self) {
        self.subscribers
            .retain(|subscriber| !subscriber.is_closed());
        self.watchers.retain(|watcher| !watcher.is_closed());
    }

    /// Whether anyone listens (those gone are pruned when they say so).
    pub(crate) fn is_empty(&self) -> bool {
        self.subscribers.is_empty()
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.subscribers.len()
    }
}

/// Hands `event` to each of `queues`; lets go of those that are gone or full.
fn hand_over(queues: &mut Vec<Follower>, event: &Arc<TaskEvent>) {
    queues.retain(|queue| match queue.try_send(event.clone()) {
        Ok(()) => true,
        Err(TrySendError::Full(_) | TrySendError::Closed(_)) => false,
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ContextId, Message, Part, TaskEventKind, TaskId};

    fn event(seq: u64) -> TaskEvent {
        TaskEvent {
            seq,
            task_id: TaskId::from("t"),
            context_id: ContextId::from("c"),
            kind: TaskEventKind::Message(Message::agent(vec![Part::text("hi")])),
        }
    }

    fn drain(receiver: &mut LiveEvents) -> (Vec<u64>, bool) {
        let mut seqs = Vec::new();
        loop {
            match receiver.try_recv() {
                Ok(event) => seqs.push(event.seq),
                Err(mpsc::error::TryRecvError::Empty) => return (seqs, true),
                Err(mpsc::error::TryRecvError::Disconnected) => return (seqs, false),
            }
        }
    }

    #[test]
    fn every_subscriber_gets_every_event_in_order() {
        let mut fanout = Fanout::new(8);
        let mut early = fanout.subscribe();
        fanout.publish(event(1));
        let mut late = fanout.subscribe();
        fanout.publish(event(2));
        fanout.publish(event(3));
        assert_eq!(drain(&mut early), (vec![1, 2, 3], true));
        assert_eq!(drain(&mut late), (vec![2, 3], true));
    }

    #[test]
    fn a_subscriber_a_whole_queue_behind_is_let_go_and_the_others_go_on() {
        let mut fanout = Fanout::new(2);
        let mut slow = fanout.subscribe();
        let mut quick = fanout.subscribe();
        for seq in 1..=2 {
            fanout.publish(event(seq));
        }
        assert_eq!(drain(&mut quick), (vec![1, 2], true));
        fanout.publish(event(3));
        // The slow one keeps what it holds, then sees its queue closed.
        assert_eq!(drain(&mut slow), (vec![1, 2], false));
        assert_eq!(drain(&mut quick), (vec![3], true));
        assert_eq!(fanout.len(), 1);
    }

    #[test]
    fn a_watcher_gets_every_event_without_counting_as_a_subscriber() {
        let mut fanout = Fanout::new(8);
        let mut watcher = fanout.watch();
        assert!(fanout.is_empty());
        fanout.publish(event(1));
        let mut subscriber = fanout.subscribe();
        fanout.publish(event(2));
        assert!(!fanout.is_empty());
        assert_eq!(drain(&mut watcher), (vec![1, 2], true));
        assert_eq!(drain(&mut subscriber), (vec![2], true));
        drop(subscriber);
        fanout.prune();
        assert!(fanout.is_empty());
        fanout.publish(event(3));
        assert_eq!(drain(&mut watcher), (vec![3], true));
        drop(fanout);
        assert_eq!(drain(&mut watcher), (vec![], false));
    }

    #[test]
    fn a_dropped_receiver_is_pruned() {
        let mut fanout = Fanout::new(4);
        let gone = fanout.subscribe();
        let _kept = fanout.subscribe();
        drop(gone);
        fanout.prune();
        assert_eq!(fanout.len(), 1);
    }
}
