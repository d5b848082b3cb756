//! The task model's JSON against `spec/a2a.proto` (ProtoJSON), and against the official
//! `a2a-lf` types: what we emit they read, what they emit we read, and the places where
//! that crate deviates from ProtoJSON (the reason the runtime owns these types).

use std::collections::BTreeSet;

use fundi_runtime::model::{TaskArtifactUpdateEvent, TaskStatusUpdateEvent};
use fundi_runtime::testing::ProtoSchema;
use fundi_runtime::{
    Artifact, ContextId, Message, Part, PartContent, Role, Task, TaskId, TaskState, TaskStatus,
};
use serde_json::{Value, json};

fn proto() -> ProtoSchema {
    ProtoSchema::load()
}

fn field_names(proto: &ProtoSchema, message: &str) -> BTreeSet<String> {
    proto.messages[message].keys().cloned().collect()
}

fn keys(value: &Value) -> BTreeSet<String> {
    value.as_object().expect("object").keys().cloned().collect()
}

fn full_message() -> Message {
    let mut m = Message::user(vec![Part::text("hi")]);
    m.context_id = Some(ContextId::from("c"));
    m.task_id = Some(TaskId::from("t"));
    m.metadata = json!({"k": 1}).as_object().cloned();
    m.extensions = vec!["urn:x".into()];
    m.reference_task_ids = vec![TaskId::from("t0")];
    m
}

fn full_artifact() -> Artifact {
    let mut a = Artifact::new("a", "name", vec![Part::text("x")]);
    a.description = Some("d".into());
    a.metadata = json!({"k": 1}).as_object().cloned();
    a.extensions = vec!["urn:x".into()];
    a
}

fn full_status() -> TaskStatus {
    TaskStatus {
        state: TaskState::InputRequired,
        message: Some(Message::agent(vec![Part::text("?")])),
        timestamp: "2026-05-01T10:00:03.120Z".parse().unwrap(),
    }
}

fn full_task() -> Task {
    Task {
        id: TaskId::from("t"),
        context_id: ContextId::from("c"),
        status: full_status(),
        artifacts: vec![full_artifact()],
        history: vec![full_message()],
        metadata: json!({"k": 1}).as_object().cloned(),
    }
}

#[test]
fn fully_populated_objects_use_exactly_the_proto_field_names() {
    let proto = proto();
    let cases = [
        ("Task", serde_json::to_value(full_task()).unwrap()),
        ("TaskStatus", serde_json::to_value(full_status()).unwrap()),
        ("Message", serde_json::to_value(full_message()).unwrap()),
        ("Artifact", serde_json::to_value(full_artifact()).unwrap()),
        (
            "TaskStatusUpdateEvent",
            serde_json::to_value(TaskStatusUpdateEvent {
                task_id: TaskId::from("t"),
                context_id: ContextId::from("c"),
                status: full_status(),
                metadata: json!({"k": 1}).as_object().cloned(),
            })
            .unwrap(),
        ),
        (
            "TaskArtifactUpdateEvent",
            serde_json::to_value(TaskArtifactUpdateEvent {
                task_id: TaskId::from("t"),
                context_id: ContextId::from("c"),
                artifact: full_artifact(),
                append: true,
                last_chunk: true,
                metadata: json!({"k": 1}).as_object().cloned(),
            })
            .unwrap(),
        ),
    ];
    for (name, json) in cases {
        assert_eq!(keys(&json), field_names(&proto, name), "{name}: {json}");
        proto.check(name, &json).unwrap();
    }
}

#[test]
fn every_part_kind_uses_proto_field_names_with_one_content_member() {
    let proto = proto();
    let fields = &field_names(&proto, "Part");
    for (content, key) in [
        (PartContent::Text("t".into()), "text"),
        (PartContent::Raw(vec![1, 2, 250]), "raw"),
        (PartContent::Url("https://x/y".into()), "url"),
        (PartContent::Data(json!({"a": [1]})), "data"),
    ] {
        let part = Part {
            content,
            filename: Some("f".into()),
            media_type: Some("text/plain".into()),
            metadata: json!({"k": 1}).as_object().cloned(),
        };
        let json = serde_json::to_value(&part).unwrap();
        let expected: BTreeSet<String> = [key, "filename", "mediaType", "metadata"]
            .map(String::from)
            .into();
        assert_eq!(keys(&json), expected);
        assert!(keys(&json).is_subset(fields));
        proto.check("Part", &json).unwrap();
        assert_eq!(serde_json::from_value::<Part>(json).unwrap(), part);
    }
    assert_eq!(
        serde_json::to_value(Part::raw(vec![0xfb, 0xff])).unwrap()["raw"],
        "+/8="
    );
}

