//! The opaque `pageToken` of task listings: a keyset position (update time, task id).

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};

use crate::model::TaskId;

/// A position in the newest-first order of task updates. Listing continues with the
/// tasks strictly after (older than) it, so pages stay stable while tasks are added.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cursor {
    /// Status timestamp of the last task returned, in milliseconds since the epoch.
    #[serde(rename = "t")]
    pub(crate) ts_ms: i64,
    /// Id of the last task returned (breaks ties between equal timestamps).
    #[serde(rename = "i")]
    pub(crate) task_id: TaskId,
}

/// Versioned so that a token from an older format is refused rather than misread.
#[derive(Serialize, Deserialize)]
struct Token {
    v: u8,
    #[serde(flatten)]
    cursor: Cursor,
}

impl Cursor {
    /// The position of a task updated at `ts_ms` (milliseconds since the epoch).
    pub fn new(ts_ms: i64, task_id: TaskId) -> Cursor {
        Cursor { ts_ms, task_id }
    }

    /// The update time of the position, in milliseconds since the epoch.
    pub fn ts_ms(&self) -> i64 {
        self.ts_ms
    }

    /// The task id that breaks ties at that time.
    pub fn task_id(&self) -> &TaskId {
        &self.task_id
    }

    /// The opaque token a client sends back.
    pub fn encode(&self) -> String {
        let token = Token {
            v: 1,
            cursor: self.clone(),
        };
        // Serializing a struct of an integer and a string cannot fail.
        URL_SAFE_NO_PAD.encode(serde_json::to_vec(&token).unwrap_or_default())
    }

    /// Reads a token made by [`Cursor::encode`]; anything else is an error.
    pub fn decode(token: &str) -> Result<Cursor, String> {
        let invalid = || format!("page token {token:?} is not one this server issued");
        let bytes = URL_SAFE_NO_PAD.decode(token).map_err(|_| invalid())?;
        let token: Token = serde_json::from_slice(&bytes).map_err(|_| invalid())?;
        if token.v != 1 {
            return Err(invalid());
        }
        Ok(token.cursor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_refuses_garbage() {
        let cursor = Cursor {
            ts_ms: 1_700_000_000_123,
            task_id: TaskId::from("t-9"),
        };
        assert_eq!(Cursor::decode(&cursor.encode()), Ok(cursor));
        for bad in ["", "invalid-token-xyz", "eyJ2IjoyfQ", "%%%"] {
            let err = Cursor::decode(bad).unwrap_err();
            assert!(err.contains("not one this server issued"), "{bad}: {err}");
        }
    }
}
