//! heal-issue's built-in remediators on fixtures: each fix is the expected minimal
//! edit (the rest of the file byte for byte), the rule that found the issue finds it
//! before and no longer after, and what needs a person is refused, not guessed.

mod heal;

use fundi_ops::issues::{NewIssue, fingerprint};
use fundi_runtime::TaskId;
use fundi_skills::heal::{
    HeaderValues, HeadersRemediator, HtmlRemediator, Place, Remediator, RemedyError, Tree,
};

const PAGE_URL: &str = "http://127.0.0.1:8080/index.html";

/// The issue a11y-audit records for `rule` on this page (its first failing element).
fn a11y_issue(page: &str, rule: &str) -> NewIssue {
    heal::a11y_issue(page, PAGE_URL, rule)
}

fn security_issue(rule: &str, target: &str, evidence: &str) -> NewIssue {
    security_issue_at("https://site.test/", rule, target, evidence)
}

fn security_issue_at(url: &str, rule: &str, target: &str, evidence: &str) -> NewIssue {
    NewIssue {
        fingerprint: fingerprint(&["security-scan", rule, url, target]),
        source: "security-scan".into(),
        rule: rule.into(),
        severity: "medium".into(),
        title: rule.into(),
        location: url.into(),
        target: Some(target.into()),
        evidence: evidence.into(),
        remediation: String::new(),
        tags: Vec::new(),
        task_id: TaskId::from("scan"),
    }
}

/// Fixes `issue` in `path` and checks the fixed file is exactly `expected`, and that
/// the finding's rule finds it before the fix and not after.
fn fixes(r: &dyn Remediator, issue: &NewIssue, path: &str, before: &str, expected: &str) {
    // A page's file from its URL under the site; a server's configuration found alone.
    let place = match issue.location.starts_with("http://127.0.0.1:8080/") {
        true => site(),
        false => Place::default(),
    };
    let tree = Tree::new(vec![path.into()]).with_file(path, before);
    assert!(r.handles(issue), "{} handles {}", r.name(), issue.rule);
    assert!(r.still_found(issue, &place, &tree).unwrap(), "found before");
    let remedy = r.remediate(issue, &place, &tree).unwrap();
    assert_eq!(remedy.writes.len(), 1);
    assert_eq!(remedy.writes[0].path, path);
    assert_eq!(remedy.writes[0].content, expected, "{}", issue.rule);
    let fixed = tree.applied(&remedy.writes);
    assert!(
        !r.still_found(issue, &place, &fixed).unwrap(),
        "{} still finds {} after the fix",
        issue.source,
        issue.rule
    );
}

fn site() -> Place {
    Place {
        site: Some("http://127.0.0.1:8080/".into()),
        ..Place::default()
    }
}

fn html() -> HtmlRemediator {
    HtmlRemediator::new("en")
}

fn headers(cookie_flags: &[&str]) -> HeadersRemediator {
    HeadersRemediator::new(
        HeaderValues::default(),
        cookie_flags.iter().map(|f| f.to_string()).collect(),
    )
}

const HEAD: &str = "<!doctype html>\n<html>\n  <head>\n    <meta charset=\"utf-8\">\n  </head>\n";

#[test]
fn a_page_without_a_language_gets_the_configured_one() {
    let page = format!("{HEAD}  <body><main><h1>Hi</h1></main></body>\n</html>\n");
    let issue = a11y_issue(&page, "html-has-lang");
    let expected = page.replace("<html>", "<html lang=\"en\">");
    fixes(&html(), &issue, "index.html", &page, &expected);
}

#[test]
fn a_page_without_a_title_takes_its_first_heading() {
    let page = "<!doctype html>\n<html lang=\"en\">\n  <head>\n    <meta charset=\"utf-8\">\n  \
                </head>\n  <body><main><h1>Opening <em>hours</em></h1></main></body>\n</html>\n";
    let issue = a11y_issue(page, "document-title");
    let expected = page.replace("<head>\n", "<head>\n    <title>Opening hours</title>\n");
    fixes(&html(), &issue, "index.html", page, &expected);
    // No heading to take it from: a person must write it.
    let bare = "<!doctype html><html lang=\"en\"><head></head><body><p>x</p></body></html>";
    let issue = a11y_issue(bare, "document-title");
    let tree = Tree::new(vec!["index.html".into()]).with_file("index.html", bare);
    let refused = html().remediate(&issue, &site(), &tree).unwrap_err();
    assert!(matches!(refused, RemedyError::NeedsPerson(_)), "{refused}");
}

