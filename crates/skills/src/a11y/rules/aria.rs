//! ARIA: attribute names, values, roles, required and allowed attributes, aria-hidden,
//! nested controls, ids referenced by ARIA and labels.

use std::collections::HashSet;

use super::Check;
use crate::a11y::page::Page;
use crate::a11y::roles::{
    CHILDREN_PRESENTATIONAL, GLOBAL_ATTRS, ROLES, ValueType, attribute, implicit_attr,
    required_attrs, role, supported_attrs,
};

const ABSTRACT_ROLES: &[&str] = &[
    "command",
    "composite",
    "input",
    "landmark",
    "range",
    "roletype",
    "section",
    "sectionhead",
    "select",
    "structure",
    "widget",
    "window",
];

/// The element's `aria-*` attributes.
fn aria_attrs<'a>(page: &Page<'a>, i: usize) -> Vec<(&'a str, &'a str)> {
    page.elements[i]
        .value()
        .attrs()
        .filter(|(name, _)| name.starts_with("aria-"))
        .collect()
}

pub(super) fn valid_attr(check: &mut Check<'_, '_>) {
    let page = check.page;
    for i in 0..page.elements.len() {
        let attrs = aria_attrs(page, i);
        if attrs.is_empty() {
            continue;
        }
        let unknown: Vec<&str> = attrs
            .iter()
            .map(|(name, _)| *name)
            .filter(|name| attribute(name).is_none())
            .collect();
        check.expect(i, unknown.is_empty(), || {
            format!("not ARIA attributes: {}", unknown.join(", "))
        });
    }
}

fn value_ok(page: &Page<'_>, kind: ValueType, value: &str) -> bool {
    let v = value.trim().to_ascii_lowercase();
    match kind {
        ValueType::Boolean => matches!(v.as_str(), "true" | "false"),
        ValueType::BooleanUndefined => matches!(v.as_str(), "true" | "false" | "undefined"),
        ValueType::Tristate => matches!(v.as_str(), "true" | "false" | "mixed"),
        ValueType::IdRef => !value.trim().is_empty() && page.by_id(value.trim()).is_some(),
        ValueType::IdRefs => value.split_whitespace().any(|id| page.by_id(id).is_some()),
        ValueType::Integer => v.parse::<i64>().is_ok(),
        ValueType::Number => v.parse::<f64>().is_ok_and(f64::is_finite),
        ValueType::Text => true,
        ValueType::Token(tokens) => tokens.contains(&v.as_str()),
        ValueType::Tokens(tokens) => {
            !v.is_empty() && v.split_whitespace().all(|t| tokens.contains(&t))
        }
    }
}

pub(super) fn valid_attr_value(check: &mut Check<'_, '_>) {
    let page = check.page;
    for i in 0..page.elements.len() {
        let attrs: Vec<(&str, &str, ValueType)> = aria_attrs(page, i)
            .into_iter()
            .filter_map(|(name, value)| attribute(name).map(|kind| (name, value, kind)))
            .collect();
        if attrs.is_empty() {
            continue;
        }
        // As axe-core: a collapsed element's aria-controls and aria-owns may name
        // what is not in the page yet, and a label or description that names no
        // element, or an unknown aria-current, needs review rather than fails.
        let collapsed = |name: &str| page.attr_text(i, name).is_some_and(|v| v == "false");
        let (mut bad, mut doubtful) = (Vec::new(), Vec::new());
        for (name, value, kind) in &attrs {
            let unchecked = match *name {
                "aria-controls" => collapsed("aria-expanded") || collapsed("aria-selected"),
                "aria-owns" => collapsed("aria-expanded"),
                _ => false,
            };
            if unchecked || value_ok(page, *kind, value) {
                continue;
            }
            let shown = format!("{name}=\"{value}\"");
            match *name {
                "aria-labelledby" | "aria-describedby" | "aria-current" => doubtful.push(shown),
                _ => bad.push(shown),
            }
        }
        if !bad.is_empty() {
            check.fail(i, format!("invalid ARIA values: {}", bad.join(", ")));
        } else if !doubtful.is_empty() {
            check.review(
                i,
                format!(
                    "check these ARIA values (no element has the id, or the value is unknown): {}",
                    doubtful.join(", ")
                ),
            );
        } else {
            check.pass();
        }
    }
}

