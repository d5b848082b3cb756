//! The page's outline: headings (their order, emptiness, a level-one heading) and
//! landmarks (a main one, content outside them, a way to bypass blocks).

use super::Check;
use super::structure::html_element;
use crate::a11y::names::accessible_name;
use crate::a11y::page::Page;
use crate::a11y::roles::LANDMARKS;

/// The heading level of `i`, if it is a heading.
fn heading_level(page: &Page<'_>, i: usize) -> Option<u32> {
    let role = page.attr_text(i, "role").map(str::to_ascii_lowercase);
    if let Some(role) = &role
        && role != "heading"
    {
        return None;
    }
    let name = page.name(i);
    let native = name
        .strip_prefix('h')
        .and_then(|n| n.parse::<u32>().ok())
        .filter(|n| (1..=6).contains(n) && name.len() == 2);
    if role.as_deref() == Some("heading") {
        let level = page
            .attr_text(i, "aria-level")
            .and_then(|l| l.parse::<u32>().ok())
            .filter(|l| *l >= 1);
        return Some(level.or(native).unwrap_or(2));
    }
    native
}

pub(super) fn heading_order(check: &mut Check<'_, '_>) {
    let page = check.page;
    let mut previous: Option<u32> = None;
    for i in 0..page.elements.len() {
        if page.hidden[i] {
            continue;
        }
        let Some(level) = heading_level(page, i) else {
            continue;
        };
        let ok = previous.is_none_or(|p| level <= p + 1);
        let before = previous;
        check.expect(i, ok, || {
            format!(
                "this h{level} follows an h{}: heading levels should only increase by one",
                before.unwrap_or(0)
            )
        });
        previous = Some(level);
    }
}

pub(super) fn empty_heading(check: &mut Check<'_, '_>) {
    let page = check.page;
    for i in 0..page.elements.len() {
        if page.hidden[i] || heading_level(page, i).is_none() {
            continue;
        }
        check.expect(i, !accessible_name(page, i).is_empty(), || {
            "the heading has no text that assistive technology can read".into()
        });
    }
}

/// axe-core's level-one heading: `h1:not([role], [aria-level])`,
/// `:is(h1, ..., h6):not([role])[aria-level=1]`, or `[role=heading][aria-level=1]`.
fn is_level_one_heading(page: &Page<'_>, i: usize) -> bool {
    let name = page.name(i);
    let native =
        name.len() == 2 && name.starts_with('h') && (b'1'..=b'6').contains(&name.as_bytes()[1]);
    let level = page.attr(i, "aria-level").map(str::trim);
    match page.attr(i, "role") {
        None => match level {
            None => name == "h1",
            Some(level) => native && level == "1",
        },
        Some(role) => role.trim().eq_ignore_ascii_case("heading") && level == Some("1"),
    }
}

/// Whether a dialog is open (a visible `dialog[open]`, `[role=dialog]` or
/// `[aria-modal=true]`): axe-core's page-level rules pass while one is, since it may
/// hide the rest of the page.
pub(super) fn modal_open(page: &Page<'_>) -> bool {
    (0..page.elements.len()).any(|i| {
        !page.hidden[i]
            && ((page.name(i) == "dialog" && page.attr(i, "open").is_some())
                || page
                    .attr(i, "role")
                    .is_some_and(|r| r.trim().eq_ignore_ascii_case("dialog"))
                || page
                    .attr(i, "aria-modal")
                    .is_some_and(|m| m.trim().eq_ignore_ascii_case("true")))
    })
}

pub(super) fn page_has_heading_one(check: &mut Check<'_, '_>) {
    let page = check.page;
    let Some(html) = html_element(page) else {
        return;
    };
    let has = modal_open(page)
        || (0..page.elements.len()).any(|i| !page.hidden[i] && is_level_one_heading(page, i));
    check.expect(html, has, || {
        "the page has no level-one heading (<h1>, or role=\"heading\" with aria-level=\"1\")".into()
    });
}

fn is_landmark(page: &Page<'_>, i: usize) -> bool {
    page.role(i)
        .is_some_and(|r| LANDMARKS.contains(&r.as_str()))
}

pub(super) fn landmark_one_main(check: &mut Check<'_, '_>) {
    let page = check.page;
    let Some(html) = html_element(page) else {
        return;
    };
    let mains = (0..page.elements.len())
        .filter(|&i| !page.hidden[i] && page.role(i).as_deref() == Some("main"))
        .count();
    check.expect(html, mains >= 1 || modal_open(page), || {
        "the page has no main landmark: wrap its main content in <main>".into()
    });
}

/// Whether `i` is a skip link (a same-page link), which may stand outside landmarks.
fn is_skip_link(page: &Page<'_>, i: usize) -> bool {
    page.name(i) == "a"
        && page
            .attr(i, "href")
            .is_some_and(|h| h.starts_with('#') && h.len() > 1)
}

pub(super) fn region(check: &mut Check<'_, '_>) {
    let page = check.page;
    let Some(body) = (0..page.elements.len()).find(|&i| page.name(i) == "body") else {
        return;
    };
    let mut stack = vec![body];
    while let Some(at) = stack.pop() {
        for child in page.children(at).collect::<Vec<_>>().into_iter().rev() {
            if page.hidden[child] || is_skip_link(page, child) {
                continue;
            }
            if is_landmark(page, child) {
                check.pass();
                continue;
            }
            let contains_landmark = page
                .descendants(child)
                .any(|d| !page.hidden[d] && is_landmark(page, d));
            if contains_landmark {
                if !page.own_text(child).trim().is_empty() {
                    check.fail(child, "this text is outside any landmark");
                }
                stack.push(child);
            } else if visible_text(page, child) {
                check.fail(
                    child,
                    "this content is outside any landmark (main, nav, header, footer, aside, \
                     or a named section/form)",
                );
            }
        }
        if at == body && !page.own_text(body).trim().is_empty() {
            check.fail(body, "text directly in <body> is outside any landmark");
        }
    }
}

fn visible_text(page: &Page<'_>, i: usize) -> bool {
    if !page.own_text(i).trim().is_empty() {
        return true;
    }
    page.descendants(i)
        .any(|d| !page.hidden[d] && (!page.own_text(d).trim().is_empty() || page.name(d) == "img"))
}

pub(super) fn bypass(check: &mut Check<'_, '_>) {
    let page = check.page;
    let Some(html) = html_element(page) else {
        return;
    };
    let interactive = (0..page.elements.len()).any(|i| !page.hidden[i] && page.is_focusable(i));
    if !interactive {
        return;
    }
    let has_landmark = (0..page.elements.len()).any(|i| !page.hidden[i] && is_landmark(page, i));
    let has_heading =
        (0..page.elements.len()).any(|i| !page.hidden[i] && heading_level(page, i).is_some());
    let has_skip = (0..page.elements.len()).any(|i| {
        is_skip_link(page, i)
            && page
                .attr(i, "href")
                .and_then(|h| h.strip_prefix('#'))
                .is_some_and(|target| page.by_id(target).is_some())
    });
    check.expect(html, has_landmark || has_heading || has_skip, || {
        "the page offers no way to skip repeated content: add a skip link, headings, or \
         landmarks"
            .into()
    });
}
