//! Commits of several tasks sent as one statement (see `gather`: at most
//! four such statements under way, the commits that arrive meanwhile sent together in
//! the next, up to 64, never two of one task).
//!
//! Each commit keeps its own version check and fence, gives back its run slot only if
//! it is written, and a new task that takes a run slot gets one of its own or is not
//! written: one commit refused does not stop the others. A statement
//! PostgreSQL refuses whole (a deadlock it broke, an event it already holds) stored none
//! of its commits, which are then sent again, each as a statement of its own, to get
//! each its own answer. A statement whose connection failed may or may not have been
//! stored: each of its commits gets that answer.

use fundi_runtime::store::StoreError;
use serde_json::Value;
use tokio_postgres::types::ToSql;

use std::sync::Arc;

use super::{Answer, CommitValues, Commits, column};
use crate::errors::{db, unanswered};
use crate::first_messages::found;
use crate::gather::Gathered;

type Queued = Gathered<CommitValues, Result<Answer, StoreError>>;

impl Commits {
    /// Sends a commit with the others waiting beside it (see the module docs).
    pub(super) async fn send_queued(
        self: &Arc<Self>,
        values: CommitValues,
    ) -> Result<Answer, StoreError> {
        let start = || {
            let commits = self.clone();
            tokio::spawn(async move { commits.send_waiting().await });
        };
        let answer = self.waiting.ask(values, start).await;
        answer.unwrap_or_else(|| Err(unanswered("commit")))
    }

    async fn send_waiting(&self) {
        let _sending = self.waiting.sending();
        let same_task = |a: &CommitValues, b: &CommitValues| a.id == b.id;
        while let Some(batch) = self.waiting.next(same_task) {
            self.send_batch(batch).await;
        }
    }

    async fn send_batch(&self, mut batch: Vec<Queued>) {
        if batch.len() == 1
            && let Some(one) = batch.pop()
        {
            let _ = one.reply.send(self.send_alone(&one.request).await);
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
                let alone = batch.iter().map(|queued| self.send_alone(&queued.request));
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
        let arrays = Arrays::of(batch.iter().map(|queued| &queued.request));
        // Without a connection, each commit waits for one of its own (and so gets
        // its own answer).
        let Ok(client) = self.client().await else {
            return Together::Refused;
        };
        let commits = batch.iter().map(|queued| &queued.request);
        if self.ensure_slot_rows(&client, commits).await.is_err() {
            return Together::Refused;
        }
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
                    slot: column(row, 4)?,
                    had: found(row, 5)?,
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
    records: Vec<Option<&'v Value>>,
    contexts: Vec<&'v str>,
    states: Vec<&'static str>,
    terminals: Vec<bool>,
    owners: Vec<Option<&'v str>>,
    updated: Vec<i64>,
    expected: Vec<i64>,
    tails_after: Vec<Option<i64>>,
    checkpoints: Vec<Option<&'v Value>>,
    event_tasks: Vec<&'v str>,
    seqs: Vec<i64>,
    bodies: Vec<&'v Value>,
    first_owners: Vec<&'v str>,
    message_ids: Vec<&'v str>,
    first_tasks: Vec<&'v str>,
    created: Vec<i64>,
    cutoffs: Vec<Option<i64>>,
    node: Option<&'v str>,
    ttl: Option<i64>,
    epochs: Vec<i64>,
    skills: Vec<&'v str>,
    given_back: Vec<Option<i32>>,
    limits: Vec<Option<i32>>,
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
            tails_after: Vec::new(),
            checkpoints: Vec::new(),
            event_tasks: Vec::new(),
            seqs: Vec::new(),
            bodies: Vec::new(),
            first_owners: Vec::new(),
            message_ids: Vec::new(),
            first_tasks: Vec::new(),
            created: Vec::new(),
            cutoffs: Vec::new(),
            node: None,
            ttl: None,
            epochs: Vec::new(),
            skills: Vec::new(),
            given_back: Vec::new(),
            limits: Vec::new(),
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
        self.records.push(commit.body.as_ref());
        self.contexts.push(&commit.context_id);
        self.states.push(commit.state);
        self.terminals.push(commit.terminal);
        self.owners.push(commit.owner.as_deref());
        self.updated.push(commit.updated);
        self.expected.push(commit.expected);
        self.tails_after.push(commit.tail_after);
        self.checkpoints.push(commit.checkpoint.as_ref());
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
            self.cutoffs.push(commit.cutoff);
        }
        self.node = commit.node.as_deref();
        self.ttl = commit.ttl;
        self.epochs.push(commit.epoch.unwrap_or(-1));
        self.skills.push(&commit.skill);
        self.given_back.push(commit.given_back);
        self.limits.push(commit.limit);
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
            &self.tails_after,
            &self.checkpoints,
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
                &self.limits,
            ]);
        }
        params.push(&self.cutoffs);
        params
    }
}
