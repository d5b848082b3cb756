//! A skill of one's own, run by fundi's runtime inside a program: each task is
//! supervised and reports progress that the program follows as it comes. It needs the
//! runtime alone, with its in-memory store; for tasks that outlive the program, give the
//! builder a durable store (`fundi_store_sled::SledStore::open(dir, Durability::Sync)`,
//! or `fundi-postgres`'s), and a resumed run goes on from its last checkpoint.
//!
//! `cargo run -p example-embedded-skill -- "some words to count"`

use fundi_runtime::Access;
use fundi_runtime::{
    MemoryStore, Message, Part, Runtime, Skill, SkillCard, SkillContext, SkillError, SkillInput,
    SkillOutput, SubmitRequest, TaskEventKind, TaskState,
};
use futures::StreamExt;

/// Counts the words of the message, one progress note per word, and saves a checkpoint
/// with each: after a crash, a resumed run goes on from the last word it reported.
struct WordCount;

#[async_trait::async_trait]
impl Skill for WordCount {
    fn card(&self) -> SkillCard {
        SkillCard::new("word-count", "Counts the words of a text, one at a time")
            .example("the quick brown fox")
            .resumable()
    }

    async fn run(&self, input: SkillInput, ctx: SkillContext) -> Result<SkillOutput, SkillError> {
        let text = input.message.text();
        let words: Vec<&str> = text.split_whitespace().collect();
        let start = input
            .checkpoint
            .and_then(|c| c.as_u64())
            .map_or(0, |n| n as usize);
        for (n, word) in words.iter().enumerate().skip(start) {
            if ctx.is_cancelled() {
                return Err(SkillError::Canceled);
            }
            let done = (n + 1) as f64 / words.len() as f64;
            let checkpoint = serde_json::json!(n + 1);
            ctx.progress_with_checkpoint(done, format!("word {}: {word}", n + 1), checkpoint)
                .await?;
        }
        Ok(SkillOutput::text(format!("{} words", words.len())))
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let text = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "the quick brown fox".into());
    let runtime = Runtime::builder()
        .store(MemoryStore::new())
        .skill(WordCount)
        .start()
        .await?;
    let message = Message::user(vec![Part::text(text)]);
    let task = runtime.submit(SubmitRequest::new(message)).await?.task;
    let mut events = runtime.subscribe(&task.id, 0, Access::Any).await?;
    while let Some(event) = events.next().await {
        if let TaskEventKind::Status(status) = event?.kind {
            let note = status.message.map(|m| m.text()).unwrap_or_default();
            println!("{}: {note}", status.state.wire_name());
        }
    }
    let done = runtime.get(&task.id, None, Access::Any).await?;
    runtime.shutdown(std::time::Duration::from_secs(1)).await;
    match done.status.state {
        TaskState::Completed => Ok(()),
        state => Err(format!("the task ended {}", state.wire_name()).into()),
    }
}
