//! What a delegation asks for: the peer, and the message to send it.

use fundi_runtime::{InputRefused, Message, Part, PartContent, Role};
use serde_json::{Map, Value, json};

/// The fields of a delegation's data part.
const FIELDS: [&str; 3] = ["peer", "skill", "data"];

/// A delegation: to whom, and what.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Plan {
    pub(crate) peer: String,
    skill: Option<String>,
    data: Option<Value>,
    /// The message's other parts (text, files), sent as they are.
    parts: Vec<Part>,
}

impl Plan {
    /// The delegation `message` asks for: its first data part names the peer (and
    /// optionally the peer's skill and a data part for it); its other parts are sent.
    pub(crate) fn of(message: &Message) -> Result<Plan, InputRefused> {
        let at = message
            .parts
            .iter()
            .position(|p| matches!(p.content, PartContent::Data(_)))
            .ok_or(
                "delegate: the message needs a data part naming the peer, like \
                    {\"peer\": \"b\", \"skill\": \"echo\"}",
            )?;
        let Some(fields) = message.parts[at].as_data().and_then(Value::as_object) else {
            return Err("delegate: the data part must be an object, like {\"peer\": \"b\"}".into());
        };
        if let Some(unknown) = fields.keys().find(|k| !FIELDS.contains(&k.as_str())) {
            return Err(format!(
                "delegate: unknown field {unknown:?} in the data part (it takes peer, skill and data)"
            )
            .into());
        }
        let text = |key: &str| -> Result<Option<String>, InputRefused> {
            match fields.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) if !s.trim().is_empty() => Ok(Some(s.clone())),
                Some(other) => {
                    Err(format!("delegate: {key:?} must be a non-empty string, got {other}").into())
                }
            }
        };
        let peer =
            text("peer")?.ok_or("delegate: the data part must name the peer: {\"peer\": \"b\"}")?;
        let parts: Vec<Part> = message
            .parts
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != at)
            .map(|(_, p)| p.clone())
            .collect();
        let data = fields.get("data").filter(|d| !d.is_null()).cloned();
        if parts.is_empty() && data.is_none() {
            return Err(
                "delegate: nothing to send: add text to the message, or a \"data\" field".into(),
            );
        }
        Ok(Plan {
            peer,
            skill: text("skill")?,
            data,
            parts,
        })
    }

    /// The message the peer is sent, with this id.
    pub(crate) fn message(&self, message_id: &str) -> Message {
        let mut parts = self.parts.clone();
        if let Some(data) = &self.data {
            parts.push(Part::data(data.clone()));
        }
        let mut message = Message::user(parts);
        message.message_id = message_id.to_owned();
        if let Some(skill) = &self.skill {
            message.metadata = Some(Map::from_iter([("skill".to_owned(), json!(skill))]));
        }
        message
    }
}

/// A local user's answer, as the peer is sent it: the same id (a resend is the same
/// message to a peer that deduplicates), to the peer's task.
pub(crate) fn answer(local: &Message, task_id: &str, context_id: Option<&str>) -> Message {
    let mut message = Message::user(local.parts.clone());
    message.message_id = local.message_id.clone();
    message.task_id = Some(task_id.into());
    message.context_id = context_id.map(Into::into);
    message
}

/// A peer's message, as the local task tells it: an agent's message with a local id,
/// the peer's id kept in its metadata.
pub(crate) fn mirrored(peer_message: &Message) -> Message {
    let mut message = Message::agent(peer_message.parts.clone());
    let mut metadata = peer_message.metadata.clone().unwrap_or_default();
    metadata.insert("peerMessageId".into(), json!(peer_message.message_id));
    message.metadata = Some(metadata);
    debug_assert_eq!(message.role, Role::Agent);
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(parts: Vec<Part>) -> Message {
        Message::user(parts)
    }

    #[test]
    fn the_data_part_names_the_peer_and_the_rest_is_sent() {
        let plan = Plan::of(&message(vec![
            Part::text("hello"),
            Part::data(json!({"peer": "b", "skill": "echo", "data": {"steps": 2}})),
        ]))
        .unwrap();
        let sent = plan.message("m-1");
        assert_eq!(sent.message_id, "m-1");
        assert_eq!(sent.text(), "hello");
        assert_eq!(sent.data(), Some(&json!({"steps": 2})));
        assert_eq!(sent.metadata.unwrap()["skill"], "echo");
    }

    #[test]
    fn bad_delegations_are_refused_saying_why() {
        for (parts, says) in [
            (vec![Part::text("hi")], "needs a data part"),
            (
                vec![Part::data(json!({"skill": "echo"})), Part::text("x")],
                "must name the peer",
            ),
            (
                vec![Part::data(json!({"peer": 3})), Part::text("x")],
                "\"peer\" must be",
            ),
            (
                vec![Part::data(json!({"peer": "b", "to": 1}))],
                "unknown field \"to\"",
            ),
            (vec![Part::data(json!({"peer": "b"}))], "nothing to send"),
            (vec![Part::data(json!([1]))], "must be an object"),
        ] {
            let error = Plan::of(&message(parts)).unwrap_err().to_string();
            assert!(error.contains(says), "{error}");
        }
    }
}
