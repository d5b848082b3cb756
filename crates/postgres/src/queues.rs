//! The requests a store gathers into few statements (see `gather`): its commits (sent in
//! `commit::batch`) and the first-message lookup of every new message (made in
//! `first_messages`). Each kind: at most four statements under way, 64 requests in one.

use chrono::{DateTime, Utc};
use fundi_runtime::TaskId;
use fundi_runtime::store::StoreError;

use crate::commit::values::{Answer, CommitValues};
use crate::gather::Gather;

/// Statements of one kind under way at once, at most.
const SENDERS: usize = 4;
/// Requests in one statement, at most.
const MOST_AT_ONCE: usize = 64;

/// The commits waiting for a statement.
pub(crate) struct CommitQueue(pub(crate) Gather<CommitValues, Result<Answer, StoreError>>);

/// A first message's owner key and message id.
pub(crate) type FirstMessage = (String, String);
/// The task a first message created, and when.
pub(crate) type Found = Option<(TaskId, DateTime<Utc>)>;

/// The first-message lookups waiting for a statement.
pub(crate) struct Lookups(pub(crate) Gather<FirstMessage, Result<Found, StoreError>>);

impl Default for CommitQueue {
    fn default() -> CommitQueue {
        CommitQueue(Gather::new(SENDERS, MOST_AT_ONCE))
    }
}

impl Default for Lookups {
    fn default() -> Lookups {
        Lookups(Gather::new(SENDERS, MOST_AT_ONCE))
    }
}
