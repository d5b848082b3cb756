//! PostgreSQL's errors as the store's: the server's own words where it gave some, the
//! client's error kept as the source, and a database that does not answer told apart
//! (`Unreachable`) from one that refused the statement.

use fundi_runtime::StoreError;

/// A PostgreSQL error as the store's, with the server's own words when it gave some: a
/// failure of the connection or of the server's state rather than of the statement (a
/// dropped or refused connection, a statement canceled by its timeout, a server
/// shutting down or starting, out of resources) is `Unreachable`, which a caller may
/// retry; a write that failed so may or may not have been stored.
pub(crate) fn db(error: tokio_postgres::Error) -> StoreError {
    let (what, transient) = match error.as_db_error() {
        // 08: connection exception; 57: operator intervention (query canceled by the
        // statement timeout, admin shutdown, cannot connect now); 53: insufficient
        // resources.
        Some(server) => (
            format!("{} ({})", server.message(), server.code().code()),
            ["08", "57", "53"]
                .iter()
                .any(|class| server.code().code().starts_with(class)),
        ),
        None => (fundi_runtime::error_chain(&error), true),
    };
    match transient {
        true => StoreError::Unreachable {
            what,
            source: Some(Box::new(error)),
        },
        false => StoreError::database_failed(what, error),
    }
}

/// Whether PostgreSQL rolled the statement's transaction back whole for the sake of
/// other transactions (SQLSTATE class 40: a deadlock it broke, a serialization
/// failure): nothing of it was stored, and it may be sent again.
pub(crate) fn rolled_back(error: &tokio_postgres::Error) -> bool {
    error
        .as_db_error()
        .is_some_and(|server| server.code().code().starts_with("40"))
}

/// No connection from the pool (none could be opened in time, or the database refused).
pub(crate) fn pool_error(error: impl std::error::Error + Send + Sync + 'static) -> StoreError {
    StoreError::Unreachable {
        what: format!(
            "no connection to PostgreSQL: {}",
            fundi_runtime::error_chain(&error)
        ),
        source: Some(Box::new(error)),
    }
}

/// A gathered request (`what`: a commit, a lookup) whose sender stopped before
/// PostgreSQL answered: for a commit, whether it was stored nobody can say.
pub(crate) fn unanswered(what: &str) -> StoreError {
    StoreError::Unreachable {
        what: format!("the sender of a {what} stopped before PostgreSQL answered"),
        source: None,
    }
}
