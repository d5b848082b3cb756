//! Git through the `git` command line, as heal uses it: prompts disabled (a push that
//! needs credentials fails instead of waiting for a person), the system configuration
//! ignored, and the user's working tree never touched: a fix's commit is built from
//! blobs and a private index, and its branch created atomically.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use tokio::io::AsyncWriteExt;
use tokio::process::Command;

/// What a git command's failure says.
#[derive(Debug, Clone, thiserror::Error)]
#[error("git {command}: {message}")]
pub struct GitError {
    /// The subcommand.
    pub command: String,
    /// Its error output, or why it did not run.
    pub message: String,
}

/// One repository's git.
#[derive(Debug, Clone)]
pub struct Git {
    /// The top of its working tree.
    pub root: PathBuf,
}

/// A file to write in a fix's commit.
#[derive(Debug, Clone, PartialEq)]
pub struct FileWrite {
    /// Its path in the repository.
    pub path: String,
    /// Its new content.
    pub content: String,
}

impl Git {
    /// The repository whose working tree holds `dir`, at its top.
    pub async fn open(dir: &Path) -> Result<Git, GitError> {
        let probe = Git {
            root: dir.to_path_buf(),
        };
        let top = probe.text(&["rev-parse", "--show-toplevel"]).await?;
        Ok(Git {
            root: PathBuf::from(top.trim_end()),
        })
    }

    /// The commit HEAD is at.
    pub async fn head(&self) -> Result<String, GitError> {
        Ok(self
            .text(&["rev-parse", "--verify", "HEAD^{commit}"])
            .await?
            .trim()
            .to_owned())
    }

    /// The branch HEAD is on (`None`: detached).
    pub async fn current_branch(&self) -> Result<Option<String>, GitError> {
        match self.text(&["symbolic-ref", "--short", "-q", "HEAD"]).await {
            Ok(name) => Ok(Some(name.trim().to_owned())),
            Err(_) => Ok(None),
        }
    }

    /// Tracked files with changes not committed (staged or not), as `git status` says.
    pub async fn uncommitted(&self) -> Result<Vec<String>, GitError> {
        let out = self
            .text(&["status", "--porcelain", "--untracked-files=no"])
            .await?;
        Ok(out
            .lines()
            .map(|l| l.get(3..).unwrap_or(l).to_owned())
            .collect())
    }

    /// The paths tracked at HEAD.
    pub async fn tracked(&self) -> Result<Vec<String>, GitError> {
        let out = self
            .text(&["ls-tree", "-r", "-z", "--name-only", "HEAD"])
            .await?;
        Ok(out
            .split('\0')
            .filter(|p| !p.is_empty())
            .map(str::to_owned)
            .collect())
    }

    /// A file's content at `rev` (`None`: not there, or not text).
    pub async fn read_at(&self, rev: &str, path: &str) -> Result<Option<String>, GitError> {
        match self
            .bytes(&["cat-file", "blob", &format!("{rev}:{path}")], None)
            .await
        {
            Ok(bytes) => Ok(String::from_utf8(bytes).ok()),
            Err(_) => Ok(None),
        }
    }

    /// Whether the branch exists here, and its commit.
    pub async fn branch_commit(&self, branch: &str) -> Result<Option<String>, GitError> {
        let name = format!("refs/heads/{branch}");
        match self.text(&["rev-parse", "--verify", "-q", &name]).await {
            Ok(commit) => Ok(Some(commit.trim().to_owned())),
            Err(_) => Ok(None),
        }
    }

    /// Commits `writes` on top of `parent` and creates `branch` at that commit, failing
    /// if the branch exists already (two heals of one issue: the first wins). The
    /// working tree, the index and HEAD are left alone.
    pub async fn commit_on_new_branch(
        &self,
        parent: &str,
        branch: &str,
        writes: &[FileWrite],
        message: &str,
        author: (&str, &str),
    ) -> Result<String, GitError> {
        // A private index in a directory of its own (git will not read an empty file).
        let scratch = tempfile::tempdir().map_err(|e| GitError {
            command: "commit".into(),
            message: format!("a temporary index: {e}"),
        })?;
        let index_path = scratch.path().join("index").to_string_lossy().into_owned();
        let with_index = [("GIT_INDEX_FILE", index_path.as_str())];
        self.run(&["read-tree", parent], None, &with_index).await?;
        for write in writes {
            let mode = self
                .text(&["ls-tree", parent, "--", &write.path])
                .await?
                .split_whitespace()
                .next()
                .unwrap_or("100644")
                .to_owned();
            // Only regular files are edited: a symbolic link's blob is where it points.
            if mode != "100644" && mode != "100755" {
                return Err(GitError {
                    command: "commit".into(),
                    message: format!("{} is not a regular file (mode {mode})", write.path),
                });
            }
            let blob = self
                .run(
                    &["hash-object", "-w", "--stdin"],
                    Some(write.content.as_bytes()),
                    &[],
                )
                .await?;
            let blob = String::from_utf8_lossy(&blob).trim().to_owned();
            let info = format!("{mode},{blob},{}", write.path);
            self.run(
                &["update-index", "--add", "--cacheinfo", &info],
                None,
                &with_index,
            )
            .await?;
        }
        let tree = self.run(&["write-tree"], None, &with_index).await?;
        let tree = String::from_utf8_lossy(&tree).trim().to_owned();
        let (name, email) = author;
        let identity = [
            ("GIT_AUTHOR_NAME", name),
            ("GIT_AUTHOR_EMAIL", email),
            ("GIT_COMMITTER_NAME", name),
            ("GIT_COMMITTER_EMAIL", email),
        ];
        let commit = self
            .run(
                &["commit-tree", &tree, "-p", parent, "-F", "-"],
                Some(message.as_bytes()),
                &identity,
            )
            .await?;
        let commit = String::from_utf8_lossy(&commit).trim().to_owned();
        // The empty old value: created only if no such branch exists, atomically.
        let name = format!("refs/heads/{branch}");
        self.run(&["update-ref", &name, &commit, ""], None, &[])
            .await?;
        Ok(commit)
    }

