//! `fundi`: the A2A server (`fundi serve`) and a small client to drive one by hand
//! (`fundi send`, `stream`, `get`, `cancel`, `list`).

mod card_keys;
mod cli;
mod client;
mod credentials;
mod doctor;
mod mcp;
mod serve;

use std::process::ExitCode;

use clap::Parser;

use crate::cli::{Cli, Command};

/// glibc's allocator serialises the runtime's many small allocations across threads on
/// its arena locks (a quarter of the server's time under load, by perf); mimalloc keeps
/// them thread-local.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `fundi rotate-card-key`: a new key in the data directory's key file.
fn rotate_card_key(args: cli::DoctorArgs) -> anyhow::Result<()> {
    let mut config = fundi::config::AppConfig::load(args.config.as_deref())?;
    if let Some(dir) = args.data_dir {
        config.store.path = dir;
    }
    let path = card_keys::path(&config, &config.store.path);
    let kid = card_keys::rotate(&config, &path)?;
    println!(
        "the agent card is signed with key {kid} from the next start; the key it replaces \
         stays published for {} days",
        config.card_signing.keep_retired_days
    );
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // Rust ignores SIGPIPE, so a write to a closed pipe fails and `println!` panics on
    // it. A client command whose reader has gone (`fundi list | head`) ends quietly
    // instead, as `cat` does. The server keeps ignoring the signal: a client gone is an
    // error it handles, not a reason to stop.
    if matches!(cli.command, Command::Client(_) | Command::RotateCardKey(_)) {
        sigpipe::reset();
    }
    run(cli)
}

#[tokio::main]
async fn run(cli: Cli) -> ExitCode {
    let result = match cli.command {
        Command::Serve(args) => serve::run(args).await,
        Command::Doctor(args) => doctor::run(args).await,
        Command::Mcp(args) => mcp::run(args).await,
        Command::RotateCardKey(args) => rotate_card_key(args),
        Command::Client(command) => client::run(command).await,
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("fundi: {error:#}");
            ExitCode::FAILURE
        }
    }
}
