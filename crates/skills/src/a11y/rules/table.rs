//! The table of rules: each with axe-core's id, impact, tags and help text, and the
//! function that checks it, in the order they run.

use super::{Impact, RuleFn, RuleInfo};
use super::{aria, color, forms, outline, structure, tables, text_alternatives};

macro_rules! rule {
    ($id:literal, $impact:ident, [$($tag:literal),*], $help:literal, $f:path) => {
        (
            RuleInfo { id: $id, impact: Impact::$impact, tags: &[$($tag),*], help: $help },
            $f as RuleFn,
        )
    };
}

/// Every rule, in the order they run.
pub(crate) static RULES: &[(RuleInfo, RuleFn)] = &[
    rule!(
        "image-alt",
        Critical,
        [
            "cat.text-alternatives",
            "wcag2a",
            "wcag111",
            "section508",
            "section508.22.a"
        ],
        "Images must have alternative text",
        text_alternatives::image_alt
    ),
    rule!(
        "input-image-alt",
        Critical,
        [
            "cat.text-alternatives",
            "wcag2a",
            "wcag111",
            "wcag412",
            "section508",
            "section508.22.a"
        ],
        "Image buttons must have alternative text",
        text_alternatives::input_image_alt
    ),
    rule!(
        "area-alt",
        Critical,
        [
            "cat.text-alternatives",
            "wcag2a",
            "wcag244",
            "wcag412",
            "section508",
            "section508.22.a"
        ],
        "Active <area> elements must have alternative text",
        text_alternatives::area_alt
    ),
    rule!(
        "svg-img-alt",
        Serious,
        [
            "cat.text-alternatives",
            "wcag2a",
            "wcag111",
            "section508",
            "section508.22.a"
        ],
        "<svg> elements with an img role must have an alternative text",
        text_alternatives::svg_img_alt
    ),
    rule!(
        "role-img-alt",
        Serious,
        [
            "cat.text-alternatives",
            "wcag2a",
            "wcag111",
            "section508",
            "section508.22.a"
        ],
        "[role=\"img\"] elements must have an alternative text",
        text_alternatives::role_img_alt
    ),
    rule!(
        "object-alt",
        Serious,
        [
            "cat.text-alternatives",
            "wcag2a",
            "wcag111",
            "section508",
            "section508.22.a"
        ],
        "<object> elements must have alternative text",
        text_alternatives::object_alt
    ),
    rule!(
        "label",
        Critical,
        [
            "cat.forms",
            "wcag2a",
            "wcag412",
            "section508",
            "section508.22.n"
        ],
        "Form elements must have labels",
        forms::label
    ),
    rule!(
        "select-name",
        Critical,
        [
            "cat.forms",
            "wcag2a",
            "wcag412",
            "section508",
            "section508.22.n"
        ],
        "Select element must have an accessible name",
        forms::select_name
    ),
    rule!(
        "button-name",
        Critical,
        [
            "cat.name-role-value",
            "wcag2a",
            "wcag412",
            "section508",
            "section508.22.a"
        ],
        "Buttons must have discernible text",
        forms::button_name
    ),
    rule!(
        "input-button-name",
        Critical,
        [
            "cat.name-role-value",
            "wcag2a",
            "wcag412",
            "section508",
            "section508.22.a"
        ],
        "Input buttons must have discernible text",
        forms::input_button_name
    ),
    rule!(
        "link-name",
        Serious,
        [
            "cat.name-role-value",
            "wcag2a",
            "wcag244",
            "wcag412",
            "section508",
            "section508.22.a"
        ],
        "Links must have discernible text",
        structure::link_name
    ),
    rule!(
        "html-has-lang",
        Serious,
        ["cat.language", "wcag2a", "wcag311"],
        "<html> element must have a lang attribute",
        structure::html_has_lang
    ),
    rule!(
        "html-lang-valid",
        Serious,
        ["cat.language", "wcag2a", "wcag311"],
        "<html> element must have a valid value for the lang attribute",
        structure::html_lang_valid
    ),
    rule!(
        "valid-lang",
        Serious,
        ["cat.language", "wcag2aa", "wcag312"],
        "lang attribute must have a valid value",
        structure::valid_lang
    ),
    rule!(
        "document-title",
        Serious,
        ["cat.text-alternatives", "wcag2a", "wcag242"],
        "Documents must have <title> element to aid in navigation",
        structure::document_title
    ),
    rule!(
        "duplicate-id-aria",
        Critical,
        ["cat.parsing", "wcag2a", "wcag412"],
        "IDs used in ARIA and labels must be unique",
        aria::duplicate_id_aria
    ),
    rule!(
        "heading-order",
        Moderate,
        ["cat.semantics", "best-practice"],
        "Heading levels should only increase by one",
        outline::heading_order
    ),
    rule!(
        "empty-heading",
        Minor,
        ["cat.name-role-value", "best-practice"],
        "Headings should not be empty",
        outline::empty_heading
    ),
    rule!(
        "page-has-heading-one",
        Moderate,
        ["cat.semantics", "best-practice"],
        "Page should contain a level-one heading",
        outline::page_has_heading_one
    ),
    rule!(
        "landmark-one-main",
        Moderate,
        ["cat.semantics", "best-practice"],
        "Document should have one main landmark",
        outline::landmark_one_main
    ),
    rule!(
        "region",
        Moderate,
        ["cat.keyboard", "best-practice"],
        "All page content should be contained by landmarks",
        outline::region
    ),
    rule!(
        "bypass",
        Serious,
        [
            "cat.keyboard",
            "wcag2a",
            "wcag241",
            "section508",
            "section508.22.o"
        ],
        "Page must have means to bypass repeated blocks",
        outline::bypass
    ),
    rule!(
        "list",
        Serious,
        ["cat.structure", "wcag2a", "wcag131"],
        "<ul> and <ol> must only directly contain <li>, <script> or <template> elements",
        structure::list
    ),
    rule!(
        "listitem",
        Serious,
        ["cat.structure", "wcag2a", "wcag131"],
        "<li> elements must be contained in a <ul> or <ol>",
        structure::listitem
    ),
    rule!(
        "dlitem",
        Serious,
        ["cat.structure", "wcag2a", "wcag131"],
        "<dt> and <dd> elements must be contained by a <dl>",
        structure::dlitem
    ),
    rule!(
        "definition-list",
        Serious,
        ["cat.structure", "wcag2a", "wcag131"],
        "<dl> elements must only directly contain properly-ordered <dt> and <dd> groups, <script>, <template> or <div> elements",
        structure::definition_list
    ),
    rule!(
        "frame-title",
        Serious,
        [
            "cat.text-alternatives",
            "wcag2a",
            "wcag412",
            "section508",
            "section508.22.i"
        ],
        "Frames must have an accessible name",
        structure::frame_title
    ),
    rule!(
        "meta-viewport",
        Critical,
        ["cat.sensory-and-visual-cues", "wcag2aa", "wcag144"],
        "Zooming and scaling must not be disabled",
        structure::meta_viewport
    ),
    rule!(
        "meta-refresh",
        Critical,
        ["cat.time-and-media", "wcag2a", "wcag221"],
        "Delayed refresh under 20 hours must not be used",
        structure::meta_refresh
    ),
    rule!(
        "aria-allowed-attr",
        Critical,
        ["cat.aria", "wcag2a", "wcag412"],
        "Elements must only use supported ARIA attributes",
        aria::allowed_attr
    ),
    rule!(
        "aria-required-attr",
        Critical,
        ["cat.aria", "wcag2a", "wcag412"],
        "Required ARIA attributes must be provided",
        aria::required_attr
    ),
    rule!(
        "aria-valid-attr",
        Critical,
        ["cat.aria", "wcag2a", "wcag412"],
        "ARIA attributes must conform to valid names",
        aria::valid_attr
    ),
    rule!(
        "aria-valid-attr-value",
        Critical,
        ["cat.aria", "wcag2a", "wcag412"],
        "ARIA attributes must conform to valid values",
        aria::valid_attr_value
    ),
    rule!(
        "aria-roles",
        Critical,
        ["cat.aria", "wcag2a", "wcag412"],
        "ARIA roles used must conform to valid values",
        aria::roles
    ),
    rule!(
        "aria-hidden-body",
        Critical,
        ["cat.aria", "wcag2a", "wcag131", "wcag412"],
        "aria-hidden=\"true\" must not be present on the document body",
        aria::hidden_body
    ),
    rule!(
        "aria-hidden-focus",
        Serious,
        ["cat.name-role-value", "wcag2a", "wcag412"],
        "ARIA hidden element must not be focusable or contain focusable elements",
        aria::hidden_focus
    ),
    rule!(
        "tabindex",
        Serious,
        ["cat.keyboard", "best-practice"],
        "Elements should not have tabindex greater than zero",
        structure::tabindex
    ),
    rule!(
        "nested-interactive",
        Serious,
        ["cat.keyboard", "wcag2a", "wcag412"],
        "Interactive controls must not be nested",
        aria::nested_interactive
    ),
    rule!(
        "th-has-data-cells",
        Serious,
        [
            "cat.tables",
            "wcag2a",
            "wcag131",
            "section508",
            "section508.22.g"
        ],
        "Table headers in a data table must refer to data cells",
        tables::th_has_data_cells
    ),
    rule!(
        "td-headers-attr",
        Serious,
        [
            "cat.tables",
            "wcag2a",
            "wcag131",
            "section508",
            "section508.22.g"
        ],
        "Table cells that use the headers attribute must only refer to cells in the same table",
        tables::td_headers_attr
    ),
    rule!(
        "scope-attr-valid",
        Moderate,
        ["cat.tables", "best-practice"],
        "scope attribute should be used correctly",
        tables::scope_attr_valid
    ),
    rule!(
        "autocomplete-valid",
        Serious,
        ["cat.forms", "wcag21aa", "wcag135"],
        "autocomplete attribute must be used correctly",
        forms::autocomplete_valid
    ),
    rule!(
        "color-contrast",
        Serious,
        ["cat.color", "wcag2aa", "wcag143"],
        "Elements must meet minimum color contrast ratio thresholds",
        color::color_contrast
    ),
];
