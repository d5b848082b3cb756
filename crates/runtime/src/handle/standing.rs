//! A node of several that loses the database: the store says it is cut off
//! (`Standing::CutOff`, its leases not renewed within the renew deadline, or a commit
//! that failed for the connection's sake). The runtime then takes no work, tells every
//! task actor to stop its run within the time left before the leases can run out (a
//! write meanwhile is refused, and stops it at once), and starts none. Once the store
//! holds the database again, the runtime re-claims the tasks still leased to this node
//! and resumes them as after a restart; those another node took meanwhile stay there.

use std::time::Duration;

use tokio::sync::watch;

use super::{Inner, WeakRuntimeHandle};
use crate::actors::SupervisorMsg;
use crate::store::{Standing, UnfinishedTask};

/// Stops taking work, and tells every task actor to stop its run.
fn cut_off(runtime: &Inner, stop_within: Duration) {
    runtime.tasks.set_cut_off(true);
    runtime.resumer.abort();
    let supervisor = runtime.tasks.supervisor();
    let _ = supervisor.cast(SupervisorMsg::CutOff { stop_within });
}

/// Once every task actor stopped (or the time they had is over), re-claims what is
/// still this node's and resumes it, then takes work again. `false` when the store
/// could not be read (the caller tries again).
async fn regain(runtime: &Inner, stop_within: Duration) -> bool {
    let mut live = runtime.live.clone();
    let waited = stop_within + runtime.config.call_timeout();
    let supervisor = runtime.tasks.supervisor();
    if tokio::time::timeout(waited, live.wait_for(|n| n.live == 0))
        .await
        .is_err()
    {
        // Their writes are refused whatever they do, and the claim below fences
        // them; stopped now so that none holds a task the claim resumes.
        tracing::warn!("task actors still live after a cut-off; stopping them");
        let timeout = Some(runtime.config.call_timeout());
        supervisor.stop_children_and_wait(None, timeout).await;
    }
    let records = match runtime.tasks.store().reclaim().await {
        Ok(records) => records,
        Err(error) => {
            tracing::warn!(%error, "could not re-claim this node's tasks; trying again");
            return false;
        }
    };
    let _ = supervisor.cast(SupervisorMsg::Regained);
    let tasks = records.iter().map(UnfinishedTask::of).collect();
    match runtime.resumer.carry_out(tasks).await {
        Ok(report) => tracing::info!(
            resumed = report.resumed,
            failed = report.failed,
            waiting = report.waiting_for_input,
            idle = report.idle,
            "re-claimed this node's tasks after it held the database again"
        ),
        Err(error) => tracing::warn!(%error, "could not resume every re-claimed task"),
    }
    runtime.tasks.set_cut_off(false);
    true
}

/// Follows the store's standing while the runtime lives (until it shuts down). The
/// standing starts `Holding`, so any change to `Holding` means a cut-off came (and maybe
/// went within one change): whatever ran through it is stopped, then claimed anew.
pub(super) fn follow_standing(handle: WeakRuntimeHandle, mut standing: watch::Receiver<Standing>) {
    tokio::spawn(async move {
        // What runs had to stop within at the last cut-off.
        let mut stop_within = Duration::ZERO;
        while standing.changed().await.is_ok() {
            let mut backoff = Duration::from_millis(100);
            loop {
                let Some(handle) = handle.upgrade() else {
                    return;
                };
                if !handle.is_accepting() {
                    return;
                }
                let now = *standing.borrow_and_update();
                if let Standing::CutOff {
                    stop_within: within,
                } = now
                {
                    if !handle.is_cut_off() {
                        stop_within = within;
                        cut_off(&handle.inner, within);
                    }
                    break;
                }
                if !handle.is_cut_off() {
                    stop_within = handle.inner.config.cancel_grace();
                    cut_off(&handle.inner, stop_within);
                }
                if regain(&handle.inner, stop_within).await {
                    // Cut off again while it re-claimed: looked at at once.
                    match standing.has_changed() {
                        Ok(true) => continue,
                        Ok(false) => break,
                        Err(_) => return,
                    }
                }
                // The store could not be read: tried again after a while, or at once
                // when the standing changes.
                stop_within = Duration::ZERO;
                drop(handle);
                tokio::select! {
                    () = tokio::time::sleep(backoff) => {}
                    changed = standing.changed() => if changed.is_err() { return },
                }
                backoff = (backoff * 2).min(Duration::from_secs(5));
            }
        }
    });
}
