//! The servers under measurement as child processes: the fundi release binary, and
//! the baselines (this binary, `--serve-baseline`).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use crate::baselines::Baseline;

/// Static credentials every benchmarked server accepts (made once per bench run).
pub(crate) struct Credentials {
    pub(crate) token: String,
    pub(crate) user_token: String,
}

impl Credentials {
    pub(crate) fn generate() -> Credentials {
        Credentials {
            token: uuid::Uuid::new_v4().simple().to_string(),
            user_token: uuid::Uuid::new_v4().simple().to_string(),
        }
    }

    /// Headers for every request (the baselines ignore them, at the same parsing cost).
    pub(crate) fn headers(&self) -> anyhow::Result<reqwest::header::HeaderMap> {
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert(
            reqwest::header::AUTHORIZATION,
            format!("Bearer {}", self.token).parse()?,
        );
        headers.insert("x-fundi-user-token", self.user_token.parse()?);
        Ok(headers)
    }
}

pub(crate) struct Server {
    child: Child,
    pub(crate) url: String,
    /// From spawning the process to its "listening" line (recovery runs before it).
    pub(crate) startup: Duration,
}

impl Server {
    /// Starts `fundi serve` on 127.0.0.1:0 with a fresh data directory and the given
    /// store ("sled" or "memory") and durability, and waits for its address.
    pub(crate) fn start(
        binary: &Path,
        data: &Path,
        store: &str,
        durability: &str,
        credentials: &Credentials,
    ) -> anyhow::Result<Server> {
        Server::start_wrapped(&[], binary, data, store, durability, credentials)
    }

    /// [`Server::start`] on sled (`batched`), parking a task that waits for a person
    /// after `park_after_ms` of rest (0: never); over `data` as it is.
    pub(crate) fn start_parking(
        binary: &Path,
        data: &Path,
        credentials: &Credentials,
        park_after_ms: u64,
    ) -> anyhow::Result<Server> {
        Server::start_parking_with(binary, data, credentials, park_after_ms, &[])
    }

    /// [`Server::start_parking`] with these settings (`FUNDI__...` variables) besides.
    pub(crate) fn start_parking_with(
        binary: &Path,
        data: &Path,
        credentials: &Credentials,
        park_after_ms: u64,
        settings: &[(&str, &str)],
    ) -> anyhow::Result<Server> {
        let mut command = fundi_command(&[], binary, data, "sled", "batched", credentials)?;
        command.env("FUNDI__RUNTIME__PARK_AFTER_MS", park_after_ms.to_string());
        command.envs(settings.iter().copied());
        Server::spawn(command, "fundi listening on ")
            .with_context(|| format!("starting {}", binary.display()))
    }

    /// [`Server::start`], the binary run by `wrapper` (a program and its arguments,
    /// say valgrind's) when it is not empty.
    pub(crate) fn start_wrapped(
        wrapper: &[String],
        binary: &Path,
        data: &Path,
        store: &str,
        durability: &str,
        credentials: &Credentials,
    ) -> anyhow::Result<Server> {
        let command = fundi_command(wrapper, binary, data, store, durability, credentials)?;
        Server::spawn(command, "fundi listening on ")
            .with_context(|| format!("starting {}", binary.display()))
    }

    /// [`Server::start`] on PostgreSQL at `url`, in `schema`; with `node`, as that node
    /// of several on the schema.
    pub(crate) fn start_postgres(
        binary: &Path,
        data: &Path,
        url: &str,
        schema: &str,
        node: Option<&str>,
        credentials: &Credentials,
    ) -> anyhow::Result<Server> {
        let mut command = fundi_command(&[], binary, data, "postgres", "sync", credentials)?;
        // 8 connections each rather than 16, so that two builds' servers (`--compare`),
        // three each, fit within PostgreSQL's default 100 connections.
        command
            .env("FUNDI__STORE__POSTGRES__URL", url)
            .env("FUNDI__STORE__POSTGRES__SCHEMA", schema)
            .env("FUNDI__STORE__POSTGRES__POOL_SIZE", "8");
        if let Some(node) = node {
            command.env("FUNDI__STORE__POSTGRES__NODE_ID", node);
        }
        Server::spawn(command, "fundi listening on ")
            .with_context(|| format!("starting {} on PostgreSQL", binary.display()))
    }

