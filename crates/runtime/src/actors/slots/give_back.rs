//! Giving a store slot back, trying again while the store fails.

use crate::model::SkillId;
use crate::store::{Cluster, Standing};

/// How many times a store slot is given back before giving up (the waits between
/// the attempts doubling from the first to the most: about 40 s in all).
const RELEASE_ATTEMPTS: u32 = 12;
const RELEASE_RETRY_FIRST: std::time::Duration = std::time::Duration::from_millis(50);
const RELEASE_RETRY_MOST: std::time::Duration = std::time::Duration::from_secs(10);

/// Gives back a store slot, trying again while the store fails: this node's lease
/// renewal keeps every slot it holds taken, so one it failed to give back would stay
/// taken until the node stops. A node cut off stops trying (it frees all its slots
/// once it holds the database again).
pub(super) async fn give_back(cluster: &dyn Cluster, skill: &SkillId, number: u32) {
    let mut wait = RELEASE_RETRY_FIRST;
    for attempt in 1..=RELEASE_ATTEMPTS {
        let error = match cluster.release_run_slot(skill, number).await {
            Ok(()) => return,
            Err(error) => error,
        };
        let cut_off = matches!(*cluster.standing().borrow(), Standing::CutOff { .. });
        if cut_off || attempt == RELEASE_ATTEMPTS {
            tracing::warn!(%skill, number, %error, attempt, "a run slot was not given back; it stays taken until this node stops or holds the database again");
            return;
        }
        tracing::debug!(%skill, number, %error, attempt, "a run slot was not given back; trying again");
        tokio::time::sleep(wait).await;
        wait = (wait * 2).min(RELEASE_RETRY_MOST);
    }
}
