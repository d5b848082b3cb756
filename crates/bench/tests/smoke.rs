//! The bench command that `docs/performance.md` documents, run end to end against a real
//! fundi binary, so that it cannot rot unnoticed: every workload runs (briefly), every
//! answer is checked by the bench itself (a wrong one stops it with an error), and the
//! results file holds every measurement. The figures are not judged: speed is for the
//! bench's own runs on release binaries, not for tests.
//!
//! The server binary is the `fundi` next to this package's binary: `cargo test
//! --workspace` (the README's test command) builds both. Run alone (`cargo test -p
//! fundi-bench`), build it first: `cargo build -p fundi`.

use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

fn binaries() -> (PathBuf, PathBuf) {
    let bench = PathBuf::from(env!("CARGO_BIN_EXE_fundi-bench"));
    let fundi = bench.with_file_name(format!("fundi{}", std::env::consts::EXE_SUFFIX));
    assert!(
        fundi.is_file(),
        "{} is missing: run the tests with `cargo test --workspace`, or `cargo build -p fundi` first",
        fundi.display()
    );
    (bench, fundi)
}

/// How long a brief run may take before the test gives up on it (it takes seconds).
const RUN_LIMIT: Duration = Duration::from_secs(300);

/// Runs the bench on the `fundi` binary (and, with `compare_with_itself`, the same
/// binary as `--compare`), at 0.3 s per measurement, with `args`, in a directory of its
/// own, and returns its results file.
fn run(compare_with_itself: bool, args: &[&str]) -> Value {
    let (bench, fundi) = binaries();
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let mut command = Command::new(bench);
    command
        .arg("--fundi")
        .arg(&fundi)
        .args(["--seconds", "0.3"]);
    if compare_with_itself {
        command.arg("--compare").arg(&fundi);
    }
    let out = dir.join("results.json");
    let log = |name: &str| File::create(dir.join(name)).expect("a log file");
    let mut child = command
        .args(args)
        .arg("--out")
        .arg(&out)
        .current_dir(dir)
        .stdout(log("stdout"))
        .stderr(log("stderr"))
        // Its own process group, so that a run over the limit can be ended with the
        // servers it started (they would outlive a killed bench otherwise).
        .process_group(0)
        .spawn()
        .expect("the bench starts");
    let logs = || {
        let read = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap_or_default();
        format!("{}\n{}", read("stdout"), read("stderr"))
    };
    // Waited for on a thread of its own, so that the limit is a timeout on its exit.
    let group = format!("-{}", child.id());
    let (exited, exit) = std::sync::mpsc::channel();
    std::thread::spawn(move || exited.send(child.wait()));
    let status = match exit.recv_timeout(RUN_LIMIT) {
        Ok(status) => status.expect("the bench's status"),
        Err(_) => {
            let _ = Command::new("kill").args(["-KILL", "--", &group]).status();
            panic!("the bench ran for over {RUN_LIMIT:?}:\n{}", logs());
        }
    };
    assert!(status.success(), "the bench failed ({status}):\n{}", logs());
    let results = std::fs::read(&out).expect("the bench writes its results");
    serde_json::from_slice(&results).expect("the results are JSON")
}

/// The result rows of `measurement`, by concurrency.
fn rows<'a>(results: &'a Value, measurement: &str) -> Vec<(u64, &'a Value)> {
    results["results"]
        .as_array()
        .expect("a list of results")
        .iter()
        .filter(|row| row["measurement"] == measurement)
        .map(|row| (row["concurrency"].as_u64().unwrap(), row))
        .collect()
}

fn positive(value: &Value) -> bool {
    value.as_f64().is_some_and(|v| v > 0.0)
}

