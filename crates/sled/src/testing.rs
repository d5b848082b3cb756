//! Helpers for tests that open a sled store in a directory, again and again.

/// Opens the sled store in `dir` (`sync` durability), once sled's file lock is free (see
/// [`once_unlocked`]).
pub async fn open_sled(dir: &std::path::Path) -> crate::SledStore {
    once_unlocked(|| crate::SledStore::open(dir, crate::Durability::Sync))
        .await
        .unwrap_or_else(|e| panic!("opening {}: {e}", dir.display()))
}

/// Runs `open` until it stops failing on sled's file lock, for up to 10 s. sled lets go
/// of its file lock a moment after the last handle of a previous open is dropped (its
/// memory reclamation runs the final drop later), so a reopen in the same process polls.
pub async fn once_unlocked<T, E: std::fmt::Display>(
    mut open: impl FnMut() -> Result<T, E>,
) -> Result<T, E> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        match open() {
            Err(e) if std::time::Instant::now() < deadline && e.to_string().contains("lock") => {
                tokio::time::sleep(std::time::Duration::from_millis(5)).await
            }
            result => return result,
        }
    }
}
