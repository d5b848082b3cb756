//! Task event streams: stored events replayed, then live ones, with no gap and no
//! duplicate. A subscriber that falls behind the live buffer is served from the store
//! again; it never slows the task or other subscribers.
//!
//! The task writes its events without waiting for the disk; a stream yields an event
//! only once it is durable (`TaskStore::settle`). Events that arrive together are
//! settled together, so one flush serves a burst and every stream waiting at the time.

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures::Stream;
use ractor::ActorRef;
use tokio::sync::mpsc::error::TryRecvError;
use tokio::sync::watch;

use crate::actors::{LiveEvents, NoAnswer, Routed, SupervisorMsg, TaskMsg, call_actor};
use crate::error::RuntimeError;
use crate::model::{TaskEvent, TaskId};
use crate::store::{Cluster, Holder, TaskStore};

/// A task's events in order; ends after the terminal event, or once the task has no
/// actor to follow (the runtime shuts down, or its node is cut off).
pub type EventStream = Pin<Box<dyn Stream<Item = Result<TaskEvent, RuntimeError>> + Send>>;

/// Events read from the store per round trip while replaying.
const REPLAY_BATCH: usize = 256;

/// How long a stream of a task another node runs waits for a signal before it asks
/// again where the task runs.
const REMOTE_RECHECK: Duration = Duration::from_secs(1);

/// How a stream follows its task's actor on this node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Listen {
    /// As a subscriber: a task without an actor gets one, and it does not park while
    /// the stream lives.
    Subscribe,
    /// As a watcher: only an actor the task has, which may park; the stream ends once
    /// the task has none (after what the store holds).
    Watch,
}

/// The events of `task_id` after `after_seq`. `attached`: the task's actor and a queue
/// it adopted as it started, when event `after_seq` was already stored (a new task's
/// creation); the stream then starts from it instead of subscribing.
pub(crate) fn event_stream(
    store: Arc<dyn TaskStore>,
    supervisor: ActorRef<SupervisorMsg>,
    task_id: TaskId,
    after_seq: u64,
    call_timeout: Duration,
    attached: Option<(ActorRef<TaskMsg>, LiveEvents)>,
    listen: Listen,
) -> EventStream {
    Box::pin(async_stream::try_stream! {
        let mut next = after_seq + 1;
        let mut attached = attached;
        // While another node runs the task: the signal its commits raise.
        let mut remote: Option<(Arc<dyn Cluster>, watch::Receiver<()>)> = None;
        'subscription: loop {
            let (live, replay) = match attached.take() {
                // Attached as the actor started, after event `after_seq` was stored: it
                // receives every later event, so there is nothing to replay.
                Some(live) => (Some(live), false),
                // Another node's events are read from the store.
                None if remote.is_some() => (None, true),
                // Subscribe to live events before replaying, so that nothing published
                // between the replay and the subscription is missed; duplicates are
                // dropped by sequence number.
                // Boxed: asked once per subscription, it would otherwise make the
                // stream's state larger, and every step it yields dearer to move.
                None => match Box::pin(live_receiver(&store, &supervisor, &task_id, call_timeout, listen)).await? {
                    Source::Actor(actor, receiver) => (Some((actor, receiver)), true),
                    Source::NotLive => (None, true),
                    Source::Elsewhere(cluster, changes) => {
                        remote = Some((cluster, changes));
                        (None, true)
                    }
                },
            };
            let mut live = live.map(|(actor, receiver)| Live { actor, receiver: Some(receiver) });
            if replay {
                loop {
                    let batch = store.events(&task_id, next - 1, REPLAY_BATCH).await?;
                    if batch.is_empty() {
                        break;
                    }
                    // Written is not yet durable: a task's latest events may still be on
                    // their way to disk.
                    store.settle().await?;
                    for event in batch {
                        next = event.seq + 1;
                        let terminal = event.is_terminal();
                        yield event;
                        if terminal {
                            break 'subscription;
                        }
                    }
                }
            }
            let Some(live) = live.as_mut() else {
                let Some((cluster, changes)) = remote.as_mut() else {
                    break 'subscription;
                };
                // Read again at the other node's next commit; without a signal for a
                // while, read again all the same (a signal may have been missed) and ask
                // where the task runs (a takeover may have brought it to this node).
                match tokio::time::timeout(REMOTE_RECHECK, changes.changed()).await {
                    Ok(Ok(())) => {}
                    Ok(Err(_)) => remote = None,
                    Err(_) => {
                        if cluster.holder(&task_id).await? == Holder::Here {
                            remote = None;
                        }
                    }
                }
                continue 'subscription;
            };
            while let Some(receiver) = live.receiver.as_mut() {
                let (batch, intact) = receive_burst(receiver).await;
                if !batch.is_empty() {
                    store.settle().await?;
                }
                for event in batch {
                    if event.seq < next {
                        continue;
                    }
                    if event.seq > next {
                        // A gap: catch up from the store.
                        continue 'subscription;
                    }
                    next += 1;
                    let terminal = event.is_terminal();
                    yield Arc::unwrap_or_clone(event);
                    if terminal {
                        break 'subscription;
                    }
                }
                // Let go for falling behind, or the actor stopped: catch up from the store.
                if !intact {
                    break;
                }
            }
        }
    })
}

