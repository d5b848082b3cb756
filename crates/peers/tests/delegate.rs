//! The delegate skill against scripted peers on loopback, through a real runtime: the
//! peer's task mirrored to completion by polling, a 401 never tried again, a 429 tried
//! again after its `Retry-After`, a 500 tried again until it is given up, a card pointing elsewhere refused before any call,
//! a card revalidated with `If-None-Match`, and a card whose signature must verify.

mod fake_peer;

use std::sync::Arc;
use std::time::{Duration, Instant};

use fake_peer::Script;
use fundi_peers::signature::CardKey;
use fundi_peers::{DelegateConfig, DelegateSkill, PeerConfig, PeerDirectory};
use fundi_runtime::testing::scripted::eventually;
use fundi_runtime::{
    Access, Grants, MemoryStore, Message, Part, Runtime, RuntimeHandle, SubmitRequest, Task,
    TaskEventKind, TaskState,
};
use serde_json::json;

const DEADLINE: Duration = Duration::from_secs(30);

async fn start(
    peer: std::net::SocketAddr,
    config: PeerConfig,
) -> (RuntimeHandle, Arc<PeerDirectory>) {
    start_giving_up_after(peer, config, 20).await
}

/// A runtime delegating to the peer at `peer`, giving it up after that many seconds.
async fn start_giving_up_after(
    peer: std::net::SocketAddr,
    config: PeerConfig,
    give_up_after_s: u64,
) -> (RuntimeHandle, Arc<PeerDirectory>) {
    let mut config = config;
    config.url = format!("http://127.0.0.1:{}", peer.port());
    config.allow_private_networks = true;
    let peers = Arc::new(
        PeerDirectory::new(&[("b".to_owned(), config)].into(), Duration::from_secs(60)).unwrap(),
    );
    let skill = DelegateSkill::new(peers.clone(), {
        let mut delegate_config = DelegateConfig::default();
        delegate_config.give_up_after_s = give_up_after_s;
        delegate_config.poll_max_ms = 50;
        delegate_config
    });
    let runtime = Runtime::builder()
        .shared_store(Arc::new(MemoryStore::new()))
        .skill(skill)
        .start()
        .await
        .unwrap();
    (runtime, peers)
}

async fn delegate(runtime: &RuntimeHandle) -> Task {
    let message = Message::user(vec![
        Part::text("please"),
        Part::data(json!({"peer": "b", "skill": "work", "data": {"n": 1}})),
    ]);
    let request = SubmitRequest::new(message).grants(Grants::scopes(["fundi:delegate"]));
    let id = runtime.submit(request).await.unwrap().task.id;
    ended(runtime, &id).await
}

fn status_text(task: &Task) -> String {
    task.status
        .message
        .as_ref()
        .map(Message::text)
        .unwrap_or_default()
}

#[tokio::test]
async fn a_peers_task_is_followed_to_its_end_and_its_artifact_mirrored() {
    let (addr, seen) = fake_peer::start(Script {
        working_reads: 2,
        ..Script::default()
    })
    .await;
    let (runtime, _) = start(addr, PeerConfig::default()).await;
    let task = delegate(&runtime).await;
    assert_eq!(task.status.state, TaskState::Completed, "{task:?}");
    assert_eq!(task.artifacts.len(), 1, "{task:?}");
    assert_eq!(
        task.artifacts[0].parts[0].as_text(),
        Some("done by the peer")
    );
    // Told once: the mirror's event alone, none again with the outcome.
    let events = runtime.subscribe(&task.id, 0, Access::Any).await.unwrap();
    let events: Vec<_> = futures::StreamExt::collect(events).await;
    let artifacts = events
        .iter()
        .filter(|e| matches!(e.as_ref().unwrap().kind, TaskEventKind::Artifact { .. }))
        .count();
    assert_eq!(artifacts, 1, "{events:?}");
    let seen = seen.lock().unwrap();
    let sends: Vec<_> = seen.calls.iter().filter(|c| c.0 == "SendMessage").collect();
    assert_eq!(sends.len(), 1);
    let sent = &sends[0].1["message"];
    assert_eq!(sent["parts"][0]["text"], "please");
    assert_eq!(sent["parts"][1]["data"], json!({"n": 1}));
    assert_eq!(sent["metadata"]["skill"], "work");
    assert_eq!(sends[0].1["configuration"]["returnImmediately"], true);
}

#[tokio::test]
async fn a_401_is_not_tried_again_and_names_the_setting() {
    let (addr, seen) = fake_peer::start(Script {
        unauthorized: true,
        ..Script::default()
    })
    .await;
    let (runtime, _) = start(addr, {
        let mut peer_config = PeerConfig::default();
        peer_config.token = Some("wrong".into());
        peer_config
    })
    .await;
    let task = delegate(&runtime).await;
    assert_eq!(task.status.state, TaskState::Failed);
    let said = status_text(&task);
    assert!(
        said.contains("HTTP 401")
            && said.contains("peers.b.token")
            && said.contains("FUNDI__PEERS__B__TOKEN"),
        "{said}"
    );
    assert_eq!(seen.lock().unwrap().calls.len(), 1, "a 401 was tried again");
}

