//! `fundi serve` on PostgreSQL (`store.kind = "postgres"`, a schema of its own on the
//! machine's server or `FUNDI_TEST_POSTGRES_URL`): tasks answered, a SIGKILL mid-run,
//! and after the restart every acknowledged task is there, the interrupted one resumed
//! to its end, and the one waiting for input still waiting; a second node on the same
//! schema is refused. Fails, never skips, when PostgreSQL is missing.

mod common;

use common::*;
use fundi_postgres::testing::{drop_schemas, fresh_schema, test_url};
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_on_postgres_keeps_every_task_across_a_kill() {
    let dir = tempfile::tempdir().unwrap();
    let schema = fresh_schema();
    let url = test_url();
    let env = [
        ("FUNDI__STORE__KIND", "postgres"),
        ("FUNDI__STORE__POSTGRES__URL", url.as_str()),
        ("FUNDI__STORE__POSTGRES__SCHEMA", schema.as_str()),
    ];
    let server = Server::start(dir.path(), &env);
    assert!(
        server
            .banner
            .iter()
            .any(|l| l.contains("PostgreSQL, schema")),
        "{:?}",
        server.banner
    );
    // A second node on the same schema is refused: it would run the same tasks.
    let other = tempfile::tempdir().unwrap();
    let (status, stderr) = start_failing(other.path(), &["--bind", "127.0.0.1:0"], &env);
    assert!(!status.success());
    assert!(
        stderr.contains("another fundi node is using schema")
            && stderr.contains("set store.postgres.node-id on each"),
        "{stderr}"
    );
    let quick = ok(
        &server,
        "SendMessage",
        json!({"message": message("quick", Value::Null)}),
    )
    .await["task"]
        .clone();
    assert_eq!(state(&quick), "TASK_STATE_COMPLETED");
    let slow = ok(
        &server,
        "SendMessage",
        json!({"message": message("slow", json!({"steps": 40, "delayMs": 50})),
               "configuration": {"returnImmediately": true}}),
    )
    .await["task"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let asking = ok(
        &server,
        "SendMessage",
        json!({"message": message("ask me", json!({"askInput": true}))}),
    )
    .await["task"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    // Mid-run, the process dies.
    poll_task(&server, &slow, |t| {
        t["status"]["message"]["parts"][0]["text"]
            .as_str()
            .is_some_and(|text| text.starts_with("step "))
    })
    .await;
    let (token, user_token) = (server.token.clone(), server.user_token.clone());
    server.kill();

    let mut server = Server::start(dir.path(), &env);
    (server.token, server.user_token) = (token, user_token);
    let quick_id = quick["id"].as_str().unwrap();
    let kept = ok(&server, "GetTask", json!({"id": quick_id})).await;
    assert_eq!(state(&kept), "TASK_STATE_COMPLETED");
    let resumed = poll_task(&server, &slow, |t| state(t) == "TASK_STATE_COMPLETED").await;
    assert_eq!(resumed["status"]["message"]["parts"][0]["text"], "slow");
    let waiting = ok(&server, "GetTask", json!({"id": asking})).await;
    assert_eq!(state(&waiting), "TASK_STATE_INPUT_REQUIRED");
    let listed = ok(&server, "ListTasks", json!({})).await;
    assert_eq!(listed["tasks"].as_array().unwrap().len(), 3, "{listed}");
    drop(server);

    drop_schemas(&[schema]).await;
}

/// A NUL in a message is refused alike on sled and on PostgreSQL (which keeps none in
/// `jsonb`), naming the field, and no task is made; text with every other control
/// character is kept by both and reads back whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sled_and_postgres_accept_and_refuse_the_same_text() {
    let schema = fresh_schema();
    let url = test_url();
    let on_postgres = [
        ("FUNDI__STORE__KIND", "postgres"),
        ("FUNDI__STORE__POSTGRES__URL", url.as_str()),
        ("FUNDI__STORE__POSTGRES__SCHEMA", schema.as_str()),
    ];
    for env in [&on_postgres[..], &[]] {
        let dir = tempfile::tempdir().unwrap();
        let server = Server::start(dir.path(), env);
        let refusals = [
            (message("a\u{0}b", Value::Null), "message.parts[0].text"),
            (
                message("x", json!({"deep": [{"k": "v\u{0}"}]})),
                "message.parts[1].data",
            ),
            (
                {
                    let mut m = message("x", Value::Null);
                    m["metadata"] = json!({"k\u{0}": 1});
                    m
                },
                "message.metadata",
            ),
        ];
        for (sent, field) in refusals {
            let answer = rpc(&server, "SendMessage", json!({"message": sent})).await;
            assert_eq!(answer["error"]["code"], json!(-32602), "{answer}");
            let text = answer["error"]["message"].as_str().unwrap();
            assert!(text.contains(field) && text.contains("U+0000"), "{text}");
        }
        let listed = ok(&server, "ListTasks", json!({})).await;
        assert_eq!(
            listed["totalSize"],
            json!(0),
            "a refused message made a task"
        );

        let awkward: String = (1u8..32)
            .map(char::from)
            .chain(['\u{7f}', '𝄞', '\u{200f}'])
            .collect();
        let data = json!({"s": awkward, awkward.clone(): [u64::MAX, i64::MIN, 0.1]});
        let task = ok(
            &server,
            "SendMessage",
            json!({"message": message(&awkward, data.clone())}),
        )
        .await["task"]
            .clone();
        assert_eq!(state(&task), "TASK_STATE_COMPLETED", "{task}");
        let got = ok(&server, "GetTask", json!({"id": task["id"]})).await;
        assert_eq!(got["history"][0]["parts"][0]["text"], json!(awkward));
        assert_eq!(got["history"][0]["parts"][1]["data"], data);
    }
    drop_schemas(&[schema]).await;
}
