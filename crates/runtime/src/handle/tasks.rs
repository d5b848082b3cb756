//! `Tasks`: the runtime's tasks as a caller reaches them. Read from the store (another
//! owner's task is "not found"), settled before anything read is told, and called on
//! through their actors wherever the task runs. On this node a call goes to the actor
//! (started if need be); when another node holds the task's lease (a store several
//! nodes share, see `store::Cluster`), it is handed to that node through the store,
//! asked of the actor there, settled there, and its answer carried back (see `wire`).
//! Either way the caller gets the same answers and the same errors.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use ractor::ActorRef;
use serde_json::Value;
use tokio::sync::oneshot;

use super::WeakRuntimeHandle;
use super::wire::{Answer, Asked, NotHere, Refusal, Reply, TaskRequest};
use crate::access::Access;
use crate::actors::{LiveEvents, NoAnswer, Routed, Spawn, SupervisorMsg, TaskMsg, call_actor};
use crate::config::RuntimeConfig;
use crate::error::RuntimeError;
use crate::model::{SkillId, TaskId};
use crate::store::{Holder, Incoming, StoreError, TaskRecord, TaskStore};
use crate::subscription::{EventStream, Listen, event_stream};
use crate::wakes::Presence;

/// A task's actor and the subscriber queue it adopted as it started.
pub(super) type Attached = (ActorRef<TaskMsg>, LiveEvents);

/// The store, the supervisor that owns the tasks' actors, and whether this node may
/// reach them at all (a node cut off from a shared database may not, see `standing`).
pub(super) struct Tasks {
    store: Arc<dyn TaskStore>,
    supervisor: ActorRef<SupervisorMsg>,
    config: Arc<RuntimeConfig>,
    /// Cut off from the database: no call is routed, no work taken.
    cut_off: AtomicBool,
}

impl Tasks {
    pub(super) fn new(
        store: Arc<dyn TaskStore>,
        supervisor: ActorRef<SupervisorMsg>,
        config: Arc<RuntimeConfig>,
    ) -> Tasks {
        Tasks {
            store,
            supervisor,
            config,
            cut_off: AtomicBool::new(false),
        }
    }

    pub(super) fn store(&self) -> &Arc<dyn TaskStore> {
        &self.store
    }

    pub(super) fn supervisor(&self) -> &ActorRef<SupervisorMsg> {
        &self.supervisor
    }

    /// Whether this node is cut off from the database (see `standing`).
    pub(super) fn is_cut_off(&self) -> bool {
        self.cut_off.load(Ordering::Acquire)
    }

    pub(super) fn set_cut_off(&self, cut_off: bool) {
        self.cut_off.store(cut_off, Ordering::Release);
    }

    /// Refuses work while the node is cut off.
    pub(super) fn refuse_if_cut_off(&self) -> Result<(), RuntimeError> {
        match self.is_cut_off() {
            true => Err(StoreError::CutOff.into()),
            false => Ok(()),
        }
    }

    /// Waits until every change written so far is durable: what is read afterwards can
    /// be told.
    pub(super) async fn settle(&self) -> Result<(), RuntimeError> {
        Ok(self.store.settle().await?)
    }

    /// The task, if `access` may see it: another user's task is "not found", its
    /// existence not revealed.
    pub(super) async fn visible_record(
        &self,
        task_id: &TaskId,
        access: Access<'_>,
    ) -> Result<TaskRecord, RuntimeError> {
        match self.store.get(task_id).await {
            Ok(Some(record)) if access.sees(record.owner.as_deref()) => Ok(record),
            Ok(_) => Err(RuntimeError::TaskNotFound(task_id.clone())),
            // A task the start did not read (a store that knows tasks at rest without
            // reading them): woken, which sets it aside unless an actor holds it. The
            // caller gets the error; the next read finds it failed.
            Err(error @ StoreError::Codec { .. }) => {
                let _ = self.route(task_id, false).await;
                Err(error.into())
            }
            Err(error) => Err(error.into()),
        }
    }

    /// The error for a task actor that did not answer: it ended meanwhile (the store
    /// has its terminal state), or it is busy beyond the call timeout.
    pub(super) async fn unanswered(&self, task_id: &TaskId) -> RuntimeError {
        match self.visible_record(task_id, Access::Any).await {
            Ok(record) if record.state().is_terminal() => RuntimeError::TaskTerminal {
                id: task_id.clone(),
                state: record.state(),
            },
            Ok(_) => RuntimeError::Unavailable(format!("task {task_id} did not answer in time")),
            Err(e) => e,
        }
    }

