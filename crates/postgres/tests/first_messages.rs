//! A new task's first message claimed in the task's own commit, on a real PostgreSQL
//! server: a first message sent again within the window writes nothing and names the
//! task it created, alone or among other commits of one statement, on one node or two
//! at once; a refused task that took a run slot gives it back.

use std::time::Duration;

use futures::future::join_all;

use fundi_postgres::testing::{drop_schemas, fresh_schema, test_config, test_url};
use fundi_postgres::{LeaseConfig, PostgresConfig, PostgresStore};
use std::sync::Arc;

use async_trait::async_trait;
use fundi_runtime::store::{Creation, TaskRecord, TaskStore};
use fundi_runtime::testing::store_contract::{created, record};
use fundi_runtime::{
    Message, Part, Runtime, RuntimeHandle, Skill, SkillCard, SkillContext, SkillError, SkillInput,
    SkillOutput, SubmitRequest, TaskId, TaskState,
};

/// The window of these tests.
const WINDOW: Option<Duration> = Some(Duration::from_secs(60));

async fn open(config: &PostgresConfig) -> PostgresStore {
    PostgresStore::open(config)
        .await
        .unwrap_or_else(|e| panic!("PostgreSQL at {}: {e}", test_url()))
}

/// The store on `schema` as `node` of several.
async fn open_as(node: &str, schema: &str) -> PostgresStore {
    let mut config = test_config(schema);
    config.lease = Some(LeaseConfig::new(node, Duration::from_secs(10)));
    open(&config).await
}

/// A new task `id` of ann's, created at `at_ms`.
fn new_task(id: &str, at_ms: i64) -> TaskRecord {
    record(id, "ctx", TaskState::Submitted, at_ms, "ann")
}

/// `first`'s first message sent again: task `id`, created at `at_ms`.
fn sent_again(first: &TaskRecord, id: &str, at_ms: i64) -> TaskRecord {
    let mut again = new_task(id, at_ms);
    again.task.history = first.task.history.clone();
    again
}

/// Each of `tasks` created at once (one statement, as they wait together), taking one
/// of `run_slot` slots when given, each with its own window.
async fn create_at_once(
    store: &PostgresStore,
    tasks: &[(TaskRecord, Option<Duration>)],
    run_slot: Option<usize>,
) -> Vec<Creation> {
    let creates = tasks.iter().map(|(task, window)| async move {
        let events = [created(task)];
        store.create_task(task, &events, run_slot, *window).await
    });
    let answers = join_all(creates).await;
    answers.into_iter().map(Result::unwrap).collect()
}

fn at(ms: i64) -> chrono::DateTime<chrono::Utc> {
    chrono::TimeZone::timestamp_millis_opt(&chrono::Utc, ms).unwrap()
}

#[tokio::test]
async fn first_messages_sent_again_among_other_commits_are_refused_each_on_its_own() {
    let schema = fresh_schema();
    let store = open(&test_config(&schema)).await;
    let firsts: Vec<TaskRecord> = (0..4).map(|n| new_task(&format!("f{n}"), 1_000)).collect();
    for first in &firsts {
        let events = [created(first)];
        let written = store.create_task(first, &events, None, WINDOW).await;
        assert_eq!(written.unwrap(), Creation::Written(None));
    }
    // Each sent again within the window, and with none; an old one sent again after
    // it; new ones.
    let mut tasks: Vec<(TaskRecord, Option<Duration>)> = Vec::new();
    for (n, first) in firsts.iter().enumerate().take(3) {
        tasks.push((sent_again(first, &format!("again{n}"), 2_000), WINDOW));
    }
    tasks.push((sent_again(&firsts[3], "later", 62_000), WINDOW));
    tasks.push((sent_again(&firsts[0], "unchecked", 3_000), None));
    for n in 0..3 {
        tasks.push((new_task(&format!("new{n}"), 2_000), WINDOW));
    }
    let answers = create_at_once(&store, &tasks, None).await;
    assert!(store.most_commits_sent_at_once() > 1);

    for (n, ((task, _), answer)) in tasks.iter().zip(answers).enumerate() {
        let stored = store.get(task.id()).await.unwrap();
        match n {
            0..3 => {
                let first = firsts[n].id().clone();
                assert_eq!(answer, Creation::Taken(first, at(1_000)), "{}", task.id());
                assert_eq!(stored, None, "{}: nothing written", task.id());
            }
            _ => {
                assert_eq!(answer, Creation::Written(None), "{}", task.id());
                assert_eq!(stored.as_ref(), Some(task), "{}", task.id());
            }
        }
    }
    let message = |task: &TaskRecord| task.task.history[0].message_id.clone();
    let named = |task: &TaskRecord| {
        let store = &store;
        let message = message(task);
        async move { store.created_by(Some("ann"), &message).await.unwrap() }
    };
    assert_eq!(
        named(&firsts[3]).await,
        Some((TaskId::from("later"), at(62_000)))
    );
    assert_eq!(
        named(&firsts[0]).await,
        Some((TaskId::from("unchecked"), at(3_000)))
    );
    assert_eq!(
        named(&firsts[1]).await,
        Some((firsts[1].id().clone(), at(1_000)))
    );
    drop_schemas(&[schema]).await;
}

