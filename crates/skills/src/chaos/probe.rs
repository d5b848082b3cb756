//! Probe traffic through the proxy, at a steady rate, each probe on a new connection
//! (so that each is drawn afresh for the faults that act on a share of connections),
//! and its figures per phase: success rate, latency percentiles, errors by kind.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio::time::{Instant, MissedTickBehavior};
use tokio_util::sync::CancellationToken;
use tokio_util::task::AbortOnDropHandle;

use super::link::Stage;
use super::plan::{Probe, ProbeKind};

/// Probes in flight at once, at most (more are counted as `overload` errors).
const MAX_IN_FLIGHT: usize = 512;

/// One phase's probe figures.
#[derive(Debug, Clone, Default)]
pub(crate) struct Figures {
    pub(crate) sent: u64,
    pub(crate) succeeded: u64,
    /// Probes that started in this phase and ended in the next: counted apart, as the
    /// faults they met were partly the next phase's.
    pub(crate) straddled: u64,
    /// Latency of each successful probe, in ms.
    latencies: Vec<f64>,
    pub(crate) errors: BTreeMap<String, u64>,
}

impl Figures {
    /// Share of probes that succeeded (none sent: none).
    pub(crate) fn success_rate(&self) -> Option<f64> {
        (self.sent > 0).then(|| self.succeeded as f64 / self.sent as f64)
    }

    /// The `p`th percentile (0 to 100, nearest rank) of successful probes' latency.
    pub(crate) fn percentile(&self, p: f64) -> Option<f64> {
        if self.latencies.is_empty() {
            return None;
        }
        let mut sorted = self.latencies.clone();
        sorted.sort_by(f64::total_cmp);
        let rank = ((p / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
        Some(sorted[rank.min(sorted.len()) - 1])
    }

    /// The figures as the report shows them.
    pub(crate) fn to_json(&self) -> Value {
        // Two decimals for milliseconds, four for the rate (a share).
        let round = |v: Option<f64>, places: i32| {
            let scale = 10f64.powi(places);
            v.map(|v| (v * scale).round() / scale)
        };
        json!({
            "sent": self.sent,
            "succeeded": self.succeeded,
            "straddled": self.straddled,
            "successRate": round(self.success_rate(), 4),
            "p50Ms": round(self.percentile(50.0), 2),
            "p99Ms": round(self.percentile(99.0), 2),
            "maxMs": round(self.percentile(100.0), 2),
            "errors": self.errors,
        })
    }

    /// One line for progress notes.
    pub(crate) fn line(&self) -> String {
        match self.success_rate() {
            None => "no probes yet".into(),
            Some(rate) => {
                let ms = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.0} ms"));
                let mut line = format!(
                    "{} probes, {:.1}% ok, p50 {}, p99 {}",
                    self.sent,
                    rate * 100.0,
                    ms(self.percentile(50.0)),
                    ms(self.percentile(99.0))
                );
                let errors: Vec<String> = self
                    .errors
                    .iter()
                    .map(|(kind, n)| format!("{kind} {n}"))
                    .collect();
                if !errors.is_empty() {
                    line.push_str(&format!(" (errors: {})", errors.join(", ")));
                }
                line
            }
        }
    }
}

/// Sends probes until stopped.
pub(crate) struct Prober {
    figures: Arc<Mutex<Vec<Figures>>>,
    stop: CancellationToken,
    running: AbortOnDropHandle<()>,
}

impl Prober {
    /// Probes `proxy` as `probe` says; figures go to the phase each probe started in.
    pub(crate) fn start(
        probe: Probe,
        proxy: SocketAddr,
        stages: watch::Receiver<Stage>,
        phases: usize,
    ) -> Result<Prober, String> {
        let client = match probe.kind {
            ProbeKind::Http { .. } => Some(
                reqwest::Client::builder()
                    .no_proxy()
                    .pool_max_idle_per_host(0)
                    .redirect(reqwest::redirect::Policy::none())
                    .timeout(probe.timeout)
                    .build()
                    .map_err(|e| format!("the probe's HTTP client: {e}"))?,
            ),
            ProbeKind::Tcp => None,
        };
        let figures = Arc::new(Mutex::new(vec![Figures::default(); phases]));
        let stop = CancellationToken::new();
        let sending = Sending {
            probe,
            proxy,
            client,
            stages,
            figures: figures.clone(),
            stop: stop.clone(),
        };
        let running = AbortOnDropHandle::new(tokio::spawn(sending.run()));
        Ok(Prober {
            figures,
            stop,
            running,
        })
    }

    /// The figures of phase `index` so far.
    pub(crate) fn figures(&self, index: usize) -> Figures {
        self.figures.lock().unwrap_or_else(|p| p.into_inner())[index].clone()
    }

