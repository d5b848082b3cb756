//! Test utilities shared across the workspace (feature `test-util`): the A2A proto as a
//! schema that JSON output can be checked against, the contract every `TaskStore`
//! keeps (`store_contract`), what a store must keep as it was given
//! (`stored_content`), and a scripted skill with the waits tests make (`scripted`).

pub mod first_writes;
pub mod long_tasks;
pub mod scripted;
pub mod store_contract;
pub mod stored_content;

use std::collections::BTreeMap;

use serde_json::Value;

/// One field of a proto message, by its ProtoJSON (lowerCamelCase) name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtoField {
    /// The field's type name (`string`, `Task`, `google.protobuf.Struct`, `map`, ...).
    pub type_name: String,
    /// `repeated`.
    pub repeated: bool,
    /// Marked `(google.api.field_behavior) = REQUIRED`.
    pub required: bool,
    /// Member of a oneof.
    pub in_oneof: bool,
}

/// Messages and enums of `spec/a2a.proto`.
#[derive(Debug, Clone, Default)]
pub struct ProtoSchema {
    /// Fields of every message.
    pub messages: BTreeMap<String, BTreeMap<String, ProtoField>>,
    /// Value names of every enum, in declaration order.
    pub enums: BTreeMap<String, Vec<String>>,
}

/// The snake_case proto name in lowerCamelCase, as ProtoJSON writes it.
pub fn lower_camel(snake: &str) -> String {
    let mut out = String::new();
    let mut upper = false;
    for c in snake.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

impl ProtoSchema {
    /// Reads the repository's `spec/a2a.proto`.
    pub fn load() -> ProtoSchema {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../spec/a2a.proto");
        let text = std::fs::read_to_string(path).expect("spec/a2a.proto is readable");
        ProtoSchema::parse(&text)
    }

    /// Parses proto3 text (messages, oneofs, enums; comments and options skipped).
    pub fn parse(text: &str) -> ProtoSchema {
        let code: String = text
            .lines()
            .map(|line| line.split("//").next().unwrap_or_default())
            .collect::<Vec<_>>()
            .join(" ");
        let mut schema = ProtoSchema::default();
        // Open scopes: (kind, name).
        let mut scopes: Vec<(String, String)> = Vec::new();
        let mut statement = String::new();
        for c in code.chars() {
            match c {
                '{' => {
                    let words: Vec<&str> = statement.split_whitespace().collect();
                    let (kind, name) = match words.as_slice() {
                        [kind, name, ..] => ((*kind).to_owned(), (*name).to_owned()),
                        _ => (String::new(), String::new()),
                    };
                    scopes.push((kind, name));
                    statement.clear();
                }
                '}' => {
                    scopes.pop();
                    statement.clear();
                }
                ';' => {
                    schema.statement(&scopes, statement.trim());
                    statement.clear();
                }
                c => statement.push(c),
            }
        }
        schema
    }

    fn statement(&mut self, scopes: &[(String, String)], statement: &str) {
        let Some((left, _)) = statement.split_once('=') else {
            return;
        };
        let words: Vec<&str> = left.split_whitespace().collect();
        if words.is_empty() || matches!(words[0], "option" | "reserved" | "syntax" | "package") {
            return;
        }
        let Some((kind, name)) = scopes.last() else {
            return;
        };
        if kind == "enum" {
            self.enums
                .entry(name.clone())
                .or_default()
                .push(words[0].to_owned());
            return;
        }
        // A oneof's fields belong to the message around it.
        let (in_oneof, message) = match (kind.as_str(), scopes.len()) {
            ("oneof", n) if n >= 2 => (true, scopes[n - 2].1.clone()),
            ("message", _) => (false, name.clone()),
            _ => return,
        };
        let field = words[words.len() - 1];
        let repeated = words[0] == "repeated";
        let type_name = if left.trim_start().starts_with("map<") {
            "map".to_owned()
        } else {
            words[words.len().saturating_sub(2)].to_owned()
        };
        self.messages.entry(message).or_default().insert(
            lower_camel(field),
            ProtoField {
                type_name,
                repeated,
                required: statement.contains("REQUIRED"),
                in_oneof,
            },
        );
    }

    /// Checks a JSON value against a message type, recursively: every key is a field of
    /// the message, every REQUIRED field outside a oneof is present, a oneof has at most
    /// one member present, enums use value names, nested messages are checked too.
    pub fn check(&self, message: &str, value: &Value) -> Result<(), String> {
        self.check_at(message, value, message)
    }

    fn check_at(&self, message: &str, value: &Value, path: &str) -> Result<(), String> {
        let fields = self
            .messages
            .get(message)
            .ok_or_else(|| format!("{path}: no message {message} in the proto"))?;
        let object = value
            .as_object()
            .ok_or_else(|| format!("{path}: expected a {message} object, got {value}"))?;
        for (key, item) in object {
            let field = fields
                .get(key)
                .ok_or_else(|| format!("{path}: {key:?} is not a field of {message}"))?;
            let path = format!("{path}.{key}");
            match (field.repeated, item) {
                (true, Value::Array(items)) => {
                    for (i, item) in items.iter().enumerate() {
                        self.check_value(field, item, &format!("{path}[{i}]"))?;
                    }
                }
                (true, other) => return Err(format!("{path}: expected an array, got {other}")),
                (false, item) => self.check_value(field, item, &path)?,
            }
        }
        for (name, field) in fields {
            if field.required && !field.in_oneof && !object.contains_key(name) {
                return Err(format!(
                    "{path}: required field {name:?} of {message} is missing"
                ));
            }
        }
        let oneof_members = fields
            .iter()
            .filter(|(name, f)| f.in_oneof && object.contains_key(*name))
            .count();
        if oneof_members > 1 {
            return Err(format!(
                "{path}: more than one oneof member of {message} is set"
            ));
        }
        Ok(())
    }

    fn check_value(&self, field: &ProtoField, value: &Value, path: &str) -> Result<(), String> {
        let ty = field.type_name.as_str();
        if self.messages.contains_key(ty) {
            return self.check_at(ty, value, path);
        }
        if let Some(names) = self.enums.get(ty) {
            let name = value.as_str().ok_or_else(|| {
                format!("{path}: enum {ty} must be written as its name, got {value}")
            })?;
            if !names.iter().any(|n| n == name) || name.ends_with("_UNSPECIFIED") {
                return Err(format!("{path}: {name:?} is not a value of {ty} to emit"));
            }
            return Ok(());
        }
        let ok = match ty {
            "string" | "bytes" | "google.protobuf.Timestamp" => value.is_string(),
            "bool" => value.is_boolean(),
            "int32" | "int64" | "uint32" | "uint64" | "double" | "float" => value.is_number(),
            "google.protobuf.Struct" | "map" => value.is_object(),
            _ => true,
        };
        if ok {
            Ok(())
        } else {
            Err(format!("{path}: {value} is not a valid {ty}"))
        }
    }
}
