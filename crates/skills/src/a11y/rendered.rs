//! A run in browser mode: the inline page or each page of the crawl loaded in the run's
//! browser context, its scripts run, and audited there by axe-core. The crawl follows
//! the links the rendered page has, and counts the page at the address its scripts
//! left it at (a client-side route), within the same bounds as static mode.

use std::time::Duration;

use fundi_runtime::{SkillContext, SkillError};
use reqwest::Url;

use super::browser::{Rendered, Session};
use super::frontier::Crawl;
use super::report::{PageOutcome, page_note};
use crate::origins::Origins;

/// Audits the inline page `html` (called `name`).
pub(super) async fn inline(
    session: &mut Session,
    name: &str,
    html: String,
    limit: Duration,
    ctx: &SkillContext,
) -> Result<PageOutcome, SkillError> {
    let url = session.serve_inline(html);
    let label = format!("inline:{name}");
    let outcome = match one(session, &url, limit, ctx).await? {
        Ok(rendered) => PageOutcome::Audited(rendered.report(label)),
        Err(error) => return Err(SkillError::Rejected(format!("{label}: {error}"))),
    };
    ctx.progress(1.0, page_note(&outcome)).await?;
    Ok(outcome)
}

/// Crawls from `start`, at most `max_pages` pages.
pub(super) async fn crawl(
    session: &Session,
    start: Url,
    max_pages: usize,
    origins: &Origins,
    limit: Duration,
    ctx: &SkillContext,
) -> Result<Vec<PageOutcome>, SkillError> {
    let mut crawl = Crawl::new(start, origins, max_pages);
    while let Some(url) = crawl.next() {
        let outcome = match one(session, url.as_str(), limit, ctx).await? {
            Err(error) => PageOutcome::Failed {
                url: url.to_string(),
                error,
            },
            Ok(rendered) => {
                let at = Url::parse(&rendered.url).unwrap_or_else(|_| url.clone());
                crawl.visited(&at);
                crawl.add(&at, rendered.links.iter().map(String::as_str));
                PageOutcome::Audited(rendered.report(at.to_string()))
            }
        };
        crawl.record(outcome, ctx).await?;
    }
    Ok(crawl.outcomes())
}

/// One page, or the run canceled while it loads (its context is closed as the run
/// ends).
async fn one(
    session: &Session,
    url: &str,
    limit: Duration,
    ctx: &SkillContext,
) -> Result<Result<Rendered, String>, SkillError> {
    tokio::select! {
        () = ctx.cancelled() => Err(SkillError::Canceled),
        audited = session.audit(url, limit) => Ok(audited),
    }
}
