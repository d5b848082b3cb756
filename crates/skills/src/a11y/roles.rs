//! WAI-ARIA 1.2 facts the rules need: roles, attributes, their value types, and the
//! implicit roles of HTML elements (HTML-AAM).

pub(crate) use super::implicit::{implicit_attr, role};

/// Every concrete role (abstract roles are not valid in `role`).
pub(crate) const ROLES: &[&str] = &[
    "alert",
    "alertdialog",
    "application",
    "article",
    "banner",
    "blockquote",
    "button",
    "caption",
    "cell",
    "checkbox",
    "code",
    "columnheader",
    "combobox",
    "complementary",
    "contentinfo",
    "definition",
    "deletion",
    "dialog",
    "directory",
    "document",
    "emphasis",
    "feed",
    "figure",
    "form",
    "generic",
    "grid",
    "gridcell",
    "group",
    "heading",
    "img",
    "insertion",
    "link",
    "list",
    "listbox",
    "listitem",
    "log",
    "main",
    "mark",
    "marquee",
    "math",
    "menu",
    "menubar",
    "menuitem",
    "menuitemcheckbox",
    "menuitemradio",
    "meter",
    "navigation",
    "none",
    "note",
    "option",
    "paragraph",
    "presentation",
    "progressbar",
    "radio",
    "radiogroup",
    "region",
    "row",
    "rowgroup",
    "rowheader",
    "scrollbar",
    "search",
    "searchbox",
    "separator",
    "slider",
    "spinbutton",
    "status",
    "strong",
    "subscript",
    "superscript",
    "switch",
    "tab",
    "table",
    "tablist",
    "tabpanel",
    "term",
    "textbox",
    "time",
    "timer",
    "toolbar",
    "tooltip",
    "tree",
    "treegrid",
    "treeitem",
    // DPUB-ARIA and graphics roles that axe accepts.
    "doc-abstract",
    "doc-acknowledgments",
    "doc-afterword",
    "doc-appendix",
    "doc-backlink",
    "doc-biblioentry",
    "doc-bibliography",
    "doc-biblioref",
    "doc-chapter",
    "doc-colophon",
    "doc-conclusion",
    "doc-cover",
    "doc-credit",
    "doc-credits",
    "doc-dedication",
    "doc-endnote",
    "doc-endnotes",
    "doc-epigraph",
    "doc-epilogue",
    "doc-errata",
    "doc-example",
    "doc-footnote",
    "doc-foreword",
    "doc-glossary",
    "doc-glossref",
    "doc-index",
    "doc-introduction",
    "doc-noteref",
    "doc-notice",
    "doc-pagebreak",
    "doc-pagelist",
    "doc-part",
    "doc-preface",
    "doc-prologue",
    "doc-pullquote",
    "doc-qna",
    "doc-subtitle",
    "doc-tip",
    "doc-toc",
    "graphics-document",
    "graphics-object",
    "graphics-symbol",
];

/// Attributes allowed on every element.
pub(crate) const GLOBAL_ATTRS: &[&str] = &[
    "aria-atomic",
    "aria-braillelabel",
    "aria-brailleroledescription",
    "aria-busy",
    "aria-controls",
    "aria-current",
    "aria-describedby",
    "aria-description",
    "aria-details",
    "aria-disabled",
    "aria-dropeffect",
    "aria-errormessage",
    "aria-flowto",
    "aria-grabbed",
    "aria-haspopup",
    "aria-hidden",
    "aria-invalid",
    "aria-keyshortcuts",
    "aria-label",
    "aria-labelledby",
    "aria-live",
    "aria-owns",
    "aria-relevant",
    "aria-roledescription",
];

/// What values an attribute takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ValueType {
    /// `true` or `false`.
    Boolean,
    /// `true`, `false` or `undefined`.
    BooleanUndefined,
    /// `true`, `false` or `mixed`.
    Tristate,
    /// One id.
    IdRef,
    /// Space-separated ids.
    IdRefs,
    /// An integer.
    Integer,
    /// A number.
    Number,
    /// Any string.
    Text,
    /// One of these tokens.
    Token(&'static [&'static str]),
    /// Space-separated tokens from this set.
    Tokens(&'static [&'static str]),
}

