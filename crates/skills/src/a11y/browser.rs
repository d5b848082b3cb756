//! Browser mode: pages as people see them, after their scripts ran. fundi starts
//! headless Chromium on the first run that needs it (a profile of its own in a
//! temporary directory, removed with it) and keeps it for the runs after. Each run
//! gets a browser context of its own (no cookie, cache or storage shared with another
//! run), closed when the run ends or is canceled. Every request the page makes is
//! served by fundi (`network`), and axe-core audits the rendered page (`axe`).

mod axe;
mod network;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use chromiumoxide::cdp::browser_protocol::browser::{
    BrowserContextId, SetDownloadBehaviorBehavior, SetDownloadBehaviorParams,
};
use chromiumoxide::cdp::browser_protocol::fetch::EnableParams;
use chromiumoxide::cdp::browser_protocol::network::SetBypassServiceWorkerParams;
use chromiumoxide::cdp::browser_protocol::target::{
    CreateBrowserContextParams, CreateTargetParams,
};
use chromiumoxide::handler::viewport::Viewport;
use chromiumoxide::{Browser, BrowserConfig, Page};
use futures::StreamExt;
use tokio::sync::{Mutex, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinHandle;

pub(super) use axe::Rendered;
pub use axe::version as axe_version;
use network::{Gate, INLINE_ORIGIN};

use crate::origins::Origins;

/// The names Chromium goes by on PATH, in the order looked for.
const CHROMIUM_NAMES: [&str; 4] = [
    "chromium",
    "chromium-browser",
    "google-chrome",
    "google-chrome-stable",
];

/// Run in every document before its own scripts.
const NO_SERVICE_WORKERS: &str = "delete Navigator.prototype.serviceWorker;";

/// The window pages are laid out in: width, height.
const VIEWPORT: (u32, u32) = (1280, 800);

/// How long Chromium may take to start.
const LAUNCH_TIMEOUT: Duration = Duration::from_secs(20);

/// How long a page must make no request before it is audited (its scripts' fetches
/// answered, what they render rendered).
const QUIET: Duration = Duration::from_millis(300);

/// Longest a page's requests are waited on to stop: one that never stops (polling, a
/// live feed) is audited as it stands then.
const SETTLE_AT_MOST: Duration = Duration::from_secs(5);

/// The browser of a11y-audit's browser mode, started on demand and shared by its runs.
pub(super) struct Chromium {
    executable: Option<PathBuf>,
    launched: Mutex<Option<Arc<Launched>>>,
    /// Pages audited at once, over every run.
    pages: Arc<Semaphore>,
}

/// A running Chromium.
struct Launched {
    browser: Browser,
    handler: JoinHandle<()>,
    /// Its profile, removed when it goes.
    _profile: tempfile::TempDir,
}

impl Drop for Launched {
    fn drop(&mut self) {
        self.handler.abort();
    }
}

impl Chromium {
    /// The browser at `executable` (or found on PATH), auditing at most `pages` pages at
    /// once.
    pub(super) fn new(executable: Option<PathBuf>, pages: usize) -> Chromium {
        Chromium {
            executable,
            launched: Mutex::new(None),
            pages: Arc::new(Semaphore::new(pages.max(1))),
        }
    }

    /// A browser context for one run, its requests served through `gate`.
    pub(super) async fn session(
        &self,
        client: reqwest::Client,
        origins: Origins,
        max_bytes: usize,
    ) -> Result<Session, String> {
        let launched = self.browser().await?;
        let context = launched
            .browser
            .create_browser_context(CreateBrowserContextParams::default())
            .await
            .map_err(|e| format!("Chromium did not open a browser context: {e}"))?;
        let session = Session {
            launched: launched.clone(),
            context: Some(context.clone()),
            pages: self.pages.clone(),
            gate: Gate {
                client,
                origins,
                max_bytes,
                inline: None,
                traffic: Arc::default(),
            },
        };
        let deny = SetDownloadBehaviorParams::builder()
            .behavior(SetDownloadBehaviorBehavior::Deny)
            .browser_context_id(context)
            .build()
            .map_err(|e| format!("downloads: {e}"))?;
        launched
            .browser
            .execute(deny)
            .await
            .map_err(|e| format!("Chromium did not refuse downloads: {e}"))?;
        Ok(session)
    }

    /// The running browser, started if none runs (or the last one went).
    async fn browser(&self) -> Result<Arc<Launched>, String> {
        let mut launched = self.launched.lock().await;
        if let Some(running) = launched.as_ref()
            && !running.handler.is_finished()
        {
            return Ok(running.clone());
        }
        let executable = find(self.executable.as_deref())?;
        let running = Arc::new(launch(&executable).await?);
        *launched = Some(running.clone());
        Ok(running)
    }
}

async fn launch(executable: &Path) -> Result<Launched, String> {
    let profile = tempfile::Builder::new()
        .prefix("fundi-chromium-")
        .tempdir()
        .map_err(|e| format!("a profile directory for Chromium: {e}"))?;
    let mut config = BrowserConfig::builder()
        .chrome_executable(executable)
        .new_headless_mode()
        .user_data_dir(profile.path())
        // A desktop's window, as the corpus's verdicts were recorded in (what is visible,
        // and so what contrast and target sizes are judged on, depends on it).
        .window_size(VIEWPORT.0, VIEWPORT.1)
        .viewport(Viewport {
            width: VIEWPORT.0,
            height: VIEWPORT.1,
            ..Viewport::default()
        })
        .launch_timeout(LAUNCH_TIMEOUT)
        .args([
            // Nothing reaches the network but through fundi: a proxy that answers
            // nothing, loopback included, and no WebRTC outside it.
            "--proxy-server=http://127.0.0.1:9",
            "--proxy-bypass-list=<-loopback>",
            "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
            "--dns-prefetch-disable",
            // Frames of other sites in the page's own process, where the page's
            // interception sees their requests.
            "--disable-site-isolation-trials",
            "--disable-features=IsolateOrigins,site-per-process",
            "--no-first-run",
            "--no-default-browser-check",
        ]);
    // Chromium cannot sandbox itself when run as root (a container's usual user).
    if running_as_root() {
        config = config.no_sandbox();
    }
    let config = config
        .build()
        .map_err(|e| format!("Chromium's settings: {e}"))?;
    let (browser, mut handler) = Browser::launch(config)
        .await
        .map_err(|e| format!("Chromium ({}) did not start: {e}", executable.display()))?;
    let handler = tokio::spawn(async move {
        while let Some(event) = handler.next().await {
            if let Err(error) = event {
                tracing::debug!(%error, "Chromium's connection");
            }
        }
    });
    Ok(Launched {
        browser,
        handler,
        _profile: profile,
    })
}

/// The Chromium to start: `configured` (`skills.a11y-audit.chromium`), or the first of
/// [`CHROMIUM_NAMES`] on PATH; the error names the setting.
pub(super) fn find(configured: Option<&Path>) -> Result<PathBuf, String> {
    match configured {
        Some(path) if !path.is_file() => Err(format!(
            "skills.a11y-audit.chromium names {}, which is not a file: install Chromium \
             there, or leave the setting out to find it on PATH",
            path.display()
        )),
        Some(path) => Ok(path.to_path_buf()),
        None => on_path().ok_or_else(|| {
            format!(
                "a11y-audit's browser mode needs Chromium, and none is on PATH ({}): install \
                 it (Debian: apt-get install chromium) or name it in skills.a11y-audit.chromium",
                CHROMIUM_NAMES.join(", ")
            )
        }),
    }
}

/// The first of [`CHROMIUM_NAMES`] on PATH.
fn on_path() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|dir| CHROMIUM_NAMES.iter().map(move |name| dir.join(name)))
        .find(|candidate| candidate.is_file())
}

