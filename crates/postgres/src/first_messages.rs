//! The lookup every new message makes for a task its id created already (so that a
//! message sent again finds its task), gathered: lookups that wait together go in one
//! statement (see `gather`). A lookup changes nothing, so a statement of several that
//! fails is simply made again lookup by lookup, each getting its own answer.

use std::sync::Arc;

use chrono::{DateTime, TimeZone, Utc};
use deadpool_postgres::Pool;
use fundi_runtime::TaskId;
use fundi_runtime::store::StoreError;

use crate::columns::read_column;
use crate::errors::{db, pool_error, unanswered};
use crate::gather::{Gather, Gathered};
use crate::statements::HotStatements;

/// A first message's owner key and message id.
type FirstMessage = (String, String);
/// What a lookup's rows are, for an error that names them.
const ROW: &str = "a first message's row";

/// The task a first message created, and when.
pub(crate) type Found = Option<(TaskId, DateTime<Utc>)>;

/// The first-message lookups of one store, and those waiting to be sent together.
pub(crate) struct FirstMessages {
    pool: Pool,
    hot: Arc<HotStatements>,
    waiting: Gather<FirstMessage, Result<Found, StoreError>>,
}

/// A row's task id (column `at`) and creation time (the next column); `None` for none
/// (NULLs, as an outer join gives them) or a time no date can hold.
pub(crate) fn found(row: &tokio_postgres::Row, at: usize) -> Result<Found, StoreError> {
    let id: Option<String> = read_column(row, at, ROW)?;
    let created: Option<i64> = read_column(row, at + 1, ROW)?;
    Ok(id.zip(created).and_then(|(id, created)| {
        let at = Utc.timestamp_millis_opt(created).single()?;
        Some((TaskId::from(id), at))
    }))
}

impl FirstMessages {
    pub(crate) fn new(
        pool: Pool,
        hot: Arc<HotStatements>,
        statements_at_once: usize,
    ) -> FirstMessages {
        FirstMessages {
            pool,
            hot,
            waiting: Gather::new(statements_at_once),
        }
    }

    /// The most lookups one statement has carried so far.
    #[cfg(feature = "test-util")]
    pub(crate) fn most_sent_at_once(&self) -> usize {
        self.waiting.most_sent()
    }

    /// The task the first message `message_id` of `owner_key` created, and when.
    pub(crate) async fn task(
        self: &Arc<Self>,
        owner_key: String,
        message_id: String,
    ) -> Result<Found, StoreError> {
        let start = || {
            let lookups = self.clone();
            tokio::spawn(async move { lookups.send_waiting().await });
        };
        let answer = self.waiting.ask((owner_key, message_id), start).await;
        answer.unwrap_or_else(|| Err(unanswered("lookup")))
    }

    async fn client(&self) -> Result<deadpool_postgres::Object, StoreError> {
        self.pool.get().await.map_err(pool_error)
    }

    async fn send_waiting(&self) {
        let _sending = self.waiting.sending();
        while let Some(batch) = self.waiting.next(|_, _| false) {
            let together = match batch.len() {
                1 => None,
                _ => self.look_up_together(&batch).await.ok(),
            };
            match together {
                Some(answers) => {
                    for (gathered, answer) in batch.into_iter().zip(answers) {
                        let _ = gathered.reply.send(answer);
                    }
                }
                None => {
                    let alone = batch.iter().map(|g| self.look_up_alone(&g.request));
                    let answers = futures::future::join_all(alone).await;
                    for (gathered, answer) in batch.into_iter().zip(answers) {
                        let _ = gathered.reply.send(answer);
                    }
                }
            }
        }
    }

    async fn look_up_alone(
        &self,
        (owner_key, message_id): &FirstMessage,
    ) -> Result<Found, StoreError> {
        let client = self.client().await?;
        let read = client
            .prepare_cached(&self.hot.created_by)
            .await
            .map_err(db)?;
        let row = client
            .query_opt(&read, &[owner_key, message_id])
            .await
            .map_err(db)?;
        Ok(row.map(|row| found(&row, 0)).transpose()?.flatten())
    }

    /// Each lookup's answer, in their order.
    async fn look_up_together(
        &self,
        batch: &[Gathered<FirstMessage, Result<Found, StoreError>>],
    ) -> Result<Vec<Result<Found, StoreError>>, StoreError> {
        let owner_keys: Vec<&str> = batch.iter().map(|g| g.request.0.as_str()).collect();
        let message_ids: Vec<&str> = batch.iter().map(|g| g.request.1.as_str()).collect();
        let client = self.client().await?;
        let read = client
            .prepare_cached(&self.hot.created_by_many)
            .await
            .map_err(db)?;
        let rows = client
            .query(&read, &[&owner_keys, &message_ids])
            .await
            .map_err(db)?;
        let mut answers: Vec<Result<Found, StoreError>> = batch.iter().map(|_| Ok(None)).collect();
        for row in &rows {
            let position: i64 = read_column(row, 0, ROW)?;
            let at = usize::try_from(position - 1).ok();
            if let Some(answer) = at.and_then(|at| answers.get_mut(at)) {
                *answer = found(row, 1);
            }
        }
        Ok(answers)
    }
}
