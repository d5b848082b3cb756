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

/// Whether a failure was the connection's or the server's state rather than the
/// statement's (a dropped or refused connection, a pool that gave none in time, a
/// statement canceled by its timeout, a server shutting down or starting): a write that
/// failed so may or may not have been stored.
pub(crate) fn is_transient(error: &StoreError) -> bool {
    let StoreError::Database {
        source: Some(source),
        ..
    } = error
    else {
        return false;
    };
    if source.is::<deadpool_postgres::PoolError>() {
        return true;
    }
    let Some(error) = source.downcast_ref::<tokio_postgres::Error>() else {
        return false;
    };
    match error.as_db_error() {
        None => true,
        // 08: connection exception; 57: operator intervention (query canceled by the
        // statement timeout, admin shutdown, cannot connect now); 53: insufficient
        // resources.
        Some(server) => ["08", "57", "53"]
            .iter()
            .any(|class| server.code().code().starts_with(class)),
    }
}
