//! Commits of several tasks sent as one statement. PostgreSQL's cost of a commit is
//! mostly the statement's and the transaction's own (receiving it, starting its
//! executor, committing and flushing), little of it the rows: a statement that writes
//! many tasks' rows costs little more than one that writes one task's.
//!
//! A commit waits in the store's queue. At most `SENDERS` statements are under way at
//! once; while they are, the commits that arrive wait, and the next sender to finish
//! takes all of them (up to `MOST_AT_ONCE`) in one statement. A commit so waits for at
//! most the statement under way and its own, never for a timer: alone, it is sent at
//! once, as a statement of its own.
//!
//! Each commit keeps its own version check and fence, and gives back its run slot only
//! if it is written: one commit refused does not stop the others. (A commit that takes a
//! run slot is sent alone: each new task must find a free slot of its own.) A statement PostgreSQL refuses whole (a deadlock it broke, an event it
//! already holds) stored none of its commits, which are then sent again, each as a
//! statement of its own, to get each its own answer. A statement whose connection failed
//! may or may not have been stored: each of its commits gets that answer.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use fundi_runtime::store::StoreError;
use serde_json::Value;
use tokio::sync::oneshot;
use tokio_postgres::types::ToSql;

use super::{Answer, CommitValues, column};
use crate::errors::db;
use crate::store::PostgresStore;

/// Statements of queued commits under way at once.
const SENDERS: usize = 4;
/// Most commits sent in one statement.
const MOST_AT_ONCE: usize = 64;

/// The commits waiting to be sent, and how many senders are at work.
#[derive(Default)]
pub(crate) struct CommitQueue {
    state: Mutex<Waiting>,
    /// The most commits one statement has sent so far (for tests).
    most_sent: AtomicUsize,
}

#[derive(Default)]
struct Waiting {
    senders: usize,
    commits: VecDeque<Queued>,
}

struct Queued {
    values: CommitValues,
    reply: oneshot::Sender<Result<Answer, StoreError>>,
}

impl CommitQueue {
    fn lock(&self) -> std::sync::MutexGuard<'_, Waiting> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Queues a commit; whether a sender must be started for it.
    fn push(&self, queued: Queued) -> bool {
        let mut waiting = self.lock();
        waiting.commits.push_back(queued);
        let start = waiting.senders
            < std::env::var("FUNDI_PG_SENDERS")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(SENDERS);
        if start {
            waiting.senders += 1;
        }
        start
    }

    /// The commits the next statement sends, oldest first, no two of one task (a
    /// task's later commit waits for the next statement); `None`, and the sender
    /// stops, when none wait.
    fn next(&self) -> Option<Vec<Queued>> {
        let mut waiting = self.lock();
        if waiting.commits.is_empty() {
            waiting.senders -= 1;
            return None;
        }
        let mut batch: Vec<Queued> = Vec::new();
        let mut left = VecDeque::new();
        while let Some(queued) = waiting.commits.pop_front() {
            let same_task = || batch.iter().any(|b| b.values.id == queued.values.id);
            match batch.len() < MOST_AT_ONCE && !same_task() {
                true => batch.push(queued),
                false => left.push_back(queued),
            }
        }
        waiting.commits = left;
        self.most_sent.fetch_max(batch.len(), Ordering::Relaxed);
        Some(batch)
    }

    /// The most commits one statement has sent so far.
    #[cfg(feature = "test-util")]
    pub(crate) fn most_sent(&self) -> usize {
        self.most_sent.load(Ordering::Relaxed)
    }
}

/// A sender at work; should it unwind, its place is given back so that another starts.
struct Sending<'q>(&'q CommitQueue);

impl Drop for Sending<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.lock().senders -= 1;
        }
    }
}

impl PostgresStore {
    /// Sends a commit with the others waiting beside it (see the module docs).
    pub(super) async fn send_queued(&self, values: CommitValues) -> Result<Answer, StoreError> {
        let (reply, answer) = oneshot::channel();
        if self.commits.push(Queued { values, reply }) {
            let store = self.clone();
            tokio::spawn(async move { store.send_waiting().await });
        }
        answer.await.unwrap_or_else(|_| {
            Err(StoreError::Unreachable {
                what: "the sender of a commit stopped before PostgreSQL answered".into(),
                source: None,
            })
        })
    }

    async fn send_waiting(&self) {
        let _sending = Sending(&self.commits);
        while let Some(batch) = self.commits.next() {
            self.send_batch(batch).await;
        }
    }

    async fn send_batch(&self, mut batch: Vec<Queued>) {
        if batch.len() == 1
            && let Some(one) = batch.pop()
        {
            let _ = one.reply.send(self.send_alone(&one.values).await);
            return;
        }
        match self.send_together(&batch).await {
            Together::Answered(answers) => {
                for (queued, answer) in batch.into_iter().zip(answers) {
                    let answer = answer.unwrap_or_else(|| {
                        Err(StoreError::damaged(
                            "PostgreSQL's answer to a commit of several tasks left one out",
                        ))
                    });
                    let _ = queued.reply.send(answer);
                }
            }
            Together::Refused => {
                let alone = batch.iter().map(|queued| self.send_alone(&queued.values));
                let answers = futures::future::join_all(alone).await;
                for (queued, answer) in batch.into_iter().zip(answers) {
                    let _ = queued.reply.send(answer);
                }
            }
            Together::Lost(error) => {
                let what = match db(error) {
                    StoreError::Unreachable { what, .. } => what,
                    other => other.to_string(),
                };
                for queued in batch {
                    let _ = queued.reply.send(Err(StoreError::Unreachable {
                        what: what.clone(),
                        source: None,
                    }));
                }
            }
        }
    }

