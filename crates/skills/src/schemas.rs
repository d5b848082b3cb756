//! The input schemas the built-in skills declare on their cards (JSON Schema 2020-12 of
//! the data part of a task's first message), and their compiled validators. Each schema
//! is no stricter than the skill's own checks, which go on to check what a schema cannot
//! say (allowed origins and targets, the configured limits).

use std::collections::HashMap;
use std::sync::OnceLock;

use fundi_runtime::{InputRefused, Message};
use jsonschema::Validator;
use serde_json::{Value, json};

/// The schema of skill `id`'s data input, if it declares one.
pub(crate) fn of(id: &str) -> Option<Value> {
    let schema = match id {
        "echo" => json!({"type": "object", "properties": {
            "steps": {"type": "integer", "minimum": 0, "maximum": 10000,
                      "description": "Progress steps to report."},
            "delayMs": {"type": "integer", "minimum": 0, "maximum": 60000,
                        "description": "Milliseconds between steps."},
            "askInput": {"type": "boolean", "description": "Ask for the text first."},
            "waitEachStep": {"type": "boolean",
                             "description": "Store each step before the next."},
            "idleS": {"type": "integer", "minimum": 0, "maximum": 86400,
                      "description": "Seconds to wait idle before the steps (the task \
                                      parks meanwhile)."}}}),
        "a11y-audit" => json!({"type": "object", "dependentRequired": {"maxPages": ["url"]},
            "properties": {
            "url": {"type": "string", "description": "The page to audit, on an allowed origin \
                    (or the HTML in a text/html part)."},
            "maxPages": {"type": "integer", "minimum": 1,
                         "description": "Same-origin pages to crawl from it (default 1)."},
            "mode": {"enum": ["static", "browser"],
                     "description": "static: the HTML as served; browser: as headless Chromium \
                                     renders it, scripts run (default: the server's setting)."}}}),
        "security-scan" => json!({"type": "object", "required": ["url"], "properties": {
            "url": {"type": "string", "description": "The site to scan, on an allowed origin."},
            "paths": {"type": "array", "minItems": 1, "items": {"type": "string"},
                      "description": "Paths to check, like \"/login\"."},
            "active": {"type": "boolean", "description": "Also send active probes."}}}),
        "chaos-run" => chaos_run(),
        "heal-issue" => json!({"type": "object", "required": ["issue", "repository"],
            "additionalProperties": false, "properties": {
            "issue": {"description": "An issue's id, or an issue described inline.",
                      "oneOf": [{"type": "string"}, {"type": "object",
                                 "required": ["source", "rule", "location"]}]},
            "repository": {"type": "string", "description": "A git repository in a workspace."},
            "file": {"type": "string", "description": "The file to fix, in the repository."},
            "site": {"type": "string", "description": "The site the repository serves."},
            "root": {"type": "string", "description": "The site's root in the repository."}}}),
        _ => return None,
    };
    Some(schema)
}

fn chaos_run() -> Value {
    let faults = crate::chaos::fault::FAULT_TYPES;
    let slo = json!({"type": ["object", "null"], "properties": {
        "successRate": {"type": "number", "minimum": 0, "maximum": 1},
        "p99Ms": {"type": "number", "minimum": 0}}});
    json!({"type": "object", "required": ["target", "plan"], "additionalProperties": false,
        "properties": {
        "target": {"type": "string", "description": "host:port or an http(s) origin, allowed."},
        "listen": {"type": "string", "description": "Where the proxy listens (ip:port)."},
        "plan": {"type": "array", "minItems": 1, "items": {"type": "object",
            "required": ["durationMs"], "properties": {
            "name": {"type": "string"},
            "durationMs": {"type": "integer", "minimum": 100},
            "faults": {"type": "array", "maxItems": 16, "items": {"type": "object",
                "required": ["type"], "properties": {
                "type": {"enum": faults},
                "stream": {"enum": ["upstream", "downstream"]},
                "toxicity": {"type": "number", "minimum": 0, "maximum": 1},
                "attributes": {"type": "object"},
                "name": {"type": "string"}}}},
            "slo": slo}}},
        "probe": {"type": "object", "properties": {
            "kind": {"enum": ["http", "tcp"]},
            "path": {"type": "string"},
            "ratePerSecond": {"type": "number", "exclusiveMinimum": 0},
            "timeoutMs": {"type": "integer", "minimum": 1}}},
        "slo": slo,
        "seed": {"type": "integer", "minimum": 0}}})
}

