//! Skills declare the JSON Schema of their data input: the agent card carries them (an
//! extension, since `AgentSkill` has no field for one), and a message whose data breaks
//! its skill's schema is refused at submission naming the field, and makes no task.

mod common;

use common::*;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_card_shows_input_schemas_and_a_submission_is_held_to_them() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let card = agent_card(&server).await;
    let schemas = card["capabilities"]["extensions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["uri"] == "urn:fundi:skill-input-schemas:1")
        .expect("the input schemas' extension")["params"]
        .clone();
    for skill in [
        "echo",
        "a11y-audit",
        "security-scan",
        "chaos-run",
        "heal-issue",
    ] {
        assert_eq!(schemas[skill]["type"], "object", "{skill}: {schemas}");
    }
    assert_eq!(schemas["echo"]["properties"]["steps"]["type"], "integer");

    let before = ok(&server, "ListTasks", json!({})).await["totalSize"].clone();
    for (skill, data, field) in [
        ("echo", json!({"steps": "many"}), "data.steps"),
        (
            "chaos-run",
            json!({"target": "127.0.0.1:1", "plan": [{"durationMs": 5}]}),
            "data.plan[0].durationMs",
        ),
    ] {
        let mut sent = message("x", data);
        sent["metadata"] = json!({"skill": skill});
        let answer = rpc(&server, "SendMessage", json!({"message": sent})).await;
        assert_eq!(answer["error"]["code"], -32602, "{answer}");
        let said = answer["error"]["message"].as_str().unwrap();
        assert!(said.contains(field), "{skill}: {said}");
    }
    let after = ok(&server, "ListTasks", json!({})).await["totalSize"].clone();
    assert_eq!(before, after, "no task was made");
}