    /// Sends `batch` as one statement.
    async fn send_together(&self, batch: &[Queued]) -> Together {
        let arrays = Arrays::of(batch.iter().map(|queued| &queued.values));
        // Without a connection, each commit waits for one of its own (and so gets
        // its own answer).
        let Ok(client) = self.client().await else {
            return Together::Refused;
        };
        let sent = async {
            let prepared = client.prepare_cached(&self.hot.batch_commit).await?;
            let params = arrays.params(self.leases.is_some());
            client.query(&prepared, &params).await
        };
        let rows = match sent.await {
            Ok(rows) => rows,
            Err(error) if error.as_db_error().is_some() => return Together::Refused,
            Err(error) => return Together::Lost(error),
        };
        let mut answers: Vec<Option<Result<Answer, StoreError>>> =
            batch.iter().map(|_| None).collect();
        for row in &rows {
            let answer = || {
                Ok(Answer {
                    written: column(row, 1)?,
                    found: column(row, 2)?,
                    holder: column(row, 3)?,
                    slot: None,
                })
            };
            let position: Option<i64> = column(row, 0).ok();
            let at = position.and_then(|n| usize::try_from(n - 1).ok());
            if let Some(slot) = at.and_then(|at| answers.get_mut(at)) {
                *slot = Some(answer());
            }
        }
        Together::Answered(answers)
    }
}

/// What became of a statement of several commits.
enum Together {
    /// Each commit's answer, in its order (`None` where the statement's answer left
    /// one out, which it never should).
    Answered(Vec<Option<Result<Answer, StoreError>>>),
    /// PostgreSQL refused it whole (or no connection was had for it): none of its
    /// commits was stored.
    Refused,
    /// Its connection failed: its commits may or may not have been stored.
    Lost(tokio_postgres::Error),
}

/// The commits of one statement as its arrays (see `statements::batch` for the order).
struct Arrays<'v> {
    ids: Vec<&'v str>,
    versions: Vec<i64>,
    records: Vec<&'v Value>,
    contexts: Vec<&'v str>,
    states: Vec<&'static str>,
    terminals: Vec<bool>,
    owners: Vec<Option<&'v str>>,
    updated: Vec<i64>,
    expected: Vec<i64>,
    event_tasks: Vec<&'v str>,
    seqs: Vec<i64>,
    bodies: Vec<&'v Value>,
    first_owners: Vec<&'v str>,
    message_ids: Vec<&'v str>,
    first_tasks: Vec<&'v str>,
    created: Vec<i64>,
    node: Option<&'v str>,
    ttl: Option<i64>,
    epochs: Vec<i64>,
    skills: Vec<&'v str>,
    given_back: Vec<Option<i32>>,
}

impl<'v> Arrays<'v> {
    fn of(commits: impl Iterator<Item = &'v CommitValues>) -> Arrays<'v> {
        let mut arrays = Arrays {
            ids: Vec::new(),
            versions: Vec::new(),
            records: Vec::new(),
            contexts: Vec::new(),
            states: Vec::new(),
            terminals: Vec::new(),
            owners: Vec::new(),
            updated: Vec::new(),
            expected: Vec::new(),
            event_tasks: Vec::new(),
            seqs: Vec::new(),
            bodies: Vec::new(),
            first_owners: Vec::new(),
            message_ids: Vec::new(),
            first_tasks: Vec::new(),
            created: Vec::new(),
            node: None,
            ttl: None,
            epochs: Vec::new(),
            skills: Vec::new(),
            given_back: Vec::new(),
        };
        for commit in commits {
            arrays.push(commit);
        }
        arrays
    }

    fn push(&mut self, commit: &'v CommitValues) {
        let id = commit.id.as_str();
        self.ids.push(id);
        self.versions.push(commit.version);
        self.records.push(&commit.body);
        self.contexts.push(&commit.context_id);
        self.states.push(commit.state);
        self.terminals.push(commit.terminal);
        self.owners.push(commit.owner.as_deref());
        self.updated.push(commit.updated);
        self.expected.push(commit.expected);
        self.event_tasks.extend(commit.seqs.iter().map(|_| id));
        self.seqs.extend(&commit.seqs);
        self.bodies.extend(&commit.bodies);
        if let (Some(owner), Some(message), Some(created)) =
            (&commit.first_owner, &commit.message_id, commit.created)
        {
            self.first_owners.push(owner);
            self.message_ids.push(message);
            self.first_tasks.push(id);
            self.created.push(created);
        }
        self.node = commit.node.as_deref();
        self.ttl = commit.ttl;
        self.epochs.push(commit.epoch.unwrap_or(-1));
        self.skills.push(&commit.skill);
        self.given_back.push(commit.given_back);
    }

    fn params(&self, leased: bool) -> Vec<&(dyn ToSql + Sync)> {
        let mut params: Vec<&(dyn ToSql + Sync)> = vec![
            &self.ids,
            &self.versions,
            &self.records,
            &self.contexts,
            &self.states,
            &self.terminals,
            &self.owners,
            &self.updated,
            &self.expected,
            &self.event_tasks,
            &self.seqs,
            &self.bodies,
            &self.first_owners,
            &self.message_ids,
            &self.first_tasks,
            &self.created,
        ];
        if leased {
            params.extend([
                &self.node as &(dyn ToSql + Sync),
                &self.ttl,
                &self.epochs,
                &self.skills,
                &self.given_back,
            ]);
        }
        params
    }
}
