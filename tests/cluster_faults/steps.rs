//! echo's step log (`skills.echo.step-log`) read back, and what it must show: no step
//! of a task ran in two processes at once, none was stored twice.

use std::collections::BTreeMap;
use std::path::Path;

/// One line of echo's step log.
pub(crate) struct Logged {
    pub(crate) task: String,
    pub(crate) step: u64,
    pub(crate) what: String,
    pub(crate) pid: u32,
    pub(crate) at: u64,
}

pub(crate) fn step_log(path: &Path) -> Vec<Logged> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|line| {
            let f: Vec<&str> = line.split(' ').collect();
            assert_eq!(f.len(), 5, "a step log line: {line:?}");
            Logged {
                task: f[0].into(),
                step: f[1].parse().unwrap(),
                what: f[2].into(),
                pid: f[3].parse().unwrap(),
                at: f[4].parse().unwrap(),
            }
        })
        .collect()
}

/// One run of a step in one process: from its start to its end (`end`: stored;
/// `posted`: handed to the runtime, which a cut-off may lose; `stopped`; or `open`:
/// never logged).
#[derive(Debug)]
struct Ran<'a> {
    pid: u32,
    start: u64,
    end: u64,
    how: &'a str,
}

/// No step of a task ran in two processes at once, and none was stored twice (a posted
/// step may run again: its commit may have been lost with a cut-off). A process
/// frozen (SIGSTOP at `frozen.1`) does nothing while frozen: a step it had started and
/// that it logged `stopped` after waking counts as ended when it froze.
pub(crate) fn each_step_once_at_a_time(lines: &[Logged], frozen: (u32, u64)) {
    let mut runs: BTreeMap<(&str, u64), Vec<Ran<'_>>> = BTreeMap::new();
    let mut open: BTreeMap<(&str, u64, u32), u64> = BTreeMap::new();
    for line in lines {
        let key = (line.task.as_str(), line.step);
        match line.what.as_str() {
            "start" => {
                let before = open.insert((key.0, key.1, line.pid), line.at);
                assert!(
                    before.is_none(),
                    "step {key:?} started twice in {}",
                    line.pid
                );
            }
            how @ ("end" | "posted" | "stopped") => {
                let start = open
                    .remove(&(key.0, key.1, line.pid))
                    .unwrap_or_else(|| panic!("step {key:?} {how} without a start"));
                let mut end = line.at;
                if line.pid == frozen.0 && how == "stopped" && start <= frozen.1 {
                    end = end.min(frozen.1);
                }
                let pid = line.pid;
                runs.entry(key).or_default().push(Ran {
                    pid,
                    start,
                    end,
                    how,
                });
            }
            other => panic!("a step log line says {other:?}"),
        }
    }
    for ((task, step, pid), start) in open {
        runs.entry((task, step)).or_default().push(Ran {
            pid,
            start,
            end: u64::MAX,
            how: "open",
        });
    }
    for (key, mut runs) in runs {
        runs.sort_by_key(|r| r.start);
        for pair in runs.windows(2) {
            assert!(
                pair[0].pid == pair[1].pid || pair[1].start >= pair[0].end,
                "step {key:?} ran in two processes at once: {runs:?}"
            );
        }
        let ends = runs.iter().filter(|r| r.how == "end").count();
        assert!(ends <= 1, "step {key:?} was stored twice: {runs:?}");
    }
}
