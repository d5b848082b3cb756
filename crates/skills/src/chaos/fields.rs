//! Reading a chaos request's JSON with errors that name the field (`data.plan[1].faults[0]
//! .attributes.latency must be ...`), so that a user can fix a scenario without guessing.

use serde_json::{Map, Value};

/// An object's fields, refusing any not in `allowed`.
pub(super) fn object<'a>(
    path: &str,
    value: &'a Value,
    allowed: &[&str],
) -> Result<&'a Map<String, Value>, String> {
    let map = value
        .as_object()
        .ok_or_else(|| format!("{path} must be an object, got {}", kind(value)))?;
    if let Some(unknown) = map.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(match allowed.is_empty() {
            true => format!("{path} takes no fields, got {unknown:?}"),
            false => format!(
                "{path}.{unknown} is not a field here (expected: {})",
                allowed.join(", ")
            ),
        });
    }
    Ok(map)
}

/// A whole number from `min` to `max`, or `default` when absent (or null).
pub(super) fn whole(
    path: &str,
    map: &Map<String, Value>,
    key: &str,
    default: Option<u64>,
    (min, max): (u64, u64),
    unit: &str,
) -> Result<u64, String> {
    let at = format!("{path}.{key}");
    match map.get(key) {
        None | Some(Value::Null) => {
            default.ok_or_else(|| format!("{at} is missing ({unit} from {min} to {max})"))
        }
        Some(value) => value
            .as_u64()
            .filter(|n| (min..=max).contains(n))
            .ok_or_else(|| format!("{at} must be {unit} from {min} to {max}, got {value}")),
    }
}

/// A number from 0 to 1, or `default` when absent (or null).
pub(super) fn share(
    path: &str,
    map: &Map<String, Value>,
    key: &str,
    default: Option<f64>,
) -> Result<Option<f64>, String> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(default),
        Some(value) => value
            .as_f64()
            .filter(|n| (0.0..=1.0).contains(n))
            .map(Some)
            .ok_or_else(|| format!("{path}.{key} must be a number from 0 to 1, got {value}")),
    }
}

/// A string, or `None` when absent (or null).
pub(super) fn text<'a>(
    path: &str,
    map: &'a Map<String, Value>,
    key: &str,
) -> Result<Option<&'a str>, String> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(format!(
            "{path}.{key} must be a string, got {}",
            kind(other)
        )),
    }
}

/// What kind of JSON value this is, for errors.
pub(super) fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}
