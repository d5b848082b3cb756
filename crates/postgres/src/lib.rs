//! fundi-postgres: fundi's task store (tasks, events, push configs and cursors) on
//! PostgreSQL, for several nodes sharing one
//! database. Each deployment (or test) keeps its tables in a schema of its own;
//! versioned migrations run at start, and a database written by a newer fundi is
//! refused. A commit is one transaction, durable when it returns (PostgreSQL's
//! `synchronous_commit`), so `settle` has nothing to wait for.

mod migrations;
mod push;
mod store;

pub use store::{PostgresConfig, PostgresStore};