pub(super) fn roles(check: &mut Check<'_, '_>) {
    let page = check.page;
    for i in 0..page.elements.len() {
        let Some(role) = page.attr(i, "role") else {
            continue;
        };
        let tokens: Vec<String> = role
            .split_whitespace()
            .map(str::to_ascii_lowercase)
            .collect();
        if tokens.is_empty() {
            continue;
        }
        let abstract_used: Vec<&String> = tokens
            .iter()
            .filter(|t| ABSTRACT_ROLES.contains(&t.as_str()))
            .collect();
        let any_valid = tokens.iter().any(|t| ROLES.contains(&t.as_str()));
        check.expect(i, any_valid && abstract_used.is_empty(), || {
            if abstract_used.is_empty() {
                format!("role=\"{role}\" is not a valid ARIA role")
            } else {
                format!("role=\"{role}\" uses an abstract role, which authors may not use")
            }
        });
    }
}

pub(super) fn allowed_attr(check: &mut Check<'_, '_>) {
    let page = check.page;
    for i in 0..page.elements.len() {
        let attrs = aria_attrs(page, i);
        let specific: Vec<&str> = attrs
            .iter()
            .map(|(name, _)| *name)
            .filter(|name| attribute(name).is_some() && !GLOBAL_ATTRS.contains(name))
            .collect();
        if specific.is_empty() {
            continue;
        }
        let role = role(page, i).unwrap_or_else(|| "generic".into());
        let supported = supported_attrs(&role);
        let wrong: Vec<&str> = specific
            .into_iter()
            .filter(|name| !supported.contains(name))
            .collect();
        check.expect(i, wrong.is_empty(), || {
            format!("{} not allowed on role {role}", wrong.join(", "))
        });
    }
}

/// axe-core's `aria-required-attr`: an element shown to assistive technology, with an
/// explicit role, must carry that role's required attributes (an empty value counts as
/// missing), unless its own semantics supply them (`implicit_attr`); a separator that
/// cannot take focus, a closed combobox (`aria-expanded="false"`) and a slider with an
/// `aria-valuetext` need none.
pub(super) fn required_attr(check: &mut Check<'_, '_>) {
    let page = check.page;
    for i in 0..page.elements.len() {
        if page.hidden[i] {
            continue;
        }
        let Some(role) = page
            .attr_text(i, "role")
            .and_then(|r| r.split_whitespace().next())
            .map(str::to_ascii_lowercase)
        else {
            continue;
        };
        let required = required_attrs(&role);
        if required.is_empty() {
            continue;
        }
        let value = |name: &str| page.attr(i, name).map(str::trim).filter(|v| !v.is_empty());
        let exempt = match role.as_str() {
            "separator" => !page.is_focusable(i),
            "combobox" => page.attr(i, "aria-expanded") == Some("false"),
            "slider" => value("aria-valuetext").is_some(),
            _ => false,
        };
        if exempt {
            check.pass();
            continue;
        }
        let input_type = page.attr(i, "type").map(|t| t.trim().to_ascii_lowercase());
        let missing: Vec<&str> = required
            .iter()
            .copied()
            .filter(|name| {
                page.attr(i, name).is_none_or(str::is_empty)
                    && !implicit_attr(page.name(i), input_type.as_deref(), name)
            })
            .collect();
        check.expect(i, missing.is_empty(), || {
            format!("role {role} requires {}", missing.join(", "))
        });
    }
}

pub(super) fn hidden_body(check: &mut Check<'_, '_>) {
    let page = check.page;
    for i in 0..page.elements.len() {
        if page.name(i) != "body" {
            continue;
        }
        let hidden = page
            .attr(i, "aria-hidden")
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
        check.expect(i, !hidden, || {
            "aria-hidden=\"true\" on <body> hides the whole page from assistive technology".into()
        });
    }
}

/// Hidden from everyone (not only from assistive technology).
fn invisible(page: &Page<'_>, i: usize) -> bool {
    std::iter::once(i).chain(page.ancestors(i)).any(|a| {
        page.attr(a, "hidden").is_some()
            || page.styles.value(a, "display").as_deref() == Some("none")
            || page.attr(a, "inert").is_some()
    })
}