#[test]
fn the_documented_bench_runs_every_workload_against_a_real_server() {
    let kept = tempfile::tempdir().unwrap();
    let kept = kept.path().join("stores");
    let results = run(
        false,
        &[
            "--keep-data",
            kept.to_str().unwrap(),
            "--repeats",
            "1",
            // More than a user's and a task's stream limits: the bench lifts them.
            "--fan-out",
            "80",
            "--fan-out-tasks",
            "2",
            "--stalled-subscribers",
            "3",
            "--stalled-steps",
            "200",
            "--restart-tasks",
            "20",
            "--input-required-tasks",
            "20",
            "--waiting-tasks",
            "20",
            "--stored-tasks",
            "1500",
        ],
    );

    let expected: &[(&str, &[u64])] = &[
        ("bare axum echo", &[1, 16, 50, 64]),
        ("sled flush per request", &[16, 64]),
        ("W1 send, sync", &[1, 16, 64]),
        ("W1 send, batched", &[1, 16, 64]),
        ("W1 send, memory store", &[1, 16, 64]),
        ("W1 send, Rust SDK in memory", &[1, 16, 64]),
        ("W2 get, sync", &[16]),
        ("W3 stream, sync", &[1, 50]),
        ("W3 stream, batched", &[1, 50]),
        ("W3 stream, memory store", &[1, 50]),
        ("W3 stream, Rust SDK in memory", &[1, 50]),
        ("W3 stream, each step stored, sync", &[1, 50]),
        ("W3 stream, each step stored, batched", &[1, 50]),
    ];
    for (measurement, concurrencies) in expected {
        let found = rows(&results, measurement);
        let found_concurrencies: Vec<u64> = found.iter().map(|(c, _)| *c).collect();
        assert_eq!(
            &found_concurrencies, concurrencies,
            "{measurement}: {results}"
        );
        for (concurrency, row) in found {
            let context = format!("{measurement} c={concurrency}: {row}");
            assert!(positive(&row["perSecondMedian"]), "{context}");
            assert!(positive(&row["ratioToBareAxum"]), "{context}");
            assert!(row["ratioToCompare"].is_null(), "{context}");
            // fundi's W1 and W3 rows, and only those, are set against the Rust SDK's.
            let against_sdk = (measurement.starts_with("W1") || measurement.starts_with("W3"))
                && !measurement.contains("Rust SDK");
            match against_sdk {
                true => assert!(positive(&row["ratioToRustSdk"]), "{context}"),
                false => assert!(row["ratioToRustSdk"].is_null(), "{context}"),
            }
            assert_eq!(
                row["repeats"].as_array().map(Vec::len),
                Some(1),
                "{context}"
            );
        }
    }

    let fan_out = results["fanOut"].as_array().expect("fan-out results");
    assert_eq!(fan_out.len(), 3, "one per store: {results}");
    for store in fan_out {
        assert_eq!(store["subscribers"], 80, "{store}");
        assert_eq!(store["tasks"], 2, "{store}");
        // Live events only, so fewer than every subscriber times every event is fine;
        // none at all would mean the fan-out never reached a subscriber.
        assert!(positive(&store["liveEventsReceived"]), "{store}");
        assert!(positive(&store["delayP99Ms"]), "{store}");
    }

    let stalled = &results["stalled"];
    assert_eq!(stalled["subscribers"], 3, "{stalled}");
    assert!(positive(&stalled["rssStalledMiB"]), "{stalled}");

    let restart = &results["restart"];
    assert_eq!(restart["unfinishedTasks"], 20, "{restart}");
    assert!(positive(&restart["startupSeconds"]), "{restart}");
    assert!(positive(&restart["rssBytesAfterRestart"]), "{restart}");

    let input_required = &results["inputRequired"];
    assert_eq!(input_required["tasks"], 20, "{input_required}");
    for figure in [
        "rssParkedMiB",
        "answerToParkedP99Ms",
        "answerToLiveP99Ms",
        "restartSeconds",
    ] {
        assert!(positive(&input_required[figure]), "{input_required}");
    }
    assert_eq!(input_required["answers"], 20, "{input_required}");

    // Each server reached the number of live actors it waits for (none, or the task
    // holding the slot) with every task stored; a few tasks may not grow the RSS.
    let waiting = &results["waiting"];
    assert_eq!(waiting["tasks"], 20, "{waiting}");
    for figure in [
        "bytesPerApprovalTask",
        "bytesPerPushedApprovalTask",
        "bytesPerQueuedTask",
    ] {
        assert!(waiting[figure].is_f64(), "{waiting}");
    }
    for restart in [
        "restartSecondsApproval",
        "restartSecondsPushedApproval",
        "restartSecondsQueued",
    ] {
        assert!(positive(&waiting[restart]), "{waiting}");
    }
    // The stores are kept: the parked tasks' can be opened again.
    assert!(
        kept.join("parked").join("db").is_file(),
        "{}",
        kept.display()
    );

    let stored = &results["stored"];
    assert_eq!(stored["large"]["storedTasks"], 1500, "{stored}");
    assert_eq!(stored["small"]["storedTasks"], 1000, "{stored}");
    for size in ["small", "large"] {
        assert!(positive(&stored[size]["getTaskPerSecond"]), "{stored}");
        assert!(positive(&stored[size]["listTasksPerSecond"]), "{stored}");
    }
}

