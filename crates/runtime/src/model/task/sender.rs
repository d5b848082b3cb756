//! Who sent a user message, as the runtime recorded it: the authenticated user the
//! message arrived with, written into the message's metadata as it is accepted (and
//! whatever a client wrote there itself removed), so that a skill can trust it and
//! every reader of the history sees it (an approval names its approver).

use serde_json::Value;

use super::Message;

/// The metadata key of a user message's sender.
pub const SENDER_KEY: &str = "fundi.sender";

impl Message {
    /// The user who sent this message, as the runtime recorded it when it accepted it
    /// (`None`: an in-process caller or a caller with no user).
    pub fn sender(&self) -> Option<&str> {
        self.metadata.as_ref()?.get(SENDER_KEY)?.as_str()
    }

    /// Records `sender` as the message's sender, replacing what the client wrote.
    pub(crate) fn stamp_sender(&mut self, sender: Option<&str>) {
        match (sender, self.metadata.as_mut()) {
            (Some(user), Some(metadata)) => {
                metadata.insert(SENDER_KEY.to_owned(), Value::String(user.to_owned()));
            }
            (Some(user), None) => {
                let mut metadata = serde_json::Map::new();
                metadata.insert(SENDER_KEY.to_owned(), Value::String(user.to_owned()));
                self.metadata = Some(metadata);
            }
            (None, Some(metadata)) => {
                metadata.remove(SENDER_KEY);
                if metadata.is_empty() {
                    self.metadata = None;
                }
            }
            (None, None) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Part;

    #[test]
    fn the_recorded_sender_replaces_what_a_client_claims() {
        let mut message = Message::user(vec![Part::text("approve")]);
        let mut claimed = serde_json::Map::new();
        claimed.insert(SENDER_KEY.into(), "mallory".into());
        message.metadata = Some(claimed);
        message.stamp_sender(Some("alice"));
        assert_eq!(message.sender(), Some("alice"));
        message.stamp_sender(None);
        assert_eq!(message.sender(), None);
        assert_eq!(message.metadata, None, "nothing else was there");
    }
}
