//! W4 waiting tasks of the other kinds: the RSS a task costs while it waits for an
//! approver (parked once it rested `PARK_AFTER_MS`), likewise with a push config (its
//! delivery resting, push.md), while it is queued for a slot (no actor: runtime
//! semantics, "Queued tasks"), and while its run waits idle (parked: "Idle runs"), each
//! on a fresh server over sled against that server's RSS when empty. Tasks waiting for
//! input: `parked`.

use std::path::Path;

use anyhow::ensure;
use serde_json::{Value, json};

use crate::load;
use crate::parked::{CREATORS, PARK_AFTER_MS, wait_until_live, wait_until_metric};
use crate::server::{Credentials, Server};
use crate::workloads::{post_json, send_at_once, send_request};

/// What the tasks wait for.
#[derive(Debug, Clone, Copy)]
enum Kind {
    /// An approver: echo is gated.
    Approval,
    /// An approver, with a push config to a webhook that accepts every event.
    PushedApproval,
    /// A slot: echo runs one task at a time, and one task that takes hours holds it.
    Slot,
    /// The end of an idle wait of a day (`idleS`): each task works, and parks once it
    /// rested. Echo runs them all at once, so that none queues.
    Idle,
}

impl Kind {
    fn settings(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Kind::Approval => &[("FUNDI__RUNTIME__APPROVALS__ECHO", "required")],
            Kind::PushedApproval => &[
                ("FUNDI__RUNTIME__APPROVALS__ECHO", "required"),
                ("FUNDI__PUSH__ALLOWED_HOSTS", "[\"127.0.0.1\"]"),
            ],
            Kind::Slot => &[("FUNDI__RUNTIME__SKILL_CONCURRENCY__ECHO", "1")],
            Kind::Idle => &[("FUNDI__RUNTIME__SKILL_CONCURRENCY__ECHO", "10000000")],
        }
    }

    /// What each task's message asks of echo.
    fn data(self) -> Option<Value> {
        match self {
            Kind::Idle => Some(json!({"idleS": 86_400})),
            _ => None,
        }
    }

    /// Whether a new task is in a state this kind's tasks start in.
    fn created(self, state: &Value) -> bool {
        match self {
            // Submitted until its run starts, and working once it has.
            Kind::Idle => state == "TASK_STATE_SUBMITTED" || state == "TASK_STATE_WORKING",
            _ => state == "TASK_STATE_SUBMITTED",
        }
    }

    /// Tasks that keep their actor while the others wait.
    fn live(self) -> usize {
        match self {
            Kind::Approval | Kind::PushedApproval | Kind::Idle => 0,
            Kind::Slot => 1,
        }
    }
}

/// RSS per task waiting for an approver and per task queued for a slot, `count` each.
pub(crate) async fn waiting_kinds(
    fundi: &Path,
    dir: &Path,
    client: &reqwest::Client,
    credentials: &Credentials,
    count: usize,
) -> anyhow::Result<Value> {
    let measure = |kind| rss_per_task(fundi, dir, client, credentials, count, kind);
    let approval = measure(Kind::Approval).await?;
    let pushed = measure(Kind::PushedApproval).await?;
    let slot = measure(Kind::Slot).await?;
    let idle = measure(Kind::Idle).await?;
    println!(
        "\nW4 {count} tasks waiting (sled): {:.2} KiB per task waiting for an approver \
         (parked), {:.2} KiB with a push config (its delivery resting), {:.2} KiB per \
         task queued for a slot (no actor), {:.2} KiB per task whose run waits idle \
         (parked)",
        approval.bytes_per_task / 1024.0,
        pushed.bytes_per_task / 1024.0,
        slot.bytes_per_task / 1024.0,
        idle.bytes_per_task / 1024.0,
    );
    println!(
        "W4 restart (SIGKILL) with {count} tasks waiting: listening after {:.2} s waiting \
         for an approver, {:.2} s with a push config, {:.2} s queued for a slot, {:.2} s \
         waiting idle",
        approval.restart_seconds,
        pushed.restart_seconds,
        slot.restart_seconds,
        idle.restart_seconds,
    );
    Ok(
        json!({"tasks": count, "bytesPerApprovalTask": approval.bytes_per_task,
              "bytesPerPushedApprovalTask": pushed.bytes_per_task,
              "bytesPerQueuedTask": slot.bytes_per_task,
              "bytesPerIdleTask": idle.bytes_per_task,
              "restartSecondsApproval": approval.restart_seconds,
              "restartSecondsPushedApproval": pushed.restart_seconds,
              "restartSecondsQueued": slot.restart_seconds,
              "restartSecondsIdle": idle.restart_seconds}),
    )
}

