//! Any node answers for any task, on a real PostgreSQL server: a message or a cancel
//! sent to one node reaches the task's run on the node holding it, a subscriber on one
//! node follows a task running on another (same sequence numbers, no gap, no
//! duplicate, resumable; a watcher too), and a request for a dead node's task is
//! answered by the node that takes it over.

use fundi_runtime::Access;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use fundi_postgres::testing::{drop_schemas, fresh_schema, test_config, test_url};
use fundi_postgres::{LeaseConfig, PostgresStore};
use fundi_runtime::store::{StoreError, TaskStore};
use fundi_runtime::{
    Message, Part, Presence, Runtime, RuntimeError, RuntimeHandle, Skill, SkillCard, SkillContext,
    SkillError, SkillInput, SkillOutput, SubmitRequest, TaskEvent, TaskId, TaskState,
};
use futures::StreamExt;

const DEADLINE: Duration = Duration::from_secs(30);

/// What each node's skills saw: (node, what).
type Log = Arc<Mutex<Vec<(&'static str, String)>>>;

/// Asks for input, then answers with what it got.
struct Asker {
    node: &'static str,
    log: Log,
}

#[async_trait]
impl Skill for Asker {
    fn card(&self) -> SkillCard {
        SkillCard::new("asker", "Asks a question and repeats the answer").resumable()
    }

    async fn run(&self, input: SkillInput, ctx: SkillContext) -> Result<SkillOutput, SkillError> {
        // Resumed by its answer (after a restart or a takeover), the run starts from it.
        let answer = match input.resumed && input.history.len() > 2 {
            true => input.message,
            false => ctx.request_input("what is the word?").await?,
        };
        let word = answer.text();
        self.log
            .lock()
            .unwrap()
            .push((self.node, format!("answered {word}")));
        ctx.progress(0.5, format!("heard {word}")).await?;
        Ok(SkillOutput {
            message: Some(Message::agent(vec![Part::text(format!(
                "the word is {word}"
            ))])),
            artifacts: Vec::new(),
        })
    }
}

/// Works until it is canceled, a progress note at a time.
struct Looper {
    node: &'static str,
    log: Log,
}

#[async_trait]
impl Skill for Looper {
    fn card(&self) -> SkillCard {
        SkillCard::new("looper", "Works until canceled")
    }

    async fn run(&self, _input: SkillInput, ctx: SkillContext) -> Result<SkillOutput, SkillError> {
        let mut turn = 0_u32;
        loop {
            tokio::select! {
                () = ctx.cancelled() => {
                    self.log.lock().unwrap().push((self.node, "canceled".into()));
                    return Err(SkillError::Canceled);
                }
                () = tokio::time::sleep(Duration::from_millis(30)) => {}
            }
            turn += 1;
            ctx.progress(0.0, format!("turn {turn}")).await?;
        }
    }
}

/// Node `name`'s store on `schema`, its leases lasting `ttl_ms`.
async fn leased(schema: &str, name: &str, ttl_ms: u64) -> PostgresStore {
    let mut config = test_config(schema);
    config.lease = Some(LeaseConfig::new(name, Duration::from_millis(ttl_ms)));
    PostgresStore::open(&config)
        .await
        .unwrap_or_else(|e| panic!("PostgreSQL at {}: {e}", test_url()))
}

async fn node(schema: &str, name: &'static str, log: &Log) -> (RuntimeHandle, Arc<PostgresStore>) {
    let store = Arc::new(leased(schema, name, 2_000).await);
    let runtime = Runtime::builder()
        .shared_store(store.clone())
        .skill(Asker {
            node: name,
            log: log.clone(),
        })
        .skill(Looper {
            node: name,
            log: log.clone(),
        })
        .start()
        .await
        .unwrap();
    (runtime, store)
}

/// Nodes a and b on a fresh schema, and what their skills saw.
struct TwoNodes {
    schema: String,
    log: Log,
    a: RuntimeHandle,
    a_store: Arc<PostgresStore>,
    b: RuntimeHandle,
    b_store: Arc<PostgresStore>,
}

impl TwoNodes {
    async fn start() -> TwoNodes {
        let (schema, log) = (fresh_schema(), Log::default());
        let (a, a_store) = node(&schema, "node-a", &log).await;
        let (b, b_store) = node(&schema, "node-b", &log).await;
        TwoNodes {
            schema,
            log,
            a,
            a_store,
            b,
            b_store,
        }
    }

    async fn stop(self) {
        self.a.shutdown(Duration::from_secs(1)).await;
        self.b.shutdown(Duration::from_secs(1)).await;
        drop_schemas(&[self.schema]).await;
    }
}

fn message(skill: &str, text: &str) -> Message {
    let mut message = Message::user(vec![Part::text(text)]);
    message.metadata = Some(
        serde_json::json!({ "skill": skill })
            .as_object()
            .cloned()
            .unwrap(),
    );
    message
}

async fn start(runtime: &RuntimeHandle, skill: &str) -> TaskId {
    runtime
        .submit(SubmitRequest::new(message(skill, "go")))
        .await
        .unwrap()
        .task
        .id
}

fn answer(task: &TaskId, text: &str) -> SubmitRequest {
    let mut message = Message::user(vec![Part::text(text)]);
    message.task_id = Some(task.clone());
    SubmitRequest::new(message)
}

/// Polls the task (through `runtime`) until it is in `state`, within the deadline.
async fn reaches(runtime: &RuntimeHandle, id: &TaskId, state: TaskState) {
    let deadline = Instant::now() + DEADLINE;
    loop {
        let task = runtime.get(id, Some(0), Access::Any).await.unwrap();
        if task.status.state == state {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "task {id} never got {state:?} (it is {:?})",
            task.status.state
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Every event of the stream until it ends, within the deadline.
async fn drain(mut events: fundi_runtime::EventStream) -> Vec<TaskEvent> {
    let mut seen = Vec::new();
    let collect = async {
        while let Some(event) = events.next().await {
            seen.push(event.unwrap());
        }
    };
    tokio::time::timeout(DEADLINE, collect)
        .await
        .expect("the stream never ended");
    seen
}

fn seqs(events: &[TaskEvent]) -> Vec<u64> {
    events.iter().map(|e| e.seq).collect()
}

#[tokio::test]
async fn a_message_sent_to_another_node_reaches_the_run_there_and_its_events_stream_to_both() {
    let nodes = TwoNodes::start().await;
    let (a, b, log) = (&nodes.a, &nodes.b, &nodes.log);

    let id = start(a, "asker").await;
    reaches(b, &id, TaskState::InputRequired).await;
    // A subscriber on b, to a task whose run is on a, from its creation.
    let following = b.subscribe(&id, 0, Access::Any).await.unwrap();
    let following = tokio::spawn(drain(following));

    let delivered = b.submit(answer(&id, "kiwi")).await.unwrap();
    assert_eq!(delivered.task.id, id);
    reaches(b, &id, TaskState::Completed).await;
    assert_eq!(
        *log.lock().unwrap(),
        [("node-a", "answered kiwi".to_owned())],
        "the answer reached the run on node a, once"
    );

    // b's subscriber saw every stored event, in order, each once, to the end.
    let stored = nodes.a_store.events(&id, 0, 1_000).await.unwrap();
    let followed = following.await.unwrap();
    assert_eq!(seqs(&followed), seqs(&stored));
    assert_eq!(seqs(&stored), (1..=stored.len() as u64).collect::<Vec<_>>());
    assert!(followed.last().unwrap().is_terminal());
    // Resumed after an event (Last-Event-ID), on either node: the rest only.
    for runtime in [a, b] {
        let rest = drain(runtime.subscribe(&id, 2, Access::Any).await.unwrap()).await;
        assert_eq!(seqs(&rest), seqs(&stored[2..]));
    }
    nodes.stop().await;
}

#[tokio::test]
async fn a_watcher_on_another_node_follows_the_task_there_through_the_store() {
    let nodes = TwoNodes::start().await;
    let (a, b) = (&nodes.a, &nodes.b);
    let id = start(a, "asker").await;
    reaches(b, &id, TaskState::InputRequired).await;
    assert_eq!(a.presence(&id).await, Presence::Here);
    // On b the task is another node's: a watcher there follows its commits (it never
    // rests, as it would for a task with no actor, waiting for a wake b never sees).
    assert_eq!(b.presence(&id).await, Presence::Elsewhere);
    let watching = tokio::spawn(drain(b.watch(&id, 0, Access::Any).await.unwrap()));

    b.submit(answer(&id, "fig")).await.unwrap();
    reaches(b, &id, TaskState::Completed).await;
    let stored = nodes.a_store.events(&id, 0, 1_000).await.unwrap();
    assert_eq!(seqs(&watching.await.unwrap()), seqs(&stored));
    nodes.stop().await;
}

#[tokio::test]
async fn a_blocking_answer_sent_to_another_node_returns_the_outcome_of_the_run_there() {
    let nodes = TwoNodes::start().await;
    let (a, b) = (&nodes.a, &nodes.b);

    let id = start(a, "asker").await;
    reaches(b, &id, TaskState::InputRequired).await;
    // Sent on b, waited on for its outcome: no actor here answers the wait (the run is
    // on a), so b follows the task's events to its rest and reads it there.
    let waiting = b.submit(answer(&id, "kiwi")).wait().await.unwrap();
    assert_eq!(waiting.accepted().task.id, id);
    let outcome = tokio::time::timeout(DEADLINE, waiting.outcome(DEADLINE * 4))
        .await
        .expect("the outcome came before the deadline")
        .unwrap();
    assert_eq!(outcome.task.status.state, TaskState::Completed);
    let reply = outcome.task.status.message.as_ref().map(Message::text);
    assert_eq!(reply.as_deref(), Some("the word is kiwi"));
    let stored = nodes.b_store.get(&id).await.unwrap().unwrap();
    assert_eq!(outcome.task, stored.task);
    nodes.stop().await;
}

#[tokio::test]
async fn a_subscriber_on_another_node_follows_a_run_live_and_a_cancel_there_stops_it() {
    let nodes = TwoNodes::start().await;
    let (a, b, log) = (&nodes.a, &nodes.b, &nodes.log);

    let id = start(a, "looper").await;
    reaches(a, &id, TaskState::Working).await;
    let mut live = b.subscribe(&id, 0, Access::Any).await.unwrap();
    // Live: notes the run writes on a after the subscription began arrive on b.
    let mut seen = Vec::new();
    let seen_live = async {
        while let Some(event) = live.next().await {
            seen.push(event.unwrap());
            if seen.len() >= 8 {
                return;
            }
        }
    };
    tokio::time::timeout(DEADLINE, seen_live)
        .await
        .expect("no live events reached node b");

    let canceled = b.cancel(&id, Access::Any).await.unwrap();
    assert_eq!(canceled.status.state, TaskState::Canceled);
    assert_eq!(
        *log.lock().unwrap(),
        [("node-a", "canceled".to_owned())],
        "the run on node a was told to stop"
    );
    seen.extend(drain(live).await);
    let stored = nodes.a_store.events(&id, 0, 10_000).await.unwrap();
    assert_eq!(seqs(&seen), seqs(&stored), "no gap, no duplicate");
    assert!(seen.last().unwrap().is_terminal());

    // An ended task's errors come back as the holder's would.
    let again = b.cancel(&id, Access::Any).await.unwrap_err();
    assert!(
        matches!(again, fundi_runtime::RuntimeError::NotCancelable { .. }),
        "{again}"
    );
    nodes.stop().await;
}

#[tokio::test]
async fn a_message_for_a_dead_nodes_task_is_answered_by_the_node_that_takes_it_over() {
    let schema = fresh_schema();
    let log = Log::default();
    let (a, a_store) = node(&schema, "node-a", &log).await;
    let (b, _b_store) = node(&schema, "node-b", &log).await;

    let id = start(&a, "asker").await;
    reaches(&a, &id, TaskState::InputRequired).await;
    // Node a dies: nothing of it runs, answers or renews any more.
    a.shutdown(Duration::from_secs(1)).await;
    drop(a);
    drop(a_store);

    // Sent while the task is still leased to the dead node: it waits in the store
    // until node b takes the task over, and is answered there.
    let delivered = b.submit(answer(&id, "fig")).await.unwrap();
    assert_eq!(delivered.task.id, id);
    reaches(&b, &id, TaskState::Completed).await;
    assert!(
        log.lock()
            .unwrap()
            .iter()
            .all(|(node, _)| *node == "node-b"),
        "only node b ran the task after a died: {:?}",
        log.lock().unwrap()
    );
    b.shutdown(Duration::from_secs(1)).await;
    drop_schemas(&[schema]).await;
}

/// Counts the runs going on at once across every node (the skill's side of a limit).
struct Exclusive {
    running: Arc<std::sync::atomic::AtomicUsize>,
    most: Arc<std::sync::atomic::AtomicUsize>,
}

#[async_trait]
impl Skill for Exclusive {
    fn card(&self) -> SkillCard {
        SkillCard::new("exclusive", "One run at a time, whatever the node")
    }

    async fn run(&self, _input: SkillInput, ctx: SkillContext) -> Result<SkillOutput, SkillError> {
        use std::sync::atomic::Ordering;
        let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.most.fetch_max(now, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(60)).await;
        ctx.progress(1.0, "done").await?;
        self.running.fetch_sub(1, Ordering::SeqCst);
        Ok(SkillOutput {
            message: Some(Message::agent(vec![Part::text("ran")])),
            artifacts: Vec::new(),
        })
    }
}

#[tokio::test]
async fn a_skills_concurrency_limit_holds_across_the_nodes() {
    let schema = fresh_schema();
    let running = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let most = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut nodes = Vec::new();
    for name in ["node-a", "node-b"] {
        let store = leased(&schema, name, 2_000).await;
        let runtime = Runtime::builder()
            .store(store)
            .config({
                let mut runtime_config = fundi_runtime::RuntimeConfig::default();
                runtime_config.max_concurrent_runs = 1;
                runtime_config
            })
            .skill(Exclusive {
                running: running.clone(),
                most: most.clone(),
            })
            .start()
            .await
            .unwrap();
        nodes.push(runtime);
    }
    let mut ids = Vec::new();
    for _ in 0..4 {
        for runtime in &nodes {
            ids.push(start(runtime, "exclusive").await);
        }
    }
    for id in &ids {
        reaches(&nodes[0], id, TaskState::Completed).await;
    }
    assert_eq!(
        most.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "two nodes ran the skill at once"
    );
    for runtime in &nodes {
        runtime.shutdown(Duration::from_secs(1)).await;
    }
    drop_schemas(&[schema]).await;
}

/// Counts to 40, a checkpoint per step: resumable on another node.
struct Steps;

#[async_trait]
impl Skill for Steps {
    fn card(&self) -> SkillCard {
        SkillCard::new("steps", "Counts, a checkpoint per step").resumable()
    }

    async fn run(&self, _input: SkillInput, ctx: SkillContext) -> Result<SkillOutput, SkillError> {
        let from = ctx.last_checkpoint().and_then(|c| c.as_u64()).unwrap_or(0);
        for step in from + 1..=40 {
            tokio::time::sleep(Duration::from_millis(50)).await;
            ctx.progress_with_checkpoint(step as f64 / 40.0, format!("step {step}"), step.into())
                .await?;
        }
        Ok(SkillOutput {
            message: Some(Message::agent(vec![Part::text("counted")])),
            artifacts: Vec::new(),
        })
    }
}

async fn steps_node(schema: &str, name: &str) -> (RuntimeHandle, Arc<PostgresStore>) {
    let store = Arc::new(leased(schema, name, 2_000).await);
    let runtime = Runtime::builder()
        .shared_store(store.clone())
        .skill(Steps)
        .start()
        .await
        .unwrap();
    (runtime, store)
}

#[tokio::test]
async fn a_subscriber_follows_a_task_on_to_the_node_that_takes_it_over() {
    let schema = fresh_schema();
    let (a, a_store) = steps_node(&schema, "node-a").await;
    let (b, b_store) = steps_node(&schema, "node-b").await;
    let id = start(&a, "steps").await;
    let following = tokio::spawn(drain(b.subscribe(&id, 0, Access::Any).await.unwrap()));
    // Some steps in, node a dies; b takes the task over and finishes it.
    let deadline = Instant::now() + DEADLINE;
    while a_store.events(&id, 0, 100).await.unwrap().len() < 5 {
        assert!(Instant::now() < deadline, "the task never got going");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    a.shutdown(Duration::ZERO).await;
    drop((a, a_store));
    let followed = following.await.unwrap();
    let stored = b_store.events(&id, 0, 1_000).await.unwrap();
    assert_eq!(seqs(&followed), seqs(&stored), "no gap, no duplicate");
    assert!(followed.last().unwrap().is_terminal());
    let task = b.get(&id, Some(0), Access::Any).await.unwrap();
    assert_eq!(task.status.state, TaskState::Completed);
    b.shutdown(Duration::from_secs(1)).await;
    drop_schemas(&[schema]).await;
}

#[tokio::test]
async fn a_request_the_holding_node_never_answers_times_out_with_a_clear_error() {
    let schema = fresh_schema();
    // Node a holds a task and renews its lease, but runs no runtime: it takes no
    // requests, as a node stuck elsewhere would not.
    let a = leased(&schema, "node-a", 1_000).await;
    let task =
        fundi_runtime::testing::store_contract::record("t", "ctx", TaskState::Working, 1, "ann");
    a.commit(
        &task,
        0,
        &[fundi_runtime::testing::store_contract::created(&task)],
    )
    .await
    .unwrap();
    let b = leased(&schema, "node-b", 1_000).await;
    let b = Runtime::builder()
        .store(b)
        .config({
            let mut runtime_config = fundi_runtime::RuntimeConfig::default();
            runtime_config.actor_call_timeout_ms = 200;
            runtime_config.cancel_grace_ms = 100;
            runtime_config
        })
        .start()
        .await
        .unwrap();
    let refused = b.cancel(&TaskId::from("t"), Access::Any).await.unwrap_err();
    assert!(
        matches!(
            &refused,
            fundi_runtime::RuntimeError::Store(fundi_runtime::StoreError::Unanswered { holder, .. })
                if holder == "node-a"
        ),
        "{refused}"
    );
    assert!(refused.to_string().contains("try again"), "{refused}");
    b.shutdown(Duration::from_secs(1)).await;
    drop(a);
    drop_schemas(&[schema]).await;
}

#[tokio::test]
async fn a_node_that_stops_hands_its_unfinished_tasks_to_the_others_at_once() {
    let schema = fresh_schema();
    // Leases long enough that only a hand-back lets another node take the task now.
    let a_store = Arc::new(leased(&schema, "node-a", 60_000).await);
    let a = Runtime::builder()
        .shared_store(a_store.clone())
        .skill(Steps)
        .start()
        .await
        .unwrap();
    let b = leased(&schema, "node-b", 60_000).await;
    let id = start(&a, "steps").await;
    reaches(&a, &id, TaskState::Working).await;
    assert!(b.take_over().await.unwrap().is_empty(), "a holds it");

    a.shutdown(Duration::ZERO).await;
    let taken = b.take_over().await.unwrap();
    assert_eq!(
        taken.iter().map(|r| r.id().clone()).collect::<Vec<_>>(),
        [id],
        "handed back as a stopped"
    );
    drop((a, a_store));
    drop_schemas(&[schema]).await;
}

#[tokio::test]
async fn a_task_a_node_lost_while_cut_off_is_answered_by_the_new_holder() {
    let schema = fresh_schema();
    let log = Log::default();
    let (a, a_store) = node(&schema, "node-a", &log).await;
    let (b, b_store) = node(&schema, "node-b", &log).await;
    let id = start(&a, "asker").await;
    reaches(&a, &id, TaskState::InputRequired).await;
    // Node a loses the database for longer than a lease: it cuts itself off (and
    // refuses what it is sent), and b takes the task over.
    a_store.pause_lease_renewal();
    let deadline = Instant::now() + DEADLINE;
    loop {
        let holders = b_store.node_leases().await.unwrap();
        if holders.iter().any(|h| h.node.as_deref() == Some("node-b")) {
            break;
        }
        assert!(Instant::now() < deadline, "b never took the task over");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(a.is_cut_off());
    assert!(matches!(
        a.submit(answer(&id, "early")).await,
        Err(RuntimeError::Store(StoreError::CutOff))
    ));
    // Back, a claims nothing of b's, and the answer sent to it reaches the task on b.
    a_store.resume_lease_renewal();
    while a.is_cut_off() {
        assert!(Instant::now() < deadline, "a never held the database again");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    a.submit(answer(&id, "plum")).await.unwrap();
    reaches(&b, &id, TaskState::Completed).await;
    assert_eq!(
        *log.lock().unwrap(),
        [("node-b", "answered plum".to_owned())]
    );
    a.shutdown(Duration::from_secs(1)).await;
    b.shutdown(Duration::from_secs(1)).await;
    drop_schemas(&[schema]).await;
}