#[test]
fn a_decorative_image_gets_empty_alt_and_a_meaningful_one_is_left_to_a_person() {
    let page = "<!doctype html>\n<html lang=\"en\"><head><title>T</title></head><body><main>\n\
                <h1>T</h1>\n<img src='rule.png' class=\"wide decorative\">\n</main></body></html>\n";
    let issue = a11y_issue(page, "image-alt");
    let expected = page.replace(
        "<img src='rule.png' class=\"wide decorative\">",
        "<img src='rule.png' class=\"wide decorative\" alt=\"\">",
    );
    fixes(&html(), &issue, "index.html", page, &expected);
    let marked = page.replace("class=\"wide decorative\"", "data-decorative");
    let issue = a11y_issue(&marked, "image-alt");
    let expected = marked.replace("data-decorative>", "data-decorative alt=\"\">");
    fixes(&html(), &issue, "index.html", &marked, &expected);

    let meaningful = page.replace(" class=\"wide decorative\"", "");
    let issue = a11y_issue(&meaningful, "image-alt");
    let tree = Tree::new(vec!["index.html".into()]).with_file("index.html", &meaningful);
    let refused = html().remediate(&issue, &site(), &tree).unwrap_err();
    assert!(
        matches!(&refused, RemedyError::NeedsPerson(m) if m.contains("rule.png")),
        "{refused}"
    );
}

#[test]
fn a_visible_label_next_to_its_field_is_tied_to_it() {
    let page = "<!doctype html>\n<html lang=\"en\"><head><title>T</title></head><body><main>\n\
                <h1>T</h1>\n<form>\n  <label class=\"f\">Email</label>\n  <input id=\"email\" \
                type=\"email\">\n</form>\n</main></body></html>\n";
    let issue = a11y_issue(page, "label");
    let expected = page.replace("<label class=\"f\">", "<label class=\"f\" for=\"email\">");
    fixes(&html(), &issue, "index.html", page, &expected);
    // Nothing visible to take: a person writes the label.
    let unlabeled = page.replace("<label class=\"f\">Email</label>", "");
    let issue = a11y_issue(&unlabeled, "label");
    let tree = Tree::new(vec!["index.html".into()]).with_file("index.html", &unlabeled);
    let refused = html().remediate(&issue, &site(), &tree).unwrap_err();
    assert!(matches!(refused, RemedyError::NeedsPerson(_)), "{refused}");
}

const NGINX: &str = "# the site\nserver {\n    listen 443 ssl;\n    server_name site.test;\n\
                     \n    add_header X-Content-Type-Options nosniff always;\n\n    location / {\n\
                     \x20       root /srv/site;\n    }\n}\n";

#[test]
fn nginx_gets_each_header_beside_the_ones_it_sends() {
    let cases = [
        (
            "hsts-missing",
            "strict-transport-security",
            "    add_header Strict-Transport-Security \"max-age=63072000; includeSubDomains\" always;\n",
        ),
        (
            "csp-missing",
            "content-security-policy",
            "    add_header Content-Security-Policy \"default-src 'self'; object-src 'none'; \
             base-uri 'self'; frame-ancestors 'self'\" always;\n",
        ),
        (
            "clickjacking",
            "x-frame-options",
            "    add_header X-Frame-Options \"SAMEORIGIN\" always;\n",
        ),
        (
            "referrer-policy-missing",
            "referrer-policy",
            "    add_header Referrer-Policy \"strict-origin-when-cross-origin\" always;\n",
        ),
        (
            "permissions-policy-missing",
            "permissions-policy",
            "    add_header Permissions-Policy \"camera=(), microphone=(), geolocation=()\" always;\n",
        ),
    ];
    let anchor = "    add_header X-Content-Type-Options nosniff always;\n";
    for (rule, target, line) in cases {
        let issue = security_issue(rule, target, "(absent)");
        let expected = NGINX.replace(anchor, &format!("{anchor}{line}"));
        fixes(&headers(&[]), &issue, "deploy/site.conf", NGINX, &expected);
    }
    // A header sent with a bad value is replaced on its own line.
    let unsafe_referrer = NGINX.replace(
        anchor,
        &format!("{anchor}    add_header Referrer-Policy unsafe-url;\n"),
    );
    let issue = security_issue("referrer-policy-unsafe", "referrer-policy", "unsafe-url");
    let expected = NGINX.replace(
        anchor,
        &format!(
            "{anchor}    add_header Referrer-Policy \"strict-origin-when-cross-origin\" always;\n"
        ),
    );
    fixes(
        &headers(&[]),
        &issue,
        "deploy/site.conf",
        &unsafe_referrer,
        &expected,
    );
}

