//! One direction of a connection: bytes read from one side, passed through the faults of
//! the current phase that act on this connection and direction, written to the other.
//! Chunks are stamped as they arrive, so latency delays each from its arrival (a stream
//! keeps its throughput) as Toxiproxy's does. Whatever the order faults are listed in,
//! they act in this one: timeout (nothing passes), reset_peer, limit_data, latency, then
//! slicer and bandwidth as the bytes are written.

use std::collections::HashSet;
use std::future::pending;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::fault::{Direction, Fault, FaultKind};
use super::link::{Link, Stage};

/// Bytes read at once.
const CHUNK: usize = 32 * 1024;

enum Chunk {
    Data(Instant, Vec<u8>),
    End,
}

/// Pumps `reader` to `writer` until either side ends or the connection closes; gives
/// both back (a reset needs the whole socket).
pub(crate) async fn pump<R, W>(reader: R, writer: W, dir: Direction, link: &Link) -> (R, W)
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let (chunks, received) = mpsc::channel(64);
    let read = read(reader, chunks, link);
    let write = async move {
        let mut writer = writer;
        Flow::new(dir, link).run(&mut writer, received).await;
        writer
    };
    tokio::join!(read, write)
}

async fn read<R: AsyncRead + Unpin>(mut reader: R, chunks: mpsc::Sender<Chunk>, link: &Link) -> R {
    let mut buffer = vec![0; CHUNK];
    loop {
        let read = tokio::select! {
            () = link.closing().cancelled() => return reader,
            read = reader.read(&mut buffer) => read,
        };
        // A peer that resets its end ends this direction, as a close does.
        let chunk = match read {
            Ok(0) | Err(_) => Chunk::End,
            Ok(n) => Chunk::Data(Instant::now(), buffer[..n].to_vec()),
        };
        let end = matches!(chunk, Chunk::End);
        if chunks.send(chunk).await.is_err() || end {
            return reader;
        }
    }
}

