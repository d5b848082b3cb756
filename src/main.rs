//! `fundi`: the A2A server (`fundi serve`) and a small client to drive one by hand
//! (`fundi send`, `stream`, `get`, `cancel`, `list`).

mod cli;
mod client;
mod config;
mod credentials;
mod server;
mod telemetry;

use std::process::ExitCode;

use clap::Parser;

use crate::cli::{Cli, Command};

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Serve(args) => server::run(args).await,
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
