//! Leases on a real PostgreSQL server, for several nodes on one schema: a task is
//! written only by the node holding its lease's epoch; a lease left to expire is taken
//! over by another node, which carries the task on from its checkpoint; a node that
//! lost a lease has its commits refused and its run stopped.

use fundi_runtime::Access;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use chrono::Utc;
use fundi_postgres::testing::{drop_schemas, fresh_schema, test_config, test_url};
use fundi_postgres::{LeaseConfig, PostgresConfig, PostgresStore};
use fundi_runtime::store::{StoreError, TaskRecord, TaskStore};
use fundi_runtime::testing::store_contract::{created, record};
use fundi_runtime::{
    Message, Part, Runtime, RuntimeHandle, Skill, SkillCard, SkillContext, SkillError, SkillInput,
    SkillOutput, SubmitRequest, TaskEvent, TaskEventKind, TaskId, TaskState, TaskStatus,
};
use serde_json::json;

const DEADLINE: Duration = Duration::from_secs(30);

fn config(schema: &str, node: &str, ttl_ms: u64) -> PostgresConfig {
    let mut postgres_config = test_config(schema);
    postgres_config.lease = Some(LeaseConfig::new(node, Duration::from_millis(ttl_ms)));
    postgres_config
}

async fn open(schema: &str, node: &str, ttl_ms: u64) -> PostgresStore {
    PostgresStore::open(&config(schema, node, ttl_ms))
        .await
        .unwrap_or_else(|e| panic!("PostgreSQL at {}: {e}", test_url()))
}

/// The task's lease as stored: holder and epoch.
async fn lease_of(store: &PostgresStore, schema: &str, id: &str) -> (Option<String>, i64) {
    let row = store
        .testing_client()
        .await
        .query_one(
            &format!("SELECT lease_node, lease_epoch FROM {schema}.tasks WHERE id = $1"),
            &[&id],
        )
        .await
        .unwrap();
    (row.get(0), row.get(1))
}

/// The task one status note on: its next version, with the event.
fn advance(record: &TaskRecord, note: &str) -> (TaskRecord, Vec<TaskEvent>) {
    let mut next = record.clone();
    next.version += 1;
    next.last_seq += 1;
    next.task.status = TaskStatus {
        state: TaskState::Working,
        message: Some(Message::agent(vec![Part::text(note)])),
        timestamp: Utc::now(),
    };
    let event = TaskEvent {
        seq: next.last_seq,
        task_id: next.task.id.clone(),
        context_id: next.task.context_id.clone(),
        kind: TaskEventKind::Status(next.task.status.clone()),
    };
    (next, vec![event])
}

/// When the lease of task `t` runs out.
async fn expiry(store: &PostgresStore, schema: &str) -> chrono::DateTime<Utc> {
    store
        .testing_client()
        .await
        .query_one(
            &format!("SELECT lease_expires FROM {schema}.tasks WHERE id = 't'"),
            &[],
        )
        .await
        .unwrap()
        .get(0)
}

