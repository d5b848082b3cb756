//! `security-scan`: HTTP security checks of an allowed target, modelled on Mozilla's HTTP
//! Observatory and OWASP ZAP's baseline passive rules. See docs/skills/security-scan.md.

pub mod catalogue;
mod checks;
mod config;
pub mod finding;
mod grades;
mod http;
mod landing;
mod observatory;
mod skill;

pub use config::SecurityConfig;
pub use skill::{SCOPE, SKILL_ID, SecurityScanSkill};

/// The header and cookie findings (rule id and target) that a response at `url` with
/// these headers gets: heal-issue's re-check of a fix in a server's configuration.
pub(crate) fn header_findings(
    url: &str,
    headers: &[(String, String)],
) -> Result<Vec<(&'static str, String)>, String> {
    let url = reqwest::Url::parse(url).map_err(|e| format!("{url}: {e}"))?;
    let mut map = reqwest::header::HeaderMap::new();
    for (name, value) in headers {
        let name = reqwest::header::HeaderName::from_bytes(name.as_bytes())
            .map_err(|e| format!("header {name:?}: {e}"))?;
        let value = reqwest::header::HeaderValue::from_str(value)
            .map_err(|e| format!("header value {value:?}: {e}"))?;
        map.append(name, value);
    }
    let response = http::Response {
        url,
        status: 200,
        headers: map,
        body: Vec::new(),
    };
    let (mut findings, mut bonuses) = (Vec::new(), Vec::new());
    checks::headers::check(&response, &mut findings, &mut bonuses);
    checks::cookies::check(&response, &mut findings);
    Ok(findings.into_iter().map(|f| (f.id, f.target)).collect())
}

/// The page findings (rule id and target) that an HTML page at `url` gets:
/// heal-issue's re-check of a fixed page.
pub(crate) fn page_findings(url: &str, page: &str) -> Result<Vec<(&'static str, String)>, String> {
    let url = reqwest::Url::parse(url).map_err(|e| format!("{url}: {e}"))?;
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(
        reqwest::header::CONTENT_TYPE,
        reqwest::header::HeaderValue::from_static("text/html; charset=utf-8"),
    );
    let response = http::Response {
        url,
        status: 200,
        headers,
        body: page.as_bytes().to_vec(),
    };
    let mut findings = Vec::new();
    let budget = fundi_runtime::cpu::Budget::unlimited();
    checks::content::check_page(&response, &mut findings, &budget);
    Ok(findings.into_iter().map(|f| (f.id, f.target)).collect())
}
