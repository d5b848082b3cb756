use chrono::Utc;

use super::*;
use crate::model::{Artifact, ContextId, Part, TaskId, TaskStatus};

fn task_in(state: TaskState) -> Task {
    Task::new(TaskId::from("t-1"), ContextId::from("c-1"), state)
}

fn status(state: TaskState) -> TaskEventKind {
    TaskEventKind::Status(TaskStatus {
        state,
        message: None,
        timestamp: Utc::now(),
    })
}

fn artifact(id: &str, text: &str, append: bool, last_chunk: bool) -> TaskEventKind {
    TaskEventKind::Artifact {
        artifact: Artifact::new(id, "out", vec![Part::text(text)]),
        append,
        last_chunk,
    }
}

use TaskState::*;

/// The whole lifecycle, written out by hand (rows: from, columns: to, in the order of
/// `TaskState::ALL`: Submitted, Working, Completed, Failed, Canceled, InputRequired,
/// Rejected, AuthRequired).
const ALLOWED: [(TaskState, [bool; 8]); 8] = [
    (
        Submitted,
        [false, true, false, true, true, false, true, false],
    ),
    (Working, [false, true, true, true, true, true, true, true]),
    (Completed, [false; 8]),
    (Failed, [false; 8]),
    (Canceled, [false; 8]),
    (
        InputRequired,
        [false, true, false, true, true, false, true, false],
    ),
    (Rejected, [false; 8]),
    (
        AuthRequired,
        [false, true, false, true, true, false, true, false],
    ),
];

#[test]
fn every_status_transition_is_allowed_or_refused_as_the_table_says() {
    for (from, row) in ALLOWED {
        for (to, allowed) in TaskState::ALL.into_iter().zip(row) {
            let result = transition(&task_in(from), &status(to));
            match (allowed, result) {
                (true, Ok(next)) => assert_eq!(next.status.state, to, "{from} -> {to}"),
                (false, Err(TransitionError::Terminal { state })) => {
                    assert!(from.is_terminal(), "{from} -> {to}");
                    assert_eq!(state, from);
                }
                (false, Err(TransitionError::InvalidStatus { from: f, to: t })) => {
                    assert!(!from.is_terminal(), "{from} -> {to}");
                    assert_eq!((f, t), (from, to));
                }
                (allowed, result) => panic!("{from} -> {to}: allowed={allowed}, got {result:?}"),
            }
        }
    }
}

#[test]
fn terminal_tasks_refuse_every_kind_of_change() {
    for state in [Completed, Failed, Canceled, Rejected] {
        let task = task_in(state);
        for change in [
            artifact("a", "x", false, false),
            TaskEventKind::Message(Message::user(vec![Part::text("more")])),
            status(Working),
        ] {
            assert_eq!(
                transition(&task, &change),
                Err(TransitionError::Terminal { state })
            );
        }
    }
}

#[test]
fn artifacts_are_added_replaced_and_appended() {
    let task = task_in(Working);
    let task = transition(&task, &artifact("a", "one", false, false)).unwrap();
    let task = transition(&task, &artifact("a", "two", true, false)).unwrap();
    assert_eq!(task.artifacts.len(), 1);
    let texts: Vec<_> = task.artifacts[0]
        .parts
        .iter()
        .filter_map(Part::as_text)
        .collect();
    assert_eq!(texts, ["one", "two"]);

    let task = transition(&task, &artifact("a", "three", true, true)).unwrap();
    assert_eq!(task.artifacts[0].parts.len(), 3);
    assert_eq!(
        task.artifacts[0].metadata, None,
        "nothing internal leaks into the artifact"
    );

    // Without append, an existing id is replaced.
    let task = transition(&task, &artifact("a", "fresh", false, false)).unwrap();
    assert_eq!(task.artifacts[0].parts, vec![Part::text("fresh")]);

    let task = transition(&task, &artifact("b", "other", false, true)).unwrap();
    assert_eq!(task.artifacts.len(), 2);
}

