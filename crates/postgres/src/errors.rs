//! PostgreSQL's errors as the store's: the server's own words where it gave some, the
//! client's error kept as the source.

use fundi_runtime::StoreError;

/// A PostgreSQL error as the store's, with the server's own words when it gave some.
pub(crate) fn db(error: tokio_postgres::Error) -> StoreError {
    let what = match error.as_db_error() {
        Some(server) => format!("{} ({})", server.message(), server.code().code()),
        None => fundi_runtime::error_chain(&error),
    };
    StoreError::database_failed(what, error)
}

/// No connection from the pool.
pub(crate) fn pool_error(error: impl std::error::Error + Send + Sync + 'static) -> StoreError {
    let what = format!(
        "no connection to PostgreSQL: {}",
        fundi_runtime::error_chain(&error)
    );
    StoreError::database_failed(what, error)
}
