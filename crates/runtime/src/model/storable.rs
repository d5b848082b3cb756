//! Text every store can hold. PostgreSQL keeps no U+0000 (NUL) in a `jsonb` string or
//! key, nor in a `text` column, while sled and memory would; so that what one store
//! accepts every store accepts, a NUL anywhere in a message or a skill's output is
//! refused where it enters the runtime, naming the field, and never reaches a store.

use super::limits::InvalidField;
use super::{Message, Part, PartContent};

const NUL: char = '\0';

/// Why a field holding a NUL is refused.
pub(crate) fn refused(field: String) -> InvalidField {
    InvalidField::new(
        field,
        "contains U+0000 (NUL), which no store keeps; send it escaped in text, or the \
         content as a raw part",
    )
}

/// Whether `text` holds a NUL.
pub(crate) fn has_nul(text: &str) -> bool {
    text.contains(NUL)
}

fn check_text(field: impl FnOnce() -> String, text: &str) -> Result<(), InvalidField> {
    match has_nul(text) {
        true => Err(refused(field())),
        false => Ok(()),
    }
}

/// Refuses a part holding a NUL in its text, URL, file name or media type, at
/// `{prefix}.parts[i]...` (its data and metadata are walked with their depth:
/// `limits.rs`).
pub(crate) fn check_part(prefix: &str, i: usize, part: &Part) -> Result<(), InvalidField> {
    let at = |what: &str| format!("{prefix}.parts[{i}].{what}");
    match &part.content {
        PartContent::Text(text) => check_text(|| at("text"), text)?,
        PartContent::Url(url) => check_text(|| at("url"), url)?,
        PartContent::Data(_) | PartContent::Raw(_) => {}
    }
    if let Some(name) = &part.filename {
        check_text(|| at("filename"), name)?;
    }
    if let Some(media_type) = &part.media_type {
        check_text(|| at("mediaType"), media_type)?;
    }
    Ok(())
}

/// Refuses a NUL in a message's own strings beside its parts (ids, extensions).
pub(crate) fn check_message_fields(prefix: &str, message: &Message) -> Result<(), InvalidField> {
    if let Some(task) = &message.task_id {
        check_text(|| format!("{prefix}.taskId"), task.as_str())?;
    }
    // A context id is refused with any control character where the runtime takes it.
    for (i, extension) in message.extensions.iter().enumerate() {
        check_text(|| format!("{prefix}.extensions[{i}]"), extension)?;
    }
    for (i, task) in message.reference_task_ids.iter().enumerate() {
        check_text(|| format!("{prefix}.referenceTaskIds[{i}]"), task.as_str())?;
    }
    Ok(())
}

/// Refuses a NUL in an artifact's name, description or extensions.
pub(crate) fn check_artifact_fields(artifact: &super::Artifact) -> Result<(), InvalidField> {
    if let Some(name) = &artifact.name {
        check_text(|| "artifact.name".into(), name)?;
    }
    if let Some(description) = &artifact.description {
        check_text(|| "artifact.description".into(), description)?;
    }
    for (i, extension) in artifact.extensions.iter().enumerate() {
        check_text(|| format!("artifact.extensions[{i}]"), extension)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_part_with_a_nul_in_its_text_is_refused_naming_the_field() {
        let error = check_part("message", 2, &Part::text("a\u{0}b")).unwrap_err();
        assert_eq!(error.field, "message.parts[2].text");
        assert!(error.reason.contains("U+0000"), "{error}");
        assert!(check_part("message", 0, &Part::text("fine\u{1}\u{7f}")).is_ok());
    }
}
