//! Calls to actors that end when the actor does.

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
    tokio::pin!(call);
    let result = tokio::select! {
        // An answer that is already there wins over the actor's exit.
        biased;
        result = &mut call => result,
        _ = cell.wait(None) => {
            // An actor answers before it stops, so an answer it sent is there by now.
            // The first branch can still have missed it: on another thread the actor
            // can answer and stop after this poll looked at the answer and before it
            // looked at the actor (seen in CI as an accepted follow-up reported as
            // refused). Look once more (outside tokio's cooperative budget, which can
            // make a ready channel look empty).
            match tokio::task::unconstrained(&mut call).now_or_never() {
                Some(result) => result,
                None => return Err(NoAnswer::Gone),
            }
        }
    };
    match result {
        Ok(CallResult::Success(value)) => Ok(value),
        Ok(CallResult::Timeout) => Err(NoAnswer::TimedOut),
        Ok(CallResult::SenderError) | Err(_) => Err(NoAnswer::Gone),
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
}
