//! Runs handed between two runtimes on one schema with leases: a dead node's task taken
//! over and finished from its checkpoint; a node cut off from the database stopping its
//! run before the other may take it; a node back from a cut-off resuming its own task; a
//! database too slow to answer (its statement timeout hit) giving errors to retry, and
//! the run going on once it answers again.
//! Fails, never skips, when PostgreSQL is missing.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use fundi_postgres::testing::{drop_schemas, fresh_schema, test_config, test_url};
use fundi_postgres::{LeaseConfig, PostgresStore};
use fundi_runtime::store::StoreError;
use fundi_runtime::{
    Access, Message, Part, Runtime, RuntimeError, RuntimeHandle, Skill, SkillCard, SkillContext,
    SkillError, SkillInput, SkillOutput, SubmitRequest, TaskId, TaskState,
};
use serde_json::json;

const DEADLINE: Duration = Duration::from_secs(30);

async fn open(schema: &str, node: &str, ttl_ms: u64) -> PostgresStore {
    open_with(schema, node, ttl_ms, None).await
}

async fn open_with(
    schema: &str,
    node: &str,
    ttl_ms: u64,
    statement_timeout: Option<Duration>,
) -> PostgresStore {
    let mut config = test_config(schema);
    config.lease = Some(LeaseConfig::new(node, Duration::from_millis(ttl_ms)));
    config.statement_timeout = statement_timeout;
    let deadline = Instant::now() + DEADLINE;
    loop {
        match PostgresStore::open(&config).await {
            Ok(store) => return store,
            // A short statement timeout can cut the schema's creation while other
            // tests' creations hold the catalog; it is rolled back whole, and the open
            // is tried again as its error says.
            Err(StoreError::Unreachable { .. })
                if statement_timeout.is_some() && Instant::now() < deadline =>
            {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => panic!("PostgreSQL at {}: {e}", test_url()),
        }
    }
}

/// A resumable skill counting to `steps`, a checkpoint per step, logging which node
/// ran each step (the skill's side of "no task runs on two nodes at once").
struct Counter {
    node: &'static str,
    steps: u64,
    log: Arc<Mutex<Vec<(&'static str, u64)>>>,
}

#[async_trait]
impl Skill for Counter {
    fn card(&self) -> SkillCard {
        SkillCard::new("counter", "Counts, a checkpoint per step").resumable()
    }

    async fn run(&self, _input: SkillInput, ctx: SkillContext) -> Result<SkillOutput, SkillError> {
        let from = ctx.last_checkpoint().and_then(|c| c.as_u64()).unwrap_or(0);
        for step in from + 1..=self.steps {
            self.log.lock().unwrap().push((self.node, step));
            // The step's work.
            tokio::time::sleep(Duration::from_millis(40)).await;
            let fraction = step as f64 / self.steps as f64;
            ctx.progress_with_checkpoint(fraction, format!("step {step}"), json!(step))
                .await?;
        }
        Ok(SkillOutput {
            message: Some(Message::agent(vec![Part::text("counted")])),
            artifacts: Vec::new(),
        })
    }
}

type Log = Arc<Mutex<Vec<(&'static str, u64)>>>;

/// Steps of a counting task: longer than a lease (2 s), so that the lease runs out
/// while the task works.
const STEPS: u64 = 150;

async fn node(schema: &str, name: &'static str, log: &Log) -> (RuntimeHandle, Arc<PostgresStore>) {
    runtime_on(Arc::new(open(schema, name, 2_000).await), name, log).await
}

async fn runtime_on(
    store: Arc<PostgresStore>,
    name: &'static str,
    log: &Log,
) -> (RuntimeHandle, Arc<PostgresStore>) {
    let runtime = Runtime::builder()
        .shared_store(store.clone())
        .skill(Counter {
            node: name,
            steps: STEPS,
            log: log.clone(),
        })
        .start()
        .await
        .unwrap();
    (runtime, store)
}

async fn submit(runtime: &RuntimeHandle) -> TaskId {
    runtime
        .submit(SubmitRequest::new(Message::user(vec![Part::text("count")])))
        .await
        .unwrap()
        .task
        .id
}

/// Waits until `count` steps of `node` are logged.
async fn steps_of(log: &Log, node: &str, count: usize) {
    let deadline = Instant::now() + DEADLINE;
    while log
        .lock()
        .unwrap()
        .iter()
        .filter(|(n, _)| *n == node)
        .count()
        < count
    {
        assert!(Instant::now() < deadline, "{node} never made {count} steps");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn completed(runtime: &RuntimeHandle, id: &TaskId) {
    let deadline = Instant::now() + DEADLINE;
    loop {
        let task = runtime.get(id, None, Access::Any).await.unwrap();
        if task.status.state.is_terminal() {
            assert_eq!(task.status.state, TaskState::Completed, "{:?}", task.status);
            return;
        }
        assert!(
            Instant::now() < deadline,
            "never finished: {:?}",
            task.status
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The steps each node ran, in order, and checks that they hand over once: node `a`
/// first, then `b` from where `a`'s last stored checkpoint left it, to the end.
fn handed_over_once(log: &Log, steps: u64) -> (Vec<u64>, Vec<u64>) {
    let log = log.lock().unwrap().clone();
    let first_b = log.iter().position(|(n, _)| *n == "node-b").expect("b ran");
    assert!(
        log[first_b..].iter().all(|(n, _)| *n == "node-b"),
        "a ran after b took over: {log:?}"
    );
    let a: Vec<u64> = log[..first_b].iter().map(|(_, s)| *s).collect();
    let b: Vec<u64> = log[first_b..].iter().map(|(_, s)| *s).collect();
    assert_eq!(a, (1..=a.len() as u64).collect::<Vec<_>>(), "{log:?}");
    assert_eq!(b, (b[0]..=steps).collect::<Vec<_>>(), "{log:?}");
    // Resumed from the last checkpoint: the step in flight may run again, no other.
    assert!(
        b[0] == a.len() as u64 || b[0] == a.len() as u64 + 1,
        "{log:?}"
    );
    (a, b)
}

/// Two nodes on a fresh schema, node a five steps into a counting task.
struct TwoNodes {
    schema: String,
    log: Log,
    a: RuntimeHandle,
    store_a: Arc<PostgresStore>,
    b: RuntimeHandle,
    id: TaskId,
}

async fn two_nodes_a_counting() -> TwoNodes {
    let schema = fresh_schema();
    let log: Log = Arc::default();
    let (a, store_a) = node(&schema, "node-a", &log).await;
    let (b, _) = node(&schema, "node-b", &log).await;
    let id = submit(&a).await;
    steps_of(&log, "node-a", 5).await;
    TwoNodes {
        schema,
        log,
        a,
        store_a,
        b,
        id,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_nodes_task_is_taken_over_and_finished_from_its_checkpoint() {
    let nodes = two_nodes_a_counting().await;
    // Node a dies: its run stops, nothing more is written, its leases run out.
    nodes.store_a.pause_lease_renewal();
    nodes.a.shutdown(Duration::ZERO).await;
    completed(&nodes.b, &nodes.id).await;
    handed_over_once(&nodes.log, STEPS);
    drop_schemas(&[nodes.schema]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_cut_off_from_the_database_stops_its_run_before_another_takes_it() {
    let nodes = two_nodes_a_counting().await;
    // Node a cannot renew but keeps running: at its renew deadline it cuts itself off
    // (its run stops, it takes no work), before its lease runs out and b takes over.
    nodes.store_a.pause_lease_renewal();
    let deadline = Instant::now() + DEADLINE;
    while !nodes.a.is_cut_off() {
        assert!(Instant::now() < deadline, "node a never cut itself off");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let refused = nodes
        .a
        .submit(SubmitRequest::new(Message::user(vec![Part::text("x")])));
    assert!(
        matches!(refused.await, Err(RuntimeError::Store(StoreError::CutOff))),
        "a node cut off takes no work"
    );
    completed(&nodes.b, &nodes.id).await;
    // No step of a's after b started: a stopped first.
    handed_over_once(&nodes.log, STEPS);
    let stored = nodes.b.get(&nodes.id, None, Access::Any).await.unwrap();
    assert_eq!(stored.status.state, TaskState::Completed);
    nodes.a.shutdown(Duration::ZERO).await;
    drop_schemas(&[nodes.schema]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_back_from_a_cut_off_resumes_its_own_task_from_its_checkpoint() {
    let schema = fresh_schema();
    let log: Log = Arc::default();
    let (a, store_a) = node(&schema, "node-a", &log).await;
    let id = submit(&a).await;
    steps_of(&log, "node-a", 5).await;
    store_a.pause_lease_renewal();
    let deadline = Instant::now() + DEADLINE;
    while !a.is_cut_off() {
        assert!(Instant::now() < deadline, "node a never cut itself off");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let stopped_at = log.lock().unwrap().len();
    // Back: the task is still a's, claimed anew and resumed from its checkpoint.
    store_a.resume_lease_renewal();
    completed(&a, &id).await;
    assert!(!a.is_cut_off());
    let steps: Vec<u64> = log.lock().unwrap().iter().map(|(_, s)| *s).collect();
    let resumed = &steps[stopped_at..];
    assert_eq!(resumed.last(), Some(&STEPS), "{steps:?}");
    // The step in flight at the cut-off ran again, no other.
    assert!(
        resumed[0] == steps[stopped_at - 1] || resumed[0] == steps[stopped_at - 1] + 1,
        "{steps:?}"
    );
    a.shutdown(Duration::ZERO).await;
    drop_schemas(&[schema]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_too_slow_to_answer_gives_errors_to_retry_and_the_run_goes_on_after() {
    let schema = fresh_schema();
    let log: Log = Arc::default();
    let store = open_with(&schema, "node-a", 2_000, Some(Duration::from_millis(200))).await;
    let (a, _store) = runtime_on(Arc::new(store), "node-a", &log).await;
    let id = submit(&a).await;
    steps_of(&log, "node-a", 3).await;

    // Another session holds the tasks table: every statement on it waits until the
    // statement timeout cancels it.
    let (locker, connection) = tokio_postgres::connect(&test_url(), tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    locker
        .batch_execute(&format!(
            "BEGIN; LOCK TABLE {schema}.tasks IN ACCESS EXCLUSIVE MODE"
        ))
        .await
        .unwrap();
    // A read gets an error the caller may retry; the run's next commit cannot be
    // stored, so the node stops its run and holds its work until the database answers.
    let deadline = Instant::now() + DEADLINE;
    loop {
        match a.get(&id, None, Access::Any).await {
            Err(RuntimeError::Store(StoreError::Unreachable { what, .. })) => {
                assert!(what.contains("statement timeout"), "{what}");
                break;
            }
            other => assert!(Instant::now() < deadline, "never refused: {other:?}"),
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    while !a.is_cut_off() {
        assert!(Instant::now() < deadline, "the node never stopped its run");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    locker.batch_execute("COMMIT").await.unwrap();

    // Answering again: the task goes on from its checkpoint to its end, nothing lost,
    // nothing stuck, each step in order (the one in flight, at most, again).
    completed(&a, &id).await;
    assert!(!a.is_cut_off());
    let steps: Vec<u64> = log.lock().unwrap().iter().map(|(_, s)| *s).collect();
    assert_eq!(steps.last(), Some(&STEPS));
    let repeats = steps.windows(2).filter(|w| w[1] == w[0]).count();
    assert!(
        steps.windows(2).all(|w| w[1] == w[0] || w[1] == w[0] + 1) && repeats <= 1,
        "{steps:?}"
    );
    a.shutdown(Duration::ZERO).await;
    drop_schemas(&[schema]).await;
}
