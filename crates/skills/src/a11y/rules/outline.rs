//! The page's outline: headings (their order, emptiness, a level-one heading) and
//! landmarks (a main one, content outside them, a way to bypass blocks).

use super::Check;
use super::structure::html_element;
use crate::a11y::names::accessible_name;
use crate::a11y::page::Page;
use crate::a11y::roles::{LANDMARKS, role};

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
    role(page, i).is_some_and(|r| LANDMARKS.contains(&r.as_str()))
}

pub(super) fn landmark_one_main(check: &mut Check<'_, '_>) {
    let page = check.page;
    let Some(html) = html_element(page) else {
        return;
    };
    let mains = (0..page.elements.len())
        .filter(|&i| !page.hidden[i] && role(page, i).as_deref() == Some("main"))
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

/// Elements whose text is never shown (axe-core's `hiddenTextElms`).
const TEXT_NEVER_SHOWN: &[&str] = &[
    "head", "title", "template", "script", "style", "iframe", "object", "video", "audio",
    "noscript",
];

/// Roles whose element is content by itself (axe-core's visual content).
const VISUAL_ROLES: &[&str] = &[
    "checkbox",
    "img",
    "meter",
    "progressbar",
    "scrollbar",
    "radio",
    "slider",
    "spinbutton",
    "textbox",
];

/// Whether the element has content of its own (axe-core's `hasContent` without
/// recursion): a text child, a graphic or control, or an ARIA label.
fn has_own_content(page: &Page<'_>, i: usize) -> bool {
    let name = page.name(i);
    let text = !TEXT_NEVER_SHOWN.contains(&name) && !page.own_text(i).trim().is_empty();
    let visual = match page.attr_text(i, "role") {
        Some(role) => VISUAL_ROLES.contains(&role.to_ascii_lowercase().as_str()),
        None => match name {
            "img" | "iframe" | "object" | "video" | "audio" | "canvas" | "svg" | "math"
            | "button" | "select" | "textarea" | "keygen" | "progress" | "meter" => true,
            "input" => page
                .attr(i, "type")
                .is_none_or(|t| !t.eq_ignore_ascii_case("hidden")),
            _ => false,
        },
    };
    let labelled = page.attr_text(i, "aria-label").is_some()
        || page.attr_text(i, "aria-labelledby").is_some_and(|ids| {
            ids.split_whitespace()
                .filter_map(|id| page.by_id(id))
                .any(|t| !page.text(t).is_empty())
        });
    text || visual || labelled
}

/// Where content may stand outside landmarks without being reported (axe-core's
/// region check stops there): a landmark, a dialog or an SVG graphic (axe-core's
/// `regionMatcher`), a live region, a button, a frame (judged by its own content, so
/// it passes), a skip link to an element that exists, or what assistive technology
/// does not see.
fn stops_region_search(page: &Page<'_>, i: usize, first_page_link: Option<usize>) -> bool {
    let role = role(page, i);
    let live = page
        .attr_text(i, "aria-live")
        .is_some_and(|l| matches!(l.to_ascii_lowercase().as_str(), "assertive" | "polite"));
    let skip = is_skip_link(page, i)
        && first_page_link.is_none_or(|first| i < first)
        && page
            .attr(i, "href")
            .and_then(|h| h.strip_prefix('#'))
            .is_some_and(|target| page.by_id(target).is_some());
    // axe-core's regionMatcher: dialogs and SVG graphics count as regions.
    let region_like = matches!(page.name(i), "dialog" | "svg")
        || matches!(role.as_deref(), Some("dialog" | "alertdialog"));
    page.hidden[i]
        || live
        || matches!(role.as_deref(), Some("button" | "alert" | "log" | "status"))
        || is_landmark(page, i)
        || region_like
        || matches!(page.name(i), "iframe" | "frame")
        || skip
}

/// axe-core's `region`: content outside every landmark is reported at the outermost
/// element that holds it and nothing that stops the search (text directly in `<body>`
/// is not reported).
pub(super) fn region(check: &mut Check<'_, '_>) {
    let page = check.page;
    let Some(body) = (0..page.elements.len()).find(|&i| page.name(i) == "body") else {
        return;
    };
    // The first link that leaves the page: skip links come before it.
    let first_page_link = (0..page.elements.len()).find(|&i| {
        page.name(i) == "a"
            && page.attr(i, "href").is_some_and(|h| {
                !h.starts_with('#') && !h.starts_with("/#") && !h.starts_with("javascript:")
            })
    });
    let mut holds_stop = vec![false; page.elements.len()];
    let mut regionless = Vec::new();
    let mut stack = vec![body];
    while let Some(at) = stack.pop() {
        if stops_region_search(page, at, first_page_link) {
            for a in std::iter::once(at).chain(page.ancestors(at)) {
                holds_stop[a] = true;
            }
            // A frame is judged by its own content, which is not fetched here: like
            // axe-core's, the frame element itself always passes.
            continue;
        }
        // Presentational (by role, or an image with alt=""): not content of its own.
        let unnamed =
            page.attr(at, "aria-label").is_none() && page.attr(at, "aria-labelledby").is_none();
        let decorative_img = page.name(at) == "img"
            && page.attr(at, "alt") == Some("")
            && page.attr(at, "role").is_none()
            && unnamed;
        let shallowly_hidden = (page
            .attr_text(at, "role")
            .is_some_and(|r| matches!(r, "none" | "presentation"))
            || decorative_img)
            && page.own_text(at).trim().is_empty();
        if at != body && has_own_content(page, at) && !shallowly_hidden {
            regionless.push(at);
            continue;
        }
        stack.extend(page.children(at).collect::<Vec<_>>().into_iter().rev());
    }
    let mut reported: Vec<usize> = Vec::new();
    for mut node in regionless {
        while let Some(parent) = page.parent[node]
            && !holds_stop[parent]
            && parent != body
        {
            node = parent;
        }
        if !reported.contains(&node) {
            reported.push(node);
        }
    }
    if reported.is_empty() {
        check.pass();
    }
    for node in reported {
        check.fail(
            node,
            "this content is outside any landmark (main, nav, header, footer, aside, or a \
             named section/form)",
        );
    }
}

/// axe-core's `bypass`, on pages with a link: a same-page link (`href` of `#` and a
/// name), a heading, or a main landmark lets users skip repeated blocks. Like axe-core
/// (`reviewOnFail`), a page with none needs review rather than fails.
pub(super) fn bypass(check: &mut Check<'_, '_>) {
    let page = check.page;
    let Some(html) = html_element(page) else {
        return;
    };
    let links = (0..page.elements.len()).filter(|&i| page.name(i) == "a");
    let hrefs: Vec<&str> = links.filter_map(|i| page.attr(i, "href")).collect();
    if hrefs.is_empty() {
        return;
    }
    let same_page = hrefs.iter().any(|h| {
        h.strip_prefix('#')
            .and_then(|rest| rest.chars().next())
            .is_some_and(|c| c != '/' && c != '!')
    });
    let shown = |i: usize| !page.hidden[i];
    let heading = (0..page.elements.len()).any(|i| {
        let name = page.name(i);
        let native =
            name.len() == 2 && name.starts_with('h') && (b'1'..=b'6').contains(&name.as_bytes()[1]);
        let role = page.attr(i, "role");
        shown(i)
            && ((native && role.is_none())
                || role.is_some_and(|r| r.trim().eq_ignore_ascii_case("heading")))
    });
    let main = (0..page.elements.len()).any(|i| {
        shown(i)
            && (page.name(i) == "main"
                || page
                    .attr(i, "role")
                    .is_some_and(|r| r.trim().eq_ignore_ascii_case("main")))
    });
    if same_page || heading || main {
        check.pass();
    } else {
        check.review(
            html,
            "the page offers no way to skip repeated content: add a skip link, headings, or \
             a main landmark",
        );
    }
}
