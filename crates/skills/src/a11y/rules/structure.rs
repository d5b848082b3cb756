//! Document structure: language, title, lists, frames, meta tags, links, tab order
//! (headings and landmarks are in `outline.rs`).

use super::Check;
use crate::a11y::names::accessible_name;
use crate::a11y::page::Page;

/// ISO 639-1 codes (the two-letter primary language subtags).
const ISO_639_1: &[&str] = &[
    "aa", "ab", "ae", "af", "ak", "am", "an", "ar", "as", "av", "ay", "az", "ba", "be", "bg", "bh",
    "bi", "bm", "bn", "bo", "br", "bs", "ca", "ce", "ch", "co", "cr", "cs", "cu", "cv", "cy", "da",
    "de", "dv", "dz", "ee", "el", "en", "eo", "es", "et", "eu", "fa", "ff", "fi", "fj", "fo", "fr",
    "fy", "ga", "gd", "gl", "gn", "gu", "gv", "ha", "he", "hi", "ho", "hr", "ht", "hu", "hy", "hz",
    "ia", "id", "ie", "ig", "ii", "ik", "io", "is", "it", "iu", "ja", "jv", "ka", "kg", "ki", "kj",
    "kk", "kl", "km", "kn", "ko", "kr", "ks", "ku", "kv", "kw", "ky", "la", "lb", "lg", "li", "ln",
    "lo", "lt", "lu", "lv", "mg", "mh", "mi", "mk", "ml", "mn", "mr", "ms", "mt", "my", "na", "nb",
    "nd", "ne", "ng", "nl", "nn", "no", "nr", "nv", "ny", "oc", "oj", "om", "or", "os", "pa", "pi",
    "pl", "ps", "pt", "qu", "rm", "rn", "ro", "ru", "rw", "sa", "sc", "sd", "se", "sg", "si", "sk",
    "sl", "sm", "sn", "so", "sq", "sr", "ss", "st", "su", "sv", "sw", "ta", "te", "tg", "th", "ti",
    "tk", "tl", "tn", "to", "tr", "ts", "tt", "tw", "ty", "ug", "uk", "ur", "uz", "ve", "vi", "vo",
    "wa", "wo", "xh", "yi", "yo", "za", "zh", "zu",
];

/// Whether a `lang` value is a well-formed language tag with a known primary language
/// (two-letter codes are checked against ISO 639-1; three-letter ones are accepted when
/// alphabetic; `x-` private-use tags are accepted).
pub(crate) fn valid_language(tag: &str) -> bool {
    let tag = tag.trim().to_ascii_lowercase();
    let mut subtags = tag.split('-');
    let Some(primary) = subtags.next() else {
        return false;
    };
    let primary_ok = match primary.len() {
        2 => ISO_639_1.contains(&primary),
        3 => primary.bytes().all(|b| b.is_ascii_lowercase()),
        1 => primary == "x" || primary == "i",
        _ => false,
    };
    primary_ok
        && subtags
            .all(|s| (1..=8).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_alphanumeric()))
}

pub(super) fn html_element(page: &Page<'_>) -> Option<usize> {
    (0..page.elements.len()).find(|&i| page.name(i) == "html")
}

pub(super) fn html_has_lang(check: &mut Check<'_, '_>) {
    let Some(html) = html_element(check.page) else {
        return;
    };
    let page = check.page;
    let has = page.attr_text(html, "lang").is_some() || page.attr_text(html, "xml:lang").is_some();
    check.expect(html, has, || {
        "the <html> element has no lang attribute: add one, e.g. lang=\"en\"".into()
    });
}

pub(super) fn html_lang_valid(check: &mut Check<'_, '_>) {
    let Some(html) = html_element(check.page) else {
        return;
    };
    let Some(lang) = check.page.attr_text(html, "lang") else {
        return;
    };
    check.expect(html, valid_language(lang), || {
        format!("lang=\"{lang}\" is not a valid language tag (e.g. \"en\", \"fr-CA\")")
    });
}

/// Whether a language tag's base (what comes before its first `-`) is a language, as
/// axe-core's `valid-lang` judges it (the rest of the tag is not looked at).
fn valid_base_language(tag: &str) -> bool {
    let base = tag
        .trim()
        .split('-')
        .next()
        .unwrap_or("")
        .to_ascii_lowercase();
    match base.len() {
        2 => ISO_639_1.contains(&base.as_str()),
        3 => base.bytes().all(|b| b.is_ascii_lowercase()),
        _ => false,
    }
}

/// Elements whose content is what they show (axe-core's visual content): their text is
/// their accessible name.
const VISUAL_CONTENT: &[&str] = &[
    "img", "iframe", "object", "video", "audio", "canvas", "svg", "math", "button", "select",
    "textarea", "input", "progress", "meter",
];

