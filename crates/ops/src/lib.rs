//! fundi-ops: the operations records and services around fundi's tasks, each with its
//! store trait, its in-memory store, and (feature `test-util`) the contract every other
//! backend runs (`fundi-store-sled`, `fundi-postgres`):
//!
//! - [`issues`]: findings of the auditing skills, merged by fingerprint, held by one heal
//!   at a time;
//! - [`schedules`]: recurring runs, cron in a time zone, and the [`schedules::Scheduler`]
//!   that fires them into a runtime;
//! - [`grants`]: client credentials a person vends and revokes;
//! - [`access`]: requests for access by agents, which a person approves into grants;
//! - [`audit`]: what operators and approvers did;
//! - [`chaos`]: the faults chaos skills injected on purpose;
//! - [`sessions`]: the web console's sign-in links and sessions;
//! - [`inbox`]: proposals other agents send that a local agent answers;
//! - [`addresses`]: the special-purpose addresses fundi never connects to on a user's
//!   behalf.
//!
//! None of it is needed to run tasks: an embedder of `fundi-runtime` alone compiles none
//! of it (nor cron, nor time zones).

pub mod access;
pub mod addresses;
pub mod audit;
pub mod chaos;
pub mod grants;
pub mod inbox;
pub mod issues;
pub mod peers;
pub mod resolver;
pub mod schedules;
pub mod sessions;
#[cfg(any(test, feature = "test-util"))]
pub mod testing;