#[tokio::test]
async fn a_429_is_tried_again_after_its_retry_after() {
    let (addr, seen) = fake_peer::start(Script {
        busy: 1,
        ..Script::default()
    })
    .await;
    let (runtime, _) = start(addr, PeerConfig::default()).await;
    let task = delegate(&runtime).await;
    assert_eq!(task.status.state, TaskState::Completed, "{task:?}");
    let seen = seen.lock().unwrap();
    let (first, second) = (&seen.calls[0], &seen.calls[1]);
    assert_eq!(
        (first.0.as_str(), second.0.as_str()),
        ("SendMessage", "SendMessage")
    );
    // The same message, not a second one.
    assert_eq!(
        first.1["message"]["messageId"],
        second.1["message"]["messageId"]
    );
    assert!(
        second.2.duration_since(first.2) >= Duration::from_millis(950),
        "tried again before Retry-After: {:?}",
        second.2.duration_since(first.2)
    );
}

#[tokio::test]
async fn a_card_pointing_at_another_host_is_refused_before_any_call() {
    let script = Script {
        interface_host: Some("localhost".into()),
        ..Script::default()
    };
    let (addr, seen) = fake_peer::start(script).await;
    let (runtime, _) = start(addr, PeerConfig::default()).await;
    let task = delegate(&runtime).await;
    assert_eq!(task.status.state, TaskState::Failed);
    let said = status_text(&task);
    assert!(
        said.contains("host localhost") && said.contains("interface-hosts"),
        "{said}"
    );
    assert!(
        seen.lock().unwrap().calls.is_empty(),
        "an A2A call went out"
    );

    // Allowed by name, the same card is used.
    let (runtime, _) = start(addr, {
        let mut peer_config = PeerConfig::default();
        peer_config.interface_hosts = vec!["localhost".into()];
        peer_config
    })
    .await;
    assert_eq!(delegate(&runtime).await.status.state, TaskState::Completed);
}

#[tokio::test]
async fn a_card_is_revalidated_and_a_304_keeps_it() {
    let (addr, seen) = fake_peer::start(Script::default()).await;
    let (_runtime, peers) = start(addr, PeerConfig::default()).await;
    let first = peers.discover("b").await.unwrap();
    let second = peers.discover("b").await.unwrap();
    assert_eq!(first, second);
    assert_eq!(first.skills[0].id, "work");
    let seen = seen.lock().unwrap();
    assert_eq!((seen.card_reads, seen.not_modified), (2, 1));
    let listed = peers.list();
    assert_eq!(listed[0].card.as_ref().unwrap().name, "fake peer");
}

#[tokio::test]
async fn a_peer_that_must_sign_its_card_is_used_only_when_its_signature_verifies() {
    let required = || {
        let mut peer_config = PeerConfig::default();
        peer_config.require_signed_card = true;
        peer_config
    };
    let signed = |tamper: bool, jku_elsewhere: bool| Script {
        signing_key: Some(CardKey::generate()),
        tamper,
        jku_elsewhere,
        ..Script::default()
    };
    let (addr, _) = fake_peer::start(signed(false, false)).await;
    let (runtime, peers) = start(addr, required()).await;
    assert_eq!(delegate(&runtime).await.status.state, TaskState::Completed);
    assert!(peers.list()[0].card.as_ref().unwrap().signature_verified);

    for (script, says) in [
        (signed(true, false), "does not match the card"),
        (
            signed(false, true),
            "no signature names a key set (jku) on http://127.0.0.1",
        ),
        (Script::default(), "it is not signed"),
    ] {
        let (addr, seen) = fake_peer::start(script).await;
        let (runtime, _) = start(addr, required()).await;
        let task = delegate(&runtime).await;
        assert_eq!(task.status.state, TaskState::Failed);
        let said = status_text(&task);
        assert!(
            said.contains(says) && said.contains("require-signed-card"),
            "{said}"
        );
        assert!(
            seen.lock().unwrap().calls.is_empty(),
            "an A2A call went out"
        );
    }

    // Not required, a card that does not verify is used, and said to be unverified.
    let (addr, _) = fake_peer::start(signed(true, false)).await;
    let (runtime, peers) = start(addr, PeerConfig::default()).await;
    assert_eq!(delegate(&runtime).await.status.state, TaskState::Completed);
    let card = peers.list()[0].card.clone().unwrap();
    assert!(card.signed && !card.signature_verified);
}

#[tokio::test]
async fn a_peer_that_keeps_failing_is_tried_again_then_given_up_in_bounded_time() {
    let (addr, seen) = fake_peer::start(Script {
        failing: true,
        ..Script::default()
    })
    .await;
    let (runtime, _) = start_giving_up_after(addr, PeerConfig::default(), 1).await;
    let task = delegate(&runtime).await;
    assert_eq!(task.status.state, TaskState::Failed);
    let said = status_text(&task);
    assert!(
        said.contains("HTTP 500")
            && said.contains("the peer broke")
            && said.contains("gave up after"),
        "{said}"
    );
    assert!(seen.lock().unwrap().calls.len() > 1, "never tried again");
}

