//! The command line of `fundi-bench`.

use std::path::PathBuf;

use clap::Parser;

use crate::baselines::Baseline;

#[derive(Debug, Parser)]
#[command(about = "Benchmarks a fundi release binary against baselines measured in the same run")]
pub(crate) struct Args {
    /// The fundi binary to measure (build it with --release).
    #[arg(long, default_value = "target/release/fundi")]
    pub(crate) fundi: PathBuf,
    /// Another fundi binary (say, a build of the commit before a change) measured in the
    /// same run, each of its measurements right after the same one of `--fundi`; the
    /// table then gives `--fundi`'s rate as a ratio to it too. (The W1 to W3 workloads,
    /// on PostgreSQL too with `--postgres-url`, in schemas of its own; fan-out and W4 run
    /// on `--fundi` only.)
    #[arg(long)]
    pub(crate) compare: Option<PathBuf>,
    /// Also measure W1 and W3 on a fundi storing in PostgreSQL at this URL (in a schema
    /// of its own, dropped after), beside sled in the same run.
    #[arg(long)]
    pub(crate) postgres_url: Option<String>,
    /// Seconds per measurement.
    #[arg(long, default_value_t = 5.0)]
    pub(crate) seconds: f64,
    /// Repeats of every measurement (the median is reported).
    #[arg(long, default_value_t = 3)]
    pub(crate) repeats: usize,
    /// Run only the measurements whose name contains this text (bare axum and sled
    /// always run; the Rust SDK's are named like fundi's: "W1 send, Rust SDK in memory").
    #[arg(long)]
    pub(crate) only: Option<String>,
    /// SSE subscribers for the fan-out measurement (0 skips it), spread evenly over
    /// `--fan-out-tasks` tasks.
    #[arg(long, default_value_t = 1000)]
    pub(crate) fan_out: usize,
    /// Tasks the fan-out's subscribers follow, each posting 30 steps (100 ms apart on
    /// one task; 300 ms apart on several, so that every subscriber is open in time).
    #[arg(long, default_value_t = 1)]
    pub(crate) fan_out_tasks: usize,
    /// SSE subscribers that read nothing, on one task posting 10,000 steps: the
    /// server's RSS with them against the same task followed by none (0 skips it).
    #[arg(long, default_value_t = 0)]
    pub(crate) stalled_subscribers: usize,
    /// Internal: the steps of the task the stalled subscribers follow (the test suite
    /// runs a short one).
    #[arg(long, hide = true, default_value_t = 10_000)]
    pub(crate) stalled_steps: u64,
    /// Unfinished tasks left in the store for the restart measurement (0 skips it).
    #[arg(long, default_value_t = 10_000)]
    pub(crate) restart_tasks: usize,
    /// Tasks waiting for input, parked, for the memory, answer and restart measurement
    /// (W4; 0 skips it).
    #[arg(long, default_value_t = 0)]
    pub(crate) input_required_tasks: usize,
    /// Tasks waiting for an approver (with a push config and without), and as many
    /// queued for a slot, and as many whose run waits idle: the RSS each costs, and a
    /// restart with them (W4; 0 skips it).
    #[arg(long, default_value_t = 0)]
    pub(crate) waiting_tasks: usize,
    /// Terminal tasks seeded into a store for the read measurements (0 skips it).
    #[arg(long, default_value_t = 0)]
    pub(crate) stored_tasks: usize,
    /// Instead of rates, count the instructions `--fundi` (and `--compare`) spend per
    /// W1 send and per W3 stream, under valgrind's callgrind: the same on a busy machine
    /// as on an idle one (needs valgrind).
    #[arg(long)]
    pub(crate) instructions: bool,
    /// Internal: scales the operations counted with `--instructions` (the test suite
    /// runs a brief count).
    #[arg(long, hide = true, default_value_t = 1.0)]
    pub(crate) instruction_scale: f64,
    /// Keep the servers' stores in this directory (empty or missing) instead of a
    /// temporary one removed at the end: to start a server again on what a run left
    /// (say, the 1,000,000 waiting tasks of `--input-required-tasks`, in `parked/`).
    #[arg(long)]
    pub(crate) keep_data: Option<PathBuf>,
    /// Where to write the results as JSON.
    #[arg(long, default_value = "target/bench/results.json")]
    pub(crate) out: PathBuf,
    /// Internal: serve this baseline and nothing else (the bench starts itself so).
    #[arg(long, hide = true, value_enum)]
    pub(crate) serve_baseline: Option<Baseline>,
    /// Internal: the sled baseline's directory.
    #[arg(long, hide = true)]
    pub(crate) baseline_dir: Option<PathBuf>,
}
