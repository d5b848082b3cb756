//! fundi: an A2A server and runtime for long-running agent skills.
//!
//! This library is `fundi serve` without the process around it: [`Server`] wires a
//! store, the runtime with the built-in skills and any of the embedder's own, and the
//! A2A gateway (auth gate, limits, push delivery) from one [`config::AppConfig`], and
//! serves them on a listener the caller bound. The runtime alone (no HTTP) is the
//! `fundi-runtime` crate.

mod approvals;
pub mod config;
mod huge_pages;
mod limits;
mod peers;
mod retention;
mod server;
mod signals;
pub mod telemetry;

/// The A2A gateway (the `fundi-gateway` crate): its settings types (`StaticClient`,
/// `AuthConfig`...) for a config built in code.
pub use fundi_gateway as gateway;
/// The runtime, its model and the Skill API (the `fundi-runtime` crate): what a skill of
/// an embedder implements.
pub use fundi_runtime as runtime;
pub use huge_pages::turn_off_transparent_huge_pages;
pub use limits::raise_descriptor_limit;
pub use server::{Server, ServerBuilder, ServerError};
pub use signals::shutdown_signal;

/// docs/embedding.md, whose code is compiled (and run) as doctests: the guide cannot
/// drift from the API.
#[cfg(doctest)]
#[doc = include_str!("../docs/embedding.md")]
pub struct EmbeddingGuide;
