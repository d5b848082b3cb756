//! Active checks run only when asked, within their request budget.

use super::support::*;

#[tokio::test]
async fn active_checks_only_when_asked_within_their_budget() {
    let leaky = http_site(Site {
        headers: good_headers(),
        body: GOOD_PAGE.into(),
        leaky: true,
        ..Site::default()
    })
    .await;
    let leaky_scanner = scanner(&[&leaky], {
        let mut security_config = SecurityConfig::default();
        security_config.active_requests_per_second = 100;
        security_config
    })
    .await;
    let passive = leaky_scanner.scan(json!({"url": leaky})).await;
    let active_ids = [
        "exposed-git",
        "exposed-env",
        "exposed-svn",
        "exposed-ds-store",
        "exposed-server-status",
        "exposed-phpinfo",
        "exposed-backup-file",
        "directory-listing",
        "trace-enabled",
        "open-redirect",
    ];
    assert!(
        active_ids.iter().all(|id| !ids(&passive).contains(*id)),
        "{:?}",
        ids(&passive)
    );

    let task = leaky_scanner
        .scan(json!({"url": leaky, "paths": ["/", "/files/report.pdf"], "active": true}))
        .await;
    let found = ids(&task);
    for id in active_ids {
        assert!(found.contains(id), "{id} missing: {found:?}");
    }
    let requests = report(&task)["requests"].as_array().unwrap().len();
    assert!(requests > 10, "every request is logged: {requests}");
    // A binary file's bytes go into the evidence escaped (no store keeps a NUL).
    let ds_store = report(&task)["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "exposed-ds-store")
        .cloned()
        .unwrap();
    let evidence = ds_store["evidence"].as_str().unwrap();
    assert!(
        evidence.starts_with("\\u{0}\\u{0}\\u{0}\\u{1}Bud1"),
        "{evidence}"
    );

    // A site that answers 200 to everything is not reported for what it does not have.
    let soft = http_site(Site {
        headers: good_headers(),
        body: GOOD_PAGE.into(),
        soft_404: true,
        ..Site::default()
    })
    .await;
    let soft_scanner = scanner(&[&soft], {
        let mut security_config = SecurityConfig::default();
        security_config.active_requests_per_second = 100;
        security_config
    })
    .await;
    let task = soft_scanner
        .scan(json!({"url": soft, "active": true}))
        .await;
    assert!(
        active_ids.iter().all(|id| !ids(&task).contains(*id)),
        "{:?}",
        ids(&task)
    );

    // The budget bounds the active requests.
    let budgeted = scanner_with_budget(&leaky, 3).await;
    let task = budgeted.scan(json!({"url": leaky, "active": true})).await;
    assert_eq!(report(&task)["activeRequestsLeft"], json!(0));
    let active_requests = report(&task)["requests"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| {
            let url = r["url"].as_str().unwrap();
            url.contains("/.git/") || url.contains("/.env") || url.contains("/.svn")
        })
        .count();
    assert!(active_requests <= 3, "{active_requests}");
}
