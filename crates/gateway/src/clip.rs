//! Client input as it may go into a log line or back into an error message: at most
//! [`CLIP_CHARS`] characters, control characters escaped, so that a megabyte of input
//! is never a megabyte of log or of answer.

/// The most characters of one client value a log line or a message carries.
pub(crate) const CLIP_CHARS: usize = 200;

/// The most characters of an error's detail, which may quote client input (a JSON
/// decoder's "invalid value: string ..." does).
pub(crate) const DETAIL_CHARS: usize = 1_000;

/// `text` escaped (control characters as `\n`, `\u{0}`, ...) and cut to
/// [`CLIP_CHARS`] characters, saying how long it was when cut.
pub(crate) fn clip(text: &str) -> String {
    clip_to(text, CLIP_CHARS)
}

/// [`clip`] to `chars` characters.
pub(crate) fn clip_to(text: &str, chars: usize) -> String {
    let mut out = String::new();
    for (taken, c) in text.chars().enumerate() {
        if taken == chars {
            out.push_str(&format!("… ({} bytes in all)", text.len()));
            return out;
        }
        match c.is_control() {
            true => out.extend(c.escape_default()),
            false => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_stays_and_long_text_is_cut_and_escaped() {
        assert_eq!(clip("task-1"), "task-1");
        assert_eq!(clip("a\nb\u{0}"), "a\\nb\\u{0}");
        let long = "x".repeat(1_000_000);
        let cut = clip(&long);
        assert!(cut.len() < 300, "{}", cut.len());
        assert!(cut.ends_with("(1000000 bytes in all)"), "{cut}");
    }
}
