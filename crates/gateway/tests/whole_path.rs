//! What the server accepts, it can always store, read back, list and restart with: a
//! property test that drives arbitrary SendMessage requests through the whole path (the
//! gateway, a real runtime, a sled store in a temp dir), reads every accepted task back
//! and lists it, then reopens the store and reads and lists them again.
//!
//! CI runs a few dozen cases; for a longer run set `FUNDI_PROPTEST_CASES`, e.g.
//! `FUNDI_PROPTEST_CASES=2000 cargo test --release -p fundi-gateway --test whole_path`.

mod common;

use std::sync::Arc;

use common::*;
use fundi_gateway::GatewayConfig;
use fundi_store_sled::testing::open_sled;
use proptest::prelude::*;
use serde_json::{Map, Value, json};

fn cases() -> u32 {
    std::env::var("FUNDI_PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(24)
}

/// Strings of every kind: empty, control characters, astral planes, long.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        "\\PC{0,40}",
        "[\\x00-\\x1f\"\\\\]{0,8}",
        "[a-z]{1,8}".prop_map(|s| s.repeat(5_000)),
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        text().prop_map(Value::from),
    ];
    let tree = leaf.prop_recursive(5, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec(("\\PC{0,6}", inner), 0..6)
                .prop_map(|entries| Value::Object(entries.into_iter().collect::<Map<_, _>>())),
        ]
    });
    // Nesting around the limit of what a task holds (64), and past it.
    (tree, prop_oneof![Just(0usize), 55usize..75, 100usize..127]).prop_map(|(value, depth)| {
        (0..depth).fold(value, |inner, n| match n % 2 {
            0 => json!([inner]),
            _ => json!({"k": inner}),
        })
    })
}

fn part() -> impl Strategy<Value = Value> {
    let content = prop_oneof![
        text().prop_map(|t| json!({"text": t})),
        json_value().prop_map(|d| json!({"data": d})),
        prop::collection::vec(any::<u8>(), 0..64)
            .prop_map(|b| json!({"raw": base64_of(&b), "filename": "f.bin"})),
        text().prop_map(|u| json!({"url": u, "mediaType": "text/html"})),
    ];
    (content, prop::option::of(json_value())).prop_map(|(mut part, metadata)| {
        if let Some(Value::Object(map)) = metadata {
            part["metadata"] = Value::Object(map);
        }
        part
    })
}

fn base64_of(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// A SendMessage's params: mostly well formed, with arbitrary content. The first part
/// decides whether the task stops at input-required (so some are unfinished at the
/// reopen, and recovery reads them).
fn send_params() -> impl Strategy<Value = Value> {
    (
        any::<bool>(),
        prop::collection::vec(part(), 0..4),
        prop_oneof![Just(None), text().prop_map(Some)],
        prop_oneof![Just(None), text().prop_map(Some)],
        prop::option::of(json_value()),
        prop_oneof![
            Just(Value::Null),
            Just(json!({"returnImmediately": true})),
            Just(json!({"historyLength": 1})),
            Just(json!([])),
        ],
    )
        .prop_map(|(ask, parts, id, context, metadata, configuration)| {
            let mut all = vec![json!({"data": {"ask": ask}})];
            all.extend(parts);
            let mut message = json!({
                "role": "ROLE_USER",
                "parts": all,
                "messageId": id.unwrap_or_else(|| "m".into()),
            });
            if let Some(context) = context {
                message["contextId"] = json!(context);
            }
            if let Some(Value::Object(mut map)) = metadata {
                map.remove("skill");
                message["metadata"] = Value::Object(map);
            }
            json!({"message": message, "configuration": configuration})
        })
}

/// Reads every task back and lists them all: each read must succeed and show the task.
async fn read_back(gw: &Gateway, accepted: &[(String, Value)]) -> Result<(), TestCaseError> {
    for (id, first_message) in accepted {
        let task = gw.call("GetTask", json!({"id": id})).await;
        prop_assert!(task.get("result").is_some(), "GetTask {id}: {task}");
        prop_assert_eq!(
            &task["result"]["history"][0]["parts"],
            &first_message["parts"]
        );
    }
    let mut listed = 0;
    let mut token = String::new();
    loop {
        let page = gw
            .call("ListTasks", json!({"pageSize": 100, "pageToken": token}))
            .await;
        prop_assert!(page.get("result").is_some(), "ListTasks: {page}");
        listed += page["result"]["tasks"].as_array().map_or(0, Vec::len);
        token = page["result"]["nextPageToken"]
            .as_str()
            .unwrap_or("")
            .to_owned();
        if token.is_empty() {
            break;
        }
    }
    prop_assert_eq!(listed, accepted.len());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn accepted_requests_are_stored_read_back_listed_and_survive_a_reopen(
        requests in prop::collection::vec(send_params(), 1..6),
    ) {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        rt.block_on(async {
            let gw = gateway_on(Arc::new(open_sled(dir.path()).await), GatewayConfig::default()).await;
            let mut accepted = Vec::new();
            let mut by_message_id = std::collections::HashMap::new();
            for params in requests {
                let response = gw.call("SendMessage", params.clone()).await;
                match response.get("result") {
                    Some(result) => {
                        let id = result["task"]["id"].as_str().unwrap_or_default().to_owned();
                        prop_assert!(!id.is_empty(), "{response}");
                        // A message id sent again is a retry: the first one's task.
                        let message_id = params["message"]["messageId"].to_string();
                        match by_message_id.get(&message_id) {
                            Some(first) => prop_assert_eq!(first, &id, "a retry's task"),
                            None => {
                                by_message_id.insert(message_id, id.clone());
                                accepted.push((id, params["message"].clone()));
                            }
                        }
                    }
                    None => {
                        // Refused: a clear error, with the code for bad input (a value
                        // nested past the JSON parser's own limit is a parse error).
                        let code = response["error"]["code"].as_i64().unwrap_or_default();
                        prop_assert!([-32700, -32602, -32600].contains(&code), "{response}");
                    }
                }
            }
            read_back(&gw, &accepted).await?;
            gw.runtime.shutdown(std::time::Duration::from_millis(100)).await;
            drop(gw);
            let gw = gateway_on(Arc::new(open_sled(dir.path()).await), GatewayConfig::default()).await;
            prop_assert_eq!(gw.runtime.recovery_report().quarantined, 0);
            read_back(&gw, &accepted).await?;
            gw.runtime.shutdown(std::time::Duration::from_millis(100)).await;
            Ok(())
        })?;
    }
}
