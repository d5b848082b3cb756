//! One proxied connection's state: the faults drawn for it, where the run's plan is, and
//! how it ends (closed, or reset with a TCP RST). `connection` serves it.

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::fault::{Direction, Fault, FaultKind};
use super::ledger::Ledger;
use super::plan::Phase;
use super::target::Target;

/// Where the run is in its plan: the phase, and when it began.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Stage {
    pub(crate) index: usize,
    pub(crate) started: Instant,
}

/// What every connection of a run shares.
pub(crate) struct Shared {
    pub(crate) phases: Arc<[Phase]>,
    pub(crate) target: Target,
    pub(crate) ledger: Arc<Ledger>,
    pub(crate) stage: watch::Receiver<Stage>,
    pub(crate) seed: u64,
    /// The client HTTP targets are reached through (HTTP mode only).
    pub(crate) http: Option<reqwest::Client>,
}

/// A connection through the proxy.
pub(crate) struct Link {
    pub(crate) id: u64,
    pub(crate) shared: Arc<Shared>,
    pub(crate) opened: Instant,
    /// Per phase, per fault: whether the fault acts on this connection (its toxicity).
    draws: Vec<Vec<bool>>,
    rng: Mutex<StdRng>,
    close: CancellationToken,
    reset: AtomicBool,
}

impl Link {
    pub(crate) fn new(id: u64, shared: Arc<Shared>) -> Link {
        // The same seed and connection number draw the same faults.
        let mut rng = StdRng::seed_from_u64(shared.seed ^ id.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let draws = shared
            .phases
            .iter()
            .map(|phase| {
                phase
                    .faults
                    .iter()
                    .map(|f| !f.kind.is_http() && rng.random::<f64>() < f.toxicity)
                    .collect()
            })
            .collect();
        Link {
            id,
            shared,
            opened: Instant::now(),
            draws,
            rng: Mutex::new(rng),
            close: CancellationToken::new(),
            reset: AtomicBool::new(false),
        }
    }

    /// The stage the run is at.
    pub(crate) fn stage(&self) -> Stage {
        *self.shared.stage.borrow()
    }

    /// The connection faults of phase `index` that act on this connection in `dir`.
    pub(crate) fn active(
        &self,
        index: usize,
        dir: Direction,
    ) -> impl Iterator<Item = (usize, &Fault)> + '_ {
        self.drawn(index)
            .filter(move |(_, f)| f.stream == dir && f.kind != FaultKind::Down)
    }

    fn drawn(&self, index: usize) -> impl Iterator<Item = (usize, &Fault)> + '_ {
        let faults = self.shared.phases.get(index).map_or(&[][..], |p| &p.faults);
        faults
            .iter()
            .enumerate()
            .filter(move |(j, _)| self.draws[index][*j])
    }

    /// Whether phase `index` takes this connection down (its `down` fault drew it).
    pub(crate) fn down_in(&self, index: usize) -> Option<usize> {
        self.drawn(index)
            .find(|(_, f)| f.kind == FaultKind::Down)
            .map(|(j, _)| j)
    }

    /// A draw from 0 to 1 (per request, for HTTP faults).
    pub(crate) fn draw(&self) -> f64 {
        self.rng.lock().unwrap_or_else(|p| p.into_inner()).random()
    }

    /// A draw from `-spread` to `spread`.
    pub(crate) fn spread(&self, spread: u64) -> i64 {
        if spread == 0 {
            return 0;
        }
        let spread = spread as i64;
        self.rng
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .random_range(-spread..spread)
    }

    /// Records a chaos event of this connection.
    pub(crate) fn chaos(&self, index: usize, fault: &Fault, dir: Option<Direction>, detail: Value) {
        let mut detail = detail;
        if fault.name != fault.kind.name() {
            detail["name"] = json!(fault.name);
        }
        self.shared
            .ledger
            .chaos(index, Some(self.id), fault.kind.name(), dir, detail);
    }

    /// Ends the connection: both pumps stop, and the sockets close.
    pub(crate) fn close(&self) {
        self.close.cancel();
    }

    /// Ends the connection with a TCP RST on both sides.
    pub(crate) fn reset(&self) {
        self.reset.store(true, Ordering::Release);
        self.close.cancel();
    }

    /// Whether the connection ends with a TCP RST.
    pub(crate) fn is_reset(&self) -> bool {
        self.reset.load(Ordering::Acquire)
    }

    pub(crate) fn closing(&self) -> &CancellationToken {
        &self.close
    }

    /// Waits until `until`; false when the connection closed meanwhile.
    pub(crate) async fn pause_until(&self, until: Instant) -> bool {
        tokio::select! {
            () = self.close.cancelled() => false,
            () = tokio::time::sleep_until(until) => true,
        }
    }
}
