//! Where one config's delivery stands: taken by this node (with several nodes on one
//! store, only the holder delivers and moves the cursor), its cursor moved after each
//! acknowledged event, and let go once nothing is left to deliver.

use fundi_runtime::StoreError;
use fundi_runtime::store::{PushConfig, PushCursor};

use super::Shared;

/// Why a worker stopped.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Ended {
    /// Nothing more to do: all delivered, given up, or the task is gone.
    Done,
    /// Told to stop, or the delivery was taken by another node.
    Stopped,
    /// The task has no actor here: the delivery rests (still this node's) until it
    /// wakes.
    Resting,
}

/// Takes the config's delivery for this node; false when another node holds it (or the
/// store could not say: another node may take it).
pub(super) async fn claim(shared: &Shared, config: &PushConfig) -> bool {
    let (task_id, id) = (&config.task_id, config.id.as_str());
    match shared.store.claim_delivery(task_id, id).await {
        Ok(claimed) => claimed,
        Err(error) => {
            tracing::warn!(%error, task_id = %task_id, config = id, "push delivery not taken; another node may take it");
            false
        }
    }
}

/// Lets the delivery go once nothing is left to do (`Ended::Done`); one stopped or
/// resting stays this node's.
pub(super) async fn finish(shared: &Shared, config: &PushConfig, ended: Ended) {
    let (task_id, id) = (&config.task_id, config.id.as_str());
    if ended == Ended::Done
        && let Err(error) = shared.store.release_delivery(task_id, id).await
    {
        tracing::warn!(%error, task_id = %task_id, config = id, "push delivery not let go; it runs out");
    }
}

/// Moves the cursor; `Stopped` when another node took the delivery meanwhile (its
/// cursor counts, and this worker goes no further).
pub(super) async fn save(shared: &Shared, config: &PushConfig, cursor: &PushCursor) -> Ended {
    match shared
        .store
        .set_cursor(&config.task_id, &config.id, cursor)
        .await
    {
        Ok(()) => Ended::Done,
        Err(StoreError::Fenced { holder, .. }) => {
            tracing::warn!(task_id = %config.task_id, config = %config.id, %holder, "push delivery taken over by another node; stopping here");
            Ended::Stopped
        }
        Err(StoreError::CutOff) => {
            tracing::warn!(task_id = %config.task_id, config = %config.id, "this node is cut off from the database; its push delivery stops here");
            Ended::Stopped
        }
        Err(error) => {
            // The event is delivered; a cursor left behind only means a duplicate later.
            tracing::warn!(%error, task_id = %config.task_id, "push cursor not saved");
            Ended::Done
        }
    }
}