    /// Whether `commit` is in the history of `of` (merged into it).
    pub async fn is_ancestor(&self, commit: &str, of: &str) -> bool {
        self.run(&["merge-base", "--is-ancestor", commit, of], None, &[])
            .await
            .is_ok()
    }

    /// A commit's message.
    pub async fn message_of(&self, commit: &str) -> Result<String, GitError> {
        self.text(&["log", "-1", "--format=%B", commit]).await
    }

    /// The diff from `from` to `to`, and lines added and removed.
    pub async fn diff(&self, from: &str, to: &str) -> Result<(String, u64, u64), GitError> {
        let diff = self
            .text(&["diff", "--no-color", "--no-ext-diff", from, to])
            .await?;
        let stat = self.text(&["diff", "--numstat", from, to]).await?;
        let (mut added, mut removed) = (0, 0);
        for line in stat.lines() {
            let mut fields = line.split('\t');
            added += fields.next().and_then(|n| n.parse().ok()).unwrap_or(0);
            removed += fields.next().and_then(|n| n.parse().ok()).unwrap_or(0);
        }
        Ok((diff, added, removed))
    }

    /// Pushes exactly `branch` to the same name on `remote`; nothing else is pushed.
    pub async fn push_branch(&self, remote: &str, branch: &str) -> Result<(), GitError> {
        let refspec = format!("refs/heads/{branch}:refs/heads/{branch}");
        self.run(&["push", "--porcelain", "--", remote, &refspec], None, &[])
            .await?;
        Ok(())
    }

    /// Deletes `branch` if it is still at `commit` (a branch someone moved is kept).
    pub async fn delete_branch(&self, branch: &str, commit: &str) -> Result<(), GitError> {
        let name = format!("refs/heads/{branch}");
        self.run(&["update-ref", "-d", &name, commit], None, &[])
            .await?;
        Ok(())
    }

    async fn text(&self, args: &[&str]) -> Result<String, GitError> {
        let out = self.bytes(args, None).await?;
        Ok(String::from_utf8_lossy(&out).into_owned())
    }

    async fn bytes(&self, args: &[&str], input: Option<&[u8]>) -> Result<Vec<u8>, GitError> {
        self.run(args, input, &[]).await
    }

    async fn run(
        &self,
        args: &[&str],
        input: Option<&[u8]>,
        env: &[(&str, &str)],
    ) -> Result<Vec<u8>, GitError> {
        let failed = |message: String| GitError {
            command: args.first().copied().unwrap_or_default().to_owned(),
            message,
        };
        let mut command = Command::new("git");
        command
            .arg("-C")
            .arg(&self.root)
            .args(args)
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_ASKPASS", "")
            .env("SSH_ASKPASS", "")
            .env("GIT_SSH_COMMAND", "ssh -o BatchMode=yes")
            .env("LC_ALL", "C")
            .envs(env.iter().copied())
            .stdin(if input.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command
            .spawn()
            .map_err(|e| failed(format!("could not start git: {e}")))?;
        if let (Some(bytes), Some(mut stdin)) = (input, child.stdin.take()) {
            stdin
                .write_all(bytes)
                .await
                .map_err(|e| failed(format!("writing to git: {e}")))?;
        }
        let out = child
            .wait_with_output()
            .await
            .map_err(|e| failed(format!("waiting for git: {e}")))?;
        if !out.status.success() {
            let stderr = String::from_utf8_lossy(&out.stderr).trim().to_owned();
            return Err(failed(if stderr.is_empty() {
                format!("exited with {}", out.status)
            } else {
                stderr
            }));
        }
        Ok(out.stdout)
    }
}