/// axe-core's `hasLangText`: text of the element's own (a text child, a visual
/// element's name, or a child's without a `lang` of its own), which its `lang` is about.
fn has_lang_text(page: &Page<'_>, i: usize) -> bool {
    let own_text = page.elements[i]
        .children()
        .any(|c| c.value().as_text().is_some_and(|t| !t.trim().is_empty()));
    if own_text {
        return true;
    }
    if VISUAL_CONTENT.contains(&page.name(i)) {
        return !accessible_name(page, i).is_empty();
    }
    page.children(i)
        .any(|c| page.attr_text(c, "lang").is_none() && !page.hidden[c] && has_lang_text(page, c))
}

/// axe-core's `valid-lang`: a `lang` or `xml:lang` (on anything but `<html>`) whose base
/// is no language, or that is only white space, on an element with text of its own.
/// An empty value is ignored.
pub(super) fn valid_lang(check: &mut Check<'_, '_>) {
    let page = check.page;
    for i in 0..page.elements.len() {
        if page.name(i) == "html" || page.hidden[i] {
            continue;
        }
        let mut invalid = Vec::new();
        let mut present = false;
        for name in ["lang", "xml:lang"] {
            let Some(value) = page.attr(i, name) else {
                continue;
            };
            present = true;
            let blank = !value.is_empty() && value.trim().is_empty();
            let base_given = !value.trim().is_empty();
            if blank || (base_given && !valid_base_language(value)) {
                invalid.push(format!("{name}=\"{value}\""));
            }
        }
        if !present {
            continue;
        }
        let ok = invalid.is_empty() || !has_lang_text(page, i);
        check.expect(i, ok, || {
            format!("{} is not a valid language", invalid.join(" and "))
        });
    }
}

pub(super) fn document_title(check: &mut Check<'_, '_>) {
    let page = check.page;
    let Some(html) = html_element(page) else {
        return;
    };
    let titled = (0..page.elements.len()).any(|i| {
        page.name(i) == "title"
            && !page.ancestors(i).any(|a| page.name(a) == "svg")
            && !page.text(i).is_empty()
    });
    check.expect(html, titled, || {
        "the document has no non-empty <title>: add one that says what the page is".into()
    });
}

