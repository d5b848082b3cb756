//! TLS problems as findings, HTTP that must redirect to HTTPS, and probes that follow the origin a scan landed on.

use super::support::*;

#[tokio::test]
async fn tls_problems_are_findings_and_the_scan_goes_on() {
    let pki = Pki::new();
    let bad_headers = with(good_headers(), "x-content-type-options", None);
    let site = Site {
        headers: bad_headers,
        body: GOOD_PAGE.into(),
        ..Site::default()
    };
    for (cert, check) in [
        (
            Pki::self_signed(&["127.0.0.1"]),
            "tls-untrusted-certificate",
        ),
        (pki.leaf(&["other.test"], false), "tls-wrong-name"),
        (pki.leaf(&["127.0.0.1"], true), "tls-expired-certificate"),
    ] {
        let url = https_site(site.clone(), cert).await;
        let scanner = scanner(&[&url], {
            let mut security_config = SecurityConfig::default();
            security_config.extra_ca_files = vec![pki.ca_file.path().to_path_buf()];
            security_config
        })
        .await;
        let task = scanner.scan(json!({"url": url})).await;
        assert_eq!(
            task.status.state,
            TaskState::Completed,
            "{check}: {}",
            reply(&task)
        );
        let found = ids(&task);
        assert!(found.contains(check), "{check} missing: {found:?}");
        // The header checks still ran over the unverified connection.
        assert!(
            found.contains("x-content-type-options-missing"),
            "{check}: {found:?}"
        );
        let finding = report(&task)["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["id"] == check)
            .unwrap()
            .clone();
        assert_eq!(finding["severity"], "high");
    }
}

#[tokio::test]
async fn plain_http_must_redirect_to_https() {
    let plain = http_site(Site {
        headers: good_headers(),
        body: GOOD_PAGE.into(),
        ..Site::default()
    })
    .await;
    let scanner_plain = scanner(&[&plain], SecurityConfig::default()).await;
    let task = scanner_plain.scan(json!({"url": plain})).await;
    assert!(ids(&task).contains("no-https"), "{:?}", ids(&task));
    assert!(
        !ids(&task).contains("hsts-missing"),
        "HSTS means nothing over HTTP"
    );

    let redirecting_site = {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let app = Router::new().fallback(any(|| async {
            Response::builder()
                .status(StatusCode::MOVED_PERMANENTLY)
                .header("location", HeaderValue::from_static("https://127.0.0.1/"))
                .body(Body::empty())
                .unwrap()
        }));
        tokio::spawn(async move { axum::serve(listener, app).await });
        url
    };
    let scanner_redirect = scanner(&[&redirecting_site], SecurityConfig::default()).await;
    let task = scanner_redirect
        .scan(json!({"url": redirecting_site}))
        .await;
    assert!(!ids(&task).contains("no-https"), "{:?}", ids(&task));
    let errors = report(&task)["errors"].to_string();
    assert!(errors.contains("outside the allowed origins"), "{errors}");
}

#[tokio::test]
async fn probes_go_to_the_origin_the_scan_landed_on() {
    let site = http_site(Site {
        headers: good_headers(),
        body: GOOD_PAGE.into(),
        leaky: true,
        trace_on_404: true,
        ..Site::default()
    })
    .await;
    let entry = redirecting_site(&site).await;
    let both = scanner(&[&entry, &site], {
        let mut security_config = SecurityConfig::default();
        security_config.active_requests_per_second = 100;
        security_config
    })
    .await;
    let task = both.scan(json!({"url": entry, "active": true})).await;
    let found = ids(&task);
    for id in [
        "exposed-env",
        "exposed-git",
        "open-redirect",
        "stack-trace-disclosure",
    ] {
        assert!(found.contains(id), "{id} missing: {found:?}");
    }
    let probed = report(&task)["probed"].clone();
    assert_eq!(
        probed,
        json!([format!("{site}/")]),
        "only the landed origin serves"
    );
}
