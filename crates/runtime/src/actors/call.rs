//! Calls to actors that end when the actor does.

use std::future::Future;
use std::time::Duration;

use futures::FutureExt;
use ractor::rpc::CallResult;
use ractor::{ActorRef, Message, RpcReplyPort};

/// Why a call to an actor got no answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NoAnswer {
    /// The actor stopped (or was stopping) before it answered.
    Gone,
    /// The actor is alive but did not answer within the timeout.
    TimedOut,
}

/// Calls an actor, and stops waiting as soon as the actor has stopped.
///
/// ractor drops an actor's queued messages, and with them their reply ports, when the
/// actor stops. A send racing with that drop can land in the mailbox after it, and then
/// its reply port lives as long as any reference to the actor does, the caller's own
/// included: the caller waited out its whole timeout (seen as 30 s stalls under load,
/// with the actor `Stopped`). Callers fall back to the store, which holds everything the
/// actor wrote.
pub(crate) async fn call_actor<M: Message, T: Send + 'static>(
    actor: &ActorRef<M>,
    build: impl FnOnce(RpcReplyPort<T>) -> M,
    timeout: Duration,
) -> Result<T, NoAnswer> {
    let cell = actor.get_cell();
    let call = actor.call(build, Some(timeout));
    match answer_unless_gone(call, cell.wait(None)).await {
        Some(Ok(CallResult::Success(value))) => Ok(value),
        Some(Ok(CallResult::Timeout)) => Err(NoAnswer::TimedOut),
        Some(Ok(CallResult::SenderError) | Err(_)) | None => Err(NoAnswer::Gone),
    }
}

/// Waits for `call` to finish, or for `exit` (the actor's stop); `None` when the actor
/// stopped without an answer.
///
/// An actor answers before it stops, so when `exit` is seen, an answer it sent is there.
/// A poll can still miss it: on another thread the actor can answer and stop after the
/// poll looked at the call and before it looked at the exit (seen in CI as an accepted
/// follow-up reported as refused). So the call gets one more look (outside tokio's
/// cooperative budget, which can make a ready channel look empty).
async fn answer_unless_gone<C: Future, E: Future>(call: C, exit: E) -> Option<C::Output> {
    tokio::pin!(call);
    tokio::select! {
        // An answer that is already there wins over the actor's exit.
        biased;
        result = &mut call => Some(result),
        _ = exit => tokio::task::unconstrained(&mut call).now_or_never(),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use ractor::{Actor, ActorProcessingErr};

    use super::*;

    struct Call(RpcReplyPort<()>);

    /// Answers its calls, or (with `kept`) keeps the reply port, as a message that
    /// slipped past the actor's stop keeps it, and stops.
    struct Callee {
        kept: Option<Arc<Mutex<Vec<RpcReplyPort<()>>>>>,
    }

    impl Actor for Callee {
        type Msg = Call;
        type State = ();
        type Arguments = ();

        async fn pre_start(&self, _: ActorRef<Call>, (): ()) -> Result<(), ActorProcessingErr> {
            Ok(())
        }

        async fn handle(
            &self,
            myself: ActorRef<Call>,
            Call(reply): Call,
            _: &mut (),
        ) -> Result<(), ActorProcessingErr> {
            match &self.kept {
                Some(kept) => {
                    kept.lock().unwrap().push(reply);
                    myself.stop(None);
                }
                None => {
                    let _ = reply.send(());
                }
            }
            Ok(())
        }
    }

    #[tokio::test]
    async fn a_call_ends_when_the_actor_stops_even_if_its_reply_port_lives_on() {
        let kept = Arc::new(Mutex::new(Vec::new()));
        let callee = Callee {
            kept: Some(kept.clone()),
        };
        let (actor, _) = Actor::spawn(None, callee, ()).await.unwrap();
        // A plain call would wait out the hour; this one ends with the actor.
        let answer = tokio::time::timeout(
            Duration::from_secs(20),
            call_actor(&actor, Call, Duration::from_secs(3600)),
        )
        .await
        .expect("the call outlived its actor");
        assert_eq!(answer, Err(NoAnswer::Gone));
        assert_eq!(
            kept.lock().unwrap().len(),
            1,
            "the reply port is still alive"
        );
    }

    #[tokio::test]
    async fn an_answer_comes_back() {
        let (actor, _) = Actor::spawn(None, Callee { kept: None }, ()).await.unwrap();
        assert_eq!(
            call_actor(&actor, Call, Duration::from_secs(5)).await,
            Ok(())
        );
        actor.stop(None);
    }

    #[tokio::test]
    async fn an_answer_sent_as_the_actor_stops_is_not_lost() {
        // The actor answers and stops between the caller's look at the answer (none
        // yet) and its look at the actor (stopped): here the exit itself answers.
        let (answer, call) = tokio::sync::oneshot::channel::<u32>();
        let exit = async move {
            answer.send(7).unwrap();
        };
        assert_eq!(answer_unless_gone(call, exit).await, Some(Ok(7)));

        // Stopped with no answer: gone.
        let (answer, call) = tokio::sync::oneshot::channel::<u32>();
        let kept = answer;
        let seen = answer_unless_gone(call, std::future::ready(())).await;
        assert_eq!(seen, None);
        drop(kept);
    }
}
