//! The agent card signed by the real binary: its signature verifies against the keys at
//! `/.well-known/jwks.json`; `fundi rotate-card-key` makes a new key that signs from the
//! next start while the replaced one stays published; and signing can be turned off.

mod common;

use std::path::Path;
use std::process::Command;

use common::Server;
use fundi_peers::signature;
use serde_json::Value;

async fn card_and_keys(server: &Server) -> (Value, Value) {
    let card: Value = reqwest::Client::new()
        .get(format!("{}/.well-known/agent-card.json", server.url))
        .header("A2A-Version", "1.0")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let keys: Value = reqwest::get(format!("{}/.well-known/jwks.json", server.url))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    (card, keys)
}

#[tokio::test]
async fn the_card_is_signed_and_a_rotated_key_signs_from_the_next_start() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let (card, keys) = card_and_keys(&server).await;
    let first = signature::verify(&card, &keys).unwrap();
    assert_eq!(
        first.jku.as_deref(),
        Some(format!("{}/.well-known/jwks.json", server.url).as_str())
    );
    server.terminate();

    let config = Path::new(env!("CARGO_MANIFEST_DIR")).join("config/fundi.toml");
    let rotated = Command::new(env!("CARGO_BIN_EXE_fundi"))
        .arg("rotate-card-key")
        .arg("--config")
        .arg(&config)
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&rotated.stdout);
    assert!(
        rotated.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&rotated.stderr)
    );
    assert!(said.contains("stays published for 30 days"), "{said}");

    let server = Server::start(dir.path(), &[]);
    let (card, keys) = card_and_keys(&server).await;
    let second = signature::verify(&card, &keys).unwrap();
    assert_ne!(second.kid, first.kid, "the new key signs");
    let kids: Vec<&str> = keys["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["kid"].as_str().unwrap())
        .collect();
    assert_eq!(
        kids,
        [second.kid.as_str(), first.kid.as_str()],
        "the replaced key stays published"
    );
}

#[tokio::test]
async fn signing_can_be_turned_off() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[("FUNDI__CARD_SIGNING__ENABLED", "false")]);
    let (card, _) = {
        let card: Value = reqwest::get(format!("{}/.well-known/agent-card.json", server.url))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        (card, ())
    };
    assert!(card.get("signatures").is_none(), "{card}");
    let keys = reqwest::get(format!("{}/.well-known/jwks.json", server.url))
        .await
        .unwrap();
    assert_eq!(keys.status(), 404);
    assert!(!dir.path().join("data/card-signing-keys.json").exists());
}
