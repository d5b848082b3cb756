//! The proxy: a listener in front of the target, its connections, and the phase they
//! are in. Dropped or shut down, it closes its listener and every connection, which is
//! what restores direct traffic.

use std::future::pending;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::json;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::AbortOnDropHandle;

use super::connection;
use super::fault::FaultKind;
use super::link::{Shared, Stage};

/// A listening proxy.
pub(crate) struct Proxy {
    local: SocketAddr,
    stage: watch::Sender<Stage>,
    stop: CancellationToken,
    /// Set, with the reason, when the proxy cannot go on (its listener could not be
    /// opened again after a down phase).
    broken: CancellationToken,
    why: Arc<Mutex<String>>,
    accepted: Arc<AtomicU64>,
    accepting: AbortOnDropHandle<()>,
}

impl Proxy {
    /// Listens on `listen` for connections to `shared.target`, in phase 0.
    pub(crate) async fn start(
        listen: SocketAddr,
        max_connections: usize,
        build: impl FnOnce(watch::Receiver<Stage>) -> Shared,
    ) -> Result<Proxy, String> {
        let listener = TcpListener::bind(listen)
            .await
            .map_err(|e| format!("the proxy could not listen on {listen}: {e}"))?;
        let local = listener
            .local_addr()
            .map_err(|e| format!("the proxy's address: {e}"))?;
        let (stage, receiver) = watch::channel(Stage {
            index: 0,
            started: Instant::now(),
        });
        let shared = Arc::new(build(receiver));
        let stop = CancellationToken::new();
        let broken = CancellationToken::new();
        let why = Arc::new(Mutex::new(String::new()));
        let accepted = Arc::new(AtomicU64::new(0));
        let accept = Accept {
            accepted: accepted.clone(),
            local,
            max_connections,
            shared,
            stop: stop.clone(),
            broken: broken.clone(),
            why: why.clone(),
        };
        // A plan that starts with the proxy down refuses connections from the start.
        let mut listener = Some(listener);
        accept.listen_for(0, &mut listener).await;
        let accepting = AbortOnDropHandle::new(tokio::spawn(accept.run(listener)));
        Ok(Proxy {
            local,
            stage,
            stop,
            broken,
            why,
            accepted,
            accepting,
        })
    }

    /// Follows the run's stage (for the probes).
    pub(crate) fn stages(&self) -> watch::Receiver<Stage> {
        self.stage.subscribe()
    }

    /// Connections accepted so far.
    pub(crate) fn connections(&self) -> u64 {
        self.accepted.load(Ordering::Relaxed)
    }

    /// Where clients connect.
    pub(crate) fn local(&self) -> SocketAddr {
        self.local
    }

    /// Moves every connection to phase `index` (the proxy starts in phase 0).
    pub(crate) fn enter(&self, index: usize) {
        self.stage.send_replace(Stage {
            index,
            started: Instant::now(),
        });
    }

    /// Resolves, with the reason, if the proxy cannot go on.
    pub(crate) async fn broken(&self) -> String {
        self.broken.cancelled().await;
        self.why.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Closes the listener and every connection, and returns once they are closed.
    pub(crate) async fn shutdown(self) {
        self.stop.cancel();
        let _ = self.accepting.await;
    }
}

struct Accept {
    accepted: Arc<AtomicU64>,
    local: SocketAddr,
    max_connections: usize,
    shared: Arc<Shared>,
    stop: CancellationToken,
    broken: CancellationToken,
    why: Arc<Mutex<String>>,
}

impl Accept {
    async fn run(self, mut listener: Option<TcpListener>) {
        let mut links = JoinSet::new();
        let mut stages = self.shared.stage.clone();
        let mut next_id = 1;
        loop {
            tokio::select! {
                () = self.stop.cancelled() => break,
                changed = stages.changed() => {
                    if changed.is_err() {
                        break;
                    }
                    let index = stages.borrow_and_update().index;
                    if !self.listen_for(index, &mut listener).await {
                        break;
                    }
                }
                accepted = accept(listener.as_ref()) => match accepted {
                    Ok((stream, _)) if links.len() >= self.max_connections => {
                        let error = format!(
                            "{} connections are open (skills.chaos-run.max-connections); \
                             a new one was closed",
                            links.len()
                        );
                        self.shared.ledger.genuine("connections", None, error);
                        drop(stream);
                    }
                    Ok((stream, _)) => {
                        links.spawn(connection::serve(stream, next_id, self.shared.clone()));
                        self.accepted.store(next_id, Ordering::Relaxed);
                        next_id += 1;
                    }
                    Err(error) => {
                        // Out of file descriptors, say: pause so as not to spin.
                        self.shared.ledger.genuine("accept", None, error.to_string());
                        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    }
                },
                Some(_) = links.join_next(), if !links.is_empty() => {}
            }
        }
        drop(listener);
        links.shutdown().await;
    }

    /// Closes the listener for a phase that takes the whole proxy down (a `down` fault
    /// of toxicity 1), and opens it again after; false when it cannot be opened.
    async fn listen_for(&self, index: usize, listener: &mut Option<TcpListener>) -> bool {
        let down = self.shared.phases[index]
            .faults
            .iter()
            .find(|f| f.kind == FaultKind::Down && f.toxicity >= 1.0);
        match (down, listener.is_some()) {
            (Some(fault), _) => {
                *listener = None;
                let detail = json!({"listener": "closed", "name": fault.name});
                self.shared
                    .ledger
                    .chaos(index, None, fault.kind.name(), None, detail);
                true
            }
            (None, false) => match TcpListener::bind(self.local).await {
                Ok(opened) => {
                    *listener = Some(opened);
                    true
                }
                Err(error) => {
                    let why = format!(
                        "the proxy could not listen on {} again after a down phase: {error}",
                        self.local
                    );
                    self.shared.ledger.genuine("listen", None, why.clone());
                    *self.why.lock().unwrap_or_else(|p| p.into_inner()) = why;
                    self.broken.cancel();
                    false
                }
            },
            _ => true,
        }
    }
}

async fn accept(listener: Option<&TcpListener>) -> std::io::Result<(TcpStream, SocketAddr)> {
    match listener {
        Some(listener) => listener.accept().await,
        None => pending().await,
    }
}
