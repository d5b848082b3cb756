//! The Observatory grade of a scan: its input option, and the retrieval and analysis
//! run for it beside fundi's own checks.

use std::sync::Arc;

use fundi_runtime::{SkillContext, SkillError};
use reqwest::Url;
use serde_json::{Value, json};

use crate::markup::{self, MarkupLimits};

use super::http::Fetcher;
use super::observatory::{self, Page, Ports, PreloadList};

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

/// Retrieves the site as Observatory does and grades it; the report's `observatory`.
pub(super) async fn observatory_grade(
    make_fetcher: &(dyn Fn() -> Result<Fetcher, String> + Sync),
    entry: &Url,
    ports: Ports,
    allowed: &(dyn Fn(&Url) -> bool + Sync),
    preload: Arc<PreloadList>,
    ctx: &SkillContext,
) -> Result<Value, SkillError> {
    let retrieved = tokio::select! {
        () = ctx.cancelled() => return Err(SkillError::Canceled),
        retrieved = observatory::retrieve(make_fetcher, entry, ports, allowed) => {
            retrieved.map_err(SkillError::Failed)?
        }
    };
    let retrieval = retrieved.retrieval.clone();
    let preload_loaded = preload.is_loaded();
    // Parsing the page is CPU work, on the runtime's pool within its budget.
    let (graded, parsed) = ctx
        .cpu(move |budget| {
            let page = retrieval.auto().and_then(|auto| {
                let mime = observatory::headers::header(&auto.response, "content-type")
                    .unwrap_or_default();
                let mime = mime.split(';').next().unwrap_or_default().to_owned();
                if !mime.is_empty() && mime != "text/html" && mime != "application/xhtml+xml" {
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
    let mut not_exact = retrieved.not_fetched.clone();
    if !parsed {
        not_exact.push("the page is over the markup limits and was not parsed".into());
    }
    let mut report = match graded {
        Ok(outcome) => serde_json::to_value(outcome).unwrap_or(Value::Null),
        Err(no_grade) => json!({"error": no_grade.to_string()}),
    };
    if let Some(fields) = report.as_object_mut() {
        fields.insert("exact".into(), json!(not_exact.is_empty()));
        fields.insert("notExact".into(), json!(not_exact));
        fields.insert("hstsPreloadList".into(), json!(preload_loaded));
        fields.insert("requests".into(), json!(retrieved.requests));
    }
    Ok(report)
}
