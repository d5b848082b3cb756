//! Helpers for tests that drive the gateway (feature `test-util`).

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::Value;

use fundi_peers::signature::CardKey;

/// The PKCS #8 DER prefix of an Ed25519 private key, before its 32-byte seed (RFC 8410).
const PKCS8_PREFIX: [u8; 16] = [
    0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20,
];

/// An Ed25519 key made for this test run, which signs JWTs (an identity provider's ID
/// tokens, a client's credentials), and its public JWK.
pub struct SigningKey {
    /// Its key id.
    pub kid: String,
    encoding: EncodingKey,
    /// Its public half, as a JWK naming `kid`.
    pub jwk: Value,
}

impl SigningKey {
    /// A new random key named `kid`.
    pub fn generate(kid: &str) -> SigningKey {
        let seed: [u8; 32] = rand::random();
        let der = [PKCS8_PREFIX.as_slice(), &seed].concat();
        let key = CardKey::from_seed(kid.to_owned(), seed);
        SigningKey {
            kid: kid.to_owned(),
            encoding: EncodingKey::from_ed_der(&der),
            jwk: key.public_jwk(),
        }
    }

    /// `claims` signed, the header naming this key.
    pub fn sign(&self, claims: &Value) -> String {
        self.sign_as(&self.kid, claims)
    }

    /// Signs with this key but names `kid` in the header (a forgery when `kid` is another
    /// key's).
    pub fn sign_as(&self, kid: &str, claims: &Value) -> String {
        let mut header = Header::new(Algorithm::EdDSA);
        header.kid = Some(kid.into());
        jsonwebtoken::encode(&header, claims, &self.encoding).expect("claims are JSON")
    }
}
