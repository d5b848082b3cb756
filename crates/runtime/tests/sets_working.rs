//! A skill that says when work begins (`Skill::sets_working`): its task stays
//! `submitted` while its run waits, and moves to `working` at the skill's first status.

use fundi_runtime::Access;
use std::sync::Arc;

use async_trait::async_trait;
use fundi_runtime::testing::scripted::*;
use fundi_runtime::{
    Runtime, Skill, SkillCard, SkillContext, SkillError, SkillInput, SkillOutput, TaskState,
};
use serde_json::Value;
use tokio::sync::Semaphore;

/// Waits for a permit before it says it works.
#[derive(Clone)]
struct Picky(Arc<Semaphore>);

#[async_trait]
impl Skill for Picky {
    fn card(&self) -> SkillCard {
        SkillCard::new("picky", "starts when it says so")
    }

    async fn run(&self, _input: SkillInput, ctx: SkillContext) -> Result<SkillOutput, SkillError> {
        // Each run takes a permit for good, so that the next run waits for its own.
        self.0
            .acquire()
            .await
            .map_err(|e| SkillError::Failed(e.to_string()))?
            .forget();
        ctx.status("picked up").await?;
        Ok(SkillOutput::text("done"))
    }

    fn sets_working(&self) -> bool {
        true
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_task_stays_submitted_until_its_skill_says_it_works() {
    let gate = Arc::new(Semaphore::new(0));
    let rt = Runtime::builder()
        .skill(Picky(gate.clone()))
        .start()
        .await
        .unwrap();
    for told in ["at once", "followed"] {
        let task = match told {
            "at once" => submit(&rt, "go", Value::Null).await,
            _ => {
                let request = fundi_runtime::SubmitRequest::new(message("go", Value::Null));
                rt.submit(request).follow().await.unwrap().accepted.task
            }
        };
        assert_eq!(task.status.state, TaskState::Submitted, "{told}");
        let stored = rt.get(&task.id, None, Access::Any).await.unwrap();
        assert_eq!(
            stored.status.state,
            TaskState::Submitted,
            "{told}: its run waits"
        );
        gate.add_permits(1);
        let done = wait_for_state(&rt, &task.id, TaskState::Completed).await;
        let states: Vec<TaskState> = collect_events(&rt, &task.id, 0)
            .await
            .iter()
            .filter_map(|e| e.status().map(|s| s.state))
            .collect();
        assert_eq!(
            states,
            [
                TaskState::Submitted,
                TaskState::Working,
                TaskState::Completed
            ],
            "{told}"
        );
        assert_eq!(status_text(&done), "done");
    }
}
