//! Request bodies held to a deadline and to one budget that every connection shares, so
//! that neither a slow sender nor many large bodies at once can hold the server's memory.
//!
//! Every request's body is wrapped (the [`GuardBodiesLayer`]) before any handler
//! sees it. The wrapping reads nothing by itself: a handler that refuses a request
//! without reading its body (missing credentials) costs no buffer at all. A body being
//! read takes its bytes from the budget chunk by chunk and gives them back when its
//! request has been answered; a chunk that does not fit cuts the body off (HTTP 503),
//! and so does the deadline (HTTP 408), counted from when the request's head arrived.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes, HttpBody};
use axum::extract::Request;
use axum::http::header;
use axum::response::Response;
use futures::future::BoxFuture;
use http_body::{Frame, SizeHint};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::{Instant, Sleep};
use tower::{Layer, Service};

use crate::error::ApiError;
use crate::reply;

/// Why a body was cut off before it was read whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum BodyCutOff {
    /// The sender did not finish within the read timeout.
    #[error("the request body was not received within {0} ms")]
    TimedOut(u64),
    /// The bodies being read already hold the whole budget.
    #[error("the server is holding as many request bodies as it may")]
    Busy,
}

impl From<BodyCutOff> for ApiError {
    fn from(cut: BodyCutOff) -> ApiError {
        match cut {
            BodyCutOff::TimedOut(ms) => ApiError::BodyTimedOut { limit_ms: ms },
            BodyCutOff::Busy => ApiError::BodiesBusy,
        }
    }
}

/// The budget and deadline of request bodies, shared by every connection.
#[derive(Debug)]
pub(crate) struct BodyLimits {
    budget: Arc<Semaphore>,
    read_timeout: Duration,
}

impl BodyLimits {
    /// At most `budget_bytes` of bodies held at once; each read within `read_timeout`.
    pub(crate) fn new(budget_bytes: usize, read_timeout: Duration) -> BodyLimits {
        // A semaphore counts at most `Semaphore::MAX_PERMITS`.
        BodyLimits {
            budget: Arc::new(Semaphore::new(budget_bytes.min(Semaphore::MAX_PERMITS))),
            read_timeout,
        }
    }

    /// Bytes of the budget free now.
    #[cfg(test)]
    fn available(&self) -> usize {
        self.budget.available_permits()
    }
}

/// What a guarded body holds for its request: the budget its bytes took, and why it was
/// cut off, if it was. Shared between the body and the layer, which outlives it.
#[derive(Default)]
struct Held {
    permits: Option<OwnedSemaphorePermit>,
    cut_off: Option<BodyCutOff>,
}

type Shared = Arc<Mutex<Held>>;

fn lock(held: &Shared) -> std::sync::MutexGuard<'_, Held> {
    held.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A request body read under the deadline and within the budget.
struct GuardedBody {
    inner: Body,
    /// When the body must have arrived by.
    deadline: Instant,
    /// The timer for it, made the first time the body is not there yet: a body that
    /// came with its head (most do) costs no timer.
    timer: Option<Pin<Box<Sleep>>>,
    limits: Arc<BodyLimits>,
    held: Shared,
}

impl GuardedBody {
    fn cut(&mut self, why: BodyCutOff) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        lock(&self.held).cut_off = Some(why);
        Poll::Ready(Some(Err(axum::Error::new(why))))
    }

    /// Takes `n` bytes of the budget for the request, or says the budget is spent.
    fn take(&mut self, n: usize) -> Result<(), BodyCutOff> {
        if n == 0 {
            return Ok(());
        }
        let n = u32::try_from(n).map_err(|_| BodyCutOff::Busy)?;
        let permit = self
            .limits
            .budget
            .clone()
            .try_acquire_many_owned(n)
            .map_err(|_| BodyCutOff::Busy)?;
        let mut held = lock(&self.held);
        match &mut held.permits {
            Some(permits) => permits.merge(permit),
            None => held.permits = Some(permit),
        }
        Ok(())
    }
}

impl HttpBody for GuardedBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                let n = frame.data_ref().map_or(0, Bytes::len);
                match this.take(n) {
                    Ok(()) => Poll::Ready(Some(Ok(frame))),
                    Err(why) => this.cut(why),
                }
            }
            Poll::Pending => {
                let deadline = this.deadline;
                let timer = this
                    .timer
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
                match timer.as_mut().poll(cx) {
                    Poll::Ready(()) => {
                        let ms = this.limits.read_timeout.as_millis();
                        this.cut(BodyCutOff::TimedOut(u64::try_from(ms).unwrap_or(u64::MAX)))
                    }
                    Poll::Pending => Poll::Pending,
                }
            }
            other => other,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// The layer that wraps every request's body in the deadline and the budget, holds
/// what it took until the request is answered, and answers 408 or 503 for a body cut
/// off under a handler that read it through an extractor of its own (which would say
/// 400). A tower layer rather than `axum::middleware::from_fn`: it sits on every
/// request, and costs no boxed copy of the router's service per call.
#[derive(Clone)]
pub(crate) struct GuardBodiesLayer(pub(crate) Arc<BodyLimits>);

impl<S> Layer<S> for GuardBodiesLayer {
    type Service = GuardBodies<S>;

    fn layer(&self, inner: S) -> GuardBodies<S> {
        GuardBodies {
            inner,
            limits: self.0.clone(),
        }
    }
}

/// The service [`GuardBodiesLayer`] makes.
#[derive(Clone)]
pub(crate) struct GuardBodies<S> {
    inner: S,
    limits: Arc<BodyLimits>,
}

impl<S> Service<Request> for GuardBodies<S>
where
    S: Service<Request, Response = Response, Error = Infallible>,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<Response, Infallible>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let held = Shared::default();
        let (parts, inner) = request.into_parts();
        let guarded = GuardedBody {
            inner,
            deadline: Instant::now() + self.limits.read_timeout,
            timer: None,
            limits: self.limits.clone(),
            held: held.clone(),
        };
        let answer = self
            .inner
            .call(Request::from_parts(parts, Body::new(guarded)));
        Box::pin(async move {
            let response = answer.await?;
            Ok(answered(response, &held))
        })
    }
}

/// The response to a request whose body was guarded: 408 or 503 (and the connection
/// closed) when the body was cut off; the budget the body took given back.
fn answered(mut response: Response, held: &Shared) -> Response {
    let (cut_off, permits) = {
        let mut held = lock(held);
        (held.cut_off, held.permits.take())
    };
    // The budget the body took is given back once the handler has answered.
    drop(permits);
    if let Some(why) = cut_off {
        let error = ApiError::from(why);
        let expected = error.http_refusal().map(|r| r.status);
        if expected != Some(response.status()) {
            response = reply::rest_failure(&error);
        }
        // What is left of the body is not read: the connection cannot be reused.
        response.headers_mut().insert(
            header::CONNECTION,
            header::HeaderValue::from_static("close"),
        );
    }
    response
}

#[cfg(test)]
mod tests;
