//! A signed-in person as the console's pages see them: the session, its user and
//! scopes, and the same person as an API caller.

use fundi_runtime::approval::APPROVE_SCOPE;
use fundi_runtime::{ADMIN_SCOPE, Grants};

use crate::sessions::{Person, Session};
use fundi_gateway::Caller;

/// A signed-in person.
#[derive(Debug, Clone)]
pub(crate) struct Viewer {
    /// The session's token (the cookie's value).
    id: String,
    session: Session,
}

impl Viewer {
    /// The viewer of the session whose token (the cookie's value) is `id`.
    pub(crate) fn new(id: String, session: Session) -> Viewer {
        Viewer { id, session }
    }

    pub(crate) fn person(&self) -> &Person {
        &self.session.person
    }

    pub(crate) fn id(&self) -> &str {
        &self.id
    }

    pub(crate) fn user(&self) -> &str {
        &self.session.person.user
    }

    pub(crate) fn grants(&self) -> &Grants {
        &self.session.person.grants
    }

    pub(crate) fn csrf(&self) -> &str {
        &self.session.csrf
    }

    /// The viewer as an API caller: the same user, client and scopes.
    pub(crate) fn caller(&self) -> Caller {
        let person = self.person();
        Caller {
            user: person.user.clone().into(),
            client: person.client.clone(),
            grants: person.grants.clone(),
            grant: None,
        }
    }

    /// Holds `fundi:admin` (the operators' pages).
    pub(crate) fn is_admin(&self) -> bool {
        self.grants().allows(Some(ADMIN_SCOPE))
    }

    /// Holds a scope that approves some skill's tasks.
    pub(crate) fn may_approve_some(&self) -> bool {
        self.grants().list().is_none_or(|held| {
            held.iter()
                .any(|s| *s == ADMIN_SCOPE || s.starts_with(APPROVE_SCOPE))
        })
    }
}