/// Whether this process runs as root (Linux's `/proc`; elsewhere, no).
fn running_as_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            let line = status.lines().find(|l| l.starts_with("Uid:"))?;
            line.split_whitespace().nth(2).map(|euid| euid == "0")
        })
        .unwrap_or(false)
}

/// One run's browser context: its pages, and what its requests were refused.
pub(super) struct Session {
    launched: Arc<Launched>,
    context: Option<BrowserContextId>,
    pages: Arc<Semaphore>,
    gate: Gate,
}

impl Session {
    /// Serves `html` as the page's document (an inline page), at an address of its own.
    pub(super) fn serve_inline(&mut self, html: String) -> String {
        self.gate.inline = Some(Arc::new(html));
        format!("{INLINE_ORIGIN}/")
    }

    /// Loads `url`, lets its scripts run until its requests are quiet, and audits it,
    /// all within `limit`.
    pub(super) async fn audit(&self, url: &str, limit: Duration) -> Result<Rendered, String> {
        let _permit: OwnedSemaphorePermit = self
            .pages
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| "the browser is stopping".to_owned())?;
        let page = self.page().await?;
        let audited = tokio::time::timeout(limit, self.render_and_audit(&page, url)).await;
        // A page stuck in a script is closed with its context if this fails; here, it is
        // closed at once.
        let closing = page.clone();
        tokio::spawn(async move { closing.close().await });
        match audited {
            Ok(result) => result,
            Err(_) => Err(format!(
                "{url} took longer than {} ms (skills.a11y-audit.page-time-limit-ms)",
                limit.as_millis()
            )),
        }
    }

    /// Requests refused so far, by why.
    pub(super) fn blocked(&self) -> std::collections::BTreeMap<String, usize> {
        self.gate.traffic.refused()
    }

    async fn page(&self) -> Result<Page, String> {
        let mut target = CreateTargetParams::new("about:blank");
        target.browser_context_id = self.context.clone();
        let page = self
            .launched
            .browser
            .new_page(target)
            .await
            .map_err(|e| format!("Chromium did not open a page: {e}"))?;
        // No service worker: it would serve the page from outside fundi's interception.
        // The page sees a browser without them, as on a page served over plain HTTP.
        page.execute(SetBypassServiceWorkerParams::new(true))
            .await
            .map_err(|e| format!("service workers: {e}"))?;
        page.evaluate_on_new_document(NO_SERVICE_WORKERS)
            .await
            .map_err(|e| format!("service workers: {e}"))?;
        page.execute(EnableParams::default())
            .await
            .map_err(|e| format!("request interception: {e}"))?;
        tokio::spawn(network::serve(page.clone(), self.gate.clone()));
        Ok(page)
    }

    async fn render_and_audit(&self, page: &Page, url: &str) -> Result<Rendered, String> {
        page.goto(url)
            .await
            .map_err(|e| format!("loading {url}: {e}"))?;
        self.settle().await;
        page.evaluate_expression(axe::SOURCE)
            .await
            .map_err(|e| format!("axe-core could not be loaded into {url}: {e}"))?;
        let text: String = page
            .evaluate_expression(axe::RUN)
            .await
            .map_err(|e| format!("axe-core failed on {url}: {e}"))?
            .into_value()
            .map_err(|e| format!("axe-core's results from {url}: {e}"))?;
        serde_json::from_str(&text).map_err(|e| format!("axe-core's results from {url}: {e}"))
    }

    /// Returns once no request of the page has been under way for [`QUIET`], or after
    /// [`SETTLE_AT_MOST`].
    async fn settle(&self) {
        let mut in_flight = self.gate.traffic.in_flight();
        let quiet = async {
            loop {
                if in_flight.wait_for(|n| *n == 0).await.is_err() {
                    return;
                }
                // Quiet unless a request starts (or one ends) before QUIET is over.
                if tokio::time::timeout(QUIET, in_flight.changed())
                    .await
                    .is_err()
                {
                    return;
                }
            }
        };
        let _ = tokio::time::timeout(SETTLE_AT_MOST, quiet).await;
    }
}

impl Drop for Session {
    /// Closes the context, and every page in it, whether the run ended or was canceled.
    fn drop(&mut self) {
        if let Some(context) = self.context.take() {
            let launched = self.launched.clone();
            tokio::spawn(async move {
                if let Err(error) = launched.browser.dispose_browser_context(context).await {
                    tracing::debug!(%error, "closing a browser context");
                }
            });
        }
    }
}
