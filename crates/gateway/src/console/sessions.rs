//! Console sessions, kept in memory: one-time sign-in links, and the sessions they open.
//! A link or session is known by the SHA-256 digest of its token, so that the tokens
//! themselves are never kept; a restart signs everyone out (`fundi console` makes a new
//! link), and each node of several has its own sessions.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use fundi_runtime::Grants;
use sha2::{Digest, Sha256};

/// How long a sign-in link may wait to be opened.
pub(crate) const LINK_LIFETIME: Duration = Duration::from_secs(10 * 60);
/// How long a session lasts from sign-in.
pub(crate) const SESSION_LIFETIME: Duration = Duration::from_secs(12 * 60 * 60);
/// The session cookie's name.
pub(crate) const COOKIE: &str = "fundi_console";
/// Most unopened links and open sessions kept; the oldest make room for new ones.
const MOST_KEPT: usize = 10_000;

/// Who a link or session stands for: the user, and the scopes the API would grant them
/// through the client that asked for the link.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Person {
    pub(crate) user: String,
    pub(crate) client: String,
    pub(crate) grants: Grants,
}

/// An open session.
#[derive(Debug, Clone)]
pub(crate) struct Session {
    pub(crate) person: Person,
    /// The token every state-changing form carries.
    pub(crate) csrf: String,
    expires: Instant,
}

struct Entry<T> {
    value: T,
    expires: Instant,
}

/// The links and sessions of one gateway.
pub(crate) struct Sessions {
    links: Mutex<HashMap<String, Entry<Person>>>,
    open: Mutex<HashMap<String, Session>>,
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

impl Sessions {
    /// Sessions whose cookies say `Secure` when `public_url` is HTTPS.
    pub(crate) fn new(public_url: &str) -> Sessions {
        Sessions {
            links: Mutex::default(),
            open: Mutex::default(),
            secure: public_url.to_ascii_lowercase().starts_with("https://"),
        }
    }

    /// A one-time sign-in token for `person`, good for [`LINK_LIFETIME`].
    pub(crate) fn link(&self, person: Person) -> String {
        let token = random_token();
        let now = Instant::now();
        let mut links = lock(&self.links);
        links.retain(|_, entry| entry.expires > now);
        make_room(&mut links, |entry| entry.expires);
        let entry = Entry {
            value: person,
            expires: now + LINK_LIFETIME,
        };
        links.insert(digest(&token), entry);
        token
    }

    /// Opens a session for a sign-in token (which is then spent): the session's own
    /// token (the cookie's value) and the session; `None` for an unknown, spent or
    /// expired token.
    pub(crate) fn redeem(&self, token: &str) -> Option<(String, Session)> {
        let now = Instant::now();
        let person = lock(&self.links)
            .remove(&digest(token))
            .filter(|entry| entry.expires > now)?
            .value;
        Some(self.open(person))
    }

    /// Opens a session for `person` (signed in by a link or by an identity provider):
    /// its token (the cookie's value) and the session.
    pub(crate) fn open(&self, person: Person) -> (String, Session) {
        let now = Instant::now();
        let id = random_token();
        let session = Session {
            person,
            csrf: random_token(),
            expires: now + SESSION_LIFETIME,
        };
        let mut open = lock(&self.open);
        open.retain(|_, session| session.expires > now);
        make_room(&mut open, |session| session.expires);
        open.insert(digest(&id), session.clone());
        (id, session)
    }

    /// The session a cookie's value opens, while it lasts.
    pub(crate) fn find(&self, id: &str) -> Option<Session> {
        let session = lock(&self.open).get(&digest(id)).cloned()?;
        (session.expires > Instant::now()).then_some(session)
    }

    /// Ends a session (signing out).
    pub(crate) fn close(&self, id: &str) {
        lock(&self.open).remove(&digest(id));
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
}

/// The session token a request's `Cookie` header carries, if any.
pub(crate) fn cookie_value(headers: &axum::http::HeaderMap) -> Option<&str> {
    headers
        .get_all(axum::http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE)
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

/// Drops the entry that expires first while the map is full.
fn make_room<T>(map: &mut HashMap<String, T>, expires: impl Fn(&T) -> Instant) {
    while map.len() >= MOST_KEPT {
        let Some(oldest) = map
            .iter()
            .min_by_key(|(_, value)| expires(value))
            .map(|(key, _)| key.clone())
        else {
            return;
        };
        map.remove(&oldest);
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

fn digest(token: &str) -> String {
    Sha256::digest(token.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// 256 random bits from the OS's generator, as hex.
pub(crate) fn random_token() -> String {
    let bytes: [u8; 32] = rand::random();
    bytes.iter().map(|b| format!("{b:02x}")).collect()
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

    #[test]
    fn a_link_opens_one_session_once() {
        let sessions = Sessions::new("http://127.0.0.1:8080");
        let token = sessions.link(alice());
        let (id, session) = sessions.redeem(&token).expect("first use");
        assert_eq!(session.person, alice());
        assert!(
            sessions.redeem(&token).is_none(),
            "a link is spent once used"
        );
        assert_eq!(sessions.find(&id).expect("open").person, alice());
        assert!(sessions.find(&token).is_none(), "a link is not a session");
        sessions.close(&id);
        assert!(sessions.find(&id).is_none());
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
