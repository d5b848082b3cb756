//! Targets off the allow-list and bad input are refused; hostile targets stay bounded.

use super::support::*;

#[tokio::test]
async fn targets_off_the_allowlist_and_bad_input_are_refused() {
    let scanner = scanner(&["https://allowed.example"], SecurityConfig::default()).await;
    for (data, expected) in [
        (
            json!({"url": "http://169.254.169.254/"}),
            "is not an allowed target",
        ),
        (
            json!({"url": "https://allowed.example/", "paths": ["https://elsewhere.example/"]}),
            "leaves https://allowed.example",
        ),
    ] {
        let task = scanner.scan(data).await;
        assert_eq!(task.status.state, TaskState::Rejected, "{expected}");
        assert!(reply(&task).contains(expected), "{}", reply(&task));
    }
    // Data against the skill's input schema is refused at submission, naming the field.
    for (data, field) in [
        (
            json!({"url": "https://allowed.example/", "paths": "/"}),
            "data.paths",
        ),
        (
            json!({"url": "https://allowed.example/", "active": "yes"}),
            "data.active",
        ),
        (json!({"target": "x"}), "data: "),
    ] {
        let message = Message::user(vec![Part::data(data)]);
        let refused = scanner.runtime.submit(SubmitRequest::new(message)).await;
        let said = refused.unwrap_err().to_string();
        assert!(said.contains(field), "{said}");
    }
}

#[tokio::test]
async fn hostile_targets_stay_bounded() {
    // Huge headers, an endless body, a redirect loop, a target that never answers.
    let huge = {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let app = Router::new().fallback(any(|| async {
            let mut response = Response::builder().status(StatusCode::OK);
            for i in 0..300 {
                response = response.header(format!("x-pad-{i}"), "v".repeat(1000));
            }
            response.body(Body::empty()).unwrap()
        }));
        tokio::spawn(async move { axum::serve(listener, app).await });
        url
    };
    let endless = {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let app = Router::new().fallback(any(|| async {
            let chunks = futures::stream::repeat_with(|| {
                Ok::<_, std::io::Error>(axum::body::Bytes::from(vec![b'a'; 64 * 1024]))
            });
            Response::builder()
                .header("content-type", "text/html")
                .body(Body::from_stream(chunks))
                .unwrap()
        }));
        tokio::spawn(async move { axum::serve(listener, app).await });
        url
    };
    let looping = {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let app = Router::new().fallback(any(|uri: axum::http::Uri| async move {
            let next = if uri.path() == "/a" { "/b" } else { "/a" };
            Response::builder()
                .status(StatusCode::FOUND)
                .header("location", next)
                .body(Body::empty())
                .unwrap()
        }));
        tokio::spawn(async move { axum::serve(listener, app).await });
        url
    };
    let silent = {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let app = Router::new().fallback(any(|| async {
            std::future::pending::<()>().await;
            "never"
        }));
        tokio::spawn(async move { axum::serve(listener, app).await });
        url
    };
    let mut config = SecurityConfig::default();
    config.request_timeout_ms = 500;
    config.max_body_bytes = 256 * 1024;
    let all = [
        huge.as_str(),
        endless.as_str(),
        looping.as_str(),
        silent.as_str(),
    ];
    let scanner = scanner(&all, config).await;

    let task = scanner.scan(json!({"url": huge})).await;
    assert_eq!(task.status.state, TaskState::Failed, "{}", reply(&task));
    assert!(reply(&task).contains("could not reach"), "{}", reply(&task));

    let task = scanner.scan(json!({"url": endless})).await;
    assert_eq!(task.status.state, TaskState::Completed, "{}", reply(&task));

    let task = scanner.scan(json!({"url": format!("{looping}/a")})).await;
    assert_eq!(task.status.state, TaskState::Completed, "{}", reply(&task));
    assert!(
        report(&task)["errors"]
            .to_string()
            .contains("redirects more than 5 times")
    );

    let task = scanner.scan(json!({"url": silent})).await;
    assert_eq!(task.status.state, TaskState::Failed, "{}", reply(&task));
    assert!(reply(&task).contains("could not reach"), "{}", reply(&task));
}

#[tokio::test]
async fn a_page_built_to_cost_the_parser_is_refused_unparsed_and_the_scan_goes_on() {
    let pki = Pki::new();
    // 100,000 unclosed <div>: nesting html5ever takes minutes over; mixed content after.
    let body = format!(
        "{}<script src=\"http://cdn.example/x.js\"></script>",
        "<div>".repeat(100_000)
    );
    let (url, scanner) = well_configured_https_site(&pki, body).await;
    let task = scanner.scan(json!({"url": url})).await;
    assert_eq!(task.status.state, TaskState::Completed, "{}", reply(&task));
    // Not parsed, so not checked for mixed content; the other checks ran.
    assert!(
        !ids(&task).contains("mixed-content-active"),
        "{:?}",
        ids(&task)
    );
    assert!(report(&task)["grade"].is_string(), "{}", report(&task));
}