/// Checks `message`'s data part against skill `id`'s schema.
pub(crate) fn check(id: &str, message: &Message) -> Result<(), InputRefused> {
    static VALIDATORS: OnceLock<HashMap<&'static str, Validator>> = OnceLock::new();
    let validators = VALIDATORS.get_or_init(|| {
        [
            "echo",
            "a11y-audit",
            "security-scan",
            "chaos-run",
            "heal-issue",
        ]
        .into_iter()
        .filter_map(|id| Some((id, crate::schema::compile(&of(id)?))))
        .collect()
    });
    match validators.get(id) {
        Some(validator) => crate::schema::check_data(validator, message),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fundi_runtime::Part;

    fn with(data: Value) -> Message {
        Message::user(vec![Part::text("x"), Part::data(data)])
    }

    #[test]
    fn the_documented_inputs_pass_and_wrong_ones_are_named() {
        let fine = [
            (
                "echo",
                json!({"steps": 3, "delayMs": 200, "askInput": true}),
            ),
            ("echo", json!({"steps": 4.0})),
            (
                "a11y-audit",
                json!({"url": "https://www.example.com/", "maxPages": 5}),
            ),
            (
                "security-scan",
                json!({"url": "https://a.test/", "paths": ["/", "/login"]}),
            ),
            (
                "chaos-run",
                json!({"target": "http://127.0.0.1:8081", "listen": "127.0.0.1:0",
                "plan": [{"name": "baseline", "durationMs": 5000},
                         {"name": "fault", "durationMs": 10000, "faults": [
                            {"type": "latency", "stream": "downstream", "toxicity": 1,
                             "attributes": {"latency": 200, "jitter": 20}}], "slo": null}],
                "probe": {"kind": "http", "path": "/health", "ratePerSecond": 5, "timeoutMs": 2000},
                "slo": {"successRate": 0.99, "p99Ms": 500}, "seed": 7}),
            ),
            (
                "heal-issue",
                json!({"issue": "f00", "repository": "/srv/www/site",
                "site": "https://www.example.com/", "root": "public"}),
            ),
        ];
        let fine = fine.into_iter().chain([
            ("a11y-audit", json!({"mode": "browser"})),
            (
                "a11y-audit",
                json!({"url": "https://a.example/", "mode": "static"}),
            ),
        ]);
        for (id, data) in fine {
            assert!(check(id, &with(data.clone())).is_ok(), "{id}: {data}");
        }
        let wrong = [
            ("echo", json!({"steps": "many"}), "data.steps: "),
            ("a11y-audit", json!({"maxPages": 2}), "data: "),
            (
                "a11y-audit",
                json!({"url": "https://a.example/", "mode": "dom"}),
                "data.mode: ",
            ),
            (
                "chaos-run",
                json!({"target": "x", "plan": [{"durationMs": 50}]}),
                "data.plan[0].durationMs: ",
            ),
            (
                "heal-issue",
                json!({"issue": 7, "repository": "r"}),
                "data.issue: ",
            ),
        ];
        for (id, data, named) in wrong {
            let refused = check(id, &with(data)).unwrap_err();
            assert!(
                refused.reason().starts_with(named),
                "{id}: {}",
                refused.reason()
            );
        }
        assert!(check("inbox", &with(json!({"anything": 1}))).is_ok());
    }
}
