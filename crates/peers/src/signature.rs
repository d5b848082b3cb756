//! Agent card signatures (A2A v1.0 §8.4): a JWS over the RFC 8785 canonical form of the
//! card without its `signatures`, with default (empty) values dropped. fundi signs its
//! own card with an Ed25519 key ([`CardKey`], `alg` EdDSA, its public half in a JWKS
//! fundi serves), and checks peers' cards with [`verify`] against their JWKS.
//!
//! The canonical form keeps the card's required top-level fields even when empty (as the
//! spec's example does) and drops every other empty string, list and object; the
//! official SDKs drop every empty value, which gives the same bytes for any card whose
//! required fields are filled, as fundi's always are. A peer's card is checked against
//! both forms.

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey};
use serde_json::{Map, Value, json};

/// The fields of `AgentCard` the proto marks REQUIRED: kept even when empty.
const REQUIRED: [&str; 8] = [
    "name",
    "description",
    "supportedInterfaces",
    "version",
    "capabilities",
    "defaultInputModes",
    "defaultOutputModes",
    "skills",
];

/// The PKCS #8 DER prefix of an Ed25519 private key, before its 32-byte seed (RFC 8410).
const ED25519_PKCS8_PREFIX: [u8; 16] = [
    0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20,
];

/// The canonical form of `card` (RFC 8785, `signatures` left out, empty values dropped
/// except the required top-level fields): the bytes a signature covers.
pub fn canonical(card: &Value) -> Result<String, String> {
    let Value::Object(fields) = card else {
        return Err("a card is a JSON object".into());
    };
    let mut kept = Map::new();
    for (key, value) in fields {
        if key == "signatures" {
            continue;
        }
        match (cleaned(value), REQUIRED.contains(&key.as_str())) {
            (Some(value), _) => {
                kept.insert(key.clone(), value);
            }
            (None, true) => {
                kept.insert(key.clone(), value.clone());
            }
            (None, false) => {}
        }
    }
    jcs(&Value::Object(kept))
}

/// The canonical form the official SDKs compute: every empty value dropped.
fn canonical_without_empties(card: &Value) -> Result<String, String> {
    let mut card = card.clone();
    if let Value::Object(fields) = &mut card {
        fields.remove("signatures");
    }
    jcs(&cleaned(&card).unwrap_or_else(|| json!({})))
}

fn jcs(value: &Value) -> Result<String, String> {
    serde_json_canonicalizer::to_string(value).map_err(|e| format!("no canonical form: {e}"))
}

/// `value` without empty strings, lists and objects (nor nulls), `None` when nothing is
/// left of it.
fn cleaned(value: &Value) -> Option<Value> {
    match value {
        Value::Null => None,
        Value::String(text) if text.is_empty() => None,
        Value::Array(items) => {
            let kept: Vec<Value> = items.iter().filter_map(cleaned).collect();
            (!kept.is_empty()).then_some(Value::Array(kept))
        }
        Value::Object(fields) => {
            let kept: Map<String, Value> = fields
                .iter()
                .filter_map(|(k, v)| Some((k.clone(), cleaned(v)?)))
                .collect();
            (!kept.is_empty()).then_some(Value::Object(kept))
        }
        other => Some(other.clone()),
    }
}

/// An Ed25519 key that signs agent cards.
#[derive(Clone)]
pub struct CardKey {
    kid: String,
    seed: [u8; 32],
    /// The public key, base64url (a JWK's `x`).
    x: String,
}

impl std::fmt::Debug for CardKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CardKey").field("kid", &self.kid).finish()
    }
}

impl CardKey {
    /// A new random key, with a key id made from the time and the public key (two keys
    /// made in the same second have different ids).
    pub fn generate() -> CardKey {
        let seed: [u8; 32] = rand::random();
        let mut key = CardKey::from_seed(String::new(), seed);
        let at = chrono::Utc::now().format("%Y%m%dT%H%M%SZ");
        key.kid = format!("fundi-{at}-{}", &key.x[..8]);
        key
    }

