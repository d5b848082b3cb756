//! The Observatory grade of a scan: its input option, and the retrieval and analysis
//! run for it beside fundi's own checks.

use std::sync::Arc;

use fundi_runtime::{SkillContext, SkillError};
use reqwest::Url;
use serde::Serialize;
use serde_json::Value;

use crate::markup::{self, MarkupLimits};

use super::http::{Fetcher, Logged};
use super::observatory::headers::{Mime, mime};
use super::observatory::{self, Outcome, Page, Ports, PreloadList, Retrieved};

/// `data.observatory`: `{"httpPort": N, "httpsPort": N}`, where the session of the
/// scheme the URL does not name starts (default: that scheme's default port).
pub(super) fn observatory_ports(data: &Value) -> Result<Ports, SkillError> {
    let Some(options) = data.get("observatory").filter(|o| !o.is_null()) else {
        return Ok(Ports::default());
    };
    let Some(options) = options.as_object() else {
        return Err(SkillError::Rejected(
            "data.observatory must be an object like {\"httpPort\": 8080, \"httpsPort\": 8443}"
                .into(),
        ));
    };
    let port = |name: &str| -> Result<Option<u16>, SkillError> {
        match options.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(value) => value
                .as_u64()
                .and_then(|p| u16::try_from(p).ok())
                .filter(|p| *p > 0)
                .map(Some)
                .ok_or_else(|| {
                    SkillError::Rejected(format!(
                        "data.observatory.{name} must be a port from 1 to 65535, got {value}"
                    ))
                }),
        }
    };
    if let Some(unknown) = options
        .keys()
        .find(|k| !matches!(k.as_str(), "httpPort" | "httpsPort"))
    {
        return Err(SkillError::Rejected(format!(
            "data.observatory.{unknown} is not an option (httpPort, httpsPort)"
        )));
    }
    Ok(Ports {
        http: port("httpPort")?,
        https: port("httpsPort")?,
    })
}

/// The report's `observatory`: the grade (or why there is none), and what kept it from
/// being exact.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ObservatoryReport {
    #[serde(flatten)]
    outcome: Option<Outcome>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    exact: bool,
    not_exact: Vec<String>,
    hsts_preload_list: bool,
    requests: Vec<Logged>,
}

impl ObservatoryReport {
    /// The sentence the scan's summary ends with.
    pub(super) fn summary(&self) -> String {
        match &self.outcome {
            Some(outcome) => format!(
                " Observatory grade {} ({}){}.",
                outcome.grade,
                outcome.score,
                if self.exact {
                    ""
                } else {
                    ", not exact: some of the site was not fetched"
                }
            ),
            None => " No Observatory grade.".into(),
        }
    }
}

/// Retrieves the site as Observatory does and grades it.
pub(super) async fn observatory_grade(
    make_fetcher: &(dyn Fn() -> Result<Fetcher, String> + Sync),
    entry: &Url,
    ports: Ports,
    allowed: &(dyn Fn(&Url) -> bool + Sync),
    preload: Arc<PreloadList>,
    ctx: &SkillContext,
) -> Result<ObservatoryReport, SkillError> {
    let Retrieved {
        retrieval,
        mut not_fetched,
        requests,
    } = tokio::select! {
        () = ctx.cancelled() => return Err(SkillError::Canceled),
        retrieved = observatory::retrieve(make_fetcher, entry, ports, allowed) => {
            retrieved.map_err(SkillError::Failed)?
        }
    };
    let hsts_preload_list = preload.is_loaded();
    // Parsing the page is CPU work, on the runtime's pool within its budget.
    let (graded, parsed) = ctx
        .cpu(move |budget| {
            let page = retrieval.auto().and_then(|auto| {
                if mime(&auto.response) == Mime::Other {
                    return Some(Page::default());
                }
                let text = auto.response.text();
                markup::check(&text, MarkupLimits::DEFAULT).ok()?;
                markup::parse(&text, budget)
                    .ok()
                    .map(|html| Page::parse(&html))
            });
            let parsed = page.is_some() || retrieval.auto().is_none();
            (
                observatory::analyze(&retrieval, page.as_ref(), &preload),
                parsed,
            )
        })
        .await?;
    if !parsed {
        not_fetched.push("the page is over the markup limits and was not parsed".into());
    }
    let (outcome, error) = match graded {
        Ok(outcome) => (Some(outcome), None),
        Err(no_grade) => (None, Some(no_grade.to_string())),
    };
    Ok(ObservatoryReport {
        outcome,
        error,
        exact: not_fetched.is_empty(),
        not_exact: not_fetched,
        hsts_preload_list,
        requests,
    })
}
