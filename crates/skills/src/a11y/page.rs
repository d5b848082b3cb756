//! A parsed page: the tree html5ever builds (as a browser would, malformed markup
//! included), flattened in document order with what the rules keep asking: parents,
//! ids, roles, whether an element is hidden from assistive technology.

use std::collections::HashMap;

use ego_tree::NodeId;
use ego_tree::iter::Edge;
use fundi_runtime::cpu::{Budget, Exhausted};
use scraper::{ElementRef, Html, Node};

use super::style::Styles;
use crate::markup::{self, MarkupLimits, Over};

/// Why a page could not be audited.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PageError {
    /// The page is larger than `max-page-bytes`.
    #[error("the page is {size} bytes; the limit is {limit} (skills.a11y-audit.max-page-bytes)")]
    TooLarge {
        /// Its size.
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// The page has more elements than `max-elements`.
    #[error("the page has more than {limit} elements (skills.a11y-audit.max-elements)")]
    TooManyElements {
        /// The limit.
        limit: usize,
    },
    /// Elements nest deeper than `max-depth`.
    #[error("elements nest more than {limit} deep (skills.a11y-audit.max-depth)")]
    TooDeep {
        /// The limit.
        limit: usize,
    },
    /// An element has more attributes than `max-attributes`.
    #[error("an element has more than {limit} attributes (skills.a11y-audit.max-attributes)")]
    TooManyAttributes {
        /// The limit.
        limit: usize,
    },
    /// The task was canceled, or its run spent its CPU budget.
    #[error("{0}")]
    Stopped(Exhausted),
    /// The audit ran past `page-time-limit-ms`.
    #[error(
        "auditing the page took longer than {limit_ms} ms (skills.a11y-audit.page-time-limit-ms)"
    )]
    TooSlow {
        /// The limit.
        limit_ms: u64,
    },
}

/// The limits a page is held to.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Largest page, in bytes.
    pub max_bytes: usize,
    /// Most elements.
    pub max_elements: usize,
    /// Deepest nesting.
    pub max_depth: usize,
    /// Most attributes on one element.
    pub max_attributes: usize,
}

impl PageError {
    /// Why a budget ran out, as a page error (a deadline is the page's time limit).
    pub(crate) fn from_budget(exhausted: Exhausted) -> PageError {
        match exhausted {
            Exhausted::PastDeadline { limit_ms } => PageError::TooSlow { limit_ms },
            other => PageError::Stopped(other),
        }
    }
}

/// Parses `source` within the limits, looking at the budget as it goes.
pub(crate) fn parse(source: &str, limits: Limits, budget: &Budget) -> Result<Html, PageError> {
    if source.len() > limits.max_bytes {
        return Err(PageError::TooLarge {
            size: source.len(),
            limit: limits.max_bytes,
        });
    }
    let markup = MarkupLimits {
        max_elements: limits.max_elements,
        max_depth: limits.max_depth,
        max_attributes: limits.max_attributes,
    };
    markup::check(source, markup).map_err(|over| match over {
        Over::Elements => PageError::TooManyElements {
            limit: limits.max_elements,
        },
        Over::Depth => PageError::TooDeep {
            limit: limits.max_depth,
        },
        Over::Attributes => PageError::TooManyAttributes {
            limit: limits.max_attributes,
        },
    })?;
    let html = markup::parse(source, budget).map_err(PageError::from_budget)?;
    // Walk the tree once, without recursion, to hold it to the limits.
    let (mut depth, mut elements) = (0usize, 0usize);
    for edge in html.tree.root().traverse() {
        match edge {
            Edge::Open(node) if node.value().is_element() => {
                depth += 1;
                elements += 1;
                if depth > limits.max_depth {
                    return Err(PageError::TooDeep {
                        limit: limits.max_depth,
                    });
                }
                if elements > limits.max_elements {
                    return Err(PageError::TooManyElements {
                        limit: limits.max_elements,
                    });
                }
            }
            Edge::Close(node) if node.value().is_element() => depth -= 1,
            _ => {}
        }
    }
    Ok(html)
}

/// A page ready for the rules.
pub(crate) struct Page<'a> {
    /// Every element, in document order.
    pub(crate) elements: Vec<ElementRef<'a>>,
    /// Each element's parent element (by index).
    pub(crate) parent: Vec<Option<usize>>,
    /// One past each element's last descendant.
    end: Vec<usize>,
    /// Each element's child elements.
    kids: Vec<Vec<usize>>,
    /// Each element's position among its same-name siblings (1-based), and their count.
    of_type: Vec<(u32, u32)>,
    /// Element index by tree node.
    index: HashMap<NodeId, usize>,
    /// Element indexes by `id` attribute.
    pub(crate) ids: HashMap<&'a str, Vec<usize>>,
    /// `<label>` indexes by their `for` attribute.
    pub(crate) labels_for: HashMap<&'a str, Vec<usize>>,
    /// Hidden from assistive technology (`aria-hidden`, or not rendered).
    pub(crate) hidden: Vec<bool>,
    /// Not rendered: `hidden`, display/visibility, the closed part of a `<details>`
    /// (what a sighted user cannot see; `aria-hidden` content is still seen).
    pub(crate) unseen: Vec<bool>,
    /// The author styles (`<style>` and `style=""`).
    pub(crate) styles: Styles,
}