#[test]
fn the_bench_compares_two_binaries_side_by_side() {
    let results = run(
        true,
        &[
            "--only",
            "W2",
            "--repeats",
            "2",
            "--fan-out",
            "0",
            "--restart-tasks",
            "0",
        ],
    );
    let own = rows(&results, "W2 get, sync");
    assert_eq!(
        own.len(),
        2,
        "the measured and the compared binary: {results}"
    );
    let measured = own
        .iter()
        .find(|(_, row)| row["binary"] == "fundi")
        .expect("the measured binary's row");
    assert!(positive(&measured.1["ratioToCompare"]), "{}", measured.1);
    assert_eq!(measured.1["repeats"].as_array().map(Vec::len), Some(2));
    // Only the baselines and the selected workload ran.
    assert!(rows(&results, "W1 send, sync").is_empty(), "{results}");
    assert!(
        results["fanOut"].as_array().is_none_or(Vec::is_empty),
        "{results}"
    );
}

#[test]
fn the_bench_counts_instructions_per_operation_under_valgrind() {
    // A brief count: 5 and 55 sends, 1 and 11 streams of each kind.
    let results = run(false, &["--instructions", "--instruction-scale", "0.05"]);
    let rows = results["instructions"]
        .as_array()
        .expect("instruction rows");
    let workloads: Vec<&str> = rows
        .iter()
        .map(|row| row["workload"].as_str().unwrap())
        .collect();
    assert_eq!(
        workloads,
        ["W1 send", "W3 stream", "W3 stream, each step stored"]
    );
    for row in rows {
        assert!(positive(&row["instructionsPerOp"]), "{row}");
        assert!(row["ratioToCompare"].is_null(), "{row}");
    }
}

#[test]
fn the_proxy_bench_measures_chaos_runs_proxy_against_direct_traffic() {
    let output = Command::new(env!("CARGO_BIN_EXE_fundi-proxy"))
        .args([
            "--mb",
            "2",
            "--transfers",
            "1",
            "--requests",
            "20",
            "--rounds",
            "1",
        ])
        .output()
        .expect("run fundi-proxy");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let results: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert!(positive(&results["bulk"]["ratio"]), "{results}");
    for path in ["keptAlive", "newConnections"] {
        assert!(positive(&results[path]["proxyP99Ms"]), "{results}");
        assert!(positive(&results[path]["directP99Ms"]), "{results}");
    }
}

/// A directory for the kept stores must be empty: a store left there by an earlier run
/// would be measured as this run's.
#[test]
fn the_bench_refuses_to_keep_its_stores_where_something_is() {
    let (bench, fundi) = binaries();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("left"), b"an earlier run's").unwrap();
    let output = Command::new(bench)
        .arg("--fundi")
        .arg(&fundi)
        .arg("--keep-data")
        .arg(dir.path())
        .output()
        .expect("the bench runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(stderr.contains("is not empty"), "{stderr}");
}
