//! Start tags of an HTML source as written, with their byte spans, so that a fix can
//! add or change one attribute and leave every other byte of the file as it was (a
//! parsed and re-serialised page would not).

/// An attribute as written.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Attr {
    /// Its name, lowercased.
    pub(crate) name: String,
    /// Its value (`None`: written without one).
    pub(crate) value: Option<String>,
    /// The span of the value between its quotes (or as written, unquoted).
    pub(crate) value_span: Option<(usize, usize)>,
}

/// A start tag.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct StartTag {
    /// The element's name, lowercased.
    pub(crate) name: String,
    /// Where `<` is.
    pub(crate) start: usize,
    /// Just past `>`.
    pub(crate) end: usize,
    /// Where a new attribute goes: before `/>` or `>`, after the last attribute.
    pub(crate) insert_at: usize,
    /// Its attributes, in order.
    pub(crate) attrs: Vec<Attr>,
}

impl StartTag {
    /// An attribute's value (`Some("")` for one written without a value).
    pub(crate) fn attr(&self, name: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|a| a.name == name)
            .map(|a| a.value.as_deref().unwrap_or(""))
    }

    /// Whether its `class` holds this token.
    pub(crate) fn has_class(&self, token: &str) -> bool {
        self.attr("class")
            .is_some_and(|c| c.split_ascii_whitespace().any(|t| t == token))
    }
}

/// Every start tag of `source`, in order; comments and the text of `script`, `style`,
/// `textarea` and `title` are skipped.
pub(crate) fn start_tags(source: &str) -> Vec<StartTag> {
    let bytes = source.as_bytes();
    let mut tags = Vec::new();
    let mut at = 0;
    while let Some(offset) = source[at..].find('<') {
        let start = at + offset;
        if source[start..].starts_with("<!--") {
            at = source[start + 4..]
                .find("-->")
                .map_or(source.len(), |end| start + 4 + end + 3);
            continue;
        }
        let Some(tag) = parse_tag(source, start) else {
            at = start + 1;
            continue;
        };
        at = tag.end;
        if ["script", "style", "textarea", "title"].contains(&tag.name.as_str()) {
            let close = format!("</{}", tag.name);
            at = find_ci(source, at, &close).unwrap_or(source.len());
        }
        debug_assert!(at <= bytes.len());
        tags.push(tag);
    }
    tags
}

/// The position of `needle` (ASCII, case-insensitive) in `source` from `from`.
pub(crate) fn find_ci(source: &str, from: usize, needle: &str) -> Option<usize> {
    let hay = source.as_bytes();
    let needle = needle.as_bytes();
    (from..hay.len().saturating_sub(needle.len() - 1))
        .find(|&i| hay[i..i + needle.len()].eq_ignore_ascii_case(needle))
}

fn parse_tag(source: &str, start: usize) -> Option<StartTag> {
    let bytes = source.as_bytes();
    let mut i = start + 1;
    if !bytes.get(i)?.is_ascii_alphabetic() {
        return None;
    }
    while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'-') {
        i += 1;
    }
    let name = source[start + 1..i].to_ascii_lowercase();
    let mut attrs = Vec::new();
    let mut insert_at = i;
    loop {
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        match bytes.get(i)? {
            b'>' => {
                return Some(StartTag {
                    name,
                    start,
                    end: i + 1,
                    insert_at,
                    attrs,
                });
            }
            b'/' if bytes.get(i + 1) == Some(&b'>') => {
                return Some(StartTag {
                    name,
                    start,
                    end: i + 2,
                    insert_at,
                    attrs,
                });
            }
            b'/' => {
                i += 1;
                continue;
            }
            _ => {}
        }
        let name_start = i;
        while i < bytes.len() && !bytes[i].is_ascii_whitespace() && !b"=>/".contains(&bytes[i]) {
            i += 1;
        }
        let attr_name = source[name_start..i].to_ascii_lowercase();
        let mut j = i;
        while j < bytes.len() && bytes[j].is_ascii_whitespace() {
            j += 1;
        }
        let (value, value_span) = if bytes.get(j) == Some(&b'=') {
            j += 1;
            while j < bytes.len() && bytes[j].is_ascii_whitespace() {
                j += 1;
            }
            match bytes.get(j)? {
                quote @ (b'"' | b'\'') => {
                    let close = source[j + 1..].find(*quote as char)? + j + 1;
                    let span = (j + 1, close);
                    i = close + 1;
                    (Some(source[span.0..span.1].to_owned()), Some(span))
                }
                _ => {
                    let from = j;
                    while j < bytes.len() && !bytes[j].is_ascii_whitespace() && bytes[j] != b'>' {
                        j += 1;
                    }
                    i = j;
                    (Some(source[from..j].to_owned()), Some((from, j)))
                }
            }
        } else {
            (None, None)
        };
        insert_at = i;
        attrs.push(Attr {
            name: attr_name,
            value,
            value_span,
        });
    }
}

/// `source` with `text` put at `at`.
pub(crate) fn insert(source: &str, at: usize, text: &str) -> String {
    format!("{}{text}{}", &source[..at], &source[at..])
}

/// `source` with the span replaced by `text`.
pub(crate) fn replace(source: &str, span: (usize, usize), text: &str) -> String {
    format!("{}{text}{}", &source[..span.0], &source[span.1..])
}

/// The text of an element's content from `from` to its closing tag, tags removed and
/// whitespace collapsed.
pub(crate) fn text_until_close(source: &str, from: usize, name: &str) -> String {
    let end = find_ci(source, from, &format!("</{name}")).unwrap_or(source.len());
    let mut text = String::new();
    let mut in_tag = false;
    for c in source[from..end].chars() {
        match c {
            '<' => in_tag = true,
            '>' => in_tag = false,
            c if !in_tag => text.push(c),
            _ => {}
        }
    }
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_and_attributes_are_found_as_written() {
        let source = "<!-- <img src=no> --><HTML Lang=''><img src=\"a.png\" alt>\
                      <script>let s = '<img src=x>'</script><br/><input id='e' disabled/>";
        let tags = start_tags(source);
        let names: Vec<&str> = tags.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["html", "img", "script", "br", "input"]);
        assert_eq!(tags[0].attr("lang"), Some(""));
        assert_eq!(tags[1].attr("src"), Some("a.png"));
        assert_eq!(tags[1].attr("alt"), Some(""));
        let input = &tags[4];
        assert_eq!(input.attr("id"), Some("e"));
        assert_eq!(&source[input.insert_at..input.end], "/>");
        let added = insert(source, tags[1].insert_at, " class=x");
        assert!(added.contains("<img src=\"a.png\" alt class=x>"), "{added}");
    }
}
