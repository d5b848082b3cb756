//! An identity provider of the test's own: an Ed25519 key made at test time, its JWK
//! Set served on loopback, and assertions it signs for whatever claims a test wants.
#![allow(dead_code)]

use std::net::SocketAddr;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use fundi_peers::signature::CardKey;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

/// The PKCS #8 DER prefix of an Ed25519 private key, before its 32-byte seed (RFC 8410).
const PKCS8_PREFIX: [u8; 16] = [
    0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20,
];

pub(crate) struct Idp {
    /// Its issuer (`iss`): its own base URL.
    pub(crate) issuer: String,
    /// Where its keys are.
    pub(crate) jwks_url: String,
    key: CardKey,
}

impl Idp {
    /// Serves a fresh key's JWK Set on 127.0.0.1 until the test's runtime ends.
    pub(crate) async fn start() -> Idp {
        let key = CardKey::generate();
        let jwks = json!({"keys": [key.public_jwk()]});
        let app = axum::Router::new().route(
            "/jwks.json",
            axum::routing::get(move || {
                let jwks = jwks.clone();
                async move { axum::Json(jwks) }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr: SocketAddr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        Idp {
            issuer: format!("http://{addr}"),
            jwks_url: format!("http://{addr}/jwks.json"),
            key,
        }
    }

    /// The environment that lists this provider as `name` on a fundi server.
    pub(crate) fn env(&self, name: &str) -> Vec<(String, String)> {
        let upper = name.to_uppercase();
        vec![
            (
                format!("FUNDI__FRIENDS__ISSUERS__{upper}__ISSUER"),
                self.issuer.clone(),
            ),
            (
                format!("FUNDI__FRIENDS__ISSUERS__{upper}__JWKS_URL"),
                self.jwks_url.clone(),
            ),
            (
                "FUNDI__FRIENDS__ALLOW_PRIVATE_NETWORKS".into(),
                "true".into(),
            ),
        ]
    }

    /// The claims of a fresh assertion of `sub` for `audience`, valid for five minutes.
    pub(crate) fn claims(&self, sub: &str, audience: &str) -> Value {
        let now = chrono::Utc::now().timestamp();
        json!({
            "iss": self.issuer,
            "sub": sub,
            "aud": audience,
            "iat": now,
            "exp": now + 300,
            "jti": uuid::Uuid::new_v4().to_string(),
        })
    }

    /// `claims` signed by this provider's key, typed as an identity assertion grant.
    pub(crate) fn sign(&self, claims: &Value) -> String {
        self.sign_as(claims, Some("oauth-id-jag+jwt"), &self.key)
    }

    /// Its signing key.
    pub(crate) fn key(&self) -> CardKey {
        CardKey::from_seed_base64(self.key.kid().to_owned(), &self.key.seed_base64()).unwrap()
    }

    /// `claims` signed with `key` under this provider's key id, with `typ`.
    pub(crate) fn sign_as(&self, claims: &Value, typ: Option<&str>, key: &CardKey) -> String {
        let mut header = Header::new(Algorithm::EdDSA);
        header.kid = Some(self.key.kid().to_owned());
        header.typ = typ.map(str::to_owned);
        let seed = STANDARD.decode(key.seed_base64()).unwrap();
        let der = [PKCS8_PREFIX.as_slice(), &seed].concat();
        jsonwebtoken::encode(&header, claims, &EncodingKey::from_ed_der(&der)).unwrap()
    }
}