    /// Starts this binary serving `baseline` (sled's files in `data`).
    pub(crate) fn baseline(baseline: Baseline, data: &Path) -> anyhow::Result<Server> {
        let mut command = Command::new(std::env::current_exe()?);
        command
            .arg("--serve-baseline")
            .arg(
                clap::ValueEnum::to_possible_value(&baseline)
                    .context("every baseline has a name")?
                    .get_name(),
            )
            .arg("--baseline-dir")
            .arg(data);
        Server::spawn(command, "baseline listening on ")
            .with_context(|| format!("starting the {baseline:?} baseline"))
    }

    /// Spawns `command` and waits for its stdout line starting with `prefix`, followed
    /// by the URL it serves.
    fn spawn(mut command: Command, prefix: &str) -> anyhow::Result<Server> {
        let began = Instant::now();
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()?;
        let stdout = child.stdout.take().context("stdout")?;
        let mut lines = BufReader::new(stdout).lines();
        loop {
            let Some(line) = lines.next() else {
                bail!("the server exited before listening");
            };
            if let Some(url) = line?.strip_prefix(prefix) {
                let url = url.trim().to_owned();
                // Keep draining stdout so the child never blocks on a full pipe.
                std::thread::spawn(move || for _ in lines {});
                return Ok(Server {
                    child,
                    url,
                    startup: began.elapsed(),
                });
            }
        }
    }
}

impl Server {
    /// The server's resident memory, in bytes (Linux `/proc`).
    pub(crate) fn rss_bytes(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).ok()?;
        let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
        let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kb * 1024)
    }
}

impl Server {
    /// Stops the server as a signal would (SIGINT: it finishes what it was doing and
    /// exits, so a wrapper such as valgrind writes its results), and waits for it.
    pub(crate) fn stop_gracefully(mut self) -> anyhow::Result<()> {
        let status = Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .status()
            .context("running kill")?;
        if !status.success() {
            bail!("kill -INT {} failed", self.child.id());
        }
        let deadline = Instant::now() + Duration::from_secs(300);
        while self.child.try_wait()?.is_none() {
            if Instant::now() > deadline {
                bail!("the server did not stop within 300 s of SIGINT");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `fundi serve` on 127.0.0.1:0 with a fresh data directory, the given store and
/// durability, and the bench's credentials; run by `wrapper` when it is not empty.
fn fundi_command(
    wrapper: &[String],
    binary: &Path,
    data: &Path,
    store: &str,
    durability: &str,
    credentials: &Credentials,
) -> std::io::Result<Command> {
    // Run in the directory that holds its data directory, so that a
    // `config/fundi.toml` where the bench runs changes nothing measured (nor stops a
    // `--compare` build that predates one of its keys): each build runs on its own
    // defaults and the settings below.
    let absolute = |path: &Path| std::path::absolute(path).unwrap_or_else(|_| path.into());
    let (binary, data) = (absolute(binary), absolute(data));
    let beside = data.parent().unwrap_or(&data).to_path_buf();
    std::fs::create_dir_all(&beside)?;
    let mut command = match wrapper.split_first() {
        Some((program, args)) => {
            let mut command = Command::new(program);
            command.args(args).arg(&binary);
            command
        }
        None => Command::new(&binary),
    };
    command
        .current_dir(beside)
        .args(["serve", "--bind", "127.0.0.1:0", "--data-dir"])
        .arg(&data)
        .env("FUNDI__STORE__KIND", store)
        .env("FUNDI__STORE__DURABILITY", durability)
        .env("FUNDI__LOG__FILTER", "warn")
        .env("FUNDI__RUNTIME__DEFAULT_SKILL", "echo")
        // One user sends everything: no per-user rate limit, and the fan-out opens
        // thousands of streams as that user, on a few tasks (16,384 connections: below
        // the file-descriptor limit the server would otherwise lower it to, with a
        // warning).
        .env("FUNDI__GATEWAY__RATE_LIMIT_PER_MINUTE", "0")
        .env("FUNDI__GATEWAY__MAX_STREAMS_PER_USER", "1000000")
        .env("FUNDI__GATEWAY__MAX_STREAMS_PER_TASK", "1000000")
        .env("FUNDI__GATEWAY__MAX_CONNECTIONS", "16384")
        .env(
            "FUNDI__AUTH__STATIC__CLIENTS__BENCH__TOKEN",
            &credentials.token,
        )
        .env(
            "FUNDI__AUTH__STATIC__CLIENTS__BENCH__SCOPES",
            "[\"fundi:admin\"]",
        )
        .env("FUNDI__AUTH__STATIC__USERS__BENCH", &credentials.user_token);
    Ok(command)
}
