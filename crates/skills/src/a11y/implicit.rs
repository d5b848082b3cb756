//! What HTML elements mean by themselves (HTML-AAM): their implicit ARIA roles, and
//! the ARIA states they carry natively.

use super::page::Page;

/// Whether an element carries `attr` by its own semantics (axe-core's `implicitAttrs`):
/// a heading its level, a native checkbox or radio its checked state, other inputs,
/// selects and text areas a value, an option its selection, a progress bar its range.
pub(crate) fn implicit_attr(element: &str, input_type: Option<&str>, attr: &str) -> bool {
    match (element, attr) {
        ("h1" | "h2" | "h3" | "h4" | "h5" | "h6", "aria-level") => true,
        ("input", "aria-checked") => matches!(input_type, Some("checkbox" | "radio")),
        ("input", "aria-valuenow") => !matches!(input_type, Some("checkbox" | "radio")),
        ("select" | "textarea", "aria-valuenow") => true,
        ("textarea", "aria-multiline") => true,
        ("option", "aria-selected") => true,
        ("progress", "aria-valuemax" | "aria-valuemin" | "aria-valuenow") => true,
        _ => false,
    }
}

/// The element's role: its `role` attribute's first token, or its implicit role.
pub(crate) fn role(page: &Page<'_>, i: usize) -> Option<String> {
    if let Some(role) = page.attr_text(i, "role") {
        return role.split_whitespace().next().map(str::to_ascii_lowercase);
    }
    implicit_role(page, i).map(str::to_owned)
}

/// The implicit ARIA role of an HTML element, where it has one that matters here.
pub(crate) fn implicit_role(page: &Page<'_>, i: usize) -> Option<&'static str> {
    let in_sectioning = || {
        page.ancestors(i).any(|a| {
            matches!(
                page.name(a),
                "article" | "aside" | "main" | "nav" | "section"
            )
        })
    };
    let named = || {
        page.attr_text(i, "aria-label").is_some()
            || page.attr_text(i, "aria-labelledby").is_some()
            || page.attr_text(i, "title").is_some()
    };
    Some(match page.name(i) {
        "a" | "area" if page.attr(i, "href").is_some() => "link",
        "article" => "article",
        "aside" => "complementary",
        "button" => "button",
        "datalist" => "listbox",
        "dd" => "definition",
        "dfn" => "term",
        "dialog" => "dialog",
        "dt" => "term",
        "fieldset" => "group",
        "figure" => "figure",
        "footer" if !in_sectioning() => "contentinfo",
        "form" if named() => "form",
        "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => "heading",
        "header" if !in_sectioning() => "banner",
        "hr" => "separator",
        "img" => match page.attr(i, "alt") {
            Some("") => "presentation",
            _ => "img",
        },
        "input" => match page
            .attr(i, "type")
            .map(str::to_ascii_lowercase)
            .as_deref()
            .unwrap_or("text")
        {
            "button" | "image" | "reset" | "submit" => "button",
            "checkbox" => "checkbox",
            "radio" => "radio",
            "range" => "slider",
            "number" => "spinbutton",
            "search" => "searchbox",
            "email" | "tel" | "text" | "url" | "password" => "textbox",
            _ => return None,
        },
        "li" => "listitem",
        "main" => "main",
        "math" => "math",
        "menu" | "ol" | "ul" => "list",
        "meter" => "meter",
        "nav" => "navigation",
        "option" => "option",
        "output" => "status",
        "progress" => "progressbar",
        "search" => "search",
        "section" if named() => "region",
        "select" => {
            let multiple = page.attr(i, "multiple").is_some();
            let size = page
                .attr(i, "size")
                .and_then(|s| s.parse::<u32>().ok())
                .unwrap_or(0);
            if multiple || size > 1 {
                "listbox"
            } else {
                "combobox"
            }
        }
        "summary" => "button",
        "table" => "table",
        "tbody" | "thead" | "tfoot" => "rowgroup",
        "td" => "cell",
        "textarea" => "textbox",
        "th" => "columnheader",
        "tr" => "row",
        "svg" => "graphics-document",
        _ => return None,
    })
}
