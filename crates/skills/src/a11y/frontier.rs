//! A crawl under way, in either mode: the pages it has still to audit (links of the
//! pages audited so far, on the start page's origin and an allowed one, each once, in
//! the order found, up to `maxPages`) and the outcome of each page audited, reported as
//! progress as it comes.

use std::collections::{HashSet, VecDeque};

use fundi_runtime::{SkillContext, SkillError};
use reqwest::Url;

use super::report::{PageOutcome, page_note};
use crate::origins::Origins;

/// A crawl's queue of pages, and what became of those audited.
pub(super) struct Crawl<'a> {
    start: Url,
    origins: &'a Origins,
    max_pages: usize,
    queue: VecDeque<Url>,
    seen: HashSet<String>,
    outcomes: Vec<PageOutcome>,
}

impl<'a> Crawl<'a> {
    /// A crawl from `start`, within `origins`, of at most `max_pages` pages.
    pub(super) fn new(start: Url, origins: &'a Origins, max_pages: usize) -> Crawl<'a> {
        Crawl {
            queue: VecDeque::from([start.clone()]),
            seen: HashSet::from([start.to_string()]),
            start,
            origins,
            max_pages,
            outcomes: Vec::new(),
        }
    }

    /// The next page to audit, while the crawl may audit more.
    pub(super) fn next(&mut self) -> Option<Url> {
        match self.outcomes.len() < self.max_pages {
            true => self.queue.pop_front(),
            false => None,
        }
    }

    /// Keeps what became of a page, and tells the run's progress.
    pub(super) async fn record(
        &mut self,
        outcome: PageOutcome,
        ctx: &SkillContext,
    ) -> Result<(), SkillError> {
        let note = page_note(&outcome);
        self.outcomes.push(outcome);
        let done = self.outcomes.len();
        let total = self.max_pages.min(done + self.queue.len()).max(done);
        ctx.progress(done as f64 / total as f64, note).await
    }

    /// What became of each page audited, in order.
    pub(super) fn outcomes(self) -> Vec<PageOutcome> {
        self.outcomes
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
