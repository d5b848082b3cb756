//! Accessible names, after the W3C Accessible Name and Description Computation 1.2
//! (accname): `aria-labelledby`, `aria-label`, the host language's labels (`alt`,
//! `<label>`, `value`, `<legend>`, `<caption>`, `<title>`), the content for roles that
//! take their name from it, and finally `title`.

use std::collections::HashSet;

use scraper::Node;

use super::page::{Page, collapse};
use super::roles::role;

/// Roles named from their content.
const NAME_FROM_CONTENT: &[&str] = &[
    "button",
    "cell",
    "checkbox",
    "columnheader",
    "gridcell",
    "heading",
    "link",
    "menuitem",
    "menuitemcheckbox",
    "menuitemradio",
    "option",
    "radio",
    "row",
    "rowheader",
    "switch",
    "tab",
    "tooltip",
    "treeitem",
];

/// The accessible name of element `i` (empty if it has none).
pub(crate) fn accessible_name(page: &Page<'_>, i: usize) -> String {
    collapse(&compute(page, i, &mut HashSet::new(), false, false))
}

fn compute(
    page: &Page<'_>,
    i: usize,
    visited: &mut HashSet<usize>,
    in_content: bool,
    in_labelledby: bool,
) -> String {
    if !visited.insert(i) {
        return String::new();
    }
    if !in_labelledby && let Some(ids) = page.attr_text(i, "aria-labelledby") {
        let parts: Vec<String> = ids
            .split_whitespace()
            .filter_map(|id| page.by_id(id))
            .map(|target| compute(page, target, visited, true, true))
            .filter(|s| !s.trim().is_empty())
            .collect();
        if !parts.is_empty() {
            return parts.join(" ");
        }
    }
    if let Some(label) = page.attr_text(i, "aria-label") {
        return label.to_owned();
    }
    let role = role(page, i);
    let presentational = matches!(role.as_deref(), Some("none" | "presentation"));
    if !presentational && let Some(native) = native_name(page, i, visited) {
        return native;
    }
    let from_content = in_content
        || in_labelledby
        || role
            .as_deref()
            .is_some_and(|r| NAME_FROM_CONTENT.contains(&r));
    if from_content {
        let text = content(page, i, visited);
        if !text.trim().is_empty() {
            return text;
        }
    }
    if !in_content && let Some(title) = page.attr_text(i, "title") {
        return title.to_owned();
    }
    String::new()
}

/// The name the element's own markup gives it.
fn native_name(page: &Page<'_>, i: usize, visited: &mut HashSet<usize>) -> Option<String> {
    let non_empty = |s: Option<&str>| {
        s.map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    match page.name(i) {
        "img" | "area" => non_empty(page.attr(i, "alt")),
        "input" => {
            let kind = page
                .attr(i, "type")
                .map(str::to_ascii_lowercase)
                .unwrap_or_else(|| "text".into());
            match kind.as_str() {
                "image" => non_empty(page.attr(i, "alt")),
                "button" => non_empty(page.attr(i, "value")),
                // Submit and reset buttons have a default label when no value is given.
                "submit" | "reset" => match page.attr(i, "value") {
                    Some(value) => non_empty(Some(value)),
                    None => Some(if kind == "submit" { "Submit" } else { "Reset" }.into()),
                },
                _ => label_text(page, i, visited)
                    .or_else(|| non_empty(page.attr(i, "title")))
                    .or_else(|| non_empty(page.attr(i, "placeholder"))),
            }
        }
        "textarea" => label_text(page, i, visited)
            .or_else(|| non_empty(page.attr(i, "title")))
            .or_else(|| non_empty(page.attr(i, "placeholder"))),
        "select" | "meter" | "progress" | "output" => label_text(page, i, visited),
        "fieldset" => child_text(page, i, "legend", visited),
        "figure" => child_text(page, i, "figcaption", visited),
        "table" => child_text(page, i, "caption", visited),
        "svg" => page
            .children(i)
            .find(|&c| page.name(c) == "title")
            .map(|t| page.text(t))
            .filter(|t| !t.is_empty()),
        "iframe" | "frame" => non_empty(page.attr(i, "title")),
        _ => None,
    }
}

/// The text of the `<label>`s of a form control: `label[for=id]` and a wrapping label.
fn label_text(page: &Page<'_>, i: usize, visited: &mut HashSet<usize>) -> Option<String> {
    let mut labels: Vec<usize> = Vec::new();
    if let Some(id) = page.attr_text(i, "id")
        && let Some(found) = page.labels_for.get(id)
    {
        labels.extend(found.iter().copied());
    }
    if let Some(wrapping) = page.ancestors(i).find(|&a| page.name(a) == "label")
        && !labels.contains(&wrapping)
    {
        labels.push(wrapping);
    }
    let text: Vec<String> = labels
        .into_iter()
        .filter(|&l| !page.hidden[l])
        .map(|l| content(page, l, visited))
        .map(|t| collapse(&t))
        .filter(|t| !t.is_empty())
        .collect();
    (!text.is_empty()).then(|| text.join(" "))
}

fn child_text(
    page: &Page<'_>,
    i: usize,
    child: &str,
    visited: &mut HashSet<usize>,
) -> Option<String> {
    let c = page.children(i).find(|&c| page.name(c) == child)?;
    let text = collapse(&content(page, c, visited));
    (!text.is_empty()).then_some(text)
}

/// The name from content: text nodes, and each visible child element's own name.
fn content(page: &Page<'_>, i: usize, visited: &mut HashSet<usize>) -> String {
    let mut text = String::new();
    for child in page.elements[i].children() {
        match child.value() {
            Node::Text(t) => text.push_str(t),
            Node::Element(_) => {
                let Some(c) = page.index_of(child.id()) else {
                    continue;
                };
                if page.hidden[c] {
                    continue;
                }
                // A control inside a label adds its value, not its label (embedded control).
                if matches!(page.name(c), "input" | "select" | "textarea") {
                    if let Some(value) = page.attr_text(c, "value") {
                        text.push(' ');
                        text.push_str(value);
                        text.push(' ');
                    }
                    continue;
                }
                let inline = matches!(
                    page.name(c),
                    "span"
                        | "a"
                        | "b"
                        | "i"
                        | "em"
                        | "strong"
                        | "abbr"
                        | "code"
                        | "small"
                        | "sub"
                        | "sup"
                        | "mark"
                        | "q"
                        | "s"
                        | "u"
                        | "label"
                        | "time"
                );
                let part = compute(page, c, visited, true, false);
                if inline {
                    text.push_str(&part);
                } else {
                    text.push(' ');
                    text.push_str(&part);
                    text.push(' ');
                }
            }
            _ => {}
        }
    }
    text
}
