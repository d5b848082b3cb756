//! Parsing untrusted HTML within limits, for every skill that reads pages.
//!
//! A linear pass over a page's markup before it is parsed, so that a page over a limit
//! is refused in time proportional to the limit. html5ever builds the tree a browser
//! would, and some inputs cost it far more than their size: deep nesting (each tag
//! looks through the stack of open elements), many unclosed formatting elements (each
//! new one is compared with all the others), thousands of attributes on one element
//! (each checked against the ones before). This pass counts tags, attributes per tag
//! and an estimate of nesting, and stops at the first limit crossed.
//!
//! The depth is an estimate from the tags alone: an end tag closes up to its open
//! element, void elements and elements whose end tag is optional (`p`, `li`, `td`...)
//! do not nest under one another. It can exceed the depth of the tree html5ever builds
//! (which closes more implicitly), never by less than that tree's own excess, so the
//! pass refuses only above `DEPTH_SLACK` times the depth limit; the parsed tree is then
//! held to the limit itself.

use fundi_runtime::cpu::{Budget, Exhausted};
use html5ever::driver::parse_document;
use html5ever::tendril::{StrTendril, TendrilSink};
use scraper::{Html, HtmlTreeSink};

/// What a page's markup is held to before it is parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MarkupLimits {
    /// Most elements (start tags).
    pub(crate) max_elements: usize,
    /// Deepest nesting of the parsed tree (the estimate may go `DEPTH_SLACK` times above).
    pub(crate) max_depth: usize,
    /// Most attributes on one element.
    pub(crate) max_attributes: usize,
}

impl MarkupLimits {
    /// The limits of a skill that reads pages without configuring them (security-scan).
    pub(crate) const DEFAULT: MarkupLimits = MarkupLimits {
        max_elements: 100_000,
        max_depth: 512,
        max_attributes: 1_000,
    };
}

/// Which limit a page's markup crosses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Over {
    Elements,
    Depth,
    Attributes,
}

/// How much markup the parser takes between two looks at the budget: a fraction of a
/// millisecond of parsing.
const PARSE_CHUNK: usize = 16 * 1024;

/// Parses `source` (which `check` passed) a chunk at a time, looking at the budget
/// between chunks.
pub(crate) fn parse(source: &str, budget: &Budget) -> Result<Html, Exhausted> {
    let mut parser = parse_document(HtmlTreeSink::new(Html::new_document()), Default::default());
    let mut rest = source;
    while !rest.is_empty() {
        budget.check()?;
        let mut cut = rest.len().min(PARSE_CHUNK);
        while !rest.is_char_boundary(cut) {
            cut += 1;
        }
        let (chunk, after) = rest.split_at(cut);
        parser.process(StrTendril::from_slice(chunk));
        rest = after;
    }
    Ok(parser.finish())
}

/// How far above `max-depth` the estimate may go before the page is refused unparsed.
const DEPTH_SLACK: usize = 4;

/// Elements that never have content.
const VOID: &[&str] = &[
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source",
    "track", "wbr", "keygen",
];

/// Elements whose end tag is optional: a new one closes an open one of the same kind.
const SELF_CLOSING_SIBLINGS: &[&str] = &[
    "p", "li", "dt", "dd", "option", "optgroup", "tr", "td", "th", "rb", "rt", "rp", "thead",
    "tbody", "tfoot", "colgroup",
];

/// Elements whose content is text up to their end tag.
const RAW_TEXT: &[&str] = &[
    "script", "style", "textarea", "title", "xmp", "iframe", "noembed", "noframes",
];

/// Holds `source` to `limits` before parsing (see the module docs).
pub(crate) fn check(source: &str, limits: MarkupLimits) -> Result<(), Over> {
    let bytes = source.as_bytes();
    let mut open: Vec<Vec<u8>> = Vec::new();
    let mut elements = 0usize;
    let mut at = 0;
    while let Some(offset) = memchr(b'<', &bytes[at..]) {
        at += offset + 1;
        match bytes.get(at) {
            Some(b'!') => at = skip_markup_declaration(bytes, at),
            Some(b'?') => at = skip_past(bytes, at, b">"),
            Some(b'/') => {
                let (name, next) = tag_name(bytes, at + 1);
                at = skip_past(bytes, next, b">");
                if let Some(depth) = open.iter().rposition(|n| *n == name) {
                    open.truncate(depth);
                }
            }
            Some(c) if c.is_ascii_alphabetic() => {
                let (name, next) = tag_name(bytes, at);
                elements += 1;
                if elements > limits.max_elements {
                    return Err(Over::Elements);
                }
                let (self_closed, next) = attributes(bytes, next, limits)?;
                at = next;
                let name_str = std::str::from_utf8(&name).unwrap_or("");
                if RAW_TEXT.contains(&name_str) {
                    at = skip_raw_text(bytes, at, &name);
                    continue;
                }
                if self_closed || VOID.contains(&name_str) {
                    continue;
                }
                if SELF_CLOSING_SIBLINGS.contains(&name_str) && open.last() == Some(&name) {
                    open.pop();
                }
                open.push(name);
                if open.len() > limits.max_depth.saturating_mul(DEPTH_SLACK) {
                    return Err(Over::Depth);
                }
            }
            _ => {}
        }
    }
    Ok(())
}