#[tokio::test]
async fn a_refused_task_that_took_a_run_slot_gives_it_back() {
    let schema = fresh_schema();
    let store = open_as("node-a", &schema).await;
    let first = new_task("first", 1_000);
    let events = [created(&first)];
    let written = store.create_task(&first, &events, None, WINDOW).await;
    assert_eq!(written.unwrap(), Creation::Written(None));
    // Alone, then among others in one statement.
    let again = sent_again(&first, "again", 2_000);
    let events = [created(&again)];
    let alone = store.create_task(&again, &events, Some(4), WINDOW).await;
    assert_eq!(
        alone.unwrap(),
        Creation::Taken(first.id().clone(), at(1_000))
    );
    let tasks = vec![
        (sent_again(&first, "again1", 2_000), WINDOW),
        (new_task("new", 2_000), WINDOW),
        (sent_again(&first, "again2", 2_000), WINDOW),
    ];
    let answers = create_at_once(&store, &tasks, Some(4)).await;
    assert!(matches!(answers[0], Creation::Taken(..)), "{answers:?}");
    assert!(
        matches!(answers[1], Creation::Written(Some(_))),
        "{answers:?}"
    );
    assert!(matches!(answers[2], Creation::Taken(..)), "{answers:?}");

    let client = store.testing_client().await;
    let held: i64 = client
        .query_one(
            &format!("SELECT count(*) FROM {schema}.run_slots WHERE node IS NOT NULL"),
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(held, 1, "only the new task's slot is held: {answers:?}");
    drop_schemas(&[schema]).await;
}

#[tokio::test]
async fn a_first_message_sent_to_two_nodes_at_once_creates_one_task() {
    let schema = fresh_schema();
    let a = open_as("node-a", &schema).await;
    let b = open_as("node-b", &schema).await;
    for n in 0..20 {
        let on_a = new_task(&format!("a{n}"), 1_000 + n);
        let on_b = sent_again(&on_a, &format!("b{n}"), 1_000 + n);
        let (events_a, events_b) = ([created(&on_a)], [created(&on_b)]);
        let (from_a, from_b) = tokio::join!(
            a.create_task(&on_a, &events_a, None, WINDOW),
            b.create_task(&on_b, &events_b, None, WINDOW),
        );
        let answers = [(&on_a, from_a.unwrap()), (&on_b, from_b.unwrap())];
        let written: Vec<&TaskId> = answers
            .iter()
            .filter(|(_, answer)| *answer == Creation::Written(None))
            .map(|(task, _)| task.id())
            .collect();
        assert_eq!(written.len(), 1, "message {n}: {answers:?}");
        for (task, answer) in &answers {
            match answer {
                Creation::Written(_) => {
                    assert!(a.get(task.id()).await.unwrap().is_some());
                }
                Creation::Taken(by, _) => {
                    assert_eq!(by, written[0], "message {n}: names the task written");
                    assert!(a.get(task.id()).await.unwrap().is_none());
                }
                Creation::NoSlot => panic!("no slot was asked for"),
            }
        }
    }
    drop_schemas(&[schema]).await;
}

/// Answers at once.
struct Answers;

#[async_trait]
impl Skill for Answers {
    fn card(&self) -> SkillCard {
        SkillCard::new("answers", "Answers at once")
    }

    async fn run(&self, _input: SkillInput, _ctx: SkillContext) -> Result<SkillOutput, SkillError> {
        Ok(SkillOutput::default())
    }
}

/// A runtime on `schema` as `node` of several, with `Answers`.
async fn runtime_as(node: &str, schema: &str) -> RuntimeHandle {
    Runtime::builder()
        .shared_store(Arc::new(open_as(node, schema).await))
        .skill(Answers)
        .start()
        .await
        .unwrap()
}

#[tokio::test]
async fn a_message_sent_to_two_runtimes_at_once_is_one_task() {
    let schema = fresh_schema();
    let (a, b) = (
        runtime_as("node-a", &schema).await,
        runtime_as("node-b", &schema).await,
    );
    for n in 0..10 {
        let message = Message::user(vec![Part::text(format!("message {n}"))]);
        let mut request = SubmitRequest::new(message);
        request.owner = Some("ann".into());
        let (on_a, on_b) = tokio::join!(a.submit(request.clone()), b.submit(request));
        let (on_a, on_b) = (on_a.unwrap(), on_b.unwrap());
        assert_eq!(on_a.task.id, on_b.task.id, "message {n}: one task");
    }
    let store = open(&test_config(&schema)).await;
    let client = store.testing_client().await;
    let tasks: i64 = client
        .query_one(&format!("SELECT count(*) FROM {schema}.tasks"), &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(tasks, 10, "a task per message");
    a.shutdown(Duration::from_secs(1)).await;
    b.shutdown(Duration::from_secs(1)).await;
    drop_schemas(&[schema]).await;
}
