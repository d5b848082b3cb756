//! Where a run's servers keep their stores: a temporary directory removed at the end,
//! or one the user names (`--keep-data`, empty at the start), kept.

use std::path::{Path, PathBuf};

use anyhow::Context;

pub(crate) enum Data {
    Temporary(tempfile::TempDir),
    Kept(PathBuf),
}

impl Data {
    pub(crate) fn new(kept: Option<&Path>) -> anyhow::Result<Data> {
        match kept {
            None => Ok(Data::Temporary(tempfile::tempdir()?)),
            Some(dir) => {
                std::fs::create_dir_all(dir)
                    .with_context(|| format!("creating {}", dir.display()))?;
                // A store left by an earlier run would be measured as this run's.
                let mut entries = std::fs::read_dir(dir)?;
                anyhow::ensure!(
                    entries.next().is_none(),
                    "--keep-data {} is not empty",
                    dir.display()
                );
                Ok(Data::Kept(dir.to_owned()))
            }
        }
    }

    pub(crate) fn path(&self) -> &Path {
        match self {
            Data::Temporary(dir) => dir.path(),
            Data::Kept(dir) => dir,
        }
    }
}