/// Elements that `disabled` can take out of the tab order (axe-core judges them
/// apart from the rest).
const CAN_BE_DISABLED: &[&str] = &["button", "fieldset", "input", "select", "textarea"];

/// axe-core's `aria-hidden-focus`: the outermost `aria-hidden="true"` elements (the
/// value as written) must hold nothing reachable by keyboard. While a dialog is open it
/// passes; where everything reachable has an `onfocus` handler (which may move focus
/// away) it needs review.
pub(super) fn hidden_focus(check: &mut Check<'_, '_>) {
    let page = check.page;
    let hides = |a: usize| page.attr(a, "aria-hidden") == Some("true");
    let modal = super::outline::modal_open(page);
    for i in 0..page.elements.len() {
        if !hides(i) || page.ancestors(i).any(hides) {
            continue;
        }
        let tabbable: Vec<usize> = std::iter::once(i)
            .chain(page.descendants(i))
            .filter(|&d| page.is_focusable(d) && !invisible(page, d))
            .collect();
        if tabbable.is_empty() || modal {
            check.pass();
            continue;
        }
        let (disabled_kind, other): (Vec<usize>, Vec<usize>) = tabbable
            .iter()
            .partition(|&&d| CAN_BE_DISABLED.contains(&page.name(d)));
        let handled = |group: &[usize]| group.iter().all(|&d| page.attr(d, "onfocus").is_some());
        let fails = [&disabled_kind, &other]
            .iter()
            .any(|group| !group.is_empty() && !handled(group));
        let listed = tabbable
            .iter()
            .map(|&d| page.selector(d))
            .collect::<Vec<_>>()
            .join(", ");
        if fails {
            check.fail(
                i,
                format!("hidden from assistive technology but reachable by keyboard: {listed}"),
            );
        } else {
            check.review(
                i,
                format!(
                    "hidden from assistive technology, and what is reachable by keyboard \
                     has an onfocus handler (check that it moves focus away): {listed}"
                ),
            );
        }
    }
}

pub(super) fn nested_interactive(check: &mut Check<'_, '_>) {
    let page = check.page;
    for i in 0..page.elements.len() {
        if page.hidden[i] {
            continue;
        }
        let Some(role) = role(page, i) else {
            continue;
        };
        if !CHILDREN_PRESENTATIONAL.contains(&role.as_str()) {
            continue;
        }
        let nested: Vec<usize> = page
            .descendants(i)
            .filter(|&d| !page.hidden[d] && page.is_focusable(d))
            .collect();
        check.expect(i, nested.is_empty(), || {
            format!(
                "a {role} contains focusable content ({}), which assistive technology does not \
                 announce",
                nested
                    .iter()
                    .map(|&d| page.selector(d))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        });
    }
}

/// IDRef attributes whose targets must be unique.
const REFERENCING: &[&str] = &[
    "aria-activedescendant",
    "aria-controls",
    "aria-describedby",
    "aria-details",
    "aria-errormessage",
    "aria-flowto",
    "aria-labelledby",
    "aria-owns",
];

pub(super) fn duplicate_id_aria(check: &mut Check<'_, '_>) {
    let page = check.page;
    let mut referenced: HashSet<&str> = HashSet::new();
    for i in 0..page.elements.len() {
        for name in REFERENCING {
            if let Some(value) = page.attr(i, name) {
                referenced.extend(value.split_whitespace());
            }
        }
        if page.name(i) == "label"
            && let Some(target) = page.attr_text(i, "for")
        {
            referenced.insert(target);
        }
    }
    let mut ids: Vec<&&str> = referenced.iter().collect();
    ids.sort();
    for id in ids {
        let Some(all) = page.ids.get(*id) else {
            continue;
        };
        match all.as_slice() {
            [] => {}
            [_] => check.pass(),
            // axe-core reports the first element of each duplicated id (its other
            // elements as related nodes), as needing review (its `reviewOnFail`).
            [first, ..] => check.review(
                *first,
                format!(
                    "id \"{id}\" is used by {} elements and referenced by ARIA or a label: \
                     only this one is found, the others never are",
                    all.len()
                ),
            ),
        }
    }
}
