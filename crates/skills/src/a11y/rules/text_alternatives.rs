//! Text alternatives: images, image buttons, image maps, SVG and role=img, objects.

use super::Check;
use crate::a11y::names::accessible_name;

fn presentational(check: &Check<'_, '_>, i: usize) -> bool {
    let page = check.page;
    page.attr_text(i, "role")
        .is_some_and(|r| matches!(r.to_ascii_lowercase().as_str(), "none" | "presentation"))
}

pub(super) fn image_alt(check: &mut Check<'_, '_>) {
    let page = check.page;
    for i in 0..page.elements.len() {
        if page.name(i) != "img" || page.hidden[i] {
            continue;
        }
        // An alt of spaces is neither text nor the empty alt of a decorative image
        // (axe-core's alt-space-value fails it whatever else names the image).
        if page
            .attr(i, "alt")
            .is_some_and(|alt| !alt.is_empty() && alt.trim().is_empty())
        {
            check.fail(
                i,
                "the image's alt is only spaces: write its text, or alt=\"\" if it is decorative",
            );
            continue;
        }
        if presentational(check, i) {
            continue;
        }
        // alt="" marks a decorative image: fine.
        let ok = page.attr(i, "alt").is_some() || !accessible_name(page, i).is_empty();
        check.expect(i, ok, || {
            "the image has no alt attribute and no other accessible name (aria-label, \
             aria-labelledby, title); use alt=\"\" if it is decorative"
                .into()
        });
    }
}

pub(super) fn input_image_alt(check: &mut Check<'_, '_>) {
    let page = check.page;
    for i in 0..page.elements.len() {
        let image_button = page.name(i) == "input"
            && page
                .attr(i, "type")
                .is_some_and(|t| t.eq_ignore_ascii_case("image"));
        if !image_button || page.hidden[i] {
            continue;
        }
        check.expect(i, !accessible_name(page, i).is_empty(), || {
            "the image button has no text alternative: give it a non-empty alt (or aria-label)"
                .into()
        });
    }
}

pub(super) fn area_alt(check: &mut Check<'_, '_>) {
    let page = check.page;
    for i in 0..page.elements.len() {
        if page.name(i) != "area" || page.attr(i, "href").is_none() || page.hidden[i] {
            continue;
        }
        check.expect(i, !accessible_name(page, i).is_empty(), || {
            "the image-map area is a link without a text alternative: add alt".into()
        });
    }
}

pub(super) fn svg_img_alt(check: &mut Check<'_, '_>) {
    let page = check.page;
    for i in 0..page.elements.len() {
        let role = page.attr_text(i, "role").map(str::to_ascii_lowercase);
        let applies = page.name(i) == "svg"
            && matches!(
                role.as_deref(),
                Some("img" | "graphics-document" | "graphics-symbol")
            );
        if !applies || page.hidden[i] {
            continue;
        }
        check.expect(i, !accessible_name(page, i).is_empty(), || {
            "the <svg role=\"img\"> has no accessible name: add a <title> child, aria-label or \
             aria-labelledby"
                .into()
        });
    }
}

pub(super) fn role_img_alt(check: &mut Check<'_, '_>) {
    let page = check.page;
    for i in 0..page.elements.len() {
        let role_img = page
            .attr_text(i, "role")
            .is_some_and(|r| r.eq_ignore_ascii_case("img"));
        if !role_img || page.name(i) == "svg" || page.name(i) == "img" || page.hidden[i] {
            continue;
        }
        check.expect(i, !accessible_name(page, i).is_empty(), || {
            "the element with role=\"img\" has no accessible name: add aria-label or \
             aria-labelledby"
                .into()
        });
    }
}

pub(super) fn object_alt(check: &mut Check<'_, '_>) {
    let page = check.page;
    for i in 0..page.elements.len() {
        if page.name(i) != "object" || page.hidden[i] || presentational(check, i) {
            continue;
        }
        let named = !accessible_name(page, i).is_empty() || !page.text(i).is_empty();
        check.expect(i, named, || {
            "the <object> has no text alternative: add aria-label, title or fallback text \
             inside it"
                .into()
        });
    }
}