    /// The key `kid` of this private seed (32 bytes).
    pub fn from_seed(kid: String, seed: [u8; 32]) -> CardKey {
        let public = ed25519_dalek::SigningKey::from_bytes(&seed).verifying_key();
        CardKey {
            kid,
            seed,
            x: URL_SAFE_NO_PAD.encode(public.as_bytes()),
        }
    }

    /// The key `kid` from its seed as [`CardKey::seed_base64`] wrote it.
    pub fn from_seed_base64(kid: String, seed: &str) -> Result<CardKey, String> {
        let bytes = STANDARD
            .decode(seed.trim())
            .map_err(|e| format!("the key of {kid} is not base64: {e}"))?;
        let seed: [u8; 32] = bytes
            .try_into()
            .map_err(|_| format!("the key of {kid} is not 32 bytes"))?;
        Ok(CardKey::from_seed(kid, seed))
    }

    /// The private seed, base64, for keeping.
    pub fn seed_base64(&self) -> String {
        STANDARD.encode(self.seed)
    }

    /// Its key id.
    pub fn kid(&self) -> &str {
        &self.kid
    }

    /// Its public half as a JWK.
    pub fn public_jwk(&self) -> Value {
        json!({"kty": "OKP", "crv": "Ed25519", "x": self.x, "kid": self.kid,
               "use": "sig", "alg": "EdDSA"})
    }

    /// The signature of `card` (an `AgentCardSignature`), its protected header naming
    /// this key and `jku`, the JWKS URL that publishes it.
    pub fn sign(&self, card: &Value, jku: &str) -> Result<Value, String> {
        let header = json!({"alg": "EdDSA", "typ": "JOSE", "kid": self.kid, "jku": jku});
        let protected = URL_SAFE_NO_PAD.encode(header.to_string());
        let payload = URL_SAFE_NO_PAD.encode(canonical(card)?);
        let mut der = ED25519_PKCS8_PREFIX.to_vec();
        der.extend_from_slice(&self.seed);
        let key = EncodingKey::from_ed_der(&der);
        let signing_input = format!("{protected}.{payload}");
        let signature =
            jsonwebtoken::crypto::sign(signing_input.as_bytes(), &key, Algorithm::EdDSA)
                .map_err(|e| format!("signing the card: {e}"))?;
        Ok(json!({"protected": protected, "signature": signature}))
    }
}

/// Whose key signed a card: the `kid` and the `jku` of a valid signature.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signer {
    /// The key id.
    pub kid: String,
    /// The JWKS URL its header named, if any.
    pub jku: Option<String>,
}

/// The `jku` each of `card`'s signatures names, in order (where to fetch keys from).
pub fn jkus(card: &Value) -> Vec<String> {
    signatures(card)
        .filter_map(|(header, _, _)| header["jku"].as_str().map(str::to_owned))
        .collect()
}

/// Checks `card`'s signatures against the keys of `jwks` (a JWK Set): the signer of the
/// first one that verifies; the error says why none does.
pub fn verify(card: &Value, jwks: &Value) -> Result<Signer, String> {
    let forms = [canonical(card)?, canonical_without_empties(card)?];
    let mut why = "the card has no signatures".to_owned();
    for (header, protected, signature) in signatures(card) {
        let kid = header["kid"].as_str().unwrap_or_default();
        let (algorithm, key) = match key_of(jwks, kid, header["alg"].as_str()) {
            Ok(found) => found,
            Err(reason) => {
                why = reason;
                continue;
            }
        };
        for form in &forms {
            let signing_input = format!("{protected}.{}", URL_SAFE_NO_PAD.encode(form));
            let valid =
                jsonwebtoken::crypto::verify(signature, signing_input.as_bytes(), &key, algorithm);
            if valid.unwrap_or(false) {
                return Ok(Signer {
                    kid: kid.to_owned(),
                    jku: header["jku"].as_str().map(str::to_owned),
                });
            }
        }
        why = format!("the signature of key {kid:?} does not match the card");
    }
    Err(why)
}

