//! W3 stalled subscribers: SSE subscribers that read nothing (each a connection with a
//! 4 KiB receive buffer that is never read), on one task posting 10,000 steps (echo's
//! most). A
//! subscriber that falls a queue behind is let go and would catch up from the store, so
//! the server's memory should not grow with what the task posts: the RSS once the task
//! ended, against the same task followed by no one on a fresh server.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, ensure};
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpSocket, TcpStream};

use crate::server::{Credentials, Server};
use crate::workloads::{post_json, send_at_once};

/// `count` stalled subscribers: the RSS they cost once the task ended.
pub(crate) async fn stalled_subscribers(
    fundi: &Path,
    dir: &Path,
    client: &reqwest::Client,
    credentials: &Credentials,
    count: usize,
    steps: u64,
) -> anyhow::Result<Value> {
    let run = |name: &str, stalled| {
        let data = dir.join(name);
        async move { rss_after_task(fundi, &data, client, credentials, stalled, steps).await }
    };
    let (alone, _) = run("unfollowed", 0).await?;
    let (stalled, socket_bytes) = run("stalled", count).await?;
    let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
    let per_subscriber = stalled.saturating_sub(alone) as f64 / count as f64;
    println!(
        "\nW3 {count} stalled subscribers on a task posting {steps} steps: RSS {:.0} MiB \
         after it ended (followed by none: {:.0} MiB), {:.1} KiB per stalled subscriber; \
         the kernel's TCP buffers grew by {:.0} MiB",
        mib(stalled),
        mib(alone),
        per_subscriber / 1024.0,
        mib(socket_bytes)
    );
    Ok(
        json!({"subscribers": count, "steps": steps, "rssStalledMiB": mib(stalled),
        "rssUnfollowedMiB": mib(alone), "bytesPerStalledSubscriber": per_subscriber,
        "kernelTcpBytes": socket_bytes}),
    )
}

/// The memory of the machine's TCP buffers (`/proc/net/sockstat`, in pages of 4 KiB).
fn tcp_buffer_bytes() -> u64 {
    let stat = std::fs::read_to_string("/proc/net/sockstat").unwrap_or_default();
    let pages = stat
        .lines()
        .find_map(|l| l.strip_prefix("TCP: "))
        .and_then(|l| l.split_whitespace().skip_while(|w| *w != "mem").nth(1))
        .and_then(|pages| pages.parse::<u64>().ok());
    pages.unwrap_or_default() * 4096
}

/// A fresh server runs one task of `steps` steps with `stalled` subscribers that read
/// nothing; its RSS once the task ended (the subscribers still connected), and how much
/// the kernel's TCP buffers grew meanwhile.
async fn rss_after_task(
    fundi: &Path,
    data: &Path,
    client: &reqwest::Client,
    credentials: &Credentials,
    stalled: usize,
    steps: u64,
) -> anyhow::Result<(u64, u64)> {
    let server = Server::start(fundi, data, "sled", "batched", credentials)?;
    let tcp_before = tcp_buffer_bytes();
    let data = json!({"steps": steps, "delayMs": 1});
    let task = send_at_once(client, &server.url, "stalled", Some(data)).await?;
    let id = task["id"].as_str().context("no task id")?.to_owned();
    let mut connections = Vec::with_capacity(stalled);
    for _ in 0..stalled {
        connections.push(subscribe_without_reading(&server.url, &id, credentials).await?);
    }
    wait_until_completed(client, &server.url, &id).await?;
    let rss = server.rss_bytes().unwrap_or_default();
    let tcp_grew = tcp_buffer_bytes().saturating_sub(tcp_before);
    drop(connections);
    Ok((rss, tcp_grew))
}

/// Opens a SubscribeToTask stream on a socket with a small receive buffer and never
/// reads from it.
async fn subscribe_without_reading(
    url: &str,
    id: &str,
    credentials: &Credentials,
) -> anyhow::Result<TcpStream> {
    let address = url.trim_start_matches("http://");
    let socket = TcpSocket::new_v4()?;
    socket.set_recv_buffer_size(4096)?;
    let mut stream = socket.connect(address.parse()?).await?;
    let body =
        json!({"jsonrpc": "2.0", "id": 3, "method": "SubscribeToTask", "params": {"id": id}})
            .to_string();
    let request = format!(
        "POST /a2a HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\n\
         A2A-Version: 1.0\r\nAuthorization: Bearer {}\r\nx-fundi-user-token: {}\r\n\
         Content-Length: {}\r\n\r\n{body}",
        credentials.token,
        credentials.user_token,
        body.len()
    );
    stream.write_all(request.as_bytes()).await?;
    Ok(stream)
}

async fn wait_until_completed(client: &reqwest::Client, url: &str, id: &str) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        let body = json!({"jsonrpc": "2.0", "id": 2, "method": "GetTask", "params": {"id": id}});
        let answer = post_json(client, url, &body).await?;
        if answer["result"]["status"]["state"] == "TASK_STATE_COMPLETED" {
            return Ok(());
        }
        ensure!(
            Instant::now() < deadline,
            "the followed task did not end in 600 s"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