    /// The events after `after_seq`, from the subscriber attached to the task's actor if
    /// there is one (see `subscription::event_stream`).
    pub(super) fn event_stream(
        &self,
        task_id: &TaskId,
        after_seq: u64,
        attached: Option<Attached>,
        listen: Listen,
    ) -> EventStream {
        event_stream(
            self.store.clone(),
            self.supervisor.clone(),
            task_id.clone(),
            after_seq,
            self.config.call_timeout(),
            attached,
            listen,
        )
    }

    /// Where the task's live events would come from now: its actor here, nowhere (it
    /// rests: a wake here calls the hooks), or another node. Unanswered or unreadable,
    /// `Elsewhere`: a follower then keeps following through the store.
    pub(super) async fn presence(&self, task_id: &TaskId) -> Presence {
        let ask = |reply| SupervisorMsg::Awake {
            task_id: task_id.clone(),
            reply,
        };
        match call_actor(&self.supervisor, ask, self.config.call_timeout()).await {
            Ok(true) => return Presence::Here,
            Ok(false) => {}
            Err(_) => return Presence::Elsewhere,
        }
        let Some(cluster) = self.store.cluster() else {
            return Presence::Resting;
        };
        match cluster.holder(task_id).await {
            Ok(Holder::Here) => Presence::Resting,
            Ok(Holder::Elsewhere) | Err(_) => Presence::Elsewhere,
        }
    }

    /// Starts an actor for a stored task: the task's actor, or `None` when none could
    /// start (and the task was failed).
    pub(super) async fn spawn(
        &self,
        spawn: Spawn,
    ) -> Result<Option<ActorRef<TaskMsg>>, RuntimeError> {
        let task_id = spawn.journal.task().id.clone();
        let spawn = |reply| SupervisorMsg::Spawn {
            spawn: Box::new(spawn),
            reply,
        };
        match call_actor(&self.supervisor, spawn, self.config.call_timeout()).await {
            Ok(result) => result,
            Err(_) => Err(RuntimeError::Unavailable(format!(
                "task {task_id} is stored but could not be started now; it will be recovered"
            ))),
        }
    }

    /// Queues a new task, stored submitted, for a slot of `skill` with no actor: its
    /// actor starts once it has one (`SupervisorMsg::Queue`). With the supervisor gone
    /// (the runtime stopped), the task stays stored for the next start.
    pub(super) fn queue_for_slot(&self, task_id: TaskId, skill: SkillId) {
        let _ = self
            .supervisor
            .cast(SupervisorMsg::Queue { task_id, skill });
    }

    /// Asks the task's actor, here or on the node that runs the task; `None` when the
    /// actor stopped (or there was none) before it answered.
    pub(super) async fn ask(
        &self,
        task_id: &TaskId,
        request: TaskRequest,
        timeout: Duration,
    ) -> Option<Result<Answer, RuntimeError>> {
        let asked = self.ask_waited(task_id, request, false, timeout).await;
        asked.map(|(answer, _)| answer)
    }

    /// [`Tasks::ask`]; with `outcome`, an actor here that accepts the message answers
    /// the task's outcome too. A request handed to another node has none (the caller
    /// then follows the task's events instead).
    pub(super) async fn ask_waited(
        &self,
        task_id: &TaskId,
        request: TaskRequest,
        outcome: bool,
        timeout: Duration,
    ) -> Option<Asked> {
        match self.ask_here(task_id, &request, outcome, timeout).await {
            Ok(asked) => Some(asked),
            Err(NotHere::Unanswered) => None,
            Err(NotHere::Elsewhere) => {
                let answer = self.forward(task_id, request, timeout).await?;
                Some((answer, None))
            }
        }
    }

    /// Where the task's calls go: its actor here (started if need be), or the node that
    /// holds it (`to_cancel`: see `SupervisorMsg::Route`).
    async fn route(&self, task_id: &TaskId, to_cancel: bool) -> Result<Routed, RuntimeError> {
        self.refuse_if_cut_off()?;
        let task_id = task_id.clone();
        let route = |reply| SupervisorMsg::Route {
            task_id,
            to_cancel,
            reply,
        };
        match call_actor(&self.supervisor, route, self.config.call_timeout()).await {
            Ok(result) => result,
            Err(_) => Err(RuntimeError::Unavailable(
                "the supervisor did not answer".into(),
            )),
        }
    }

