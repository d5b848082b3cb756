//! What the runtime accepts into a task, so that whatever it accepts it can always store,
//! read back and restart with. Checked once, where a message or a skill's output enters
//! the runtime (`Message::validate`, and the task actor before each commit).
//!
//! The depth limit exists because a task's stored record wraps what a client sent in a
//! few more levels (record, task, history, message, parts, part; an event adds its own):
//! a value nested close to a JSON parser's recursion limit would be accepted and then be
//! unreadable. `MAX_VALUE_DEPTH` leaves ample room under serde_json's limit (128) for
//! those wrappers.

use serde_json::{Map, Value};

use super::{Artifact, Message, Part, PartContent, TaskEventKind, storable};

/// How deeply arrays and objects may nest in a JSON value of a message or artifact (a
/// part's data or metadata, a message's metadata) or in a checkpoint. A scalar is depth
/// 0, `[1]` and `{"a": 1}` depth 1.
pub const MAX_VALUE_DEPTH: usize = 64;

/// The longest `messageId` (and `artifactId`) accepted, in bytes.
pub const MAX_ID_LEN: usize = 256;

/// A field that is not acceptable, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field} {reason}")]
pub struct InvalidField {
    /// Where, as a path into the message: `message.parts[0].data`.
    pub field: String,
    /// What is wrong, e.g. "is nested 121 levels deep; at most 64 are accepted".
    pub reason: String,
}

impl InvalidField {
    pub(crate) fn new(field: impl Into<String>, reason: impl Into<String>) -> InvalidField {
        InvalidField {
            field: field.into(),
            reason: reason.into(),
        }
    }
}

/// What one walk over a JSON value found: how deeply it nests (counted no further than
/// the limit plus one), and whether a string or key in it holds a NUL
/// (`storable.rs`).
struct Survey {
    depth: usize,
    has_nul: bool,
}

/// Walks `value` once, without recursion, stopping past `limit` levels: a huge value
/// costs no more than walking it once.
fn survey(value: &Value, limit: usize) -> Survey {
    let mut found = Survey {
        depth: 0,
        has_nul: false,
    };
    let mut stack: Vec<(&Value, usize)> = vec![(value, 0)];
    while let Some((value, depth)) = stack.pop() {
        let depth = depth + 1;
        match value {
            Value::String(text) => found.has_nul |= storable::has_nul(text),
            Value::Array(items) => stack.extend(items.iter().map(|child| (child, depth))),
            Value::Object(map) => {
                found.has_nul |= map.keys().any(|key| storable::has_nul(key));
                stack.extend(map.values().map(|child| (child, depth)));
            }
            _ => continue,
        }
        if matches!(value, Value::Array(_) | Value::Object(_)) {
            found.depth = found.depth.max(depth);
            if depth > limit {
                return found;
            }
        }
    }
    found
}

/// How deeply `value` nests, counting no further than `limit + 1` (so that checking a
/// huge value costs no more than walking it once, and no recursion).
pub fn value_depth(value: &Value, limit: usize) -> usize {
    survey(value, limit).depth
}

/// Refuses `value` at `field` when it nests deeper than [`MAX_VALUE_DEPTH`], or holds
/// text no store keeps (a NUL): one walk for both.
pub fn check_value(field: impl FnOnce() -> String, value: &Value) -> Result<(), InvalidField> {
    check_survey(field, &survey(value, MAX_VALUE_DEPTH), 0)
}

/// `found` of a value `above` levels down from the field.
fn check_survey(
    field: impl FnOnce() -> String,
    found: &Survey,
    above: usize,
) -> Result<(), InvalidField> {
    if found.depth + above > MAX_VALUE_DEPTH {
        return Err(too_deep(field()));
    }
    match found.has_nul {
        true => Err(storable::refused(field())),
        false => Ok(()),
    }
}

/// Refuses a skill's checkpoint nested past [`MAX_VALUE_DEPTH`] or holding text no
/// store keeps (a NUL).
pub fn check_checkpoint(value: &Value) -> Result<(), InvalidField> {
    check_value(|| "checkpoint".into(), value)
}

/// A metadata map, which is one level itself: its values' depth, and a NUL in its keys
/// or values.
fn check_metadata(
    field: impl Fn() -> String,
    map: Option<&Map<String, Value>>,
) -> Result<(), InvalidField> {
    for (key, value) in map.into_iter().flatten() {
        if storable::has_nul(key) {
            return Err(storable::refused(field()));
        }
        check_survey(&field, &survey(value, MAX_VALUE_DEPTH), 1)?;
    }
    Ok(())
}

fn too_deep(field: String) -> InvalidField {
    InvalidField::new(
        field,
        format!(
            "is nested more than {MAX_VALUE_DEPTH} levels deep; at most {MAX_VALUE_DEPTH} are accepted"
        ),
    )
}

/// Refuses an id longer than [`MAX_ID_LEN`] or with control characters.
pub(crate) fn check_id(field: &str, id: &str) -> Result<(), InvalidField> {
    if id.len() > MAX_ID_LEN || id.chars().any(char::is_control) {
        return Err(InvalidField::new(
            field,
            format!(
                "is {} bytes; at most {MAX_ID_LEN} bytes without control characters are accepted",
                id.len()
            ),
        ));
    }
    Ok(())
}