impl<'a> Page<'a> {
    /// Indexes a parsed document (its styles' cascade within the budget).
    pub(crate) fn new(html: &'a Html, budget: &Budget) -> Result<Page<'a>, PageError> {
        let mut elements = Vec::new();
        let mut parent = Vec::new();
        let mut end = Vec::new();
        let mut kids: Vec<Vec<usize>> = Vec::new();
        let mut index = HashMap::new();
        let mut stack: Vec<usize> = Vec::new();
        for edge in html.tree.root().traverse() {
            match edge {
                Edge::Open(node) => {
                    if let Some(element) = ElementRef::wrap(node) {
                        let i = elements.len();
                        elements.push(element);
                        let up = stack.last().copied();
                        parent.push(up);
                        end.push(i + 1);
                        kids.push(Vec::new());
                        if let Some(p) = up {
                            kids[p].push(i);
                        }
                        index.insert(node.id(), i);
                        stack.push(i);
                    }
                }
                Edge::Close(node) => {
                    if node.value().is_element()
                        && let Some(i) = stack.pop()
                    {
                        end[i] = elements.len();
                    }
                }
            }
        }
        let mut of_type = vec![(1u32, 1u32); elements.len()];
        for siblings in &kids {
            let mut counts: HashMap<&str, u32> = HashMap::new();
            for &c in siblings {
                let n = counts.entry(elements[c].value().name()).or_default();
                *n += 1;
                of_type[c].0 = *n;
            }
            for &c in siblings {
                of_type[c].1 = counts[elements[c].value().name()];
            }
        }
        let mut ids: HashMap<&'a str, Vec<usize>> = HashMap::new();
        for (i, element) in elements.iter().enumerate() {
            if let Some(id) = element.value().attr("id").filter(|id| !id.is_empty()) {
                ids.entry(id).or_default().push(i);
            }
        }
        let mut labels_for: HashMap<&'a str, Vec<usize>> = HashMap::new();
        for (i, element) in elements.iter().enumerate() {
            if element.value().name() == "label"
                && let Some(target) = element.value().attr("for")
            {
                labels_for.entry(target).or_default().push(i);
            }
        }
        budget.check().map_err(PageError::from_budget)?;
        let styles = Styles::collect(&elements, budget).map_err(PageError::from_budget)?;
        let mut page = Page {
            elements,
            parent,
            end,
            kids,
            of_type,
            index,
            ids,
            labels_for,
            hidden: Vec::new(),
            unseen: Vec::new(),
            styles,
        };
        (page.unseen, page.hidden) = page.compute_hidden();
        Ok(page)
    }

    /// What is not rendered, and what assistive technology does not get.
    fn compute_hidden(&self) -> (Vec<bool>, Vec<bool>) {
        let mut unseen = vec![false; self.elements.len()];
        let mut hidden = vec![false; self.elements.len()];
        for i in 0..self.elements.len() {
            let parent = self.parent[i];
            let element = self.elements[i];
            // A closed <details> shows only its first <summary>.
            let folded = parent.is_some_and(|p| {
                self.name(p) == "details"
                    && element_attr(self.elements[p], "open").is_none()
                    && self.children(p).find(|&c| self.name(c) == "summary") != Some(i)
            });
            let not_rendered = element.value().attr("hidden").is_some()
                || folded
                || matches!(
                    self.name(i),
                    "script" | "style" | "template" | "noscript" | "head"
                )
                || self.styles.value(i, "display").as_deref() == Some("none")
                || self
                    .styles
                    .value(i, "visibility")
                    .is_some_and(|v| v == "hidden" || v == "collapse");
            unseen[i] = parent.is_some_and(|p| unseen[p]) || not_rendered;
            hidden[i] = parent.is_some_and(|p| hidden[p])
                || unseen[i]
                || attr_is(element, "aria-hidden", "true");
        }
        (unseen, hidden)
    }

    /// The element's tag name (lowercase, as html5ever gives it).
    pub(crate) fn name(&self, i: usize) -> &'a str {
        self.elements[i].value().name()
    }

