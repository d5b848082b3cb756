//! Test helpers (feature `test-util`): the contracts every backend of these records
//! keeps (`records_contract`: issues, grants, the audit and chaos logs;
//! `session_contract`: console sessions; `access_contract`: requests for access), and a schedule to store.

use chrono::Utc;

pub mod access_contract;
pub mod records_contract;
pub mod session_contract;

/// A nightly schedule (03:00 UTC, skill `echo`, owned by `ann`) next due at `next_fire`.
pub fn schedule(id: &str, next_fire: chrono::DateTime<Utc>) -> crate::schedules::Schedule {
    crate::schedules::Schedule {
        id: id.into(),
        spec: crate::schedules::NewSchedule {
            skill: "echo".into(),
            cron: "0 3 * * *".into(),
            time_zone: None,
            data: None,
            text: Some("x".into()),
        },
        zone: "UTC".into(),
        owner: Some("ann".into()),
        client: None,
        scopes: None,
        paused: false,
        created_at: Utc::now(),
        next_fire,
        fired: 0,
        skipped: 0,
        last: None,
    }
}