/// What one kind of waiting task costs: memory, and a restart with the backlog.
struct Measured {
    bytes_per_task: f64,
    restart_seconds: f64,
}

/// The RSS per task of `count` tasks waiting for `kind`, on a fresh server, once no
/// task but those `kind` keeps live has an actor; then the time a server takes to
/// listen on that store after the first was killed.
async fn rss_per_task(
    fundi: &Path,
    dir: &Path,
    client: &reqwest::Client,
    credentials: &Credentials,
    count: usize,
    kind: Kind,
) -> anyhow::Result<Measured> {
    let data = dir.join(format!("waiting-{kind:?}").to_lowercase());
    let settings = kind.settings();
    let server = Server::start_parking_with(fundi, &data, credentials, PARK_AFTER_MS, settings)?;
    let empty = server.rss_bytes().unwrap_or_default();
    if let Kind::Slot = kind {
        // 10,000 steps a minute apart: it holds echo's one slot all along.
        let hold = json!({"steps": 10_000, "delayMs": 60_000});
        send_at_once(client, &server.url, "holding", Some(hold)).await?;
    }
    eprintln!("creating {count} tasks waiting for {kind:?}");
    let hook = match kind {
        Kind::PushedApproval => Some(webhook().await?),
        _ => None,
    };
    create(client, &server.url, count, kind, hook.as_deref()).await?;
    wait_until_live(client, &server.url, kind.live()).await?;
    if hook.is_some() {
        wait_until_metric(client, &server.url, "fundi_push_resting", count).await?;
    }
    let loaded = server.rss_bytes().unwrap_or_default();
    drop(server); // SIGKILL, with the backlog stored.
    let restarted = Server::start_parking_with(fundi, &data, credentials, PARK_AFTER_MS, settings)?;
    Ok(Measured {
        bytes_per_task: loaded.saturating_sub(empty) as f64 / count as f64,
        restart_seconds: restarted.startup.as_secs_f64(),
    })
}

/// Submits `count` echo tasks for `kind` without waiting for them, from `CREATORS`
/// workers, each with a push config to `hook` if given.
async fn create(
    client: &reqwest::Client,
    url: &str,
    count: usize,
    kind: Kind,
    hook: Option<&str>,
) -> anyhow::Result<()> {
    let (client, url, hook) = (client.clone(), url.to_owned(), hook.map(str::to_owned));
    load::each(count, CREATORS, move |_| {
        let (client, url, hook) = (client.clone(), url.clone(), hook.clone());
        async move {
            let task = match hook {
                Some(hook) => send_pushed(&client, &url, &hook).await?,
                None => send_at_once(&client, &url, "waiting", kind.data()).await?,
            };
            ensure!(
                kind.created(&task["status"]["state"]),
                "not waiting: {task}"
            );
            anyhow::Ok(())
        }
    })
    .await?;
    Ok(())
}

/// A SendMessage that returns at once, with a push config to `hook`: the task created.
async fn send_pushed(client: &reqwest::Client, url: &str, hook: &str) -> anyhow::Result<Value> {
    let mut body = send_request("SendMessage", "waiting", None);
    body["params"]["configuration"] = json!({"returnImmediately": true,
        "taskPushNotificationConfig": {"url": hook}});
    let answer = post_json(client, url, &body).await?;
    let task = &answer["result"]["task"];
    ensure!(task["id"].is_string(), "no task created: {answer}");
    Ok(task.clone())
}

/// A webhook on 127.0.0.1 that accepts every event; its URL.
async fn webhook() -> anyhow::Result<String> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/hook", listener.local_addr()?);
    let router = axum::Router::new().route("/hook", axum::routing::post(|| async { "" }));
    tokio::spawn(async move { axum::serve(listener, router).await });
    Ok(url)
}
