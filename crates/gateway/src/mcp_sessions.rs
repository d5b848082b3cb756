//! MCP sessions at `/mcp`: each belongs to the credentials that opened it, a user holds
//! a bounded number, and one left idle is forgotten. Another user naming a session id
//! gets 404, exactly as for a session that does not exist.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// The header carrying an MCP session's id (streamable HTTP transport).
pub(crate) const SESSION_HEADER: &str = "mcp-session-id";

/// How many MCP sessions a user may hold, and how long one may sit idle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct McpSessionLimits {
    /// Most sessions one user holds at once; an `initialize` past it is refused (429).
    pub max_per_user: usize,
    /// A session unused this long is forgotten here; give the MCP service the same
    /// keep-alive (`fundi_mcp::http_service` takes it) so that it closes it too.
    pub idle_timeout: Duration,
}

impl Default for McpSessionLimits {
    fn default() -> McpSessionLimits {
        McpSessionLimits {
            max_per_user: 16,
            idle_timeout: Duration::from_secs(300),
        }
    }
}

/// The MCP service and the sessions it serves.
#[derive(Clone)]
pub(crate) struct McpEndpoint {
    pub(crate) service: axum::Router,
    pub(crate) sessions: Arc<McpSessions>,
}

impl McpEndpoint {
    pub(crate) fn new(service: axum::Router, limits: McpSessionLimits) -> McpEndpoint {
        McpEndpoint {
            service,
            sessions: Arc::new(McpSessions::new(limits)),
        }
    }
}

/// Who owns each open MCP session, and when it was last used.
#[derive(Debug)]
pub(crate) struct McpSessions {
    limits: McpSessionLimits,
    open: Mutex<HashMap<String, Owned>>,
}

#[derive(Debug)]
struct Owned {
    user: String,
    last_used: Instant,
}

/// Why a request naming (or opening) a session is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SessionRefusal {
    /// No such session for this user (another's, closed, idle too long, or never).
    NotFound,
    /// The user holds as many sessions as allowed.
    TooMany(usize),
}

impl McpSessions {
    pub(crate) fn new(limits: McpSessionLimits) -> McpSessions {
        McpSessions {
            limits,
            open: Mutex::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Owned>> {
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A request of `user` naming session `id`: allowed (and the session's idle time
    /// starts again) when the session is the user's and still open.
    pub(crate) fn use_session(&self, id: &str, user: &str) -> Result<(), SessionRefusal> {
        let mut open = self.lock();
        let idle = self.limits.idle_timeout;
        match open.get_mut(id) {
            Some(owned) if owned.last_used.elapsed() >= idle => {
                open.remove(id);
                Err(SessionRefusal::NotFound)
            }
            Some(owned) if owned.user == user => {
                owned.last_used = Instant::now();
                Ok(())
            }
            _ => Err(SessionRefusal::NotFound),
        }
    }

    /// Whether `user` may open another session (sessions idle too long are forgotten
    /// first).
    pub(crate) fn may_open(&self, user: &str) -> Result<(), SessionRefusal> {
        let mut open = self.lock();
        let idle = self.limits.idle_timeout;
        open.retain(|_, owned| owned.last_used.elapsed() < idle);
        let held = open.values().filter(|owned| owned.user == user).count();
        match held < self.limits.max_per_user {
            true => Ok(()),
            false => Err(SessionRefusal::TooMany(self.limits.max_per_user)),
        }
    }

    /// Session `id` was opened by `user`.
    pub(crate) fn opened(&self, id: &str, user: &str) {
        let owned = Owned {
            user: user.to_owned(),
            last_used: Instant::now(),
        };
        self.lock().insert(id.to_owned(), owned);
    }

    /// Session `id` was closed by its owner.
    pub(crate) fn closed(&self, id: &str) {
        self.lock().remove(id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sessions(max_per_user: usize, idle_ms: u64) -> McpSessions {
        McpSessions::new(McpSessionLimits {
            max_per_user,
            idle_timeout: Duration::from_millis(idle_ms),
        })
    }

    #[test]
    fn a_session_serves_only_its_owner() {
        let s = sessions(4, 60_000);
        s.opened("a1", "alice");
        assert_eq!(s.use_session("a1", "alice"), Ok(()));
        assert_eq!(s.use_session("a1", "bob"), Err(SessionRefusal::NotFound));
        assert_eq!(s.use_session("zz", "alice"), Err(SessionRefusal::NotFound));
        s.closed("a1");
        assert_eq!(s.use_session("a1", "alice"), Err(SessionRefusal::NotFound));
    }

    #[test]
    fn a_user_holds_a_bounded_number_and_others_are_not_counted() {
        let s = sessions(2, 60_000);
        s.opened("a1", "alice");
        s.opened("a2", "alice");
        assert_eq!(s.may_open("alice"), Err(SessionRefusal::TooMany(2)));
        assert_eq!(s.may_open("bob"), Ok(()));
        s.closed("a1");
        assert_eq!(s.may_open("alice"), Ok(()));
    }

    #[test]
    fn idle_sessions_are_forgotten() {
        let s = sessions(1, 0);
        s.opened("a1", "alice");
        assert_eq!(s.use_session("a1", "alice"), Err(SessionRefusal::NotFound));
        s.opened("a2", "alice");
        assert_eq!(s.may_open("alice"), Ok(()), "the idle one no longer counts");
    }
}
