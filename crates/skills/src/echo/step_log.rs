//! echo's step log, for fault drills (`skills.echo.step-log`): each step's start and
//! end appended to a file as one line each, with the process that ran it, so that a
//! drill can check that no step of a task ran in two places at once and each finished
//! once. A step is started only after the fencing check (`ensure_still_held`), as a
//! skill's side effect that must happen at most once is; one whose run stopped before
//! it finished (canceled, aborted, its commit refused) is logged `stopped`.
//!
//! A line: `<task> <step> start|end|posted|stopped <pid> <unix ms>`. `end`: the step is
//! stored (`waitEachStep`); `posted`: handed to the runtime to store with the next
//! commit (a cut-off may lose it, and the step runs again from the checkpoint before).

use std::io::Write;
use std::path::{Path, PathBuf};

use fundi_runtime::{SkillError, TaskId};

/// Where a run's steps are logged.
pub(super) struct StepLog {
    path: PathBuf,
    task: TaskId,
}

/// A step under way: `stopped` is logged when it is dropped before `finish`.
pub(super) struct Step<'a> {
    log: &'a StepLog,
    step: u64,
    finished: bool,
}

impl StepLog {
    pub(super) fn new(path: &Path, task: &TaskId) -> StepLog {
        StepLog {
            path: path.to_owned(),
            task: task.clone(),
        }
    }

    pub(super) fn start(&self, step: u64) -> Result<Step<'_>, SkillError> {
        self.append(step, "start")
            .map_err(|e| SkillError::Failed(format!("echo: the step log: {e}")))?;
        Ok(Step {
            log: self,
            step,
            finished: false,
        })
    }

    /// One line, in one write to a file opened for appending: lines of several
    /// processes never interleave.
    fn append(&self, step: u64, what: &str) -> std::io::Result<()> {
        let at = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_millis();
        let line = format!("{} {step} {what} {} {at}\n", self.task, std::process::id());
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)?
            .write_all(line.as_bytes())
    }
}

impl Step<'_> {
    /// The step is done: `stored` (it waited for its commit), or only posted.
    pub(super) fn finish(mut self, stored: bool) {
        self.finished = true;
        let what = if stored { "end" } else { "posted" };
        if let Err(error) = self.log.append(self.step, what) {
            tracing::warn!(%error, "echo: could not log a step's end");
        }
    }
}

impl Drop for Step<'_> {
    fn drop(&mut self) {
        if !self.finished
            && let Err(error) = self.log.append(self.step, "stopped")
        {
            tracing::warn!(%error, "echo: could not log a stopped step");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_logs_its_start_and_that_it_was_stored_posted_or_stopped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("steps.log");
        let log = StepLog::new(&path, &TaskId::from("t-1"));
        log.start(1).unwrap().finish(true);
        drop(log.start(2).unwrap());
        log.start(2).unwrap().finish(false);
        let pid = std::process::id().to_string();
        let lines: Vec<Vec<String>> = std::fs::read_to_string(&path)
            .unwrap()
            .lines()
            .map(|l| l.split(' ').map(str::to_owned).collect())
            .collect();
        for fields in &lines {
            assert_eq!(fields.len(), 5, "{fields:?}");
            assert_eq!(
                (fields[0].as_str(), fields[3].as_str()),
                ("t-1", pid.as_str())
            );
        }
        let said: Vec<(&str, &str)> = lines
            .iter()
            .map(|f| (f[1].as_str(), f[2].as_str()))
            .collect();
        assert_eq!(
            said,
            [
                ("1", "start"),
                ("1", "end"),
                ("2", "start"),
                ("2", "stopped"),
                ("2", "start"),
                ("2", "posted")
            ]
        );
    }
}
