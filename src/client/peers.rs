//! `fundi peers`: the peers a server delegates to, and a fresh read of one's card.

use serde_json::Value;

use super::{admin_get, admin_post, show};
use crate::cli::Endpoint;

pub(super) async fn run(endpoint: Endpoint, discover: Option<String>) -> anyhow::Result<()> {
    if let Some(name) = discover {
        let path = format!("/peers/{}/discover", segment(&name));
        let result = admin_post(&endpoint, &path, None).await?;
        return show(&endpoint, &result, |r| print_card(&name, &r["card"]));
    }
    let result = admin_get(&endpoint, "/peers").await?;
    show(&endpoint, &result, |r| {
        let peers = r["peers"].as_array().cloned().unwrap_or_default();
        if peers.is_empty() {
            println!("no peers are configured ([peers.<name>] in the server's config)");
        }
        for peer in &peers {
            let name = peer["name"].as_str().unwrap_or_default();
            println!("{name} {}", peer["url"].as_str().unwrap_or_default());
            match peer.get("card") {
                Some(card) => {
                    print_card(name, card);
                    println!(
                        "  card read {}",
                        peer["cardFetchedAt"].as_str().unwrap_or("?")
                    );
                }
                None => println!("  card not read yet (fundi peers --discover {name})"),
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