fn memchr(needle: u8, haystack: &[u8]) -> Option<usize> {
    haystack.iter().position(|&b| b == needle)
}

/// Where the first `pattern` at or after `at` ends (the end of input if none).
fn skip_past(bytes: &[u8], at: usize, pattern: &[u8]) -> usize {
    let rest = bytes.get(at..).unwrap_or_default();
    rest.windows(pattern.len())
        .position(|w| w == pattern)
        .map_or(bytes.len(), |p| at + p + pattern.len())
}

/// `<!-- ... -->`, `<!DOCTYPE ...>`, `<![CDATA[ ... ]]>`.
fn skip_markup_declaration(bytes: &[u8], at: usize) -> usize {
    let rest = &bytes[at..];
    if rest.starts_with(b"!--") {
        skip_past(bytes, at + 3, b"-->")
    } else if rest.starts_with(b"![CDATA[") {
        skip_past(bytes, at, b"]]>")
    } else {
        skip_past(bytes, at, b">")
    }
}

/// A tag name, lowercased, and where it ends.
fn tag_name(bytes: &[u8], mut at: usize) -> (Vec<u8>, usize) {
    let start = at;
    while at < bytes.len()
        && !matches!(
            bytes[at],
            b' ' | b'\t' | b'\n' | b'\r' | b'\x0c' | b'/' | b'>'
        )
    {
        at += 1;
    }
    (bytes[start..at].to_ascii_lowercase(), at)
}

/// Reads the attributes of a start tag from `at`, holding them to the limit: whether
/// the tag ends in `/>`, and where it ends.
fn attributes(bytes: &[u8], mut at: usize, limits: MarkupLimits) -> Result<(bool, usize), Over> {
    let mut count = 0;
    loop {
        while at < bytes.len() && bytes[at].is_ascii_whitespace() {
            at += 1;
        }
        match bytes.get(at) {
            None => return Ok((false, at)),
            Some(b'>') => return Ok((false, at + 1)),
            Some(b'/') if bytes.get(at + 1) == Some(&b'>') => return Ok((true, at + 2)),
            Some(b'/') => {
                at += 1;
                continue;
            }
            Some(_) => {}
        }
        // A name, then an optional `= value`.
        while at < bytes.len()
            && !matches!(
                bytes[at],
                b' ' | b'\t' | b'\n' | b'\r' | b'\x0c' | b'/' | b'>' | b'='
            )
        {
            at += 1;
        }
        count += 1;
        if count > limits.max_attributes {
            return Err(Over::Attributes);
        }
        while at < bytes.len() && bytes[at].is_ascii_whitespace() {
            at += 1;
        }
        if bytes.get(at) != Some(&b'=') {
            continue;
        }
        at += 1;
        while at < bytes.len() && bytes[at].is_ascii_whitespace() {
            at += 1;
        }
        match bytes.get(at) {
            Some(&quote @ (b'"' | b'\'')) => {
                at = skip_past(bytes, at + 1, &[quote]);
            }
            _ => {
                while at < bytes.len() && !bytes[at].is_ascii_whitespace() && bytes[at] != b'>' {
                    at += 1;
                }
            }
        }
    }
}

/// Past the end tag of raw-text element `name` (case-insensitive), or the input's end.
fn skip_raw_text(bytes: &[u8], mut at: usize, name: &[u8]) -> usize {
    while let Some(offset) = memchr(b'<', &bytes[at..]) {
        at += offset + 1;
        if bytes.get(at) == Some(&b'/') {
            let end = at + 1 + name.len();
            if bytes
                .get(at + 1..end)
                .is_some_and(|n| n.eq_ignore_ascii_case(name))
            {
                return skip_past(bytes, end, b">");
            }
        }
    }
    bytes.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: MarkupLimits = MarkupLimits {
        max_elements: 1_000,
        max_depth: 10,
        max_attributes: 5,
    };

    #[test]
    fn ordinary_markup_passes() {
        let page = "<!DOCTYPE html><html><head><title>a < b</title><style>p > i {}</style>\
                    <script>if (a<b) document.write('<div><div>')</script></head><body>\
                    <!-- <div><div><div> --><ul><li>a<li>b<li>c</ul><p>x<p>y<p>z\
                    <table><tr><td>1<td>2<tr><td>3</table><img src=a.png alt=''><br/>\
                    <input type=text value='>'></body></html>";
        assert_eq!(check(page, LIMITS), Ok(()));
        // Unclosed paragraphs and list items do not nest.
        let many_p = "<p>x".repeat(500);
        assert_eq!(check(&many_p, LIMITS), Ok(()));
    }

    #[test]
    fn a_page_over_a_limit_is_refused_before_parsing() {
        let deep = "<div>".repeat(41);
        assert_eq!(check(&deep, LIMITS), Err(Over::Depth));
        // Closed again, the same tags are fine.
        let closed = "<div>".repeat(30) + &"</div>".repeat(30);
        assert_eq!(check(&closed.repeat(3), LIMITS), Ok(()));
        let formatting = "<b id=x>".repeat(100);
        assert!(check(&formatting, LIMITS).is_err());
        let many = "<i>x</i>".repeat(1_001);
        assert_eq!(check(&many, LIMITS), Err(Over::Elements));
        let attributes = "<p a=1 b='2' c=\"3\" d e=5 f=6>";
        assert_eq!(check(attributes, LIMITS), Err(Over::Attributes));
    }
}