#[test]
fn enum_values_are_the_proto_value_names_and_numbers() {
    let proto = proto();
    let names: Vec<String> = TaskState::ALL
        .iter()
        .map(|s| s.wire_name().to_owned())
        .collect();
    assert_eq!(
        names,
        proto.enums["TaskState"][1..],
        "proto order after UNSPECIFIED"
    );
    for (number, state) in (1u64..).zip(TaskState::ALL) {
        assert_eq!(
            serde_json::from_value::<TaskState>(json!(number)).unwrap(),
            state
        );
        assert_eq!(u64::from(state.number()), number);
    }
    assert_eq!(
        proto.enums["Role"],
        ["ROLE_UNSPECIFIED", "ROLE_USER", "ROLE_AGENT"]
    );
    assert_eq!(serde_json::to_value(Role::Agent).unwrap(), "ROLE_AGENT");
    for bad in [
        json!("TASK_STATE_UNSPECIFIED"),
        json!("INVALID_STATUS"),
        json!(0),
        json!(9),
    ] {
        let err = serde_json::from_value::<TaskState>(bad.clone()).unwrap_err();
        assert!(err.to_string().contains("TaskState"), "{bad}: {err}");
    }
}

#[test]
fn input_accepts_snake_case_numbers_offsets_and_url_safe_base64() {
    let task: Task = serde_json::from_value(json!({
        "id": "t", "context_id": "c",
        "status": {"state": 2, "timestamp": "2026-03-13T10:00:00.123456+02:00"},
        "history": [{"message_id": "m", "role": 1, "task_id": "t", "context_id": "c",
                     "parts": [{"raw": "-_8", "media_type": "image/png"}],
                     "reference_task_ids": ["t0"], "someUnknownField": true}],
        "artifacts": [{"artifact_id": "a", "parts": [{"data": null, "text": "x"}]}]
    }))
    .unwrap();
    assert_eq!(task.context_id, ContextId::from("c"));
    assert_eq!(task.status.state, TaskState::Working);
    assert_eq!(
        serde_json::to_value(&task.status).unwrap()["timestamp"],
        "2026-03-13T08:00:00.123Z"
    );
    let message = &task.history[0];
    assert_eq!(
        (message.message_id.as_str(), message.role),
        ("m", Role::User)
    );
    assert_eq!(message.parts[0].content, PartContent::Raw(vec![0xfb, 0xff]));
    assert_eq!(message.parts[0].media_type.as_deref(), Some("image/png"));
    assert_eq!(message.reference_task_ids, [TaskId::from("t0")]);
    // `null` means absent, so the artifact part is a text part.
    assert_eq!(task.artifacts[0].parts[0], Part::text("x"));
}

#[test]
fn parts_with_no_or_several_content_members_are_refused_by_name() {
    for (bad, says) in [
        (
            json!({"text": "a", "url": "https://x"}),
            "found more than one",
        ),
        (json!({"mediaType": "text/plain"}), "found none"),
        (json!({"file": {"uri": "https://x"}}), "found none"),
        (json!({"raw": "not base64!"}), "base64"),
        (json!({"text": 5}), "text must be a string"),
    ] {
        let err = serde_json::from_value::<Part>(bad.clone())
            .unwrap_err()
            .to_string();
        assert!(err.contains(says), "{bad}: {err}");
    }
}

#[test]
fn the_official_types_read_what_we_write_and_we_read_what_they_write() {
    let ours = full_task();
    let json = serde_json::to_value(&ours).unwrap();
    let theirs: a2a::Task = serde_json::from_value(json.clone()).expect("a2a-lf reads ours");
    let back = serde_json::to_value(&theirs).unwrap();
    assert_eq!(back, json, "a2a-lf writes back exactly what we wrote");
    assert_eq!(serde_json::from_value::<Task>(back).unwrap(), ours);
}

/// The deviations of `a2a-lf` 0.4.2 from ProtoJSON that made the runtime own its types.
/// If one of these starts failing, the crate has caught up and the types can be
/// reconsidered.
#[test]
fn a2a_lf_deviations_that_justify_owning_the_model() {
    let snake = json!({"message_id": "m", "role": "ROLE_USER", "parts": [{"text": "x"}]});
    assert!(serde_json::from_value::<a2a::Message>(snake.clone()).is_err());
    assert!(serde_json::from_value::<Message>(snake).is_ok());

    let numeric = json!({"state": 2});
    assert!(serde_json::from_value::<a2a::TaskStatus>(numeric).is_err());

    let two_members = json!({"text": "a", "url": "https://x"});
    assert!(serde_json::from_value::<a2a::Part>(two_members.clone()).is_ok());
    assert!(serde_json::from_value::<Part>(two_members).is_err());
}

/// The checker the gateway's golden tests rely on must itself catch what is wrong.
#[test]
fn the_proto_checker_catches_wrong_shapes() {
    let proto = proto();
    let task = serde_json::to_value(full_task()).unwrap();
    proto.check("Task", &task).unwrap();
    let mut extra = task.clone();
    extra["kind"] = json!("task");
    assert!(
        proto
            .check("Task", &extra)
            .unwrap_err()
            .contains("\"kind\"")
    );
    let mut missing = task.clone();
    missing.as_object_mut().unwrap().remove("status");
    assert!(
        proto
            .check("Task", &missing)
            .unwrap_err()
            .contains("status")
    );
    let mut nested = task.clone();
    nested["history"][0]["role"] = json!("user");
    assert!(proto.check("Task", &nested).unwrap_err().contains("Role"));
    let mut unspecified = task;
    unspecified["status"]["state"] = json!("TASK_STATE_UNSPECIFIED");
    assert!(proto.check("Task", &unspecified).is_err());
    let two = json!({"task": {}, "message": {}});
    assert!(proto.check("StreamResponse", &two).is_err());
}
