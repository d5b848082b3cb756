//! fundi-store-sled: fundi's embedded default store, on sled.
//!
//! [`SledStore`] keeps tasks, their events, push configs and cursors in one sled
//! database (the layout: `layout`), and implements the runtime's [`TaskStore`] and
//! [`PushStore`]; the stores of the side domains (issues, schedules, grants, the audit
//! and chaos logs) keep their records in trees of the same database.
//!
//! [`TaskStore`]: fundi_runtime::store::TaskStore
//! [`PushStore`]: fundi_runtime::store::PushStore

mod access;
mod active_set;
mod audit;
mod chaos;
mod commit;
mod counts;
mod encoded;
mod flusher;
mod grants;
mod issues;
mod layout;
mod live_index;
mod log_sync;
mod open;
mod peers;
mod positions;
mod push;
mod quarantine;
mod read;
mod repair;
mod rest;
mod resting;
mod retention;
mod schedules;
mod store;
mod task_store;
#[cfg(feature = "test-util")]
pub mod testing;
mod unfinished;

pub use access::SledAccessRequestStore;
pub use audit::SledAuditLog;
pub use chaos::SledChaosLog;
pub use grants::SledGrantStore;
pub use issues::SledIssueStore;
pub use peers::SledPeerStore;
pub use schedules::SledScheduleStore;
pub use store::{DEFAULT_CACHE_BYTES, Durability, SledStore};

#[cfg(test)]
mod quarantine_tests;
#[cfg(test)]
mod tests;
