//! `fundi peers`: the peers a server delegates to, a fresh read of one's card, and the
//! peers an admin adds and removes at run time.

use serde_json::{Value, json};

use super::{admin_delete, admin_get, admin_post, show};
use crate::cli::{Endpoint, PeerCommand};

pub(super) async fn run(
    action: Option<Box<PeerCommand>>,
    endpoint: Endpoint,
) -> anyhow::Result<()> {
    match action.map(|action| *action) {
        None => list(endpoint).await,
        Some(PeerCommand::List { endpoint }) => list(endpoint).await,
        Some(PeerCommand::Discover { endpoint, name }) => {
            let path = format!("/peers/{}/discover", segment(&name));
            let result = admin_post(&endpoint, &path, None).await?;
            show(&endpoint, &result, |r| print_card(&name, &r["card"]))
        }
        Some(PeerCommand::Add {
            endpoint,
            name,
            peer_url,
            peer_token,
            peer_user_token,
            allow_private_networks,
            interface_host,
        }) => {
            let mut body = json!({"name": name, "url": peer_url,
                "allowPrivateNetworks": allow_private_networks, "interfaceHosts": interface_host});
            if let Some(token) = peer_token {
                body["token"] = json!(token);
            }
            if let Some(token) = peer_user_token {
                body["userToken"] = json!(token);
            }
            let result = admin_post(&endpoint, "/admin/peers", Some(&body)).await?;
            show(&endpoint, &result, |r| {
                println!(
                    "peer {} added ({}); fundi peers discover {} reads its card",
                    r["peer"]["name"].as_str().unwrap_or_default(),
                    r["peer"]["url"].as_str().unwrap_or_default(),
                    r["peer"]["name"].as_str().unwrap_or_default(),
                );
            })
        }
        Some(PeerCommand::Remove { endpoint, name }) => {
            admin_delete(&endpoint, &format!("/admin/peers/{}", segment(&name))).await?;
            println!("peer {name} removed");
            Ok(())
        }
    }
}

async fn list(endpoint: Endpoint) -> anyhow::Result<()> {
    let result = admin_get(&endpoint, "/peers").await?;
    show(&endpoint, &result, |r| {
        let peers = r["peers"].as_array().cloned().unwrap_or_default();
        if peers.is_empty() {
            println!(
                "no peers: configure [peers.<name>] in the server's config, or add one with \
                 fundi peers add"
            );
        }
        for peer in &peers {
            let name = peer["name"].as_str().unwrap_or_default();
            let source = match peer["addedBy"].as_str() {
                Some(by) => format!("added by {by}"),
                None => "from the config".to_owned(),
            };
            println!(
                "{name} {} ({source})",
                peer["url"].as_str().unwrap_or_default()
            );
            match peer.get("card") {
                Some(card) => {
                    print_card(name, card);
                    println!(
                        "  card read {}",
                        peer["cardFetchedAt"].as_str().unwrap_or("?")
                    );
                }
                None => println!("  card not read yet (fundi peers discover {name})"),
            }
        }
    })
}

fn print_card(name: &str, card: &Value) {
    println!(
        "  {} ({name}): {}",
        card["name"].as_str().unwrap_or("?"),
        card["description"].as_str().unwrap_or("")
    );
    let skills: Vec<&str> = card["skills"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s["id"].as_str())
        .collect();
    println!("  skills: {}", skills.join(", "));
    println!(
        "  {}",
        match (
            card["signed"].as_bool(),
            card["signatureVerified"].as_bool()
        ) {
            (_, Some(true)) => "card signature verified against the peer's own keys",
            (Some(true), _) => "card signed, but the signature does not verify",
            _ => "card not signed",
        }
    );
    if let Some(interface) = card.get("endpoint") {
        println!(
            "  calls go to {} ({} {}){}",
            interface["url"].as_str().unwrap_or("?"),
            interface["protocolBinding"].as_str().unwrap_or("?"),
            interface["protocolVersion"].as_str().unwrap_or("?"),
            match card["streaming"].as_bool() {
                Some(true) => ", followed over its stream",
                _ => ", followed by polling",
            }
        );
    } else {
        println!("  no interface fundi speaks (JSON-RPC or HTTP+JSON at A2A v1.0)");
    }
}

/// A path segment, percent-encoded.
fn segment(text: &str) -> String {
    let mut url = reqwest::Url::parse("http://fundi/").expect("a fixed, valid URL");
    url.path_segments_mut().expect("an http URL").push(text);
    url.path().trim_start_matches('/').to_owned()
}
