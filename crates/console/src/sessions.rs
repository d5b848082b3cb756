//! Console sessions: one-time sign-in links and the sessions they open, kept by the
//! SHA-256 digest of their tokens (the tokens themselves are kept nowhere) in a
//! `SessionStore`: in memory by default, so that a restart signs everyone out; in
//! PostgreSQL when the tasks are there, so that every node of a cluster knows them.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use fundi_ops::grants::{random_token, token_digest};
use fundi_ops::sessions::{
    ConsolePerson, ConsoleSession, MemorySessionStore, PendingSignIn, SessionStore,
};
use fundi_runtime::Grants;
use fundi_runtime::store::StoreError;

/// How long a sign-in link may wait to be opened.
pub(crate) const LINK_LIFETIME: Duration = Duration::from_secs(10 * 60);
/// How long a session lasts from sign-in.
pub(crate) const SESSION_LIFETIME: Duration = Duration::from_secs(12 * 60 * 60);
/// The session cookie's name.
pub(crate) const COOKIE: &str = "fundi_console";
/// The cookie that ties a sign-in confirmation to the browser it was shown in.
pub(crate) const SIGN_IN_COOKIE: &str = "fundi_sign_in";

/// Who a link or session stands for: the user, and the scopes the API would grant them
/// through the client that asked for the link.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Person {
    pub(crate) user: String,
    pub(crate) client: String,
    pub(crate) grants: Grants,
}

impl Person {
    fn stored(&self) -> ConsolePerson {
        ConsolePerson {
            user: self.user.clone(),
            client: self.client.clone(),
            scopes: self
                .grants
                .list()
                .map(|held| held.into_iter().map(str::to_owned).collect()),
        }
    }

    fn from_stored(stored: ConsolePerson) -> Person {
        Person {
            user: stored.user,
            client: stored.client,
            grants: match stored.scopes {
                None => Grants::All,
                Some(scopes) => Grants::scopes(scopes),
            },
        }
    }
}

/// An open session.
#[derive(Debug, Clone)]
pub(crate) struct Session {
    pub(crate) person: Person,
    /// The token every state-changing form carries.
    pub(crate) csrf: String,
}

/// The links and sessions of one gateway.
pub(crate) struct Sessions {
    store: Arc<dyn SessionStore>,
    /// Cookies carry `Secure` (the console is served over HTTPS).
    secure: bool,
}

impl std::fmt::Debug for Sessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sessions")
            .field("secure", &self.secure)
            .finish_non_exhaustive()
    }
}

fn later(lifetime: Duration) -> chrono::DateTime<Utc> {
    Utc::now() + chrono::Duration::from_std(lifetime).unwrap_or_else(|_| chrono::Duration::zero())
}

impl Sessions {
    /// Sessions in memory, whose cookies say `Secure` when `public_url` is HTTPS.
    pub(crate) fn new(public_url: &str) -> Sessions {
        Sessions::in_store(Arc::new(MemorySessionStore::new()), public_url)
    }

    /// Sessions kept in `store`.
    pub(crate) fn in_store(store: Arc<dyn SessionStore>, public_url: &str) -> Sessions {
        Sessions {
            store,
            secure: public_url.to_ascii_lowercase().starts_with("https://"),
        }
    }

    /// A one-time sign-in token for `person`, good for [`LINK_LIFETIME`].
    pub(crate) async fn link(&self, person: &Person) -> Result<String, StoreError> {
        let token = random_token();
        let expires = later(LINK_LIFETIME);
        self.store
            .put_link(&token_digest(&token), &person.stored(), expires)
            .await?;
        Ok(token)
    }

    /// Spends a sign-in link's token for a confirmation: the person it stands for, and a
    /// new one-time token (good for [`LINK_LIFETIME`]) that [`Sessions::redeem`] takes
    /// once the person opening the link says to go on; `None` for an unknown, spent or
    /// expired token.
    pub(crate) async fn confirmable(
        &self,
        token: &str,
    ) -> Result<Option<(Person, String)>, StoreError> {
        match self
            .store
            .take_link(&token_digest(token), Utc::now())
            .await?
        {
            Some(stored) => {
                let person = Person::from_stored(stored);
                let confirmation = self.link(&person).await?;
                Ok(Some((person, confirmation)))
            }
            None => Ok(None),
        }
    }

    /// Opens a session for a sign-in token (which is then spent): the session's own
    /// token (the cookie's value) and the session; `None` for an unknown, spent or
    /// expired token.
    pub(crate) async fn redeem(
        &self,
        token: &str,
    ) -> Result<Option<(String, Session)>, StoreError> {
        match self
            .store
            .take_link(&token_digest(token), Utc::now())
            .await?
        {
            Some(person) => self.open(Person::from_stored(person)).await.map(Some),
            None => Ok(None),
        }
    }

    /// Opens a session for `person` (signed in by a link or by an identity provider):
    /// its token (the cookie's value) and the session.
    pub(crate) async fn open(&self, person: Person) -> Result<(String, Session), StoreError> {
        let id = random_token();
        let session = Session {
            person,
            csrf: random_token(),
        };
        let stored = ConsoleSession {
            person: session.person.stored(),
            csrf: session.csrf.clone(),
            expires_at: later(SESSION_LIFETIME),
        };
        self.store.put_session(&token_digest(&id), &stored).await?;
        Ok((id, session))
    }

    /// The session a cookie's value opens, while it lasts.
    pub(crate) async fn find(&self, id: &str) -> Result<Option<Session>, StoreError> {
        let stored = self.store.session(&token_digest(id), Utc::now()).await?;
        Ok(stored.map(|stored| Session {
            person: Person::from_stored(stored.person),
            csrf: stored.csrf,
        }))
    }