/// Each signature's decoded protected header, its encoded form and its signature.
fn signatures(card: &Value) -> impl Iterator<Item = (Value, &str, &str)> {
    card["signatures"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|entry| {
            let protected = entry["protected"].as_str()?;
            let signature = entry["signature"].as_str()?;
            let header = URL_SAFE_NO_PAD.decode(protected).ok()?;
            let header: Value = serde_json::from_slice(&header).ok()?;
            Some((header, protected, signature))
        })
}

/// The key `kid` of `jwks` for the header's `alg` (EdDSA or ES256 only).
fn key_of(jwks: &Value, kid: &str, alg: Option<&str>) -> Result<(Algorithm, DecodingKey), String> {
    let jwk = jwks["keys"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|k| k["kid"].as_str() == Some(kid))
        .ok_or_else(|| format!("no key {kid:?} in the signer's JWKS"))?;
    let text = |key: &str| jwk[key].as_str().unwrap_or_default();
    match (alg, text("kty"), text("crv")) {
        (Some("EdDSA"), "OKP", "Ed25519") => DecodingKey::from_ed_components(text("x"))
            .map(|key| (Algorithm::EdDSA, key))
            .map_err(|e| format!("key {kid:?} is unreadable: {e}")),
        (Some("ES256"), "EC", "P-256") => DecodingKey::from_ec_components(text("x"), text("y"))
            .map(|key| (Algorithm::ES256, key))
            .map_err(|e| format!("key {kid:?} is unreadable: {e}")),
        (alg, kty, crv) => Err(format!(
            "key {kid:?} is {kty} {crv} for {}: fundi accepts EdDSA (Ed25519) and ES256 (P-256)",
            alg.unwrap_or("no alg")
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example of A2A §8.4.1, byte for byte.
    #[test]
    fn the_specs_canonicalisation_example_is_reproduced() {
        let card = json!({
            "name": "Example Agent",
            "description": "",
            "capabilities": {"streaming": false, "pushNotifications": false, "extensions": []},
            "skills": []
        });
        assert_eq!(
            canonical(&card).unwrap(),
            r#"{"capabilities":{"pushNotifications":false,"streaming":false},"description":"","name":"Example Agent","skills":[]}"#
        );
    }

    fn card() -> Value {
        json!({"name": "fundi", "description": "Runs skills: \u{e9}t\u{e9}", "version": "1",
               "capabilities": {"streaming": true}, "skills": [{"id": "echo", "tags": ["x"]}],
               "documentationUrl": "", "defaultInputModes": ["text/plain"]})
    }

    #[test]
    fn a_signed_card_verifies_and_one_changed_byte_fails() {
        let key = CardKey::generate();
        let jwks = json!({"keys": [key.public_jwk()]});
        let mut signed = card();
        signed["signatures"] = json!([key.sign(&card(), "https://a.test/jwks.json").unwrap()]);
        let signer = verify(&signed, &jwks).unwrap();
        assert_eq!(signer.kid, key.kid());
        assert_eq!(jkus(&signed), ["https://a.test/jwks.json"]);
        let mut changed = signed.clone();
        changed["description"] = json!("Runs skills: \u{e9}t\u{e8}");
        let error = verify(&changed, &jwks).unwrap_err();
        assert!(error.contains("does not match"), "{error}");
        let other = CardKey::from_seed(key.kid().to_owned(), [7; 32]);
        let error = verify(&signed, &json!({"keys": [other.public_jwk()]})).unwrap_err();
        assert!(error.contains("does not match"), "{error}");
        let error = verify(&signed, &json!({"keys": []})).unwrap_err();
        assert!(error.contains("no key"), "{error}");
        let error = verify(&card(), &jwks).unwrap_err();
        assert!(error.contains("no signatures"), "{error}");
    }

    #[test]
    fn a_key_survives_being_kept_and_two_keys_have_two_ids() {
        let key = CardKey::generate();
        assert_ne!(
            CardKey::generate().kid(),
            key.kid(),
            "made in the same second"
        );
        let again = CardKey::from_seed_base64(key.kid().to_owned(), &key.seed_base64()).unwrap();
        assert_eq!(again.public_jwk(), key.public_jwk());
        assert!(CardKey::from_seed_base64("k".into(), "c2hvcnQ=").is_err());
    }
}
