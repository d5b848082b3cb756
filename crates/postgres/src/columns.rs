//! How the store's values sit in PostgreSQL's columns: JSON read back without a panic, an
//! owner as a key, times as milliseconds.

use chrono::{DateTime, Utc};
use fundi_runtime::StoreError;

/// A JSON column of `row` decoded straight into `T`: a value that cannot be read (too
/// deep for serde_json, say, or of an older shape) is an error, never a panic.
pub(crate) fn decode_column<T: serde::de::DeserializeOwned>(
    row: &tokio_postgres::Row,
    index: usize,
) -> Result<T, StoreError> {
    row.try_get::<_, tokio_postgres::types::Json<T>>(index)
        .map(|tokio_postgres::types::Json(value)| value)
        .map_err(|error| StoreError::Codec {
            what: fundi_runtime::error_chain(&error),
            source: Some(Box::new(error)),
        })
}

/// Column `index` of `row`, of what a row of `what` holds: a value of another type, or a
/// NULL where none is allowed, is an error naming `what`.
pub(crate) fn read_column<'r, T: tokio_postgres::types::FromSql<'r>>(
    row: &'r tokio_postgres::Row,
    index: usize,
    what: &str,
) -> Result<T, StoreError> {
    row.try_get(index).map_err(|error| StoreError::Codec {
        what: format!("{what}: {}", fundi_runtime::error_chain(&error)),
        source: Some(Box::new(error)),
    })
}

pub(crate) fn owner_key(owner: Option<&str>) -> String {
    match owner {
        Some(user) => format!("u:{user}"),
        None => "-".into(),
    }
}

pub(crate) fn millis(at: DateTime<Utc>) -> i64 {
    at.timestamp_millis()
}
