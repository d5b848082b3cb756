//! The session a node keeps LISTENing on its schema's channel, and what it hears: a
//! task's new events (`e:<task>`, sent by every commit with events), requests for a
//! node (`r:<node>`), and answers to requests (`a:<request>`). Notifications only wake
//! readers, which read the tables: one that is missed (the session dropped and was
//! opened again) costs time, never data, and every reader is woken after a reconnect.

use std::sync::{Arc, Weak};
use std::time::Duration;

use futures::StreamExt;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_postgres::{AsyncMessage, Connection, NoTls};
use tokio_postgres_rustls::MakeRustlsConnect;

/// What a listening session reports to: the node that reads the tables when woken.
pub(crate) trait Hearer: Send + Sync + 'static {
    /// How to open a session, and the channel to LISTEN on.
    fn session(&self) -> (tokio_postgres::Config, Option<MakeRustlsConnect>, String);
    /// Wakes every reader (after a (re)connect: what was sent meanwhile is in the tables).
    fn wake_all(&self);
    /// One notification's payload.
    fn heard(&self, payload: &str);
}

/// How long a lost session waits before it is opened again.
const RECONNECT_AFTER: Duration = Duration::from_secs(1);

/// The channel of a schema's notifications (an identifier of at most 63 bytes).
pub(crate) fn channel(schema: &str) -> String {
    let name = format!("fundi_{schema}");
    match name.len() <= 63 {
        true => name,
        false => {
            // Long schema names keep a prefix and a digest, so two stay apart; FNV-1a
            // written out, because every node (of every build) must name it alike.
            let digest = schema.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
            });
            format!("{}_{digest:016x}", &name[..46])
        }
    }
}

/// Keeps the session open while the store lives, reopening it when it drops.
pub(crate) fn listen_in_background<H: Hearer>(nodes: &Arc<H>) {
    let nodes = Arc::downgrade(nodes);
    tokio::spawn(async move {
        loop {
            let Some(current) = nodes.upgrade() else {
                return;
            };
            let (connect, tls, channel) = current.session();
            drop(current);
            let lost = match tls {
                Some(tls) => match connect.connect(tls).await {
                    Ok((client, connection)) => session(&nodes, &channel, client, connection).await,
                    Err(error) => Some(error.to_string()),
                },
                None => match connect.connect(NoTls).await {
                    Ok((client, connection)) => session(&nodes, &channel, client, connection).await,
                    Err(error) => Some(error.to_string()),
                },
            };
            match lost {
                None => return,
                Some(error) => {
                    tracing::warn!(%error, "the session listening for other nodes' notifications ended; opening another")
                }
            }
            tokio::time::sleep(RECONNECT_AFTER).await;
        }
    });
}

/// One session: LISTEN, wake every reader (what was sent while no session listened is
/// in the tables), then hand each notification on until the session ends. Why it was
/// lost, or `None` once the store is gone.
async fn session<H: Hearer, S, T>(
    nodes: &Weak<H>,
    channel: &str,
    client: tokio_postgres::Client,
    mut connection: Connection<S, T>,
) -> Option<String>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    T: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (heard, mut hearing) = tokio::sync::mpsc::unbounded_channel();
    let driver = tokio::spawn(async move {
        let mut messages = futures::stream::poll_fn(move |cx| connection.poll_message(cx));
        while let Some(message) = messages.next().await {
            match message? {
                AsyncMessage::Notification(n) => {
                    if heard.send(n.payload().to_owned()).is_err() {
                        return Ok(());
                    }
                }
                _ => continue,
            }
        }
        Ok::<(), tokio_postgres::Error>(())
    });
    let Some(current) = nodes.upgrade() else {
        driver.abort();
        return None;
    };
    let listening = client.batch_execute(&format!("LISTEN {channel}")).await;
    if let Err(error) = listening {
        driver.abort();
        return Some(error.to_string());
    }
    current.wake_all();
    drop(current);
    while let Some(payload) = hearing.recv().await {
        let Some(current) = nodes.upgrade() else {
            driver.abort();
            return None;
        };
        current.heard(&payload);
    }
    drop(client);
    nodes.upgrade()?;
    Some(match driver.await {
        Ok(Err(error)) => error.to_string(),
        _ => "the server closed it".into(),
    })
}
