use chrono::Utc;
use fundi_runtime::testing::store_contract::{created, record, with_status};
use fundi_runtime::{TaskState, TaskStatus};

use super::{SNAPSHOT_EVERY, Written};

fn status(state: TaskState) -> TaskStatus {
    TaskStatus {
        state,
        message: None,
        timestamp: Utc::now(),
    }
}

#[test]
fn a_new_task_is_written_whole() {
    let first = record("t", "c", TaskState::Submitted, 1, "ann");
    assert_eq!(Written::of(&first, 0, &[created(&first)]), Written::Whole);
}

#[test]
fn a_working_task_writes_a_tail_after_its_last_event() {
    let first = record("t", "c", TaskState::Submitted, 1, "ann");
    let (next, events) = with_status(&first, status(TaskState::Working));
    assert_eq!(Written::of(&next, 1, &events), Written::Tail { after: 1 });
    // A commit with no events (a checkpoint alone) starts its tail after its last seq.
    let mut quiet = next.clone();
    quiet.version += 1;
    assert_eq!(Written::of(&quiet, 2, &[]), Written::Tail { after: 2 });
}

#[test]
fn an_end_a_rest_or_a_gap_is_written_whole() {
    let first = record("t", "c", TaskState::Working, 1, "ann");
    for state in [
        TaskState::Completed,
        TaskState::Failed,
        TaskState::InputRequired,
        TaskState::AuthRequired,
    ] {
        let (next, events) = with_status(&first, status(state));
        assert_eq!(Written::of(&next, 1, &events), Written::Whole, "{state:?}");
    }
    // A version that does not follow the one read, or events that do not end at the
    // record's last seq.
    let (next, events) = with_status(&first, status(TaskState::Working));
    assert_eq!(Written::of(&next, 2, &events), Written::Whole);
    let mut ahead = next.clone();
    ahead.last_seq += 1;
    assert_eq!(Written::of(&ahead, 1, &events), Written::Whole);
    // A commit with no events that parks the task idle: its wait's end is the record's.
    let mut parked = next.clone();
    parked.version += 1;
    parked.idle_until = Some(Utc::now());
    assert_eq!(Written::of(&parked, 2, &[]), Written::Whole);
}

#[test]
fn every_snapshot_every_th_version_is_written_whole() {
    let mut task = record("t", "c", TaskState::Working, 1, "ann");
    let mut whole = Vec::new();
    for _ in 0..2 * SNAPSHOT_EVERY {
        let read = task.version;
        let (next, events) = with_status(&task, status(TaskState::Working));
        if Written::of(&next, read, &events) == Written::Whole {
            whole.push(next.version);
        }
        task = next;
    }
    assert_eq!(whole, [SNAPSHOT_EVERY, 2 * SNAPSHOT_EVERY]);
}