/// Every ARIA attribute with its value type.
pub(crate) fn attribute(name: &str) -> Option<ValueType> {
    use ValueType::*;
    Some(match name {
        "aria-activedescendant" | "aria-errormessage" => IdRef,
        "aria-controls" | "aria-describedby" | "aria-details" | "aria-flowto"
        | "aria-labelledby" | "aria-owns" => IdRefs,
        "aria-atomic"
        | "aria-busy"
        | "aria-disabled"
        | "aria-modal"
        | "aria-multiline"
        | "aria-multiselectable"
        | "aria-readonly"
        | "aria-required" => Boolean,
        "aria-expanded" | "aria-grabbed" | "aria-hidden" | "aria-selected" => BooleanUndefined,
        "aria-checked" | "aria-pressed" => Tristate,
        "aria-colcount" | "aria-colindex" | "aria-colspan" | "aria-level" | "aria-posinset"
        | "aria-rowcount" | "aria-rowindex" | "aria-rowspan" | "aria-setsize" => Integer,
        "aria-valuemax" | "aria-valuemin" | "aria-valuenow" => Number,
        "aria-braillelabel"
        | "aria-brailleroledescription"
        | "aria-colindextext"
        | "aria-description"
        | "aria-keyshortcuts"
        | "aria-label"
        | "aria-placeholder"
        | "aria-roledescription"
        | "aria-rowindextext"
        | "aria-valuetext" => Text,
        "aria-autocomplete" => Token(&["inline", "list", "both", "none"]),
        "aria-current" => Token(&["page", "step", "location", "date", "time", "true", "false"]),
        "aria-dropeffect" => Tokens(&["copy", "execute", "link", "move", "none", "popup"]),
        "aria-haspopup" => Token(&["false", "true", "menu", "listbox", "tree", "grid", "dialog"]),
        "aria-invalid" => Token(&["grammar", "false", "spelling", "true"]),
        "aria-live" => Token(&["assertive", "off", "polite"]),
        "aria-orientation" => Token(&["horizontal", "undefined", "vertical"]),
        "aria-relevant" => Tokens(&["additions", "all", "removals", "text"]),
        "aria-sort" => Token(&["ascending", "descending", "none", "other"]),
        _ => return None,
    })
}

