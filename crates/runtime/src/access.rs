//! What a caller may see and start: whose tasks ([`Access`]), and the scopes it holds
//! ([`Grants`]), checked against a skill's card.

use std::collections::BTreeSet;

use crate::model::{Scope, UserId};

/// The scope that grants every skill.
pub const ADMIN_SCOPE: &str = "fundi:admin";

/// Whose tasks a call may see and change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access<'a> {
    /// Every task: the program embedding the runtime, or a part of fundi acting for it
    /// (recovery, the heal loop, an operator's route).
    Any,
    /// The tasks this user created; another's task is "not found", so that its
    /// existence is not revealed.
    Owner(&'a str),
}

impl<'a> Access<'a> {
    /// The access of a caller acting as `owner`; `None` is an in-process caller (the
    /// embedding program, recovery, a schedule's firing without an owner), who sees
    /// every task.
    pub fn of_owner(owner: Option<&'a str>) -> Access<'a> {
        match owner {
            Some(user) => Access::Owner(user),
            None => Access::Any,
        }
    }

    /// Whether a task created by `owner` (`None`: nobody in particular) is visible.
    pub fn sees(&self, owner: Option<&str>) -> bool {
        match self {
            Access::Any => true,
            Access::Owner(user) => owner == Some(*user),
        }
    }
}

/// Whose tasks a listing holds: [`Access`] in a form a request or a query keeps.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum TaskOwner {
    /// Every task, whoever created it (a store query's default: no owner filter).
    #[default]
    Any,
    /// Only the tasks this user created.
    User(UserId),
}

impl TaskOwner {
    /// The tasks `user` created.
    pub fn user(user: impl Into<UserId>) -> TaskOwner {
        TaskOwner::User(user.into())
    }

    /// The user whose tasks these are (`None`: every task).
    pub fn as_user(&self) -> Option<&str> {
        match self {
            TaskOwner::Any => None,
            TaskOwner::User(user) => Some(user.as_str()),
        }
    }

    /// The access a caller with this filter has.
    pub fn access(&self) -> Access<'_> {
        Access::of_owner(self.as_user())
    }
}

/// The scopes a caller holds. Embedders calling the runtime directly act with
/// [`Grants::All`]; the gateway passes what the caller's credentials grant.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Grants {
    /// Every skill (trusted in-process callers).
    #[default]
    All,
    /// Exactly these scopes; [`ADMIN_SCOPE`] among them grants every skill.
    Scopes(BTreeSet<Scope>),
}

impl Grants {
    /// Grants from a list of scope names.
    pub fn scopes<I, S>(scopes: I) -> Grants
    where
        I: IntoIterator<Item = S>,
        S: Into<Scope>,
    {
        Grants::Scopes(scopes.into_iter().map(Into::into).collect())
    }

    /// Whether a skill needing `required` (none: any caller) may run.
    pub fn allows(&self, required: Option<&str>) -> bool {
        match (self, required) {
            (_, None) | (Grants::All, _) => true,
            (Grants::Scopes(held), Some(scope)) => {
                held.contains(scope) || held.contains(ADMIN_SCOPE)
            }
        }
    }

    /// The scopes held, sorted (`None` for [`Grants::All`]).
    pub fn list(&self) -> Option<Vec<&str>> {
        match self {
            Grants::All => None,
            Grants::Scopes(held) => Some(held.iter().map(Scope::as_str).collect()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scope_grants_its_skill_only_and_admin_grants_all() {
        let audit = Grants::scopes(["fundi:audit"]);
        assert!(audit.allows(Some("fundi:audit")));
        assert!(!audit.allows(Some("fundi:chaos")));
        assert!(audit.allows(None));
        let admin = Grants::scopes([ADMIN_SCOPE]);
        assert!(admin.allows(Some("fundi:chaos")));
        assert!(Grants::All.allows(Some("fundi:chaos")));
        assert!(!Grants::scopes::<[&str; 0], &str>([]).allows(Some("fundi:audit")));
    }
}
