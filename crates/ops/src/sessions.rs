//! Where the web console keeps its one-time sign-in links and its sessions, each known
//! by the SHA-256 digest of its token (the tokens themselves are kept nowhere): in
//! memory, for one process; in PostgreSQL (`fundi-postgres`), where every node of a
//! cluster reads the same ones, so that a person signed in on one node is signed in on
//! all.

use std::collections::HashMap;
use std::sync::Mutex;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use fundi_runtime::store::StoreError;

/// Who a link or session stands for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConsolePerson {
    /// The user (owner of the tasks the person sees).
    pub user: String,
    /// The client the person acts through, for the record.
    pub client: String,
    /// The scopes the person holds (`None`: every scope).
    pub scopes: Option<Vec<String>>,
}

/// An open session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConsoleSession {
    /// Who.
    pub person: ConsolePerson,
    /// The token every changing form carries.
    pub csrf: String,
    /// When it ends.
    pub expires_at: DateTime<Utc>,
}

/// A sign-in through an identity provider, between the console sending the browser
/// there and the browser coming back (perhaps to another node).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingSignIn {
    /// The PKCE verifier of the challenge sent.
    pub verifier: String,
    /// The nonce the ID token must carry.
    pub nonce: String,
}

/// Links, sign-ins under way and sessions, by digest. Expired ones are never answered,
/// and may be removed whenever the store likes.
#[async_trait]
pub trait SessionStore: Send + Sync + 'static {
    /// Keeps a sign-in link until `expires_at`.
    async fn put_link(
        &self,
        digest: &str,
        person: &ConsolePerson,
        expires_at: DateTime<Utc>,
    ) -> Result<(), StoreError>;

    /// Takes a link, once: its person, if it exists and has not expired at `now`.
    async fn take_link(
        &self,
        digest: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<ConsolePerson>, StoreError>;

    /// Keeps a sign-in under way with an identity provider until `expires_at`.
    async fn put_pending(
        &self,
        digest: &str,
        pending: &PendingSignIn,
        expires_at: DateTime<Utc>,
    ) -> Result<(), StoreError>;

    /// Takes a sign-in under way, once, if it has not expired at `now`.
    async fn take_pending(
        &self,
        digest: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<PendingSignIn>, StoreError>;

    /// Keeps a session.
    async fn put_session(&self, digest: &str, session: &ConsoleSession) -> Result<(), StoreError>;

    /// A session, if it exists and has not expired at `now`.
    async fn session(
        &self,
        digest: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<ConsoleSession>, StoreError>;

    /// Ends a session.
    async fn remove_session(&self, digest: &str) -> Result<(), StoreError>;
}

/// Most links and sessions kept in memory; those that end first make room.
const MOST_KEPT: usize = 10_000;

/// Links and sessions in this process's memory.
#[derive(Debug, Default)]
pub struct MemorySessionStore {
    links: Once<ConsolePerson>,
    pending: Once<PendingSignIn>,
    sessions: Mutex<HashMap<String, ConsoleSession>>,
}

impl MemorySessionStore {
    /// An empty store.
    pub fn new() -> MemorySessionStore {
        MemorySessionStore::default()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// Drops what has expired, then what ends first while the map is full.
fn make_room<T>(map: &mut HashMap<String, T>, ends: impl Fn(&T) -> DateTime<Utc>) {
    let now = Utc::now();
    map.retain(|_, value| ends(value) > now);
    while map.len() >= MOST_KEPT {
        let Some(first) = map
            .iter()
            .min_by_key(|(_, value)| ends(value))
            .map(|(key, _)| key.clone())
        else {
            return;
        };
        map.remove(&first);
    }
}

/// What is taken once, and the time it ends.
type Once<T> = Mutex<HashMap<String, (T, DateTime<Utc>)>>;

fn keep<T: Clone>(map: &Once<T>, digest: &str, value: &T, expires_at: DateTime<Utc>) {
    let mut map = lock(map);
    make_room(&mut map, |(_, ends)| *ends);
    map.insert(digest.to_owned(), (value.clone(), expires_at));
}

fn take<T>(map: &Once<T>, digest: &str, now: DateTime<Utc>) -> Option<T> {
    let taken = lock(map).remove(digest);
    taken
        .filter(|(_, ends)| *ends > now)
        .map(|(value, _)| value)
}

#[async_trait]
impl SessionStore for MemorySessionStore {
    async fn put_link(
        &self,
        digest: &str,
        person: &ConsolePerson,
        expires_at: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        keep(&self.links, digest, person, expires_at);
        Ok(())
    }

    async fn take_link(
        &self,
        digest: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<ConsolePerson>, StoreError> {
        Ok(take(&self.links, digest, now))
    }

    async fn put_pending(
        &self,
        digest: &str,
        pending: &PendingSignIn,
        expires_at: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        keep(&self.pending, digest, pending, expires_at);
        Ok(())
    }

    async fn take_pending(
        &self,
        digest: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<PendingSignIn>, StoreError> {
        Ok(take(&self.pending, digest, now))
    }

    async fn put_session(&self, digest: &str, session: &ConsoleSession) -> Result<(), StoreError> {
        let mut sessions = lock(&self.sessions);
        make_room(&mut sessions, |s| s.expires_at);
        sessions.insert(digest.to_owned(), session.clone());
        Ok(())
    }

    async fn session(
        &self,
        digest: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<ConsoleSession>, StoreError> {
        Ok(lock(&self.sessions)
            .get(digest)
            .filter(|s| s.expires_at > now)
            .cloned())
    }

    async fn remove_session(&self, digest: &str) -> Result<(), StoreError> {
        lock(&self.sessions).remove(digest);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_memory_store_keeps_the_session_contract() {
        crate::testing::session_contract::check_session_store("memory", &MemorySessionStore::new())
            .await;
    }
}
