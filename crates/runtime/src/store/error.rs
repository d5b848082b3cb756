//! The storage layer's error: what a store could not do, and why.

use thiserror::Error;

use crate::model::TaskId;

/// Errors of the storage layer.
#[derive(Debug, Error)]
pub enum StoreError {
    /// The storage engine failed (I/O, corruption); the engine's own error is the source.
    #[error("storage engine error: {0}")]
    Engine(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// Another process holds the store (its directory's lock); nothing was changed.
    #[error("another process holds the store: {0}")]
    Locked(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// A file operation of the store's own failed (syncing sled's log, say).
    #[error("{what}: {source}")]
    Io {
        /// What the store was doing, and on which file.
        what: String,
        /// Why it failed.
        source: std::io::Error,
    },
    /// The store's blocking work (a flush on the blocking pool) did not finish.
    #[error("the store's background work stopped: {0}")]
    Background(#[from] tokio::task::JoinError),
    /// Stored bytes could not be decoded (or a value could not be encoded).
    #[error("stored data could not be decoded: {what}")]
    Codec {
        /// What is wrong, and where.
        what: String,
        /// The decoder's own error, when one failed.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
    /// The store was written by a newer version of fundi, in a layout this one cannot
    /// read; nothing was changed.
    #[error(
        "the store was written by a newer fundi (store format {found}; this build reads \
         formats up to {supported}): run that version or a later one on it"
    )]
    NewerFormat {
        /// The store's format.
        found: u64,
        /// The newest format this build reads.
        supported: u64,
    },
    /// A database server the store talks to failed or refused (PostgreSQL), or its
    /// settings cannot work.
    #[error("database error: {what}")]
    Database {
        /// What failed, in the server's own words where it gave some.
        what: String,
        /// The client's own error, when one failed.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
    /// The database did not answer, or dropped the connection (it restarts, fails over,
    /// or answers too slowly: a statement timeout): trying again later may succeed.
    #[error("the database is unreachable now ({what}); try again")]
    Unreachable {
        /// What failed, in the client's or the server's words.
        what: String,
        /// The client's own error.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
    /// The task is leased to another node now (its lease expired and was taken over):
    /// this one may no longer write it, and stops its run (shared stores only).
    #[error(
        "task {task_id} is now leased to another node ({holder}); this node may no longer write it"
    )]
    Fenced {
        /// The task.
        task_id: TaskId,
        /// The node holding it, as far as the store could tell.
        holder: String,
    },
    /// This node could not renew its leases within the renew deadline (it lost the
    /// database, or was paused): it stopped its runs and writes nothing until it holds
    /// the database again; the client may retry (shared stores only).
    #[error(
        "this node has lost the database (it could not renew its leases in time); it takes \
         no work until it holds the database again: retry, or ask another node"
    )]
    CutOff,
    /// A request handed to the node running the task got no answer in time (that node
    /// is busy, or died and its task waits to be taken over).
    #[error(
        "task {task_id} runs on node {holder}, which did not answer within {waited:?}; try again"
    )]
    Unanswered {
        /// The task.
        task_id: TaskId,
        /// The node it was handed to, as far as the store could tell.
        holder: String,
        /// How long the caller waited.
        waited: std::time::Duration,
    },
    /// Another writer changed the task first (optimistic concurrency).
    #[error("task {task_id} changed concurrently: expected version {expected}, found {found}")]
    Conflict {
        /// The task.
        task_id: TaskId,
        /// The version the writer read.
        expected: u64,
        /// The version in the store.
        found: u64,
    },
}

impl StoreError {
    /// A file operation of the store's own that failed with `source`.
    pub fn io(what: impl Into<String>, source: std::io::Error) -> StoreError {
        StoreError::Io {
            what: what.into(),
            source,
        }
    }

    /// The storage engine's error `source`.
    pub fn engine(source: impl std::error::Error + Send + Sync + 'static) -> StoreError {
        StoreError::Engine(Box::new(source))
    }

    /// Stored data that is damaged: `what` says how, and where.
    pub fn damaged(what: impl Into<String>) -> StoreError {
        StoreError::Codec {
            what: what.into(),
            source: None,
        }
    }

    /// The database's settings or answers cannot work: `what` says why.
    pub fn database(what: impl Into<String>) -> StoreError {
        StoreError::Database {
            what: what.into(),
            source: None,
        }
    }

    /// A run slot shared by the nodes was asked of a store that no other node shares
    /// (see [`TaskStore::create_with_run_slot`]): the caller's mistake.
    pub fn no_shared_slots() -> StoreError {
        StoreError::database("a shared run slot was asked of a store that no other node shares")
    }

    /// The database client failed with `source`; `what` says what failed.
    pub fn database_failed(
        what: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> StoreError {
        StoreError::Database {
            what: what.into(),
            source: Some(Box::new(source)),
        }
    }

    /// Whether opening failed because another process holds the store.
    pub fn is_locked(&self) -> bool {
        matches!(self, StoreError::Locked(_))
    }

    /// The optimistic-concurrency check every store makes before a write.
    pub fn check_version(task_id: &TaskId, expected: u64, found: u64) -> Result<(), StoreError> {
        if found == expected {
            Ok(())
        } else {
            Err(StoreError::Conflict {
                task_id: task_id.clone(),
                expected,
                found,
            })
        }
    }
}

impl From<serde_json::Error> for StoreError {
    fn from(e: serde_json::Error) -> Self {
        StoreError::Codec {
            what: e.to_string(),
            source: Some(Box::new(e)),
        }
    }
}
