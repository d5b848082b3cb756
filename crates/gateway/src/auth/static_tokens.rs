//! Static tokens, kept as SHA-256 digests and compared in constant time.

use sha2::{Digest, Sha256};

use super::config::StaticTokens;

type Hash = [u8; 32];

pub(crate) struct StaticTable {
    clients: Vec<(Hash, String, Vec<String>)>,
    users: Vec<(Hash, String)>,
}

impl StaticTable {
    pub(crate) fn new(tokens: &StaticTokens) -> StaticTable {
        StaticTable {
            clients: tokens
                .clients
                .iter()
                .map(|(name, c)| (digest(&c.token), name.clone(), c.scopes.clone()))
                .collect(),
            users: tokens
                .users
                .iter()
                .map(|(subject, token)| (digest(token), subject.clone()))
                .collect(),
        }
    }

    /// The client name and scopes of a bearer token.
    pub(crate) fn client(&self, token: &str) -> Option<(String, Vec<String>)> {
        let wanted = digest(token);
        let mut found = None;
        // Every entry is compared, so timing says nothing about which one matched.
        for (hash, name, scopes) in &self.clients {
            if same(hash, &wanted) {
                found = Some((name.clone(), scopes.clone()));
            }
        }
        found
    }

    /// The subject of a user token.
    pub(crate) fn user(&self, token: &str) -> Option<String> {
        let wanted = digest(token);
        let mut found = None;
        for (hash, subject) in &self.users {
            if same(hash, &wanted) {
                found = Some(subject.clone());
            }
        }
        found
    }
}

fn digest(token: &str) -> Hash {
    Sha256::digest(token.as_bytes()).into()
}

fn same(a: &Hash, b: &Hash) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
