//! The runtime that heal runs in, known once it has started: a heal asks it whether
//! the task holding its issue has ended, and the loop submits heal tasks through it.

use fundi_runtime::Access;
use std::sync::{Arc, OnceLock};

use fundi_runtime::{RuntimeError, RuntimeHandle, TaskId, WeakRuntimeHandle};

/// A handle to the runtime, set after the runtime starts (the skills are registered
/// before it exists). It does not keep the runtime alive.
#[derive(Clone, Default)]
pub struct RuntimeLink(Arc<OnceLock<WeakRuntimeHandle>>);

impl std::fmt::Debug for RuntimeLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("RuntimeLink")
            .field(&self.0.get().is_some())
            .finish()
    }
}

impl RuntimeLink {
    /// A link not set yet.
    pub fn new() -> RuntimeLink {
        RuntimeLink::default()
    }

    /// Sets the runtime (once; later calls change nothing).
    pub fn set(&self, handle: &RuntimeHandle) {
        let _ = self.0.set(handle.downgrade());
    }

    /// The runtime, once set and while it runs.
    pub(crate) fn handle(&self) -> Option<RuntimeHandle> {
        self.0.get()?.upgrade()
    }

    /// Whether a task has ended, or is gone. Without a runtime, or when it cannot
    /// tell, a task is taken to be alive (an issue it holds stays held).
    pub(crate) async fn ended(&self, id: &TaskId) -> bool {
        let Some(handle) = self.handle() else {
            return false;
        };
        match handle.get(id, Some(0), Access::Any).await {
            Ok(task) => task.status.state.is_terminal(),
            Err(RuntimeError::TaskNotFound(_)) => true,
            Err(_) => false,
        }
    }
}