pub(super) fn list(check: &mut Check<'_, '_>) {
    let page = check.page;
    for i in 0..page.elements.len() {
        if !matches!(page.name(i), "ul" | "ol")
            || page.hidden[i]
            || page.attr_text(i, "role").is_some()
        {
            continue;
        }
        let wrong: Vec<&str> = page
            .children(i)
            .filter(|&c| {
                !matches!(page.name(c), "li" | "script" | "template")
                    && page.attr_text(c, "role").is_none_or(|r| r != "listitem")
            })
            .map(|c| page.name(c))
            .collect();
        check.expect(i, wrong.is_empty(), || {
            format!(
                "the list directly contains {}: only <li>, <script> or <template> may be its \
                 children",
                wrong
                    .iter()
                    .map(|n| format!("<{n}>"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        });
    }
}

pub(super) fn listitem(check: &mut Check<'_, '_>) {
    let page = check.page;
    for i in 0..page.elements.len() {
        if page.name(i) != "li" || page.hidden[i] || page.attr_text(i, "role").is_some() {
            continue;
        }
        let in_list = page.parent[i].is_some_and(|p| {
            matches!(page.name(p), "ul" | "ol" | "menu")
                || page.attr_text(p, "role") == Some("list")
        });
        check.expect(i, in_list, || {
            "the <li> is not inside a <ul>, <ol> or role=\"list\"".into()
        });
    }
}

pub(super) fn dlitem(check: &mut Check<'_, '_>) {
    let page = check.page;
    for i in 0..page.elements.len() {
        if !matches!(page.name(i), "dt" | "dd") || page.hidden[i] {
            continue;
        }
        let in_dl = page.parent[i].is_some_and(|p| {
            page.name(p) == "dl"
                || (page.name(p) == "div" && page.parent[p].is_some_and(|g| page.name(g) == "dl"))
        });
        check.expect(i, in_dl, || {
            format!("the <{}> is not inside a <dl>", page.name(i))
        });
    }
}

pub(super) fn definition_list(check: &mut Check<'_, '_>) {
    let page = check.page;
    for i in 0..page.elements.len() {
        if page.name(i) != "dl" || page.hidden[i] || page.attr_text(i, "role").is_some() {
            continue;
        }
        let mut problems: Vec<String> = Vec::new();
        let mut seen_dt = false;
        let mut items: Vec<usize> = Vec::new();
        for c in page.children(i) {
            match page.name(c) {
                "dt" | "dd" => items.push(c),
                "div" => {
                    for g in page.children(c) {
                        match page.name(g) {
                            "dt" | "dd" => items.push(g),
                            "script" | "template" => {}
                            other => problems.push(format!("<{other}> in a <div> group")),
                        }
                    }
                }
                "script" | "template" => {}
                other => problems.push(format!("<{other}>")),
            }
        }
        for item in items {
            if page.name(item) == "dt" {
                seen_dt = true;
            } else if !seen_dt {
                problems.push("a <dd> before any <dt>".into());
                break;
            }
        }
        check.expect(i, problems.is_empty(), || {
            format!("the <dl> contains {}", problems.join(", "))
        });
    }
}

pub(super) fn frame_title(check: &mut Check<'_, '_>) {
    let page = check.page;
    for i in 0..page.elements.len() {
        if !matches!(page.name(i), "iframe" | "frame") || page.hidden[i] {
            continue;
        }
        let presentational = page
            .attr_text(i, "role")
            .is_some_and(|r| matches!(r, "none" | "presentation"));
        if presentational {
            continue;
        }
        check.expect(i, !accessible_name(page, i).is_empty(), || {
            "the frame has no accessible name: add a title (or aria-label)".into()
        });
    }
}

pub(super) fn meta_viewport(check: &mut Check<'_, '_>) {
    let page = check.page;
    for i in 0..page.elements.len() {
        if page.name(i) != "meta"
            || !page
                .attr(i, "name")
                .is_some_and(|n| n.eq_ignore_ascii_case("viewport"))
        {
            continue;
        }
        let content = page.attr(i, "content").unwrap_or("").to_ascii_lowercase();
        let mut problems = Vec::new();
        for pair in content.split([',', ';']) {
            let Some((key, value)) = pair.split_once('=') else {
                continue;
            };
            let (key, value) = (key.trim(), value.trim());
            match key {
                "user-scalable" if matches!(value, "no" | "0") => {
                    problems.push(format!("user-scalable={value} disables zooming"));
                }
                "maximum-scale" => {
                    if let Ok(scale) = value.parse::<f64>()
                        && scale < 2.0
                    {
                        problems.push(format!("maximum-scale={value} limits zooming below 200%"));
                    }
                }
                _ => {}
            }
        }
        check.expect(i, problems.is_empty(), || problems.join("; "));
    }
}

pub(super) fn meta_refresh(check: &mut Check<'_, '_>) {
    let page = check.page;
    for i in 0..page.elements.len() {
        let refresh = page.name(i) == "meta"
            && page
                .attr(i, "http-equiv")
                .is_some_and(|h| h.eq_ignore_ascii_case("refresh"));
        if !refresh {
            continue;
        }
        let content = page.attr(i, "content").unwrap_or("");
        let delay = content
            .split([';', ','])
            .next()
            .and_then(|d| d.trim().parse::<f64>().ok());
        let ok = delay.is_none_or(|d| d <= 0.0 || d >= 72_000.0);
        check.expect(i, ok, || {
            format!(
                "the page refreshes or redirects after {} s on its own: users cannot stop it",
                delay.unwrap_or(0.0)
            )
        });
    }
}

pub(super) fn link_name(check: &mut Check<'_, '_>) {
    let page = check.page;
    for i in 0..page.elements.len() {
        let link = (page.name(i) == "a" && page.attr(i, "href").is_some())
            || page.attr_text(i, "role").is_some_and(|r| r == "link");
        if !link || page.hidden[i] {
            continue;
        }
        let presentational = page
            .attr_text(i, "role")
            .is_some_and(|r| matches!(r, "none" | "presentation"));
        if presentational {
            continue;
        }
        check.expect(i, !accessible_name(page, i).is_empty(), || {
            "the link has no discernible text: put text in it, give its image an alt, or add \
             aria-label"
                .into()
        });
    }
}

pub(super) fn tabindex(check: &mut Check<'_, '_>) {
    let page = check.page;
    for i in 0..page.elements.len() {
        let Some(value) = page.attr_text(i, "tabindex") else {
            continue;
        };
        let Ok(index) = value.parse::<i64>() else {
            continue;
        };
        check.expect(i, index <= 0, || {
            format!("tabindex=\"{index}\" changes the tab order; use 0 or -1")
        });
    }
}

#[cfg(test)]
mod tests {
    use super::valid_language;

    #[test]
    fn language_tags() {
        for ok in ["en", "en-US", "fr-CA", "zh-Hant-TW", "haw", "x-klingon"] {
            assert!(valid_language(ok), "{ok}");
        }
        for bad in ["english", "xx", "e", "en_US", "123", "en--us"] {
            assert!(!valid_language(bad), "{bad}");
        }
    }
}
