//! A unified diff, highlighted: file headers, hunk headers, added and removed lines,
//! and in each line's code its markup tags and quoted strings. The `+` and `-` signs
//! stay in the text, so that the colours only repeat what the text says.

use maud::{Markup, html};

/// The diff as a highlighted block, a line per line (each a block of its own, which
/// browsers copy as a line).
pub(crate) fn highlighted(diff: &str) -> Markup {
    let files = diff
        .lines()
        .filter(|l| l.starts_with("diff --git "))
        .count();
    let added = count(diff, '+', "+++");
    let removed = count(diff, '-', "---");
    html! {
        p { (files) " files changed, " (added) " lines added, " (removed) " removed." }
        pre class="diff" tabindex="0" aria-label="The proposed change, as a unified diff" {
            code {
                @for line in diff.lines() {
                    span class={ "line " (kind(line)) } {
                        @match kind(line) {
                            "add" | "del" | "ctx" => {
                                (line.get(..1).unwrap_or_default())
                                (code_of(line.get(1..).unwrap_or_default()))
                            }
                            _ => (line),
                        }
                    }
                }
            }
        }
    }
}

fn count(diff: &str, sign: char, header: &str) -> usize {
    diff.lines()
        .filter(|l| l.starts_with(sign) && !l.starts_with(header))
        .count()
}

/// What a diff line is.
fn kind(line: &str) -> &'static str {
    if line.starts_with("diff --git ")
        || line.starts_with("index ")
        || line.starts_with("+++ ")
        || line.starts_with("--- ")
        || line.starts_with("new file")
        || line.starts_with("deleted file")
    {
        "file"
    } else if line.starts_with("@@") {
        "hunk"
    } else if line.starts_with('+') {
        "add"
    } else if line.starts_with('-') {
        "del"
    } else if line.starts_with(' ') {
        "ctx"
    } else {
        "meta"
    }
}

/// A line's code with its tags (`<img ...>`) and quoted strings marked.
fn code_of(code: &str) -> Markup {
    html! {
        @for (class, piece) in tokens(code) {
            @match class {
                Some(class) => span class=(class) { (piece) },
                None => (piece),
            }
        }
    }
}

/// The pieces of a line: inside a tag, quoted strings are `str` and the rest `tag`;
/// outside tags, plain.
fn tokens(code: &str) -> Vec<(Option<&'static str>, &str)> {
    let mut pieces = Vec::new();
    let (mut start, mut in_tag, mut quote) = (0, false, None::<char>);
    for (at, c) in code.char_indices() {
        match (in_tag, quote, c) {
            (false, _, '<') => {
                pieces.push((None, &code[start..at]));
                (start, in_tag) = (at, true);
            }
            (true, None, '"' | '\'') => {
                pieces.push((Some("tag"), &code[start..at]));
                (start, quote) = (at, Some(c));
            }
            (true, Some(q), _) if c == q => {
                pieces.push((Some("str"), &code[start..=at]));
                (start, quote) = (at + 1, None);
            }
            (true, None, '>') => {
                pieces.push((Some("tag"), &code[start..=at]));
                (start, in_tag) = (at + 1, false);
            }
            _ => {}
        }
    }
    let class = match (in_tag, quote) {
        (true, Some(_)) => Some("str"),
        (true, None) => Some("tag"),
        _ => None,
    };
    pieces.push((class, &code[start..]));
    pieces.retain(|(_, piece)| !piece.is_empty());
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_classed_by_what_they_are() {
        let diff = "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-<img src=\"a\">\n+<img src=\"a\" alt=\"A\">\n same\n";
        let html = highlighted(diff).into_string();
        assert!(
            html.contains("1 files changed, 1 lines added, 1 removed"),
            "{html}"
        );
        for class in ["line file", "line hunk", "line del", "line add", "line ctx"] {
            assert!(html.contains(class), "{class} in {html}");
        }
        assert!(
            html.contains("<span class=\"str\">&quot;A&quot;</span>"),
            "{html}"
        );
        assert!(
            html.contains("<span class=\"tag\">&lt;img src=</span>"),
            "{html}"
        );
    }

    #[test]
    fn every_character_is_kept_in_order() {
        for code in [
            "<a href='x' b>t</a> \"q\"",
            "a < b",
            "<unclosed \"str",
            "",
            "é<ü>",
        ] {
            let joined: String = tokens(code).iter().map(|(_, p)| *p).collect();
            assert_eq!(joined, code);
        }
    }
}
