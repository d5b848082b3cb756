//! fundi-postgres: fundi's stores (tasks, events, push configs and cursors, issues,
//! schedules, grants, the audit and chaos-event logs) on PostgreSQL, for several nodes sharing one
//! database (leases, requests handed between nodes, and notifications of their events). Each deployment (or test) keeps its tables in a schema of its own;
//! versioned migrations run at start, and a database written by a newer fundi is
//! refused. A commit is one transaction, durable when it returns (PostgreSQL's
//! `synchronous_commit`), so `settle` has nothing to wait for.

mod access;
mod cluster;
mod columns;
mod commit;
mod connect;
mod database;
mod errors;
mod first_messages;
mod gather;
mod issues;
mod lease;
mod lease_claims;
mod listener;
mod listing;
mod logs;
mod metrics;
mod migrations;
mod peers;
mod push;
mod quarantine;
mod records;
mod sessions;
mod snapshot;
mod statements;
mod store;
#[cfg(feature = "test-util")]
pub mod testing;
mod tls;

pub use connect::PostgresConfig;
pub use lease::{LeaseConfig, NodeLeases};
pub use store::PostgresStore;