/// The writing side's state.
struct Flow<'a> {
    dir: Direction,
    link: &'a Link,
    stage: Stage,
    /// Faults (phase, index) already recorded for this connection and direction.
    recorded: HashSet<(usize, usize)>,
    /// When a reset_peer fault resets the connection, once data came.
    reset_at: Option<Instant>,
    /// Bytes passed in this phase (for limit_data).
    passed: u64,
    /// The faults of the phase that act on this connection and direction, found once
    /// per phase rather than per chunk.
    faults: Arc<[(usize, &'a Fault)]>,
}

impl<'a> Flow<'a> {
    fn new(dir: Direction, link: &'a Link) -> Self {
        let stage = link.stage();
        Flow {
            dir,
            link,
            stage,
            recorded: HashSet::new(),
            reset_at: None,
            passed: 0,
            faults: link.active(stage.index, dir).collect(),
        }
    }

    async fn run<W: AsyncWrite + Unpin>(
        &mut self,
        writer: &mut W,
        mut chunks: mpsc::Receiver<Chunk>,
    ) {
        let mut stages = self.link.shared.stage.clone();
        loop {
            if let Some(j) = self.link.down_in(self.stage.index) {
                let fault = self.fault(j).clone();
                self.once(j, &fault, json!({"refused": "reset in a down phase"}));
                self.link.reset();
                return;
            }
            let timeout_at = self.timeout_at();
            tokio::select! {
                biased;
                () = self.link.closing().cancelled() => return,
                changed = stages.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    self.stage = *stages.borrow_and_update();
                    self.faults = self.link.active(self.stage.index, self.dir).collect();
                    self.reset_at = None;
                    self.passed = 0;
                }
                () = until(timeout_at) => {
                    self.link.close();
                    return;
                }
                () = until(self.reset_at) => {
                    self.link.reset();
                    return;
                }
                chunk = chunks.recv() => match chunk {
                    Some(Chunk::Data(at, data)) => {
                        if !self.forward(writer, at, data).await {
                            self.link.close();
                            return;
                        }
                    }
                    None | Some(Chunk::End) => {
                        self.end(writer).await;
                        return;
                    }
                },
            }
        }
    }

    fn fault(&self, j: usize) -> &'a Fault {
        &self.link.shared.phases[self.stage.index].faults[j]
    }

    /// The phase's faults for this direction (shared: the caller may record through
    /// `self` while it goes through them).
    fn active(&self) -> Arc<[(usize, &'a Fault)]> {
        self.faults.clone()
    }

    /// Records `fault` once per phase for this connection and direction.
    fn once(&mut self, j: usize, fault: &Fault, detail: serde_json::Value) {
        if self.recorded.insert((self.stage.index, j)) {
            self.link
                .chaos(self.stage.index, fault, Some(self.dir), detail);
        }
    }

    /// When a timeout fault closes the connection (from the later of the phase's start
    /// and the connection's).
    fn timeout_at(&mut self) -> Option<Instant> {
        let (j, fault, ms) = self.faults.iter().find_map(|&(j, f)| match f.kind {
            FaultKind::Timeout { timeout } if timeout > 0 => Some((j, f, timeout)),
            _ => None,
        })?;
        let from = self.stage.started.max(self.link.opened);
        self.once(j, fault, json!({"closesAfterMs": ms}));
        Some(from + Duration::from_millis(ms))
    }

    /// Passes one chunk; false when the connection is to close.
    async fn forward<W: AsyncWrite + Unpin>(
        &mut self,
        writer: &mut W,
        at: Instant,
        mut data: Vec<u8>,
    ) -> bool {
        let active = self.active();
        for &(j, fault) in active.iter() {
            match fault.kind {
                FaultKind::Timeout { timeout } => {
                    self.once(j, fault, json!({"closesAfterMs": timeout}));
                    return true;
                }
                FaultKind::ResetPeer { timeout } => {
                    self.once(j, fault, json!({"resetsAfterMs": timeout}));
                    if self.reset_at.is_none() {
                        self.reset_at = Some(Instant::now() + Duration::from_millis(timeout));
                    }
                    return true;
                }
                _ => {}
            }
        }
        let mut close_after = false;
        let (mut slicer, mut bandwidth) = (None, None);
        for &(j, fault) in active.iter() {
            match fault.kind {
                FaultKind::LimitData { bytes } => {
                    let left = bytes.saturating_sub(self.passed);
                    if data.len() as u64 >= left {
                        data.truncate(left as usize);
                        close_after = true;
                        self.once(j, fault, json!({"bytes": bytes}));
                    }
                }
                FaultKind::Latency { latency, jitter } => {
                    let delay = (latency as i64 + self.link.spread(jitter)).max(0) as u64;
                    self.once(j, fault, json!({"delayMs": delay}));
                    if !self
                        .link
                        .pause_until(at + Duration::from_millis(delay))
                        .await
                    {
                        return false;
                    }
                }
                FaultKind::Slicer { .. } => {
                    self.once(j, fault, json!({}));
                    slicer = Some(&fault.kind);
                }
                FaultKind::Bandwidth { rate } => {
                    self.once(j, fault, json!({"rateKBps": rate}));
                    bandwidth = Some(rate);
                }
                _ => {}
            }
        }
        let slices = match slicer {
            Some(FaultKind::Slicer {
                average_size,
                size_variation,
                delay,
            }) => {
                let mut cuts = Vec::new();
                self.slice(
                    0,
                    data.len(),
                    *average_size as usize,
                    *size_variation as usize,
                    &mut cuts,
                );
                Some((cuts, Duration::from_micros(*delay)))
            }
            _ => None,
        };
        let written = match slices {
            None => self.write(writer, &data, bandwidth).await,
            Some((cuts, delay)) => {
                let mut ok = true;
                for (k, &(from, to)) in cuts.iter().enumerate() {
                    if k > 0
                        && !delay.is_zero()
                        && !self.link.pause_until(Instant::now() + delay).await
                    {
                        ok = false;
                        break;
                    }
                    if !self.write(writer, &data[from..to], bandwidth).await {
                        ok = false;
                        break;
                    }
                }
                ok
            }
        };
        self.passed += data.len() as u64;
        written && !close_after
    }

    /// Toxiproxy's slicing: halves, each moved by up to the variation, until a piece is
    /// within the variation of the average size.
    fn slice(
        &self,
        start: usize,
        end: usize,
        average: usize,
        variation: usize,
        cuts: &mut Vec<(usize, usize)>,
    ) {
        if (end - start).saturating_sub(average) <= variation {
            if end > start {
                cuts.push((start, end));
            }
            return;
        }
        let mid = (start + (end - start) / 2) as i64 + self.link.spread(variation as u64);
        let mid = (mid.max(start as i64 + 1) as usize).min(end - 1);
        self.slice(start, mid, average, variation, cuts);
        self.slice(mid, end, average, variation, cuts);
    }

    /// Writes `data`, paced to `rate` KB a second when given (Toxiproxy's bandwidth: a
    /// tenth of a second's worth at a time).
    async fn write<W: AsyncWrite + Unpin>(
        &self,
        writer: &mut W,
        mut data: &[u8],
        rate: Option<u64>,
    ) -> bool {
        if let Some(rate) = rate {
            let tenth = (rate * 100) as usize;
            while data.len() > tenth {
                if !self
                    .link
                    .pause_until(Instant::now() + Duration::from_millis(100))
                    .await
                {
                    return false;
                }
                if writer.write_all(&data[..tenth]).await.is_err() {
                    return false;
                }
                data = &data[tenth..];
            }
            let wait = Duration::from_micros(data.len() as u64 * 1000 / rate);
            if !self.link.pause_until(Instant::now() + wait).await {
                return false;
            }
        }
        if data.is_empty() {
            return true;
        }
        writer.write_all(data).await.is_ok() && writer.flush().await.is_ok()
    }

    /// The source ended: the close passes on (after a slow_close's delay).
    async fn end<W: AsyncWrite + Unpin>(&mut self, writer: &mut W) {
        let slow = self.faults.iter().find_map(|&(j, f)| match f.kind {
            FaultKind::SlowClose { delay } => Some((j, f, delay)),
            _ => None,
        });
        if let Some((j, fault, delay)) = slow {
            self.once(j, fault, json!({"delayMs": delay}));
            if !self
                .link
                .pause_until(Instant::now() + Duration::from_millis(delay))
                .await
            {
                return;
            }
        }
        let _ = writer.shutdown().await;
    }
}

async fn until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => pending().await,
    }
}