    /// Asks the task's actor here, unless another node holds the task. An actor that
    /// parked (`actors::park`) after the route drops the request unanswered: it is asked
    /// once more, of the actor woken for it (a request it dropped was never applied).
    async fn ask_here(
        &self,
        task_id: &TaskId,
        request: &TaskRequest,
        outcome: bool,
        timeout: Duration,
    ) -> Result<Asked, NotHere> {
        for first in [true, false] {
            let to_cancel = matches!(request, TaskRequest::Cancel);
            let actor = match self.route(task_id, to_cancel).await {
                Err(error) => return Ok((Err(error), None)),
                Ok(Routed::Elsewhere) => return Err(NotHere::Elsewhere),
                Ok(Routed::Here(None)) => return Err(NotHere::Unanswered),
                Ok(Routed::Here(Some(actor))) => actor,
            };
            let (waiter, answer) = outcome.then(oneshot::channel).unzip();
            let asked = match request.clone() {
                TaskRequest::Deliver { message } => {
                    let deliver = |r| TaskMsg::Deliver(message, r, waiter);
                    call_actor(&actor, deliver, timeout)
                        .await
                        .map(|r| r.map(Answer::Snapshot))
                }
                TaskRequest::Cancel => call_actor(&actor, TaskMsg::Cancel, timeout)
                    .await
                    .map(|r| r.map(Answer::Task)),
                TaskRequest::Decide { decision } => {
                    let decide = |r| TaskMsg::Decide(decision, r);
                    call_actor(&actor, decide, timeout)
                        .await
                        .map(|r| r.map(Answer::Task))
                }
            };
            match asked {
                Ok(result) => return Ok((result, answer)),
                Err(NoAnswer::Gone) if first => continue,
                Err(_) => return Err(NotHere::Unanswered),
            }
        }
        Err(NotHere::Unanswered)
    }

    /// Hands the request to the node holding the task, through the store.
    async fn forward(
        &self,
        task_id: &TaskId,
        request: TaskRequest,
        timeout: Duration,
    ) -> Option<Result<Answer, RuntimeError>> {
        let Some(cluster) = self.store.cluster() else {
            return Some(Err(RuntimeError::Unavailable(format!(
                "task {task_id} is held by another node, and this store has no other"
            ))));
        };
        let reply = async {
            let request = serde_json::to_value(&request).map_err(crate::StoreError::from)?;
            let reply = cluster.forward(task_id, request, timeout).await?;
            serde_json::from_value::<Reply>(reply).map_err(|e| {
                RuntimeError::Unavailable(format!(
                    "task {task_id}'s node answered in a form this node cannot read \
                     (are the nodes on different versions?): {e}"
                ))
            })
        };
        let sent = std::time::Instant::now();
        let reply = reply.await;
        let outcome = match &reply {
            Ok(Reply::Answered(_)) => "answered",
            Ok(Reply::Refused(_)) => "refused",
            Ok(Reply::Unanswered) => "unanswered",
            Err(_) => "error",
        };
        crate::telemetry::metrics().forwarded(outcome, sent.elapsed().as_secs_f64());
        match reply {
            Ok(Reply::Answered(answer)) => Some(Ok(*answer)),
            Ok(Reply::Refused(refusal)) => Some(Err(refusal.into())),
            Ok(Reply::Unanswered) => None,
            Err(error) => Some(Err(error)),
        }
    }

    /// Answers a request another node handed to this one: asked of the task's actor
    /// here (never handed on again), settled before the answer leaves.
    async fn serve(&self, task_id: &TaskId, request: Value) -> Reply {
        let request: TaskRequest = match serde_json::from_value(request) {
            Ok(request) => request,
            Err(e) => {
                return Reply::Refused(Refusal::Unavailable {
                    message: format!(
                        "task {task_id}'s node could not read the request \
                         (are the nodes on different versions?): {e}"
                    ),
                });
            }
        };
        let timeout = self.config.call_timeout() + self.config.cancel_grace();
        let asked = match self.ask_here(task_id, &request, false, timeout).await {
            Ok((Ok(answer), _)) => self.settle().await.map(|()| answer),
            Ok((Err(error), _)) => Err(error),
            Err(NotHere::Unanswered) => return Reply::Unanswered,
            Err(NotHere::Elsewhere) => Err(RuntimeError::Unavailable(format!(
                "task {task_id} moved to another node as the request reached it; send it again"
            ))),
        };
        match asked {
            Ok(answer) => Reply::Answered(Box::new(answer)),
            Err(error) => Reply::Refused(error.into()),
        }
    }
}

/// Serves the requests other nodes hand to this one, each on its own, while the runtime
/// lives.
pub(super) fn serve_incoming(
    handle: WeakRuntimeHandle,
    mut incoming: tokio::sync::mpsc::Receiver<Incoming>,
) {
    tokio::spawn(async move {
        while let Some(Incoming {
            task_id,
            request,
            answer,
        }) = incoming.recv().await
        {
            let Some(runtime) = handle.upgrade() else {
                return;
            };
            tokio::spawn(async move {
                let reply = runtime.inner.tasks.serve(&task_id, request).await;
                match serde_json::to_value(&reply) {
                    Ok(reply) => {
                        let _ = answer.send(reply);
                    }
                    Err(error) => {
                        tracing::error!(%task_id, %error, "could not encode an answer for another node")
                    }
                }
            });
        }
    });
}
