//! A skill's input schema, checked when a task is submitted: the data part of its first
//! message against the JSON Schema the skill declares on its card, the refusal naming
//! the field (`data.plan[0].durationMs: ...`). Embedders' skills use it the same way.

use fundi_runtime::{InputRefused, Message};
use jsonschema::Validator;
use serde_json::Value;

/// A compiled schema: compile once (a `OnceLock` of the skill's module), check often.
pub fn compile(schema: &Value) -> Validator {
    // The built-in schemas are constants, tested to compile: a failure is a bug here.
    jsonschema::validator_for(schema).unwrap_or_else(|e| panic!("an invalid input schema: {e}"))
}

/// Checks `message`'s data part (if it has one) against `validator`.
pub fn check_data(validator: &Validator, message: &Message) -> Result<(), InputRefused> {
    let Some(data) = message.data() else {
        return Ok(());
    };
    match validator.iter_errors(data).next() {
        None => Ok(()),
        Some(error) => Err(InputRefused::new(format!(
            "data{}: {error}",
            field_path(&error.instance_path().to_string())
        ))),
    }
}

/// A JSON pointer (`/plan/0/durationMs`) as a field path (`.plan[0].durationMs`).
fn field_path(pointer: &str) -> String {
    pointer
        .split('/')
        .skip(1)
        .map(|token| token.replace("~1", "/").replace("~0", "~"))
        .map(|token| match token.parse::<usize>() {
            Ok(index) => format!("[{index}]"),
            Err(_) => format!(".{token}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use fundi_runtime::Part;
    use serde_json::json;

    #[test]
    fn a_refusal_names_the_field_and_no_data_is_no_refusal() {
        let validator = compile(&json!({"type": "object", "properties": {
            "plan": {"type": "array", "items": {"type": "object", "properties": {
                "durationMs": {"type": "integer", "minimum": 100}}}}}}));
        let with = |data: Value| Message::user(vec![Part::text("x"), Part::data(data)]);
        let refused = check_data(&validator, &with(json!({"plan": [{"durationMs": 5}]})));
        let refused = refused.unwrap_err();
        let reason = refused.reason();
        assert!(reason.starts_with("data.plan[0].durationMs: "), "{reason}");
        assert!(check_data(&validator, &with(json!({"plan": [{"durationMs": 500}]}))).is_ok());
        assert!(check_data(&validator, &Message::user(vec![Part::text("x")])).is_ok());
        assert_eq!(field_path("/a~1b/3"), ".a/b[3]");
    }
}