/// The role-specific attributes a role supports (besides the global ones).
pub(crate) fn supported_attrs(role: &str) -> &'static [&'static str] {
    const RANGE: &[&str] = &[
        "aria-valuemax",
        "aria-valuemin",
        "aria-valuenow",
        "aria-valuetext",
    ];
    match role {
        "button" => &["aria-expanded", "aria-pressed"],
        "checkbox" | "switch" => &[
            "aria-checked",
            "aria-expanded",
            "aria-readonly",
            "aria-required",
        ],
        "menuitemcheckbox" | "menuitemradio" => &[
            "aria-checked",
            "aria-expanded",
            "aria-posinset",
            "aria-setsize",
        ],
        "radio" => &["aria-checked", "aria-posinset", "aria-setsize"],
        "combobox" => &[
            "aria-activedescendant",
            "aria-autocomplete",
            "aria-expanded",
            "aria-readonly",
            "aria-required",
        ],
        "textbox" | "searchbox" => &[
            "aria-activedescendant",
            "aria-autocomplete",
            "aria-multiline",
            "aria-placeholder",
            "aria-readonly",
            "aria-required",
        ],
        "listbox" => &[
            "aria-activedescendant",
            "aria-expanded",
            "aria-multiselectable",
            "aria-orientation",
            "aria-readonly",
            "aria-required",
        ],
        "option" => &[
            "aria-checked",
            "aria-posinset",
            "aria-selected",
            "aria-setsize",
        ],
        "heading" => &["aria-level"],
        "link" => &["aria-expanded"],
        "tab" => &[
            "aria-expanded",
            "aria-posinset",
            "aria-selected",
            "aria-setsize",
        ],
        "tablist" => &[
            "aria-activedescendant",
            "aria-multiselectable",
            "aria-orientation",
        ],
        "treeitem" => &[
            "aria-checked",
            "aria-expanded",
            "aria-level",
            "aria-posinset",
            "aria-selected",
            "aria-setsize",
        ],
        "tree" => &[
            "aria-activedescendant",
            "aria-multiselectable",
            "aria-orientation",
            "aria-required",
        ],
        "grid" | "treegrid" => &[
            "aria-activedescendant",
            "aria-colcount",
            "aria-multiselectable",
            "aria-readonly",
            "aria-rowcount",
        ],
        "table" => &["aria-colcount", "aria-rowcount"],
        "row" => &[
            "aria-activedescendant",
            "aria-colindex",
            "aria-expanded",
            "aria-level",
            "aria-posinset",
            "aria-rowindex",
            "aria-selected",
            "aria-setsize",
        ],
        "cell" | "gridcell" | "columnheader" | "rowheader" => &[
            "aria-colindex",
            "aria-colspan",
            "aria-expanded",
            "aria-readonly",
            "aria-required",
            "aria-rowindex",
            "aria-rowspan",
            "aria-selected",
            "aria-sort",
        ],
        "listitem" => &["aria-level", "aria-posinset", "aria-setsize"],
        "menu" | "menubar" | "radiogroup" | "toolbar" | "group" | "application" => &[
            "aria-activedescendant",
            "aria-expanded",
            "aria-orientation",
            "aria-required",
        ],
        "dialog" | "alertdialog" => &["aria-modal"],
        "menuitem" => &["aria-expanded", "aria-posinset", "aria-setsize"],
        "article" => &["aria-posinset", "aria-setsize"],
        "slider" => &[
            "aria-orientation",
            "aria-readonly",
            "aria-valuemax",
            "aria-valuemin",
            "aria-valuenow",
            "aria-valuetext",
        ],
        "spinbutton" => &[
            "aria-activedescendant",
            "aria-readonly",
            "aria-required",
            "aria-valuemax",
            "aria-valuemin",
            "aria-valuenow",
            "aria-valuetext",
        ],
        "scrollbar" => &[
            "aria-controls",
            "aria-orientation",
            "aria-valuemax",
            "aria-valuemin",
            "aria-valuenow",
            "aria-valuetext",
        ],
        "separator" => &[
            "aria-orientation",
            "aria-valuemax",
            "aria-valuemin",
            "aria-valuenow",
            "aria-valuetext",
        ],
        "progressbar" | "meter" => RANGE,
        _ => &[],
    }
}

/// Attributes a role requires (WAI-ARIA 1.2, as axe-core's standards list them).
pub(crate) fn required_attrs(role: &str) -> &'static [&'static str] {
    match role {
        "checkbox" | "menuitemcheckbox" | "menuitemradio" | "radio" | "switch" => &["aria-checked"],
        "combobox" => &["aria-expanded", "aria-controls"],
        "heading" => &["aria-level"],
        "scrollbar" | "separator" | "slider" | "meter" => &["aria-valuenow"],
        _ => &[],
    }
}

/// Roles whose children are presentational: focusable content inside them is lost.
pub(crate) const CHILDREN_PRESENTATIONAL: &[&str] = &[
    "button",
    "checkbox",
    "img",
    "menuitemcheckbox",
    "menuitemradio",
    "meter",
    "option",
    "progressbar",
    "radio",
    "scrollbar",
    "separator",
    "slider",
    "switch",
    "tab",
];

/// Landmark roles.
pub(crate) const LANDMARKS: &[&str] = &[
    "banner",
    "complementary",
    "contentinfo",
    "form",
    "main",
    "navigation",
    "region",
    "search",
];
