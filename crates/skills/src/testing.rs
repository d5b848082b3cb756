//! Helpers for this workspace's heal-issue tests (feature `test-util`): real git
//! repositories with a bare remote in a temp dir, and a directory served over HTTP on
//! 127.0.0.1.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs git in `dir` with a fixed identity and no system configuration; panics with
/// git's words if it fails.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "Test")
        .env("GIT_AUTHOR_EMAIL", "test@localhost")
        .env("GIT_COMMITTER_NAME", "Test")
        .env("GIT_COMMITTER_EMAIL", "test@localhost")
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// A repository `workspace/site` with one commit on `main` of some files, pushed to a
/// bare remote `origin` (`remote.git`), all in a temp dir.
pub struct TestRepo {
    /// The temp dir holding it all.
    pub temp: tempfile::TempDir,
    /// The workspace directory (to allow in `skills.heal-issue.workspaces`).
    pub workspace: PathBuf,
    /// The repository's working tree.
    pub work: PathBuf,
    /// The bare remote.
    pub remote: PathBuf,
}

impl TestRepo {
    /// The repository with these files (`path`, content) committed and pushed.
    pub fn new(files: &[(&str, &str)]) -> TestRepo {
        let temp = tempfile::tempdir().expect("a temp dir");
        let workspace = temp.path().join("workspace");
        let work = workspace.join("site");
        let remote = temp.path().join("remote.git");
        std::fs::create_dir_all(&work).expect("the working tree");
        git(
            temp.path(),
            &["init", "-q", "--bare", "-b", "main", "remote.git"],
        );
        git(&work, &["init", "-q", "-b", "main"]);
        for (path, content) in files {
            let file = work.join(path);
            if let Some(parent) = file.parent() {
                std::fs::create_dir_all(parent).expect("a directory");
            }
            std::fs::write(file, content).expect("a file");
        }
        git(&work, &["add", "."]);
        git(&work, &["commit", "-q", "-m", "the site"]);
        git(
            &work,
            &["remote", "add", "origin", &remote.to_string_lossy()],
        );
        git(&work, &["push", "-q", "origin", "main"]);
        TestRepo {
            temp,
            workspace,
            work,
            remote,
        }
    }

    /// The commit `HEAD` of the working tree is at.
    pub fn head(&self) -> String {
        git(&self.work, &["rev-parse", "HEAD"])
    }

    /// A branch's commit in the working repository (`None`: no such branch).
    pub fn local_branch(&self, branch: &str) -> Option<String> {
        branch_in(&self.work, branch)
    }

    /// A branch's commit on the remote (`None`: no such branch).
    pub fn remote_branch(&self, branch: &str) -> Option<String> {
        branch_in(&self.remote, branch)
    }
}

fn branch_in(dir: &Path, branch: &str) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args([
            "rev-parse",
            "--verify",
            "-q",
            &format!("refs/heads/{branch}"),
        ])
        .output()
        .expect("git runs");
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// Serves the files of `dir` as HTML on 127.0.0.1 (404 for anything else); returns
/// the site's URL, ending in `/`.
pub async fn serve_dir(dir: PathBuf) -> String {
    use axum::extract::{Path as UrlPath, State};
    use axum::response::{Html, IntoResponse};

    async fn file(
        State(dir): State<PathBuf>,
        UrlPath(path): UrlPath<String>,
    ) -> axum::response::Response {
        match std::fs::read_to_string(dir.join(path)) {
            Ok(page) => Html(page).into_response(),
            Err(_) => axum::http::StatusCode::NOT_FOUND.into_response(),
        }
    }
    let router = axum::Router::new()
        .route("/{*path}", axum::routing::get(file))
        .with_state(dir);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port");
    let url = format!("http://{}/", listener.local_addr().expect("its address"));
    tokio::spawn(async move { axum::serve(listener, router).await });
    url
}
