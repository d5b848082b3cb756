//! Who answers a task's request for input: its owner, or, for a skill whose card lets
//! holders of its scope answer, any caller holding that scope; and the runtime records
//! each user message's sender, whatever a client wrote in its place.

use async_trait::async_trait;
use fundi_runtime::Access;
use fundi_runtime::testing::scripted::*;
use fundi_runtime::{
    Grants, Message, Part, Runtime, RuntimeError, RuntimeHandle, SENDER_KEY, Skill, SkillCard,
    SkillContext, SkillError, SkillInput, SkillOutput, SubmitRequest, TaskId, TaskState,
};
use serde_json::Value;

/// Asks once, and replies with who sent the first message and who answered.
struct Asker {
    id: &'static str,
    shared: bool,
}

#[async_trait]
impl Skill for Asker {
    fn card(&self) -> SkillCard {
        let card = SkillCard::new(self.id, "asks who approves").scope("demo:review");
        match self.shared {
            true => card.answered_by_scope(),
            false => card,
        }
    }

    async fn run(&self, input: SkillInput, ctx: SkillContext) -> Result<SkillOutput, SkillError> {
        let answer = ctx.request_input("who approves?").await?;
        Ok(SkillOutput::text(format!(
            "asked by {:?}, answered by {:?}",
            input.message.sender(),
            answer.sender()
        )))
    }
}

async fn node() -> RuntimeHandle {
    Runtime::builder()
        .skill(Asker {
            id: "shared",
            shared: true,
        })
        .skill(Asker {
            id: "private",
            shared: false,
        })
        .start()
        .await
        .unwrap()
}

fn from(user: &str, scopes: &[&str], message: Message, skill: Option<&str>) -> SubmitRequest {
    let mut request = SubmitRequest::new(message);
    request.owner = Some(user.into());
    request.grants = Grants::scopes(scopes.iter().copied());
    request.skill = skill.map(Into::into);
    request
}

fn answer(task: &TaskId, forged: bool) -> Message {
    let mut message = Message::user(vec![Part::text("approve")]);
    message.task_id = Some(task.clone());
    if forged {
        let mut metadata = serde_json::Map::new();
        metadata.insert(SENDER_KEY.into(), Value::from("alice"));
        message.metadata = Some(metadata);
    }
    message
}

async fn asked(rt: &RuntimeHandle, skill: &str) -> TaskId {
    let first = Message::user(vec![Part::text("please")]);
    let task = rt
        .submit(from("alice", &["demo:review"], first, Some(skill)))
        .await
        .unwrap()
        .task;
    wait_for_state(rt, &task.id, TaskState::InputRequired).await;
    task.id
}

#[tokio::test]
async fn a_holder_of_the_scope_answers_another_owners_task_when_the_card_allows_it() {
    let rt = node().await;
    let id = asked(&rt, "shared").await;
    // Without the scope, the task is not there for bob.
    let refused = rt
        .submit(from("bob", &["demo:other"], answer(&id, false), None))
        .await
        .unwrap_err();
    assert!(
        matches!(refused, RuntimeError::TaskNotFound(_)),
        "{refused:?}"
    );
    // Holding it, bob reads the task he is asked about; without it, he does not.
    let grants = |scopes: &[&str]| Grants::scopes(scopes.iter().copied());
    let read = rt
        .get_as(&id, None, Access::Owner("bob"), &grants(&["demo:review"]))
        .await;
    assert_eq!(read.unwrap().status.state, TaskState::InputRequired);
    let refused = rt
        .get_as(&id, None, Access::Owner("bob"), &grants(&["demo:other"]))
        .await;
    assert!(
        matches!(refused, Err(RuntimeError::TaskNotFound(_))),
        "{refused:?}"
    );
    // With it, bob answers, and his claim to be alice is replaced by who he is.
    rt.submit(from("bob", &["demo:review"], answer(&id, true), None))
        .await
        .unwrap();
    let done = wait_for_state(&rt, &id, TaskState::Completed).await;
    assert_eq!(
        status_text(&done),
        r#"asked by Some("alice"), answered by Some("bob")"#
    );
    let answered = done.history.iter().find(|m| m.text() == "approve").unwrap();
    assert_eq!(
        answered.sender(),
        Some("bob"),
        "the history shows the sender"
    );
}

#[tokio::test]
async fn another_owners_task_stays_unanswerable_when_the_card_does_not_allow_it() {
    let rt = node().await;
    let id = asked(&rt, "private").await;
    let refused = rt
        .submit(from("bob", &["demo:review"], answer(&id, false), None))
        .await
        .unwrap_err();
    assert!(
        matches!(refused, RuntimeError::TaskNotFound(_)),
        "{refused:?}"
    );
    let unreadable = rt
        .get_as(
            &id,
            None,
            Access::Owner("bob"),
            &Grants::scopes(["demo:review"]),
        )
        .await;
    assert!(matches!(unreadable, Err(RuntimeError::TaskNotFound(_))));
    rt.submit(from("alice", &["demo:review"], answer(&id, false), None))
        .await
        .unwrap();
    let done = wait_for_state(&rt, &id, TaskState::Completed).await;
    assert!(status_text(&done).ends_with(r#"answered by Some("alice")"#));
}
