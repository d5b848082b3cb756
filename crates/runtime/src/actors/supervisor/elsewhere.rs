//! Tasks another node may hold (a store several nodes share): no actor starts here for
//! a task whose lease another node has, an actor here that rests on a lease taken over
//! is stopped, and a caller following such a task is sent to the store instead.

use ractor::ActorRef;

use super::SupervisorState;
use crate::actors::supervisor_msg::{Routed, SupervisorMsg};
use crate::actors::task_msg::TaskMsg;
use crate::error::RuntimeError;
use crate::model::TaskId;
use crate::store::Holder;

impl SupervisorState {
    /// Whether the task's actor here rests (waits for a user) on a lease another node
    /// has taken over; such an actor is stopped. A resting task writes nothing, so its
    /// actor cannot learn of the takeover itself; stopping it runs and writes nothing.
    pub(super) async fn lost_while_resting(
        &self,
        task_id: &TaskId,
        actor: &ActorRef<TaskMsg>,
    ) -> Result<bool, RuntimeError> {
        if !self.waiting_for_input.contains(task_id) || !self.held_elsewhere(task_id).await? {
            return Ok(false);
        }
        actor.stop(Some("its task is held by another node now".into()));
        Ok(true)
    }

    /// Whether another node holds the task's lease (a store several nodes share), so
    /// that no actor may start for it here.
    pub(super) async fn held_elsewhere(&self, task_id: &TaskId) -> Result<bool, RuntimeError> {
        let Some(cluster) = self.args.store.cluster() else {
            return Ok(false);
        };
        Ok(cluster.holder(task_id).await? != Holder::Here)
    }

    /// The live actor of a task; with `wake`, one started for an unfinished task that
    /// has none (see `SupervisorMsg::Live`).
    pub(super) async fn follow(
        &mut self,
        myself: &ActorRef<SupervisorMsg>,
        task_id: TaskId,
        wake: bool,
    ) -> Routed {
        if let Some(actor) = self.live_actor(&task_id) {
            return match self.lost_while_resting(&task_id, &actor).await {
                Ok(true) => Routed::Elsewhere,
                Ok(false) | Err(_) => Routed::Here(Some(actor)),
            };
        }
        if self.shutting_down || self.cut_off {
            return Routed::Here(None);
        }
        match self.held_elsewhere(&task_id).await {
            Ok(true) => return Routed::Elsewhere,
            Ok(false) => {}
            // The subscriber reads the store instead, and learns of the error there.
            Err(_) => return Routed::Here(None),
        }
        if !wake {
            return Routed::Here(None);
        }
        Routed::Here(self.start_unfinished(myself, &task_id, None).await)
    }
}
