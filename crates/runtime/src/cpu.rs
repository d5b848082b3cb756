//! CPU-heavy skill work (parsing a page, matching styles, scoring): a bounded pool, so
//! that a few expensive inputs never take every core from the runtime and the other
//! tasks, and a budget, so that such work stops soon after its task is canceled or its
//! run has spent its share of CPU time.
//!
//! The work runs on tokio's blocking threads, at most `workers` pieces at once (one
//! less than the cores by default, so requests and actors keep one); a piece waiting for a worker holds nothing. It cannot be stopped
//! from outside (no thread can be), so it is given a [`Budget`] to check often: every
//! few milliseconds of work is enough for a cancel to take effect within a fraction of
//! a second. A canceled piece's caller returns at once; its worker stays taken until
//! the piece notices and returns, so the pool stays bounded whatever the work does.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::Semaphore;

/// Why a piece of CPU work must stop.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Exhausted {
    /// Its task was canceled.
    #[error("the task was canceled")]
    Canceled,
    /// Its run spent its CPU budget.
    #[error("the run spent its CPU budget of {limit_ms} ms (runtime.cpu-budget-ms)")]
    OverBudget {
        /// The budget.
        limit_ms: u64,
    },
    /// A deadline of the skill's own passed (a page's time limit, say).
    #[error("the work ran past its time limit of {limit_ms} ms")]
    PastDeadline {
        /// That limit.
        limit_ms: u64,
    },
}

/// What CPU work checks, often, to know whether to go on.
#[derive(Debug, Clone)]
pub struct Budget {
    stop: Arc<AtomicBool>,
    /// When the run's budget is spent.
    spent_at: Option<Instant>,
    budget_ms: u64,
    /// A deadline of the skill's own, and its length.
    deadline: Option<(Instant, u64)>,
}

impl Budget {
    /// A budget that never runs out (work run outside a task: tests, tools).
    pub fn unlimited() -> Budget {
        Budget {
            stop: Arc::new(AtomicBool::new(false)),
            spent_at: None,
            budget_ms: 0,
            deadline: None,
        }
    }

    /// This budget, also ending `limit` from now (the tighter of the two counts).
    pub fn within(&self, limit: Duration) -> Budget {
        let at = Instant::now() + limit;
        let limit_ms = limit.as_millis() as u64;
        Budget {
            deadline: match self.deadline {
                Some((old, old_ms)) if old <= at => Some((old, old_ms)),
                _ => Some((at, limit_ms)),
            },
            ..self.clone()
        }
    }

    /// `Ok` while the work may go on. Cheap (an atomic load and a clock read): call it
    /// every few thousand steps.
    pub fn check(&self) -> Result<(), Exhausted> {
        if self.stop.load(Ordering::Relaxed) {
            return Err(Exhausted::Canceled);
        }
        if self.spent_at.is_none() && self.deadline.is_none() {
            return Ok(());
        }
        let now = Instant::now();
        if let Some((at, limit_ms)) = self.deadline
            && now > at
        {
            return Err(Exhausted::PastDeadline { limit_ms });
        }
        match self.spent_at {
            Some(at) if now > at => Err(Exhausted::OverBudget {
                limit_ms: self.budget_ms,
            }),
            _ => Ok(()),
        }
    }

    /// Tells the work holding this budget (or a clone of it) to stop, as canceled: the
    /// runtime does so when the task is canceled.
    pub fn cancel(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    /// A budget for one piece of a run's work: what is left of `limit` after `spent`.
    pub(crate) fn for_run(limit: Duration, spent: Duration) -> Budget {
        Budget {
            stop: Arc::new(AtomicBool::new(false)),
            spent_at: Some(Instant::now() + limit.saturating_sub(spent)),
            budget_ms: limit.as_millis() as u64,
            deadline: None,
        }
    }
}

/// The bounded pool CPU work runs on, shared by every task of a runtime.
#[derive(Debug)]
pub(crate) struct CpuPool {
    workers: Arc<Semaphore>,
    size: usize,
}

impl CpuPool {
    /// A pool of `workers` (0: one less than the cores, at least one).
    pub(crate) fn new(workers: usize) -> CpuPool {
        let workers = match workers {
            0 => {
                std::thread::available_parallelism().map_or(1, |n| n.get().saturating_sub(1).max(1))
            }
            n => n,
        };
        CpuPool {
            workers: Arc::new(Semaphore::new(workers)),
            size: workers,
        }
    }

    /// The workers busy now (work a cancel left running counts until it returns).
    pub(crate) fn busy(&self) -> usize {
        self.size - self.workers.available_permits()
    }

    /// Runs `work` on a worker once one is free, giving it `budget`. `None` if the pool
    /// is closed (the runtime stopped).
    pub(crate) async fn run<T: Send + 'static>(
        &self,
        budget: Budget,
        work: impl FnOnce(&Budget) -> T + Send + 'static,
    ) -> Option<tokio::task::JoinHandle<T>> {
        let permit = self.workers.clone().acquire_owned().await.ok()?;
        Some(tokio::task::spawn_blocking(move || {
            let result = work(&budget);
            drop(permit);
            result
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_runs_out_by_cancel_by_its_run_or_by_its_deadline() {
        assert_eq!(Budget::unlimited().check(), Ok(()));
        let budget = Budget::for_run(Duration::from_secs(60), Duration::ZERO);
        assert_eq!(budget.check(), Ok(()));
        budget.clone().cancel();
        assert_eq!(budget.check(), Err(Exhausted::Canceled));
        let spent = Budget::for_run(Duration::from_secs(1), Duration::from_secs(2));
        std::thread::sleep(Duration::from_millis(2));
        assert_eq!(spent.check(), Err(Exhausted::OverBudget { limit_ms: 1000 }));
        let short = Budget::unlimited().within(Duration::ZERO);
        std::thread::sleep(Duration::from_millis(2));
        assert_eq!(short.check(), Err(Exhausted::PastDeadline { limit_ms: 0 }));
        // The tighter deadline counts.
        let long = short.within(Duration::from_secs(60));
        assert!(long.check().is_err());
    }

    #[tokio::test]
    async fn at_most_the_pool_s_workers_run_at_once() {
        use std::sync::atomic::AtomicUsize;
        let pool = Arc::new(CpuPool::new(2));
        let running = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let mut handles = Vec::new();
        for _ in 0..8 {
            let (pool, running, most) = (pool.clone(), running.clone(), most.clone());
            handles.push(tokio::spawn(async move {
                let work = pool
                    .run(Budget::unlimited(), move |_| {
                        let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        std::thread::sleep(Duration::from_millis(20));
                        running.fetch_sub(1, Ordering::SeqCst);
                    })
                    .await
                    .unwrap();
                work.await.unwrap();
            }));
        }
        for handle in handles {
            handle.await.unwrap();
        }
        assert_eq!(most.load(Ordering::SeqCst), 2);
    }
}