    /// Sends no more probes, waits for those in flight (each within its timeout), and
    /// returns every phase's figures.
    pub(crate) async fn finish(self) -> Vec<Figures> {
        self.stop.cancel();
        let _ = self.running.await;
        self.figures
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

struct Sending {
    probe: Probe,
    proxy: SocketAddr,
    client: Option<reqwest::Client>,
    stages: watch::Receiver<Stage>,
    figures: Arc<Mutex<Vec<Figures>>>,
    stop: CancellationToken,
}

impl Sending {
    async fn run(self) {
        let every = Duration::from_secs_f64(1.0 / f64::from(self.probe.rate));
        let mut ticks = tokio::time::interval(every);
        ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let mut flying = JoinSet::new();
        loop {
            tokio::select! {
                () = self.stop.cancelled() => break,
                _ = ticks.tick() => {}
                Some(_) = flying.join_next(), if !flying.is_empty() => continue,
            }
            let phase = self.stages.borrow().index;
            if flying.len() >= MAX_IN_FLIGHT {
                self.count(phase, Err("overload".into()));
                continue;
            }
            let (kind, proxy, client) = (self.probe.kind.clone(), self.proxy, self.client.clone());
            let timeout = self.probe.timeout;
            let figures = self.figures.clone();
            let stages = self.stages.clone();
            flying.spawn(async move {
                let outcome = once(&kind, proxy, client.as_ref(), timeout).await;
                match stages.borrow().index == phase {
                    true => add(&figures, phase, outcome),
                    false => straddled(&figures, phase),
                }
            });
        }
        while flying.join_next().await.is_some() {}
    }

    fn count(&self, phase: usize, outcome: Result<f64, String>) {
        add(&self.figures, phase, outcome);
    }
}

fn straddled(figures: &Mutex<Vec<Figures>>, phase: usize) {
    let mut figures = figures.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(figures) = figures.get_mut(phase) {
        figures.straddled += 1;
    }
}

fn add(figures: &Mutex<Vec<Figures>>, phase: usize, outcome: Result<f64, String>) {
    let mut figures = figures.lock().unwrap_or_else(|p| p.into_inner());
    let Some(figures) = figures.get_mut(phase) else {
        return;
    };
    figures.sent += 1;
    match outcome {
        Ok(ms) => {
            figures.succeeded += 1;
            figures.latencies.push(ms);
        }
        Err(kind) => *figures.errors.entry(kind).or_default() += 1,
    }
}

/// One probe: its latency in ms, or the kind of error.
async fn once(
    kind: &ProbeKind,
    proxy: SocketAddr,
    client: Option<&reqwest::Client>,
    timeout: Duration,
) -> Result<f64, String> {
    let started = Instant::now();
    match (kind, client) {
        (ProbeKind::Http { path }, Some(client)) => {
            let url = format!("http://{proxy}{path}");
            let response = client.get(&url).send().await.map_err(|e| classify(&e))?;
            let status = response.status();
            // The whole body: a fault that cuts it short is a failed probe.
            response.bytes().await.map_err(|e| classify(&e))?;
            if status.is_server_error() {
                return Err(format!("status {}", status.as_u16()));
            }
        }
        _ => match tokio::time::timeout(timeout, TcpStream::connect(proxy)).await {
            Ok(Ok(_)) => {}
            Ok(Err(error)) => return Err(io_kind(&error)),
            Err(_) => return Err("timeout".into()),
        },
    }
    Ok(started.elapsed().as_secs_f64() * 1000.0)
}

fn classify(error: &reqwest::Error) -> String {
    if error.is_timeout() {
        return "timeout".into();
    }
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            return io_kind(io);
        }
        if let Some(hyper) = cause.downcast_ref::<hyper::Error>()
            && hyper.is_incomplete_message()
        {
            return "closed".into();
        }
        source = cause.source();
    }
    match () {
        () if error.is_connect() => "connect".into(),
        () if error.is_body() || error.is_decode() => "body".into(),
        () => "http".into(),
    }
}

fn io_kind(error: &std::io::Error) -> String {
    use std::io::ErrorKind;
    match error.kind() {
        ErrorKind::ConnectionRefused => "refused",
        ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted => "reset",
        ErrorKind::TimedOut => "timeout",
        ErrorKind::UnexpectedEof | ErrorKind::BrokenPipe => "closed",
        _ => "io",
    }
    .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let mut figures = Figures::default();
        let store = Mutex::new(vec![Figures::default()]);
        for ms in 1..=100 {
            add(&store, 0, Ok(f64::from(ms)));
        }
        add(&store, 0, Err("reset".into()));
        figures.clone_from(&store.lock().unwrap()[0]);
        assert_eq!(figures.percentile(50.0), Some(50.0));
        assert_eq!(figures.percentile(99.0), Some(99.0));
        assert_eq!(figures.percentile(100.0), Some(100.0));
        assert_eq!((figures.sent, figures.succeeded), (101, 100));
        assert_eq!(figures.errors["reset"], 1);
        assert!(Figures::default().percentile(50.0).is_none());
        assert_eq!(
            figures.line(),
            "101 probes, 99.0% ok, p50 50 ms, p99 99 ms (errors: reset 1)"
        );
    }
}