/// A runtime that parks a task after 100 ms with nothing happening, delegating to the
/// peer at `peer` and following a task quiet for a second quietly.
async fn start_quiet(peer: std::net::SocketAddr) -> RuntimeHandle {
    let mut config = PeerConfig::default();
    config.url = format!("http://127.0.0.1:{}", peer.port());
    config.allow_private_networks = true;
    let peers = Arc::new(
        PeerDirectory::new(&[("b".to_owned(), config)].into(), Duration::from_secs(60)).unwrap(),
    );
    let mut delegate_config = DelegateConfig::default();
    delegate_config.poll_max_ms = 50;
    delegate_config.quiet_poll_s = 1;
    let mut runtime_config = fundi_runtime::RuntimeConfig::default();
    runtime_config.park_after_ms = 100;
    Runtime::builder()
        .config(runtime_config)
        .shared_store(Arc::new(MemoryStore::new()))
        .skill(DelegateSkill::new(peers, delegate_config))
        .start()
        .await
        .unwrap()
}

async fn submit_delegation(runtime: &RuntimeHandle) -> fundi_runtime::TaskId {
    let message = Message::user(vec![
        Part::text("please"),
        Part::data(json!({"peer": "b", "skill": "work"})),
    ]);
    let request = SubmitRequest::new(message).grants(Grants::scopes(["fundi:delegate"]));
    runtime.submit(request).await.unwrap().task.id
}

/// A delegation to a fake peer whose task works until `done` is raised, once the local
/// task parked: the runtime, the local task, and what the peer saw.
async fn parked_delegation(
    done: Arc<std::sync::atomic::AtomicBool>,
) -> (
    RuntimeHandle,
    fundi_runtime::TaskId,
    Arc<std::sync::Mutex<fake_peer::Seen>>,
) {
    let (addr, seen) = fake_peer::start(Script {
        done: Some(done),
        ..Script::default()
    })
    .await;
    let runtime = start_quiet(addr).await;
    let id = submit_delegation(&runtime).await;
    eventually(
        || "the quiet delegation did not park".into(),
        || runtime.live_tasks() == 0,
    )
    .await;
    (runtime, id, seen)
}

/// The task once it ended; fails after [`DEADLINE`].
async fn ended(runtime: &RuntimeHandle, id: &fundi_runtime::TaskId) -> Task {
    let deadline = Instant::now() + DEADLINE;
    loop {
        let task = runtime.get(id, None, Access::Any).await.unwrap();
        if task.status.state.is_terminal() {
            return task;
        }
        assert!(Instant::now() < deadline, "the task did not end: {task:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn calls_of(seen: &std::sync::Mutex<fake_peer::Seen>, method: &str) -> usize {
    let seen = seen.lock().unwrap();
    seen.calls.iter().filter(|c| c.0 == method).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quiet_peer_task_is_read_now_and_then_with_the_local_task_parked_between() {
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (runtime, id, seen) = parked_delegation(done.clone()).await;
    // Woken a second later, it reads the peer's task once more, and parks again.
    let reads = calls_of(&seen, "GetTask");
    eventually(
        || "the parked delegation did not read again".into(),
        || calls_of(&seen, "GetTask") > reads,
    )
    .await;
    eventually(
        || "the delegation did not park again".into(),
        || runtime.live_tasks() == 0,
    )
    .await;
    let task = runtime.get(&id, None, Access::Any).await.unwrap();
    assert_eq!(task.status.state, TaskState::Working);
    assert_eq!(
        task.status.message.as_ref().map(Message::text).as_deref(),
        Some("still at it")
    );
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    let task = ended(&runtime, &id).await;
    assert_eq!(task.status.state, TaskState::Completed, "{task:?}");
    assert_eq!(task.artifacts.len(), 1, "{task:?}");
    // The wakes told nothing twice: the peer's note once.
    let events = runtime.subscribe(&id, 0, Access::Any).await.unwrap();
    let events: Vec<_> = futures::StreamExt::collect(events).await;
    let notes: Vec<_> = events
        .iter()
        .filter_map(|e| {
            e.as_ref()
                .unwrap()
                .status()?
                .message
                .as_ref()
                .map(Message::text)
        })
        .filter(|text| text == "still at it")
        .collect();
    assert_eq!(notes.len(), 1, "{events:?}");
    assert_eq!(calls_of(&seen, "SendMessage"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_of_a_parked_delegation_cancels_the_peers_task() {
    let (runtime, id, seen) = parked_delegation(Arc::default()).await;
    let canceled = runtime.cancel(&id, Access::Any).await.unwrap();
    assert_eq!(canceled.status.state, TaskState::Canceled);
    eventually(
        || "the peer's task was not canceled".into(),
        || calls_of(&seen, "CancelTask") == 1,
    )
    .await;
    let seen = seen.lock().unwrap();
    let cancel = seen.calls.iter().find(|c| c.0 == "CancelTask").unwrap();
    assert_eq!(cancel.1["id"], "remote-1");
}
