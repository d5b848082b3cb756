//! How an unfinished task rests when a commit brings it to rest (`Rest`), as its
//! position and its rest index entry say (see `resting`).

use fundi_runtime::approval::at_rest;
use fundi_runtime::model::TaskState;
use fundi_runtime::store::TaskRecord;

/// How an unfinished task rests, when its commit brings it to rest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rest {
    /// Waiting for a person: input, authorization or an approver.
    Waiting,
    /// Submitted with no approver to wait for: queued for a slot.
    Queued,
    /// Parked while its run waits idle, until this time (ms since the epoch).
    Idle { until_ms: i64 },
}

impl Rest {
    /// How a task whose last commit left it as `record` rests; `None`: it does not (it
    /// runs, or it ended).
    pub(crate) fn of(record: &TaskRecord) -> Option<Rest> {
        let status = &record.task.status;
        match (status.state, record.idle_until) {
            (state, _) if state.is_terminal() => None,
            _ if at_rest(status) => Some(Rest::Waiting),
            (_, Some(until)) => Some(Rest::Idle {
                until_ms: until.timestamp_millis(),
            }),
            (TaskState::Submitted, None) => Some(Rest::Queued),
            _ => None,
        }
    }
}