/// Polls `take_over` until it claims something, within the deadline.
async fn taken_over(store: &PostgresStore) -> Vec<TaskRecord> {
    let deadline = Instant::now() + DEADLINE;
    loop {
        let claimed = store.take_over().await.unwrap();
        if !claimed.is_empty() {
            return claimed;
        }
        assert!(Instant::now() < deadline, "nothing was taken over");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn writes_are_fenced_by_the_lease_and_an_expired_lease_is_taken_over() {
    let schema = fresh_schema();
    let a = open(&schema, "node-a", 2_000).await;
    let b = open(&schema, "node-b", 2_000).await;
    let task = record(
        "t",
        "ctx",
        TaskState::Working,
        Utc::now().timestamp_millis(),
        "ann",
    );
    a.commit(&task, 0, &[created(&task)]).await.unwrap();
    assert_eq!(lease_of(&a, &schema, "t").await, (Some("node-a".into()), 1));

    // The holder renews the lease (its expiry moves on), and a renewed lease is
    // neither taken over nor claimed by a starting node.
    let first = expiry(&a, &schema).await;
    let deadline = Instant::now() + DEADLINE;
    while expiry(&a, &schema).await <= first {
        assert!(Instant::now() < deadline, "the lease was never renewed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(b.take_over().await.unwrap().is_empty());
    assert!(b.active().await.unwrap().is_empty());
    let (task, events) = advance(&task, "step 1");
    a.commit(&task, task.version - 1, &events).await.unwrap();

    // Not renewed, it runs out and the other node takes the task, one epoch up.
    a.pause_lease_renewal();
    let claimed = taken_over(&b).await;
    assert_eq!(
        claimed.iter().map(|r| r.id().as_str()).collect::<Vec<_>>(),
        ["t"]
    );
    assert_eq!(
        (claimed[0].version, claimed[0].last_seq),
        (task.version, task.last_seq)
    );
    assert_eq!(lease_of(&a, &schema, "t").await, (Some("node-b".into()), 2));
    assert!(b.take_over().await.unwrap().is_empty(), "taken once");

    // The former holder's write is refused and names the holder; the new one's is not.
    let (stale, stale_events) = advance(&task, "step 2 from a");
    let fenced = a
        .commit(&stale, task.version, &stale_events)
        .await
        .unwrap_err();
    match &fenced {
        StoreError::Fenced { task_id, holder } => {
            assert_eq!((task_id.as_str(), holder.as_str()), ("t", "node-b"));
        }
        other => panic!("expected Fenced, got {other}"),
    }
    let (next, next_events) = advance(&task, "step 2 from b");
    b.commit(&next, task.version, &next_events).await.unwrap();
    let stored = b.get(&TaskId::from("t")).await.unwrap().unwrap();
    assert_eq!(
        (stored.version, stored.last_seq),
        (next.version, next.last_seq)
    );
    // A version conflict stays a conflict, whoever writes.
    let conflict = b
        .commit(&next, task.version, &next_events)
        .await
        .unwrap_err();
    assert!(
        matches!(conflict, StoreError::Conflict { .. }),
        "{conflict}"
    );

    // A terminal task holds no lease.
    let mut done = next.clone();
    done.task.status.state = TaskState::Completed;
    done.version += 1;
    b.commit(&done, next.version, &[]).await.unwrap();
    assert_eq!(lease_of(&b, &schema, "t").await, (None, 2));
    drop_schemas(&[schema]).await;
}

#[tokio::test]
async fn a_restarted_node_takes_its_own_tasks_back_at_once_and_fences_its_former_self() {
    let schema = fresh_schema();
    let before = open(&schema, "node-a", 60_000).await;
    let task = record(
        "t",
        "ctx",
        TaskState::Working,
        Utc::now().timestamp_millis(),
        "ann",
    );
    before.commit(&task, 0, &[created(&task)]).await.unwrap();
    let other = open(&schema, "node-b", 60_000).await;
    assert!(
        other.active().await.unwrap().is_empty(),
        "another node's live lease"
    );

    // The same node id again, long before the lease would run out.
    let after = open(&schema, "node-a", 60_000).await;
    let active = after.active().await.unwrap();
    let found: Vec<(&str, u64)> = active
        .iter()
        .map(|r| (r.id().as_str(), r.version))
        .collect();
    assert_eq!(found, [("t", task.version)]);
    assert_eq!(
        lease_of(&after, &schema, "t").await,
        (Some("node-a".into()), 2)
    );
    let (stale, events) = advance(&task, "from the former process");
    let fenced = before
        .commit(&stale, task.version, &events)
        .await
        .unwrap_err();
    assert!(matches!(fenced, StoreError::Fenced { .. }), "{fenced}");
    after.commit(&stale, task.version, &events).await.unwrap();

    // One process per node id when a node holds its schema.
    let exclusive = {
        let mut postgres_config = config(&schema, "node-c", 60_000);
        postgres_config.exclusive = true;
        postgres_config
    };
    let _first = PostgresStore::open(&exclusive).await.unwrap();
    let refused = PostgresStore::open(&exclusive).await.unwrap_err();
    assert!(refused.to_string().contains("node \"node-c\""), "{refused}");
    drop_schemas(&[schema]).await;
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
    let store = Arc::new(open(schema, name, 2_000).await);
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
async fn a_node_that_lost_its_lease_is_fenced_and_its_run_stops() {
    let nodes = two_nodes_a_counting().await;
    // Node a is cut off from renewing but keeps running: b takes the task over, and
    // a's next commit is refused, which stops its run there.
    nodes.store_a.pause_lease_renewal();
    completed(&nodes.b, &nodes.id).await;
    let log_now = nodes.log.lock().unwrap().clone();
    let first_b = log_now.iter().position(|(n, _)| *n == "node-b").unwrap();
    // At most the step a had in flight when b took over is a's after that.
    let a_after = log_now[first_b..]
        .iter()
        .filter(|(n, _)| *n == "node-a")
        .count();
    assert!(a_after <= 1, "{log_now:?}");
    assert!(
        log_now.iter().filter(|(n, _)| *n == "node-b").count() > 1,
        "{log_now:?}"
    );
    let stored = nodes.b.get(&nodes.id, None, Access::Any).await.unwrap();
    assert_eq!(stored.status.state, TaskState::Completed);
    nodes.a.shutdown(Duration::ZERO).await;
    drop_schemas(&[nodes.schema]).await;
}
