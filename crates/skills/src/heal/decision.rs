//! An approver's answer to a proposed fix: `approve`, or `reject` with a reason, as a
//! data part `{"decision": "approve" | "reject", "reason": "..."}` or as text.

use fundi_runtime::Message;

/// What the answer decides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Publish the branch.
    Approve,
    /// Delete the branch, for this reason.
    Reject(String),
}

/// The decision in `answer`, or why it is none.
pub(crate) fn read(answer: &Message) -> Result<Decision, String> {
    let (word, reason) = match answer.data() {
        Some(data) => (
            data["decision"].as_str().unwrap_or_default().to_owned(),
            data["reason"].as_str().map(str::to_owned),
        ),
        None => {
            let text = answer.text();
            let text = text.trim();
            let (word, rest) = text
                .split_once(|c: char| c.is_whitespace() || c == ':' || c == ',')
                .unwrap_or((text, ""));
            let rest = rest.trim().trim_start_matches([':', '-', ',']).trim();
            (word.to_owned(), (!rest.is_empty()).then(|| rest.to_owned()))
        }
    };
    match word.to_ascii_lowercase().trim_end_matches(['.', '!']) {
        "approve" | "approved" | "yes" => Ok(Decision::Approve),
        "reject" | "rejected" | "no" => Ok(Decision::Reject(
            reason.unwrap_or_else(|| "no reason given".into()),
        )),
        _ => Err(format!(
            "the answer must be \"approve\" or \"reject <reason>\" (or a data part \
             {{\"decision\": \"approve\"|\"reject\", \"reason\": ...}}), got {:?}",
            answer.text()
        )),
    }
}
