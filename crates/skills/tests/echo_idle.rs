//! echo's idle wait (`{"idleS": S}`): the task parks for it, and across a restart it
//! echoes once the wait is over.

use std::time::{Duration, Instant};

use fundi_runtime::testing::scripted::{eventually, message, wait_for_state};
use fundi_runtime::{Access, Runtime, RuntimeConfig, RuntimeHandle, SubmitRequest, TaskState};
use fundi_skills::{EchoConfig, EchoSkill};
use fundi_store_sled::testing::open_sled;
use serde_json::json;

async fn start(dir: &std::path::Path) -> RuntimeHandle {
    let mut config = RuntimeConfig::default();
    config.park_after_ms = 100;
    Runtime::builder()
        .config(config)
        .store(open_sled(dir).await)
        .skill(EchoSkill::new(EchoConfig::default()))
        .start()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_echo_parks_for_its_wait_and_echoes_after_it_across_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let rt = start(dir.path()).await;
    let started = Instant::now();
    let request = SubmitRequest::new(message("later", json!({"idleS": 2})));
    let id = rt
        .submit(request.skill(Some("echo".into())))
        .await
        .unwrap()
        .task
        .id;
    eventually(
        || format!("{} tasks have an actor", rt.live_tasks()),
        || rt.live_tasks() == 0,
    )
    .await;
    let task = rt.get(&id, None, Access::Any).await.unwrap();
    assert_eq!(task.status.state, TaskState::Working);
    rt.shutdown(Duration::from_secs(5)).await;
    drop(rt);

    let rt = start(dir.path()).await;
    let done = wait_for_state(&rt, &id, TaskState::Completed).await;
    assert_eq!(done.artifacts[0].parts[0].as_text(), Some("later"));
    // Neither the park nor the restart cut the wait short.
    let took = started.elapsed();
    assert!(took >= Duration::from_secs(2), "echoed after {took:?}");
}