/// The next live event and every one already queued behind it; `false` once the queue
/// closed: the actor stopped, or let this subscriber go for falling behind (what came
/// before is still returned).
async fn receive_burst(receiver: &mut LiveEvents) -> (Vec<Arc<TaskEvent>>, bool) {
    let mut batch = match receiver.recv().await {
        Some(event) => vec![event],
        None => return (Vec::new(), false),
    };
    loop {
        match receiver.try_recv() {
            Ok(event) => batch.push(event),
            Err(TryRecvError::Empty) => return (batch, true),
            Err(TryRecvError::Disconnected) => return (batch, false),
        }
    }
}

/// A live receiver that tells its actor when it is dropped, so that the actor can free
/// the channel once nobody listens.
struct Live {
    actor: ActorRef<TaskMsg>,
    receiver: Option<LiveEvents>,
}

impl Drop for Live {
    fn drop(&mut self) {
        // Drop the receiver first: the actor prunes closed queues when the message arrives.
        self.receiver = None;
        let _ = self.actor.cast(TaskMsg::SubscriberLeft);
    }
}

/// Where a stream's live events come from.
enum Source {
    /// The task's actor on this node.
    Actor(ActorRef<TaskMsg>, LiveEvents),
    /// Nowhere: the task has no actor here (ended, unknown, or none may start: a
    /// shutdown, a cut-off), or this node could not tell.
    NotLive,
    /// Another node runs the task; the signal changes as it stores events.
    Elsewhere(Arc<dyn Cluster>, watch::Receiver<()>),
}

/// Where the task's live events come from. An actor that parks (`actors::park`) as the
/// subscriber reaches it is asked once more: the supervisor then wakes one for it (for
/// a watcher, answers that the task has none).
async fn live_receiver(
    store: &Arc<dyn TaskStore>,
    supervisor: &ActorRef<SupervisorMsg>,
    task_id: &TaskId,
    timeout: Duration,
    listen: Listen,
) -> Result<Source, RuntimeError> {
    for first in [true, false] {
        match live_source(store, supervisor, task_id, timeout, listen).await? {
            Some(source) => return Ok(source),
            None if first => continue,
            None => break,
        }
    }
    Ok(Source::NotLive)
}

/// The task's source of live events; `None` when its actor stopped as it was asked.
async fn live_source(
    store: &Arc<dyn TaskStore>,
    supervisor: &ActorRef<SupervisorMsg>,
    task_id: &TaskId,
    timeout: Duration,
    listen: Listen,
) -> Result<Option<Source>, RuntimeError> {
    let asked = task_id.clone();
    let live = |reply| SupervisorMsg::Live {
        task_id: asked,
        wake: listen == Listen::Subscribe,
        reply,
    };
    let actor = match call_actor(supervisor, live, timeout).await {
        Ok(Routed::Here(Some(actor))) => actor,
        Ok(Routed::Here(None)) | Err(NoAnswer::Gone) => return Ok(Some(Source::NotLive)),
        Ok(Routed::Elsewhere) => {
            return Ok(Some(match store.cluster() {
                // Watched before the store is read, so that no signal is missed.
                Some(cluster) => {
                    let changes = cluster.watch(task_id).await?;
                    Source::Elsewhere(cluster, changes)
                }
                None => Source::NotLive,
            }));
        }
        Err(NoAnswer::TimedOut) => {
            // Served from the store instead, but a subscriber waited the whole timeout.
            tracing::warn!(%task_id, ?timeout, "the supervisor did not answer a subscription in time");
            return Ok(Some(Source::NotLive));
        }
    };
    Ok(
        match call_actor(
            &actor,
            match listen {
                Listen::Subscribe => TaskMsg::Subscribe,
                Listen::Watch => TaskMsg::Watch,
            },
            timeout,
        )
        .await
        {
            Ok(receiver) => Some(Source::Actor(actor, receiver)),
            Err(NoAnswer::TimedOut) => {
                tracing::warn!(%task_id, actor = %actor.get_id(), ?timeout, "a task actor did not answer a subscription in time");
                Some(Source::NotLive)
            }
            Err(NoAnswer::Gone) => None,
        },
    )
}
