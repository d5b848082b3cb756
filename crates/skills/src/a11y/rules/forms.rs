//! Forms: labels, select and button names, autocomplete.

use super::Check;
use crate::a11y::names::accessible_name;

fn input_type(check: &Check<'_, '_>, i: usize) -> String {
    check
        .page
        .attr(i, "type")
        .map(|t| t.trim().to_ascii_lowercase())
        .unwrap_or_else(|| "text".into())
}

pub(super) fn label(check: &mut Check<'_, '_>) {
    let page = check.page;
    for i in 0..page.elements.len() {
        let applies = match page.name(i) {
            "textarea" => true,
            "input" => !matches!(
                input_type(check, i).as_str(),
                "hidden" | "button" | "submit" | "reset" | "image"
            ),
            _ => false,
        };
        if !applies || page.hidden[i] {
            continue;
        }
        check.expect(i, !accessible_name(page, i).is_empty(), || {
            "the form field has no label: add a <label for>, wrap it in a <label>, or give it \
             aria-label or aria-labelledby"
                .into()
        });
    }
}

pub(super) fn select_name(check: &mut Check<'_, '_>) {
    let page = check.page;
    for i in 0..page.elements.len() {
        if page.name(i) != "select" || page.hidden[i] {
            continue;
        }
        check.expect(i, !accessible_name(page, i).is_empty(), || {
            "the <select> has no accessible name: add a <label for> or aria-label".into()
        });
    }
}

pub(super) fn button_name(check: &mut Check<'_, '_>) {
    let page = check.page;
    for i in 0..page.elements.len() {
        if page.name(i) != "button" || page.hidden[i] {
            continue;
        }
        let presentational = page
            .attr_text(i, "role")
            .is_some_and(|r| matches!(r, "none" | "presentation"));
        if presentational {
            continue;
        }
        check.expect(i, !accessible_name(page, i).is_empty(), || {
            "the button has no discernible text: put text in it, or give it aria-label or a \
             title"
                .into()
        });
    }
}

pub(super) fn input_button_name(check: &mut Check<'_, '_>) {
    let page = check.page;
    for i in 0..page.elements.len() {
        let applies = page.name(i) == "input"
            && matches!(input_type(check, i).as_str(), "button" | "submit" | "reset");
        if !applies || page.hidden[i] {
            continue;
        }
        check.expect(i, !accessible_name(page, i).is_empty(), || {
            "the input button has no discernible text: give it a non-empty value or aria-label"
                .into()
        });
    }
}

/// Field names of the HTML autofill detail tokens.
const FIELDS: &[&str] = &[
    "name",
    "honorific-prefix",
    "given-name",
    "additional-name",
    "family-name",
    "honorific-suffix",
    "nickname",
    "username",
    "new-password",
    "current-password",
    "one-time-code",
    "organization-title",
    "organization",
    "street-address",
    "address-line1",
    "address-line2",
    "address-line3",
    "address-level4",
    "address-level3",
    "address-level2",
    "address-level1",
    "country",
    "country-name",
    "postal-code",
    "cc-name",
    "cc-given-name",
    "cc-additional-name",
    "cc-family-name",
    "cc-number",
    "cc-exp",
    "cc-exp-month",
    "cc-exp-year",
    "cc-csc",
    "cc-type",
    "transaction-currency",
    "transaction-amount",
    "language",
    "bday",
    "bday-day",
    "bday-month",
    "bday-year",
    "sex",
    "url",
    "photo",
    "tel",
    "tel-country-code",
    "tel-national",
    "tel-area-code",
    "tel-local",
    "tel-local-prefix",
    "tel-local-suffix",
    "tel-extension",
    "email",
    "impp",
];
/// Fields that take a contact kind (home, work...) before them.
const CONTACT_FIELDS: &[&str] = &[
    "tel",
    "tel-country-code",
    "tel-national",
    "tel-area-code",
    "tel-local",
    "tel-local-prefix",
    "tel-local-suffix",
    "tel-extension",
    "email",
    "impp",
];

/// Whether an `autocomplete` value is a valid autofill detail list.
pub(crate) fn valid_autocomplete(value: &str) -> bool {
    let tokens: Vec<String> = value
        .split_whitespace()
        .map(str::to_ascii_lowercase)
        .collect();
    match tokens.as_slice() {
        [] => true,
        [only] if only == "on" || only == "off" => true,
        _ => {
            let mut rest = tokens.as_slice();
            if rest.first().is_some_and(|t| t.starts_with("section-")) {
                rest = &rest[1..];
            }
            if rest
                .first()
                .is_some_and(|t| t == "shipping" || t == "billing")
            {
                rest = &rest[1..];
            }
            let contact = rest.first().is_some_and(|t| {
                matches!(t.as_str(), "home" | "work" | "mobile" | "fax" | "pager")
            });
            if contact {
                rest = &rest[1..];
            }
            if rest.last().is_some_and(|t| t == "webauthn") {
                rest = &rest[..rest.len() - 1];
            }
            match rest {
                [field] => {
                    FIELDS.contains(&field.as_str())
                        && (!contact || CONTACT_FIELDS.contains(&field.as_str()))
                }
                _ => false,
            }
        }
    }
}

pub(super) fn autocomplete_valid(check: &mut Check<'_, '_>) {
    let page = check.page;
    for i in 0..page.elements.len() {
        if !matches!(page.name(i), "input" | "select" | "textarea") || page.hidden[i] {
            continue;
        }
        let Some(value) = page.attr(i, "autocomplete") else {
            continue;
        };
        check.expect(i, valid_autocomplete(value), || {
            format!(
                "autocomplete=\"{value}\" is not a valid autofill value (e.g. \"email\", \
                 \"shipping street-address\", \"off\")"
            )
        });
    }
}

#[cfg(test)]
mod tests {
    use super::valid_autocomplete;

    #[test]
    fn autofill_values_follow_the_html_grammar() {
        for ok in [
            "on",
            "off",
            "email",
            "section-a shipping street-address",
            "work tel",
            "username webauthn",
            "",
        ] {
            assert!(valid_autocomplete(ok), "{ok}");
        }
        for bad in ["emal", "work name", "email tel", "shipping", "on off"] {
            assert!(!valid_autocomplete(bad), "{bad}");
        }
    }
}
