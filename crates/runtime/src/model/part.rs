//! `Part`: a oneof of text, raw bytes, a URL or JSON data, plus optional file facts.

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use serde::de::{self, Deserializer};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The one content member of a part.
#[derive(Debug, Clone, PartialEq)]
pub enum PartContent {
    /// Plain text.
    Text(String),
    /// Inline bytes (base64 on the wire).
    Raw(Vec<u8>),
    /// A reference to content elsewhere.
    Url(String),
    /// Any JSON value.
    Data(Value),
}

/// A piece of a message or artifact (`lf.a2a.v1.Part`).
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    /// The content (exactly one of text, raw, url, data).
    pub content: PartContent,
    /// A file name, for file-like parts.
    pub filename: Option<String>,
    /// The content's media type, e.g. `text/html`.
    pub media_type: Option<String>,
    /// Extension metadata.
    pub metadata: Option<Map<String, Value>>,
}

impl Part {
    fn with_content(content: PartContent) -> Part {
        Part {
            content,
            filename: None,
            media_type: None,
            metadata: None,
        }
    }

    /// A text part.
    pub fn text(text: impl Into<String>) -> Part {
        Part::with_content(PartContent::Text(text.into()))
    }

    /// A JSON data part.
    pub fn data(value: Value) -> Part {
        Part::with_content(PartContent::Data(value))
    }

    /// A raw bytes part.
    pub fn raw(bytes: Vec<u8>) -> Part {
        Part::with_content(PartContent::Raw(bytes))
    }

    /// A URL part.
    pub fn url(url: impl Into<String>) -> Part {
        Part::with_content(PartContent::Url(url.into()))
    }

    /// Sets the media type.
    pub fn with_media_type(mut self, media_type: impl Into<String>) -> Part {
        self.media_type = Some(media_type.into());
        self
    }

    /// The text, when this is a text part.
    pub fn as_text(&self) -> Option<&str> {
        match &self.content {
            PartContent::Text(text) => Some(text),
            _ => None,
        }
    }

    /// The JSON value, when this is a data part.
    pub fn as_data(&self) -> Option<&Value> {
        match &self.content {
            PartContent::Data(value) => Some(value),
            _ => None,
        }
    }
}

impl Serialize for Part {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        match &self.content {
            PartContent::Text(text) => map.serialize_entry("text", text)?,
            PartContent::Raw(bytes) => map.serialize_entry("raw", &STANDARD.encode(bytes))?,
            PartContent::Url(url) => map.serialize_entry("url", url)?,
            PartContent::Data(value) => map.serialize_entry("data", value)?,
        }
        if let Some(filename) = &self.filename {
            map.serialize_entry("filename", filename)?;
        }
        if let Some(media_type) = &self.media_type {
            map.serialize_entry("mediaType", media_type)?;
        }
        if let Some(metadata) = &self.metadata {
            map.serialize_entry("metadata", metadata)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Part {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut fields = Map::<String, Value>::deserialize(deserializer)?;
        let mut content = None;
        for key in ["text", "raw", "url", "data"] {
            // ProtoJSON: `null` for a field means absent.
            let Some(value) = fields.remove(key).filter(|v| !v.is_null()) else {
                continue;
            };
            if content.is_some() {
                return Err(de::Error::custom(
                    "a part must have exactly one of text, raw, url, data; found more than one",
                ));
            }
            content = Some(decode_content(key, value)?);
        }
        let content = content.ok_or_else(|| {
            de::Error::custom("a part must have exactly one of text, raw, url, data; found none")
        })?;
        Ok(Part {
            content,
            filename: take_string(&mut fields, &["filename"])?,
            media_type: take_string(&mut fields, &["mediaType", "media_type"])?,
            metadata: match take_field(&mut fields, &["metadata"]) {
                None => None,
                Some(Value::Object(map)) => Some(map),
                Some(_) => return Err(de::Error::custom("part metadata must be a JSON object")),
            },
        })
    }
}

fn decode_content<E: de::Error>(key: &str, value: Value) -> Result<PartContent, E> {
    match (key, value) {
        ("text", Value::String(text)) => Ok(PartContent::Text(text)),
        ("url", Value::String(url)) => Ok(PartContent::Url(url)),
        ("raw", Value::String(encoded)) => decode_base64(&encoded)
            .map(PartContent::Raw)
            .ok_or_else(|| E::custom("part raw must be base64")),
        ("data", value) => Ok(PartContent::Data(value)),
        (key, _) => Err(E::custom(format!("part {key} must be a string"))),
    }
}

/// Standard base64 with padding on output; standard or URL-safe, padded or not, on input.
fn decode_base64(encoded: &str) -> Option<Vec<u8>> {
    [STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD]
        .iter()
        .find_map(|engine| engine.decode(encoded).ok())
}

/// Removes the first present, non-null field among `names` (camelCase then snake_case).
fn take_field(fields: &mut Map<String, Value>, names: &[&str]) -> Option<Value> {
    names
        .iter()
        .find_map(|name| fields.remove(*name).filter(|v| !v.is_null()))
}

fn take_string<E: de::Error>(
    fields: &mut Map<String, Value>,
    names: &[&str],
) -> Result<Option<String>, E> {
    match take_field(fields, names) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(E::custom(format!("part {} must be a string", names[0]))),
    }
}
