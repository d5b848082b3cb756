//! `fundi`: the A2A server (`fundi serve`) and a small client to drive one by hand
//! (`fundi send`, `stream`, `get`, `cancel`, `list`).

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

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Serve(args) => serve::run(args).await,
        Command::Doctor(args) => doctor::run(args).await,
        Command::Mcp(args) => mcp::run(args).await,
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
