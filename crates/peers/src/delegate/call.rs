//! A delegation's calls to its peer: tried again while the peer is busy or unreachable
//! (as long as `give-up-after` allows, `Retry-After` honoured), never after a 401 or an
//! answer that would not change; cut short by a cancel.

use std::future::Future;
use std::time::{Duration, Instant};

use fundi_runtime::{Message, SkillContext, SkillError};
use serde_json::json;

use super::Progress;
use super::plan;
use crate::directory::PeerDirectory;
use crate::error::PeerError;
use crate::wire::Endpoint;

/// The first pause before a call is tried again; doubled each time, up to [`MAX_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(200);
const MAX_PAUSE: Duration = Duration::from_secs(30);
/// How long the peer gets to cancel its task when the local one is canceled.
const CANCEL_WAIT: Duration = Duration::from_secs(10);

/// The peer of one run, and the run's context.
pub(crate) struct Calls<'a> {
    pub(crate) peers: &'a PeerDirectory,
    pub(crate) peer: &'a str,
    pub(crate) ctx: &'a SkillContext,
    pub(crate) give_up_after: Duration,
    pub(crate) poll_max: Duration,
    /// How long the peer's task may show no change before it is followed quietly
    /// (zero: never).
    pub(crate) quiet_poll: Duration,
}

impl Calls<'_> {
    /// `call` on the peer's preferred endpoint, tried again on a transient failure.
    pub(crate) async fn retrying<T, F, Fut>(&self, call: F) -> Result<T, SkillError>
    where
        F: Fn(Endpoint) -> Fut,
        Fut: Future<Output = Result<T, PeerError>>,
    {
        let started = Instant::now();
        let mut pause = FIRST_PAUSE;
        loop {
            let result = match self.peers.endpoint(self.peer).await {
                Ok((endpoint, _)) => call(endpoint).await,
                Err(error) => Err(error),
            };
            let error = match result {
                Ok(value) => return Ok(value),
                Err(error) if !error.is_transient() => {
                    return Err(SkillError::Failed(error.to_string()));
                }
                Err(error) => error,
            };
            let left = self.give_up_after.saturating_sub(started.elapsed());
            let wait = error.retry_after().unwrap_or(pause);
            if left.is_zero() || wait > left {
                return Err(SkillError::Failed(format!(
                    "{error}; gave up after {}s (skills.delegate.give-up-after-s)",
                    started.elapsed().as_secs()
                )));
            }
            tracing::info!(peer = self.peer, %error, wait_ms = wait.as_millis() as u64, "a call to a peer will be tried again");
            self.pause(wait).await?;
            pause = (pause * 2).min(MAX_PAUSE);
        }
    }

    /// Waits `wait`, or fails with `Canceled` when the task is canceled first.
    pub(crate) async fn pause(&self, wait: Duration) -> Result<(), SkillError> {
        tokio::select! {
            () = self.ctx.cancelled() => Err(SkillError::Canceled),
            () = tokio::time::sleep(wait) => Ok(()),
        }
    }

    /// Sends the local user's `answer` to the peer's question, and records it answered.
    pub(crate) async fn forward(
        &self,
        answer: &Message,
        progress: &mut Progress,
    ) -> Result<(), SkillError> {
        let (Some(task), asked) = (progress.remote_task.clone(), progress.asked.clone()) else {
            return Ok(());
        };
        let message = plan::answer(answer, &task, progress.remote_context.as_deref());
        self.retrying(|endpoint| {
            let message = message.clone();
            async move { endpoint.send(&message).await }
        })
        .await?;
        progress.answered = asked;
        progress.asked = None;
        self.ctx.checkpoint(json!(progress)).await
    }

    /// Cancels the peer's task (see [`cancel_remote`]).
    pub(crate) async fn cancel_remote(&self, task: &str) {
        cancel_remote(self.peers, self.peer, task).await;
    }
}

/// Cancels `peer`'s task, as far as the peer lets it within [`CANCEL_WAIT`]; what fails
/// is logged (the local task is canceled whatever the peer says).
pub(crate) async fn cancel_remote(peers: &PeerDirectory, peer: &str, task: &str) {
    let cancel = async {
        let (endpoint, _) = peers.endpoint(peer).await?;
        endpoint.cancel_task(task).await
    };
    match tokio::time::timeout(CANCEL_WAIT, cancel).await {
        Ok(Ok(_)) => tracing::info!(peer, task, "canceled the peer's task"),
        Ok(Err(error)) => {
            tracing::warn!(peer, task, %error, "the peer's task could not be canceled");
        }
        Err(_) => tracing::warn!(peer, task, "the peer did not answer a cancel in time"),
    }
}
