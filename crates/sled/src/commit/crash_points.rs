//! Tests' hold on a commit's writes: a crash after any of them, or another writer's
//! write before one (see `TaskTable::before_write`).

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use fundi_runtime::store::StoreError;

/// A step run on the raw database before a write.
pub(crate) type BeforeWrite = Box<dyn FnMut(&sled::Db) + Send>;

pub(crate) struct CrashPoints {
    /// How many more writes a commit may make before it "crashes".
    pub(crate) writes_left: AtomicUsize,
    /// Run before each write of a commit, if set.
    pub(crate) before_each_write: Mutex<Option<BeforeWrite>>,
}

impl Default for CrashPoints {
    fn default() -> CrashPoints {
        CrashPoints {
            writes_left: AtomicUsize::new(usize::MAX),
            before_each_write: Mutex::default(),
        }
    }
}

impl std::fmt::Debug for CrashPoints {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CrashPoints")
            .field("writes_left", &self.writes_left)
            .finish_non_exhaustive()
    }
}

impl CrashPoints {
    /// Fails once the allowance of writes is used up, leaving the commit half done as
    /// a crash would; else runs the hook, if any.
    pub(crate) fn before_write(&self, db: &sled::Db) -> Result<(), StoreError> {
        let left = self.writes_left.load(Ordering::Acquire);
        if left == 0 {
            return Err(StoreError::io(
                "a test's write",
                std::io::Error::other("simulated crash"),
            ));
        }
        self.writes_left.store(left - 1, Ordering::Release);
        if let Some(hook) = self.before_each_write.lock().unwrap().as_mut() {
            hook(db);
        }
        Ok(())
    }
}
