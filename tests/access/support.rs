//! What the tests of requests for access share: A started with the test's identity
//! provider listed, and the requester's side of the protocol.
#![allow(dead_code)]

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::common::Server;
use crate::idp::Idp;

/// A with `acme` listed as an identity provider (and `extra` settings).
pub(crate) fn start_a(dir: &std::path::Path, idp: &Idp, extra: &[(&str, &str)]) -> Server {
    let mut env: Vec<(String, String)> = idp.env("acme");
    env.extend(
        extra
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
    );
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    Server::start(dir, &env)
}

/// POSTs a request for access to `server`: the status, the body and `Retry-After`.
pub(crate) async fn ask(server: &Server, body: &Value) -> (StatusCode, Value, Option<String>) {
    let response = reqwest::Client::new()
        .post(format!("{}/access-requests", server.url))
        .json(body)
        .send()
        .await
        .unwrap();
    let status = response.status();
    let retry = response
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_owned());
    (status, response.json().await.unwrap_or(Value::Null), retry)
}

/// A request of B's agent, its assertion `assertion`.
pub(crate) fn request_of(b: &Server, scopes: &[&str], assertion: &str) -> Value {
    json!({
        "card": format!("{}/.well-known/agent-card.json", b.url),
        "scopes": scopes,
        "reason": "B runs nightly audits of our shared site",
        "assertion": assertion,
    })
}

/// Collects request `id` with `secret`: the status and the body.
pub(crate) async fn collect(server: &Server, id: &str, secret: &str) -> (StatusCode, Value) {
    let response = reqwest::Client::new()
        .post(format!("{}/access-requests/{id}/collect", server.url))
        .bearer_auth(secret)
        .send()
        .await
        .unwrap();
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// A JSON-RPC call with only a bearer token (a grant that acts for its person).
pub(crate) async fn call_as(
    server: &Server,
    token: &str,
    method: &str,
    params: Value,
) -> (StatusCode, Value) {
    let response = reqwest::Client::new()
        .post(server.rpc_url())
        .bearer_auth(token)
        .header("A2A-Version", "1.0")
        .json(&crate::common::request(method, params))
        .send()
        .await
        .unwrap();
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// A GET with only a bearer token: the status.
pub(crate) async fn get_as(server: &Server, token: &str, path: &str) -> StatusCode {
    reqwest::Client::new()
        .get(format!("{}{path}", server.url))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
        .status()
}
