//! Stopping a run: told to stop (a cancel, or a message that interrupts it), it has the
//! grace period to end, and is aborted after it.

use ractor::ActorRef;

use super::Runs;
use crate::actors::phase::{CancelWaiter, Phase, Run};
use crate::actors::slots::Slot;
use crate::actors::task_msg::TaskMsg;
use crate::actors::writer::Writer;
use crate::model::Message;

impl Runs {
    /// Tells `run` to stop and gives it the grace period; then the task is canceled (or
    /// a run starts from `restart`).
    pub(in crate::actors) fn stop_run(
        &mut self,
        myself: &ActorRef<TaskMsg>,
        run: Run,
        slot: Option<Slot>,
        waiters: Vec<CancelWaiter>,
        restart: Option<Message>,
    ) {
        run.cancel.cancel();
        let run_id = run.id;
        myself.send_after(self.settings.config.cancel_grace(), move || {
            TaskMsg::GraceExpired { run: run_id }
        });
        self.phase = Phase::Canceling {
            run: Some(run),
            slot,
            waiters,
            restart,
        };
    }

    /// Run `run`'s grace period is over: if it has not stopped, it is aborted, and the
    /// task canceled (or a run started from the message that interrupted it).
    pub(in crate::actors) async fn on_grace_expired(
        &mut self,
        writer: &mut Writer,
        myself: &ActorRef<TaskMsg>,
        run: u64,
    ) {
        let Phase::Canceling {
            run: current,
            slot,
            restart,
            ..
        } = &mut self.phase
        else {
            return;
        };
        let Some(current) = current.take_if(|r| r.id == run) else {
            return;
        };
        current.abort.abort();
        *slot = None;
        if let Some(message) = restart.take() {
            return self.restart_from(writer, myself, message);
        }
        writer
            .end_canceled(
                "canceled by request; the skill did not stop within the grace period and was aborted",
            )
            .await;
    }
}
