//! CORS: does the target trust any Origin, the `null` Origin, or everyone with
//! credentials? Two requests per path, each with a foreign Origin.

use reqwest::{Method, Url};

use crate::security::catalogue::found;
use crate::security::finding::Finding;
use crate::security::http::Fetcher;

/// An Origin no real site uses.
pub(crate) const FOREIGN_ORIGIN: &str = "https://fundi-scan.invalid";

pub(crate) async fn check(fetcher: &Fetcher, url: &Url, findings: &mut Vec<Finding>) {
    for origin in [FOREIGN_ORIGIN, "null"] {
        let Ok(response) = fetcher
            .request(Method::GET, url, &[("origin", origin)])
            .await
        else {
            continue;
        };
        let Some(allowed) = response.header("access-control-allow-origin") else {
            continue;
        };
        let allowed = allowed.trim();
        let credentials = response
            .header("access-control-allow-credentials")
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
        let evidence = format!(
            "Origin: {origin} → Access-Control-Allow-Origin: {allowed}{}",
            if credentials {
                ", Access-Control-Allow-Credentials: true"
            } else {
                ""
            }
        );
        let u = url.as_str();
        let finding = match (allowed, origin) {
            ("*", FOREIGN_ORIGIN) if credentials => Some(found(
                "cors-wildcard-with-credentials",
                "CORS allows every origin with credentials",
                evidence,
                u,
                "access-control-allow-origin",
            )),
            ("*", FOREIGN_ORIGIN) => Some(found(
                "cors-wildcard",
                "CORS lets every site read this resource",
                evidence,
                u,
                "access-control-allow-origin",
            )),
            ("null", "null") => Some(found(
                "cors-null-origin",
                "CORS trusts the null origin (sandboxed iframes, local files)",
                evidence,
                u,
                "access-control-allow-origin",
            )),
            (a, o) if a == o && credentials => Some(found(
                "cors-reflected-origin-with-credentials",
                "CORS echoes any Origin and allows credentials: any site can read users' data",
                evidence,
                u,
                "access-control-allow-origin",
            )),
            (a, o) if a == o => Some(found(
                "cors-reflected-origin",
                "CORS echoes any Origin",
                evidence,
                u,
                "access-control-allow-origin",
            )),
            _ => None,
        };
        findings.extend(finding);
    }
}