    /// An attribute.
    pub(crate) fn attr(&self, i: usize, name: &str) -> Option<&'a str> {
        self.elements[i].value().attr(name)
    }

    /// An attribute, trimmed, if not empty.
    pub(crate) fn attr_text(&self, i: usize, name: &str) -> Option<&'a str> {
        self.attr(i, name).map(str::trim).filter(|v| !v.is_empty())
    }

    /// The index of a tree node that is an element.
    pub(crate) fn index_of(&self, node: NodeId) -> Option<usize> {
        self.index.get(&node).copied()
    }

    /// Indexes of the element's child elements.
    pub(crate) fn children(&self, i: usize) -> impl Iterator<Item = usize> + '_ {
        self.kids[i].iter().copied()
    }

    /// Indexes of the element's descendants, in document order (they follow it).
    pub(crate) fn descendants(&self, i: usize) -> impl Iterator<Item = usize> + '_ {
        let end = self.subtree_end(i);
        (i + 1)..end
    }

    /// One past the last descendant of `i`.
    pub(crate) fn subtree_end(&self, i: usize) -> usize {
        self.end[i]
    }

    /// Ancestors of `i`, nearest first.
    pub(crate) fn ancestors(&self, i: usize) -> impl Iterator<Item = usize> + '_ {
        std::iter::successors(self.parent[i], move |&p| self.parent[p])
    }

    /// The first element with this id.
    pub(crate) fn by_id(&self, id: &str) -> Option<usize> {
        self.ids.get(id).and_then(|all| all.first().copied())
    }

    /// The element's own text nodes, joined (not its descendants').
    pub(crate) fn own_text(&self, i: usize) -> String {
        let mut text = String::new();
        for child in self.elements[i].children() {
            if let Node::Text(t) = child.value() {
                text.push_str(t);
            }
        }
        text
    }

    /// All text inside the element, whitespace collapsed.
    pub(crate) fn text(&self, i: usize) -> String {
        collapse(&self.elements[i].text().collect::<String>())
    }

    /// Whether the element can get keyboard focus.
    pub(crate) fn is_focusable(&self, i: usize) -> bool {
        if self.attr(i, "disabled").is_some() {
            return false;
        }
        if let Some(tabindex) = self.attr_text(i, "tabindex") {
            return tabindex.parse::<i64>().is_ok_and(|t| t >= 0);
        }
        match self.name(i) {
            "a" | "area" => self.attr(i, "href").is_some(),
            "input" => self
                .attr(i, "type")
                .is_none_or(|t| !t.eq_ignore_ascii_case("hidden")),
            "button" | "select" | "textarea" | "iframe" => true,
            "summary" => self.parent[i].is_some_and(|p| self.name(p) == "details"),
            _ => self
                .attr(i, "contenteditable")
                .is_some_and(|v| v != "false"),
        }
    }

    /// A CSS selector that picks out the element: its id when that is unique, else the
    /// path of `tag:nth-of-type(n)` steps from the nearest ancestor with a unique id (or
    /// from `html`).
    pub(crate) fn selector(&self, i: usize) -> String {
        let mut steps = Vec::new();
        let mut current = Some(i);
        while let Some(at) = current {
            if let Some(id) = self.attr(at, "id").filter(|id| self.is_unique_id(id)) {
                steps.push(format!("#{}", css_ident(id)));
                break;
            }
            let name = self.name(at);
            let (n, of) = self.of_type[at];
            let step = if of == 1 {
                name.to_owned()
            } else {
                format!("{name}:nth-of-type({n})")
            };
            steps.push(step);
            current = self.parent[at];
        }
        steps.reverse();
        steps.join(" > ")
    }

    fn is_unique_id(&self, id: &str) -> bool {
        !id.is_empty() && self.ids.get(id).is_some_and(|all| all.len() == 1)
    }

    /// The element's opening tag and a little of its content, for reports.
    pub(crate) fn snippet(&self, i: usize) -> String {
        let html = self.elements[i].html();
        truncate(&html, 250)
    }
}

fn element_attr<'e>(element: ElementRef<'e>, name: &str) -> Option<&'e str> {
    element.value().attr(name)
}

/// Whether an attribute has a value (ASCII case-insensitive).
pub(crate) fn attr_is(element: ElementRef<'_>, name: &str, value: &str) -> bool {
    element
        .value()
        .attr(name)
        .is_some_and(|v| v.trim().eq_ignore_ascii_case(value))
}

/// Whitespace runs to one space, trimmed.
pub(crate) fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn truncate(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// An id as a CSS identifier (escaping what needs it).
fn css_ident(id: &str) -> String {
    let mut out = String::new();
    for (n, c) in id.chars().enumerate() {
        let plain = c.is_ascii_alphanumeric() || c == '-' || c == '_' || !c.is_ascii();
        if plain && !(n == 0 && c.is_ascii_digit()) {
            out.push(c);
        } else if c.is_ascii_digit() {
            out.push_str(&format!("\\3{c} "));
        } else {
            out.push('\\');
            out.push(c);
        }
    }
    out
}
