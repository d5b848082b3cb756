//! Requests of many callers gathered into few statements. PostgreSQL's cost of a
//! statement is mostly its own (receiving it, starting its executor, for a write the
//! transaction and its flush), little of it the rows: one statement that serves many
//! callers costs little more than one that serves one.
//!
//! A request waits in a `Gather`. At most `senders` statements are under way at once
//! (`PostgresConfig::statements_at_once`);
//! while they are, the requests that arrive wait, and the next sender to finish takes
//! all of them (up to `most`) for its next statement. A request so waits for at most the
//! statement under way and its own, never for a timer: alone, it is sent at once.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::oneshot;

/// Requests in one statement, at most.
const MOST_AT_ONCE: usize = 64;

/// Requests `T` waiting for a statement, each to be answered with an `A`.
pub(crate) struct Gather<T, A> {
    state: Mutex<Waiting<T, A>>,
    /// Statements under way at once, at most.
    senders: usize,
    /// Requests in one statement, at most.
    most: usize,
    /// The most requests one statement has carried so far (for tests).
    most_sent: AtomicUsize,
    /// The most statements under way at once so far (for tests).
    most_senders: AtomicUsize,
}

struct Waiting<T, A> {
    senders: usize,
    requests: VecDeque<Gathered<T, A>>,
}

/// A request and where its answer goes.
pub(crate) struct Gathered<T, A> {
    pub(crate) request: T,
    pub(crate) reply: oneshot::Sender<A>,
}

impl<T, A> Gather<T, A> {
    /// At most `senders` statements under way (at least one), 64 requests in one.
    pub(crate) fn new(senders: usize) -> Gather<T, A> {
        Gather {
            state: Mutex::new(Waiting {
                senders: 0,
                requests: VecDeque::new(),
            }),
            senders: senders.max(1),
            most: MOST_AT_ONCE,
            most_sent: AtomicUsize::new(0),
            most_senders: AtomicUsize::new(0),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Waiting<T, A>> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Queues a request and waits for its answer; `start` is called when a sender must
    /// be started for it (in a task of its own, taking requests with `next` under
    /// `sending`). `None`: the sender stopped before it answered.
    pub(crate) async fn ask(&self, request: T, start: impl FnOnce()) -> Option<A> {
        let (reply, answer) = oneshot::channel();
        let must_start = {
            let mut waiting = self.lock();
            waiting.requests.push_back(Gathered { request, reply });
            let must_start = waiting.senders < self.senders;
            if must_start {
                waiting.senders += 1;
                self.most_senders
                    .fetch_max(waiting.senders, Ordering::Relaxed);
            }
            must_start
        };
        if must_start {
            start();
        }
        answer.await.ok()
    }

    /// The requests the next statement carries, oldest first, no two that `clash`
    /// (the later waits for the next statement); `None`, and the sender stops, when
    /// none wait.
    pub(crate) fn next(&self, clash: impl Fn(&T, &T) -> bool) -> Option<Vec<Gathered<T, A>>> {
        let mut waiting = self.lock();
        if waiting.requests.is_empty() {
            waiting.senders -= 1;
            return None;
        }
        let mut batch: Vec<Gathered<T, A>> = Vec::new();
        let mut left = VecDeque::new();
        while let Some(gathered) = waiting.requests.pop_front() {
            let clashes = || batch.iter().any(|b| clash(&b.request, &gathered.request));
            match batch.len() < self.most && !clashes() {
                true => batch.push(gathered),
                false => left.push_back(gathered),
            }
        }
        waiting.requests = left;
        self.most_sent.fetch_max(batch.len(), Ordering::Relaxed);
        Some(batch)
    }

    /// The most requests one statement has carried so far.
    #[cfg(feature = "test-util")]
    pub(crate) fn most_sent(&self) -> usize {
        self.most_sent.load(Ordering::Relaxed)
    }

    /// The most statements under way at once so far.
    #[cfg(feature = "test-util")]
    pub(crate) fn most_under_way(&self) -> usize {
        self.most_senders.load(Ordering::Relaxed)
    }

    /// Marks a sender at work: should it unwind, its place is given back, so that
    /// another starts for the next request.
    pub(crate) fn sending(&self) -> Sending<'_, T, A> {
        Sending(self)
    }
}

/// A sender at work (see `Gather::sending`).
pub(crate) struct Sending<'g, T, A>(&'g Gather<T, A>);

impl<T, A> Drop for Sending<'_, T, A> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.lock().senders -= 1;
        }
    }
}
