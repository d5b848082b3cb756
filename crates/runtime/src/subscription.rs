//! Task event streams: stored events replayed, then live ones, with no gap and no
//! duplicate. A subscriber that falls behind the live buffer is served from the store
//! again; it never slows the task or other subscribers.

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures::Stream;
use ractor::ActorRef;
use ractor::rpc::CallResult;
use tokio::sync::broadcast::{self, error::RecvError};

use crate::actors::{SupervisorMsg, TaskMsg};
use crate::error::RuntimeError;
use crate::model::{TaskEvent, TaskId};
use crate::store::TaskStore;

/// A task's events in order; ends after the terminal event, or once the task is no
/// longer live (an interrupted task after a restart has no live events until it is
/// woken).
pub type EventStream = Pin<Box<dyn Stream<Item = Result<TaskEvent, RuntimeError>> + Send>>;

/// Events read from the store per round trip while replaying.
const REPLAY_BATCH: usize = 256;

pub(crate) fn event_stream(
    store: Arc<dyn TaskStore>,
    supervisor: ActorRef<SupervisorMsg>,
    task_id: TaskId,
    after_seq: u64,
    call_timeout: Duration,
) -> EventStream {
    Box::pin(async_stream::try_stream! {
        let mut next = after_seq + 1;
        'subscription: loop {
            // Subscribe to live events before replaying, so that nothing published
            // between the replay and the subscription is missed; duplicates are
            // dropped by sequence number.
            let live = live_receiver(&supervisor, &task_id, call_timeout).await;
            let mut live = live.map(|(actor, receiver)| Live { actor, receiver: Some(receiver) });
            loop {
                let batch = store.events(&task_id, next - 1, REPLAY_BATCH).await?;
                if batch.is_empty() {
                    break;
                }
                for event in batch {
                    next = event.seq + 1;
                    let terminal = event.is_terminal();
                    yield event;
                    if terminal {
                        break 'subscription;
                    }
                }
            }
            let Some(live) = live.as_mut() else {
                break 'subscription;
            };
            while let Some(receiver) = live.receiver.as_mut() {
                match receiver.recv().await {
                    Ok(event) if event.seq < next => continue,
                    Ok(event) if event.seq == next => {
                        next += 1;
                        let terminal = event.is_terminal();
                        yield event;
                        if terminal {
                            break 'subscription;
                        }
                    }
                    // A gap, a lag, or the actor stopped: catch up from the store.
                    Ok(_) | Err(RecvError::Lagged(_)) | Err(RecvError::Closed) => break,
                }
            }
        }
    })
}

/// A live receiver that tells its actor when it is dropped, so that the actor can free
/// the channel once nobody listens.
struct Live {
    actor: ActorRef<TaskMsg>,
    receiver: Option<broadcast::Receiver<TaskEvent>>,
}

impl Drop for Live {
    fn drop(&mut self) {
        // Drop the receiver first: the actor counts receivers when the message arrives.
        self.receiver = None;
        let _ = self.actor.cast(TaskMsg::SubscriberLeft);
    }
}

async fn live_receiver(
    supervisor: &ActorRef<SupervisorMsg>,
    task_id: &TaskId,
    timeout: Duration,
) -> Option<(ActorRef<TaskMsg>, broadcast::Receiver<TaskEvent>)> {
    let task_id = task_id.clone();
    let actor = match supervisor
        .call(
            |reply| SupervisorMsg::Live { task_id, reply },
            Some(timeout),
        )
        .await
    {
        Ok(CallResult::Success(actor)) => actor?,
        _ => return None,
    };
    let receiver = subscribe_to(&actor, timeout).await?;
    Some((actor, receiver))
}

async fn subscribe_to(
    actor: &ActorRef<TaskMsg>,
    timeout: Duration,
) -> Option<broadcast::Receiver<TaskEvent>> {
    match actor.call(TaskMsg::Subscribe, Some(timeout)).await {
        Ok(CallResult::Success(receiver)) => Some(receiver),
        _ => None,
    }
}
