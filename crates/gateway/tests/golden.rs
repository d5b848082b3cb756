//! Golden shapes: the agent card, and every method's result, checked against
//! `spec/a2a.proto` (field names, required fields, enum names, oneofs).

mod common;

use axum::body::Body;
use axum::http::Request;
use common::*;
use fundi_runtime::testing::ProtoSchema;
use http_body_util::BodyExt;
use serde_json::{Value, json};

/// The card's top-level keys that only v0.3 clients read (not in the v1.0 proto).
const V03_CARD_KEYS: [&str; 4] = ["url", "protocolVersion", "preferredTransport", "security"];

async fn fetch_card(gw: &Gateway, path: &str) -> (axum::http::HeaderMap, Value) {
    fetch_versioned_card(gw, path, None).await
}

async fn fetch_versioned_card(
    gw: &Gateway,
    path: &str,
    version: Option<&str>,
) -> (axum::http::HeaderMap, Value) {
    let mut request = Request::get(path);
    if let Some(version) = version {
        request = request.header("A2A-Version", version);
    }
    let response = gw.send(request.body(Body::empty()).unwrap()).await;
    assert_eq!(response.status(), 200);
    let headers = response.headers().clone();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (headers, serde_json::from_slice(&bytes).unwrap())
}

#[tokio::test]
async fn each_version_gets_its_own_card_and_none_named_gets_both() {
    let gw = gateway().await;
    let proto = ProtoSchema::load();
    // A2A-Version: 1.0 (the JS SDK asks so): the proto's fields and nothing else.
    let (headers, v1) =
        fetch_versioned_card(&gw, "/.well-known/agent-card.json", Some("1.0")).await;
    proto.check("AgentCard", &v1).unwrap();
    assert_eq!(headers["vary"], "A2A-Version");
    for key in V03_CARD_KEYS {
        assert!(v1.get(key).is_none(), "{key} in the v1.0 card");
    }
    // The query parameter works as the header does; a patch version is the same.
    let (_, by_query) = fetch_card(&gw, "/.well-known/agent-card.json?A2A-Version=1.0.1").await;
    assert_eq!(by_query, v1);
    // A2A-Version: 0.3: v0.3's fields only, with v0.3's spellings.
    let (v03_headers, v03) =
        fetch_versioned_card(&gw, "/.well-known/agent-card.json", Some("0.3")).await;
    assert_ne!(v03_headers["etag"], headers["etag"]);
    assert!(v03.get("supportedInterfaces").is_none());
    assert!(v03.get("securityRequirements").is_none());
    assert_eq!(v03["securitySchemes"]["userToken"]["in"], "header");
    assert_eq!(v03["securitySchemes"]["bearer"]["type"], "http");
    assert_eq!(v03["security"], json!([{"bearer": [], "userToken": []}]));
    assert_eq!(v03["skills"][1]["security"][0]["bearer"][0], "fundi:audit");
    // The older path's readers predate v1.0: the v0.3 card unless they name one.
    let (_, older) = fetch_card(&gw, "/.well-known/agent.json").await;
    assert_eq!(older, v03);
    // A version this server does not speak.
    let response = gw
        .send(
            Request::get("/.well-known/agent-card.json")
                .header("A2A-Version", "9.0")
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(response.status(), 400);
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    let error: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(
        error["error"]["details"][0]["reason"],
        "VERSION_NOT_SUPPORTED"
    );

    // None named: v1.0's card with v0.3's fields beside it.
    let (unversioned_headers, unversioned) = fetch_card(&gw, "/.well-known/agent-card.json").await;
    for (key, value) in v1.as_object().unwrap() {
        if value.is_object() || value.is_array() {
            continue;
        }
        assert_eq!(&unversioned[key], value, "{key}");
    }
    for key in V03_CARD_KEYS {
        assert_eq!(unversioned[key], v03[key], "{key}");
    }
    assert_eq!(
        unversioned["supportedInterfaces"],
        v1["supportedInterfaces"]
    );
    assert_eq!(
        unversioned["securityRequirements"],
        v1["securityRequirements"]
    );
    assert_eq!(unversioned_headers["vary"], "A2A-Version");
}

#[tokio::test]
async fn the_unversioned_agent_card_matches_the_golden_file() {
    let gw = gateway().await;
    let (headers, card) = fetch_card(&gw, "/.well-known/agent-card.json").await;
    assert!(
        headers["cache-control"]
            .to_str()
            .unwrap()
            .contains("max-age=300")
    );
    let etag = headers["etag"].to_str().unwrap().to_owned();
    assert_eq!(headers["content-type"], "application/json");

    let interfaces = card["supportedInterfaces"].as_array().unwrap();
    let versions: Vec<&str> = interfaces
        .iter()
        .map(|i| i["protocolVersion"].as_str().unwrap())
        .collect();
    assert_eq!(versions, ["1.0", "1.0", "1.0", "0.3", "0.3"]);
    let bindings: Vec<&str> = interfaces
        .iter()
        .map(|i| i["protocolBinding"].as_str().unwrap())
        .collect();
    assert_eq!(
        bindings,
        ["JSONRPC", "HTTP+JSON", "GRPC", "JSONRPC", "HTTP+JSON"]
    );
    assert_eq!(interfaces[1]["url"], "http://agent.test:8080");
    assert_eq!(interfaces[2]["url"], "agent.test:8080");
    assert_eq!(
        card["capabilities"]["pushNotifications"], false,
        "push is not implemented"
    );
    assert_eq!(card["capabilities"]["streaming"], true);

    let golden_path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/agent-card.json");
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(
            golden_path,
            serde_json::to_string_pretty(&card).unwrap() + "\n",
        )
        .unwrap();
    }
    let mut golden: Value =
        serde_json::from_str(&std::fs::read_to_string(golden_path).unwrap()).unwrap();
    // The version follows the build.
    golden["version"] = json!(env!("CARGO_PKG_VERSION"));
    assert_eq!(
        card, golden,
        "run with UPDATE_GOLDEN=1 to accept a deliberate change"
    );

    // A matching ETag gets 304.
    let response = gw
        .send(
            Request::get("/.well-known/agent-card.json")
                .header("if-none-match", &etag)
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(response.status(), 304);
    // The advertised URL never comes from the Host header.
    let response = gw
        .send(
            Request::get("/.well-known/agent-card.json")
                .header("host", "evil.example")
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    assert!(!String::from_utf8_lossy(&bytes).contains("evil.example"));
}

#[tokio::test]
async fn every_method_result_has_the_proto_shape() {
    let proto = ProtoSchema::load();
    let gw = gateway().await;

    let sent = gw
        .ok(
            "SendMessage",
            json!({"message": message("g", json!({"steps": 1}))}),
        )
        .await;
    proto.check("SendMessageResponse", &sent).unwrap();
    let id = sent["task"]["id"].as_str().unwrap().to_owned();

    let task = gw.ok("GetTask", json!({"id": id})).await;
    proto.check("Task", &task).unwrap();

    let list = gw.ok("ListTasks", json!({"includeArtifacts": true})).await;
    proto.check("ListTasksResponse", &list).unwrap();
    let empty = gw
        .ok("ListTasks", json!({"contextId": "nothing-here"}))
        .await;
    proto.check("ListTasksResponse", &empty).unwrap();

    let held = gw
        .ok(
            "SendMessage",
            json!({"message": message("h", json!({"hold": true})),
            "configuration": {"returnImmediately": true}}),
        )
        .await;
    let canceled = gw.ok("CancelTask", json!({"id": held["task"]["id"]})).await;
    proto.check("Task", &canceled).unwrap();

    let (_, events) = gw
        .stream(
            "SendStreamingMessage",
            json!({"message": message("s", json!({"steps": 2}))}),
            None,
        )
        .await;
    for (_, event) in &events {
        proto.check("StreamResponse", &event["result"]).unwrap();
    }
    let (_, replay) = gw
        .stream("SubscribeToTask", json!({"id": id}), Some(0))
        .await;
    for (_, event) in &replay {
        proto.check("StreamResponse", &event["result"]).unwrap();
    }

    // Errors: code and message always; v1.0 data is an array of typed details.
    let error = gw.err("GetTask", json!({"id": "missing"})).await;
    assert_eq!(
        error["data"][0]["@type"],
        "type.googleapis.com/google.rpc.ErrorInfo"
    );
    assert_eq!(error["data"][0]["domain"], "a2a-protocol.org");
}