    /// Keeps a sign-in under way with an identity provider, by its state, for
    /// [`LINK_LIFETIME`].
    pub(crate) async fn begin_sign_in(
        &self,
        state: &str,
        pending: &PendingSignIn,
    ) -> Result<(), StoreError> {
        let expires = later(LINK_LIFETIME);
        self.store
            .put_pending(&token_digest(state), pending, expires)
            .await
    }

    /// Takes the sign-in under way with this state, once.
    pub(crate) async fn finish_sign_in(
        &self,
        state: &str,
    ) -> Result<Option<PendingSignIn>, StoreError> {
        self.store
            .take_pending(&token_digest(state), Utc::now())
            .await
    }

    /// Ends a session (signing out).
    pub(crate) async fn close(&self, id: &str) -> Result<(), StoreError> {
        self.store.remove_session(&token_digest(id)).await
    }

    /// The `Set-Cookie` value that keeps a session: only this server's console pages
    /// get it, scripts cannot read it, and no other site's page can make the browser
    /// send it.
    pub(crate) fn cookie(&self, id: &str) -> String {
        let secure = if self.secure { "; Secure" } else { "" };
        format!(
            "{COOKIE}={id}; Path=/console; HttpOnly; SameSite=Strict; Max-Age={}{secure}",
            SESSION_LIFETIME.as_secs()
        )
    }

    /// The `Set-Cookie` value that removes the session cookie.
    pub(crate) fn removed_cookie(&self) -> String {
        let secure = if self.secure { "; Secure" } else { "" };
        format!("{COOKIE}=; Path=/console; HttpOnly; SameSite=Strict; Max-Age=0{secure}")
    }

    /// The `Set-Cookie` value that ties a sign-in confirmation to this browser (its
    /// value is the confirmation form's CSRF token; `""` removes it).
    pub(crate) fn sign_in_cookie(&self, value: &str) -> String {
        let secure = if self.secure { "; Secure" } else { "" };
        let age = match value.is_empty() {
            true => 0,
            false => LINK_LIFETIME.as_secs(),
        };
        format!(
            "{SIGN_IN_COOKIE}={value}; Path=/console/sign-in; HttpOnly; SameSite=Strict; \
             Max-Age={age}{secure}"
        )
    }
}

/// The session token a request's `Cookie` header carries, if any.
pub(crate) fn cookie_value(headers: &axum::http::HeaderMap) -> Option<&str> {
    named_cookie(headers, COOKIE)
}

/// The value of the cookie `name` a request carries, if any.
pub(crate) fn named_cookie<'h>(headers: &'h axum::http::HeaderMap, name: &str) -> Option<&'h str> {
    headers
        .get_all(axum::http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(found, _)| *found == name)
        .map(|(_, value)| value.trim())
        .filter(|value| !value.is_empty())
}

/// Whether two secrets are equal, in time that does not depend on where they differ.
pub(crate) fn same_secret(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |differ, (x, y)| differ | (x ^ y))
            == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alice() -> Person {
        Person {
            user: "alice".into(),
            client: "cli".into(),
            grants: Grants::scopes(["fundi:audit"]),
        }
    }

    #[tokio::test]
    async fn a_link_opens_one_session_once() {
        let sessions = Sessions::new("http://127.0.0.1:8080");
        let token = sessions.link(&alice()).await.unwrap();
        let (id, session) = sessions.redeem(&token).await.unwrap().expect("first use");
        assert_eq!(session.person, alice());
        assert!(
            sessions.redeem(&token).await.unwrap().is_none(),
            "a link is spent once used"
        );
        let found = sessions.find(&id).await.unwrap().expect("open");
        assert_eq!((found.person, found.csrf), (alice(), session.csrf));
        assert!(
            sessions.find(&token).await.unwrap().is_none(),
            "a link is not a session"
        );
        sessions.close(&id).await.unwrap();
        assert!(sessions.find(&id).await.unwrap().is_none());
    }

    #[tokio::test]
    async fn every_scope_stays_every_scope() {
        let sessions = Sessions::new("http://127.0.0.1:8080");
        let root = Person {
            grants: Grants::All,
            ..alice()
        };
        let (id, _) = sessions.open(root.clone()).await.unwrap();
        assert_eq!(sessions.find(&id).await.unwrap().unwrap().person, root);
    }

    #[test]
    fn cookies_are_strict_http_only_and_secure_over_https() {
        let plain = Sessions::new("http://127.0.0.1:8080").cookie("x");
        assert!(plain.contains("HttpOnly") && plain.contains("SameSite=Strict"));
        assert!(!plain.contains("Secure"));
        let tls = Sessions::new("HTTPS://fundi.example").cookie("x");
        assert!(tls.ends_with("; Secure"), "{tls}");
    }

    #[test]
    fn the_cookie_is_found_among_others() {
        let mut headers = axum::http::HeaderMap::new();
        headers.insert("cookie", "a=1; fundi_console=abc ; b=2".parse().unwrap());
        assert_eq!(cookie_value(&headers), Some("abc"));
        headers.insert("cookie", "fundi_console=".parse().unwrap());
        assert_eq!(cookie_value(&headers), None);
    }

    #[test]
    fn secrets_compare_whole() {
        assert!(same_secret("abc", "abc"));
        assert!(!same_secret("abc", "abd"));
        assert!(!same_secret("abc", "abcd"));
    }
}