#[test]
fn artifact_errors_name_the_problem() {
    let working = task_in(Working);
    assert_eq!(
        transition(&working, &artifact("nope", "x", true, false)),
        Err(TransitionError::UnknownArtifact {
            artifact_id: "nope".into()
        })
    );
    let empty = TaskEventKind::Artifact {
        artifact: Artifact::new("e", "empty", vec![]),
        append: false,
        last_chunk: false,
    };
    assert_eq!(
        transition(&working, &empty),
        Err(TransitionError::EmptyArtifact {
            artifact_id: "e".into()
        })
    );
    for state in [Submitted, InputRequired, AuthRequired] {
        assert_eq!(
            transition(&task_in(state), &artifact("a", "x", false, false)),
            Err(TransitionError::ArtifactWhileNotWorking { state })
        );
    }
}

#[test]
fn history_gets_user_messages_and_agent_turns_but_not_progress_notes() {
    let task = task_in(Working);
    let note = TaskEventKind::Status(TaskStatus {
        state: Working,
        message: Some(Message::agent(vec![Part::text("50%")])),
        timestamp: Utc::now(),
    });
    let task = transition(&task, &note).unwrap();
    assert!(task.history.is_empty());

    let prompt = TaskEventKind::Status(TaskStatus {
        state: InputRequired,
        message: Some(Message::agent(vec![Part::text("which date?")])),
        timestamp: Utc::now(),
    });
    let task = transition(&task, &prompt).unwrap();
    let reply = Message::user(vec![Part::text("monday")]);
    let task = transition(&task, &TaskEventKind::Message(reply)).unwrap();
    assert_eq!(task.history.len(), 2);
    for message in &task.history {
        assert_eq!(message.task_id.as_ref(), Some(&task.id));
        assert_eq!(message.context_id.as_ref(), Some(&task.context_id));
    }
    assert_eq!(task.history[1].text(), "monday");
}

#[test]
fn created_is_only_the_first_event() {
    let task = task_in(Submitted);
    assert_eq!(
        transition(&task, &TaskEventKind::Created(task.clone())),
        Err(TransitionError::AlreadyCreated)
    );
}

#[test]
fn a_refused_change_applied_in_place_leaves_the_task_as_it_was() {
    let mut working = transition(&task_in(Submitted), &status(Working)).unwrap();
    apply(&mut working, &artifact("a", "one", false, false)).unwrap();
    let mut empty = artifact("b", "x", false, false);
    if let TaskEventKind::Artifact { artifact, .. } = &mut empty {
        artifact.parts.clear();
    }
    let refused = [
        (working.clone(), status(Submitted)),
        (working.clone(), artifact("nope", "x", true, false)),
        (working.clone(), empty),
        (working.clone(), TaskEventKind::Created(working.clone())),
        (task_in(InputRequired), artifact("a", "x", false, false)),
        (task_in(Completed), status(Working)),
    ];
    for (mut task, change) in refused {
        let before = task.clone();
        assert!(
            apply(&mut task, &change).is_err(),
            "{change:?} was accepted"
        );
        assert_eq!(
            task, before,
            "{change:?} changed the task it was refused for"
        );
    }
    // And an accepted one changes it exactly as `transition` does.
    let change = artifact("a", "two", true, true);
    let expected = transition(&working, &change).unwrap();
    apply(&mut working, &change).unwrap();
    assert_eq!(working, expected);
}

/// A store rebuilds a task by replaying the changes committed after its snapshot: every
/// accepted change replays to the task `apply` made, along a whole life (artifacts
/// added, replaced and appended to, notes, a prompt, an answer, the end).
#[test]
fn replaying_accepted_changes_rebuilds_the_task_apply_made() {
    let agent = |state, text: &str| {
        TaskEventKind::Status(TaskStatus {
            state,
            message: Some(Message::agent(vec![Part::text(text)])),
            timestamp: Utc::now(),
        })
    };
    let changes = [
        status(Working),
        agent(Working, "10%"),
        artifact("a", "one", false, false),
        artifact("a", "two", true, false),
        artifact("b", "other", false, true),
        artifact("b", "replaced", false, true),
        agent(InputRequired, "which date?"),
        TaskEventKind::Message(Message::user(vec![Part::text("monday")])),
        status(Working),
        artifact("a", "three", true, true),
        agent(Completed, "done"),
    ];
    let mut applied = task_in(Submitted);
    let mut replayed = applied.clone();
    for change in &changes {
        apply(&mut applied, change).unwrap();
        replay(&mut replayed, change);
        assert_eq!(replayed, applied, "after {change:?}");
    }
    assert_eq!(applied.artifacts[0].parts.len(), 3);
    assert_eq!(applied.history.len(), 3);
}
