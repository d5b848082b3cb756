//! What a remediator is: it recognises the issues it can fix, proposes the smallest
//! edit that fixes one, and checks a tree for the issue again with the rules of the
//! skill that found it. Embedders add their own (one backed by a model, say) with
//! `HealIssueSkill::with_remediator`.

use std::collections::BTreeMap;

use fundi_ops::issues::NewIssue;

use super::git::FileWrite;

/// The files a remediator reads: the repository's tracked files at the commit the
/// fix starts from.
#[derive(Debug, Clone, Default)]
pub struct Tree {
    files: BTreeMap<String, String>,
    paths: Vec<String>,
}

impl Tree {
    /// A tree of these tracked paths, whose text files are read on demand by the
    /// caller and added with [`Tree::with_file`].
    pub fn new(paths: Vec<String>) -> Tree {
        Tree {
            files: BTreeMap::new(),
            paths,
        }
    }

    /// Adds (or replaces) a file's content.
    pub fn with_file(mut self, path: impl Into<String>, content: impl Into<String>) -> Tree {
        let path = path.into();
        if !self.paths.contains(&path) {
            self.paths.push(path.clone());
        }
        self.files.insert(path, content.into());
        self
    }

    /// A file's content, or why there is none to edit.
    pub fn text(&self, path: &str) -> Result<&str, RemedyError> {
        self.read(path)
            .ok_or_else(|| RemedyError::NoFile(format!("{path} is not a text file")))
    }

    /// Every tracked path.
    pub fn paths(&self) -> &[String] {
        &self.paths
    }

    /// A file's content, if it was read.
    pub fn read(&self, path: &str) -> Option<&str> {
        self.files.get(path).map(String::as_str)
    }

    /// The tree with `writes` applied.
    pub fn applied(&self, writes: &[FileWrite]) -> Tree {
        writes.iter().fold(self.clone(), |tree, w| {
            tree.with_file(w.path.clone(), w.content.clone())
        })
    }
}

/// Where the issue is in the tree, as the heal's input or the loop's rule says.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Place {
    /// The file the issue's page or configuration is in, when known.
    pub file: Option<String>,
    /// The URL prefix that the repository's `root` directory serves: a page's URL
    /// under it names its file.
    pub site: Option<String>,
    /// That directory (default: the repository's top).
    pub root: Option<String>,
}

/// A proposed fix.
#[derive(Debug, Clone, PartialEq)]
pub struct Remedy {
    /// The files to write.
    pub writes: Vec<FileWrite>,
    /// What the fix does, in a line (the commit's subject).
    pub summary: String,
    /// What a person should look at before approving (a starter policy to tighten).
    pub notes: Vec<String>,
}

/// Whether the findings of a re-check (rule id and target) include `issue`.
pub fn includes(issue: &NewIssue, found: &[(&str, String)]) -> bool {
    found.iter().any(|(rule, target)| {
        *rule == issue.rule && issue.target.as_ref().is_none_or(|t| t == target)
    })
}

/// Why a remediator proposes no fix.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RemedyError {
    /// The issue is of a kind, or in a place, this remediator does not fix.
    #[error("{0}")]
    NotHandled(String),
    /// The fix needs a person's judgement (what a meaningful image shows).
    #[error("needs a person: {0}")]
    NeedsPerson(String),
    /// The file the fix would edit is not in the repository, or is ambiguous.
    #[error("{0}")]
    NoFile(String),
}

/// Fixes issues of some kinds.
pub trait Remediator: Send + Sync + 'static {
    /// A short name (for the report).
    fn name(&self) -> &str;

    /// Whether issues of this source and rule are this remediator's.
    fn handles(&self, issue: &NewIssue) -> bool;

    /// The fix of `issue` in `tree`; the edit is minimal and keeps each file's
    /// formatting. `place` says where the issue is, when the caller knows.
    fn remediate(
        &self,
        issue: &NewIssue,
        place: &Place,
        tree: &Tree,
    ) -> Result<Remedy, RemedyError>;

    /// The files of `tree` that [`Remediator::still_found`] reads for `issue`: they are
    /// read before `remediate` and `still_found` are called.
    fn files(
        &self,
        issue: &NewIssue,
        place: &Place,
        tree: &Tree,
    ) -> Result<Vec<String>, RemedyError>;

    /// Whether the rule that found `issue` still finds it in `tree`.
    fn still_found(
        &self,
        issue: &NewIssue,
        place: &Place,
        tree: &Tree,
    ) -> Result<bool, RemedyError>;
}
