//! The pages a crawl has still to audit: links of the pages audited so far, on the
//! start page's origin and an allowed one, each once, in the order found.

use std::collections::{HashSet, VecDeque};

use reqwest::Url;

use crate::origins::Origins;

/// A crawl's queue of pages.
pub(super) struct Frontier<'a> {
    start: Url,
    origins: &'a Origins,
    queue: VecDeque<Url>,
    seen: HashSet<String>,
}

impl<'a> Frontier<'a> {
    /// A crawl from `start`, within `origins`.
    pub(super) fn new(start: Url, origins: &'a Origins) -> Frontier<'a> {
        Frontier {
            queue: VecDeque::from([start.clone()]),
            seen: HashSet::from([start.to_string()]),
            start,
            origins,
        }
    }

    /// The next page to audit.
    pub(super) fn next(&mut self) -> Option<Url> {
        self.queue.pop_front()
    }

    /// Pages still queued.
    pub(super) fn queued(&self) -> usize {
        self.queue.len()
    }

    /// Counts `page` as audited, so that a link to it is not followed (a page whose
    /// scripts moved it to another address, a redirect's target).
    pub(super) fn visited(&mut self, page: &Url) {
        let mut page = page.clone();
        page.set_fragment(None);
        self.seen.insert(page.to_string());
    }

    /// Queues the links of a page at `base` that the crawl may follow.
    pub(super) fn add<'l>(&mut self, base: &Url, links: impl IntoIterator<Item = &'l str>) {
        for link in links {
            let Ok(mut next) = base.join(link) else {
                continue;
            };
            next.set_fragment(None);
            let same_origin = next.origin() == self.start.origin();
            if same_origin && self.origins.allows(&next) && self.seen.insert(next.to_string()) {
                self.queue.push_back(next);
            }
        }
    }
}