#[test]
fn nosniff_goes_into_a_caddyfile_and_a_headers_file() {
    let issue = security_issue(
        "x-content-type-options-missing",
        "x-content-type-options",
        "(absent)",
    );
    let caddy = "site.test {\n\troot * /srv/site\n\tfile_server\n}\n";
    let expected = "site.test {\n\troot * /srv/site\n\tfile_server\n\theader \
                    X-Content-Type-Options \"nosniff\"\n}\n";
    fixes(&headers(&[]), &issue, "Caddyfile", caddy, expected);

    let netlify = "/*\n  X-Frame-Options: DENY\n\n/assets/*\n  Cache-Control: max-age=31536000\n";
    let expected = "/*\n  X-Frame-Options: DENY\n  X-Content-Type-Options: nosniff\n\n/assets/*\n  \
                    Cache-Control: max-age=31536000\n";
    fixes(&headers(&[]), &issue, "public/_headers", netlify, expected);
}

#[test]
fn cookie_flags_are_added_only_where_the_config_sets_them() {
    let issue = security_issue(
        "cookie-session-no-secure",
        "session",
        "Set-Cookie: session=abc; Path=/; HttpOnly; SameSite=Lax",
    );
    assert!(!headers(&[]).handles(&issue), "no flags configured");
    let r = headers(&["Secure", "HttpOnly", "SameSite=Lax"]);
    let expected = NGINX.replace(
        "    add_header X-Content-Type-Options nosniff always;\n",
        "    add_header X-Content-Type-Options nosniff always;\n    proxy_cookie_flags ~ secure \
         httponly samesite=lax;\n",
    );
    fixes(&r, &issue, "site.conf", NGINX, &expected);
    let caddy = "site.test {\n\treverse_proxy app:8080\n}\n";
    let expected = "site.test {\n\treverse_proxy app:8080\n\theader >Set-Cookie \"(.*)\" \"$1; \
                    Secure; HttpOnly; SameSite=Lax\"\n}\n";
    fixes(&r, &issue, "Caddyfile", caddy, expected);
    // A static host cannot change an application's cookies.
    let tree = Tree::new(vec!["_headers".into()]).with_file("_headers", "/*\n  A: b\n");
    let refused = r.remediate(&issue, &Place::default(), &tree).unwrap_err();
    assert!(matches!(refused, RemedyError::NotHandled(_)), "{refused}");
}

#[test]
fn several_server_blocks_are_told_apart_by_name_and_several_configs_by_the_input() {
    let two = "server {\n    server_name other.test;\n}\nserver {\n    server_name site.test;\n}\n";
    let issue = security_issue(
        "x-content-type-options-missing",
        "x-content-type-options",
        "(absent)",
    );
    let expected = "server {\n    server_name other.test;\n}\nserver {\n    server_name \
                    site.test;\n    add_header X-Content-Type-Options \"nosniff\" always;\n}\n";
    fixes(&headers(&[]), &issue, "nginx.conf", two, expected);

    let tree = Tree::new(vec!["a.conf".into(), "Caddyfile".into()])
        .with_file("a.conf", NGINX)
        .with_file("Caddyfile", "site.test {\n}\n");
    let refused = headers(&[])
        .remediate(&issue, &Place::default(), &tree)
        .unwrap_err();
    assert!(
        matches!(&refused, RemedyError::NoFile(m) if m.contains("name one with `file`")),
        "{refused}"
    );
    let place = Place {
        file: Some("Caddyfile".into()),
        ..Place::default()
    };
    assert!(headers(&[]).remediate(&issue, &place, &tree).is_ok());
}

#[test]
fn links_to_another_site_in_a_new_window_get_noopener() {
    let page = "<!doctype html>\n<html lang=\"en\"><head><title>T</title></head><body>\n\
                <a href=\"https://docs.example/\" target=\"_blank\">Docs</a>\n\
                <a class=x href=\"https://blog.example/\" target=_blank rel=\"nofollow\">Blog</a>\n\
                <a href=\"/about\" target=\"_blank\">About</a>\n</body></html>\n";
    let docs = security_issue_at(
        PAGE_URL,
        "target-blank-no-noopener",
        "https://docs.example/",
        "<a href=\"https://docs.example/\" target=\"_blank\">Docs</a>",
    );
    let expected = page.replace(
        "target=\"_blank\">Docs",
        "target=\"_blank\" rel=\"noopener\">Docs",
    );
    fixes(&html(), &docs, "index.html", page, &expected);
    let blog = security_issue_at(
        PAGE_URL,
        "target-blank-no-noopener",
        "https://blog.example/",
        "<a class=\"x\" href=\"https://blog.example/\" target=\"_blank\" rel=\"nofollow\">Blog</a>",
    );
    let expected = page.replace("rel=\"nofollow\"", "rel=\"nofollow noopener\"");
    fixes(&html(), &blog, "index.html", page, &expected);
}
