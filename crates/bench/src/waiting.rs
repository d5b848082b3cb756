//! W4 waiting tasks of the other kinds: the RSS a task costs while it waits for an
//! approver (parked once it rested `PARK_AFTER_MS`) and while it is queued for a slot
//! (no actor: runtime semantics, "Queued tasks"), each on a fresh server over sled
//! against that server's RSS when empty. Tasks waiting for input: `parked`.

use std::path::Path;

use anyhow::ensure;
use serde_json::{Value, json};

use crate::load;
use crate::parked::{CREATORS, PARK_AFTER_MS, wait_until_live};
use crate::server::{Credentials, Server};
use crate::workloads::send_at_once;

/// What the tasks wait for.
#[derive(Debug, Clone, Copy)]
enum Kind {
    /// An approver: echo is gated.
    Approval,
    /// A slot: echo runs one task at a time, and one task that takes hours holds it.
    Slot,
}

impl Kind {
    fn settings(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Kind::Approval => &[("FUNDI__RUNTIME__APPROVALS__ECHO", "required")],
            Kind::Slot => &[("FUNDI__RUNTIME__SKILL_CONCURRENCY__ECHO", "1")],
        }
    }

    /// Tasks that keep their actor while the others wait.
    fn live(self) -> usize {
        match self {
            Kind::Approval => 0,
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
    let slot = measure(Kind::Slot).await?;
    println!(
        "\nW4 {count} tasks waiting (sled): {:.2} KiB per task waiting for an approver \
         (parked), {:.2} KiB per task queued for a slot (no actor)",
        approval / 1024.0,
        slot / 1024.0,
    );
    Ok(json!({"tasks": count, "bytesPerApprovalTask": approval, "bytesPerQueuedTask": slot}))
}

/// The RSS per task of `count` tasks waiting for `kind`, on a fresh server, once no
/// task but those `kind` keeps live has an actor.
async fn rss_per_task(
    fundi: &Path,
    dir: &Path,
    client: &reqwest::Client,
    credentials: &Credentials,
    count: usize,
    kind: Kind,
) -> anyhow::Result<f64> {
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
    create(client, &server.url, count).await?;
    wait_until_live(client, &server.url, kind.live()).await?;
    let loaded = server.rss_bytes().unwrap_or_default();
    Ok(loaded.saturating_sub(empty) as f64 / count as f64)
}

/// Submits `count` echo tasks without waiting for them, from `CREATORS` workers; each
/// is stored submitted (queued, or waiting for its approver).
async fn create(client: &reqwest::Client, url: &str, count: usize) -> anyhow::Result<()> {
    let (client, url) = (client.clone(), url.to_owned());
    load::each(count, CREATORS, move |_| {
        let (client, url) = (client.clone(), url.clone());
        async move {
            let task = send_at_once(&client, &url, "waiting", None).await?;
            ensure!(
                task["status"]["state"] == "TASK_STATE_SUBMITTED",
                "not waiting: {task}"
            );
            anyhow::Ok(())
        }
    })
    .await?;
    Ok(())
}
