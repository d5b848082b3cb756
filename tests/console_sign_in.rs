//! The console's sign-in by link against login CSRF: a link names the account it
//! opens and signs in only when the person who opened it continues, from the console's
//! own page, in the same browser; and every console answer, axum's own refusals too,
//! carries the console's security headers.

mod common;
#[path = "web_console/support.rs"]
mod support;

use support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_signs_in_only_when_its_opener_continues_from_the_console_page() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path(), &[]);
    let link = link_for(&server, ALICE);
    let shown = confirmation(&link).await;
    assert!(
        shown.page.contains("as <strong>alice</strong>"),
        "the page names the account: {}",
        shown.page
    );
    assert_accessible(&shown.page, "/console/sign-in");
    assert!(
        shown.cookie.starts_with("fundi_sign_in="),
        "{}",
        shown.cookie
    );
    // Opening the link signed nobody in, and spent it.
    let again = plain_client().get(&link).send().await.unwrap();
    assert_eq!(again.status(), 401);

    let url = server.url.as_str();
    // An attacker's page posting the form (even with the tokens) is refused: another
    // origin, or a browser that was not shown the page (no cookie, or another one).
    let foreign = confirm(
        url,
        "http://evil.example",
        &shown.cookie,
        &shown.token,
        &shown.csrf,
    );
    assert_eq!(foreign.await.status(), 403);
    let no_cookie = confirm(url, url, "", &shown.token, &shown.csrf).await;
    assert_eq!(no_cookie.status(), 403);
    let other = confirm(url, url, "fundi_sign_in=0123", &shown.token, &shown.csrf).await;
    assert_eq!(other.status(), 403);
    // The person who opened it continues: signed in, as Alice.
    let signed_in = confirm(url, url, &shown.cookie, &shown.token, &shown.csrf).await;
    assert_eq!(signed_in.status(), 303);
    let cookies: Vec<String> = signed_in
        .headers()
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap().to_owned())
        .collect();
    let session = cookies
        .iter()
        .find(|c| c.starts_with("fundi_console="))
        .expect("a session cookie");
    assert!(session.contains("HttpOnly") && session.contains("SameSite=Strict"));
    assert!(
        cookies.iter().any(|c| c.starts_with("fundi_sign_in=;")),
        "the sign-in cookie is removed: {cookies:?}"
    );
    let cookie = session.split(';').next().unwrap();
    let tasks = page(&server, cookie, "/console/tasks").await;
    assert!(tasks.contains("Signed in as <strong>alice</strong>"));
    // The confirmation is spent too.
    let twice = confirm(url, url, &shown.cookie, &shown.token, &shown.csrf).await;
    assert_eq!(twice.status(), 401);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_console_answer_carries_the_security_headers() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path(), &[]);
    let client = plain_client();
    let url = |path: &str| format!("{}{path}", server.url);
    // A form is read only from someone signed in, from the console's own page.
    let alice = sign_in(&server, ALICE).await;
    let from_alice = |path: &str| {
        client
            .post(url(path))
            .header("cookie", alice.cookie.as_str())
            .header("origin", server.url.as_str())
    };
    let answers = [
        // 405: no PUT here.
        client.put(url("/console/tasks")).send().await.unwrap(),
        // 415: a form route sent JSON.
        from_alice("/console/sign-out")
            .header("content-type", "application/json")
            .body("{}")
            .send()
            .await
            .unwrap(),
        // 422: a form that cannot be read.
        from_alice("/console/sign-out")
            .header("content-type", "application/x-www-form-urlencoded")
            .body("csrf=a&csrf=b")
            .send()
            .await
            .unwrap(),
        // 401: nobody signed in, and the form is not read.
        client
            .post(url("/console/sign-out"))
            .header("content-type", "application/json")
            .body("{}")
            .send()
            .await
            .unwrap(),
        client.get(url("/console/tasks")).send().await.unwrap(),
    ];
    let statuses: Vec<u16> = answers.iter().map(|a| a.status().as_u16()).collect();
    assert_eq!(statuses, [405, 415, 422, 401, 401]);
    for answer in &answers {
        let headers = answer.headers();
        let status = answer.status();
        let csp = headers["content-security-policy"].to_str().unwrap();
        assert!(csp.contains("frame-ancestors 'none'"), "{status}: {csp}");
        assert_eq!(headers["x-frame-options"], "DENY", "{status}");
        assert_eq!(headers["cache-control"], "no-store", "{status}");
        assert_eq!(headers["x-content-type-options"], "nosniff", "{status}");
    }
}