/// The depth of every JSON value of these parts, and text every store holds (no NUL),
/// at `{prefix}.parts[i]`: one walk over each value.
pub(crate) fn check_parts(prefix: &str, parts: &[Part]) -> Result<(), InvalidField> {
    for (i, part) in parts.iter().enumerate() {
        if let PartContent::Data(value) = &part.content {
            check_value(|| format!("{prefix}.parts[{i}].data"), value)?;
        }
        check_metadata(
            || format!("{prefix}.parts[{i}].metadata"),
            part.metadata.as_ref(),
        )?;
        storable::check_part(prefix, i, part)?;
    }
    Ok(())
}

/// The depth of a message's JSON values, and text every store holds, at `{prefix}`.
pub(crate) fn check_message(prefix: &str, message: &Message) -> Result<(), InvalidField> {
    check_parts(prefix, &message.parts)?;
    check_metadata(|| format!("{prefix}.metadata"), message.metadata.as_ref())?;
    storable::check_message_fields(prefix, message)
}

fn check_artifact(artifact: &Artifact) -> Result<(), InvalidField> {
    check_id("artifact.artifactId", &artifact.artifact_id)?;
    check_parts("artifact", &artifact.parts)?;
    check_metadata(|| "artifact.metadata".into(), artifact.metadata.as_ref())?;
    storable::check_artifact_fields(artifact)
}

/// Whether a change a skill (or the runtime) is about to commit can be stored and read
/// back: the same limits as a client's message.
pub fn check_event(kind: &TaskEventKind) -> Result<(), InvalidField> {
    match kind {
        TaskEventKind::Created(task) => task
            .history
            .iter()
            .try_for_each(|m| check_message("message", m)),
        TaskEventKind::Status(status) => match &status.message {
            Some(message) => check_message("status.message", message),
            None => Ok(()),
        },
        TaskEventKind::Artifact { artifact, .. } => check_artifact(artifact),
        TaskEventKind::Message(message) | TaskEventKind::Queued(message) => {
            check_message("message", message)
        }
        TaskEventKind::MessageTaken { .. } => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn nested(levels: usize) -> Value {
        (0..levels).fold(json!(1), |inner, _| json!([inner]))
    }

    #[test]
    fn depth_counts_nested_arrays_and_objects() {
        assert_eq!(value_depth(&json!(1), 10), 0);
        assert_eq!(value_depth(&json!([]), 10), 1);
        assert_eq!(value_depth(&json!({"a": [1, {"b": []}]}), 10), 4);
        assert_eq!(value_depth(&nested(64), 64), 64);
        // Counting stops past the limit.
        assert_eq!(value_depth(&nested(500), 64), 65);
    }

    #[test]
    fn a_part_nested_past_the_limit_is_refused_with_its_path() {
        let ok = Message::user(vec![Part::text("x"), Part::data(nested(MAX_VALUE_DEPTH))]);
        assert_eq!(check_message("message", &ok), Ok(()));
        let deep = Message::user(vec![Part::text("x"), Part::data(nested(121))]);
        let error = check_message("message", &deep).unwrap_err();
        assert_eq!(error.field, "message.parts[1].data");
        assert!(error.reason.contains("at most 64"), "{error}");
        let mut meta = Message::user(vec![Part::text("x")]);
        let mut map = Map::new();
        map.insert("k".into(), nested(MAX_VALUE_DEPTH));
        meta.metadata = Some(map);
        assert_eq!(
            check_message("message", &meta).unwrap_err().field,
            "message.metadata"
        );
    }

    #[test]
    fn one_walk_finds_a_nul_in_any_string_or_key_of_a_value() {
        let clean = Message::user(vec![Part::data(json!({"a": ["b", {"c": "tab\tok"}]}))]);
        assert_eq!(check_message("message", &clean), Ok(()));
        for (value, field) in [
            (json!({"deep": [["\u{0}"]]}), "message.parts[0].data"),
            (json!({"a": [{"k\u{0}": 1}]}), "message.parts[0].data"),
        ] {
            let error = check_message("message", &Message::user(vec![Part::data(value)]));
            let error = error.unwrap_err();
            assert_eq!(error.field, field);
            assert!(error.reason.contains("U+0000"), "{error}");
        }
        let mut meta = Message::user(vec![Part::text("x")]);
        let mut map = Map::new();
        map.insert("k".into(), json!(["v\u{0}"]));
        meta.metadata = Some(map);
        assert_eq!(
            check_message("message", &meta).unwrap_err().field,
            "message.metadata"
        );
        // Too deep is said first, where a value is both.
        let both = Message::user(vec![Part::data(json!([nested(70), "\u{0}"]))]);
        let error = check_message("message", &both).unwrap_err();
        assert!(error.reason.contains("at most 64"), "{error}");
    }

    #[test]
    fn long_ids_are_refused() {
        assert!(check_id("message.messageId", &"m".repeat(MAX_ID_LEN)).is_ok());
        let error = check_id("message.messageId", &"m".repeat(MAX_ID_LEN + 1)).unwrap_err();
        assert_eq!(error.field, "message.messageId");
        assert!(check_id("message.messageId", "a\nb").is_err());
    }
}
